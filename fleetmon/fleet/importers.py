"""Importers: other inventories (a host list, an Ansible INI inventory, ``scontrol show nodes``) as node dicts.

Each importer returns a list of node dicts:
  {"name": str, "address": str, "port": int | None, "group": str | None,
   "tags": list[str], "gpus": int | None}
``address`` is what goes into the URL; ``port`` None means "the default".
``fleetmon.fleet.write.render_fleet_toml`` writes them as a fleet file.
"""

from __future__ import annotations

import re
import shlex
import string
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from fleetmon import hostlist
from fleetmon.i18n import N_, Text, listing, reason_of

__all__ = [
    "IMPORTERS",
    "detect_format",
    "groups_from_nodes",
    "import_ansible_ini",
    "import_hostlist",
    "import_scontrol",
]


def _node_dict(
    name: str,
    address: str | None = None,
    port: int | None = None,
    group: str | None = None,
    tags: Iterable[str] = (),
    gpus: int | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "address": address or name,
        "port": port,
        "group": group,
        "tags": list(tags),
        "gpus": gpus,
    }


def _at_line(number: int, err: ValueError) -> Text:
    """``line N: <the error>``, the error said in the reader's language where it was raised so."""
    return Text(N_("line {line}: {error}"), line=number, error=reason_of(err))


def import_hostlist(text: str) -> list[dict[str, Any]]:
    """Read a host list: one host, ``host:port`` or Slurm hostlist per line.

    ``#`` starts a comment. A ``:port`` suffix applies to every host the line
    expands to (``gpu[01-04]:9500``). Hosts seen twice are kept once.

    Raises:
        ValueError: a bad hostlist expression or port, with its line number.
    """
    nodes: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        port: int | None = None
        match = re.search(r"(?<=[^:]):(\d+)$", line)
        if match and not line.startswith("["):
            port = int(match.group(1))
            line = line[: match.start()].strip()
        if port is not None and not 0 < port < 65536:
            raise ValueError(Text(N_("line {line}: port {port} is out of range"), line=number, port=port))
        try:
            hosts = hostlist.expand(line)
        except ValueError as err:
            raise ValueError(_at_line(number, err)) from None
        for host in hosts:
            if host.lower() not in seen:
                seen.add(host.lower())
                nodes.append(_node_dict(host, port=port))
    return nodes


