"""Hourly and daily rollups of the per-minute samples, and raw-minute retention.

Rollup rows keep, per GPU and bucket (UTC hour / UTC day, ``ts`` = bucket
start): gauges' min / n-weighted mean / max, each counter's last value and its
increase over the bucket (a counter that went backwards was reset: the new
value counts as the increase), throttle-reason and busy sample counts summed
with the total sample count ``n`` (time fraction = ``thr_R / n``), and the
lowest PCIe link seen while busy. Encoding as in :mod:`storage.schema`.
Beside each hourly row, ``hourly_health`` keeps what the health engine needs
from the hour (busy minutes, the SM clock over busy unthrottled minutes,
minutes with a failed power reading, the highest pending/failure states).

Incremental: ingest marks the oldest minute it stored since the last rollup
(meta ``rollup_dirty_from``); :func:`rollup` recomputes every hour bucket from
that one on and the days containing them, then clears the mark. Recomputing a
bucket from the same minutes gives the same row, so reruns are harmless.

Retention: :func:`prune` deletes raw minutes older than ``raw_days`` but never
minutes that are not yet rolled up. Rollups are kept.

The collector calls :func:`maintain` after each cycle's ingest; it returns at
once when nothing is due.
"""

from __future__ import annotations

import functools
import sqlite3
import time
from typing import Any

from sqlite_utils import Database

from fleetmon.fields import THROTTLE_NAMES
from storage.db import get_meta, set_meta, transaction
from storage.schema import CLEAN_CLOCK_THROTTLES, EXTRA_INTS, HEALTH_HOURLY_COLUMN_NAMES, LAYOUT, Layout, status_failed_sql

HOUR = 3600
DAY = 86400
DEFAULT_RAW_DAYS = 30
PARTIAL_EVERY_S = 300
"""How often the still-open hour is refreshed (a finished hour is rolled up at once)."""
PRUNE_EVERY_S = 3600

_THR = [f"thr_{r}" for r in THROTTLE_NAMES]


def _bucket_sql(source: str, width: int, layout: Layout = LAYOUT) -> str:
    """INSERT OR REPLACE of the rollup buckets of ``width`` seconds with ts >= :t0.

    ``source`` is "samples" (minutes → hourly) or "hourly" (hours → daily). The
    gauges, counters and states are the layout's (its field catalog's).
    """
    gauges, counters, states = layout.gauges, layout.counters, layout.states
    target = "hourly" if source == "samples" else "daily"
    src_cols = ["gpu_id", "ts", f"(ts / {width}) * {width} AS b", "max(coalesce(n, 1), 1) AS w",
                "coalesce(n, 0) AS n", "coalesce(lost, 0) AS lost",
                "1 AS minutes" if source == "samples" else "minutes"]
    for g in gauges:
        src_cols += [f"{g}_mean AS {g}_m", f"{g}_mean - {g}_dmin AS {g}_lo", f"{g}_mean + {g}_dmax AS {g}_hi"]
    for c in counters:
        if source == "samples":
            prev = f"lag({c}) OVER w"
            src_cols.append(f"CASE WHEN {c} IS NULL THEN NULL WHEN {prev} IS NULL THEN 0 "
                            f"WHEN {c} < {prev} THEN {c} ELSE {c} - {prev} END AS {c}_d")
        else:
            src_cols.append(f"{c}_delta AS {c}_d")
    src_cols += _THR + list(EXTRA_INTS)
    if source == "samples":
        # Each GPU's last minute before t0 rides along so the first delta of the
        # first bucket is against it, however long ago it was.
        base = """
            SELECT s.* FROM gpus g JOIN samples s
                ON s.gpu_id = g.id AND s.ts = (SELECT max(ts) FROM samples p WHERE p.gpu_id = g.id AND p.ts < :t0)
            UNION ALL
            SELECT * FROM samples WHERE gpu_id IN (SELECT id FROM gpus) AND ts >= :t0"""
        window = " WINDOW w AS (PARTITION BY gpu_id ORDER BY ts)"
    else:
        base = "SELECT * FROM hourly WHERE gpu_id IN (SELECT id FROM gpus) AND ts >= :t0"
        window = ""
    agg = ["gpu_id", "b", "sum(minutes) AS minutes", "sum(n) AS n", "sum(lost) AS lost", "max(ts) AS last_ts"]
    for g in gauges:
        agg += [f"CAST(round(sum({g}_m * w) * 1.0 / sum(CASE WHEN {g}_m IS NOT NULL THEN w END)) AS INTEGER)"
                f" AS {g}_mean", f"min({g}_lo) AS {g}_lo", f"max({g}_hi) AS {g}_hi"]
    agg += [f"sum({c}_d) AS {c}_delta" for c in counters]
    agg += [f"sum({t}) AS {t}" for t in _THR + ["busy_n"]]
    agg += [f"min({x}) AS {x}" for x in ("pcie_gen_busy_min", "pcie_width_busy_min")]
    out = {"gpu_id": "a.gpu_id", "ts": "a.b", "minutes": "a.minutes", "n": "a.n", "lost": "a.lost"}
    for g in gauges:
        out[f"{g}_mean"] = f"a.{g}_mean"
        out[f"{g}_dmin"] = f"a.{g}_mean - a.{g}_lo"
        out[f"{g}_dmax"] = f"a.{g}_hi - a.{g}_mean"
    for c in counters:
        out[c] = f"l.{c}"
        out[f"{c}_delta"] = f"a.{c}_delta"
    for s in states:
        out[s] = f"l.{s}"
    for t in _THR + list(EXTRA_INTS):
        out[t] = f"a.{t}"
    assert sorted(out) == sorted(layout.rollup_column_names)
    out = {c: out[c] for c in layout.rollup_column_names}  # later fields' columns come after the first release's
    return f"""
        WITH src AS (SELECT {', '.join(src_cols)} FROM ({base}){window}),
             agg AS (SELECT {', '.join(agg)} FROM src WHERE ts >= :t0 GROUP BY gpu_id, b)
        INSERT OR REPLACE INTO {target} ({', '.join(out)})
        SELECT {', '.join(out.values())}
        FROM agg a JOIN {source} l ON l.gpu_id = a.gpu_id AND l.ts = a.last_ts"""


