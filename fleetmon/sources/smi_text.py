"""``nvidia-smi -q`` plain text (and the default ``nvidia-smi`` table) → a :class:`~fleetmon.sources.capture.Capture`.

The text report is the XML report laid out for people: the same values under
English titles, nested by indentation (4 spaces a level). Rather than a second
mapping to records, :func:`parse_smi_text` rebuilds the ``<nvidia_smi_log>``
elements fleetmon reads (:data:`_GPU_PATHS`, title path → XML path) and hands them
to :func:`fleetmon.sources.smi_xml.parse_element`, so both reports mean the same.

The default table (``nvidia-smi`` with no option) has far less: index, a name
that may be cut short (``NVIDIA GeForce ...``), bus id, fan, temperature,
P-state, power draw and cap, memory used and total, utilisation, volatile
uncorrected ECC errors, MIG mode. It has no UUID: its GPUs get the agent's
placeholder UUIDs (``unknown-gpu-<index>-<bus id>``) and a note says so.

Checked against ../shared/fixtures/A2_nvidia_smi_q_text (drivers 525-560, a
truncated report, "ERR!" fan readings, no trailing newline).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from xml.etree.ElementTree import Element, SubElement

from fleetmon.i18n import N_, Text
from fleetmon.sources import SourceError
from fleetmon.sources.capture import Capture
from fleetmon.sources.smi_xml import MAX_GPUS, parse_element

__all__ = ["parse_smi_text", "parse_smi_table", "parse_smi_report", "SOURCE", "TABLE_SOURCE"]

SOURCE = "nvidia-smi-text"
TABLE_SOURCE = "nvidia-smi-table"

_TOP = {"Timestamp": "timestamp", "Driver Version": "driver_version", "CUDA Version": "cuda_version",
        "Attached GPUs": "attached_gpus"}

_LINK = "pci/pci_gpu_link_info"
_ECC_NAMES = {"SRAM Correctable": "sram_correctable", "SRAM Uncorrectable": "sram_uncorrectable",
              "SRAM Uncorrectable Parity": "sram_uncorrectable_parity",
              "SRAM Uncorrectable SEC-DED": "sram_uncorrectable_secded",
              "DRAM Correctable": "dram_correctable", "DRAM Uncorrectable": "dram_uncorrectable"}
_POWER_NAMES = {"Power Draw": "power_draw", "Average Power Draw": "average_power_draw",
                "Instant Power Draw": "instant_power_draw", "Current Power Limit": "current_power_limit",
                "Enforced Power Limit": "enforced_power_limit", "Default Power Limit": "default_power_limit",
                "Min Power Limit": "min_power_limit", "Max Power Limit": "max_power_limit"}
_REASONS = {"Idle": "gpu_idle", "Applications Clocks Setting": "applications_clocks_setting",
            "SW Power Cap": "sw_power_cap", "HW Slowdown": "hw_slowdown", "HW Thermal Slowdown": "hw_thermal_slowdown",
            "HW Power Brake Slowdown": "hw_power_brake_slowdown", "Sync Boost": "sync_boost",
            "SW Thermal Slowdown": "sw_thermal_slowdown", "Display Clock Setting": "display_clocks_setting"}


def _gpu_paths() -> dict[tuple[str, ...], str]:
    p: dict[tuple[str, ...], str] = {
        ("Product Name",): "product_name", ("Product Architecture",): "product_architecture",
        ("Persistence Mode",): "persistence_mode", ("MIG Mode", "Current"): "mig_mode/current_mig",
        ("MIG Mode", "Pending"): "mig_mode/pending_mig", ("Serial Number",): "serial", ("GPU UUID",): "uuid",
        ("VBIOS Version",): "vbios_version", ("Board Part Number",): "board_part_number",
        ("Inforom Version", "Image Version"): "inforom_version/img_version",
        ("Inforom Version", "OEM Object"): "inforom_version/oem_object",
        ("Inforom Version", "ECC Object"): "inforom_version/ecc_object",
        ("Inforom Version", "Power Management Object"): "inforom_version/pwr_object",
        ("PCI", "Bus Id"): "pci/pci_bus_id", ("PCI", "Device Id"): "pci/pci_device_id",
        ("PCI", "Sub System Id"): "pci/pci_sub_system_id",
        ("PCI", "GPU Link Info", "PCIe Generation", "Max"): f"{_LINK}/pcie_gen/max_link_gen",
        ("PCI", "GPU Link Info", "PCIe Generation", "Current"): f"{_LINK}/pcie_gen/current_link_gen",
        ("PCI", "GPU Link Info", "PCIe Generation", "Device Max"): f"{_LINK}/pcie_gen/max_device_link_gen",
        ("PCI", "GPU Link Info", "Link Width", "Max"): f"{_LINK}/link_widths/max_link_width",
        ("PCI", "GPU Link Info", "Link Width", "Current"): f"{_LINK}/link_widths/current_link_width",
        ("PCI", "Replays Since Reset"): "pci/replay_counter", ("PCI", "Tx Throughput"): "pci/tx_util",
        ("PCI", "Rx Throughput"): "pci/rx_util", ("Fan Speed",): "fan_speed",
        ("Performance State",): "performance_state",
        ("FB Memory Usage", "Total"): "fb_memory_usage/total", ("FB Memory Usage", "Used"): "fb_memory_usage/used",
        ("FB Memory Usage", "Free"): "fb_memory_usage/free", ("Utilization", "Gpu"): "utilization/gpu_util",
        ("Utilization", "Memory"): "utilization/memory_util", ("ECC Mode", "Current"): "ecc_mode/current_ecc",
        ("ECC Mode", "Pending"): "ecc_mode/pending_ecc", ("ECC Errors",): "ecc_errors",
        ("Retired Pages",): "retired_pages",
        ("Retired Pages", "Single Bit ECC"): "retired_pages/multiple_single_bit_retirement/retired_count",
        ("Retired Pages", "Double Bit ECC"): "retired_pages/double_bit_retirement/retired_count",
        ("Retired Pages", "Pending Page Blacklist"): "retired_pages/pending_blacklist",
        ("Retired Pages", "Pending Page Retirement"): "retired_pages/pending_retirement",
        ("Remapped Rows",): "remapped_rows",
        ("Remapped Rows", "Correctable Error"): "remapped_rows/remapped_row_corr",
        ("Remapped Rows", "Uncorrectable Error"): "remapped_rows/remapped_row_unc",
        ("Remapped Rows", "Pending"): "remapped_rows/remapped_row_pending",
        ("Remapped Rows", "Remapping Failure Occurred"): "remapped_rows/remapped_row_failure",
        ("Temperature", "GPU Current Temp"): "temperature/gpu_temp",
        ("Temperature", "GPU Shutdown Temp"): "temperature/gpu_temp_max_threshold",
        ("Temperature", "GPU Slowdown Temp"): "temperature/gpu_temp_slow_threshold",
        ("Temperature", "Memory Current Temp"): "temperature/memory_temp",
        ("Clocks", "Graphics"): "clocks/graphics_clock", ("Clocks", "SM"): "clocks/sm_clock",
        ("Clocks", "Memory"): "clocks/mem_clock", ("Max Clocks", "SM"): "max_clocks/sm_clock",
        ("Max Clocks", "Memory"): "max_clocks/mem_clock",
    }
    for scope in ("Volatile", "Aggregate"):
        for title, tag in _ECC_NAMES.items():
            p[("ECC Errors", scope, title)] = f"ecc_errors/{scope.lower()}/{tag}"
        for title, tag in (("Single Bit", "single_bit"), ("Double Bit", "double_bit")):  # before ~470
            p[("ECC Errors", scope, title, "Total")] = f"ecc_errors/{scope.lower()}/{tag}/total"
    for block in ("GPU Power Readings", "Power Readings"):
        for title, tag in _POWER_NAMES.items():
            p[(block, title)] = f"gpu_power_readings/{tag}"
        p[(block, "Power Limit")] = "gpu_power_readings/power_limit"
    return p


_GPU_PATHS = _gpu_paths()
"""``nvidia-smi -q`` title path (below ``GPU <bus id>``) → the XML report's element path."""
_MAX_PATH = max(len(k) for k in _GPU_PATHS)

