#!/usr/bin/env python3
"""Build the single-file node agent: ``python3 fleetmon-agent.pyz`` (a stdlib zipapp).

    python3 packaging/build_agent_pyz.py [-o dist/fleetmon-agent.pyz]     (or: make agent-pyz)

The archive holds exactly the modules the agent imports, found by following
the ``import`` statements (lazy ones included) from ``fleetmon/agent/**`` and
the simulator that ``--simulate`` loads, so a node needs only Python 3.8+ and
nvidia-ml-py. The build refuses a module that imports anything outside the
standard library, pynvml and the archive itself: such an agent would fail on
a node at its first lazy import, not here. ``tests/agent/test_py38_syntax.py``
checks that every module it lists runs on Python 3.8.

The archive's ``__main__`` builds the parser with ``fleetmon agent``'s own
``add_parser`` (fleetmon/cli/agent.py), so the flags are the same; the
``fleetmon.cli`` package itself (every other subcommand, Qt, SQLite storage)
stays out, replaced by a one-line package stub.
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import subprocess
import sys
import tempfile
import zipapp
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set

REPO = Path(__file__).resolve().parents[1]

# Where the closure starts: the agent itself, its CLI module and the NVML twin behind --simulate
# (stdlib only, so a node without a GPU can try the agent: `--simulate healthy`).
ROOTS = ("fleetmon", "fleetmon.cli.agent", "fleetmon.sim.nvml", "fleetmon.sim.scenarios")
ROOT_PACKAGES = ("fleetmon.agent",)
# Third-party modules the node provides (nvidia-ml-py); everything else must be stdlib.
NODE_PROVIDED = frozenset({"pynvml"})
# Third-party packages a module uses only when present (it checks for them first and falls back): fleetmon.i18n
# formats numbers and dates and compiles a .po with Babel where Babel is installed, and speaks English otherwise.
OPTIONAL = {"fleetmon.i18n": frozenset({"babel"})}
# The other vendors' backends (issue 23) are not in the archive: they read through fleetmon.sources' parsers,
# which need Python 3.10+ and defusedxml; fleetmon.agent.backend skips a backend module that is absent.
# Such a node runs the agent from the wheel (`pip install 'fleetmon[agent]'`), see docs/install-node.md.
EXCLUDED = frozenset({"fleetmon.agent.amdsmi", "fleetmon.agent.tools", "fleetmon.agent.polled"})
# Packages whose __init__ is replaced by a stub in the archive (it imports the workstation's code).
STUBBED = {"fleetmon.cli": '"""Only the `agent` subcommand is bundled in fleetmon-agent.pyz."""\n'}

MAIN = '''\
"""fleetmon-agent.pyz: `fleetmon agent` as one file (Python 3.8+ and nvidia-ml-py)."""

import argparse
import sys

from fleetmon import __version__
from fleetmon.cli import agent as _agent
from fleetmon.errors import KnownError

REVISION = {revision!r}


class _One:
    """Stands in for argparse's subparsers: fleetmon/cli/agent.py adds its parser here."""

    parser = None

    def add_parser(self, name, **kwargs):
        kwargs.pop("help", None)
        self.parser = argparse.ArgumentParser(prog="fleetmon-agent.pyz", **kwargs)
        return self.parser


