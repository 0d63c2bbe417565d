"""The NVML boundary: the only module that talks to ``pynvml``.

Everything above this module sees plain values plus a :class:`Status` per
field; ``pynvml.NVMLError`` never escapes. Units follow fleetmon.fields
(watts, °C, MiB, MHz, KB/s), not NVML's (mW, bytes …).

The ``pynvml`` module comes from the nvidia-ml-py distribution. Anything with
the same API works: :func:`load_nvml` is the one place that chooses the real
module or the simulated twin (:class:`fleetmon.sim.nvml.SimulatedNvml`, for
``--simulate``), and tests may put a fake ``pynvml`` first on PYTHONPATH. The
raw module stays inside this file (``NvmlSession._nv``): NVML's Xid events, too,
leave it only as :class:`XidNotice` values (:meth:`NvmlSession.xid_events`).

Facts this follows (NVML docs, nvitop, gpustat): initialise once, cache device
handles (the first lookup costs 170–300 ms; later calls 0.1–0.4 ms each), read
static inventory once, remember which calls a GPU does not support.

Time bounds. Every call that touches one GPU runs on a pool thread, one job
per GPU at a time (:class:`_Worker`), so a wedged GPU blocks only its own call. A job
gets a deadline: once it is past, the job's remaining calls are not made and
their fields are reported ``failed`` (one hung call costs one timeout, not 35).
Enumeration (device count, handle lookups) runs on a separate worker with a
deadline too. A GPU whose inventory is not read yet is served with what is
known (its index, and its identity from the previous run when the buffer
remembers it) and retried later.

Four outcomes per reading (fleetmon.records.Status): a value; ``unsupported``
(NOT_SUPPORTED, FUNCTION_NOT_FOUND, or a function this pynvml lacks: permanent,
never an alarm); ``failed`` (any other error, or not answered in time);
``gpu_lost`` (GPU_IS_LOST, or the GPU left enumeration).
"""

from __future__ import annotations

import concurrent.futures as cf
import ctypes
import functools
import logging
import os
import platform
import queue
import socket
import threading
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

from fleetmon import __version__
from fleetmon.errors import NvmlUnavailable
from fleetmon.fields import ALL_FIELDS, CATALOG, INVENTORY_FIELDS, Field, NvmlCall
from fleetmon.pci import normalize_bus_id
from fleetmon.records import GpuInventory, NodeInfo, Status
from fleetmon.vocab import GpuState

log = logging.getLogger("fleetmon.nvml")

_ARCH_NAMES = {
    2: "kepler", 3: "maxwell", 4: "pascal", 5: "volta", 6: "turing", 7: "ampere",
    8: "ada", 9: "hopper", 10: "blackwell",
}
_MIB = 1024 * 1024
_OK = Status.OK.value
_UNSUPPORTED = Status.UNSUPPORTED.value
_FAILED = Status.FAILED.value
_LOST = Status.GPU_LOST.value

DEFAULT_INVENTORY_WAIT_S = 2.0
"""How long startup waits for the inventory of all GPUs (in parallel) before serving."""
DEFAULT_CALL_TIMEOUT_S = 3.0
"""Default deadline of one job (a GPU's inventory or sample) when the caller gives none."""
INVENTORY_RETRY_S = 30.0
"""How often an incomplete inventory (a field failed or was not answered) is read again."""
UNSUPPORTED_MEMO_S = 3600.0
"""How long a NOT_SUPPORTED answer is remembered before the call is tried again."""

SAMPLE_FIELDS: tuple[str, ...] = tuple(f.name for f in ALL_FIELDS)
"""Every telemetry field :meth:`NvmlSession.read_sample` returns (fleetmon.fields names),
for the default catalog (a session built with another one has its own ``sample_fields``).

Besides these, a sample's values carry ``fan_speeds_pct`` (one value per fan,
or None) so that one stuck fan of several is visible, not averaged away.
"""

_IDENTITY_FIELDS = ("uuid", "name", "serial", "pci_bus_id", "board_part_number")
"""Inventory values adopted from the previous run for a GPU not readable now."""


def load_pynvml() -> ModuleType:
    """Import the real ``pynvml`` (or whatever is first on sys.path under that name).

    Raises:
        NvmlUnavailable: the module is not installed.
    """
    try:
        import pynvml  # provided by the nvidia-ml-py distribution
    except ImportError as exc:
        raise NvmlUnavailable(
            "the pynvml module is missing: install nvidia-ml-py (pip install nvidia-ml-py)"
        ) from exc
    return pynvml


