"""Health rules: pure functions over a fleet's recorded history.

Each rule is ``check_<condition>(history, thresholds) -> list[Finding]``. A
rule reads only its arguments: no database, no network, no clock
(``history.now`` is the time). Rules scan each GPU's
:meth:`~fleetmon.health.history.GpuHistory.timeline` (hourly rows for the
older part of the window, minute rows for the recent part) and skip a GPU
after a cheap test whenever nothing could match, so a healthy fleet costs
little.

Common behaviour:

* A reading that is ``None`` (unsupported, failed or missing) never raises
  an alarm; only :func:`check_power_unreadable` looks at failed readings,
  and never at unsupported ones.
* Persistent conditions need evidence in a sliding window (for example 3 of
  10 minutes) and are named within 10 minutes of their onset; the finding's
  ``first_seen`` is the first bad row of the window that triggered it.
* A condition finding is open while its evidence is younger than
  ``resolve_after_minutes``; event findings (Xid, new uncorrectable ECC,
  inventory changes) stay open ``event_resolve_hours``. Older ones come back
  with ``state="resolved"``, they are not dropped.
* PCIe link rules look at busy minutes only (links power down at idle).
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fleetmon import xid as xidcat
from fleetmon.fields import HW_THROTTLE_REASONS
from fleetmon.health.findings import Finding, finding_key
from fleetmon.health.history import DAY_S, FleetHistory, GpuHistory, NodeHistory, Series
from fleetmon.health.thresholds import Thresholds
from fleetmon.records import Status
from fleetmon.vocab import GpuState

__all__ = [
    "RULES",
    "Episode",
    "Rule",
    "check_derating",
    "check_driver_versions",
    "check_ecc_correctable",
    "check_ecc_uncorrectable",
    "check_fan_stopped",
    "check_gpu_lost",
    "check_gpu_missing",
    "check_inventory_changes",
    "check_node_flapping",
    "check_node_unreachable",
    "check_pcie_link",
    "check_pcie_replay",
    "check_power_brake",
    "check_power_capped",
    "check_power_instability",
    "check_power_unreadable",
    "check_retired_pages",
    "check_row_remap",
    "check_temperature",
    "check_thermal_throttle",
    "check_vbios",
    "check_xid",
    "episodes",
]

Rule = Callable[[FleetHistory, Thresholds], list[Finding]]

WINDOW_S = 600
"""The sliding window of the persistence rules (10 minutes, the timeliness bound)."""

RESET_EVENTS = frozenset({"energy_reset", "gpu_reset", "driver_reload", "reboot", "agent_start"})
"""Event kinds after which a GPU starts afresh (for Xid recurrence, rule X3)."""

PSU_XIDS = frozenset({62, 79})
"""Xids that, on several GPUs of one node in one burst, point at the PSU (rule W3)."""

GSP_XIDS = frozenset({119, 120})
HARDWARE_CATEGORIES = frozenset({"hardware", "memory", "pcie", "nvlink", "power"})


# ---------------------------------------------------------------------------
# Helpers


@dataclass(frozen=True, slots=True)
class Episode:
    """A stretch of bad rows that met a rule's persistence test.

    ``start`` is the first bad row's start (the onset), ``end`` the last bad
    row's end, ``amount`` the summed evidence (seconds or a count), ``rows``
    the bad rows in it, ``last_ts`` the last bad row's start.
    """

    start: float
    end: float
    amount: float
    rows: int
    last_ts: float | None = None


def episodes(
    ts: Sequence[Any],
    dur: Sequence[Any],
    bad: Sequence[tuple[int, float]],
    need: float,
    window_s: float = WINDOW_S,
    eligible: Sequence[float] | None = None,
    fraction: float = 0.0,
    rate: bool = False,
    join_s: float | None = None,
) -> list[Episode]:
    """Group bad rows into episodes that meet a sliding-window test.

    Args:
        ts, dur: row start times and lengths (s).
        bad: ``(row index, amount)`` for each bad row, in row order.
        need: the amount the window must reach (seconds of bad time, or a
            count); with ``rate`` it is scaled by the window length over
            ``window_s`` for rows longer than the window (hourly rows).
        window_s: the window length; a row longer than it is its own window.
        eligible: optional per-row amount the fraction is taken of (for
            example busy seconds); then the bad share of the window must also
            reach ``fraction``.
        join_s: episodes closer than this merge (default ``window_s``).

    Returns:
        Episodes in time order.
    """
    if not bad:
        return []
    join = window_s if join_s is None else join_s
    prefix: list[float] | None = None
    if eligible is not None and fraction > 0:
        prefix = [0.0]
        acc = 0.0
        for e in eligible:
            acc += e
            prefix.append(acc)
    out: list[tuple[float, float]] = []
    left = 0
    total = 0.0
    for right, (j, amount) in enumerate(bad):
        end_j = float(ts[j]) + float(dur[j])
        width = max(window_s, float(dur[j]))
        total += amount
        while left < right and float(ts[bad[left][0]]) < end_j - width:
            total -= bad[left][1]
            left += 1
        target = need * width / window_s if rate else need
        if total + 1e-9 < target:
            continue
        if prefix is not None:
            first = bisect.bisect_left(ts, end_j - width, 0, j + 1)
            elig = prefix[j + 1] - prefix[first]
            bad_s = sum(bad[k][1] for k in range(left, right + 1))
            if elig > 0 and bad_s / elig + 1e-9 < fraction:
                continue
        start = float(ts[bad[left][0]])
        if out and start <= out[-1][1] + join:
            out[-1] = (out[-1][0], max(out[-1][1], end_j))
        else:
            out.append((start, end_j))
    result = []
    for start, end in out:
        amount = 0.0
        rows = 0
        last = start
        for j, a in bad:
            if start <= float(ts[j]) < end:
                amount += a
                rows += 1
                last = float(ts[j])
        result.append(Episode(start, end, amount, rows, last))
    return result


def _t(history: FleetHistory, thresholds: Thresholds | None) -> Thresholds:
    if thresholds is not None:
        return thresholds
    if isinstance(history.thresholds, Thresholds):
        return history.thresholds
    return Thresholds()


def _state(history: FleetHistory, last_seen: float, resolve_s: float) -> str:
    return "open" if last_seen >= history.now - resolve_s else "resolved"


def _condition_s(t: Thresholds) -> float:
    return t.resolve_after_minutes * 60.0


def _event_s(t: Thresholds) -> float:
    return t.event_resolve_hours * 3600.0


def _gpu_finding(
    history: FleetHistory,
    gpu: GpuHistory,
    kind: str,
    severity: str,
    first: float,
    last: float | Episode,
    evidence: dict[str, Any],
    action: str,
    summary: str,
    resolve_s: float,
    discriminator: str = "",
    magnitude: float | None = None,
    open_now: bool | None = None,
    at: float | None = None,
) -> Finding:
    """A GPU finding placed on the node the card sat in at ``at`` (default: ``last``).

    ``last`` may be the last Episode: its end is the last_seen and the start
    of its last bad row places the finding.
    """
    if isinstance(last, Episode):
        at = last.last_ts if at is None else at
        last = last.end
    place = gpu.placement_at(last if at is None else at)
    node = place.node or gpu.node
    current = _label(gpu)
    if summary.startswith(current + ":") and place.node:
        idx = place.index if place.index is not None else gpu.index
        summary = (f"{place.node} gpu{idx}" if idx is not None else f"{place.node} {gpu.uuid}") + (
            summary[len(current):])
    if open_now is None:
        state = _state(history, last, resolve_s)
    else:
        state = "open" if open_now else "resolved"
    evidence.setdefault("model", gpu.name)
    return Finding(
        kind=kind, severity=severity, node=node, gpu_uuid=gpu.uuid,
        first_seen=float(first), last_seen=float(last), evidence=evidence, action=action,
        summary=summary, key=finding_key(kind, node, gpu.uuid, discriminator), state=state,
        gpu_index=place.index if place.index is not None else gpu.index, magnitude=magnitude,
    )


def _node_finding(
    history: FleetHistory,
    node: str,
    kind: str,
    severity: str,
    first: float,
    last: float,
    evidence: dict[str, Any],
    action: str,
    summary: str,
    resolve_s: float,
    discriminator: str = "",
    magnitude: float | None = None,
    open_now: bool | None = None,
) -> Finding:
    if open_now is None:
        state = _state(history, last, resolve_s)
    else:
        state = "open" if open_now else "resolved"
    return Finding(
        kind=kind, severity=severity, node=node, gpu_uuid=None,
        first_seen=float(first), last_seen=float(last), evidence=evidence, action=action,
        summary=summary, key=finding_key(kind, node, None, discriminator), state=state,
        magnitude=magnitude,
    )


def _label(gpu: GpuHistory) -> str:
    place = gpu.placements[-1] if gpu.placements else None
    idx = gpu.index if gpu.index is not None else (place.index if place else None)
    return f"{gpu.node} gpu{idx}" if idx is not None else f"{gpu.node} {gpu.uuid}"


def _last_known(values: Sequence[Any]) -> Any:
    for v in reversed(values):
        if v is not None:
            return v
    return None


def _first_known(values: Sequence[Any]) -> Any:
    for v in values:
        if v is not None:
            return v
    return None


def _slots(gpu: GpuHistory, eps: Sequence[Episode]) -> list[str]:
    """The slots (``node:pci``) the card sat in while its bad rows started."""
    seen: list[str] = []
    places = gpu.placements
    for ep in eps:
        last = ep.last_ts if ep.last_ts is not None else ep.start
        for k, place in enumerate(places):
            nxt = places[k + 1].ts if k + 1 < len(places) else float("inf")
            if place.ts <= last and nxt > ep.start and place.slot not in seen:
                seen.append(place.slot)
        if not places:
            slot = gpu.placement_at(ep.start).slot
            if slot not in seen:
                seen.append(slot)
    return seen


def _minutes(amount_s: float) -> int:
    return int(round(amount_s / 60.0))


def _hw_rows(series: Series) -> tuple[Sequence[Any], ...]:
    return tuple(series.col("thr_" + r) for r in HW_THROTTLE_REASONS)


def _amount(dur: float, count: Any, n: Any) -> float:
    """Seconds of a row in which something held: whole minutes, prorated hours."""
    if dur <= 60:
        return float(dur)
    if not n:
        return float(dur)
    return float(dur) * min(1.0, float(count) / float(n))


def _eligible_busy(series: Series) -> list[float]:
    """Busy seconds of each row (a minute with any busy sample counts whole)."""
    busy = series.col("busy_n")
    busy_minutes = series.col("busy_minutes")
    dur = series.dur
    out = []
    for b, bm, d in zip(busy, busy_minutes, dur):
        if d <= 60:
            out.append(float(d) if b else 0.0)
        elif bm is not None:
            out.append(60.0 * bm)
        else:
            out.append(float(d) if b else 0.0)
    return out


# ---------------------------------------------------------------------------
# Memory


def _ecc_deltas(tl: Any, kind: str) -> tuple[list[Any], list[Any]] | None:
    """Per-row growth of the volatile and aggregate ECC counts of ``kind`` ("unc" or "corr").

    None when neither count ever moved in the window (the common, healthy case).
    """
    vol = tl.col(f"ecc_{kind}_vol")
    agg = tl.col(f"ecc_{kind}_agg")
    if not any(vol) and not any(tl.col(f"ecc_{kind}_agg_delta")) and _first_known(agg) == _last_known(agg):
        return None
    return tl.delta(f"ecc_{kind}_vol"), tl.delta(f"ecc_{kind}_agg")


def check_ecc_uncorrectable(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """New uncorrectable ECC errors, or volatile ones not cleared (rule M1; errors).

    Critical when at least ``ecc_uncorrected_critical`` new errors appeared in
    the window (volatile or aggregate counter) or the volatile count is
    non-zero (no reset since the error); warning for fewer new errors than
    that threshold. Open while the volatile count stays non-zero.
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        tl = gpu.timeline()
        deltas = _ecc_deltas(tl, "unc")
        if deltas is None:
            continue
        dv, da = deltas
        vol, agg = tl.col("ecc_unc_vol"), tl.col("ecc_unc_agg")
        ts, dur = tl.ts, tl.dur
        rows = [i for i in range(len(tl)) if dv[i] > 0 or da[i] > 0]
        new = sum(max(dv[i], da[i]) for i in rows)
        vol_first = _first_known(vol)
        vol_last = _last_known(vol)
        standing = bool(vol_last)
        if not rows and not standing:
            continue
        if rows:
            first = float(ts[rows[0]])
            last = float(ts[rows[-1]]) + float(dur[rows[-1]])
        else:
            first = float(ts[0])
            last = float(ts[0]) + float(dur[0])
        if standing:
            last = history.now
        severity = "critical" if new >= t.ecc_uncorrected_critical or standing else "warning"
        evidence = {
            "new": int(new), "volatile": vol_last, "aggregate": _last_known(agg),
            "volatile_at_start": vol_first, "increases": len(rows),
            "first_increase_ts": float(ts[rows[0]]) if rows else None,
            "before_window": bool(vol_first) and (not rows or float(ts[rows[0]]) > float(ts[0])),
        }
        summary = (f"{_label(gpu)}: {int(new)} new uncorrectable ECC error(s)"
                   if new else f"{_label(gpu)}: {vol_last} uncorrectable ECC error(s) since the last reset")
        out.append(_gpu_finding(
            history, gpu, "ecc-uncorrectable", severity, first, last, evidence,
            "Drain the node and reset the GPU; run `dcgmi diag -r 3`; if errors recur, RMA the card",
            summary, _event_s(t), magnitude=float(max(new, vol_last or 0)),
            open_now=True if standing else None,
        ))
    return out


