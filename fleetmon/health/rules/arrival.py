"""Arrival history: a card that arrives with a past (the intake check, rules M1-M3 at first sight).

The other memory rules look at increases within the window, so a card whose
NVML already reports lifetime uncorrectable ECC errors, retired pages, a
pending retirement, remapped rows or a remap failure the first time fleetmon
sees it would be judged healthy. In a fleet of second-hand cards that is the
check that matters most.

*First sight* is the card's ``first_seen`` (when the store first enrolled it),
and only when that lies inside the window under review: a card seen long
before ``history.since`` whose first row in the window is merely the window's
start has no arrival. The card's state at first sight is its first row (an
hourly row's counter is its value at the start of the hour: the last value
less the hour's increase); a reading missing from the first row is taken from
the first rows within ten minutes of it. A ``None`` reading (unsupported,
failed) is never zero and never history.
"""

from __future__ import annotations

from typing import Any

from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory, GpuHistory
from fleetmon.health.rules.helpers import WINDOW_S, condition_resolve_s, effective_thresholds, gpu_finding, gpu_label
from fleetmon.health.series import Series
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text, listing

__all__ = ["arrival_state", "check_arrival_history", "memory_faults"]

_COUNTERS = ("ecc_unc_agg", "ecc_corr_agg", "retired_sbe", "retired_dbe", "remap_corr", "remap_unc")
_STATES = ("retired_pending", "remap_failure")
_REMAP = ("remap_corr", "remap_unc", "remap_failure")


def arrival_state(tl: Series) -> dict[str, Any]:
    """The memory counters and states of a card's first rows (None where never known).

    A counter of an hourly row is the value at the start of the hour
    (``value - <counter>_delta``, never below 0); a state of an hourly row is
    its highest value in the hour (``<state>_max``).
    """
    ts = tl.ts
    end = float(ts[0]) + WINDOW_S
    stop = 1
    while stop < len(tl) and float(ts[stop]) < end:
        stop += 1
    out: dict[str, Any] = {}
    for key in _COUNTERS:
        values, deltas = tl.col(key), tl.col(key + "_delta")
        found = None
        for i in range(stop):
            v = values[i]
            if v is not None:
                d = deltas[i]
                found = max(v - d, 0) if d is not None and d > 0 else v
                break
        out[key] = found
    for key in _STATES:
        values, highest = tl.col(key), tl.col(key + "_max")
        found = None
        for i in range(stop):
            v = highest[i] if highest[i] is not None else values[i]
            if v is not None:
                found = v
                break
        out[key] = found
    return out


def _first_sight(history: FleetHistory, gpu: GpuHistory, tl: Series) -> float | None:
    """When the card was first seen, if that lies in the window (else None: no arrival to judge)."""
    seen = gpu.first_seen
    if seen is None or not tl:
        return None
    seen = float(seen)
    if seen < history.since or seen > history.now:
        return None
    # Minutes the agent buffered before the first poll are older than ``first_seen``.
    return min(seen, float(tl.ts[0]))


def memory_faults(state: dict[str, Any], t: Thresholds) -> tuple[list[str], bool, bool]:
    """What a card's lifetime memory counters say, judged with the ``arrival_*`` thresholds.

    ``state`` is :func:`arrival_state`'s (None where not reported). Returns the
    faults in words, whether any reaches a warning and whether any reaches the
    critical (RMA) class. The arrival-history rule and the intake check judge
    alike through this one function.
    """
    unc = state["ecc_unc_agg"]
    sbe, dbe = state["retired_sbe"], state["retired_dbe"]
    pending, failure = state["retired_pending"], state["remap_failure"]
    rows_corr, rows_unc = state["remap_corr"], state["remap_unc"]
    pages = None if sbe is None and dbe is None else (sbe or 0) + (dbe or 0)
    rows = None if rows_corr is None and rows_unc is None else (rows_corr or 0) + (rows_unc or 0)
    told: list[str] = []
    critical = warning = False
    if unc:
        told.append(Text(N_("{count} lifetime uncorrectable ECC errors") if unc != 1
                         else N_("{count} lifetime uncorrectable ECC error"), count=int(unc)))
        warning = True
        critical |= unc >= t.arrival_unc_ecc_critical
    if pages is not None and pages >= t.arrival_retired_pages_warning:
        told.append(Text(N_("{count} retired pages") if pages != 1 else N_("{count} retired page"), count=int(pages)))
        warning = True
        critical |= pages >= t.arrival_retired_pages_critical
    if pending:
        told.append(Text(N_("a page retirement pending")))
        warning = True
    if rows is not None and rows >= t.arrival_remapped_rows_warning:
        told.append(Text(N_("{count} remapped rows") if rows != 1 else N_("{count} remapped row"), count=int(rows)))
        warning = True
        critical |= (rows_unc or 0) >= t.arrival_remapped_rows_critical
    if state.get("remap_pending"):
        told.append(Text(N_("a row remap pending (applied at the next GPU reset)")))
        warning = True
    if failure:
        told.append(Text(N_("a row remap failure")))
        critical = True
    return told, warning, critical


