"""The fleet file (TOML): which nodes to poll, how, and what each should have.

``load_fleet``/``parse_fleet`` (``validate``) turn the file into the frozen
dataclasses of ``model`` and check every key; each problem is reported as
``FILE:LINE: KEY: message`` (lines found by ``locate``), and all problems of a
file are reported together in one ``ConfigError``.

The importers (``importers``) turn other inventories (a plain host list, an
Ansible INI inventory, ``scontrol show nodes`` output) into node dicts, and
``render_fleet_toml`` (``write``) writes those as a fleet file. The commands
`fleetmon fleet import` and `fleetmon fleet check` are ``fleetmon.cli.fleet``.
See docs/fleet-file.md.
"""

from __future__ import annotations

from fleetmon.fleet.importers import (
    IMPORTERS,
    detect_format,
    groups_from_nodes,
    import_ansible_ini,
    import_hostlist,
    import_scontrol,
)
from fleetmon.fleet.model import DEFAULT_AGENT_PORT, FLEET_DEFAULTS, Fleet, Group, NodeSpec
from fleetmon.fleet.validate import load_fleet, parse_fleet
from fleetmon.fleet.write import render_fleet_toml

__all__ = [
    "DEFAULT_AGENT_PORT",
    "FLEET_DEFAULTS",
    "IMPORTERS",
    "Fleet",
    "Group",
    "NodeSpec",
    "detect_format",
    "groups_from_nodes",
    "import_ansible_ini",
    "import_hostlist",
    "import_scontrol",
    "load_fleet",
    "parse_fleet",
    "render_fleet_toml",
]
