"""Schema step m009: operators' sign-offs of the daily inspection (:mod:`storage.signoffs`).

Kept beside :mod:`storage.schema` (which registers it with its other hand-written
steps) so that module stays within the size limit, and free of storage imports so
that registering it makes no import circle.
"""

from __future__ import annotations

from sqlite_utils import Database

SIGNOFFS_DDL = """
    CREATE TABLE signoffs (
        id INTEGER PRIMARY KEY,
        ts REAL NOT NULL,
        scope TEXT NOT NULL DEFAULT 'report',
        name TEXT NOT NULL,
        note TEXT NOT NULL DEFAULT '',
        summary TEXT
    )"""
"""The table as ``m009_signoffs`` creates it. Frozen: a later change is a new schema step."""


def m009_signoffs(db: Database) -> None:
    """Create ``signoffs``: one row per signed-off inspection (the next one diffs against the newest)."""
    db.execute(SIGNOFFS_DDL)
    db.execute("CREATE INDEX idx_signoffs_scope_ts ON signoffs (scope, ts)")
