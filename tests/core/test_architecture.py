"""Import rules of the layout (DEVELOPERS brief, STYLE §10): checked on the source with ast."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path
from typing import NamedTuple

import pytest

REPO = Path(__file__).resolve().parents[2]


class _Facts(NamedTuple):
    imports: frozenset[str]
    module_level_imports: frozenset[str]
    pynvml_attribute_uses: tuple[str, ...]


@functools.cache
def _facts(path: Path) -> _Facts:
    """What the rules look at in one file, from one parse (the rules below each walk every file: parsing
    each file once for the module, not once per rule, is most of this module's time saved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    uses: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Attribute) and (_PYNVML_NAME.match(node.attr) or node.attr in _RAW_MODULE_ATTRS):
            uses.append(f"{node.lineno}: .{node.attr}")
    top: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            top.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            top.add(node.module)
    return _Facts(frozenset(names), frozenset(top), tuple(uses))


def _imports(path: Path) -> frozenset[str]:
    return _facts(path).imports


def _files(package: str) -> list[Path]:
    return sorted((REPO / package).rglob("*.py"))


def _top(name: str) -> str:
    return name.split(".")[0]


# Only the command line starts the app: its modules import ui lazily, inside the function that runs it.
LAUNCHERS = set((REPO / "fleetmon" / "cli").glob("*.py"))


def _module_level_imports(path: Path) -> frozenset[str]:
    return _facts(path).module_level_imports


@pytest.mark.parametrize("package", ["fleetmon", "storage"])
def test_no_qt_outside_ui(package):
    for path in _files(package):
        bad = {n for n in _imports(path) if _top(n) in ("PySide6", "pyqtgraph", "PyQt5", "PyQt6")}
        assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)}"
        uses_ui = {n for n in _imports(path) if _top(n) == "ui"}
        if path in LAUNCHERS:
            assert not {n for n in _module_level_imports(path) if _top(n) == "ui"}, path
        else:
            assert not uses_ui, f"{path.relative_to(REPO)} imports {sorted(uses_ui)}"


def test_storage_imports_only_fleetmon_records():
    allowed = {"fleetmon.records", "fleetmon.fields", "fleetmon.errors", "fleetmon.vocab",  # vocab: record vocabularies
               "fleetmon.signals",  # the device-signal vocabulary and its change events (pure, stdlib)
               # i18n (pure, stdlib): a finding's stored text made again from its stored form (m017), and
               # storage's error messages as i18n.Text, said in the reader's language
               "fleetmon.i18n"}
    for path in _files("storage"):
        bad = {n for n in _imports(path) if _top(n) == "fleetmon" and n not in allowed}
        assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)}"
        assert not {n for n in _imports(path) if _top(n) in ("aiohttp", "apscheduler")}


_BOUNDARY = REPO / "fleetmon" / "agent" / "nvml"
"""The NVML boundary package: only its modules and the simulated twin's use pynvml's names."""


def test_only_the_nvml_boundary_imports_pynvml():
    """Within the boundary package, too, one module loads pynvml (or the twin): the others get it passed."""
    for package in ("fleetmon", "storage", "ui"):
        for path in _files(package):
            if "pynvml" in {_top(n) for n in _imports(path)}:
                assert path == _BOUNDARY / "load.py", f"{path.relative_to(REPO)} imports pynvml"
    assert "pynvml" in {_top(n) for n in _imports(_BOUNDARY / "load.py")}


def test_only_the_poller_imports_apscheduler():
    for package in ("fleetmon", "storage", "ui"):
        for path in _files(package):
            if "apscheduler" in {_top(n) for n in _imports(path)}:
                assert path == REPO / "fleetmon" / "collector" / "poller.py", path


def test_health_rules_are_pure():
    forbidden = {"sqlite3", "sqlite_utils", "storage", "aiohttp", "apscheduler", "pynvml", "socket", "subprocess",
                 "urllib", "http", "requests"}
    for path in _files("fleetmon/health"):
        bad = {n for n in _imports(path) if _top(n) in forbidden or n.startswith(("fleetmon.agent", "fleetmon.collector"))}
        assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)}"


def test_agent_runs_on_stdlib_and_pynvml_only():
    third_party = {"aiohttp", "apscheduler", "sqlite_utils", "numpy", "PySide6", "pyqtgraph"}
    for path in _files("fleetmon/agent"):
        bad = {n for n in _imports(path) if _top(n) in third_party}
        assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)}"


# The simulated twin implements the pynvml API, so it defines (and calls its own) nvml* names.
_PYNVML_TWIN = {REPO / "fleetmon" / "sim" / name for name in (
    "nvml.py", "nvml_constants.py", "nvml_device.py", "nvml_errors.py", "nvml_structs.py", "device.py",
    "nvml_profiling.py")}
_RAW_MODULE_ATTRS = {"nv", "_nv"}
"""Attribute names under which the boundary keeps the raw pynvml (``NvmlSession._nv``)."""
_PYNVML_NAME = re.compile(r"(c_)?nvml[A-Z]|NVML")
"""pynvml's functions, constants, error classes and structures (``nvml_status`` is not one)."""


def _pynvml_attribute_uses(path: Path) -> list[str]:
    """``x.nvmlSomething`` / ``x.NVML_…`` / ``x.NVMLError`` and ``x.nv`` / ``x._nv`` in a file, as "line: name"."""
    return list(_facts(path).pynvml_attribute_uses)


def test_only_the_nvml_boundary_uses_pynvml_attributes():
    """The boundary leaks by attribute as surely as by import: nobody else touches pynvml's names."""
    for package in ("fleetmon", "storage", "ui"):
        for path in _files(package):
            if path.parent == _BOUNDARY or path in _PYNVML_TWIN:
                continue
            uses = _pynvml_attribute_uses(path)
            assert not uses, f"{path.relative_to(REPO)} uses pynvml attributes: {uses}"


def test_the_attribute_check_catches_a_leak(tmp_path):
    leak = tmp_path / "leak.py"
    leak.write_text("def f(session, watcher):\n    s = session.nv.nvmlEventSetCreate()\n"
                    "    return session._nv, s, pynvml.NVMLError_Timeout, watcher.nvml_status\n")
    assert sorted(_pynvml_attribute_uses(leak)) == ["2: .nv", "2: .nvmlEventSetCreate", "3: .NVMLError_Timeout",
                                                    "3: ._nv"]
