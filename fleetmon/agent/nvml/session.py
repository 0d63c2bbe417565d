"""The NVML session: an initialised NVML with cached handles, cached inventory and per-GPU lanes.

Facts this follows (NVML docs, nvitop, gpustat): initialise once, cache device
handles (the first lookup costs 170–300 ms; later calls 0.1–0.4 ms each), read
static inventory once, remember which calls a GPU does not support.

Time bounds. Every call that touches one GPU runs on its lane
(:class:`fleetmon.agent.nvml.pool._Worker`), one job per GPU at a time, so a
wedged GPU blocks only its own call. A job gets a deadline: once it is past,
the job's remaining calls are not made and their fields are reported
``failed`` (one hung call costs one timeout, not 35). Enumeration (device
count, handle lookups) runs on a separate worker with a deadline too. A GPU
whose inventory is not read yet is served with what is known (its index, and
its identity from the previous run when the buffer remembers it) and retried
later. A GPU that answers GPU_IS_LOST, or leaves enumeration, reads
``gpu_lost``.
"""

from __future__ import annotations

import concurrent.futures as cf
import ctypes
import functools
import logging
import os
import platform
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from fleetmon import __version__
from fleetmon.agent.nvml.events import XidEvents
from fleetmon.agent.nvml.load import PynvmlApi, load_pynvml
from fleetmon.agent.nvml.pool import _Worker
from fleetmon.agent.nvml.readers import (
    _FAILED,
    _LOST,
    _UNSUPPORTED,
    _Reader,
    _text,
    check_readers,
    read_fields,
    read_inventory,
    sample_field_names,
)
from fleetmon.errors import NvmlUnavailable
from fleetmon.i18n import N_, Text
from fleetmon.fields import CATALOG, INVENTORY_FIELDS, Field
from fleetmon.records import GpuInventory, NodeInfo
from fleetmon.vocab import GpuState

log = logging.getLogger("fleetmon.nvml")

DEFAULT_INVENTORY_WAIT_S = 2.0
"""How long startup waits for the inventory of all GPUs (in parallel) before serving."""
DEFAULT_CALL_TIMEOUT_S = 3.0
"""Default deadline of one job (a GPU's inventory or sample) when the caller gives none."""
INVENTORY_RETRY_S = 30.0
"""How often an incomplete inventory (a field failed or was not answered) is read again."""

_IDENTITY_FIELDS = ("uuid", "name", "serial", "pci_bus_id", "board_part_number")
"""Inventory values adopted from the previous run for a GPU not readable now."""


def open_nvml(module: PynvmlApi | None = None, *, known_inventory: list[dict[str, Any]] | None = None,
              inventory_wait_s: float = DEFAULT_INVENTORY_WAIT_S,
              call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
              fields: tuple[Field, ...] = CATALOG) -> "NvmlSession":
    """Initialise NVML once and return a session (``nvidia-smi`` starts the same way).

    Args:
        module: the pynvml API (see :func:`load_nvml`); the real pynvml when None.
        known_inventory: inventory rows (``GpuInventory.to_dict()``) of a
            previous run, to name GPUs that cannot be read now.
        inventory_wait_s: how long to wait for the GPUs' inventory before
            returning; GPUs not done by then are completed in the background.
        call_timeout_s: deadline of one inventory or enumeration job.
        fields: the field catalog to sample (fleetmon.fields.CATALOG).

    Raises:
        NvmlUnavailable: no library, driver not loaded, library/driver mismatch.
    """
    nv = module if module is not None else load_pynvml()
    try:
        nv.nvmlInit()
    except nv.NVMLError as exc:
        raise NvmlUnavailable(Text(
            N_("NVML could not start: {error}. Is the NVIDIA driver installed and loaded?"), error=str(exc)
        )) from exc
    except OSError as exc:  # a broken libnvidia-ml.so
        raise NvmlUnavailable(Text(N_("NVML could not start: {error}"), error=str(exc))) from exc
    return NvmlSession(nv, known_inventory=known_inventory, inventory_wait_s=inventory_wait_s,
                       call_timeout_s=call_timeout_s, fields=fields)


