"""Schema step m014: the record of every Slurm drain and resume (:mod:`storage.slurm_actions`).

Kept beside :mod:`storage.schema` (which registers it with its other hand-written
steps), free of storage imports so that registering it makes no import circle.
"""

from __future__ import annotations

from sqlite_utils import Database

SLURM_ACTIONS_DDL = """
    CREATE TABLE slurm_actions (
        id INTEGER PRIMARY KEY,
        ts REAL NOT NULL,
        node TEXT NOT NULL,
        slurm_name TEXT,
        action TEXT NOT NULL,
        origin TEXT NOT NULL,
        who TEXT NOT NULL,
        reason TEXT,
        sent_reason TEXT,
        finding_key TEXT,
        result TEXT NOT NULL,
        error TEXT,
        done_ts REAL
    )"""
"""The table as ``m014_slurm_actions`` creates it. Frozen: a later change is a new schema step."""


def m014_slurm_actions(db: Database) -> None:
    """Create ``slurm_actions``: one row per drain or resume fleetmon asked Slurm for (kept, never replaced)."""
    db.execute(SLURM_ACTIONS_DDL)
    db.execute("CREATE INDEX idx_slurm_actions_node_ts ON slurm_actions (node, ts)")
