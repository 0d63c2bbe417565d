"""Intel ``xpu-smi dump`` CSV → a :class:`~fleetmon.sources.capture.Capture` (one sample per device).

``xpu-smi dump -d <ids> -m <metric ids> [-n N] [--date]`` (Intel XPU Manager, for Data Center GPU
Max / Flex and Arc cards) prints a header, then one row per device per interval::

    Timestamp, DeviceId, GPU Power (W), GPU Core Temperature (Celsius Degree), ...
    08:08:16.817,    0, 281.13, 35.50, ...

Each metric column's title carries its unit; the values are space-padded after ``, `` and ``N/A``
where the device cannot tell (utilisation on Max 1550, most metrics on a consumer Arc). The
timestamp is the time of day (``08:08:16.817``), or with ``--date`` (xpu-smi >= 1.2.36) an ISO
date-time (``2024-05-06T05:47:53.671``, the node's local time, no zone).

A dump is a time series; a fleetmon capture is one instant. Each device's sample is its **last
row** (the newest reading); the notes say how many rows and devices the dump held and its time
span. The capture time is the last row's when the dump has dates, else unknown (``ts`` None: the
importer stamps the import time).

Mapping (column title → fleetmon field; the titles are xpu-smi's, metric ids in brackets):

* ``GPU Utilization (%)`` [0] (``Average % utilization of all GPU Engines`` in newer releases)
  → ``util_gpu_pct``; ``GPU Power (W)`` [1] → ``power_w``; ``GPU Frequency (MHz)`` [2] →
  ``sm_clock_mhz`` (the GPU core clock); ``GPU Core Temperature (Celsius Degree)`` [3] →
  ``temp_c``; ``GPU Memory Temperature (Celsius Degree)`` [4] → ``mem_temp_c``;
  ``GPU Memory Bandwidth Utilization (%)`` [17] → ``util_mem_pct``; ``GPU Memory Used (MiB)``
  [18] → ``mem_used_mib``; ``GPU Memory Errors Correctable`` / ``Uncorrectable`` [29, 30] →
  ``ecc_corr_vol`` / ``ecc_unc_vol`` (xpu-smi counts other non-compute errors in them too).
* Into ``Capture.extra[i]`` (:data:`EXTRA_COLUMNS`): ``GPU Memory Utilization (%)`` [5] →
  ``mem_used_pct`` (memory *used* as a share of the total: 17.52 MiB on a 16 GB Arc A770 reads
  0.10 %, so it is no bandwidth figure), memory read/write throughput, energy, EU active/stall/
  idle, reset counter, programming/driver errors, cache errors, PCIe read/write, throttle
  reason, media engine frequency; any other column (per-engine utilisations such as
  ``3D Engine (%)``) under its own title. A reading that is ``N/A`` is absent. Always there:
  ``rows`` (the device's rows in the dump) and ``sample_time`` (its last row's timestamp, as written).

What a dump cannot tell (unsupported, never zero): the device's name, serial, UUID, PCI bus id,
memory total, driver and firmware versions, power limits, PCIe link, temperature limits
(``xpu-smi discovery`` and ``stats`` have those; not read here). The devices are named by the
documented placeholder ``unknown-gpu-<device id>-xpu-smi`` (stable per node). Per-tile dumps
(``-t``, a ``TileId`` column) are refused: a tile is no device. Checked against the three
xpu-smi fixtures in ../shared/fixtures/F_other_vendors/intel (6 × Max 1550, Arc A770, ``--date``).
"""

from __future__ import annotations

import re
import time
from typing import Any, Callable

from fleetmon.i18n import N_, Text
from fleetmon.records import GpuInventory, GpuSample
from fleetmon.sources import SourceError
from fleetmon.sources.capture import (
    Capture, inventory_readings, lost_state, make_info, mib, node_readings, number, placeholder_uuid, reading,
    sample_readings, text_status,
)
from fleetmon.sources.smi_xml import MAX_GPUS
from fleetmon.sources.tool_text import csv_rows, last_value_cut, tool_text
from fleetmon.text import printable

__all__ = ["EXTRA_COLUMNS", "FORMATS", "SAMPLE_COLUMNS", "SOURCE", "detect_xpu_smi", "parse_xpu_smi"]

SOURCE = "xpu-smi-csv"
WHAT = "xpu-smi dump"
VENDOR = "intel"


def _rounded(text: str) -> int:
    return int(round(number(text)))


def _watts(text: str) -> float:
    return round(number(text), 3)


