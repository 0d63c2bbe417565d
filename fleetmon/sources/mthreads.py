"""Moore Threads ``mthreads-gmi`` output (table, ``-q`` text, ``-q --json``) → a :class:`~fleetmon.sources.capture.Capture`.

mthreads-gmi (Moore Threads' management tool for the MTT S-series) prints three forms:

* **the default table** (``mthreads-gmi``): a date line, ``mthreads-gmi:<version>  Driver
  Version:<version>``, then a three-line record per GPU between ``+---+`` rules::

      0    MTT S5000            |00000000:2a:00.0    |0%    66641MiB(81920MiB)
           Physical      P0     |16x(16x)            |52C   YES
                                                     |      On-die, EDC

  index, name | bus id | utilisation, memory used(total); device type, P-state | lanes
  current(max) | temperature, MPC capable; ECC mode. Units are glued to the values and the
  memory pair overflows its column. It names no UUID or serial: the GPUs get the placeholder
  ``unknown-gpu-<index>-<bus id>`` and a note says so (as for nvidia-smi's table).
* **the query report** (``mthreads-gmi -q``): ``Title : value`` lines nested by indentation,
  one ``GPU …`` section per device, with the titles of the JSON form below;
* **JSON** (``mthreads-gmi -q --json``, mthreads-gmi 1.x and later): ``{"Timestamp", "Driver
  Version", "Attached GPUs", "GPU": [{"Index", "Product Name", "GPU UUID", "Serial Number",
  "MTBios Version", "PCI": {"Bus ID", "Device ID", "Vendor ID", "GPU Link Info": {...}},
  "FB Memory Usage": {"Total", "Used", "Free"}, "Utilization": {"Gpu", "Memory"},
  "Temperature": {"GPU Current Temp"}, "Power Readings": {"Power Draw", "Current Power Limit"},
  "Clocks": {"Graphics", ...}, ...}]}``, every value a string with its unit glued on
  (``"81920MiB"``, ``"27C"``, ``"96.66W"``); some versions write a key with a trailing space
  (``"Power Draw "``), so titles are matched trimmed and case-blind. Text before the JSON (a
  banner) is skipped with a note.

The report and the JSON map the same way (:data:`PATHS`: title path → fleetmon field):
``GPU UUID`` → ``uuid``, ``Serial Number`` → ``serial``, ``MTBios Version`` → ``vbios``, ``PCI/Bus
ID`` → ``pci_bus_id``, ``PCI/Device ID`` + ``Vendor ID`` → ``pci_device_id`` (``0x04001ED5``,
NVIDIA's device-then-vendor order), PCIe generation and width (current and max), memory total /
used / free, ``Utilization/Gpu`` / ``Memory`` → ``util_gpu_pct`` / ``util_mem_pct``, ``GPU Current
Temp`` → ``temp_c``, ``Memory Current Temp`` → ``mem_temp_c``, power draw and limits, ``Clocks/
Graphics`` → ``gr_clock_mhz`` and ``sm_clock_mhz`` (the one core clock), ``Clocks/Memory`` →
``mem_clock_mhz``, ``Max Clocks`` → the maxima, ``Performance State`` → ``pstate``.

``Capture.extra[i]`` (vendor readings without a fleetmon field): ``tool_version`` (mthreads-gmi's
own), ``device_type`` (``Physical`` or a virtual function), ``mpc_capable``, ``ecc_mode`` (the
table's text, e.g. ``On-die, EDC``), ``product_brand``, ``memory_type`` / ``memory_vendor`` /
``memory_bus_width`` (``FB Memory Spec``).

What mthreads-gmi cannot tell here (unsupported, never zero): ECC error counts, retired pages,
PCIe replays and throughput, throttle reasons, energy, temperature limits; the table also has no
UUID, serial, power or clocks. Checked against the fixture ``moore_threads/issue_vllm-omni-2337_
mthreads-gmi-2.3.2_mtt-s5000_excerpt.txt`` (table, 2 × MTT S5000); the ``-q`` and JSON forms
against test strings written from the documented key names (no public capture of them here).
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from fleetmon.i18n import N_, Text
from fleetmon.pci import normalize_bus_id
from fleetmon.records import GpuInventory, GpuSample, Status
from fleetmon.sources import SourceError
from fleetmon.sources.capture import (
    Capture, Readings, inventory_readings, lost_state, make_info, mib, node_readings, number, placeholder_uuid,
    pstate, reading, sample_readings, text_status, whole,
)
from fleetmon.sources.smi_xml import MAX_GPUS, parse_timestamp
from fleetmon.sources.tool_text import tool_text
from fleetmon.text import printable

__all__ = ["FORMATS", "JSON_SOURCE", "PATHS", "QUERY_SOURCE", "SOURCE", "detect_mthreads_json",
           "detect_mthreads_query", "detect_mthreads_table", "parse_mthreads", "parse_mthreads_json",
           "parse_mthreads_query", "parse_mthreads_table"]

SOURCE = "mthreads-gmi"
QUERY_SOURCE = "mthreads-gmi-q"
JSON_SOURCE = "mthreads-gmi-json"
VENDOR = "mthreads"
MAX_DEPTH = 8
"""Nesting of the report and the JSON (mthreads-gmi's is 4 levels deep)."""
# Parse errors said in two places each (the table and the -q report; the -q report and a GPU's JSON mapping).
_MORE_GPUS = N_("{what}: more than {limit} GPUs, more than one output may describe")
_TOO_DEEP = N_("{what}: nested more than {levels} levels deep")


def _watts(text: str) -> float:
    return round(number(text, "w"), 3)


def _degrees(text: str) -> float:
    return round(number(text, "c"), 1)


def _pct(text: str) -> int:
    return int(round(number(text, "%")))


def _mhz(text: str) -> int:
    return int(round(number(text, "mhz")))


def _gen(text: str) -> int:
    return whole(text.strip().lower().removeprefix("gen"))


def _width(text: str) -> int:
    m = re.fullmatch(r"\s*x?(\d{1,2})x?\s*", text, re.I)
    if m is None:
        raise ValueError(text[:64])
    return int(m.group(1))


def _ident(text: str) -> str:
    value = text.strip()
    if not value or len(value) > 128:
        raise ValueError(value[:64])
    return value


_Conv = Callable[[str], Any]
PATHS: dict[tuple[str, ...], tuple[str, str, _Conv]] = {
    ("product name",): ("inv", "name", _ident),
    ("gpu uuid",): ("inv", "uuid", _ident),
    ("serial number",): ("inv", "serial", _ident),
    ("mtbios version",): ("inv", "vbios", _ident),
    ("pci", "bus id"): ("inv", "pci_bus_id", normalize_bus_id),
    ("pci", "gpu link info", "pcie generation", "max"): ("inv", "pcie_max_gen", _gen),
    ("pci", "gpu link info", "pcie generation", "current"): ("sample", "pcie_gen", _gen),
    ("pci", "gpu link info", "link width", "max"): ("inv", "pcie_max_width", _width),
    ("pci", "gpu link info", "link width", "current"): ("sample", "pcie_width", _width),
    ("fb memory usage", "total"): ("inv", "memory_total_mib", mib),
    ("fb memory usage", "used"): ("sample", "mem_used_mib", mib),
    ("fb memory usage", "free"): ("sample", "mem_free_mib", mib),
    ("utilization", "gpu"): ("sample", "util_gpu_pct", _pct),
    ("utilization", "memory"): ("sample", "util_mem_pct", _pct),
    ("temperature", "gpu current temp"): ("sample", "temp_c", _degrees),
    ("temperature", "memory current temp"): ("sample", "mem_temp_c", _degrees),
    ("power readings", "power draw"): ("sample", "power_w", _watts),
    ("power readings", "current power limit"): ("sample", "power_limit_w", _watts),
    ("power readings", "default power limit"): ("inv", "power_default_w", _watts),
    ("power readings", "min power limit"): ("inv", "power_min_w", _watts),
    ("power readings", "max power limit"): ("inv", "power_max_w", _watts),
    ("clocks", "graphics"): ("sample", "gr_clock_mhz", _mhz),
    ("clocks", "memory"): ("sample", "mem_clock_mhz", _mhz),
    ("max clocks", "graphics"): ("inv", "max_sm_clock_mhz", _mhz),
    ("max clocks", "memory"): ("inv", "max_mem_clock_mhz", _mhz),
    ("performance state",): ("sample", "pstate", pstate),
}
"""Title path (trimmed, lower case) in the ``-q`` report and the JSON → (record, fleetmon field, conversion).
Besides: ``Clocks/Graphics`` also fills ``sm_clock_mhz``, ``Current Power Limit`` ``power_enforced_w``."""
_EXTRA_PATHS: dict[tuple[str, ...], str] = {
    ("product brand",): "product_brand", ("fb memory spec", "type"): "memory_type",
    ("fb memory spec", "vendor"): "memory_vendor", ("fb memory spec", "bus width"): "memory_bus_width",
}


# ---------------------------------------------------------------------------------------------- table

_TABLE_HEAD = re.compile(r"mthreads-gmi:\s*(?P<tool>\S+)\s+Driver Version:\s*(?P<driver>\S+)")
_LEAD = re.compile(r"(?P<index>\d{1,4})\s+(?P<name>.*)")
_PAIR = re.compile(r"(?P<now>[^()]+)\((?P<max>[^()]+)\)")


def detect_mthreads_table(text: str) -> bool:
    """The default table: the ``mthreads-gmi:<version>  Driver Version:<version>`` line."""
    return _TABLE_HEAD.search(text[:4096]) is not None


def parse_mthreads_table(data: bytes | str, max_gpus: int = MAX_GPUS) -> Capture:
    """Parse mthreads-gmi's default table (see the module docstring).

    Raises:
        SourceError: no ``mthreads-gmi:… Driver Version:…`` line, a record cut short (its first line
            without the second), more than ``max_gpus`` GPUs, or text
            :func:`~fleetmon.sources.tool_text.tool_text` refuses; one line.
    """
    what = "mthreads-gmi table"
    text = tool_text(data, what)
    head = _TABLE_HEAD.search(text)
    if head is None:
        raise SourceError(Text(N_("{what}: no 'mthreads-gmi:… Driver Version:…' line: not mthreads-gmi's table"),
                               what=what))
    lines = [ln.rstrip() for ln in text.split("\n")]
    first = next((ln.strip() for ln in lines if ln.strip()), "")
    ts = parse_timestamp(first) if not first.startswith(("-", "+", "|")) else None
    node = node_readings()
    node.put("driver_version", printable(head.group("driver"), 100))
    tool = printable(head.group("tool"), 100)
    records: list[tuple[dict[str, str], dict[str, str], str | None]] = []
    for i, line in enumerate(lines):
        r1 = _row1(line)
        if r1 is None:
            continue
        r2 = _row2(lines[i + 1]) if i + 1 < len(lines) else None
        if r2 is None:
            raise SourceError(Text(N_("{what}: GPU {gpu}'s record is cut short or garbled (line {line})"), what=what,
                                   gpu=r1["index"], line=i + 2))
        ecc = _row3(lines[i + 2]) if i + 2 < len(lines) else None
        records.append((r1, r2, ecc))
        if len(records) > max_gpus:
            raise SourceError(Text(_MORE_GPUS, what=what, limit=max_gpus))
    node.put("gpu_count", len(records))
    gpus: list[GpuInventory] = []
    samples: list[GpuSample] = []
    extras: list[dict[str, Any]] = []
    seen: set[int] = set()
    for r1d, r2d, ecc in records:
        index = int(r1d["index"])
        if index in seen:
            raise SourceError(Text(N_("{what}: GPU {gpu} is listed twice"), what=what, gpu=index))
        seen.add(index)
        inv, sample = inventory_readings(), sample_readings()
        inv.put("index", index)
        inv.read("name", r1d["name"] or None, _ident)
        inv.read("pci_bus_id", r1d["bus"] or None, normalize_bus_id)
        sample.read("util_gpu_pct", r1d["util"], _pct)
        used, total = _pair(r1d["mem"])
        sample.read("mem_used_mib", used, mib)
        inv.read("memory_total_mib", total, mib)
        sample.read("pstate", r2d["perf"], pstate)
        now, top = _pair(r2d["lanes"])
        sample.read("pcie_width", now, _width)
        inv.read("pcie_max_width", top, _width)
        sample.read("temp_c", r2d["temp"], _degrees)
        extra: dict[str, Any] = {"tool_version": tool, "device_type": printable(r2d["type"], 40),
                                 "mpc_capable": printable(r2d["mpc"], 40)}
        if ecc is not None and text_status(ecc) is None:
            extra["ecc_mode"] = printable(ecc, 80)
        where = inv.values.get("pci_bus_id") or "mthreads-gmi"
        uuid = placeholder_uuid(index, str(where), False)
        inv.put("uuid", uuid)
        _append(gpus, samples, extras, inv, sample, extra, uuid, index, ts)
    notes: list[str] = [f"mthreads-gmi {tool}",  # the tool's version: nothing to translate
                        Text(N_("mthreads-gmi's table gives no UUID or serial: the GPUs have placeholder UUIDs"))]
    if not records:
        notes.append(Text(N_("the table lists no GPU")))
    return Capture(source=SOURCE, info=make_info("", node, SOURCE), gpus=gpus, samples=samples, ts=ts,
                   notes=notes, vendor=VENDOR, extra=extras)


# The rows are split at their "|" first and the parts read with str.split(): no pattern backtracks
# over a long run of blanks (linear time on any line).
def _row1(line: str) -> dict[str, str] | None:
    """``0    MTT S5000   |00000000:2a:00.0   |0%    66641MiB(81920MiB)``."""
    parts = line.split("|")
    lead = _LEAD.fullmatch(parts[0].strip()) if len(parts) == 3 and line[:1].isdigit() else None
    values = parts[2].split() if lead is not None else []
    if lead is None or len(values) != 2:
        return None
    return {"index": lead.group("index"), "name": lead.group("name").strip(), "bus": parts[1].strip(),
            "util": values[0], "mem": values[1]}


def _row2(line: str) -> dict[str, str] | None:
    """``     Physical      P0     |16x(16x)            |52C   YES``."""
    parts = line.split("|")
    if len(parts) != 3 or not line[:1].isspace():
        return None
    first, third = parts[0].split(), parts[2].split()
    if len(first) != 2 or len(third) != 2:
        return None
    return {"type": first[0], "perf": first[1], "lanes": parts[1].strip(), "temp": third[0], "mpc": third[1]}


def _row3(line: str) -> str | None:
    """``                                 |      On-die, EDC``: the ECC mode text."""
    parts = line.split("|")
    if len(parts) != 2 or parts[0].strip() or not parts[1].strip():
        return None
    return parts[1].strip()


def _pair(text: str) -> tuple[str | None, str | None]:
    """``66641MiB(81920MiB)`` → (``66641MiB``, ``81920MiB``); a single value is the first."""
    m = _PAIR.fullmatch(text.strip())
    if m is None:
        return text, None
    return m.group("now"), m.group("max")


def _append(gpus: list[GpuInventory], samples: list[GpuSample], extras: list[dict[str, Any]], inv: Readings,
            sample: Readings, extra: dict[str, Any], uuid: str, index: int, ts: float | None) -> None:
    lost = sample.lost() or inv.lost()
    state = lost_state(lost)
    gpus.append(GpuInventory(uuid=uuid, index=index, name=str(inv.values.get("name") or "unknown"),
                             values=inv.values, status=inv.status, state=state))
    samples.append(GpuSample(ts=ts or 0.0, uuid=uuid, index=index, values=sample.values, status=sample.status,
                             state=state))
    extras.append(extra)


# ----------------------------------------------------------------------------- -q report and JSON

def _key(title: str) -> str:
    return " ".join(title.split()).lower()


def _flatten(node: dict[str, Any], what: str, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Title path → value of a GPU's mapping (values as given: text, a number, anything else)."""
    out: dict[tuple[str, ...], Any] = {}
    if len(path) >= MAX_DEPTH:
        raise SourceError(Text(_TOO_DEEP, what=what, levels=MAX_DEPTH))
    for title, value in node.items():
        here = path + (_key(str(title)),)
        if isinstance(value, dict):
            out.update(_flatten(value, what, here))
        else:
            out[here] = value
    return out


def _text_value(value: Any) -> str | None:
    """A JSON value as the text a reading converts: strings as they are, numbers written out; None for null.

    Any other type (a list, a mapping, true/false) is no reading: it comes back as text that no
    conversion takes, so the field is ``failed``, never a value."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "[wrong type]"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return value
    return "[wrong type]"


def _device_id(flat: dict[tuple[str, ...], Any]) -> str:
    device = _text_value(flat.get(("pci", "device id")))
    vendor = _text_value(flat.get(("pci", "vendor id")))
    if device is None:
        raise ValueError("no device id")
    dev = int(device, 16) if len(device) <= 10 else -1
    ven = int(vendor, 16) if vendor and text_status(vendor) is None and len(vendor) <= 10 else 0x1ED5
    if not (0 <= dev <= 0xFFFF and 0 <= ven <= 0xFFFF):
        raise ValueError(device[:64])
    return f"0x{dev:04X}{ven:04X}"


def _read_device_id(inv: Readings, flat: dict[tuple[str, ...], Any]) -> None:
    text = _text_value(flat.get(("pci", "device id")))
    if text is None:
        return
    st = text_status(text)
    if st is not None:
        inv.put("pci_device_id", None, st)
        return
    try:
        inv.put("pci_device_id", _device_id(flat))
    except ValueError:
        inv.put("pci_device_id", None, Status.FAILED)


def _document(top: dict[str, Any], gpu_list: Any, source: str, what: str, max_gpus: int,
              notes: list[str]) -> Capture:
    """Records from the report's or the JSON's structure: top-level titles and one mapping per GPU."""
    if not isinstance(gpu_list, list):
        raise SourceError(Text(N_("{what}: 'GPU' is no list of devices"), what=what))
    if len(gpu_list) > max_gpus:
        raise SourceError(Text(N_("{what}: {count} GPUs, more than the {limit} one output may describe"), what=what,
                               count=len(gpu_list), limit=max_gpus))
    flat_top = {_key(str(k)): v for k, v in top.items() if not isinstance(v, (dict, list))}
    node = node_readings()
    node.read("driver_version", _text_value(flat_top.get("driver version")), _ident)
    ts = parse_timestamp(_text_value(flat_top.get("timestamp")))
    attached = reading(_text_value(flat_top.get("attached gpus")), whole)[0]
    node.put("gpu_count", attached if attached is not None else len(gpu_list))
    if attached is not None and attached != len(gpu_list):
        notes.append(Text(N_("the output says {attached} GPUs are attached but describes {count}"), attached=attached,
                          count=len(gpu_list)))
    gpus: list[GpuInventory] = []
    samples: list[GpuSample] = []
    extras: list[dict[str, Any]] = []
    seen: set[str] = set()
    for position, entry in enumerate(gpu_list):
        if not isinstance(entry, dict):
            raise SourceError(Text(N_("{what}: GPU entry {position} is no mapping of titles"), what=what,
                                   position=position))
        flat = _flatten(entry, what)
        inv, sample = inventory_readings(), sample_readings()
        index = reading(_text_value(flat.get(("index",))), whole)[0]
        if index is None or not 0 <= index < 1_000_000:
            index = position
        inv.put("index", index)
        for path, (record, field, conv) in PATHS.items():
            if path in flat:
                (inv if record == "inv" else sample).read(field, _text_value(flat[path]), conv)
        if ("clocks", "graphics") in flat:
            sample.read("sm_clock_mhz", _text_value(flat[("clocks", "graphics")]), _mhz)
        if ("power readings", "current power limit") in flat:
            inv.read("power_enforced_w", _text_value(flat[("power readings", "current power limit")]), _watts)
        _read_device_id(inv, flat)
        extra: dict[str, Any] = {}
        for path, name in _EXTRA_PATHS.items():
            value = _text_value(flat.get(path))
            if value is not None and text_status(value) is None:
                extra[name] = printable(value, 80)
        uuid_value = inv.values.get("uuid")
        if isinstance(uuid_value, str) and uuid_value:
            uuid = uuid_value
        else:
            serial = inv.values.get("serial")
            uuid = serial if isinstance(serial, str) and serial else placeholder_uuid(
                index, str(inv.values.get("pci_bus_id") or "mthreads-gmi"), False)
            inv.put("uuid", uuid)
        if uuid in seen:
            raise SourceError(Text(N_("{what}: two GPUs name the same device {device!r}"), what=what,
                                   device=printable(uuid, 80)))
        seen.add(uuid)
        _append(gpus, samples, extras, inv, sample, extra, uuid, index, ts)
    return Capture(source=source, info=make_info("", node, source), gpus=gpus, samples=samples, ts=ts,
                   notes=notes, vendor=VENDOR, extra=extras)


_JSON_START = re.compile(r"^\s*\{", re.M)


def detect_mthreads_json(text: str) -> bool:
    """JSON whose top level has ``"GPU"`` and mthreads-gmi's titles (``"MTBios Version"`` or ``"MTT``)."""
    m = _JSON_START.search(text[:65536])
    if m is None:
        return False
    head = text[m.start():m.start() + 65536]
    return '"GPU"' in head and ('"MTBios Version"' in head or '"MTT' in head or "mthreads" in head.lower())


def parse_mthreads_json(data: bytes | str, max_gpus: int = MAX_GPUS) -> Capture:
    """Parse ``mthreads-gmi -q --json`` (see the module docstring); text before the ``{`` is skipped with a note.

    Raises:
        SourceError: not JSON, not an object with a ``GPU`` list, nested too deep, more than
            ``max_gpus`` GPUs, or text :func:`~fleetmon.sources.tool_text.tool_text` refuses; one line.
    """
    what = "mthreads-gmi JSON"
    text = tool_text(data, what, max_line_chars=None)
    m = _JSON_START.search(text)
    if m is None:
        raise SourceError(Text(N_("{what}: no JSON object in the output"), what=what))
    notes: list[str] = []
    if text[:m.start()].strip():
        notes.append(Text(N_("text before the JSON skipped: {text}"),
                          text=printable(" ".join(text[:m.start()].split()), 120)))
    try:
        doc = json.loads(text[m.start():])
    except json.JSONDecodeError as exc:
        # The JSON parser's own reason (exc.msg) stays English, as the other parsers' own reasons do.
        raise SourceError(Text(N_("{what}: not valid JSON ({error} at line {line} column {column}): a cut or garbled "
                                  "output"), what=what, error=exc.msg, line=exc.lineno, column=exc.colno)) from None
    except RecursionError:
        raise SourceError(Text(N_("{what}: nested too deep"), what=what)) from None
    except ValueError as exc:  # an integer longer than Python converts (sys.get_int_max_str_digits)
        raise SourceError(Text(N_("{what}: unreadable JSON ({error})"), what=what,
                               error=printable(str(exc), 120))) from None
    if not isinstance(doc, dict) or "GPU" not in doc:
        raise SourceError(Text(N_("{what}: the top level is no object with a 'GPU' list"), what=what))
    return _document(doc, doc["GPU"], JSON_SOURCE, what, max_gpus, notes)


_GPU_HEAD = re.compile(r"GPU(?:\s+(?P<id>\S+))?")


def detect_mthreads_query(text: str) -> bool:
    """The ``-q`` report: ``Driver Version :`` and ``MTBios Version :`` lines (mthreads-gmi's own title)."""
    head = text[:65536]
    return re.search(r"^\s*Driver Version\s*:", head, re.M) is not None and re.search(
        r"^\s*MTBios Version\s*:", head, re.M) is not None


def parse_mthreads_query(data: bytes | str, max_gpus: int = MAX_GPUS) -> Capture:
    """Parse ``mthreads-gmi -q``: ``Title : value`` lines nested by indentation, a ``GPU …`` line per device.

    Raises:
        SourceError: no ``Driver Version`` line, nested too deep, more than ``max_gpus`` GPUs, or
            text :func:`~fleetmon.sources.tool_text.tool_text` refuses; one line.
    """
    what = "mthreads-gmi -q report"
    text = tool_text(data, what)
    if re.search(r"^\s*Driver Version\s*:", text, re.M) is None:
        raise SourceError(Text(N_("{what}: no 'Driver Version :' line: not mthreads-gmi's -q report"), what=what))
    top: dict[str, Any] = {}
    gpu_list: list[dict[str, Any]] = []
    stack: list[tuple[int, dict[str, Any]]] = [(-1, top)]
    lines = text.split("\n")
    notes: list[str] = []
    if not text.endswith("\n") and ":" in lines[-1]:
        # The tool ends its report with a line break: without one the last value may be cut ("212.50W" as "21").
        notes.append(Text(N_("the report ends without a line break: its last line is not read ({line})"),
                          line=printable(lines[-1], 80)))
        lines = lines[:-1]
    for raw in lines:
        body = raw.strip()
        if not body or body.startswith(("=", "-", "+")):
            continue
        indent = len(raw) - len(raw.lstrip(" \t"))
        title, colon, value = body.partition(":")
        if indent == 0 and _GPU_HEAD.fullmatch(body):  # "GPU 00000000:12:00.0" (its colons are no title)
            if len(gpu_list) >= max_gpus:
                raise SourceError(Text(_MORE_GPUS, what=what, limit=max_gpus))
            section: dict[str, Any] = {}
            gpu_list.append(section)
            stack = [(-1, top), (0, section)]
            continue
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if colon and value.strip():
            parent[title.strip()] = value.strip()
        else:
            if len(stack) > MAX_DEPTH:
                raise SourceError(Text(_TOO_DEEP, what=what, levels=MAX_DEPTH))
            child: dict[str, Any] = {}
            parent[title.strip()] = child
            stack.append((indent, child))
    if not gpu_list:
        notes.append(Text(N_("the report lists no GPU")))
    return _document(top, gpu_list, QUERY_SOURCE, what, max_gpus, notes)


def parse_mthreads(data: bytes | str, max_gpus: int = MAX_GPUS) -> Capture:
    """Any of the three forms, told apart by content (JSON, the ``-q`` report, else the table)."""
    text = tool_text(data, "mthreads-gmi output", max_line_chars=None)  # the chosen parser checks its lines
    if detect_mthreads_json(text):
        return parse_mthreads_json(text, max_gpus)
    if detect_mthreads_query(text):
        return parse_mthreads_query(text, max_gpus)
    return parse_mthreads_table(text, max_gpus)


FORMATS: dict[str, tuple[Callable[[str], bool], Callable[[bytes | str], Capture]]] = {
    "mthreads-gmi": (detect_mthreads_table, parse_mthreads_table),
    "mthreads-gmi-q": (detect_mthreads_query, parse_mthreads_query),
    "mthreads-gmi-json": (detect_mthreads_json, parse_mthreads_json),
}
"""Format name → (detect from the content, parse), for ``fleetmon import --format``."""
