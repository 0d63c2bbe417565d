"""Writing polls into the database: one transaction per batch, idempotent.

The cursors (last sequence numbers received from each agent) are written in
the same transaction as the records they cover, so after a crash at any
moment the database holds exactly the records up to its cursors and the next
poll asks the agent for the rest. A record received twice is stored once
(``INSERT OR IGNORE`` on the natural keys).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Iterable

from sqlite_utils import Database

from fleetmon.records import GpuInventory, NodePoll
from storage.db import map_sqlite_error
from storage.schema import sample_columns

_SAMPLE_COLS = [name for name, _ in sample_columns()]
_SAMPLE_SQL = (
    f"INSERT OR IGNORE INTO samples (gpu_id, ts, {', '.join(_SAMPLE_COLS)}) "
    f"VALUES ({', '.join('?' for _ in range(len(_SAMPLE_COLS) + 2))})"
)


def _gpu_id(conn: sqlite3.Connection, cache: dict[str, int], uuid: str, node: str, ts: float) -> int:
    gid = cache.get(uuid)
    if gid is not None:
        return gid
    row = conn.execute("SELECT id FROM gpus WHERE uuid = ?", (uuid,)).fetchone()
    if row is None:
        cur = conn.execute("INSERT INTO gpus (uuid, node, first_seen, last_seen, state) VALUES (?, ?, ?, ?, 'ok')",
                           (uuid, node, ts, ts))
        gid = int(cur.lastrowid or 0)
    else:
        gid = int(row[0])
    cache[uuid] = gid
    return gid


def _upsert_gpu(conn: sqlite3.Connection, cache: dict[str, int], node: str, g: GpuInventory, ts: float) -> None:
    gid = _gpu_id(conn, cache, g.uuid, node, ts)
    v = g.values
    conn.execute(
        """UPDATE gpus SET node = ?, idx = ?, pci_bus_id = ?, name = ?, serial = ?, vbios = ?,
               memory_total_mib = ?, power_default_w = ?, power_enforced_w = ?, state = ?, last_seen = ?,
               inventory = ? WHERE id = ?""",
        (node, g.index, v.get("pci_bus_id"), g.name, v.get("serial"), v.get("vbios"), v.get("memory_total_mib"),
         v.get("power_default_w"), v.get("power_enforced_w"), g.state, ts,
         json.dumps({"values": v, "status": g.status}, separators=(",", ":")), gid),
    )


def ingest_polls(db: Database, polls: Iterable[NodePoll]) -> int:
    """Store a batch of polls in one transaction; returns the number of minute rows offered."""
    conn = db.conn
    cache: dict[str, int] = {}
    offered = 0
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for poll in polls:
                offered += _ingest_one(conn, cache, poll)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        raise map_sqlite_error(exc, _db_path(conn)) from exc
    return offered


def _db_path(conn: sqlite3.Connection) -> str:
    try:
        row = conn.execute("PRAGMA database_list").fetchone()
        return str(row[2]) if row else "?"
    except sqlite3.Error:
        return "?"


def _ingest_one(conn: sqlite3.Connection, cache: dict[str, int], poll: NodePoll) -> int:
    node = poll.node
    conn.execute("INSERT OR IGNORE INTO nodes (name) VALUES (?)", (node,))
    conn.execute("UPDATE nodes SET url = ?, grp = ?, last_attempt = ? WHERE name = ?",
                 (poll.url, poll.group, poll.ts, node))
    conn.execute(
        "INSERT INTO poll_log (ts, node, ok, error, duration_ms, minutes, events) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (poll.ts, node, int(poll.ok), poll.error, round(poll.duration_ms, 3), len(poll.minutes), len(poll.events)),
    )
    if not poll.ok:
        conn.execute("UPDATE nodes SET status = 'unreachable', last_error = ? WHERE name = ?", (poll.error, node))
        return 0
    info = poll.info
    if info is not None:
        v = info.values
        conn.execute(
            """UPDATE nodes SET hostname = ?, driver_version = ?, cuda_driver_version = ?, nvml_version = ?,
                   kernel = ?, os_release = ?, agent_version = ?, xid_source = ?, gpu_count = ?,
                   agent_started_at = ? WHERE name = ?""",
            (info.hostname, v.get("driver_version"), v.get("cuda_driver_version"), v.get("nvml_version"),
             v.get("kernel"), v.get("os_release"), info.agent_version, info.xid_source, v.get("gpu_count"),
             info.started_at, node),
        )
    conn.execute("UPDATE nodes SET status = 'ok', last_ok = ?, last_error = NULL, skew_s = ? WHERE name = ?",
                 (poll.ts, poll.skew_s, node))
    for g in poll.gpus:
        _upsert_gpu(conn, cache, node, g, poll.ts)
    for s in poll.latest:
        gid = _gpu_id(conn, cache, s.uuid, node, poll.ts)
        conn.execute("UPDATE gpus SET latest = ?, latest_ts = ?, state = ? WHERE id = ?",
                     (json.dumps({"values": s.values, "status": s.status}, separators=(",", ":")), s.ts,
                      s.state, gid))
    rows: list[tuple[Any, ...]] = []
    for m in poll.minutes:
        gid = _gpu_id(conn, cache, m.uuid, node, poll.ts)
        v = m.values
        row: list[Any] = [gid, int(m.ts), m.n, int(m.state == "lost")]
        for col in _SAMPLE_COLS[2:-1]:
            row.append(v.get(col))
        row.append(json.dumps(m.status, separators=(",", ":")) if m.status else None)
        rows.append(tuple(row))
    if rows:
        conn.executemany(_SAMPLE_SQL, rows)
    for e in poll.events:
        conn.execute(
            """INSERT OR IGNORE INTO events (node, seq, ts, kind, gpu_uuid, pci_bus_id, code, message, data)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (node, e.seq, e.ts, e.kind, e.uuid, e.pci_bus_id, e.code, e.message,
             json.dumps(e.data, separators=(",", ":")) if e.data else None),
        )
    if poll.minutes_cursor is not None:
        conn.execute("UPDATE nodes SET minutes_cursor = max(minutes_cursor, ?) WHERE name = ?",
                     (poll.minutes_cursor, node))
    if poll.events_cursor is not None:
        conn.execute("UPDATE nodes SET events_cursor = max(events_cursor, ?) WHERE name = ?",
                     (poll.events_cursor, node))
    return len(rows)