def check_arrival_history(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """A card that arrived with lifetime memory errors or repairs (one finding per card).

    Critical from ``arrival_unc_ecc_critical`` lifetime uncorrectable ECC
    errors, from ``arrival_retired_pages_critical`` retired pages, from
    ``arrival_remapped_rows_critical`` rows remapped for uncorrectable errors,
    or with a remap failure; warning for any lifetime uncorrectable error,
    ``arrival_retired_pages_warning`` retired pages,
    ``arrival_remapped_rows_warning`` remapped rows or a pending retirement.
    Remap readings are ignored on a card with ECC off (they mean nothing
    there, see :func:`~fleetmon.health.rules.memory.check_row_remap`).
    """
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        first_seen = gpu.first_seen
        if first_seen is None or not history.since <= float(first_seen) <= history.now:
            continue  # cheap test first: most cards were seen before the window
        # The card's first rows are hourly ones when the window's hourly part holds it, else minutes:
        # read that Series alone (the whole timeline's columns are concatenations of both).
        hours, mins = gpu.hourly, gpu.minutes
        tl = hours if hours and (not mins or float(hours.ts[0]) < float(mins.ts[0])) else mins
        sight = _first_sight(history, gpu, tl)
        if sight is None:
            continue
        state = arrival_state(tl)
        ecc = gpu.inv("ecc_mode_current")
        if ecc is not None and not ecc:
            for key in _REMAP:
                state[key] = None
        unc, corr = state["ecc_unc_agg"], state["ecc_corr_agg"]
        sbe, dbe = state["retired_sbe"], state["retired_dbe"]
        pending, failure = state["retired_pending"], state["remap_failure"]
        rows_corr, rows_unc = state["remap_corr"], state["remap_unc"]
        told, warning, critical = memory_faults(state, t)
        if not (warning or critical):
            continue
        severity = "critical" if critical else "warning"
        evidence: dict[str, Any] = {
            "ecc_unc_agg": unc, "ecc_corr_agg": corr, "retired_sbe": sbe, "retired_dbe": dbe,
            "retired_pending": None if pending is None else bool(pending),
            "remap_correctable_rows": rows_corr, "remap_uncorrectable_rows": rows_unc,
            "remap_failure": None if failure is None else bool(failure), "first_sight": sight,
        }
        action = (
            N_("Intake: the card arrived with memory faults past the RMA class; return it to the seller "
               "(or RMA it) rather than put it into service; confirm with `dcgmi diag -r 3`")
            if critical else
            N_("Intake: the card arrived with a memory history; return it to the seller, or accept it only "
               "after a burn-in (`dcgmi diag -r 3`, a day under load) shows no new errors"))
        out.append(gpu_finding(
            history, gpu, "arrival-history", severity, sight, sight, evidence, action,
            Text(N_("{gpu}: arrived with {faults}"), gpu=gpu_label(gpu), faults=listing(told)), condition_resolve_s(t),
            magnitude=float((unc or 0) + (sbe or 0) + (dbe or 0) + (rows_corr or 0) + (rows_unc or 0)
                            + (1 if failure else 0)),
            open_now=True, at=sight,
        ))
    return out
