"""The layers of docs/architecture.md, checked on the source: no import circle, and no import from a
lower layer to a higher one (core 0 ← agent, storage, sim twin 1 ← health, collector, sim.fleet,
sim.synthetic, assess, export, demo, intake 2 ← cli, ui 3), nor between the listed siblings. Lazy imports
inside functions and TYPE_CHECKING imports count as imports."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("fleetmon", "storage", "ui")

# (module prefix, layer); the longest matching prefix wins. A module may import its own layer or lower.
LAYERS: tuple[tuple[str, int], ...] = (
    ("fleetmon", 0),             # core: records, field catalog, vocabularies, specs, hostlists, fleet file, Xid
    ("fleetmon.agent", 1),       # the node agent: core + pynvml only
    ("storage", 1),              # SQLite: core records only
    ("fleetmon.health", 2),      # pure rules over records
    ("fleetmon.sim", 1),         # the simulated NVML twin and its scenarios (the agent's --simulate)
    ("fleetmon.sim.fleet", 2),   # many simulated agents in one process
    ("fleetmon.sim.synthetic", 2),  # synthetic recorded history for the health engine
    ("fleetmon.collector", 2),   # polling into storage
    ("fleetmon.assess", 2),      # the health engine over the stored history
    ("fleetmon.export", 2),
    ("fleetmon.evidence", 2),    # a card's RMA evidence archive from the store
    ("fleetmon.ledger", 2),      # the stored findings ledger judged by the health lifecycle
    ("fleetmon.remote", 2),      # history from a Prometheus HTTP API (storage.rows types, no SQL)
    ("fleetmon.demo", 2),
    ("fleetmon.intake", 2),      # intake checks of new cards (health rules' data) and their storage glue
    ("fleetmon.slurm", 1),       # Slurm's commands (sinfo, scontrol) and fleet → Slurm names
    ("fleetmon.slurm.actions", 2),  # drain / resume with a record in the store; the automatic drain
    ("fleetmon.notify", 2),      # the collector's notifications: outbox through storage, Apprise, the digest
    ("fleetmon.cli", 3),         # entry points: may start anything
    ("fleetmon.__main__", 3),
    ("ui", 3),
)
# Same-or-lower layer is not enough for these: siblings that must not know each other.
FORBIDDEN: tuple[tuple[str, str], ...] = (
    ("fleetmon.agent", "storage"), ("storage", "fleetmon.agent"),
    ("fleetmon.health", "storage"), ("fleetmon.health", "fleetmon.collector"), ("fleetmon.health", "fleetmon.agent"),
    ("fleetmon.health", "fleetmon.sim"), ("storage", "fleetmon.sim"),
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {_module_name(p): p for pkg in PACKAGES for p in sorted((REPO / pkg).rglob("*.py"))}


def _imports(path: Path) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import in the file, lazy ones inside functions included."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                yield (sub if sub in MODULES else module), node.lineno


def _layer(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for prefix, layer in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > best[0]:
                best = (len(prefix), layer)
    return None if best is None else best[1]


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


GRAPH: dict[str, set[str]] = {m: {i for i, _ in _imports(p) if i in MODULES and i != m} for m, p in MODULES.items()}


def test_every_module_has_a_layer() -> None:
    assert not [m for m in MODULES if _layer(m) is None]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_from_a_lower_layer_to_a_higher_one(module: str) -> None:
    mine = _layer(module)
    assert mine is not None
    for imported, line in _imports(MODULES[module]):
        theirs = _layer(imported)
        if theirs is None:
            continue
        assert theirs <= mine, f"{module} (layer {mine}) imports {imported} (layer {theirs}) at line {line}"
        for a, b in FORBIDDEN:
            assert not (_within(module, a) and _within(imported, b)), f"{module} imports {imported} at line {line}"


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return circles


def test_the_import_graph_has_no_circle() -> None:
    assert not _circles(GRAPH), f"import circles: {_circles(GRAPH)}"


def test_the_checker_sees_a_circle_and_an_upward_import() -> None:
    """The checks above can fail: a made-up circle is found, and the layers are ordered."""
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []
    assert _layer("ui.app") == 3 and _layer("fleetmon.records") == 0 and _layer("fleetmon.agent.nvml") == 1
    assert _layer("fleetmon.health.rules") == 2
