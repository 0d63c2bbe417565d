"""The notifications' outbox (m015): what to send where, what was delivered, what was given up.

One row per destination and event key (:mod:`fleetmon.notify`: a finding key with
its lifecycle transition, a node's stale spell, a day's digest). The key is
unique per destination, so an event stored once is never queued again, and a
restarted collector never resends what was delivered: the rows say so.

``state``: ``pending`` (to send, not before ``next_try``), ``sent`` (delivered,
``done_at``), ``dead`` (given up after the retries: the dead-letter log, with the
last error). Pure data in and out; the sending is :mod:`fleetmon.notify`'s.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from storage.db import db_path, query, transaction

__all__ = ["OutboxItem", "OutboxRow", "database_file", "dead_letters", "due", "enqueue", "gpu_indexes", "next_due",
           "outbox", "outbox_has", "record_attempt", "retry_now"]


@dataclass(frozen=True)
class OutboxItem:
    """An event to queue for one destination (``payload``: JSON-able)."""

    dest: str
    event_key: str
    severity: str
    payload: Mapping[str, Any]


@dataclass(frozen=True)
class OutboxRow:
    """A stored outbox row."""

    id: int
    dest: str
    event_key: str
    created: float
    severity: str
    payload: Mapping[str, Any]
    state: str
    attempts: int
    next_try: float
    last_error: str | None
    done_at: float | None


def _row(r: Mapping[str, Any]) -> OutboxRow:
    return OutboxRow(id=int(r["id"]), dest=r["dest"], event_key=r["event_key"], created=float(r["created"]),
                     severity=r["severity"], payload=json.loads(r["payload"]), state=r["state"],
                     attempts=int(r["attempts"]), next_try=float(r["next_try"]), last_error=r["last_error"],
                     done_at=r["done_at"])


def enqueue(db: Database, items: Sequence[OutboxItem], now: float, due_at: float | None = None) -> list[str]:
    """Queue ``items`` (pending, created at ``now``, due at ``due_at``, default ``now``); an event already stored
    for its destination, in any state, is left as it is. Returns the destinations that got a new row (in one
    transaction)."""
    woke: list[str] = []
    if not items:
        return woke
    with transaction(db) as conn:
        for item in items:
            cur = conn.execute(
                """INSERT OR IGNORE INTO notify_outbox (dest, event_key, created, severity, payload, next_try)
                   VALUES (?, ?, ?, ?, ?, ?)""",
                (item.dest, item.event_key, now, item.severity,
                 json.dumps(item.payload, separators=(",", ":"), sort_keys=True, default=str),
                 now if due_at is None else due_at))
            if cur.rowcount and item.dest not in woke:
                woke.append(item.dest)
    return woke


def due(db: Database, dest: str, now: float, limit: int = 500) -> list[OutboxRow]:
    """The pending rows of ``dest`` due at ``now``, oldest first."""
    return [_row(r) for r in query(db, """SELECT * FROM notify_outbox WHERE dest = ? AND state = 'pending'
                                          AND next_try <= ? ORDER BY id LIMIT ?""", (dest, now, limit))]


def next_due(db: Database, dest: str) -> float | None:
    """When the next pending row of ``dest`` is due (None: nothing pending)."""
    rows = query(db, "SELECT min(next_try) AS t FROM notify_outbox WHERE dest = ? AND state = 'pending'", (dest,))
    return None if not rows or rows[0]["t"] is None else float(rows[0]["t"])


def record_attempt(db: Database, ids: Iterable[int], now: float, *, error: str | None = None,
                   retry_at: float | None = None) -> None:
    """One delivery attempt of the rows ``ids``: sent (``error`` None), to retry at ``retry_at``, or
    dead (an error and no ``retry_at``)."""
    id_list = list(ids)
    with transaction(db) as conn:
        if error is None:
            conn.executemany("""UPDATE notify_outbox SET state = 'sent', attempts = attempts + 1, done_at = ?,
                                last_error = NULL WHERE id = ?""", [(now, i) for i in id_list])
        elif retry_at is not None:
            conn.executemany("""UPDATE notify_outbox SET attempts = attempts + 1, next_try = ?, last_error = ?
                                WHERE id = ?""", [(retry_at, error, i) for i in id_list])
        else:
            conn.executemany("""UPDATE notify_outbox SET state = 'dead', attempts = attempts + 1, done_at = ?,
                                last_error = ? WHERE id = ?""", [(now, error, i) for i in id_list])


def outbox(db: Database, *, dest: str | None = None, state: str | None = None, limit: int = 1000
           ) -> list[OutboxRow]:
    """Outbox rows, newest first, optionally of one destination and state."""
    where, args = [], []
    if dest is not None:
        where.append("dest = ?")
        args.append(dest)
    if state is not None:
        where.append("state = ?")
        args.append(state)
    clause = f"WHERE {' AND '.join(where)}" if where else ""
    return [_row(r) for r in query(db, f"SELECT * FROM notify_outbox {clause} ORDER BY id DESC LIMIT ?",
                                   (*args, limit))]


def dead_letters(db: Database, dest: str | None = None, limit: int = 1000) -> list[OutboxRow]:
    """The dead-letter log: events given up after their retries, newest first."""
    return outbox(db, dest=dest, state="dead", limit=limit)


def gpu_indexes(db: Database, uuids: Iterable[str]) -> dict[str, int | None]:
    """The index on its node of each GPU of ``uuids`` that the store knows."""
    wanted = sorted(set(uuids))
    out: dict[str, int | None] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        marks = ", ".join("?" for _ in chunk)
        for r in query(db, f"SELECT uuid, idx FROM gpus WHERE uuid IN ({marks})", chunk):
            out[r["uuid"]] = None if r["idx"] is None else int(r["idx"])
    return out


def outbox_has(db: Database, dest: str, event_key: str) -> bool:
    """Whether ``event_key`` is in ``dest``'s outbox, in any state."""
    return bool(query(db, "SELECT 1 AS x FROM notify_outbox WHERE dest = ? AND event_key = ? LIMIT 1",
                      (dest, event_key)))


def retry_now(db: Database, dest: str, now: float) -> int:
    """Make every pending row of ``dest`` due at ``now`` (a new run tries at once what an earlier one left
    waiting for its next retry); returns how many."""
    with transaction(db) as conn:
        return int(conn.execute("UPDATE notify_outbox SET next_try = ? WHERE dest = ? AND state = 'pending' "
                                "AND next_try > ?", (now, dest, now)).rowcount)


def database_file(db: Database) -> str:
    """The file behind ``db``, where the notifier's senders open their own connections (":memory:" for none)."""
    return db_path(db)
