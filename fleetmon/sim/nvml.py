"""The simulated twin of ``pynvml`` (PyPI ``nvidia-ml-py``), as an object: one per simulated node.

:class:`SimulatedNvml` is a drop-in for the part of the pynvml API the agent
uses: the same function names, argument names and order, ``NVML_*``
constants with the real numeric values, the same ``NVMLError`` class
hierarchy (:mod:`fleetmon.sim.nvml_errors`) and return values of the same
types (str, int, lists, tuples, ctypes structures with the real field names,
:mod:`fleetmon.sim.nvml_structs`). It never imports the real pynvml. Being an
object, not a module with global state, one process hosts as many simulated
nodes as it likes (:mod:`fleetmon.sim.fleet`).

What the GPUs report comes from a scenario (:mod:`fleetmon.sim.scenarios`)
through the device model (:mod:`fleetmon.sim.device`).

Usage::

    from fleetmon.sim.nvml import SimulatedNvml
    nv = SimulatedNvml("fault-power_brake", clock=fake_clock, start=0.0, seed=1)
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(1)
    nv.nvmlDeviceGetCurrentClocksEventReasons(h)   # 0x88 while braking
    nv.inject(0, "xid", code=79)                    # live, onset = now

Simulation controls (not part of pynvml; listed in :data:`SIM_EXTRAS`):
:meth:`~SimulatedNvml.configure`, :meth:`~SimulatedNvml.inject`,
:meth:`~SimulatedNvml.set_lost`, :meth:`~SimulatedNvml.now_s`,
:meth:`~SimulatedNvml.is_busy`, :meth:`~SimulatedNvml.node_spec`.
:meth:`~SimulatedNvml.namespace` gives the API as a module's globals, for the
stand-in ``pynvml`` module of agent subprocesses (tests/helpers/fakenvml).

Threading: one lock per instance guards the bookkeeping; it is never held
while a hung GPU sleeps or while an event wait blocks, so other GPUs answer
in parallel threads.
"""

from __future__ import annotations

import inspect
import time
import zlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from fleetmon.sim import nvml_constants, nvml_errors, nvml_structs
from fleetmon.sim import scenarios as _sc
from fleetmon.sim.device import SimEventSet, SimNode, next_event, supported_events
from fleetmon.sim.nvml_constants import (
    NVML_DEVICE_PCI_BUS_ID_FMT, NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT, NVML_ERROR_GPU_IS_LOST,
    NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_NOT_FOUND, NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_TIMEOUT,
)
from fleetmon.sim.nvml_profiling import ProfilingCalls
from fleetmon.sim.nvml_errors import raise_nvml
from fleetmon.sim.scenarios import SCENARIOS, describe, scenario_names

__all__ = ["PYNVML_API", "SCENARIOS", "SIM_EXTRAS", "SimulatedNvml", "describe", "scenario_names"]

SIM_EXTRAS: tuple[str, ...] = ("configure", "inject", "set_lost", "now_s", "is_busy", "node_spec")
"""The simulation controls of a SimulatedNvml (not part of pynvml)."""


