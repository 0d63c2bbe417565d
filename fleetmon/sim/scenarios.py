"""Scenario tables for the simulated NVML twin (:class:`fleetmon.sim.nvml.SimulatedNvml`).

Three kinds of data, plus small pure helpers:

* :data:`PROFILES` - one :class:`GpuProfile` per GPU model, keyed by a short
  model key ("a100", "rtx3090", ...). Names are exactly what NVML reports.
  Power, clocks, memory and PCIe come from the nominal spec table
  (``shared/reference/gpu-specs.csv``). Max clocks use NVML's convention
  (memory clock of GDDR parts is the effective rate nvidia-smi shows, e.g.
  9751 MHz on an RTX 3090). VBIOS/InfoROM/part-number strings and PCI
  subsystem ids are illustrative, not copied from real boards.
* :data:`FAULT_KINDS` - every fault the twin can inject, with default
  parameters and a one-line description.
* :data:`SCENARIOS` - named node scenarios (JSON-compatible dicts).

A scenario can be given as a name from :data:`SCENARIOS`, as a composite spec
string ``MODEL*N[,MODEL*N...][+FAULT@GPU[:ONSET_S]]...[;key=value...]``
(keys ``driver``, ``hostname``, ``seed``, ``persistence``, ``story``, ``epoch``; e.g.
``rtx4090*4+pcie_degraded@1:0;driver=550.54.15``), as a path to a JSON
file holding one table entry, or as a dict with the table-entry structure::

    {
      "description": "...",
      "hostname": "sim-node",            # default "sim-<name>"
      "driver": "535.161.08",           # driver < 535 implies old_driver
      "seed": 0,
      "persistence": 1,                  # default 1 on data-center nodes
      "old_driver": false,               # clocks-event function missing
      "init_error": null,                # "driver_not_loaded", "library_not_found",
                                         # "lib_rm_version_mismatch", "no_permission"
      "virtualization": "none",          # "passthrough", "vgpu", "vgpu-unlicensed"
      "story": null,                     # a demo story (fleetmon.sim.stories), e.g. "derated"
      "story_epoch": null,               # Unix s the story is anchored at (default: the start)
      "workload": {"mode": "cycle", "busy_s": 240, "idle_s": 120, "offset_s": 0},
      "gpus": ["a100", {"model": "a100", "slot_gen": 3, "workload": {"mode": "idle"}}],
      "faults": [{"kind": "thermal", "gpu": 0, "onset_s": 300, "duration_s": null}],
    }

Fault ``gpu`` is the physical index at configure time (it does not shift when
another GPU vanishes from enumeration). ``onset_s`` counts from the
simulation start.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, replace
from typing import Any

from fleetmon.compat import SLOTS
from fleetmon.sim.stories import STORY_NAMES


@dataclass(frozen=True, **SLOTS)
class GpuProfile:
    """Static description of one GPU model as the simulated NVML reports it.

    Units: MiB, W, MHz, °C. ``ecc`` is "none" (API NOT_SUPPORTED), "toggle"
    (supported, off by default) or "on". ``repair`` is "retire" (dynamic page
    retirement, pre-Ampere), "remap" (row remapping, Ampere+ data center),
    "quirk" (GetRemappedRows answers zeros although nothing is remapped, as
    gpud reports for the RTX 4090) or "none".
    """

    key: str
    name: str
    arch: str  # "Volta", "Turing", "Ampere", "Ada", "Hopper"
    compute_capability: tuple[int, int]
    memory_mib: int
    tdp_w: float
    power_min_w: float
    power_max_w: float
    idle_w: float
    base_mhz: int
    boost_mhz: int
    max_sm_mhz: int
    max_mem_mhz: int
    idle_sm_mhz: int
    idle_mem_mhz: int
    pcie_gen: int
    pcie_width: int
    ecc: str
    repair: str
    num_fans: int
    hbm: bool  # memory temperature readable (NVML_FI_DEV_MEMORY_TEMP)
    datacenter: bool  # serial and board part number readable
    mig: bool
    vbios: str
    inforom_image: str
    inforom_oem: str
    inforom_ecc: str | None
    pci_device_id: int
    pci_subsystem_id: int
    board_part: str | None
    temp_shutdown_c: int
    temp_slowdown_c: int
    temp_gpu_max_c: int
    temp_mem_max_c: int | None
    idle_temp_c: float
    busy_temp_c: float
    idle_pstate: int
    brand: int  # NVML_BRAND_* value


PROFILES: dict[str, GpuProfile] = {
    p.key: p
    for p in (
        GpuProfile(
            "rtx3090", "NVIDIA GeForce RTX 3090", "Ampere", (8, 6), 24576, 350, 100, 400, 25,
            1395, 1695, 2100, 9751, 210, 405, 4, 16, "none", "none", 2, False, False, False,
            "94.02.42.00.A9", "G001.0000.03.03", "2.0", None, 0x220410DE, 0x147D10DE, None,
            98, 95, 93, None, 34, 72, 8, 5,
        ),
        GpuProfile(
            "rtx4090", "NVIDIA GeForce RTX 4090", "Ada", (8, 9), 24564, 450, 150, 600, 22,
            2235, 2520, 3105, 10501, 210, 405, 4, 16, "toggle", "quirk", 2, False, False, False,
            "95.02.3C.40.E6", "G002.0000.00.03", "2.0", None, 0x268410DE, 0x16F110DE, None,
            90, 87, 83, None, 33, 70, 8, 5,
        ),
        GpuProfile(
            "v100", "Tesla V100-SXM2-32GB", "Volta", (7, 0), 32768, 300, 150, 300, 42,
            1290, 1530, 1530, 877, 135, 877, 3, 16, "on", "retire", 0, True, True, False,
            "88.00.80.00.01", "G503.0203.00.04", "1.1", "5.0", 0x1DB510DE, 0x124910DE,
            "900-2G503-0430-000", 90, 87, 83, 85, 33, 61, 0, 2,
        ),
        GpuProfile(  # second-hand PCIe servers of the demo fleet (fleetmon.sim.demo_history)
            "p100", "Tesla P100-PCIE-16GB", "Pascal", (6, 0), 16384, 250, 125, 250, 30,
            1190, 1329, 1329, 715, 544, 715, 3, 16, "on", "retire", 0, True, True, False,
            "86.00.4D.00.01", "H400.0201.00.08", "1.1", "4.1", 0x15F810DE, 0x118F10DE,
            "900-2H400-0300-031", 90, 88, 85, 85, 31, 66, 0, 2,
        ),
        GpuProfile(
            "a100", "NVIDIA A100-SXM4-80GB", "Ampere", (8, 0), 81920, 400, 100, 400, 60,
            1275, 1410, 1410, 1593, 210, 1593, 4, 16, "on", "remap", 0, True, True, True,
            "92.00.45.00.06", "G506.0210.00.04", "2.1", "6.16", 0x20B210DE, 0x147F10DE,
            "692-2G506-0210-002", 92, 89, 85, 95, 32, 62, 0, 14,
        ),
        GpuProfile(
            "a100pcie", "NVIDIA A100 80GB PCIe", "Ampere", (8, 0), 81920, 300, 150, 300, 45,
            1065, 1410, 1410, 1512, 210, 1512, 4, 16, "on", "remap", 0, True, True, True,
            "92.00.90.00.04", "G133.0200.00.05", "2.1", "6.16", 0x20B510DE, 0x153310DE,
            "900-21001-0020-100", 92, 89, 85, 95, 34, 64, 0, 14,
        ),
        GpuProfile(
            "t4", "Tesla T4", "Turing", (7, 5), 15360, 70, 60, 70, 10,
            585, 1590, 1590, 5001, 300, 405, 3, 16, "on", "retire", 0, False, True, False,
            "90.04.96.00.02", "G183.0200.00.02", "1.1", "5.0", 0x1EB810DE, 0x12A210DE,
            "900-2G183-0000-001", 96, 93, 87, None, 30, 68, 8, 2,
        ),
        GpuProfile(
            "h100", "NVIDIA H100 80GB HBM3", "Hopper", (9, 0), 81559, 700, 200, 700, 72,
            1590, 1980, 1980, 2619, 345, 2619, 5, 16, "on", "remap", 0, True, True, True,
            "96.00.74.00.0D", "G520.0200.00.05", "2.1", "7.16", 0x233010DE, 0x16C110DE,
            "692-2G520-0200-000", 92, 89, 87, 95, 30, 60, 0, 14,
        ),
        GpuProfile(
            "a10", "NVIDIA A10", "Ampere", (8, 6), 23028, 150, 100, 150, 15,
            885, 1695, 1695, 6251, 210, 405, 4, 16, "on", "remap", 0, False, True, False,
            "94.02.5C.00.02", "G133.0210.00.05", "2.1", "6.16", 0x223610DE, 0x148210DE,
            "900-2G133-0020-000", 98, 95, 88, None, 28, 66, 8, 14,
        ),
    )
}

# NVIDIA Xid codes used by the default fault parameters (see gpu-faults.md §1.2).
XID_DBE = 48
XID_PAGE_RETIRED = 63
XID_RETIREMENT_FAILURE = 64
XID_FALLEN_OFF_BUS = 79
XID_EXCESSIVE_SBE = 92

FAULT_KINDS: dict[str, tuple[dict[str, Any], str]] = {
    "ecc_uncorrectable": (
        {"count": 1, "repeat_s": None, "xid": XID_DBE},
        "uncorrectable ECC: volatile+aggregate DBE counts step up by `count` (every `repeat_s`), "
        "a DBE retired page or uncorrectable remapped row, Xid 48",
    ),
    "ecc_correctable_storm": (
        {"per_min": 600, "xid": XID_EXCESSIVE_SBE},
        "corrected ECC counts rise by `per_min` a minute, Xid 92 once",
    ),
    "retired_pages": (
        {"sbe": 50, "dbe": 8, "pending": True, "xid": XID_PAGE_RETIRED},
        "page retirement near the limit of 64 (sbe+dbe pages) with a retirement pending (pre-Ampere)",
    ),
    "row_remap_pending": (
        {"corr": 1, "unc": 0, "xid": XID_PAGE_RETIRED},
        "row remap recorded, waiting for a GPU reset (Ampere+)",
    ),
    "row_remap_failure": (
        {"corr": 0, "unc": 8, "xid": XID_RETIREMENT_FAILURE},
        "row remapping failed (no spare rows): the RMA signal",
    ),
    "xid": (
        {"code": 13, "repeat_s": None, "count": 1},
        "emit Xid `code` through the event API once, or every `repeat_s` (`count` times, None = forever)",
    ),
    "gpu_lost": (
        {"vanish": False, "xid": XID_FALLEN_OFF_BUS, "handle_error": True, "wait_error": True},
        "GPU falls off the bus: every call raises GPU_IS_LOST; with `vanish` it also leaves "
        "enumeration (device count drops); Xid 79",
    ),
    "hung": (
        {"hang_s": 30.0, "then": "timeout"},
        "every call on the GPU blocks `hang_s` seconds, then raises TIMEOUT (`then`='timeout') or answers",
    ),
    "pcie_degraded": (
        {"gen": 1, "width": 8},
        "link stays at gen `gen` x`width` while busy (bad riser or slot); a healthy link idles at gen 1",
    ),
    "pcie_replays": (
        {"per_min": 30},
        "PCIe replay counter grows `per_min` a minute (DCGM warns above 8/min)",
    ),
    "power_brake": (
        {"duty": 0.5, "window_s": 5, "power_frac": 0.35},
        "while busy, in `duty` of `window_s` windows: HwPowerBrake (0x80) + HwSlowdown (0x8), "
        "power dips to `power_frac` of the limit while utilization stays high",
    ),
    "power_read_fail": ({}, "nvmlDeviceGetPowerUsage raises NVMLError_Unknown"),
    "power_capped": (
        {"frac": 0.6},
        "enforced power limit is `frac` of the default (external/BMC cap); SwPowerCap while busy",
    ),
    "thermal": (
        {"over_c": 1},
        "runs hot: busy temperature `over_c` above the slowdown threshold; SwThermal/HwThermal bits",
    ),
    "fan_stuck": ({}, "fans report 0 % and the GPU runs hot (fanned cards only report fans)"),
    "derate": (
        {"frac": 0.62, "sw_power_cap": False},
        "SM clock under load at `frac` of nominal boost with no throttle reason set "
        "(or only SwPowerCap with `sw_power_cap`) although power stays well below the limit",
    ),
    "old_driver": ({}, "nvmlDeviceGetCurrentClocksEventReasons is missing (FunctionNotFound)"),
}

INIT_ERRORS: dict[str, int] = {  # init_error name -> NVML_ERROR_* value
    "no_permission": 4,
    "driver_not_loaded": 9,
    "library_not_found": 12,
    "lib_rm_version_mismatch": 18,
}

DEFAULT_WORKLOAD: dict[str, Any] = {"mode": "cycle", "busy_s": 240.0, "idle_s": 120.0, "offset_s": 0.0}
DEFAULT_DRIVER = "535.161.08"


@dataclass(frozen=True, **SLOTS)
class FaultSpec:
    """One injected fault: ``kind`` on physical GPU ``gpu`` from ``onset_s``."""

    kind: str
    gpu: int
    onset_s: float = 0.0
    duration_s: float | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def active(self, t_s: float) -> bool:
        """True while the fault applies at simulation time ``t_s`` (seconds)."""
        if t_s < self.onset_s:
            return False
        return self.duration_s is None or t_s < self.onset_s + self.duration_s


@dataclass(frozen=True, **SLOTS)
class GpuSpec:
    """One GPU slot of a node: a model plus slot-level options."""

    profile: GpuProfile
    slot_gen: int | None = None  # PCIe generation the slot/riser allows
    slot_width: int | None = None
    workload: dict[str, Any] | None = None
    ecc_enabled: bool | None = None  # for "toggle" cards; None = the card's default (off)


@dataclass(frozen=True, **SLOTS)
class NodeSpec:
    """A fully resolved scenario."""

    name: str
    description: str
    hostname: str
    driver: str
    seed: int
    persistence: int
    old_driver: bool
    init_error: str | None
    workload: dict[str, Any]
    gpus: tuple[GpuSpec, ...]
    faults: tuple[FaultSpec, ...]
    virtualization: str = "none"  # "none", "passthrough", "vgpu" (a licensed vGPU guest), "vgpu-unlicensed"
    story: str | None = None  # a demo story of fleetmon.sim.stories, continued live
    story_epoch: float | None = None  # Unix s the story is anchored at (None: the simulation start)


@dataclass(frozen=True, **SLOTS)
class Phase:
    """Where a workload is at one instant (see :func:`phase_at`)."""

    busy: bool
    index: int  # phase counter since the start (0, 1, ...)
    elapsed_s: float  # time since this phase began
    first: bool  # no earlier phase (the GPU starts cold)


def _fault(kind: str, gpu: int, onset_s: float = 0.0, **params: Any) -> dict[str, Any]:
    return {"kind": kind, "gpu": gpu, "onset_s": onset_s, **params}


_FAULT_MODEL = {
    "retired_pages": "v100", "ecc_uncorrectable": "a100", "ecc_correctable_storm": "a100",
    "row_remap_pending": "a100", "row_remap_failure": "a100", "xid": "a100", "gpu_lost": "a100",
    "hung": "a10", "pcie_degraded": "rtx4090", "pcie_replays": "rtx4090", "power_brake": "rtx4090",
    "power_read_fail": "a10", "power_capped": "a100", "thermal": "a100", "fan_stuck": "rtx3090",
    "derate": "a100", "old_driver": "v100",
}

SCENARIOS: dict[str, dict[str, Any]] = {
    "healthy": {
        "description": "healthy 2x A100 80GB PCIe node (the default)",
        "gpus": ["a100pcie"] * 2,
    },
    "healthy-a100": {
        "description": "healthy 8x A100 SXM4 80GB (HGX) node",
        "gpus": ["a100"] * 8,
    },
    "healthy-h100": {
        "description": "healthy 8x H100 SXM5 node, driver 550",
        "gpus": ["h100"] * 8, "driver": "550.54.15",
    },
    "healthy-t4": {
        "description": "healthy 4x T4 inference node (page retirement, GDDR6)",
        "gpus": ["t4"] * 4,
    },
    "geforce": {
        "description": "4x RTX 3090 rig: no ECC, serial or part number; fans; no persistence",
        "gpus": ["rtx3090"] * 4, "driver": "550.54.15", "persistence": 0,
    },
    "geforce-4090": {
        "description": "4x RTX 4090 rig: ECC supported but off, GetRemappedRows answers zeros",
        "gpus": ["rtx4090"] * 4, "driver": "550.54.15", "persistence": 0,
    },
    "v100-retired": {
        "description": "4x V100: GPU 1 has 58 retired pages (near the limit of 64), one pending",
        "gpus": ["v100"] * 4,
        "faults": [_fault("retired_pages", 1)],
    },
    "a100-remap": {
        "description": "8x A100: GPU 2 has a row remap pending, GPU 5 a row-remap failure",
        "gpus": ["a100"] * 8,
        "faults": [_fault("row_remap_pending", 2), _fault("row_remap_failure", 5)],
    },
    "lost": {
        "description": "4x A100: GPU 2 has fallen off the bus (still enumerated, GPU_IS_LOST, Xid 79)",
        "gpus": ["a100"] * 4,
        "faults": [_fault("gpu_lost", 2)],
    },
    "lost-later": {
        "description": "4x A100: GPU 3 falls off the bus at 120 s and leaves enumeration",
        "gpus": ["a100"] * 4,
        "faults": [_fault("gpu_lost", 3, 120.0, vanish=True)],
    },
    "hung": {
        "description": "4x A10: every call on GPU 1 blocks 30 s then times out",
        "gpus": ["a10"] * 4,
        "faults": [_fault("hung", 1)],
    },
    "mixed": {
        "description": "2x A100 PCIe + 2x T4: Xid 13 on GPU 0 at 60 s, GPU 3 runs hot from 300 s, "
                       "SBE storm on GPU 2 from 600 s",
        "gpus": ["a100pcie", "a100pcie", "t4", "t4"],
        "faults": [_fault("xid", 0, 60.0, code=13), _fault("thermal", 3, 300.0),
                   _fault("ecc_correctable_storm", 2, 600.0)],
    },
    "old-driver": {
        "description": "4x V100 on driver 525: the clocks-event function is missing",
        "gpus": ["v100"] * 4, "driver": "525.147.05",
    },
    "no-driver": {
        "description": "the NVIDIA kernel driver is not loaded: nvmlInit fails",
        "gpus": ["a100pcie"] * 2, "init_error": "driver_not_loaded",
    },
    "driver-mismatch": {
        "description": "library/driver version mismatch after an upgrade: nvmlInit fails",
        "gpus": ["a100pcie"] * 2, "init_error": "lib_rm_version_mismatch",
    },
    "vgpu-guest": {
        "description": "a VM with 2 licensed vGPUs on A10 boards (NVML reports vGPU virtualization)",
        "gpus": ["a10"] * 2, "virtualization": "vgpu",
    },
    "demo-dgx-a100": {
        "description": "demo: 8x A100; SBE storm on GPU 3 from 10 min, Xid 94 on GPU 5 at 15 min, "
                       "row remap pending on GPU 6",
        "hostname": "dgx-a100-07", "gpus": ["a100"] * 8,
        "faults": [_fault("ecc_correctable_storm", 3, 600.0), _fault("xid", 5, 900.0, code=94),
                   _fault("row_remap_pending", 6)],
    },
    "demo-rig-4090": {
        "description": "demo: 6x RTX 4090 rig; GPU 2 on a bad riser (gen1 x8 under load, replays), "
                       "GPU 4 power-brakes from 5 min, GPU 5 falls off the bus at 30 min",
        "hostname": "rig-4090-02", "gpus": ["rtx4090"] * 6, "driver": "550.54.15", "persistence": 0,
        "faults": [_fault("pcie_degraded", 2), _fault("pcie_replays", 2),
                   _fault("power_brake", 4, 300.0), _fault("gpu_lost", 5, 1800.0)],
    },
    "demo-v100-legacy": {
        "description": "demo: 4x V100 on driver 525; GPU 0 near the retired-page limit, GPU 3 derated",
        "hostname": "v100-legacy-01", "gpus": ["v100"] * 4, "driver": "525.147.05",
        "faults": [_fault("retired_pages", 0), _fault("derate", 3)],
    },
    "demo-h100": {
        "description": "demo: 8x H100; GPU 6 runs hot from 20 min, GPU 1 capped at 60 % by the BMC",
        "hostname": "h100-node-12", "gpus": ["h100"] * 8, "driver": "550.54.15",
        "faults": [_fault("thermal", 6, 1200.0), _fault("power_capped", 1)],
    },
    "demo-geforce-3090": {
        "description": "demo: 4x RTX 3090; fan of GPU 1 stuck from 10 min, Xid 13 every 20 min on GPU 3",
        "hostname": "rig-3090-01", "gpus": ["rtx3090"] * 4, "driver": "535.161.08", "persistence": 0,
        "faults": [_fault("fan_stuck", 1, 600.0), _fault("xid", 3, 300.0, code=13, repeat_s=1200.0, count=None)],
    },
}
_XID_REPEAT: dict[str, Any] = {"repeat_s": 60.0, "count": None}
for _kind in FAULT_KINDS:
    _model = _FAULT_MODEL[_kind]
    _entry: dict[str, Any] = {
        "description": f"4x {PROFILES[_model].name}, GPU 1: {FAULT_KINDS[_kind][1]}",
        "gpus": [_model] * 4,
        "faults": [_fault(_kind, 1, **(_XID_REPEAT if _kind == "xid" else {}))],
    }
    if _kind == "old_driver":
        _entry["driver"] = "525.147.05"
    if _model.startswith("rtx"):
        _entry.update(driver="550.54.15", persistence=0)
    SCENARIOS[f"fault-{_kind}"] = _entry
del _kind, _model, _entry


def scenario_names() -> list[str]:
    """Names of the built-in scenarios, in table order."""
    return list(SCENARIOS)


def describe(name: str) -> str:
    """One-line description of a scenario (a name, composite spec or JSON path)."""
    node = resolve(name)
    models: dict[str, int] = {}
    for g in node.gpus:
        models[g.profile.name] = models.get(g.profile.name, 0) + 1
    gpus = ", ".join(f"{n}x {m}" for m, n in models.items())
    text = node.description or gpus
    if node.description and gpus not in text:
        text += f" [{gpus}]"
    return text


def model_key(name_or_key: str) -> str:
    """Model key for a key or an NVML name (case-insensitive); KeyError if unknown."""
    k = name_or_key.strip().lower()
    if k in PROFILES:
        return k
    for p in PROFILES.values():
        if p.name.lower() == k:
            return p.key
    raise KeyError(f"unknown GPU model {name_or_key!r}; known: {', '.join(PROFILES)}")


def fault_spec(kind: str, gpu: int, onset_s: float = 0.0, duration_s: float | None = None,
               **params: Any) -> FaultSpec:
    """Build a FaultSpec with the kind's default parameters; ValueError if unknown."""
    if kind not in FAULT_KINDS:
        raise ValueError(f"unknown fault kind {kind!r}; known: {', '.join(FAULT_KINDS)}")
    defaults, _ = FAULT_KINDS[kind]
    unknown = set(params) - set(defaults)
    if unknown:
        raise ValueError(f"fault {kind!r} has no parameter(s) {sorted(unknown)}")
    return FaultSpec(kind, int(gpu), float(onset_s), None if duration_s is None else float(duration_s),
                     {**defaults, **params})


