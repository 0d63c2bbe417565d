"""The field catalog: every telemetry field fleetmon reads, in one declaration.

Each :class:`Field` states everything the code needs about it (the model is
dcgm-exporter's counters CSV: one row per metric): name, unit, kind and help;
how the agent reads it from NVML (:class:`NvmlCall`), or which hand-written
reader of :mod:`fleetmon.agent.nvml` does; how storage keeps it
(:class:`Stored`); its Prometheus metric (:class:`Prom`); its fleet-table
column (:class:`UiColumn`). The sampler, the per-minute aggregation, the
storage columns and rollups, ``/metrics`` and the fleet table are loops over
:data:`CATALOG`; adding a simple field is one entry here (plus, when it is
stored, the schema step named by ``Stored.since``).

A field without ``Stored`` (``stored=None``) is export-only (:data:`EXPORT_ONLY`): the
agent reads it and serves it live (``/metrics``, ``/v1/latest``), but no minute record,
store or rollup keeps it; :data:`GAUGES`, :data:`COUNTERS`, :data:`STATES` and their
``*_NAMES`` are the recorded fields (:data:`RECORDED`), the minute record's values.

The order of :data:`CATALOG` is the order the agent reads the fields in and
the order of the ``/metrics`` families (calls marked ``slow`` are made after
the others). Stored columns do not follow it: the first release's layout is
frozen in :mod:`storage.schema`, later fields' columns are appended by their
schema step.

Kinds (the kind is also the rollup):
    gauge:   a level (°C, W, MHz, %). Per minute the agent keeps min/mean/max;
             rollups keep min, the sample-weighted mean and max.
    counter: a monotonically growing count (ECC errors, energy, replays). Per
             minute the agent keeps the last value; rollups keep the last
             value and the increase over the bucket (``<name>_delta``).
    state:   a small enumerated or boolean level (P-state, pending flags,
             current PCIe link). Per minute and per rollup bucket: the last value.

This module is stdlib-only: the agent imports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fleetmon.compat import SLOTS

KINDS: tuple[str, ...] = ("gauge", "counter", "state")

ROLLUPS: dict[str, str] = {"gauge": "min/mean/max", "counter": "last+delta", "state": "last"}
"""What the per-minute record and the hourly/daily rollups keep of each kind."""

CONVERSIONS: dict[str, str] = {
    "int": "int(value)",
    "milli": "value / 1000, rounded to 3 decimals (NVML's mW to W)",
    "count": "len(value) (a list NVML returns, e.g. retired pages)",
    "flag": "int(bool(value))",
    "first": "int(value[0]) (the value of a [value, sampling period in µs] pair, e.g. encoder utilization)",
}
"""How :class:`NvmlCall` turns NVML's answer into the field's unit (applied in fleetmon.agent.nvml)."""

FIRST_SCHEMA_STEP = "m001_initial"


@dataclass(frozen=True, **SLOTS)
class NvmlCall:
    """A field read by one NVML call: ``conv(pynvml.<fn>(handle, *args))``.

    Attributes:
        fn: the pynvml function name (a pynvml without it reads ``unsupported``).
        args: arguments after the handle, as (pynvml constant name, value used
            when this pynvml lacks the constant).
        conv: a key of :data:`CONVERSIONS`.
        slow: made after every other call of a sample (e.g.
            nvmlDeviceGetPcieThroughput counts bytes over 20 ms), so that it
            cannot hold the other fields past the read's deadline.
    """

    fn: str
    args: tuple[tuple[str, int], ...] = ()
    conv: str = "int"
    slow: bool = False


@dataclass(frozen=True, **SLOTS)
class Stored:
    """How storage keeps a field (see :mod:`storage.schema`'s compact encoding).

    Attributes:
        scale: stored INTEGER = round(value × scale) (gauges: of each of
            min/mean/max; counters: of the value, e.g. energy in whole joules).
        since: the schema step (migration name) that created the field's
            columns. The first release's fields say ``m001_initial``; a new
            field names a new step, which storage.schema registers for it.
    """

    scale: float = 1
    since: str = FIRST_SCHEMA_STEP


@dataclass(frozen=True, **SLOTS)
class Prom:
    """The field's Prometheus family on ``/metrics``.

    Names and help texts are dcgm-exporter's (default-counters.csv, else
    dcgm_fields.h) where DCGM has the field, else ``fleetmon_*``.
    """

    name: str
    type: str  # "gauge" or "counter"
    help: str
    factor: int = 1  # exported value = value x factor (a field kept in larger units than DCGM's)


@dataclass(frozen=True, **SLOTS)
class UiColumn:
    """The field's column in the GUI's fleet table.

    Attributes:
        header: column title.
        format: "number" (value and unit) or "power" (value / enforced limit).
    """

    header: str
    format: str = "number"


@dataclass(frozen=True, **SLOTS)
class Field:
    """One telemetry field.

    Attributes:
        name: key used everywhere (wire, DB column stem, rules), unit-suffixed.
        unit: human unit string.
        kind: "gauge", "counter" or "state" (see the module docstring).
        help: one-line description.
        nvml: how the agent reads it, for a field one NVML call gives.
        reader: otherwise, the hand-written reader in fleetmon.agent.nvml
            (a call that gives several fields, or a read with fallbacks).
        stored: how storage keeps it (None: not stored).
        prom: its Prometheus family (None: not exported).
        ui: its fleet-table column (None: not shown there).
    """

    name: str
    unit: str
    kind: str
    help: str
    nvml: NvmlCall | None = None
    reader: str = ""
    stored: Stored | None = field(default_factory=Stored)
    prom: Prom | None = None
    ui: UiColumn | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"field {self.name}: unknown kind {self.kind!r}")
        if (self.nvml is None) == (not self.reader):
            raise ValueError(f"field {self.name}: give either an NVML call or the name of its reader")
        if self.nvml is not None and self.nvml.conv not in CONVERSIONS:
            raise ValueError(f"field {self.name}: unknown conversion {self.nvml.conv!r}")

    @property
    def rollup(self) -> str:
        """What the minute record and the rollups keep of it (:data:`ROLLUPS`)."""
        return ROLLUPS[self.kind]


_GPU = ("NVML_TEMPERATURE_GPU", 0)
_CLOCK_SM, _CLOCK_MEM, _CLOCK_GRAPHICS = ("NVML_CLOCK_SM", 1), ("NVML_CLOCK_MEM", 2), ("NVML_CLOCK_GRAPHICS", 0)
_CORRECTED = ("NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)
_UNCORRECTED = ("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
_VOLATILE, _AGGREGATE = ("NVML_VOLATILE_ECC", 0), ("NVML_AGGREGATE_ECC", 1)
_ECC = "nvmlDeviceGetTotalEccErrors"
_GAUGE, _COUNTER, _STATE = "gauge", "counter", "state"

CATALOG: tuple[Field, ...] = (
    Field("temp_c", "°C", _GAUGE, "GPU core temperature",
          nvml=NvmlCall("nvmlDeviceGetTemperature", (_GPU,)), stored=Stored(scale=10),
          prom=Prom("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."), ui=UiColumn("Temp")),
    Field("mem_temp_c", "°C", _GAUGE, "GPU memory (HBM) temperature",
          reader="_read_mem_temp", stored=Stored(scale=10),  # nvmlDeviceGetFieldValues(NVML_FI_DEV_MEMORY_TEMP)
          prom=Prom("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).")),
    Field("fan_pct", "%", _GAUGE, "Fan speed, mean over the board's fans",
          reader="_read_fans",  # nvmlDeviceGetNumFans, then nvmlDeviceGetFanSpeed_v2 per fan
          prom=Prom("DCGM_FI_DEV_FAN_SPEED", "gauge", "Fan speed, mean over the board's fans (in %).")),
    Field("power_w", "W", _GAUGE, "Board power draw",
          nvml=NvmlCall("nvmlDeviceGetPowerUsage", conv="milli"), stored=Stored(scale=10),
          prom=Prom("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
          ui=UiColumn("Power / limit", "power")),
    Field("power_limit_w", "W", _GAUGE, "Enforced power limit",
          nvml=NvmlCall("nvmlDeviceGetEnforcedPowerLimit", conv="milli"), stored=Stored(scale=10),
          prom=Prom("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", "gauge", "Effective power limit the driver enforces (in W).")),
    Field("energy_mj", "mJ", _COUNTER, "Energy consumed since the driver was loaded",
          nvml=NvmlCall("nvmlDeviceGetTotalEnergyConsumption"), stored=Stored(scale=0.001),  # whole joules
          prom=Prom("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
                    "Total energy consumption since the driver was loaded (in mJ).")),
    Field("sm_clock_mhz", "MHz", _GAUGE, "SM clock",
          nvml=NvmlCall("nvmlDeviceGetClockInfo", (_CLOCK_SM,)),
          prom=Prom("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).")),
    Field("mem_clock_mhz", "MHz", _GAUGE, "Memory clock",
          nvml=NvmlCall("nvmlDeviceGetClockInfo", (_CLOCK_MEM,)),
          prom=Prom("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).")),
    Field("gr_clock_mhz", "MHz", _GAUGE, "Graphics clock",
          nvml=NvmlCall("nvmlDeviceGetClockInfo", (_CLOCK_GRAPHICS,)),
          prom=Prom("fleetmon_gpu_graphics_clock_mhz", "gauge", "Graphics clock frequency (in MHz).")),
    Field("util_gpu_pct", "%", _GAUGE, "GPU utilization",
          reader="_read_utilization",  # nvmlDeviceGetUtilizationRates gives both utilizations
          prom=Prom("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."), ui=UiColumn("Util")),
    Field("util_mem_pct", "%", _GAUGE, "Memory controller utilization",
          reader="_read_utilization",
          prom=Prom("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).")),
    Field("mem_used_mib", "MiB", _GAUGE, "Frame buffer memory used",
          reader="_read_memory",  # nvmlDeviceGetMemoryInfo gives used and free
          prom=Prom("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).")),
    Field("mem_free_mib", "MiB", _GAUGE, "Frame buffer memory free",
          reader="_read_memory",
          prom=Prom("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).")),
    Field("pcie_tx_kbs", "KB/s", _GAUGE, "PCIe transmit throughput",
          nvml=NvmlCall("nvmlDeviceGetPcieThroughput", (("NVML_PCIE_UTIL_TX_BYTES", 0),), slow=True),
          stored=Stored(scale=0.001),  # MB/s
          prom=Prom("DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "gauge", "PCIe transmit throughput (in KB/s).")),
    Field("pcie_rx_kbs", "KB/s", _GAUGE, "PCIe receive throughput",
          nvml=NvmlCall("nvmlDeviceGetPcieThroughput", (("NVML_PCIE_UTIL_RX_BYTES", 1),), slow=True),
          stored=Stored(scale=0.001),
          prom=Prom("DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "gauge", "PCIe receive throughput (in KB/s).")),
    Field("pstate", "", _STATE, "Performance state (0 = P0, fastest)",
          nvml=NvmlCall("nvmlDeviceGetPerformanceState"),
          prom=Prom("DCGM_FI_DEV_PSTATE", "gauge", "Performance state (P-State) 0-15, 0 is the highest.")),
    Field("throttle_mask", "bits", _STATE, "Current clocks-event (throttle) reasons bit mask",
          reader="_read_throttle",  # the 535+ ClocksEventReasons name, else the older ThrottleReasons
          prom=Prom("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge",
                    "Current clock event (throttle) reasons, NVML bit mask.")),
    Field("ecc_corr_vol", "errors", _COUNTER, "Corrected ECC errors since the last reset",
          nvml=NvmlCall(_ECC, (_CORRECTED, _VOLATILE)),
          prom=Prom("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter",
                    "Total number of single-bit (corrected) volatile ECC errors.")),
    Field("ecc_unc_vol", "errors", _COUNTER, "Uncorrected ECC errors since the last reset",
          nvml=NvmlCall(_ECC, (_UNCORRECTED, _VOLATILE)),
          prom=Prom("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter",
                    "Total number of double-bit (uncorrected) volatile ECC errors.")),
    Field("ecc_corr_agg", "errors", _COUNTER, "Corrected ECC errors, lifetime",
          nvml=NvmlCall(_ECC, (_CORRECTED, _AGGREGATE)),
          prom=Prom("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter",
                    "Total number of single-bit (corrected) persistent ECC errors.")),
    Field("ecc_unc_agg", "errors", _COUNTER, "Uncorrected ECC errors, lifetime",
          nvml=NvmlCall(_ECC, (_UNCORRECTED, _AGGREGATE)),
          prom=Prom("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter",
                    "Total number of double-bit (uncorrected) persistent ECC errors.")),
    Field("retired_sbe", "pages", _COUNTER, "Pages retired for multiple single-bit errors",
          nvml=NvmlCall("nvmlDeviceGetRetiredPages",
                        (("NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS", 0),), conv="count"),
          prom=Prom("DCGM_FI_DEV_RETIRED_SBE", "counter", "Total number of retired pages due to single-bit errors.")),
    Field("retired_dbe", "pages", _COUNTER, "Pages retired for double-bit errors",
          nvml=NvmlCall("nvmlDeviceGetRetiredPages", (("NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR", 1),),
                        conv="count"),
          prom=Prom("DCGM_FI_DEV_RETIRED_DBE", "counter", "Total number of retired pages due to double-bit errors.")),
    Field("retired_pending", "bool", _STATE, "A page retirement waits for a GPU reset",
          nvml=NvmlCall("nvmlDeviceGetRetiredPagesPendingStatus", conv="flag"),
          prom=Prom("DCGM_FI_DEV_RETIRED_PENDING", "gauge",
                    "Whether a page retirement waits for a GPU reset (1) or not (0).")),
    Field("remap_corr", "rows", _COUNTER, "Rows remapped for correctable errors",
          reader="_read_remapped_rows",  # nvmlDeviceGetRemappedRows gives the four remap fields
          prom=Prom("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter",
                    "Number of remapped rows for correctable errors")),
    Field("remap_unc", "rows", _COUNTER, "Rows remapped for uncorrectable errors",
          reader="_read_remapped_rows",
          prom=Prom("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter",
                    "Number of remapped rows for uncorrectable errors")),
    Field("remap_pending", "bool", _STATE, "A row remap waits for a GPU reset",
          reader="_read_remapped_rows",
          prom=Prom("DCGM_FI_DEV_ROW_REMAP_PENDING", "gauge", "Whether remapping of rows is pending")),
    Field("remap_failure", "bool", _STATE, "A row remap failed (no spare rows)",
          reader="_read_remapped_rows",
          prom=Prom("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed")),
    Field("pcie_gen", "", _STATE, "Current PCIe link generation",
          nvml=NvmlCall("nvmlDeviceGetCurrPcieLinkGeneration"),
          prom=Prom("DCGM_FI_DEV_PCIE_LINK_GEN", "gauge", "PCIe current link generation.")),
    Field("pcie_width", "lanes", _STATE, "Current PCIe link width",
          nvml=NvmlCall("nvmlDeviceGetCurrPcieLinkWidth"),
          prom=Prom("DCGM_FI_DEV_PCIE_LINK_WIDTH", "gauge", "PCIe current link width (in lanes).")),
    Field("pcie_replay", "replays", _COUNTER, "PCIe replay counter",
          nvml=NvmlCall("nvmlDeviceGetPcieReplayCounter"),
          prom=Prom("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.")),
    # dcgm-exporter's remaining default counters (issue 12). Export-only (stored=None): no health
    # rule, report or view reads them, the Prometheus that scrapes /metrics is their store, and the
    # local schema stays as it is. A GPU that cannot give one has no series (never a zero).
    Field("enc_util_pct", "%", _GAUGE, "Video encoder (NVENC) utilization",
          nvml=NvmlCall("nvmlDeviceGetEncoderUtilization", conv="first"), stored=None,
          prom=Prom("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).")),
    Field("dec_util_pct", "%", _GAUGE, "Video decoder (NVDEC) utilization",
          nvml=NvmlCall("nvmlDeviceGetDecoderUtilization", conv="first"), stored=None,
          prom=Prom("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).")),
    Field("mem_reserved_mib", "MiB", _GAUGE, "Frame buffer memory the driver reserves",
          reader="_read_memory_reserved", stored=None,  # nvmlDeviceGetMemoryInfo_v2 `reserved`
          prom=Prom("DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).")),
    Field("nvlink_kib", "KiB", _COUNTER, "NVLink traffic (TX + RX, data and protocol) over all links",
          reader="_read_nvlink", stored=None,  # NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX/RX per link
          prom=Prom("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter",
                    "Total number of NVLink bandwidth counters for all lanes.", factor=1024)),  # bytes
    Field("vgpu_license", "", _STATE, "vGPU licence of a vGPU guest (1 licensed, 0 not)",
          reader="_read_vgpu_license", stored=None,  # only where NVML reports vGPU virtualization
          prom=Prom("DCGM_FI_DEV_VGPU_LICENSE_STATUS", "gauge", "vGPU License status")),
    Field("gr_engine_active", "ratio", _GAUGE, "Ratio of time the graphics engine is active (GPM)",
          reader="_read_gpm", stored=None,  # NVML_GPM_METRIC_GRAPHICS_UTIL / 100, Hopper+
          prom=Prom("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.")),
    Field("tensor_active", "ratio", _GAUGE, "Ratio of cycles a tensor pipe is active (GPM)",
          reader="_read_gpm", stored=None,  # NVML_GPM_METRIC_ANY_TENSOR_UTIL / 100
          prom=Prom("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.")),
    Field("dram_active", "ratio", _GAUGE, "Ratio of cycles the memory interface is active (GPM)",
          reader="_read_gpm", stored=None,  # NVML_GPM_METRIC_DRAM_BW_UTIL / 100
          prom=Prom("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
                    "Ratio of cycles the device memory interface is active sending or receiving data.")),
)
"""Every telemetry field, in read and export order. Prometheus names and help texts are
dcgm-exporter's default-counters.csv where it lists the field, else dcgm_fields.h
(DCGM_FI_DEV_ENFORCED_POWER_LIMIT 164, PCIE_TX/RX_THROUGHPUT 200/201, PCIE_LINK_GEN/WIDTH
237/238, ROW_REMAP_PENDING 396)."""


def of_kind(kind: str, fields: tuple[Field, ...] = CATALOG) -> tuple[Field, ...]:
    """The fields of one kind, in catalog order."""
    return tuple(f for f in fields if f.kind == kind)


def by_name(fields: tuple[Field, ...] = CATALOG) -> dict[str, Field]:
    """Name -> field; raises ValueError on a name given twice."""
    out: dict[str, Field] = {}
    for f in fields:
        if f.name in out:
            raise ValueError(f"field {f.name} is declared twice")
        out[f.name] = f
    return out


RECORDED: tuple[Field, ...] = tuple(f for f in CATALOG if f.stored is not None)
"""The fields a minute record, the collector's store and the rollups keep (``Field.stored``)."""
EXPORT_ONLY: tuple[Field, ...] = tuple(f for f in CATALOG if f.stored is None)
"""The fields served only live (``/metrics``, ``/v1/latest``): no minute record or store keeps them."""

