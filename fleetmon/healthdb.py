"""The glue between the database and the pure health engine.

:mod:`fleetmon.health` judges a :class:`~fleetmon.health.history.FleetHistory`
and never touches a file; :mod:`storage` keeps the fleet's records and knows
nothing of health rules. This module reads the one into the other, runs the
engine and stores what it found:

* :func:`load_history`: the recorded window as a FleetHistory. Per-minute rows
  for the recent part (``minutes_s``, at most the last 24 h) and hourly
  rollups (with their ``hourly_health`` companions) for the older part, read
  column by column; node outages from the collector's ``node_unreachable`` /
  ``node_back`` events (one per status flip, cheap over any window) rather
  than every poll (a node that never answered: one outage since its first
  attempt); events, inventory changes and placements of the window;
  group expectations and threshold overrides from the fleet file; stored
  daily derating rows for the week-long trends.
* :func:`evaluate_and_store`: what the collector runs every minute or so:
  evaluate the last 24 h, store the open findings (those that stopped are
  marked resolved by :func:`storage.history.save_findings`, never deleted;
  one that comes back reopens) and today's derating figures.
* :func:`run_report` / :func:`run_preflight`: the ``fleetmon report`` and
  ``fleetmon preflight`` commands without their rendering.

Telemetry comes through :func:`storage.columns.read_columns`: the engine scans
a few keys over many rows, and reading only those keys, decoded in SQL, with
rarely changing integers packed per row, takes 2.4 s for 24 h of 512 GPUs,
half the time of a plain ``SELECT *`` of the same rows (one dict per row, as
``storage.history.load_minutes`` gives, took 10 s). The column specs below say
which keys the rules use; all SQL stays in ``storage/``.
"""

from __future__ import annotations

import datetime as _dt
import gc
import logging
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from fleetmon import hostlist
from fleetmon.errors import KnownError, StorageError
from fleetmon.fields import HW_THROTTLE_REASONS
from fleetmon.health import engine
from fleetmon.health.derating import daily_ratios
from fleetmon.health.findings import Finding
from fleetmon.health.history import (
    DAY_S,
    HOUR_S,
    MINUTE_S,
    FleetHistory,
    GpuHistory,
    NodeHistory,
    Outage,
    Series,
    outages_from_events,
)
from fleetmon.health.thresholds import Thresholds
from storage import history as stored
from storage import queries
from storage import columns
from storage.db import get_meta, rows
from storage.schema import HEALTH_HOURLY_COLUMN_NAMES, gauge_scale

__all__ = [
    "HEALTH_MINUTES_S",
    "HEALTH_WINDOW_S",
    "PREFLIGHT_MINUTES_S",
    "PreflightRun",
    "ReportRun",
    "evaluate_and_store",
    "load_history",
    "parse_duration",
    "run_preflight",
    "run_report",
]

log = logging.getLogger("fleetmon.health")

HEALTH_WINDOW_S = DAY_S
"""Window of the collector's periodic evaluation: event findings (Xid, new
uncorrectable ECC) stay open for ``event_resolve_hours`` (24 h) after their
last occurrence, so the window must reach that far back."""
HEALTH_MINUTES_S = 2 * HOUR_S
"""Of that window, how much is read per minute (older hours come from the
hourly rollups). Conditions are judged on minutes within 10 minutes of onset."""
REPORT_MINUTES_S = DAY_S
"""A report reads the last 24 h per minute (the daily inspection at full detail)."""
PREFLIGHT_MINUTES_S = 0.0
"""A preflight reads the current hour per minute and hourly rollups before it;
the findings the collector stored over the window (judged at minute detail,
at most a minute old) are merged in, so a short fault is not lost to the
coarser rollups."""

REPORT_KIND = "report"

# -- what the engine reads ----------------------------------------------------------

