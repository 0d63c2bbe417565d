"""Memory repair rules: retired pages and row remapping (rules M2, M3)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory
from fleetmon.health.rules.helpers import (
    condition_resolve_s,
    effective_thresholds,
    first_known,
    gpu_finding,
    gpu_label,
    last_known,
)
from fleetmon.health.series import DAY_S
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text

__all__ = ["check_retired_pages", "check_row_remap"]


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
    latest = last_known(flags)
    return float(ts[start]), float(ts[last_true]) + float(dur[last_true]), bool(latest)


def check_retired_pages(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Retired pages near the limit, or a retirement pending (rule M2; pages).

    ``count``: warning from ``retired_pages_warning`` pages (SBE + DBE),
    critical from ``retired_pages_critical``, or with more than
    ``retired_dbe_soft_limit`` DBE pages and more than one new in 7 days.
    ``pending``: warning while a retirement waits for a GPU reset.
    """
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        tl = gpu.timeline()
        sbe, dbe = tl.col("retired_sbe"), tl.col("retired_dbe")
        pending = tl.col("retired_pending")
        pending_max = tl.col("retired_pending_max")
        if not any(sbe) and not any(dbe) and not any(pending) and not any(pending_max):
            continue
        ts, dur = tl.ts, tl.dur
        last_sbe, last_dbe = last_known(sbe) or 0, last_known(dbe) or 0
        total = last_sbe + last_dbe
        limit = 64
        dbe_week_ago = None
        week = history.now - 7 * DAY_S
        for i in range(len(tl)):
            if float(ts[i]) <= week and dbe[i] is not None:
                dbe_week_ago = dbe[i]
        if dbe_week_ago is None:
            dbe_week_ago = first_known(dbe) or 0
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
            out.append(gpu_finding(
                history, gpu, "retired-pages", severity, first, history.now,
                {"sbe": last_sbe, "dbe": last_dbe, "total": total, "limit": limit,
                 "new_dbe_7d": new_dbe},
                N_("RMA candidate: confirm with `dcgmi diag -r 3` and replace the card")
                if severity == "critical" else
                N_("Retired pages near the limit of 64: plan a replacement; confirm with field diagnostics"),
                Text(N_("{gpu}: {count} retired pages (limit {limit})"), gpu=gpu_label(gpu), count=total,
                     limit=limit), condition_resolve_s(t),
                discriminator="count", magnitude=float(total), open_now=True,
            ))
        flags = [p if p is not None else m for p, m in zip(pending, pending_max)]
        run = _pending_episode(ts, dur, flags)
        if run:
            start, end, still = run
            out.append(gpu_finding(
                history, gpu, "retired-pages", "warning", start, history.now if still else end,
                {"pending": still, "sbe": last_sbe, "dbe": last_dbe, "total": total},
                N_("A page retirement waits for a GPU reset: reset the GPU (or reload the driver) at "
                   "the next job boundary"),
                Text(N_("{gpu}: page retirement pending (reset needed)"), gpu=gpu_label(gpu)),
                condition_resolve_s(t), discriminator="pending", open_now=still or None,
            ))
    return out


def check_row_remap(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Row remap pending (reset needed) or failed (replacement) (rule M3).

    Skipped on cards whose ECC mode is off (GetRemappedRows answers on an RTX
    4090 without meaning anything, gpud).
    """
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        ecc = gpu.inv("ecc_mode_current")
        if ecc is not None and not ecc:
            continue
        tl = gpu.timeline()
        flags = [tl.col(k) for k in ("remap_pending", "remap_pending_max", "remap_failure", "remap_failure_max")]
        if not any(map(any, flags)):  # nothing pending or failed in any row (most cards, every pass)
            continue
        pend = [p if p is not None else m for p, m in zip(flags[0], flags[1])]
        fail = [p if p is not None else m for p, m in zip(flags[2], flags[3])]
        if not any(pend) and not any(fail):
            continue
        ts, dur = tl.ts, tl.dur
        rows = {"correctable_rows": last_known(tl.col("remap_corr")),
                "uncorrectable_rows": last_known(tl.col("remap_unc"))}
        run = _pending_episode(ts, dur, fail)
        if run:
            start, end, still = run
            out.append(gpu_finding(
                history, gpu, "row-remap", "critical", start, history.now if still else end,
                {"failure": True, **rows},
                N_("Row remapping failed (no spare rows): drain, confirm with `dcgmi diag -r 3` and "
                   "replace the card (RMA)"),
                Text(N_("{gpu}: row remap failure (replace the card)"), gpu=gpu_label(gpu)),
                condition_resolve_s(t), discriminator="failure", open_now=still or None,
                magnitude=float(rows["uncorrectable_rows"] or 1),
            ))
        run = _pending_episode(ts, dur, pend)
        if run:
            start, end, still = run
            out.append(gpu_finding(
                history, gpu, "row-remap", "warning", start, history.now if still else end,
                {"pending": still, **rows},
                N_("A row remap waits for a GPU reset: reset the GPU at the next job boundary"),
                Text(N_("{gpu}: row remap pending (reset needed)"), gpu=gpu_label(gpu)), condition_resolve_s(t),
                discriminator="pending", open_now=still or None,
            ))
    return out
