"""Sign-offs of the daily inspection: who looked, when, with what note, and what was open then.

A sign-off closes an inspection: the open findings it saw are stored with it
(``summary``, the same shape as a report's), so the next inspection says what
is new, resolved or worse *since the operator last signed*, not since whatever
report ran last. One row per sign-off (``signoffs``, created by
``m009_signoffs``); they are kept, never replaced: the newest of a scope is the
baseline, the older ones are the record of who signed when.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlite_utils import Database

from storage.db import query, transaction
from storage.schema_signoff import SIGNOFFS_DDL  # noqa: F401 - the table's definition, re-exported

__all__ = ["SignoffRow", "last_signoff", "save_signoff", "signoffs"]


@dataclass(frozen=True)
class SignoffRow:
    """A signed-off inspection.

    ``scope`` is the report's kind ("report" for the whole fleet, "report:<group>");
    ``summary`` what the inspection saw (``open``: the open findings as
    ``Finding.to_dict``; ``status``, ``verdicts``, ``since``, ``checked``: the nodes ticked).
    """

    id: int
    ts: float
    name: str
    note: str = ""
    scope: str = "report"
    summary: Mapping[str, Any] = field(default_factory=dict)

    @property
    def open_findings(self) -> list[Mapping[str, Any]]:
        found = self.summary.get("open") if isinstance(self.summary, Mapping) else None
        return [d for d in found if isinstance(d, Mapping)] if isinstance(found, list) else []


def _row(r: Mapping[str, Any]) -> SignoffRow:
    try:
        summary = json.loads(r["summary"]) if r["summary"] else {}
    except ValueError:
        summary = {}  # a damaged row still says who signed when
    return SignoffRow(id=int(r["id"]), ts=float(r["ts"]), name=str(r["name"]), note=str(r["note"] or ""),
                      scope=str(r["scope"] or "report"), summary=summary if isinstance(summary, dict) else {})


def save_signoff(db: Database, name: str, ts: float, *, note: str = "", scope: str = "report",
                 summary: Mapping[str, Any] | None = None) -> SignoffRow:
    """Store a sign-off by ``name`` at ``ts``; returns it as stored.

    Raises:
        ValueError: an empty name (a sign-off without a person is no sign-off).
    """
    who = str(name).strip()
    if not who:
        raise ValueError("a sign-off needs a name")
    data = dict(summary or {})
    text = json.dumps(data, separators=(",", ":"), sort_keys=True, default=str)
    with transaction(db) as conn:
        cur = conn.execute("INSERT INTO signoffs (ts, scope, name, note, summary) VALUES (?, ?, ?, ?, ?)",
                           (float(ts), scope, who, note, text))
        rid = int(cur.lastrowid or 0)
    return SignoffRow(id=rid, ts=float(ts), name=who, note=note, scope=scope, summary=json.loads(text))


def last_signoff(db: Database, scope: str = "report", before: float | None = None) -> SignoffRow | None:
    """The newest sign-off of ``scope`` (strictly before ``before`` if given), or None."""
    if not db["signoffs"].exists():
        return None  # a read-only view of a database not yet upgraded
    sql = "SELECT * FROM signoffs WHERE scope = ?"
    params: list[Any] = [scope]
    if before is not None:
        sql += " AND ts < ?"
        params.append(before)
    found = query(db, sql + " ORDER BY ts DESC, id DESC LIMIT 1", params)
    return _row(found[0]) if found else None


def signoffs(db: Database, scope: str | None = None, limit: int = 50) -> list[SignoffRow]:
    """The newest sign-offs first (of ``scope``, or every scope), at most ``limit``."""
    if not db["signoffs"].exists():
        return []
    sql = "SELECT * FROM signoffs"
    params: list[Any] = []
    if scope is not None:
        sql += " WHERE scope = ?"
        params.append(scope)
    return [_row(r) for r in query(db, sql + " ORDER BY ts DESC, id DESC LIMIT ?", [*params, int(limit)])]
