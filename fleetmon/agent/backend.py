"""The agent's device backends: one declared interface, chosen at start (``fleetmon agent --backend``).

A backend is what the agent reads a node's devices through: NVML (:class:`~fleetmon.agent.nvml.NvmlSession`),
AMD's ``amdsmi`` binding, or a vendor's command-line tool. The sampler, the Xid watcher, the HTTP server
and the buffer see only :class:`Backend`; nothing above this module names a vendor library.

The interface (what :class:`~fleetmon.agent.sampler.Sampler`, :class:`~fleetmon.agent.xidwatch.XidWatcher`
and :func:`~fleetmon.agent.main.start_agent` call):

* device list: :meth:`Backend.indices` (the agent's indices, stable while the agent runs; a device that
  left the list stays, lost) and :meth:`Backend.refresh_devices` (re-enumerate, bounded in time);
* inventory: :meth:`Backend.inventory` (a :class:`~fleetmon.records.GpuInventory`, values by
  :data:`fleetmon.fields.INVENTORY_CATALOG` name, ``vendor`` set);
* node info: :meth:`Backend.node_info` (:data:`fleetmon.fields.NODE_CATALOG`: driver, runtime and
  firmware versions, the vendor);
* sampling: :meth:`Backend.submit_read` (a future of ``(values, status, lost, ms, calls)``, values by
  :data:`fleetmon.fields.CATALOG` name; what the device cannot give is ``unsupported``, never zero);
* vendor readings without a catalog field: :meth:`Backend.extra` (the device's latest, by the names the
  vendor's parser documents in :mod:`fleetmon.sources`: an Ascend chip's health and error codes, AMD's ECC
  per block; ``{}`` for NVML);
* events: :meth:`Backend.xid_events` (an object like :class:`~fleetmon.agent.nvml.XidEvents`; a backend
  without a device event channel returns :class:`NoDeviceEvents`, and the watcher says so);
* close: :meth:`Backend.close`.

:data:`BACKENDS` lists them by name, in the order ``auto`` tries them; each says which vendor it reads
and how to tell whether the node has what it needs (:attr:`BackendSpec.probe`).
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Dict, Protocol, Tuple

from fleetmon.errors import NvmlUnavailable
from fleetmon.i18n import N_, Text, listing
from fleetmon.records import GpuInventory, NodeInfo

__all__ = ["BACKENDS", "Backend", "BackendSpec", "BackendUnavailable", "DeviceEvents", "NoDeviceEvents",
           "backend_names", "choose_backend", "register"]

ReadResult = Tuple[Dict[str, Any], Dict[str, str], bool, float, int]  # typing's: the agent runs on Python 3.8
"""What a read's future gives: values, statuses of the fields not read OK, lost, milliseconds, library calls."""


class BackendUnavailable(NvmlUnavailable):
    """The backend cannot start on this node (no library, no tool, no driver); the message says which."""


class DeviceEvents(Protocol):
    """A backend's device event channel, as the Xid watcher uses it (see :class:`fleetmon.agent.nvml.XidEvents`)."""

    error: str | None

    @property
    def available(self) -> bool: ...

    @property
    def registered(self) -> Any: ...

    def register(self, timeout_s: float | None) -> dict[int, str]: ...

    def wait(self, timeout_ms: int) -> Any: ...

    def drain(self, limit: int = 10_000) -> list[Any]: ...

    def close(self) -> None: ...


class NoDeviceEvents:
    """The event channel of a backend that has none: never available, with the reason the watcher reports."""

    def __init__(self, reason: str) -> None:
        self.error: str | None = reason
        self._registered: set[int] = set()

    @property
    def available(self) -> bool:
        return False

    @property
    def registered(self) -> set[int]:
        return self._registered

    def register(self, timeout_s: float | None) -> dict[int, str]:
        return {}

    def wait(self, timeout_ms: int) -> None:
        return None

    def drain(self, limit: int = 10_000) -> list[Any]:
        return []

    def close(self) -> None:
        return None


class Backend(Protocol):
    """What the agent reads a node's devices through (see the module docstring)."""

    name: str
    """The backend's name, as ``--backend`` takes it."""
    vendor: str
    """The devices' vendor (:data:`fleetmon.fields.VENDORS`)."""
    enumeration_error: str | None
    """Why the last enumeration failed, else None (served in /v1/health)."""
    inventory_version: int
    """Grows whenever an inventory changes (the sampler saves the inventory to the buffer then)."""

    def node_info(self) -> NodeInfo: ...

    def indices(self) -> list[int]: ...

    def inventory(self, index: int) -> GpuInventory: ...

    def refresh_devices(self, wait_s: float = 0.0, *, read_node: bool = False,
                        block_s: float | None = None) -> dict[str, list[int]]: ...

    def submit_read(self, index: int, timeout_s: float) -> cf.Future[Any] | None: ...

    def busy_since(self, index: int) -> float | None: ...

    def xid_events(self) -> Any: ...

    def extra(self, index: int) -> dict[str, Any]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class BackendSpec:
    """One backend: how to tell whether the node has what it needs, and how to open it.

    Attributes:
        name: what ``--backend`` takes.
        vendor: the devices' vendor.
        needs: what the node must have, in words (``fleetmon agent --list-backends`` prints it).
        probe: None when the node has what the backend needs, else why not (cheap: no device opened).
        open: opens the backend; keyword arguments ``known_inventory``, ``inventory_wait_s``, ``simulate``
            (a scenario name, or None for the real devices), ``clock`` and ``node_name``; raises
            :class:`BackendUnavailable` (or NvmlUnavailable) with a one-line reason.
    """

    name: str
    vendor: str
    needs: str
    probe: Callable[[], str | None]
    open: Callable[..., Backend]


