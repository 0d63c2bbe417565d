"""Schema steps m007: GPU UUID claim conflicts (issue 11, item 4); m011: the per-node GPU cap (issue 20).

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


def m011_node_gpu_cap(db: Database) -> None:
    """What a node's polls had refused to it by the cap on the GPUs one node may accumulate (issue 20, item 9).

    ``notice``: one line saying why GPU UUIDs of the node's latest poll were refused while the poll
    itself was stored (NULL once a poll brings no refused UUID; ``last_error`` stays the failed
    poll's reason). ``refused_uuids``: how many UUID sightings were refused, over all polls.
    """
    db.execute("ALTER TABLE nodes ADD COLUMN notice TEXT")
    db.execute("ALTER TABLE nodes ADD COLUMN refused_uuids INTEGER NOT NULL DEFAULT 0")
