"""Scenarios of simulated nodes of the other vendors (AMD, Hygon, Ascend, Gaudi, Moore Threads) and their state at time t.

The twins that read them (:mod:`fleetmon.sim.amdsmi`, the ``amdsmi`` binding's; :mod:`fleetmon.sim.tools`, the
command-line tools') are the only fakes, at the device-library boundary; the agent's real backends
(:mod:`fleetmon.agent.amdsmi`, :mod:`fleetmon.agent.tools`) read them as they read a real node.

A scenario is a JSON-compatible dict (a name from :data:`SCENARIOS`, or a path to a JSON file holding one)::

    {
      "description": "...",
      "backend": "amdsmi",            # the agent backend that reads it: amdsmi, amd-smi, rocm-smi, hy-smi,
                                      # npu-smi, hl-smi, mthreads-gmi
      "model": "mi100",               # a key of PROFILES
      "count": 4,                     # devices (Ascend: NPUs; each has the profile's chips)
      "hostname": "sim-amd",          # default "sim-<name>"
      "seed": 0,                      # ids and noise (the agent's --node-name seeds it too)
      "faults": [{"kind": "ecc_uncorrectable", "gpu": 1, "onset_s": 600, "block": "UMC", "count": 1}],
    }

Fault kinds (``gpu`` is the device index, an Ascend chip's index in the chip list; ``onset_s`` counts from
the simulation start; ``duration_s`` (optional) ends it):

* ``ecc_uncorrectable`` (``block`` = "UMC", ``count`` = 1): uncorrectable ECC errors in one RAS block;
  the block's count and the device total rise by ``count`` at the onset (``deferred``: deferred errors too).
* ``health`` (``state`` = "Warning", ``codes`` = ["80E18401"]): an Ascend chip's health and error codes.
* ``hot`` (``rate_c_per_min`` = 2, ``peak_c``): the junction temperature rises from the onset toward ``peak_c``
  (default 1 °C under the profile's slowdown limit), the edge sensor toward 5 °C under that. A tool that reports
  no slowdown limit (hy-smi) is judged against fleetmon's own junction default (95 °C), so a Hygon DCU's story
  names a ``peak_c`` above it.
* ``vanish``: the device leaves the tool's / library's list.
* ``hang`` (``seconds`` = 3600): every tool call (every binding call) sleeps that long.
* ``garbage``: the tool prints text that is no output of its kind.
* ``exit`` (``code`` = 2, ``message`` = "..."): the tool exits non-zero with the message on stderr.
* ``init_error`` (``error`` = "version"): ``amdsmi_init`` fails as a binding that does not match the installed
  ROCm (``"library"``: the library cannot be loaded).

``hang``, ``garbage`` and ``exit`` apply to every device (a tool call serves them all); their ``gpu`` is ignored.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from typing import Any, NamedTuple

__all__ = ["PROFILES", "SCENARIOS", "VendorProfile", "active", "describe", "device_state", "is_vendor_scenario",
           "resolve", "scenario_names"]


class VendorProfile(NamedTuple):  # not a dataclass: the tool twins start a process per call, and cheaply
    """One device model as its vendor's tool reports it (values from ../shared/fixtures/F_other_vendors).

    Units: MiB, W, MHz, °C. ``chips``: devices per card (Ascend A3: 2). ``slowdown_c``: the temperature limit the
    ``hot`` fault rises toward (junction/hotspot where the vendor has one).
    """

    key: str
    vendor: str
    name: str
    device_id: str
    gfx: str
    memory_mib: int
    power_cap_w: float
    idle_w: float
    busy_w: float
    edge_c: float
    junction_c: float
    mem_c: float
    slowdown_c: float
    shutdown_c: float
    max_sclk_mhz: int
    max_mclk_mhz: int
    pcie_gen: int
    pcie_width: int
    vbios: str
    driver: str
    runtime: str
    chips: int = 1
    board: str = ""


PROFILES: dict[str, VendorProfile] = {
    # rocm-smi --showallinfo --json of an MI100 (telegraf_mi100_rocm602.json): 0x738c, 34342961152 B, 290 W
    # cap, edge 53 / junction 55 / memory 53 °C, sclk up to 1502 MHz, mclk 1200 MHz, 16 GT/s x16.
    "mi100": VendorProfile("mi100", "amd", "AMD Instinct MI100", "0x738c", "gfx908", 32752, 290.0, 36.0, 250.0,
                           53.0, 55.0, 53.0, 100.0, 105.0, 1502, 1200, 4, 16, "113-D3431401-101",
                           "6.2.4", "6.0.2", board="Instinct MI100"),
    # amd-smi static --json of an MI300X (dell-ai_amd_smi_static_json_root.json): 0x74a1, gfx942, 196592 MB,
    # 750 W cap, hotspot slowdown 100 / shutdown 110 °C, Gen 5 x16, amdgpu 6.16.13.
    "mi300x": VendorProfile("mi300x", "amd", "AMD Instinct MI300X", "0x74a1", "gfx942", 196592, 750.0, 140.0, 700.0,
                            40.0, 48.0, 42.0, 100.0, 110.0, 2100, 1300, 5, 16, "00159017", "6.16.13", "6.4.1",
                            board="AMD Instinct MI300X OAM"),
    # hy-smi --json of a K100_AI (issue_gpustack-2032...json): 0x6210, 65520 MiB, 77 W, edge 37 / junction 35 /
    # mem 38 / core 35 °C.
    "k100": VendorProfile("k100", "hygon", "K100_AI", "0x6210", "gfx928", 65520, 350.0, 77.0, 300.0,
                          37.0, 35.0, 38.0, 95.0, 105.0, 1500, 1200, 4, 16, "N/A", "6.3.3", "DTK 24.04"),
    # npu-smi info of 910B4 NPUs (issue_1Panel-9472...): HBM 32768 MB, 88 W, 30 °C, npu-smi 24.1.1.
    "910b4": VendorProfile("910b4", "huawei", "910B4", "0xd802", "", 32768, 310.0, 88.0, 280.0,
                           30.0, 30.0, 30.0, 95.0, 105.0, 1650, 1600, 4, 16, "7.5.0.1.220", "24.1.1", "8.0.0"),
    # npu-smi info of an Atlas A3 (issue_vllm-ascend-2658...): two chips per NPU, HBM 65536 MB, power on the
    # first chip only (the second prints "-"), 36 °C, npu-smi 24.1.rc3.7.
    "a3": VendorProfile("a3", "huawei", "Ascend910", "0xd803", "", 65536, 800.0, 178.8, 600.0,
                        36.0, 36.0, 36.0, 95.0, 105.0, 1800, 1600, 5, 16, "7.7.0.1.231", "24.1.rc3.7", "8.1.RC1",
                        chips=2),
    # hl-smi CSV of Gaudi 3 HL-325L (all-smi_hl-smi_2xHL-325L_excerpt.csv): 131072 MiB, 226 W of 850 W, 36 C,
    # driver 1.22.1-97ec1a4.
    "gaudi3": VendorProfile("gaudi3", "intel", "HL-325L", "0x1060", "", 131072, 850.0, 226.0, 700.0,
                            36.0, 36.0, 36.0, 95.0, 105.0, 1600, 0, 5, 16, "", "1.22.1-97ec1a4", "1.22.1"),
    # mthreads-gmi of an MTT S4000 (values of its spec sheet: 48 GB, 450 W).
    "s4000": VendorProfile("s4000", "mthreads", "MTT S4000", "0x0301", "", 49152, 450.0, 60.0, 400.0,
                           40.0, 40.0, 40.0, 95.0, 105.0, 1750, 0, 5, 16, "", "2.7.0", "3.1.0"),
}


def _fault(kind: str, gpu: int = 0, onset_s: float = 0.0, **params: Any) -> dict[str, Any]:
    return {"kind": kind, "gpu": gpu, "onset_s": onset_s, **params}


SCENARIOS: dict[str, dict[str, Any]] = {
    "amd-mi100": {"description": "4x AMD Instinct MI100 through the amdsmi binding; GPU 1: an uncorrectable ECC "
                                 "error in one memory block (UMC) at 10 min",
                  "backend": "amdsmi", "model": "mi100", "count": 4,
                  "faults": [_fault("ecc_uncorrectable", 1, 600.0, block="UMC", count=1)]},
    "amd-mi300x": {"description": "8x AMD Instinct MI300X through amd-smi static/metric --json",
                   "backend": "amd-smi", "model": "mi300x", "count": 8},
    "amd-mi100-rocm-smi": {"description": "4x AMD Instinct MI100 through rocm-smi --showallinfo --json (older ROCm)",
                           "backend": "rocm-smi", "model": "mi100", "count": 4},
    "hygon-k100": {"description": "4x Hygon K100_AI DCU through hy-smi --json; DCU 2 runs hot from 5 min",
                   "backend": "hy-smi", "model": "k100", "count": 4,
                   # peak 98 °C: over the 95 °C junction default a DCU is judged by (hy-smi reports no limit)
                   "faults": [_fault("hot", 2, 300.0, rate_c_per_min=3.0, peak_c=98.0)]},
    "ascend-910b": {"description": "8x Ascend 910B4 through npu-smi; NPU 3's health turns Warning with an error "
                                   "code at 15 min",
                    "backend": "npu-smi", "model": "910b4", "count": 8,
                    "faults": [_fault("health", 3, 900.0, state="Warning", codes=["80E18401"])]},
    "ascend-a3": {"description": "8x Ascend A3 NPUs of two chips each (16 devices) through npu-smi",
                  "backend": "npu-smi", "model": "a3", "count": 8},
    "gaudi3": {"description": "8x Intel Gaudi 3 HL-325L through hl-smi -Q ... -f csv,noheader",
               "backend": "hl-smi", "model": "gaudi3", "count": 8},
    "mthreads-s4000": {"description": "4x Moore Threads MTT S4000 through mthreads-gmi -q",
                       "backend": "mthreads-gmi", "model": "s4000", "count": 4},
    # The demo fleet's vendor boxes (fleetmon.demo.DEMO_VENDOR_NODES): the same stories, early enough to be seen
    # in a demo's first minutes (with --backfill they lie in the backfilled past).
    "demo-amd-mi100": {"description": "the demo's AMD box: 4x AMD Instinct MI100 through the amdsmi binding; GPU 1: "
                                      "an uncorrectable ECC error in its memory block (UMC) at 45 s",
                       "backend": "amdsmi", "model": "mi100", "count": 4,
                       "faults": [_fault("ecc_uncorrectable", 1, 45.0, block="UMC", count=1)]},
    "demo-ascend-910b": {"description": "the demo's Ascend box: 8x Ascend 910B4 through npu-smi; NPU 3's health "
                                        "turns Warning with error code 80E18401 at 60 s",
                         "backend": "npu-smi", "model": "910b4", "count": 8,
                         "faults": [_fault("health", 3, 60.0, state="Warning", codes=["80E18401"])]},
    # hy-smi reports no slowdown limit, so the rules judge a DCU's junction against the 95 °C default
    # (temperature_junction_warning_c): this one climbs to 99 °C, under the 105 °C critical default.
    "demo-hygon-k100": {"description": "the demo's Hygon box: 4x Hygon K100_AI DCU through hy-smi --json; DCU 2 "
                                       "runs hot from the start (junction up to 99 °C)",
                        "backend": "hy-smi", "model": "k100", "count": 4,
                        "faults": [_fault("hot", 2, 0.0, rate_c_per_min=30.0, peak_c=99.0)]},
}
"""The built-in scenarios of other vendors (``fleetmon agent --list-scenarios`` lists them after NVIDIA's)."""

_BACKENDS = ("amdsmi", "amd-smi", "rocm-smi", "hy-smi", "npu-smi", "hl-smi", "mthreads-gmi")


def scenario_names() -> list[str]:
    return list(SCENARIOS)


def is_vendor_scenario(name: str) -> bool:
    """Whether ``name`` is one of :data:`SCENARIOS` or a JSON file of a scenario that names its backend."""
    if name in SCENARIOS:
        return True
    if name.endswith(".json") and os.path.isfile(name):
        try:
            with open(name, encoding="utf-8") as fh:
                doc = json.load(fh)
        except (OSError, ValueError):
            return False
        return isinstance(doc, dict) and "backend" in doc
    return False


def resolve(scenario: str | dict[str, Any]) -> dict[str, Any]:
    """The scenario dict (checked) of a name, a JSON path or a dict.

    Raises:
        KeyError: an unknown name. ValueError: a scenario that is not valid (the message says why).
    """
    if isinstance(scenario, dict):
        entry, name = dict(scenario), str(scenario.get("name", "custom"))
    elif scenario in SCENARIOS:
        entry, name = dict(SCENARIOS[scenario]), scenario
    elif scenario.endswith(".json") and os.path.isfile(scenario):
        with open(scenario, encoding="utf-8") as fh:
            entry = json.load(fh)
        name = os.path.splitext(os.path.basename(scenario))[0]
        if not isinstance(entry, dict):
            raise ValueError(f"{scenario}: a scenario is a JSON object")
    else:
        raise KeyError(f"no scenario {scenario!r} (see fleetmon agent --list-scenarios)")
    if entry.get("backend") not in _BACKENDS:
        raise ValueError(f"backend {entry.get('backend')!r} is none of {', '.join(_BACKENDS)}")
    if entry.get("model") not in PROFILES:
        raise ValueError(f"model {entry.get('model')!r} is none of {', '.join(PROFILES)}")
    count = entry.get("count", 1)
    if not isinstance(count, int) or not 0 <= count <= 64:
        raise ValueError("count must be an integer from 0 to 64")
    faults = entry.get("faults", [])
    if not isinstance(faults, list) or not all(isinstance(f, dict) and "kind" in f for f in faults):
        raise ValueError("faults must be a list of objects with a kind")
    entry.setdefault("hostname", f"sim-{name}")
    entry.setdefault("seed", 0)
    entry["name"] = name
    entry["count"] = count
    entry["faults"] = faults
    return entry


def describe(name: str) -> str:
    entry = resolve(name)
    return f"{entry.get('description', '')} [backend {entry['backend']}]"


def profile(entry: dict[str, Any]) -> VendorProfile:
    return PROFILES[str(entry["model"])]


def active(entry: dict[str, Any], kind: str, t_s: float, gpu: int | None = None) -> dict[str, Any] | None:
    """The first fault of ``kind`` active at ``t_s`` (for ``gpu`` when given), or None."""
    for f in entry.get("faults", []):
        if f.get("kind") != kind or (gpu is not None and int(f.get("gpu", 0)) != gpu):
            continue
        onset = float(f.get("onset_s", 0.0))
        duration = f.get("duration_s")
        if t_s >= onset and (duration is None or t_s < onset + float(duration)):
            return dict(f)
    return None


def _unit(seed: str, what: str) -> float:
    """A stable number in [0, 1) from the seed (ids and noise differ per node and device, never per call)."""
    return int(hashlib.sha256(f"{seed}/{what}".encode()).hexdigest()[:8], 16) / 0x1_0000_0000


def devices(entry: dict[str, Any], node: str | None = None) -> int:
    """How many devices (chips) the node has, present or not."""
    return int(entry["count"]) * profile(entry).chips


def device_state(entry: dict[str, Any], index: int, t_s: float, node: str | None = None) -> dict[str, Any]:
    """Everything the twins report of device ``index`` at ``t_s`` s after the start (plain numbers and text).

    Keys: present, name, uuid_hex (16 hex digits), serial, bus_id, card (the NPU id), chip, temp_edge_c,
    temp_junction_c, temp_mem_c, power_w (None on an A3's second chip), power_cap_w, util_pct, mem_used_mib,
    mem_total_mib, sclk_mhz, mclk_mhz, ecc_corr, ecc_unc, ecc_deferred, ecc_blocks ({block: {correctable,
    uncorrectable, deferred}}), health, error_codes, energy_j.
    """
    p = profile(entry)
    seed = f"{entry.get('seed', 0)}/{node or entry.get('hostname')}"
    card, chip = divmod(index, p.chips)
    busy = (int(t_s // 120) + index) % 3 != 0  # two minutes of three at work
    noise = math.sin(t_s / 17.0 + index) * 0.5
    util = 0.0 if not busy else 85.0 + 10 * _unit(seed, f"u{index}")
    power = (p.busy_w if busy else p.idle_w) + noise
    heat = (12.0 if busy else 0.0) + noise
    edge, junction, mem = p.edge_c + heat, p.junction_c + heat, p.mem_c + heat * 0.8
    hot = active(entry, "hot", t_s, index)
    if hot is not None:
        rise = float(hot.get("rate_c_per_min", 2.0)) * (t_s - float(hot.get("onset_s", 0.0))) / 60.0
        peak = float(hot.get("peak_c", p.slowdown_c - 1.0))
        junction = min(peak, junction + rise)
        edge = min(peak - 5.0, edge + rise)
    blocks: dict[str, dict[str, int]] = {"UMC": {"correctable": 0, "uncorrectable": 0, "deferred": 0},
                                         "GFX": {"correctable": 0, "uncorrectable": 0, "deferred": 0},
                                         "SDMA": {"correctable": 0, "uncorrectable": 0, "deferred": 0}}
    for f in entry.get("faults", []):
        if f.get("kind") == "ecc_uncorrectable" and int(f.get("gpu", 0)) == index \
                and t_s >= float(f.get("onset_s", 0.0)):
            block = blocks.setdefault(str(f.get("block", "UMC")).upper(),
                                      {"correctable": 0, "uncorrectable": 0, "deferred": 0})
            block["uncorrectable"] += int(f.get("count", 1))
            block["deferred"] += int(f.get("deferred", 0))
    health = active(entry, "health", t_s, index)
    bus = 0xC1 + card * p.chips + chip if p.vendor == "huawei" else 0x1B + 0x20 * card
    present = active(entry, "vanish", t_s, index) is None
    return {
        "present": present,
        "name": p.name,
        "uuid_hex": f"{int(_unit(seed, f'id{index}') * 2**32):08x}{int(_unit(seed, f'id2{index}') * 2**32):08x}",
        "serial": f"{int(_unit(seed, f'sn{card}') * 10**12):012d}",
        "bus_id": f"0000:{bus:02x}:00.0",
        "card": card,
        "chip": chip,
        "temp_edge_c": round(edge, 1),
        "temp_junction_c": round(junction, 1),
        "temp_mem_c": round(mem, 1),
        "power_w": None if chip > 0 else round(power, 1),  # an A3 reports its NPU's power on chip 0
        "power_cap_w": p.power_cap_w,
        "util_pct": round(util),
        "mem_used_mib": int(p.memory_mib * (0.6 if busy else 0.01)),
        "mem_total_mib": p.memory_mib,
        "sclk_mhz": p.max_sclk_mhz if busy else 300,
        "mclk_mhz": p.max_mclk_mhz,
        "ecc_corr": sum(b["correctable"] for b in blocks.values()),
        "ecc_unc": sum(b["uncorrectable"] for b in blocks.values()),
        "ecc_deferred": sum(b["deferred"] for b in blocks.values()),
        "ecc_blocks": blocks,
        "health": str(health.get("state", "Warning")) if health else "OK",
        "error_codes": [str(c) for c in health.get("codes", ["80E18401"])] if health else [],
        "energy_j": round(t_s * (p.idle_w + p.busy_w) / 2, 1),
    }