GAUGES: tuple[Field, ...] = of_kind(_GAUGE, RECORDED)
COUNTERS: tuple[Field, ...] = of_kind(_COUNTER, RECORDED)
STATES: tuple[Field, ...] = of_kind(_STATE, RECORDED)

ALL_FIELDS: tuple[Field, ...] = GAUGES + COUNTERS + STATES
"""The recorded fields grouped by kind (gauges, counters, states): the order of a minute record's values."""
FIELDS: dict[str, Field] = by_name()
GAUGE_NAMES: tuple[str, ...] = tuple(f.name for f in GAUGES)
COUNTER_NAMES: tuple[str, ...] = tuple(f.name for f in COUNTERS)
STATE_NAMES: tuple[str, ...] = tuple(f.name for f in STATES)


@dataclass(frozen=True, **SLOTS)
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
THERMAL_THROTTLE_REASONS: tuple[str, ...] = tuple(r.name for r in THROTTLE_REASONS if "thermal" in r.name)
"""The thermal slowdowns (sw_thermal, hw_thermal): a thermal episode in the GUI's plots."""


def throttle_names(mask: int) -> list[str]:
    """Names of the reasons set in an NVML clocks-event bit mask."""
    return [r.name for r in THROTTLE_REASONS if mask & r.bit]