def parse_composite(spec: str) -> dict[str, Any]:
    """Parse ``MODEL*N[,MODEL*N][+FAULT@GPU[:ONSET_S]]...[;key=value...]`` into a table entry.

    Raises:
        ValueError: malformed spec, unknown fault kind.
        KeyError: unknown model key.
    """
    head, *options = spec.split(";")
    parts = head.split("+")
    gpus: list[str] = []
    for group in parts[0].split(","):
        model, _, count = group.strip().partition("*")
        try:
            n = int(count) if count else 1
        except ValueError:
            raise ValueError(f"bad GPU count in {group!r}") from None
        if n < 0 or n > 64:
            raise ValueError(f"GPU count {n} out of range in {group!r}")
        gpus += [model_key(model)] * n
    faults = []
    for part in parts[1:]:
        kind, at, where = part.strip().partition("@")
        if not at:
            raise ValueError(f"fault {part!r} needs @GPU")
        gpu_s, _, onset = where.partition(":")
        try:
            faults.append(_fault(kind, int(gpu_s), float(onset) if onset else 0.0))
        except ValueError:
            raise ValueError(f"bad fault target in {part!r}") from None
    entry: dict[str, Any] = {"description": f"composite {spec}", "gpus": gpus, "faults": faults}
    for opt in options:
        key, eq, value = opt.partition("=")
        key = key.strip()
        if not eq or key not in ("driver", "hostname", "seed", "persistence", "story", "epoch"):
            raise ValueError(f"bad node option {opt!r} (driver=, hostname=, seed=, persistence=, story=, epoch=)")
        if key == "epoch":
            try:
                entry["story_epoch"] = float(value)
            except ValueError:
                raise ValueError(f"bad story epoch in {opt!r} (Unix seconds)") from None
            continue
        entry[key] = int(value) if key in ("seed", "persistence") else value.strip()
    return entry


