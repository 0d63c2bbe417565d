"""A fast synthetic fleet history for tests and benchmarks (pure, seeded).

:func:`generate` builds a :class:`~fleetmon.health.history.FleetHistory`
directly (no NVML, no database): per-minute rows for the recent hours and
hourly rows for the older days, for healthy GPUs of several catalog models
running busy/idle jobs, plus injected faults (:class:`SimFault`, one kind per
finding kind), card swaps between slots and nodes (:class:`SimSwap`),
unreachable and flapping nodes, version mismatches and missing GPUs. Each
injected fault yields a :class:`Label` (kind, node, card, onset) that the
quality tests compare with the findings.

Speed: columns are assembled from pre-computed noise tables by slicing per
busy/idle stretch, so 512 GPUs x 1,440 minutes take well under a second.

Unlike :mod:`fleetmon.sim.nvml` (which simulates NVML calls live), this
module produces already aggregated history. Model constants follow the spec
catalog (:mod:`fleetmon.specs`) and the twin's profiles.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fleetmon.health.history import (
    HOUR_S,
    MINUTE_S,
    EventRecord,
    FleetHistory,
    GpuHistory,
    GroupExpect,
    InventoryChange,
    NodeHistory,
    Outage,
    Placement,
    Series,
)
from fleetmon.health.thresholds import Thresholds

__all__ = [
    "FAULT_KINDS",
    "MODELS",
    "Label",
    "SimFault",
    "SimModel",
    "SimNode",
    "SimSwap",
    "generate",
    "healthy_fleet",
    "with_now",
]

SAMPLES = 12  # samples per minute (a 5 s agent interval)


@dataclass(frozen=True, slots=True)
class SimModel:
    """Constants of one simulated GPU model (W, °C, MHz, MiB)."""

    key: str
    name: str
    memory_mib: int
    power_w: float
    idle_w: float
    boost_mhz: int
    idle_mhz: int
    busy_temp_c: float
    idle_temp_c: float
    slowdown_c: int
    shutdown_c: int
    fans: bool
    ecc: bool
    repair: str | None  # "remap", "retire" or None
    serial: bool
    vbios: str
    pcie: tuple[int, int]
    geforce: bool = False


MODELS: dict[str, SimModel] = {m.key: m for m in (
    SimModel("a100", "NVIDIA A100-SXM4-80GB", 81920, 400, 60, 1410, 210, 62, 32, 89, 92, False, True,
             "remap", True, "92.00.45.00.06", (4, 16)),
    SimModel("h100", "NVIDIA H100 80GB HBM3", 81559, 700, 72, 1980, 345, 60, 30, 89, 92, False, True,
             "remap", True, "96.00.74.00.0D", (5, 16)),
    SimModel("l40s", "NVIDIA L40S", 46068, 350, 35, 2520, 210, 65, 30, 88, 93, False, True,
             "remap", True, "95.02.66.00.02", (4, 16)),
    SimModel("a10", "NVIDIA A10", 23028, 150, 15, 1695, 210, 66, 28, 95, 98, False, True,
             "remap", True, "94.02.5C.00.02", (4, 16)),
    SimModel("v100", "Tesla V100-SXM2-32GB", 32768, 300, 42, 1530, 135, 61, 33, 87, 90, False, True,
             "retire", True, "88.00.80.00.01", (3, 16)),
    SimModel("t4", "Tesla T4", 15360, 70, 10, 1590, 300, 68, 30, 93, 96, False, True,
             "retire", True, "90.04.96.00.02", (3, 16)),
    SimModel("rtx4090", "NVIDIA GeForce RTX 4090", 24564, 450, 22, 2520, 210, 70, 33, 87, 90, True,
             False, None, False, "95.02.3C.40.E6", (4, 16), geforce=True),
    SimModel("rtx3090", "NVIDIA GeForce RTX 3090", 24576, 350, 25, 1695, 210, 72, 34, 95, 98, True,
             False, None, False, "94.02.42.00.A9", (4, 16), geforce=True),
    SimModel("mystery", "NVIDIA Mystery GPU 9000", 49152, 300, 30, 2000, 210, 65, 30, 90, 95, True,
             False, None, False, "99.00.00.00.01", (4, 16), geforce=True),
)}
"""Simulated models; "mystery" is deliberately missing from the spec catalog."""

DRIVERS = {"datacenter": ("535.161.08", "12.2"), "geforce": ("550.54.15", "12.4")}

FAULT_KINDS: dict[str, str] = {
    "driver-mismatch": "the node runs another driver (params: driver, cuda)",
    "vbios-mismatch": "the card runs another VBIOS (params: vbios)",
    "ecc-uncorrectable": "uncorrectable ECC errors step up at onset (params: count)",
    "ecc-correctable-storm": "corrected ECC errors grow per_min a minute from onset",
    "retired-pages": "retired pages jump near the limit, retirement pending (params: sbe, dbe)",
    "row-remap": "a row remap pending from onset (params: failure=True for a failed remap)",
    "xid": "Xid events from onset (params: code, count, interval_s, resets, gpus)",
    "gpu-lost": "the card falls off the bus at onset (Xid 79, state lost)",
    "gpu-missing": "the card leaves enumeration at onset",
    "pcie-link-degraded": "the busy link trains at gen/width (params) from onset",
    "pcie-replay": "the replay counter grows per_min a minute",
    "power-brake": "HW power brake while busy, power dips",
    "power-instability": "power drops within minutes while utilization stays high",
    "power-unreadable": "power reads fail (status failed)",
    "power-capped": "enforced power limit cut to frac of the default",
    "thermal-throttle": "runs above its slowdown temperature with thermal slowdown bits",
    "temperature-high": "runs a few degrees under its slowdown temperature",
    "fan-stopped": "fans read 0 % while the card runs hot",
    "derating": "SM clock under load at frac of normal, no throttle reason",
    "derating-trend": "stored daily clock ratios fall per_week over weeks",
    "node-unreachable": "the node stops answering at onset",
    "node-flapping": "the node is lost and back count times, ending at onset",
    "inventory-change": "a new card appears at onset (the label's card)",
}
"""Injectable faults (kind -> description); each kind is also the expected finding kind
(except "derating-trend", which expects "derating")."""

LOAD_FAULTS = frozenset({
    "pcie-link-degraded", "power-brake", "power-instability", "power-capped", "thermal-throttle",
    "temperature-high", "fan-stopped", "derating",
})
"""Faults that show only under load: the generator keeps the node busy around their onset."""


@dataclass(frozen=True, slots=True)
class SimNode:
    """A simulated node: ``gpus`` cards of one model."""

    name: str
    model: str
    gpus: int
    group: str | None = None
    driver: str | None = None
    cuda: str | None = None


@dataclass(frozen=True, slots=True)
class SimFault:
    """A fault injected on a node's GPU slot ``gpu`` (None: the node) at ``onset`` (Unix s).

    ``bound`` is "card" (the fault moves with the card across swaps) or
    "slot" (it stays in the slot: a bad riser). ``until`` ends it (None: to
    the end).
    """

    kind: str
    node: str
    gpu: int | None = None
    onset: float = 0.0
    until: float | None = None
    bound: str = "card"
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SimSwap:
    """At ``ts`` the cards in slot ``a`` and slot ``b`` (``(node, index)``) trade places."""

    ts: float
    a: tuple[str, int]
    b: tuple[str, int]


@dataclass(frozen=True, slots=True)
class Label:
    """What an injected fault must produce: a finding of ``kind`` on ``node`` / ``gpu_uuid``."""

    kind: str
    node: str
    gpu_uuid: str | None
    onset: float
    fault: str


def healthy_fleet(n_nodes: int = 64, gpus_per_node: int | None = None,
                  models: Sequence[str] | None = None) -> list[SimNode]:
    """A fleet of ``n_nodes`` nodes in groups by model.

    By default a mix of data-center and GeForce models with 4 or 8 GPUs per
    node; ``gpus_per_node`` fixes the count, ``models`` the model keys used
    (round robin by group block).
    """
    mix = list(models) if models else ["a100", "h100", "l40s", "rtx4090", "a100", "rtx3090",
                                       "v100", "t4", "a10", "h100"]
    per = {"a100": 8, "h100": 8}
    nodes = []
    block = max(1, n_nodes // len(mix))
    for i in range(n_nodes):
        key = mix[min(i // block, len(mix) - 1)]
        count = gpus_per_node or per.get(key, 4)
        nodes.append(SimNode(f"gpu{i + 1:03d}", key, count, group=key))
    return nodes


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

_UNSUPPORTED_ECC = {k: "unsupported" for k in (
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
    for r in ("app_clocks", "hw_slowdown", "sync_boost", "sw_thermal", "hw_thermal", "hw_power_brake",
              "display_clocks"):
        cols["thr_" + r] = zero
    gen, width = model.pcie
    cols["pcie_gen"] = level(gen, 1)
    cols["pcie_width"] = const(width)
    cols["pcie_gen_busy_min"] = level(gen, None)
    cols["pcie_width_busy_min"] = level(width, None)
    cols["pstate"] = level(0, 8)
    for key, value in counters.items():
        cols[key] = const(value)
    cols["state"] = const("ok")
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
    for key in ("app_clocks", "hw_slowdown", "sync_boost", "sw_thermal", "hw_thermal", "hw_power_brake",
                "display_clocks"):
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


# ---------------------------------------------------------------------------
# Faults


class _Card:
    """A card being generated: identity, placements and column dicts."""

    def __init__(self, uuid: str, model: SimModel, serial: str | None) -> None:
        self.uuid = uuid
        self.model = model
        self.serial = serial
        self.placements: list[Placement] = []
        self.minutes: dict[str, list[Any]] = {}
        self.hourly: dict[str, list[Any]] = {}
        self.inventory: dict[str, Any] = {}
        self.state = "ok"
        self.first_seen: float = 0.0
        self.last_seen: float = 0.0
        self.present = True

    def slot_at(self, ts: float) -> Placement:
        found = self.placements[0]
        for p in self.placements:
            if p.ts <= ts:
                found = p
        return found


def _mut(cols: dict[str, list[Any]], key: str) -> list[Any]:
    """The column, copied so it can be written (shared constants stay intact)."""
    values = list(cols.get(key) or [None] * len(cols["ts"]))
    cols[key] = values
    return values


def _rows(card: _Card, fault: SimFault, cols: dict[str, list[Any]], step: int) -> list[int]:
    """Indices of the rows (of ``cols``) the fault applies to on this card."""
    ts = cols["ts"]
    out = []
    for i, t in enumerate(ts):
        if t + step <= fault.onset or (fault.until is not None and t >= fault.until):
            continue
        if fault.bound == "slot":
            place = card.slot_at(t)
            if (place.node, place.index) != (fault.node, fault.gpu):
                continue
        out.append(i)
    return out


_CAPPED_POWER = {"power_w_min": 0.93, "power_w_mean": 0.97, "power_w_max": 0.995}


def _apply(card: _Card, fault: SimFault) -> None:
    m = card.model
    p = fault.params
    for cols, step in ((card.minutes, MINUTE_S), (card.hourly, HOUR_S)):
        if not cols or not cols.get("ts"):
            continue
        rows = _rows(card, fault, cols, step)
        if not rows:
            continue
        kind = fault.kind
        busy = cols["busy_n"]
        n = cols["n"]
        if kind in ("ecc-uncorrectable", "ecc-correctable-storm", "pcie-replay"):
            keys = {"ecc-uncorrectable": ("ecc_unc_vol", "ecc_unc_agg"),
                    "ecc-correctable-storm": ("ecc_corr_vol", "ecc_corr_agg"),
                    "pcie-replay": ("pcie_replay",)}[kind]
            per_row = {"ecc-uncorrectable": 0.0,
                       "ecc-correctable-storm": float(p.get("per_min", 600)) * step / 60,
                       "pcie-replay": float(p.get("per_min", 30)) * step / 60}[kind]
            start = float(p.get("count", 1)) if kind == "ecc-uncorrectable" else 0.0
            for key in keys:
                col = _mut(cols, key)
                delta = _mut(cols, key + "_delta") if step > 60 else None
                added = 0.0
                for k, i in enumerate(rows):
                    inc = (start if k == 0 else 0.0) + per_row
                    added += inc
                    col[i] = int((col[i] or 0) + added)
                    if delta is not None:
                        delta[i] = int(inc)
                last = rows[-1]
                for i in range(last + 1, len(col)):
                    col[i] = int((col[i] or 0) + added)
        elif kind == "retired-pages":
            sbe, dbe, pend = _mut(cols, "retired_sbe"), _mut(cols, "retired_dbe"), _mut(cols, "retired_pending")
            for i in rows:
                sbe[i], dbe[i], pend[i] = int(p.get("sbe", 50)), int(p.get("dbe", 8)), 1
            if step > 60:
                _mut(cols, "retired_pending_max")
                for i in rows:
                    cols["retired_pending_max"][i] = 1
        elif kind == "row-remap":
            if p.get("failure"):
                fail, unc = _mut(cols, "remap_failure"), _mut(cols, "remap_unc")
                for i in rows:
                    fail[i], unc[i] = 1, 8
            else:
                pend, corr = _mut(cols, "remap_pending"), _mut(cols, "remap_corr")
                for i in rows:
                    pend[i], corr[i] = 1, 1
        elif kind == "gpu-lost":
            lost_col = _mut(cols, "state" if step == 60 else "lost_minutes")
            status = _mut(cols, "status")
            for key in list(cols):
                if key.endswith(("_min", "_mean", "_max")) and not key.startswith("pcie_"):
                    col = _mut(cols, key)
                    for i in rows:
                        col[i] = None
            for i in rows:
                lost_col[i] = "lost" if step == 60 else 60
                status[i] = {"power_w": "gpu_lost", "temp_c": "gpu_lost"}
                busy[i] = 0
            if fault.until is None:
                card.state = "lost"
        elif kind == "pcie-link-degraded":
            gen_b, width_b = _mut(cols, "pcie_gen_busy_min"), _mut(cols, "pcie_width_busy_min")
            gen = _mut(cols, "pcie_gen")
            for i in rows:
                if busy[i]:
                    gen_b[i] = int(p.get("gen", 1))
                    width_b[i] = int(p.get("width", 8))
                    gen[i] = int(p.get("gen", 1))
        elif kind in ("power-brake", "power-instability"):
            pmin, pmean = _mut(cols, "power_w_min"), _mut(cols, "power_w_mean")
            for i in rows:
                if not busy[i] or pmin[i] is None:
                    continue
                pmin[i] = round(m.power_w * 0.3, 1)
                pmean[i] = round(pmean[i] * 0.8, 1)
            if kind == "power-brake":
                brake, slow = _mut(cols, "thr_hw_power_brake"), _mut(cols, "thr_hw_slowdown")
                sm = _mut(cols, "sm_clock_mhz_mean")
                for i in rows:
                    if busy[i]:
                        brake[i] = slow[i] = max(1, (busy[i] or 0) // 2)
                        if sm[i] is not None:
                            sm[i] = round(sm[i] * 0.7)
                if step > 60 and "sm_clock_busy_mhz" in cols:
                    _mut(cols, "sm_clock_busy_mhz")
        elif kind == "power-unreadable":
            status = _mut(cols, "status") if step == 60 else _mut(cols, "failed_power_w")
            keys = ("power_w_min", "power_w_mean", "power_w_max")
            for key in keys:
                col = _mut(cols, key)
                for i in rows:
                    col[i] = None
            for i in rows:
                if step == 60:
                    base = status[i] or {}
                    status[i] = {**base, "power_w": "failed"}
                else:
                    status[i] = 60
        elif kind == "power-capped":
            frac = float(p.get("frac", 0.6))
            limit = round(m.power_w * frac)
            for key in ("power_limit_w_min", "power_limit_w_mean", "power_limit_w_max"):
                col = _mut(cols, key)
                for i in rows:
                    col[i] = float(limit)
            pw = {k: _mut(cols, k) for k in ("power_w_min", "power_w_mean", "power_w_max")}
            cap, sm = _mut(cols, "thr_sw_power_cap"), _mut(cols, "sm_clock_mhz_mean")
            for i in rows:
                if busy[i]:
                    for key, col in pw.items():
                        if col[i] is not None:
                            col[i] = round(limit * _CAPPED_POWER[key], 1)
                    cap[i] = busy[i]
                    if sm[i] is not None:
                        sm[i] = round(sm[i] * 0.85)
            card.inventory["power_enforced_w"] = float(limit)
        elif kind in ("thermal-throttle", "temperature-high", "fan-stopped"):
            target = m.slowdown_c + 1.5 if kind == "thermal-throttle" else m.slowdown_c - 3.0
            tmin, tmean, tmax = _mut(cols, "temp_c_min"), _mut(cols, "temp_c_mean"), _mut(cols, "temp_c_max")
            for i in rows:
                if busy[i]:
                    tmin[i], tmean[i], tmax[i] = target - 1, target, target + 0.5
                elif kind == "fan-stopped" and tmean[i] is not None:
                    tmin[i], tmean[i], tmax[i] = tmin[i] + 15, tmean[i] + 15, tmax[i] + 15
            if kind == "thermal-throttle":
                hw, sw, slow = _mut(cols, "thr_hw_thermal"), _mut(cols, "thr_sw_thermal"), _mut(cols, "thr_hw_slowdown")
                for i in rows:
                    if busy[i]:
                        hw[i] = sw[i] = slow[i] = busy[i]
            if kind == "fan-stopped":
                for key in ("fan_pct_min", "fan_pct_mean", "fan_pct_max"):
                    col = _mut(cols, key)
                    for i in rows:
                        col[i] = 0
        elif kind == "derating":
            frac = float(p.get("frac", 0.62))
            sm_keys = ["sm_clock_mhz_min", "sm_clock_mhz_mean", "sm_clock_mhz_max"]
            if step > 60:
                sm_keys.append("sm_clock_busy_mhz")
            for key in sm_keys:
                col = _mut(cols, key)
                for i in rows:
                    if busy[i] and col[i] is not None:
                        col[i] = round(col[i] * frac)
            pmean = _mut(cols, "power_w_mean")
            swcap = _mut(cols, "thr_sw_power_cap")
            for i in rows:
                if busy[i] and pmean[i] is not None:
                    pmean[i] = round(pmean[i] * 0.7, 1)
                    swcap[i] = 0
        elif kind == "gpu-missing":
            pass  # handled by truncation in generate()
        _ = n


# ---------------------------------------------------------------------------
# generate()


def generate(
    nodes: Sequence[SimNode],
    now: float,
    days: float = 7.0,
    minute_hours: float = 24.0,
    faults: Iterable[SimFault] = (),
    swaps: Iterable[SimSwap] = (),
    seed: int = 0,
    thresholds: Thresholds | Mapping[str, Any] | None = None,
    groups: Mapping[str, GroupExpect] | None = None,
    daily_days: int = 0,
    since: float | None = None,
) -> tuple[FleetHistory, list[Label]]:
    """Build a fleet history and the labels of its injected faults.

    Args:
        nodes: the fleet (see :func:`healthy_fleet`).
        now: evaluation time (Unix s; rounded down to the minute).
        days: history length; rows older than ``minute_hours`` are hourly.
        minute_hours: how much recent history is per minute.
        faults: injected faults (onset in Unix s).
        swaps: card swaps between slots.
        seed: everything random derives from it.
        thresholds: Thresholds or overrides for the history.
        groups: group expectations (default: one per node group, with the
            expected GPU count and model, no expected versions).
        daily_days: also produce stored daily derating rows for that many
            days before the window (``history.daily``), for trend rules.
        since: window start (default ``now - days``).
    """
    rng = random.Random(seed)
    now_i = int(now) // 60 * 60
    start = int(now_i - days * 86400) // HOUR_S * HOUR_S
    m0 = max(start, int(now_i - minute_hours * 3600) // HOUR_S * HOUR_S)
    minute_count = (now_i - m0) // 60
    hour_count = (m0 - start) // HOUR_S
    minute_ts = list(range(m0, now_i, 60))
    hour_ts = list(range(start, m0, HOUR_S))
    const = _Const(minute_count)
    faults = sorted(faults, key=lambda f: f.onset)
    swaps = sorted(swaps, key=lambda s: s.ts)

    # Workloads per node, kept busy around load-dependent faults.
    work: dict[str, list[tuple[int, int]]] = {}
    for node in nodes:
        w = _workload(rng, start, now_i)
        for f in faults:
            if f.node == node.name and f.kind in LOAD_FAULTS:
                w = _force(w, f.onset - 1800, min(now_i, f.onset + 7200))
        work[node.name] = w
    masks = {n.name: _mask(work[n.name], m0, minute_count) for n in nodes}
    fracs = {n.name: _fractions(work[n.name], start, hour_count) for n in nodes}

    tables = {key: _tables(MODELS[key], minute_count, random.Random(f"{seed}:{key}"))
              for key in sorted({n.model for n in nodes})}

    # Cards and their placements.
    cards: list[_Card] = []
    slot: dict[tuple[str, int], _Card] = {}
    node_by_name = {n.name: n for n in nodes}
    for node in nodes:
        model = MODELS[node.model]
        for i in range(node.gpus):
            made = (f"GPU-{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-{rng.getrandbits(16):04x}-"
                    f"{rng.getrandbits(16):04x}-{rng.getrandbits(48):012x}")
            serial = f"13{rng.randrange(10 ** 10):010d}" if model.serial else None
            card = _Card(made, model, serial)
            card.placements.append(Placement(float(start - 30 * 86400), node.name, _pci(i), i))
            card.first_seen = float(start - 30 * 86400)
            cards.append(card)
            slot[(node.name, i)] = card
    for s in swaps:
        ca, cb = slot[s.a], slot[s.b]
        ca.placements.append(Placement(float(s.ts), s.b[0], _pci(s.b[1]), s.b[1]))
        cb.placements.append(Placement(float(s.ts), s.a[0], _pci(s.a[1]), s.a[1]))
        slot[s.a], slot[s.b] = cb, ca

    labels: list[Label] = []
    events: list[EventRecord] = []
    changes: list[InventoryChange] = []
    node_overrides: dict[str, dict[str, Any]] = {}
    outages: dict[str, list[Outage]] = {}
    truncate: dict[str, float] = {}  # card -> no rows from this time
    new_cards: list[tuple[_Card, float]] = []

    def card_in(node: str, index: int | None, ts: float) -> _Card | None:
        if index is None:
            return None
        for c in cards:
            p = c.slot_at(ts)
            if p.node == node and p.index == index:
                return c
        return None

    for f in faults:
        target = card_in(f.node, f.gpu, f.onset)
        p = f.params
        expect = "derating" if f.kind == "derating-trend" else f.kind
        uuid: str | None = target.uuid if target else None
        if f.kind == "driver-mismatch":
            node_overrides.setdefault(f.node, {}).update(
                driver=p.get("driver", "550.54.15"), cuda=p.get("cuda", "12.4"))
            old = node_by_name[f.node].driver or DRIVERS[_family(node_by_name[f.node])][0]
            changes.append(InventoryChange(f.onset, f.node, "driver_changed", None, old,
                                           p.get("driver", "550.54.15")))
            uuid = None
        elif f.kind == "vbios-mismatch" and target:
            target.inventory["vbios"] = p.get("vbios", target.model.vbios[:-2] + "FF")
        elif f.kind == "xid":
            count = int(p.get("count", 1))
            interval = float(p.get("interval_s", 600))
            resets = bool(p.get("resets", False))
            targets = [target] + [card_in(f.node, g, f.onset) for g in p.get("gpus", ())]
            for k in range(count):
                ts = f.onset + k * interval
                for c in targets:
                    if c is None:
                        continue
                    place = c.slot_at(ts)
                    events.append(EventRecord(ts, place.node, "xid", c.uuid, place.pci_bus_id,
                                              int(p.get("code", 48)), f"simulated Xid {p.get('code', 48)}"))
                if resets and k < count - 1:
                    events.append(EventRecord(ts + interval / 2, f.node, "energy_reset",
                                              target.uuid if target else None))
            for g in p.get("gpus", ()):
                other = card_in(f.node, g, f.onset)
                if other is not None:
                    labels.append(Label("xid", f.node, other.uuid, f.onset, f.kind))
        elif f.kind == "gpu-lost" and target:
            place = target.slot_at(f.onset)
            events.append(EventRecord(f.onset, place.node, "xid", target.uuid, place.pci_bus_id, 79,
                                      "GPU has fallen off the bus."))
            events.append(EventRecord(f.onset, place.node, "gpu_lost", target.uuid, place.pci_bus_id))
            if f.until is not None:
                events.append(EventRecord(f.until, place.node, "gpu_back", target.uuid, place.pci_bus_id))
        elif f.kind == "gpu-missing" and target:
            truncate[target.uuid] = f.onset
            target.state = "missing"
        elif f.kind == "node-unreachable":
            outages.setdefault(f.node, []).append(Outage(f.onset, None, "timed out", 10))
            for c in cards:
                if c.slot_at(f.onset).node == f.node:
                    truncate[c.uuid] = f.onset
            uuid = None
        elif f.kind == "node-flapping":
            count = int(p.get("count", 3))
            gap = float(p.get("gap_s", 1200))
            length = float(p.get("length_s", 180))
            for k in range(count):
                end = f.onset - (count - 1 - k) * gap
                outages.setdefault(f.node, []).append(Outage(end - length, end, "connection refused", 6))
            uuid = None
        elif f.kind == "inventory-change":
            model = MODELS[node_by_name[f.node].model]
            index = f.gpu if f.gpu is not None else node_by_name[f.node].gpus
            new = _Card(f"GPU-{rng.getrandbits(32):08x}-0000-0000-0000-{rng.getrandbits(48):012x}",
                        model, None)
            new.placements.append(Placement(f.onset, f.node, _pci(index), index))
            new.first_seen = f.onset
            new_cards.append((new, f.onset))
            uuid = new.uuid
        labels.append(Label(expect, f.node, uuid, f.onset, f.kind))

    cards.extend(c for c, _ in new_cards)

    # Columns per card.
    for card in cards:
        model = card.model
        counters = _counters(model, rng)
        mask: list[bool] = []
        frac: list[float] = []
        places = card.placements
        for k, place in enumerate(places):
            lo = place.ts
            hi = places[k + 1].ts if k + 1 < len(places) else float("inf")
            i0 = max(0, min(minute_count, int((lo - m0) // 60))) if lo > m0 else 0
            i1 = max(0, min(minute_count, int((hi - m0) // 60))) if hi < float("inf") else minute_count
            if i1 > i0:
                mask.extend(masks[place.node][i0:i1])
            h0 = max(0, min(hour_count, int((lo - start) // HOUR_S))) if lo > start else 0
            h1 = max(0, min(hour_count, int((hi - start) // HOUR_S))) if hi < float("inf") else hour_count
            if h1 > h0:
                frac.extend(fracs[place.node][h0:h1])
        first_minute = minute_count - len(mask)
        first_hour = hour_count - len(frac)
        offset = rng.randrange(_P)
        if mask:
            cols = _minute_columns(model, mask, tables[model.key], offset, minute_ts[first_minute:],
                                   _Const(len(mask)) if first_minute else const, counters)
            card.minutes = cols
        if frac:
            card.hourly = _hourly_columns(model, frac, hour_ts[first_hour:], rng, counters)
        gen, width = model.pcie
        card.inventory = {
            "name": model.name, "vbios": model.vbios, "memory_total_mib": model.memory_mib,
            "power_default_w": float(model.power_w), "power_enforced_w": float(model.power_w),
            "power_max_w": float(model.power_w), "pcie_max_gen": gen, "pcie_max_width": width,
            "pcie_gpu_max_gen": gen, "pcie_gpu_max_width": width, "temp_slowdown_c": model.slowdown_c,
            "temp_shutdown_c": model.shutdown_c, "ecc_mode_current": 1 if model.ecc else (
                0 if model.geforce and model.key == "rtx4090" else None),
            "serial": card.serial, "max_sm_clock_mhz": model.boost_mhz, **card.inventory,
        }
        card.last_seen = float(now_i)

    for f in faults:
        if f.kind in ("driver-mismatch", "xid", "node-unreachable", "node-flapping", "inventory-change",
                      "gpu-missing", "derating-trend"):
            continue
        for card in cards:
            if f.bound == "slot" or card_in(f.node, f.gpu, f.onset) is card:
                if f.bound == "card" and card_in(f.node, f.gpu, f.onset) is not card:
                    continue
                _apply(card, f)

    daily = _daily_rows(cards, nodes, faults, start, daily_days, rng)
    for f in faults:  # the drift continues into the window
        if f.kind == "derating-trend":
            drifting = card_in(f.node, f.gpu, f.onset)
            if drifting is not None:
                per_week = float(f.params.get("per_week", 0.025))
                base = 1.05 if drifting.model.geforce else 0.985
                drift = (base - per_week * daily_days / 7.0) / base
                _apply(drifting, SimFault("derating", f.node, f.gpu, float(start), params={"frac": drift}))
    for card in cards:
        cut = truncate.get(card.uuid)
        if cut is None:
            continue
        for cols in (card.minutes, card.hourly):
            if not cols:
                continue
            keep = sum(1 for t in cols["ts"] if t < cut)
            for key in list(cols):
                cols[key] = cols[key][:keep]
        card.last_seen = float(max([t for t in card.minutes.get("ts", [])] or [cut - 60]))

    # Nodes.
    node_hist = []
    for node in nodes:
        fam = _family(node)
        over = node_overrides.get(node.name, {})
        outs = tuple(sorted(outages.get(node.name, ()), key=lambda o: o.start))
        last_ok = float(now_i - 10)
        if outs and outs[-1].end is None:
            last_ok = outs[-1].start - 30
        present = sum(1 for c in cards if c.placements[-1].node == node.name and c.state != "missing")
        node_hist.append(NodeHistory(
            name=node.name, group=node.group,
            driver_version=over.get("driver", node.driver or DRIVERS[fam][0]),
            cuda_driver_version=over.get("cuda", node.cuda or DRIVERS[fam][1]),
            gpu_count=present, outages=outs, last_ok=last_ok, last_attempt=float(now_i - 10),
            last_error=outs[-1].error if outs and outs[-1].end is None else None,
            first_seen=float(start - 30 * 86400),
        ))

    gpu_hist = []
    for card in cards:
        last = card.placements[-1]
        gpu_hist.append(GpuHistory(
            uuid=card.uuid, name=card.model.name, node=last.node, index=last.index,
            pci_bus_id=last.pci_bus_id, serial=card.serial, inventory=card.inventory,
            state=card.state, first_seen=card.first_seen, last_seen=card.last_seen,
            minutes=Series.from_columns(card.minutes, MINUTE_S) if card.minutes else Series(columns={"ts": []}),
            hourly=(Series.from_columns(card.hourly, HOUR_S) if card.hourly
                    else Series(columns={"ts": []}, step_s=HOUR_S)),
            placements=tuple(card.placements),
        ))

    if groups is None:
        groups = {}
        for node in nodes:
            if node.group and node.group not in groups:
                groups[node.group] = GroupExpect(node.group, expected_gpus=node.gpus,
                                                 expected_model=MODELS[node.model].name)
    if isinstance(thresholds, Mapping) or thresholds is None:
        thresholds = Thresholds.from_overrides(dict(thresholds or {}))
    history = FleetHistory(
        now=float(now_i), since=float(since if since is not None else now_i - days * 86400),
        nodes=tuple(node_hist), gpus=tuple(gpu_hist),
        events=tuple(sorted(events, key=lambda e: e.ts)), inventory_changes=tuple(changes),
        groups=dict(groups), thresholds=thresholds, daily=tuple(daily),
    )
    return history, labels


def _family(node: SimNode) -> str:
    return "geforce" if MODELS[node.model].geforce else "datacenter"


def _pci(index: int) -> str:
    return f"0000:{0x18 + 0x10 * index:02x}:00.0"


def _daily_rows(cards: Sequence[_Card], nodes: Sequence[SimNode], faults: Sequence[SimFault],
                start: int, days: int, rng: random.Random) -> list[dict[str, Any]]:
    """Stored daily derating rows for ``days`` days before ``start``."""
    if days <= 0:
        return []
    from fleetmon import specs
    from fleetmon.health.history import day_of

    trend = {}
    for f in faults:
        if f.kind == "derating-trend":
            for c in cards:
                if c.slot_at(f.onset).node == f.node and c.slot_at(f.onset).index == f.gpu:
                    trend[c.uuid] = float(f.params.get("per_week", 0.025))
    rows = []
    for card in cards:
        spec = specs.lookup(card.model.name)
        base = (1.05 if card.model.geforce else 0.985)
        for d in range(days, 0, -1):
            ts = start - d * 86400
            ratio = base + 0.004 * (rng.random() - 0.5)
            if card.uuid in trend:
                ratio -= trend[card.uuid] * (days - d) / 7.0
            sm = card.model.boost_mhz * ratio
            rows.append({
                "uuid": card.uuid, "node": card.slot_at(ts).node, "model": card.model.name,
                "day": day_of(ts), "busy_minutes": 600, "sm_clock_busy_mhz": round(sm, 1),
                "clock_ratio": round(sm / spec.boost_clock_mhz, 4) if spec and spec.boost_clock_mhz else None,
                "power_limit_w": float(card.model.power_w), "power_limit_ratio": None,
                "memory_total_mib": card.model.memory_mib, "memory_ratio": None, "pcie_gen": card.model.pcie[0],
                "pcie_width": card.model.pcie[1], "pcie_ratio": None, "clock_vs_fleet": None,
                "known_model": spec is not None,
            })
    return rows


def with_now(history: FleetHistory, now: float) -> FleetHistory:
    """The same history evaluated at an earlier ``now`` (rows after it dropped)."""
    gpus = []
    for g in history.gpus:
        gpus.append(replace(g, minutes=g.minutes.before(now), hourly=g.hourly.before(now), _cache={}))
    return replace(history, now=now, gpus=tuple(gpus), _cache={})
