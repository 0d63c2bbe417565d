"""What every parser returns (:class:`Capture`), the reading helpers they share, and the NodePoll it becomes.

A document value is text such as ``"350.00 W"``, ``"N/A"`` or ``"GPU is lost"``.
:func:`reading` turns it into (value, status) the way the agent's NVML reader
does: a value the source does not have (an element missing, ``N/A``, a
deprecated field) is ``None`` with status ``unsupported``; a value the source
could not read (``Insufficient Permissions``, ``Unknown Error``, ``ERR!``,
text that is no number) is ``failed``; ``GPU is lost`` is ``gpu_lost``.
Never zero.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, TypeVar

from fleetmon import __version__
from fleetmon.fields import CATALOG, INVENTORY_FIELDS, NODE_FIELDS, THROTTLE_REASONS
from fleetmon.records import (
    GpuInventory, GpuMinute, GpuSample, NodeInfo, NodePoll, Status, minute_key, throttle_key, vendor_defaults,
)
from fleetmon.signals import device_signals
from fleetmon.vocab import GpuState

__all__ = ["Capture", "Readings", "capture_poll", "minute_of", "number", "reading", "SAMPLE_FIELDS"]

T = TypeVar("T")

SAMPLE_FIELDS: tuple[str, ...] = tuple(f.name for f in CATALOG) + ("fan_speeds_pct",)
"""Keys of a sample's values, as the agent fills them (the catalog plus the per-fan list)."""

_UNSUPPORTED_TEXT = ("n/a", "[n/a]", "", "not supported", "[not supported]", "requested functionality has been deprecated",
                     "[requested functionality has been deprecated]", "[function not found]", "none")
_FAILED_TEXT = ("insufficient permissions", "[insufficient permissions]", "unknown error", "[unknown error]", "err!",
                "[err!]")
_LOST_TEXT = ("gpu is lost", "[gpu is lost]")
_NUMBER = re.compile(r"\s*(-?\d{1,15}(?:\.\d{1,15})?)\s*([A-Za-z%/]{0,8})\s*")
"""A number and its unit. At most 15 digits before the point: a larger value (a 400-digit integer that
``float()`` turns into infinity, anything past the collector's limit of 1e15) is no reading but a failed one."""
_MAX_NUMBER_CHARS = 64
"""Longer text is no number (and the regex never sees kilobytes of blanks: bounded time)."""
_MIB_PER = {"": 1.0, "mib": 1.0, "mb": 1.0, "gib": 1024.0, "gb": 1024.0, "kib": 1 / 1024, "kb": 1 / 1024}


def text_status(text: str | None) -> Status | None:
    """The status a value's text stands for (None: it is a value, parse it)."""
    if text is None:
        return Status.UNSUPPORTED
    low = " ".join(text.split()).lower()
    if low in _UNSUPPORTED_TEXT:
        return Status.UNSUPPORTED
    if low in _LOST_TEXT:
        return Status.GPU_LOST
    if low in _FAILED_TEXT:
        return Status.FAILED
    return None


def reading(text: str | None, conv: Callable[[str], T]) -> tuple[T | None, Status]:
    """(value, status) of one document value; ``conv`` raises ValueError for text it cannot read."""
    st = text_status(text)
    if st is not None:
        return None, st
    assert text is not None
    try:
        return conv(text.strip()), Status.OK
    except (ValueError, ArithmeticError):
        return None, Status.FAILED


def number(text: str, unit: str | None = None) -> float:
    """The number in ``"350.00 W"``, ``"45 C"``, ``"16x"``; ``unit`` (lowercase) checks it when given."""
    m = _NUMBER.fullmatch(text) if len(text) <= _MAX_NUMBER_CHARS else None
    if m is None:
        raise ValueError(text[:_MAX_NUMBER_CHARS])
    if unit is not None and m.group(2) and m.group(2).lower() != unit:
        raise ValueError(f"{text!r}: expected {unit}")
    return float(m.group(1))


def whole(text: str) -> int:
    """An integer value with or without a unit (``"0"``, ``"16x"``, ``"1410 MHz"``)."""
    return int(round(number(text)))


def watts(text: str) -> float:
    return round(number(text, "w"), 3)


def mib(text: str) -> int:
    m = _NUMBER.fullmatch(text) if len(text) <= _MAX_NUMBER_CHARS else None
    if m is None or m.group(2).lower() not in _MIB_PER:
        raise ValueError(text)
    return int(float(m.group(1)) * _MIB_PER[m.group(2).lower()])


def flag(text: str) -> int:
    """``Yes``/``No`` (and ``Active``/``Not Active``, ``Enabled``/``Disabled``) as 1/0."""
    low = text.strip().lower()
    if low in ("yes", "active", "enabled", "on", "true", "1"):
        return 1
    if low in ("no", "not active", "disabled", "off", "false", "0"):
        return 0
    raise ValueError(text)


