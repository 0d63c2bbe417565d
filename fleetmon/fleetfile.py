"""The fleet file (TOML): which nodes to poll, how, and what each should have.

``load_fleet``/``parse_fleet`` turn the file into frozen dataclasses and check
every key; each problem is reported as ``FILE:LINE: KEY: message``, and all
problems of a file are reported together in one ``ConfigError``.

The importers turn other inventories (a plain host list, an Ansible INI
inventory, ``scontrol show nodes`` output) into node dicts, and
``render_fleet_toml`` writes those as a fleet file. See docs/fleet-file.md.
"""

from __future__ import annotations

import argparse
import difflib
import ipaddress
import json
import math
import os
import re
import shlex
import string
import sys
import tomllib
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleetmon import hostlist
from fleetmon.errors import ConfigError

__all__ = [
    "DEFAULT_AGENT_PORT",
    "Fleet",
    "Group",
    "NodeSpec",
    "add_check_arguments",
    "add_import_arguments",
    "detect_format",
    "groups_from_nodes",
    "import_ansible_ini",
    "import_hostlist",
    "import_scontrol",
    "load_fleet",
    "main_check",
    "main_import",
    "parse_fleet",
    "render_fleet_toml",
]

DEFAULT_AGENT_PORT = 9414
"""TCP port of ``fleetmon agent`` when a node's URL names none."""

FLEET_DEFAULTS: dict[str, Any] = {
    "name": None,
    "poll_interval_s": 30.0,
    "timeout_s": 5.0,
    "concurrency": 64,
    "token_file": None,
    "tls_ca": None,
    "tls_verify": True,
    "raw_retention_days": 30,
}

_ROOT_KEYS = ("fleet", "thresholds", "group", "node")
_GROUP_KEYS = (
    "name",
    "expected_driver",
    "expected_cuda_driver",
    "expected_gpus",
    "expected_model",
)
_NODE_KEYS = ("name", "url", "group", "token_file", "tags")
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9_.\-]*[A-Za-z0-9])?$")
_GROUP_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,62}$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# ---------------------------------------------------------------------------
# Records


@dataclass(frozen=True, slots=True)
class Group:
    """A set of nodes that should look alike (same driver, GPU count, model).

    ``implicit`` is true for a group that a node names but no ``[[group]]``
    defines; such a group has no expectations.
    """

    name: str
    expected_driver: str | None = None
    expected_cuda_driver: str | None = None
    expected_gpus: int | None = None
    expected_model: str | None = None
    implicit: bool = False


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node's agent: where to reach it and which group it belongs to.

    ``url`` is normalised: it always names a port (``DEFAULT_AGENT_PORT`` when
    the file gave none) and has no trailing slash.
    """

    name: str
    url: str
    group: str | None = None
    token_file: str | None = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Fleet:
    """A validated fleet file.

    Times are in seconds (``poll_interval_s``, ``timeout_s``), retention in
    days. ``warnings`` holds non-fatal findings (a token file that does not
    exist yet, a node naming an undefined group), each as ``FILE:LINE: KEY:
    message``.
    """

    name: str | None
    poll_interval_s: float
    timeout_s: float
    concurrency: int
    token_file: str | None
    tls_ca: str | None
    tls_verify: bool
    raw_retention_days: int
    thresholds: dict[str, float]
    groups: dict[str, Group]
    nodes: tuple[NodeSpec, ...]
    path: str
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def node(self, name: str) -> NodeSpec:
        """The node called ``name`` (case-insensitive).

        Raises:
            KeyError: no such node.
        """
        wanted = name.lower()
        for node in self.nodes:
            if node.name.lower() == wanted:
                return node
        raise KeyError(name)

    def nodes_in_group(self, group: str | Group) -> tuple[NodeSpec, ...]:
        """The nodes whose ``group`` is ``group`` (a name or a Group), in file order."""
        name = group.name if isinstance(group, Group) else group
        return tuple(node for node in self.nodes if node.group == name)

    def token_file_for(self, node: NodeSpec) -> str | None:
        """The bearer-token file to use for ``node``: its own, else the fleet's."""
        return node.token_file or self.token_file


# ---------------------------------------------------------------------------
# Line numbers: tomllib gives none, so scan the text.


