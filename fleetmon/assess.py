"""Run the health engine over the stored history.

:mod:`fleetmon.health` judges a :class:`~fleetmon.health.fleet.FleetHistory`
and never touches a file; :mod:`storage` keeps the fleet's records and knows
nothing of health rules. This module is the glue: it loads the recorded window
through storage, runs the engine and stores what it found through storage. It
holds no SQL and names no table.

* :func:`load_history`: the recorded window
  (:func:`storage.health_input.read_window`) as a FleetHistory: per-minute
  telemetry for the recent part (``minutes_s``, at most the last 24 h),
  hourly rollups for the older part, node outages (a node that never
  answered: one outage since its first attempt), events, inventory changes
  and placements of the window; group expectations and threshold overrides
  from the fleet file, and its ``[[spec]]`` tables as the spec book the rules
  resolve cards with (:func:`fleetmon.specbook.book_of`; the catalog alone
  without a fleet file); stored daily derating rows for the week-long trends.
* :func:`evaluate_and_store`: what the collector runs every minute or so:
  evaluate the last 24 h, store the open findings (those that stopped are
  marked resolved by :func:`storage.findings.save_findings`, never deleted;
  one that comes back reopens) and today's derating figures.
* :func:`run_report` / :func:`run_preflight`: the ``fleetmon report`` and
  ``fleetmon preflight`` commands without their rendering.
"""

from __future__ import annotations

import gc
import logging
import operator
import re
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from typing import Any

from fleetmon import hostlist, ledger, signals
from fleetmon.errors import KnownError, StorageError
from fleetmon.health import engine
from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory, GpuHistory, NodeHistory, Outage, outages_from_events
from fleetmon.health.rules.derating import daily_ratios
from fleetmon.health.series import DAY_S, HOUR_S, MINUTE_S, Series, day_of, day_start
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text, reason_of
from fleetmon.specbook import book_of
from storage import findings as stored
from storage import health_input, queries
from storage.signoffs import last_signoff
from storage.rows import (DERATING_RATIOS, DeratingDay, EventRow, GpuRow, InventoryChangeRow, NewFinding, NodeRow,
                          StoredFinding)