def enabled(text: str) -> bool:
    return bool(flag(text))


_PSTATE = re.compile(r"P(\d{1,2})")


def pstate(text: str) -> int:
    """``P0`` … ``P15`` (and ``P32``, NVML's "unknown"): a short number after the P, nothing else."""
    m = _PSTATE.fullmatch(text.strip().upper()) if len(text) <= _MAX_NUMBER_CHARS else None
    if m is None:
        raise ValueError(text[:_MAX_NUMBER_CHARS])
    return int(m.group(1))


class Readings:
    """Values and statuses of one record, every key present: unread keys are ``unsupported``."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.values: dict[str, Any] = {n: None for n in names}
        self.status: dict[str, str] = {n: Status.UNSUPPORTED.value for n in names}

    def put(self, name: str, value: Any, status: Status = Status.OK) -> None:
        if status == Status.OK and value is not None:
            self.values[name] = value
            self.status.pop(name, None)
        else:
            self.values[name] = None
            self.status[name] = (status if status != Status.OK else Status.UNSUPPORTED).value

    def read(self, name: str, text: str | None, conv: Callable[[str], Any]) -> Any:
        value, st = reading(text, conv)
        self.put(name, value, st)
        return value

    def lost(self) -> bool:
        return any(s == Status.GPU_LOST for s in self.status.values())

    def mark_lost(self, names: tuple[str, ...]) -> None:
        """A GPU that is lost: every reading is lost (as the agent makes the record uniform)."""
        for n in names:
            self.values[n] = None
            self.status[n] = Status.GPU_LOST.value


def node_readings() -> Readings:
    return Readings(NODE_FIELDS)


def inventory_readings() -> Readings:
    return Readings(INVENTORY_FIELDS)


def sample_readings() -> Readings:
    return Readings(SAMPLE_FIELDS)


def placeholder_uuid(index: int, where: str, lost: bool) -> str:
    """The agent's stand-in UUID for a GPU whose own one cannot be read."""
    return f"{'lost' if lost else 'unknown'}-gpu-{index}-{where}"


@dataclass(slots=True)
class Capture:
    """One reading of a node from a source other than the agent.

    Attributes:
        source: "nvidia-smi-xml", "nvidia-smi-text", "nvidia-smi-table" or "dcgm-exporter".
        info: the node (hostname as the source names it, "" when it does not).
        gpus: inventory, in the source's order (the index is that order).
        samples: one sample per GPU, same order; ``ts`` is the capture time.
        ts: the capture time the document states (Unix seconds), or None.
        notes: what the parser noticed and could not use (one line each).
        vendor: the devices' vendor ("nvidia", "amd", "hygon", "huawei", "intel", "mthreads").
        extra: one mapping per device, in ``gpus`` order (or empty): the vendor's own readings that the
            field catalog has no field for yet (an Ascend chip's health state and error codes, AMD's ECC
            per block, the card an NPU chip sits on), by the names each parser documents. A reading
            the tool did not give is absent, never zero.
    """

    source: str
    info: NodeInfo
    gpus: list[GpuInventory] = field(default_factory=list)
    samples: list[GpuSample] = field(default_factory=list)
    ts: float | None = None
    notes: list[str] = field(default_factory=list)
    vendor: str = "nvidia"
    extra: list[dict[str, Any]] = field(default_factory=list)

    def with_time(self, ts: float) -> "Capture":
        """The same capture with every sample stamped ``ts`` (when the document gave no time)."""
        samples = [GpuSample(ts=ts, uuid=s.uuid, index=s.index, values=s.values, status=s.status, state=s.state)
                   for s in self.samples]
        return Capture(self.source, self.info, self.gpus, samples, ts, self.notes, self.vendor, self.extra)


def make_info(hostname: str, node: Readings, source: str) -> NodeInfo:
    node.put("hostname", hostname or None)
    return NodeInfo(hostname=hostname, agent_version=f"{source} (fleetmon {__version__})", values=node.values,
                    status=node.status, xid_source=f"none: {source} reports no Xid events")


_RECORDED = tuple(f for f in CATALOG if f.stored is not None)  # export-only fields are in no minute
_EXPORT_ONLY = frozenset(f.name for f in CATALOG if f.stored is None)
_GAUGES = tuple(f.name for f in _RECORDED if f.kind == "gauge")
_LAST = tuple(f.name for f in _RECORDED if f.kind == "counter") + tuple(f.name for f in _RECORDED if f.kind == "state")
_BUSY_UTIL_PCT = 50.0  # fleetmon.agent.aggregate.BUSY_UTIL_PCT (tests check the two agree)


