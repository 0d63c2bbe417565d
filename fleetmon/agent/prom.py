"""Prometheus text exposition (format 0.0.4) of the agent's latest samples.

Metric names and labels follow dcgm-exporter's current release wherever a DCGM
field carries the same value (``DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-…",
pci_bus_id="00000000:1B:00.0",device="nvidia0",modelName="…",hostname="…",
DCGM_FI_DRIVER_VERSION="…"}``; ``DCGM_FI_DEV_XID_ERRORS`` adds ``err_code`` and
``err_msg``), so an existing Prometheus, its alert rules and Grafana dashboards
keep working. dcgm-exporter releases before NVIDIA/dcgm-exporter#655 spelled the
host label ``Hostname``; docs/agent-api.md lists the differences. Units are
dcgm-exporter's (W, °C, MHz, MiB, mJ, ratios 0-1 for DCGM_FI_PROF_*, bytes per
second for DCGM_FI_PROF_PCIE_*). A value a GPU cannot give has no series at
all. Values DCGM has no field for are exported as ``fleetmon_*`` in Prometheus
style (snake_case, base units), among them the nominal specs of the model
(:mod:`fleetmon.specs`) that the recording rules in packaging/prometheus/ divide
by.

``promtool check metrics`` accepts the page; its only lint findings are those
dcgm-exporter's own names cause: the camelCase ``modelName`` label and DCGM
counters named without a ``_total`` suffix.

Devices of every vendor (issue 23): the ``DCGM_FI_*`` families are NVIDIA's
devices' alone (an AMD GPU or an Ascend NPU gets no series pretending to be
DCGM's). Every device, NVIDIA's included, gets the vendor-neutral families of
:data:`NEUTRAL_METRICS` (``fleetmon_gpu_temperature_celsius``,
``fleetmon_gpu_power_watts``, ``fleetmon_gpu_ecc_errors_total{type=…}``, …) in
base units (Celsius, watts, joules, bytes, hertz, ratios 0-1) with a ``vendor``
label and snake_case labels ``gpu``, ``uuid``, ``pci_bus_id``, ``model``,
``hostname``, so that one query covers a mixed fleet. The other ``fleetmon_*``
families cover every device too; a non-NVIDIA device's labels there are the
neutral ones. ``fleetmon_agent_info`` carries the node's ``vendor``,
``runtime`` (CUDA, ROCm, CANN, …), ``runtime_version`` and ``firmware_version``.
docs/prometheus.md lists the names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from fleetmon import specs
from fleetmon.fields import CATALOG, DEFAULT_VENDOR, THROTTLE_REASONS, Field
from fleetmon.vendors import RUNTIME_NAMES
from fleetmon.records import GpuInventory, GpuSample, NodeInfo, Status
from fleetmon.vocab import GpuState
from fleetmon.xid.catalog import XID_CATALOG

def sample_metrics(fields: tuple[Field, ...] = CATALOG) -> dict[str, tuple[str, str, str]]:
    """Telemetry field -> (metric, type, help) of the catalog's exported fields, in catalog order."""
    return {f.name: (f.prom.name, f.prom.type, f.prom.help) for f in fields if f.prom is not None}


SAMPLE_METRICS: dict[str, tuple[str, str, str]] = sample_metrics()
"""The telemetry families of ``/metrics`` (declared in fleetmon.fields.CATALOG, ``Field.prom``)."""
_FACTORS: dict[str, int] = {f.name: f.prom.factor for f in CATALOG if f.prom is not None and f.prom.factor != 1}

