"""dcgm-exporter scrapes (Prometheus text format) → a :class:`~fleetmon.sources.capture.Capture`.

The text format is read here line by line with compiled regular expressions, not
with prometheus_client's parser (kept as the reference the tests compare with):
that parser walks label text a character at a time in Python (≈ 50 µs a line; a
16 MiB scrape took 5.5 s and a 100,000-GPU scrape 7.7 s and 515 MB) and hands
over whole families, so it could not stop at a count limit before the end of a
family. This reader does the same work in C regex calls per line, stops at the
first line past a limit (:func:`parse_dcgm`'s ``max_gpus`` / ``max_series``,
:data:`MAX_LINE_CHARS`), keeps only the labels and metrics it maps, and copes
with everything the fixtures in ../shared/fixtures/C_dcgm_exporter hold (empty
HELP texts, ``# NOTE`` comments, label-less series, blank lines between blocks,
no trailing newline, two scrapes concatenated, escaped label values).

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

Units: a catalog field kept in larger units than DCGM's (``Prom.factor``) is
divided back: ``DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL`` counts bytes (dcgm-exporter's
counters CSV: "the number of bytes of active NVLink rx or tx data including both
header and payload"), the field ``nvlink_kib`` KiB, as NVML's counters.

What a scrape cannot tell is unsupported, never zero: a field dcgm-exporter was
not configured to export; inventory beyond its labels (board part number,
InfoROM, PCIe maxima, ECC mode); and ``DCGM_FI_DEV_MEMORY_TEMP`` of exactly 0,
which DCGM reports for GPUs without a memory sensor. A series without ``gpu`` or
``UUID`` labels belongs to no GPU and is counted in the notes. NaN or an infinity
in a metric read here is an error naming the metric (a value never becomes 0).
"""

from __future__ import annotations

import csv
import io
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fleetmon.fields import CATALOG
from fleetmon.i18n import N_, Text, reason_of
from fleetmon.pci import normalize_bus_id
from fleetmon.records import GpuInventory, GpuSample
from fleetmon.sources import ReadLimits, SourceError
from fleetmon.sources.capture import (
    Capture, Readings, inventory_readings, lost_state, make_info, node_readings, placeholder_uuid, sample_readings,
)
from fleetmon.text import one_line, printable

__all__ = ["parse_dcgm", "parse_counters_csv", "DcgmCounter", "SOURCE", "METRIC_FIELDS", "MAX_LINE_CHARS", "answer_name",
           "read_answer"]

SOURCE = "dcgm-exporter"
WHAT = "dcgm-exporter scrape"

MAX_LINE_CHARS = 64 * 1024
"""Longest line read (a real sample line with Kubernetes pod labels is under 1 KB)."""

_ALIASES = {
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": "throttle_mask",  # the newer name of CLOCK_THROTTLE_REASONS
    "DCGM_FI_DEV_POWER_MGMT_LIMIT": "power_limit_w",  # the management limit: the enforced one unless capped
}
METRIC_FIELDS: dict[str, str] = {f.prom.name: f.name for f in CATALOG if f.prom is not None
                                 and f.prom.name.startswith("DCGM_FI_")} | _ALIASES
"""dcgm-exporter metric → the sample field it fills."""
_FACTORS: dict[str, int] = {f.prom.name: f.prom.factor for f in CATALOG if f.prom is not None
                            and f.prom.name in METRIC_FIELDS and f.prom.factor != 1}
"""dcgm-exporter metric → how many of its units make one of the field's (bytes → KiB: 1024)."""

_INVENTORY_METRICS = {"DCGM_FI_DEV_FB_TOTAL": "memory_total_mib", "DCGM_FI_DEV_SLOWDOWN_TEMP": "temp_slowdown_c",
                      "DCGM_FI_DEV_SHUTDOWN_TEMP": "temp_shutdown_c",
                      "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": "power_enforced_w",
                      "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF": "power_default_w",
                      "DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN": "power_min_w",
                      "DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX": "power_max_w",
                      "DCGM_FI_DEV_MAX_SM_CLOCK": "max_sm_clock_mhz", "DCGM_FI_DEV_MAX_MEM_CLOCK": "max_mem_clock_mhz",
                      "DCGM_FI_DEV_PCIE_MAX_LINK_GEN": "pcie_max_gen",
                      "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH": "pcie_max_width"}
_READ_METRICS = frozenset(METRIC_FIELDS) | frozenset(_INVENTORY_METRICS)
_FLOAT_FIELDS = {"power_w", "power_limit_w", "fan_pct", "power_enforced_w", "power_default_w", "power_min_w",
                 "power_max_w"}
