"""Load and validate a fleet file: every key checked, all problems reported together.

Each problem is reported as ``FILE:LINE: KEY: message`` (the line found by
``fleetmon.fleet.locate``); all problems of a file are raised together in one
``ConfigError``, and non-fatal ones land in ``Fleet.warnings``.
"""

from __future__ import annotations

import difflib
import math
import os
import re
import tomllib
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fleetmon import specbook
from fleetmon.errors import ConfigError
from fleetmon.i18n import N_, Lines, Text, reason_of
from fleetmon.specs import GpuSpec, all_specs
from fleetmon.fleet.locate import Locator
from fleetmon.fleet.notify import validate_notify
from fleetmon.fleet.model import (DEFAULT_AGENT_PORT, DEFAULT_DCGM_PORT, FLEET_DEFAULTS, GROUP_KEYS, HISTORY_KEYS,
                                  NODE_KEYS, SLURM_KEYS, Fleet, Group, NodeSpec, SlurmSettings)

__all__ = ["is_node_name", "load_fleet", "parse_fleet"]

_ROOT_KEYS = ("fleet", "thresholds", "group", "node", "history", "spec", "slurm", "notify")
_SLURM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_KIND = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9_.\-]*[A-Za-z0-9])?$")
_GROUP_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,62}$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_node_name(name: object) -> bool:
    """Whether ``name`` is a node name the fleet file accepts: host-like, letters, digits, '.', '-', '_'
    (so it fits a Slurm hostlist, a file name and a terminal). Names from other ways in (Prometheus
    labels, imported captures) are checked with this."""
    return isinstance(name, str) and _HOSTNAME.fullmatch(name) is not None


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
        raise ConfigError(Text(N_("{path}: cannot read fleet file: {error}"), path=name, error=str(err))) from err
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
    problem = _structure_problem(text)
    if problem is not None:
        raise ConfigError(Text("{path}:{line}: {message}", path=path, line=problem[0], message=problem[1]))
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(_syntax_message(path, text, str(err))) from None
    except RecursionError:  # the scan above should have caught it; never a traceback
        raise ConfigError(Text(N_("{path}: TOML nested too deeply to read (at most {levels} levels)"), path=path,
                               levels=MAX_NESTING)) from None
    deep = _too_deep(data)
    if deep is not None:
        raise ConfigError(Text(N_("{path}:{line}: {key}: nested more than {levels} levels deep (a fleet file needs "
                                 "at most 4)"), path=path, line=Locator(text).line_of((), None, deep), key=deep,
                              levels=MAX_NESTING))
    try:
        return _Validator(text, path, base_dir).run(data)
    except RecursionError:
        raise ConfigError(Text(N_("{path}: nested too deeply to check (at most {levels} levels)"), path=path,
                               levels=MAX_NESTING)) from None


MAX_NESTING = 32
"""Arrays, inline tables and dotted-key parts inside one another: a fleet file needs 4
(``[[node]]`` → table → ``tags`` → string). Deeper input is refused before or right after
parsing: tomllib recurses per level (100,000 ``[`` is a RecursionError) and is quadratic in
the parts of one dotted key (100,000 parts take minutes)."""

_TOKEN = re.compile(r'"""|' + r"'''" + r'''|["'#\[\]{}.=,\n]''')
_STRING_END = {
    '"': re.compile(r'(?:[^"\\\n]|\\.)*"'),
    "'": re.compile(r"[^'\n]*'"),
    '"""': re.compile(r'(?:[^"\\]|\\.|"(?!""))*"""(?:"{0,2})', re.DOTALL),
    "'''": re.compile(r"(?:[^']|'(?!''))*'''(?:'{0,2})", re.DOTALL),
}


