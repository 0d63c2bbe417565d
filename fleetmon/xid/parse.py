"""Kernel-log parser for NVIDIA Xid reports (`fleetmon xid parse FILE` prints its events).

Kernel-log formats understood by the parser, in any combination:

- timestamps ``[ 1843.308145]`` (dmesg, kept as ``uptime_s``),
  ``[Fri Aug 30 11:43:09 2024]`` (dmesg -T), ISO ``2025-01-21T02:21:33,498559+00:00``
  (dmesg --time-format=iso, journalctl -o short-iso, rsyslog), syslog
  ``Nov 29 11:28:11`` (year supplied by the caller), raw /dev/kmsg records
  ``4,1234,5678901,-;``, or none;
- a ``kern  :warn  :`` facility prefix (dmesg -x), a ``host kernel:`` prefix
  (journald/syslog, gives ``host``) or a bare ``kernel:``;
- ``Xid (PCI:0000:38:00): 13, pid='<unknown>', name=<unknown>, msg``,
  ``pid=1234`` with or without ``name=``, no pid at all, MIG attribution
  ``(PCI:0000:38:00 GPU-I:03 GPU-CI:01)``, PCI domains other than 0000, and the
  legacy ``Xid (0000:01:00): 32, Channel ID 00000003 intr 00040000``;
- multi-line messages: Xid 119/120 GSP RPC tables and kernel stack traces,
  Xid 79 ``GPU 0000:3b:00.0: GPU has fallen off the bus.`` continuation lines
  and the crash-dump notice; they are joined to the Xid message with newlines;
- a ``caused by previous Xid N`` suffix (``caused_by``);
- "fallen off the bus" lines with no Xid, which become a ``BusEvent``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any, Union

from fleetmon.compat import SLOTS
from fleetmon.pci import normalize_bus_id as normalize_pci
from fleetmon.xid.catalog import BUS_INFO, lookup

__all__ = [
    "BusEvent",
    "KernelEvent",
    "XidEvent",
    "XidParser",
    "event_severity",
    "normalize_pci",
    "parse_kernel_events",
    "parse_xid_lines",
    "parse_xid_text",
    "to_json",
]


# --------------------------------------------------------------------------
# Events
# --------------------------------------------------------------------------


@dataclass(frozen=True, **SLOTS)
class XidEvent:
    """One ``NVRM: Xid`` report from a kernel log.

    Attributes:
        code: Xid number, always >= 1.
        pci_address: normalized "dddd:bb:dd.f", lowercase hex.
        raw_pci: the address as printed, e.g. "0000:38:00".
        time: ISO 8601 wall-clock time, or None (dmesg-relative or no timestamp).
        uptime_s: seconds since boot for ``[ 1843.308145]`` style lines, else None.
        pid: process id, None when absent or ``'<unknown>'``.
        process: process name (``name=``), None when absent or ``<unknown>``.
        message: text after the code and the pid/name fields; continuation
            lines are appended, separated by newlines.
        caused_by: N from "caused by previous Xid N", else None.
        line_no: 1-based number of the first line of the event.
        host: host name from a journald/syslog prefix, else None.
        gpu_uuid: UUID from an earlier ``NVRM: GPU at PCI:... GPU-...`` line, else None.
        gpu_instance_id: MIG GPU instance (``GPU-I:nn``), else None.
        compute_instance_id: MIG compute instance (``GPU-CI:nn``), else None.
    """

    code: int
    pci_address: str
    raw_pci: str
    time: str | None = None
    uptime_s: float | None = None
    pid: int | None = None
    process: str | None = None
    message: str = ""
    caused_by: int | None = None
    line_no: int = 0
    host: str | None = None
    gpu_uuid: str | None = None
    gpu_instance_id: int | None = None
    compute_instance_id: int | None = None

    def __post_init__(self) -> None:
        if self.code < 1:
            raise ValueError(f"Xid code must be >= 1, got {self.code}")


@dataclass(frozen=True, **SLOTS)
class BusEvent:
    """A "GPU has fallen off the bus" kernel message that came without an Xid.

    Older drivers print ``NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1b80)
    installed in this system has fallen off the bus and is not responding to
    commands.`` and newer ones ``NVRM: GPU 0000:3b:00.0: GPU has fallen off the
    bus.``. When such a line directly follows an Xid 79 for the same GPU it is
    joined to that Xid's message instead.

    Attributes: as the same-named ones of ``XidEvent``; ``pci_address`` is ""
    when the line names no address.
    """

    pci_address: str
    raw_pci: str
    time: str | None = None
    uptime_s: float | None = None
    message: str = ""
    line_no: int = 0
    host: str | None = None
    gpu_uuid: str | None = None


KernelEvent = Union[XidEvent, BusEvent]  # typing.Union: the agent runs on Python 3.8


def event_severity(event: KernelEvent) -> str:
    """Severity of one event: the catalog's, refined by the message.

    NVLink5 Xids 144-150 print "Fatal" or "Nonfatal"; fatal ones are critical
    (rule X1), non-fatal ones keep the catalog's "warning".
    """
    if isinstance(event, BusEvent):
        return BUS_INFO.severity
    info = lookup(event.code)
    if 144 <= event.code <= 150 and _FATAL_RE.search(event.message.split("\n", 1)[0]):
        return "critical"
    return info.severity


def to_json(event: KernelEvent, gpu_map: dict[str, str] | None = None) -> dict[str, Any]:
    """Return a JSON-ready dict for one event.

    Keys, in order: kind ("xid" or "bus"), code (None for bus events), name,
    pci_address, gpu, time, uptime_s, message, caused_by, pid, process, meaning,
    category, severity, action.

    Args:
        event: an ``XidEvent`` or ``BusEvent``.
        gpu_map: PCI address -> GPU UUID; keys in any form ``normalize_pci``
            accepts. ``gpu`` falls back to the UUID seen in the log, else None.
    """
    gpu = None
    if gpu_map:
        normalized = {normalize_pci(k): v for k, v in gpu_map.items()}
        gpu = normalized.get(event.pci_address)
    if gpu is None:
        gpu = event.gpu_uuid
    if isinstance(event, XidEvent):
        info = lookup(event.code)
        return {
            "kind": "xid",
            "code": event.code,
            "name": info.name,
            "pci_address": event.pci_address,
            "gpu": gpu,
            "time": event.time,
            "uptime_s": event.uptime_s,
            "message": event.message,
            "caused_by": event.caused_by,
            "pid": event.pid,
            "process": event.process,
            "meaning": info.meaning,
            "category": info.category,
            "severity": event_severity(event),
            "action": info.action,
        }
    return {
        "kind": "bus",
        "code": None,
        "name": BUS_INFO.name,
        "pci_address": event.pci_address,
        "gpu": gpu,
        "time": event.time,
        "uptime_s": event.uptime_s,
        "message": event.message,
        "caused_by": None,
        "pid": None,
        "process": None,
        "meaning": BUS_INFO.meaning,
        "category": BUS_INFO.category,
        "severity": BUS_INFO.severity,
        "action": BUS_INFO.action,
    }


# --------------------------------------------------------------------------
# Line prefixes (timestamps, facility, host)
# --------------------------------------------------------------------------

_HEX = "[0-9A-Fa-f]"
_PCI_TEXT = rf"(?:{_HEX}{{4,8}}:)?{_HEX}{{2}}:{_HEX}{{2}}(?:\.[0-7])?"

_KMSG_RE = re.compile(r"(?P<prio>\d+),(?P<seq>\d+),(?P<usec>\d+),[^;]*;")
_FACILITY_RE = re.compile(r"[a-z0-9]+\s*:[a-z]+\s*:\s")
_UPTIME_RE = re.compile(r"\[\s*(?P<up>\d+\.\d+)\]\s?")
_CTIME_RE = re.compile(r"\[(?P<ctime>[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \d{4})\]\s?")
_ISO_RE = re.compile(
    r"(?P<iso>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d(?::?\d\d)?)?)\s"
)
_SYSLOG_RE = re.compile(r"(?P<syslog>[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d(?:\.\d+)?)\s")
_HOST_KERNEL_RE = re.compile(r"(?:(?P<host>[^\s:\[]+) )?kernel(?:\[\d+\])?: ")
_MONTHS = {m: i for i, m in enumerate(
    ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), start=1)}

_MAX_LINE_CHARS = 65536
_MAX_CONTINUATION_LINES = 200


@dataclass(frozen=True, **SLOTS)
class _Prefix:
    body: str
    time: str | None
    uptime_s: float | None
    host: str | None
    stamp: float | None  # comparable seconds, only for continuation grouping


def _iso_time(text: str) -> tuple[str, float] | None:
    text = text.replace(",", ".").replace(" ", "T", 1)
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    return dt.isoformat(), dt.timestamp() if dt.tzinfo else _naive_stamp(dt)


def _naive_stamp(dt: datetime) -> float:
    return dt.toordinal() * 86400.0 + dt.hour * 3600 + dt.minute * 60 + dt.second + dt.microsecond / 1e6


def _split_prefix(line: str, year: int | None) -> _Prefix:
    """Strip facility, timestamp and host prefixes; return the kernel message."""
    rest = line
    time: str | None = None
    uptime: float | None = None
    host: str | None = None
    stamp: float | None = None

    m = _KMSG_RE.match(rest)
    if m:
        usec = int(m.group("usec"))
        return _Prefix(rest[m.end():], None, usec / 1e6, None, usec / 1e6)
    m = _FACILITY_RE.match(rest)
    if m:
        rest = rest[m.end():]
    for _ in range(2):  # e.g. "Nov 29 11:28:11 host kernel: [ 123.4] NVRM: ..."
        if (m := _UPTIME_RE.match(rest)) is not None:
            uptime = float(m.group("up"))
            stamp = uptime if stamp is None else stamp
            rest = rest[m.end():]
        elif (m := _CTIME_RE.match(rest)) is not None:
            try:
                dt = datetime.strptime(" ".join(m.group("ctime").split()), "%a %b %d %H:%M:%S %Y")
            except ValueError:
                break
            time, stamp = dt.isoformat(), _naive_stamp(dt)
            rest = rest[m.end():]
        elif (m := _ISO_RE.match(rest)) is not None:
            parsed = _iso_time(m.group("iso"))
            if parsed is None:
                break
            time, stamp = parsed
            rest = rest[m.end():]
        elif (m := _SYSLOG_RE.match(rest)) is not None:
            mon, day, clock = m.group("syslog").split()
            hh, mm, ss = clock.split(":")
            sec = float(ss)
            try:
                dt = datetime(year or datetime.now().year, _MONTHS[mon], int(day), int(hh),
                              int(mm), int(sec), round((sec - int(sec)) * 1e6) % 1000000)
                if year is None and dt > datetime.now() + timedelta(days=1):
                    dt = dt.replace(year=dt.year - 1)
            except (KeyError, ValueError):
                break
            time, stamp = dt.isoformat(), _naive_stamp(dt)
            rest = rest[m.end():]
        else:
            break
        if (m := _HOST_KERNEL_RE.match(rest)) is not None:
            host = m.group("host")
            rest = rest[m.end():]
    if host is None and rest.startswith("kernel: "):
        rest = rest[len("kernel: "):]
        if (m := _UPTIME_RE.match(rest)) is not None:
            uptime = float(m.group("up"))
            stamp = uptime if stamp is None else stamp
            rest = rest[m.end():]
    return _Prefix(rest, time, uptime, host, stamp)


# --------------------------------------------------------------------------
# Message patterns
# --------------------------------------------------------------------------

_XID_RE = re.compile(
    rf"(?:NVRM: )?\bXid \((?:PCI:)?(?P<pci>{_PCI_TEXT})(?P<attr>[^)]*)\): (?P<code>\d+)(?:,\s?(?P<rest>.*))?$"
)
_PID_RE = re.compile(r"pid=(?:'<unknown>'|<unknown>|'(?P<qpid>\d+)'|(?P<pid>\d+))(?:,\s?|$)")
_NAME_RE = re.compile(r"name=(?P<name>.*?)(?:, |,$|$)")
_GPU_I_RE = re.compile(r"GPU-I:\s*(\d+)")
_GPU_CI_RE = re.compile(r"GPU-CI:\s*(\d+)")
_CAUSED_BY_RE = re.compile(r"caused by previous Xid\s+(\d+)", re.IGNORECASE)
_FATAL_RE = re.compile(r"\bFatal\b")
_GPU_AT_RE = re.compile(
    rf"NVRM: GPU at (?:PCI:)?(?P<pci>{_PCI_TEXT}): (?P<uuid>GPU-[0-9a-fA-F]{{8}}(?:-[0-9a-fA-F]{{4}}){{3}}-[0-9a-fA-F]{{12}})"
)
_FALLEN_RE = re.compile(r"fallen off the bus", re.IGNORECASE)
_ANY_PCI_RE = re.compile(rf"(?<![0-9A-Fa-f:])(?P<pci>{_HEX}{{4,8}}:{_HEX}{{2}}:{_HEX}{{2}}(?:\.[0-7])?)")
_THE_NVIDIA_GPU_RE = re.compile(rf"NVRM: The NVIDIA GPU (?P<pci>{_PCI_TEXT})")
_NVRM_GPU_PCI_RE = re.compile(rf"NVRM: GPU (?P<pci>{_PCI_TEXT}): ")
_TABLE_CONT_RE = re.compile(r"NVRM: (?:GPU\d+ |\s{2,}\S)")
_CRASH_DUMP_RE = re.compile(
    r"(?:NVRM: )?(?:A GPU crash dump has been created|nvidia-bug-report\.sh as root|"
    r"the NVIDIA kernel module is unloaded)"
)
_TRACE_START_RE = re.compile(r"CPU: \d+ PID: \d+ ")
_TRACE_END_RE = re.compile(r"\s*</TASK>|---\[ end trace")
_CONT_WINDOW_S = 2.0


def _strip_nvrm(body: str) -> str:
    return body[6:] if body.startswith("NVRM: ") else body


class XidParser:
    """Incremental parser: feed kernel-log lines, get events back.

    An event is held back until a line arrives that does not continue it, so
    a live reader calls ``flush()`` when its source has gone quiet.

    Args:
        year: year for syslog timestamps that print none ("Nov 29 11:28:11");
            by default the current year, or the previous one for dates that
            would lie in the future (the syslog convention).
    """

    def __init__(self, year: int | None = None) -> None:
        self._year = year
        self._line_no = 0
        self._pending: XidEvent | None = None
        self._pending_stamp: float | None = None
        self._pending_lines: list[str] = []
        self._in_trace = False
        self._uuids: dict[str, str] = {}
        self._the_gpu: tuple[str, str, _Prefix, int] | None = None  # split "The NVIDIA GPU" line

    def feed(self, line: str) -> list[KernelEvent]:
        """Parse one line (trailing newline allowed) and return finished events."""
        self._line_no += 1
        line = line.rstrip("\r\n")
        if len(line) > _MAX_LINE_CHARS:
            line = line[:_MAX_LINE_CHARS]
        prefix = _split_prefix(line, self._year)
        body = prefix.body
        out: list[KernelEvent] = []

        if self._pending is not None and self._continues(prefix):
            if len(self._pending_lines) < _MAX_CONTINUATION_LINES:
                self._pending_lines.append(_strip_nvrm(body).rstrip())
            return out

        out.extend(self.flush())
        the_gpu, self._the_gpu = self._the_gpu, None

        m = _XID_RE.search(body)
        if m is not None:
            event = self._xid_event(m, prefix)
            if event is not None:
                self._pending = event
                self._pending_stamp = prefix.stamp
                self._pending_lines = []
                self._in_trace = False
            return out

        m = _GPU_AT_RE.search(body)
        if m is not None:
            self._uuids[normalize_pci(m.group("pci"))] = "GPU-" + m.group("uuid")[4:].lower()
            return out

        if "NVRM" in body and _FALLEN_RE.search(body):
            out.append(self._bus_event(body, prefix, the_gpu))
            return out

        m = _THE_NVIDIA_GPU_RE.search(body)
        if m is not None:  # the message may continue on the next line
            self._the_gpu = (m.group("pci"), body, prefix, self._line_no)
        return out

    def flush(self) -> list[KernelEvent]:
        """Return the event still held back, if any."""
        if self._pending is None:
            return []
        event = self._pending
        if self._pending_lines:
            message = "\n".join([event.message, *self._pending_lines])
            event = replace(event, message=message)
        self._pending = None
        self._pending_lines = []
        self._in_trace = False
        return [event]

    def _continues(self, prefix: _Prefix) -> bool:
        pending = self._pending
        assert pending is not None
        body = prefix.body
        if prefix.host != pending.host and prefix.host is not None:
            return False
        if (
            prefix.stamp is not None
            and self._pending_stamp is not None
            and abs(prefix.stamp - self._pending_stamp) > _CONT_WINDOW_S
        ):
            return False
        if _XID_RE.search(body):
            return False
        if self._in_trace:
            if _TRACE_END_RE.match(body):
                self._in_trace = False
            return True
        if _TRACE_START_RE.match(body):
            self._in_trace = True
            return True
        if _TABLE_CONT_RE.match(body) or _CRASH_DUMP_RE.match(body):
            return True
        m = _NVRM_GPU_PCI_RE.match(body)
        return m is not None and normalize_pci(m.group("pci")) == pending.pci_address

    def _xid_event(self, m: re.Match[str], prefix: _Prefix) -> XidEvent | None:
        code = int(m.group("code"))
        if code < 1:
            return None
        rest = m.group("rest") or ""
        pid: int | None = None
        process: str | None = None
        pm = _PID_RE.match(rest)
        if pm is not None:
            digits = pm.group("pid") or pm.group("qpid")
            pid = int(digits) if digits else None
            rest = rest[pm.end():]
            nm = _NAME_RE.match(rest)
            if nm is not None:
                name = nm.group("name").strip()
                process = None if name in ("<unknown>", "'<unknown>'", "") else name
                rest = rest[nm.end():]
        cm = _CAUSED_BY_RE.search(rest)
        attr = m.group("attr")
        gi = _GPU_I_RE.search(attr)
        ci = _GPU_CI_RE.search(attr)
        pci = normalize_pci(m.group("pci"))
        return XidEvent(
            code=code,
            pci_address=pci,
            raw_pci=m.group("pci"),
            time=prefix.time,
            uptime_s=prefix.uptime_s,
            pid=pid,
            process=process,
            message=rest.rstrip(),
            caused_by=int(cm.group(1)) if cm else None,
            line_no=self._line_no,
            host=prefix.host,
            gpu_uuid=self._uuids.get(pci),
            gpu_instance_id=int(gi.group(1)) if gi else None,
            compute_instance_id=int(ci.group(1)) if ci else None,
        )

    def _bus_event(
        self, body: str, prefix: _Prefix, the_gpu: tuple[str, str, _Prefix, int] | None
    ) -> BusEvent:
        m = _ANY_PCI_RE.search(body)
        message = _strip_nvrm(body).strip()
        line_no = self._line_no
        if m is None and the_gpu is not None:
            raw, first_body, first_prefix, line_no = the_gpu
            message = _strip_nvrm(first_body).strip() + "\n" + message
            prefix = first_prefix
        else:
            raw = m.group("pci") if m else ""
        pci = normalize_pci(raw) if raw else ""
        return BusEvent(
            pci_address=pci,
            raw_pci=raw,
            time=prefix.time,
            uptime_s=prefix.uptime_s,
            message=message,
            line_no=line_no,
            host=prefix.host,
            gpu_uuid=self._uuids.get(pci),
        )


def parse_kernel_events(lines: Iterable[str], year: int | None = None) -> Iterator[KernelEvent]:
    """Yield ``XidEvent`` and ``BusEvent`` objects from kernel-log lines, in order.

    Lines that are neither are skipped; nothing in the input raises.
    """
    parser = XidParser(year=year)
    for line in lines:
        yield from parser.feed(line)
    yield from parser.flush()


def parse_xid_lines(lines: Iterable[str], year: int | None = None) -> Iterator[XidEvent]:
    """Yield only the ``XidEvent`` objects from kernel-log lines."""
    for event in parse_kernel_events(lines, year=year):
        if isinstance(event, XidEvent):
            yield event


def parse_xid_text(text: str, year: int | None = None) -> list[XidEvent]:
    """Return the Xid events in a block of kernel-log text."""
    return list(parse_xid_lines(text.splitlines(), year=year))
