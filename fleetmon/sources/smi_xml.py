"""``nvidia-smi -q -x`` documents → a :class:`~fleetmon.sources.capture.Capture`.

Parsed with defusedxml: a document with entity declarations (billion laughs) or
external references is refused (:class:`~fleetmon.sources.SourceError`), a plain
``<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">`` is fine (the DTD is
never fetched).

What the documents vary in (checked against the fixtures in
../shared/fixtures/A_nvidia_smi_xml, DTD v10-v13 and none, drivers 418-595):

* values carry units (``"350.00 W"``, ``"81920 MiB"``, ``"1410 MHz"``, ``"45 C"``,
  ``"16x"``), padding (``" 40 % "``) and placeholders (``N/A``, ``Requested
  functionality has been deprecated``, ``Insufficient Permissions``, ``GPU is lost``);
  a whole block may be one placeholder (``<remapped_rows>N/A</remapped_rows>``);
* around driver 535 ``power_readings`` became ``gpu_power_readings`` (+
  ``module_power_readings``), ``power_draw`` became ``average_power_draw`` and
  ``instant_power_draw``, ``enforced_power_limit`` became ``current_power_limit``,
  ``clocks_throttle_reasons`` became ``clocks_event_reasons``; ECC counters went from
  ``single_bit``/``double_bit`` per location to ``sram_*``/``dram_*`` (and later
  ``sram_uncorrectable_parity``/``_secded``); Blackwell-era drivers give temperature
  thresholds relative to T.Limit (``*_tlimit_threshold``), which are not degrees and
  are not used;
* trimmed documents lack ``driver_version``, ``timestamp``, ``attached_gpus``.

The document names no host: the capture's hostname is "" (the importer names the node).
"""

from __future__ import annotations

import time
from typing import Callable
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as safe_et
from defusedxml import DefusedXmlException

from fleetmon.fields import THROTTLE_REASONS
from fleetmon.pci import normalize_bus_id
from fleetmon.records import GpuInventory, GpuSample, Status
from fleetmon.i18n import N_, Text
from fleetmon.sources import SourceError
from fleetmon.text import printable
from fleetmon.sources.capture import (
    SAMPLE_FIELDS, Capture, Readings, enabled, flag, inventory_readings, lost_state, make_info, mib, node_readings,
    placeholder_uuid, pstate, reading, sample_readings, text_status, watts, whole,
)

__all__ = ["parse_smi_xml", "parse_element", "parse_timestamp", "SOURCE"]

SOURCE = "nvidia-smi-xml"
MAX_BYTES = 64 * 1024 * 1024
"""A larger document is refused (an 8-GPU B200 document is 357 KB)."""

_ARCHITECTURES = {"kepler": "kepler", "maxwell": "maxwell", "pascal": "pascal", "volta": "volta", "turing": "turing",
                  "ampere": "ampere", "ada": "ada", "hopper": "hopper", "blackwell": "blackwell"}
"""nvidia-smi's product_architecture (first word, lowercase) → the agent's architecture names."""

# nvidia-smi's reason element suffixes → fleetmon.fields.THROTTLE_REASONS names.
_REASON_NAMES = {"gpu_idle": "gpu_idle", "applications_clocks_setting": "app_clocks", "sw_power_cap": "sw_power_cap",
                 "hw_slowdown": "hw_slowdown", "sync_boost": "sync_boost", "sw_thermal_slowdown": "sw_thermal",
                 "hw_thermal_slowdown": "hw_thermal", "hw_power_brake_slowdown": "hw_power_brake",
                 "display_clocks_setting": "display_clocks"}
_REASON_BITS = {r.name: r.bit for r in THROTTLE_REASONS}