MAX_TEXT_BYTES = 16 * 1024 * 1024
"""Largest text report or table, in characters (an 8-GPU H100 report is 73 KB). Below the XML's
:data:`~fleetmon.sources.smi_xml.MAX_BYTES`: the text is held in several forms while its lines are
nested (measured: 64 MiB of text peaked at 350 MiB above the start, 16 MiB at 91 MiB)."""
MAX_LINES = 250_000
"""Lines in one text report or table (an 8-GPU H100 report has about 1,650): bounds the parsed lines."""
MAX_LINE_CHARS = 4096
"""A longer line is skipped (the longest real one is about 100 characters; the table's patterns
would take quadratic time on kilobytes of blanks)."""
_LINE_BREAKS = re.compile("[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")  # what str.splitlines() splits at


def _checked(text: str, what: Text) -> str:
    """The report with tabs expanded, or SourceError when it is larger than a report can be (``what``: the
    report's name, said in the reader's language in the error)."""
    if len(text) > MAX_TEXT_BYTES:
        raise SourceError(Text(N_("{what}: {count} characters, more than the {limit} a report may have"), what=what,
                               count=len(text), limit=MAX_TEXT_BYTES))
    breaks = 0
    for _ in _LINE_BREAKS.finditer(text):
        breaks += 1
        if breaks > 2 * MAX_LINES:  # \r\n counts twice
            break
    if breaks > 2 * MAX_LINES or len(text.splitlines()) > MAX_LINES:
        raise SourceError(Text(N_("{what}: more than {limit} lines"), what=what, limit=MAX_LINES))
    # Line by line, so a line of tabs never grows fourfold before it is skipped.
    return "\n".join(line for line in (raw.expandtabs(4) for raw in text.splitlines() if len(raw) <= MAX_LINE_CHARS)
                     if len(line) <= MAX_LINE_CHARS)


