"""Schema step m016 (issue 23): each device's current fault signals (:mod:`fleetmon.signals`).

A vendor's tool says more about a device than the field catalog holds: an Ascend
NPU's health state and error codes, an AMD GPU's ECC counts per block, its deferred
errors. Events record each change (``device_health``, ``ecc_block``, ...); this table
keeps the *current* signals of each card, so that a finding stays open while the
latest signals show the condition, however old the event that began it, and
resolves only when a later signal says it is gone (never because data stopped).

``gpu_signals``: one row per card (``gpu_id`` = ``gpus.id``), ``ts`` of the last change,
``signals`` the JSON of :func:`fleetmon.signals.merge` / ``fold``
(``{"values": {signal: value}, "since": {signal: ts}, "ts": ts}``). A narrow table of
its own, as ``gpu_latest`` is: the wide ``gpus`` row is not rewritten for it.

Kept beside :mod:`storage.schema` (which registers it with its other hand-written
steps), free of storage imports so that registering it makes no import circle.
"""

from __future__ import annotations

from sqlite_utils import Database


def m016_gpu_signals(db: Database) -> None:
    """Create ``gpu_signals`` (empty: earlier data had no signals)."""
    db.execute("""
        CREATE TABLE gpu_signals (
            gpu_id INTEGER PRIMARY KEY,
            ts REAL,
            signals TEXT
        )""")
