"""Intel Gaudi ``hl-smi -Q <fields> -f csv[,noheader]`` output → a :class:`~fleetmon.sources.capture.Capture`.

hl-smi (Intel Gaudi's management tool) prints one CSV row per Gaudi device, with the fields named
by ``-Q`` (``--query-aip``) in that order, ``, ``-separated and padded, units inside the values
(``131072 MiB``, ``226 W``, ``36 C``, ``0 %``) unless ``nounits`` is given, ``N/A`` for what a
device cannot tell. With ``-f csv`` a header row names the fields (``memory.total [MiB]``, as
nvidia-smi does); with ``csv,noheader`` nothing does, so the field list must come from elsewhere:

* the caller passes it (``fields=``: what the SSH source asked for), or
* the header row, or
* one of the known layouts (:data:`LAYOUTS`: fleetmon's own query and all-smi's), when the column
  count matches and the row has a Gaudi name (``HL-…``) where the layout says the name is.

Otherwise the output is refused: a CSV row cannot say which column is which.

**The query fleetmon asks for** (:data:`QUERY_FIELDS`, run as :data:`QUERY_COMMAND`, with the
header so that the parser reads the fields back from the output): every field the Habana docs list
for ``-Q`` that maps to a fleetmon field, plus ``power.max``, which the docs' list omits but the
Gaudi 3 capture in ../shared/fixtures (driver 1.22.1) answers (``850 W``: the power cap ``hl-smi -p``
sets). An hl-smi that does not know a field fails the whole query; the SSH source then falls back
to :data:`BASIC_FIELDS` (documented since the first releases).

Mapping (hl-smi field → fleetmon field):

==========================================  ==========================================
``index``                                   the device's index (the row order otherwise)
``uuid``                                    ``uuid`` (the device's unique id, e.g.
                                            ``01P4-HL3090A0-18-U4V193-22-07-00``); without
                                            it ``serial``, else the placeholder
                                            ``unknown-gpu-<index>-<bus id or hl-smi>``
``serial``, ``name``, ``bus_id``            ``serial``, ``name``, ``pci_bus_id``
``driver_version``                          the node's ``driver_version``
``memory.total`` / ``.used`` / ``.free``    ``memory_total_mib``, ``mem_used_mib``, ``mem_free_mib``
``power.draw``, ``power.max``               ``power_w``; ``power_enforced_w`` and ``power_limit_w``
``temperature.aip``, ``utilization.aip``    ``temp_c``, ``util_gpu_pct``
``ecc.errors.{corrected,uncorrected}.``     ``ecc_corr_vol``, ``ecc_unc_vol``,
``{volatile,aggregate}.total``              ``ecc_corr_agg``, ``ecc_unc_agg``
``ecc.mode.current`` / ``.pending``         ``ecc_mode_current``, ``ecc_mode_pending``
``clocks.current.soc``, ``clocks.max.soc``  ``sm_clock_mhz``, ``max_sm_clock_mhz``
``pcie.link.gen.current`` / ``.max``        ``pcie_gen``, ``pcie_max_gen`` (``Gen5`` or ``5``)
``pcie.link.width.current`` / ``.max``      ``pcie_width``, ``pcie_max_width`` (``x16`` or ``16``)
==========================================  ==========================================

Vendor readings without a fleetmon field go into ``Capture.extra[i]`` (:data:`EXTRA_FIELDS`):
``module_id`` (the OAM slot), ``ecc_dram_unc_agg`` / ``ecc_dram_corr_agg`` / ``ecc_dram_unc_vol`` /
``ecc_dram_corr_vol`` (HBM errors apart from the totals), ``violation_power`` /
``violation_thermal`` (hl-smi's ``stats.violation.*``), ``clock_limit_soc_mhz`` /
``clock_limit_tpc_mhz``, ``pcie_speed_gts`` / ``pcie_max_speed_gts``, ``util_memory_pct``,
``nic_driver_version``; a field the parser does not know is kept under its own name (text).

What hl-smi's ``-Q`` cannot tell (unsupported, never zero): the memory temperature and other
sensors (``temperature.aip`` is the one), temperature limits, the default/min power limits, the
memory clock, PCIe replays and throughput, throttle reasons, P-states, energy, retired pages and
replaced rows (row replacement is a separate query, ``--query-row-replacement``, not read here),
board part number, firmware versions (``--fw-versions``). Checked against the fixture
``intel/all-smi_hl-smi_2xHL-325L_excerpt.csv`` (2 × Gaudi 3 HL-325L, driver 1.22.1).
"""