@dataclass
class _Node:
    key: str
    value: str | None
    indent: int
    children: list["_Node"] = field(default_factory=list)


def _tree(text: str) -> list[_Node]:
    """The report's lines as a forest nested by indentation (``Key : value`` or a title alone)."""
    roots: list[_Node] = []
    stack: list[_Node] = []
    for raw in text.splitlines():
        if not raw.strip() or raw.startswith("="):
            continue
        # Split by hand, not with a regex: a lazy key before optional blanks took quadratic time on a
        # long line of blanks (20,000 of them: 15 s).
        body = raw.lstrip(" ")
        key, colon, value = body.partition(":")
        node = _Node(key.strip(), value.strip() if colon else None, len(raw) - len(body))
        while stack and stack[-1].indent >= node.indent:
            stack.pop()
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    return roots


def _split_gpu_header(raw: str) -> str | None:
    m = re.fullmatch(r"GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])", raw.strip())
    return m.group(1) if m else None


def _ensure(parent: Element, path: str) -> Element:
    el = parent
    for part in path.split("/"):
        child = el.find(part)
        el = child if child is not None else SubElement(el, part)
    return el


def _fill_gpu(gpu: Element, nodes: list[_Node], path: tuple[str, ...] = ()) -> None:
    for n in nodes:
        here = path + (n.key,)
        target = _GPU_PATHS.get(here)
        if target is None and len(here) >= 2 and here[0] in ("Clocks Event Reasons", "Clocks Throttle Reasons"):
            reason = _REASONS.get(n.key)
            target = None if reason is None else f"clocks_event_reasons/clocks_event_reason_{reason}"
        if target is not None and n.value is not None:
            _ensure(gpu, target).text = n.value
        if len(here) < _MAX_PATH:  # deeper lines mean nothing: no recursion as deep as a hostile indentation
            _fill_gpu(gpu, n.children, here)


def _gpu_lines(text: str) -> list[tuple[str, list[_Node]]]:
    """(bus id, the GPU's nested lines) per ``GPU <bus id>`` header, and the top-level lines under key ''."""
    lines = text.splitlines()
    out: list[tuple[str, list[_Node]]] = []
    top: list[str] = []
    current: list[str] | None = None
    bus = ""
    for raw in lines:
        header = _split_gpu_header(raw) if not raw.startswith(" ") else None
        if header is not None:
            if current is not None:
                out.append((bus, _tree("\n".join(current))))
            bus, current = header, []
        elif current is not None:
            current.append(raw)
        else:
            top.append(raw)
    if current is not None:
        out.append((bus, _tree("\n".join(current))))
    return [("", _tree("\n".join(top)))] + out


def parse_smi_text(text: str, max_gpus: int = MAX_GPUS) -> Capture:
    """Parse an ``nvidia-smi -q`` report.

    Raises:
        SourceError: not such a report, or larger than one can be (:data:`MAX_TEXT_BYTES`,
            :data:`MAX_LINES`; lines over :data:`MAX_LINE_CHARS` are skipped); one line.
    """
    text = _checked(text, Text(N_("nvidia-smi text")))
    if "NVSMI LOG" not in text and not re.search(r"^Driver Version\s*:", text, re.M):
        raise SourceError(Text(N_("nvidia-smi text: no '==NVSMI LOG==' banner or 'Driver Version' line")))
    parts = _gpu_lines(text)
    root = Element("nvidia_smi_log")
    for n in parts[0][1]:
        tag = _TOP.get(n.key)
        if tag is not None and n.value is not None:
            SubElement(root, tag).text = n.value
    for bus, nodes in parts[1:]:
        gpu = SubElement(root, "gpu", id=bus)
        _fill_gpu(gpu, nodes)
    # Both spellings of the pending flag: nvidia-smi's text names it "Pending Page Blacklist".
    for gpu in root.findall("gpu"):
        rp = gpu.find("retired_pages")
        if rp is not None and rp.find("pending_retirement") is None and rp.find("pending_blacklist") is not None:
            SubElement(rp, "pending_retirement").text = rp.findtext("pending_blacklist")
    capture = parse_element(root, SOURCE, max_gpus)
    if not parts[1:]:
        capture.notes.append(Text(N_("the report lists no GPU")))
    return capture


