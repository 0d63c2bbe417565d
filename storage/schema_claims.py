"""Schema step m007: GPU UUID claim conflicts (issue 11, item 4).

Kept beside :mod:`storage.schema` (which registers it with its other hand-written
steps) so that module stays within the size limit.
"""

from __future__ import annotations

from sqlite_utils import Database


def m007_gpu_claims(db: Database) -> None:
    """Claims of a GPU UUID by a node while another node reports the same card.

    One row per (claimant node, GPU UUID): the node the card stays with
    (``holder``), when the conflict was first and last seen, when it was last
    reported as a ``uuid_conflict`` event, and how many records of the claim
    were not stored (quarantined).
    """
    db.execute("""
        CREATE TABLE gpu_claim_conflicts (
            node TEXT NOT NULL,
            gpu_uuid TEXT NOT NULL,
            holder TEXT NOT NULL,
            first_seen REAL NOT NULL,
            last_seen REAL NOT NULL,
            reported_at REAL NOT NULL,
            dropped INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (node, gpu_uuid)
        )""")