_GAUGES: tuple[tuple[str, str, str], ...] = (
    # (key, gauge, statistic)
    ("power_limit_w_mean", "power_limit_w", "mean"),
    ("temp_c_mean", "temp_c", "mean"),
    ("temp_c_max", "temp_c", "max"),
    ("power_w_mean", "power_w", "mean"),
    ("power_w_min", "power_w", "min"),
    ("power_w_max", "power_w", "max"),
    ("util_gpu_pct_min", "util_gpu_pct", "min"),
    ("sm_clock_mhz_mean", "sm_clock_mhz", "mean"),
    ("fan_pct_max", "fan_pct", "max"),
)
_COUNTERS = ("ecc_corr_vol", "ecc_corr_agg", "ecc_unc_vol", "ecc_unc_agg", "retired_sbe", "retired_dbe",
             "remap_corr", "remap_unc", "pcie_replay")
_STATES = ("retired_pending", "remap_pending", "remap_failure")
_LINKS = ("pcie_gen_busy_min", "pcie_width_busy_min")


_HW_THROTTLES = tuple("thr_" + r for r in HW_THROTTLE_REASONS)
"""Throttle counts that are zero on a healthy GPU (SwPowerCap is how a busy GPU normally runs)."""
_STICKY = ("n", "lost") + _COUNTERS + _STATES + _LINKS + _HW_THROTTLES
_POWER_LIMIT = (("power_limit_w_mean", "power_limit_w_mean", gauge_scale("power_limit_w")),)

# (The mean temperature is judged on hourly rows only: a minute is judged by its maximum.)
_MINUTES = columns.ColumnSpec(
    table="samples",
    plain=(("ts", "ts"), ("status", "status"), ("busy_n", "busy_n"), ("thr_sw_power_cap", "thr_sw_power_cap"))
    + tuple((key, columns.gauge_sql(g, st)) for key, g, st in _GAUGES if key not in ("power_limit_w_mean", "temp_c_mean")),
    packs=(columns.int_columns(_STICKY) + _POWER_LIMIT,),
)

# Hourly rows are few and their sums change every hour: only what a healthy GPU keeps
# constant is packed. The minimum power and utilization are read per minute only.
_HOURLY = columns.ColumnSpec(
    table="hourly",
    plain=(("ts", "ts"), ("busy_n", "busy_n"), ("thr_sw_power_cap", "thr_sw_power_cap"))
    + tuple((key, columns.gauge_sql(g, st)) for key, g, st in _GAUGES
            if key not in ("power_limit_w_mean", "power_w_min", "util_gpu_pct_min")),
    packs=(
        columns.int_columns(_STICKY) + _POWER_LIMIT,
        columns.int_columns(tuple(f"{c}_delta" for c in _COUNTERS)),
    ),
)

_HOURLY_HEALTH = columns.ColumnSpec(table="hourly_health", plain=(("ts", "ts"),) + tuple(
    (k, k) for k in HEALTH_HOURLY_COLUMN_NAMES))


def _join_health(hourly: dict[str, dict[str, Sequence[Any]]], health: Mapping[str, Mapping[str, Sequence[Any]]]
                 ) -> None:
    """Add the ``hourly_health`` keys to each GPU's hourly columns (None for hours without a row)."""
    for uuid, cols in hourly.items():
        cols["lost_minutes"] = cols["lost"]
        extra = health.get(uuid)
        ts = cols["ts"]
        if extra is not None and list(extra["ts"]) == list(ts):
            for k in HEALTH_HOURLY_COLUMN_NAMES:
                cols[k] = extra[k]
            continue
        at = {t: i for i, t in enumerate(extra["ts"])} if extra is not None else {}
        for k in HEALTH_HOURLY_COLUMN_NAMES:
            src = extra[k] if extra is not None else ()
            cols[k] = [src[at[t]] if t in at else None for t in ts]


# -- loading ------------------------------------------------------------------------


def _thresholds(fleet: Any) -> Thresholds:
    overrides = getattr(fleet, "thresholds", None) or {}
    try:
        return Thresholds.from_overrides(overrides)
    except ValueError as exc:
        where = getattr(fleet, "path", None) or "the fleet file"
        raise KnownError(f"{where}: [thresholds]: {exc}") from exc


def _day_start(day: str) -> int:
    return int(_dt.datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=_dt.timezone.utc).timestamp())