def resolve(scenario: str | dict[str, Any]) -> NodeSpec:
    """Resolve a scenario name, composite spec, JSON path or dict into a NodeSpec.

    Raises:
        KeyError: unknown scenario name or model.
        ValueError: malformed spec or fault.
        OSError: unreadable JSON file.
    """
    if isinstance(scenario, dict):
        name, entry = str(scenario.get("name", "custom")), scenario
    elif scenario in SCENARIOS:
        name, entry = scenario, SCENARIOS[scenario]
    elif scenario.endswith(".json") or os.path.sep in scenario:
        with open(scenario, encoding="utf-8") as fh:
            entry = json.load(fh)
        name = os.path.splitext(os.path.basename(scenario))[0]
    elif "*" in scenario or scenario.split("+")[0].split(";")[0].strip().lower() in PROFILES:
        name, entry = scenario, parse_composite(scenario)
    else:
        raise KeyError(f"unknown scenario {scenario!r}; list them with `fleetmon agent --list-scenarios`")
    return _build(name, entry)


def _build(name: str, entry: dict[str, Any]) -> NodeSpec:
    gpus = []
    for g in entry.get("gpus", []):
        if isinstance(g, str):
            gpus.append(GpuSpec(PROFILES[model_key(g)]))
        else:
            gpus.append(GpuSpec(PROFILES[model_key(g["model"])], g.get("slot_gen"), g.get("slot_width"),
                                g.get("workload"), g.get("ecc_enabled")))
    faults = []
    for f in entry.get("faults", []):
        f = dict(f)
        kind, gpu = f.pop("kind"), f.pop("gpu")
        if not 0 <= int(gpu) < len(gpus):
            raise ValueError(f"fault {kind!r} targets GPU {gpu}, node has {len(gpus)}")
        faults.append(fault_spec(kind, gpu, f.pop("onset_s", 0.0), f.pop("duration_s", None), **f))
    driver = str(entry.get("driver", DEFAULT_DRIVER))
    init_error = entry.get("init_error")
    if init_error is not None and init_error not in INIT_ERRORS:
        raise ValueError(f"unknown init_error {init_error!r}; known: {', '.join(INIT_ERRORS)}")
    datacenter = all(g.profile.datacenter for g in gpus)
    return NodeSpec(
        name=name,
        description=str(entry.get("description", "")),
        hostname=str(entry.get("hostname", f"sim-{name}" if name.replace("-", "").isalnum() else "sim-node")),
        driver=driver,
        seed=int(entry.get("seed", 0)),
        persistence=int(entry.get("persistence", 1 if datacenter else 0)),
        old_driver=bool(entry.get("old_driver", driver_major(driver) < 535)),
        init_error=init_error,
        workload={**DEFAULT_WORKLOAD, **entry.get("workload", {})},
        gpus=tuple(gpus),
        faults=tuple(faults),
        virtualization=_virtualization(entry.get("virtualization", "none")),
        story=_story(entry.get("story")),
        story_epoch=None if entry.get("story_epoch") is None else float(entry["story_epoch"]),
    )


