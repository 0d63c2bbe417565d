"""Power rules: brakes, instability, unreadable sensors and caps (rules T1, T2, W1, W2, T4)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fleetmon.records import Status
from fleetmon.fields import HW_THROTTLE_REASONS
from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory
from fleetmon.health.rules.helpers import (
    busy_seconds,
    condition_resolve_s,
    effective_thresholds,
    episodes,
    gpu_finding,
    gpu_label,
    held_seconds,
    known_max,
    last_known,
    slots_of,
    slowdown_c,
    whole_minutes,
)
from fleetmon.health.series import Series
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text

__all__ = ["check_power_brake", "check_power_capped", "check_power_instability", "check_power_unreadable"]


def _hw_rows(series: Series) -> tuple[Sequence[Any], ...]:
    return tuple(series.col("thr_" + r) for r in HW_THROTTLE_REASONS)


def check_power_brake(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Hardware power brake, or hardware slowdown with the GPU not hot (rules T1, T2).

    A minute counts when HwPowerBrakeSlowdown was active, or HwSlowdown
    without HwThermalSlowdown while the GPU stayed below its slowdown
    temperature. Warning when such minutes are at least
    ``hw_slowdown_min_minutes`` and ``hw_slowdown_fraction`` of the active
    (busy or slowed) minutes in ``hw_slowdown_window_minutes``.
    """
    t = effective_thresholds(history, thresholds)
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
        slowdown = slowdown_c(gpu)
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
            bad.append((i, held_seconds(float(dur[i]), count, n[i])))
            braked += 1 if b else 0
            if temp[i] is not None:
                max_temp = temp[i] if max_temp is None else max(max_temp, temp[i])
        if not bad:
            continue
        eligible = busy_seconds(tl)
        for i, a in bad:
            eligible[i] = max(eligible[i], a)
        eps = episodes(ts, dur, bad, t.hw_slowdown_min_minutes * 60.0, window_s,
                       eligible=eligible, fraction=t.hw_slowdown_fraction)
        if not eps:
            continue
        minutes = whole_minutes(sum(e.amount for e in eps))
        evidence = {"minutes": minutes, "window_min": t.hw_slowdown_window_minutes,
                    "power_brake_rows": braked, "max_temp_c": max_temp, "slowdown_c": slowdown,
                    "episodes": len(eps), "slots": slots_of(gpu, eps)}
        out.append(gpu_finding(
            history, gpu, "power-brake", "warning", eps[0].start, eps[-1], evidence,
            N_("Check the PSU, the board power cables and the BMC power policy; test with locked "
               "clocks (`nvidia-smi -lgc`)"),
            Text(N_("{gpu}: hardware power brake/slowdown for {minutes} min with the GPU not hot"),
                 gpu=gpu_label(gpu), minutes=minutes),
            condition_resolve_s(t), magnitude=float(minutes),
        ))
    return out


def check_power_instability(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Power draw that drops sharply while utilization stays high (§5; W).

    A minute counts when ``util_gpu_pct_min >= power_drop_util_pct`` and
    ``power_w_min < power_drop_frac * power_w_max``. Warning after
    ``power_drop_minutes`` such minutes within 10 minutes. Minute rows only
    (an hour's min and max say nothing about one moment).
    """
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        tl = gpu.minutes
        if not tl:
            continue
        util = tl.col("util_gpu_pct_min")
        thr_u, frac = t.power_drop_util_pct, t.power_drop_frac
        top = known_max(util)
        if top is None or top < thr_u:  # never under full load in the window
            continue
        pmin, pmax = tl.col("power_w_min"), tl.col("power_w_max")
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
        minutes = whole_minutes(sum(e.amount for e in eps))
        evidence = {"minutes": minutes, "min_w": min(lows), "max_w": max(highs),
                    "util_min_pct": min(util[i] for i, _ in bad), "episodes": len(eps)}
        out.append(gpu_finding(
            history, gpu, "power-instability", "warning", eps[0].start, eps[-1], evidence,
            N_("Power collapses under full load: check the PSU and power cables, look for power-brake "
               "events and Xid 79/62 on this node"),
            Text(N_("{gpu}: power dropped to {low:.0f} W from {high:.0f} W under full load ({minutes} min)"),
                 gpu=gpu_label(gpu), low=min(lows), high=max(highs), minutes=minutes),
            condition_resolve_s(t), magnitude=float(minutes),
        ))
    return out


def check_power_unreadable(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """The power reading fails (rule W2); unsupported readings never count.

    Warning after ``power_unreadable_minutes`` minutes with ``power_w``
    status "failed" within 10 minutes.
    """
    t = effective_thresholds(history, thresholds)
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
        minutes = whole_minutes(sum(e.amount for e in eps))
        out.append(gpu_finding(
            history, gpu, "power-unreadable", "warning", eps[0].start, eps[-1],
            {"minutes": minutes, "episodes": len(eps)},
            N_("The power sensor stopped answering: check the board's power delivery and the driver; "
               "reset the GPU if it persists"),
            Text(N_("{gpu}: power reading failing ({minutes} min)"), gpu=gpu_label(gpu), minutes=minutes),
            condition_resolve_s(t),
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
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        tl = gpu.timeline()
        default = gpu.inv("power_default_w")
        limits = tl.col("power_limit_w_mean")
        enforced = last_known(limits)
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
            out.append(gpu_finding(
                history, gpu, "power-capped", severity, first, history.now,
                {"enforced_w": enforced, "default_w": default, "ratio": round(ratio, 3)},
                N_("Someone or something lowered the power limit: restore it with `nvidia-smi -pl` "
                   "or record why (BMC, PSU budget); it lowers clocks"),
                Text(N_("{gpu}: power limit {enforced:.0f} W of {default:.0f} W default ({ratio:.0%})"),
                     gpu=gpu_label(gpu), enforced=enforced, default=default, ratio=ratio),
                condition_resolve_s(t), discriminator="limit",
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
        minutes = whole_minutes(sum(e.amount for e in eps))
        out.append(gpu_finding(
            history, gpu, "power-capped", "warning", eps[0].start, eps[-1],
            {"minutes": minutes, "power_w": min(power[i] for i, _ in bad),
             "limit_w": last_known(limits), "platform": True},
            N_("SwPowerCap holds the GPU far below its limit with no hardware reason: a platform or "
               "BMC power cap (check the BMC thermal/power tables and the PSU budget)"),
            Text(N_("{gpu}: platform power cap ({minutes} min)"), gpu=gpu_label(gpu), minutes=minutes),
            condition_resolve_s(t),
            discriminator="platform", magnitude=float(minutes),
        ))
    return out
