"""Schema and migrations: fresh database, upgrade from an older step, newer one refused."""

from __future__ import annotations

import sqlite3

import pytest
from sqlite_utils import Database

from fleetmon.errors import SchemaVersionError, StorageError
from storage.db import open_database, query, schema_version
from storage.queries import fleet_latest
from storage.schema import ROLLUP_COLUMNS, SAMPLE_COLUMNS, known_migration_names, migrations
from helpers import T0, minutes_for, uuid_of


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
    # Written as the first release wrote it (today's ingest expects today's schema).
    from storage.ingest import _SAMPLE_SQL
    from storage.schema import encode_minute

    conn.execute("INSERT INTO nodes (name, status, minutes_cursor) VALUES ('n1', 'ok', 6)")
    conn.execute("INSERT INTO gpus (id, uuid, node, idx, state, latest, latest_ts, last_seen) VALUES "
                 "(1, ?, 'n1', 0, 'ok', '{\"values\":{\"temp_c\":41},\"status\":{}}', ?, ?)",
                 (uuid_of("n1", 0), T0, T0))
    for gid, uuid in ((2, uuid_of("n1", 1)),):
        conn.execute("INSERT INTO gpus (id, uuid, node, idx, state) VALUES (?, ?, 'n1', ?, 'ok')", (gid, uuid, gid - 1))
    mins = minutes_for("n1", 2, T0, 3)
    conn.executemany(_SAMPLE_SQL, [encode_minute(1 if m.index == 0 else 2, m.ts, m.n, m.state, m.values, m.status)
                                   for m in mins])
    assert "hourly" not in old.table_names()
    conn.close()

    db = open_database(path)
    assert schema_version(db) == len(known_migration_names())
    assert {"hourly", "daily", "findings", "reports"} <= set(db.table_names())
    assert db.execute("SELECT count(*) FROM samples").fetchone()[0] == 6
    assert query(db, "SELECT minutes_cursor FROM nodes")[0]["minutes_cursor"] == 6
    latest = {r.uuid: r for r in fleet_latest(db)}  # m006 moved the latest sample to its own table
    assert latest[uuid_of("n1", 0)].values == {"temp_c": 41} and latest[uuid_of("n1", 0)].latest_ts == T0
    assert latest[uuid_of("n1", 1)].values == {}
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
