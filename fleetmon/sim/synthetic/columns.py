"""Column builders of the synthetic history: noise tables, per-minute and hourly columns, workloads.

Part of :mod:`fleetmon.sim.synthetic.generate` (which assembles cards, nodes and
faults from these); split out by concern, not meant to be used on its own.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from typing import Any

from fleetmon.vocab import GpuState
from fleetmon.records import Status
from fleetmon.fields import THROTTLE_NAMES
from fleetmon.health.series import HOUR_S
from fleetmon.sim.synthetic.model import SimModel

SAMPLES = 12  # samples per minute (a 5 s agent interval)


# ---------------------------------------------------------------------------
# Noise tables

_P = 997  # table period (prime): per-card offsets give distinct noise


def _tables(model: SimModel, length: int, rng: random.Random) -> dict[str, dict[str, list[Any]]]:
    """Per-row values while busy and while idle, ``_P + length`` long."""
    size = _P + length
    busy: dict[str, list[Any]] = {k: [] for k in (
        "util_min", "util_mean", "util_max", "pw_min", "pw_mean", "pw_max", "sm_min", "sm_mean",
        "sm_max", "t_min", "t_mean", "t_max", "fan_min", "fan_mean", "fan_max", "swcap", "mem")}
    idle: dict[str, list[Any]] = {k: [] for k in busy}
    r = rng.random
    for _ in range(size):
        level = 0.80 + 0.14 * r()
        pw = model.power_w * level
        swcap = SAMPLES // 4 if level > 0.9 else 0
        sm = model.boost_mhz * ((1.02 + 0.06 * r()) if model.geforce else (0.97 + 0.03 * r()))
        if swcap:
            sm *= 0.98
        t = model.busy_temp_c + 4.0 * (r() - 0.5)
        fan = max(30.0, min(100.0, 30.0 + (t - 35.0) * 1.6))
        util = 94.0 + 5.0 * r()
        busy["util_min"].append(round(util - 4.0, 1))
        busy["util_mean"].append(round(util, 1))
        busy["util_max"].append(100.0)
        busy["pw_min"].append(round(pw * 0.93, 1))
        busy["pw_mean"].append(round(pw, 1))
        busy["pw_max"].append(round(min(pw * 1.05, model.power_w * 0.995), 1))
        busy["sm_min"].append(round(sm * 0.97))
        busy["sm_mean"].append(round(sm))
        busy["sm_max"].append(round(min(sm * 1.01, model.boost_mhz * 1.1)))
        busy["t_min"].append(round(t - 1.0, 1))
        busy["t_mean"].append(round(t, 1))
        busy["t_max"].append(round(t + 1.0, 1))
        busy["fan_min"].append(round(fan - 1) if model.fans else None)
        busy["fan_mean"].append(round(fan) if model.fans else None)
        busy["fan_max"].append(round(fan + 1) if model.fans else None)
        busy["swcap"].append(swcap)
        busy["mem"].append(round(model.memory_mib * (0.55 + 0.4 * r())))
        ti = model.idle_temp_c + 3.0 * (r() - 0.5)
        pi = model.idle_w * (0.95 + 0.1 * r())
        fi = max(30.0, 30.0 + (ti - 35.0) * 1.6)
        idle["util_min"].append(0.0)
        idle["util_mean"].append(0.0)
        idle["util_max"].append(0.0)
        idle["pw_min"].append(round(pi * 0.97, 1))
        idle["pw_mean"].append(round(pi, 1))
        idle["pw_max"].append(round(pi * 1.03, 1))
        idle["sm_min"].append(model.idle_mhz)
        idle["sm_mean"].append(model.idle_mhz)
        idle["sm_max"].append(model.idle_mhz)
        idle["t_min"].append(round(ti - 0.5, 1))
        idle["t_mean"].append(round(ti, 1))
        idle["t_max"].append(round(ti + 0.5, 1))
        idle["fan_min"].append(round(fi) if model.fans else None)
        idle["fan_mean"].append(round(fi) if model.fans else None)
        idle["fan_max"].append(round(fi) if model.fans else None)
        idle["swcap"].append(0)
        idle["mem"].append(4)
    return {"busy": busy, "idle": idle}


_MINUTE_GAUGES = {
    "util_gpu_pct": "util", "power_w": "pw", "sm_clock_mhz": "sm", "temp_c": "t", "fan_pct": "fan",
}

_QUIET_THROTTLES: tuple[str, ...] = tuple(r for r in THROTTLE_NAMES if r not in ("gpu_idle", "sw_power_cap"))
"""Every throttle reason a synthetic healthy minute leaves at zero: all but idle and the software
power cap, which the generators fill; faults then raise the hardware ones (not the same set as
:data:`fleetmon.fields.HW_THROTTLE_REASONS`: this one also zeroes the configuration reasons)."""


_UNSUPPORTED_ECC = {k: Status.UNSUPPORTED for k in (
    "ecc_corr_vol", "ecc_unc_vol", "ecc_corr_agg", "ecc_unc_agg", "retired_sbe", "retired_dbe",
    "remap_corr", "remap_unc", "retired_pending", "remap_pending", "remap_failure", "mem_temp_c")}


def _runs(mask: Sequence[bool]) -> list[tuple[int, int, bool]]:
    out = []
    pos = 0
    for busy, group in itertools.groupby(mask):
        n = sum(1 for _ in group)
        out.append((pos, n, busy))
        pos += n
    return out


class _Const:
    """Shared constant columns (never modified: faults copy before writing)."""

    def __init__(self, length: int) -> None:
        self.length = length
        self.cache: dict[Any, list[Any]] = {}

    def __call__(self, value: Any) -> list[Any]:
        key = (type(value).__name__, value) if not isinstance(value, dict) else ("dict", id(value))
        found = self.cache.get(key)
        if found is None:
            found = [value] * self.length
            self.cache[key] = found
        return found


def _minute_columns(model: SimModel, mask: Sequence[bool], tables: dict[str, dict[str, list[Any]]],
                    offset: int, ts: list[int], const: _Const, counters: Mapping[str, Any]) -> dict[str, list[Any]]:
    runs = _runs(mask)
    cols: dict[str, list[Any]] = {"ts": ts, "n": const(SAMPLES)}
    busy_t, idle_t = tables["busy"], tables["idle"]

    def seg(key: str) -> list[Any]:
        out: list[Any] = []
        for start, length, busy in runs:
            k = (offset + start) % _P
            out += (busy_t if busy else idle_t)[key][k:k + length]
        return out

    def level(busy_value: Any, idle_value: Any) -> list[Any]:
        out: list[Any] = []
        for _, length, busy in runs:
            out += [busy_value if busy else idle_value] * length
        return out

    for gauge, short in _MINUTE_GAUGES.items():
        if gauge == "fan_pct" and not model.fans:
            continue
        cols[gauge + "_min"] = seg(short + "_min")
        cols[gauge + "_mean"] = seg(short + "_mean")
        cols[gauge + "_max"] = seg(short + "_max")
    limit = float(model.power_w)
    cols["power_limit_w_min"] = cols["power_limit_w_mean"] = cols["power_limit_w_max"] = const(limit)
    mem = seg("mem")
    cols["mem_used_mib_min"] = cols["mem_used_mib_mean"] = cols["mem_used_mib_max"] = mem
    cols["busy_n"] = level(SAMPLES, 0)
    cols["thr_gpu_idle"] = level(0, SAMPLES)
    cols["thr_sw_power_cap"] = seg("swcap")
    zero = const(0)
    for r in _QUIET_THROTTLES:
        cols["thr_" + r] = zero
    gen, width = model.pcie
    cols["pcie_gen"] = level(gen, 1)
    cols["pcie_width"] = const(width)
    cols["pcie_gen_busy_min"] = level(gen, None)
    cols["pcie_width_busy_min"] = level(width, None)
    cols["pstate"] = level(0, 8)
    for key, value in counters.items():
        cols[key] = const(value)
    cols["state"] = const(GpuState.OK)
    cols["status"] = const(None) if model.ecc else const(_UNSUPPORTED_ECC)
    return cols


def _hourly_columns(model: SimModel, fractions: Sequence[float], ts: list[int], rng: random.Random,
                    counters: Mapping[str, Any]) -> dict[str, list[Any]]:
    r = rng.random
    n_h = SAMPLES * 60
    cols: dict[str, list[Any]] = {"ts": ts, "minutes": [60] * len(ts), "n": [n_h] * len(ts)}
    busy_pw = [model.power_w * (0.85 + 0.06 * r()) for _ in fractions]
    busy_sm = [model.boost_mhz * ((1.05 + 0.02 * r()) if model.geforce else (0.985 + 0.01 * r()))
               for _ in fractions]
    cols["busy_n"] = [round(f * n_h) for f in fractions]
    cols["busy_minutes"] = [round(f * 60) for f in fractions]
    cols["util_gpu_pct_mean"] = [round(95.0 * f, 1) for f in fractions]
    cols["util_gpu_pct_min"] = [90.0 if f >= 1 else 0.0 for f in fractions]
    cols["util_gpu_pct_max"] = [100.0 if f > 0 else 0.0 for f in fractions]
    cols["power_w_mean"] = [round(f * p + (1 - f) * model.idle_w, 1) for f, p in zip(fractions, busy_pw)]
    cols["power_w_min"] = [round((p * 0.9) if f >= 1 else model.idle_w * 0.95, 1)
                           for f, p in zip(fractions, busy_pw)]
    cols["power_w_max"] = [round(model.power_w * 0.99 if f > 0 else model.idle_w * 1.05, 1) for f in fractions]
    cols["power_limit_w_min"] = cols["power_limit_w_mean"] = cols["power_limit_w_max"] = [
        float(model.power_w)] * len(ts)
    cols["sm_clock_mhz_mean"] = [round(f * s + (1 - f) * model.idle_mhz) for f, s in zip(fractions, busy_sm)]
    cols["sm_clock_mhz_min"] = [round(s * 0.96) if f >= 1 else model.idle_mhz for f, s in zip(fractions, busy_sm)]
    cols["sm_clock_mhz_max"] = [round(s * 1.01) if f > 0 else model.idle_mhz for f, s in zip(fractions, busy_sm)]
    cols["sm_clock_busy_mhz"] = [round(s) if f * 60 >= 1 else None for f, s in zip(fractions, busy_sm)]
    cols["sm_clock_busy_minutes"] = [round(f * 60) if f * 60 >= 1 else 0 for f in fractions]
    cols["temp_c_mean"] = [round(f * model.busy_temp_c + (1 - f) * model.idle_temp_c, 1) for f in fractions]
    cols["temp_c_min"] = [round(model.idle_temp_c - 1 if f < 1 else model.busy_temp_c - 3, 1) for f in fractions]
    cols["temp_c_max"] = [round(model.busy_temp_c + 2 if f > 0 else model.idle_temp_c + 1.5, 1) for f in fractions]
    if model.fans:
        cols["fan_pct_mean"] = [round(30 + (t - 35) * 1.6) if t > 35 else 30 for t in cols["temp_c_mean"]]
        cols["fan_pct_min"] = [30] * len(ts)
        cols["fan_pct_max"] = [round(30 + (t - 35) * 1.6) if t > 35 else 30 for t in cols["temp_c_max"]]
    cols["thr_gpu_idle"] = [n_h - b for b in cols["busy_n"]]
    cols["thr_sw_power_cap"] = [round(b * 0.1) for b in cols["busy_n"]]
    zero = [0] * len(ts)
    for key in _QUIET_THROTTLES:
        cols["thr_" + key] = zero
    gen, width = model.pcie
    cols["pcie_gen_busy_min"] = [gen if f > 0 else None for f in fractions]
    cols["pcie_width_busy_min"] = [width if f > 0 else None for f in fractions]
    cols["pcie_gen"] = [gen if f >= 0.5 else 1 for f in fractions]
    cols["pcie_width"] = [width] * len(ts)
    for key, value in counters.items():
        cols[key] = [value] * len(ts)
        if key in _COUNTERS:
            cols[key + "_delta"] = zero if value is not None else [None] * len(ts)
    cols["lost_minutes"] = zero
    return cols


_COUNTERS = ("ecc_corr_vol", "ecc_unc_vol", "ecc_corr_agg", "ecc_unc_agg", "retired_sbe", "retired_dbe",
             "remap_corr", "remap_unc", "pcie_replay")


def _counters(model: SimModel, rng: random.Random) -> dict[str, Any]:
    c: dict[str, Any] = {"pcie_replay": rng.randrange(0, 4)}
    if model.ecc:
        c.update(ecc_corr_vol=0, ecc_unc_vol=0, ecc_corr_agg=rng.randrange(0, 12), ecc_unc_agg=0)
    else:
        c.update(ecc_corr_vol=None, ecc_unc_vol=None, ecc_corr_agg=None, ecc_unc_agg=None)
    if model.repair == "retire":
        c.update(retired_sbe=0, retired_dbe=0, retired_pending=0)
    else:
        c.update(retired_sbe=None, retired_dbe=None, retired_pending=None)
    if model.repair == "remap":
        c.update(remap_corr=0, remap_unc=0, remap_pending=0, remap_failure=0)
    else:
        c.update(remap_corr=None, remap_unc=None, remap_pending=None, remap_failure=None)
    return c


# ---------------------------------------------------------------------------
# Workloads


def _workload(rng: random.Random, start: int, end: int) -> list[tuple[int, int]]:
    """Busy stretches (start, end) in Unix s, minute aligned, between start and end."""
    out = []
    t = start - rng.randrange(0, 240) * 60
    busy = rng.random() < 0.75
    while t < end:
        length = (rng.randrange(45, 480) if busy else rng.randrange(5, 120)) * 60
        if busy:
            out.append((t, t + length))
        t += length
        busy = not busy
    return out


def _force(stretches: list[tuple[int, int]], lo: float, hi: float) -> list[tuple[int, int]]:
    """Busy stretches with [lo, hi) made busy."""
    lo_i, hi_i = int(lo) // 60 * 60, int(hi + 59) // 60 * 60
    out = [(a, b) for a, b in stretches if b <= lo_i or a >= hi_i]
    for a, b in stretches:
        if a < lo_i < b:
            out.append((a, lo_i))
        if a < hi_i < b:
            out.append((hi_i, b))
    out.append((lo_i, hi_i))
    out.sort()
    merged: list[tuple[int, int]] = []
    for a, b in out:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _mask(stretches: Sequence[tuple[int, int]], m0: int, count: int) -> list[bool]:
    mask = [False] * count
    for a, b in stretches:
        i, j = max(0, (a - m0) // 60), min(count, (b - m0) // 60)
        if i < j:
            mask[i:j] = [True] * (j - i)
    return mask


def _fractions(stretches: Sequence[tuple[int, int]], h0: int, count: int) -> list[float]:
    out = [0.0] * count
    for a, b in stretches:
        for h in range(max(0, (a - h0) // HOUR_S), min(count, (b - h0 + HOUR_S - 1) // HOUR_S)):
            lo, hi = h0 + h * HOUR_S, h0 + (h + 1) * HOUR_S
            out[h] += max(0, min(b, hi) - max(a, lo)) / HOUR_S
    return [min(1.0, f) for f in out]
