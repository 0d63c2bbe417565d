"""Schema step m015: the notifications' outbox, delivered state and dead letters (:mod:`storage.notify`).

Kept beside :mod:`storage.schema` (which registers it with its other hand-written
steps), free of storage imports so that registering it makes no import circle.
"""

from __future__ import annotations

from sqlite_utils import Database

NOTIFY_OUTBOX_DDL = """
    CREATE TABLE notify_outbox (
        id INTEGER PRIMARY KEY,
        dest TEXT NOT NULL,
        event_key TEXT NOT NULL,
        created REAL NOT NULL,
        severity TEXT NOT NULL,
        payload TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'pending',
        attempts INTEGER NOT NULL DEFAULT 0,
        next_try REAL NOT NULL,
        last_error TEXT,
        done_at REAL,
        UNIQUE (dest, event_key)
    )"""
"""The table as ``m015_notify_outbox`` creates it. Frozen: a later change is a new schema step."""


def m015_notify_outbox(db: Database) -> None:
    """Create ``notify_outbox``: one row per destination and event (a finding key and its lifecycle
    transition, a node going stale, a day's digest); ``state`` pending → sent, or dead (the dead letters)."""
    db.execute(NOTIFY_OUTBOX_DDL)
    db.execute("CREATE INDEX idx_notify_outbox_due ON notify_outbox (dest, state, next_try)")
