"""The agent's local, loss-free buffer of per-minute records and events.

A small SQLite file (the standard library's sqlite3: nodes need nothing else).
Each stream (minutes, events) has its own ``INTEGER PRIMARY KEY AUTOINCREMENT``
sequence, so numbers are strictly increasing, never reused, and survive agent
restarts. A client asks for everything after the last sequence number it holds
and gets it in order, with no gap and no duplicate; when old records were
pruned the answer says which is the first one still held.

Identity: a random ``buffer_id`` is written to the ``meta`` table when the file
is created. A client that sees another id than before knows the buffer was
wiped or replaced (sequence numbers restarted) and resets its cursors.

One agent, one node: the agent opens its buffer ``exclusive``, an ``flock`` on
``FILE.lock`` beside it that holds the owner's PID, so a second agent started
on the same file (a test instance, a manual start beside the systemd unit) is
refused instead of serving the first one's GPUs and minutes as its own. The
buffer also records the node it belongs to (host name and GPU UUIDs, see
:meth:`Buffer.claim_node`); a file another node wrote is moved aside, never
served as this node's history.

Retention: records are kept ``keep_days`` (default 8) and the file is held
under ``max_bytes`` (default 256 MiB) by dropping the oldest minutes first.
One minute record of one GPU takes about 2.2 KiB on disk (measured: JSON with
~70 keys), so 8 GPUs need about 25 MiB a day and the default cap holds about
10 days: more than the 7 days the agent promises for up to 10 GPUs. Bigger
nodes raise ``--max-buffer-mb``; /v1/health reports how many days the cap
holds at the current rate (documented in docs/agent-api.md).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import secrets
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterable

from fleetmon.errors import KnownError
from fleetmon.i18n import N_, Text
from fleetmon.records import Event, GpuMinute

log = logging.getLogger("fleetmon.buffer")

DEFAULT_KEEP_DAYS = 8
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
TYPICAL_RECORD_BYTES = 2300
"""Disk bytes of one GPU's minute record (measured with 8 simulated A100s)."""
MIN_KEEP_DAYS = 7
"""What the agent promises to keep; the default cap holds well over this for 8 GPUs."""

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
CREATE INDEX IF NOT EXISTS minutes_ts ON minutes (ts);
CREATE INDEX IF NOT EXISTS events_ts ON events (ts);
"""
_TABLES = ("minutes", "events")


class BufferLocked(KnownError):
    """Another process holds the buffer (``fleetmon agent`` exits with status 2)."""


def _lock_file(path: str) -> int:
    """Take the exclusive lock beside ``path`` and write our PID into it; returns the open descriptor.

    ``flock`` is released by the kernel when the holder exits, however it
    exits, so a stale lock file never blocks a restart.

    Raises:
        BufferLocked: another process holds the lock (the message names its PID).
    """
    lock_path = path + ".lock"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        try:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
        except OSError:
            holder = "unknown"
        os.close(fd)
        raise BufferLocked(Text(N_("the buffer {path} is in use by another agent (PID {pid}); stop that one, "
                                   "or give this one its own --buffer"), path=path, pid=holder)) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def _real_uuids(uuids: Iterable[str]) -> list[str]:
    """The GPU UUIDs that name a card (not a placeholder such as ``lost-gpu-2-…``), sorted."""
    return sorted({u for u in uuids if isinstance(u, str) and u.startswith("GPU-")})


class Buffer:
    """Thread-safe store of minute records and events with sequence numbers.

    Args:
        path: the SQLite file (created with its folder), or None for memory.
        keep_days: drop records older than this.
        max_bytes: disk cap; the oldest minutes go first when it is exceeded.
        exclusive: hold an exclusive lock on the file until :meth:`close` (the
            agent does; tools that add records beside a running agent do not).

    Raises:
        BufferLocked: ``exclusive`` and another process holds the buffer.
    """

    def __init__(self, path: str | os.PathLike[str] | None, *, keep_days: float = DEFAULT_KEEP_DAYS,
                 max_bytes: int = DEFAULT_MAX_BYTES, exclusive: bool = False) -> None:
        self.path = str(path) if path is not None else ":memory:"
        if path is not None:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.keep_days = keep_days
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._lock_fd: int | None = _lock_file(self.path) if exclusive and path is not None else None
        try:
            self._open()
        except BaseException:
            self._unlock()
            raise

    def _open(self) -> None:
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        # Must precede the first table: lets prune() hand freed pages back to the file system.
        self._db.execute("PRAGMA auto_vacuum=INCREMENTAL")
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._last_prune = 0.0
        row = self._db.execute("SELECT value FROM meta WHERE key = 'buffer_id'").fetchone()
        if row is None:
            self._db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('buffer_id', ?)",
                             (secrets.token_hex(16),))
            row = self._db.execute("SELECT value FROM meta WHERE key = 'buffer_id'").fetchone()
        self.buffer_id: str = row[0]

    # -- writing ----------------------------------------------------------------

    def append_minutes(self, minutes: Iterable[GpuMinute]) -> list[int]:
        """Store completed minutes in one transaction; returns their sequence numbers."""
        seqs = []
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for m in minutes:
                    body = m.to_dict()
                    body.pop("seq", None)
                    cur = self._db.execute(
                        "INSERT INTO minutes (ts, uuid, body) VALUES (?, ?, ?)",
                        (m.ts, m.uuid, json.dumps(body, separators=(",", ":"), allow_nan=False)),
                    )
                    seqs.append(int(cur.lastrowid or 0))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return seqs

    def append_event(self, event: Event) -> int:
        """Store one event; returns its sequence number."""
        body = event.to_dict()
        body.pop("seq", None)
        text = json.dumps(body, separators=(",", ":"), default=str)
        with self._lock:
            cur = self._db.execute("INSERT INTO events (ts, body) VALUES (?, ?)", (event.ts, text))
            return int(cur.lastrowid or 0)

    # -- reading ----------------------------------------------------------------

    def minutes_after(self, after: int, limit: int = 1000) -> list[dict[str, Any]]:
        """Minute records with seq > after, oldest first, at most ``limit``."""
        return [_with_seq(seq, body) for seq, body in self.raw_after("minutes", after, limit)]

    def events_after(self, after: int, limit: int = 1000) -> list[dict[str, Any]]:
        """Events with seq > after, oldest first, at most ``limit``."""
        return [_with_seq(seq, body) for seq, body in self.raw_after("events", after, limit)]

    def raw_after(self, table: str, after: int, limit: int = 1000) -> list[tuple[int, str]]:
        """(seq, JSON body without seq) pairs after ``after``: the server splices them unparsed."""
        assert table in _TABLES
        with self._lock:
            return self._db.execute(
                f"SELECT seq, body FROM {table} WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)
            ).fetchall()

    def bounds(self, table: str) -> tuple[int, int]:
        """(first held, last assigned) sequence numbers; (0, 0) before the first record.

        ``last`` survives pruning (it comes from SQLite's sequence table), so a
        buffer whose records were all pruned answers (last + 1, last).
        """
        assert table in _TABLES
        with self._lock:
            first = self._db.execute(f"SELECT min(seq) FROM {table}").fetchone()[0]
            row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,)).fetchone()
        last = int(row[0]) if row else 0
        if first is None:
            return (last + 1, last) if last else (0, 0)
        return int(first), last

    def days_capacity(self, gpus: int) -> float | None:
        """Days of minute records for ``gpus`` GPUs the disk cap holds at the measured record size."""
        if not gpus or not self.max_bytes:
            return None
        n = self.count("minutes")
        # Few records: the file's fixed part would dominate; use the typical size.
        per_record = self.size_bytes() / n if n >= 1000 else TYPICAL_RECORD_BYTES
        return round(self.max_bytes / (per_record * gpus * 1440), 1)

    def count(self, table: str) -> int:
        assert table in _TABLES
        with self._lock:
            return int(self._db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])

    def size_bytes(self) -> int:
        """Bytes the records occupy (pages in use), the quantity the disk cap limits."""
        with self._lock:
            pages = self._db.execute("PRAGMA page_count").fetchone()[0]
            free = self._db.execute("PRAGMA freelist_count").fetchone()[0]
            size = self._db.execute("PRAGMA page_size").fetchone()[0]
        return int((pages - free) * size)

    def file_bytes(self) -> int:
        """Bytes on disk (database file plus write-ahead log)."""
        if self.path == ":memory:":
            return 0
        total = 0
        for suffix in ("", "-wal"):
            try:
                total += os.path.getsize(self.path + suffix)
            except OSError:
                pass
        return total

    # -- meta -------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def save_inventory(self, rows: list[dict[str, Any]]) -> None:
        """Remember the last inventory (names lost GPUs after a restart)."""
        self.set_meta("inventory", json.dumps(rows, separators=(",", ":"), default=str))

    def load_inventory(self) -> list[dict[str, Any]]:
        """The inventory saved by the previous run, or [] if none or unreadable."""
        text = self.get_meta("inventory")
        if not text:
            return []
        try:
            rows = json.loads(text)
        except ValueError:
            return []
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    # -- retention --------------------------------------------------------------

    def prune(self, now: float | None = None) -> int:
        """Drop records older than keep_days, then the oldest minutes while over max_bytes."""
        now = time.time() if now is None else now
        cutoff = now - self.keep_days * 86400
        removed = 0
        with self._lock:
            removed += self._db.execute("DELETE FROM minutes WHERE ts < ?", (cutoff,)).rowcount
            removed += self._db.execute("DELETE FROM events WHERE ts < ?", (cutoff,)).rowcount
        while self.max_bytes and self.size_bytes() > self.max_bytes:
            with self._lock:
                total = self._db.execute("SELECT count(*) FROM minutes").fetchone()[0]
                chunk = max(100, total // 20)  # a twentieth at a time: keep as much as the cap allows
                n = self._db.execute(
                    "DELETE FROM minutes WHERE seq IN (SELECT seq FROM minutes ORDER BY seq LIMIT ?)", (chunk,)
                ).rowcount
            removed += n
            if n == 0:
                break
        if removed:
            with self._lock:
                self._db.execute("PRAGMA incremental_vacuum")
                if self.path != ":memory:":
                    self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self._last_prune = now
        return removed

    def maybe_prune(self, now: float, every_s: float = 3600) -> None:
        """Prune at most once per ``every_s`` (called by the sampler every round)."""
        if now - self._last_prune >= every_s:
            self.prune(now)

    # -- the node it belongs to -------------------------------------------------

    def claim_node(self, hostname: str, uuids: Iterable[str] | None = None) -> str | None:
        """Make sure this buffer is this node's; returns a line to log when it was not.

        The buffer remembers the host name and the sorted UUIDs of the GPUs it
        was written for. When ``hostname`` differs, or ``uuids`` is given and
        none of the GPUs is one the buffer knew (another machine, another
        simulation), the file is renamed ``FILE.<old host>.<time>`` and a new,
        empty buffer with a new ``buffer_id`` takes its place, so clients
        restart their cursors and nothing of the other node is served. A swap
        of some cards keeps the buffer: that is this node's history. A buffer
        written before identities were recorded is adopted. Call it with the
        host name before the previous run's inventory is used, and again with
        the GPUs once they are known.
        """
        new_gpus = None if uuids is None else _real_uuids(uuids)
        old_host = self.get_meta("node_hostname")
        old_text = self.get_meta("node_gpus")
        try:
            old_gpus = _real_uuids(json.loads(old_text)) if old_text else []
        except (TypeError, ValueError):
            old_gpus = []
        reason = None
        if old_host is not None and old_host != hostname:
            reason = f"host {old_host!r}, not {hostname!r}"
        elif new_gpus and old_gpus and not set(new_gpus) & set(old_gpus):
            reason = f"GPUs {', '.join(old_gpus[:3])}{' …' if len(old_gpus) > 3 else ''}, none of them here"
        message = None
        if reason is not None:
            aside = self._set_aside(old_host or "unknown")
            message = (f"the buffer {self.path} was written by another node ({reason}): "
                       f"{'moved it to ' + aside if aside else 'discarded it'}; new buffer_id {self.buffer_id}")
            log.warning("%s", message)
        self.set_meta("node_hostname", hostname)
        if new_gpus:
            self.set_meta("node_gpus", json.dumps(new_gpus, separators=(",", ":")))
        return message

    def _set_aside(self, old_host: str) -> str | None:
        """Close the file, rename it (with its WAL) to ``FILE.<host>.<time>`` and open a new one there."""
        with self._lock:
            self._db.close()
            aside = None
            if self.path != ":memory:":
                tag = re.sub(r"[^A-Za-z0-9._-]", "_", old_host)[:64]
                aside = f"{self.path}.{tag}.{time.strftime('%Y%m%dT%H%M%S')}"
                n = 1
                while os.path.exists(aside):
                    n += 1
                    aside = f"{self.path}.{tag}.{time.strftime('%Y%m%dT%H%M%S')}.{n}"
                for suffix in ("-wal", "-shm"):
                    if os.path.exists(self.path + suffix):
                        os.replace(self.path + suffix, aside + suffix)
                os.replace(self.path, aside)
            self._open()
        return aside

    def _unlock(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    def close(self) -> None:
        with self._lock:
            self._db.close()
            self._unlock()


def _with_seq(seq: int, body: str) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(body)
    record["seq"] = seq
    return record


def splice_chunks(rows: list[tuple[int, str]]) -> list[bytes]:
    """A JSON array of records, in pieces, from (seq, body) pairs without parsing the bodies.

    Bodies are JSON objects stored without ``seq``; ``seq`` is put first. The
    server writes the pieces one by one, so a page is never copied whole.
    """
    chunks = [b"["]
    for n, (seq, body) in enumerate(rows):
        inner = body[1:-1].strip() if body.startswith("{") else ""
        record = f'{{"seq":{int(seq)},{inner}}}' if inner else f'{{"seq":{int(seq)}}}'
        chunks.append((record if n == 0 else "," + record).encode())
    chunks.append(b"]")
    return chunks


def splice_records(rows: list[tuple[int, str]]) -> str:
    """:func:`splice_chunks` as one string."""
    return b"".join(splice_chunks(rows)).decode()