def check_ecc_correctable(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Corrected ECC errors at a high rate, or rising daily (rule M4; errors/min).

    Warning when the mean rate over ``ecc_corrected_window_minutes`` reaches
    ``ecc_corrected_per_min``; info when the daily count rose for
    ``ecc_trend_days`` days in a row.
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    window_s = t.ecc_corrected_window_minutes * 60.0
    need = t.ecc_corrected_per_min * t.ecc_corrected_window_minutes
    for gpu in history.gpus:
        tl = gpu.timeline()
        deltas = _ecc_deltas(tl, "corr")
        if deltas is None:
            continue
        dv, da = deltas
        delta = [max(a, b) for a, b in zip(dv, da)]
        bad = [(i, d) for i, d in enumerate(delta) if d > 0]
        if not bad:
            continue
        ts, dur = tl.ts, tl.dur
        eps = episodes(ts, dur, bad, need, window_s, rate=True)
        if eps:
            total = sum(e.amount for e in eps)
            peak = max(d / (float(dur[i]) / 60.0) for i, d in bad)
            evidence = {
                "rate_per_min": round(peak, 2), "window_min": t.ecc_corrected_window_minutes,
                "total": int(total), "episodes": len(eps), "threshold_per_min": t.ecc_corrected_per_min,
            }
            out.append(_gpu_finding(
                history, gpu, "ecc-correctable-storm", "warning", eps[0].start, eps[-1], evidence,
                "Early warning of memory degradation: watch the trend, schedule `dcgmi diag -r 3`; "
                "check for pending retirements or remaps",
                f"{_label(gpu)}: corrected ECC errors at up to {peak:.0f}/min",
                _condition_s(t), discriminator="rate", magnitude=peak,
            ))
        per_day: dict[int, float] = defaultdict(float)
        for i, d in bad:
            per_day[int(float(ts[i]) // DAY_S)] += d
        days = sorted(per_day)
        if len(days) >= t.ecc_trend_days:
            recent = days[-t.ecc_trend_days:]
            contiguous = recent[-1] - recent[0] == len(recent) - 1
            counts = [per_day[d] for d in recent]
            rising = all(b > a for a, b in zip(counts, counts[1:]))
            if contiguous and rising:
                out.append(_gpu_finding(
                    history, gpu, "ecc-correctable-storm", "info", recent[0] * DAY_S,
                    float(ts[bad[-1][0]]) + float(dur[bad[-1][0]]),
                    {"per_day": [int(c) for c in counts], "days": len(recent)},
                    "Corrected ECC errors rise day over day: watch for retirements or remaps, "
                    "plan a diagnostic", f"{_label(gpu)}: corrected ECC errors rising for "
                    f"{len(recent)} days", _event_s(t), discriminator="trend", magnitude=counts[-1],
                ))
    return out


def _pending_episode(ts: Sequence[Any], dur: Sequence[Any], flags: Sequence[Any]) -> tuple[float, float, bool] | None:
    """(start of the latest run of a set flag, its end, still set) or None."""
    last_true = None
    for i in range(len(flags) - 1, -1, -1):
        if flags[i]:
            last_true = i
            break
    if last_true is None:
        return None
    start = last_true
    while start > 0 and (flags[start - 1] or flags[start - 1] is None):
        start -= 1
    while start < last_true and not flags[start]:
        start += 1
    latest = _last_known(flags)
    return float(ts[start]), float(ts[last_true]) + float(dur[last_true]), bool(latest)


def check_retired_pages(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Retired pages near the limit, or a retirement pending (rule M2; pages).

    ``count``: warning from ``retired_pages_warning`` pages (SBE + DBE),
    critical from ``retired_pages_critical``, or with more than
    ``retired_dbe_soft_limit`` DBE pages and more than one new in 7 days.
    ``pending``: warning while a retirement waits for a GPU reset.
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        tl = gpu.timeline()
        sbe, dbe = tl.col("retired_sbe"), tl.col("retired_dbe")
        pending = tl.col("retired_pending")
        pending_max = tl.col("retired_pending_max")
        if not any(sbe) and not any(dbe) and not any(pending) and not any(pending_max):
            continue
        ts, dur = tl.ts, tl.dur
        last_sbe, last_dbe = _last_known(sbe) or 0, _last_known(dbe) or 0
        total = last_sbe + last_dbe
        limit = 64
        dbe_week_ago = None
        week = history.now - 7 * DAY_S
        for i in range(len(tl)):
            if float(ts[i]) <= week and dbe[i] is not None:
                dbe_week_ago = dbe[i]
        if dbe_week_ago is None:
            dbe_week_ago = _first_known(dbe) or 0
        new_dbe = last_dbe - dbe_week_ago
        severity = None
        if total >= t.retired_pages_critical or (last_dbe > t.retired_dbe_soft_limit and new_dbe > 1):
            severity = "critical"
        elif total >= t.retired_pages_warning:
            severity = "warning"
        if severity:
            threshold = t.retired_pages_warning if severity == "warning" else min(
                t.retired_pages_critical, t.retired_pages_warning)
            first = float(ts[0])
            for i in range(len(tl)):
                if (sbe[i] or 0) + (dbe[i] or 0) >= threshold:
                    first = float(ts[i])
                    break
            out.append(_gpu_finding(
                history, gpu, "retired-pages", severity, first, history.now,
                {"sbe": last_sbe, "dbe": last_dbe, "total": total, "limit": limit,
                 "new_dbe_7d": new_dbe},
                "RMA candidate: confirm with `dcgmi diag -r 3` and replace the card"
                if severity == "critical" else
                "Retired pages near the limit of 64: plan a replacement; confirm with field diagnostics",
                f"{_label(gpu)}: {total} retired pages (limit {limit})", _condition_s(t),
                discriminator="count", magnitude=float(total), open_now=True,
            ))
        flags = [p if p is not None else m for p, m in zip(pending, pending_max)]
        run = _pending_episode(ts, dur, flags)
        if run:
            start, end, still = run
            out.append(_gpu_finding(
                history, gpu, "retired-pages", "warning", start, history.now if still else end,
                {"pending": still, "sbe": last_sbe, "dbe": last_dbe, "total": total},
                "A page retirement waits for a GPU reset: reset the GPU (or reload the driver) at "
                "the next job boundary", f"{_label(gpu)}: page retirement pending (reset needed)",
                _condition_s(t), discriminator="pending", open_now=still or None,
            ))
    return out


def check_row_remap(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Row remap pending (reset needed) or failed (replacement) (rule M3).

    Skipped on cards whose ECC mode is off (GetRemappedRows answers on an RTX
    4090 without meaning anything, gpud).
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        ecc = gpu.inv("ecc_mode_current")
        if ecc is not None and not ecc:
            continue
        tl = gpu.timeline()
        pend = [p if p is not None else m for p, m in zip(tl.col("remap_pending"), tl.col("remap_pending_max"))]
        fail = [p if p is not None else m for p, m in zip(tl.col("remap_failure"), tl.col("remap_failure_max"))]
        if not any(pend) and not any(fail):
            continue
        ts, dur = tl.ts, tl.dur
        rows = {"correctable_rows": _last_known(tl.col("remap_corr")),
                "uncorrectable_rows": _last_known(tl.col("remap_unc"))}
        run = _pending_episode(ts, dur, fail)
        if run:
            start, end, still = run
            out.append(_gpu_finding(
                history, gpu, "row-remap", "critical", start, history.now if still else end,
                {"failure": True, **rows},
                "Row remapping failed (no spare rows): drain, confirm with `dcgmi diag -r 3` and "
                "replace the card (RMA)", f"{_label(gpu)}: row remap failure (replace the card)",
                _condition_s(t), discriminator="failure", open_now=still or None,
                magnitude=float(rows["uncorrectable_rows"] or 1),
            ))
        run = _pending_episode(ts, dur, pend)
        if run:
            start, end, still = run
            out.append(_gpu_finding(
                history, gpu, "row-remap", "warning", start, history.now if still else end,
                {"pending": still, **rows},
                "A row remap waits for a GPU reset: reset the GPU at the next job boundary",
                f"{_label(gpu)}: row remap pending (reset needed)", _condition_s(t),
                discriminator="pending", open_now=still or None,
            ))
    return out


# ---------------------------------------------------------------------------
# Xid


def _card_at(history: FleetHistory, node: str, pci: str | None, ts: float) -> GpuHistory | None:
    """The card that sat in ``node``'s slot ``pci`` at ``ts``."""
    if not pci:
        return None
    want = xidcat.normalize_pci(pci)
    for gpu in history.gpus:
        place = gpu.placement_at(ts)
        if place.node == node and place.pci_bus_id and xidcat.normalize_pci(place.pci_bus_id) == want:
            return gpu
    return None


def check_xid(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Xid events by code and card, grouped into bursts and escalated (rules X1-X5, W3).

    * Bursts: one node's Xids belong together until ``xid_burst_gap_s`` of
      silence; secondary codes (45, 154) are attributed to the burst's
      primary codes and reported alone only when nothing else is there.
    * Severity: the catalog's; application codes (13, 31, 43, 68, 69) are
      info until they recur in ``xid_app_repeat_bursts`` bursts or come with
      hardware codes in one burst (then warning).
    * Escalated to critical when a non-application code recurs after
      ``xid_recurrence_resets`` resets (X3), or Xid 79/62 or a power Xid hits
      ``xid_multi_gpu`` GPUs of one node in one burst (W3: PSU or rail; a
      node finding is added).
    * GSP codes (119/120) on ``xid_driver_regression_nodes`` nodes with one
      driver version are flagged as a suspected driver regression (X5).
    """
    t = _t(history, thresholds)
    xids = [e for e in history.events if e.kind == "xid" and e.code is not None]
    if not xids:
        return []
    resets: dict[str, list[tuple[float, str | None]]] = defaultdict(list)
    for e in history.events:
        if e.kind in RESET_EVENTS:
            resets[e.node].append((e.ts, e.gpu_uuid))

    # Attribute each event to a card.
    by_node: dict[str, list[tuple[Any, GpuHistory | None]]] = defaultdict(list)
    for e in xids:
        gpu = history.gpu(e.gpu_uuid) if e.gpu_uuid else None
        if gpu is None:
            gpu = _card_at(history, e.node, e.pci_bus_id, e.ts)
        by_node[e.node].append((e, gpu))

    # GSP codes by driver version (X5).
    gsp_nodes: dict[str, set[str]] = defaultdict(set)
    for node, items in by_node.items():
        if any(e.code in GSP_XIDS for e, _ in items):
            nh = history.node(node)
            if nh is not None and nh.driver_version:
                gsp_nodes[nh.driver_version].add(node)
    regression = {v for v, nodes in gsp_nodes.items() if len(nodes) >= t.xid_driver_regression_nodes}

    out: list[Finding] = []
    for node, items in sorted(by_node.items()):
        items.sort(key=lambda p: p[0].ts)
        bursts: list[list[tuple[Any, GpuHistory | None]]] = []
        for item in items:
            if bursts and item[0].ts - bursts[-1][-1][0].ts <= t.xid_burst_gap_s:
                bursts[-1].append(item)
            else:
                bursts.append([item])
        groups: dict[tuple[str, int], dict[str, Any]] = {}
        psu_bursts: list[dict[str, Any]] = []
        for b_index, burst in enumerate(bursts):
            cats = {xidcat.lookup(e.code).category for e, _ in burst}
            primaries = [(e, g) for e, g in burst if xidcat.lookup(e.code).category != "secondary"]
            secondaries = [(e, g) for e, g in burst if xidcat.lookup(e.code).category == "secondary"]
            counted = primaries or secondaries
            psu_gpus = {
                (g.uuid if g else e.pci_bus_id) for e, g in burst
                if e.code in PSU_XIDS or xidcat.lookup(e.code).category == "power"
            }
            multi = len(psu_gpus) >= t.xid_multi_gpu
            if multi:
                psu_bursts.append({"ts": burst[0][0].ts, "gpus": len(psu_gpus),
                                   "codes": sorted({e.code for e, _ in burst})})
            for e, g in counted:
                ident = g.uuid if g else f"pci:{e.pci_bus_id or '?'}"
                entry = groups.setdefault((ident, e.code), {
                    "gpu": g, "code": e.code, "times": [], "bursts": set(), "attributed": Counter(),
                    "hw_company": False, "multi": False, "pci": e.pci_bus_id, "messages": [],
                })
                entry["times"].append(e.ts)
                entry["bursts"].add(b_index)
                if cats & HARDWARE_CATEGORIES:
                    entry["hw_company"] = True
                if multi and (e.code in PSU_XIDS or xidcat.lookup(e.code).category == "power"):
                    entry["multi"] = True
                if e.message and len(entry["messages"]) < 3:
                    entry["messages"].append(e.message[:200])
                if primaries:
                    for s, _ in secondaries:
                        entry["attributed"][s.code] += 1
        node_resets = sorted(resets.get(node, ()))
        nh = history.node(node)
        for (_, code), entry in sorted(groups.items(), key=lambda kv: (min(kv[1]["times"]), kv[0][1])):
            info = xidcat.lookup(code)
            card: GpuHistory | None = entry["gpu"]
            times = sorted(entry["times"])
            gpu_resets = [r for r, who in node_resets if who is None or card is None or who == card.uuid]
            epochs = {bisect.bisect_right(gpu_resets, ts) for ts in times}
            resets_between = len(epochs) - 1
            severity = info.severity
            action = info.action
            reasons: list[str] = []
            if info.category == "application":
                if len(entry["bursts"]) >= t.xid_app_repeat_bursts or entry["hw_company"]:
                    severity = "warning"
                    reasons.append("recurs" if len(entry["bursts"]) >= t.xid_app_repeat_bursts
                                   else "with hardware Xids")
                else:
                    severity = "info"
            elif info.category == "secondary":
                severity = "info"
            if info.category not in ("application", "secondary") and resets_between >= t.xid_recurrence_resets:
                severity = "critical"
                action = (f"Recurs after {resets_between} resets: hardware inspection, run "
                          "`dcgmi diag -r 3`, RMA candidate")
                reasons.append(f"recurs after {resets_between} resets")
            if entry["multi"]:
                severity = "critical"
                action = ("Several GPUs of this node failed together: suspect the PSU or power rail; "
                          "check PSU, power cables and risers; " + info.action)
                reasons.append("several GPUs in one burst")
            driver = nh.driver_version if nh is not None else None
            suspect_driver = code in GSP_XIDS and driver in regression
            if suspect_driver:
                action = (f"Same GSP error on several nodes with driver {driver}: "
                          "suspect a driver regression; " + info.action)
                reasons.append("driver regression suspected")
            evidence = {
                "code": code, "name": info.name, "category": info.category,
                "meaning": info.meaning, "count": len(times), "bursts": len(entry["bursts"]),
                "resets_between": resets_between, "multi_gpu": entry["multi"],
                "attributed": {str(k): v for k, v in sorted(entry["attributed"].items())},
                "nvidia_action": info.nvidia_action, "escalation": reasons,
                "driver_regression_suspected": suspect_driver, "messages": entry["messages"],
                "first_ts": times[0], "last_ts": times[-1],
            }
            summary_where = _label(card) if card else f"{node} (PCI {entry['pci'] or '?'})"
            summary = (f"{summary_where}: Xid {code} {info.meaning} "
                       f"({len(times)}x, {info.category})")
            if card is not None:
                place = card.placement_at(times[-1])
                evidence["slots"] = sorted({card.placement_at(ts).slot for ts in times})
                f = _gpu_finding(history, card, "xid", severity, times[0], times[-1], evidence,
                                 action, summary, _event_s(t), discriminator=str(code),
                                 magnitude=float(len(times)))
                if place.node != node:  # the event names the node it happened on
                    f = Finding(**{**f.to_dict(), "node": node,
                                   "key": finding_key("xid", node, card.uuid, str(code))})
                out.append(f)
            else:
                evidence["pci_bus_id"] = entry["pci"]
                out.append(_node_finding(history, node, "xid", severity, times[0], times[-1], evidence,
                                         action, summary, _event_s(t),
                                         discriminator=f"{code}:{entry['pci'] or '?'}",
                                         magnitude=float(len(times))))
        if psu_bursts:
            first, last = psu_bursts[0]["ts"], psu_bursts[-1]["ts"]
            out.append(_node_finding(
                history, node, "xid", "critical", first, last,
                {"bursts": psu_bursts, "multi_gpu": True,
                 "gpus": max(b["gpus"] for b in psu_bursts)},
                "Several GPUs fell off the bus or halted together: suspect the PSU or power rail; "
                "check the PSU, power cables and risers; lock clocks (`nvidia-smi -lgc`) to test",
                f"{node}: Xid on {max(b['gpus'] for b in psu_bursts)} GPUs at once "
                "(PSU or power rail suspected)", _event_s(t), discriminator="psu",
                magnitude=float(len(psu_bursts)),
            ))
    return out


# ---------------------------------------------------------------------------
# Presence and reachability


def check_gpu_lost(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """A GPU that fell off the bus or answers GPU_IS_LOST (critical, no waiting)."""
    t = _t(history, thresholds)
    out: list[Finding] = []
    events: dict[str, list[Any]] = defaultdict(list)
    for e in history.events:
        if e.kind in ("gpu_lost", "gpu_back") and e.gpu_uuid:
            events[e.gpu_uuid].append(e)
    for gpu in history.gpus:
        tl = gpu.timeline()
        state_col = tl.col("state")
        quick = (GpuState.LOST in state_col or any(tl.col("lost")) or any(tl.col("lost_minutes"))
                 or gpu.state == GpuState.LOST or gpu.uuid in events)
        if not quick:
            continue
        lost = tl.lost()
        ts, dur = tl.ts, tl.dur
        rows = [i for i, x in enumerate(lost) if x]
        evs = events.get(gpu.uuid, [])
        lost_ts = [e.ts for e in evs if e.kind == "gpu_lost"]
        back_ts = [e.ts for e in evs if e.kind == "gpu_back"]
        starts = [float(ts[i]) for i in rows[:1]] + lost_ts[:1]
        if not starts and gpu.state != GpuState.LOST:
            continue
        first = min(starts) if starts else (gpu.last_seen or history.now)
        ends = [float(ts[rows[-1]]) + float(dur[rows[-1]])] if rows else []
        ends += lost_ts[-1:]
        still = gpu.state == GpuState.LOST or (bool(lost_ts) and (not back_ts or back_ts[-1] < lost_ts[-1])
                                        and gpu.state != GpuState.OK) or (bool(rows) and rows[-1] == len(tl) - 1)
        last = history.now if still else max(ends + back_ts[-1:] or [first])
        minutes = sum(_amount(float(dur[i]), tl.col("lost_minutes")[i] or 1, (float(dur[i]) / 60) if dur[i] > 60 else 1)
                      for i in rows) / 60.0
        eps = [Episode(first, last, 0, len(rows), float(ts[rows[-1]]) if rows else first)]
        evidence = {"lost_minutes": int(round(minutes)), "lost_events": len(lost_ts),
                    "back_events": len(back_ts), "slots": _slots(gpu, eps)}
        out.append(_gpu_finding(
            history, gpu, "gpu-lost", "critical", first, last, evidence,
            "Drain and reboot the node; reseat the card and check the riser, slot, power cables "
            "and PSU; watch temperatures",
            f"{_label(gpu)}: GPU lost (fell off the bus)", _condition_s(t),
            magnitude=float(minutes), open_now=still or None,
        ))
    return out


def _reachable(node: NodeHistory | None, now: float, t: Thresholds) -> bool:
    return node is not None and node.last_ok is not None and now - node.last_ok < t.unreachable_minutes * 60


def check_gpu_missing(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """A card no longer enumerated on a node that answers, or too few GPUs (critical).

    Per card: its state is "missing", or it was last seen more than
    ``gpu_missing_minutes`` before its node's last good poll. Per node: the
    node reports fewer GPUs than its group expects (beyond the cards already
    named). Nodes that do not answer are left to ``node-unreachable``.
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    per_node: Counter[str] = Counter()
    for gpu in history.gpus:
        node = history.node(gpu.node)
        if not _reachable(node, history.now, t) or gpu.last_seen is None:
            continue
        assert node is not None and node.last_ok is not None
        gone = node.last_ok - gpu.last_seen >= t.gpu_missing_minutes * 60
        if gpu.state != GpuState.MISSING and not gone:
            continue
        per_node[gpu.node] += 1
        out.append(_gpu_finding(
            history, gpu, "gpu-missing", "critical", float(gpu.last_seen), history.now,
            {"last_seen": gpu.last_seen, "node_last_ok": node.last_ok, "state": gpu.state},
            "The card is no longer enumerated: check `nvidia-smi -L` and the kernel log (Xid 79), "
            "reseat the card, check the riser and power cables",
            f"{_label(gpu)}: GPU missing since {_hhmm(gpu.last_seen)}", _condition_s(t),
            open_now=True,
        ))
    for node in history.nodes:
        expected = history.expected_gpus(node)
        if expected is None or not _reachable(node, history.now, t):
            continue
        reported = node.gpu_count
        if reported is None:
            reported = sum(1 for g in history.gpus_on(node.name) if g.state != GpuState.MISSING
                           and not (node.last_ok and g.last_seen and
                                    node.last_ok - g.last_seen >= t.gpu_missing_minutes * 60))
        short = expected - reported
        if short > per_node[node.name]:
            out.append(_node_finding(
                history, node.name, "gpu-missing", "critical", history.since, history.now,
                {"expected": expected, "reported": reported, "named": per_node[node.name]},
                "Fewer GPUs than the group expects: check `nvidia-smi -L`, the kernel log and the "
                "BIOS PCIe settings; reseat cards and risers",
                f"{node.name}: {reported} of {expected} expected GPUs", _condition_s(t),
                discriminator="count", magnitude=float(short), open_now=True,
            ))
    return out


def _hhmm(ts: float | None) -> str:
    if ts is None:
        return "?"
    import datetime as _dt

    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def check_node_unreachable(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """The node's agent has not answered for ``unreachable_minutes`` (critical)."""
    t = _t(history, thresholds)
    out: list[Finding] = []
    limit = t.unreachable_minutes * 60.0
    for node in history.nodes:
        long_outages = [o for o in node.outages if o.duration_s(history.now) >= limit
                        and (o.end is None or o.end >= history.since)]
        current = None
        if node.outages and node.outages[-1].end is None:
            current = node.outages[-1]
        elif (node.last_ok is not None and node.last_attempt is not None
              and node.last_attempt > node.last_ok and history.now - node.last_ok >= limit):
            current = None  # polls fail but no outage list: synthesise one below
            start = node.last_ok
            from fleetmon.health.history import Outage

            current = Outage(start, None, node.last_error, 0)
            long_outages.append(current)
        elif node.last_ok is None and node.last_attempt is not None:
            from fleetmon.health.history import Outage

            current = Outage(node.first_seen or history.since, None, node.last_error, 0)
            long_outages.append(current)
        if current is not None and current.duration_s(history.now) < limit:
            current = None
        if not long_outages:
            continue
        first = long_outages[0].start
        last = history.now if current is not None else max(o.end or history.now for o in long_outages)
        latest = current or long_outages[-1]
        minutes = int(latest.duration_s(history.now) // 60)
        evidence = {
            "since": latest.start, "minutes": minutes,
            "error": latest.error, "failed_polls": latest.failed, "outages": len(long_outages),
            "last_ok": node.last_ok,
        }
        out.append(_node_finding(
            history, node.name, "node-unreachable", "critical", first, last, evidence,
            "Check that the node is up, its network and the fleetmon agent "
            "(`systemctl status fleetmon-agent`)",
            f"{node.name}: unreachable for {minutes} min ({latest.error or 'no answer'})",
            _condition_s(t), magnitude=float(minutes),
            open_now=current is not None,
        ))
    return out


def check_node_flapping(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """A node lost and back ``flap_count`` times within ``flap_window_hours`` (warning).

    Only outages of at least ``flap_min_outage_s`` count (a single slow
    poll is not a flap).
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    window = t.flap_window_hours * 3600.0
    for node in history.nodes:
        ended = [o for o in node.outages if o.end is not None and o.end - o.start >= t.flap_min_outage_s
                 and o.end >= history.since - window]
        if len(ended) < t.flap_count:
            continue
        hits: list[tuple[float, float, int]] = []
        left = 0
        for right in range(len(ended)):
            while ended[right].end - ended[left].start > window:  # type: ignore[operator]
                left += 1
            if right - left + 1 >= t.flap_count:
                start, end = ended[left].start, float(ended[right].end or 0)
                if hits and start <= hits[-1][1] + window:
                    hits[-1] = (hits[-1][0], end, hits[-1][2] + 1)
                else:
                    hits.append((start, end, right - left + 1))
        if not hits:
            continue
        first, last = hits[0][0], hits[-1][1]
        in_window = [o for o in ended if o.end and o.end >= last - window]
        out.append(_node_finding(
            history, node.name, "node-flapping", "warning", first, last,
            {"outages": len(in_window), "window_h": t.flap_window_hours,
             "errors": sorted({o.error or "?" for o in in_window})[:5]},
            "The node keeps dropping off: check its network link, power and the agent's logs; "
            "consider draining it", f"{node.name}: lost and back {len(in_window)} times in "
            f"{t.flap_window_hours} h", window, magnitude=float(len(in_window)),
        ))
    return out


# ---------------------------------------------------------------------------
# Versions and inventory


def _majority(values: Sequence[str]) -> tuple[str | None, Counter[str]]:
    counts = Counter(values)
    if not counts:
        return None, counts
    top = counts.most_common(2)
    if len(top) == 2 and top[0][1] == top[1][1]:
        return None, counts
    return top[0][0], counts


def check_driver_versions(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Driver and CUDA-driver versions that differ from the group (warning).

    Compared with the group's ``expected_driver`` / ``expected_cuda_driver``,
    or with the group's majority when none is set (a tie gives info findings).
    Nodes without a group are compared among themselves.
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    by_group: dict[str, list[NodeHistory]] = defaultdict(list)
    for node in history.nodes:
        by_group[node.group or ""].append(node)
    changed: dict[str, float] = {}
    for c in history.inventory_changes:
        if c.kind == "driver_changed":
            changed[c.node] = c.ts
    for group, nodes in sorted(by_group.items()):
        expect = history.groups.get(group)
        for attr, label, expected_attr in (("driver_version", "driver", "expected_driver"),
                                           ("cuda_driver_version", "cuda", "expected_cuda_driver")):
            versions = [str(getattr(n, attr)) for n in nodes if getattr(n, attr)]
            expected = getattr(expect, expected_attr) if expect else None
            basis = "expected"
            counts: Counter[str] = Counter(versions)
            if expected is None:
                if len(versions) < 2:
                    continue
                expected, counts = _majority(versions)
                basis = "majority"
            for node in nodes:
                version = getattr(node, attr)
                if not version:
                    continue
                version = str(version)
                if expected is not None and version == str(expected):
                    continue
                if expected is None and len(counts) < 2:
                    continue
                severity = "warning" if expected is not None else "info"
                word = "CUDA driver" if label == "cuda" else "driver"
                summary = (f"{node.name}: {word} {version}, group {group or '(none)'} "
                           + (f"expects {expected}" if expected else "has no majority"))
                out.append(_node_finding(
                    history, node.name, "driver-mismatch", severity,
                    changed.get(node.name, history.since), history.now,
                    {"field": label, "version": version, "expected": expected, "basis": basis,
                     "group": group or None, "versions": dict(sorted(counts.items()))},
                    f"Install the group's {word} ({expected})" if expected else
                    f"Pick one {word} version for group {group or '(none)'} and set it as "
                    "expected_driver in the fleet file",
                    summary, _condition_s(t), discriminator=label, open_now=True,
                ))
    return out


def check_vbios(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """A card's VBIOS differs from the majority of its model in its group (warning)."""
    t = _t(history, thresholds)
    out: list[Finding] = []
    groups: dict[tuple[str, str], list[GpuHistory]] = defaultdict(list)
    for gpu in history.gpus:
        if gpu.state == GpuState.MISSING or not gpu.inv("vbios"):
            continue
        node = history.node(gpu.node)
        groups[((node.group if node else None) or "", gpu.name)].append(gpu)
    for (group, model), cards in sorted(groups.items()):
        expected, counts = _majority([str(g.inv("vbios")) for g in cards])
        if len(counts) < 2:
            continue
        for gpu in cards:
            vbios = str(gpu.inv("vbios"))
            if vbios == expected:
                continue
            severity = "warning" if expected else "info"
            out.append(_gpu_finding(
                history, gpu, "vbios-mismatch", severity, history.since, history.now,
                {"vbios": vbios, "expected": expected, "group": group or None,
                 "peers": dict(sorted(counts.items()))},
                f"Flash the VBIOS used by the other {model} cards ({expected}) or record why "
                "this card differs" if expected else
                f"Cards of {model} in group {group or '(none)'} run different VBIOS versions: "
                "pick one", f"{_label(gpu)}: VBIOS {vbios}, peers run {expected or 'a mix'}",
                _condition_s(t), open_now=True,
            ))
    return out


_CHANGE_ALIASES = {"moved": "gpu_moved", "appeared": "gpu_added", "disappeared": "gpu_removed"}


_ENROLL_S = 300.0
"""Cards first seen within this long of a node's first card came with its first inventory."""


def check_inventory_changes(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Cards added, removed or moved, versions changed (info).

    Recorded changes come from ``history.inventory_changes``; moves and
    additions are also read from the cards' placements.
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    seen: set[tuple[str, str | None, int]] = set()
    for c in history.inventory_changes:
        if not history.since <= c.ts <= history.now:
            continue
        seen.add((_CHANGE_ALIASES.get(c.kind, c.kind), c.gpu_uuid, int(c.ts // 3600)))
        gpu = history.gpu(c.gpu_uuid) if c.gpu_uuid else None
        evidence = {"change": c.kind, "before": c.before, "after": c.after, "detail": c.detail}
        summary = f"{c.node}: {c.kind.replace('_', ' ')}" + (
            f" ({c.before} -> {c.after})" if c.before is not None or c.after is not None else "")
        if gpu is not None:
            summary = f"{_label(gpu)}: {c.kind.replace('_', ' ')}" + (
                f" ({c.before} -> {c.after})" if c.before is not None or c.after is not None else "")
            f = _gpu_finding(history, gpu, "inventory-change", "info", c.ts, c.ts, evidence,
                             "No action if the change was planned", summary, _event_s(t),
                             discriminator=f"{c.kind}:{int(c.ts)}")
            if f.node != c.node:
                f = Finding(**{**f.to_dict(), "node": c.node})
            out.append(f)
        else:
            out.append(_node_finding(history, c.node, "inventory-change", "info", c.ts, c.ts, evidence,
                                     "No action if the change was planned", summary, _event_s(t),
                                     discriminator=f"{c.kind}:{int(c.ts)}"))
    # Cards that came with a node's first inventory are how the node was enrolled, not additions.
    enrolled_at: dict[str, float] = {}
    for gpu in history.gpus:
        if gpu.first_seen is not None and gpu.node:
            enrolled_at[gpu.node] = min(enrolled_at.get(gpu.node, gpu.first_seen), gpu.first_seen)
    for gpu in history.gpus:
        places = gpu.placements
        for prev, cur in zip(places, places[1:]):
            if not history.since <= cur.ts <= history.now:
                continue
            if (prev.node, prev.pci_bus_id) == (cur.node, cur.pci_bus_id):
                continue
            if ("gpu_moved", gpu.uuid, int(cur.ts // 3600)) in seen:
                continue
            out.append(_gpu_finding(
                history, gpu, "inventory-change", "info", cur.ts, cur.ts,
                {"change": "gpu_moved", "before": prev.slot, "after": cur.slot,
                 "serial": gpu.serial},
                "No action if the move was planned; the card's history moves with it",
                f"{gpu.uuid} moved from {prev.slot} to {cur.slot}", _event_s(t),
                discriminator=f"gpu_moved:{int(cur.ts)}",
            ))
        if (gpu.first_seen is not None and history.since < gpu.first_seen <= history.now
                and gpu.first_seen - enrolled_at.get(gpu.node, gpu.first_seen) > _ENROLL_S
                and len(places) <= 1 and ("gpu_added", gpu.uuid, int(gpu.first_seen // 3600)) not in seen):
            out.append(_gpu_finding(
                history, gpu, "inventory-change", "info", gpu.first_seen, gpu.first_seen,
                {"change": "gpu_added", "before": None, "after": gpu.name, "serial": gpu.serial},
                "No action if the card was installed on purpose",
                f"{_label(gpu)}: new card {gpu.name}", _event_s(t),
                discriminator=f"gpu_added:{int(gpu.first_seen)}",
            ))
    return out


# ---------------------------------------------------------------------------
# PCIe


def check_pcie_link(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """PCIe link below its maximum while busy (rule P2; never at idle).

    Warning after ``pcie_degraded_minutes`` consecutive busy minutes with the
    busy link (``pcie_gen_busy_min`` / ``pcie_width_busy_min``) below the
    maximum the device and slot support (``pcie_max_gen`` /
    ``pcie_max_width``); idle minutes neither count nor break a run. Info
    when the slot or riser caps the link below what the card supports
    (``pcie_max_gen < pcie_gpu_max_gen``): configuration, not failure.
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        max_gen, max_width = gpu.inv("pcie_max_gen"), gpu.inv("pcie_max_width")
        gpu_gen, gpu_width = gpu.inv("pcie_gpu_max_gen"), gpu.inv("pcie_gpu_max_width")
        if (max_gen and gpu_gen and max_gen < gpu_gen) or (max_width and gpu_width and max_width < gpu_width):
            out.append(_gpu_finding(
                history, gpu, "pcie-link-degraded", "info", history.since, history.now,
                {"max_gen": max_gen, "max_width": max_width, "gpu_max_gen": gpu_gen,
                 "gpu_max_width": gpu_width},
                "The slot, riser or switch caps this link below what the card supports: move the "
                "card or accept the cap", f"{_label(gpu)}: slot caps the link at Gen{max_gen} "
                f"x{max_width} (card: Gen{gpu_gen} x{gpu_width or max_width})", _condition_s(t),
                discriminator="capped", open_now=True,
            ))
        if not max_gen and not max_width:
            continue
        tl = gpu.timeline()
        gens, widths = tl.col("pcie_gen_busy_min"), tl.col("pcie_width_busy_min")
        low_gen = min((g for g in gens if g is not None), default=None)
        low_width = min((w for w in widths if w is not None), default=None)
        if not ((max_gen and low_gen is not None and low_gen < max_gen)
                or (max_width and low_width is not None and low_width < max_width)):
            continue
        ts, dur = tl.ts, tl.dur
        busy, busy_minutes = tl.col("busy_n"), tl.col("busy_minutes")
        runs: list[tuple[int, int, float]] = []  # (first row, last row, busy minutes)
        start = None
        run_minutes = 0.0
        last_row = 0
        worst_gen, worst_width = max_gen, max_width
        for i in range(len(tl)):
            g, w = gens[i], widths[i]
            if not busy[i] or (g is None and w is None):
                continue
            minutes = 1.0 if dur[i] <= 60 else float(busy_minutes[i] if busy_minutes[i] is not None else 60)
            bad = (max_gen and g is not None and g < max_gen) or (max_width and w is not None and w < max_width)
            if bad:
                if start is None:
                    start, run_minutes = i, 0.0
                run_minutes += minutes
                last_row = i
                if g is not None and (worst_gen is None or g < worst_gen):
                    worst_gen = g
                if w is not None and (worst_width is None or w < worst_width):
                    worst_width = w
            elif start is not None:
                runs.append((start, last_row, run_minutes))
                start = None
        if start is not None:
            runs.append((start, last_row, run_minutes))
        eps: list[Episode] = []
        for a, b, minutes in runs:
            if minutes + 1e-9 < t.pcie_degraded_minutes:
                continue
            s, e = float(ts[a]), float(ts[b]) + float(dur[b])
            if eps and s <= eps[-1].end + _condition_s(t):
                eps[-1] = Episode(eps[-1].start, e, eps[-1].amount + minutes, eps[-1].rows + b - a + 1,
                                  float(ts[b]))
            else:
                eps.append(Episode(s, e, minutes, b - a + 1, float(ts[b])))
        if not eps:
            continue
        from fleetmon import specs

        spec = specs.lookup(gpu.name)
        ratio = specs.pcie_ratio(worst_gen, worst_width, spec) if worst_gen and worst_width else None
        evidence = {
            "gen": worst_gen, "width": worst_width, "max_gen": max_gen, "max_width": max_width,
            "busy_minutes": int(sum(e.amount for e in eps)), "episodes": len(eps),
            "bandwidth_ratio": round(ratio, 3) if ratio is not None else None,
            "slots": _slots(gpu, eps),
        }
        out.append(_gpu_finding(
            history, gpu, "pcie-link-degraded", "warning", eps[0].start, eps[-1], evidence,
            "Reseat the card; check or replace the riser/extender cable; check the slot's BIOS "
            "link settings; run system-side PCIe diagnostics",
            f"{_label(gpu)}: PCIe link at Gen{worst_gen} x{worst_width} under load "
            f"(max Gen{max_gen} x{max_width})", _condition_s(t),
            magnitude=float((max_gen or 0) - (worst_gen or 0)) * 100 + float((max_width or 0) - (worst_width or 0)),
        ))
    return out


def check_pcie_replay(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """PCIe replay counter growing (rule P1; replays/min).

    Warning when a row's rate exceeds ``pcie_replay_per_min`` (DCGM's 8 per
    minute); info when the counter grew by ``pcie_replay_info_count`` in the
    window without ever exceeding the rate.
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        tl = gpu.timeline()
        values = tl.col("pcie_replay")
        if not any(tl.col("pcie_replay_delta")) and _first_known(values) == _last_known(values):
            continue
        delta = tl.delta("pcie_replay")
        ts, dur = tl.ts, tl.dur
        grown = [(i, d) for i, d in enumerate(delta) if d > 0]
        if not grown:
            continue
        total = sum(d for _, d in grown)
        rates = [(i, d / (float(dur[i]) / 60.0)) for i, d in grown]
        over = [(i, 1.0) for i, r in rates if r > t.pcie_replay_per_min]
        peak = max(r for _, r in rates)
        if over:
            eps = episodes(ts, dur, over, 1.0)
            evidence = {"max_per_min": round(peak, 2), "total": int(total), "minutes_over": len(over),
                        "threshold_per_min": t.pcie_replay_per_min, "slots": _slots(gpu, eps)}
            out.append(_gpu_finding(
                history, gpu, "pcie-replay", "warning", eps[0].start, eps[-1], evidence,
                "Reconnect the PCIe card; check the riser/extender; run system-side PCIe "
                "diagnostics; if the fault is on the board, run the field diagnostic",
                f"{_label(gpu)}: {peak:.0f} PCIe replays/min (limit {t.pcie_replay_per_min:g})",
                _condition_s(t), magnitude=peak,
            ))
        elif total >= t.pcie_replay_info_count:
            eps = [Episode(float(ts[grown[0][0]]), float(ts[grown[-1][0]]) + float(dur[grown[-1][0]]),
                           total, len(grown), float(ts[grown[-1][0]]))]
            out.append(_gpu_finding(
                history, gpu, "pcie-replay", "info", eps[0].start, eps[0].end,
                {"max_per_min": round(peak, 2), "total": int(total), "minutes_over": 0,
                 "slots": _slots(gpu, eps)},
                "The replay counter grows slowly: watch it; check the riser if it keeps growing",
                f"{_label(gpu)}: {int(total)} PCIe replays in the window", _condition_s(t),
                magnitude=float(total),
            ))
    return out


# ---------------------------------------------------------------------------
# Power


def _slowdown_c(gpu: GpuHistory) -> float | None:
    v = gpu.inv("temp_slowdown_c")
    return float(v) if v else None


def check_power_brake(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Hardware power brake, or hardware slowdown with the GPU not hot (rules T1, T2).

    A minute counts when HwPowerBrakeSlowdown was active, or HwSlowdown
    without HwThermalSlowdown while the GPU stayed below its slowdown
    temperature. Warning when such minutes are at least
    ``hw_slowdown_min_minutes`` and ``hw_slowdown_fraction`` of the active
    (busy or slowed) minutes in ``hw_slowdown_window_minutes``.
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    window_s = t.hw_slowdown_window_minutes * 60.0
    for gpu in history.gpus:
        tl = gpu.timeline()
        brake, slow = tl.col("thr_hw_power_brake"), tl.col("thr_hw_slowdown")
        if not any(brake) and not any(slow):
            continue
        hw_thermal = tl.col("thr_hw_thermal")
        temp = tl.col("temp_c_max")
        n = tl.col("n")
        ts, dur = tl.ts, tl.dur
        slowdown = _slowdown_c(gpu)
        bad: list[tuple[int, float]] = []
        braked = 0
        max_temp = None
        for i in range(len(tl)):
            b, s = brake[i] or 0, slow[i] or 0
            if not b and not s:
                continue
            hot = hw_thermal[i] or (slowdown is not None and temp[i] is not None and temp[i] >= slowdown)
            if not b and hot:
                continue
            count = max(b, s)
            bad.append((i, _amount(float(dur[i]), count, n[i])))
            braked += 1 if b else 0
            if temp[i] is not None:
                max_temp = temp[i] if max_temp is None else max(max_temp, temp[i])
        if not bad:
            continue
        eligible = _eligible_busy(tl)
        for i, a in bad:
            eligible[i] = max(eligible[i], a)
        eps = episodes(ts, dur, bad, t.hw_slowdown_min_minutes * 60.0, window_s,
                       eligible=eligible, fraction=t.hw_slowdown_fraction)
        if not eps:
            continue
        minutes = _minutes(sum(e.amount for e in eps))
        evidence = {"minutes": minutes, "window_min": t.hw_slowdown_window_minutes,
                    "power_brake_rows": braked, "max_temp_c": max_temp, "slowdown_c": slowdown,
                    "episodes": len(eps), "slots": _slots(gpu, eps)}
        out.append(_gpu_finding(
            history, gpu, "power-brake", "warning", eps[0].start, eps[-1], evidence,
            "Check the PSU, the board power cables and the BMC power policy; test with locked "
            "clocks (`nvidia-smi -lgc`)",
            f"{_label(gpu)}: hardware power brake/slowdown for {minutes} min with the GPU not hot",
            _condition_s(t), magnitude=float(minutes),
        ))
    return out


def check_power_instability(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Power draw that drops sharply while utilization stays high (§5; W).

    A minute counts when ``util_gpu_pct_min >= power_drop_util_pct`` and
    ``power_w_min < power_drop_frac * power_w_max``. Warning after
    ``power_drop_minutes`` such minutes within 10 minutes. Minute rows only
    (an hour's min and max say nothing about one moment).
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        tl = gpu.minutes
        if not tl:
            continue
        util = tl.col("util_gpu_pct_min")
        pmin, pmax = tl.col("power_w_min"), tl.col("power_w_max")
        thr_u, frac = t.power_drop_util_pct, t.power_drop_frac
        bad = [
            (i, 60.0) for i, (u, lo, hi) in enumerate(zip(util, pmin, pmax))
            if u is not None and u >= thr_u and lo is not None and hi and lo < frac * hi
        ]
        if not bad:
            continue
        ts, dur = tl.ts, tl.dur
        eps = episodes(ts, dur, bad, t.power_drop_minutes * 60.0)
        if not eps:
            continue
        lows = [pmin[i] for i, _ in bad]
        highs = [pmax[i] for i, _ in bad]
        minutes = _minutes(sum(e.amount for e in eps))
        evidence = {"minutes": minutes, "min_w": min(lows), "max_w": max(highs),
                    "util_min_pct": min(util[i] for i, _ in bad), "episodes": len(eps)}
        out.append(_gpu_finding(
            history, gpu, "power-instability", "warning", eps[0].start, eps[-1], evidence,
            "Power collapses under full load: check the PSU and power cables, look for power-brake "
            "events and Xid 79/62 on this node",
            f"{_label(gpu)}: power dropped to {min(lows):.0f} W from {max(highs):.0f} W under "
            f"full load ({minutes} min)", _condition_s(t), magnitude=float(minutes),
        ))
    return out


def check_power_unreadable(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """The power reading fails (rule W2); unsupported readings never count.

    Warning after ``power_unreadable_minutes`` minutes with ``power_w``
    status "failed" within 10 minutes.
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        tl = gpu.timeline()
        hourly_failed = tl.col("failed_power_w")
        rows = tl.rows_with_status("power_w", Status.FAILED)
        if not rows and not any(hourly_failed):
            continue
        ts, dur = tl.ts, tl.dur
        bad = sorted([(i, float(dur[i])) for i in rows]
                     + [(i, 60.0 * hf) for i, hf in enumerate(hourly_failed) if hf])
        if not bad:
            continue
        eps = episodes(ts, dur, bad, t.power_unreadable_minutes * 60.0)
        if not eps:
            continue
        minutes = _minutes(sum(e.amount for e in eps))
        out.append(_gpu_finding(
            history, gpu, "power-unreadable", "warning", eps[0].start, eps[-1],
            {"minutes": minutes, "episodes": len(eps)},
            "The power sensor stopped answering: check the board's power delivery and the driver; "
            "reset the GPU if it persists",
            f"{_label(gpu)}: power reading failing ({minutes} min)", _condition_s(t),
            magnitude=float(minutes),
        ))
    return out


def check_power_capped(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Enforced power limit below the default, or a platform cap (rules W1, T4).

    ``limit``: warning when the enforced limit is below
    ``power_cap_warning_frac`` of the default limit, info when below the
    default at all. ``platform``: warning after ``platform_cap_minutes`` busy
    minutes within 10 with SwPowerCap active, no hardware reason and power
    under ``platform_cap_power_frac`` of the enforced limit.
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        tl = gpu.timeline()
        default = gpu.inv("power_default_w")
        limits = tl.col("power_limit_w_mean")
        enforced = _last_known(limits)
        if enforced is None:
            enforced = gpu.inv("power_enforced_w")
        if default and enforced is not None and enforced < 0.99 * default:
            ratio = enforced / default
            ts = tl.ts
            first = float(ts[0]) if len(tl) else history.since
            for i in range(len(limits) - 1, -1, -1):
                if limits[i] is not None and limits[i] >= 0.99 * default:
                    first = float(ts[i + 1]) if i + 1 < len(ts) else history.now
                    break
            severity = "warning" if ratio < t.power_cap_warning_frac else "info"
            out.append(_gpu_finding(
                history, gpu, "power-capped", severity, first, history.now,
                {"enforced_w": enforced, "default_w": default, "ratio": round(ratio, 3)},
                "Someone or something lowered the power limit: restore it with `nvidia-smi -pl` "
                "or record why (BMC, PSU budget); it lowers clocks",
                f"{_label(gpu)}: power limit {enforced:.0f} W of {default:.0f} W default "
                f"({ratio:.0%})", _condition_s(t), discriminator="limit",
                magnitude=1.0 - ratio, open_now=True,
            ))
        cap = tl.col("thr_sw_power_cap")
        if not any(cap):
            continue
        n, busy = tl.col("n"), tl.col("busy_n")
        power = tl.col("power_w_mean")
        hw = _hw_rows(tl)
        ts, dur = tl.ts, tl.dur
        frac = t.platform_cap_power_frac
        candidates = [i for i, (c, pw, lim) in enumerate(zip(cap, power, limits))
                      if c and pw is not None and lim and pw < frac * lim]
        bad = []
        for i in candidates:
            if dur[i] > 60 or not n[i] or (busy[i] or 0) * 2 < n[i]:
                continue
            if hw[0][i] or hw[1][i] or hw[2][i] or hw[3][i]:
                continue
            bad.append((i, 60.0))
        eps = episodes(ts, dur, bad, t.platform_cap_minutes * 60.0)
        if not eps:
            continue
        minutes = _minutes(sum(e.amount for e in eps))
        out.append(_gpu_finding(
            history, gpu, "power-capped", "warning", eps[0].start, eps[-1],
            {"minutes": minutes, "power_w": min(power[i] for i, _ in bad),
             "limit_w": _last_known(limits), "platform": True},
            "SwPowerCap holds the GPU far below its limit with no hardware reason: a platform or "
            "BMC power cap (check the BMC thermal/power tables and the PSU budget)",
            f"{_label(gpu)}: platform power cap ({minutes} min)", _condition_s(t),
            discriminator="platform", magnitude=float(minutes),
        ))
    return out


# ---------------------------------------------------------------------------
# Thermal


def check_thermal_throttle(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Hardware or software thermal slowdown time (rule T3; minutes).

    Warning after ``thermal_minutes`` minutes with SwThermalSlowdown or
    HwThermalSlowdown within 10 minutes.
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        tl = gpu.timeline()
        hw, sw = tl.col("thr_hw_thermal"), tl.col("thr_sw_thermal")
        if not any(hw) and not any(sw):
            continue
        n, temp = tl.col("n"), tl.col("temp_c_max")
        ts, dur = tl.ts, tl.dur
        bad = [(i, _amount(float(dur[i]), max(hw[i] or 0, sw[i] or 0), n[i]))
               for i in range(len(tl)) if hw[i] or sw[i]]
        eps = episodes(ts, dur, bad, t.thermal_minutes * 60.0)
        if not eps:
            continue
        minutes = _minutes(sum(e.amount for e in eps))
        temps = [temp[i] for i, _ in bad if temp[i] is not None]
        reasons = []
        if any(hw):
            reasons.append("hw_thermal")
        if any(sw):
            reasons.append("sw_thermal")
        evidence = {"minutes": minutes, "reasons": reasons, "max_temp_c": max(temps) if temps else None,
                    "slowdown_c": _slowdown_c(gpu), "episodes": len(eps)}
        out.append(_gpu_finding(
            history, gpu, "thermal-throttle", "warning", eps[0].start, eps[-1], evidence,
            "Check cooling: fans, airflow, dust, room temperature, thermal paste",
            f"{_label(gpu)}: thermal slowdown for {minutes} min ({', '.join(reasons)})",
            _condition_s(t), magnitude=float(minutes),
        ))
    return out


def check_temperature(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """The GPU runs near its slowdown (warning) or shutdown (critical) temperature (°C).

    The limit is ``temp_slowdown_c - temperature_margin_c`` where the card
    reports its slowdown temperature, else ``temperature_warning_c``; critical
    from ``temp_shutdown_c - temperature_margin_c`` (else
    ``temperature_critical_c``). Needs ``temperature_minutes`` minutes within
    10 (hourly rows count by their mean).
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        slowdown = _slowdown_c(gpu)
        shutdown = gpu.inv("temp_shutdown_c")
        limit = slowdown - t.temperature_margin_c if slowdown else t.temperature_warning_c
        critical = float(shutdown) - t.temperature_margin_c if shutdown else t.temperature_critical_c
        tl = gpu.timeline()
        tmax = tl.col("temp_c_max")
        peak = max((v for v in tmax if v is not None), default=None)
        if peak is None or peak < limit:
            continue
        tmean = tl.col("temp_c_mean")
        ts, dur = tl.ts, tl.dur
        bad = []
        for i in range(len(tl)):
            v = tmax[i] if dur[i] <= 60 else tmean[i]
            if v is not None and v >= limit:
                bad.append((i, float(dur[i])))
        eps = episodes(ts, dur, bad, t.temperature_minutes * 60.0)
        if not eps:
            continue
        worst = max(tmax[i] for i, _ in bad if tmax[i] is not None)
        severity = "critical" if worst >= critical else "warning"
        minutes = _minutes(sum(e.amount for e in eps))
        out.append(_gpu_finding(
            history, gpu, "temperature-high", severity, eps[0].start, eps[-1],
            {"max_temp_c": worst, "limit_c": limit, "critical_c": critical, "slowdown_c": slowdown,
             "minutes": minutes},
            "Improve cooling: check fans, airflow, blanking panels and inlet temperature",
            f"{_label(gpu)}: {worst:.0f} °C (limit {limit:.0f} °C)", _condition_s(t),
            magnitude=float(worst),
        ))
    return out


def check_fan_stopped(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """A fan at 0 % while the GPU is at least ``fan_stopped_temp_c`` hot (warning).

    Cards without fans report no fan speed (unsupported) and are never
    flagged; a fan at 0 % on a cool card is a zero-RPM mode, not a fault.
    """
    t = _t(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        tl = gpu.timeline()
        fan = tl.col("fan_pct_max")
        if 0 not in fan:
            continue
        temp = tl.col("temp_c_max")
        ts, dur = tl.ts, tl.dur
        bad = [(i, float(dur[i])) for i in range(len(tl))
               if fan[i] is not None and fan[i] == 0 and temp[i] is not None
               and temp[i] >= t.fan_stopped_temp_c]
        eps = episodes(ts, dur, bad, t.fan_stopped_minutes * 60.0)
        if not eps:
            continue
        minutes = _minutes(sum(e.amount for e in eps))
        out.append(_gpu_finding(
            history, gpu, "fan-stopped", "warning", eps[0].start, eps[-1],
            {"minutes": minutes, "max_temp_c": max(temp[i] for i, _ in bad)},
            "Replace or reconnect the fan; until then keep the card idle or power-limited",
            f"{_label(gpu)}: fan at 0 % while {max(temp[i] for i, _ in bad):.0f} °C",
            _condition_s(t), magnitude=float(minutes),
        ))
    return out


def check_derating(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Derating against the model's fleet median and nominal spec (rules D1, I1).

    See :func:`fleetmon.health.derating.check_derating`.
    """
    from fleetmon.health import derating

    return derating.check_derating(history, thresholds)


RULES: tuple[Rule, ...] = (
    check_driver_versions, check_vbios, check_ecc_uncorrectable, check_ecc_correctable,
    check_retired_pages, check_row_remap, check_xid, check_gpu_lost, check_gpu_missing,
    check_pcie_link, check_pcie_replay, check_power_brake, check_power_instability,
    check_power_unreadable, check_power_capped, check_thermal_throttle, check_temperature,
    check_fan_stopped, check_derating, check_node_unreachable, check_node_flapping,
    check_inventory_changes,
)
"""Every rule, in report order."""