from __future__ import annotations

import re
from typing import Any, Callable

from fleetmon.i18n import N_, Text
from fleetmon.pci import normalize_bus_id
from fleetmon.records import GpuInventory, GpuSample, Status
from fleetmon.sources import SourceError
from fleetmon.sources.capture import (
    Capture, Readings, enabled, inventory_readings, lost_state, make_info, mib, node_readings, number,
    placeholder_uuid, reading, sample_readings, text_status, whole,
)
from fleetmon.sources.smi_xml import MAX_GPUS
from fleetmon.sources.tool_text import csv_rows, last_value_cut, tool_text
from fleetmon.text import printable

__all__ = ["BASIC_FIELDS", "EXTRA_FIELDS", "FORMATS", "LAYOUTS", "QUERY_COMMAND", "QUERY_FIELDS", "SOURCE",
           "detect_hl_smi", "parse_hl_smi"]

SOURCE = "hl-smi-csv"
WHAT = "hl-smi CSV"
VENDOR = "intel"

QUERY_FIELDS: tuple[str, ...] = (
    "index", "uuid", "serial", "name", "bus_id", "module_id", "driver_version",
    "memory.total", "memory.used", "memory.free", "power.draw", "power.max", "temperature.aip", "utilization.aip",
    "ecc.errors.corrected.volatile.total", "ecc.errors.uncorrected.volatile.total",
    "ecc.errors.corrected.aggregate.total", "ecc.errors.uncorrected.aggregate.total",
    "ecc.mode.current", "ecc.mode.pending", "clocks.current.soc", "clocks.max.soc",
    "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max",
    "stats.violation.power", "stats.violation.thermal",
)
"""The fields fleetmon's SSH source asks hl-smi for (see the module docstring)."""
QUERY_COMMAND: tuple[str, ...] = ("hl-smi", "-Q", ",".join(QUERY_FIELDS), "-f", "csv")
"""The command, as an argument list (with the header: the parser reads the field list from it)."""
BASIC_FIELDS: tuple[str, ...] = (
    "index", "uuid", "serial", "name", "bus_id", "module_id", "driver_version", "memory.total", "memory.used",
    "memory.free", "power.draw", "temperature.aip", "utilization.aip")
"""The fallback query for an hl-smi that refuses :data:`QUERY_FIELDS`."""
ALL_SMI_FIELDS: tuple[str, ...] = (
    "index", "uuid", "name", "driver_version", "memory.total", "memory.used", "memory.free", "power.draw",
    "power.max", "temperature.aip", "utilization.aip")
"""lablup/all-smi's query (the layout of the Gaudi 3 fixture)."""
LAYOUTS: tuple[tuple[str, ...], ...] = (QUERY_FIELDS, BASIC_FIELDS, ALL_SMI_FIELDS)
"""Field lists a header-less output is matched against (by column count and the ``HL-`` name)."""

EXTRA_FIELDS: dict[str, str] = {
    "module_id": "module_id", "ecc.errors.dram.aggregate.total": "ecc_dram_unc_agg",
    "ecc.errors.dram-corrected.aggregate.total": "ecc_dram_corr_agg",
    "ecc.errors.dram.volatile.total": "ecc_dram_unc_vol",
    "ecc.errors.dram-corrected.volatile.total": "ecc_dram_corr_vol",
    "stats.violation.power": "violation_power", "stats.violation.thermal": "violation_thermal",
    "clocks.limit.soc": "clock_limit_soc_mhz", "clocks.limit.tpc": "clock_limit_tpc_mhz",
    "pcie.link.speed.current": "pcie_speed_gts", "pcie.link.speed.max": "pcie_max_speed_gts",
    "utilization.memory": "util_memory_pct", "nic_driver_version": "nic_driver_version",
}
"""hl-smi field → the name of its reading in ``Capture.extra`` (numbers as numbers; ``module_id`` and
``nic_driver_version`` as text)."""
_EXTRA_TEXT = frozenset({"module_id", "nic_driver_version"})