__all__ = [
    "HEALTH_MINUTES_S",
    "HEALTH_WINDOW_S",
    "PREFLIGHT_MINUTES_S",
    "PreflightRun",
    "ReportRun",
    "evaluate_and_store",
    "inspection_window",
    "load_history",
    "parse_duration",
    "report_scope",
    "run_preflight",
    "run_report",
    "signoff_summary",
    "store_derating_history",
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

# -- loading ------------------------------------------------------------------------


def _thresholds(fleet: Any) -> Thresholds:
    overrides = getattr(fleet, "thresholds", None) or {}
    try:
        return Thresholds.from_overrides(overrides)
    except ValueError as exc:
        where = getattr(fleet, "path", None)
        if not where:
            raise KnownError(Text(N_("the fleet file: [thresholds]: {error}"), error=reason_of(exc))) from exc
        raise KnownError(Text(N_("{file}: [thresholds]: {error}"), file=str(where), error=reason_of(exc))) from exc


def _day_start(day: str) -> int:
    return day_start(day)


def _day_text(ts: float) -> str:
    return day_of(int(ts) // DAY_S * DAY_S)


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
    cache: health_input.WindowCache | None = None,
) -> FleetHistory:
    """The recorded window [since, now] as the engine's input.

    Args:
        db: an open database (read-only is enough).
        now: the evaluation time (Unix s); nothing after it is read.
        since: start of the window under review (Unix s).
        nodes: read telemetry only for these nodes (default: all). Every
            node and card is still listed, so group majorities (drivers,
            VBIOS) compare with the whole group.
        fleet: a :class:`fleetmon.fleet.Fleet` for group expectations,
            node groups and threshold overrides (None: the groups the
            collector recorded, default thresholds).
        minutes_s: how much of the recent window is read per minute (at most
            the last 24 h is useful; older parts come from hourly rollups).
            The split falls on an hour boundary.
        cache: the telemetry of the last load, to read only what is new
            (:class:`storage.health_input.WindowCache`; the collector keeps
            one). The history is valid until the cache's next read.

    Raises:
        StorageError: the database cannot be read.
        KnownError: the fleet file's thresholds are invalid.
    """
    with _gc_paused():
        return _load_history(db, now, since, nodes, fleet, minutes_s, cache)


def _load_history(db: Any, now: float, since: float, nodes: Iterable[str] | None, fleet: Any,
                  minutes_s: float, cache: health_input.WindowCache | None = None) -> FleetHistory:
    thresholds = _thresholds(fleet)
    now = float(now)
    since = min(float(since), now)
    trend_from = _day_start(_day_text(now)) - thresholds.derate_trend_days * DAY_S
    window = _read_window(db, now, since, nodes, fleet, minutes_s, trend_from, cache)

    # Nodes, with their groups from the fleet file where it names them.
    groups_by_node: dict[str, str | None] = {}
    if fleet is not None:
        groups_by_node = {spec.name: spec.group for spec in fleet.nodes}
    node_list = []
    for n in window.nodes:
        outages = outages_from_events([_event(e) for e in window.outage_events.get(n.name, ())])
        if n.last_ok is None and n.name in window.never_answered:
            # Never answered: one outage since the first attempt (no status flip to record it).
            first, failed = window.never_answered[n.name]
            outages = (Outage(first, None, n.last_error, failed),)
        node_list.append(NodeHistory.from_row(_node(n, groups_by_node), (), outages))

    gpus = []
    for g in window.gpus:
        mins = window.minutes.get(g.uuid)
        hrs = window.hourly.get(g.uuid)
        gpus.append(GpuHistory.from_row(
            _gpu(g, now),
            Series.from_columns(mins, MINUTE_S) if mins else None,
            Series.from_columns(hrs, HOUR_S) if hrs else None,
            [_plain(p) for p in window.placements.get(g.uuid, ())],
        ))

    # A node's first inventory ("enrolled") is how the fleet came to be known, not a change.
    changes = [_change(c) for c in window.inventory_changes if c.kind != "enrolled"]
    daily = [_daily(d) for d in window.derating]
    base = FleetHistory.from_rows(
        now, since, events=[_event(e) for e in window.events], inventory_changes=changes,
        groups=getattr(fleet, "groups", None) or {}, thresholds=thresholds, daily=daily,
        spec_book=book_of(fleet),
    )
    return replace(base, nodes=tuple(node_list), gpus=tuple(gpus), _cache={})


def _read_window(db: Any, now: float, since: float, nodes: Iterable[str] | None, fleet: Any, minutes_s: float,
                 trend_from: float, cache: health_input.WindowCache | None = None) -> health_input.RecordedWindow:
    """The recorded window: from the store, its telemetry from Prometheus with ``[history] prometheus``.

    With a Prometheus, nodes, events, inventory changes and derating rows
    still come from the store (it may be empty: a workstation that never
    collected); the GPUs and nodes Prometheus scraped are added, the store's
    own rows winning where both know a card or node (they carry inventory).

    Raises:
        KnownError: Prometheus unreachable or the query refused (one line).
    """
    url = getattr(fleet, "history_prometheus", None)
    # A window holding all of today, for every node, recomputes today's derating rows, and they
    # replace the stored ones: those are not read.
    today = float(_day_start(_day_text(now)))
    whole_today = since <= today and nodes is None
    window = health_input.read_window(db, now, since, nodes=nodes, minutes_s=minutes_s, derating_since=trend_from,
                                      derating_until=today if whole_today else None,
                                      cache=None if url else cache)
    if not url:
        return window
    import urllib.parse

    from fleetmon.remote import prometheus

    by_address = {urllib.parse.urlsplit(spec.url).netloc: spec.name for spec in fleet.nodes}
    remote = prometheus.recorded(prometheus.PromClient(url), now, since, minutes_s=minutes_s, by_address=by_address,
                                 nodes=nodes)
    known_gpus = {g.uuid for g in window.gpus}
    known_nodes = {n.name for n in window.nodes}
    return replace(window, gpus=window.gpus + tuple(g for g in remote.gpus if g.uuid not in known_gpus),
                   nodes=window.nodes + tuple(n for n in remote.nodes if n.name not in known_nodes),
                   minutes=remote.minutes, hourly=remote.hourly)


_FIELD_NAMES: dict[type, tuple[tuple[str, ...], Any]] = {}


def _plain(row: Any) -> dict[str, Any]:
    """A stored row (a dataclass) as a dict of its fields, values shared, not copied.

    ``dataclasses.asdict`` deep-copies every nested value: for the 8,000 cards of a
    1,000-node fleet that was a second of each health pass. The engine copies what it
    keeps (``GpuHistory.from_row`` builds its own inventory dict) and changes nothing.
    """
    known = _FIELD_NAMES.get(type(row))
    if known is None:
        names = tuple(f.name for f in fields(row))
        # attrgetter of two or more names gives a tuple, of one the bare value
        known = _FIELD_NAMES[type(row)] = (names, operator.attrgetter(*names) if len(names) > 1 else None)
    names, values = known
    if values is None:
        return {k: getattr(row, k) for k in names}
    return dict(zip(names, values(row)))


def _node(n: NodeRow, groups_by_node: Mapping[str, str | None]) -> dict[str, Any]:
    """A stored node in the words of :meth:`NodeHistory.from_row` (the fleet file's group wins)."""
    row = _plain(n)
    if n.name in groups_by_node:
        row["group"] = groups_by_node[n.name]
    return row


def _gpu(g: GpuRow, now: float) -> dict[str, Any]:
    """A stored card in the words of :meth:`GpuHistory.from_row`, its fault signals as they stood at ``now``."""
    row = _plain(g)
    row["name"] = row.pop("model")
    row["signals"] = signals.as_of(signals.stored(row.get("signals")), now)
    return row


def _event(e: EventRow) -> dict[str, Any]:
    """A stored event as the engine's ``EventRecord.from_dict`` and ``outages_from_events`` read it."""
    return _plain(e)


def _daily(d: DeratingDay) -> dict[str, Any]:
    """A stored derating day as :func:`fleetmon.health.rules.derating.daily_ratios` gives it (``day`` as text)."""
    return {**_plain(d), "uuid": d.gpu_uuid, "day": _day_text(d.day)}


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


def _change(c: InventoryChangeRow) -> dict[str, Any]:
    """An inventory change in the engine's words (gpu_added/removed/moved, plain before/after)."""
    return {**_plain(c), "kind": _CHANGE_KINDS.get(c.kind, c.kind), "old": _place_text(c.old),
            "new": _place_text(c.new)}


# -- the collector's periodic evaluation ------------------------------------------------


def evaluate_and_store(db: Any, now: float, *, fleet: Any = None, window_s: float = HEALTH_WINDOW_S,
                       minutes_s: float = HEALTH_MINUTES_S,
                       cache: health_input.WindowCache | None = None) -> dict[str, Any]:
    """Evaluate the last ``window_s`` and store the findings and today's derating figures.

    Open findings are upserted; a stored open finding the engine no longer
    reports open is marked resolved (kept, never deleted) and reopens if it
    comes back (:func:`storage.findings.save_findings`). Derating rows are
    written for the days whose whole elapsed part lies in the window (today),
    so a later, shorter look never overwrites a fuller day. With ``cache``
    (the collector keeps one), only what is new since its last pass is read.

    Returns:
        ``{"findings", "open", "new", "reopened", "resolved", "worsened"
        (keys), "changes" (those findings as stored), "derating_rows", "load_s", "evaluate_s", "store_s"}``.

    Raises:
        StorageError: reading or writing failed (nothing of the write is kept).
    """
    t0 = time.perf_counter()
    with _gc_paused():
        history = load_history(db, now, now - window_s, fleet=fleet, minutes_s=minutes_s, cache=cache)
        t1 = time.perf_counter()
        findings = ledger.judge(db, history, engine.evaluate(history))
        derating = [_derating_day(r) for r in daily_ratios(history) if _day_start(r["day"]) >= history.since]
        # Freed here, by reference counting, while the cyclic collector is still paused: the
        # history holds millions of objects, and the collector's first pass after it resumes
        # would otherwise walk all of them (1.3 s of each pass at 8,000 GPUs).
        del history
    t2 = time.perf_counter()
    open_ = [f for f in findings if f.is_open]
    changed = ledger.store(db, findings, now)
    written = stored.save_derating(db, derating) if derating else 0
    today = _day_start(_day_text(now))
    if cache is not None and any(d.day < today for d in derating):
        cache.forget_derating()  # a window longer than today rewrote earlier days the cache holds
    t3 = time.perf_counter()
    out: dict[str, Any] = dict(changed.keys())
    out["changes"] = changed  # the stored findings themselves (storage.rows.FindingChanges), for the notifier
    out.update(findings=len(findings), open=len(open_), derating_rows=written,
               load_s=t1 - t0, evaluate_s=t2 - t1, store_s=t3 - t2)
    return out


def store_derating_history(db: Any, now: float, since: float, *, fleet: Any = None) -> int:
    """Compute and store the daily derating rows of every day from ``since`` to ``now``; returns the rows written.

    The collector stores today's rows as it goes (:func:`evaluate_and_store`); history written in bulk
    (the demo's generated month) gets its long-run derating trend from this, read from the rollups.
    """
    with _gc_paused():
        history = load_history(db, now, since, fleet=fleet, minutes_s=HEALTH_MINUTES_S)
    rows = [_derating_day(r) for r in daily_ratios(history) if _day_start(r["day"]) >= since]
    return stored.save_derating(db, rows) if rows else 0


def _derating_day(r: Mapping[str, Any]) -> DeratingDay:
    """A row of :func:`fleetmon.health.rules.derating.daily_ratios` as storage keeps it (``day``: its start)."""
    return DeratingDay(gpu_uuid=str(r.get("gpu_uuid") or r.get("uuid")), day=_day_start(r["day"]),
                       node=r.get("node"), **{k: r.get(k) for k in DERATING_RATIOS})


# -- reports --------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportRun:
    """A report with what it took: ``result`` to render, timings in seconds."""

    result: engine.ReportResult
    load_s: float
    evaluate_s: float
    saved: bool
    save_error: str | None = None
    signoff: Any = None
    """With ``baseline="signoff"``: the :class:`storage.signoffs.SignoffRow` compared with (None: none yet)."""


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
        raise KnownError(Text(N_("--since {text!r}: expected a duration such as 90m, 24h, 7d or 3600s"), text=text))
    seconds = float(m.group(1)) * _UNIT_S[m.group(2).lower()]
    if seconds <= 0 or seconds > 3650 * DAY_S:
        raise KnownError(Text(N_("--since {text!r}: must be more than 0 and at most 10 years"), text=text))
    return seconds


def _known_groups(db: Any, fleet: Any) -> set[str]:
    names = {n.group for n in queries.nodes(db) if n.group}
    if fleet is not None:
        names |= set(getattr(fleet, "groups", {}) or {})
        names |= {spec.group for spec in fleet.nodes if spec.group}
    return names


def _with_acks(db: Any, result: engine.ReportResult, now: float) -> engine.ReportResult:
    """Mark the open findings an operator acknowledged or snoozed (``summary["acknowledged"]``: key → ack)."""
    from storage.acks import active_acks

    found = active_acks(db, [(f.key, f.severity) for f in result.findings if f.is_open], now)
    if not found:
        return result
    marks = {k: {"note": a.note, "by": a.by, "at": a.created_at, "until": a.until} for k, a in found.items()}
    return replace(result, summary={**result.summary, "acknowledged": marks})


def vendor_summary(db: Any, history: Any, group: str | None = None) -> dict[str, Any]:
    """The report's per-vendor keys (issue 23), added to its summary (never renaming one):

    ``gpus_by_vendor`` (vendor → cards present), ``nodes_by_vendor`` (vendor → nodes),
    ``drivers_by_vendor`` and ``runtimes_by_vendor`` (vendor → version → nodes; the runtime is CUDA's,
    ROCm's, CANN's, …), for the nodes of the report's scope. A node or card stored before issue 23 (or
    known only to a Prometheus) is NVIDIA's.
    """
    from fleetmon.fields import DEFAULT_VENDOR
    from fleetmon.vocab import GpuState
    from storage.queries import gpu_vendors, nodes as node_rows

    stored = {n.name: n for n in node_rows(db)}
    cards = gpu_vendors(db)
    names = {n.name for n in history.nodes if group is None or n.group == group}

    def node_vendor(name: str) -> str:
        n = stored.get(name)
        return (n.vendor if n is not None else None) or DEFAULT_VENDOR

    gpus: Counter[str] = Counter()
    for g in history.gpus:
        if g.node in names and g.state != GpuState.MISSING:
            gpus[cards.get(g.uuid) or node_vendor(g.node)] += 1
    node_count: Counter[str] = Counter()
    drivers: dict[str, Counter[str]] = {}
    runtimes: dict[str, Counter[str]] = {}
    for name in names:
        vendor = node_vendor(name)
        node_count[vendor] += 1
        n = stored.get(name)
        driver = (n.driver_version if n is not None else None) or "unknown"
        drivers.setdefault(vendor, Counter())[driver] += 1
        runtime = (n.runtime_version or (n.cuda_driver_version if vendor == DEFAULT_VENDOR else None)) \
            if n is not None else None
        if runtime:
            runtimes.setdefault(vendor, Counter())[runtime] += 1

    def ordered(c: Mapping[str, Any]) -> dict[str, Any]:
        from fleetmon.vendors import vendor_order

        return {k: c[k] for k in sorted(c, key=vendor_order)}

    def by_count(c: Counter[str]) -> dict[str, int]:
        return dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))

    return {"gpus_by_vendor": ordered(gpus), "nodes_by_vendor": ordered(node_count),
            "drivers_by_vendor": ordered({v: by_count(c) for v, c in drivers.items()}),
            "runtimes_by_vendor": ordered({v: by_count(c) for v, c in runtimes.items()})}


