"""What every rule family shares: episodes, finding builders and column helpers.

The rule modules (and :mod:`fleetmon.health.rules.derating`) import these by
their public names; no module reaches into another's privates. Everything
here is pure: the time is ``history.now``.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fleetmon.health.findings import Finding, finding_key
from fleetmon.health.fleet import FleetHistory, GpuHistory
from fleetmon.health.series import Series
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text

__all__ = [
    "WINDOW_S",
    "Episode",
    "busy_seconds",
    "condition_resolve_s",
    "diagnostics",
    "effective_thresholds",
    "episodes",
    "event_resolve_s",
    "first_known",
    "gpu_finding",
    "gpu_label",
    "held_seconds",
    "last_known",
    "node_finding",
    "open_or_resolved",
    "slots_of",
    "slowdown_c",
    "whole_minutes",
]

WINDOW_S = 600
"""The sliding window of the persistence rules (10 minutes, the timeliness bound)."""


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


def effective_thresholds(history: FleetHistory, thresholds: Thresholds | None) -> Thresholds:
    """The thresholds a rule runs with: its argument, else the history's, else the defaults."""
    if thresholds is not None:
        return thresholds
    if isinstance(history.thresholds, Thresholds):
        return history.thresholds
    return Thresholds()


def open_or_resolved(history: FleetHistory, last_seen: float, resolve_s: float) -> str:
    """"open" while the evidence is younger than ``resolve_s``, else "resolved"."""
    return "open" if last_seen >= history.now - resolve_s else "resolved"


def condition_resolve_s(t: Thresholds) -> float:
    """How long a condition finding stays open after its last evidence (s)."""
    return t.resolve_after_minutes * 60.0


def event_resolve_s(t: Thresholds) -> float:
    """How long an event finding (Xid, new ECC error, inventory change) stays open (s)."""
    return t.event_resolve_hours * 3600.0


def gpu_finding(
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
    current = gpu_label(gpu)
    if summary.startswith(current + ":") and place.node:
        idx = place.index if place.index is not None else gpu.index
        label = f"{place.node} gpu{idx}" if idx is not None else f"{place.node} {gpu.uuid}"
        # The placeholder holding the label ({gpu}, or {where} of an Xid) gets the place: the same English,
        # and still translatable.
        named = [k for k, v in summary.args.items() if v == current] if isinstance(summary, Text) else []
        if isinstance(summary, Text) and named:
            summary = summary.with_args(**{named[0]: label})
        else:
            summary = label + summary[len(current):]
    if open_now is None:
        state = open_or_resolved(history, last, resolve_s)
    else:
        state = "open" if open_now else "resolved"
    evidence.setdefault("model", gpu.name)
    return Finding(
        kind=kind, severity=severity, node=node, gpu_uuid=gpu.uuid,
        first_seen=float(first), last_seen=float(last), evidence=evidence, action=action,
        summary=summary, key=finding_key(kind, node, gpu.uuid, discriminator), state=state,
        gpu_index=place.index if place.index is not None else gpu.index, magnitude=magnitude,
    )


def node_finding(
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
    """A node finding (no GPU), open or resolved like :func:`gpu_finding`."""
    if open_now is None:
        state = open_or_resolved(history, last, resolve_s)
    else:
        state = "open" if open_now else "resolved"
    return Finding(
        kind=kind, severity=severity, node=node, gpu_uuid=None,
        first_seen=float(first), last_seen=float(last), evidence=evidence, action=action,
        summary=summary, key=finding_key(kind, node, None, discriminator), state=state,
        magnitude=magnitude,
    )


_DIAGNOSTICS = {"nvidia": Text("`dcgmi diag -r 3`"), "amd": Text(N_("AMD's ROCm Validation Suite (`rvs`)")),
                "huawei": Text(N_("Huawei's `ascend-dmi` diagnostics")), "intel": Text(N_("Habana's `hl_qual`"))}
"""Each vendor's device diagnostics, for the advice of the ECC rules (DCGM, ROCm Validation Suite, Ascend DMI,
Habana's hl_qual); any other vendor: its vendor's diagnostics, unnamed."""


def diagnostics(gpu: GpuHistory) -> str:
    """The diagnostics to run on ``gpu`` in an action's words (a card stored without a vendor is NVIDIA's)."""
    vendor = str(gpu.inv("vendor") or "nvidia")
    return _DIAGNOSTICS.get(vendor, Text(N_("the vendor's device diagnostics")))


def gpu_label(gpu: GpuHistory) -> str:
    """``node gpuN`` (or ``node UUID`` without an index): how summaries name a card."""
    place = gpu.placements[-1] if gpu.placements else None
    idx = gpu.index if gpu.index is not None else (place.index if place else None)
    return f"{gpu.node} gpu{idx}" if idx is not None else f"{gpu.node} {gpu.uuid}"


def last_known(values: Sequence[Any]) -> Any:
    """The last value that is not None (None when there is none)."""
    for v in reversed(values):
        if v is not None:
            return v
    return None


def first_known(values: Sequence[Any]) -> Any:
    """The first value that is not None (None when there is none)."""
    for v in values:
        if v is not None:
            return v
    return None


def known_max(values: Sequence[Any]) -> Any:
    """The largest value that is not None (None when there is none)."""
    if None in values:  # a scan in C: most columns have no gap
        values = [v for v in values if v is not None]
    return max(values) if values else None


def known_min(values: Sequence[Any]) -> Any:
    """The smallest value that is not None (None when there is none)."""
    if None in values:
        values = [v for v in values if v is not None]
    return min(values) if values else None


def slots_of(gpu: GpuHistory, eps: Sequence[Episode]) -> list[str]:
    """The slots (``node:pci``) the card sat in while its bad rows started (moves dated by its rows)."""
    seen: list[str] = []
    places = gpu.located_placements()
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


def whole_minutes(amount_s: float) -> int:
    """Seconds of evidence as rounded minutes (for evidence and summaries)."""
    return int(round(amount_s / 60.0))


def held_seconds(dur: float, count: Any, n: Any) -> float:
    """Seconds of a row in which something held: whole minutes, prorated hours."""
    if dur <= 60:
        return float(dur)
    if not n:
        return float(dur)
    return float(dur) * min(1.0, float(count) / float(n))


def busy_seconds(series: Series) -> list[float]:
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


def slowdown_c(gpu: GpuHistory) -> float | None:
    """The card's reported slowdown temperature (°C), or None when it reports none."""
    v = gpu.inv("temp_slowdown_c")
    return float(v) if v else None
