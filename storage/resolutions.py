"""Operators' resolutions of findings: "resolved: card replaced", with who, when and a note.

A resolution is an act, apart from an acknowledgement or a snooze (:mod:`storage.acks`):
it closes the finding's current episode (``findings.resolved_at``) and is kept as a
row of its own (``finding_resolutions``, created by ``m010_finding_resolutions``),
so the card's (node's) history lists every fault and how it was closed. A fault
that comes back after it is judged anew by the health engine and reopens as a
recurrence linked to the resolution (see :mod:`fleetmon.health.lifecycle`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from storage.db import query, transaction
from storage.queries import stored_text

__all__ = ["ResolutionRow", "card_resolutions", "latest_resolutions", "resolve"]


@dataclass(frozen=True)
class ResolutionRow:
    """One operator's resolution of the finding ``key`` (a copy of the finding as it stood, and the act)."""

    id: int
    key: str
    kind: str
    at: float
    reason: str
    note: str = ""
    by: str | None = None
    node: str | None = None
    gpu_uuid: str | None = None
    severity: str | None = None
    first_seen: float | None = None
    last_seen: float | None = None
    summary: str = ""


def _row(r: dict[str, Any]) -> ResolutionRow:
    # m017: the summary as made (an i18n.Text equal to the English stored), when the row keeps it
    summary = stored_text(str(r["summary"] or ""), r.get("texts"), "summary") or ""
    return ResolutionRow(id=int(r["id"]), key=str(r["key"]), kind=str(r["kind"]), at=float(r["at"]),
                         reason=str(r["reason"]), note=str(r["note"] or ""), by=r["by"], node=r["node"],
                         gpu_uuid=r["gpu_uuid"], severity=r["severity"], first_seen=r["first_seen"],
                         last_seen=r["last_seen"], summary=summary)


def resolve(db: Database, key: str, reason: str, note: str, at: float, by: str | None = None) -> ResolutionRow:
    """Resolve the stored finding ``key`` at ``at``; returns the resolution kept.

    Raises:
        KeyError: no stored finding has that key.
        StorageError: the database cannot be written.
    """
    with transaction(db) as conn:
        cur = conn.execute("SELECT kind, node, gpu_uuid, severity, first_seen, last_seen, evidence, texts "
                           "FROM findings WHERE key = ?", (key,))
        found = cur.fetchone()
        if found is None:
            raise KeyError(key)
        kind, node, gpu_uuid, severity, first_seen, last_seen, evidence, texts = found
        try:
            ev = json.loads(evidence) if evidence else {}
        except ValueError:
            ev = {}
        summary = str(ev.get("summary") or "") if isinstance(ev, dict) else ""
        cur = conn.execute(
            """INSERT INTO finding_resolutions (key, kind, node, gpu_uuid, severity, first_seen, last_seen,
                                                summary, reason, note, by, at, texts)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (key, kind, node, gpu_uuid, None if severity is None else str(severity), first_seen, last_seen,
             summary, reason, note, by, at, texts))
        rid = int(cur.lastrowid or 0)
        lc = dict(ev.get("lifecycle") or {}) if isinstance(ev, dict) else {}
        lc["resolved"] = {"by": "operator", "resolution": {
            "id": rid, "at": at, "reason": reason, "note": note, "by": by}}
        if isinstance(ev, dict):
            ev["lifecycle"] = lc
        conn.execute("UPDATE findings SET resolved_at = ?, updated_at = ?, evidence = ? WHERE key = ?",
                     (at, at, json.dumps(ev, separators=(",", ":"), sort_keys=True, default=str), key))
    return ResolutionRow(id=rid, key=key, kind=str(kind), at=at, reason=reason, note=note, by=by, node=node,
                         gpu_uuid=gpu_uuid, severity=None if severity is None else str(severity),
                         first_seen=first_seen, last_seen=last_seen,
                         summary=stored_text(summary, texts, "summary") or "")


def latest_resolutions(db: Database, keys: Iterable[str] | None = None,
                       until: float | None = None) -> dict[str, ResolutionRow]:
    """The newest resolution of each finding key (at or before ``until``), optionally only of ``keys``."""
    sql = "SELECT * FROM finding_resolutions"
    params: list[Any] = []
    if until is not None:
        sql += " WHERE at <= ?"
        params.append(until)
    wanted = None if keys is None else set(keys)
    out: dict[str, ResolutionRow] = {}
    for r in query(db, sql + " ORDER BY at, id", params):
        if wanted is None or r["key"] in wanted:
            out[str(r["key"])] = _row(r)
    return out


def card_resolutions(db: Database, gpu_uuid: str | None = None, node: str | None = None) -> list[ResolutionRow]:
    """Every resolution of a card's (or a node's) findings, oldest first: part of its history."""
    if gpu_uuid is not None:
        return [_row(r) for r in query(db, "SELECT * FROM finding_resolutions WHERE gpu_uuid = ? ORDER BY at, id",
                                       (gpu_uuid,))]
    return [_row(r) for r in query(db, "SELECT * FROM finding_resolutions WHERE node = ? ORDER BY at, id",
                                   (node,))]
