"""Xid events for the agent: NVML's event API plus the kernel log.

NVML delivers critical Xid events (``nvmlEventTypeXidCriticalError``) with the
code but no message. The kernel log (``/dev/kmsg`` or journald, whichever is
readable) has every Xid with its text, PCI address and process; it is parsed
as a stream by :class:`fleetmon.xid.XidParser`, so a message continued over
several lines (GSP tables, stack traces) is one event even when its lines
arrive in different reads. Both sources feed the same event buffer; the
node's ``xid_source`` says which work, and names the reason when neither does.

NVML's events come through the boundary (:class:`fleetmon.agent.nvml.XidEvents`):
registration runs on each GPU's worker with a deadline, so a hung GPU delays
neither the agent's start nor the others, and no NVML error reaches this module.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from fleetmon.agent.nvml import EventWaitError, NvmlSession, XidNotice
from fleetmon.records import Event

log = logging.getLogger("fleetmon.xid")

REGISTER_TIMEOUT_S = 2.0
REGISTER_RETRY_S = 60.0
KERNEL_POLL_S = 0.5
"""How often an idle kernel log is polled (new lines are read at once while they keep coming)."""
QUIET_FLUSH_S = 1.0
"""A held-back kernel-log event is complete once the log has been quiet this long."""


class XidWatcher:
    """Watches NVML events and the kernel log in background threads.

    Args:
        session: the NvmlSession (handles, inventory, per-GPU workers).
        emit: called with each Event (thread-safe sink, e.g. Sampler.record_event).
        simulate: a simulated node: the host's kernel log is not its own.
        kernel_log: a ``fleetmon.agent.kernlog.KernelLog`` to read instead of
            opening /dev/kmsg or journald (tests).
        clock: timestamps of emitted events.
        quiet_flush_s: a held-back kernel-log event is emitted after this much quiet.
        kernel_poll_s: how often an idle kernel log is polled.
    """

    def __init__(self, session: NvmlSession, emit: Callable[[Event], None], *, simulate: bool = False,
                 kernel_log: Any = None, clock: Callable[[], float] = time.time,
                 quiet_flush_s: float = QUIET_FLUSH_S, kernel_poll_s: float = KERNEL_POLL_S) -> None:
        self.session = session
        self.emit = emit
        self.simulate = simulate
        self.clock = clock
        self.quiet_flush_s = quiet_flush_s
        self.kernel_poll_s = kernel_poll_s
        self._events = session.xid_events()
        self._nvml_error = self._events.error
        self._nvml_state = "starting" if self._events.available else "none"  # starting | ok | none
        self._kernel = kernel_log
        self._kernel_status = "none: simulated node" if simulate else "none: not started"
        self._events_seen = 0
        if not simulate and kernel_log is None:
            try:
                from fleetmon.agent.kernlog import open_kernel_log
                self._kernel = open_kernel_log()
            except Exception as exc:  # never stop the agent for the log source
                self._kernel_status = f"none: {exc}"
        if self._kernel is not None:
            self._kernel_status = self._kernel.status

    # -- status --------------------------------------------------------------------

    @property
    def kernel_status(self) -> str:
        if self._kernel is not None:
            self._kernel_status = self._kernel.status
        return self._kernel_status

    @property
    def nvml_status(self) -> str:
        if self._nvml_state == "none":
            return f"none: {self._nvml_error or 'unavailable'}"
        if self._events.registered:
            return "nvml"
        if self._nvml_state == "starting":
            return "nvml (registering)"
        return f"none: {self._nvml_error or 'no GPU accepts Xid event registration'}"

    @property
    def source(self) -> str:
        """Where Xid events come from, e.g. "nvml+kmsg", or "none: …" with every reason."""
        nvml = self.nvml_status
        kern = self.kernel_status
        parts = [p for p in (nvml, kern) if not p.startswith("none")]
        if parts:
            text = "+".join(parts)
            if kern.startswith("none") and not self.simulate:
                text += f" (kernel log unreadable: {kern[5:].strip()})"
            return text
        return f"none: NVML events: {nvml[5:].strip() if nvml.startswith('none') else nvml}; kernel log: {kern}"

    def status_dict(self) -> dict[str, Any]:
        """For /v1/health: both sources and what they delivered."""
        return {"source": self.source, "nvml": self.nvml_status, "kernel_log": self.kernel_status,
                "registered_gpus": sorted(self._events.registered), "events": self._events_seen,
                "kernel_log_dropped": getattr(self._kernel, "dropped", 0) if self._kernel else 0}

    # -- threads -------------------------------------------------------------------

    def start(self, stop: threading.Event) -> None:
        """Start the NVML and kernel-log threads (daemons; they end when ``stop`` is set)."""
        if self._events.available:
            threading.Thread(target=self._nvml_loop, args=(stop,), name="xid-nvml", daemon=True).start()
        if self._kernel is not None and not self.kernel_status.startswith("none"):
            threading.Thread(target=self._kernel_loop, args=(stop,), name="xid-kmsg", daemon=True).start()
        elif not self.simulate:
            self._emit(Event(seq=0, ts=self.clock(), kind="xid_source",
                             message=f"kernel log unreadable, Xid text unavailable: {self.kernel_status}",
                             data={"source": self.source}))

    def _register(self) -> None:
        """Register Xid events for each GPU not registered yet, bounded per GPU."""
        for index, error in self._events.register(REGISTER_TIMEOUT_S).items():
            self._nvml_error = f"GPU {index}: {error}"
            log.info("GPU %d: Xid events not available: %s", index, error)
        self._nvml_state = "ok" if self._events.registered else "none_registered"

    def _nvml_loop(self, stop: threading.Event) -> None:
        self._register()
        next_register = time.monotonic() + REGISTER_RETRY_S
        while not stop.is_set():
            if time.monotonic() >= next_register:
                next_register = time.monotonic() + REGISTER_RETRY_S
                if len(self._events.registered) < len(self.session.indices()):
                    self._register()
            if not self._events.registered:
                stop.wait(1.0)
                continue
            got = self._events.wait(1000)
            if got is None:
                continue
            if isinstance(got, EventWaitError):
                if got.nvml:
                    log.info("NVML event wait: %s", got.message)  # GPU_IS_LOST once per lost GPU, among others
                    stop.wait(1.0)
                else:
                    log.error("NVML event wait failed: %s", got.message)
                    stop.wait(5.0)
                continue
            self._emit(xid_event(got, self.clock()))

    def _pci_map(self) -> dict[str, str]:
        out = {}
        for index in self.session.indices():
            inv = self.session.inventory(index)
            if inv.values.get("pci_bus_id") and inv.uuid.startswith(("GPU-", "MIG-")):
                out[inv.values["pci_bus_id"]] = inv.uuid
        return out

    def _kernel_loop(self, stop: threading.Event) -> None:
        from fleetmon import xid as xidmod

        parser = xidmod.XidParser()
        last_line = None  # monotonic time of the last line, while an event may be held back
        while not stop.is_set():
            try:
                lines = self._kernel.poll()
            except Exception as exc:
                log.warning("kernel log read failed: %s", exc)
                stop.wait(5)
                continue
            if lines:
                events = []
                for line in lines:
                    events.extend(parser.feed(line))
                self._emit_kernel(events, xidmod)
                last_line = time.monotonic()
                continue
            if last_line is not None and time.monotonic() - last_line >= self.quiet_flush_s:
                self._emit_kernel(parser.flush(), xidmod)
                last_line = None
            if self.kernel_status.startswith("none"):
                return
            stop.wait(self.kernel_poll_s)
        self._emit_kernel(parser.flush(), xidmod)

    def _emit_kernel(self, events: list[Any], xidmod: Any) -> None:
        if not events:
            return
        pci_map = self._pci_map()
        for ev in events:
            info = xidmod.to_json(ev, pci_map)
            kind = "xid" if info.get("kind") == "xid" else "fallen_off_bus"
            self._emit(Event(seq=0, ts=self.clock(), kind=kind, uuid=info.get("gpu"),
                             pci_bus_id=info.get("pci_address"), code=info.get("code"),
                             message=info.get("message") or "", data={"source": "kernel", **info}))

    def _emit(self, event: Event) -> None:
        self._events_seen += 1
        try:
            self.emit(event)
        except Exception:
            log.exception("storing an Xid event failed")

    def close(self) -> None:
        if self._kernel is not None:
            self._kernel.close()


def xid_event(notice: XidNotice, ts: float) -> Event:
    """The buffer's Event for an NVML Xid notice, named from fleetmon.xid's catalog (watcher and backfill)."""
    return Event(seq=0, ts=ts, kind="xid", uuid=notice.uuid, pci_bus_id=notice.pci_bus_id, code=notice.code,
                 message=f"Xid {notice.code} (NVML event)",
                 data={"source": "nvml", "gpu": notice.gpu, **_catalog(notice.code)})


def _catalog(code: int) -> dict[str, Any]:
    """Name, category, severity and action of an Xid code from fleetmon.xid's catalog."""
    from fleetmon import xid as xidmod

    info = xidmod.lookup(code)
    return {"name": info.name, "category": info.category, "severity": info.severity, "action": info.action}
