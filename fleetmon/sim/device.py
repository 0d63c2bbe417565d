"""The device model behind the simulated pynvml: GPUs and a node driven by a scenario.

What a GPU reports comes from its scenario (:mod:`fleetmon.sim.scenarios`): a
busy/idle workload drives utilization, clocks, power, temperature, PCIe link
and energy deterministically (seeded noise keyed on the whole simulated
second), and faults switch on at their onset times. Nothing here is global:
one :class:`SimNode` per :class:`fleetmon.sim.nvml.SimulatedNvml`, so a process
hosts as many nodes as it likes.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass

from fleetmon.sim import scenarios as _sc
from fleetmon.sim import stories as _st
from fleetmon.sim.nvml_constants import (
    NVML_AGGREGATE_ECC, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC,
    nvmlClocksEventReasonGpuIdle, nvmlClocksEventReasonHwPowerBrakeSlowdown, nvmlClocksEventReasonHwSlowdown,
    nvmlClocksEventReasonHwThermalSlowdown, nvmlClocksEventReasonSwPowerCap, nvmlClocksEventReasonSwThermalSlowdown,
    nvmlEventTypeClock, nvmlEventTypeDoubleBitEccError, nvmlEventTypePState, nvmlEventTypeSingleBitEccError,
    nvmlEventTypeXidCriticalError,
)
from fleetmon.sim.nvml_structs import c_nvmlEventData_t

_TAU_S = 25.0  # thermal time constant of the temperature model
_ENERGY_STEP_S = 10.0  # energy integrates sampled power on this grid
_DC_BUSES = (0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD)
_PCIE_LANE_GBS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938}


def noise(seed: int, phys: int, key: str, tick: int) -> float:
    """Deterministic uniform [0, 1) for (seed, gpu, key, tick); stable across processes."""
    digest = hashlib.blake2b(f"{seed}|{phys}|{key}|{tick}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") / 2.0**64


@dataclass
class Sample:
    busy: bool
    util_gpu: int
    util_mem: int
    sm_mhz: int
    mem_mhz: int
    power_w: float
    temp_c: float
    fan_pct: int
    reasons: int
    pstate: int
    pcie_gen: int
    pcie_width: int
    tx_kbs: int
    rx_kbs: int
    used_bytes: int


class SimGpu:
    """One simulated GPU: static identity plus time-dependent behaviour."""

    def __init__(self, node: SimNode, phys: int, spec: _sc.GpuSpec) -> None:
        self.node = node
        self.phys = phys
        self.spec = spec
        self.p = spec.profile
        seed = node.spec.seed
        h = hashlib.blake2b(f"{node.spec.hostname}|{seed}|{phys}|{self.p.key}".encode(), digest_size=16).hexdigest()
        self.uuid = f"GPU-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
        self.serial = str(1320000000000 + int(h[:10], 16) % 9999999999)
        n = len(node.spec.gpus)
        self.bus = _DC_BUSES[phys] if n == 8 and phys < 8 else (0x01 + 0x20 * phys) % 0x100 or 0x01
        self.workload = spec.workload or node.spec.workload
        self.handle = SimDevice(self, node)
        self.energy_cache: tuple[int, float] = (0, 0.0)  # (grid steps integrated, mJ)
        self.energy_base_mj = int(self.p.idle_w * 3 * 86400 * 1000 * (0.5 + noise(seed, phys, "ebase", 0)))
        self.ecc_enabled = self.p.ecc == "on" or (self.p.ecc == "toggle" and bool(spec.ecc_enabled))

    # -- faults ---------------------------------------------------------------
    def faults(self, t: float) -> dict[str, _sc.FaultSpec]:
        """Active faults by kind at time t (the latest one of a kind wins)."""
        out: dict[str, _sc.FaultSpec] = {}
        for f in self.node.faults:
            if f.gpu == self.phys and f.active(t):
                out[f.kind] = f
        if self.node.spec.story is not None:
            out.update(self._story_faults(t))
        return out

    def story(self, t: float) -> _st.CardState:
        """What the node's demo story (:mod:`fleetmon.sim.stories`) does to this GPU at simulation time t."""
        spec = self.node.spec
        if spec.story is None:
            return _st.NONE
        epoch = self.node.start if spec.story_epoch is None else spec.story_epoch
        gen, width = self.link_max()
        return _st.card_state(spec.story, self.phys, self.node.start + t, epoch, gen=gen, width=width)

    def _story_faults(self, t: float) -> dict[str, _sc.FaultSpec]:
        """The story's state at t as the twin's own fault kinds (the counters are added where they are read)."""
        st = self.story(t)
        out: dict[str, _sc.FaultSpec] = {}
        if st.link is not None:
            out["pcie_degraded"] = _sc.FaultSpec("pcie_degraded", self.phys, params={"gen": st.link[0],
                                                                                     "width": st.link[1]})
        if st.sm_frac is not None:
            out["derate"] = _sc.FaultSpec("derate", self.phys, params={"frac": st.sm_frac, "sw_power_cap": False,
                                                                       "power_frac": st.power_frac})
        if st.power_brake:
            out["power_brake"] = _sc.FaultSpec("power_brake", self.phys, params={
                "duty": _st.PSU_BRAKE_DUTY, "window_s": 5, "power_frac": 0.82 * _st.PSU_BRAKE_POWER_FRAC})
        if st.power_dropout and _sc.phase_at(self.workload, t).busy:
            out["power_read_fail"] = _sc.FaultSpec("power_read_fail", self.phys)
        return out

    def started(self, kind: str, t: float) -> list[_sc.FaultSpec]:
        """Faults of ``kind`` on this GPU whose onset has passed (duration ignored: counts persist)."""
        return [f for f in self.node.faults if f.gpu == self.phys and f.kind == kind and f.onset_s <= t]

    def lost(self, t: float) -> _sc.FaultSpec | None:
        return self.faults(t).get("gpu_lost")

    def vanished(self, t: float) -> bool:
        f = self.lost(t)
        return f is not None and bool(f.params.get("vanish"))

    # -- power and limits ------------------------------------------------------
    def enforced_limit_w(self, t: float) -> float:
        capped = self.faults(t).get("power_capped")
        if capped is not None:
            return round(self.p.tdp_w * float(capped.params["frac"]))
        return self.p.tdp_w

    def old_driver(self, t: float) -> bool:
        return self.node.spec.old_driver or "old_driver" in self.faults(t)

    def link_max(self) -> tuple[int, int]:
        gen = min(self.p.pcie_gen, self.spec.slot_gen or self.p.pcie_gen)
        width = min(self.p.pcie_width, self.spec.slot_width or self.p.pcie_width)
        return gen, width

    # -- telemetry -------------------------------------------------------------
    def sample(self, t: float) -> Sample:
        """Everything time-dependent at simulation time t (seconds since start)."""
        p, seed = self.p, self.node.spec.seed
        tick = int(math.floor(t))

        def u(key: str, at: int = tick) -> float:
            return noise(seed, self.phys, key, at)

        phase = _sc.phase_at(self.workload, t)
        busy = phase.busy
        f = self.faults(t)
        limit = self.enforced_limit_w(t)

        # Temperature: first-order approach to the phase's target.
        idle_target, busy_target = p.idle_temp_c, p.busy_temp_c
        if self.story(t).hot:  # a story's hot hours: just under the slowdown temperature while busy
            busy_target = p.temp_slowdown_c - _st.THERMAL_UNDER_SLOWDOWN_C
        if "thermal" in f or "fan_stuck" in f:
            over = float(f["thermal"].params["over_c"]) if "thermal" in f else 1.0
            busy_target = p.temp_slowdown_c + over + 0.5
            idle_target = p.idle_temp_c + 15.0
        target = busy_target if busy else idle_target
        previous = idle_target if (busy or phase.first) else busy_target
        if phase.first and self.node.spec.story_epoch is not None:
            previous = target  # continuing a generated history: the card was already running, not cold
        temp = target + (previous - target) * math.exp(-phase.elapsed_s / _TAU_S)
        temp += (u("temp") - 0.5) * 1.0

        reasons = 0
        if busy:
            util = min(100, 92 + int(9 * u("util")))
            util_mem = 35 + int(30 * u("umem"))
            sm = p.boost_mhz * (0.97 + 0.03 * u("sm"))
            if not p.datacenter:  # GeForce boost runs above the nominal boost clock
                sm = p.boost_mhz * (1.02 + 0.06 * u("sm"))
            sm = min(sm, p.max_sm_mhz)
            power = limit * (0.80 + 0.14 * u("plevel", phase.index)) * (0.98 + 0.04 * u("pw"))
            if power > 0.9 * limit and u("swcap") < 0.3:
                reasons |= nvmlClocksEventReasonSwPowerCap
                sm *= 0.97
            if "power_capped" in f:
                reasons |= nvmlClocksEventReasonSwPowerCap
                sm *= 0.85
                power = limit * (0.95 + 0.04 * u("pw"))
            if "derate" in f:
                reasons &= ~nvmlClocksEventReasonSwPowerCap
                if f["derate"].params.get("sw_power_cap"):
                    reasons |= nvmlClocksEventReasonSwPowerCap
                sm = p.boost_mhz * float(f["derate"].params["frac"]) * (0.99 + 0.02 * u("sm"))
                power = limit * (float(f["derate"].params.get("power_frac") or 0.65) - 0.03 + 0.06 * u("pw"))
            mem_mhz = p.max_mem_mhz
            pstate = 0
            job = 0.55 + 0.4 * u("job", phase.index)
            used = int(p.memory_mib * job) * 1024 * 1024
        else:
            util, util_mem = 0, 0
            sm, mem_mhz = p.idle_sm_mhz, p.idle_mem_mhz
            power = p.idle_w * (0.95 + 0.1 * u("pw"))
            reasons = nvmlClocksEventReasonGpuIdle
            pstate = p.idle_pstate
            used = 4 * 1024 * 1024

        # Thermal slowdown follows temperature, busy or not.
        if temp >= p.temp_slowdown_c:
            reasons |= nvmlClocksEventReasonHwThermalSlowdown | nvmlClocksEventReasonHwSlowdown
            reasons |= nvmlClocksEventReasonSwThermalSlowdown
            if busy:
                sm *= 0.5
                power *= 0.6
        elif temp >= p.temp_slowdown_c - 3:
            reasons |= nvmlClocksEventReasonSwThermalSlowdown
            if busy:
                sm *= 0.8
                power *= 0.85

        brake = f.get("power_brake")
        if busy and brake is not None:
            window = int(t // float(brake.params["window_s"]))
            if u("brake", window) < float(brake.params["duty"]):
                reasons |= nvmlClocksEventReasonHwPowerBrakeSlowdown | nvmlClocksEventReasonHwSlowdown
                sm = min(sm, p.boost_mhz * 0.45)
                power = limit * float(brake.params["power_frac"]) * (0.95 + 0.1 * u("pw"))

        power = min(power, limit * 0.995)

        fan = 0
        if p.num_fans:
            fan = int(max(30.0, min(100.0, 30.0 + (temp - 35.0) * 1.6)))
            if "fan_stuck" in f:
                fan = 0

        gen_max, width_max = self.link_max()
        gen, width = (gen_max, width_max) if busy else (1, width_max)
        degraded = f.get("pcie_degraded")
        if degraded is not None:
            gen = min(gen, int(degraded.params["gen"]))
            width = min(width, int(degraded.params["width"]))
        link_kbs = _PCIE_LANE_GBS.get(gen, 1.0) * width * 1e6
        if busy:
            tx = int(link_kbs * (0.05 + 0.25 * u("tx")))
            rx = int(link_kbs * (0.05 + 0.25 * u("rx")))
        else:
            tx, rx = 200 + int(800 * u("tx")), 200 + int(800 * u("rx"))

        return Sample(busy, util, util_mem, int(sm), int(mem_mhz), power, temp, fan, reasons, pstate,
                       gen, width, tx, rx, used)

    def energy_mj(self, t: float) -> int:
        """Energy since driver load: sampled power integrated on a 10 s grid (mJ)."""
        steps = int(max(0.0, t) // _ENERGY_STEP_S)
        done, acc = self.energy_cache
        if steps < done:
            done, acc = 0, 0.0
        if steps - done > 2000:  # a long jump: extrapolate with the power at the target
            acc += self.sample(steps * _ENERGY_STEP_S).power_w * (steps - done) * _ENERGY_STEP_S
            done = steps
        while done < steps:
            acc += self.sample(done * _ENERGY_STEP_S).power_w * _ENERGY_STEP_S
            done += 1
        self.energy_cache = (done, acc)
        partial = self.sample(steps * _ENERGY_STEP_S).power_w * (max(0.0, t) - steps * _ENERGY_STEP_S)
        return self.energy_base_mj + int((acc + partial) * 1000)

    # -- memory errors -----------------------------------------------------------
    def ecc_counts(self, t: float) -> dict[tuple[int, int], int]:
        """(error type, counter type) -> count."""
        seed = self.node.spec.seed
        corr_agg = int(12 * noise(seed, self.phys, "ecc_base", 0))
        corr_vol = unc_vol = unc_agg = 0
        for f in self.started("ecc_correctable_storm", t):
            end = t if f.duration_s is None else min(t, f.onset_s + f.duration_s)
            n = int(float(f.params["per_min"]) * (end - f.onset_s) / 60.0)
            corr_vol += n
            corr_agg += n
        for f in self.started("ecc_uncorrectable", t):
            n = self._steps(f, t) * int(f.params["count"])
            unc_vol += n
            unc_agg += n
        return {
            (NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC): corr_vol,
            (NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC): corr_agg,
            (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC): unc_vol,
            (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC): unc_agg,
        }

    @staticmethod
    def _steps(f: _sc.FaultSpec, t: float) -> int:
        """Occurrences of a stepping fault by time t (1 + one per repeat_s)."""
        repeat = f.params.get("repeat_s")
        if not repeat:
            return 1
        end = t if f.duration_s is None else min(t, f.onset_s + f.duration_s)
        return 1 + int((end - f.onset_s) // float(repeat))

    def retired_pages(self, t: float) -> tuple[list[int], list[int], bool]:
        """(sbe page addresses, dbe page addresses, pending)."""
        sbe = dbe = 0
        pending = False
        for f in self.started("retired_pages", t):
            sbe += int(f.params["sbe"])
            dbe += int(f.params["dbe"])
            pending = pending or bool(f.params["pending"])
        for f in self.started("ecc_uncorrectable", t):
            dbe += self._steps(f, t)
            pending = True
        story = self.story(t).retired
        if story is not None:
            sbe, dbe, pending = sbe + story[0], dbe + story[1], pending or bool(story[2])
        seed = self.node.spec.seed

        def addr(kind: str, i: int) -> int:
            return 0x100000 + int(noise(seed, self.phys, kind, i) * 0x3FFFFF) * 0x10 + i

        return [addr("sbe", i) for i in range(sbe)], [addr("dbe", i) for i in range(dbe)], pending

    def remapped_rows(self, t: float) -> tuple[int, int, int, int]:
        corr = unc = pending = failure = 0
        for f in self.started("row_remap_pending", t):
            corr += int(f.params["corr"])
            unc += int(f.params["unc"])
            pending = 1
        for f in self.started("row_remap_failure", t):
            corr += int(f.params["corr"])
            unc += int(f.params["unc"])
            failure = 1
        for f in self.started("ecc_uncorrectable", t):
            unc += self._steps(f, t)
            pending = 1
        story = self.story(t).remap
        if story is not None:
            corr, unc = corr + story[0], unc + story[1]
            pending, failure = max(pending, story[2]), max(failure, story[3])
        return corr, unc, pending, failure

    def replays(self, t: float) -> int:
        n = int(3 * noise(self.node.spec.seed, self.phys, "replay_base", 0))
        for f in self.started("pcie_replays", t):
            end = t if f.duration_s is None else min(t, f.onset_s + f.duration_s)
            n += int(float(f.params["per_min"]) * (end - f.onset_s) / 60.0)
        return n

    # -- events ----------------------------------------------------------------
    def event_sources(self) -> list[tuple[tuple[int, int], int, int, float, float | None, int | None]]:
        """(source id, event type, data, first time, repeat_s, count) for this GPU's faults."""
        out = []
        for i, f in enumerate(self.node.faults):
            if f.gpu != self.phys:
                continue
            if f.kind == "xid":
                out.append(((i, 0), nvmlEventTypeXidCriticalError, int(f.params["code"]), f.onset_s,
                             f.params.get("repeat_s"), f.params.get("count")))
                continue
            code = f.params.get("xid")
            repeat = f.params.get("repeat_s") if f.kind == "ecc_uncorrectable" else None
            count: int | None = 1 if not repeat else None
            if code:
                out.append(((i, 0), nvmlEventTypeXidCriticalError, int(code), f.onset_s, repeat, count))
            if f.kind == "ecc_uncorrectable":
                out.append(((i, 1), nvmlEventTypeDoubleBitEccError, 0, f.onset_s, repeat, count))
        return out


class SimNode:
    """The simulated machine: a resolved scenario, its GPUs, the live fault list and the clock."""

    def __init__(self, spec: _sc.NodeSpec, clock: Callable[[], float], start: float) -> None:
        self.spec = spec
        self.clock = clock
        self.start = start
        self.faults: list[_sc.FaultSpec] = list(spec.faults)
        self.gpus = [SimGpu(self, i, g) for i, g in enumerate(spec.gpus)]
        self.hang_override: float | None = None

    def now(self) -> float:
        return float(self.clock()) - self.start

    def visible(self, t: float) -> list[SimGpu]:
        return [g for g in self.gpus if not g.vanished(t)]


class SimDevice:
    """Opaque device handle (the real one is a ctypes pointer)."""

    __slots__ = ("_gpu", "_node")

    def __init__(self, gpu: SimGpu, node: SimNode) -> None:
        self._gpu = gpu
        self._node = node

    def __repr__(self) -> str:
        return f"<simnvml device {self._gpu.phys} {self._gpu.uuid}>"


class SimEventSet:
    """Opaque event set: registrations and per-source delivery cursors."""

    def __init__(self, node: SimNode) -> None:
        self.node = node
        self.freed = False
        self.registrations: dict[int, tuple[int, float]] = {}  # phys -> (mask, since_s)
        self.next_k: dict[tuple[int, int], int] = {}  # event source id -> next occurrence
        self.lost_reported: set[int] = set()

    def __repr__(self) -> str:
        return f"<simnvml event set {sorted(self.registrations)}>"


def supported_events(gpu: SimGpu) -> int:
    """The event types a GPU accepts (ECC events only with ECC on)."""
    mask = nvmlEventTypePState | nvmlEventTypeXidCriticalError | nvmlEventTypeClock
    if gpu.ecc_enabled:
        mask |= nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError
    return mask


def next_event(es: SimEventSet, node: SimNode, t: float) -> c_nvmlEventData_t | None:
    """The earliest due, undelivered event for the set (advances its cursor)."""
    best: tuple[float, SimGpu, tuple[int, int], int, int, int] | None = None
    for phys, (mask, since) in es.registrations.items():
        gpu = node.gpus[phys]
        for sid, etype, data, first, repeat, count in gpu.event_sources():
            if not etype & mask:
                continue
            k = es.next_k.get(sid)
            if k is None:
                k = 0 if first >= since or not repeat else int(math.ceil((since - first) / float(repeat)))
                if first < since and not repeat:
                    k = 1  # a one-off from before registration is never delivered
            if count is not None and k >= count:
                continue
            at = first + k * float(repeat or 0.0)
            if at > t:
                continue
            if best is None or at < best[0]:
                best = (at, gpu, sid, k, etype, data)
    if best is None:
        return None
    _, gpu, sid, k, etype, data = best
    es.next_k[sid] = k + 1
    return c_nvmlEventData_t(gpu.handle, etype, data)