def _expand_ansible_pattern(pattern: str) -> list[str]:
    """Expand Ansible host ranges: ``gpu[01:10]``, ``gpu[1:9:2]``, ``db-[a:c]``."""
    match = re.search(r"\[([^\]]*)\]", pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    fields = match.group(1).split(":")
    if len(fields) not in (2, 3):
        raise ValueError(Text(N_("host range {pattern!r}: expected [start:end] or [start:end:step]"), pattern=pattern))
    start, end = fields[0].strip(), fields[1].strip()
    step = int(fields[2]) if len(fields) == 3 and fields[2].strip() else 1
    if step < 1:
        raise ValueError(Text(N_("host range {pattern!r}: step must be positive"), pattern=pattern))
    if start.isdigit() and end.isdigit():
        low, high = int(start), int(end)
        width = len(start) if start.startswith("0") else 0
        values = [str(n).zfill(width) for n in range(low, high + 1, step)]
    elif len(start) == 1 and len(end) == 1 and start.isalpha() and end.isalpha():
        letters = string.ascii_letters
        low, high = letters.index(start), letters.index(end)
        values = list(letters[low : high + 1 : step])
    else:
        raise ValueError(Text(N_("host range {pattern!r}: bad range [{range}]"), pattern=pattern, range=match.group(1)))
    if not values:
        raise ValueError(Text(N_("host range {pattern!r}: empty (start after end?)"), pattern=pattern))
    if len(values) > hostlist.MAX_HOSTS:
        raise ValueError(Text(N_("host range {pattern!r} expands to more than {limit} hosts"), pattern=pattern,
                              limit=hostlist.MAX_HOSTS))
    out: list[str] = []
    for value in values:
        out.extend(_expand_ansible_pattern(head + value + tail))
    return out


def import_ansible_ini(text: str, group_filter: str | None = None) -> list[dict[str, Any]]:
    """Read an Ansible INI inventory.

    Each host's group is the first group (in file order) that lists it
    directly; its other groups become tags. ``ansible_host`` gives the
    address. ``fleetmon_port`` (a host variable, or in ``[group:vars]``,
    nearest group first, then ``[all:vars]``) gives the agent port;
    ``ansible_port`` is SSH's and is ignored, as is a ``host:port`` suffix.

    Args:
        text: the inventory.
        group_filter: keep only hosts in this group or its ``:children``.

    Raises:
        ValueError: a bad host range or port, with its line number, or an
            unknown ``group_filter``.
    """
    members: dict[str, list[str]] = {}  # group -> hosts, in order
    children: dict[str, list[str]] = {}
    group_vars: dict[str, dict[str, str]] = {}
    host_vars: dict[str, dict[str, str]] = {}
    host_order: list[str] = []
    host_groups: dict[str, list[str]] = {}
    section, kind = "ungrouped", "hosts"
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        header = re.fullmatch(r"\[([^\]:]+)(?::(\w+))?\]", line)
        if header:
            section, kind = header.group(1).strip(), header.group(2) or "hosts"
            if kind == "hosts":
                members.setdefault(section, [])
            elif kind == "children":
                children.setdefault(section, [])
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError as err:
            raise ValueError(_at_line(number, err)) from None
        if not words:
            continue
        if kind == "vars":
            key, _, value = line.partition("=")
            group_vars.setdefault(section, {})[key.strip()] = value.strip().strip("\"'")
            continue
        if kind == "children":
            children.setdefault(section, []).append(words[0])
            continue
        if kind != "hosts":
            continue
        pattern = words[0]
        if not pattern.endswith("]"):
            pattern = re.sub(r":\d+$", "", pattern)  # SSH port
        variables = dict(word.partition("=")[::2] for word in words[1:] if "=" in word)
        try:
            hosts = _expand_ansible_pattern(pattern)
        except ValueError as err:
            raise ValueError(_at_line(number, err)) from None
        for host in hosts:
            if host not in host_vars:
                host_order.append(host)
                host_vars[host] = {}
                host_groups[host] = []
            host_vars[host].update(variables)
            if section not in host_groups[host]:
                host_groups[host].append(section)
            members.setdefault(section, []).append(host)

    parents: dict[str, list[str]] = {}
    for parent, kids in children.items():
        for kid in kids:
            parents.setdefault(kid, []).append(parent)

    selected = set(host_order)
    if group_filter is not None:
        if group_filter not in members and group_filter not in children and group_filter != "all":
            known = sorted(set(members) | set(children))
            raise ValueError(Text(N_("no group {group!r} in the inventory (groups: {known})"), group=group_filter,
                                  known=listing(known)))
        if group_filter != "all":
            selected = set()
            pending, visited = [group_filter], set()
            while pending:
                current = pending.pop()
                if current in visited:
                    continue
                visited.add(current)
                selected.update(members.get(current, []))
                pending.extend(children.get(current, []))

    def port_of(host: str) -> int | None:
        value = host_vars[host].get("fleetmon_port")
        if value is None:
            pending, visited = list(host_groups[host]), set()
            while pending and value is None:
                current = pending.pop(0)
                if current in visited:
                    continue
                visited.add(current)
                value = group_vars.get(current, {}).get("fleetmon_port")
                pending.extend(parents.get(current, []))
        if value is None:
            value = group_vars.get("all", {}).get("fleetmon_port")
        if value is None:
            return None
        if not value.isdigit() or not 0 < int(value) < 65536:
            raise ValueError(Text(N_("host {host}: fleetmon_port {value!r} is not a port number"), host=host,
                                  value=value))
        return int(value)

    nodes: list[dict[str, Any]] = []
    for host in host_order:
        if host not in selected:
            continue
        groups = [g for g in host_groups[host] if g not in ("all", "ungrouped")]
        nodes.append(
            _node_dict(
                host,
                address=host_vars[host].get("ansible_host"),
                port=port_of(host),
                group=groups[0] if groups else None,
                tags=groups[1:],
            )
        )
    return nodes


_SCONTROL_KEY = re.compile(r"(?:(?<=\s)|^)([A-Za-z][A-Za-z0-9_.]*)=")


def _scontrol_fields(record: str) -> dict[str, str]:
    """``Key=value`` pairs; values may hold spaces (OS=Linux 5.15 ...)."""
    matches = list(_SCONTROL_KEY.finditer(record))
    out: dict[str, str] = {}
    for position, match in enumerate(matches):
        end = matches[position + 1].start() if position + 1 < len(matches) else len(record)
        out.setdefault(match.group(1), record[match.end() : end].strip())
    return out


def _gres_gpus(gres: str) -> tuple[int | None, str | None]:
    """Count GPUs in a Gres string: ``gpu:a100:8(S:0-1)`` → (8, "a100")."""
    if not gres or gres == "(null)":
        return None, None
    gres = re.sub(r"\([^)]*\)", "", gres)
    total, model = 0, None
    found = False
    for item in gres.split(","):
        fields = item.strip().split(":")
        if fields[0] != "gpu":
            continue
        found = True
        count = fields[-1] if len(fields) > 1 else "1"
        if len(fields) >= 3:
            model = model or fields[1]
        count_match = re.match(r"\d+", count)
        total += int(count_match.group()) if count_match else 1
    return (total, model) if found else (None, None)


def import_scontrol(text: str) -> list[dict[str, Any]]:
    """Read ``scontrol show nodes`` output (multi-line or ``-o`` one-line).

    ``NodeAddr`` (else ``NodeHostName``, else ``NodeName``) becomes the
    address, the first of ``Partitions`` the group, the GPU count of ``Gres``
    the node's ``gpus`` (``groups_from_nodes`` turns it into the group's
    ``expected_gpus`` when all nodes of the group agree), and the Gres GPU
    type plus ``AvailableFeatures`` the tags.

    Raises:
        ValueError: the text holds no ``NodeName=`` record.
    """
    records = [
        part for part in re.split(r"(?m)^\s*(?=NodeName=)", text) if part.strip()
    ]
    nodes: list[dict[str, Any]] = []
    seen: set[str] = set()
    for record in records:
        fields = _scontrol_fields(record)
        name = fields.get("NodeName", "").split()[0] if fields.get("NodeName") else ""
        if not name or name in seen:
            continue
        seen.add(name)
        address = name
        for key in ("NodeAddr", "NodeHostName"):
            value = fields.get(key, "").split()
            if value and value[0] != "(null)":
                address = value[0]
                break
        partitions = [p for p in fields.get("Partitions", "").split(",") if p and p != "(null)"]
        gpus, model = _gres_gpus(fields.get("Gres", ""))
        tags = [model] if model else []
        features = fields.get("AvailableFeatures", "")
        if features and features != "(null)":
            tags += [f for f in features.split(",") if f and f not in tags]
        nodes.append(
            _node_dict(
                name,
                address=address,
                group=partitions[0] if partitions else None,
                tags=tags,
                gpus=gpus,
            )
        )
    if not nodes:
        raise ValueError(Text(N_("no NodeName= records found (is this `scontrol show nodes` output?)")))
    return nodes


def groups_from_nodes(nodes: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """One group dict per group the nodes name, in first-seen order.

    A group gets ``expected_gpus`` when every node in it reports the same
    (known) GPU count.
    """
    counts: dict[str, set[int | None]] = {}
    for node in nodes:
        group_name = node.get("group")
        if group_name:
            counts.setdefault(group_name, set()).add(node.get("gpus"))
    groups: dict[str, dict[str, Any]] = {}
    for name, seen in counts.items():
        group: dict[str, Any] = {"name": name}
        if len(seen) == 1 and None not in seen:
            group["expected_gpus"] = next(iter(seen))
        groups[name] = group
    return groups


IMPORTERS: dict[str, Callable[..., list[dict[str, Any]]]] = {
    "hosts": import_hostlist,
    "ansible": import_ansible_ini,
    "scontrol": import_scontrol,
}
"""Importer by ``--format`` name."""


def detect_format(text: str) -> str:
    """Guess an inventory's format: "scontrol", "ansible" or "hosts"."""
    if re.search(r"(?m)^\s*NodeName=", text):
        return "scontrol"
    if re.search(r"(?m)^\s*\[[^\]]+\]\s*$", text) or "ansible_host=" in text:
        return "ansible"
    return "hosts"