_HEADER_UNIT = re.compile(r"\s*\[[^\]]{0,16}\]\s*$")
_FIELD_NAME = re.compile(r"[a-z][a-z0-9_.-]{0,63}")
_GAUDI_NAME = re.compile(r"HL-\d{3}")
_GEN = re.compile(r"(?:gen)?\s*(\d{1,2})", re.I)
_WIDTH = re.compile(r"x?\s*(\d{1,2})\s*x?", re.I)


def _field_name(header: str) -> str:
    """``memory.total [MiB]`` → ``memory.total``; field names are lower case in hl-smi's docs."""
    return _HEADER_UNIT.sub("", header).strip().lower()


def _is_header(values: list[str]) -> bool:
    names = [_field_name(v) for v in values]
    return bool(names) and all(_FIELD_NAME.fullmatch(n) for n in names) and (
        "index" in names or "name" in names or "uuid" in names or "bus_id" in names)


def _layout_for(values: list[str]) -> tuple[str, ...] | None:
    for layout in LAYOUTS:
        if len(layout) == len(values):
            name = values[layout.index("name")]
            index = values[layout.index("index")]
            if _GAUDI_NAME.match(name) and index.isascii() and index.isdigit():
                return layout
    return None


def detect_hl_smi(text: str) -> bool:
    """Whether ``text`` looks like hl-smi's CSV: a header naming hl-smi's own fields (``temperature.aip``,
    ``utilization.aip``) or a ``name`` column holding a Gaudi name (``HL-…``) in the first row; or a
    header-less row of a known layout (:data:`LAYOUTS`)."""
    lines = [ln for ln in text.lstrip("\ufeff").splitlines()[:4] if ln.strip()]
    if not lines:
        return False
    values = [v.strip() for v in lines[0].split(",")]
    if not _is_header(values):
        return _layout_for(values) is not None
    names = [_field_name(v) for v in values]
    if any(n.endswith(".aip") for n in names):
        return True
    row = [v.strip() for v in lines[1].split(",")] if len(lines) > 1 else []
    return "name" in names and len(row) == len(names) and bool(_GAUDI_NAME.match(row[names.index("name")]))


def _gen(text: str) -> int:
    m = _GEN.fullmatch(text.strip())
    if m is None:
        raise ValueError(text[:64])
    return int(m.group(1))


def _width(text: str) -> int:
    m = _WIDTH.fullmatch(text.strip())
    if m is None:
        raise ValueError(text[:64])
    return int(m.group(1))


def _watts(text: str) -> float:
    return round(number(text, "w"), 3)


def _celsius(text: str) -> int:
    return int(round(number(text, "c")))


def _pct(text: str) -> int:
    return int(round(number(text, "%")))


def _mhz(text: str) -> int:
    return int(round(number(text, "mhz")))


def _count(text: str) -> int:
    value = number(text)
    if value < 0 or value != int(value):
        raise ValueError(text[:64])
    return int(value)


def _uuid_text(text: str) -> str:
    value = text.strip()
    if not value or len(value) > 128:
        raise ValueError(value[:64])
    return value


