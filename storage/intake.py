"""Intake results: the check of a card new to the fleet, stored with the card.

One row per intake (``intakes``, created by ``m012_intakes``): kept, never
replaced, so a card's history shows every intake it went through; the newest
is the card's intake verdict in the fleet views. ``result`` is the whole
result as :meth:`fleetmon.intake.IntakeResult.to_dict` gives it (JSON); this
module does not interpret it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlite_utils import Database

from storage.db import query, transaction
from storage.schema_intake import INTAKES_DDL  # noqa: F401 - the table's definition, re-exported

__all__ = ["IntakeRow", "intakes", "latest_intakes", "save_intake"]


@dataclass(frozen=True)
class IntakeRow:
    """One stored intake: when, which card (where it sat), the verdict, the window judged and the result."""

    id: int
    ts: float
    gpu_uuid: str
    verdict: str
    node: str | None = None
    window_from: float | None = None
    window_to: float | None = None
    result: Mapping[str, Any] = field(default_factory=dict)


def _row(r: Mapping[str, Any]) -> IntakeRow:
    try:
        result = json.loads(r["result"]) if r["result"] else {}
    except ValueError:
        result = {}  # a damaged row still says when and what verdict
    return IntakeRow(id=int(r["id"]), ts=float(r["ts"]), gpu_uuid=str(r["gpu_uuid"]), verdict=str(r["verdict"]),
                     node=r["node"], window_from=r["window_from"], window_to=r["window_to"],
                     result=result if isinstance(result, dict) else {})


def save_intake(db: Database, ts: float, gpu_uuid: str, verdict: str, *, node: str | None = None,
                window: tuple[float, float] | None = None, result: Mapping[str, Any] | None = None) -> IntakeRow:
    """Store one intake of ``gpu_uuid`` at ``ts``; returns it as stored."""
    text = json.dumps(dict(result or {}), separators=(",", ":"), sort_keys=True, default=str)
    lo, hi = window if window is not None else (None, None)
    with transaction(db) as conn:
        cur = conn.execute(
            "INSERT INTO intakes (ts, gpu_uuid, node, verdict, window_from, window_to, result) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)", (float(ts), gpu_uuid, node, verdict, lo, hi, text))
        rid = int(cur.lastrowid or 0)
    return IntakeRow(id=rid, ts=float(ts), gpu_uuid=gpu_uuid, verdict=verdict, node=node, window_from=lo,
                     window_to=hi, result=json.loads(text))


def intakes(db: Database, gpu_uuid: str | None = None, limit: int = 100) -> list[IntakeRow]:
    """The newest intakes first (of one card, or of every card), at most ``limit``."""
    if not db["intakes"].exists():
        return []  # a read-only view of a database not yet upgraded
    sql = "SELECT * FROM intakes"
    params: list[Any] = []
    if gpu_uuid is not None:
        sql += " WHERE gpu_uuid = ?"
        params.append(gpu_uuid)
    return [_row(r) for r in query(db, sql + " ORDER BY ts DESC, id DESC LIMIT ?", [*params, int(limit)])]


def latest_intakes(db: Database, uuids: Iterable[str] | None = None) -> dict[str, IntakeRow]:
    """Each card's newest intake (of ``uuids``, or of every card that has one), by UUID; no result JSON read
    beyond the verdict row (the fleet views need the verdict and its time)."""
    if not db["intakes"].exists():
        return {}
    rows = query(db, """SELECT id, ts, gpu_uuid, node, verdict, window_from, window_to, NULL AS result
                        FROM intakes AS i WHERE id = (SELECT id FROM intakes WHERE gpu_uuid = i.gpu_uuid
                                                      ORDER BY ts DESC, id DESC LIMIT 1)""")
    wanted = None if uuids is None else set(uuids)
    return {r["gpu_uuid"]: _row(r) for r in rows if wanted is None or r["gpu_uuid"] in wanted}