PynvmlApi = Any
"""The pynvml API: the real module or a ``fleetmon.sim.nvml.SimulatedNvml``.

Left untyped on purpose (a stated opt-out): pynvml ships no type stubs, and
calls are looked up by name so that an older pynvml reads as unsupported.
"""


def load_nvml(simulate: str | None = None, *, clock: Callable[[], float] = time.time,
              node_name: str | None = None) -> PynvmlApi:
    """The NVML to open: the real pynvml, or the simulated node of scenario ``simulate``.

    Args:
        simulate: a scenario of :mod:`fleetmon.sim.scenarios` (name, composite
            spec, JSON file); None for the real GPUs.
        clock: the simulation's clock (its time 0 is ``clock()`` now).
        node_name: one scenario on many nodes: distinct cards per node name.

    Raises:
        NvmlUnavailable: the real pynvml is not installed.
        KeyError, ValueError, OSError: an unknown or malformed scenario.
    """
    if simulate is None:
        return load_pynvml()
    from fleetmon.sim.nvml import SimulatedNvml  # only a simulating agent loads the simulator

    return SimulatedNvml(simulate, node_name, clock=clock, start=clock())


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
        raise NvmlUnavailable(
            f"NVML could not start: {exc}. Is the NVIDIA driver installed and loaded?"
        ) from exc
    except OSError as exc:  # a broken libnvidia-ml.so
        raise NvmlUnavailable(f"NVML could not start: {exc}") from exc
    return NvmlSession(nv, known_inventory=known_inventory, inventory_wait_s=inventory_wait_s,
                       call_timeout_s=call_timeout_s, fields=fields)


# ---------------------------------------------------------------------------
# Worker threads
# ---------------------------------------------------------------------------


class _ElasticPool:
    """Daemon threads shared by every session of the process, started on demand.

    A thread that has been idle for ``idle_exit_s`` ends, so the pool holds as
    many threads as calls ran at once recently: one per GPU on an agent (the
    GPUs are read in parallel), plus one per call that hangs. Daemon threads,
    not a ThreadPoolExecutor: the interpreter joins executor threads at exit,
    and a thread stuck in a hung NVML call would hold up the agent's shutdown.
    """

    def __init__(self, idle_exit_s: float = 60.0) -> None:
        self.idle_exit_s = idle_exit_s
        self._jobs: queue.SimpleQueue[tuple[cf.Future[Any], Callable[..., Any], tuple[Any, ...]]] = (
            queue.SimpleQueue())
        self._lock = threading.Lock()
        self._idle = 0
        self.threads = 0

    def submit(self, fn: Callable[..., Any], *args: Any) -> cf.Future[Any]:
        fut: cf.Future[Any] = cf.Future()
        with self._lock:
            self._jobs.put((fut, fn, args))
            if self._idle > 0:
                self._idle -= 1  # a waiting thread takes it
                return fut
            self.threads += 1
        threading.Thread(target=self._run, name="nvml-call", daemon=True).start()
        return fut

    def _run(self) -> None:
        while True:
            try:
                fut, fn, args = self._jobs.get(timeout=self.idle_exit_s)
            except queue.Empty:
                with self._lock:
                    if self._jobs.empty() and self._idle > 0:
                        self._idle -= 1
                        self.threads -= 1
                        return
                continue
            if fut.set_running_or_notify_cancel():
                try:
                    fut.set_result(fn(*args))
                except BaseException as exc:  # handed to whoever waits on the future
                    fut.set_exception(exc)
            with self._lock:
                self._idle += 1


_POOL = _ElasticPool()


class _Worker:
    """One GPU's lane: its jobs run one at a time, on the shared pool.

    A job is refused while the previous one has not finished, so a hung GPU
    holds at most one thread and gets no new read until its call returns.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._current: cf.Future[Any] | None = None
        self._submit_lock = threading.Lock()
        self.busy_since: float | None = None  # monotonic start of the running job

    @property
    def busy(self) -> bool:
        """True while a job is queued or running."""
        cur = self._current
        return cur is not None and not cur.done()

    def submit(self, fn: Callable[..., Any], *args: Any) -> cf.Future[Any] | None:
        """Queue ``fn(*args)``; None (nothing queued) while an earlier job has not finished."""
        with self._submit_lock:
            if self.busy:
                return None
            fut = _POOL.submit(self._run, fn, args)
            self._current = fut
            return fut

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        self.busy_since = time.monotonic()
        try:
            return fn(*args)
        finally:
            self.busy_since = None

    def stop(self) -> None:
        """Nothing to stop: the pool's threads end when idle."""


