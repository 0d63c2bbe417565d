"""Schema step m010: operators' resolutions of findings (:mod:`storage.resolutions`).

Kept beside :mod:`storage.schema` (which registers it with its other hand-written
steps), free of storage imports so that registering it makes no import circle.
"""

from __future__ import annotations

from sqlite_utils import Database

RESOLUTIONS_DDL = """
    CREATE TABLE finding_resolutions (
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL,
        kind TEXT NOT NULL,
        node TEXT,
        gpu_uuid TEXT,
        severity TEXT,
        first_seen REAL,
        last_seen REAL,
        summary TEXT NOT NULL DEFAULT '',
        reason TEXT NOT NULL,
        note TEXT NOT NULL DEFAULT '',
        by TEXT,
        at REAL NOT NULL
    )"""
"""The table as ``m010_finding_resolutions`` creates it. Frozen: a later change is a new schema step."""


def m010_finding_resolutions(db: Database) -> None:
    """Create ``finding_resolutions``: one row per operator's resolution, kept as the card's (node's) history."""
    db.execute(RESOLUTIONS_DDL)
    db.execute("CREATE INDEX idx_resolutions_key_at ON finding_resolutions (key, at)")
    db.execute("CREATE INDEX idx_resolutions_gpu ON finding_resolutions (gpu_uuid, at)")