_MIG_LABELS = ("GPU_I_ID", "GPU_I_PROFILE", "GPU_CI_ID")
_KNOWN_LABELS = frozenset({"gpu", "UUID", "uuid", "device", "modelName", "DCGM_FI_DEV_NAME", "pci_bus_id",
                           "Hostname", "hostname", "DCGM_FI_DRIVER_VERSION", "DCGM_FI_DEV_SERIAL",
                           "DCGM_FI_DEV_VBIOS_VERSION", "DCGM_FI_CUDA_DRIVER_VERSION", "DCGM_FI_NVML_VERSION",
                           *_MIG_LABELS})
"""The labels read (the others, e.g. Kubernetes pod labels, are skipped: they cost no memory)."""

# The text format (https://prometheus.io/docs/instrumenting/exposition_formats/): name, optional
# {label="value",...} with \\ \" \n escapes, value, optional timestamp. Each pattern is unambiguous
# (a label value is a run of non-quote non-backslash characters or escape pairs; items are separated by
# commas), so a match or a failure costs time linear in the line.
_NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_VALUE = r'"[^"\\]*(?:\\.[^"\\]*)*"'  # "unrolled": a run of plain characters per step, not one
_ITEM = rf"[ \t]*[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*{_VALUE}[ \t]*"
_BLOCK_RE = re.compile(rf"[ \t]*\{{((?:{_ITEM},)*(?:{_ITEM})?)\}}", re.DOTALL)
_LABEL_RE = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"([^"\\]*(?:\\.[^"\\]*)*)"', re.DOTALL)
_ESCAPE_RE = re.compile(r"\\([\\n\"])")
_INDEX_RE = re.compile(r"[0-9]{1,6}")


def _unescape(value: str) -> str:
    return _ESCAPE_RE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), value) if "\\" in value else value


def _label(labels: dict[str, str], *names: str) -> str | None:
    for n in names:
        v = labels.get(n)
        if v not in (None, ""):
            return v
    return None


def _small_int(text: str | None) -> int | None:
    """A decimal GPU or MIG instance index (ASCII digits only: "²".isdigit() is true), else None."""
    return int(text) if text is not None and _INDEX_RE.fullmatch(text) else None


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


class _Bad(Exception):
    """A line that is not Prometheus text format (its reason)."""


def _not_a_number(token: str) -> Text:
    return Text(N_("not a number: {token!r}"), token=token[:40])


def _sample(line: str) -> tuple[str, dict[str, str], str]:
    """(metric name, the labels read, value text) of one sample line (stripped, not a comment)."""
    m = _NAME_RE.match(line)
    if m is None:
        raise _Bad(Text(N_("no metric name")))
    name = m.group()
    pos = m.end()
    labels: dict[str, str] = {}
    if line[pos:pos + 1] in (" ", "\t") and line[pos:].lstrip(" \t").startswith("{") or line[pos:pos + 1] == "{":
        b = _BLOCK_RE.match(line, pos)
        if b is None:
            raise _Bad(Text(N_("malformed labels")))
        labels = {k: _unescape(v) for k, v in _LABEL_RE.findall(b.group(1)) if k in _KNOWN_LABELS}
        pos = b.end()
    elif pos < len(line) and line[pos] not in " \t":
        raise _Bad(Text(N_("malformed metric name")))
    rest = line[pos:].split()
    if not 1 <= len(rest) <= 2:
        raise _Bad(Text(N_("expected a value and an optional timestamp")))
    for tok in rest:
        if "_" in tok:  # float() reads "1_000"; the text format does not
            raise _Bad(_not_a_number(tok))
    return name, labels, rest[0]


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise _Bad(_not_a_number(text)) from None