BACKENDS: dict[str, BackendSpec] = {}
"""Every backend by name, in the order ``--backend auto`` tries them."""


def register(spec: BackendSpec) -> BackendSpec:
    """Add a backend to :data:`BACKENDS` (a vendor module registers its own)."""
    if spec.name in BACKENDS or spec.name == "auto":
        raise ValueError(f"backend {spec.name!r} is registered twice")
    BACKENDS[spec.name] = spec
    return spec


def backend_names() -> list[str]:
    """``auto`` and every backend's name."""
    _load()
    return ["auto", *BACKENDS]


def choose_backend(name: str = "auto") -> BackendSpec:
    """The backend called ``name``, or with ``auto`` the first whose probe finds what it needs (none: NVML
    when pynvml is importable, so that NVML's own error is the answer).

    Raises:
        BackendUnavailable: an unknown name, or (auto) no backend finds its library or tool; the
            message lists every backend's reason.
    """
    _load()
    if name != "auto":
        spec = BACKENDS.get(name)
        if spec is None:
            raise BackendUnavailable(Text(N_("unknown backend {name}; known: {choices}"), name=repr(name),
                                          choices=", ".join(backend_names())))
        return spec
    reasons = []
    for spec in BACKENDS.values():
        why = spec.probe()
        if why is None:
            return spec
        reasons.append(Text(N_("{backend}: {reason}"), backend=spec.name, reason=why))
    import importlib.util

    if importlib.util.find_spec("pynvml") is not None:
        # The probe looks for libnvidia-ml.so by name; a node with pynvml but no other vendor's library or
        # tool gets NVML tried as before backends existed: it works where the library sits elsewhere (or the
        # pynvml is a stand-in), else NVML's own one-line reason is the answer.
        return BACKENDS["nvml"]
    raise BackendUnavailable(Text(N_("no device backend found on this node ({reasons})"),
                                  reasons=listing(reasons, semicolons=True)))


# -- NVML ---------------------------------------------------------------------------------------------------


def _probe_nvml() -> str | None:
    import ctypes.util
    import importlib.util

    if importlib.util.find_spec("pynvml") is None:
        return Text(N_("the nvidia-ml-py package (pynvml) is not installed"))
    if ctypes.util.find_library("nvidia-ml") is None:
        return Text(N_("libnvidia-ml.so (the NVIDIA driver) is not installed"))
    return None


def _open_nvml(*, known_inventory: list[dict[str, Any]] | None = None, inventory_wait_s: float = 2.0,
               simulate: str | None = None, clock: Callable[[], float] | None = None,
               node_name: str | None = None, module: Any = None) -> Backend:
    import time

    from fleetmon.agent.nvml import load_nvml, open_nvml

    if module is None:
        module = load_nvml(simulate, clock=clock or time.time, node_name=node_name)
    session: Backend = open_nvml(module, known_inventory=known_inventory, inventory_wait_s=inventory_wait_s)
    return session


_LOADED = False


def _load() -> None:
    """Register the built-in backends once: NVML here, the others from their modules (listed below)."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    register(BackendSpec("nvml", "nvidia", N_("the NVIDIA driver (libnvidia-ml.so) and the nvidia-ml-py package"),
                         _probe_nvml, _open_nvml))
    import importlib

    for module in _VENDOR_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:  # the single-file agent (NVIDIA only) leaves them out
            if exc.name != module:
                raise
    # ``auto`` tries them in this order, however the modules happened to be imported
    ordered = sorted(BACKENDS.items(), key=lambda kv: _AUTO_ORDER.index(kv[0]) if kv[0] in _AUTO_ORDER
                     else len(_AUTO_ORDER))
    BACKENDS.clear()
    BACKENDS.update(ordered)


_VENDOR_MODULES: tuple[str, ...] = ("fleetmon.agent.amdsmi", "fleetmon.agent.tools")
"""Modules that register further backends when imported (each calls :func:`register` at import)."""
_AUTO_ORDER: tuple[str, ...] = ("nvml", "hy-smi", "amdsmi", "amd-smi", "rocm-smi", "npu-smi", "hl-smi",
                                "mthreads-gmi")
"""The order ``--backend auto`` tries the backends in (a backend not listed comes after these). hy-smi comes
before AMD's: a Hygon node has Hygon's own rocm-smi too, and hy-smi says it is Hygon's (the SSH source's
``auto`` tries the tools in the same order)."""