def _day_text(ts: float) -> str:
    return _dt.datetime.fromtimestamp(int(ts) // DAY_S * DAY_S, _dt.timezone.utc).strftime("%Y-%m-%d")


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while millions of small, acyclic objects are built.

    Reading 24 h of a 512-GPU fleet creates about ten million values; the
    collector would rescan them again and again (a third of the load time).
    Nothing built here holds a cycle, so reference counting frees it all.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_history(
    db: Any,
    now: float,
    since: float,
    *,
    nodes: Iterable[str] | None = None,
    fleet: Any = None,
    minutes_s: float = DAY_S,
) -> FleetHistory:
    """The recorded window [since, now] as the engine's input.

    Args:
        db: an open database (read-only is enough).
        now: the evaluation time (Unix s); nothing after it is read.
        since: start of the window under review (Unix s).
        nodes: read telemetry only for these nodes (default: all). Every
            node and card is still listed, so group majorities (drivers,
            VBIOS) compare with the whole group.
        fleet: a :class:`fleetmon.fleetfile.Fleet` for group expectations,
            node groups and threshold overrides (None: the groups the
            collector recorded, default thresholds).
        minutes_s: how much of the recent window is read per minute (at most
            the last 24 h is useful; older parts come from hourly rollups).
            The split falls on an hour boundary.

    Raises:
        StorageError: the database cannot be read.
        KnownError: the fleet file's thresholds are invalid.
    """
    with _gc_paused():
        return _load_history(db, now, since, nodes, fleet, minutes_s)


def _load_history(db: Any, now: float, since: float, nodes: Iterable[str] | None, fleet: Any,
                  minutes_s: float) -> FleetHistory:
    thresholds = _thresholds(fleet)
    now = float(now)
    since = min(float(since), now)
    # Minutes from an hour boundary (hourly rows cover whole hours), and at the
    # latest from the oldest minute not rolled up yet: an hour whose rollup is
    # missing or stale is read per minute.
    minute_start = max(since, now - max(0.0, minutes_s))
    dirty = get_meta(db, "rollup_dirty_from")
    if dirty is not None:
        minute_start = min(minute_start, float(dirty))
    minute_start = float(int(minute_start) // HOUR_S * HOUR_S) if minute_start > since else since
    hour_start = int(since) // HOUR_S * HOUR_S

    # Nodes, with their groups from the fleet file where it names them.
    node_rows = stored.load_nodes(db)
    groups_by_node: dict[str, str | None] = {}
    if fleet is not None:
        groups_by_node = {spec.name: spec.group for spec in fleet.nodes}
    for r in node_rows:
        if r["name"] in groups_by_node:
            r["grp"] = groups_by_node[r["name"]]
    scope = set(nodes) if nodes is not None else None

    # Cards seen in the window (a card gone before it started is history, not a finding).
    gpu_rows = [g for g in stored.load_gpus(db) if g.get("last_seen") is None or g["last_seen"] >= since]
    id_of = stored.gpu_ids(db)
    wanted = {id_of[g["uuid"]]: g["uuid"] for g in gpu_rows   # gpu id -> uuid, telemetry read for these
              if g["uuid"] in id_of and (scope is None or g.get("node") in scope)}
    wanted_uuids = set(wanted.values())
    minutes = columns.read_columns(db, _MINUTES, wanted, minute_start, now) if minute_start <= now else {}
    hourly: dict[str, dict[str, Sequence[Any]]] = {}
    if minute_start > since:
        hourly = columns.read_columns(db, _HOURLY, wanted, hour_start, minute_start - 1)
        _join_health(hourly, columns.read_columns(db, _HOURLY_HEALTH, wanted, hour_start, minute_start - 1))

    placements: dict[str, list[dict[str, Any]]] = {}
    for p in stored.load_placements(db):
        if p["uuid"] in wanted_uuids:
            placements.setdefault(p["uuid"], []).append(p)

    # Reachability: outages from the status-flip events (all of them: an outage
    # that began before the window is still an outage), first attempts for
    # nodes that never answered.
    flips: dict[str, list[dict[str, Any]]] = {}
    for e in queries.events(db, until=now + 1, kinds=("node_unreachable", "node_back")):
        flips.setdefault(e["node"], []).append(e)
    never = stored.never_answered(db)
    node_list = []
    for r in node_rows:
        outages = outages_from_events(flips.get(r["name"], ()))
        if r.get("last_ok") is None and r["name"] in never:
            # Never answered: one outage since the first attempt (no status flip to record it).
            first, failed = never[r["name"]]
            outages = (Outage(first, None, r.get("last_error"), failed),)
        node_list.append(NodeHistory.from_row(r, (), outages))

    gpus = []
    for g in gpu_rows:
        uuid = g["uuid"]
        mins = minutes.get(uuid)
        hrs = hourly.get(uuid)
        gpus.append(GpuHistory.from_row(
            g,
            Series.from_columns(mins, MINUTE_S) if mins else None,
            Series.from_columns(hrs, HOUR_S) if hrs else None,
            placements.get(uuid, ()),
        ))

    events = [e for e in queries.events(db, since=since, until=now + 1)
              if e["kind"] not in ("node_unreachable", "node_back")]
    # A node's first inventory ("enrolled") is how the fleet came to be known, not a change.
    changes = [_change(c) for c in queries.inventory_changes(db, since=since, until=now + 1)
               if c.get("kind") != "enrolled"]
    trend_from = _day_start(_day_text(now)) - thresholds.derate_trend_days * DAY_S
    daily = [{**r, "uuid": r["gpu_uuid"], "day": _day_text(r["day"])}
             for r in stored.derating_history(db, None, trend_from, now + 1)]
    base = FleetHistory.from_rows(
        now, since, events=events, inventory_changes=changes,
        groups=getattr(fleet, "groups", None) or {}, thresholds=thresholds, daily=daily,
    )
    return replace(base, nodes=tuple(node_list), gpus=tuple(gpus), _cache={})


_CHANGE_KINDS = {"appeared": "gpu_added", "disappeared": "gpu_removed", "moved": "gpu_moved"}


def _place_text(value: Any) -> Any:
    """A stored place ``{node, index, pci_bus_id}`` as ``node:pci (gpuN)``; other dicts as ``k=v``."""
    if not isinstance(value, Mapping):
        return value
    if "node" in value:
        index = value.get("index")
        return f"{value.get('node')}:{value.get('pci_bus_id') or '?'}" + (f" (gpu{index})" if index is not None
                                                                           else "")
    return ", ".join(f"{k}={v}" for k, v in value.items())


def _change(row: Mapping[str, Any]) -> dict[str, Any]:
    """An inventory change in the engine's words (gpu_added/removed/moved, plain before/after)."""
    return {**row, "kind": _CHANGE_KINDS.get(str(row.get("kind")), row.get("kind")),
            "old": _place_text(row.get("old")), "new": _place_text(row.get("new"))}


# -- the collector's periodic evaluation ------------------------------------------------


def _finding_row(f: Finding) -> dict[str, Any]:
    """A finding as storage.history.save_findings takes it (the summary rides in the evidence)."""
    return {"key": f.key, "kind": f.kind, "severity": f.severity, "node": f.node, "gpu_uuid": f.gpu_uuid,
            "first_seen": f.first_seen, "last_seen": f.last_seen,
            "evidence": {"summary": f.summary, **f.evidence}, "action": f.action}


def _stored_finding(r: Mapping[str, Any], now: float, stale_s: float,
                    index_of: Mapping[str, int | None]) -> Finding | None:
    """A Finding from a stored row (None for a kind or severity this build does not know).

    A row still open whose last refresh is older than ``stale_s`` counts as
    resolved: no collector has judged it since.
    """
    evidence = dict(r.get("evidence") or {})
    summary = str(evidence.pop("summary", "") or f"{r.get('node')}: {r.get('kind')}")
    # updated_at: when the collector last judged it open (last_seen is the latest evidence).
    refreshed = r.get("updated_at") if r.get("updated_at") is not None else r["last_seen"]
    resolved = r.get("resolved_at") is not None or float(refreshed) < now - stale_s
    try:
        return Finding(
            kind=str(r["kind"]), severity=str(r["severity"]), node=str(r.get("node") or ""),
            gpu_uuid=r.get("gpu_uuid"), first_seen=float(r["first_seen"]), last_seen=float(r["last_seen"]),
            evidence=evidence, action=str(r.get("action") or ""), summary=summary, key=str(r["key"]),
            state="resolved" if resolved else "open",
            gpu_index=index_of.get(r["gpu_uuid"]) if r.get("gpu_uuid") else None,
        )
    except (ValueError, TypeError):
        return None


def evaluate_and_store(db: Any, now: float, *, fleet: Any = None, window_s: float = HEALTH_WINDOW_S,
                       minutes_s: float = HEALTH_MINUTES_S) -> dict[str, Any]:
    """Evaluate the last ``window_s`` and store the findings and today's derating figures.

    Open findings are upserted; a stored open finding the engine no longer
    reports open is marked resolved (kept, never deleted) and reopens if it
    comes back (:func:`storage.history.save_findings`). Derating rows are
    written for the days whose whole elapsed part lies in the window (today),
    so a later, shorter look never overwrites a fuller day.

    Returns:
        ``{"findings", "open", "new", "reopened", "resolved", "worsened"
        (keys), "derating_rows", "load_s", "evaluate_s", "store_s"}``.

    Raises:
        StorageError: reading or writing failed (nothing of the write is kept).
    """
    t0 = time.perf_counter()
    with _gc_paused():
        history = load_history(db, now, now - window_s, fleet=fleet, minutes_s=minutes_s)
        t1 = time.perf_counter()
        findings = engine.evaluate(history)
    t2 = time.perf_counter()
    open_ = [f for f in findings if f.is_open]
    changed = stored.save_findings(db, [_finding_row(f) for f in open_], now)
    derating = [
        {**r, "day": _day_start(r["day"])} for r in daily_ratios(history)
        if _day_start(r["day"]) >= history.since
    ]
    written = stored.save_derating(db, derating) if derating else 0
    t3 = time.perf_counter()
    out: dict[str, Any] = {what: [r["key"] for r in found] for what, found in changed.items()}
    out.update(findings=len(findings), open=len(open_), derating_rows=written,
               load_s=t1 - t0, evaluate_s=t2 - t1, store_s=t3 - t2)
    return out


# -- reports --------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportRun:
    """A report with what it took: ``result`` to render, timings in seconds."""

    result: engine.ReportResult
    load_s: float
    evaluate_s: float
    saved: bool
    save_error: str | None = None


@dataclass(frozen=True)
class PreflightRun:
    """A preflight with what it took."""

    result: engine.PreflightResult
    load_s: float
    evaluate_s: float


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": HOUR_S, "d": DAY_S, "w": 7 * DAY_S}


def parse_duration(text: str) -> float:
    """Seconds from ``90m``, ``24h``, ``7d``, ``2w``, ``3600s`` or ``3600``.

    Raises:
        KnownError: anything else, zero, or more than 10 years.
    """
    m = _DURATION.match(str(text))
    if not m:
        raise KnownError(f"--since {text!r}: expected a duration such as 90m, 24h, 7d or 3600s")
    seconds = float(m.group(1)) * _UNIT_S[m.group(2).lower()]
    if seconds <= 0 or seconds > 3650 * DAY_S:
        raise KnownError(f"--since {text!r}: must be more than 0 and at most 10 years")
    return seconds


def _known_groups(db: Any, fleet: Any) -> set[str]:
    names = {r["grp"] for r in stored.load_nodes(db) if r.get("grp")}
    if fleet is not None:
        names |= set(getattr(fleet, "groups", {}) or {})
        names |= {spec.group for spec in fleet.nodes if spec.group}
    return names


def run_report(db: Any, now: float, since_s: float, group: str | None, fleet: Any = None, *,
               save: bool = True) -> ReportRun:
    """The daily inspection over [now - since_s, now], compared with the previous report.

    "What changed" compares with the open findings stored with the previous
    report of the same scope (the whole fleet, or the same ``group``); this
    report's open findings are then stored for the next one (unless
    ``save`` is False, e.g. on a read-only database). A failed save does not
    fail the report: ``ReportRun.save_error`` says why.

    Raises:
        KnownError: unknown group, invalid thresholds.
        StorageError: the database cannot be read.
    """
    if group is not None and group not in _known_groups(db, fleet):
        known = sorted(_known_groups(db, fleet))
        raise KnownError(f"unknown group {group!r}; known groups: {', '.join(known) if known else '(none)'}")
    t0 = time.perf_counter()
    with _gc_paused():
        history = load_history(db, now, now - since_s, fleet=fleet, minutes_s=min(since_s, REPORT_MINUTES_S))
        t1 = time.perf_counter()
        findings = engine.evaluate(history)
    kind = REPORT_KIND if group is None else f"{REPORT_KIND}:{group}"
    previous = stored.last_report(db, kind, before=now + 1e-6)
    previous_open: list[Finding] = []
    if previous and isinstance(previous.get("summary"), Mapping):
        for d in previous["summary"].get("open", []):
            try:
                previous_open.append(Finding.from_dict(d))
            except (ValueError, TypeError):
                continue  # a kind from a newer build: nothing to compare with
    result = engine.report(history, previous_open, group=group, findings=findings,
                           has_previous=previous is not None)
    t2 = time.perf_counter()
    error = None
    if save:
        try:
            stored.save_report(db, kind, now, {
                "since": result.since, "group": group, "status": result.status,
                "verdicts": dict(result.verdicts),
                "open": [f.to_dict() for f in result.findings if f.is_open],
            })
        except StorageError as exc:  # the report itself stands; only the next comparison suffers
            error = str(exc)
    return ReportRun(result, t1 - t0, t2 - t1, save and error is None, error)


def run_preflight(db: Any, now: float, nodes_expr: str | Sequence[str], days: float, fleet: Any = None
                  ) -> PreflightRun:
    """Go / no-go for the nodes of ``nodes_expr`` (a Slurm hostlist) over the last ``days``.

    The engine reviews the window (the current hour per minute, hourly rollups
    before); the findings the collector stored over the window are merged in
    (the fresh evaluation wins for a key it reports), a stored finding that
    is no longer fresh counting as resolved.

    Raises:
        KnownError: a malformed hostlist, no nodes, days out of range.
        StorageError: the database cannot be read.
    """
    if not 0 < days <= 3650:
        raise KnownError(f"--days {days:g}: must be more than 0 and at most 3650")
    if isinstance(nodes_expr, str):
        try:
            names = hostlist.expand(nodes_expr)
        except ValueError as exc:
            raise KnownError(f"--nodes: {exc}") from exc
    else:
        names = list(nodes_expr)
    names = list(dict.fromkeys(names))
    if not names:
        raise KnownError("--nodes names no node")
    since = now - days * DAY_S
    t0 = time.perf_counter()
    with _gc_paused():
        history = load_history(db, now, since, nodes=names, fleet=fleet, minutes_s=PREFLIGHT_MINUTES_S)
        t1 = time.perf_counter()
        fresh = engine.evaluate(history)
    wanted = set(names)
    keys = {f.key for f in fresh}
    stale_s = history.thresholds.resolve_after_minutes * 60.0 if isinstance(history.thresholds, Thresholds) \
        else 1800.0
    index_of = {g.uuid: g.index for g in history.gpus}
    merged = list(fresh)
    for r in stored.findings_between(db, since, now + 1):
        if r["key"] in keys or r.get("node") not in wanted:
            continue
        f = _stored_finding(r, now, stale_s, index_of)
        if f is not None:
            merged.append(f)
    result = engine.preflight(history, names, days=days, findings=engine.sort_findings(merged))
    t2 = time.perf_counter()
    return PreflightRun(result, t1 - t0, t2 - t1)