def _structure_problem(text: str) -> tuple[int, str] | None:
    """(line, message) when brackets or dotted keys nest beyond :data:`MAX_NESTING`, read
    from the text before tomllib sees it (strings and comments skipped). A file this scan
    misreads is one tomllib rejects anyway; a valid file is never refused for depth it lacks."""
    depth = dots = 0
    line = 1
    pos = 0
    while True:
        match = _TOKEN.search(text, pos)
        if match is None:
            return None
        token = match.group()
        pos = match.end()
        if token in _STRING_END:
            end = _STRING_END[token].match(text, pos)
            if end is None:
                return None  # unterminated: tomllib's syntax error says where
            line += text.count("\n", pos, end.end())
            pos = end.end()
        elif token == "#":
            newline = text.find("\n", pos)
            if newline < 0:
                return None
            pos = newline
        elif token == "\n":
            line += 1
            dots = 0
        elif token in "[{":
            depth += 1
            dots = 0
            if depth > MAX_NESTING:
                return line, Text(N_("TOML nested too deeply: arrays or tables more than {levels} levels inside one "
                                        "another"), levels=MAX_NESTING)
        elif token in "]}":
            depth = max(0, depth - 1)
            dots = 0
        elif token == ".":
            dots += 1
            if dots >= MAX_NESTING:
                return line, Text(
                    N_("TOML nested too deeply: a dotted key of more than {levels} parts"), levels=MAX_NESTING)
        else:  # = ,
            dots = 0


def _too_deep(data: dict[str, Any]) -> str | None:
    """The top-level key under which the parsed document nests beyond :data:`MAX_NESTING`, if any.
    Walked with a stack, not recursion, so the check itself cannot overflow."""
    for key, value in data.items():
        stack: list[tuple[Any, int]] = [(value, 1)]
        while stack:
            item, level = stack.pop()
            if level > MAX_NESTING:
                return key
            if isinstance(item, dict):
                stack.extend((v, level + 1) for v in item.values())
            elif isinstance(item, list):
                stack.extend((v, level + 1) for v in item)
    return None


def _syntax_message(path: str, text: str, message: str) -> str:
    match = re.search(r"\s*\(at line (\d+), column (\d+)\)\s*$", message)
    if match:
        line = int(match.group(1))
        return Text(N_("{path}:{line}: TOML syntax error: {detail} (column {column})"), path=path, line=line,
                    detail=message[: match.start()], column=match.group(2))
    line = max(1, len(text.splitlines()))
    end = re.search(r"\s*\(at end of document\)\s*$", message)
    if end:
        return Text(N_("{path}:{line}: TOML syntax error: {detail} at end of file"), path=path, line=line,
                    detail=message[: end.start()])
    return Text(N_("{path}:{line}: TOML syntax error: {detail}"), path=path, line=line, detail=message)