def minute_of(s: GpuSample) -> GpuMinute:
    """The minute record of one sample alone (n = 1), as the agent's aggregation would make it."""
    v = s.values
    values: dict[str, Any] = {}
    for g in _GAUGES:
        x = v.get(g)
        for stat in ("min", "mean", "max"):
            values[minute_key(g, stat)] = None if x is None else float(x)
    for c in _LAST:
        values[c] = v.get(c)
    mask = v.get("throttle_mask")
    for r in THROTTLE_REASONS:
        values[throttle_key(r.name)] = 1 if mask is not None and int(mask) & r.bit else 0
    util = v.get("util_gpu_pct")
    busy = util is not None and util >= _BUSY_UTIL_PCT and not (int(mask or 0) & 0x1)
    values["busy_n"] = int(busy)
    values["pcie_gen_busy_min"] = v.get("pcie_gen") if busy else None
    values["pcie_width_busy_min"] = v.get("pcie_width") if busy else None
    status = {k: st for k, st in s.status.items() if st != Status.OK and k not in _EXPORT_ONLY}
    return GpuMinute(seq=0, ts=int(s.ts // 60) * 60, uuid=s.uuid, index=s.index, n=1, values=values, status=status,
                     state=s.state)


def capture_poll(capture: Capture, node: str, url: str, ts: float, *, group: str | None = None,
                 minutes: bool = True) -> NodePoll:
    """The NodePoll storage's ingest takes for a capture (as the collector builds one per agent poll).

    ``ts`` is the poll time (for a file: its capture time). ``minutes``: also store each
    sample as a one-sample minute, so the reading shows in history and in the rules' windows.
    No cursors and no buffer id: a source without a buffer has nothing to resume.
    Each device's fault signals (:mod:`fleetmon.signals`, from ``capture.extra``) go
    into ``signals``: storage writes an event when they change from the stored ones.
    """
    capture = _node_scoped(capture, node)
    info = capture.info
    if not info.hostname:
        info = NodeInfo(hostname=node, agent_version=info.agent_version, values={**info.values, "hostname": node},
                        status={k: v for k, v in info.status.items() if k != "hostname"},
                        xid_source=info.xid_source, started_at=info.started_at)
    if info.values.get("vendor") is None:  # the node's vendor is its capture's (a tool reads one vendor)
        info = replace(info, values={**info.values, "vendor": capture.vendor},
                       status={k: v for k, v in info.status.items() if k != "vendor"})
    info, gpus = vendor_defaults(info, list(capture.gpus))
    signals = {}
    for i, g in enumerate(capture.gpus):
        found = device_signals(capture.extra[i]) if i < len(capture.extra) else {}
        if found:
            signals[g.uuid] = found
    return NodePoll(node=node, url=url, group=group, ts=ts, ok=True, info=info, gpus=gpus,
                    latest=list(capture.samples),
                    minutes=[minute_of(s) for s in capture.samples] if minutes else [], signals=signals)


def _node_scoped(capture: Capture, node: str) -> Capture:
    """The capture with its host-local device ids made the node's own.

    Some tools give no id unique beyond the host (npu-smi without ``-t board``,
    xpu-smi's dump, mthreads-gmi's table): their parsers make one from the bus id
    or the index, and two hosts of one layout would then name different cards
    alike, so the second host's cards would be refused as another node's. Such an
    id (an other vendor's ``unknown-gpu-…`` placeholder, or one whose ``extra``
    says ``uuid_scope = "node"``) gets ``/<node>`` appended. NVIDIA captures keep
    their ids as they always were.
    """
    if capture.vendor == "nvidia":
        return capture
    scoped: dict[str, str] = {}
    for i, g in enumerate(capture.gpus):
        extra = capture.extra[i] if i < len(capture.extra) else {}
        if g.uuid.startswith("unknown-gpu-") or extra.get("uuid_scope") == "node":
            scoped[g.uuid] = f"{g.uuid}/{node}"[:96]
    if not scoped:
        return capture

    def new(uuid: str) -> str:
        return scoped.get(uuid, uuid)

    gpus = [GpuInventory(uuid=new(g.uuid), index=g.index, name=g.name,
                         values={**g.values, "uuid": new(g.uuid)} if "uuid" in g.values else g.values,
                         status=g.status, state=g.state) for g in capture.gpus]
    samples = [GpuSample(ts=s.ts, uuid=new(s.uuid), index=s.index, values=s.values, status=s.status, state=s.state)
               for s in capture.samples]
    return Capture(capture.source, capture.info, gpus, samples, capture.ts, capture.notes, capture.vendor,
                   capture.extra)


def lost_state(lost: bool) -> str:
    return GpuState.LOST.value if lost else GpuState.OK.value