def parse_dcgm(text: str | bytes, *, max_gpus: int | None = None, max_series: int | None = None) -> Capture:
    """Parse one dcgm-exporter scrape (or several concatenated: a later value of a series wins).

    ``text`` may be the answer's bytes (UTF-8; each line is decoded on its own, so one
    non-ASCII character never makes a wide copy of the whole answer). ``max_gpus`` /
    ``max_series`` (the collector passes its per-node limits) stop the reading at the
    first GPU or sample line past them, with a clear error.

    Raises:
        SourceError: not Prometheus text, a limit passed, NaN or an infinity in a metric
            read here, or no series of any GPU in it.
    """
    if max_series is not None:
        # Comments (HELP, TYPE) and blank lines cost a split each: bounded before any work.
        max_lines = 4 * max_series + 1024
        if (text.count("\n") if isinstance(text, str) else text.count(b"\n")) >= max_lines:
            raise SourceError(Text(N_("{what}: more than {lines:,} lines (at most {series:,} series are read "
                                      "from one node)"), what=WHAT, lines=max_lines, series=max_series))
    gpus: dict[str, _Gpu] = {}
    orphans = 0
    series = 0
    hosts: Counter[str] = Counter()
    lines: Sequence[str | bytes] = text.split("\n") if isinstance(text, str) else text.split(b"\n")
    for lineno, raw in enumerate(lines, 1):
        if len(raw) > MAX_LINE_CHARS:
            raise SourceError(Text(N_("{what}: line {line} is longer than {chars:,} characters"), what=WHAT,
                                   line=lineno, chars=MAX_LINE_CHARS))
        line = (raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw).strip()
        if not line or line[0] == "#":
            continue
        series += 1
        if max_series is not None and series > max_series:
            raise SourceError(Text(N_("{what}: more than {series:,} series (the most read from one node)"), what=WHAT,
                                   series=max_series))
        try:
            name, labels, value_text = _sample(line)
            value = _number(value_text)
        except _Bad as exc:
            # The reason (a Text, said in the reader's language) as it is when one_line() leaves it whole.
            raise SourceError(Text(N_("{what}: line {line}: not Prometheus text format ({error}): {text}"), what=WHAT,
                                   line=lineno, error=one_line(reason_of(exc), 80),
                                   text=printable(line, 60))) from None
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
            if max_gpus is not None and len(gpus) >= max_gpus:
                raise SourceError(Text(N_("{what}: more than {limit} GPUs (the most one node may have)"), what=WHAT,
                                       limit=max_gpus))
            g = gpus[key] = _Gpu(key, {}, {}, {}, {})
        if name in _READ_METRICS and not math.isfinite(value):
            raise SourceError(Text(N_("{what}: {metric} of GPU {gpu} is {value}, not a reading"), what=WHAT,
                                   metric=name, gpu=printable(key, 60), value=printable(value_text, 20)))
        mig_id = _label(labels, "GPU_I_ID")
        if mig_id is None:
            g.labels.update({k: v for k, v in labels.items() if v != ""})
            if name in _READ_METRICS:
                g.device[name] = value
        else:
            g.labels.update({k: v for k, v in labels.items() if v != "" and k not in _MIG_LABELS
                             and k not in g.labels})
            if name in _READ_METRICS:
                g.mig_first.setdefault(name, value)
            if mig_id not in g.migs:
                if max_gpus is not None and len(g.migs) >= max_gpus:
                    raise SourceError(Text(N_("{what}: GPU {gpu} has more than {limit} MIG instances"), what=WHAT,
                                           gpu=printable(key, 60), limit=max_gpus))
                mig_index = _small_int(mig_id)
                g.migs[mig_id] = {"gpu_instance_id": mig_id if mig_index is None else mig_index,
                                  "profile": labels.get("GPU_I_PROFILE")}
    if not gpus:
        raise SourceError(Text(N_("{what}: no series names a GPU (no 'gpu' or 'UUID' label)"), what=WHAT))
    notes: list[str] = []
    if orphans:
        notes.append(Text(N_("{count} series without gpu/UUID labels belong to no GPU and were left out"),
                          count=orphans))
    if len(hosts) > 1:
        names = sorted(hosts)
        if len(names) > 5:
            notes.append(Text(N_("series from {count} host names: {names} and {more} more"), count=len(hosts),
                              names=", ".join(names[:5]), more=len(names) - 5))
        else:
            notes.append(Text(N_("series from {count} host names: {names}"), count=len(hosts), names=", ".join(names)))
    node = node_readings()
    inventories: list[GpuInventory] = []
    samples: list[GpuSample] = []
    used: set[int] = set()

    def order(g: _Gpu) -> tuple[int, str]:
        index = _small_int(g.labels.get("gpu"))
        return (1_000_000 if index is None else index, g.key)

    for g in sorted(gpus.values(), key=order):
        wanted = _small_int(g.labels.get("gpu"))
        index = wanted if wanted is not None and wanted not in used else max(used, default=-1) + 1
        if wanted is not None and index != wanted:
            notes.append(Text(N_("GPU {gpu}: index {wanted} given twice, stored as {index}"), gpu=g.key, wanted=wanted,
                              index=index))
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
        if metric in _FACTORS:  # a field kept in larger units than DCGM's
            value = round(value / _FACTORS[metric])
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
            raise SourceError(Text(N_("{what}: {row!r}: expected name, type, help"), what="dcgm-exporter counters CSV",
                                   row=",".join(row)))
        out.append(DcgmCounter(row[0].strip(), row[1].strip(), ",".join(row[2:]).strip()))
    return out


def read_answer(body: bytes, tool: str, limits: ReadLimits) -> Capture:
    """The source registry's reader of a scrape (:data:`fleetmon.sources.SOURCES`): :func:`parse_dcgm` within the
    collector's per-node limits (``tool`` is an ssh node's; a scrape has none)."""
    return parse_dcgm(body, max_gpus=limits.max_gpus, max_series=limits.max_series)


def answer_name(tool: str, head: bytes) -> str:
    """How a check's message names a scrape."""
    return "/metrics"