# ---------------------------------------------------------------------------
# Reading one record: error classification, deadlines, unsupported memo
# ---------------------------------------------------------------------------


class _Reader:
    """Collects values and statuses for one record, classifying NVML errors.

    Calls go by pynvml function name so that a pynvml without that function
    reads as unsupported instead of raising AttributeError. After the
    deadline no further call is made: the remaining fields read ``failed``.
    """

    __slots__ = ("nv", "values", "status", "lost", "calls", "deadline", "timed_out", "_memo", "_unsupported")

    def __init__(self, nv: ModuleType, memo: set[tuple[str, str]], *, deadline: float | None = None,
                 unsupported: dict[str, float] | None = None) -> None:
        self.nv = nv
        self.values: dict[str, Any] = {}
        self.status: dict[str, str] = {}
        self.lost = False
        self.calls = 0
        self.deadline = deadline
        self.timed_out = False
        self._memo = memo
        self._unsupported = unsupported

    def classify(self, exc: BaseException) -> Status:
        """NVMLError → Status (NOT_SUPPORTED/FUNCTION_NOT_FOUND, GPU_IS_LOST, anything else)."""
        nv = self.nv
        if isinstance(exc, (getattr(nv, "NVMLError_NotSupported", ()),
                            getattr(nv, "NVMLError_FunctionNotFound", ()))):
            return Status.UNSUPPORTED
        if isinstance(exc, getattr(nv, "NVMLError_GpuIsLost", ())):
            return Status.GPU_LOST
        return Status.FAILED

    def mark(self, names: tuple[str, ...], status: str) -> None:
        for n in names:
            self.values[n] = None
            self.status[n] = status

    def call(self, names: str | tuple[str, ...], fn_name: str, *args: Any) -> Any:
        """Call ``pynvml.<fn_name>(*args)``; on error mark every field in ``names`` and return None."""
        if isinstance(names, str):
            names = (names,)
        if self.lost:
            self.mark(names, _LOST)
            return None
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.timed_out = True
            self.mark(names, _FAILED)
            return None
        memo_key = names[0]
        if self._unsupported is not None:
            since = self._unsupported.get(memo_key)
            if since is not None and time.monotonic() - since < UNSUPPORTED_MEMO_S:
                self.mark(names, _UNSUPPORTED)
                return None
        fn = getattr(self.nv, fn_name, None)
        if fn is None:  # an older pynvml without this function
            self.mark(names, _UNSUPPORTED)
            return None
        self.calls += 1
        try:
            return fn(*args)
        except self.nv.NVMLError as exc:
            status = self.classify(exc)
        except (TypeError, ValueError, OSError) as exc:  # binding and driver disagree
            status = Status.FAILED
            key = (fn_name, "binding")
            if key not in self._memo:
                self._memo.add(key)
                log.warning("%s raised %s: %s", fn_name, type(exc).__name__, exc)
        if status is Status.GPU_LOST:
            self.lost = True
        elif status is Status.UNSUPPORTED and self._unsupported is not None:
            self._unsupported[memo_key] = time.monotonic()
        self.mark(names, status.value)
        key = (names[0], status.value)
        if status is Status.FAILED and key not in self._memo:
            self._memo.add(key)
            log.info("reading %s failed", names[0])
        return None

    def set(self, name: str, fn_name: str, *args: Any, conv: Callable[[Any], Any] | None = None) -> None:
        """Read one field: ``values[name] = conv(pynvml.<fn_name>(*args))``."""
        raw = self.call(name, fn_name, *args)
        if name in self.status:
            return
        try:
            self.values[name] = conv(raw) if conv is not None else raw
        except (TypeError, ValueError, AttributeError, IndexError) as exc:
            log.debug("cannot convert %s=%r: %s", name, raw, exc)
            self.mark((name,), _FAILED)


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _mw(value: Any) -> float:
    return round(float(value) / 1000.0, 3)


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

    def __init__(self, nv: PynvmlApi, *, known_inventory: list[dict[str, Any]] | None = None,
                 inventory_wait_s: float = DEFAULT_INVENTORY_WAIT_S,
                 call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S, fields: tuple[Field, ...] = CATALOG) -> None:
        self._nv = nv  # the raw pynvml: private to this module
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
        self._node_values, self._node_status = r.values, r.status

    def node_info(self) -> NodeInfo:
        """Node-level facts (nvidia-smi header: driver, CUDA version; uname; os-release).

        ``gpu_count`` is NVML's device count at the last enumeration; a GPU
        that left enumeration no longer counts but is still listed as lost.
        """
        values = dict(self._node_values)
        status = dict(self._node_status)
        for key in ("driver_version", "nvml_version", "cuda_driver_version"):
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
        status["pcie_gpu_max_width"] = _UNSUPPORTED  # never readable (see _read_inventory)
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
                index = int(row.get("index", values.get("index")))
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
        nv = self._nv
        h = slot.handle
        slot.inv_tried_at = time.monotonic()
        if h is None:
            return
        r = _Reader(nv, self._memo, deadline=deadline)
        r.set("name", "nvmlDeviceGetName", h, conv=_text)
        r.set("uuid", "nvmlDeviceGetUUID", h, conv=_text)
        r.set("serial", "nvmlDeviceGetSerial", h, conv=_text)
        r.set("board_part_number", "nvmlDeviceGetBoardPartNumber", h, conv=_text)
        r.set("vbios", "nvmlDeviceGetVbiosVersion", h, conv=_text)
        r.set("inforom_image", "nvmlDeviceGetInforomImageVersion", h, conv=_text)
        for key, const, default in (("inforom_oem", "NVML_INFOROM_OEM", 0), ("inforom_ecc", "NVML_INFOROM_ECC", 1),
                                    ("inforom_power", "NVML_INFOROM_POWER", 2)):
            r.set(key, "nvmlDeviceGetInforomVersion", h, getattr(nv, const, default), conv=_text)
        pci = r.call(("pci_bus_id", "pci_device_id", "pci_subsystem_id"), "nvmlDeviceGetPciInfo", h)
        if pci is not None:
            r.values["pci_bus_id"] = normalize_bus_id(_text(pci.busId))
            r.values["pci_device_id"] = f"0x{int(pci.pciDeviceId):08X}"
            r.values["pci_subsystem_id"] = f"0x{int(pci.pciSubSystemId):08X}"
        r.set("architecture", "nvmlDeviceGetArchitecture", h, conv=lambda a: _ARCH_NAMES.get(int(a), f"arch{a}"))
        r.set("compute_capability", "nvmlDeviceGetCudaComputeCapability", h, conv=lambda cc: f"{cc[0]}.{cc[1]}")
        r.set("memory_total_mib", "nvmlDeviceGetMemoryInfo", h, conv=lambda m: int(m.total) // _MIB)
        r.set("power_default_w", "nvmlDeviceGetPowerManagementDefaultLimit", h, conv=_mw)
        cons = r.call(("power_min_w", "power_max_w"), "nvmlDeviceGetPowerManagementLimitConstraints", h)
        if cons is not None:
            r.values["power_min_w"] = _mw(cons[0])
            r.values["power_max_w"] = _mw(cons[1])
        r.set("power_enforced_w", "nvmlDeviceGetEnforcedPowerLimit", h, conv=_mw)
        r.set("max_sm_clock_mhz", "nvmlDeviceGetMaxClockInfo", h, getattr(nv, "NVML_CLOCK_SM", 1), conv=int)
        r.set("max_mem_clock_mhz", "nvmlDeviceGetMaxClockInfo", h, getattr(nv, "NVML_CLOCK_MEM", 2), conv=int)
        r.set("pcie_max_gen", "nvmlDeviceGetMaxPcieLinkGeneration", h, conv=int)
        r.set("pcie_max_width", "nvmlDeviceGetMaxPcieLinkWidth", h, conv=int)
        r.set("pcie_gpu_max_gen", "nvmlDeviceGetGpuMaxPcieLinkGeneration", h, conv=int)
        # NVML has a GPU-side maximum for the generation only; the width maximum it
        # reports (nvmlDeviceGetMaxPcieLinkWidth) is the link's, in pcie_max_width.
        r.mark(("pcie_gpu_max_width",), _UNSUPPORTED)
        ecc = r.call(("ecc_mode_current", "ecc_mode_pending"), "nvmlDeviceGetEccMode", h)
        if ecc is not None:
            r.values["ecc_mode_current"] = bool(ecc[0])
            r.values["ecc_mode_pending"] = bool(ecc[1])
        r.set("persistence_mode", "nvmlDeviceGetPersistenceMode", h, conv=bool)
        mig = r.call(("mig_mode_current", "mig_mode_pending"), "nvmlDeviceGetMigMode", h)
        if mig is not None:
            r.values["mig_mode_current"] = bool(mig[0])
            r.values["mig_mode_pending"] = bool(mig[1])
        r.set("temp_slowdown_c", "nvmlDeviceGetTemperatureThreshold", h,
              getattr(nv, "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN", 1), conv=int)
        r.set("temp_shutdown_c", "nvmlDeviceGetTemperatureThreshold", h,
              getattr(nv, "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN", 0), conv=int)
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
        slow: list[Field] = []
        done: set[str] = set()
        for f in self.fields:
            if f.nvml is None:
                if f.reader not in done:  # one call of a reader gives all of its fields
                    done.add(f.reader)
                    _READERS[f.reader](self, r, h)
            elif f.nvml.slow:
                slow.append(f)
            else:
                _read_simple(r, h, f.name, f.nvml)
        for f in slow:
            assert f.nvml is not None
            _read_simple(r, h, f.name, f.nvml)
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

    def _read_utilization(self, r: _Reader, h: Any) -> None:
        util = r.call(("util_gpu_pct", "util_mem_pct"), "nvmlDeviceGetUtilizationRates", h)
        if util is not None:
            r.values["util_gpu_pct"] = int(util.gpu)
            r.values["util_mem_pct"] = int(util.memory)

    def _read_memory(self, r: _Reader, h: Any) -> None:
        mem = r.call(("mem_used_mib", "mem_free_mib"), "nvmlDeviceGetMemoryInfo", h)
        if mem is not None:
            r.values["mem_used_mib"] = int(mem.used) // _MIB
            r.values["mem_free_mib"] = int(mem.free) // _MIB

    def _read_remapped_rows(self, r: _Reader, h: Any) -> None:
        rows = r.call(("remap_corr", "remap_unc", "remap_pending", "remap_failure"), "nvmlDeviceGetRemappedRows", h)
        if rows is not None:
            r.values["remap_corr"] = int(rows[0])
            r.values["remap_unc"] = int(rows[1])
            r.values["remap_pending"] = int(bool(rows[2]))
            r.values["remap_failure"] = int(bool(rows[3]))

    def _read_mem_temp(self, r: _Reader, h: Any) -> None:
        nv = self._nv
        field_id = getattr(nv, "NVML_FI_DEV_MEMORY_TEMP", None)
        if field_id is None:
            r.mark(("mem_temp_c",), _UNSUPPORTED)
            return
        res = r.call("mem_temp_c", "nvmlDeviceGetFieldValues", h, [field_id])
        if res is None:
            return
        try:
            fv = res[0]
        except (IndexError, TypeError):
            r.mark(("mem_temp_c",), _FAILED)
            return
        ret = getattr(fv, "nvmlReturn", 0)
        if ret != 0:
            if ret == getattr(nv, "NVML_ERROR_NOT_SUPPORTED", 3):
                st = _UNSUPPORTED
                if r._unsupported is not None:
                    r._unsupported.setdefault("mem_temp_c", time.monotonic())
            elif ret == getattr(nv, "NVML_ERROR_GPU_IS_LOST", 15):
                st = _LOST
                r.lost = True
            else:
                st = _FAILED
            r.mark(("mem_temp_c",), st)
            return
        value = _field_value(fv)
        # dcgm-exporter fixtures show boards that report 0 for memory temperature.
        if value is None or value <= 0:
            r.mark(("mem_temp_c",), _UNSUPPORTED)
        else:
            r.values["mem_temp_c"] = value

    def _read_fans(self, r: _Reader, h: Any) -> None:
        n = r.call("fan_pct", "nvmlDeviceGetNumFans", h)
        r.values["fan_speeds_pct"] = None
        if n is None:
            return
        if int(n) == 0:
            r.mark(("fan_pct",), _UNSUPPORTED)
            return
        speeds = []
        for i in range(int(n)):
            s = r.call("fan_pct", "nvmlDeviceGetFanSpeed_v2", h, i)
            if s is None:
                r.values["fan_speeds_pct"] = None
                return
            speeds.append(int(s))
        r.values["fan_pct"] = round(sum(speeds) / len(speeds), 1)
        r.values["fan_speeds_pct"] = speeds

    def _read_throttle(self, r: _Reader, h: Any) -> None:
        """Clocks-event reasons: the 535+ name first, then the older throttle name."""
        value = r.call("throttle_mask", "nvmlDeviceGetCurrentClocksEventReasons", h)
        if value is not None:
            r.values["throttle_mask"] = int(value)
            return
        if r.status.get("throttle_mask") != _UNSUPPORTED:
            return
        del r.status["throttle_mask"]
        if r._unsupported is not None:
            r._unsupported.pop("throttle_mask", None)  # the memo key is shared by both names
        r.set("throttle_mask", "nvmlDeviceGetCurrentClocksThrottleReasons", h, conv=int)

    # -- events and generic bounded calls ---------------------------------------

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


_READERS: dict[str, Callable[[NvmlSession, _Reader, Any], None]] = {
    "_read_mem_temp": NvmlSession._read_mem_temp,
    "_read_fans": NvmlSession._read_fans,
    "_read_utilization": NvmlSession._read_utilization,
    "_read_memory": NvmlSession._read_memory,
    "_read_throttle": NvmlSession._read_throttle,
    "_read_remapped_rows": NvmlSession._read_remapped_rows,
}
"""The hand-written readers the catalog names (``Field.reader``): calls that give several
fields, or reads with fallbacks. Every other field is read by :func:`_read_simple`."""

_CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "int": int,
    "milli": lambda v: _mw(v),
    "count": len,
    "flag": lambda v: int(bool(v)),
}
"""fleetmon.fields.CONVERSIONS, implemented."""