def main(argv=None):
    one = _One()
    _agent.add_parser(one)
    parser = one.parser
    version = "fleetmon-agent " + __version__ + (" (git " + REVISION + ")" if REVISION else "")
    parser.add_argument("--version", action="version", version=version)
    args = parser.parse_args(argv)
    args.command = "agent"
    try:
        return int(args.func(args) or 0)
    except KnownError as exc:
        print("fleetmon agent: " + str(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
'''


def module_path(name: str) -> Optional[Path]:
    """The source file of a fleetmon module (package -> its __init__.py), None if there is none."""
    base = REPO.joinpath(*name.split("."))
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def is_type_checking(test: ast.expr) -> bool:
    """``if TYPE_CHECKING:`` / ``if typing.TYPE_CHECKING:`` (imports only the type checker runs)."""
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST) -> Iterable[ast.AST]:
    """``ast.walk`` without the bodies of ``if TYPE_CHECKING:``."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and is_type_checking(child.test):
                todo.extend(child.orelse)
            else:
                todo.append(child)


def _imports(name: str, path: Path) -> Iterable[str]:
    """Every module ``path`` imports at run time (absolute names), at any depth: lazy imports count."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                mod = f"{base}.{node.module}" if node.module else base
            else:
                mod = node.module or ""
            if mod == "__future__":
                continue
            yield mod
            for alias in node.names:  # `from fleetmon import xid` imports a module
                yield f"{mod}.{alias.name}"


def agent_modules() -> List[str]:
    """The fleetmon modules in the archive, sorted (packages as their own name).

    Raises:
        SystemExit: a module imports a third-party package (not stdlib, not pynvml).
    """
    todo = list(ROOTS)
    for pkg in ROOT_PACKAGES:
        pkg_dir = REPO.joinpath(*pkg.split("."))
        for py in sorted(pkg_dir.rglob("*.py")):
            rel = py.relative_to(REPO).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            if ".".join(parts) not in EXCLUDED:
                todo.append(".".join(parts))
    seen: Set[str] = set()
    foreign: Dict[str, Set[str]] = {}
    stdlib = set(getattr(sys, "stdlib_module_names", ()))
    while todo:
        name = todo.pop()
        if name in seen or name in EXCLUDED:
            continue
        path = module_path(name)
        if path is None:
            continue  # `from fleetmon.x import SomeName`: not a module
        seen.add(name)
        parent = name.rpartition(".")[0]
        if parent:
            todo.append(parent)  # importing a.b runs a/__init__.py first
        if name in STUBBED:
            continue
        for mod in _imports(name, path):
            top = mod.split(".")[0]
            if top == "fleetmon":
                todo.append(mod)
            elif top not in NODE_PROVIDED and top not in OPTIONAL.get(name, ()) and stdlib and top not in stdlib:
                foreign.setdefault(name, set()).add(mod)
    if foreign:
        lines = [f"  {m}: {', '.join(sorted(v))}" for m, v in sorted(foreign.items())]
        raise SystemExit("fleetmon-agent.pyz: modules import packages a node does not have:\n" + "\n".join(lines))
    return sorted(seen)


def git_revision() -> str:
    """The checkout's short revision (``+dirty`` with local changes), "" outside a git checkout."""
    git = shutil.which("git")
    if git is None:
        return ""
    try:
        rev = subprocess.run([git, "-C", str(REPO), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run([git, "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return rev + ("+dirty" if dirty else "")


def build(output: Path, revision: Optional[str] = None) -> Path:
    """Write the zipapp to ``output`` (its folder is created); returns ``output``."""
    revision = git_revision() if revision is None else revision
    output.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fleetmon-pyz-") as tmp:
        stage = Path(tmp)
        for name in agent_modules():
            src = module_path(name)
            assert src is not None
            dest = stage / src.relative_to(REPO)
            dest.parent.mkdir(parents=True, exist_ok=True)
            if name in STUBBED:
                dest.write_text(STUBBED[name], encoding="utf-8")
            else:
                shutil.copyfile(src, dest)
        (stage / "__main__.py").write_text(MAIN.format(revision=revision), encoding="utf-8")
        tmp_out = output.with_name(output.name + ".tmp")
        zipapp.create_archive(stage, tmp_out, interpreter="/usr/bin/env python3", compressed=True)
        os.replace(tmp_out, output)  # a half-written archive never takes the name
    return output


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("-o", "--output", type=Path, default=REPO / "dist" / "fleetmon-agent.pyz",
                        help="where to write the archive (default dist/fleetmon-agent.pyz)")
    parser.add_argument("--list", action="store_true", help="print the modules it would contain and exit")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(agent_modules()))
        return 0
    out = build(args.output)
    print(f"{out} ({out.stat().st_size // 1024} KiB, {len(agent_modules())} modules)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