_SAMPLE: dict[str, tuple[str, Callable[[str], Any]]] = {
    "memory.used": ("mem_used_mib", mib), "memory.free": ("mem_free_mib", mib), "power.draw": ("power_w", _watts),
    "power.max": ("power_limit_w", _watts), "temperature.aip": ("temp_c", _celsius),
    "utilization.aip": ("util_gpu_pct", _pct),
    "ecc.errors.corrected.volatile.total": ("ecc_corr_vol", _count),
    "ecc.errors.uncorrected.volatile.total": ("ecc_unc_vol", _count),
    "ecc.errors.corrected.aggregate.total": ("ecc_corr_agg", _count),
    "ecc.errors.uncorrected.aggregate.total": ("ecc_unc_agg", _count),
    "clocks.current.soc": ("sm_clock_mhz", _mhz), "pcie.link.gen.current": ("pcie_gen", _gen),
    "pcie.link.width.current": ("pcie_width", _width),
}
_INVENTORY: dict[str, tuple[str, Callable[[str], Any]]] = {
    "uuid": ("uuid", _uuid_text), "serial": ("serial", _uuid_text), "name": ("name", str),
    "bus_id": ("pci_bus_id", normalize_bus_id), "memory.total": ("memory_total_mib", mib),
    "power.max": ("power_enforced_w", _watts), "ecc.mode.current": ("ecc_mode_current", enabled),
    "ecc.mode.pending": ("ecc_mode_pending", enabled), "clocks.max.soc": ("max_sm_clock_mhz", _mhz),
    "pcie.link.gen.max": ("pcie_max_gen", _gen), "pcie.link.width.max": ("pcie_max_width", _width),
}


def _extra(field: str, text: str) -> Any:
    """An extra reading: a number (units dropped) or, for text fields, the text; None when N/A."""
    if text_status(text) is not None:
        return None
    if EXTRA_FIELDS.get(field) in _EXTRA_TEXT or field not in EXTRA_FIELDS:
        return printable(text, 200)
    value, _ = reading(text, number)
    return value