def _read_simple(r: _Reader, h: Any, name: str, call: NvmlCall) -> None:
    """Read one field the catalog describes as one NVML call (constants resolved on this pynvml)."""
    args = [getattr(r.nv, const, default) for const, default in call.args]
    r.set(name, call.fn, h, *args, conv=_CONVERSIONS[call.conv])


def check_readers(fields: tuple[Field, ...]) -> tuple[Field, ...]:
    """The catalog, after checking that this module can read every field of it.

    Raises:
        ValueError: a field names a reader or a conversion this module lacks.
    """
    for f in fields:
        if f.nvml is None and f.reader not in _READERS:
            raise ValueError(f"field {f.name}: fleetmon.agent.nvml has no reader {f.reader!r}")
        if f.nvml is not None and f.nvml.conv not in _CONVERSIONS:
            raise ValueError(f"field {f.name}: fleetmon.agent.nvml has no conversion {f.nvml.conv!r}")
    return fields


def sample_field_names(fields: tuple[Field, ...]) -> tuple[str, ...]:
    """The field names of a sample, grouped by kind (gauges, counters, states) in catalog order."""
    return tuple(f.name for kind in ("gauge", "counter", "state") for f in fields if f.kind == kind)


check_readers(CATALOG)


# ---------------------------------------------------------------------------
# Xid events
# ---------------------------------------------------------------------------

