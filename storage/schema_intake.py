"""Schema step m012: intake certificates of cards new to the fleet (:mod:`storage.intake`).

Kept beside :mod:`storage.schema` (which registers it with its other hand-written
steps), free of storage imports so that registering it makes no import circle.
"""

from __future__ import annotations

from sqlite_utils import Database

INTAKES_DDL = """
    CREATE TABLE intakes (
        id INTEGER PRIMARY KEY,
        ts REAL NOT NULL,
        gpu_uuid TEXT NOT NULL,
        node TEXT,
        verdict TEXT NOT NULL,
        window_from REAL,
        window_to REAL,
        result TEXT
    )"""
"""The table as ``m012_intakes`` creates it. Frozen: a later change is a new schema step."""


def m012_intakes(db: Database) -> None:
    """Create ``intakes``: one row per intake check of a card (kept, never replaced: the card's record)."""
    db.execute(INTAKES_DDL)
    db.execute("CREATE INDEX idx_intakes_gpu_ts ON intakes (gpu_uuid, ts)")