def run_report(db: Any, now: float, since_s: float, group: str | None, fleet: Any = None, *,
               save: bool = True, baseline: str = "report") -> ReportRun:
    """The daily inspection over [now - since_s, now], compared with the previous report.

    "What changed" compares with the open findings stored with the previous
    report of the same scope (the whole fleet, or the same ``group``); this
    report's open findings are then stored for the next one (unless
    ``save`` is False, e.g. on a read-only database). A failed save does not
    fail the report: ``ReportRun.save_error`` says why.

    With ``baseline="signoff"`` it compares with the newest sign-off of the
    scope instead (:mod:`storage.signoffs`; the window's GUI inspection), and
    lists only the inventory changes since that sign-off.

    Raises:
        KnownError: unknown group, invalid thresholds.
        StorageError: the database cannot be read.
    """
    if group is not None and group not in _known_groups(db, fleet):
        known = sorted(_known_groups(db, fleet))
        raise KnownError(Text(N_("unknown group {group!r}; known groups: {known}"), group=group,
                              known=", ".join(known) if known else Text(N_("(none)"))))
    t0 = time.perf_counter()
    with _gc_paused():
        history = load_history(db, now, now - since_s, fleet=fleet, minutes_s=min(since_s, REPORT_MINUTES_S))
        t1 = time.perf_counter()
        findings = ledger.judge(db, history, engine.evaluate(history))
    kind = report_scope(group)
    if baseline not in ("report", "signoff"):
        raise ValueError(Text(N_("baseline {baseline!r}: expected 'report' or 'signoff'"), baseline=baseline))
    signoff = last_signoff(db, kind, before=now + 1e-6) if baseline == "signoff" else None
    previous = stored.last_report(db, kind, before=now + 1e-6) if baseline == "report" else signoff
    previous_open: list[Finding] = []
    if previous and isinstance(previous.summary, Mapping):
        for d in previous.summary.get("open", []):
            try:
                previous_open.append(Finding.from_dict(d))
            except (ValueError, TypeError):
                continue  # a kind from a newer build: nothing to compare with
    result = engine.report(history, previous_open, group=group, findings=findings,
                           has_previous=previous is not None)
    result = _with_acks(db, result, now)
    result = replace(result, summary={**result.summary, **vendor_summary(db, history, group)})
    from fleetmon.slurm.actions import slurm_summary

    slurm = slurm_summary(db, fleet, now - since_s, result.verdicts, now=now)
    if slurm is not None:  # only with a [slurm] table or a drain on record: other reports stay as they were
        result = replace(result, summary={**result.summary, "slurm": slurm})
    if signoff is not None:
        changes = [c for c in result.summary.get("inventory_changes", []) if float(c.get("ts") or 0) >= signoff.ts]
        result = replace(result, summary={**result.summary, "inventory_changes": changes})
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
    return ReportRun(result, t1 - t0, t2 - t1, save and error is None, error, signoff)