@dataclass(slots=True)
class _Section:
    name: tuple[str, ...]
    array: bool
    index: int
    header: int
    end: int


class _Locator:
    """Find the line of ``table.key`` or ``array[i].key`` in TOML text."""

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([^\[\]#]+?)\s*(\]\]?)\s*(?:#.*)?$")

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.sections: list[_Section] = [_Section((), False, 0, 0, len(self.lines))]
        counts: dict[tuple[str, ...], int] = {}
        in_string: str | None = None
        for number, line in enumerate(self.lines, start=1):
            if in_string is None:
                match = self._HEADER.match(line)
                if match and len(match.group(1)) == len(match.group(3)):
                    name = _split_dotted(match.group(2))
                    array = match.group(1) == "[["
                    index = counts.get(name, 0)
                    if array:
                        counts[name] = index + 1
                    self.sections[-1].end = number - 1
                    self.sections.append(
                        _Section(name, array, index, number, len(self.lines))
                    )
                    continue
            in_string = _multiline_state(line, in_string)

    def line_of(self, table: tuple[str, ...], index: int | None, key: str | None) -> int:
        """Line of ``key`` in the section (``index``-th for arrays); else nearby."""
        section = self._section(table, index)
        if section is not None:
            if key is not None:
                found = self._find_key(section, key)
                if found:
                    return found
            if section.header:
                return section.header
        # Inline or dotted forms at the root: `fleet = {...}`, `fleet.x = 1`.
        root = self.sections[0]
        if table:
            if key is not None:
                found = self._find_key(root, ".".join(table + (key,)))
                if found:
                    return found
            found = self._find_key(root, table[0])
            if found:
                return found
            for sec in self.sections[1:]:
                if sec.name[: len(table)] == table:
                    return sec.header
        elif key is not None:
            found = self._find_key(root, key)
            if found:
                return found
            for sec in self.sections[1:]:
                if sec.name and sec.name[0] == key:
                    return sec.header
        return 1

    def _section(self, table: tuple[str, ...], index: int | None) -> _Section | None:
        for sec in self.sections:
            if sec.name == table and (not sec.array or index is None or sec.index == index):
                return sec
        return None

    def _find_key(self, section: _Section, key: str) -> int:
        parts = [re.escape(part) for part in key.split(".")]
        quoted = [rf'(?:{p}|"{p}"|\'{p}\')' for p in parts]
        pattern = re.compile(r"^\s*" + r"\s*\.\s*".join(quoted) + r"\s*=")
        in_string: str | None = None
        for number in range(section.header + 1, section.end + 1):
            line = self.lines[number - 1]
            if in_string is None and pattern.match(line):
                return number
            in_string = _multiline_state(line, in_string)
        return 0


def _split_dotted(name: str) -> tuple[str, ...]:
    return tuple(part.strip().strip("\"'") for part in name.split("."))


def _multiline_state(line: str, in_string: str | None) -> str | None:
    """Track whether we are inside a ''' or \"\"\" string after ``line``."""
    position = 0
    while True:
        if in_string is None:
            candidates = [
                (line.find(quote, position), quote) for quote in ('"""', "'''")
            ]
            candidates = [(at, quote) for at, quote in candidates if at >= 0]
            comment = line.find("#", position)
            if not candidates:
                return None
            at, quote = min(candidates)
            if 0 <= comment < at:
                return None
            in_string = quote
            position = at + 3
        else:
            at = line.find(in_string, position)
            if at < 0:
                return in_string
            in_string = None
            position = at + 3


# ---------------------------------------------------------------------------
# Loading and validation


def load_fleet(path: str | os.PathLike[str]) -> Fleet:
    """Read and validate a fleet file.

    Relative ``token_file``/``tls_ca`` paths are resolved against the fleet
    file's directory; ``~`` is expanded.

    Raises:
        ConfigError: the file cannot be read or is invalid; the message names
            the file, the line and the key of every problem.
    """
    name = os.fspath(path)
    try:
        text = Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{name}: cannot read fleet file: {err}") from err
    return parse_fleet(text, path=name, base_dir=Path(name).parent)


def parse_fleet(
    text: str, path: str = "<string>", base_dir: str | os.PathLike[str] | None = None
) -> Fleet:
    """Validate fleet-file text; ``path`` is only used in messages.

    Args:
        text: the TOML document.
        path: the name to put in messages (and ``Fleet.path``).
        base_dir: resolve relative file paths against this directory; when
            None they are kept as written.

    Raises:
        ConfigError: TOML syntax error, unknown key, wrong type or value,
            missing ``name``/``url``, duplicate node names.
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(_syntax_message(path, text, str(err))) from None
    return _Validator(text, path, base_dir).run(data)


def _syntax_message(path: str, text: str, message: str) -> str:
    match = re.search(r"\s*\(at line (\d+), column (\d+)\)\s*$", message)
    if match:
        line = int(match.group(1))
        detail = f"{message[: match.start()]} (column {match.group(2)})"
    else:
        line = max(1, len(text.splitlines()))
        detail = re.sub(r"\s*\(at end of document\)\s*$", " at end of file", message)
    return f"{path}:{line}: TOML syntax error: {detail}"


class _Validator:
    def __init__(
        self, text: str, path: str, base_dir: str | os.PathLike[str] | None
    ) -> None:
        self.path = path
        self.base_dir = None if base_dir is None else Path(base_dir)
        self.locate = _Locator(text)
        self.errors: list[tuple[int, str]] = []
        self.warnings: list[tuple[int, str]] = []

    # -- reporting ---------------------------------------------------------

    def _line(self, table: tuple[str, ...], index: int | None, key: str | None) -> int:
        return self.locate.line_of(table, index, key)

    def error(self, line: int, key: str, message: str) -> None:
        self.errors.append((line, f"{self.path}:{line}: {key}: {message}"))

    def warn(self, line: int, key: str, message: str) -> None:
        self.warnings.append((line, f"{self.path}:{line}: {key}: {message}"))

    # -- driver ------------------------------------------------------------

    def run(self, data: dict[str, Any]) -> Fleet:
        self._unknown_keys(data, _ROOT_KEYS, (), None, "")
        settings = self._fleet(data.get("fleet", {}))
        thresholds = self._thresholds(data.get("thresholds", {}))
        groups = self._groups(data.get("group", []))
        nodes = self._nodes(data.get("node", []), groups)
        if self.errors:
            self.errors.sort(key=lambda pair: pair[0])
            raise ConfigError("\n".join(message for _, message in self.errors))
        self.warnings.sort(key=lambda pair: pair[0])
        return Fleet(
            thresholds=thresholds,
            groups=groups,
            nodes=tuple(nodes),
            path=self.path,
            warnings=tuple(message for _, message in self.warnings),
            **settings,
        )

    def _unknown_keys(
        self,
        table: Mapping[str, Any],
        allowed: Sequence[str],
        where: tuple[str, ...],
        index: int | None,
        label: str,
    ) -> None:
        for key in table:
            if key in allowed:
                continue
            close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            choices = ", ".join(allowed)
            self.error(
                self._line(where, index, key),
                f"{label}{key}",
                f"unknown key{hint}; expected one of: {choices}",
            )

    # -- [fleet] -----------------------------------------------------------

    def _fleet(self, table: Any) -> dict[str, Any]:
        settings = dict(FLEET_DEFAULTS)
        if not isinstance(table, dict):
            self.error(self._line((), None, "fleet"), "fleet", "must be a table ([fleet])")
            return settings
        self._unknown_keys(table, tuple(FLEET_DEFAULTS), ("fleet",), None, "fleet.")

        def where(key: str) -> tuple[int, str]:
            return self._line(("fleet",), None, key), f"fleet.{key}"

        if "name" in table:
            settings["name"] = self._string(table["name"], *where("name"))
        for key, low, high in (("poll_interval_s", 2, 3600), ("timeout_s", 0, 600)):
            if key in table:
                value = self._number(table[key], *where(key), low=low, high=high,
                                     low_open=key == "timeout_s")
                if value is not None:
                    settings[key] = float(value)
        for key, low, high in (("concurrency", 1, 10_000), ("raw_retention_days", 1, 36_500)):
            if key in table:
                value = self._integer(table[key], *where(key), low=low, high=high)
                if value is not None:
                    settings[key] = value
        for key in ("token_file", "tls_ca"):
            if key in table:
                settings[key] = self._file(table[key], *where(key))
        if "tls_verify" in table:
            value = table["tls_verify"]
            if isinstance(value, bool):
                settings["tls_verify"] = value
            else:
                self.error(*where("tls_verify"), f"must be true or false (got {value!r})")
        if settings["timeout_s"] >= settings["poll_interval_s"] and "timeout_s" in table:
            self.warn(
                *where("timeout_s"),
                f"timeout ({settings['timeout_s']:g} s) is not shorter than the poll "
                f"interval ({settings['poll_interval_s']:g} s); slow nodes will overlap",
            )
        return settings

    # -- [thresholds] ------------------------------------------------------

    def _thresholds(self, table: Any) -> dict[str, float]:
        out: dict[str, float] = {}
        if not isinstance(table, dict):
            self.error(
                self._line((), None, "thresholds"), "thresholds", "must be a table ([thresholds])"
            )
            return out
        for key, value in table.items():
            line = self._line(("thresholds",), None, key)
            if not _IDENTIFIER.match(key):
                self.error(line, f"thresholds.{key}", "key must be an identifier (letters, digits, _)")
                continue
            number = self._number(value, line, f"thresholds.{key}")
            if number is not None:
                out[key] = float(number)
        return out

    # -- [[group]] ---------------------------------------------------------

    def _groups(self, items: Any) -> dict[str, Group]:
        groups: dict[str, Group] = {}
        first_line: dict[str, int] = {}
        if not isinstance(items, list):
            self.error(self._line((), None, "group"), "group", "must be an array of tables ([[group]])")
            return groups
        for index, item in enumerate(items):
            label = f"group[{index}]"

            def where(key: str | None, index: int = index, label: str = label) -> tuple[int, str]:
                line = self._line(("group",), index, key)
                return line, label if key is None else f"{label}.{key}"

            if not isinstance(item, dict):
                self.error(*where(None), "must be a table ([[group]])")
                continue
            self._unknown_keys(item, _GROUP_KEYS, ("group",), index, f"{label}.")
            if "name" not in item:
                self.error(*where(None), "missing required key 'name'")
                continue
            name = self._string(item["name"], *where("name"))
            if name is None:
                continue
            if not _GROUP_NAME.match(name):
                self.error(
                    *where("name"),
                    f"must be letters, digits, '_', '.', '-' (got {name!r})",
                )
                continue
            if name in groups:
                line, key = where("name")
                self.error(line, key, f"duplicate group {name!r} (first defined at line {first_line[name]})")
                continue
            driver = cuda = model = None
            gpus = None
            if "expected_driver" in item:
                driver = self._version(item["expected_driver"], *where("expected_driver"))
            if "expected_cuda_driver" in item:
                cuda = self._version(item["expected_cuda_driver"], *where("expected_cuda_driver"))
            if "expected_gpus" in item:
                gpus = self._integer(item["expected_gpus"], *where("expected_gpus"), low=0, high=1024)
            if "expected_model" in item:
                model = self._string(item["expected_model"], *where("expected_model"))
            first_line[name] = where("name")[0]
            groups[name] = Group(name, driver, cuda, gpus, model)
        return groups

    # -- [[node]] ----------------------------------------------------------

    def _nodes(self, items: Any, groups: dict[str, Group]) -> list[NodeSpec]:
        nodes: list[NodeSpec] = []
        seen_names: dict[str, int] = {}
        seen_urls: dict[str, int] = {}
        if not isinstance(items, list):
            self.error(self._line((), None, "node"), "node", "must be an array of tables ([[node]])")
            return nodes
        for index, item in enumerate(items):
            label = f"node[{index}]"

            def where(key: str | None, index: int = index, label: str = label) -> tuple[int, str]:
                line = self._line(("node",), index, key)
                return line, label if key is None else f"{label}.{key}"

            if not isinstance(item, dict):
                self.error(*where(None), "must be a table ([[node]])")
                continue
            self._unknown_keys(item, _NODE_KEYS, ("node",), index, f"{label}.")
            missing = [key for key in ("name", "url") if key not in item]
            for key in missing:
                self.error(*where(None), f"missing required key {key!r}")

            name = self._string(item["name"], *where("name")) if "name" in item else None
            if name is not None and not _HOSTNAME.match(name):
                self.error(
                    *where("name"),
                    f"must be a host-like name: letters, digits, '.', '-', '_' (got {name!r})",
                )
                name = None
            if name is not None:
                line = where("name")[0]
                if name.lower() in seen_names:
                    first = seen_names[name.lower()]
                    self.error(
                        line,
                        f"{label}.name",
                        f"duplicate node name {name!r} (lines {first} and {line})",
                    )
                    name = None
                else:
                    seen_names[name.lower()] = line

            url = self._url(item["url"], *where("url")) if "url" in item else None
            if url is not None:
                line = where("url")[0]
                if url in seen_urls:
                    self.warn(line, f"{label}.url", f"same URL as the node at line {seen_urls[url]}")
                else:
                    seen_urls[url] = line

            group = None
            if "group" in item:
                group = self._string(item["group"], *where("group"))
                if group is not None and not _GROUP_NAME.match(group):
                    self.error(*where("group"), f"must be letters, digits, '_', '.', '-' (got {group!r})")
                    group = None
                if group is not None and group not in groups:
                    defined = [g for g in groups if not groups[g].implicit]
                    if defined:
                        close = difflib.get_close_matches(group, defined, n=1, cutoff=0.6)
                        hint = f" (did you mean {close[0]!r}?)" if close else ""
                        self.warn(
                            *where("group"),
                            f"group {group!r} is not defined by a [[group]]{hint}; "
                            "using an implicit group with no expectations",
                        )
                    groups[group] = Group(group, implicit=True)

            token_file = self._file(item["token_file"], *where("token_file")) if "token_file" in item else None
            tags: tuple[str, ...] = ()
            if "tags" in item:
                tags = self._tags(item["tags"], *where("tags"))

            if name is not None and url is not None:
                nodes.append(NodeSpec(name, url, group, token_file, tags))
        return nodes

    # -- value checks ------------------------------------------------------

    def _string(self, value: Any, line: int, key: str) -> str | None:
        if not isinstance(value, str):
            self.error(line, key, f"must be a string (got {_describe(value)})")
            return None
        if not value.strip():
            self.error(line, key, "must not be empty")
            return None
        return value

    def _version(self, value: Any, line: int, key: str) -> str | None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.error(line, key, f'must be a string; quote it: "{value}"')
            return None
        return self._string(value, line, key)

    def _number(
        self,
        value: Any,
        line: int,
        key: str,
        low: float | None = None,
        high: float | None = None,
        low_open: bool = False,
    ) -> float | int | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.error(line, key, f"must be a number (got {_describe(value)})")
            return None
        if not math.isfinite(value):
            self.error(line, key, f"must be a finite number (got {value})")
            return None
        if low is not None and high is not None:
            too_low = value <= low if low_open else value < low
            if too_low or value > high:
                bound = f"> {low:g}" if low_open else f">= {low:g}"
                self.error(line, key, f"must be {bound} and <= {high:g} (got {value:g})")
                return None
        return value

    def _integer(self, value: Any, line: int, key: str, low: int, high: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(line, key, f"must be an integer (got {_describe(value)})")
            return None
        if not low <= value <= high:
            self.error(line, key, f"must be between {low} and {high} (got {value})")
            return None
        return value

    def _file(self, value: Any, line: int, key: str) -> str | None:
        text = self._string(value, line, key)
        if text is None:
            return None
        resolved = Path(text).expanduser()
        if self.base_dir is not None and not resolved.is_absolute():
            resolved = self.base_dir / resolved
        if not resolved.exists():
            self.warn(line, key, f"file {str(resolved)!r} does not exist (yet)")
        return str(resolved) if (self.base_dir is not None or text.startswith("~")) else text

    def _url(self, value: Any, line: int, key: str) -> str | None:
        text = self._string(value, line, key)
        if text is None:
            return None
        text = text.strip()
        try:
            parts = urllib.parse.urlsplit(text)
            port = parts.port
        except ValueError as err:
            self.error(line, key, f"invalid URL {text!r}: {err}")
            return None
        if parts.scheme not in ("http", "https"):
            self.error(line, key, f"must start with http:// or https:// (got {text!r})")
            return None
        if not parts.hostname:
            self.error(line, key, f"must name a host, as in http://gpu01:{DEFAULT_AGENT_PORT} (got {text!r})")
            return None
        if parts.username is not None or parts.password is not None:
            self.error(line, key, "must not hold credentials; use token_file")
            return None
        if parts.query or parts.fragment:
            self.error(line, key, f"must not have a query or fragment (got {text!r})")
            return None
        host = parts.hostname
        if ":" in host:
            host = f"[{host}]"
        netloc = f"{host}:{port if port is not None else DEFAULT_AGENT_PORT}"
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))

    def _tags(self, value: Any, line: int, key: str) -> tuple[str, ...]:
        if not isinstance(value, list):
            self.error(line, key, f"must be an array of strings (got {_describe(value)})")
            return ()
        tags: list[str] = []
        for position, tag in enumerate(value):
            if not isinstance(tag, str) or not tag.strip():
                self.error(line, f"{key}[{position}]", f"must be a non-empty string (got {tag!r})")
            elif tag not in tags:
                tags.append(tag)
        return tuple(tags)


def _describe(value: Any) -> str:
    kinds = {bool: "boolean", int: "integer", float: "float", str: "string",
             list: "array", dict: "table"}
    kind = kinds.get(type(value), type(value).__name__)
    shown = repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    return f"{kind} {shown}"


# ---------------------------------------------------------------------------
# Importers
#
# Each returns a list of node dicts:
#   {"name": str, "address": str, "port": int | None, "group": str | None,
#    "tags": list[str], "gpus": int | None}
# ``address`` is what goes into the URL; ``port`` None means "the default".


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
            raise ValueError(f"line {number}: port {port} is out of range")
        try:
            hosts = hostlist.expand(line)
        except ValueError as err:
            raise ValueError(f"line {number}: {err}") from None
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
        raise ValueError(f"host range {pattern!r}: expected [start:end] or [start:end:step]")
    start, end = fields[0].strip(), fields[1].strip()
    step = int(fields[2]) if len(fields) == 3 and fields[2].strip() else 1
    if step < 1:
        raise ValueError(f"host range {pattern!r}: step must be positive")
    if start.isdigit() and end.isdigit():
        low, high = int(start), int(end)
        width = len(start) if start.startswith("0") else 0
        values = [str(n).zfill(width) for n in range(low, high + 1, step)]
    elif len(start) == 1 and len(end) == 1 and start.isalpha() and end.isalpha():
        letters = string.ascii_letters
        low, high = letters.index(start), letters.index(end)
        values = list(letters[low : high + 1 : step])
    else:
        raise ValueError(f"host range {pattern!r}: bad range [{match.group(1)}]")
    if not values:
        raise ValueError(f"host range {pattern!r}: empty (start after end?)")
    if len(values) > hostlist.MAX_HOSTS:
        raise ValueError(f"host range {pattern!r} expands to more than {hostlist.MAX_HOSTS} hosts")
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
            raise ValueError(f"line {number}: {err}") from None
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
            raise ValueError(f"line {number}: {err}") from None
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
            raise ValueError(f"no group {group_filter!r} in the inventory (groups: {', '.join(known)})")
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
            raise ValueError(f"host {host}: fleetmon_port {value!r} is not a port number")
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
        raise ValueError("no NodeName= records found (is this `scontrol show nodes` output?)")
    return nodes


def groups_from_nodes(nodes: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """One group dict per group the nodes name, in first-seen order.

    A group gets ``expected_gpus`` when every node in it reports the same
    (known) GPU count.
    """
    counts: dict[str, set[int | None]] = {}
    for node in nodes:
        group = node.get("group")
        if group:
            counts.setdefault(group, set()).add(node.get("gpus"))
    groups: dict[str, dict[str, Any]] = {}
    for name, seen in counts.items():
        group: dict[str, Any] = {"name": name}
        if len(seen) == 1 and None not in seen:
            group["expected_gpus"] = next(iter(seen))
        groups[name] = group
    return groups


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
) -> str:
    """Write node dicts (from an importer) as a fleet file.

    Args:
        nodes: dicts with ``name`` and optionally ``address``, ``port``,
            ``url``, ``group``, ``tags``, ``token_file``.
        groups: group dicts (or ``Group``s) keyed by name or as a list; when
            None they are derived with ``groups_from_nodes``. Every group a
            node names gets a ``[[group]]`` entry.
        port: agent port for nodes that name none.
        name: the fleet's name, if any.

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
                entry = {key: getattr(group, key) for key in _GROUP_KEYS}
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
    for entry in given.values():
        out.append("[[group]]")
        for key in _GROUP_KEYS:
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
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------
# CLI: `fleetmon fleet import` and `fleetmon fleet check`

_IMPORTERS: dict[str, Callable[..., list[dict[str, Any]]]] = {
    "hosts": import_hostlist,
    "ansible": import_ansible_ini,
    "scontrol": import_scontrol,
}


def detect_format(text: str) -> str:
    """Guess an inventory's format: "scontrol", "ansible" or "hosts"."""
    if re.search(r"(?m)^\s*NodeName=", text):
        return "scontrol"
    if re.search(r"(?m)^\s*\[[^\]]+\]\s*$", text) or "ansible_host=" in text:
        return "ansible"
    return "hosts"


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``fleetmon fleet import``."""
    parser.add_argument(
        "source", help="inventory to read: a file, or '-' for standard input"
    )
    parser.add_argument(
        "--format",
        choices=("auto", "hosts", "ansible", "scontrol"),
        default="auto",
        help="input format: a host list, an Ansible INI inventory, or "
        "`scontrol show nodes` output (default: guess from the content)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_AGENT_PORT,
        help=f"agent port for hosts that name none (default: {DEFAULT_AGENT_PORT})",
    )
    parser.add_argument(
        "-o",
        "--output",
        default=None,
        help="write the fleet file here instead of standard output",
    )
    parser.add_argument(
        "--group",
        default=None,
        help="ansible only: import just this group and its children",
    )


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the arguments of ``fleetmon fleet check``."""
    parser.add_argument("file", help="fleet file (TOML) to validate")


def main_import(args: argparse.Namespace) -> int:
    """Run ``fleetmon fleet import``; returns the exit status."""
    source = args.source
    try:
        if source == "-":
            text = sys.stdin.read()
        else:
            text = Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        print(f"error: {source}: cannot read: {err}", file=sys.stderr)
        return 1
    fmt = getattr(args, "format", "auto") or "auto"
    if fmt == "auto":
        fmt = detect_format(text)
    port = getattr(args, "port", None) or DEFAULT_AGENT_PORT
    if not 0 < port < 65536:
        print(f"error: --port {port} is out of range", file=sys.stderr)
        return 1
    group = getattr(args, "group", None)
    try:
        if fmt == "ansible":
            nodes = import_ansible_ini(text, group_filter=group)
        elif fmt in _IMPORTERS:
            nodes = _IMPORTERS[fmt](text)
        else:
            print(f"error: unknown format {fmt!r}", file=sys.stderr)
            return 1
    except ValueError as err:
        print(f"error: {source}: {err}", file=sys.stderr)
        return 1
    if not nodes:
        print(f"error: {source}: no hosts found ({fmt} format)", file=sys.stderr)
        return 1
    rendered = render_fleet_toml(nodes, port=port)
    try:
        fleet = parse_fleet(rendered, path=args.output or "<output>")
    except ConfigError as err:
        print(f"error: the imported fleet is not valid:\n{err}", file=sys.stderr)
        return 1
    if args.output:
        try:
            Path(args.output).write_text(rendered, encoding="utf-8")
        except OSError as err:
            print(f"error: {args.output}: cannot write: {err}", file=sys.stderr)
            return 1
        print(
            f"wrote {args.output}: {len(fleet.nodes)} nodes in {len(fleet.groups)} groups",
            file=sys.stderr,
        )
    else:
        sys.stdout.write(rendered)
    return 0


def main_check(args: argparse.Namespace) -> int:
    """Run ``fleetmon fleet check``; returns the exit status."""
    try:
        fleet = load_fleet(args.file)
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 1
    print(f"OK: {len(fleet.nodes)} nodes in {len(fleet.groups)} groups")
    for warning in fleet.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 0