MAX_ELEMENTS = 100_000
"""Elements in one document (an 8-GPU B200 document has 6,045, about 760 a GPU: 64 GPUs with long process
lists stay far below). Bounds the parsed tree, whose elements cost ≈ 20× their text (``<a/>`` × 16 M would
be gigabytes)."""
MAX_DEPTH = 32
"""Nesting depth (nvidia-smi's documents are 6-7 levels deep)."""
MAX_TEXT_CHARS = 65_536
"""Characters of one element's text (the longest seen in real documents: 497)."""
_TOO_DEEP = "/".join(["*"] * MAX_DEPTH)
MAX_ATTRIBUTES = 16
"""Attributes of one element (nvidia-smi writes ``<gpu id="…">`` and nothing else)."""
MAX_ATTRIBUTE_CHARS = 1024
"""Characters of one attribute value (a bus id is 16)."""
MAX_GPUS = 1024
"""``<gpu>`` elements one document may describe; the collector and ``import-smi`` then apply their own,
smaller per-node limit (fleetmon.collector.limits.MAX_GPUS_PER_NODE)."""


def parse_smi_xml(data: bytes | str, max_gpus: int = MAX_GPUS) -> Capture:
    """Parse one ``nvidia-smi -q -x`` document (``str`` input is read as UTF-8).

    Every malformed or hostile input ends in SourceError with a one-line reason, never in
    another exception: not XML, an unknown or unsupported encoding, entities or external
    references, more than :data:`MAX_BYTES`, :data:`MAX_ELEMENTS`, :data:`MAX_DEPTH`,
    :data:`MAX_TEXT_CHARS`, :data:`MAX_ATTRIBUTES` / :data:`MAX_ATTRIBUTE_CHARS` or
    ``max_gpus`` (default :data:`MAX_GPUS`; ``import-smi`` passes the collector's per-node
    limit, so a document of 10,000 GPUs is refused before they are read). A value that is no number (``inf``, ``1e400``, 400 digits) is a
    failed reading of that field (see :mod:`fleetmon.sources.capture`), not an error of the document.

    Raises:
        SourceError: the document cannot be used (the reason says why, on one line).
    """
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if len(data) > MAX_BYTES:
        raise SourceError(Text(N_("nvidia-smi XML: {size} bytes, more than the {limit} a document may have"),
                               size=len(data), limit=MAX_BYTES))
    root = _bounded_tree(data)
    if root.tag != "nvidia_smi_log":
        raise SourceError(Text(N_("nvidia-smi XML: the root element is <{root}>, not <nvidia_smi_log>"),
                               root=printable(str(root.tag), 80)))
    return parse_element(root, SOURCE, max_gpus)