def report_scope(group: str | None) -> str:
    """The scope a report (and a sign-off) belongs to: "report", or "report:<group>" for one group."""
    return REPORT_KIND if group is None else f"{REPORT_KIND}:{group}"


INSPECTION_MAX_S = 30 * DAY_S
"""The longest window an inspection reviews when the last sign-off is older (a month of hourly rollups)."""


def inspection_window(db: Any, now: float, group: str | None = None, *, least_s: float = DAY_S) -> float:
    """The window of the GUI's daily inspection: back to the last sign-off, at least ``least_s`` (24 h).

    An inspection a week after the last sign-off must see the week (a card
    that moved on Tuesday); one an hour after it still judges a full day.
    Capped at :data:`INSPECTION_MAX_S`.
    """
    signoff = last_signoff(db, report_scope(group), before=now + 1e-6)
    if signoff is None:
        return least_s
    return min(max(least_s, now - signoff.ts), max(least_s, INSPECTION_MAX_S))


def signoff_summary(result: engine.ReportResult, checked: Iterable[str] = ()) -> dict[str, Any]:
    """What a sign-off keeps of the inspection it closes (the next one diffs against ``open``)."""
    return {"since": result.since, "now": result.now, "group": result.group, "status": result.status,
            "verdicts": dict(result.verdicts), "checked": sorted(set(checked), key=hostlist.sort_key),
            "open": [f.to_dict() for f in result.findings if f.is_open]}


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
        raise KnownError(Text(N_("--days {days:g}: must be more than 0 and at most 3650"), days=days))
    if isinstance(nodes_expr, str):
        try:
            names = hostlist.expand(nodes_expr)
        except ValueError as exc:
            raise KnownError(Text(N_("--nodes: {error}"), error=reason_of(exc))) from exc
    else:
        names = list(nodes_expr)
    names = list(dict.fromkeys(names))
    if not names:
        raise KnownError(Text(N_("--nodes names no node")))
    since = now - days * DAY_S
    t0 = time.perf_counter()
    with _gc_paused():
        history = load_history(db, now, since, nodes=names, fleet=fleet, minutes_s=PREFLIGHT_MINUTES_S)
        t1 = time.perf_counter()
        merged = ledger.judge(db, history, engine.evaluate(history))
    result = engine.preflight(history, names, days=days, findings=merged)
    result = replace(result, vendors=_node_vendors(db, names))
    t2 = time.perf_counter()
    return PreflightRun(result, t1 - t0, t2 - t1)


