"""Acknowledgements and snoozes of findings, set by an operator (the GUI) and read by reports.

An acknowledgement says "seen, handled, stop showing it as new": it holds while
the finding's severity stays at or below the severity it had when it was
acknowledged, and (for a snooze) until its expiry. A finding that worsens, or
whose snooze ends, comes back on its own: nothing has to clear the row.

One row per finding key (``finding_acks``, created by ``m008_finding_acks``);
acknowledging again replaces it, :func:`clear_ack` removes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from fleetmon.vocab import severity_rank as _severity_rank
from storage.db import query, transaction
from storage.schema_acks import ACKS_DDL  # noqa: F401 - the table's definition, re-exported



@dataclass(frozen=True)
class AckRow:
    """An operator's acknowledgement of the finding ``key``.

    ``severity`` is the finding's severity when it was acknowledged; ``until``
    the end of a snooze (None: an acknowledgement that holds until the finding
    worsens).
    """

    key: str
    note: str
    created_at: float
    severity: str | None = None
    by: str | None = None
    until: float | None = None

    @property
    def is_snooze(self) -> bool:
        return self.until is not None

    def covers(self, severity: Any, now: float) -> bool:
        """Whether this still holds for the finding at ``severity`` at ``now``: not expired, not worsened."""
        if self.until is not None and now >= self.until:
            return False
        return severity_rank(severity) <= severity_rank(self.severity)


def severity_rank(severity: Any) -> int:
    """A stored severity's order: a name by its rank, an integer as itself, 0 for none or unknown text."""
    if isinstance(severity, (int, float)):
        return int(severity)
    try:
        return _severity_rank(severity)
    except ValueError:
        return 0


def _ack(r: Mapping[str, Any]) -> AckRow:
    return AckRow(key=str(r["key"]), note=str(r["note"] or ""), created_at=float(r["created_at"]),
                  severity=r["severity"], by=r["by"], until=r["until"])


def acknowledge(db: Database, key: str, severity: Any, note: str, now: float, *, until: float | None = None,
                by: str | None = None) -> AckRow:
    """Acknowledge (``until`` None) or snooze (until ``until``) the finding ``key`` at its current ``severity``.

    Replaces an earlier acknowledgement of the same finding.
    """
    sev = None if severity is None else str(severity)
    with transaction(db) as conn:
        conn.execute("""INSERT INTO finding_acks (key, severity, note, by, created_at, until) VALUES (?, ?, ?, ?, ?, ?)
                        ON CONFLICT (key) DO UPDATE SET severity = excluded.severity, note = excluded.note,
                        by = excluded.by, created_at = excluded.created_at, until = excluded.until""",
                     (key, sev, note, by, now, until))
    return AckRow(key=key, note=note, created_at=now, severity=sev, by=by, until=until)


def clear_ack(db: Database, key: str) -> bool:
    """Remove the acknowledgement of ``key``; whether there was one."""
    with transaction(db) as conn:
        return conn.execute("DELETE FROM finding_acks WHERE key = ?", (key,)).rowcount > 0


def acks(db: Database, keys: Iterable[str] | None = None) -> dict[str, AckRow]:
    """Acknowledgements by finding key (all of them, or those of ``keys``), expired ones included."""
    if not db["finding_acks"].exists():
        return {}  # a read-only view of a database not yet upgraded
    found = {r["key"]: _ack(r) for r in query(db, "SELECT * FROM finding_acks")}
    if keys is None:
        return found
    return {k: found[k] for k in keys if k in found}


def active_acks(db: Database, findings: Iterable[tuple[str, Any]], now: float) -> dict[str, AckRow]:
    """Of ``findings`` ((key, current severity) pairs), those an acknowledgement still covers."""
    pairs = list(findings)
    stored = acks(db, [k for k, _ in pairs])
    return {k: stored[k] for k, sev in pairs if k in stored and stored[k].covers(sev, now)}