_TABLE_HEAD = re.compile(r"NVIDIA-SMI\s+(?P<smi>\S+)\s+Driver Version:\s*(?P<driver>\S+)\s+CUDA Version:\s*(?P<cuda>\S+)")
_ROW1 = re.compile(r"\|\s*(?P<index>\d+)\s+(?P<name>.*?)\s+(?P<persist>On|Off)\s*\|\s*(?P<bus>[0-9A-Fa-f:.]+)\s+"
                   r"(?P<disp>\S+)\s*\|\s*(?P<ecc>\S+)\s*\|")
_ROW2 = re.compile(r"\|\s*(?P<fan>\S+)\s+(?P<temp>\S+)\s+(?P<perf>\S+)\s+(?P<pwr>\S+)\s*/\s*(?P<cap>\S+)\s*\|"
                   r"\s*(?P<used>\S+)\s*/\s*(?P<total>\S+)\s*\|\s*(?P<util>\S+)\s+(?P<compute>.*?)\s*\|")
_ROW3 = re.compile(r"\|\s*\|\s*\|\s*(?P<mig>\S+)\s*\|")


def _unit(text: str, unit: str) -> str:
    """``"38C"`` → ``"38 C"``; placeholders as they are."""
    m = re.fullmatch(r"(-?\d+(?:\.\d+)?)" + re.escape(unit), text)
    return f"{m.group(1)} {unit}" if m else text


def parse_smi_table(text: str, max_gpus: int = MAX_GPUS) -> Capture:
    """Parse the default ``nvidia-smi`` table (a few values per GPU; see the module docstring)."""
    text = _checked(text, Text(N_("nvidia-smi table")))
    head = _TABLE_HEAD.search(text)
    if head is None:
        raise SourceError(Text(N_("nvidia-smi table: no 'NVIDIA-SMI … Driver Version: … CUDA Version: …' header")))
    root = Element("nvidia_smi_log")
    first = text.lstrip().splitlines()[0].strip()[:MAX_LINE_CHARS]
    if not first.startswith(("+", "|")):
        SubElement(root, "timestamp").text = first
    SubElement(root, "driver_version").text = head.group("driver")
    SubElement(root, "cuda_version").text = head.group("cuda")
    lines = [ln.strip() for ln in text.splitlines()]
    truncated = 0
    for i, line in enumerate(lines):
        r1 = _ROW1.fullmatch(line)
        if r1 is None or i + 1 >= len(lines):
            continue
        r2 = _ROW2.fullmatch(lines[i + 1])
        if r2 is None:
            continue
        gpu = SubElement(root, "gpu", id=r1.group("bus"))
        name = r1.group("name")
        truncated += name.endswith("...")
        values = {
            "product_name": name, "persistence_mode": "Enabled" if r1.group("persist") == "On" else "Disabled",
            "pci/pci_bus_id": r1.group("bus"),
            # the table's one ECC column: volatile uncorrected errors, all locations
            "ecc_errors/volatile/dram_uncorrectable": r1.group("ecc"),
            "fan_speed": _unit(r2.group("fan"), "%"), "temperature/gpu_temp": _unit(r2.group("temp"), "C"),
            "performance_state": r2.group("perf"), "gpu_power_readings/power_draw": _unit(r2.group("pwr"), "W"),
            "gpu_power_readings/current_power_limit": _unit(r2.group("cap"), "W"),
            "fb_memory_usage/used": _unit(r2.group("used"), "MiB"),
            "fb_memory_usage/total": _unit(r2.group("total"), "MiB"),
            "utilization/gpu_util": _unit(r2.group("util"), "%"),
        }
        r3 = _ROW3.fullmatch(lines[i + 2]) if i + 2 < len(lines) else None
        if r3 is not None:
            values["mig_mode/current_mig"] = r3.group("mig")
        for path, value in values.items():
            _ensure(gpu, path).text = value
    capture = parse_element(root, TABLE_SOURCE, max_gpus)
    capture.notes.append(Text(N_("the nvidia-smi table gives no UUID: the GPUs have placeholder UUIDs")))
    if truncated:
        capture.notes.append(Text(N_("{count} GPU name(s) cut short by the table ('...')"), count=truncated))
    return capture


def parse_smi_report(text: str, max_gpus: int = MAX_GPUS) -> Capture:
    """Either text form: the ``-q`` report or the default table (at most ``max_gpus`` GPUs, else SourceError)."""
    if _TABLE_HEAD.search(text) and "NVSMI LOG" not in text:
        return parse_smi_table(text, max_gpus)
    return parse_smi_text(text, max_gpus)