def _node_vendors(db: Any, names: Iterable[str]) -> dict[str, str]:
    """node → vendor for the pre-run review (a node not stored, or stored before issue 23: NVIDIA's)."""
    from fleetmon.fields import DEFAULT_VENDOR
    from storage.queries import nodes as node_rows

    stored = {n.name: n.vendor for n in node_rows(db)}
    return {name: stored.get(name) or DEFAULT_VENDOR for name in names}


def replay_ledger(db: Any, since: float, now: float, *, step_s: float = 6 * HOUR_S, fleet: Any = None,
                  progress: Any = None) -> int:
    """Judge stored history pass by pass from ``since`` to ``now``, as a collector would have; returns the passes.

    History written in bulk (the demo's generated month, an import) gets the
    findings ledger a collector running through it would have kept: each pass
    (every ``step_s``, and one at ``now``) judges its 24 h window against the
    ledger the earlier passes left (:func:`evaluate_and_store`), so point
    events stay open, recurring conditions carry the days they recurred on,
    and "since" is the true onset.
    """
    marks: list[float] = []
    t = since + step_s
    while t < now:
        marks.append(t)
        t += step_s
    marks.append(now)
    for i, at in enumerate(marks):
        evaluate_and_store(db, at, fleet=fleet, minutes_s=HEALTH_MINUTES_S if at == now else 0.0)
        if progress is not None:
            progress(i + 1, len(marks))
    return len(marks)