_XID_CRITICAL = 0x8
"""``nvmlEventTypeXidCriticalError``, for a pynvml that lacks the name."""


@dataclass(frozen=True)
class XidNotice:
    """One critical Xid from NVML's event API: the code and the GPU, no message (the kernel log has it).

    ``gpu`` is the agent's index, None when the event names a handle the
    session does not know; ``uuid`` and ``pci_bus_id`` come from the inventory.
    """

    code: int
    gpu: int | None
    uuid: str | None
    pci_bus_id: str | None


@dataclass(frozen=True)
class EventWaitError:
    """A wait that ended in an error other than a timeout.

    ``nvml`` is True for an NVML error (GPU_IS_LOST is reported once per lost
    GPU, among others: worth a log line, then wait on), False for anything
    unexpected from the binding.
    """

    message: str
    nvml: bool


class XidEvents:
    """An NVML event set for critical Xid events, made by :meth:`NvmlSession.xid_events`.

    No NVML error leaves it: a missing event API reads ``available`` False
    with the reason in ``error``; registration returns its errors by GPU; a
    wait returns an :class:`XidNotice`, None on timeout, or an
    :class:`EventWaitError`. Thread safety: register from one thread, wait
    from one thread (NVML's event sets are not shared between waiters).
    """

    def __init__(self, session: NvmlSession, nv: PynvmlApi) -> None:
        self._session = session
        self._nv = nv
        self._set: Any = None
        self.error = ""
        self.registered: set[int] = set()
        self._etype = getattr(nv, "nvmlEventTypeXidCriticalError", _XID_CRITICAL)
        try:
            self._set = nv.nvmlEventSetCreate()
        except Exception as exc:  # NVMLError, or a pynvml without the event API
            self.error = str(exc) or type(exc).__name__
        wait = getattr(nv, "nvmlEventSetWait_v2", None) or getattr(nv, "nvmlEventSetWait", None)
        self._wait: Callable[[Any, int], Any] | None = wait
        self._timeout_cls: Any = getattr(nv, "NVMLError_Timeout", ())

    @property
    def available(self) -> bool:
        """Whether the event set exists (False: see ``error``)."""
        return self._set is not None and self._wait is not None

    def register(self, timeout_s: float | None) -> dict[int, str]:
        """Register every GPU not registered yet; returns the errors by GPU index.

        With ``timeout_s`` each registration runs on its GPU's worker and all
        together wait at most that long, so a hung GPU delays nobody; a GPU not
        answered in time is neither registered nor in error (try again later).
        With None they run in this thread (a simulated backfill, before serving).
        """
        if self._set is None:
            return {}
        session = self._session
        errors: dict[int, str] = {}
        pending: dict[int, cf.Future[Any]] = {}
        for index in session.indices():
            handle = session.handle(index)
            if index in self.registered or handle is None:
                continue
            if timeout_s is None:
                try:
                    self._nv.nvmlDeviceRegisterEvents(handle, self._etype, self._set)
                    self.registered.add(index)
                except Exception as exc:  # NVMLError (a lost GPU: its Xid came before), or the binding
                    errors[index] = str(exc) or type(exc).__name__
                continue
            fut = session.submit(index, self._nv.nvmlDeviceRegisterEvents, handle, self._etype, self._set)
            if fut is not None:
                pending[index] = fut
        if pending:
            cf.wait(list(pending.values()), timeout=timeout_s)
        for index, fut in pending.items():
            if not fut.done():
                continue
            exc = fut.exception()
            if exc is None:
                self.registered.add(index)
            else:
                errors[index] = str(exc) or type(exc).__name__
        return errors

    def wait(self, timeout_ms: int) -> XidNotice | EventWaitError | None:
        """The next Xid, waiting up to ``timeout_ms``; None when none came."""
        if self._set is None or self._wait is None:
            return EventWaitError(self.error or "no event set", nvml=False)
        try:
            data = self._wait(self._set, timeout_ms)
        except self._nv.NVMLError as exc:
            if isinstance(exc, self._timeout_cls):
                return None
            return EventWaitError(str(exc), nvml=True)
        except Exception as exc:  # the binding itself: never stop the watcher
            return EventWaitError(f"{type(exc).__name__}: {exc}", nvml=False)
        session = self._session
        index = session.index_for_handle(data.device)
        uuid = pci = None
        if index is not None:
            inv = session.inventory(index)
            uuid, pci = inv.uuid, inv.values.get("pci_bus_id")
        return XidNotice(code=int(data.eventData), gpu=index, uuid=uuid, pci_bus_id=pci)

    def drain(self, limit: int = 10_000) -> list[XidNotice]:
        """Every Xid already due, without waiting (errors such as GPU_IS_LOST are skipped)."""
        out: list[XidNotice] = []
        for _ in range(limit):
            got = self.wait(0)
            if got is None or (isinstance(got, EventWaitError) and not got.nvml):
                break
            if isinstance(got, XidNotice):
                out.append(got)
        return out

    def close(self) -> None:
        """Free the event set (errors ignored: NVML may be shutting down)."""
        event_set, self._set = self._set, None
        if event_set is not None:
            try:
                self._nv.nvmlEventSetFree(event_set)
            except Exception:  # noqa: S110 - freeing is best effort
                pass


def _field_value(fv: Any) -> float | None:
    """Extract the number of an nvmlFieldValue_t by its valueType."""
    vt = getattr(fv, "valueType", None)
    v = fv.value
    names = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
    attr = names.get(vt, "uiVal")
    try:
        return float(getattr(v, attr))
    except (AttributeError, TypeError, ValueError):
        return None




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
