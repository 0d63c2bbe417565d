"""Reports, preflight and exports never turn a stray file into a fleetmon database (issue 11, item 7).

They open the database with ``mode=ro`` (the report, which saves itself, first checks through a
read-only connection and then opens the file with ``mode=rw``, never creating it); an empty file,
another program's SQLite file, a missing file and a newer fleetmon's database each give one line
and exit 1, and the file is left exactly as it was.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fleetmon.assess import REPORT_KIND
from fleetmon.cli import main
from fleetmon.errors import StorageError
from helpers import T0, minutes_for, poll
from storage.db import open_database
from storage.findings import last_report
from storage.ingest import ingest_polls

COMMANDS = {
    "report": ["report", "--db", "{db}", "--now", str(T0 + 600)],
    "report-json": ["report", "--db", "{db}", "--json", "--now", str(T0 + 600)],
    "preflight": ["preflight", "--db", "{db}", "--nodes", "n[1-2]", "--now", str(T0 + 600)],
    "export": ["export", "--db", "{db}"],
}


def _run(name: str, db: Path) -> int:
    return main([a.format(db=db) for a in COMMANDS[name]])


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _one_line_error(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert captured.out == "" and "\n" not in err and "Traceback" not in err, captured
    for w in words:
        assert w in err, err
    return err


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_an_empty_file_is_refused_and_left_empty(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "empty.db"
    db.touch()
    assert _run(name, db) == 1
    _one_line_error(capsys, "not a fleetmon database")
    assert _files(tmp_path) == {"empty.db": b""}  # no schema written, no -wal / -shm left


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_another_programs_sqlite_file_is_refused_untouched(tmp_path: Path, name: str,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "other.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.execute("INSERT INTO notes VALUES ('mine')")
    conn.commit()
    conn.close()
    before = _files(tmp_path)
    assert _run(name, db) == 1
    _one_line_error(capsys, "not a fleetmon database")
    assert _files(tmp_path) == before


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_missing_file_is_an_error_and_nothing_is_created(tmp_path: Path, name: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(name, tmp_path / "nope.db") == 1
    _one_line_error(capsys, "nope.db")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_newer_fleetmons_database_is_refused(tmp_path: Path, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    from storage.schema import migrations

    db_path = tmp_path / "new.db"
    db = open_database(db_path)
    db[migrations.migrations_table].insert(
        {"migration_set": "fleetmon", "name": "m999_from_the_future", "applied_at": "2099-01-01"})
    db.close()
    assert _run(name, db_path) == 1
    _one_line_error(capsys, "newer fleetmon", "upgrade fleetmon")


def _seeded(path: Path) -> Path:
    db = open_database(path)
    ingest_polls(db, [poll(n, T0 + 300, minutes=minutes_for(n, 2, T0, 4), minutes_cursor=8) for n in ("n1", "n2")])
    db.close()
    return path


def test_a_real_database_still_gets_its_report_saved(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db_path = _seeded(tmp_path / "fleet.db")
    assert _run("report", db_path) == 0
    assert "Status: PASS" in capsys.readouterr().out
    db = open_database(db_path, readonly=True)
    try:
        assert last_report(db, REPORT_KIND) is not None
    finally:
        db.close()


def test_preflight_and_export_do_not_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db_path = _seeded(tmp_path / "fleet.db")
    conn = sqlite3.connect(db_path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = db_path.read_bytes()
    assert _run("preflight", db_path) == 0
    assert _run("export", db_path) == 0
    assert db_path.read_bytes() == before


def test_open_database_readonly_and_existing_refuse_what_is_not_ours(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    for kwargs in ({"readonly": True}, {"existing": True}, {"readonly": True, "existing": True}):
        with pytest.raises(StorageError, match="not a fleetmon database"):
            open_database(empty, **kwargs)
        with pytest.raises(StorageError, match="no such file"):
            open_database(tmp_path / "missing.db", **kwargs)
    assert _files(tmp_path) == {"empty.db": b""}
    db = open_database(empty)  # the collector's open still creates a schema where asked to
    db.close()
    open_database(empty, readonly=True).close()