# Inventory and node fields: what the agent (or a source) says of a card and of its node, read once at
# start and on re-enumeration. Like CATALOG for telemetry, one declaration says what each is; the wire
# checks (fleetmon.collector.validate), storage's boundary (storage.boundary) and the health engine's
# isolation (fleetmon.health.isolate) derive their name lists from it. Each vendor's reader (the NVML
# session, the vendor parsers of fleetmon.sources, the agent's backends) says how it reads them.

INFO_TYPES: dict[str, str] = {
    "number": "a JSON number (int or float) or null; the rules compare it as a number",
    "text": "a string or null; stored and compared as text",
    "any": "a small value of the source's own type (a mode flag or its name); only the generic checks apply",
}


@dataclass(frozen=True, **SLOTS)
class InfoField:
    """One inventory or node field.

    Attributes:
        name: the key in ``GpuInventory.values`` / ``NodeInfo.values`` (the wire's key).
        type: a key of :data:`INFO_TYPES`.
        help: what it is, for docs/fields.md.
        vendors: which vendors' sources can give it ("all", or the vendor names); a source that cannot
            marks it unsupported, never zero.
    """

    name: str
    type: str
    help: str
    vendors: str = "all"


_NV = "nvidia"

INVENTORY_CATALOG: tuple[InfoField, ...] = (
    InfoField("index", "number", "the device's index on its node (the tool's or library's order)"),
    InfoField("uuid", "text", "the device's unique id: NVIDIA's GPU-…, AMD's or Gaudi's unique id, an Ascend "
                              "chip's NPU-… id (see docs/sources.md)"),
    InfoField("name", "text", "the model name as the tool reports it"),
    InfoField("serial", "text", "the board serial number"),
    InfoField("board_part_number", "text", "the board part number"),
    InfoField("vbios", "text", "the video BIOS / device firmware version"),
    InfoField("inforom_image", "text", "the InfoROM image version", _NV),
    InfoField("inforom_oem", "text", "the InfoROM OEM object version", _NV),
    InfoField("inforom_ecc", "text", "the InfoROM ECC object version", _NV),
    InfoField("inforom_power", "text", "the InfoROM power object version", _NV),
    InfoField("pci_bus_id", "text", "the PCI bus id (domain:bus:device.function)"),
    InfoField("pci_device_id", "text", "the PCI device and vendor id"),
    InfoField("pci_subsystem_id", "text", "the PCI subsystem id (the board maker's)"),
    InfoField("architecture", "text", "the chip architecture (Ampere, CDNA 3, Da Vinci…)"),
    InfoField("compute_capability", "text", "CUDA compute capability, or the vendor's target (gfx90a…)"),
    InfoField("memory_total_mib", "number", "device memory, MiB"),
    InfoField("power_default_w", "number", "the default power limit, W"),
    InfoField("power_min_w", "number", "the lowest settable power limit, W"),
    InfoField("power_max_w", "number", "the highest settable power limit, W"),
    InfoField("power_enforced_w", "number", "the enforced power limit, W"),
    InfoField("max_sm_clock_mhz", "number", "the highest graphics/SM clock, MHz"),
    InfoField("max_mem_clock_mhz", "number", "the highest memory clock, MHz"),
    InfoField("pcie_max_gen", "number", "the link's highest PCIe generation (card and slot)"),
    InfoField("pcie_max_width", "number", "the link's widest PCIe width (card and slot)"),
    InfoField("pcie_gpu_max_gen", "number", "the card's own highest PCIe generation"),
    InfoField("pcie_gpu_max_width", "number", "the card's own widest PCIe width"),
    InfoField("ecc_mode_current", "any", "ECC mode now"),
    InfoField("ecc_mode_pending", "any", "ECC mode after the next reset", _NV),
    InfoField("persistence_mode", "any", "persistence mode", _NV),
    InfoField("mig_mode_current", "any", "MIG mode now", _NV),
    InfoField("mig_mode_pending", "any", "MIG mode after the next reset", _NV),
    InfoField("temp_slowdown_c", "number", "the temperature at which the device slows down, °C"),
    InfoField("temp_shutdown_c", "number", "the temperature at which the device shuts down, °C"),
    InfoField("vendor", "text", "the device's vendor: nvidia, amd, hygon, huawei, intel, mthreads "
                                "(absent in older agents' answers: nvidia)"),
    InfoField("firmware_version", "text", "the device's firmware version where the vendor has one besides the "
                                          "VBIOS (an Ascend NPU's firmware, an AMD card's PSP/SMU version)"),
    InfoField("card_id", "text", "the card a device sits on when a card holds several devices (an Ascend NPU's "
                                 "chips); null for one-device cards"),
)
"""Every inventory field, in the wire's order."""

