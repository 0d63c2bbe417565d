"""SQL lives only in storage/: nothing under fleetmon/ or ui/ writes a statement or reaches into the tables.

Callers get typed rows (storage.rows) from storage's query and write functions;
the schema (storage.schema), the SQL-building column reads (storage.columns)
and the raw query helpers of storage.db are storage's own business.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CALLERS = ("fleetmon", "ui")

SQL = re.compile(r"\bSELECT\s+[\w*(),.\s]+?\s+FROM\s+\w+|\bINSERT\s+(OR\s+\w+\s+)?INTO\b|\bUPDATE\s+\w+\s+SET\b"
                 r"|\bCREATE\s+(TABLE|INDEX)\b|\bDELETE\s+FROM\b|\bALTER\s+TABLE\b|\bPRAGMA\s+\w+", re.IGNORECASE)
"""A statement, not an English sentence that happens to say "select" or "update"."""

OWN_DATABASES = {"fleetmon/agent/buffer.py"}
"""The agent's on-node record buffer: a database of its own (stdlib sqlite3), not the fleet store.
The agent runs on GPU nodes with the standard library only, so it cannot use storage/ (sqlite-utils)."""

FORBIDDEN_MODULES = ("storage.schema", "storage.columns")
STORAGE_DB_PUBLIC = {"open_database"}
"""What callers may take from storage.db: opening a database (query helpers and transactions stay inside)."""


def _sources() -> list[Path]:
    return sorted(p for top in CALLERS for p in (ROOT / top).rglob("*.py")
                  if p.relative_to(ROOT).as_posix() not in OWN_DATABASES)


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):  # an f-string: its literal parts, joined
            text = "".join(v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else " x "
                           for v in node.values)
            out.append((node.lineno, text))
    return out


def _sql_in(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return [f"{path.relative_to(ROOT)}:{line}: {text.strip()[:80]!r}" for line, text in _strings(tree)
            if SQL.search(text)]


def _storage_imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [(node.module, a.name) for a in node.names]
        else:
            continue
        for module, name in names:
            full = f"{module}.{name}" if name else module
            where = f"{path.relative_to(ROOT)}:{node.lineno}"
            if any(full == m or full.startswith(m + ".") or module == m for m in FORBIDDEN_MODULES):
                bad.append(f"{where}: imports {full}")
            elif module == "storage" and name in ("schema", "columns", "db"):
                bad.append(f"{where}: imports storage.{name}")
            elif module == "storage.db" and (name is None or name not in STORAGE_DB_PUBLIC):
                bad.append(f"{where}: imports {full}")
    return bad


def test_no_sql_outside_storage() -> None:
    found = [hit for path in _sources() for hit in _sql_in(path)]
    assert found == [], "SQL belongs in storage/:\n" + "\n".join(found)


def test_no_caller_reaches_into_the_schema() -> None:
    found = [hit for path in _sources() for hit in _storage_imports(path)]
    assert found == [], "import storage's query functions and storage.rows instead:\n" + "\n".join(found)


@pytest.mark.parametrize("text", [
    "SELECT a FROM t", "select count(*) from samples", "SELECT g.uuid AS gpu_uuid, g.node FROM  x  JOIN",
    "INSERT OR REPLACE INTO t (a) VALUES (?)",
    "UPDATE gpus SET state = 'gone'", "CREATE TABLE x (a)", "DELETE FROM poll_log", "PRAGMA journal_mode=WAL",
])
def test_the_pattern_sees_statements(text: str) -> None:
    assert SQL.search(text)


@pytest.mark.parametrize("text", [
    "Select a GPU to see its history.", "update the table", "the newest sample from the collector",
    "(``SELECT`` + ``zip(*rows)``, the fast path).\n\nRows are made from minutes",
])
def test_the_pattern_leaves_prose_alone(text: str) -> None:
    assert not SQL.search(text)


def test_the_checks_catch_a_leak(tmp_path: Path) -> None:
    leak = tmp_path / "leak.py"
    leak.write_text('from storage.schema import gauge_scale\nfrom storage.db import query, open_database\n'
                    'Q = f"SELECT {1} FROM gpus"\n', encoding="utf-8")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert len(_sql_in(leak)) == 1
        assert [h.split(": ", 1)[1] for h in _storage_imports(leak)] == ["imports storage.schema.gauge_scale",
                                                                         "imports storage.db.query"]
    finally:
        ROOT = saved
