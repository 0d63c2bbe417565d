"""Schema and migrations: fresh database, upgrade from an older step, newer one refused."""

from __future__ import annotations

import sqlite3

import pytest
from sqlite_utils import Database

from fleetmon.errors import SchemaVersionError, StorageError
from storage.db import open_database, query, schema_version
from storage.ingest import ingest_polls
from storage.schema import ROLLUP_COLUMNS, SAMPLE_COLUMNS, known_migration_names, migrations
from test_storage_support import T0, minutes_for, poll


def _columns(db: Database, table: str) -> list[str]:
    return [r[1] for r in db.execute(f"PRAGMA table_info({table})")]


def test_fresh_database_has_every_table_in_wal_mode(tmp_path):
    db = open_database(tmp_path / "f.db")
    assert schema_version(db) == len(known_migration_names())
    tables = set(db.table_names())
    assert {"nodes", "gpus", "samples", "events", "poll_log", "inventory_changes", "meta", "hourly", "daily",
            "findings", "derating_daily", "reports"} <= tables
    assert _columns(db, "samples") == SAMPLE_COLUMNS
    assert _columns(db, "hourly") == ROLLUP_COLUMNS == _columns(db, "daily")
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    sql = db.execute("SELECT sql FROM sqlite_master WHERE name = 'samples'").fetchone()[0]
    assert "WITHOUT ROWID" in sql and "REAL" not in sql
    db.close()


def test_older_database_upgrades_and_keeps_its_data(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    old = Database(conn)
    migrations.apply(old, stop_before="m002_rollups")  # a database from the first release
    ingest_polls(old, [poll("n1", T0 + 300, minutes=minutes_for("n1", 2, T0, 3), minutes_cursor=6)])
    assert "hourly" not in old.table_names()
    conn.close()

    db = open_database(path)
    assert schema_version(db) == len(known_migration_names())
    assert {"hourly", "daily", "findings", "reports"} <= set(db.table_names())
    assert db.execute("SELECT count(*) FROM samples").fetchone()[0] == 6
    assert query(db, "SELECT minutes_cursor FROM nodes")[0]["minutes_cursor"] == 6
    db.close()


def test_older_database_opened_read_only_asks_for_an_upgrade(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    migrations.apply(Database(conn), stop_before="m002_rollups")
    conn.close()
    with pytest.raises(StorageError, match="needs an upgrade"):
        open_database(path, readonly=True)


def test_newer_database_is_refused_with_a_clear_message(tmp_path):
    path = tmp_path / "new.db"
    db = open_database(path)
    db[migrations.migrations_table].insert(
        {"migration_set": "fleetmon", "name": "m999_from_the_future", "applied_at": "2099-01-01"})
    db.close()
    for readonly in (False, True):
        with pytest.raises(SchemaVersionError, match="newer fleetmon.*m999_from_the_future.*upgrade fleetmon"):
            open_database(path, readonly=readonly)


def test_not_a_database_gives_storage_error(tmp_path):
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageError, match="corrupt or not a fleetmon database"):
        open_database(path)