def _degrees(text: str) -> float:
    """xpu-smi gives half degrees (``40.50``): kept to a tenth (the store keeps tenths), not rounded to whole."""
    return round(number(text), 1)


def _count(text: str) -> int:
    value = number(text)
    if value < 0 or value != int(value):
        raise ValueError(text[:64])
    return int(value)


SAMPLE_COLUMNS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "gpu utilization (%)": ("util_gpu_pct", _rounded),
    "average % utilization of all gpu engines": ("util_gpu_pct", _rounded),
    "gpu power (w)": ("power_w", _watts),
    "gpu frequency (mhz)": ("sm_clock_mhz", _rounded),
    "gpu core temperature (celsius degree)": ("temp_c", _degrees),
    "gpu memory temperature (celsius degree)": ("mem_temp_c", _degrees),
    "gpu memory bandwidth utilization (%)": ("util_mem_pct", _rounded),
    "gpu memory used (mib)": ("mem_used_mib", mib),
    "gpu memory errors correctable": ("ecc_corr_vol", _count),
    "gpu memory errors uncorrectable": ("ecc_unc_vol", _count),
}
"""Column title (lower case) → (sample field, conversion)."""

EXTRA_COLUMNS: dict[str, str] = {
    "gpu memory utilization (%)": "mem_used_pct",
    "gpu memory read (kb/s)": "mem_read_kbs", "gpu memory write (kb/s)": "mem_write_kbs",
    "gpu energy consumed (j)": "energy_j", "gpu eu array active (%)": "eu_active_pct",
    "gpu eu array stall (%)": "eu_stall_pct", "gpu eu array idle (%)": "eu_idle_pct",
    "reset counter": "reset_count", "programming errors": "programming_errors", "driver errors": "driver_errors",
    "cache errors correctable": "cache_errors_corr", "cache errors uncorrectable": "cache_errors_unc",
    "pcie read (kb/s)": "pcie_read_kbs", "pcie write (kb/s)": "pcie_write_kbs",
    "throttle reason": "throttle_reason", "media engine frequency (mhz)": "media_clock_mhz",
}
"""Column title (lower case) → the name of its reading in ``Capture.extra`` (other columns: their title)."""

