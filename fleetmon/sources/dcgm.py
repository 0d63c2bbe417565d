"""dcgm-exporter scrapes (Prometheus text format) → a :class:`~fleetmon.sources.capture.Capture`.

The text format is read by prometheus_client's parser (the reference
implementation's own, kept with the client library), not by hand: it copes with
everything the fixtures in ../shared/fixtures/C_dcgm_exporter hold (empty HELP
texts, ``# NOTE`` comments, label-less series, blank lines between blocks, no
trailing newline, two scrapes concatenated).

Mapping: a series' metric name is looked up among the field catalog's Prometheus
names (fleetmon.fields.CATALOG ``prom.name`` *are* dcgm-exporter's names) plus the
aliases in :data:`_ALIASES`; its labels name the GPU and carry inventory:

* ``gpu`` (index), ``UUID`` (``uuid`` in some versions), ``device`` (``nvidia0``),
  ``modelName`` / ``DCGM_FI_DEV_NAME``, ``pci_bus_id``, ``Hostname`` (older releases)
  / ``hostname`` (current), ``DCGM_FI_DRIVER_VERSION``, ``DCGM_FI_DEV_SERIAL``,
  ``DCGM_FI_DEV_VBIOS_VERSION``, ``DCGM_FI_CUDA_DRIVER_VERSION`` (``12010``),
  ``DCGM_FI_NVML_VERSION``;
* MIG: ``GPU_I_ID`` / ``GPU_I_PROFILE`` (and ``GPU_CI_ID``): a MIG instance repeats
  its GPU's ``gpu``/``UUID`` labels. Device-level values are the same on every
  instance; the GPU's record takes the series without MIG labels when there is one,
  else the first instance's. The instances are listed in the inventory's
  ``mig_devices``.

What a scrape cannot tell is unsupported, never zero: a field dcgm-exporter was
not configured to export; inventory beyond its labels (board part number,
InfoROM, PCIe maxima, ECC mode); and ``DCGM_FI_DEV_MEMORY_TEMP`` of exactly 0,
which DCGM reports for GPUs without a memory sensor. A series without ``gpu`` or
``UUID`` labels belongs to no GPU and is counted in the notes.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from fleetmon.fields import CATALOG
from fleetmon.pci import normalize_bus_id
from fleetmon.records import GpuInventory, GpuSample
from fleetmon.sources import SourceError
from fleetmon.sources.capture import (
    Capture, Readings, inventory_readings, lost_state, make_info, node_readings, placeholder_uuid, sample_readings,
)

__all__ = ["parse_dcgm", "parse_counters_csv", "DcgmCounter", "SOURCE", "METRIC_FIELDS"]

SOURCE = "dcgm-exporter"

_ALIASES = {
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": "throttle_mask",  # the newer name of CLOCK_THROTTLE_REASONS
    "DCGM_FI_DEV_POWER_MGMT_LIMIT": "power_limit_w",  # the management limit: the enforced one unless capped
}
METRIC_FIELDS: dict[str, str] = {f.prom.name: f.name for f in CATALOG if f.prom is not None
                                 and f.prom.name.startswith("DCGM_FI_")} | _ALIASES
"""dcgm-exporter metric → the sample field it fills."""

_INVENTORY_METRICS = {"DCGM_FI_DEV_FB_TOTAL": "memory_total_mib", "DCGM_FI_DEV_SLOWDOWN_TEMP": "temp_slowdown_c",
                      "DCGM_FI_DEV_SHUTDOWN_TEMP": "temp_shutdown_c",
                      "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": "power_enforced_w",
                      "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF": "power_default_w",
                      "DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN": "power_min_w",
                      "DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX": "power_max_w",
                      "DCGM_FI_DEV_MAX_SM_CLOCK": "max_sm_clock_mhz", "DCGM_FI_DEV_MAX_MEM_CLOCK": "max_mem_clock_mhz",
                      "DCGM_FI_DEV_PCIE_MAX_LINK_GEN": "pcie_max_gen",
                      "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH": "pcie_max_width"}
_FLOAT_FIELDS = {"power_w", "power_limit_w", "fan_pct", "power_enforced_w", "power_default_w", "power_min_w",
                 "power_max_w"}
_MIG_LABELS = ("GPU_I_ID", "GPU_I_PROFILE", "GPU_CI_ID")


def _label(labels: dict[str, str], *names: str) -> str | None:
    for n in names:
        v = labels.get(n)
        if v not in (None, ""):
            return v
    return None


@dataclass
class _Gpu:
    key: str
    labels: dict[str, str]
    device: dict[str, float]  # metric → value, series without MIG labels
    mig_first: dict[str, float]  # metric → value of the first MIG series seen
    migs: dict[str, dict[str, Any]]


def _cuda(text: str) -> str:
    n = int(text)
    return f"{n // 1000}.{(n % 1000) // 10}"


def _convert(name: str, value: float) -> Any:
    if name in _FLOAT_FIELDS:
        return round(value, 3)
    return int(value)


def parse_dcgm(text: str) -> Capture:
    """Parse one dcgm-exporter scrape (or several concatenated: a later value of a series wins).

    Raises:
        SourceError: not Prometheus text, or no series of any GPU in it.
    """
    try:
        families = list(text_string_to_metric_families(text if text.endswith("\n") else text + "\n"))
    except (ValueError, TypeError, IndexError) as exc:
        raise SourceError(f"dcgm-exporter scrape: not Prometheus text format ({exc})") from None
    gpus: dict[str, _Gpu] = {}
    orphans = 0
    hosts: Counter[str] = Counter()
    for fam in families:
        for s in fam.samples:
            # prometheus_client appends "_total" to the samples of a family typed counter
            # (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION → …_total); dcgm-exporter's names have no such suffix.
            name = fam.name if fam.type == "counter" and s.name == f"{fam.name}_total" else s.name
            labels = dict(s.labels)
            uuid = _label(labels, "UUID", "uuid")
            gpu_label = _label(labels, "gpu")
            if uuid is None and gpu_label is None:
                orphans += 1
                continue
            host = _label(labels, "hostname", "Hostname")
            if host:
                hosts[host] += 1
            key = uuid or f"gpu{gpu_label}"
            g = gpus.get(key)
            if g is None:
                g = gpus[key] = _Gpu(key, {}, {}, {}, {})
            mig_id = _label(labels, "GPU_I_ID")
            if mig_id is None:
                g.labels.update({k: v for k, v in labels.items() if v != ""})
                g.device[name] = float(s.value)
            else:
                g.labels.update({k: v for k, v in labels.items() if v != "" and k not in _MIG_LABELS
                                 and k not in g.labels})
                g.mig_first.setdefault(name, float(s.value))
                g.migs.setdefault(mig_id, {"gpu_instance_id": int(mig_id) if mig_id.isdigit() else mig_id,
                                           "profile": labels.get("GPU_I_PROFILE")})
    if not gpus:
        raise SourceError("dcgm-exporter scrape: no series names a GPU (no 'gpu' or 'UUID' label)")
    notes: list[str] = []
    if orphans:
        notes.append(f"{orphans} series without gpu/UUID labels belong to no GPU and were left out")
    if len(hosts) > 1:
        notes.append(f"series from {len(hosts)} host names: {', '.join(sorted(hosts))}")
    node = node_readings()
    inventories: list[GpuInventory] = []
    samples: list[GpuSample] = []
    used: set[int] = set()
    ordered = sorted(gpus.values(), key=lambda g: (int(g.labels.get("gpu", "1000000")), g.key)
                     if g.labels.get("gpu", "").isdigit() else (1000000, g.key))
    for g in ordered:
        wanted = int(g.labels["gpu"]) if g.labels.get("gpu", "").isdigit() else None
        index = wanted if wanted is not None and wanted not in used else max(used, default=-1) + 1
        if wanted is not None and index != wanted:
            notes.append(f"GPU {g.key}: index {wanted} given twice, stored as {index}")
        used.add(index)
        values = {**g.mig_first, **g.device}
        inv, sample = _gpu_records(g, index, values)
        for key, label in (("driver_version", "DCGM_FI_DRIVER_VERSION"), ("nvml_version", "DCGM_FI_NVML_VERSION")):
            if node.values.get(key) is None and g.labels.get(label):
                node.put(key, g.labels[label])
        if node.values.get("cuda_driver_version") is None and g.labels.get("DCGM_FI_CUDA_DRIVER_VERSION"):
            node.read("cuda_driver_version", g.labels["DCGM_FI_CUDA_DRIVER_VERSION"], _cuda)
        uuid = inv.values.get("uuid") or placeholder_uuid(index, str(inv.values.get("pci_bus_id") or "dcgm"), False)
        inv.put("uuid", uuid)
        if g.migs:
            inv.values["mig_devices"] = [g.migs[k] for k in sorted(g.migs, key=lambda k: (len(k), k))]
        inventories.append(GpuInventory(uuid=uuid, index=index, name=str(inv.values.get("name") or "unknown"),
                                        values=inv.values, status=inv.status, state=lost_state(False)))
        samples.append(GpuSample(ts=0.0, uuid=uuid, index=index, values=sample.values, status=sample.status))
    node.put("gpu_count", len(inventories))
    hostname = hosts.most_common(1)[0][0] if hosts else ""
    return Capture(source=SOURCE, info=make_info(hostname, node, SOURCE), gpus=inventories, samples=samples,
                   ts=None, notes=notes)


def _gpu_records(g: _Gpu, index: int, values: dict[str, float]) -> tuple[Readings, Readings]:
    inv = inventory_readings()
    inv.put("index", index)
    labels = g.labels
    inv.put("uuid", _label(labels, "UUID", "uuid"))
    inv.put("name", _label(labels, "modelName", "DCGM_FI_DEV_NAME"))
    inv.put("serial", _label(labels, "DCGM_FI_DEV_SERIAL"))
    inv.put("vbios", _label(labels, "DCGM_FI_DEV_VBIOS_VERSION"))
    bus = _label(labels, "pci_bus_id")
    inv.put("pci_bus_id", normalize_bus_id(bus) if bus else None)
    for metric, name in _INVENTORY_METRICS.items():
        if metric in values:
            inv.put(name, _convert(name, values[metric]))
    s = sample_readings()
    for metric, name in METRIC_FIELDS.items():
        if metric not in values or s.values.get(name) is not None:
            continue
        value = values[metric]
        if name == "mem_temp_c" and value == 0:
            continue  # DCGM's 0 for "no memory sensor": unsupported, not 0 °C
        s.put(name, _convert(name, value))
    if inv.values.get("power_enforced_w") is None and s.values.get("power_limit_w") is not None:
        inv.put("power_enforced_w", s.values["power_limit_w"])
    if s.values.get("fan_pct") is not None:
        s.put("fan_speeds_pct", [int(s.values["fan_pct"])])
    return inv, s


@dataclass(frozen=True, slots=True)
class DcgmCounter:
    """One line of a dcgm-exporter counters CSV (etc/default-counters.csv): field, type, help."""

    name: str
    type: str
    help: str


def parse_counters_csv(text: str) -> list[DcgmCounter]:
    """dcgm-exporter's counters CSV: ``# comments``, blank lines, stray spaces before commas."""
    out: list[DcgmCounter] = []
    for row in csv.reader(io.StringIO(text), skipinitialspace=True):
        if not row or not row[0].strip() or row[0].lstrip().startswith("#"):
            continue
        if len(row) < 2:
            raise SourceError(f"dcgm-exporter counters CSV: {','.join(row)!r}: expected name, type, help")
        out.append(DcgmCounter(row[0].strip(), row[1].strip(), ",".join(row[2:]).strip()))
    return out