NODE_CATALOG: tuple[InfoField, ...] = (
    InfoField("hostname", "text", "the node's host name as it reports it"),
    InfoField("driver_version", "text", "the device driver's version (NVIDIA driver, amdgpu/ROCm kernel driver, "
                                        "Ascend driver, habanalabs)"),
    InfoField("nvml_version", "text", "NVML's version", _NV),
    InfoField("cuda_driver_version", "text", "the CUDA version the driver supports", _NV),
    InfoField("kernel", "text", "the kernel release"),
    InfoField("os_release", "text", "the OS (PRETTY_NAME of os-release)"),
    InfoField("gpu_count", "number", "devices the library or tool counts"),
    InfoField("vendor", "text", "the node's device vendor (its backend's or source's; absent in older agents' "
                                "answers: nvidia)"),
    InfoField("runtime_version", "text", "the vendor's runtime or toolkit the driver serves: CUDA, ROCm, CANN, "
                                         "SynapseAI, MUSA (for NVIDIA: the CUDA driver version)"),
    InfoField("firmware_version", "text", "the devices' firmware version when the node reports one for all"),
)
"""Every node field, in the wire's order."""


def _info_names(fields: tuple[InfoField, ...], typ: str | None = None) -> tuple[str, ...]:
    return tuple(f.name for f in fields if typ is None or f.type == typ)


INVENTORY_FIELDS: tuple[str, ...] = _info_names(INVENTORY_CATALOG)
INVENTORY_NUMBERS: frozenset[str] = frozenset(_info_names(INVENTORY_CATALOG, "number"))
INVENTORY_TEXTS: frozenset[str] = frozenset(_info_names(INVENTORY_CATALOG, "text"))
NODE_FIELDS: tuple[str, ...] = _info_names(NODE_CATALOG)
NODE_NUMBERS: frozenset[str] = frozenset(_info_names(NODE_CATALOG, "number"))
NODE_TEXTS: frozenset[str] = frozenset(_info_names(NODE_CATALOG, "text"))

VENDORS: tuple[str, ...] = ("nvidia", "amd", "hygon", "huawei", "intel", "mthreads")
"""The vendors fleetmon reads devices of (``vendor`` values)."""
DEFAULT_VENDOR = "nvidia"
"""The vendor of a device or node whose answer names none (agents and databases before issue 23)."""
