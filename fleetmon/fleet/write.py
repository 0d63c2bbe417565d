"""Write node dicts (from an importer) as a fleet file.

The TOML is written by hand rather than with ``tomli-w``: the documented output
(docs/fleet-file.md) starts with a comment naming the docs and carries a
commented-out ``token_file`` hint for the operator to fill in, and tomli-w
cannot write comments. The values written are names, URLs, tags and small
integers, quoted as JSON strings, which are valid TOML basic strings.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable, Mapping
from typing import Any

from fleetmon.fleet.importers import groups_from_nodes
from fleetmon.fleet.model import DEFAULT_AGENT_PORT, GROUP_KEYS, Group

__all__ = ["render_fleet_toml"]


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _url_host(address: str) -> str:
    try:
        if ipaddress.ip_address(address).version == 6:
            return f"[{address}]"
    except ValueError:
        pass
    return address


def render_fleet_toml(
    nodes: Iterable[Mapping[str, Any]],
    groups: Mapping[str, Mapping[str, Any]] | Iterable[Mapping[str, Any] | Group] | None = None,
    port: int = DEFAULT_AGENT_PORT,
    name: str | None = None,
    history_prometheus: str | None = None,
) -> str:
    """Write node dicts (from an importer) as a fleet file.

    Args:
        nodes: dicts with ``name`` and optionally ``address``, ``port``,
            ``url``, ``group``, ``tags``, ``token_file``, ``tool`` (an ``ssh://`` node's vendor tool).
        groups: group dicts (or ``Group``s) keyed by name or as a list; when
            None they are derived with ``groups_from_nodes``. Every group a
            node names gets a ``[[group]]`` entry.
        port: agent port for nodes that name none.
        name: the fleet's name, if any.
        history_prometheus: the ``[history] prometheus`` base URL; when None the
            table is written commented out, as a hint.

    Returns:
        TOML text that ``parse_fleet`` accepts (given valid names).
    """
    node_list = list(nodes)
    derived = groups_from_nodes(node_list)
    given: dict[str, dict[str, Any]] = {}
    if groups is None:
        given = derived
    else:
        values = groups.values() if isinstance(groups, Mapping) else groups
        for group in values:
            if isinstance(group, Group):
                entry = {key: getattr(group, key) for key in GROUP_KEYS}
            else:
                entry = dict(group)
            given[entry["name"]] = entry
        for group_name, entry in derived.items():
            given.setdefault(group_name, {"name": group_name})

    out = [
        "# fleetmon fleet file; see docs/fleet-file.md",
        "",
        "[fleet]",
    ]
    if name:
        out.append(f"name = {_toml_string(name)}")
    out += [
        "poll_interval_s = 30",
        "timeout_s = 5",
        "concurrency = 64",
        "# token_file = \"/etc/fleetmon/token\"",
        "",
    ]
    if history_prometheus:
        out += ["[history]", f"prometheus = {_toml_string(history_prometheus)}", ""]
    else:
        out += ["# History through a Prometheus that scrapes the agents (docs/prometheus.md):",
                "# [history]", "# prometheus = \"http://prometheus.example:9090\"", ""]
    for entry in given.values():
        out.append("[[group]]")
        for key in GROUP_KEYS:
            value = entry.get(key)
            if value is None:
                continue
            shown = str(value) if isinstance(value, int) else _toml_string(str(value))
            out.append(f"{key} = {shown}")
        out.append("")
    for node in node_list:
        url = node.get("url")
        if not url:
            node_port = node.get("port") or port
            url = f"http://{_url_host(node.get('address') or node['name'])}:{node_port}"
        out.append("[[node]]")
        out.append(f"name = {_toml_string(node['name'])}")
        out.append(f"url = {_toml_string(url)}")
        if node.get("group"):
            out.append(f"group = {_toml_string(node['group'])}")
        if node.get("token_file"):
            out.append(f"token_file = {_toml_string(node['token_file'])}")
        tags = list(node.get("tags") or ())
        if tags:
            out.append(f"tags = [{', '.join(_toml_string(tag) for tag in tags)}]")
        if node.get("tool") and node["tool"] != "auto":  # an ssh:// node's vendor tool
            out.append(f"tool = {_toml_string(node['tool'])}")
        out.append("")
    return "\n".join(out)
