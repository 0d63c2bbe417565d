"""The vocabulary of the synthetic history: GPU models, nodes, faults, swaps and labels.

Plain frozen dataclasses and tables, importing nothing else of the package:
:mod:`~fleetmon.sim.synthetic.columns`, :mod:`~fleetmon.sim.synthetic.faults`
and :mod:`~fleetmon.sim.synthetic.generate` build on them. Model constants
follow the spec catalog (:mod:`fleetmon.specs`) and the twin's profiles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


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
