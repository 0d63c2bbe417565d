"""AMD (amd-smi, rocm-smi, rocminfo) and Hygon DCU (hy-smi, Hygon's rocm-smi) output → a :class:`Capture`.

What each format is and what it holds (checked against ../shared/fixtures/F_other_vendors/amd and
.../hygon; PROVENANCE.md section F lists their quirks):

* ``amd-smi static --json`` / ``amd-smi metric --json`` (:func:`parse_amd_smi_json`): one object per
  GPU (a GCD or a partition is a GPU of its own, as the tool lists it), either a bare list (ROCm 6)
  or ``{"gpu_data": [...]}`` (ROCm 7); readings are ``{"value": 300, "unit": "W"}`` objects, plain
  numbers, or strings (``"N/A"``, ``"False"``, ``"AMDSMI_STATUS_… - …"`` error texts); a permission
  banner may precede the JSON. Static and metric come as separate documents: parse each and merge
  them with :func:`combine` (matched by PCI bus id, else by the tool's GPU index). The same function
  reads ``amd-smi xgmi -m --json`` (the link matrix goes into ``extra["xgmi"]``) and ``amd-smi
  version --json`` (no devices: the node's amdgpu version, the ROCm version in the notes).
* ``amd-smi static`` / ``amd-smi metric`` text (:func:`parse_amd_smi_text`): the same tree as indented
  ``KEY: value`` lines; one capture's degree sign is a Latin-1 byte (the file is not UTF-8).
* ``amd-smi metric --csv`` (:func:`parse_amd_smi_csv`): Windows writes it as UTF-16LE with a BOM and
  CRLF, and leaves lists unquoted (``[0, 0]`` splits into two fields under one header).
* ``rocm-smi --showallinfo --json`` and other rocm-smi flag sets, ROCm 4.3 to 6.2
  (:func:`parse_rocm_smi_json`): ``{"card0": {...}, "system": {...}}``, every value a string; keys
  drift ("GPU ID" → "Device ID", "Card series" → "Card Series", "GPU memory use (%)" → "GPU Memory
  Read/Write Activity (%)"), "N/A (Secondary die)" on the second die of a multi-die card.
* Hygon's ``hy-smi --json`` and its rocm-smi (same function, ``vendor="hygon"``): "DCU use (%)" or
  "HCU use (%)", memory in "(MiB)" with lower-case "vram", "Temperature (Sensor core)". A Hygon
  document is known by those keys, not by its "Card Vendor" text (one host says "Chengdu C-3000").
* rocm-smi / hy-smi text (:func:`parse_rocm_smi_text`): ``GPU[0] : Key: value`` lines (``DCU[0]`` on
  Hygon; an empty "Card Series" is a name the tool did not give), and the default concise table
  (one row per GCD: temperature, average power, clocks, fan, power cap, VRAM%, GPU%; no ids).
* ``rocminfo`` (:func:`parse_rocminfo`): the HSA agent list. Only the GPU/DCU agents' identity
  (marketing name, gfx target, unique id, PCI device id, compute units, memory pool size, maximum
  clock); no live reading at all, so every sample field is unsupported.

Identity: ``uuid`` is ``GPU-<unique id as 16 lowercase hex digits>``, the spelling rocminfo prints,
so rocminfo, rocm-smi ("Unique ID"), amd-smi ("asic_serial") and hy-smi name one device alike.
The compute partitions of one GPU (MI300X in CPX mode), which share its unique id, are
``GPU-<unique id>-p<partition id>``. Where the tool gives no unique id (``N/A``: consumer cards, ROCm 5.7 MI100), the agent's placeholder
``unknown-gpu-<index>-<bus id>`` stands in (stable per slot, not per card). ``serial`` is the board
serial (``"0"`` is rocm-smi's placeholder, not a serial: unsupported).

Temperatures: ``temp_c`` is the junction (hotspot) sensor where the source has it, else the edge
sensor; ``extra["temp_sensor"]`` names which (``"junction"`` or ``"edge"``), and the limits in
``temp_slowdown_c``/``temp_shutdown_c`` are the same sensor's. ``mem_temp_c`` is the memory (HBM/VRAM)
sensor. AMD's ECC counts (RAS, kept by the driver since it loaded) fill ``ecc_corr_vol`` /
``ecc_unc_vol``.

Vendor readings without a catalog field go into ``Capture.extra[i]`` under these names (a reading
the tool did not give is absent, never zero):
``temp_sensor``, ``temp_edge_c``, ``temp_junction_c``, ``temp_hbm_c`` (list), ``temp_core_c`` (Hygon),
``ecc_deferred``, ``ecc_cache_corr``, ``ecc_cache_unc``, ``ecc_blocks`` ({block: {"correctable",
"uncorrectable", "deferred"}}), ``ecc_block_state`` ({block: "ENABLED"/"DISABLED"}),
``bad_page_threshold``, ``bad_page_threshold_exceeded``, ``ras_schema`` ({"parity", "single_bit",
"double_bit", "poison"}), ``throttle_status``, ``throttle_violation_pct`` and ``throttle_violation_active`` ({"prochot", "ppt",
"socket_thermal", "vr_thermal", "hbm_thermal", …}: amd-smi's throttle violations), ``pcie_l0_recovery``, ``pcie_replay_rollover``,
``pcie_nak_sent``, ``pcie_nak_received``, ``pcie_bandwidth_mbps``, ``gfx_clocks_mhz`` (list, one per
XCD), ``gfx_target``, ``compute_units``, ``oam_id``, ``device_id``, ``device_rev``, ``subsystem_id``,
``sku``, ``vbios_part_number``, ``vbios_build_date``, ``fru_id``, ``vram_type``, ``vram_vendor``,
``card_vendor``, ``temp_mem_slowdown_c``, ``temp_mem_shutdown_c``, ``numa_node``, ``partition`` ({"compute", "memory", "id"}), ``voltage_mv``, ``fan_rpm``,
``perf_level``, ``xgmi_error`` (rocm-smi's count 0/1/2, amd-smi's status text), ``vram_allocated_pct``, ``mem_usage_pct`` (Windows CSV's ``mem_usage``, meaning not
documented), ``firmware`` ({name: version}), ``secondary_die`` (True on a GCD that reports its power on
its sibling), ``bdfid`` (rocminfo), ``xgmi`` ({"bit_rate_gbps", "max_bandwidth_gbps", "link_type",
"links": {peer bus id: {"read_kb", "write_kb"}}}).

Every parser is bounded (:data:`MAX_BYTES`, :data:`MAX_DEVICES`, :data:`MAX_LINES`,
:data:`MAX_DEPTH`) and ends in :class:`~fleetmon.sources.SourceError` with a one-line reason on
input it cannot use; a value of the wrong type or with control characters is a failed reading of
that field, never a wrong value. :data:`FORMATS` names each format with its detector and parser
(for ``fleetmon import --format``). Stdlib only.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from fleetmon.i18n import N_, Joined, Text
from fleetmon.pci import normalize_bus_id
from fleetmon.records import GpuInventory, GpuSample, Status
from fleetmon.sources import SourceError
from fleetmon.sources.capture import (
    SAMPLE_FIELDS, Capture, Readings, inventory_readings, lost_state, make_info, mib, node_readings, number,
    placeholder_uuid, sample_readings, text_status, watts, whole,
)
from fleetmon.text import one_line, printable

__all__ = ["FORMATS", "MAX_BYTES", "MAX_DEVICES", "combine", "decode", "parse_amd_smi_csv", "parse_amd_smi_json",
           "parse_amd_smi_text", "parse_rocm_smi_json", "parse_rocm_smi_text", "parse_rocminfo"]

MAX_BYTES = 16 * 1024 * 1024
"""A larger document is refused (an 8-GPU MI300X ``amd-smi static --json`` is 104 KB)."""
MAX_DEVICES = 1024
"""Devices one document may list (an 8-GPU node in CPX mode lists 64 partitions); the collector and the
importer then apply their own per-node limit. Counted before any device is read."""
MAX_LINES = 250_000
"""Lines of a text document (an 8-GPU ``amd-smi metric`` is 1,167)."""
MAX_LINE_CHARS = 4096
MAX_DEPTH = 16
"""Nesting of a JSON document (amd-smi's deepest: 6)."""

_AMD_VENDOR_ID = 0x1002
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""Control characters and bidirectional overrides (fleetmon.text's set): a value holding one is a failed reading."""
_PLACEHOLDER = re.compile(r"<[^<>]{0,40}>")  # "<redacted>": a poster's redaction, no value
_GT_S_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
"""PCIe transfer rate per lane → generation."""
_ARCHITECTURES = {"gfx900": "gcn5", "gfx906": "gcn5", "gfx908": "cdna", "gfx90a": "cdna2", "gfx940": "cdna3",
                  "gfx941": "cdna3", "gfx942": "cdna3", "gfx950": "cdna4", "gfx1030": "rdna2", "gfx1031": "rdna2",
                  "gfx1032": "rdna2", "gfx1100": "rdna3", "gfx1101": "rdna3", "gfx1102": "rdna3", "gfx1200": "rdna4",
                  "gfx1201": "rdna4"}
"""LLVM gfx targets → architecture; a target not listed (Hygon's gfx928, rocm-smi's "gfx11001") leaves the
architecture unsupported and keeps the target in ``extra["gfx_target"]``."""


def _error(what: str, reason: str) -> SourceError:
    """``what: reason`` as one line (runs of spaces folded, cut to 200 characters); a reason made as an
    :class:`~fleetmon.i18n.Text` is said in the reader's language where the CLI prints it (:func:`one_line`
    keeps it one unless its inserted text had to be cut: then the one-line English as before)."""
    shown = one_line(reason, 200)
    return SourceError(Text(N_("{what}: {error}"), what=what, error=shown) if isinstance(shown, Text)
                       else f"{what}: {shown}")


# ---------------------------------------------------------------------------------------------------------------
# Decoding and bounds


def decode(data: bytes | str, what: str = "AMD tool output") -> str:
    """The text of a document: UTF-16 with a BOM (Windows amd-smi), UTF-8 (with or without BOM), else Latin-1
    (amd-smi's text output writes the degree sign as the byte 0xB0). A ``str`` that is UTF-16 read as Latin-1
    (NUL between the letters) is decoded again. Raises SourceError past :data:`MAX_BYTES`."""
    if isinstance(data, str):
        if len(data) > MAX_BYTES:
            raise _error(what, Text(N_("{count} characters, more than the {limit} a document may have"),
                                     count=len(data), limit=MAX_BYTES))
        if "\x00" in data[:64]:
            try:
                data = data.encode("latin-1")
            except UnicodeEncodeError:
                raise _error(what, Text(N_("NUL characters in the text (UTF-16 read as something else?)"))) from None
        else:
            return data.removeprefix("\ufeff")
    if len(data) > MAX_BYTES:
        raise _error(what, Text(N_("{count} bytes, more than the {limit} a document may have"), count=len(data),
                                 limit=MAX_BYTES))
    try:
        if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
            return data.decode("utf-16")
        if len(data) >= 4 and data[1:4:2] == b"\x00\x00" and data[0] != 0:  # UTF-16LE without a BOM
            return data.decode("utf-16-le")
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if data[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in data[:64]:
            raise _error(what, Text(N_("not valid UTF-16 ({error})"), error=exc.reason)) from None
        return data.decode("latin-1")


_JSON_START = re.compile(r"^[\[{]", re.M)
_JSON_TRIES = 8


def _json_starts(text: str) -> list[int]:
    """Where the JSON may start: the text's first non-blank character if it is ``{`` or ``[``, then the lines that
    begin with one (at the margin: a pretty-printed document's inner objects are indented); a banner before it,
    such as amd-smi's permission notice or a "[WARNING] …" line, is text. At most :data:`_JSON_TRIES`."""
    lead = len(text) - len(text.lstrip())
    starts: list[int] = [lead] if text[lead:lead + 1] in ("{", "[") else []
    for m in _JSON_START.finditer(text):
        if m.start() in starts:
            continue
        starts.append(m.end() - 1)
        if len(starts) >= _JSON_TRIES:
            break
    return starts


def _json(text: str, what: str) -> Any:
    """The JSON value in ``text``, after any text banner (see :func:`_json_starts`); text after it is ignored."""
    starts = _json_starts(text)
    if not starts:
        raise _error(what, Text(N_("no JSON object or list in the text")))
    decoder = json.JSONDecoder()
    failure = ""
    for start in starts:
        try:
            value = decoder.raw_decode(text, start)[0]
        except RecursionError:
            raise _error(what, _too_deep()) from None
        except json.JSONDecodeError as exc:
            invalid = Text(N_("not valid JSON ({error} at line {line} column {column}; truncated?)"),
                           error=exc.msg, line=exc.lineno, column=exc.colno)
            failure = failure or invalid
            line_end = text.find("\n", start)
            if line_end < 0 or exc.pos > line_end:  # past its first line: a JSON document, broken (cut)
                raise _error(what, invalid) from None
            continue
        except ValueError as exc:  # an integer of more than 4,300 digits
            raise _error(what, Text(N_("not usable JSON ({error})"), error=str(exc))) from None
        _check_depth(value, what)
        return value
    raise _error(what, failure)


def _too_deep() -> Text:
    return Text(N_("nested deeper than {depth} levels"), depth=MAX_DEPTH)


def _check_depth(value: Any, what: str) -> None:
    level = [value]
    for _ in range(MAX_DEPTH):
        level = [c for v in level for c in (v.values() if isinstance(v, dict) else v if isinstance(v, list) else ())]
        if not level:
            return
    raise _error(what, _too_deep())


_CUT_NOTE = N_("the last line has no line end (the output was cut?): it is not used")


def _lines(text: str, what: str, notes: list[str] | None = None) -> list[str]:
    """The document's lines (longer than :data:`MAX_LINE_CHARS`: skipped). With ``notes``, a last line without a
    line end is dropped (a tool ends its output with one; a cut line could hold a cut number) and noted."""
    if text.count("\n") > MAX_LINES:
        raise _error(what, Text(N_("more than {limit} lines"), limit=MAX_LINES))
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        raise _error(what, Text(N_("more than {limit} lines"), limit=MAX_LINES))
    if notes is not None and lines and not text.endswith(("\n", "\r")) and lines[-1].strip():
        lines.pop()
        notes.append(Text(_CUT_NOTE))
    return [ln for ln in lines if len(ln) <= MAX_LINE_CHARS]


def _count_devices(n: int, what: str) -> None:
    if n > MAX_DEVICES:
        raise _error(what, Text(N_("{count} devices in one document, more than the {limit} one may list"), count=n,
                                limit=MAX_DEVICES))


# ---------------------------------------------------------------------------------------------------------------
# Values


def _text(raw: Any) -> tuple[str | None, Status | None]:
    """A document value as text to convert, or the status it stands for.

    ``{"value": v, "unit": u}`` → ``"v u"``; numbers → their text; ``"N/A"``, ``"N/A (Secondary die)"``,
    ``"<redacted>"``, amd-smi's ``AMDSMI_STATUS_NOT_SUPPORTED`` → unsupported; other ``AMDSMI_STATUS_*``
    texts, booleans, lists, objects and text with control characters → failed."""
    if raw is None:
        return None, Status.UNSUPPORTED
    if isinstance(raw, dict) and "value" in raw:
        value, unit = raw.get("value"), raw.get("unit", "")
        text, st = _text(value)
        if text is None or not isinstance(unit, str):
            return None, st or Status.FAILED
        return f"{text} {unit}".strip(), None
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        return None, Status.FAILED
    if not isinstance(raw, str):
        return (repr(raw), None) if raw == raw and abs(raw) != float("inf") else (None, Status.FAILED)
    text = raw.strip()
    if _CONTROL.search(text):
        return None, Status.FAILED
    low = text.lower()
    if low.startswith("n/a") or _PLACEHOLDER.fullmatch(text) or "not_supported" in low or "not supported" in low:
        return None, Status.UNSUPPORTED
    if low.startswith("amdsmi_status") or low.startswith("error"):
        return None, Status.FAILED
    st = text_status(text)
    if st is not None:
        return None, st
    return text, None


class _NoValue(ValueError):
    """The tool's own way of saying "none" (a serial of "0", a power cap of 0 W): unsupported, not failed."""


def _convert(raw: Any, conv: Callable[[str], Any]) -> tuple[Any, Status]:
    text, st = _text(raw)
    if text is None:
        return None, st or Status.UNSUPPORTED
    try:
        return conv(text), Status.OK
    except _NoValue:
        return None, Status.UNSUPPORTED
    except (ValueError, ArithmeticError):
        return None, Status.FAILED


def _put(r: Readings, name: str, raw: Any, conv: Callable[[str], Any]) -> Any:
    value, st = _convert(raw, conv)
    r.put(name, value, st)
    return value


def _val(raw: Any, conv: Callable[[str], Any]) -> Any:
    """The converted value, or None (for ``extra``, where only values go)."""
    return _convert(raw, conv)[0]


def _clean(text: str) -> str:
    """``"(1402Mhz)"`` → ``"1402Mhz"``; ``"38 °C"`` → ``"38 C"``."""
    return text.strip().strip("()").replace("°", "").replace("\xb0", "").strip()


def _celsius(text: str) -> float:
    return round(number(_clean(text), None), 1) if _unit(text) in ("", "c") else _bad(text)


def _mhz(text: str) -> int:
    return int(round(number(_clean(text)))) if _unit(text) in ("", "mhz") else _bad(text)


def _pct(text: str) -> float:
    value = number(_clean(text).rstrip("%").strip())
    if not 0 <= value <= 100:
        raise ValueError(text)
    return round(value, 1)


def _count(text: str) -> int:
    value = whole(text)
    if value < 0:
        raise ValueError(text)
    return value


def _cap_w(text: str) -> float:
    """A power cap; 0 W is no cap (rocm-smi's PwrCap of a secondary die), so no reading."""
    value = watts(_clean(text))
    if value <= 0:
        raise _NoValue(text)
    return value


def _power_w(text: str) -> float:
    value = watts(_clean(text))
    if value < 0:
        raise ValueError(text)
    return value


def _bytes_mib(text: str) -> int:
    if not text.isdigit() or len(text) > 20:
        raise ValueError(text)
    return int(text) // (1024 * 1024)


def _mib(text: str) -> int:
    value = mib(_clean(text))
    if value < 0:
        raise ValueError(text)
    return value


def _energy_mj(text: str) -> float:
    unit = _unit(text)
    factor = {"uj": 0.001, "mj": 1.0, "j": 1000.0}.get(unit)
    if factor is None:
        raise ValueError(text)
    return round(number(text) * factor, 3)


def _unit(text: str) -> str:
    m = re.search(r"[A-Za-z%/]+\s*$", _clean(text))
    return m.group().strip().lower() if m else ""


def _bad(text: str) -> Any:
    raise ValueError(text)


def _name(text: str) -> str:
    if not text or len(text) > 256:
        raise ValueError(text)
    return text


def _serial(text: str) -> str:
    """A board serial; rocm-smi's "0" is its placeholder for none."""
    if text.strip("0") == "":
        raise _NoValue(text)
    if len(text) > 128:
        raise ValueError(text)
    return text


_HEX_ID = re.compile(r"(?:0x)?([0-9A-Fa-f]{1,16})")


def _unique(text: str) -> str:
    """``0x5c88007d760374f3`` / ``7137d9b2a08a4841`` / ``GPU-5c88…`` → ``GPU-5c88007d760374f3``."""
    m = _HEX_ID.fullmatch(text.strip().removeprefix("GPU-"))
    if m is None or int(m.group(1), 16) == 0:
        raise ValueError(text)
    return f"GPU-{int(m.group(1), 16):016x}"


def _hex16(text: str) -> int:
    m = _HEX_ID.fullmatch(text.strip())
    if m is None or not text.strip().lower().startswith("0x") or int(m.group(1), 16) > 0xFFFF:
        raise ValueError(text)
    return int(m.group(1), 16)


def _bus(text: str) -> str:
    bus = normalize_bus_id(text)
    if not re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]", bus):
        raise ValueError(text)
    return bus


def _gen(text: str) -> int:
    """``"32 GT/s"`` / ``"16.0GT/s"`` → PCIe generation; ``"Gen 5"`` too."""
    t = _clean(text)
    m = re.fullmatch(r"[Gg]en\s*(\d)", t)
    if m:
        return int(m.group(1))
    rate = number(t.replace(" ", ""), "gt/s") if "gt/s" in t.lower() else _bad(text)
    if rate not in _GT_S_GEN:
        raise ValueError(text)
    return _GT_S_GEN[rate]


_PCIE_LEVEL = re.compile(r"\s*(?:\d+\s*)?\(?\s*(\d+(?:\.\d+)?)\s*GT/s\s*x(\d{1,2})\s*\*?\s*\)?\s*")


def _pcie_level(text: str) -> tuple[int, int]:
    """rocm-smi's ``"1 (16.0GT/s x16)"`` → (generation 4, width 16)."""
    m = _PCIE_LEVEL.fullmatch(text)
    if m is None or float(m.group(1)) not in _GT_S_GEN:
        raise ValueError(text)
    return _GT_S_GEN[float(m.group(1))], int(m.group(2))


def _flag_text(text: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "yes", "enabled", "active"):
        return True
    if low in ("false", "no", "disabled", "not active"):
        return False
    raise ValueError(text)


def _name_ok(key: str) -> bool:
    """A document key fit to be a name in ``extra`` (a block or firmware name): short, no control characters."""
    return len(key) <= 64 and not _CONTROL.search(key)


def _str(text: str) -> str:
    if len(text) > 256:
        raise ValueError(text[:64])
    return text


def _architecture(gfx: str | None) -> str | None:
    return _ARCHITECTURES.get((gfx or "").strip().lower())


# ---------------------------------------------------------------------------------------------------------------
# One device as it is being read


@dataclass
class _Dev:
    index: int
    inv: Readings = field(default_factory=inventory_readings)
    sample: Readings = field(default_factory=sample_readings)
    extra: dict[str, Any] = field(default_factory=dict)

    def keep(self, name: str, value: Any) -> None:
        """An extra reading, when there is one (None, "" and {} are none)."""
        if value is not None and value != "" and value != {} and value != []:
            self.extra[name] = value


def _pci_device_id(dev: _Dev, device: Any, vendor: int | None, subsystem: Any = None,
                   subvendor: int | None = None) -> None:
    """NVML's spelling of PCI ids, ``0x<device><vendor>`` (``0x74A11002``), where the vendor id is known."""
    dev_id = _val(device, _hex16)
    if dev_id is not None:
        dev.keep("device_id", f"0x{dev_id:04x}")
        if vendor is not None:
            dev.inv.put("pci_device_id", f"0x{dev_id:04X}{vendor:04X}")
    else:
        _put(dev.inv, "pci_device_id", device, _hex16)  # placeholder or no id: its status
    sub = _val(subsystem, _hex16)
    if sub is not None:
        dev.keep("subsystem_id", f"0x{sub:04x}")
        if subvendor is not None:
            dev.inv.put("pci_subsystem_id", f"0x{sub:04X}{subvendor:04X}")


def _pick_temp(dev: _Dev, edge: Any, junction: Any, memory: Any) -> None:
    e = _val(edge, _celsius)
    j = _val(junction, _celsius)
    dev.keep("temp_edge_c", e)
    dev.keep("temp_junction_c", j)
    if j is not None:
        dev.sample.put("temp_c", j)
        dev.extra["temp_sensor"] = "junction"
    elif e is not None:
        dev.sample.put("temp_c", e)
        dev.extra["temp_sensor"] = "edge"
    else:  # the more telling status of the two
        _put(dev.sample, "temp_c", junction if _text(junction)[1] == Status.FAILED else edge, _celsius)
    _put(dev.sample, "mem_temp_c", memory, _celsius)


def _mem_free(dev: _Dev, total: int | None) -> None:
    used = dev.sample.values.get("mem_used_mib")
    if total is not None and used is not None and dev.sample.values.get("mem_free_mib") is None and used <= total:
        dev.sample.put("mem_free_mib", total - used)


def _partition_uuids(devs: list[_Dev]) -> None:
    """The partitions of one GPU (MI300X in CPX mode: up to 8 devices with one unique id) get
    ``GPU-<unique id>-p<partition id>`` (else ``-p<n>``, n counting that GPU's devices in the tool's order)."""
    by_uid: dict[str, list[_Dev]] = {}
    for dev in devs:
        uid = dev.inv.values.get("uuid")
        if isinstance(uid, str) and uid.startswith("GPU-"):
            by_uid.setdefault(uid, []).append(dev)
    for uid, group in by_uid.items():
        if len(group) < 2:
            continue
        ids = [str(d.extra.get("partition", {}).get("id", "")) for d in group]
        if not all(i.isdigit() for i in ids) or len(set(ids)) != len(ids):
            ids = [str(n) for n in range(len(group))]
        for dev, pid in zip(group, ids):
            dev.inv.put("uuid", f"{uid}-p{pid}")


def _capture(devs: list[_Dev], source: str, vendor: str, node: Readings, notes: list[str]) -> Capture:
    """The records of the devices read; the uuid of each is settled here (see the module docstring)."""
    gpus: list[GpuInventory] = []
    samples: list[GpuSample] = []
    extra: list[dict[str, Any]] = []
    seen: set[str] = set()
    _partition_uuids(devs)
    for pos, dev in enumerate(devs):
        dev.inv.put("index", pos)
        lost = dev.sample.lost()
        if lost:
            dev.sample.mark_lost(SAMPLE_FIELDS)
        uuid = dev.inv.values.get("uuid")
        if not isinstance(uuid, str) or uuid in seen:
            if isinstance(uuid, str):
                notes.append(Text(N_("device {pos}: unique id {uuid} repeats an earlier device's; not used"), pos=pos,
                                  uuid=uuid))
            uuid = placeholder_uuid(pos, str(dev.inv.values.get("pci_bus_id") or "capture"), lost)
            dev.inv.put("uuid", uuid)
        seen.add(uuid)
        state = lost_state(lost)
        gpus.append(GpuInventory(uuid=uuid, index=pos, name=str(dev.inv.values.get("name") or "unknown"),
                                 values=dev.inv.values, status=dev.inv.status, state=state))
        samples.append(GpuSample(ts=0.0, uuid=uuid, index=pos, values=dev.sample.values, status=dev.sample.status,
                                 state=state))
        extra.append(dev.extra)
    node.put("gpu_count", len(devs))
    return Capture(source=source, info=make_info("", node, source), gpus=gpus, samples=samples, notes=notes,
                   vendor=vendor, extra=extra)


# ---------------------------------------------------------------------------------------------------------------
# amd-smi (JSON, text, CSV)

AMD_SMI_JSON = "amd-smi-json"
AMD_SMI_TEXT = "amd-smi-text"
AMD_SMI_CSV = "amd-smi-csv"


def _lower(value: Any) -> Any:
    """Keys in lower case, at every level (the text layout's keys are upper case, the JSON's lower)."""
    if isinstance(value, dict):
        return {str(k).lower(): _lower(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_lower(v) for v in value]
    return value


def _get(d: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


def _first(d: Any, *paths: tuple[str, ...]) -> Any:
    """The first path that holds a value (not None, not a placeholder); else the first that holds anything."""
    found = None
    for p in paths:
        v = _get(d, *p)
        if v is None:
            continue
        if _text(v)[0] is not None:
            return v
        found = found if found is not None else v
    return found


def _amd_smi_device(entry: dict[str, Any], pos: int, node: Readings) -> _Dev:
    """One GPU object of ``amd-smi static`` / ``metric`` (JSON or text), keys lower-cased."""
    dev = _Dev(pos)
    asic, bus, board, ras = (entry.get(k) for k in ("asic", "bus", "board", "ras"))
    vbios = entry.get("vbios") if isinstance(entry.get("vbios"), dict) else entry.get("ifwi")
    inv, s = dev.inv, dev.sample
    # identity
    name = _first(entry, ("asic", "market_name"), ("board", "product_name"))
    _put(inv, "name", name, _name)
    _put(inv, "uuid", _get(asic, "asic_serial"), _unique)
    _put(inv, "serial", _first(entry, ("board", "product_serial"), ("board", "serial_number")), _serial)
    _put(inv, "board_part_number", _get(board, "model_number"), _str)
    _put(inv, "vbios", _first(entry, ("vbios", "version"), ("ifwi", "version")), _str)
    dev.keep("vbios_part_number", _val(_get(vbios, "part_number"), _str))
    dev.keep("vbios_build_date", _val(_get(vbios, "build_date"), _str))
    dev.keep("fru_id", _val(_get(board, "fru_id"), _str))
    _put(inv, "pci_bus_id", _first(entry, ("bus", "bdf"), ("bdf",)), _bus)
    vendor = _val(_get(asic, "vendor_id"), _hex16)
    subvendor = _val(_get(asic, "subvendor_id"), _hex16)
    if isinstance(asic, dict):
        _pci_device_id(dev, asic.get("device_id"), vendor, asic.get("subsystem_id"), subvendor)
    gfx = _val(_get(asic, "target_graphics_version"), _str)
    dev.keep("gfx_target", gfx)
    inv.put("architecture", _architecture(gfx))
    dev.keep("compute_units", _val(_get(asic, "num_compute_units"), _count))
    dev.keep("oam_id", _val(_get(asic, "oam_id"), _count))
    dev.keep("device_rev", _val(_get(asic, "rev_id"), _str))
    # link caps
    _put(inv, "pcie_max_gen", _first(entry, ("bus", "max_pcie_speed"), ("bus", "pcie_interface_version")), _gen)
    _put(inv, "pcie_max_width", _get(bus, "max_pcie_width"), _count)
    # memory
    total = _first(entry, ("vram", "size"), ("mem_usage", "total_vram"))
    _put(inv, "memory_total_mib", total, _mib)
    dev.keep("vram_type", _val(_get(entry, "vram", "type"), _str))
    dev.keep("vram_vendor", _val(_get(entry, "vram", "vendor"), _str))
    # limits (ROCm 7: limit.ppt0.*; ROCm 6: limit.max_power / socket_power / power)
    limit = entry.get("limit")
    cap = _first(limit, ("ppt0", "socket_power_limit"), ("socket_power",), ("power",), ("power_limit",))
    _put(inv, "power_enforced_w", cap, _cap_w)
    _put(inv, "power_max_w", _first(limit, ("ppt0", "max_power_limit"), ("max_power",)), _cap_w)
    _put(inv, "power_min_w", _first(limit, ("ppt0", "min_power_limit"), ("min_power",)), _power_w)
    if _get(entry, "power", "power_limit") is not None:
        cap = _get(entry, "power", "power_limit")
    if cap is not None:
        _put(s, "power_limit_w", cap, _cap_w)
    hot = _first(limit, ("slowdown_hotspot_temperature",), ("temperature_junction",))
    if _val(hot, _celsius) is not None:
        _put(inv, "temp_slowdown_c", hot, _celsius)
        _put(inv, "temp_shutdown_c", _get(limit, "shutdown_hotspot_temperature"), _celsius)
    else:
        _put(inv, "temp_slowdown_c", _first(limit, ("slowdown_edge_temperature",), ("temperature_edge",)), _celsius)
        _put(inv, "temp_shutdown_c", _get(limit, "shutdown_edge_temperature"), _celsius)
    dev.keep("temp_mem_slowdown_c", _val(_first(limit, ("slowdown_vram_temperature",), ("temperature_vram",)), _celsius))
    dev.keep("temp_mem_shutdown_c", _val(_get(limit, "shutdown_vram_temperature"), _celsius))
    # driver (per GPU in amd-smi; the node's)
    drv = _first(entry, ("driver", "version"), ("driver", "driver_version"))
    if _val(drv, _str) is not None and node.values.get("driver_version") is None:
        _put(node, "driver_version", drv, _str)
    kern = _get(entry, "driver", "os_kernel_version")
    if _val(kern, _str) is not None:
        _put(node, "kernel", kern, _str)
    # RAS
    if isinstance(ras, dict):
        states = ras.get("ecc_block_state")
        if isinstance(states, dict):
            dev.keep("ecc_block_state", {str(k).upper(): v for k, v in states.items()
                                              if _name_ok(k) and _val(v, _str)})
            umc = _val(_get(states, "umc"), _flag_text)
            inv.put("ecc_mode_current", umc, Status.OK if umc is not None else Status.UNSUPPORTED)
        dev.keep("bad_page_threshold", _val(ras.get("bad_page_threshold"), _count))
        dev.keep("bad_page_threshold_exceeded", _val(ras.get("bad_page_threshold_exceeded"), _flag_text))
        dev.keep("ras_schema", {k: v for k in ("parity", "single_bit", "double_bit", "poison")
                                if (v := _val(ras.get(f"{k}_schema"), _flag_text)) is not None})
    part = entry.get("partition")
    if isinstance(part, dict):
        dev.keep("partition", {k: v for k, key in (("compute", "compute_partition"), ("memory", "memory_partition"),
                                                   ("id", "partition_id")) if (v := _val(part.get(key), _str))})
    dev.keep("numa_node", _val(_get(entry, "numa", "node"), _count))
    _amd_smi_metric(dev, entry)
    return dev


def _amd_smi_metric(dev: _Dev, entry: dict[str, Any]) -> None:
    """The readings of ``amd-smi metric`` (the sample)."""
    s = dev.sample
    metric_keys = ("usage", "power", "clock", "temperature", "pcie", "ecc", "ecc_blocks", "mem_usage", "energy", "fan",
                   "perf_level", "xgmi_err", "throttle")
    if not any(k in entry for k in metric_keys):
        return
    _put(s, "util_gpu_pct", _first(entry, ("usage", "gfx_activity"), ("usage", "gfx_usage")), _pct)
    _put(s, "util_mem_pct", _get(entry, "usage", "umc_activity"), _pct)
    _put(s, "power_w", _first(entry, ("power", "socket_power"), ("power", "average_socket_power")), _power_w)
    status = _val(_get(entry, "power", "throttle_status"), _str)
    dev.keep("throttle_status", status)
    if status is not None and status.upper() == "UNTHROTTLED":
        s.put("throttle_mask", 0)
    clock = entry.get("clock")
    if isinstance(clock, dict):
        gfx = [_val(_get(clock, k, "clk"), _mhz) for k in sorted((k for k in clock if re.fullmatch(r"gfx_\d+", k)),
                                                                   key=lambda k: int(k[4:]))]
        dev.keep("gfx_clocks_mhz", gfx if len(gfx) > 1 else None)
        _put(s, "sm_clock_mhz", _first(clock, ("gfx_0", "clk"), ("gfx", "clk")), _mhz)
        _put(s, "mem_clock_mhz", _first(clock, ("mem_0", "clk"), ("mem", "clk")), _mhz)
        _put(dev.inv, "max_sm_clock_mhz", _first(clock, ("gfx_0", "max_clk"), ("gfx", "max_clk")), _mhz)
        _put(dev.inv, "max_mem_clock_mhz", _first(clock, ("mem_0", "max_clk"), ("mem", "max_clk")), _mhz)
    temp = entry.get("temperature")
    if isinstance(temp, dict):
        _pick_temp(dev, temp.get("edge"), temp.get("hotspot", temp.get("junction")), temp.get("mem", temp.get("vram")))
    pcie = entry.get("pcie")
    if isinstance(pcie, dict):
        _put(s, "pcie_width", pcie.get("width"), _count)
        _put(s, "pcie_gen", pcie.get("speed"), _gen)
        _put(s, "pcie_replay", pcie.get("replay_count"), _count)
        for key, name in (("l0_to_recovery_count", "pcie_l0_recovery"), ("replay_roll_over_count", "pcie_replay_rollover"),
                          ("nak_sent_count", "pcie_nak_sent"), ("nak_received_count", "pcie_nak_received")):
            dev.keep(name, _val(pcie.get(key), _count))
        bw = _text(pcie.get("bandwidth"))[0]
        dev.keep("pcie_bandwidth_mbps", _val(bw, lambda t: number(t, "mb/s")) if bw else None)
    ecc = entry.get("ecc")
    if isinstance(ecc, dict):
        _put(s, "ecc_corr_vol", _first(ecc, ("total_correctable_count",), ("correctable_count",)), _count)
        _put(s, "ecc_unc_vol", _first(ecc, ("total_uncorrectable_count",), ("uncorrectable_count",)), _count)
        dev.keep("ecc_deferred", _val(_first(ecc, ("total_deferred_count",), ("deferred_count",)), _count))
        dev.keep("ecc_cache_corr", _val(ecc.get("cache_correctable_count"), _count))
        dev.keep("ecc_cache_unc", _val(ecc.get("cache_uncorrectable_count"), _count))
    blocks = entry.get("ecc_blocks")
    if isinstance(blocks, dict):
        per: dict[str, dict[str, int]] = {}
        for block, counts in blocks.items():
            if not _name_ok(block):
                continue
            if isinstance(counts, dict):
                got = {k: v for k in ("correctable", "uncorrectable", "deferred")
                       if (v := _val(counts.get(f"{k}_count"), _count)) is not None}
                if got:
                    per[str(block).upper()] = got
        dev.keep("ecc_blocks", per)
    mem = entry.get("mem_usage")
    if isinstance(mem, dict):
        _put(s, "mem_used_mib", mem.get("used_vram"), _mib)
        _put(s, "mem_free_mib", mem.get("free_vram"), _mib)
        _mem_free(dev, dev.inv.values.get("memory_total_mib"))
    energy = _get(entry, "energy", "total_energy_consumption")
    if energy is not None:
        _put(s, "energy_mj", energy, _energy_mj)
    fan = entry.get("fan")
    if isinstance(fan, dict):
        _put(s, "fan_pct", fan.get("usage"), _pct)
        if s.values.get("fan_pct") is not None:
            s.put("fan_speeds_pct", [int(s.values["fan_pct"])])
        dev.keep("fan_rpm", _val(fan.get("rpm"), _count))
    dev.keep("perf_level", _val(entry.get("perf_level"), _str))
    dev.keep("xgmi_error", _val(entry.get("xgmi_err"), _str))
    throttle = entry.get("throttle")
    if isinstance(throttle, dict):  # amd-smi metric --throttle (MI300+): violation residency since the last read
        names = [k.removesuffix("_violation_activity") for k in throttle if k.endswith("_violation_activity")]
        dev.keep("throttle_violation_pct", {n: v for n in names if _name_ok(n)
                                            and (v := _val(throttle.get(f"{n}_violation_activity"), _pct)) is not None})
        dev.keep("throttle_violation_active", {n: v for n in names if _name_ok(n) and (
            v := _val(throttle.get(f"{n}_violation_status"), _flag_text)) is not None})


def _amd_smi_entries(doc: Any, what: str) -> list[Any]:
    if isinstance(doc, dict) and isinstance(doc.get("gpu_data"), list):
        return list(doc["gpu_data"])
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict) and "gpu" in doc:
        return [doc]
    raise _error(what, Text(N_("neither a list of GPUs nor {layout}"), layout='{"gpu_data": [...]}'))


def _is_version(entries: list[Any]) -> bool:
    return bool(entries) and all(isinstance(e, dict) and ("tool" in e or "rocm_version" in e) for e in entries)


def _is_xgmi(entries: list[Any]) -> bool:
    return bool(entries) and all(isinstance(e, dict) and "link_metrics" in e for e in entries)


def parse_amd_smi_json(data: bytes | str) -> Capture:
    """One ``amd-smi static|metric|xgmi|version --json`` document (list or ``gpu_data`` layout, banner allowed).

    Raises:
        SourceError: not such a document, too large (:data:`MAX_BYTES`, :data:`MAX_DEVICES`), or not valid
            JSON (truncated); one line.
    """
    what = "amd-smi JSON"
    doc = _lower(_json(decode(data, what), what))
    entries = _amd_smi_entries(doc, what)
    _count_devices(len(entries), what)
    node = node_readings()
    notes: list[str] = []
    if _is_version(entries):
        return _version(entries[0], node, notes)
    if _is_xgmi(entries):
        return _xgmi(entries, node, notes)
    devs: list[_Dev] = []
    for pos, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise _error(what, Text(N_("GPU entry {entry} is a {kind}, not an object"), entry=pos,
                                        kind=type(entry).__name__))
        devs.append(_amd_smi_device(entry, pos, node))
    return _capture(devs, AMD_SMI_JSON, "amd", node, notes)


def _version(entry: dict[str, Any], node: Readings, notes: list[str]) -> Capture:
    """``amd-smi version --json``: no device; the amdgpu driver version (older tools: ``kernel_version``)."""
    _put(node, "driver_version", _first(entry, ("amdgpu_version",), ("kernel_version",)), _str)
    _put(node, "runtime_version", entry.get("rocm_version"), _str)
    facts: list[str] = []  # the tool names stay as they are; "library" is said in the reader's language
    for label, key in (("ROCm {version}", "rocm_version"), ("amd-smi {version}", "version"),
                       (N_("amdsmi library {version}"), "amdsmi_library_version")):
        version = _val(entry.get(key), _str)
        if version:
            facts.append(Text(label, version=version))
    if facts:
        notes.append(Text(N_("amd-smi version: not a device listing; {facts}"), facts=Joined(facts)))
    else:
        notes.append(Text(N_("amd-smi version: not a device listing")))
    if node.status.get("driver_version") == Status.FAILED.value:
        notes.append(Text(N_("amdgpu version unreadable: {value}"),
                          value=printable(str(entry.get("amdgpu_version")), 120)))
    return _capture([], AMD_SMI_JSON, "amd", node, notes)


def _kb(text: str) -> float:
    factor = {"b": 1 / 1024, "kb": 1.0, "mb": 1024.0, "gb": 1024.0 ** 2}.get(_unit(text))
    if factor is None:
        raise ValueError(text)
    return round(number(text) * factor, 3)


def _xgmi(entries: list[Any], node: Readings, notes: list[str]) -> Capture:
    """``amd-smi xgmi -m --json``: one device per GPU (bus id only), its links in ``extra["xgmi"]``."""
    devs: list[_Dev] = []
    for pos, entry in enumerate(entries):
        dev = _Dev(pos)
        _put(dev.inv, "pci_bus_id", entry.get("bdf"), _bus)
        lm = entry.get("link_metrics") if isinstance(entry.get("link_metrics"), dict) else {}
        links: dict[str, dict[str, float]] = {}
        for link in lm.get("links", []) if isinstance(lm.get("links"), list) else []:
            peer = _val(link.get("bdf"), _bus) if isinstance(link, dict) else None
            if peer is None:
                continue
            got = {k: v for k, key in (("read_kb", "read"), ("write_kb", "write"))
                   if (v := _val(link.get(key), _kb)) is not None}
            if got:  # the self-link is "N/A"
                links[peer] = got
        dev.keep("xgmi", {k: v for k, v in (
            ("bit_rate_gbps", _val(lm.get("bit_rate"), lambda t: number(t, "gb/s"))),
            ("max_bandwidth_gbps", _val(lm.get("max_bandwidth"), lambda t: number(t, "gb/s"))),
            ("link_type", _val(lm.get("link_type"), _str)), ("links", links or None)) if v is not None})
        devs.append(dev)
    notes.append(Text(N_("amd-smi xgmi: link matrix of {count} GPUs (in each device's extra['xgmi']); no readings"),
                      count=len(devs)))
    return _capture(devs, AMD_SMI_JSON, "amd", node, notes)


_TEXT_KEY = re.compile(r"(\s*)([A-Za-z0-9_]+(?: [A-Za-z0-9_]+)*):(?: (.*))?$")


def _amd_smi_tree(lines: list[str], what: str) -> list[dict[str, Any]]:
    """amd-smi's indented text as the JSON tree it prints with ``--json`` (keys lower-cased, values text)."""
    gpus: list[dict[str, Any]] = []
    stack: list[tuple[int, dict[str, Any]]] = []
    last: tuple[dict[str, Any], str] | None = None
    for raw in lines:
        if not raw.strip():
            continue
        m = _TEXT_KEY.match(raw)
        if not gpus and (m is None or m.group(1) or m.group(2).lower() != "gpu"):
            continue  # a banner before the first "GPU: <n>" (amd-smi's permission notice)
        if m is None:
            if last is not None and isinstance(last[0].get(last[1]), str):  # a wrapped list: "N/A, N/A,"
                if len(last[0][last[1]]) < MAX_LINE_CHARS * 4:  # longer is no value anyway: bounded work
                    last[0][last[1]] += " " + raw.strip()
                continue
            raise _error(what, Text(N_("line not 'KEY: value': {line!r}"), line=raw.strip()[:60]))
        indent, key, value = len(m.group(1)), m.group(2).lower(), m.group(3)
        if indent == 0:
            if key != "gpu" or value is None:
                raise _error(what, Text(N_("expected 'GPU: <n>' at the left margin, found {line!r}"),
                                        line=raw.strip()[:60]))
            gpus.append({"gpu": value.strip()})
            _count_devices(len(gpus), what)
            stack = [(0, gpus[-1])]
            continue
        if not stack:
            raise _error(what, Text(N_("indented line before the first 'GPU: <n>'")))
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        if value is None or value == "":
            if len(stack) >= MAX_DEPTH:
                raise _error(what, _too_deep())
            child: dict[str, Any] = {}
            parent[key] = child
            stack.append((indent, child))
            last = None
        else:
            parent[key] = value.strip()
            last = (parent, key)
    return gpus


def parse_amd_smi_text(data: bytes | str) -> Capture:
    """``amd-smi static`` or ``amd-smi metric`` in its default text layout (``GPU: 0`` then indented blocks).

    Raises:
        SourceError: not such a document, too large, a line that is not ``KEY: value``; one line.
    """
    what = "amd-smi text"
    notes: list[str] = []
    lines = _lines(decode(data, what), what, notes)
    gpus = _amd_smi_tree(lines, what)
    if not gpus:
        raise _error(what, Text(N_("no 'GPU: <n>' block")))
    node = node_readings()
    devs = [_amd_smi_device(g, pos, node) for pos, g in enumerate(gpus)]
    return _capture(devs, AMD_SMI_TEXT, "amd", node, notes)


_CSV_PATHS: dict[str, tuple[str, ...]] = {
    "gfx_usage": ("usage", "gfx_activity"), "gfx_activity": ("usage", "gfx_activity"),
    "umc_activity": ("usage", "umc_activity"), "fb_total": ("mem_usage", "total_vram"),
    "total_vram": ("mem_usage", "total_vram"), "fb_used": ("mem_usage", "used_vram"),
    "used_vram": ("mem_usage", "used_vram"), "free_vram": ("mem_usage", "free_vram"),
    "gfx_cur_clk": ("clock", "gfx_0", "clk"), "mem_cur_clk": ("clock", "mem_0", "clk"),
    "socket_power": ("power", "socket_power"), "throttle_status": ("power", "throttle_status"),
    "edge": ("temperature", "edge"), "hotspot": ("temperature", "hotspot"), "mem": ("temperature", "mem"),
    "total_correctable_count": ("ecc", "total_correctable_count"),
    "total_uncorrectable_count": ("ecc", "total_uncorrectable_count"),
    "total_deferred_count": ("ecc", "total_deferred_count"), "replay_count": ("pcie", "replay_count"),
    "width": ("pcie", "width"), "speed": ("pcie", "speed"),
}
"""amd-smi's CSV columns (Windows 2023 names and the Linux leaf names) → the JSON tree's paths."""


def _csv_row(row: list[str], width: int) -> list[str]:
    """Fields of a row whose unquoted lists (``[0, 0]``) the CSV split: rejoined."""
    out: list[str] = []
    for cell in row:
        if out and out[-1].count("[") > out[-1].count("]"):
            out[-1] += "," + cell
        else:
            out.append(cell)
    return out


def parse_amd_smi_csv(data: bytes | str) -> Capture:
    """``amd-smi metric --csv`` (the Windows capture: UTF-16LE, BOM, CRLF, unquoted lists).

    Raises:
        SourceError: not such a table, a row that does not fit its header, too large; one line.
    """
    what = "amd-smi CSV"
    notes: list[str] = []
    lines = [ln for ln in _lines(decode(data, what), what, notes) if ln.strip()]
    if not lines or not lines[0].lower().startswith("gpu,"):
        raise _error(what, Text(N_("no header starting with 'gpu,'")))
    _count_devices(len(lines) - 1, what)
    rows = list(csv.reader(lines))
    header = [h.strip().lower() for h in rows[0]]
    node = node_readings()
    devs: list[_Dev] = []
    for pos, row in enumerate(rows[1:]):
        cells = _csv_row(row, len(header))
        if len(cells) != len(header):
            raise _error(what, Text(N_("row {row} has {count} fields under a header of {fields} (truncated?)"),
                                    row=pos + 1, count=len(cells), fields=len(header)))
        tree: dict[str, Any] = {"gpu": cells[0]}
        unknown: dict[str, str] = {}
        for key, cell in zip(header[1:], cells[1:]):
            path = _CSV_PATHS.get(key)
            if path is None:
                unknown[key] = cell.strip()
                continue
            node_ = tree
            for p in path[:-1]:
                node_ = node_.setdefault(p, {})
            node_[path[-1]] = cell.strip()
        dev = _amd_smi_device(tree, pos, node)
        dev.keep("mem_usage_pct", _val(unknown.pop("mem_usage", None), _pct))
        devs.append(dev)
    return _capture(devs, AMD_SMI_CSV, "amd", node, notes)


# ---------------------------------------------------------------------------------------------------------------
# rocm-smi / hy-smi

ROCM_SMI_JSON = "rocm-smi-json"
ROCM_SMI_TEXT = "rocm-smi-text"
ROCM_SMI_CONCISE = "rocm-smi-concise"
HY_SMI_JSON = "hy-smi-json"
HY_SMI_TEXT = "hy-smi-text"

_HYGON_KEYS = ("dcu use (%)", "hcu use (%)", "vram total memory (mib)", "temperature (sensor core) (c)")
_HEX_TEXT = re.compile(r"0x[0-9a-fA-F]{1,8}")


def _is_hygon(cards: Iterable[dict[str, Any]]) -> bool:
    """Hygon's tools: by their keys (DCU/HCU use, MiB, the core sensor), or a Hygon vendor name."""
    for card in cards:
        if any(k in card for k in _HYGON_KEYS):
            return True
        vendor = str(card.get("card vendor", "")).lower()
        if "haiguang" in vendor or "hygon" in vendor:
            return True
    return False


def _rocm_card(card: dict[str, Any], pos: int, hygon: bool) -> _Dev:
    """One ``cardN`` object of rocm-smi / hy-smi, keys lower-cased."""
    dev = _Dev(pos)
    inv, s = dev.inv, dev.sample
    series = card.get("card series")
    if isinstance(series, str) and _HEX_TEXT.fullmatch(series.strip()):  # ROCm 4.3: "Card series": "0x1002"
        series = None
    _put(inv, "name", series if _text(series)[0] else card.get("device name", series), _name)
    _put(inv, "uuid", card.get("unique id"), _unique)
    _put(inv, "serial", card.get("serial number"), _serial)
    _put(inv, "vbios", card.get("vbios version"), _str)
    _put(inv, "pci_bus_id", card.get("pci bus"), _bus)
    vendor_text = str(card.get("card vendor", "")).strip().lower()
    amd_vendor = not hygon and ("advanced micro devices" in vendor_text or vendor_text == "0x1002")
    device = card.get("device id", card.get("gpu id"))
    _pci_device_id(dev, device, _AMD_VENDOR_ID if amd_vendor else None, card.get("subsystem id"), None)
    for key, name in (("device rev", "device_rev"), ("card sku", "sku"), ("gfx version", "gfx_target"),
                      ("card vendor", "card_vendor"),
                      ("performance level", "perf_level"), ("gpu memory vendor", "vram_vendor")):
        dev.keep(name, _val(card.get(key), _str))
    inv.put("architecture", _architecture(dev.extra.get("gfx_target")))
    dev.keep("numa_node", _val(card.get("(topology) numa node"), _count))
    dev.keep("voltage_mv", _val(card.get("voltage (mv)"), _count))
    dev.keep("fan_rpm", _val(card.get("fan rpm"), _count))
    dev.keep("xgmi_error", _val(card.get("xgmi error count"), _count))
    dev.keep("vram_allocated_pct", _val(card.get("gpu memory allocated (vram%)"), _pct))
    dev.keep("firmware", {k.removesuffix(" firmware version").upper(): fw for k, raw in card.items()
                          if k.endswith(" firmware version") and _name_ok(k) and (fw := _val(raw, _str))})
    # temperatures: edge, junction, memory ("mem" on Hygon), HBM stacks, Hygon's core
    _pick_temp(dev, card.get("temperature (sensor edge) (c)"), card.get("temperature (sensor junction) (c)"),
               card.get("temperature (sensor memory) (c)", card.get("temperature (sensor mem) (c)")))
    hbm = [_val(card.get(f"temperature (sensor hbm {i}) (c)"), _celsius) for i in range(8)]
    dev.keep("temp_hbm_c", [t for t in hbm if t is not None])
    dev.keep("temp_core_c", _val(card.get("temperature (sensor core) (c)"), _celsius))
    # power: ROCm ≤ 6.0 "Average Graphics Package Power", 6.1+ "Current Socket Graphics Package Power"
    power = _first(card, ("average graphics package power (w)",), ("current socket graphics package power (w)",),
                   ("average socket power (w)",))
    _put(s, "power_w", power, _power_w)  # "N/A (Secondary die)" (even on single-die cards): unsupported
    cap = card.get("max graphics package power (w)")
    _put(s, "power_limit_w", cap, _cap_w)
    _put(inv, "power_enforced_w", cap, _cap_w)
    fan = card.get("fan speed (%)")
    _put(s, "fan_pct", fan, _pct)
    if s.values.get("fan_pct") is not None:
        s.put("fan_speeds_pct", [int(s.values["fan_pct"])])
    _put(s, "util_gpu_pct", _first(card, ("gpu use (%)",), ("dcu use (%)",), ("hcu use (%)",)), _pct)
    _put(s, "util_mem_pct", _first(card, ("gpu memory use (%)",), ("gpu memory read/write activity (%)",)), _pct)
    _put(s, "sm_clock_mhz", card.get("sclk clock speed:"), _mhz)
    _put(s, "mem_clock_mhz", card.get("mclk clock speed:"), _mhz)
    _put(s, "pcie_replay", card.get("pcie replay count"), _count)
    level = card.get("pcie clock level")
    text, st = _text(level)
    if text is not None:
        try:
            gen, width = _pcie_level(text)
            s.put("pcie_gen", gen)
            s.put("pcie_width", width)
        except ValueError:
            s.put("pcie_gen", None, Status.FAILED)
            s.put("pcie_width", None, Status.FAILED)
    # memory: bytes on AMD, MiB on Hygon
    if "vram total memory (mib)" in card:
        _put(inv, "memory_total_mib", card.get("vram total memory (mib)"), _mib)
        _put(s, "mem_used_mib", card.get("vram total used memory (mib)"), _mib)
    else:
        _put(inv, "memory_total_mib", card.get("vram total memory (b)"), _bytes_mib)
        _put(s, "mem_used_mib", card.get("vram total used memory (b)"), _bytes_mib)
    _mem_free(dev, inv.values.get("memory_total_mib"))
    return dev


def _cards(doc: Any, what: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if not isinstance(doc, dict):
        raise _error(what, Text(N_("not an object of cardN entries")))
    keys = [k for k in doc if re.fullmatch(r"card\d{1,6}", str(k))]
    if not keys:
        raise _error(what, Text(N_("no 'cardN' entry")))
    _count_devices(len(keys), what)
    cards = []
    for k in sorted(keys, key=lambda k: int(k[4:])):
        if not isinstance(doc[k], dict):
            raise _error(what, Text(N_("{key} is a {kind}, not an object"), key=k, kind=type(doc[k]).__name__))
        cards.append(doc[k])
    system = doc.get("system")
    return cards, system if isinstance(system, dict) else {}


def parse_rocm_smi_json(data: bytes | str) -> Capture:
    """rocm-smi's ``--json`` output (any flag set, ROCm 4.3-6.x), or Hygon's hy-smi / rocm-smi ``--json``.

    The vendor is "hygon" (source ``hy-smi-json``) when the document has Hygon's keys, else "amd"
    (source ``rocm-smi-json``).

    Raises:
        SourceError: not such a document, too large, not valid JSON (truncated); one line.
    """
    what = "rocm-smi JSON"
    doc = _lower(_json(decode(data, what), what))
    cards, system = _cards(doc, what)
    hygon = _is_hygon(cards)
    node = node_readings()
    _put(node, "driver_version", system.get("driver version"), _str)
    notes: list[str] = []
    procs = [k for k in system if k.startswith("pid")]
    if procs:
        notes.append(Text(N_("rocm-smi lists {count} process(es); not stored"), count=len(procs)))
    devs = [_rocm_card(c, pos, hygon) for pos, c in enumerate(cards)]
    return _capture(devs, HY_SMI_JSON if hygon else ROCM_SMI_JSON, "hygon" if hygon else "amd", node, notes)


_SMI_LINE = re.compile(r"(GPU|DCU|HCU)\[(\d{1,6})\]\s*:\s*([^:]+?)\s*:\s?(.*)$")
_CONCISE_HEAD = ("gpu", "temp", "avgpwr", "sclk", "mclk", "fan", "perf", "pwrcap", "vram%", "gpu%")


def parse_rocm_smi_text(data: bytes | str) -> Capture:
    """rocm-smi / hy-smi text: ``GPU[0] : Key: value`` lines (any flag set), or the default concise table.

    Raises:
        SourceError: neither layout, a table row that does not fit its header, too large; one line.
    """
    what = "rocm-smi text"
    notes: list[str] = []
    lines = _lines(decode(data, what), what, notes)
    if any([w.lower() for w in ln.split()[:2]] == ["gpu", "temp"] for ln in lines):
        return _concise(lines, what, notes)
    cards: dict[int, dict[str, Any]] = {}
    dcu = False
    for ln in lines:
        m = _SMI_LINE.match(ln.strip())
        if m is None:
            continue
        dcu = dcu or m.group(1) != "GPU"
        idx = int(m.group(2))
        if idx not in cards:
            cards[idx] = {}
            _count_devices(len(cards), what)
        cards[idx][m.group(3).strip().lower()] = m.group(4).strip()
    if not cards:
        raise _error(what, Text(N_("no 'GPU[n] : key: value' line and no concise table")))
    ordered = [cards[i] for i in sorted(cards)]
    hygon = dcu or _is_hygon(ordered)
    node = node_readings()
    devs = [_rocm_card(c, pos, hygon) for pos, c in enumerate(ordered)]
    return _capture(devs, HY_SMI_TEXT if hygon else ROCM_SMI_TEXT, "hygon" if hygon else "amd", node, notes)


def _fan_concise(text: str) -> float:
    """The concise table prints 0% for a card without a fan (MI250X): 0 there is no reading."""
    value = _pct(text)
    if value == 0:
        raise _NoValue(text)
    return value


def _concise(lines: list[str], what: str, notes: list[str]) -> Capture:
    """The default ``rocm-smi`` table (ROCm 5): no ids; on a multi-die card the second die's power is N/A
    and its cap 0.0 W (read as secondary die: no power, no cap)."""
    head_at = next(i for i, ln in enumerate(lines) if [w.lower() for w in ln.split()[:2]] == ["gpu", "temp"])
    head = [w.lower() for w in lines[head_at].split()]
    if tuple(head) != _CONCISE_HEAD:
        raise _error(what, Text(N_("concise table with columns {columns!r}, not the ROCm 5 layout"),
                                columns=" ".join(head)[:80]))
    node = node_readings()
    devs: list[_Dev] = []
    for ln in lines[head_at + 1:]:
        if not ln.strip() or ln.lstrip().startswith("="):
            if ln.lstrip().startswith("=") and devs:
                break
            continue
        cells = ln.split()
        if len(cells) != len(head) or not cells[0].isdigit():
            raise _error(what, Text(N_("table row {row!r} does not fit the header (truncated?)"),
                                    row=ln.strip()[:60]))
        _count_devices(len(devs) + 1, what)
        row = dict(zip(head, cells))
        dev = _Dev(len(devs))
        _pick_temp(dev, row["temp"], None, None)
        _put(dev.sample, "power_w", row["avgpwr"], _power_w)
        _put(dev.sample, "sm_clock_mhz", row["sclk"], _mhz)
        _put(dev.sample, "mem_clock_mhz", row["mclk"], _mhz)
        _put(dev.sample, "fan_pct", row["fan"], _fan_concise)
        _put(dev.sample, "power_limit_w", row["pwrcap"], _cap_w)
        _put(dev.inv, "power_enforced_w", row["pwrcap"], _cap_w)
        _put(dev.sample, "util_gpu_pct", row["gpu%"], _pct)
        dev.keep("vram_allocated_pct", _val(row["vram%"], _pct))
        dev.keep("perf_level", _val(row["perf"], _str))
        if dev.sample.values["power_w"] is None and _val(row["pwrcap"], _power_w) == 0:
            dev.extra["secondary_die"] = True
            dev.sample.put("power_limit_w", None)
            dev.inv.put("power_enforced_w", None)
        devs.append(dev)
    if not devs:
        raise _error(what, Text(N_("concise table without rows")))
    notes.append(Text(N_("rocm-smi concise table: no unique id, serial or bus id; devices are numbered as listed")))
    return _capture(devs, ROCM_SMI_CONCISE, "amd", node, notes)


# ---------------------------------------------------------------------------------------------------------------
# rocminfo

ROCMINFO = "rocminfo"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_DEC_HEX = re.compile(r"(\d+)\(0x([0-9a-fA-F]+)\)")


def parse_rocminfo(data: bytes | str) -> Capture:
    """``rocminfo``: the GPU (AMD) or DCU (Hygon) agents' identity; CPU agents are skipped.

    No live reading: the samples are all unsupported. Numbers written twice (``128(0x80)``) must agree;
    an agent where one does not (the text was cut or altered) has its plain numbers (compute units,
    maximum clock) marked failed, with a note.

    Raises:
        SourceError: not rocminfo output (no "HSA Agents"), no GPU agent, too large; one line.
    """
    what = "rocminfo"
    notes: list[str] = []
    lines = [_ANSI.sub("", ln) for ln in _lines(decode(data, what), what, notes)]
    if not any(ln.strip() == "HSA Agents" for ln in lines):
        raise _error(what, Text(N_("no 'HSA Agents' section: not rocminfo output")))
    node = node_readings()
    for ln in lines[:5]:
        m = re.match(r"\s*ROCk module version (\S+) is loaded", ln)
        if m:
            _put(node, "driver_version", m.group(1), _str)
    agents: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for ln in lines:
        stripped = ln.strip()
        if re.fullmatch(r"Agent \d{1,6}", stripped):
            current = {"pools": []}
            agents.append(current)
            _count_devices(len(agents), what)
            continue
        if current is None or ":" not in stripped:
            continue
        key, _, value = stripped.partition(":")
        key, value = key.strip(), value.strip()
        if key == "Segment":
            current["pools"].append({"segment": value})
        elif key == "Size" and current["pools"] and "size" not in current["pools"][-1]:
            current["pools"][-1]["size"] = value
        elif key not in current:
            current[key] = value
        m = _DEC_HEX.search(value)
        if m and int(m.group(1)) != int(m.group(2), 16):
            current["_altered"] = f"{key}: {value}"
    gpus = [a for a in agents if str(a.get("Device Type", "")).upper() in ("GPU", "DCU")]
    if not gpus:
        raise _error(what, Text(N_("no GPU or DCU agent (only CPUs)")))
    devs: list[_Dev] = []
    hygon = False
    for pos, a in enumerate(gpus):
        dev = _Dev(pos)
        vendor = str(a.get("Vendor Name", "")).upper()
        hygon = hygon or vendor == "HYGON" or a.get("Device Type", "").upper() == "DCU"
        _put(dev.inv, "name", a.get("Marketing Name"), _name)
        _put(dev.inv, "uuid", a.get("Uuid"), _unique)
        gfx = _val(a.get("Name"), _str)
        dev.keep("gfx_target", gfx)
        dev.inv.put("architecture", _architecture(gfx))
        chip = _DEC_HEX.fullmatch(str(a.get("Chip ID", "")))
        if chip and int(chip.group(1)) == int(chip.group(2), 16):
            _pci_device_id(dev, f"0x{int(chip.group(1)):04x}", _AMD_VENDOR_ID if vendor == "AMD" else None)
        altered = a.get("_altered")
        if altered:
            notes.append(Text(N_("agent {pos}: a number disagrees with its hex form ({value}): the text was altered; "
                                 "its plain numbers are not used"), pos=pos, value=printable(altered, 80)))
            dev.inv.put("max_sm_clock_mhz", None, Status.FAILED)
        else:
            _put(dev.inv, "max_sm_clock_mhz", a.get("Max Clock Freq. (MHz)"), _mhz)
            dev.keep("compute_units", _val(a.get("Compute Unit"), _count))
            dev.keep("bdfid", _val(a.get("BDFID"), _count))
        pool = next((p for p in a["pools"] if p.get("segment", "").startswith("GLOBAL") and "size" in p), None)
        if pool is not None:
            m = re.fullmatch(r"(\d+)\(0x([0-9a-fA-F]+)\)\s*KB", pool["size"])
            if m and int(m.group(1)) == int(m.group(2), 16):
                dev.inv.put("memory_total_mib", int(m.group(1)) // 1024)
            else:
                dev.inv.put("memory_total_mib", None, Status.FAILED)
        devs.append(dev)
    notes.append(Text(N_("rocminfo: identity only (no temperature, power, use or error counts)")))
    return _capture(devs, ROCMINFO, "hygon" if hygon else "amd", node, notes)


# ---------------------------------------------------------------------------------------------------------------
# Merging the documents of one node


def combine(*captures: Capture) -> Capture:
    """One capture of a node from several of its documents (``amd-smi static`` + ``metric`` + ``xgmi`` +
    ``version``; rocminfo + rocm-smi): devices matched by PCI bus id where both have one, else by position;
    a reading one document has fills the field another lacks (the first document's value wins when both
    have one). Devices only one document lists are kept. The source is the first's, notes are joined.

    Raises:
        SourceError: no capture, or captures of different vendors.
    """
    if not captures:
        raise SourceError(Text(N_("combine: no capture")))
    vendors = {c.vendor for c in captures if c.gpus}
    if len(vendors) > 1:
        raise SourceError(Text(N_("combine: captures of different vendors ({vendors})"),
                               vendors=", ".join(sorted(vendors))))
    base = captures[0]
    node_v, node_s = dict(base.info.values), dict(base.info.status)
    devs: list[dict[str, Any]] = []
    for cap in captures:
        _fill(node_v, node_s, {k: v for k, v in cap.info.values.items() if k != "gpu_count"}, cap.info.status)
        for pos, (gpu, smp) in enumerate(zip(cap.gpus, cap.samples)):
            extra = cap.extra[pos] if pos < len(cap.extra) else {}
            bus = gpu.values.get("pci_bus_id")
            match = next((d for d in devs if bus and d["inv"].get("pci_bus_id") == bus), None)
            if match is None and cap is not base and pos < len(devs):
                if not bus or not devs[pos]["inv"].get("pci_bus_id"):
                    match = devs[pos]  # no bus id on one side: the tool's order
            if match is None:
                devs.append({"inv": dict(gpu.values), "inv_s": dict(gpu.status), "smp": dict(smp.values),
                             "smp_s": dict(smp.status), "extra": dict(extra), "state": gpu.state})
                continue
            _fill(match["inv"], match["inv_s"], gpu.values, gpu.status)
            _fill(match["smp"], match["smp_s"], smp.values, smp.status)
            for k, v in extra.items():
                match["extra"].setdefault(k, v)
    node = node_readings()
    node.values, node.status = node_v, node_s
    out: list[_Dev] = []
    for pos, d in enumerate(devs):
        dev = _Dev(pos)
        dev.inv.values, dev.inv.status = d["inv"], d["inv_s"]
        dev.sample.values, dev.sample.status = d["smp"], d["smp_s"]
        uuid = dev.inv.values.get("uuid")
        if isinstance(uuid, str) and uuid.startswith(("unknown-gpu-", "lost-gpu-")):
            dev.inv.values["uuid"] = None
        dev.extra = d["extra"]
        out.append(dev)
    notes = [n for c in captures for n in c.notes]
    return _capture(out, base.source, base.vendor, node, notes)


def _fill(values: dict[str, Any], status: dict[str, str], more: dict[str, Any], more_s: dict[str, str]) -> None:
    """Fields ``values`` lacks, from ``more``; a placeholder uuid yields to a real one."""
    for k, v in more.items():
        mine = values.get(k)
        placeholder = k == "uuid" and isinstance(mine, str) and mine.startswith(("unknown-gpu-", "lost-gpu-"))
        if v is not None and (mine is None or placeholder) and not (
                k == "uuid" and isinstance(v, str) and v.startswith(("unknown-gpu-", "lost-gpu-"))):
            values[k] = v
            status.pop(k, None)
        elif mine is None and k in more_s and status.get(k) == Status.UNSUPPORTED.value:
            status[k] = more_s[k]  # a failed reading says more than an absent one


# ---------------------------------------------------------------------------------------------------------------
# Format detection (for ``fleetmon import --format auto``)


def _head(text: str) -> str:
    """The first 4 KB of a document as text (UTF-16 read as Latin-1 undone), without a BOM."""
    t = text[:8192]
    if "\x00" in t[:64]:
        try:
            t = decode(t.encode("latin-1")[: len(t) - len(t) % 2])
        except (SourceError, UnicodeEncodeError):
            return ""
    return t.removeprefix("\ufeff")[:4096]


def _json_head(text: str) -> str:
    t = _head(text)
    starts = _json_starts(t)
    return t[starts[0]:] if starts else ""


def _detect_amd_smi_json(text: str) -> bool:
    t = _json_head(text)
    return bool(re.match(r'\s*(\{\s*"gpu_data"|\[\s*\{\s*"(gpu|tool)")', t))


def _detect_amd_smi_text(text: str) -> bool:
    return bool(re.search(r"^GPU: \d+[ \t]*\r?\n[ \t]+[A-Z_]+:", _head(text), re.M))


def _detect_amd_smi_csv(text: str) -> bool:
    return _head(text).lstrip().lower().startswith("gpu,")


def _rocm_json(text: str) -> bool:
    return bool(re.match(r'\s*\{\s*"card\d+"\s*:', _json_head(text)))


def _hygon_text(text: str) -> bool:
    t = _head(text).lower()
    return any(k in t for k in ("dcu use", "hcu use", "(mib)", "sensor core", "haiguang")) or "dcu[" in t


def _detect_rocm_smi_json(text: str) -> bool:
    return _rocm_json(text) and not _hygon_text(text)


def _detect_hy_smi_json(text: str) -> bool:
    return _rocm_json(text) and _hygon_text(text)


def _smi_text(text: str) -> bool:
    t = _head(text)
    return ("System Management Interface" in t or "SMI Log" in t) and bool(
        re.search(r"^\s*((GPU|DCU|HCU)\[\d+\]\s*:|GPU\s+Temp\s)", t, re.M))


def _detect_rocm_smi_text(text: str) -> bool:
    return _smi_text(text) and not _hygon_text(text)


def _detect_hy_smi_text(text: str) -> bool:
    return _smi_text(text) and _hygon_text(text)


def _detect_rocminfo(text: str) -> bool:
    t = _head(text)
    return "HSA System Attributes" in t or "HSA Agents" in t


VENDOR = "amd"
FORMAT_VENDORS = {"hy-smi-json": "hygon", "hy-smi-text": "hygon"}
"""The vendor of a format's devices where it is not :data:`VENDOR` (fleetmon.sources.formats reads both)."""

FORMATS: dict[str, tuple[Callable[[str], bool], Callable[[bytes | str], Capture]]] = {
    AMD_SMI_JSON: (_detect_amd_smi_json, parse_amd_smi_json),
    AMD_SMI_TEXT: (_detect_amd_smi_text, parse_amd_smi_text),
    AMD_SMI_CSV: (_detect_amd_smi_csv, parse_amd_smi_csv),
    ROCM_SMI_JSON: (_detect_rocm_smi_json, parse_rocm_smi_json),
    HY_SMI_JSON: (_detect_hy_smi_json, parse_rocm_smi_json),
    ROCM_SMI_TEXT: (_detect_rocm_smi_text, parse_rocm_smi_text),
    HY_SMI_TEXT: (_detect_hy_smi_text, parse_rocm_smi_text),
    ROCMINFO: (_detect_rocminfo, parse_rocminfo),
}
"""Format name → (detector on the document's text, parser). The detectors are mutually exclusive on the
fixtures; ``rocm-smi-text`` also takes the concise table (its capture's source is ``rocm-smi-concise``)."""