def parse_hl_smi(data: bytes | str, fields: tuple[str, ...] | list[str] | None = None,
                 max_gpus: int = MAX_GPUS) -> Capture:
    """Parse hl-smi's ``-Q … -f csv[,noheader][,nounits]`` output.

    ``fields``: the ``-Q`` field list the output was made with (needed without a header, unless the
    output has a known layout; with a header the header wins and a different ``fields`` is an error).

    Raises:
        SourceError: not such output, which columns are which cannot be told, a row with a different
            number of values than the header (a cut or garbled table), duplicate devices, more than
            ``max_gpus`` devices, or text :func:`~fleetmon.sources.tool_text.tool_text` refuses; one line.
    """
    text = tool_text(data, WHAT)
    rows = csv_rows(text)
    if not rows:
        raise SourceError(Text(N_("{what}: empty output (no device rows)"), what=WHAT))
    notes: list[str] = []
    given = tuple(f.strip().lower() for f in fields) if fields is not None else None
    if _is_header(rows[0][1]):
        names = tuple(_field_name(v) for v in rows[0][1])
        if given is not None and given != names:
            raise SourceError(Text(N_("{what}: the header names other fields than the query asked for"), what=WHAT))
        rows = rows[1:]
    elif given is not None:
        names = given
    else:
        layout = _layout_for(rows[0][1])
        if layout is None:
            raise SourceError(Text(N_("{what}: no header row and {columns} columns of no known field list; "
                                      "pass the -Q field list (or run hl-smi with -f csv, with the header)"),
                                   what=WHAT, columns=len(rows[0][1])))
        names = layout
        notes.append(Text(N_("no header: the columns read as {columns}"), columns=",".join(layout)))
    if len(set(names)) != len(names):
        raise SourceError(Text(N_("{what}: a field is named twice in the field list"), what=WHAT))
    if len(rows) > max_gpus:
        raise SourceError(Text(N_("{what}: {count} device rows, more than the {limit} one output may describe"),
                               what=WHAT, count=len(rows), limit=max_gpus))
    unknown = [n for n in names if n not in _SAMPLE and n not in _INVENTORY and n not in EXTRA_FIELDS
               and n not in ("index", "driver_version", "timestamp")]
    if unknown:
        notes.append(Text(N_("fields not mapped (kept in extra): {fields}"), fields=printable(", ".join(unknown), 200)))
    for number_, values in rows:
        if len(values) != len(names):
            raise SourceError(Text(N_("{what}: line {line} has {values} values where the field list has {fields}: "
                                      "a cut or garbled table"), what=WHAT, line=number_, values=len(values),
                                   fields=len(names)))
    if last_value_cut(text, rows):
        raise SourceError(Text(N_("{what}: the last line is cut short (no line break after it, and its last value "
                                  "{value!r} is shaped unlike the line before's)"), what=WHAT,
                               value=printable(rows[-1][1][-1], 40)))
    node = node_readings()
    drivers = {v[names.index("driver_version")] for _, v in rows} if "driver_version" in names else set()
    drivers = {d for d in drivers if text_status(d) is None}
    if len(drivers) == 1:
        node.put("driver_version", printable(drivers.pop(), 100))
    elif drivers:
        notes.append(Text(N_("the devices report different driver versions: {versions}"),
                          versions=printable(", ".join(sorted(drivers)), 200)))
    node.put("gpu_count", len(rows))
    gpus: list[GpuInventory] = []
    samples: list[GpuSample] = []
    extras: list[dict[str, Any]] = []
    seen: set[str] = set()
    for position, (_, values) in enumerate(rows):
        row = dict(zip(names, values))
        index = position
        if "index" in row:
            idx, st = reading(row["index"], whole)
            if idx is None or not 0 <= idx < 1_000_000:
                raise SourceError(Text(N_("{what}: device row {row}: the index {index!r} is no index"), what=WHAT,
                                       row=position, index=printable(row["index"], 40)))
            index = idx
        inv, sample, extra = inventory_readings(), sample_readings(), {}
        inv.put("index", index)
        for field, value in row.items():
            if field in _INVENTORY:
                inv.read(_INVENTORY[field][0], value, _INVENTORY[field][1])
            if field in _SAMPLE:
                sample.read(_SAMPLE[field][0], value, _SAMPLE[field][1])
            if field in EXTRA_FIELDS or (field not in _INVENTORY and field not in _SAMPLE
                                         and field not in ("index", "driver_version", "timestamp")):
                got = _extra(field, value)
                if got is not None:
                    extra[EXTRA_FIELDS.get(field, field)] = got
        uuid = _identity(inv, index)
        if uuid in seen:
            raise SourceError(Text(N_("{what}: two device rows name the same device {device!r}"), what=WHAT,
                                   device=printable(uuid, 80)))
        seen.add(uuid)
        lost = sample.lost() or inv.lost()
        state = lost_state(lost)
        gpus.append(GpuInventory(uuid=uuid, index=index, name=str(inv.values.get("name") or "unknown"),
                                 values=inv.values, status=inv.status, state=state))
        samples.append(GpuSample(ts=0.0, uuid=uuid, index=index, values=sample.values, status=sample.status,
                                 state=state))
        extras.append(extra)
    if "uuid" not in names:
        notes.append(Text(N_("no uuid field: the devices are named by their serial, else by a placeholder")))
    return Capture(source=SOURCE, info=make_info("", node, SOURCE), gpus=gpus, samples=samples, ts=None,
                   notes=notes, vendor=VENDOR, extra=extras)


def _identity(inv: Readings, index: int) -> str:
    """The device's uuid: hl-smi's own, else its serial, else the documented placeholder."""
    for key in ("uuid", "serial"):
        value = inv.values.get(key)
        if isinstance(value, str) and value:
            inv.put("uuid", value)
            return value
    where = inv.values.get("pci_bus_id") or "hl-smi"
    uuid = placeholder_uuid(index, str(where), False)
    inv.put("uuid", uuid)
    return uuid


FORMATS: dict[str, tuple[Callable[[str], bool], Callable[[bytes | str], Capture]]] = {
    "hl-smi-csv": (detect_hl_smi, parse_hl_smi),
}
"""Format name → (detect from the content, parse), for ``fleetmon import --format``."""