_HOURLY_SQL = _bucket_sql("samples", HOUR)
_DAILY_SQL = _bucket_sql("hourly", DAY)


@functools.lru_cache(maxsize=8)
def _rollup_sql(layout: Layout) -> tuple[str, str]:
    """(hourly, daily) rollup statements of a layout (the default one's are built at import)."""
    if layout is LAYOUT:
        return _HOURLY_SQL, _DAILY_SQL
    return _bucket_sql("samples", HOUR, layout), _bucket_sql("hourly", DAY, layout)


def _health_sql() -> str:
    """INSERT OR REPLACE of the ``hourly_health`` rows of the hours with ts >= :t0 (see storage.schema)."""
    clean = " AND ".join(["sm_clock_mhz_mean IS NOT NULL", "busy_n > 0", "n > 0", "busy_n * 5 >= n * 4"]
                         + [f"coalesce(thr_{r}, 0) = 0" for r in CLEAN_CLOCK_THROTTLES])
    values = {
        "busy_minutes": "sum(CASE WHEN busy_n > 0 AND busy_n * 2 >= coalesce(n, 0) THEN 1 ELSE 0 END)",
        "sm_clock_busy_mhz": f"CAST(round(avg(CASE WHEN {clean} THEN sm_clock_mhz_mean END)) AS INTEGER)",
        "sm_clock_busy_minutes": f"sum(CASE WHEN {clean} THEN 1 ELSE 0 END)",
        "failed_power_w": f"sum({status_failed_sql('power_w')})",
        "retired_pending_max": "max(retired_pending)",
        "remap_pending_max": "max(remap_pending)",
        "remap_failure_max": "max(remap_failure)",
    }
    assert list(values) == HEALTH_HOURLY_COLUMN_NAMES
    return f"""
        INSERT OR REPLACE INTO hourly_health (gpu_id, ts, {', '.join(values)})
        SELECT gpu_id, (ts / {HOUR}) * {HOUR} AS b, {', '.join(values.values())}
        FROM samples WHERE gpu_id IN (SELECT id FROM gpus) AND ts >= :t0 GROUP BY gpu_id, b"""


_HEALTH_SQL = _health_sql()


