"""Every module in fleetmon-agent.pyz runs on Python 3.8 (the oldest a node may have).

``ast.parse(..., feature_version=(3, 8))`` refuses newer *grammar* only; much
newer code parses fine and fails when it runs: ``int | None`` or ``dict[str, int]``
outside an annotation (a type alias, a cast, an isinstance), ``dataclass(slots=True)``,
``enum.StrEnum``, ``str.removeprefix``, ``functools.cache``, ``zoneinfo``...
The walk below finds those. Annotations are skipped only in modules that have
``from __future__ import annotations`` (there they are never evaluated);
``if TYPE_CHECKING:`` blocks and ``if sys.version_info >= (3, N):`` branches too.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TARGET = (3, 8)


def _builder():
    spec = importlib.util.spec_from_file_location("build_agent_pyz", REPO / "packaging" / "build_agent_pyz.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUILD = _builder()
MODULES = BUILD.agent_modules()

# Standard-library modules and names newer than 3.8, with the version that added them.
NEW_MODULES = {"zoneinfo": (3, 9), "graphlib": (3, 9), "tomllib": (3, 11)}
NEW_NAMES = {
    "enum": {"StrEnum": (3, 11), "ReprEnum": (3, 11), "verify": (3, 11), "member": (3, 11),
             "nonmember": (3, 11), "global_enum": (3, 11), "EnumCheck": (3, 11), "FlagBoundary": (3, 11)},
    "functools": {"cache": (3, 9)},
    "typing": {"Annotated": (3, 9), "TypeAlias": (3, 10), "ParamSpec": (3, 10), "Concatenate": (3, 10),
               "TypeGuard": (3, 10), "Self": (3, 11), "Never": (3, 11), "LiteralString": (3, 11),
               "assert_never": (3, 11), "assert_type": (3, 11), "reveal_type": (3, 11), "Required": (3, 11),
               "NotRequired": (3, 11), "Unpack": (3, 11), "TypeVarTuple": (3, 11), "dataclass_transform": (3, 11),
               "override": (3, 12), "TypeAliasType": (3, 12), "get_overloads": (3, 11)},
    "dataclasses": {"KW_ONLY": (3, 10)},
    "itertools": {"pairwise": (3, 10), "batched": (3, 12)},
    "math": {"lcm": (3, 9), "nextafter": (3, 9), "ulp": (3, 9), "cbrt": (3, 11), "exp2": (3, 11)},
    "argparse": {"BooleanOptionalAction": (3, 9)},
    "datetime": {"UTC": (3, 11)},
    "types": {"NoneType": (3, 10), "EllipsisType": (3, 10), "UnionType": (3, 10), "GenericAlias": (3, 9)},
    "contextlib": {"chdir": (3, 11), "aclosing": (3, 10)},
    "os": {"waitstatus_to_exitcode": (3, 9), "pidfd_open": (3, 9)},
    "random": {"randbytes": (3, 9)},
    "hashlib": {"file_digest": (3, 11)},
    "logging": {"getLevelNamesMapping": (3, 11)},
    "importlib.resources": {"files": (3, 9), "as_file": (3, 9)},
    "statistics": {"correlation": (3, 10), "covariance": (3, 10), "linear_regression": (3, 10)},
    "asyncio": {"to_thread": (3, 9), "TaskGroup": (3, 11), "timeout": (3, 11)},
}
# Methods newer than 3.8 (str.removeprefix, Path.is_relative_to, int.bit_count...): any `x.name(...)`.
NEW_METHODS = {"removeprefix": (3, 9), "removesuffix": (3, 9), "is_relative_to": (3, 9), "with_stem": (3, 9),
               "bit_count": (3, 10), "hardlink_to": (3, 10), "is_junction": (3, 12), "blobopen": (3, 11)}
# Keyword arguments newer than 3.8, by the callee's last name.
NEW_KEYWORDS = {"dataclass": {"slots": (3, 10), "kw_only": (3, 10), "match_args": (3, 10), "weakref_slot": (3, 11)},
                "field": {"kw_only": (3, 10)}, "zip": {"strict": (3, 10)},
                "shutdown": {"cancel_futures": (3, 9)}, "bisect_left": {"key": (3, 10)},
                "bisect_right": {"key": (3, 10)}, "insort": {"key": (3, 10)},
                "run": {"process_group": (3, 11)}, "Popen": {"process_group": (3, 11), "pipesize": (3, 10)},
                "basicConfig": {"encoding": (3, 9)}, "ArgumentParser": {"exit_on_error": (3, 9)}}
# Classes that are subscriptable (`list[int]`) only from 3.9 on: builtins and the stdlib's generics.
GENERIC_BUILTINS = {"list", "dict", "tuple", "set", "frozenset", "type"}
GENERIC_STDLIB = {
    "collections.abc": None,  # every name: Callable, Iterable, Mapping...
    "collections": {"deque", "defaultdict", "OrderedDict", "Counter", "ChainMap"},
    "queue": {"Queue", "SimpleQueue", "LifoQueue", "PriorityQueue"},
    "re": {"Pattern", "Match"}, "os": {"PathLike"}, "concurrent.futures": {"Future"},
    "contextlib": {"AbstractContextManager"}, "ctypes": None,
}
TYPE_NAMES = GENERIC_BUILTINS | {"int", "str", "float", "bool", "bytes", "bytearray", "complex", "object"}


class _Checker(ast.NodeVisitor):
    """Collects ``line: what (needs 3.N)`` for every construct that fails at run time on 3.8."""

    def __init__(self, tree: ast.Module) -> None:
        self.problems: list[str] = []
        self.future_annotations = any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
                                      and any(a.name == "annotations" for a in n.names) for n in tree.body)
        self.aliases: dict[str, str] = {}  # local name -> dotted stdlib name ("Callable" -> "collections.abc.Callable")
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        # Classes of the module itself are types too: ``A | B`` of two of them fails on 3.8.
        self.classes = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}

    def _flag(self, node: ast.AST, what: str, version: tuple[int, int]) -> None:
        if version > TARGET:
            self.problems.append(f"{getattr(node, 'lineno', '?')}: {what} (needs {version[0]}.{version[1]})")

    def _dotted(self, node: ast.expr) -> str:
        """``cf.Future`` -> "concurrent.futures.Future" through the module's imports; "" if not a name."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self._dotted(node.value)
            return f"{base}.{node.attr}" if base else ""
        return ""

    def _annotation(self, node: ast.expr | None) -> None:
        if node is not None and not self.future_annotations:
            self.visit(node)  # evaluated when the def or class runs

    # -- positions whose annotations 3.8 never evaluates under the __future__ import
    def visit_arg(self, node: ast.arg) -> None:
        self._annotation(node.annotation)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        self.visit(node.args)
        self._annotation(node.returns)
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._annotation(node.annotation)
        self.visit(node.target)
        if node.value is not None:
            self.visit(node.value)

    def visit_If(self, node: ast.If) -> None:
        if BUILD.is_type_checking(node.test):
            for stmt in node.orelse:
                self.visit(stmt)
            return
        test = node.test
        if (isinstance(test, ast.Compare) and self._dotted(test.left) == "sys.version_info"
                and isinstance(test.ops[0], (ast.GtE, ast.Gt)) and isinstance(test.comparators[0], ast.Tuple)):
            for stmt in node.orelse:  # the body runs only where it is supported
                self.visit(stmt)
            return
        self.generic_visit(node)

    # -- what fails on 3.8
    def visit_Match(self, node: ast.AST) -> None:
        self._flag(node, "match statement", (3, 10))
        self.generic_visit(node)

    def visit_TryStar(self, node: ast.AST) -> None:
        self._flag(node, "except*", (3, 11))
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.name.split(".")[0] in NEW_MODULES:
                self._flag(node, f"import {a.name}", NEW_MODULES[a.name.split(".")[0]])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        if mod.split(".")[0] in NEW_MODULES:
            self._flag(node, f"from {mod} import", NEW_MODULES[mod.split(".")[0]])
        for a in node.names:
            version = NEW_NAMES.get(mod, {}).get(a.name)
            if version:
                self._flag(node, f"from {mod} import {a.name}", version)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        dotted = self._dotted(node)
        mod, _, name = dotted.rpartition(".")
        version = NEW_NAMES.get(mod, {}).get(name)
        if version:
            self._flag(node, dotted, version)
        elif node.attr in NEW_METHODS:
            self._flag(node, f".{node.attr}", NEW_METHODS[node.attr])
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        callee = self._dotted(node.func).rpartition(".")[2]
        for kw in node.keywords:
            version = NEW_KEYWORDS.get(callee, {}).get(kw.arg or "")
            if version:
                self._flag(node, f"{callee}({kw.arg}=...)", version)
        self.generic_visit(node)

    def _is_type(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Constant) and node.value is None:
            return True
        if isinstance(node, ast.Name) and (node.id in TYPE_NAMES or node.id in self.classes):
            return True
        if isinstance(node, ast.Subscript):
            return True  # X[...] | Y: a generic alias, never a number or a set
        dotted = self._dotted(node)
        return dotted.startswith("typing.") or (isinstance(node, ast.BinOp) and self._is_type(node.left))

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.BitOr) and (self._is_type(node.left) or self._is_type(node.right)):
            self._flag(node, "X | Y between types", (3, 10))
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        value = node.value
        if isinstance(value, ast.Name) and value.id in GENERIC_BUILTINS and value.id not in self.aliases:
            self._flag(node, f"{value.id}[...]", (3, 9))
        else:
            mod, _, name = self._dotted(value).rpartition(".")
            names = GENERIC_STDLIB.get(mod, set())
            if mod in GENERIC_STDLIB and (names is None or name in names):
                self._flag(node, f"{mod}.{name}[...]", (3, 9))
        self.generic_visit(node)


