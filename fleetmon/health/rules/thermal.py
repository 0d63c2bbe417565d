"""Thermal rules: thermal slowdown, high temperature and stopped fans (rule T3)."""

from __future__ import annotations

from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory
from fleetmon.health.rules.helpers import (
    condition_resolve_s,
    effective_thresholds,
    episodes,
    gpu_finding,
    gpu_label,
    held_seconds,
    known_max,
    slowdown_c,
    whole_minutes,
)
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text

__all__ = ["check_fan_stopped", "check_temperature", "check_thermal_throttle"]


def check_thermal_throttle(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Hardware or software thermal slowdown time (rule T3; minutes).

    Warning after ``thermal_minutes`` minutes with SwThermalSlowdown or
    HwThermalSlowdown within 10 minutes.
    """
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        tl = gpu.timeline()
        hw, sw = tl.col("thr_hw_thermal"), tl.col("thr_sw_thermal")
        if not any(hw) and not any(sw):
            continue
        n, temp = tl.col("n"), tl.col("temp_c_max")
        ts, dur = tl.ts, tl.dur
        bad = [(i, held_seconds(float(dur[i]), max(hw[i] or 0, sw[i] or 0), n[i]))
               for i in range(len(tl)) if hw[i] or sw[i]]
        eps = episodes(ts, dur, bad, t.thermal_minutes * 60.0)
        if not eps:
            continue
        minutes = whole_minutes(sum(e.amount for e in eps))
        temps = [temp[i] for i, _ in bad if temp[i] is not None]
        reasons = []
        if any(hw):
            reasons.append("hw_thermal")
        if any(sw):
            reasons.append("sw_thermal")
        evidence = {"minutes": minutes, "reasons": reasons, "max_temp_c": max(temps) if temps else None,
                    "slowdown_c": slowdown_c(gpu), "episodes": len(eps)}
        out.append(gpu_finding(
            history, gpu, "thermal-throttle", "warning", eps[0].start, eps[-1], evidence,
            N_("Check cooling: fans, airflow, dust, room temperature, thermal paste"),
            Text(N_("{gpu}: thermal slowdown for {minutes} min ({reasons})"), gpu=gpu_label(gpu), minutes=minutes,
                 reasons=", ".join(reasons)),
            condition_resolve_s(t), magnitude=float(minutes),
        ))
    return out


def check_temperature(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """The GPU runs near its slowdown (warning) or shutdown (critical) temperature (°C).

    The limit is ``temp_slowdown_c - temperature_margin_c`` where the card
    reports its slowdown temperature, else ``temperature_warning_c`` (for a
    junction sensor, ``temperature_junction_warning_c``); critical from
    ``temp_shutdown_c - temperature_margin_c`` (else ``temperature_critical_c``,
    ``temperature_junction_critical_c``). Needs ``temperature_minutes`` minutes within
    10 (hourly rows count by their mean).
    """
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        slowdown = slowdown_c(gpu)
        shutdown = gpu.inv("temp_shutdown_c")
        # AMD's and Hygon's temp_c is the junction (hotspot) sensor where the tool has it (the parser's
        # temp_sensor signal): it runs hotter than an edge or NVIDIA's GPU sensor, so its defaults are its own.
        sensor = gpu.signal("temp_sensor")
        junction = sensor == "junction"
        limit = slowdown - t.temperature_margin_c if slowdown else (
            t.temperature_junction_warning_c if junction else t.temperature_warning_c)
        critical = float(shutdown) - t.temperature_margin_c if shutdown else (
            t.temperature_junction_critical_c if junction else t.temperature_critical_c)
        tl = gpu.timeline()
        tmax = tl.col("temp_c_max")
        peak = known_max(tmax)
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
        minutes = whole_minutes(sum(e.amount for e in eps))
        out.append(gpu_finding(
            history, gpu, "temperature-high", severity, eps[0].start, eps[-1],
            {"max_temp_c": worst, "limit_c": limit, "critical_c": critical, "slowdown_c": slowdown,
             "minutes": minutes, **({"sensor": sensor} if isinstance(sensor, str) else {})},
            N_("Improve cooling: check fans, airflow, blanking panels and inlet temperature"),
            Text(N_("{gpu}: {temp:.0f} °C (limit {limit:.0f} °C)"), gpu=gpu_label(gpu), temp=worst, limit=limit),
            condition_resolve_s(t),
            magnitude=float(worst),
        ))
    return out


def check_fan_stopped(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """A fan at 0 % while the GPU is at least ``fan_stopped_temp_c`` hot (warning).

    Cards without fans report no fan speed (unsupported) and are never
    flagged; a fan at 0 % on a cool card is a zero-RPM mode, not a fault.
    """
    t = effective_thresholds(history, thresholds)
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
        minutes = whole_minutes(sum(e.amount for e in eps))
        out.append(gpu_finding(
            history, gpu, "fan-stopped", "warning", eps[0].start, eps[-1],
            {"minutes": minutes, "max_temp_c": max(temp[i] for i, _ in bad)},
            N_("Replace or reconnect the fan; until then keep the card idle or power-limited"),
            Text(N_("{gpu}: fan at 0 % while {temp:.0f} °C"), gpu=gpu_label(gpu), temp=max(temp[i] for i, _ in bad)),
            condition_resolve_s(t), magnitude=float(minutes),
        ))
    return out