# Static inventory field -> (metric, help): exported as gauges.
INVENTORY_METRICS: dict[str, tuple[str, str]] = {
    "memory_total_mib": ("DCGM_FI_DEV_FB_TOTAL", "Framebuffer memory total (in MiB)."),
    "temp_slowdown_c": ("DCGM_FI_DEV_SLOWDOWN_TEMP", "Slowdown temperature (in C)."),
    "temp_shutdown_c": ("DCGM_FI_DEV_SHUTDOWN_TEMP", "Shutdown temperature (in C)."),
    "power_default_w": ("DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF", "Default power management limit (in W)."),
    "power_min_w": ("DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN", "Minimum power management limit (in W)."),
    "power_max_w": ("DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX", "Maximum power management limit (in W)."),
    "max_sm_clock_mhz": ("DCGM_FI_DEV_MAX_SM_CLOCK", "Maximum supported SM clock (in MHz)."),
    "max_mem_clock_mhz": ("DCGM_FI_DEV_MAX_MEM_CLOCK", "Maximum supported memory clock (in MHz)."),
    "pcie_max_gen": ("DCGM_FI_DEV_PCIE_MAX_LINK_GEN", "PCIe maximum link generation of GPU and slot."),
    "pcie_max_width": ("DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", "PCIe maximum link width of GPU and slot (in lanes)."),
    "pcie_gpu_max_gen": ("fleetmon_gpu_pcie_gpu_max_link_generation",
                         "PCIe maximum link generation of the GPU itself."),
}

# Sample field -> (metric, type, help, factor): a second family of a field in other units.
DERIVED_METRICS: dict[str, tuple[str, str, str, int]] = {
    # NVML's PCIe throughput is in KB/s (KiB, like its memory figures); DCGM's profiling fields in B/s.
    "pcie_tx_kbs": ("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
                    "The rate of data transmitted over the PCIe bus - including both protocol headers and "
                    "data payloads - in bytes per second.", 1024),
    "pcie_rx_kbs": ("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
                    "The rate of data received over the PCIe bus - including both protocol headers and "
                    "data payloads - in bytes per second.", 1024),
}

# Nominal spec of the GPU's model (fleetmon.specs) -> (metric, help); absent for an unknown model.
NOMINAL_METRICS: dict[str, tuple[str, str]] = {
    "boost_clock_mhz": ("fleetmon_gpu_nominal_boost_mhz", "Nominal boost clock of the GPU's model (in MHz)."),
    "base_clock_mhz": ("fleetmon_gpu_nominal_base_mhz", "Nominal base clock of the GPU's model (in MHz)."),
    "tdp_w": ("fleetmon_gpu_nominal_tdp_watts", "Nominal board power (TDP) of the GPU's model."),
    "memory_mib": ("fleetmon_gpu_nominal_memory_mib", "Nominal frame buffer of the GPU's model (in MiB)."),
    "pcie_bps": ("fleetmon_gpu_nominal_pcie_bandwidth_bytes_per_second",
                 "Bandwidth per direction of the nominal PCIe link of the GPU's model."),
}

MIB = 1024 * 1024


@dataclass(frozen=True)
class Neutral:
    """A vendor-neutral family of one catalog field: ``fleetmon_gpu_*`` for every device, in base units.

    ``scale`` turns the field's unit into the family's (MiB → bytes, % → ratio, mJ → J, MHz → Hz);
    ``labels`` are added to the device's (``type="corrected"`` of ``fleetmon_gpu_ecc_errors_total``).
    """

    field: str
    metric: str
    type: str
    help: str
    scale: float = 1.0
    labels: tuple[tuple[str, str], ...] = ()


