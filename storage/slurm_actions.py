"""The record of Slurm drains and resumes: who asked, when, why, and what Slurm answered.

One row per request (``slurm_actions``, created by ``m014_slurm_actions``), written *before*
Slurm is asked (``result`` ``pending``) and finished after (``ok`` or ``failed`` with the
error), so a request that dies half-way is still on record. ``reason`` is the full text the
operator or the finding gave; ``sent_reason`` what Slurm got (one line, prefixed, bounded).
``origin``: ``cli``, ``app`` or ``auto``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from storage.db import db_path, open_database, query, transaction
from storage.schema_slurm import SLURM_ACTIONS_DDL  # noqa: F401 - the table's definition, re-exported

__all__ = ["SlurmActionRow", "begin_action", "finish_action", "reopen", "slurm_actions"]

RESULTS = ("pending", "ok", "failed")


@dataclass(frozen=True)
class SlurmActionRow:
    """One stored drain or resume."""

    id: int
    ts: float
    node: str
    action: str
    origin: str
    who: str
    result: str
    slurm_name: str | None = None
    reason: str | None = None
    sent_reason: str | None = None
    finding_key: str | None = None
    error: str | None = None
    done_ts: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("id", "ts", "node", "slurm_name", "action", "origin", "who",
                                               "reason", "sent_reason", "finding_key", "result", "error", "done_ts")}


def _row(r: dict[str, Any]) -> SlurmActionRow:
    return SlurmActionRow(id=int(r["id"]), ts=float(r["ts"]), node=str(r["node"]), action=str(r["action"]),
                          origin=str(r["origin"]), who=str(r["who"]), result=str(r["result"]),
                          slurm_name=r["slurm_name"], reason=r["reason"], sent_reason=r["sent_reason"],
                          finding_key=r["finding_key"], error=r["error"], done_ts=r["done_ts"])


def reopen(db: Database) -> Database:
    """A second connection to ``db``'s file, for a thread of its own (the automatic drain beside the collector's
    writer; SQLite's WAL lets both write, each in short transactions)."""
    return open_database(db_path(db), existing=True)


def begin_action(db: Database, ts: float, node: str, action: str, *, origin: str, who: str,
                 slurm_name: str | None = None, reason: str | None = None,
                 finding_key: str | None = None) -> int:
    """Record a request as ``pending`` before Slurm is asked; returns its id."""
    with transaction(db) as conn:
        cur = conn.execute(
            "INSERT INTO slurm_actions (ts, node, slurm_name, action, origin, who, reason, finding_key, result) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
            (float(ts), node, slurm_name, action, origin, who, reason, finding_key))
        return int(cur.lastrowid or 0)


def finish_action(db: Database, action_id: int, ts: float, *, ok: bool, error: str | None = None,
                  sent_reason: str | None = None, slurm_name: str | None = None) -> None:
    """Record what Slurm answered to request ``action_id``."""
    with transaction(db) as conn:
        conn.execute("UPDATE slurm_actions SET result = ?, error = ?, done_ts = ?, "
                     "sent_reason = COALESCE(?, sent_reason), slurm_name = COALESCE(?, slurm_name) WHERE id = ?",
                     ("ok" if ok else "failed", error, float(ts), sent_reason, slurm_name, int(action_id)))


def slurm_actions(db: Database, node: str | None = None, *, since: float | None = None,
                  nodes: Iterable[str] | None = None, limit: int = 200) -> list[SlurmActionRow]:
    """The newest requests first (of one node, of ``nodes``, or of all), at most ``limit``."""
    if not db["slurm_actions"].exists():
        return []  # a read-only view of a database not yet upgraded
    where: list[str] = []
    params: list[Any] = []
    if node is not None:
        where.append("node = ?")
        params.append(node)
    if since is not None:
        where.append("ts >= ?")
        params.append(float(since))
    sql = "SELECT * FROM slurm_actions" + (" WHERE " + " AND ".join(where) if where else "")
    rows = [_row(r) for r in query(db, sql + " ORDER BY ts DESC, id DESC LIMIT ?", [*params, int(limit)])]
    if nodes is not None:
        wanted = set(nodes)
        rows = [r for r in rows if r.node in wanted]
    return rows