class SimulatedNvml(ProfilingCalls):
    """The pynvml API over one simulated node (see the module docstring).

    Args: as :meth:`configure`. Besides the methods, every pynvml constant,
    error class and structure is an attribute (``nv.NVML_CLOCK_SM``,
    ``nv.NVMLError_GpuIsLost``, ``nv.c_nvmlMemory_t``), as on the module.
    """

    def __init__(self, scenario: str | dict[str, Any] = "healthy", node_name: str | None = None, *,
                 clock: Callable[[], float] = time.time, start: float | None = None, seed: int | None = None,
                 hang_s: float | None = None) -> None:
        super().__init__()
        self.configure(scenario, clock=clock, start=start, seed=seed, hang_s=hang_s, node_name=node_name)

    def namespace(self) -> dict[str, Any]:
        """The pynvml API and the controls as module globals (``__all__`` included), bound to this node."""
        names = {name: getattr(self, name) for name in PYNVML_API + SIM_EXTRAS}
        names["__all__"] = list(PYNVML_API)
        return names

    # ---------------------------------------------------------------------------
    # Simulation controls (not in pynvml)
    # ---------------------------------------------------------------------------

    def configure(self, scenario: str | dict[str, Any] = "healthy", *, clock: Callable[[], float] = time.time,
                  start: float | None = None, seed: int | None = None, hang_s: float | None = None,
                  node_name: str | None = None) -> _sc.NodeSpec:
        """Load a scenario; resets the simulated machine (NVML becomes uninitialized).

        Args:
            scenario: a name from SCENARIOS, a composite spec
                (``"rtx4090*4+pcie_degraded@1:0"``), a JSON file path or a dict.
            clock: returns the current time in seconds (inject a fake for tests).
            start: clock value at which the simulation time is 0 (default: now).
            seed: overrides the scenario's seed (telemetry noise, UUIDs).
            hang_s: overrides every hung fault's blocking time (seconds).
            node_name: one scenario on many nodes: the name shifts the seed,
                so that each node holds distinct cards (UUIDs, serials, noise).

        Returns:
            The resolved NodeSpec.

        Raises:
            KeyError, ValueError, OSError: unknown or malformed scenario.
        """
        spec = _sc.resolve(scenario)
        if seed is not None:
            spec = replace(spec, seed=int(seed))
        if node_name:
            spec = replace(spec, seed=(spec.seed + zlib.crc32(node_name.encode())) & 0x7FFFFFFF)
        with self._cond:
            self._node = SimNode(spec, clock, float(clock()) if start is None else float(start))
            self._node.hang_override = hang_s
            self._init_count = 0
            self._cond.notify_all()
        return spec

    def _machine(self) -> SimNode:
        """The simulated machine (configured at construction, so always there)."""
        with self._lock:
            assert self._node is not None
            return self._node

    def inject(self, gpu_index: int, fault: str, onset: float | None = None, duration_s: float | None = None,
               **params: Any) -> _sc.FaultSpec:
        """Add a fault to the live simulation.

        Args:
            gpu_index: physical GPU index (as configured; not shifted by vanished GPUs).
            fault: a kind from scenarios.FAULT_KINDS.
            onset: simulation time in seconds (default: now).
            duration_s: how long it lasts (default: forever).
            **params: the kind's parameters (e.g. ``code=79`` for "xid").
        """
        node = self._machine()
        if not 0 <= gpu_index < len(node.gpus):
            raise ValueError(f"no GPU {gpu_index}; the node has {len(node.gpus)}")
        with self._cond:
            spec = _sc.fault_spec(fault, gpu_index, node.now() if onset is None else onset, duration_s, **params)
            node.faults.append(spec)
            self._cond.notify_all()
        return spec

    def set_lost(self, index: int, *, vanish: bool = False) -> _sc.FaultSpec:
        """Make physical GPU ``index`` fall off the bus now (Xid 79); ``vanish`` drops it from enumeration."""
        return self.inject(index, "gpu_lost", vanish=vanish)

    def now_s(self) -> float:
        """Current simulation time in seconds since start."""
        return self._machine().now()

    def is_busy(self, index: int, t: float | None = None) -> bool:
        """Whether physical GPU ``index``'s workload is busy at ``t`` (default now)."""
        node = self._machine()
        gpu = node.gpus[index]
        return _sc.busy_at(gpu.workload, node.now() if t is None else t)

    def node_spec(self) -> _sc.NodeSpec:
        """The resolved scenario currently loaded."""
        return self._machine().spec

    # ---------------------------------------------------------------------------
    # Library and system
    # ---------------------------------------------------------------------------

    def nvmlInitWithFlags(self, flags: Any) -> Any:  # noqa: N802
        node = self._machine()
        with self._lock:
            if node.spec.init_error:
                raise_nvml(_sc.INIT_ERRORS[node.spec.init_error])
            self._init_count += 1
        return None

    def nvmlInit(self) -> Any:  # noqa: N802
        self.nvmlInitWithFlags(0)
        return None

    def nvmlShutdown(self) -> Any:  # noqa: N802
        with self._cond:
            self._require_init()
            self._init_count -= 1
            self._cond.notify_all()
        return None

    def nvmlSystemGetDriverVersion(self) -> Any:  # noqa: N802
        return self._require_init().spec.driver

    def nvmlSystemGetNVMLVersion(self) -> Any:  # noqa: N802
        node = self._require_init()
        return f"{_sc.cuda_version(node.spec.driver) // 1000}.{node.spec.driver}"

    def nvmlSystemGetCudaDriverVersion(self) -> Any:  # noqa: N802
        return _sc.cuda_version(self._require_init().spec.driver)

    def nvmlSystemGetCudaDriverVersion_v2(self) -> Any:  # noqa: N802
        return _sc.cuda_version(self._require_init().spec.driver)

    # ---------------------------------------------------------------------------
    # Enumeration
    # ---------------------------------------------------------------------------

    def nvmlDeviceGetCount(self) -> Any:  # noqa: N802
        with self._lock:
            node = self._require_init()
            return len(node.visible(node.now()))

    def nvmlDeviceGetHandleByIndex(self, index: Any) -> Any:  # noqa: N802
        with self._lock:
            node = self._require_init()
            t = node.now()
            visible = node.visible(t)
            if not isinstance(index, int) or not 0 <= index < len(visible):
                raise_nvml(NVML_ERROR_INVALID_ARGUMENT)
            gpu = visible[index]
            lost = gpu.lost(t)
            if lost is not None and lost.params.get("handle_error", True):
                raise_nvml(NVML_ERROR_GPU_IS_LOST)
            return gpu.handle

    def nvmlDeviceGetHandleByUUID(self, uuid: Any) -> Any:  # noqa: N802
        if isinstance(uuid, bytes):
            uuid = uuid.decode()
        with self._lock:
            node = self._require_init()
            t = node.now()
            for gpu in node.visible(t):
                if gpu.uuid == uuid:
                    if gpu.lost(t) is not None:
                        raise_nvml(NVML_ERROR_GPU_IS_LOST)
                    return gpu.handle
            raise_nvml(NVML_ERROR_NOT_FOUND)

    def nvmlDeviceGetHandleByPciBusId(self, pciBusId: Any) -> Any:  # noqa: N802,N803
        if isinstance(pciBusId, bytes):
            pciBusId = pciBusId.decode()
        with self._lock:
            node = self._require_init()
            t = node.now()
            want = pciBusId.strip().upper()
            for gpu in node.visible(t):
                if want in (NVML_DEVICE_PCI_BUS_ID_FMT % (0, gpu.bus, 0), NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT % (0, gpu.bus, 0)):
                    if gpu.lost(t) is not None:
                        raise_nvml(NVML_ERROR_GPU_IS_LOST)
                    return gpu.handle
            raise_nvml(NVML_ERROR_NOT_FOUND)

    # ---------------------------------------------------------------------------
    # Events
    # ---------------------------------------------------------------------------

    def nvmlEventSetCreate(self) -> Any:  # noqa: N802
        with self._lock:
            return SimEventSet(self._require_init())

    def nvmlDeviceGetSupportedEventTypes(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return supported_events(gpu)



    def nvmlDeviceRegisterEvents(self, handle: Any, eventTypes: Any, eventSet: Any) -> Any:  # noqa: N802,N803
        gpu, t = self._resolve(handle)
        with self._lock:
            if not isinstance(eventSet, SimEventSet) or eventSet.freed or eventSet.node is not gpu.node:
                raise_nvml(NVML_ERROR_INVALID_ARGUMENT)
            if eventTypes & ~supported_events(gpu):
                raise_nvml(NVML_ERROR_NOT_SUPPORTED)
            old_mask, since = eventSet.registrations.get(gpu.phys, (0, t))
            eventSet.registrations[gpu.phys] = (old_mask | int(eventTypes), since)
        return None



    def nvmlEventSetWait_v2(self, eventSet: Any, timeoutms: Any) -> Any:  # noqa: N802,N803
        """Wait up to ``timeoutms`` ms for an event; NVMLError_Timeout when none arrives."""
        deadline = time.monotonic() + max(0, int(timeoutms)) / 1000.0
        with self._cond:
            while True:
                node = self._require_init()
                if not isinstance(eventSet, SimEventSet) or eventSet.freed or eventSet.node is not node:
                    raise_nvml(NVML_ERROR_INVALID_ARGUMENT)
                t = node.now()
                event = next_event(eventSet, node, t)
                if event is not None:
                    return event
                for phys in eventSet.registrations:
                    lost = node.gpus[phys].lost(t)
                    if lost is not None and lost.params.get("wait_error", True) and phys not in eventSet.lost_reported:
                        eventSet.lost_reported.add(phys)
                        raise_nvml(NVML_ERROR_GPU_IS_LOST)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise_nvml(NVML_ERROR_TIMEOUT)
                self._cond.wait(min(remaining, 0.05))  # re-check: a fake clock may have moved on

    def nvmlEventSetWait(self, eventSet: Any, timeoutms: Any) -> Any:  # noqa: N802,N803
        return self.nvmlEventSetWait_v2(eventSet, timeoutms)

    def nvmlEventSetFree(self, eventSet: Any) -> Any:  # noqa: N802,N803
        with self._cond:
            self._require_init()
            if not isinstance(eventSet, SimEventSet) or eventSet.freed:
                raise_nvml(NVML_ERROR_INVALID_ARGUMENT)
            eventSet.freed = True
            self._cond.notify_all()
        return None


def _pynvml_names() -> dict[str, Any]:
    """pynvml's constants, error classes, error functions and structures, by name."""
    out: dict[str, Any] = {}
    for module in (nvml_constants, nvml_errors, nvml_structs):
        for name, value in vars(module).items():
            if name.startswith(("nvml", "NVML", "c_nvml")):
                out[name] = staticmethod(value) if inspect.isfunction(value) else value
    return out


for _name, _value in _pynvml_names().items():
    setattr(SimulatedNvml, _name, _value)

PYNVML_API: tuple[str, ...] = tuple(sorted(
    name for name in dir(SimulatedNvml) if name.startswith(("nvml", "NVML", "c_nvml"))))
"""Every pynvml name a SimulatedNvml defines (what ``from pynvml import *`` would give)."""