_ISO = re.compile(r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?")
_TIME_OF_DAY = re.compile(r"\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?")
_DEVICE_ID = re.compile(r"\d{1,6}")


def _head(values: list[str]) -> bool:
    return len(values) >= 2 and values[0].lower() == "timestamp" and values[1].lower() == "deviceid"


def detect_xpu_smi(text: str) -> bool:
    """Whether ``text`` starts with xpu-smi dump's header (``Timestamp, DeviceId, …``)."""
    for line in text.lstrip("\ufeff").splitlines()[:3]:
        if line.strip():
            return _head([v.strip() for v in line.split(",")])
    return False


def _timestamp(text: str) -> float | None:
    """An ISO date-time as Unix seconds (the node's local time, read as this machine's); else None."""
    m = _ISO.fullmatch(text.strip())
    if m is None:
        return None
    try:
        whole_s = time.mktime(time.strptime(f"{m.group(1)} {m.group(2)}", "%Y-%m-%d %H:%M:%S"))
    except (ValueError, OverflowError):
        return None
    return whole_s + (float(f"0.{m.group(3)}") if m.group(3) else 0.0)


def _extra(title: str, text: str) -> Any:
    if text_status(text) is not None:
        return None
    if EXTRA_COLUMNS.get(title) == "throttle_reason":
        return printable(text, 200)
    value, _ = reading(text, number)
    return value if value is not None else printable(text, 200)


def parse_xpu_smi(data: bytes | str, max_gpus: int = MAX_GPUS) -> Capture:
    """Parse an ``xpu-smi dump`` CSV (see the module docstring): one sample per device, its last row.

    Raises:
        SourceError: no ``Timestamp, DeviceId`` header, a row with a different number of values than
            the header (a cut or garbled dump), a device id that is no number, a per-tile dump, a
            timestamp of neither form, more than ``max_gpus`` devices, or text
            :func:`~fleetmon.sources.tool_text.tool_text` refuses; one line.
    """
    text = tool_text(data, WHAT)
    rows = csv_rows(text)
    if not rows or not _head(rows[0][1]):
        raise SourceError(Text(N_("{what}: no 'Timestamp, DeviceId, …' header: not the output of xpu-smi dump"),
                               what=WHAT))
    shown = rows[0][1]
    titles = [t.lower() for t in shown]
    if any(t.replace(" ", "") in ("tileid", "tile") for t in titles):
        raise SourceError(Text(N_("{what}: a per-tile dump (TileId column); dump the devices without -t"), what=WHAT))
    if len(set(titles)) != len(titles):
        raise SourceError(Text(N_("{what}: a column title is given twice"), what=WHAT))
    last: dict[int, list[str]] = {}
    count: dict[int, int] = {}
    first_stamp = last_stamp = ""
    for line, values in rows[1:]:
        if len(values) != len(titles):
            raise SourceError(Text(N_("{what}: line {line} has {values} values where the header has {titles}: "
                                      "a cut or garbled dump"), what=WHAT, line=line, values=len(values),
                                   titles=len(titles)))
        stamp, device = values[0], values[1]
        if not _DEVICE_ID.fullmatch(device):
            raise SourceError(Text(N_("{what}: line {line}: the device id {device!r} is no number"), what=WHAT,
                                   line=line, device=printable(device, 40)))
        if _ISO.fullmatch(stamp) is None and _TIME_OF_DAY.fullmatch(stamp) is None:
            raise SourceError(Text(N_("{what}: line {line}: the timestamp {stamp!r} is neither a time of day nor an "
                                      "ISO date-time"), what=WHAT, line=line, stamp=printable(stamp, 40)))
        dev = int(device)
        if dev not in last and len(last) >= max_gpus:
            raise SourceError(Text(N_("{what}: more than {limit} devices, more than one output may describe"),
                                   what=WHAT, limit=max_gpus))
        last[dev] = values
        count[dev] = count.get(dev, 0) + 1
        first_stamp = first_stamp or stamp
        last_stamp = stamp
    if not last:
        raise SourceError(Text(N_("{what}: the dump has a header but no rows"), what=WHAT))
    if last_value_cut(text, rows[1:]):
        raise SourceError(Text(N_("{what}: the last line is cut short (no line break after it, and its last value "
                                  "{value!r} is shaped unlike the line before's)"), what=WHAT,
                               value=printable(rows[-1][1][-1], 40)))
    notes: list[str] = [Text(N_("{rows} rows for {devices} device(s) from {first} to {last}; each device's sample is "
                                "its last row"), rows=len(rows) - 1, devices=len(last), first=first_stamp,
                             last=last_stamp)]
    ts = _timestamp(last_stamp)
    if ts is None:
        notes.append(Text(N_("the dump gives the time of day only (no --date): the capture time is unknown")))
    unmapped = [s for s, t in zip(shown[2:], titles[2:]) if t not in SAMPLE_COLUMNS and t not in EXTRA_COLUMNS]
    if unmapped:
        notes.append(Text(N_("columns kept in extra under their titles: {columns}"),
                          columns=printable(", ".join(unmapped), 200)))
    notes.append(Text(N_("xpu-smi dump names no model, serial, UUID or bus id: the devices have placeholder UUIDs")))
    node = node_readings()
    node.put("gpu_count", len(last))
    gpus: list[GpuInventory] = []
    samples: list[GpuSample] = []
    extras: list[dict[str, Any]] = []
    for dev, values in last.items():
        inv, sample, extra = inventory_readings(), sample_readings(), {}
        inv.put("index", dev)
        for title, as_shown, value in zip(titles[2:], shown[2:], values[2:]):
            if title in SAMPLE_COLUMNS:
                field, conv = SAMPLE_COLUMNS[title]
                sample.read(field, value, conv)
            else:
                got = _extra(title, value)
                if got is not None:
                    extra[EXTRA_COLUMNS.get(title, printable(as_shown, 80))] = got
        extra["rows"] = count[dev]
        extra["sample_time"] = values[0]
        uuid = placeholder_uuid(dev, "xpu-smi", False)
        inv.put("uuid", uuid)
        state = lost_state(sample.lost())
        gpus.append(GpuInventory(uuid=uuid, index=dev, name="unknown", values=inv.values, status=inv.status,
                                 state=state))
        samples.append(GpuSample(ts=ts or 0.0, uuid=uuid, index=dev, values=sample.values, status=sample.status,
                                 state=state))
        extras.append(extra)
    return Capture(source=SOURCE, info=make_info("", node, SOURCE), gpus=gpus, samples=samples, ts=ts,
                   notes=notes, vendor=VENDOR, extra=extras)


FORMATS: dict[str, tuple[Callable[[str], bool], Callable[[bytes | str], Capture]]] = {
    "xpu-smi-csv": (detect_xpu_smi, parse_xpu_smi),
}
"""Format name → (detect from the content, parse), for ``fleetmon import --format``."""