class _Validator:
    def __init__(
        self, text: str, path: str, base_dir: str | os.PathLike[str] | None
    ) -> None:
        self.path = path
        self.base_dir = None if base_dir is None else Path(base_dir)
        self.locate = Locator(text)
        self.errors: list[tuple[int, str]] = []
        self.warnings: list[tuple[int, str]] = []

    # -- reporting ---------------------------------------------------------

    def _line(self, table: tuple[str, ...], index: int | None, key: str | None) -> int:
        return self.locate.line_of(table, index, key)

    def error(self, line: int, key: str, message: str) -> None:
        """One problem: ``message`` an :class:`~fleetmon.i18n.Text` (said in the reader's language where the
        CLI or the GUI shows it; the prefix and the key stay as they are)."""
        self.errors.append((line, Text("{path}:{line}: {key}: {message}", path=self.path, line=line, key=key,
                                       message=message)))

    def warn(self, line: int, key: str, message: str) -> None:
        self.warnings.append((line, Text("{path}:{line}: {key}: {message}", path=self.path, line=line, key=key,
                                         message=message)))

    # -- driver ------------------------------------------------------------

    def run(self, data: dict[str, Any]) -> Fleet:
        self._unknown_keys(data, _ROOT_KEYS, (), None, "")
        settings = self._fleet(data.get("fleet", {}))
        thresholds = self._thresholds(data.get("thresholds", {}))
        groups = self._groups(data.get("group", []))
        nodes = self._nodes(data.get("node", []), groups, settings["poll_interval_s"])
        history = self._history(data.get("history", {}))
        user_specs = self._specs(data.get("spec", []))
        slurm = self._slurm(data["slurm"]) if "slurm" in data else None
        destinations = validate_notify(self, data.get("notify", []), groups)
        if self.errors:
            self.errors.sort(key=lambda pair: pair[0])
            raise ConfigError(Lines([message for _, message in self.errors]))
        self.warnings.sort(key=lambda pair: pair[0])
        return Fleet(
            thresholds=thresholds,
            groups=groups,
            nodes=tuple(nodes),
            path=self.path,
            warnings=tuple(message for _, message in self.warnings),
            history_prometheus=history,
            specs=tuple(user_specs),
            slurm=slurm,
            notify=tuple(destinations),
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
            choices = ", ".join(allowed)
            self.error(
                self._line(where, index, key),
                f"{label}{key}",
                Text(N_("unknown key (did you mean {close!r}?); expected one of: {choices}"), close=close[0],
                     choices=choices) if close else
                Text(N_("unknown key; expected one of: {choices}"), choices=choices),
            )

    # -- [fleet] -----------------------------------------------------------

    def _fleet(self, table: Any) -> dict[str, Any]:
        settings = dict(FLEET_DEFAULTS)
        if not isinstance(table, dict):
            self.error(self._line((), None, "fleet"), "fleet", Text(N_("must be a table ([{table}])"), table="fleet"))
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
        for key in ("token_file", "tls_ca", "ssh_config"):
            if key in table:
                settings[key] = self._file(table[key], *where(key))
        if "tls_verify" in table:
            value = table["tls_verify"]
            if isinstance(value, bool):
                settings["tls_verify"] = value
            else:
                self.error(*where("tls_verify"), Text(N_("must be true or false (got {value!r})"), value=value))
        if settings["timeout_s"] >= settings["poll_interval_s"] and "timeout_s" in table:
            self.warn(
                *where("timeout_s"),
                Text(N_("timeout ({timeout:g} s) is not shorter than the poll interval ({interval:g} s); slow nodes "
                        "will overlap"), timeout=settings["timeout_s"], interval=settings["poll_interval_s"]),
            )
        return settings

    # -- [thresholds] ------------------------------------------------------

    def _thresholds(self, table: Any) -> dict[str, float]:
        out: dict[str, float] = {}
        if not isinstance(table, dict):
            self.error(
                self._line((), None, "thresholds"), "thresholds", Text(
                    N_("must be a table ([{table}])"), table="thresholds")
            )
            return out
        for key, value in table.items():
            line = self._line(("thresholds",), None, key)
            if not _IDENTIFIER.fullmatch(key):
                self.error(line, f"thresholds.{key}", Text(N_("key must be an identifier (letters, digits, _)")))
                continue
            number = self._number(value, line, f"thresholds.{key}")
            if number is not None:
                out[key] = float(number)
        return out

    # -- [history] ---------------------------------------------------------

    def _history(self, table: Any) -> str | None:
        """``[history] prometheus``: an http(s) base URL (a path prefix allowed, e.g. Mimir's ``/prometheus``)."""
        if not isinstance(table, dict):
            self.error(self._line((), None, "history"), "history", Text(
                N_("must be a table ([{table}])"), table="history"))
            return None
        self._unknown_keys(table, HISTORY_KEYS, ("history",), None, "history.")
        if "prometheus" not in table:
            return None
        line, key = self._line(("history",), None, "prometheus"), "history.prometheus"
        text = self._string(table["prometheus"], line, key)
        if text is None:
            return None
        text = text.strip()
        try:
            parts = urllib.parse.urlsplit(text)
            parts.port
        except ValueError as err:
            self.error(line, key, Text(N_("invalid URL {url!r}: {error}"), url=text, error=str(err)))
            return None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            self.error(line, key, Text(N_("must be an http:// or https:// URL naming a host, as in http://prom:9090 "
                                          "(got {value!r})"), value=text))
            return None
        if parts.username is not None or parts.password is not None:
            self.error(line, key, Text(N_("must not hold credentials")))
            return None
        if parts.query or parts.fragment:
            self.error(line, key, Text(N_("must not have a query or fragment (got {value!r})"), value=text))
            return None
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), "", ""))

    # -- [slurm] -----------------------------------------------------------

    def _slurm(self, table: Any) -> SlurmSettings | None:
        """``[slurm]``: conf, name_pattern, timeout_s, auto_drain (finding kinds), max_fraction."""
        if not isinstance(table, dict):
            self.error(self._line((), None, "slurm"), "slurm", Text(N_("must be a table ([{table}])"), table="slurm"))
            return None
        self._unknown_keys(table, SLURM_KEYS, ("slurm",), None, "slurm.")

        def where(key: str) -> tuple[int, str]:
            return self._line(("slurm",), None, key), f"slurm.{key}"

        out = SlurmSettings()
        conf = self._file(table["conf"], *where("conf")) if "conf" in table else None
        pattern = out.name_pattern
        if "name_pattern" in table:
            text = self._string(table["name_pattern"], *where("name_pattern"))
            if text is not None:
                try:
                    probe = text.format(name="gpu-01.example", short="gpu-01")
                except (KeyError, IndexError, ValueError) as exc:
                    self.error(*where("name_pattern"), Text(
                        N_("only {name_field} and {short_field} may be used (got {value!r}: {error})"),
                        name_field="{name}", short_field="{short}", value=text, error=str(exc)))
                else:
                    if not _SLURM_NAME.fullmatch(probe):
                        self.error(*where("name_pattern"), Text(
                            N_("does not give a Slurm node name (got {value!r})"), value=probe))
                    else:
                        pattern = text
        timeout_s = out.timeout_s
        if "timeout_s" in table:
            value = self._number(table["timeout_s"], *where("timeout_s"), low=0, high=600, low_open=True)
            timeout_s = out.timeout_s if value is None else float(value)
        kinds: list[str] = []
        if "auto_drain" in table:
            value = table["auto_drain"]
            if not isinstance(value, list) or not all(isinstance(k, str) and _KIND.fullmatch(k) for k in value):
                self.error(*where("auto_drain"), Text(N_('must be a list of finding kinds, as in ["gpu-lost", "xid"]')))
            else:
                kinds = list(dict.fromkeys(value))
        fraction = out.max_fraction
        if "max_fraction" in table:
            value = self._number(table["max_fraction"], *where("max_fraction"), low=0, high=1, low_open=True)
            fraction = out.max_fraction if value is None else float(value)
        return SlurmSettings(conf=conf, name_pattern=pattern, timeout_s=timeout_s, auto_drain=tuple(kinds),
                             max_fraction=fraction)

    # -- [[group]] ---------------------------------------------------------

    def _groups(self, items: Any) -> dict[str, Group]:
        groups: dict[str, Group] = {}
        first_line: dict[str, int] = {}
        if not isinstance(items, list):
            self.error(self._line((), None, "group"), "group", Text(
                N_("must be an array of tables ([[{table}]])"), table="group"))
            return groups
        for index, item in enumerate(items):
            label = f"group[{index}]"

            def where(key: str | None, index: int = index, label: str = label) -> tuple[int, str]:
                line = self._line(("group",), index, key)
                return line, label if key is None else f"{label}.{key}"

            if not isinstance(item, dict):
                self.error(*where(None), Text(N_("must be a table ([[{table}]])"), table="group"))
                continue
            self._unknown_keys(item, GROUP_KEYS, ("group",), index, f"{label}.")
            if "name" not in item:
                self.error(*where(None), Text(N_("missing required key {key!r}"), key="name"))
                continue
            name = self._string(item["name"], *where("name"))
            if name is None:
                continue
            if not _GROUP_NAME.fullmatch(name):
                self.error(
                    *where("name"),
                    Text(N_("must be letters, digits, '_', '.', '-' (got {value!r})"), value=name),
                )
                continue
            if name in groups:
                line, key = where("name")
                self.error(line, key, Text(N_("duplicate group {name!r} (first defined at line {line})"), name=name,
                                            line=first_line[name]))
                continue
            driver = cuda = model = runtime = firmware = None
            gpus = None
            if "expected_driver" in item:
                driver = self._version(item["expected_driver"], *where("expected_driver"))
            if "expected_cuda_driver" in item:
                cuda = self._version(item["expected_cuda_driver"], *where("expected_cuda_driver"))
            if "expected_runtime" in item:
                runtime = self._version(item["expected_runtime"], *where("expected_runtime"))
            if "expected_firmware" in item:
                firmware = self._version(item["expected_firmware"], *where("expected_firmware"))
            if "expected_gpus" in item:
                gpus = self._integer(item["expected_gpus"], *where("expected_gpus"), low=0, high=1024)
            if "expected_model" in item:
                model = self._string(item["expected_model"], *where("expected_model"))
            first_line[name] = where("name")[0]
            groups[name] = Group(name, driver, cuda, gpus, model, expected_runtime=runtime,
                                 expected_firmware=firmware)
        return groups

    # -- [[node]] ----------------------------------------------------------

    def _nodes(self, items: Any, groups: dict[str, Group], poll_interval_s: float) -> list[NodeSpec]:
        nodes: list[NodeSpec] = []
        seen_names: dict[str, int] = {}
        seen_urls: dict[str, int] = {}
        if not isinstance(items, list):
            self.error(self._line((), None, "node"), "node", Text(
                N_("must be an array of tables ([[{table}]])"), table="node"))
            return nodes
        for index, item in enumerate(items):
            label = f"node[{index}]"

            def where(key: str | None, index: int = index, label: str = label) -> tuple[int, str]:
                line = self._line(("node",), index, key)
                return line, label if key is None else f"{label}.{key}"

            if not isinstance(item, dict):
                self.error(*where(None), Text(N_("must be a table ([[{table}]])"), table="node"))
                continue
            self._unknown_keys(item, NODE_KEYS, ("node",), index, f"{label}.")
            missing = [key for key in ("name", "url") if key not in item]
            for key in missing:
                self.error(*where(None), Text(N_("missing required key {key!r}"), key=key))

            name = self._string(item["name"], *where("name")) if "name" in item else None
            if name is not None and not _HOSTNAME.fullmatch(name):
                self.error(
                    *where("name"),
                    Text(N_("must be a host-like name: letters, digits, '.', '-', '_' (got {value!r})"), value=name),
                )
                name = None
            if name is not None:
                line = where("name")[0]
                if name.lower() in seen_names:
                    first = seen_names[name.lower()]
                    self.error(
                        line,
                        f"{label}.name",
                        Text(N_("duplicate node name {name!r} (lines {first} and {line})"), name=name, first=first,
                             line=line),
                    )
                    name = None
                else:
                    seen_names[name.lower()] = line

            url = self._url(item["url"], *where("url")) if "url" in item else None
            if url is not None:
                line = where("url")[0]
                if url in seen_urls:
                    self.warn(line, f"{label}.url", Text(
                        N_("same URL as the node at line {line}"), line=seen_urls[url]))
                else:
                    seen_urls[url] = line

            group = None
            if "group" in item:
                group = self._string(item["group"], *where("group"))
                if group is not None and not _GROUP_NAME.fullmatch(group):
                    self.error(*where("group"), Text(N_("must be letters, digits, '_', '.', '-' (got {value!r})"),
                                                    value=group))
                    group = None
                if group is not None and group not in groups:
                    defined = [g for g in groups if not groups[g].implicit]
                    if defined:
                        close = difflib.get_close_matches(group, defined, n=1, cutoff=0.6)
                        self.warn(
                            *where("group"),
                            Text(N_("group {group!r} is not defined by a [[group]] (did you mean {close!r}?); using an "
                                    "implicit group with no expectations"), group=group, close=close[0]) if close else
                            Text(N_("group {group!r} is not defined by a [[group]]; using an implicit group with no "
                                    "expectations"), group=group),
                        )
                    groups[group] = Group(group, implicit=True)

            token_file = self._file(item["token_file"], *where("token_file")) if "token_file" in item else None
            tags: tuple[str, ...] = ()
            if "tags" in item:
                tags = self._tags(item["tags"], *where("tags"))
            timeout_s = None
            if "timeout_s" in item:
                value = self._number(item["timeout_s"], *where("timeout_s"), low=0, high=600, low_open=True)
                timeout_s = None if value is None else float(value)
                if timeout_s is not None and timeout_s >= poll_interval_s:
                    self.warn(*where("timeout_s"), Text(
                        N_("timeout ({timeout:g} s) is not shorter than the poll interval ({interval:g} s); this "
                           "node's polls will overlap"), timeout=timeout_s, interval=poll_interval_s))

            slurm_name = None
            if "slurm_name" in item:
                slurm_name = self._string(item["slurm_name"], *where("slurm_name"))
                if slurm_name is not None and not _SLURM_NAME.fullmatch(slurm_name):
                    self.error(*where("slurm_name"), Text(N_("must be one Slurm node name: letters, digits, '.', '_', "
                                                             "'-' (got {value!r})"), value=slurm_name))
                    slurm_name = None
            tool = self._tool(item["tool"], url, *where("tool")) if "tool" in item else "auto"

            if name is not None and url is not None:
                nodes.append(NodeSpec(name, url, group, token_file, tags, timeout_s, slurm_name, tool or "auto"))
        return nodes

    # -- [[spec]] ----------------------------------------------------------

    def _specs(self, items: Any) -> list[specbook.UserSpec]:
        """``[[spec]]`` tables: a model the catalog lacks or a board that differs from its model
        (see :mod:`fleetmon.specbook`); each checked in full, all problems reported."""
        out: list[specbook.UserSpec] = []
        first_line: dict[tuple[str, int | None, str | None], int] = {}
        if not isinstance(items, list):
            self.error(self._line((), None, "spec"), "spec", Text(
                N_("must be an array of tables ([[{table}]])"), table="spec"))
            return out
        for index, item in enumerate(items):
            label = f"spec[{index}]"

            def where(key: str | None, index: int = index, label: str = label) -> tuple[int, str]:
                line = self._line(("spec",), index, key)
                return line, label if key is None else f"{label}.{key}"

            if not isinstance(item, dict):
                self.error(*where(None), Text(N_("must be a table ([[{table}]])"), table="spec"))
                continue
            before = len(self.errors)
            self._unknown_keys(item, specbook.SPEC_KEYS, ("spec",), index, f"{label}.")
            if "name" not in item:
                self.error(*where(None), Text(
                    N_("missing required key {key!r} (the model's name as NVML reports it)"), key="name"))
                continue
            name = self._string(item["name"], *where("name"))
            if name is None:
                continue
            name = " ".join(name.split())
            subsystem: int | None = None
            if "match_subsystem_id" in item:
                subsystem = specbook.parse_subsystem_id(item["match_subsystem_id"])
                if subsystem is None:
                    self.error(*where("match_subsystem_id"), Text(N_(
                        "must be a PCI subsystem id as the inventory's pci_subsystem_id shows it, as in \"0x145010DE\" "
                        "(got {value})"), value=_describe(item["match_subsystem_id"])))
            vbios: str | None = None
            if "match_vbios" in item:
                vbios = self._string(item["match_vbios"], *where("match_vbios"))
                vbios = vbios.strip() if vbios is not None else None
            base: GpuSpec | None = None
            if "base" in item:
                base_name = self._string(item["base"], *where("base"))
                if base_name is not None:
                    base = specbook.catalog_spec(base_name)
                    if base is None:
                        names = [s.nvml_name for s in all_specs()]
                        close = difflib.get_close_matches(base_name, names, n=1, cutoff=0.6)
                        self.error(*where("base"), Text(N_(
                            "{name!r} is not in the spec catalog (did you mean {close!r}?); see docs/spec-catalog.md"),
                            name=base_name, close=close[0]) if close else Text(N_(
                            "{name!r} is not in the spec catalog; see docs/spec-catalog.md"), name=base_name))
            else:
                base = specbook.catalog_spec(name)  # a board of a catalog model inherits its model's row
            values = self._spec_values(item, where)
            if "base" not in item and base is None:
                missing = [k for k in specbook.DERATING_KEYS if k not in item]
                if missing:
                    self.error(*where(None), Text(N_(
                        "{name!r} is not in the spec catalog: state {keys} (missing {missing}), or name a catalog "
                        "model to inherit from with base"), name=name, keys=", ".join(specbook.DERATING_KEYS),
                        missing=", ".join(missing)))
            boost = values.get("boost_clock_mhz", base.boost_clock_mhz if base else None)
            low = values.get("base_clock_mhz", base.base_clock_mhz if base else None)
            if boost is not None and low is not None and boost < low:
                key = "boost_clock_mhz" if "boost_clock_mhz" in values else "base_clock_mhz"
                self.error(*where(key), Text(N_("boost clock {boost} MHz is below the base clock {base} MHz"),
                                             boost=boost, base=low))
            match = (specbook.name_key(name), subsystem, vbios)
            line = where(None)[0]
            if match in first_line:
                self.error(*where("name"), Text(N_("duplicate [[spec]] for {name!r} with the same match keys "
                                                   "(first at line {line})"), name=name, line=first_line[match]))
                continue
            first_line[match] = line
            if len(self.errors) > before:
                continue
            note = item.get("note")
            spec = specbook.build_spec(name, values, base, f"{self.path}:{line}")
            out.append(specbook.UserSpec(spec, subsystem, vbios, line, base.nvml_name if base else None,
                                         note if isinstance(note, str) else None))
        return out

    def _spec_values(self, item: Mapping[str, Any], where: Callable[[str | None], tuple[int, str]]
                     ) -> dict[str, Any]:
        """The GpuSpec fields of one ``[[spec]]`` table that pass their checks."""
        values: dict[str, Any] = {}
        for key in specbook.INT_KEYS:
            if key not in item:
                continue
            value = self._integer(item[key], *where(key), low=1, high=10_000_000)
            if value is None:
                continue
            if key == "pcie_gen" and value not in specbook.PCIE_GENS:
                self.error(*where(key), Text(N_("must be a PCIe generation 1 to 6 (got {value})"), value=value))
            elif key == "pcie_width" and value not in (1, 2, 4, 8, 12, 16, 32):
                self.error(*where(key), Text(N_("must be a PCIe link width: 1, 2, 4, 8, 12, 16 or 32 (got {value})"),
                                                value=value))
            else:
                values[key] = value
        for key in specbook.FLOAT_KEYS:
            if key in item:
                number = self._number(item[key], *where(key), low=0, high=1_000_000, low_open=True)
                if number is not None:
                    values[key] = float(number)
        for key in (*specbook.STR_KEYS, "source", "note"):
            if key in item:
                text = self._string(item[key], *where(key))
                if text is not None:
                    values[key] = text
        for key, vocab in specbook.VOCAB_KEYS.items():
            if key in item:
                text = self._string(item[key], *where(key))
                if text is not None and text not in vocab:
                    self.error(*where(key), Text(N_("must be one of {choices} (got {value!r})"),
                                                 choices=", ".join(vocab), value=text))
                elif text is not None:
                    values[key] = text
        return values

    # -- value checks ------------------------------------------------------

    def _string(self, value: Any, line: int, key: str) -> str | None:
        if not isinstance(value, str):
            self.error(line, key, Text(N_("must be a string (got {value})"), value=_describe(value)))
            return None
        if not value.strip():
            self.error(line, key, Text(N_("must not be empty")))
            return None
        return value

    def _version(self, value: Any, line: int, key: str) -> str | None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.error(line, key, Text(N_('must be a string; quote it: "{value}"'), value=value))
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
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            self.error(line, key, Text(N_("must be a number (got {value})"), value=_describe(value)))
            return None
        if not math.isfinite(value):
            self.error(line, key, Text(N_("must be a finite number (got {value})"), value=value))
            return None
        if low is not None and high is not None:
            too_low = value <= low if low_open else value < low
            if too_low or value > high:
                self.error(line, key, Text(N_("must be > {low:g} and <= {high:g} (got {value:g})"), low=low, high=high,
                                           value=value) if low_open else
                           Text(N_("must be >= {low:g} and <= {high:g} (got {value:g})"), low=low, high=high,
                                value=value))
                return None
        return value

    def _integer(self, value: Any, line: int, key: str, low: int, high: int) -> int | None:
        if not isinstance(value, int) or isinstance(value, bool):
            self.error(line, key, Text(N_("must be an integer (got {value})"), value=_describe(value)))
            return None
        if not low <= value <= high:
            self.error(line, key, Text(
                N_("must be between {low} and {high} (got {value})"), low=low, high=high, value=value))
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
            self.warn(line, key, Text(N_("file {file!r} does not exist (yet)"), file=str(resolved)))
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
            self.error(line, key, Text(N_("invalid URL {url!r}: {error}"), url=text, error=str(err)))
            return None
        scheme = parts.scheme.lower()
        if scheme == "ssh":
            return self._ssh_url(text, line, key)
        if scheme == "file":
            self.error(line, key, Text(
                N_("a capture file is not polled; add it with `fleetmon import-smi` (got {value!r})"), value=text))
            return None
        prefix = ""
        if scheme in ("dcgm+http", "dcgm+https"):
            prefix, scheme = "dcgm+", scheme.split("+", 1)[1]
        elif scheme not in ("http", "https"):
            self.error(line, key, Text(N_("must start with http:// or https:// (got {value!r}); other sources: "
                                          "dcgm+http(s)://host:9400/metrics (dcgm-exporter), ssh://[user@]host "
                                          "(nvidia-smi)"), value=text))
            return None
        if not parts.hostname:
            self.error(line, key, Text(N_("must name a host, as in http://gpu01:{port} (got {value!r})"),
                                       port=DEFAULT_AGENT_PORT, value=text))
            return None
        if parts.username is not None or parts.password is not None:
            self.error(line, key, Text(N_("must not hold credentials; use token_file")))
            return None
        if parts.query or parts.fragment:
            self.error(line, key, Text(N_("must not have a query or fragment (got {value!r})"), value=text))
            return None
        host = parts.hostname
        if ":" in host:
            host = f"[{host}]"
        if prefix:
            netloc = f"{host}:{port if port is not None else DEFAULT_DCGM_PORT}"
            return prefix + urllib.parse.urlunsplit((scheme, netloc, parts.path.rstrip("/") or "/metrics", "", ""))
        netloc = f"{host}:{port if port is not None else DEFAULT_AGENT_PORT}"
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))

    def _ssh_url(self, text: str, line: int, key: str) -> str | None:
        """An ``ssh://[user@]host[:port]`` URL, checked by :func:`fleetmon.sources.source_of` (no option-like
        host, no shell characters, nothing after the host); kept as written, the scheme lower-cased."""
        from fleetmon.sources import SourceError, source_of

        try:
            source_of(text)
        except SourceError as err:
            self.error(line, key, reason_of(err))
            return None
        return "ssh" + text[3:].rstrip("/")

    def _tool(self, value: Any, url: str | None, line: int, key: str) -> str | None:
        """An ``ssh://`` node's vendor tool: ``auto`` or a tool the SSH source knows (docs/sources.md)."""
        from fleetmon.sources import Transport, source_of, source_type
        from fleetmon.sources.ssh_tools import TOOL_NAMES

        text = self._string(value, line, key)
        if text is None:
            return None
        if text not in TOOL_NAMES:
            close = difflib.get_close_matches(text.lower(), TOOL_NAMES, n=1, cutoff=0.6)
            choices = ", ".join(TOOL_NAMES)
            self.error(line, key, Text(N_("must be one of {choices} (got {value!r}; did you mean {close!r}?)"),
                                       choices=choices, value=text[:40], close=close[0]) if close else
                       Text(N_("must be one of {choices} (got {value!r})"), choices=choices, value=text[:40]))
            return None
        if url is not None and source_type(source_of(url).kind).transport is not Transport.SSH:
            self.error(line, key, Text(N_("applies to ssh:// nodes only (an agent picks its backend with --backend)")))
            return None
        return text

    def _tags(self, value: Any, line: int, key: str) -> tuple[str, ...]:
        if not isinstance(value, list):
            self.error(line, key, Text(N_("must be an array of strings (got {value})"), value=_describe(value)))
            return ()
        tags: list[str] = []
        for position, tag in enumerate(value):
            if not isinstance(tag, str) or not tag.strip():
                self.error(line, f"{key}[{position}]", Text(
                    N_("must be a non-empty string (got {value!r})"), value=tag))
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