def rollup(db: Database, now: float | None = None, since: int | None = None,
           layout: Layout = LAYOUT) -> dict[str, Any]:
    """Recompute the hourly and daily buckets touched since the last run.

    Args:
        now: current time, Unix seconds (recorded as the run time).
        since: recompute from this time instead of the dirty mark (e.g. 0 to
            rebuild everything still held raw).
        layout: the stored form of the field catalog (storage.schema.LAYOUT).

    Returns:
        ``{"from": bucket start or None, "hours": rows written, "days": rows written}``.
    """
    now = time.time() if now is None else now
    with transaction(db) as conn:
        return _rollup(conn, db, now, since, layout)


def _rollup(conn: Any, db: Database, now: float, since: int | None, layout: Layout = LAYOUT) -> dict[str, Any]:
    dirty = get_meta(db, "rollup_dirty_from") if since is None else since
    if dirty is None:
        return {"from": None, "hours": 0, "days": 0}
    # Minutes older than the pruned horizon may have lost their neighbours:
    # recomputing those hours would overwrite good rollups with partial ones.
    t0 = max(int(dirty) // HOUR * HOUR, int(get_meta(db, "pruned_before", 0)))
    hourly_sql, daily_sql = _rollup_sql(layout)
    before = conn.total_changes
    conn.execute(hourly_sql, {"t0": t0})
    hours = conn.total_changes - before
    conn.execute(_HEALTH_SQL, {"t0": t0})
    before = conn.total_changes
    conn.execute(daily_sql, {"t0": int(dirty) // DAY * DAY})  # days read hourly rows only: no clamp
    days = conn.total_changes - before
    conn.execute("DELETE FROM meta WHERE key = 'rollup_dirty_from'")
    set_meta(conn, "rollup_at", now)
    return {"from": t0, "hours": hours, "days": days}


def prune(db: Database, now: float | None = None, raw_days: float = DEFAULT_RAW_DAYS) -> int:
    """Delete raw minutes older than ``raw_days``, only those already rolled up.

    The poll log follows the same horizon. Returns the number of minute rows deleted.
    """
    now = time.time() if now is None else now
    with transaction(db) as conn:
        return _prune(conn, db, now, raw_days)


def _prune(conn: sqlite3.Connection, db: Database, now: float, raw_days: float) -> int:
    cutoff = int(now - raw_days * DAY) // HOUR * HOUR
    dirty = get_meta(db, "rollup_dirty_from")
    if dirty is not None:
        cutoff = min(cutoff, int(dirty) // HOUR * HOUR)
    set_meta(conn, "prune_at", now)
    if cutoff <= int(get_meta(db, "pruned_before", 0)):
        return 0
    ids = [r[0] for r in conn.execute("SELECT id FROM gpus")]
    before = conn.total_changes
    # One range delete per GPU: the primary key is (gpu_id, ts), so this seeks
    # instead of scanning every raw minute.
    conn.executemany("DELETE FROM samples WHERE gpu_id = ? AND ts < ?", [(i, cutoff) for i in ids])
    deleted = conn.total_changes - before
    nodes = [r[0] for r in conn.execute("SELECT name FROM nodes")]
    conn.executemany("DELETE FROM poll_log WHERE node = ? AND ts < ?", [(n, cutoff) for n in nodes])
    set_meta(conn, "pruned_before", cutoff)
    return deleted


def maintain(db: Database, now: float | None = None, raw_days: float = DEFAULT_RAW_DAYS) -> dict[str, Any]:
    """Roll up and prune when due; cheap (two meta reads) when nothing is.

    A rollup is due when minutes from a finished hour arrived, or minutes of
    the open hour arrived and the last rollup is older than
    :data:`PARTIAL_EVERY_S`. Pruning runs at most every :data:`PRUNE_EVERY_S`.

    Returns:
        ``{"rollup": rollup() result or None, "pruned": rows deleted or None}``.
    """
    now = time.time() if now is None else now
    dirty = get_meta(db, "rollup_dirty_from")
    out: dict[str, Any] = {"rollup": None, "pruned": None}
    rollup_due = dirty is not None and (
        int(dirty) < int(now) // HOUR * HOUR or now - float(get_meta(db, "rollup_at", 0)) >= PARTIAL_EVERY_S)
    prune_due = now - float(get_meta(db, "prune_at", 0)) >= PRUNE_EVERY_S
    if not (rollup_due or prune_due):
        return out
    with transaction(db) as conn:
        if rollup_due:
            out["rollup"] = _rollup(conn, db, now, None)
        if prune_due:
            out["pruned"] = _prune(conn, db, now, raw_days)
    return out