def _story(value: Any) -> str | None:
    if value is None:
        return None
    if value not in STORY_NAMES:
        raise ValueError(f"unknown story {value!r}; known: {', '.join(STORY_NAMES)}")
    return str(value)


VIRTUALIZATION = ("none", "passthrough", "vgpu", "vgpu-unlicensed")


def _virtualization(value: Any) -> str:
    if value not in VIRTUALIZATION:
        raise ValueError(f"unknown virtualization {value!r}; known: {', '.join(VIRTUALIZATION)}")
    return str(value)


def with_fault(node: NodeSpec, fault: FaultSpec) -> NodeSpec:
    """A copy of ``node`` with one more fault."""
    return replace(node, faults=node.faults + (fault,))


def driver_major(driver: str) -> int:
    """Major number of a driver version string ("535.161.08" -> 535); 0 if unparsable."""
    try:
        return int(driver.split(".")[0])
    except ValueError:
        return 0


_CUDA_BY_DRIVER = ((580, 13000), (575, 12090), (570, 12080), (565, 12070), (560, 12060), (555, 12050),
                   (550, 12040), (545, 12030), (535, 12020), (530, 12010), (525, 12000), (520, 11080),
                   (515, 11070), (510, 11060), (470, 11040), (450, 11000), (0, 10020))


