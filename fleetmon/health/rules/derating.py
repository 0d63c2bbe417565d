"""Derating: measured behaviour against the nominal spec and the model's fleet.

Per GPU and per UTC day, :func:`daily_ratios` gives rows ready to store (the
GUI plots them over months):

* ``sm_clock_busy_mhz``: the median SM clock over busy, unthrottled minutes
  (software power capping allowed), and ``clock_ratio`` = that / nominal
  boost clock;
* ``power_limit_ratio``: enforced power limit / nominal TDP;
* ``memory_ratio``: reported memory / nominal memory;
* ``pcie_ratio``: bandwidth of the link negotiated while busy / nominal link;
* ``clock_vs_fleet``: ``clock_ratio`` / the median of the same model that day.

A card's nominal spec is ``history.spec_of(gpu)``: a fleet file's ``[[spec]]``
that matches it (name, subsystem id, VBIOS), else the catalog's row
(:mod:`fleetmon.specbook`); each row says which (``spec_origin``). A model with
neither gets ``known_model = False`` and no nominal ratios: it is reported as
unknown, never guessed.

:func:`check_derating` flags (kind ``derating``):

* ``clock``: busy SM clock more than ``derate_fleet_frac`` below the model's
  fleet median (or below ``derate_nominal_frac`` of nominal boost when fewer
  than ``derate_min_peers`` cards of the model report), judged minute by
  minute so a derated card is named within 10 minutes (warning);
* ``memory``: less memory than the model's fleet median (warning), or more
  than nominal (a memory-modded board, info);
* ``power_limit`` / ``pcie``: below the fleet median (info: the power-capped
  and pcie-link-degraded kinds carry the warning);
* ``clock-trend``: ``clock_ratio`` falling faster than
  ``derate_trend_per_week`` over ``derate_trend_days`` (stored daily rows
  from ``history.daily`` plus today's) (warning);
* ``unknown-model``: a model with no spec (info, one per node and model); its
  action says how to add one (a ``[[spec]]`` table in the fleet file).
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fleetmon import specs
from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory, GpuHistory
from fleetmon.health.hourly import busy_clean_clock
from fleetmon.health.rules.helpers import (
    condition_resolve_s,
    effective_thresholds,
    episodes,
    gpu_finding,
    gpu_label,
    node_finding,
)
from fleetmon.health.series import DAY_S, day_of, day_start
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text

__all__ = ["DAILY_KEYS", "check_derating", "daily_ratios", "model_usual", "weighted_median"]

DAILY_KEYS: tuple[str, ...] = (
    "uuid", "node", "model", "day", "busy_minutes", "sm_clock_busy_mhz", "clock_ratio",
    "power_limit_w", "power_limit_ratio", "memory_total_mib", "memory_ratio", "pcie_gen",
    "pcie_width", "pcie_ratio", "clock_vs_fleet", "known_model", "spec_origin",
)
"""Keys of a daily derating row (the storage table's columns; ``spec_origin``, "catalog" or "user" (a
fleet file's ``[[spec]]``, None: unknown model), is not stored)."""


def weighted_median(values: Sequence[float], weights: Sequence[float] | None = None) -> float | None:
    """Median of ``values`` with optional weights; None when empty."""
    if not values:
        return None
    if weights is None or weights.count(weights[0]) == len(weights):
        return float(statistics.median(values))
    order = sorted(range(len(values)), key=values.__getitem__)
    total = sum(weights)
    if total <= 0:
        return None
    half = total / 2
    acc = 0.0
    for i in order:
        acc += weights[i]
        if acc >= half:
            return float(values[i])
    return float(values[order[-1]])


def model_usual(values: Iterable[float | None], min_peers: int = 1) -> float | None:
    """A model's usual value of a ratio: the median over its cards' values, or None with fewer than
    ``min_peers`` cards (too few to tell) or a median that is not positive.

    What a card's memory, power limit and PCIe ratios are judged against (:func:`check_derating`: a card
    ``derate_fleet_frac`` below it is derated), and what the derating view shows memory against: no board
    reports its marketing size (a T4 reports 15360 of 16384 MiB, 94 %, every T4 alike), so the nominal
    figure alone would read as derating on every card of such a model.
    """
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    if not vals or len(vals) < min_peers:
        return None
    median = float(statistics.median(vals))
    return median if median > 0 else None


def _clock_points(gpu: GpuHistory) -> tuple[list[int], list[float], list[float]]:
    """Rows with a busy, clean SM clock: (row index, MHz, weight in minutes)."""
    cached: tuple[list[int], list[float], list[float]] | None = gpu._cache.get("derate_points")
    if cached is None:
        tl = gpu.timeline()
        clean = busy_clean_clock(tl)
        idx = [i for i, v in enumerate(clean) if v is not None]
        mhz = [float(v) for v in clean if v is not None]
        dur = tl.dur
        if dur.count(60) == len(dur):
            weight = [1.0] * len(idx)
        else:
            # Hourly rows: the busy minutes behind the clock, else an estimate.
            covered, busy_m = tl.col("sm_clock_busy_minutes"), tl.col("busy_minutes")
            n, busy = tl.col("n"), tl.col("busy_n")
            weight = []
            for i in idx:
                if dur[i] <= 60:
                    weight.append(1.0)
                elif covered[i] is not None:
                    weight.append(float(covered[i]))
                elif busy_m[i] is not None:
                    weight.append(float(busy_m[i]))
                elif n[i]:
                    weight.append(float(dur[i]) / 60.0 * min(1.0, (busy[i] or 0) / n[i]))
                else:
                    weight.append(float(dur[i]) / 60.0)
        cached = (idx, mhz, weight)
        gpu._cache["derate_points"] = cached
    return cached


def _points_median(gpu: GpuHistory, a: int, b: int) -> float | None:
    """The weighted median of the card's clock points ``a:b`` (asked by the fleet's clock and the day's row)."""
    key = ("derate_median", a, b)
    if key not in gpu._cache:
        _, mhz, weight = _clock_points(gpu)
        gpu._cache[key] = weighted_median(mhz[a:b], weight[a:b])
    found: float | None = gpu._cache[key]
    return found


def _day_bounds(ts: Sequence[Any], since: float, until: float) -> list[tuple[int, int, int]]:
    """(UTC day number, first row, end row) for each day with rows, of the days from ``since`` to ``until``.

    Rows outside those days are left out, and the loop steps from one row's day to the next row's, never
    through empty days: a row stamped in the year 33 million (a hostile Prometheus point) once made it
    walk a day at a time towards it. At most one iteration per row.
    """
    out: list[tuple[int, int, int]] = []
    first, last = math.floor(since / DAY_S), math.floor(until / DAY_S)
    lo = bisect.bisect_left(ts, first * DAY_S)
    end = bisect.bisect_left(ts, (last + 1) * DAY_S, lo)
    while lo < end:
        day = int(float(ts[lo]) // DAY_S)
        hi = bisect.bisect_left(ts, (day + 1) * DAY_S, lo + 1, end)
        out.append((day, lo, hi))
        lo = hi
    return out


def daily_ratios(history: FleetHistory, thresholds: Thresholds | None = None) -> list[dict[str, Any]]:
    """Per GPU and UTC day in the window: the derating ratios (see the module doc).

    Days with fewer than ``derate_min_busy_minutes`` busy minutes get no SM
    clock (None). ``pcie_gen``/``pcie_width`` are the link seen most often
    while busy that day. Rows are sorted by day, then node, then UUID.

    Computed once per history and thresholds (the derating rule and the
    collector's store of today's figures both ask): treat the rows as read-only.
    """
    t = effective_thresholds(history, thresholds)
    key = ("daily_ratios", t)
    cached: list[dict[str, Any]] | None = history._cache.get(key)
    if cached is None:
        cached = history._cache[key] = _daily_ratios(history, t)
    return list(cached)


def _daily_ratios(history: FleetHistory, t: Thresholds) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for gpu in history.gpus:
        tl = gpu.timeline()
        if not tl:
            continue
        spec = history.spec_of(gpu)
        idx, mhz, weight = _clock_points(gpu)
        ts = tl.ts
        limits = tl.col("power_limit_w_mean")
        gens, widths = tl.col("pcie_gen_busy_min"), tl.col("pcie_width_busy_min")
        memory = gpu.inv("memory_total_mib")
        for d, lo, hi in _day_bounds(ts, history.since, history.now):
            a, b = bisect.bisect_left(idx, lo), bisect.bisect_left(idx, hi)
            busy_minutes = sum(weight[a:b])
            sm = _points_median(gpu, a, b) if busy_minutes >= t.derate_min_busy_minutes else None
            lims = [v for v in limits[lo:hi] if v is not None]
            limit = statistics.fmean(lims) if lims else gpu.inv("power_enforced_w")
            gen, width = _busiest_link(gens[lo:hi], widths[lo:hi])
            rows.append({
                "uuid": gpu.uuid,
                "node": gpu.placement_at(min((d + 1) * DAY_S - 1, history.now)).node or gpu.node,
                "model": gpu.name,
                "day": day_of(d * DAY_S),
                "busy_minutes": int(busy_minutes),
                "sm_clock_busy_mhz": None if sm is None else round(sm, 1),
                "clock_ratio": _round(specs.clock_ratio(sm, spec)),
                "power_limit_w": None if limit is None else round(float(limit), 1),
                "power_limit_ratio": _round(specs.power_limit_ratio(limit, spec)),
                "memory_total_mib": memory,
                "memory_ratio": _round(specs.memory_ratio(memory, spec)),
                "pcie_gen": gen,
                "pcie_width": width,
                "pcie_ratio": _round(specs.pcie_ratio(gen, width, spec)),
                "clock_vs_fleet": None,
                "known_model": spec is not None,
                "spec_origin": None if spec is None else spec.origin,
            })
    medians: dict[tuple[str, str], float] = {}
    groups: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in rows:
        if r["clock_ratio"] is not None:
            groups[(r["model"], r["day"])].append(r["clock_ratio"])
    for key, values in groups.items():
        if len(values) >= t.derate_min_peers:
            medians[key] = statistics.median(values)
    for r in rows:
        m = medians.get((r["model"], r["day"]))
        if m and r["clock_ratio"] is not None:
            r["clock_vs_fleet"] = round(r["clock_ratio"] / m, 4)
    rows.sort(key=lambda r: (r["day"], r["node"], r["uuid"]))
    return rows


def _busiest_link(gens: Sequence[Any], widths: Sequence[Any]) -> tuple[Any, Any]:
    """The (gen, width) seen in most rows, both known; (None, None) when none is."""
    if None in gens or None in widths:  # idle minutes name no link
        pairs = [(g, w) for g, w in zip(gens, widths) if g is not None and w is not None]
    else:
        pairs = list(zip(gens, widths))
    if not pairs:
        return None, None
    if pairs.count(pairs[0]) == len(pairs):  # one link all day: most cards
        return pairs[0]
    return max((count, link) for link, count in Counter(pairs).items())[1]


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


def _fleet_clock(history: FleetHistory) -> dict[str, tuple[float, int]]:
    """Model -> (median of per-card busy SM clock medians, cards).

    Uses each card's last 24 hours when it was busy at least 5 minutes in
    them, else its whole window.
    """
    per_model: dict[str, list[float]] = defaultdict(list)
    recent = history.now - DAY_S
    for gpu in history.gpus:
        idx, mhz, weight = _clock_points(gpu)
        if not idx:
            continue
        ts = gpu.timeline().ts
        cut = bisect.bisect_left(idx, bisect.bisect_left(ts, recent))
        if len(idx) - cut >= 5:
            m = _points_median(gpu, cut, len(idx))
        elif sum(weight) >= 5:
            m = _points_median(gpu, 0, len(idx))
        else:
            continue
        if m is not None:
            per_model[gpu.name].append(m)
    return {model: (statistics.median(v), len(v)) for model, v in per_model.items()}


def check_derating(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Derating findings (see the module doc): clock, memory, power limit, PCIe, trend, unknown."""
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    unknown: dict[tuple[str, str], int] = Counter()
    for gpu in history.gpus:
        if gpu.name and history.spec_of(gpu) is None:
            unknown[(gpu.node, gpu.name)] += 1
    for (node, model), count in sorted(unknown.items()):
        if model == "unknown":
            # The source names no model ("unknown" is every source's placeholder: xpu-smi's dump, amd-smi
            # metric alone, a rocm-smi table, an NVML name that failed): there is no model to state a spec for.
            action: str = N_("The source does not name the model: poll or import one that does (amd-smi static, "
                             "xpu-smi discovery, rocm-smi --showproductname) to judge derating")
            summary = Text(N_("{node}: {count}x card(s) whose source names no model (derating unknown)"),
                           node=node, count=count)
        else:
            action = unknown_model_action(model)
            summary = Text(N_("{node}: {count}x {model} not in the spec catalog (derating unknown)"), node=node,
                           count=count, model=model)
        out.append(node_finding(
            history, node, "derating", "info", history.since, history.now,
            {"metric": "unknown-model", "model": model, "gpus": count}, action, summary,
            condition_resolve_s(t), discriminator=f"unknown-model:{model}", open_now=True,
        ))

    fleet = _fleet_clock(history)
    window_s = 600.0
    for gpu in history.gpus:
        spec = history.spec_of(gpu)
        ref = fleet.get(gpu.name)
        if ref and ref[1] >= t.derate_min_peers:
            limit = (1.0 - t.derate_fleet_frac) * ref[0]
            basis = "fleet"
        elif spec is not None and spec.boost_clock_mhz:
            limit = t.derate_nominal_frac * spec.boost_clock_mhz
            basis = "nominal"
        else:
            continue
        idx, mhz, weight = _clock_points(gpu)
        if not idx or min(mhz) >= limit:
            continue
        tl = gpu.timeline()
        ts, dur = tl.ts, tl.dur
        bad = [(i, 60.0 * w) for i, v, w in zip(idx, mhz, weight) if v < limit]
        eligible = [0.0] * len(tl)
        for i, w in zip(idx, weight):
            eligible[i] = 60.0 * w
        eps = episodes(ts, dur, bad, t.derate_minutes * 60.0, window_s, eligible=eligible, fraction=0.6)
        if not eps:
            continue
        low = [v for i, v, w in zip(idx, mhz, weight) if v < limit and eps[0].start <= ts[i] < eps[-1].end]
        value = statistics.median(low) if low else min(mhz)
        evidence: dict[str, Any] = {
            "metric": "clock", "value": round(value, 1), "limit_mhz": round(limit, 1), "basis": basis,
            "fleet_median": round(ref[0], 1) if ref else None, "fleet_cards": ref[1] if ref else 0,
            "vs_fleet": round(value / ref[0], 3) if ref else None,
            "nominal": spec.boost_clock_mhz if spec else None,
            "spec_origin": spec.origin if spec else None,
            "ratio": _round(specs.clock_ratio(value, spec)),
            "busy_minutes": int(sum(e.amount for e in eps) / 60), "episodes": len(eps),
            "power_limit_ratio": _round(specs.power_limit_ratio(
                _last(tl.col("power_limit_w_mean")) or gpu.inv("power_enforced_w"), spec)),
        }
        default_w = gpu.inv("power_default_w")
        limit_w = _last(tl.col("power_limit_w_mean")) or gpu.inv("power_enforced_w")
        capped = bool(default_w and limit_w is not None and limit_w < 0.99 * default_w)
        if capped:
            evidence["explained_by"] = "power-capped"
        out.append(gpu_finding(
            history, gpu, "derating", "info" if capped else "warning", eps[0].start, eps[-1], evidence,
            N_("The SM clock under load is well below its peers with no thermal or power-brake reason: "
               "check power limits and application clocks (`nvidia-smi -q -d CLOCK`), then run a "
               "GEMM burn-in; RMA if it persists"),
            _clock_summary(gpu_label(gpu), value, gpu.name, ref[0] if ref and basis == "fleet" else None,
                           spec.boost_clock_mhz if spec else None, bool(spec and spec.origin == "user")),
            condition_resolve_s(t), discriminator="clock",
            magnitude=round(1.0 - value / (ref[0] if ref else limit), 4),
        ))

    today = daily_ratios(history, t)
    latest: dict[str, dict[str, Any]] = {}
    for r in today:
        latest[r["uuid"]] = r  # sorted by day: the last one wins
    out += _static_ratios(history, t, latest)
    out += _trends(history, t, today)
    return out


def _clock_summary(label: str, value: float, model: str, fleet_median: float | None, boost: float | None,
                   user_spec: bool) -> Text:
    """The clock finding's summary: against the model's fleet median, else nominal boost, else the clock alone.

    One whole sentence per case (a translation may order each its own way), the English as before."""
    if fleet_median is not None:
        return Text(N_("{gpu}: SM clock {mhz:.0f} MHz under load, {ratio:.0%} of the {model} fleet median"),
                    gpu=label, mhz=value, ratio=value / fleet_median, model=model)
    if boost:
        if user_spec:
            return Text(N_("{gpu}: SM clock {mhz:.0f} MHz under load, {ratio:.0%} of nominal boost (user spec)"),
                        gpu=label, mhz=value, ratio=value / boost)
        return Text(N_("{gpu}: SM clock {mhz:.0f} MHz under load, {ratio:.0%} of nominal boost"),
                    gpu=label, mhz=value, ratio=value / boost)
    return Text(N_("{gpu}: SM clock {mhz:.0f} MHz under load, "), gpu=label, mhz=value)


def unknown_model_action(model: str) -> Text:
    """What the unknown-model finding tells the operator: how to state the model's spec."""
    return Text(N_("State its nominal spec in a [[spec]] table of the fleet file (docs/fleet-file.md), e.g. "
                   '[[spec]] name = "{model}", memory_gb, tdp_w, boost_clock_mhz, mem_bandwidth_gbs (or base = a '
                   "catalog model it is a variant of), to compare it with its nominal specs"), model=model)


def _last(values: Sequence[Any]) -> Any:
    for v in reversed(values):
        if v is not None:
            return v
    return None


_RATIO_ACTIONS = {
    "memory": N_("Less usable memory than other cards of this model: check for Xid 168 / retired pages and run a "
                 "memory diagnostic"),
    "power_limit": N_("The power limit is below the model's fleet: see power-capped"),
    "pcie": N_("The link is narrower than on other cards of this model: see pcie-link-degraded"),
}
_RATIO_SUMMARIES = {
    "memory": N_("{gpu}: memory at {ratio:.0%} of the {model} fleet"),
    "power_limit": N_("{gpu}: power limit at {ratio:.0%} of the {model} fleet"),
    "pcie": N_("{gpu}: pcie at {ratio:.0%} of the {model} fleet"),
}
"""The static ratios' advice and summaries (the metric's words in the English as before: "power limit")."""


def _static_ratios(history: FleetHistory, t: Thresholds, latest: Mapping[str, dict[str, Any]]) -> list[Finding]:
    out: list[Finding] = []
    by_model: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in latest.values():
        if r["known_model"]:
            by_model[r["model"]].append(r)
    for model, rows in sorted(by_model.items()):
        for metric, severity in (("memory_ratio", "warning"), ("power_limit_ratio", "info"),
                                 ("pcie_ratio", "info")):
            median = model_usual((r[metric] for r in rows), t.derate_min_peers)
            if median is None:
                continue
            for r in rows:
                v = r[metric]
                if v is None or v >= (1.0 - t.derate_fleet_frac) * median:
                    continue
                gpu = history.gpu(r["uuid"])
                if gpu is None:
                    continue
                name = metric.removesuffix("_ratio")
                out.append(gpu_finding(
                    history, gpu, "derating", severity, history.since, history.now,
                    {"metric": name, "ratio": v, "fleet_median": round(median, 4),
                     "vs_fleet": round(v / median, 3), "day": r["day"], "spec_origin": r.get("spec_origin")},
                    _RATIO_ACTIONS[name],
                    Text(_RATIO_SUMMARIES[name], gpu=gpu_label(gpu), ratio=v / median, model=model),
                    condition_resolve_s(t), discriminator=name, magnitude=round(1.0 - v / median, 4),
                    open_now=True,
                ))
        for r in rows:
            v = r["memory_ratio"]
            if v is not None and v > 1.02:
                gpu = history.gpu(r["uuid"])
                if gpu is None:
                    continue
                out.append(gpu_finding(
                    history, gpu, "derating", "info", history.since, history.now,
                    {"metric": "memory-modded", "ratio": v, "memory_total_mib": r["memory_total_mib"],
                     "spec_origin": r.get("spec_origin")},
                    N_("More memory than the model's nominal: a memory-modded board; keep it in its own "
                       "population for reliability statistics, and state its size in a [[spec]] of the fleet "
                       "file (match_subsystem_id or match_vbios, memory_gb) to judge it against it"),
                    Text(N_("{gpu}: {mib} MiB, {ratio:.0%} of nominal (modded board?)"), gpu=gpu_label(gpu),
                         mib=r["memory_total_mib"], ratio=v),
                    condition_resolve_s(t), discriminator="memory-modded", open_now=True,
                ))
    return out


def _slope_per_day(points: Sequence[tuple[float, float]]) -> float | None:
    n = len(points)
    if n < 2:
        return None
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def _trends(history: FleetHistory, t: Thresholds, today: Iterable[Mapping[str, Any]]) -> list[Finding]:
    series: dict[str, dict[str, float]] = defaultdict(dict)
    for r in list(history.daily) + list(today):
        if r.get("clock_ratio") is None or not r.get("uuid") or not r.get("day"):
            continue
        series[str(r["uuid"])][str(r["day"])] = float(r["clock_ratio"])
    out: list[Finding] = []
    horizon = history.now - t.derate_trend_days * DAY_S
    for uuid, by_day in sorted(series.items()):
        gpu = history.gpu(uuid)
        if gpu is None:
            continue
        points = []
        for day, ratio in by_day.items():
            x = float(day_start(day))
            if x >= horizon - DAY_S:
                points.append((x / DAY_S, ratio))
        points.sort()
        if len(points) < t.derate_trend_min_days:
            continue
        slope = _slope_per_day(points)
        if slope is None or slope * 7 > -t.derate_trend_per_week:
            continue
        first_day = points[0][0] * DAY_S
        out.append(gpu_finding(
            history, gpu, "derating", "warning", first_day, history.now,
            {"metric": "clock-trend", "slope_per_week": round(slope * 7, 4), "days": len(points),
             "first": round(points[0][1], 4), "last": round(points[-1][1], 4)},
            N_("The SM clock under load keeps falling: check cooling (dust, paste, fans) and power "
               "delivery; plan a burn-in test"),
            Text(N_("{gpu}: SM clock ratio falling {rate:.1%} a week over {days} days"), gpu=gpu_label(gpu),
                 rate=-slope * 7, days=len(points)), condition_resolve_s(t),
            discriminator="clock-trend", magnitude=round(-slope * 7, 4), open_now=True,
        ))
    return out