def problems(src: str, filename: str = "<src>") -> list[str]:
    """What in ``src`` fails on Python 3.8: a syntax error, or ``line: construct (needs 3.N)`` each."""
    try:
        tree = ast.parse(src, filename, feature_version=TARGET)
    except SyntaxError as exc:
        return [f"{exc.lineno}: {exc.msg} (3.8 grammar)"]
    checker = _Checker(tree)
    checker.visit(tree)
    return checker.problems


def test_the_archive_holds_the_agent_and_no_workstation_code():
    assert {"fleetmon.agent.main", "fleetmon.agent.server", "fleetmon.agent.nvml.session", "fleetmon.cli.agent",
            "fleetmon.records", "fleetmon.vocab", "fleetmon.sim.nvml", "fleetmon.sim.scenarios"} <= set(MODULES)
    assert not [m for m in MODULES if m.startswith(("fleetmon.collector", "fleetmon.health", "fleetmon.sim.synthetic",
                                                    "fleetmon.cli.collect", "fleetmon.cli.gui", "ui", "storage"))]


@pytest.mark.parametrize("name", MODULES)
def test_agent_module_runs_on_python_3_8(name):
    path = BUILD.module_path(name)
    found = problems(path.read_text(encoding="utf-8"), str(path))
    assert not found, f"{path.relative_to(REPO)}:\n  " + "\n  ".join(found)