def cuda_version(driver: str) -> int:
    """CUDA driver API version a driver ships (``12020`` = 12.2), as NVML encodes it."""
    major = driver_major(driver)
    return next(cuda for floor, cuda in _CUDA_BY_DRIVER if major >= floor)


def phase_at(workload: dict[str, Any], t_s: float) -> Phase:
    """The workload phase at simulation time ``t_s`` (seconds since start).

    ``mode`` "busy" and "idle" hold one state; "cycle" starts busy and
    alternates ``busy_s`` / ``idle_s``, shifted by ``offset_s``.
    """
    mode = workload.get("mode", "cycle")
    t = max(0.0, t_s)
    if mode in ("busy", "idle"):
        return Phase(mode == "busy", 0, t, True)
    busy_s = float(workload.get("busy_s", 240.0))
    idle_s = float(workload.get("idle_s", 120.0))
    period = busy_s + idle_s
    shifted = t + float(workload.get("offset_s", 0.0))
    cycle = math.floor(shifted / period)
    within = shifted - cycle * period
    if within < busy_s:
        index, elapsed, busy = 2 * cycle, within, True
    else:
        index, elapsed, busy = 2 * cycle + 1, within - busy_s, False
    first = elapsed >= t - 1e-9  # the phase began at (or before) the start
    return Phase(busy, index, elapsed if not first else t, first)


def busy_at(workload: dict[str, Any], t_s: float) -> bool:
    """True when the workload keeps the GPU busy at ``t_s``."""
    return phase_at(workload, t_s).busy
