"""The field catalog: every metric fleetmon reads, with unit, kind and help.

This list is data. The agent's sampler, the per-minute aggregation, the
storage columns and the UI derive from it; the Prometheus endpoint maps these
names to its metrics in :mod:`fleetmon.agent.prom`.

Kinds:
    gauge:   a level (°C, W, MHz, %). Per minute the agent keeps min/mean/max.
    counter: a monotonically growing count (ECC errors, energy, replays). Per
             minute the agent keeps the last value; deltas are computed later.
    state:   a small enumerated or boolean level (P-state, pending flags,
             current PCIe link). Per minute the agent keeps the last value.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Field:
    """One telemetry field.

    Attributes:
        name: key used everywhere (wire, DB column stem, rules), unit-suffixed.
        unit: human unit string.
        kind: "gauge", "counter" or "state".
        help: one-line description.

    The Prometheus names (dcgm-exporter's where one exists) are in
    :mod:`fleetmon.agent.prom`, keyed by these field names.
    """

    name: str
    unit: str
    kind: str
    help: str


GAUGES: tuple[Field, ...] = (
    Field("temp_c", "°C", "gauge", "GPU core temperature"),
    Field("mem_temp_c", "°C", "gauge", "GPU memory (HBM) temperature"),
    Field("fan_pct", "%", "gauge", "Fan speed, mean over the board's fans"),
    Field("power_w", "W", "gauge", "Board power draw"),
    Field("power_limit_w", "W", "gauge", "Enforced power limit"),
    Field("sm_clock_mhz", "MHz", "gauge", "SM clock"),
    Field("mem_clock_mhz", "MHz", "gauge", "Memory clock"),
    Field("gr_clock_mhz", "MHz", "gauge", "Graphics clock"),
    Field("util_gpu_pct", "%", "gauge", "GPU utilization"),
    Field("util_mem_pct", "%", "gauge", "Memory controller utilization"),
    Field("mem_used_mib", "MiB", "gauge", "Frame buffer memory used"),
    Field("mem_free_mib", "MiB", "gauge", "Frame buffer memory free"),
    Field("pcie_tx_kbs", "KB/s", "gauge", "PCIe transmit throughput"),
    Field("pcie_rx_kbs", "KB/s", "gauge", "PCIe receive throughput"),
)

COUNTERS: tuple[Field, ...] = (
    Field("energy_mj", "mJ", "counter", "Energy consumed since the driver was loaded"),
    Field("ecc_corr_vol", "errors", "counter", "Corrected ECC errors since the last reset"),
    Field("ecc_unc_vol", "errors", "counter", "Uncorrected ECC errors since the last reset"),
    Field("ecc_corr_agg", "errors", "counter", "Corrected ECC errors, lifetime"),
    Field("ecc_unc_agg", "errors", "counter", "Uncorrected ECC errors, lifetime"),
    Field("retired_sbe", "pages", "counter", "Pages retired for multiple single-bit errors"),
    Field("retired_dbe", "pages", "counter", "Pages retired for double-bit errors"),
    Field("remap_corr", "rows", "counter", "Rows remapped for correctable errors"),
    Field("remap_unc", "rows", "counter", "Rows remapped for uncorrectable errors"),
    Field("pcie_replay", "replays", "counter", "PCIe replay counter"),
)

STATES: tuple[Field, ...] = (
    Field("pstate", "", "state", "Performance state (0 = P0, fastest)"),
    Field("retired_pending", "bool", "state", "A page retirement waits for a GPU reset"),
    Field("remap_pending", "bool", "state", "A row remap waits for a GPU reset"),
    Field("remap_failure", "bool", "state", "A row remap failed (no spare rows)"),
    Field("pcie_gen", "", "state", "Current PCIe link generation"),
    Field("pcie_width", "lanes", "state", "Current PCIe link width"),
    Field("throttle_mask", "bits", "state", "Current clocks-event (throttle) reasons bit mask"),
)

ALL_FIELDS: tuple[Field, ...] = GAUGES + COUNTERS + STATES
FIELDS: dict[str, Field] = {f.name: f for f in ALL_FIELDS}
GAUGE_NAMES: tuple[str, ...] = tuple(f.name for f in GAUGES)
COUNTER_NAMES: tuple[str, ...] = tuple(f.name for f in COUNTERS)
STATE_NAMES: tuple[str, ...] = tuple(f.name for f in STATES)


@dataclass(frozen=True, slots=True)
class ThrottleReason:
    """One bit of nvmlDeviceGetCurrentClocksEventReasons (old name: ...ThrottleReasons)."""

    name: str
    bit: int
    help: str
    hardware: bool  # a hardware-health signal, as opposed to configuration or idle


THROTTLE_REASONS: tuple[ThrottleReason, ...] = (
    ThrottleReason("gpu_idle", 0x1, "Nothing runs on the GPU; clocks drop to idle", False),
    ThrottleReason("app_clocks", 0x2, "Limited by the applications-clocks setting", False),
    ThrottleReason("sw_power_cap", 0x4, "Software power scaling reduces clocks", False),
    ThrottleReason("hw_slowdown", 0x8, "Hardware slowdown (thermal, power brake or fast trigger)", True),
    ThrottleReason("sync_boost", 0x10, "In a sync-boost group", False),
    ThrottleReason("sw_thermal", 0x20, "Software thermal slowdown", True),
    ThrottleReason("hw_thermal", 0x40, "Hardware thermal slowdown", True),
    ThrottleReason("hw_power_brake", 0x80, "Hardware power-brake slowdown (external power brake)", True),
    ThrottleReason("display_clocks", 0x100, "Limited by display clocks", False),
)
THROTTLE_NAMES: tuple[str, ...] = tuple(r.name for r in THROTTLE_REASONS)
HW_THROTTLE_REASONS: tuple[str, ...] = tuple(r.name for r in THROTTLE_REASONS if r.hardware)
"""The reasons flagged ``hardware`` (hw_slowdown, sw_thermal, hw_thermal, hw_power_brake), in catalog order.

The one list of throttle reasons that are zero on a healthy GPU (a busy GPU normally runs
under sw_power_cap; idle, app clocks, sync boost and display clocks are configuration): a
minute with any of them is not a clean clock sample for derating, and they are the sticky
throttle columns the health rules load."""


def throttle_names(mask: int) -> list[str]:
    """Names of the reasons set in an NVML clocks-event bit mask."""
    return [r.name for r in THROTTLE_REASONS if mask & r.bit]


# Inventory fields (static per GPU, read once at agent start and on re-enumeration).
INVENTORY_FIELDS: tuple[str, ...] = (
    "index", "uuid", "name", "serial", "board_part_number", "vbios", "inforom_image",
    "inforom_oem", "inforom_ecc", "inforom_power", "pci_bus_id", "pci_device_id",
    "pci_subsystem_id", "architecture", "compute_capability", "memory_total_mib",
    "power_default_w", "power_min_w", "power_max_w", "power_enforced_w", "max_sm_clock_mhz",
    "max_mem_clock_mhz", "pcie_max_gen", "pcie_max_width", "pcie_gpu_max_gen",
    "pcie_gpu_max_width", "ecc_mode_current", "ecc_mode_pending", "persistence_mode",
    "mig_mode_current", "mig_mode_pending", "temp_slowdown_c", "temp_shutdown_c",
)

NODE_FIELDS: tuple[str, ...] = (
    "hostname", "driver_version", "nvml_version", "cuda_driver_version", "kernel",
    "os_release", "gpu_count",
)
