"""The health package's layout: no import circle, no private imports, one list of rules.

Checked on the source with ast (no import of the modules under test is needed
for the graph), so a circle hidden behind a function-level import is caught too.
"""

from __future__ import annotations

import ast
from pathlib import Path

from fleetmon.health import rules

REPO = Path(__file__).resolve().parents[2]
HEALTH = REPO / "fleetmon" / "health"
RULES_DIR = HEALTH / "rules"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(HEALTH.rglob("*.py"))}


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) for every absolute import anywhere in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((a.name, []) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.relative_to(REPO)}: relative import"
            assert node.module is not None
            out.append((node.module, [a.name for a in node.names]))
    return out


def _edges() -> dict[str, set[str]]:
    """Module -> the fleetmon.health modules it imports (``from pkg import submodule`` included)."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        targets: set[str] = set()
        for module, names in _imports(path):
            if module in MODULES:
                targets.add(module)
            for n in names:
                if f"{module}.{n}" in MODULES:
                    targets.add(f"{module}.{n}")
        targets.discard(name)
        graph[name] = targets
    return graph


def test_no_import_circle_in_health() -> None:
    graph = _edges()
    done: set[str] = set()

    def visit(node: str, stack: list[str]) -> None:
        if node in stack:
            raise AssertionError("import circle: " + " -> ".join(stack[stack.index(node):] + [node]))
        if node in done:
            return
        for nxt in sorted(graph[node]):
            visit(nxt, stack + [node])
        done.add(node)

    for node in sorted(graph):
        visit(node, [])


def test_no_private_names_imported_across_modules() -> None:
    for name, path in MODULES.items():
        for module, names in _imports(path):
            if module.startswith("fleetmon"):
                private = [n for n in names if n.startswith("_")]
                assert not private, f"{name} imports {private} from {module}"


def test_rule_modules_share_only_the_helpers() -> None:
    """A family module imports the helpers, never another family (derating included)."""
    families = {n for n in MODULES if n.startswith("fleetmon.health.rules.")} - {"fleetmon.health.rules.helpers"}
    for name in families:
        used = _edges()[name] & (families | {"fleetmon.health.rules"})
        assert not used, f"{name} imports {sorted(used)}"


def test_rules_is_the_one_list_of_every_rule() -> None:
    defined = set()
    for name, path in MODULES.items():
        if not name.startswith("fleetmon.health.rules."):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined |= {f"{name}.{n.name}" for n in tree.body
                    if isinstance(n, ast.FunctionDef) and n.name.startswith("check_")}
    listed = {f"{r.__module__}.{r.__name__}" for r in rules.RULES}
    assert listed == defined


def test_health_files_fit_the_size_limit() -> None:
    for name, path in MODULES.items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines <= 700, f"{name}: {lines} lines"