NEUTRAL_METRICS: tuple[Neutral, ...] = (
    Neutral("temp_c", "fleetmon_gpu_temperature_celsius", "gauge", "Device (edge or die) temperature."),
    Neutral("mem_temp_c", "fleetmon_gpu_memory_temperature_celsius", "gauge", "Memory (HBM) temperature."),
    Neutral("power_w", "fleetmon_gpu_power_watts", "gauge", "Power draw."),
    Neutral("power_limit_w", "fleetmon_gpu_power_limit_watts", "gauge", "Enforced power limit (cap)."),
    Neutral("energy_mj", "fleetmon_gpu_energy_joules_total", "counter", "Energy consumed since the driver loaded.",
            1e-3),
    Neutral("util_gpu_pct", "fleetmon_gpu_utilization_ratio", "gauge",
            "Fraction of time the device was busy (0-1).", 0.01),
    Neutral("util_mem_pct", "fleetmon_gpu_memory_utilization_ratio", "gauge",
            "Fraction of time device memory was read or written (0-1).", 0.01),
    Neutral("mem_used_mib", "fleetmon_gpu_memory_used_bytes", "gauge", "Device memory in use.", MIB),
    Neutral("mem_free_mib", "fleetmon_gpu_memory_free_bytes", "gauge", "Device memory free.", MIB),
    Neutral("fan_pct", "fleetmon_gpu_fan_speed_ratio", "gauge", "Fan speed as a fraction of its maximum (0-1).", 0.01),
    Neutral("sm_clock_mhz", "fleetmon_gpu_clock_hertz", "gauge", "Current clock.", 1e6, (("clock", "compute"),)),
    Neutral("mem_clock_mhz", "fleetmon_gpu_clock_hertz", "gauge", "Current clock.", 1e6, (("clock", "memory"),)),
    Neutral("ecc_corr_vol", "fleetmon_gpu_ecc_errors_total", "counter",
            "ECC errors: type corrected or uncorrected, scope volatile (since the driver loaded) or aggregate "
            "(lifetime).", 1.0, (("type", "corrected"), ("scope", "volatile"))),
    Neutral("ecc_unc_vol", "fleetmon_gpu_ecc_errors_total", "counter", "", 1.0,
            (("type", "uncorrected"), ("scope", "volatile"))),
    Neutral("ecc_corr_agg", "fleetmon_gpu_ecc_errors_total", "counter", "", 1.0,
            (("type", "corrected"), ("scope", "aggregate"))),
    Neutral("ecc_unc_agg", "fleetmon_gpu_ecc_errors_total", "counter", "", 1.0,
            (("type", "uncorrected"), ("scope", "aggregate"))),
    Neutral("retired_sbe", "fleetmon_gpu_retired_pages_total", "counter",
            "Memory pages retired, by the kind of error that retired them.", 1.0, (("type", "corrected"),)),
    Neutral("retired_dbe", "fleetmon_gpu_retired_pages_total", "counter", "", 1.0, (("type", "uncorrected"),)),
    Neutral("remap_corr", "fleetmon_gpu_remapped_rows_total", "counter",
            "Memory rows remapped (spared, replaced), by the kind of error.", 1.0, (("type", "corrected"),)),
    Neutral("remap_unc", "fleetmon_gpu_remapped_rows_total", "counter", "", 1.0, (("type", "uncorrected"),)),
    Neutral("pcie_replay", "fleetmon_gpu_pcie_replays_total", "counter", "PCIe replays (retransmissions)."),
    Neutral("pcie_gen", "fleetmon_gpu_pcie_link_generation", "gauge", "Current PCIe link generation."),
    Neutral("pcie_width", "fleetmon_gpu_pcie_link_width", "gauge", "Current PCIe link width (lanes)."),
)
"""The vendor-neutral ``fleetmon_gpu_*`` families: every device of every vendor, with a ``vendor`` label. Rows
of one metric are one family (one HELP, the first row's); a field the device does not report has no series."""

NEUTRAL_INVENTORY: tuple[Neutral, ...] = (
    Neutral("memory_total_mib", "fleetmon_gpu_memory_total_bytes", "gauge", "Device memory total.", MIB),
    Neutral("temp_slowdown_c", "fleetmon_gpu_temperature_limit_celsius", "gauge",
            "Temperature limits: slowdown (throttling starts) and shutdown.", 1.0, (("limit", "slowdown"),)),
    Neutral("temp_shutdown_c", "fleetmon_gpu_temperature_limit_celsius", "gauge", "", 1.0,
            (("limit", "shutdown"),)),
)
"""Neutral families of the static inventory."""

_INFO_LABELS = ("serial", "board_part_number", "vbios", "inforom_image", "pci_device_id", "pci_subsystem_id",
                "architecture", "compute_capability")
_OK_STATES = {Status.UNSUPPORTED.value}


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs: Iterable[tuple[str, Any]]) -> str:
    return "{" + ",".join(f'{k}="{_escape("" if v is None else str(v))}"' for k, v in pairs) + "}"


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    return repr(float(value))