def test_the_archive_main_runs_on_python_3_8():
    assert not problems(BUILD.MAIN.format(revision="abc")), BUILD.MAIN
    assert not problems((REPO / "packaging" / "build_agent_pyz.py").read_text())  # the build runs on a node too


@pytest.mark.parametrize("src, what", [
    ("from __future__ import annotations\nAlias = int | None\n", "X | Y"),
    ("from __future__ import annotations\nx = isinstance(1, int | str)\n", "X | Y"),
    ("from typing import Any\nValues = dict[str, Any]\n", "dict[...]"),
    ("def f(x: list[int]) -> None: ...\n", "list[...]"),  # evaluated without the __future__ import
    ("from collections.abc import Callable\nF = Callable[[int], str]\n", "collections.abc.Callable[...]"),
    ("import queue\nq = queue.Queue[int]()\n", "queue.Queue[...]"),
    ("import enum\nclass S(enum.StrEnum):\n    A = 'a'\n", "enum.StrEnum"),
    ("from enum import StrEnum\n", "StrEnum"),
    ("from dataclasses import dataclass\n@dataclass(frozen=True, slots=True)\nclass A:\n    x: int\n", "slots"),
    ("s = 'ab'.removeprefix('a')\n", "removeprefix"),
    ("import functools\n@functools.cache\ndef f(): ...\n", "functools.cache"),
    ("import zoneinfo\n", "zoneinfo"),
    ("import tomllib\n", "tomllib"),
    ("from typing import TypeAlias\n", "TypeAlias"),
    ("match x:\n    case 1: pass\n", ""),
    ("with (open('a') as a,\n      open('b') as b):\n    pass\n", "parenthesized"),
    ("zip([], [], strict=True)\n", "strict"),
])
def test_the_checker_finds_what_fails_on_3_8(src, what):
    found = problems(src)
    assert found and what.lower() in found[0].lower(), found


@pytest.mark.parametrize("src", [
    "from __future__ import annotations\ndef f(x: int | None, y: dict[str, list[int]]) -> tuple[int, ...]: ...\n",
    "from __future__ import annotations\nclass A:\n    x: int | None = None\n",
    "from typing import Dict, Optional\nValues = Dict[str, Optional[int]]\n",
    "flags = 1 | 2\nmask = flags | FLAG\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from typing import TypeAlias\n",
    "import sys\nif sys.version_info >= (3, 10):\n    X = int | None\nelse:\n    X = None\n",
    "with open('a') as a, open('b') as b:\n    pass\n",
    "SLOTS = {}\n@dataclass(frozen=True, **SLOTS)\nclass A:\n    x: int\n",
])
def test_the_checker_passes_what_runs_on_3_8(src):
    assert problems(src) == []


def test_this_interpreter_is_new_enough_for_the_checker():
    # feature_version gives best-effort 3.8 grammar checks only on a newer parser.
    assert sys.version_info >= (3, 9)