def _handle_key(handle: Any) -> Any:
    """A hashable identity of a device handle.

    Real pynvml returns a new ctypes pointer object per lookup, all pointing at
    the same NVML device; the simulated twin returns one object per GPU.
    """
    try:
        return ctypes.cast(handle, ctypes.c_void_p).value
    except (TypeError, ctypes.ArgumentError):
        return ("id", id(handle))


# ---------------------------------------------------------------------------
# Per-GPU state
# ---------------------------------------------------------------------------


@dataclass
class _Slot:
    """What the session knows about one GPU (kept while it is lost or gone)."""

    index: int  # the agent's index: the NVML index when the GPU was first seen
    worker: _Worker
    nvml_index: int | None = None  # current NVML index (None once it left enumeration)
    handle: Any = None
    handle_key: Any = None
    values: dict[str, Any] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)
    complete: bool = False  # every inventory field has a value or a permanent status
    read_once: bool = False  # an inventory read returned at least once
    inv_tried_at: float | None = None  # monotonic
    lost: bool = False  # GPU_IS_LOST seen (still enumerated)
    vanished: bool = False  # left enumeration
    unsupported: dict[str, float] = field(default_factory=dict)  # field -> monotonic
    placeholder: bool = True  # uuid is not the GPU's own (not read yet)

    @property
    def state(self) -> str:
        return GpuState.LOST if (self.lost or self.vanished) else GpuState.OK