class _Page:
    """Collects families so that each has one HELP and one TYPE line before its samples."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, mtype: str, help_text: str, rows: list[tuple[str, Any]]) -> None:
        rows = [(labels, v) for labels, v in rows if v is not None]
        if not rows:
            return
        self.lines.append(f"# HELP {name} {_escape_help(help_text)}")
        self.lines.append(f"# TYPE {name} {mtype}")
        self.lines.extend(f"{name}{labels} {_fmt(v)}" for labels, v in rows)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def render_metrics(node: NodeInfo, inventory: list[GpuInventory], samples: list[GpuSample],
                   agent: dict[str, Any], last_xid: dict[str, int] | None = None,
                   fields: tuple[Field, ...] | None = None) -> str:
    """Render the whole /metrics page.

    Args:
        node: the node description (hostname, driver version).
        inventory: GPUs by index.
        samples: the latest sample of each GPU.
        agent: agent self-metrics: uptime_seconds, sample_lag_seconds,
            buffer_bytes, cycle_seconds, and ``gpus`` (per-GPU read health).
        last_xid: uuid -> code of the last Xid seen (DCGM_FI_DEV_XID_ERRORS).
        fields: the field catalog whose ``prom`` families are exported
            (None: fleetmon.fields.CATALOG).
    """
    metrics = SAMPLE_METRICS if fields is None or fields is CATALOG else sample_metrics(fields)
    inv_by_index = {g.index: g for g in inventory}
    driver = node.values.get("driver_version") or ""
    node_vendor = str(node.values.get("vendor") or DEFAULT_VENDOR)
    page = _Page()

    def vendor_of(index: int) -> str:
        inv = inv_by_index.get(index)
        return str((inv.values.get("vendor") if inv else None) or node_vendor)

    def base(index: int, uuid: str) -> list[tuple[str, Any]]:
        inv = inv_by_index.get(index)
        bus = (inv.values.get("pci_bus_id") if inv else "") or ""
        vendor = vendor_of(index)
        if vendor != DEFAULT_VENDOR:  # no DCGM-style labels on another vendor's device
            return neutral(index, uuid)[:3] + [("device", f"{vendor}{index}")] + neutral(index, uuid)[3:]
        return [("gpu", index), ("UUID", uuid), ("pci_bus_id", dcgm_bus_id(bus)),
                ("device", f"nvidia{index}"), ("modelName", inv.name if inv else ""),
                ("hostname", node.hostname), ("DCGM_FI_DRIVER_VERSION", driver)]

    def neutral(index: int, uuid: str) -> list[tuple[str, Any]]:
        inv = inv_by_index.get(index)
        return [("gpu", index), ("uuid", uuid), ("pci_bus_id", (inv.values.get("pci_bus_id") if inv else "") or ""),
                ("model", inv.name if inv else ""), ("hostname", node.hostname), ("vendor", vendor_of(index))]

    gpu_labels = {s.index: base(s.index, s.uuid) for s in samples}
    for g in inventory:
        gpu_labels.setdefault(g.index, base(g.index, g.uuid))
    lbl = {i: _labels(pairs) for i, pairs in gpu_labels.items()}
    nvidia = {i for i in gpu_labels if vendor_of(i) == DEFAULT_VENDOR}
    dcgm_samples = [s for s in samples if s.index in nvidia]  # DCGM_FI_* families: NVIDIA's devices alone
    dcgm_inventory = [g for g in inventory if g.index in nvidia]

    factors = _FACTORS if fields is None or fields is CATALOG else {
        f.name: f.prom.factor for f in fields if f.prom is not None and f.prom.factor != 1}
    for fname, (metric, mtype, help_text) in metrics.items():
        factor = factors.get(fname)
        page.family(metric, mtype, help_text, [(lbl[s.index], s.values.get(fname) if factor is None
                                                else _times(s.values.get(fname), factor))
                                               for s in (dcgm_samples if metric.startswith("DCGM_") else samples)])

    for fname, (metric, mtype, help_text, factor) in DERIVED_METRICS.items():
        if fname in metrics:
            page.family(metric, mtype, help_text,
                        [(lbl[s.index], _times(s.values.get(fname), factor)) for s in dcgm_samples])

    xids = last_xid or {}
    rows = []
    for s in dcgm_samples:
        code = int(xids.get(s.uuid, 0))
        known = XID_CATALOG.get(code)
        rows.append((_labels(gpu_labels[s.index] + [("err_code", code), ("err_msg", known.meaning if known else "")]),
                     code))
    page.family("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", rows)

    rows = []
    for s in samples:
        mask = s.values.get("throttle_mask")
        if mask is None:
            continue
        for r in THROTTLE_REASONS:
            rows.append((_labels(gpu_labels[s.index] + [("reason", r.name)]), 1 if int(mask) & r.bit else 0))
    page.family("fleetmon_gpu_clocks_event_active", "gauge",
                "Whether a clocks-event (throttle) reason is active (1) or not (0).", rows)

    for fname, (metric, help_text) in INVENTORY_METRICS.items():
        page.family(metric, "gauge", help_text, [(lbl[g.index], g.values.get(fname))
                                                 for g in (dcgm_inventory if metric.startswith("DCGM_") else inventory)])

    nominal = {g.index: _nominal(g) for g in inventory}
    for key, (metric, help_text) in NOMINAL_METRICS.items():
        page.family(metric, "gauge", help_text, [(lbl[i], n.get(key)) for i, n in nominal.items()])
    page.family("fleetmon_gpu_pcie_link_bandwidth_bytes_per_second", "gauge",
                "Bandwidth per direction of the PCIe link as negotiated now (generation x width).",
                [(lbl[s.index], _link_bps(s.values.get("pcie_gen"), s.values.get("pcie_width"))) for s in samples])

    page.family("fleetmon_gpu_info", "gauge", "Static facts about a GPU as labels; the value is 1.",
                [(_labels(gpu_labels[g.index] + [(k, g.values.get(k)) for k in _INFO_LABELS]), 1)
                 for g in inventory])
    page.family("fleetmon_gpu_lost", "gauge",
                "Whether the GPU is lost (1: fell off the bus or left enumeration) or not (0).",
                [(lbl[i], 1 if (s_state == GpuState.LOST) else 0) for i, s_state in _states(inventory, samples)])

    rows = []
    for s in samples:
        for fname in metrics:
            st = s.status.get(fname)
            if st in _OK_STATES:
                continue
            rows.append((_labels(gpu_labels[s.index] + [("field", fname)]), 0 if st else 1))
    page.family("fleetmon_gpu_reading_ok", "gauge",
                "Whether the last reading of a field succeeded (1) or failed or the GPU is lost (0); "
                "fields this GPU does not support are left out.", rows)

    health = {g.get("index"): g for g in agent.get("gpus", []) if isinstance(g, dict)}
    page.family("fleetmon_gpu_read_duration_seconds", "gauge",
                "How long the last read of all of a GPU's fields through NVML took.",
                [(lbl[i], None if h.get("last_read_ms") is None else h["last_read_ms"] / 1000.0)
                 for i, h in health.items() if i in lbl])
    page.family("fleetmon_gpu_read_hung", "gauge",
                "Whether NVML reads of the GPU do not return in time (1) or do (0).",
                [(lbl[i], 1 if h.get("hung_since") is not None else 0) for i, h in health.items() if i in lbl])

    neutral_labels = {i: neutral(i, uuid) for i, uuid in
                      {**{g.index: g.uuid for g in inventory}, **{s.index: s.uuid for s in samples}}.items()}
    _neutral_families(page, NEUTRAL_METRICS, [(s.index, s.values) for s in samples], neutral_labels, metrics)
    _neutral_families(page, NEUTRAL_INVENTORY, [(g.index, g.values) for g in inventory], neutral_labels, None)

    host = [("hostname", node.hostname)]
    info = _labels(host + [("driver_version", driver),
                           ("cuda_driver_version", node.values.get("cuda_driver_version") or ""),
                           ("nvml_version", node.values.get("nvml_version") or ""),
                           ("agent_version", node.agent_version), ("xid_source", node.xid_source),
                           ("vendor", node_vendor), ("runtime", RUNTIME_NAMES.get(node_vendor, "")),
                           ("runtime_version", node.values.get("runtime_version") or ""),
                           ("firmware_version", node.values.get("firmware_version") or "")])
    page.family("fleetmon_agent_info", "gauge",
                "Agent, vendor, driver, runtime and Xid source of this node; the value is 1.",
                [(info, 1)])
    page.family("fleetmon_node_gpus", "gauge", "GPUs NVML enumerates on this node.",
                [(_labels(host), node.values.get("gpu_count"))])
    for key, help_text in (("uptime_seconds", "Seconds since the agent started."),
                           ("sample_lag_seconds", "Age of the latest sample."),
                           ("cycle_seconds", "Duration of the last sampling round."),
                           ("buffer_bytes", "Bytes the local record buffer occupies.")):
        page.family(f"fleetmon_agent_{key}", "gauge", help_text, [(_labels(host), agent.get(key))])
    return page.text()


def _neutral_families(page: _Page, table: tuple[Neutral, ...], values: list[tuple[int, Any]],
                      labels: dict[int, list[tuple[str, Any]]], exported: dict[str, Any] | None) -> None:
    """The ``fleetmon_gpu_*`` families of ``table`` over every device's values; rows of one metric together."""
    families: dict[str, tuple[str, str, list[tuple[str, Any]]]] = {}
    for n in table:
        if exported is not None and n.field not in exported:
            continue  # a field left out of the page (a custom catalog) is left out here too
        _, _, rows = families.setdefault(n.metric, (n.type, n.help, []))
        for index, vals in values:
            v = _number(vals.get(n.field))
            if v is not None and index in labels:
                rows.append((_labels(labels[index] + list(n.labels)), _scaled(v, n.scale)))
    for metric, (mtype, help_text, rows) in families.items():
        page.family(metric, mtype, help_text, rows)


