"""A device backend that reads every device of the node in one go: a vendor tool's run, or one pass of a binding.

:class:`PolledBackend` implements :class:`fleetmon.agent.backend.Backend` over a :class:`Reader`, whose
``inventory()`` and ``sample()`` each return a :class:`~fleetmon.sources.capture.Capture` of all devices
(the parsers of :mod:`fleetmon.sources` make them: one parser per format, the agent's backends and the
SSH source and ``fleetmon import`` share it).

* One read serves all devices of a sampling round: the first :meth:`~PolledBackend.submit_read` of a round
  starts it on the backend's worker, the others of that round get futures of the same read (the same
  contract as :meth:`fleetmon.agent.nvml.NvmlSession.submit_read`: ``(values, status, lost, ms, calls)``).
* A read that fails (the tool exits non-zero, prints what its parser refuses, does not answer in time and
  is killed) gives every device ``failed`` readings, never a value and never lost; the one-line reason is
  :attr:`~PolledBackend.enumeration_error` (served in /v1/health) until a read succeeds again.
  A read still running when the next round starts makes that round ``failed`` too (the sampler calls
  it hung).
* Devices are matched by PCI bus id (else their unique id): one the read no longer lists is lost (as
  NVML's devices that leave enumeration), one listed again is back. The agent's index of a device stays
  what it was when first seen.
* The inventory (identity, limits, versions) is read at start and again every :data:`INVENTORY_REFRESH_S`
  (or when a read lists a device the inventory does not know); samples every interval.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import platform
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from fleetmon import __version__
from fleetmon.agent.backend import BackendUnavailable, NoDeviceEvents
from fleetmon.agent.nvml.pool import _Worker
from fleetmon.agent.nvml.session import _os_release
from fleetmon.errors import KnownError
from fleetmon.i18n import reason_of
from fleetmon.fields import INVENTORY_FIELDS
from fleetmon.records import GpuInventory, NodeInfo, Status
from fleetmon.sources.capture import SAMPLE_FIELDS, Capture
from fleetmon.vocab import GpuState

__all__ = ["INVENTORY_REFRESH_S", "PolledBackend", "ReadError", "Reader"]

log = logging.getLogger("fleetmon.agent.polled")

INVENTORY_REFRESH_S = 600.0
"""How often the inventory is read again (a device's limits or versions changed; a device joined)."""

_FAILED = Status.FAILED.value
_LOST = Status.GPU_LOST.value
_UNSUPPORTED = Status.UNSUPPORTED.value
_STATIC = ("power_limit_w",)
"""Sample fields a tool may give in its inventory output only (amd-smi static's power cap): the inventory's
value stands where the sample read has none (it is read again with the inventory)."""


class ReadError(KnownError):
    """A read of the devices failed; the message is the one-line reason (the tool's exit status and stderr)."""


class Reader(Protocol):
    """What a :class:`PolledBackend` reads through (a tool, a binding)."""

    name: str
    vendor: str

    def inventory(self, timeout_s: float) -> Capture: ...

    def sample(self, timeout_s: float) -> Capture: ...

    def close(self) -> None: ...


@dataclass
class _Slot:
    index: int
    key: str
    values: dict[str, Any]
    status: dict[str, str]
    extra: dict[str, Any] = field(default_factory=dict)
    vanished: bool = False
    static: dict[str, Any] = field(default_factory=dict)  # sample fields only the inventory read gives

    @property
    def state(self) -> str:
        return GpuState.LOST if self.vanished else GpuState.OK


def _key(capture: Capture, pos: int) -> str:
    values = capture.gpus[pos].values
    return str(values.get("pci_bus_id") or values.get("uuid") or capture.gpus[pos].uuid)


class PolledBackend:
    """The agent's backend over a :class:`Reader` (see the module docstring).

    Args:
        reader: the tool or binding.
        inventory_wait_s: how long the first inventory read may take (at least 5 s: tools start slowly).
        call_timeout_s: the deadline of an inventory read after the first.
        extra_note: a line for /v1/health's ``backend_note`` (e.g. why the binding was not used).

    Raises:
        BackendUnavailable: the first inventory read failed (the reason).
    """

    def __init__(self, reader: Reader, *, inventory_wait_s: float = 10.0, call_timeout_s: float = 10.0,
                 note: str | None = None) -> None:
        self.reader = reader
        self.name = reader.name
        self.vendor = reader.vendor
        self.note = note
        self.sample_fields: tuple[str, ...] = SAMPLE_FIELDS
        self.call_timeout_s = call_timeout_s
        self.hostname = socket.gethostname()
        self.enumeration_error: str | None = None
        self.inventory_version = 0
        self._lock = threading.RLock()
        self._slots: dict[int, _Slot] = {}
        self._node_values: dict[str, Any] = {}
        self._node_status: dict[str, str] = {}
        self._worker = _Worker(f"{reader.name}-read")
        self._inv_worker = _Worker(f"{reader.name}-inventory")
        self._inv_future: cf.Future[Any] | None = None
        self._inv_at = 0.0
        self._stale_inventory = False
        self._job: cf.Future[Any] | None = None
        self._job_started = 0.0
        self._served: set[int] = set()
        self._extra: dict[int, dict[str, Any]] = {}
        try:
            capture = reader.inventory(max(5.0, inventory_wait_s))
        except ReadError as exc:
            raise BackendUnavailable(reason_of(exc)) from exc
        self._merge_inventory(capture)

    # -- inventory and node ------------------------------------------------------------------------------

    def _merge_inventory(self, capture: Capture) -> list[int]:
        """Take an inventory read; returns the indices of devices not known before."""
        appeared = []
        with self._lock:
            by_key = {s.key: s for s in self._slots.values()}
            cards: dict[Any, int] = {}
            for extra in capture.extra:
                if extra.get("npu_id") is not None:
                    cards[extra["npu_id"]] = cards.get(extra["npu_id"], 0) + 1
            for pos, gpu in enumerate(capture.gpus):
                key = _key(capture, pos)
                values = {name: gpu.values.get(name) for name in INVENTORY_FIELDS}
                status = {name: st for name, st in gpu.status.items() if name in INVENTORY_FIELDS}
                extra = capture.extra[pos] if pos < len(capture.extra) else {}
                values["vendor"] = capture.vendor
                status.pop("vendor", None)
                npu = extra.get("npu_id")
                if npu is not None and cards.get(npu, 0) > 1:  # a chip of a card of several chips
                    values["card_id"] = f"{values.get('serial') or 'npu'}:{npu}"
                    status.pop("card_id", None)
                if values.get("firmware_version") is None and isinstance(extra.get("firmware_version"), str):
                    values["firmware_version"] = extra["firmware_version"]
                    status.pop("firmware_version", None)
                for name in ("card_id", "firmware_version"):
                    if values.get(name) is None:
                        status.setdefault(name, _UNSUPPORTED)
                slot = by_key.get(key)
                if slot is None:
                    index = max(self._slots, default=-1) + 1
                    slot = self._slots[index] = _Slot(index, key, values, status, dict(extra))
                    appeared.append(index)
                    self.inventory_version += 1
                else:
                    uuid = slot.values.get("uuid")
                    if (values, status) != (slot.values, slot.status):
                        self.inventory_version += 1
                    slot.values, slot.status, slot.extra = values, status, dict(extra)
                    if uuid and values.get("uuid") != uuid and not str(uuid).startswith("unknown-gpu-"):
                        slot.values["uuid"] = uuid  # the agent's id of a device never changes while it runs
                slot.values["index"] = slot.index
                slot.status.pop("index", None)
                if pos < len(capture.samples):
                    slot.static = {k: capture.samples[pos].values.get(k) for k in _STATIC
                                   if capture.samples[pos].values.get(k) is not None}
            info = capture.info
            self._node_values = dict(info.values)
            self._node_status = dict(info.status)
            self._inv_at = time.monotonic()
            self._stale_inventory = False
        return appeared

    def node_info(self) -> NodeInfo:
        """The node's versions (driver, runtime, firmware) as the tool or binding gives them, and the host's."""
        with self._lock:
            values, status = dict(self._node_values), dict(self._node_status)
        values.update(hostname=self.hostname, kernel=platform.release(), os_release=_os_release(),
                      vendor=self.vendor, gpu_count=sum(1 for s in self._slots.values() if not s.vanished))
        for name in ("hostname", "kernel", "os_release", "vendor", "gpu_count"):
            status.pop(name, None)
        for name in ("nvml_version", "cuda_driver_version"):  # NVIDIA's; no other vendor has them
            values[name] = None
            status[name] = _UNSUPPORTED
        return NodeInfo(hostname=self.hostname, agent_version=__version__, values=values, status=status)

    def indices(self) -> list[int]:
        with self._lock:
            return sorted(self._slots)

    def inventory(self, index: int) -> GpuInventory:
        with self._lock:
            slot = self._slots[index]
            values, status, state = dict(slot.values), dict(slot.status), slot.state
        if state == GpuState.LOST:
            status = {k: (_LOST if v == _FAILED else v) for k, v in status.items()}
        uuid = str(values.get("uuid") or f"unknown-gpu-{index}-{self.hostname}")
        return GpuInventory(uuid=uuid, index=index, name=str(values.get("name") or "unknown"), values=values,
                            status=status, state=state)

    def refresh_devices(self, wait_s: float = 0.0, *, read_node: bool = False,
                        block_s: float | None = None) -> dict[str, list[int]]:
        """Read the inventory again when it is due (bounded by ``block_s``); reports devices that joined.

        Devices that leave or return are reported by the reads (lost / back), not here.
        """
        changes: dict[str, list[int]] = {"appeared": [], "vanished": [], "returned": []}
        fut = self._inv_future
        if fut is None:
            due = self._stale_inventory or time.monotonic() - self._inv_at >= INVENTORY_REFRESH_S or read_node
            if not due:
                return changes
            fut = self._inv_worker.submit(self.reader.inventory, self.call_timeout_s)
            self._inv_future = fut
            if fut is None:
                return changes
        try:
            capture = fut.result(timeout=max(wait_s, block_s if block_s is not None else self.call_timeout_s))
        except cf.TimeoutError:
            return changes
        except Exception as exc:  # ReadError, or a parser's bug: keep the inventory known
            self._inv_future = None
            self._inv_at = time.monotonic()
            log.warning("%s: inventory read failed: %s", self.name, exc)
            return changes
        self._inv_future = None
        changes["appeared"] = self._merge_inventory(capture)
        return changes

    # -- sampling ----------------------------------------------------------------------------------------

    def submit_read(self, index: int, timeout_s: float) -> cf.Future[Any] | None:
        """A future of one device's readings: ``(values, status, lost, ms, calls)`` (see the module docstring).

        None while the read this device got last has not returned (a hung tool: the round is failed).
        """
        with self._lock:
            job = self._job
            fresh = job is not None and index not in self._served and (
                not job.done() or time.monotonic() - self._job_started < min(0.5, timeout_s / 4))
            if not fresh:
                if job is not None and not job.done():
                    return None
                job = self._worker.submit(self._read_all, timeout_s)
                if job is None:
                    return None
                self._job, self._job_started, self._served = job, time.monotonic(), set()
            self._served.add(index)
        assert job is not None
        out: cf.Future[Any] = cf.Future()
        out.set_running_or_notify_cancel()

        def done(f: cf.Future[Any]) -> None:
            try:
                results = f.result()
                out.set_result(results.get(index) or self._unread(index, _FAILED, 0.0))
            except Exception as exc:  # a bug in a parser: the sampler logs it and serves failed readings
                out.set_exception(exc)

        job.add_done_callback(done)
        return out

    def _unread(self, index: int, st: str, ms: float) -> tuple[dict[str, Any], dict[str, str], bool, float, int]:
        values: dict[str, Any] = {name: None for name in self.sample_fields}
        return values, {name: st for name in self.sample_fields}, st == _LOST, ms, 1

    def _read_all(self, timeout_s: float) -> dict[int, tuple[dict[str, Any], dict[str, str], bool, float, int]]:
        """One read of all devices (on the worker); every known device gets a result."""
        t0 = time.perf_counter()
        try:
            capture = self.reader.sample(max(0.2, timeout_s * 0.9))
        except ReadError as exc:
            ms = (time.perf_counter() - t0) * 1000.0
            if self.enumeration_error != str(exc):
                log.warning("%s", exc)
            self.enumeration_error = str(exc)
            with self._lock:
                return {i: self._unread(i, _LOST if s.vanished else _FAILED, ms) for i, s in self._slots.items()}
        ms = (time.perf_counter() - t0) * 1000.0
        self.enumeration_error = None
        results = {}
        with self._lock:
            by_key = {s.key: s for s in self._slots.values()}
            seen: set[int] = set()
            for pos, sample in enumerate(capture.samples):
                slot = by_key.get(_key(capture, pos))
                if slot is None:
                    self._stale_inventory = True  # a device the inventory does not know: read it again
                    continue
                seen.add(slot.index)
                if slot.vanished:
                    slot.vanished = False
                    self.inventory_version += 1
                values = {name: sample.values.get(name) for name in self.sample_fields}
                status = {name: st for name, st in sample.status.items() if name in values and values[name] is None}
                for name, value in slot.static.items():
                    if values[name] is None and status.get(name, _UNSUPPORTED) == _UNSUPPORTED:
                        values[name] = value
                        status.pop(name, None)
                for name in self.sample_fields:
                    if values[name] is None and name not in status:
                        status[name] = _UNSUPPORTED
                lost = sample.state == GpuState.LOST
                self._extra[slot.index] = {**slot.extra, **(capture.extra[pos] if pos < len(capture.extra) else {})}
                results[slot.index] = (values, status, lost, ms, 1)
            for index, slot in self._slots.items():
                if index in seen:
                    continue
                if not slot.vanished:
                    slot.vanished = True
                    self.inventory_version += 1
                    log.warning("%s: device %d (%s) is no longer listed", self.name, index, slot.values.get("uuid"))
                results[index] = self._unread(index, _LOST, ms)
        return results

    def busy_since(self, index: int) -> float | None:
        return self._worker.busy_since

    def lost_reason(self, index: int) -> str:
        """How the sampler's gpu_lost event says it: the device left the tool's (binding's) list."""
        return f"{self.name} no longer lists it"

    def extra(self, index: int) -> dict[str, Any]:
        """The device's vendor readings of the last read, by the names its parser documents."""
        with self._lock:
            slot = self._slots.get(index)
            if slot is None:
                return {}
            return dict(self._extra.get(index, slot.extra))

    def xid_events(self) -> NoDeviceEvents:
        return NoDeviceEvents(f"{self.name}: no device event channel (errors show in its counters and health)")

    def close(self) -> None:
        if self._worker.busy or self._inv_worker.busy:
            log.warning("%s: a read still runs at close", self.name)
        self.reader.close()
