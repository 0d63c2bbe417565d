"""Xid events for the agent: NVML's event API plus the kernel log.

NVML delivers critical Xid events (``nvmlEventTypeXidCriticalError``) with the
code but no message. The kernel log (``/dev/kmsg`` or journald) has every Xid
with its text, PCI address and process. Both feed the same event buffer; the
node's status says which sources work (``xid_source``).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from fleetmon.records import Event

log = logging.getLogger("fleetmon.xid")


class XidWatcher:
    """Watches NVML events and the kernel log in background threads."""

    def __init__(self, session: Any, emit: Callable[[Event], None], *, simulate: bool = False,
                 kernel_log: Any = None) -> None:
        self.session = session
        self.emit = emit
        self.simulate = simulate
        self._nvml_ok = False
        self._nvml_error = ""
        self._event_set: Any = None
        self._kernel = kernel_log
        self._kernel_status = "none: simulated node" if simulate else "none: not started"
        self._setup_nvml()
        if not simulate and kernel_log is None:
            try:
                from fleetmon.agent.kernlog import open_kernel_log
                self._kernel = open_kernel_log()
            except Exception as exc:  # never stop the agent for the log source
                self._kernel_status = f"none: {exc}"
        if self._kernel is not None:
            self._kernel_status = self._kernel.status

    @property
    def source(self) -> str:
        """Human-readable Xid source status, e.g. "nvml+kmsg" or "none: …"."""
        parts = []
        if self._nvml_ok:
            parts.append("nvml")
        kstat = self._kernel_status
        if not kstat.startswith("none"):
            parts.append(kstat)
        if parts:
            text = "+".join(parts)
            if kstat.startswith("none") and not self.simulate:
                text += f" (kernel log unreadable: {kstat[5:].strip()})"
            return text
        return f"none: NVML events: {self._nvml_error or 'unavailable'}; kernel log: {kstat}"

    def _setup_nvml(self) -> None:
        nv = self.session.nv
        try:
            self._event_set = nv.nvmlEventSetCreate()
            etype = getattr(nv, "nvmlEventTypeXidCriticalError", 0x8)
            registered = 0
            for index in self.session.indices():
                h = self.session._handles.get(index)
                if h is None:
                    continue
                try:
                    nv.nvmlDeviceRegisterEvents(h, etype, self._event_set)
                    registered += 1
                except nv.NVMLError as exc:
                    log.info("GPU %d: Xid events not available: %s", index, exc)
            self._nvml_ok = registered > 0
            if not registered:
                self._nvml_error = "no GPU supports event registration"
        except Exception as exc:
            self._nvml_error = str(exc)

    def start(self, stop: threading.Event) -> None:
        if self._nvml_ok:
            threading.Thread(target=self._nvml_loop, args=(stop,), name="xid-nvml", daemon=True).start()
        if self._kernel is not None and not self._kernel_status.startswith("none"):
            threading.Thread(target=self._kernel_loop, args=(stop,), name="xid-kmsg", daemon=True).start()

    def _uuid_for_handle(self, handle: Any) -> tuple[str | None, str | None]:
        for index in self.session.indices():
            if self.session._handles.get(index) is handle or self.session._handles.get(index) == handle:
                inv = self.session.inventory(index)
                return inv.uuid, inv.values.get("pci_bus_id")
        return None, None

    def _nvml_loop(self, stop: threading.Event) -> None:
        nv = self.session.nv
        wait = getattr(nv, "nvmlEventSetWait_v2", None) or nv.nvmlEventSetWait
        while not stop.is_set():
            try:
                data = wait(self._event_set, 1000)
            except nv.NVMLError as exc:
                if isinstance(exc, getattr(nv, "NVMLError_Timeout", ())):
                    continue
                log.warning("NVML event wait failed: %s", exc)
                stop.wait(5)
                continue
            uuid, pci = self._uuid_for_handle(data.device)
            code = int(data.eventData)
            self.emit(Event(seq=0, ts=time.time(), kind="xid", uuid=uuid, pci_bus_id=pci, code=code,
                            message=f"Xid {code} (NVML event)", data={"source": "nvml"}))

    def _kernel_loop(self, stop: threading.Event) -> None:
        from fleetmon import xid as xidmod

        pci_to_uuid = {}
        for index in self.session.indices():
            inv = self.session.inventory(index)
            if inv.values.get("pci_bus_id"):
                pci_to_uuid[inv.values["pci_bus_id"]] = inv.uuid
        while not stop.is_set():
            try:
                lines = self._kernel.poll()
            except Exception as exc:
                log.warning("kernel log read failed: %s", exc)
                stop.wait(5)
                continue
            if not lines:
                stop.wait(0.5)
                continue
            for ev in xidmod.parse_xid_lines(lines):
                info = xidmod.to_json(ev, pci_to_uuid)
                self.emit(Event(seq=0, ts=time.time(), kind="xid", uuid=info.get("gpu"),
                                pci_bus_id=info.get("pci_address"), code=info.get("code"),
                                message=info.get("message") or "", data={"source": "kernel", **info}))
