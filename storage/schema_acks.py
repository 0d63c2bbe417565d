"""Schema step m008: operators' acknowledgements and snoozes of findings (:mod:`storage.acks`).

Kept beside :mod:`storage.schema` (which registers it with its other hand-written
steps) so that module stays within the size limit, and free of storage imports so
that registering it makes no import circle.
"""

from __future__ import annotations

from sqlite_utils import Database

ACKS_DDL = """
    CREATE TABLE finding_acks (
        key TEXT PRIMARY KEY,
        severity TEXT,
        note TEXT NOT NULL DEFAULT '',
        by TEXT,
        created_at REAL NOT NULL,
        until REAL
    )"""
"""The table as ``m008_finding_acks`` creates it. Frozen: a later change is a new schema step."""


def m008_finding_acks(db: Database) -> None:
    """Create ``finding_acks``: one row per acknowledged or snoozed finding key."""
    db.execute(ACKS_DDL)
