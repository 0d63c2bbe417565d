"""A read-only or full database gives a clear StorageError and stays intact."""

from __future__ import annotations

import os
import sqlite3

import pytest

from fleetmon.errors import StorageError
from storage.db import open_database, query
from storage.findings import save_report
from storage.ingest import ingest_polls
from storage.queries import fleet_latest
from helpers import T0, minutes_for, poll


def _integrity(path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def _seed(path):
    db = open_database(path)
    ingest_polls(db, [poll("n1", T0 + 300, minutes=minutes_for("n1", 2, T0, 4), minutes_cursor=8)])
    db.close()


def test_writing_through_a_read_only_connection_is_refused(tmp_path):
    path = tmp_path / "f.db"
    _seed(path)
    db = open_database(path, readonly=True)  # mode=ro
    with pytest.raises(StorageError, match="read-only"):
        ingest_polls(db, [poll("n1", T0 + 600, minutes=minutes_for("n1", 2, T0 + 240, 2), minutes_cursor=12)])
    with pytest.raises(StorageError, match="read-only"):
        save_report(db, "weekly", T0, {})
    assert len(fleet_latest(db)) == 2  # reads still work
    db.close()
    assert _integrity(path) == "ok"
    db = open_database(path)
    assert query(db, "SELECT count(*) AS n FROM samples")[0]["n"] == 8
    assert query(db, "SELECT minutes_cursor FROM nodes")[0]["minutes_cursor"] == 8
    db.close()


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes read-only files anyway")
def test_read_only_file_is_refused_at_open(tmp_path):
    path = tmp_path / "f.db"
    _seed(path)
    for p in tmp_path.iterdir():
        p.chmod(0o444)
    try:
        with pytest.raises(StorageError, match="read-only"):
            open_database(path)
    finally:
        for p in tmp_path.iterdir():
            p.chmod(0o644)


def test_missing_folder_cannot_be_created(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StorageError, match="cannot create its folder"):
        open_database(blocker / "sub" / "f.db")


def test_full_database_rolls_back_the_whole_batch(tmp_path):
    path = tmp_path / "f.db"
    _seed(path)
    db = open_database(path)
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages + 1}")  # SQLITE_FULL, as on a full disk
    big = minutes_for("n1", 2, T0 + 240, 500)
    with pytest.raises(StorageError, match="disk is full.*nothing of this write was stored"):
        ingest_polls(db, [poll("n1", T0 + 40000, minutes=big, minutes_cursor=1008)])
    # Still usable for reads, nothing half-written.
    assert query(db, "SELECT count(*) AS n FROM samples")[0]["n"] == 8
    assert query(db, "SELECT minutes_cursor FROM nodes")[0]["minutes_cursor"] == 8
    assert query(db, "SELECT count(*) AS n FROM poll_log")[0]["n"] == 1
    db.close()
    assert _integrity(path) == "ok"
    db = open_database(path)  # and once there is room again, the retry goes through
    ingest_polls(db, [poll("n1", T0 + 40000, minutes=big, minutes_cursor=1008)])
    assert query(db, "SELECT count(*) AS n FROM samples")[0]["n"] == 1008
    db.close()