class NvmlSession:
    """An initialised NVML with cached handles, cached inventory and per-GPU workers.

    Thread safety: any thread may call the public methods. Per-GPU NVML calls
    run on a pool thread, one job per GPU at a time; callers wait at most a
    deadline.
    """

    name = "nvml"
    """The backend's name (:mod:`fleetmon.agent.backend`)."""
    vendor = "nvidia"

    def __init__(self, nv: PynvmlApi, *, known_inventory: list[dict[str, Any]] | None = None,
                 inventory_wait_s: float = DEFAULT_INVENTORY_WAIT_S,
                 call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S, fields: tuple[Field, ...] = CATALOG) -> None:
        self._nv = nv  # the raw pynvml: private to this package
        self.fields = check_readers(fields)
        self.sample_fields: tuple[str, ...] = sample_field_names(fields)
        self.call_timeout_s = call_timeout_s
        self.hostname = socket.gethostname()
        self._memo: set[tuple[str, str]] = set()
        self._lock = threading.RLock()
        self._slots: dict[int, _Slot] = {}
        self._known: dict[int, dict[str, Any]] = {}
        self._enum_worker = _Worker("nvml-enum")
        self._enum_future: cf.Future[Any] | None = None
        self._node_values: dict[str, Any] = {}
        self._node_status: dict[str, str] = {}
        self.device_count = 0
        self.inventory_version = 0  # bumped whenever any GPU's inventory or state changes
        self.enumeration_error: str | None = None
        if known_inventory:
            self.adopt_known_inventory(known_inventory)
        self.refresh_devices(wait_s=inventory_wait_s, read_node=True)

    # -- node ------------------------------------------------------------------

    def _read_node(self) -> None:
        nv = self._nv
        r = _Reader(nv, self._memo)
        r.set("driver_version", "nvmlSystemGetDriverVersion", conv=_text)
        r.set("nvml_version", "nvmlSystemGetNVMLVersion", conv=_text)
        cuda = r.call("cuda_driver_version", "nvmlSystemGetCudaDriverVersion")
        if cuda is not None:
            r.values["cuda_driver_version"] = f"{int(cuda) // 1000}.{(int(cuda) % 1000) // 10}"
        r.values["vendor"] = "nvidia"
        if "cuda_driver_version" in r.values:  # the vendor-neutral name of the same fact
            r.values["runtime_version"] = r.values["cuda_driver_version"]
        else:
            r.values["runtime_version"] = None
            r.status["runtime_version"] = r.status.get("cuda_driver_version", _FAILED)
        r.mark(("firmware_version",), _UNSUPPORTED)  # per device (VBIOS, InfoROM) on NVIDIA
        self._node_values, self._node_status = r.values, r.status

    def node_info(self) -> NodeInfo:
        """Node-level facts (nvidia-smi header: driver, CUDA version; uname; os-release).

        ``gpu_count`` is NVML's device count at the last enumeration; a GPU
        that left enumeration no longer counts but is still listed as lost.
        """
        values = dict(self._node_values)
        status = dict(self._node_status)
        for key in ("driver_version", "nvml_version", "cuda_driver_version", "runtime_version"):
            if key not in values and key not in status:
                values[key] = None
                status[key] = _FAILED  # enumeration has not answered yet
        values["hostname"] = self.hostname
        values["kernel"] = platform.release()
        values["os_release"] = _os_release()
        values["gpu_count"] = self.device_count
        return NodeInfo(hostname=self.hostname, agent_version=__version__, values=values, status=status)

    # -- enumeration -----------------------------------------------------------

    def _enumerate(self, read_node: bool) -> tuple[int, list[tuple[int, Any, str | None]]]:
        """Runs on the enumeration worker: device count and one handle per index."""
        nv = self._nv
        if read_node:
            self._read_node()
        count = int(nv.nvmlDeviceGetCount())
        found: list[tuple[int, Any, str | None]] = []
        r = _Reader(nv, self._memo)
        for i in range(count):
            try:
                found.append((i, nv.nvmlDeviceGetHandleByIndex(i), None))
            except nv.NVMLError as exc:
                st = r.classify(exc).value
                if (f"handle {i}", st) not in self._memo:  # once, not at every re-enumeration
                    self._memo.add((f"handle {i}", st))
                    log.warning("GPU %d: no handle: %s", i, exc)
                found.append((i, None, st))
        return count, found

    def refresh_devices(self, wait_s: float = 0.0, *, read_node: bool = False,
                        block_s: float | None = None) -> dict[str, list[int]]:
        """(Re-)enumerate GPUs, bounded in time; keeps what is known of GPUs that are gone.

        Matches devices to known GPUs by handle, so GPUs keep their index when
        another one leaves enumeration. Starts inventory reads of new GPUs and
        waits for them up to ``wait_s`` (0: do not wait). Enumeration itself
        runs on its own worker; this call waits for it at most ``block_s``
        (default: the call timeout). An enumeration that answers later is
        merged by the next call.

        Returns:
            {"appeared": [...], "vanished": [...], "returned": [...]}: agent
            indices whose enumeration state changed in this call.
        """
        changes: dict[str, list[int]] = {"appeared": [], "vanished": [], "returned": []}
        fut = self._enum_future
        if fut is None:
            fut = self._enum_worker.submit(self._enumerate, read_node or not self._node_values)
            self._enum_future = fut
        if fut is None:
            return changes
        try:
            count, found = fut.result(timeout=self.call_timeout_s if block_s is None else block_s)
        except cf.TimeoutError:
            since = self._enum_worker.busy_since
            if since is not None and time.monotonic() - since > self.call_timeout_s:
                self.enumeration_error = (f"NVML enumeration has not answered for "
                                          f"{time.monotonic() - since:.0f} s")
                log.warning(self.enumeration_error)
            return changes
        except Exception as exc:  # NVMLError from nvmlDeviceGetCount, or a binding error
            self._enum_future = None
            self.enumeration_error = f"nvmlDeviceGetCount failed: {exc}"
            log.warning(self.enumeration_error)
            return changes
        self._enum_future = None
        self.enumeration_error = None
        with self._lock:
            changes = self._merge(count, found)
        started = [s for s in list(self._slots.values()) if not s.read_once and s.handle is not None]
        futures = [f for f in (s.worker.submit(self._inventory_job, s, self.call_timeout_s) for s in started) if f]
        if futures and wait_s > 0:
            cf.wait(futures, timeout=wait_s)
        return changes

    def _merge(self, count: int, found: list[tuple[int, Any, str | None]]) -> dict[str, list[int]]:
        changes: dict[str, list[int]] = {"appeared": [], "vanished": [], "returned": []}
        first = not self._slots
        self.device_count = count
        by_key = {s.handle_key: s for s in self._slots.values() if s.handle_key is not None}
        present: set[int] = set()
        for nvml_index, handle, err in found:
            if handle is not None:
                key = _handle_key(handle)
                slot = by_key.get(key)
                if slot is None:
                    # A GPU whose handle lookup failed before, now answering at its index?
                    slot = next((s for s in self._slots.values() if s.handle is None
                                 and s.nvml_index == nvml_index and not s.vanished), None)
                if slot is None:
                    slot = self._new_slot(nvml_index)
                    if not first:
                        changes["appeared"].append(slot.index)
                slot.handle, slot.handle_key, slot.nvml_index = handle, key, nvml_index
                by_key[key] = slot
            else:
                slot = next((s for s in self._slots.values() if s.nvml_index == nvml_index
                             and not s.vanished), None)
                if slot is None:
                    slot = self._new_slot(nvml_index, lost=err == _LOST)
                    if not first:
                        changes["appeared"].append(slot.index)
                elif err == _LOST and not slot.lost:
                    slot.lost = True
                    if slot.placeholder:
                        self._fill_unread(slot)
                    self.inventory_version += 1
            if slot.vanished:
                slot.vanished = False
                changes["returned"].append(slot.index)
                self.inventory_version += 1
            present.add(slot.index)
        for slot in self._slots.values():
            if slot.index not in present and not slot.vanished:
                slot.vanished = True
                slot.nvml_index = None
                changes["vanished"].append(slot.index)
                self.inventory_version += 1
                log.warning("GPU %d (%s) left enumeration", slot.index, slot.values.get("uuid"))
        return changes

    def _new_slot(self, nvml_index: int, lost: bool = False) -> _Slot:
        index = nvml_index if nvml_index not in self._slots else max(self._slots) + 1
        slot = _Slot(index=index, worker=_Worker(f"gpu{index}"), nvml_index=nvml_index, lost=lost)
        self._fill_unread(slot)
        self._slots[index] = slot
        self.inventory_version += 1
        return slot

    def _fill_unread(self, slot: _Slot) -> None:
        """Inventory of a GPU not read yet: its index, the previous run's identity, or a placeholder."""
        values: dict[str, Any] = {name: None for name in INVENTORY_FIELDS}
        status = {name: _FAILED for name in INVENTORY_FIELDS}
        values["index"] = slot.index
        del status["index"]
        values["vendor"] = "nvidia"
        del status["vendor"]
        for name in ("pcie_gpu_max_width", "firmware_version", "card_id"):
            status[name] = _UNSUPPORTED  # never readable (see _read_inventory, read_inventory)
        known = self._known.get(slot.index)
        if known:
            for name in _IDENTITY_FIELDS:
                if known.get(name) is not None:
                    values[name] = known[name]
                    status.pop(name, None)
            values["inventory_source"] = "previous_run"
        if values.get("uuid") is None:
            where = values.get("pci_bus_id") or self.hostname
            values["uuid"] = f"{'lost' if slot.lost else 'unknown'}-gpu-{slot.index}-{where}"
            status.pop("uuid", None)
        slot.values, slot.status = values, status

    def adopt_known_inventory(self, rows: list[dict[str, Any]]) -> None:
        """Remember the inventory of a previous run, by agent index.

        GPUs that cannot be read now (lost at start, hung) are then reported
        with their previous uuid, name and PCI address instead of a placeholder.
        """
        known: dict[int, dict[str, Any]] = {}
        for row in rows or []:
            try:
                values = row.get("values") or {}
                raw_index = row.get("index", values.get("index"))
                if raw_index is None:
                    continue  # no index: nothing to adopt it by
                index = int(raw_index)
            except (TypeError, ValueError, AttributeError):
                continue
            uuid = row.get("uuid") or values.get("uuid")
            if not isinstance(uuid, str) or not uuid.startswith(("GPU-", "MIG-")):
                continue  # never adopt a placeholder
            known[index] = {**{k: values.get(k) for k in _IDENTITY_FIELDS}, "uuid": uuid,
                            "name": row.get("name") or values.get("name")}
        with self._lock:
            self._known = known
            for slot in self._slots.values():
                if slot.placeholder and slot.index in known:
                    self._fill_unread(slot)
                    self.inventory_version += 1

    # -- inventory -------------------------------------------------------------

    def indices(self) -> list[int]:
        """Agent indices of every GPU this session knows (lost and vanished ones included)."""
        with self._lock:
            return sorted(self._slots)

    def inventory(self, index: int) -> GpuInventory:
        """Static facts of one GPU (``nvidia-smi -q`` header part); state "ok" or "lost"."""
        slot = self._slots[index]
        with self._lock:
            values = dict(slot.values)
            status = dict(slot.status)
            state = slot.state
        if state == GpuState.LOST:
            status = {k: (_LOST if v == _FAILED else v) for k, v in status.items()}
        return GpuInventory(uuid=str(values.get("uuid")), index=index, name=str(values.get("name") or "unknown"),
                            values=values, status=status, state=state)

    def state(self, index: int) -> str:
        """"ok" or "lost" for one GPU."""
        return self._slots[index].state

    def inventory_complete(self, index: int) -> bool:
        return self._slots[index].complete

    def handle(self, index: int) -> Any:
        """The cached NVML handle of a GPU, or None (lost before it was looked up)."""
        slot = self._slots.get(index)
        return None if slot is None else slot.handle

    def index_for_handle(self, handle: Any) -> int | None:
        """Agent index of the GPU an NVML handle (e.g. from an event) refers to."""
        key = _handle_key(handle)
        for slot in list(self._slots.values()):
            if slot.handle is handle or slot.handle_key == key:
                return slot.index
        return None

    def busy_since(self, index: int) -> float | None:
        """Monotonic time since which the GPU's worker has been inside one job, or None."""
        slot = self._slots.get(index)
        return None if slot is None else slot.worker.busy_since

    def _inventory_job(self, slot: _Slot, timeout_s: float | None) -> None:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self._read_inventory(slot, deadline)

    def _read_inventory(self, slot: _Slot, deadline: float | None) -> None:
        """Read (or re-read) the static facts of one GPU; runs on its worker."""
        h = slot.handle
        slot.inv_tried_at = time.monotonic()
        if h is None:
            return
        r = _Reader(self._nv, self._memo, deadline=deadline)
        read_inventory(r, h)
        self._merge_inventory(slot, r)

    def _merge_inventory(self, slot: _Slot, r: _Reader) -> None:
        with self._lock:
            values, status = dict(slot.values), dict(slot.status)
            for name, value in r.values.items():
                st = r.status.get(name)
                if st is None:
                    values[name] = value
                    status.pop(name, None)
                elif values.get(name) is None or st == _UNSUPPORTED or name not in values:
                    # keep a value read earlier rather than replacing it by a failure
                    values[name] = None
                    status[name] = st
            values["index"] = slot.index
            if r.status.get("uuid") is None and r.values.get("uuid"):
                slot.placeholder = False
                values.pop("inventory_source", None)
            if r.lost:
                slot.lost = True
            changed = (values, status) != (slot.values, slot.status)
            slot.values, slot.status = values, status
            slot.read_once = True
            slot.complete = not r.lost and not any(v == _FAILED for v in status.values())
            if changed:
                self.inventory_version += 1

    # -- telemetry -------------------------------------------------------------

    def submit_read(self, index: int, timeout_s: float) -> cf.Future[Any] | None:
        """Start reading one GPU on its worker: (values, status, lost, ms, calls).

        Returns None while the GPU's previous job has not finished (a hung GPU
        gets no new read until the hung call returns). The job stops making
        calls ``timeout_s`` after it started; its unread fields are ``failed``.
        """
        slot = self._slots[index]
        return slot.worker.submit(self._read_job, slot, timeout_s)

    def _read_job(self, slot: _Slot, timeout_s: float | None) -> tuple[dict[str, Any], dict[str, str], bool,
                                                                       float, int]:
        t0 = time.perf_counter()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        calls = 0
        if slot.handle is not None and not slot.vanished and not slot.complete and (
                slot.inv_tried_at is None or time.monotonic() - slot.inv_tried_at >= INVENTORY_RETRY_S):
            self._read_inventory(slot, deadline)
        values, status, lost, calls = self._read_sample(slot, deadline)
        return values, status, lost, (time.perf_counter() - t0) * 1000.0, calls

    def read_sample(self, index: int, timeout_s: float | None = None) -> tuple[dict[str, Any], dict[str, str], bool]:
        """Read every telemetry field of one GPU in the calling thread.

        The sampler uses :meth:`submit_read` instead, which runs this on the
        GPU's worker; this direct form is for tests and tools.

        Returns:
            (values, status, lost): values by fleetmon.fields name (None when
            not OK); statuses of the fields that did not read OK; whether the
            GPU is lost.
        """
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        values, status, lost, _ = self._read_sample(self._slots[index], deadline)
        return values, status, lost

    def _read_sample(self, slot: _Slot, deadline: float | None) -> tuple[dict[str, Any], dict[str, str], bool, int]:
        nv = self._nv
        r = _Reader(nv, self._memo, deadline=deadline, unsupported=slot.unsupported)
        h = slot.handle
        if h is None or slot.vanished:
            st = _LOST if (slot.lost or slot.vanished) else _FAILED
            r.mark(self.sample_fields, st)
            r.values["fan_speeds_pct"] = None
            return r.values, r.status, st == _LOST, 0
        read_fields(r, h, self.fields)
        if r.lost:
            # Everything after the first GPU_IS_LOST is lost too; make the record uniform.
            r.mark(self.sample_fields, _LOST)
            r.values["fan_speeds_pct"] = None
        self._note_lost(slot, r.lost)
        return r.values, r.status, r.lost, r.calls

    def _note_lost(self, slot: _Slot, lost: bool) -> None:
        if lost != slot.lost:
            with self._lock:
                slot.lost = lost
                if not slot.read_once or slot.placeholder:
                    self._fill_unread(slot)
                self.inventory_version += 1

    # -- events and generic bounded calls ---------------------------------------

    def extra(self, index: int) -> dict[str, Any]:
        """Vendor readings without a catalog field (:class:`fleetmon.agent.backend.Backend`): NVML has none."""
        return {}

    def xid_events(self) -> XidEvents:
        """A new NVML event set for critical Xid events (check ``available``; never raises)."""
        return XidEvents(self, self._nv)

    def submit(self, index: int, fn: Callable[..., Any], *args: Any) -> cf.Future[Any] | None:
        """Run ``fn(*args)`` on GPU ``index``'s worker (None while it is busy)."""
        slot = self._slots.get(index)
        return None if slot is None else slot.worker.submit(fn, *args)

    def close(self) -> None:
        """Stop the workers and shut NVML down (skipped while a call still hangs)."""
        busy = any(s.worker.busy for s in self._slots.values()) or self._enum_worker.busy
        for s in self._slots.values():
            s.worker.stop()
        self._enum_worker.stop()
        if busy:
            log.warning("an NVML call still hangs; not calling nvmlShutdown")
            return
        try:
            self._nv.nvmlShutdown()
        except self._nv.NVMLError:
            pass


@functools.lru_cache(maxsize=1)
def _os_release() -> str:
    try:
        with open("/etc/os-release", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return f"{platform.system()} {platform.release()}".strip() or os.name

