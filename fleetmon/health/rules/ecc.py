"""ECC error rules: uncorrectable errors, corrected-error storms and trends (rules M1, M4)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory
from fleetmon.health.rules.helpers import (
    condition_resolve_s,
    diagnostics,
    effective_thresholds,
    episodes,
    event_resolve_s,
    first_known,
    gpu_finding,
    gpu_label,
    last_known,
)
from fleetmon.health.series import DAY_S
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text

__all__ = ["check_ecc_correctable", "check_ecc_uncorrectable"]


def _ecc_deltas(tl: Any, kind: str) -> tuple[list[Any], list[Any]] | None:
    """Per-row growth of the volatile and aggregate ECC counts of ``kind`` ("unc" or "corr").

    None when neither count ever moved in the window (the common, healthy case).
    """
    vol = tl.col(f"ecc_{kind}_vol")
    agg = tl.col(f"ecc_{kind}_agg")
    if not any(vol) and not any(tl.col(f"ecc_{kind}_agg_delta")) and first_known(agg) == last_known(agg):
        return None
    return tl.delta(f"ecc_{kind}_vol"), tl.delta(f"ecc_{kind}_agg")


def check_ecc_uncorrectable(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """New uncorrectable ECC errors, or volatile ones not cleared (rule M1; errors).

    Critical when at least ``ecc_uncorrected_critical`` new errors appeared in
    the window (volatile or aggregate counter) or the volatile count is
    non-zero (no reset since the error); warning for fewer new errors than
    that threshold. Open while the volatile count stays non-zero.
    """
    t = effective_thresholds(history, thresholds)
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
        vol_first = first_known(vol)
        vol_last = last_known(vol)
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
            "new": int(new), "volatile": vol_last, "aggregate": last_known(agg),
            "volatile_at_start": vol_first, "increases": len(rows),
            "first_increase_ts": float(ts[rows[0]]) if rows else None,
            "before_window": bool(vol_first) and (not rows or float(ts[rows[0]]) > float(ts[0])),
        }
        summary = (Text(N_("{gpu}: {count} new uncorrectable ECC error(s)"), gpu=gpu_label(gpu), count=int(new))
                   if new else Text(N_("{gpu}: {count} uncorrectable ECC error(s) since the last reset"),
                                    gpu=gpu_label(gpu), count=vol_last))
        out.append(gpu_finding(
            history, gpu, "ecc-uncorrectable", severity, first, last, evidence,
            Text(N_("Drain the node and reset the GPU; run {diagnostics}; if errors recur, RMA the card"),
                 diagnostics=diagnostics(gpu)),
            summary, event_resolve_s(t), magnitude=float(max(new, vol_last or 0)),
            open_now=True if standing else None,
        ))
    return out


def check_ecc_correctable(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Corrected ECC errors at a high rate, or rising daily (rule M4; errors/min).

    Warning when the mean rate over ``ecc_corrected_window_minutes`` reaches
    ``ecc_corrected_per_min``; info when the daily count rose for
    ``ecc_trend_days`` days in a row.
    """
    t = effective_thresholds(history, thresholds)
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
            out.append(gpu_finding(
                history, gpu, "ecc-correctable-storm", "warning", eps[0].start, eps[-1], evidence,
                Text(N_("Early warning of memory degradation: watch the trend, schedule {diagnostics}; "
                        "check for pending retirements or remaps"), diagnostics=diagnostics(gpu)),
                Text(N_("{gpu}: corrected ECC errors at up to {rate:.0f}/min"), gpu=gpu_label(gpu), rate=peak),
                condition_resolve_s(t), discriminator="rate", magnitude=peak,
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
                out.append(gpu_finding(
                    history, gpu, "ecc-correctable-storm", "info", recent[0] * DAY_S,
                    float(ts[bad[-1][0]]) + float(dur[bad[-1][0]]),
                    {"per_day": [int(c) for c in counts], "days": len(recent)},
                    N_("Corrected ECC errors rise day over day: watch for retirements or remaps, "
                       "plan a diagnostic"),
                    Text(N_("{gpu}: corrected ECC errors rising for {days} days"), gpu=gpu_label(gpu),
                         days=len(recent)), event_resolve_s(t), discriminator="trend", magnitude=counts[-1],
                ))
    return out