def _scaled(value: float, scale: float) -> float | int:
    out = value * scale
    return int(out) if float(out).is_integer() and abs(out) < 2 ** 53 else round(out, 6)


def dcgm_bus_id(bus_id: str) -> str:
    """fleetmon's ``0000:1b:00.0`` in DCGM's long form ``00000000:1B:00.0`` (other text unchanged)."""
    parts = bus_id.split(":")
    if len(parts) != 3 or "." not in parts[2]:
        return bus_id
    try:
        domain = int(parts[0], 16)
    except ValueError:
        return bus_id
    return f"{domain:08X}:{parts[1].upper()}:{parts[2].upper()}"


def _times(value: Any, factor: int) -> Any:
    return None if value is None else int(round(float(value) * factor))


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _nominal(gpu: GpuInventory) -> dict[str, Any]:
    """The model's nominal specs by NOMINAL_METRICS key; empty for a model fleetmon.specs does not know."""
    spec = specs.lookup(gpu.name, _number(gpu.values.get("memory_total_mib"))) if gpu.name else None
    if spec is None:
        return {}
    out: dict[str, Any] = {"boost_clock_mhz": spec.boost_clock_mhz, "base_clock_mhz": spec.base_clock_mhz,
                           "tdp_w": spec.tdp_w, "memory_mib": spec.memory_gb * 1024}
    if spec.pcie_gen is not None and spec.pcie_width is not None:
        out["pcie_bps"] = _link_bps(spec.pcie_gen, spec.pcie_width)
    return out


def _link_bps(gen: Any, width: Any) -> int | None:
    """PCIe bandwidth per direction in bytes/s; None for a link NVML could not tell (0, missing)."""
    if gen is None or width is None:
        return None
    try:
        return int(round(specs.pcie_bandwidth_gbs(int(gen), int(width)) * 1e9))
    except ValueError:
        return None


def _states(inventory: list[GpuInventory], samples: list[GpuSample]) -> list[tuple[int, str]]:
    """(index, "ok"/"lost") per GPU: the latest sample's state, else the inventory's."""
    by_index = {g.index: g.state for g in inventory}
    for s in samples:
        by_index[s.index] = s.state
    return sorted(by_index.items())


def metric_names() -> dict[str, str]:
    """fleetmon field name -> metric name (for documentation and tests)."""
    names = {f: m for f, (m, _, _) in SAMPLE_METRICS.items()}
    names.update({f: m for f, (m, _) in INVENTORY_METRICS.items()})
    return names