def _bounded_tree(data: bytes) -> Element:
    """The parsed document, its size checked: markup counted before parsing, the tree walked after.

    defusedxml's ``fromstring``: expat behind defusedxml's guards (no entity expansion, no
    external references). Neither bounds elements, depth or attribute sizes, so: before
    parsing, the ``<`` count bounds the elements the tree can have (each needs one), so a
    document of ``<a/>`` × 16 M is refused before it becomes gigabytes of elements; after,
    walks without recursion check depth, attributes and text. (``iterparse`` could stop
    earlier but costs several times as much per element: measured, 33 ms against 12 ms for
    a 46 KB document.)
    """
    if data.count(b"<") > 2 * MAX_ELEMENTS:
        raise SourceError(Text(N_("nvidia-smi XML: more than {tags} tags (at most {limit} elements)"),
                               tags=2 * MAX_ELEMENTS, limit=MAX_ELEMENTS))
    try:
        root = safe_et.fromstring(data, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except DefusedXmlException as exc:
        raise SourceError(Text(N_("nvidia-smi XML: refused, the document declares entities or external references "
                                  "({error}); nvidia-smi never writes those"), error=exc.__class__.__name__)) from None
    except ParseError as exc:
        raise SourceError(Text(N_("nvidia-smi XML: not well-formed ({error})"), error=_one_line(exc))) from None
    except LookupError as exc:  # expat asks the codecs for an encoding it does not know: encoding="x-bogus"
        raise SourceError(Text(N_("nvidia-smi XML: unknown character encoding ({error})"),
                               error=_one_line(exc))) from None
    except ValueError as exc:  # "multi-byte encodings are not supported" (shift_jis …), a codec's own errors
        raise SourceError(Text(N_("nvidia-smi XML: unreadable character encoding ({error})"),
                               error=_one_line(exc))) from None
    elements = 0
    for el in root.iter():  # C iteration; the checks are cheap (a normal document: well under a millisecond)
        elements += 1
        if elements > MAX_ELEMENTS:
            raise SourceError(Text(N_("nvidia-smi XML: more than {limit} elements"), limit=MAX_ELEMENTS))
        if el.attrib and (len(el.attrib) > MAX_ATTRIBUTES
                          or any(len(v) > MAX_ATTRIBUTE_CHARS for v in el.attrib.values())):
            raise SourceError(Text(N_("nvidia-smi XML: <{tag}> has more than {limit} attributes or one longer than "
                                      "{chars} characters"), tag=printable(str(el.tag), 80), limit=MAX_ATTRIBUTES,
                                   chars=MAX_ATTRIBUTE_CHARS))
        if el.text is not None and len(el.text) > MAX_TEXT_CHARS:
            raise SourceError(Text(N_("nvidia-smi XML: <{tag}> holds more than {chars} characters of text"),
                                   tag=printable(str(el.tag), 80), chars=MAX_TEXT_CHARS))
    # An element MAX_DEPTH levels below the root is one too deep (ElementPath walks level by level, no recursion).
    if root.find(_TOO_DEEP) is not None:
        raise SourceError(Text(N_("nvidia-smi XML: nested more than {depth} elements deep"), depth=MAX_DEPTH))
    return root


def _one_line(exc: BaseException) -> str:
    return printable(" ".join(str(exc).split()), 200)


def parse_timestamp(text: str | None) -> float | None:
    """nvidia-smi's ``Fri Aug  4 11:44:30 2023`` (the node's local time, no zone given) as Unix seconds.

    The document does not say its zone: it is read as this machine's local time.
    """
    if text is None or text_status(text) is not None:
        return None
    try:
        return time.mktime(time.strptime(" ".join(text.split()), "%a %b %d %H:%M:%S %Y"))
    except (ValueError, OverflowError):
        return None


def find_text(el: Element, path: str) -> str | None:
    """Text of the element at ``path`` (``a/b/c``); when a block on the way is one placeholder
    (``<remapped_rows>N/A</remapped_rows>``, ``<ecc_errors>GPU is lost</ecc_errors>``), that text."""
    node = el
    for part in path.split("/"):
        child = node.find(part)
        if child is None:
            own = (node.text or "").strip() if node is not el else ""
            return own if own and text_status(own) is not None else None
        node = child
    return node.text if node.text is not None else ""


def first_text(el: Element, *paths: str) -> str | None:
    """The first of ``paths`` that holds a value; else the most telling placeholder among them."""
    found: list[str] = []
    for p in paths:
        t = find_text(el, p)
        if t is None:
            continue
        if text_status(t) is None:
            return t
        found.append(t)
    for wanted in (Status.GPU_LOST, Status.FAILED):
        for t in found:
            if text_status(t) == wanted:
                return t
    return found[0] if found else None


def _hex_id(text: str) -> str:
    """``0x20B010DE`` (a PCI device or subsystem id: 32 bits; anything longer is no id)."""
    value = int(text.strip(), 16) if len(text) <= 64 else -1
    if not 0 <= value <= 0xFFFFFFFF:
        raise ValueError(text[:64])
    return f"0x{value:08X}"


def _architecture(text: str) -> str:
    word = text.split()[0].lower() if text.split() else ""
    if not word:
        raise ValueError(text)
    return _ARCHITECTURES.get(word, word)


def _sum(el: Element, names: tuple[str, ...], conv: Callable[[str], int] = whole) -> tuple[int | None, Status]:
    """Sum of the counters that have a value (e.g. SRAM + DRAM); the first placeholder's status if none has."""
    total: int | None = None
    statuses: list[Status] = []
    for name in names:
        value, st = reading(find_text(el, name), conv)
        if value is None:
            statuses.append(st)
        else:
            total = (total or 0) + value
    if total is not None:
        return total, Status.OK
    for wanted in (Status.GPU_LOST, Status.FAILED):
        if wanted in statuses:
            return None, wanted
    return None, Status.UNSUPPORTED


def _ecc(gpu: Element, scope: str) -> tuple[tuple[int | None, Status], tuple[int | None, Status]]:
    """(corrected, uncorrected) totals of ``ecc_errors/<scope>`` in either schema."""
    base = f"ecc_errors/{scope}"
    block = gpu.find(base)
    if block is None:
        st = text_status(find_text(gpu, base)) or Status.UNSUPPORTED
        return (None, st), (None, st)
    if block.find("single_bit") is not None or block.find("double_bit") is not None:  # before ~470
        return _sum(block, ("single_bit/total",)), _sum(block, ("double_bit/total",))
    unc_sram = ("sram_uncorrectable",) if block.find("sram_uncorrectable") is not None else (
        "sram_uncorrectable_parity", "sram_uncorrectable_secded")
    return _sum(block, ("sram_correctable", "dram_correctable")), _sum(block, unc_sram + ("dram_uncorrectable",))


def _throttle(gpu: Element) -> tuple[int | None, Status]:
    for block_name, prefix in (("clocks_event_reasons", "clocks_event_reason_"),
                               ("clocks_throttle_reasons", "clocks_throttle_reason_")):
        block = gpu.find(block_name)
        if block is None:
            continue
        mask: int | None = None
        statuses: list[Status] = []
        for child in block:
            name = _REASON_NAMES.get(child.tag.removeprefix(prefix))
            if name is None:
                continue
            value, st = reading(child.text, flag)
            if value is None:
                statuses.append(st)
                continue
            mask = (mask or 0) | (_REASON_BITS[name] if value else 0)
        if mask is not None:
            return mask, Status.OK
        return None, (Status.GPU_LOST if Status.GPU_LOST in statuses else
                      Status.FAILED if Status.FAILED in statuses else Status.UNSUPPORTED)
    return None, text_status(first_text(gpu, "clocks_event_reasons", "clocks_throttle_reasons")) or Status.UNSUPPORTED


_POWER = ("gpu_power_readings", "power_readings")


def _power(field: str) -> tuple[str, ...]:
    return tuple(f"{block}/{field}" for block in _POWER)


_LINK = "pci/pci_gpu_link_info"


def _inventory(gpu: Element, index: int) -> tuple[Readings, list[dict[str, int | None]]]:
    r = inventory_readings()
    r.put("index", index)
    r.read("name", find_text(gpu, "product_name"), str)
    r.read("uuid", find_text(gpu, "uuid"), str)
    r.read("serial", find_text(gpu, "serial"), str)
    r.read("board_part_number", find_text(gpu, "board_part_number"), str)
    r.read("vbios", find_text(gpu, "vbios_version"), str)
    r.read("inforom_image", find_text(gpu, "inforom_version/img_version"), str)
    r.read("inforom_oem", find_text(gpu, "inforom_version/oem_object"), str)
    r.read("inforom_ecc", find_text(gpu, "inforom_version/ecc_object"), str)
    r.read("inforom_power", find_text(gpu, "inforom_version/pwr_object"), str)
    bus = first_text(gpu, "pci/pci_bus_id") or gpu.get("id")
    r.read("pci_bus_id", bus, normalize_bus_id)
    r.read("pci_device_id", find_text(gpu, "pci/pci_device_id"), _hex_id)
    r.read("pci_subsystem_id", find_text(gpu, "pci/pci_sub_system_id"), _hex_id)
    r.read("architecture", find_text(gpu, "product_architecture"), _architecture)
    r.read("memory_total_mib", find_text(gpu, "fb_memory_usage/total"), mib)
    r.read("power_default_w", first_text(gpu, *_power("default_power_limit")), watts)
    r.read("power_min_w", first_text(gpu, *_power("min_power_limit")), watts)
    r.read("power_max_w", first_text(gpu, *_power("max_power_limit")), watts)
    r.read("power_enforced_w", first_text(gpu, *_power("enforced_power_limit"), *_power("current_power_limit")), watts)
    r.read("max_sm_clock_mhz", find_text(gpu, "max_clocks/sm_clock"), whole)
    r.read("max_mem_clock_mhz", find_text(gpu, "max_clocks/mem_clock"), whole)
    r.read("pcie_max_gen", find_text(gpu, f"{_LINK}/pcie_gen/max_link_gen"), whole)
    r.read("pcie_max_width", find_text(gpu, f"{_LINK}/link_widths/max_link_width"), whole)
    r.read("pcie_gpu_max_gen", find_text(gpu, f"{_LINK}/pcie_gen/max_device_link_gen"), whole)
    r.read("ecc_mode_current", find_text(gpu, "ecc_mode/current_ecc"), enabled)
    r.read("ecc_mode_pending", find_text(gpu, "ecc_mode/pending_ecc"), enabled)
    r.read("persistence_mode", find_text(gpu, "persistence_mode"), enabled)
    r.read("mig_mode_current", find_text(gpu, "mig_mode/current_mig"), enabled)
    r.read("mig_mode_pending", find_text(gpu, "mig_mode/pending_mig"), enabled)
    # Absolute thresholds only: the *_tlimit_threshold ones are offsets from T.Limit, not degrees.
    r.read("temp_slowdown_c", find_text(gpu, "temperature/gpu_temp_slow_threshold"), whole)
    r.read("temp_shutdown_c", find_text(gpu, "temperature/gpu_temp_max_threshold"), whole)
    # compute_capability and the GPU-side maximum link width are not in the document.
    migs: list[dict[str, int | None]] = []
    for m in gpu.findall("mig_devices/mig_device"):
        migs.append({key: reading(find_text(m, path), conv)[0] for key, path, conv in (
            ("index", "index", whole), ("gpu_instance_id", "gpu_instance_id", whole),
            ("compute_instance_id", "compute_instance_id", whole),
            ("memory_total_mib", "fb_memory_usage/total", mib), ("memory_used_mib", "fb_memory_usage/used", mib))})
    return r, migs


def _sample(gpu: Element) -> Readings:
    r = sample_readings()
    r.read("temp_c", find_text(gpu, "temperature/gpu_temp"), whole)
    r.read("mem_temp_c", find_text(gpu, "temperature/memory_temp"), whole)
    fan = r.read("fan_pct", find_text(gpu, "fan_speed"), lambda t: round(float(whole(t)), 1))
    if fan is not None:
        r.put("fan_speeds_pct", [int(fan)])
    r.read("power_w", first_text(gpu, *_power("power_draw"), *_power("average_power_draw"),
                                 *_power("instant_power_draw")), watts)
    r.read("power_limit_w", first_text(gpu, *_power("enforced_power_limit"), *_power("current_power_limit")), watts)
    r.read("sm_clock_mhz", find_text(gpu, "clocks/sm_clock"), whole)
    r.read("mem_clock_mhz", find_text(gpu, "clocks/mem_clock"), whole)
    r.read("gr_clock_mhz", find_text(gpu, "clocks/graphics_clock"), whole)
    r.read("util_gpu_pct", find_text(gpu, "utilization/gpu_util"), whole)
    r.read("util_mem_pct", find_text(gpu, "utilization/memory_util"), whole)
    r.read("mem_used_mib", find_text(gpu, "fb_memory_usage/used"), mib)
    r.read("mem_free_mib", find_text(gpu, "fb_memory_usage/free"), mib)
    r.read("pcie_tx_kbs", find_text(gpu, "pci/tx_util"), whole)
    r.read("pcie_rx_kbs", find_text(gpu, "pci/rx_util"), whole)
    r.read("pstate", find_text(gpu, "performance_state"), pstate)
    r.put("throttle_mask", *_throttle(gpu))
    (corr_v, unc_v), (corr_a, unc_a) = _ecc(gpu, "volatile"), _ecc(gpu, "aggregate")
    r.put("ecc_corr_vol", *corr_v)
    r.put("ecc_unc_vol", *unc_v)
    r.put("ecc_corr_agg", *corr_a)
    r.put("ecc_unc_agg", *unc_a)
    r.read("retired_sbe", find_text(gpu, "retired_pages/multiple_single_bit_retirement/retired_count"), whole)
    r.read("retired_dbe", find_text(gpu, "retired_pages/double_bit_retirement/retired_count"), whole)
    r.read("retired_pending", find_text(gpu, "retired_pages/pending_retirement"), flag)
    r.read("remap_corr", find_text(gpu, "remapped_rows/remapped_row_corr"), whole)
    r.read("remap_unc", find_text(gpu, "remapped_rows/remapped_row_unc"), whole)
    r.read("remap_pending", find_text(gpu, "remapped_rows/remapped_row_pending"), flag)
    r.read("remap_failure", find_text(gpu, "remapped_rows/remapped_row_failure"), flag)
    r.read("pcie_gen", find_text(gpu, f"{_LINK}/pcie_gen/current_link_gen"), whole)
    r.read("pcie_width", find_text(gpu, f"{_LINK}/link_widths/current_link_width"), whole)
    r.read("pcie_replay", find_text(gpu, "pci/replay_counter"), whole)
    return r


def parse_element(root: Element, source: str, max_gpus: int = MAX_GPUS) -> Capture:
    """Records from a parsed ``<nvidia_smi_log>`` (also what :mod:`fleetmon.sources.smi_text` builds)."""
    ts = parse_timestamp(find_text(root, "timestamp"))
    node = node_readings()
    node.read("driver_version", find_text(root, "driver_version"), str)
    node.read("cuda_driver_version", find_text(root, "cuda_version"), str)
    gpus_el = root.findall("gpu")
    if len(gpus_el) > max_gpus:
        raise SourceError(Text(N_("{source}: {count} GPUs in one document, more than the {limit} one may describe"),
                               source=source, count=len(gpus_el), limit=max_gpus))
    notes: list[str] = []
    attached = reading(find_text(root, "attached_gpus"), whole)[0]
    node.put("gpu_count", attached if attached is not None else len(gpus_el))
    if attached is not None and attached != len(gpus_el):
        notes.append(Text(N_("the document says {attached} GPUs are attached but describes {count}"),
                          attached=attached, count=len(gpus_el)))
    gpus: list[GpuInventory] = []
    samples: list[GpuSample] = []
    for index, el in enumerate(gpus_el):
        inv, migs = _inventory(el, index)
        s = _sample(el)
        lost = s.lost() or inv.status.get("uuid") == Status.GPU_LOST
        if lost:
            s.mark_lost(SAMPLE_FIELDS)
        uuid = inv.values.get("uuid")
        if not isinstance(uuid, str) or not uuid:
            where = inv.values.get("pci_bus_id") or "capture"
            uuid = placeholder_uuid(index, str(where), lost)
            inv.put("uuid", uuid)
        if migs:
            inv.values["mig_devices"] = migs
        state = lost_state(lost)
        gpus.append(GpuInventory(uuid=uuid, index=index, name=str(inv.values.get("name") or "unknown"),
                                 values=inv.values, status=inv.status, state=state))
        samples.append(GpuSample(ts=ts or 0.0, uuid=uuid, index=index, values=s.values, status=s.status, state=state))
    return Capture(source=source, info=make_info("", node, source), gpus=gpus, samples=samples, ts=ts, notes=notes)
