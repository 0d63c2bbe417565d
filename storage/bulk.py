"""Bulk history: hours written as one stored row each, rolled up as if they were full hours.

Generated history (the demo fleet, ``fleetmon.sim.demo_history``) older than
the raw-minute window would cost a month of minute rows only to be rolled up
and pruned. Instead, the generator ingests one *representative* minute per GPU
and hour (through :func:`storage.ingest.ingest_polls`, at the hour's start,
with ``n`` and the throttle/busy counts of the whole hour) and then calls
:func:`compact_hours`: the normal rollup builds the hourly rows from those
minutes, the per-minute counts (``minutes``, busy minutes, minutes with a
failed power reading) are scaled to the minutes each row stands for, the
representative minutes are dropped as retention would have dropped them, and
the days are rebuilt from the scaled hours. So every reader sees hourly and
daily rows built by the same SQL as the collector's.
"""

from __future__ import annotations

from sqlite_utils import Database

from storage.db import get_meta, set_meta, transaction
from storage.rollup import HOUR, rollup


def compact_hours(db: Database, start: int, before: int, *, minutes_per_row: int = 60,
                  now: float | None = None) -> int:
    """Turn the minute rows in [start, before) into hour rollups; returns the hourly rows written.

    Each stored minute in the range must stand for ``minutes_per_row``
    minutes of its hour (one row per GPU and hour). ``start`` and ``before``
    are hour boundaries; afterwards the store holds no raw minutes before
    ``before`` (meta ``pruned_before``), like one pruned by retention.
    """
    if start % HOUR or before % HOUR:
        raise ValueError("compact_hours: start and before must be whole hours")
    rollup(db, now=now, since=start)
    k = int(minutes_per_row)
    with transaction(db) as conn:
        before_changes = conn.total_changes
        conn.execute("UPDATE hourly SET minutes = minutes * ? WHERE ts >= ? AND ts < ?", (k, start, before))
        hours = conn.total_changes - before_changes
        conn.execute("""UPDATE hourly_health SET busy_minutes = busy_minutes * ?,
                            sm_clock_busy_minutes = sm_clock_busy_minutes * ?, failed_power_w = failed_power_w * ?
                        WHERE ts >= ? AND ts < ?""", (k, k, k, start, before))
        ids = [r[0] for r in conn.execute("SELECT id FROM gpus")]
        conn.executemany("DELETE FROM samples WHERE gpu_id = ? AND ts < ?", [(i, before) for i in ids])
        set_meta(conn, "pruned_before", before)
    rollup(db, now=now, since=start)  # no raw minutes left before `before`: only the days are rebuilt
    return hours


GENERATED_UNTIL_KEY = "generated_until"


def mark_generated_until(db: Database, until: float) -> None:
    """Record that the store's generated history ends at ``until`` (Unix s; the demo stories' epoch)."""
    with transaction(db) as conn:
        set_meta(conn, GENERATED_UNTIL_KEY, float(until))


def generated_until(db: Database) -> float | None:
    """Where the store's generated history ends (None: it holds none, or from before this was recorded)."""
    value = get_meta(db, GENERATED_UNTIL_KEY)
    return None if value is None else float(value)
