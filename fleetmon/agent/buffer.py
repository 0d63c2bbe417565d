"""The agent's local, loss-free buffer of per-minute records and events.

A small SQLite file (the standard library's sqlite3: nodes need nothing else).
Each stream (minutes, events) has its own ``INTEGER PRIMARY KEY AUTOINCREMENT``
sequence, so numbers are strictly increasing, never reused, and survive agent
restarts. A client asks for everything after the last sequence number it holds
and gets it in order, with no gap and no duplicate; when old records were
pruned the answer says which is the first one still held.

Retention: at least ``keep_days`` (default 8) unless the file would exceed
``max_bytes`` (default 256 MiB, ≈ 40 days of 8 GPUs), whichever prunes less
data first — the disk cap is documented in docs/agent-api.md.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterable

from fleetmon.records import Event, GpuMinute

DEFAULT_KEEP_DAYS = 8
DEFAULT_MAX_BYTES = 256 * 1024 * 1024

_SCHEMA = """
CREATE TABLE IF NOT EXISTS minutes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    ts INTEGER NOT NULL,
    uuid TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    ts REAL NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
"""


class Buffer:
    """Thread-safe store of minute records and events with sequence numbers."""

    def __init__(self, path: str | os.PathLike[str] | None, *, keep_days: float = DEFAULT_KEEP_DAYS,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = str(path) if path is not None else ":memory:"
        if path is not None:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.keep_days = keep_days
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._last_prune = 0.0

    # -- writing ----------------------------------------------------------------

    def append_minutes(self, minutes: Iterable[GpuMinute]) -> list[int]:
        """Store completed minutes; returns their sequence numbers."""
        seqs = []
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for m in minutes:
                    body = m.to_dict()
                    body.pop("seq", None)
                    cur = self._db.execute(
                        "INSERT INTO minutes (ts, uuid, body) VALUES (?, ?, ?)",
                        (m.ts, m.uuid, json.dumps(body, separators=(",", ":"))),
                    )
                    seqs.append(int(cur.lastrowid or 0))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return seqs

    def append_event(self, event: Event) -> int:
        body = event.to_dict()
        body.pop("seq", None)
        with self._lock:
            cur = self._db.execute("INSERT INTO events (ts, body) VALUES (?, ?)",
                                   (event.ts, json.dumps(body, separators=(",", ":"))))
            return int(cur.lastrowid or 0)

    # -- reading ----------------------------------------------------------------

    def minutes_after(self, after: int, limit: int = 1000) -> list[dict[str, Any]]:
        """Minute records with seq > after, oldest first, at most ``limit``."""
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, body FROM minutes WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)
            ).fetchall()
        return [_with_seq(seq, body) for seq, body in rows]

    def events_after(self, after: int, limit: int = 1000) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, body FROM events WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)
            ).fetchall()
        return [_with_seq(seq, body) for seq, body in rows]

    def bounds(self, table: str) -> tuple[int, int]:
        """(first, last) sequence numbers held; (0, 0) when empty."""
        assert table in ("minutes", "events")
        with self._lock:
            row = self._db.execute(f"SELECT min(seq), max(seq) FROM {table}").fetchone()
        return (row[0] or 0, row[1] or 0)

    def size_bytes(self) -> int:
        if self.path == ":memory:":
            return 0
        total = 0
        for suffix in ("", "-wal"):
            try:
                total += os.path.getsize(self.path + suffix)
            except OSError:
                pass
        return total

    # -- retention --------------------------------------------------------------

    def prune(self, now: float | None = None) -> int:
        """Drop records older than keep_days, then oldest ones while over max_bytes."""
        now = time.time() if now is None else now
        cutoff = now - self.keep_days * 86400
        removed = 0
        with self._lock:
            removed += self._db.execute("DELETE FROM minutes WHERE ts < ?", (cutoff,)).rowcount
            removed += self._db.execute("DELETE FROM events WHERE ts < ?", (cutoff,)).rowcount
        while self.max_bytes and self.size_bytes() > self.max_bytes:
            with self._lock:
                total = self._db.execute("SELECT count(*) FROM minutes").fetchone()[0]
                chunk = max(100, total // 10)  # a tenth at a time: keep as much as the cap allows
                n = self._db.execute(
                    "DELETE FROM minutes WHERE seq IN (SELECT seq FROM minutes ORDER BY seq LIMIT ?)", (chunk,)
                ).rowcount
                self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self._db.execute("VACUUM")
            removed += n
            if n == 0:
                break
        self._last_prune = now
        return removed

    def maybe_prune(self, now: float, every_s: float = 3600) -> None:
        if now - self._last_prune >= every_s:
            self.prune(now)

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _with_seq(seq: int, body: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(body)
    record["seq"] = seq
    return record
