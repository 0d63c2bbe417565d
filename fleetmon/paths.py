"""Default places of the workstation's files, so `fleetmon gui` and `fleetmon collect` need no paths.

The database lives in the user's data directory and the fleet file in the
user's config directory (XDG on Linux: ``$XDG_DATA_HOME/fleetmon/fleet.db``,
else ``~/.local/share/fleetmon/fleet.db``; ``$XDG_CONFIG_HOME/fleetmon/fleet.toml``,
else ``~/.config/fleetmon/fleet.toml``), as platformdirs (an ``app`` dependency)
names them on every platform. A desktop entry or a systemd user unit can then
run ``fleetmon gui`` / ``fleetmon collect`` without arguments.

The CLI builds every subcommand's help, defaults included, even on a GPU node
that has only the agent's dependencies; there platformdirs may be missing, and
the XDG rules are applied by hand (the same answer on Linux). Kept to Python 3.8
syntax and the standard library, like the agent.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["APP_NAME", "DB_NAME", "FLEET_NAME", "default_db_path", "default_fleet_path", "fleet_file_hint", "for_help"]

APP_NAME = "fleetmon"
DB_NAME = "fleet.db"
FLEET_NAME = "fleet.toml"


def _xdg(variable: str, fallback: str) -> Path:
    value = os.environ.get(variable, "").strip()
    # The XDG spec ignores relative values.
    if value and os.path.isabs(value):
        return Path(value) / APP_NAME
    return Path.home() / fallback / APP_NAME


def user_data_dir() -> Path:
    """The user's data directory for fleetmon (not created)."""
    try:
        from platformdirs import user_data_path
    except ImportError:
        return _xdg("XDG_DATA_HOME", ".local/share")
    return Path(user_data_path(APP_NAME, appauthor=False))


def user_config_dir() -> Path:
    """The user's config directory for fleetmon (not created)."""
    try:
        from platformdirs import user_config_path
    except ImportError:
        return _xdg("XDG_CONFIG_HOME", ".config")
    return Path(user_config_path(APP_NAME, appauthor=False))


def default_db_path() -> Path:
    """Where `fleetmon gui` and `fleetmon collect` keep the database when no --db is given."""
    return user_data_dir() / DB_NAME


def default_fleet_path() -> Path:
    """Where `fleetmon gui` and `fleetmon collect` read the fleet file when no --fleet is given."""
    return user_config_dir() / FLEET_NAME


def fleet_file_hint(path: Path) -> str:
    """How to create a missing fleet file at ``path``, in one sentence for an error message."""
    from fleetmon.i18n import N_, Text

    return Text(N_("create one with `fleetmon fleet import HOSTS.txt -o {path}` (a host list such as 'gpu[01-16]', an "
                   "Ansible inventory or `scontrol show nodes` output), or write it by hand (docs/fleet-file.md has an "
                   "example), or name another with --fleet"), path=str(path))


def for_help(path: Path) -> str:
    """A path for argparse help text, which treats ``%`` as a format character."""
    return str(path).replace("%", "%%")
