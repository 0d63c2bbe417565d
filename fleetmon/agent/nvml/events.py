"""NVML's Xid events, at the boundary: typed notices out, no NVML error escapes.

The raw event set stays inside :class:`XidEvents` (made by
:meth:`fleetmon.agent.nvml.NvmlSession.xid_events`); callers see
:class:`XidNotice` values and :class:`EventWaitError` results only.
"""

from __future__ import annotations

import concurrent.futures as cf
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from fleetmon.agent.nvml.load import PynvmlApi
from fleetmon.records import GpuInventory


class _EventSource(Protocol):
    """What an event set needs of its session (:class:`fleetmon.agent.nvml.NvmlSession`).

    A protocol rather than the class, so that this module does not import the
    session that imports it.
    """

    def indices(self) -> list[int]: ...

    def handle(self, index: int) -> Any: ...

    def submit(self, index: int, fn: Callable[..., Any], *args: Any) -> cf.Future[Any] | None: ...

    def index_for_handle(self, handle: Any) -> int | None: ...

    def inventory(self, index: int) -> GpuInventory: ...


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

    def __init__(self, session: _EventSource, nv: PynvmlApi) -> None:
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
            failure = fut.exception()
            if failure is None:
                self.registered.add(index)
            else:
                errors[index] = str(failure) or type(failure).__name__
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
