"""Huawei Ascend ``npu-smi`` text → a :class:`~fleetmon.sources.capture.Capture` (one device per NPU chip).

npu-smi has no JSON or XML output; this reads its text:

* ``npu-smi info``: the table. Every layout of npu-smi 20.x-25.x in
  ../shared/fixtures/F_other_vendors/huawei_ascend is read by its column headers,
  not by character positions (widths 80 to 116; misaligned fields such as
  ``70            0        / 970``; ``26838/ 32768`` without a space):

  - header 1 ``NPU Name | Health | Power(W) Temp(C) [Hugepages-Usage(page)]``,
  - header 2 ``Chip [Device | Phy-ID] | Bus-Id | AICore(%) Memory-Usage(MB) [HBM-Usage(MB)]``,

  then two lines per chip. A card with several chips (Atlas 300 / Atlas 800
  inference: one NPU ID, four Ascend 310 chips; Atlas A3: two chips per NPU)
  gives one device per chip, grouped by its NPU ID. The optional version line
  (``npu-smi 24.1.RC2  Version: 24.1.RC2``: the tool, then the driver) may be
  missing; the process table after the chip table is read into each chip's extra.
* ``npu-smi info -m``: the chip mapping (NPU ID, Chip ID, Chip Logic ID, Chip Name).
  It gives each chip its logical id (the device index) and a name where the
  table's is redacted; MCU rows (logic id ``-``) are not devices.
* ``npu-smi info -t health|ecc|board|temp|power|usages|common -i N [-c C]``: indented
  ``Key : value`` lines. Their layout was taken from Huawei's npu-smi reference
  (hiascend.com, Atlas 200I A2 and Atlas 800 training-server pages, 23.0-26.0); no
  capture of them is in the fixtures. A block is given to a chip by its ``NPU ID`` /
  ``Chip ID`` lines or by the ``npu-smi info -i N -c C -t KIND`` command line before
  it (as Huawei's own collection file writes them). A block naming no chip is used
  only when its card has one chip.

One input may hold several of these one after another (the table, ``-m`` and the
``-t`` outputs, with or without their command lines): the SSH source and an
imported file take the same text. Lines that are none of them (a banner, a doc
URL) are skipped.

Values: ``-`` and ``NA`` (and ``N/A``) are *unsupported* (the A3's second chip
shows Power ``-``: npu-smi reports the NPU's power on its first chip), never
zero; text that is no number is *failed*. ``MB`` in npu-smi is MiB (HBM totals
32768 / 65536). Memory: the HBM column when the table has one with a total
above 0 (910A/910B/A3: Memory-Usage is the chip's DDR then, kept in extra), else
Memory-Usage (Ascend 310: DDR is the device memory).

The chips of a card with several (an Atlas 300's four Ascend 310, an A3 NPU's two) carry the
inventory field ``card_id``: ``<card serial>:<NPU ID>`` once ``-t board`` gave the serial, else
``npu:<NPU ID>`` (unique on its host only); a one-chip card has none.

Device identity: npu-smi has no UUID. A chip's uuid is
``NPU-<card serial>-<Chip ID>`` when ``npu-smi info -t board -i N`` gave the
card's Serial Number (stable across hosts and slots), else
``NPU-<Bus-Id>-<NPU ID>-<Chip ID>``: stable on its host while the card stays in its
slot, but the same on two hosts with the same layout (like nvidia-smi's table
placeholders ``unknown-gpu-<index>-<bus id>``). ``-t board -c C``'s Die ID, unique
per die, is kept in extra.

Extra (``Capture.extra[i]``, by name; a reading npu-smi did not give is absent):
``npu_id``, ``chip_id`` (the card and the chip on it), ``logic_id`` (from ``-m``),
``phy_id`` / ``device_id`` (the table's Phy-ID / Device column), ``chip_name`` (``-m``),
``table_name`` (the Name column as printed), ``health`` (OK, Warning, Alarm, Critical,
UNKNOWN as printed; -t health's answer wins over the table's column), ``error_codes`` (list of str, the
-t health Error Code split at blanks and commas; ``[]`` when it says NA),
``error_info``, ``ddr_used_mib`` / ``ddr_total_mib``, ``hugepages_used`` /
``hugepages_total``, ``processes`` (list of {pid, name, memory_mib}), ``card_power_w``
(the whole card, -t power), ``rated_power_w``, ``firmware_version``,
``software_version``, ``product_name``, ``model``, ``chip_version``, ``compatibility``
(driver and firmware: OK / NOK, -t board), ``die_id``, ``ecc`` (every -t ecc counter by
its npu-smi name), ``temperatures`` (every -t temp sensor by its npu-smi name, °C),
``other_columns`` (a table column this module does not know, as printed).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from fleetmon.i18n import N_, Text
from fleetmon.pci import normalize_bus_id
from fleetmon.records import GpuInventory, GpuSample, Status
from fleetmon.sources import SourceError
from fleetmon.sources.capture import (
    Capture, Readings, inventory_readings, lost_state, make_info, node_readings, reading, sample_readings, whole,
)
from fleetmon.text import printable

__all__ = ["FORMATS", "MAX_BYTES", "MAX_CHIPS", "NpuSmiError", "SOURCE", "VENDOR", "decode", "detect",
           "parse_npu_smi"]

SOURCE = "npu-smi"
_WHAT = SOURCE
"""What the parse errors name (the tool, as it is in every language)."""
VENDOR = "huawei"
MAX_BYTES = 8 * 1024 * 1024
"""Larger input is refused (an 8-NPU Atlas 800 table with its process table: 7 KB; with every -t output of
every chip, well under 1 MB)."""
MAX_LINES = 200_000
"""Lines of one input (a 64-chip host with every -t output: about 3,000)."""
MAX_LINE_CHARS = 4096
"""A longer line is no npu-smi output (its widest table is 116 characters)."""
MAX_CHIPS = 1024
"""Chips one input may describe (as many as :data:`fleetmon.sources.smi_xml.MAX_GPUS`; the collector and import
then apply their own per-node limit); past it the input is refused as soon as the first chip too many is read."""


class NpuSmiError(SourceError):
    """npu-smi output that cannot be used (one line: why; an :class:`~fleetmon.i18n.Text`, said in the reader's
    language by :func:`~fleetmon.i18n.message_of`)."""


_MORE_CHIPS = N_("{what}: more than {limit} chips in one input")
"""Said where the table's chips and where the mapping's pass the limit."""


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_VERSION = re.compile(r"npu-smi\s+(?P<tool>\S+)\s+Version:\s*(?P<driver>\S+)")
_CHIP_HEADER = re.compile(r"^\s*\|\s*NPU\s+Name\s*\|\s*Health\s*\|", re.M)
_MAP_HEADER = re.compile(r"^\s*NPU ID\s{2,}Chip ID\s{2,}Chip Logic ID\b.*$")
_COMMAND = re.compile(r"^\s*(?:\S*[#$>]\s+)?(?:\S*/)?npu-smi\s+info\b(?P<args>[^|]*)$")
_KV = re.compile(r"^\s*(?P<key>[A-Za-z][A-Za-z0-9 ()%_.\-]{0,79}?)\s*:\s?(?P<value>.*)$")
_DETAIL_KEYS = re.compile(r"^\s*(Health Status|Error Code|Chip Count|NPU ID|HBM Single Bit Error Count|"
                          r"Single-bit Error Count|NPU Real-time Power\(W\)|Temperature \(C\))\s*:", re.M)
_ITEM = re.compile(r"([^\s/]+)\s*/\s*([^\s/]+)|(\S+)")
_PCI = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
_PCI_LIKE = re.compile(r"[0-9A-Fa-fx]{4,8}:[0-9A-Fa-fx]{2}:[0-9A-Fa-fx]{2}\.")
_UUID_PART = re.compile(r"[^A-Za-z0-9._:-]")
_PLACEHOLDERS = ("-", "--", "na", "n/a", "")
_PAIR_COLUMNS = ("Hugepages-Usage(page)", "Memory-Usage(MB)", "HBM-Usage(MB)")
_KNOWN_COLUMNS = ("Power(W)", "Temp(C)", "AICore(%)") + _PAIR_COLUMNS
_HEALTH_WORDS = ("OK", "Warning", "Alarm", "Critical", "UNKNOWN")


def decode(data: bytes | str) -> str:
    """The input as text: UTF-8 (with or without a BOM) or UTF-16 with a BOM (a Windows redirect).

    Raises:
        NpuSmiError: larger than :data:`MAX_BYTES`, or neither encoding (one line).
    """
    if isinstance(data, str):
        if len(data) > MAX_BYTES:
            raise NpuSmiError(Text(N_("{what}: {count:,} characters, more than the {limit:,} its output may have"),
                                   what=_WHAT, count=len(data), limit=MAX_BYTES))
        if _SURROGATE.search(data):
            raise NpuSmiError(Text(N_("{what}: the text holds undecodable bytes (lone surrogates): not npu-smi output"),
                                   what=_WHAT))
        return data.removeprefix("\ufeff")
    if len(data) > MAX_BYTES:
        raise NpuSmiError(Text(N_("{what}: {count:,} bytes, more than the {limit:,} its output may have"), what=_WHAT,
                               count=len(data), limit=MAX_BYTES))
    try:
        if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            return data.decode("utf-16")
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NpuSmiError(Text(N_("{what}: not UTF-8 or UTF-16 with a BOM (bytes {bytes} at offset {offset:,})"),
                               what=_WHAT, bytes=data[exc.start:exc.start + 4].hex(), offset=exc.start)) from None


def detect(text: str) -> bool:
    """Whether ``text`` (its first 64 KB) looks like npu-smi output of any kind this module reads."""
    head = _ANSI.sub("", text[:65536])
    return bool(_VERSION.search(head) or _CHIP_HEADER.search(head) or _DETAIL_KEYS.search(head)
                or any(_MAP_HEADER.match(ln) or _COMMAND.match(ln) for ln in head.splitlines()))


@dataclass
class _Chip:
    """One chip as the table gives it (texts as printed; ``values``: column name → text or (used, total))."""

    line: int
    npu: int
    chip: int
    name: str
    health: str
    bus: str
    second: int | None  # the Device / Phy-ID column
    second_name: str
    values: dict[str, str | tuple[str, str]] = field(default_factory=dict)


@dataclass
class _MapRow:
    npu: int
    chip: int
    logic: int | None
    name: str


@dataclass
class _Facts:
    """What the -t outputs said of one chip (or of one card: chip None)."""

    pairs: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class _Parsed:
    tool: str | None = None
    driver: str | None = None
    chips: list[_Chip] = field(default_factory=list)
    mapping: list[_MapRow] = field(default_factory=list)
    processes: dict[tuple[int, int], list[dict[str, Any]]] = field(default_factory=dict)
    chip_facts: dict[tuple[int, int], _Facts] = field(default_factory=dict)
    card_facts: dict[int, _Facts] = field(default_factory=dict)
    loose: list[tuple[int, _Facts]] = field(default_factory=list)  # blocks that name no card (line, facts)
    mcu_power: dict[int, str] = field(default_factory=dict)
    skipped: int = 0


def _lines(text: str) -> list[str]:
    """The input's lines, checked: ANSI colour codes removed, no other control character, bounded."""
    text = _ANSI.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.count("\n") > MAX_LINES:
        raise NpuSmiError(Text(N_("{what}: more than {limit:,} lines"), what=_WHAT, limit=MAX_LINES))
    bad = _CONTROL.search(text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        if bad.group() == "\x00":
            raise NpuSmiError(Text(N_("{what}: control character {char} on line {line} (UTF-16 without a BOM?)"),
                                   what=_WHAT, char=printable(bad.group()), line=line))
        raise NpuSmiError(Text(N_("{what}: control character {char} on line {line}"), what=_WHAT,
                               char=printable(bad.group()), line=line))
    lines = text.split("\n")
    for n, ln in enumerate(lines, 1):
        if len(ln) > MAX_LINE_CHARS:
            raise NpuSmiError(Text(N_("{what}: line {line} has {count:,} characters, more than npu-smi writes "
                                      "({limit:,})"), what=_WHAT, line=n, count=len(ln), limit=MAX_LINE_CHARS))
    return lines


def _int(text: str, column: str, line: int, the: bool = True) -> int:
    """``text`` as a whole number; ``column``: the id's title as npu-smi prints it ("NPU id", "Chip ID", "Phy-ID"),
    ``the``: the message says "the NPU id" (a table's column) rather than "NPU ID" (a -t output's key)."""
    t = text.strip()
    if not t.isdigit() or len(t) > 9:
        if the:
            raise NpuSmiError(Text(N_("{what}: line {line}: the {column} {text!r} is not a number"), what=_WHAT,
                                   line=line, column=column, text=printable(t, 40)))
        raise NpuSmiError(Text(N_("{what}: line {line}: {column} {text!r} is not a number"), what=_WHAT, line=line,
                               column=column, text=printable(t, 40)))
    return int(t)


def _cells(raw: str, line: int) -> list[str]:
    body = raw.strip()
    if not body.endswith("|"):
        raise NpuSmiError(Text(N_("{what}: line {line}: the table row is cut short (no closing '|')"), what=_WHAT,
                               line=line))
    return body[1:-1].split("|")


class _Reader:
    """One pass over the lines (a small state machine: chip table, process table, mapping, key:value blocks)."""

    def __init__(self, lines: list[str], max_chips: int) -> None:
        self.lines = lines
        self.max_chips = max_chips
        self.out = _Parsed()
        self.head1: list[str] | None = None  # the chip table's column names, header line 1 (third cell)
        self.head2: list[str] | None = None
        self.first_cell2: list[str] = []  # header line 2, first cell: Chip [Device|Phy-ID]
        self.pending: tuple[int, list[str]] | None = None
        self.in_processes = False
        self.map_columns: list[str] | None = None
        self.block: list[tuple[int, str, str]] = []
        self.command: tuple[str, int | None, int | None] | None = None  # (kind, -i, -c)

    def run(self) -> _Parsed:
        for n, raw in enumerate(self.lines, 1):
            stripped = raw.strip()
            if stripped.startswith(("|", "+")):
                self._end_block()
                self.map_columns = None
                self._table(n, raw, stripped)
                continue
            self._close_row(n)
            if not stripped:
                self._end_block()
                self.map_columns = None
                continue
            cmd = _COMMAND.match(raw)
            if cmd is not None:
                self._end_block()
                self.map_columns = None
                self.command = _command(cmd.group("args"))
                self.head1 = self.head2 = None
                self.in_processes = False
                continue
            if _MAP_HEADER.match(raw):
                self._end_block()
                self.map_columns = [c.strip() for c in re.split(r"\s{2,}", stripped)]
                continue
            if self.map_columns is not None and self._map_row(n, stripped):
                continue
            kv = _KV.match(raw)
            if kv is not None and not kv.group("value").startswith("//"):
                self.block.append((n, kv.group("key").strip(), kv.group("value").strip()))
                continue
            self._end_block()
            self.out.skipped += 1
        self._close_row(len(self.lines) + 1, at_end=True)
        self._end_block()
        return self.out

    # -- the tables -------------------------------------------------------------------------------------------

    def _table(self, n: int, raw: str, stripped: str) -> None:
        if stripped.startswith("+"):
            self._close_row(n)
            return
        cells = _cells(raw, n)
        if len(cells) == 1:
            self._close_row(n)
            m = _VERSION.search(cells[0])
            if m is not None:
                self.out.tool, self.out.driver = m.group("tool"), m.group("driver")
            return
        words0 = cells[0].split()
        if len(cells) == 3 and words0[:1] == ["NPU"] and cells[1].strip() == "Health":
            self.head1, self.head2, self.in_processes = cells[2].split(), None, False
            return
        if len(cells) == 3 and self.head1 is not None and self.head2 is None and words0[:1] == ["Chip"]:
            self.head2, self.first_cell2 = cells[2].split(), words0
            return
        if len(cells) == 4 and words0[:2] == ["NPU", "Chip"] and "Process" in cells[1]:
            self._close_row(n)
            self.in_processes = True
            return
        if len(cells) == 4 and self.in_processes:
            self._process(n, cells)
            return
        if len(cells) == 3 and not self.in_processes:
            if self.head2 is None:
                raise NpuSmiError(Text(N_("{what}: line {line}: a table row before the table's column headers"),
                                       what=_WHAT, line=n))
            if self.pending is None:
                self.pending = (n, cells)
            else:
                first_line, first = self.pending
                self.pending = None
                self._chip(first_line, first, n, cells)
            return
        raise NpuSmiError(Text(N_("{what}: line {line}: a table row of {cells} cells fits no npu-smi table"),
                               what=_WHAT, line=n, cells=len(cells)))

    def _close_row(self, n: int, at_end: bool = False) -> None:
        if self.pending is not None:
            line = self.pending[0]
            self.pending = None
            if at_end:
                raise NpuSmiError(Text(N_("{what}: the chip record on line {line} has one line of two (the input "
                                          "ends): the table is cut short"), what=_WHAT, line=line))
            raise NpuSmiError(Text(N_("{what}: the chip record on line {line} has one line of two (line {end} ends "
                                      "the record): the table is cut short"), what=_WHAT, line=line, end=n))

    def _chip(self, n1: int, row1: list[str], n2: int, row2: list[str]) -> None:
        assert self.head1 is not None and self.head2 is not None
        if len(self.out.chips) >= self.max_chips:
            raise NpuSmiError(Text(_MORE_CHIPS, what=_WHAT, limit=self.max_chips))
        if _PCI_LIKE.search(row1[1]) or row2[1].strip() in _HEALTH_WORDS:
            raise NpuSmiError(Text(N_("{what}: lines {first}-{last}: a chip record's lines out of order (a line is "
                                      "missing)"), what=_WHAT, first=n1, last=n2))
        words1, words2 = row1[0].split(), row2[0].split()
        if not words1 or not words2:
            raise NpuSmiError(Text(N_("{what}: line {line}: a chip record without its NPU or Chip id"), what=_WHAT,
                                   line=n1))
        npu = _int(words1[0], "NPU id", n1)
        chip = _int(words2[0], "Chip id", n2)
        second: int | None = None
        if len(words2) != len(self.first_cell2):
            raise NpuSmiError(Text(N_("{what}: line {line}: {count} values under the columns {columns}"), what=_WHAT,
                                   line=n2, count=len(words2), columns=" ".join(self.first_cell2)))
        if len(words2) == 2:
            second = _int(words2[1], self.first_cell2[1], n2)
        c = _Chip(line=n1, npu=npu, chip=chip, name=" ".join(words1[1:]), health=row1[1].strip(),
                  bus=row2[1].strip(), second=second,
                  second_name=self.first_cell2[1] if len(self.first_cell2) > 1 else "")
        for columns, cell, n in ((self.head1, row1[2], n1), (self.head2, row2[2], n2)):
            items = [(m.group(1), m.group(2)) if m.group(3) is None else m.group(3) for m in _ITEM.finditer(cell)]
            if len(items) != len(columns):
                raise NpuSmiError(Text(N_("{what}: line {line}: {count} values under {width} columns ({columns})"),
                                       what=_WHAT, line=n, count=len(items), width=len(columns),
                                       columns=" ".join(columns)))
            for col, item in zip(columns, items):
                if col in _PAIR_COLUMNS and isinstance(item, str):
                    if item.lower() not in _PLACEHOLDERS:
                        raise NpuSmiError(Text(N_("{what}: line {line}: {column} is {value!r}, not used / total"),
                                               what=_WHAT, line=n, column=col, value=printable(item, 40)))
                    item = (item, item)
                elif col not in _PAIR_COLUMNS and isinstance(item, tuple):
                    raise NpuSmiError(Text(N_("{what}: line {line}: {column} holds a pair ({value})"), what=_WHAT,
                                           line=n, column=col, value=printable("/".join(item), 40)))
                c.values[col] = item
        self.out.chips.append(c)

    def _process(self, n: int, cells: list[str]) -> None:
        ids = cells[0].split()
        if len(ids) != 2:
            raise NpuSmiError(Text(N_("{what}: line {line}: a process row without its NPU and Chip ids"), what=_WHAT,
                                   line=n))
        key = (_int(ids[0], "NPU id", n), _int(ids[1], "Chip id", n))
        pid, st = reading(cells[1].strip(), whole)
        mem = _value(cells[3], whole)[0]
        procs = self.out.processes.setdefault(key, [])
        procs.append({"pid": pid if st == Status.OK else None, "name": cells[2].strip(), "memory_mib": mem})

    def _map_row(self, n: int, stripped: str) -> bool:
        assert self.map_columns is not None
        words = stripped.split()
        width = len(self.map_columns)
        if len(words) < width or not words[0].isdigit() or not words[1].isdigit():
            self.map_columns = None
            return False
        cols = dict(zip(self.map_columns[:-1], words[:width - 1]))
        logic = cols.get("Chip Logic ID", "-")
        self.out.mapping.append(_MapRow(npu=_int(words[0], "NPU ID", n), chip=_int(words[1], "Chip ID", n),
                                        logic=int(logic) if logic.isdigit() and len(logic) < 9 else None,
                                        name=" ".join(words[width - 1:])))
        if len(self.out.mapping) > 4 * self.max_chips:
            raise NpuSmiError(Text(N_("{what}: more than {limit} rows in the chip mapping"), what=_WHAT,
                                   limit=4 * self.max_chips))
        return True

    # -- key : value blocks -----------------------------------------------------------------------------------

    def _end_block(self) -> None:
        if not self.block:
            return
        block, self.block = self.block, []
        kind, cmd_npu, cmd_chip = self.command or ("", None, None)
        # A block may hold several chips when npu-smi printed no blank line between them: a second
        # "Chip ID" starts a new one. "Chip ID" may also close its block (-t ecc -i N prints it last).
        parts: list[list[tuple[int, str, str]]] = [[]]
        for item in block:
            if item[1] == "Chip ID" and any(k == "Chip ID" for _, k, _ in parts[-1]):
                parts.append([])
            parts[-1].append(item)
        for part in parts:
            self._facts(part, kind, cmd_npu, cmd_chip)
        if cmd_chip is not None:
            # "-i N -c C" prints one block: a later block without its own ids is not that chip's.
            self.command = None

    def _facts(self, part: list[tuple[int, str, str]], kind: str, npu: int | None, chip: int | None) -> None:
        keys = {k: v for _, k, v in part}
        if "NPU ID" in keys:
            npu = _int(keys["NPU ID"], "NPU ID", part[0][0], the=False)
            self.command = (kind, npu, self.command[2] if self.command else None)  # later blocks: the same card
        if "Chip ID" in keys:
            chip = _int(keys["Chip ID"], "Chip ID", part[0][0], the=False)
        name = keys.get("Chip Name", "").strip().lower()
        if name == "mcu" or keys.get("Chip Type", "").strip().lower() == "mcu":
            if npu is not None and "Power Dissipation(W)" in keys:
                self.out.mcu_power[npu] = keys["Power Dissipation(W)"]
            return
        facts = [(k, v) for _, k, v in part if k not in ("NPU ID", "Chip ID", "Chip Count")]
        if not facts:
            return
        target = _Facts(pairs=facts)
        if npu is None:
            self.out.loose.append((part[0][0], target))
        elif chip is None:
            self.out.card_facts.setdefault(npu, _Facts()).pairs.extend(facts)
        else:
            self.out.chip_facts.setdefault((npu, chip), _Facts()).pairs.extend(facts)


def _command(args: str) -> tuple[str, int | None, int | None]:
    """(kind, -i, -c) of an ``npu-smi info`` command line: kind "" for the table, "m" for -m, else -t's value."""
    words = args.split()
    kind, npu, chip = "", None, None
    for i, w in enumerate(words):
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if w == "-m":
            kind = "m"
        elif w == "-t":
            kind = nxt
        elif w == "-i" and nxt.isdigit() and len(nxt) < 9:
            npu = int(nxt)
        elif w == "-c" and nxt.isdigit() and len(nxt) < 9:
            chip = int(nxt)
    return kind, npu, chip


def _value(text: str | None, conv: Callable[[str], Any]) -> tuple[Any, Status]:
    """(value, status) of an npu-smi value: ``-``/``NA``/``N/A`` are unsupported, never zero."""
    if text is None or text.strip().lower() in _PLACEHOLDERS:
        return None, Status.UNSUPPORTED
    return reading(text, conv)


def _float(text: str) -> float:
    t = text.strip()
    if len(t) > 24 or not re.fullmatch(r"-?\d{1,12}(?:\.\d{1,6})?", t):
        raise ValueError(t)
    return float(t)


def _bus(text: str) -> str:
    n = normalize_bus_id(text)
    if not _PCI.fullmatch(n):
        raise ValueError(text)  # masked ("0000:xx:00.0") or no address
    return n


def _hex16(text: str) -> int:
    t = text.strip()
    if not re.fullmatch(r"0[xX][0-9a-fA-F]{1,4}", t):
        raise ValueError(t)
    return int(t, 16)


def _product_name(table: str, mapped: str | None) -> str:
    """``910B4`` → ``Ascend 910B4``, ``Ascend910`` → ``Ascend 910``; a redacted name (``xxx``) yields to ``-m``'s."""
    def ascend(n: str) -> str:
        rest = n[len("Ascend"):].strip() if n.lower().startswith("ascend") else n
        return f"Ascend {rest}".strip()
    if any(ch.isdigit() for ch in table):
        return ascend(table)
    if mapped and any(ch.isdigit() for ch in mapped):
        return ascend(mapped)
    return ascend(table or mapped or "NPU")


_TEMP_KEY = re.compile(r"(?:NPU |AI Core |)Temperature ?\(C\)")
_HBM_TEMP_KEY = re.compile(r"HBM Temperature ?\(C\)")


class _Chipset:
    """The chip's readings assembled from the table, the mapping and the -t facts."""

    def __init__(self, inv: Readings, sample: Readings, extra: dict[str, Any]) -> None:
        self.inv, self.sample, self.extra = inv, sample, extra

    def fill_absent(self, name: str, text: str, conv: Callable[[str], Any], inventory: bool = False) -> None:
        """Put a -t value where the table gave none (the table's reading comes first: same moment as the rest)."""
        r = self.inv if inventory else self.sample
        if r.values.get(name) is not None:
            return
        value, st = _value(text, conv)
        if value is not None or r.status.get(name) == Status.UNSUPPORTED.value:
            r.put(name, value, st)


def _ecc(facts: list[tuple[str, str]], c: _Chipset) -> None:
    counters: dict[str, int] = {}
    for k, v in facts:
        if "Error Count" in k or "Err Cnt" in k or "Pages Count" in k:
            value, st = _value(v, whole)
            if value is not None:
                counters[k] = value
    if not counters:
        return
    c.extra["ecc"] = counters

    def total(*names: str) -> int | None:
        found = [counters[n] for n in names if n in counters]
        return sum(found) if found else None
    for fld, names in (
            ("ecc_corr_vol", ("HBM Single Bit Error Count", "DDR Single Bit Error Count", "Single-bit Error Count")),
            ("ecc_unc_vol", ("HBM Double Bit Error Count", "DDR Double Bit Error Count", "Double-bit Error Count")),
            ("ecc_corr_agg", ("HBM Single Bit Aggregate Total Err Cnt", "DDR Single Bit Aggregate Total Err Cnt")),
            ("ecc_unc_agg", ("HBM Double Bit Aggregate Total Err Cnt", "DDR Double Bit Aggregate Total Err Cnt")),
            ("retired_sbe", ("HBM Single Bit Isolated Pages Count", "DDR Single Bit Isolated Pages Count")),
            ("retired_dbe", ("HBM Double Bit Isolated Pages Count", "DDR Double Bit Isolated Pages Count"))):
        value = total(*names)
        if value is not None:
            c.sample.put(fld, value)


def _apply(facts: list[tuple[str, str]], c: _Chipset, card: bool) -> None:
    """The -t facts of one chip (or, ``card``, of its card) into its readings and extra."""
    temps: dict[str, float] = dict(c.extra.get("temperatures", {}))
    for k, v in facts:
        if k in ("Health Status", "Health"):
            c.extra["health"] = v
        elif k == "Error Code":
            c.extra["error_codes"] = [] if v.strip().lower() in _PLACEHOLDERS else [
                code for code in re.split(r"[\s,;]+", v.strip()) if code]
        elif k == "Error Information":
            if v.strip().lower() not in _PLACEHOLDERS:
                c.extra["error_info"] = v.strip()
        elif k == "Serial Number":
            c.inv.read("serial", None if v.strip().lower() in _PLACEHOLDERS else v.strip(), str)
        elif k == "Software Version":
            c.extra["software_version"] = v.strip()
        elif k == "Firmware Version":
            if v.strip().lower() not in _PLACEHOLDERS:
                c.extra["firmware_version"] = v.strip()
                c.inv.read("firmware_version", v.strip(), str)  # the inventory field: the version matrix, its rule
        elif k in ("Product Name", "Model", "Chip Version", "Compatibility"):
            if v.strip().lower() not in _PLACEHOLDERS:
                c.extra[k.lower().replace(" ", "_")] = v.strip()
        elif k in ("Die ID", "VDie ID"):
            if v.strip().lower() not in _PLACEHOLDERS:
                c.extra["die_id"] = v.strip()
        elif k == "Chip Name" and not card:
            c.extra.setdefault("chip_name", v.strip())
        elif k == "PCIe Bus Info" and not card:
            c.fill_absent("pci_bus_id", v, _bus, inventory=True)
        elif k in ("NPU Real-time Power(W)", "Real-time Power(W)") and not card:
            c.fill_absent("power_w", v, _float)
        elif k == "Power Dissipation(W)" and card:
            value = _value(v, _float)[0]
            if value is not None:
                c.extra["card_power_w"] = value
        elif k == "Rated Power Dissipation(W)":
            value = _value(v, _float)[0]
            if value is not None:
                c.extra["rated_power_w"] = value
        elif k.endswith("(C)") and not card:
            value = _value(v, _float)[0]
            if value is not None:
                temps[k] = value
            if _TEMP_KEY.fullmatch(k):
                c.fill_absent("temp_c", v, whole)
            elif _HBM_TEMP_KEY.fullmatch(k):
                c.fill_absent("mem_temp_c", v, whole)
        elif k in ("Aicore Usage Rate(%)",) and not card:
            c.fill_absent("util_gpu_pct", v, whole)
        elif k == "HBM Capacity(MB)" and not card:
            c.fill_absent("memory_total_mib", v, whole, inventory=True)
    if temps:
        c.extra["temperatures"] = temps
    if not card:
        _ecc(facts, c)


def _index(chips: list[_Chip], logic: list[int | None]) -> tuple[list[int], Text]:
    """Each chip's device index: -m's logic id, else the table's Phy-ID / Device, else the order (all unique);
    and the note that says which."""
    if chips and all(x is not None for x in logic) and len(set(logic)) == len(logic):
        return [int(x) for x in logic if x is not None], Text(N_("device index from the chip logic ids of npu-smi "
                                                                 "info -m"))
    seconds = [c.second for c in chips]
    if chips and all(x is not None for x in seconds) and len(set(seconds)) == len(seconds):
        return [int(x) for x in seconds if x is not None], Text(N_("device index from the table's {column} column"),
                                                                column=chips[0].second_name)
    return list(range(len(chips))), Text(N_("device index from the table's order"))


def _chips_from_mapping(rows: list[_MapRow]) -> list[_Chip]:
    return [_Chip(line=0, npu=r.npu, chip=r.chip, name=r.name, health="", bus="", second=None, second_name="")
            for r in rows if r.logic is not None]


def parse_npu_smi(data: bytes | str, max_chips: int = MAX_CHIPS) -> Capture:
    """Parse npu-smi output: the ``npu-smi info`` table, ``-m`` and ``-t`` outputs, alone or one after another.

    Every malformed or hostile input ends in :class:`NpuSmiError` (a :class:`SourceError`) with a one-line
    reason, never in another exception and never in a wrong value: not UTF-8 / UTF-16 with a BOM, control
    characters other than ANSI colour codes, more than :data:`MAX_BYTES`, :data:`MAX_LINES`,
    :data:`MAX_LINE_CHARS` or ``max_chips``, a table cut inside a chip record or a row, a row whose values do
    not fit its header, ``-t`` output with no chip list (neither the table nor ``-m``) to give it to.

    Raises:
        NpuSmiError: the input cannot be used (one line: why).
    """
    text = decode(data)
    parsed = _Reader(_lines(text), max_chips).run()
    notes: list[str] = []
    chips = parsed.chips
    from_mapping = not chips
    if from_mapping:
        chips = _chips_from_mapping(parsed.mapping)
        if len(chips) > max_chips:
            raise NpuSmiError(Text(_MORE_CHIPS, what=_WHAT, limit=max_chips))
        if chips:
            notes.append(Text(N_("npu-smi info -m only: chip names and ids, no readings (import `npu-smi info` with "
                                 "it)")))
    if not chips:
        if parsed.chip_facts or parsed.card_facts or parsed.loose:
            raise NpuSmiError(Text(N_("{what}: -t output without the `npu-smi info` table or -m mapping: no chip list "
                                      "to give it to (import them together)"), what=_WHAT))
        raise NpuSmiError(Text(N_("{what}: no npu-smi table, chip mapping or -t output found: not npu-smi output"),
                               what=_WHAT))
    mapped = {(r.npu, r.chip): r for r in parsed.mapping}
    keys = {(c.npu, c.chip) for c in chips}
    if len(keys) != len(chips):
        raise NpuSmiError(Text(N_("{what}: the same NPU and Chip id twice in one table"), what=_WHAT))
    unmatched = [r for r in parsed.mapping if r.logic is not None and (r.npu, r.chip) not in keys]
    if unmatched and not from_mapping:
        notes.append(Text(N_("{count} chip(s) of npu-smi info -m are not in the table (NPU/chip {chips})"),
                          count=len(unmatched), chips=", ".join(f"{r.npu}/{r.chip}" for r in unmatched[:8])))
    logic = [mapped[(c.npu, c.chip)].logic if (c.npu, c.chip) in mapped else None for c in chips]
    indexes, index_note = _index(chips, logic)
    notes.append(index_note)
    if parsed.tool:
        notes.append(f"npu-smi {parsed.tool}")  # the tool's version: nothing to translate
    else:
        notes.append(Text(N_("no npu-smi version line: driver version unknown")))
    per_card: dict[int, int] = {}
    for c in chips:
        per_card[c.npu] = per_card.get(c.npu, 0) + 1
    for line, facts in parsed.loose:
        notes.append(Text(N_("line {line}: npu-smi -t output that names no NPU: not used"), line=line))
    for (npu, chip) in parsed.chip_facts:
        if (npu, chip) not in keys:
            notes.append(Text(N_("npu-smi -t output for NPU {npu} chip {chip}, which the table does not list: not "
                                 "used"), npu=npu, chip=chip))
    odd = sorted({c.health for c in chips if c.health and c.health not in _HEALTH_WORDS})
    if odd and not from_mapping:
        notes.append(Text(N_("health state(s) {states} are none of {words}: kept as printed"),
                          states=", ".join(printable(h, 40) for h in odd), words=", ".join(_HEALTH_WORDS)))
    if parsed.skipped:
        notes.append(Text(N_("{count} line(s) that are no npu-smi output skipped"), count=parsed.skipped))

    node = node_readings()
    node.read("driver_version", parsed.driver, str)
    gpus: list[GpuInventory] = []
    samples: list[GpuSample] = []
    extras: list[dict[str, Any]] = []
    for c, index in zip(chips, indexes):
        cs = _build(c, index, parsed, mapped.get((c.npu, c.chip)), per_card[c.npu], from_mapping)
        if node.values.get("driver_version") is None and isinstance(cs.extra.get("software_version"), str):
            node.put("driver_version", cs.extra["software_version"])  # -t board: "Software Version" is the driver
        serial = cs.inv.values.get("serial")
        bus = cs.inv.values.get("pci_bus_id") or _UUID_PART.sub("", c.bus) or "nobus"
        uuid = (f"NPU-{_UUID_PART.sub('', serial)}-{c.chip}" if isinstance(serial, str) and serial
                else f"NPU-{bus}-{c.npu}-{c.chip}")
        if not (isinstance(serial, str) and serial):
            cs.extra["uuid_scope"] = "node"  # unique on its host only: capture_poll adds the node's name
        cs.inv.put("uuid", uuid)
        if per_card[c.npu] > 1:  # a chip of a card of several: the card it sits on (the agent's npu-smi backend's form)
            cs.inv.put("card_id", f"{serial if isinstance(serial, str) and serial else 'npu'}:{c.npu}")
        name = str(cs.inv.values.get("name") or "Ascend NPU")
        gpus.append(GpuInventory(uuid=uuid, index=index, name=name, values=cs.inv.values, status=cs.inv.status,
                                 state=lost_state(False)))
        samples.append(GpuSample(ts=0.0, uuid=uuid, index=index, values=cs.sample.values, status=cs.sample.status,
                                 state=lost_state(False)))
        extras.append(cs.extra)
    if len({g.uuid for g in gpus}) != len(gpus):
        raise NpuSmiError(Text(N_("{what}: two chips with the same identity (card serial and chip id)"), what=_WHAT))
    node.put("gpu_count", len(gpus))
    return Capture(source=SOURCE, info=make_info("", node, SOURCE), gpus=gpus, samples=samples, ts=None,
                   notes=notes, vendor=VENDOR, extra=extras)


def _build(c: _Chip, index: int, parsed: _Parsed, row: _MapRow | None, chips_on_card: int,
           from_mapping: bool) -> _Chipset:
    inv, s = inventory_readings(), sample_readings()
    extra: dict[str, Any] = {"npu_id": c.npu, "chip_id": c.chip}
    cs = _Chipset(inv, s, extra)
    inv.put("index", index)
    if row is not None:
        if row.logic is not None:
            extra["logic_id"] = row.logic
        extra["chip_name"] = row.name
    if c.second is not None:
        extra["phy_id" if c.second_name == "Phy-ID" else "device_id"] = c.second
    if not from_mapping:
        extra["table_name"] = c.name
        extra["health"] = c.health
        inv.read("pci_bus_id", c.bus, _bus)
    inv.put("name", _product_name("" if from_mapping else c.name, row.name if row else None))
    v = c.values
    power = v.get("Power(W)")
    if isinstance(power, str):
        s.put("power_w", *_value(power, _float))
    temp = v.get("Temp(C)")
    if isinstance(temp, str):
        s.put("temp_c", *_value(temp, whole))
    core = v.get("AICore(%)")
    if isinstance(core, str):
        s.put("util_gpu_pct", *_value(core, whole))
    mem, hbm, pages = v.get("Memory-Usage(MB)"), v.get("HBM-Usage(MB)"), v.get("Hugepages-Usage(page)")
    hbm_total = _value(hbm[1], whole)[0] if isinstance(hbm, tuple) else None
    device_mem = hbm if isinstance(hbm, tuple) and hbm_total else mem
    if isinstance(device_mem, tuple):
        inv.put("memory_total_mib", *_value(device_mem[1], whole))
        s.put("mem_used_mib", *_value(device_mem[0], whole))
    if device_mem is hbm and isinstance(mem, tuple) and _value(mem[1], whole)[0]:  # "0 / 0": no DDR shown
        for key, text in (("ddr_used_mib", mem[0]), ("ddr_total_mib", mem[1])):
            value = _value(text, whole)[0]
            if value is not None:
                extra[key] = value
    if isinstance(pages, tuple):
        for key, text in (("hugepages_used", pages[0]), ("hugepages_total", pages[1])):
            value = _value(text, whole)[0]
            if value is not None:
                extra[key] = value
    others = {col: "/".join(val) if isinstance(val, tuple) else val
              for col, val in v.items() if col not in _KNOWN_COLUMNS}
    if others:  # a column this module does not know (a later npu-smi): kept as printed
        extra["other_columns"] = others
    if (c.npu, c.chip) in parsed.processes:  # "No running processes found in NPU n": absent, not []
        extra["processes"] = parsed.processes[(c.npu, c.chip)]
    card = parsed.card_facts.get(c.npu)
    if card is not None:
        _apply(card.pairs, cs, card=True)
        if chips_on_card == 1:  # a card-level -t block (-i N without -c) of a one-chip card is that chip's
            _apply(card.pairs, cs, card=False)
    if c.npu in parsed.mcu_power:
        value = _value(parsed.mcu_power[c.npu], _float)[0]
        if value is not None:
            extra["card_power_w"] = value
    own = parsed.chip_facts.get((c.npu, c.chip))
    if own is not None:
        _apply(own.pairs, cs, card=False)
    _device_ids(card.pairs if card else [], cs)
    return cs


def _device_ids(pairs: list[tuple[str, str]], c: _Chipset) -> None:
    """-t board's PCI ids as the catalog writes them (``0x<device><vendor>``, like NVML's 0x233010DE)."""
    keys = dict(pairs)
    for fld, dev, ven in (("pci_device_id", "PCI Device ID", "PCI Vendor ID"),
                          ("pci_subsystem_id", "Subsystem Device ID", "Subsystem Vendor ID")):
        if dev in keys and ven in keys:
            d, st1 = _value(keys[dev], _hex16)
            vnd, st2 = _value(keys[ven], _hex16)
            if d is not None and vnd is not None:
                c.inv.put(fld, f"0x{d:04X}{vnd:04X}")
            else:
                c.inv.put(fld, None, st1 if d is None else st2)


FORMATS: dict[str, tuple[Callable[[str], bool], Callable[[bytes | str], Capture]]] = {
    SOURCE: (detect, parse_npu_smi),
}
"""Format name → (detect from the content, parse): what ``fleetmon import --format auto|npu-smi`` registers."""
