"""The agent's sampling loop: every GPU, every few seconds, bounded in time.

Each GPU is read on its own worker thread (see :mod:`fleetmon.agent.nvml`).
A read that has not finished within ``read_timeout_s`` is reported as failed
for this round, and that GPU gets no new read until the hung one returns, so
one wedged GPU cannot stall the other GPUs, the loop or the HTTP server. The
latest sample of every GPU is kept in memory for the HTTP server; completed
minutes go to the buffer.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from fleetmon.agent.aggregate import MinuteAggregator
from fleetmon.agent.buffer import Buffer
from fleetmon.agent.nvml import SAMPLE_FIELDS, NvmlSession
from fleetmon.fields import CATALOG, Field
from fleetmon.records import Event, GpuSample, Status
from fleetmon.signals import EVENT_KINDS, baseline_event, device_signals, signal_events
from fleetmon.vocab import GpuState

log = logging.getLogger("fleetmon.sampler")

DEFAULT_INTERVAL_S = 5.0
REFRESH_EVERY_S = 60.0
"""How often GPUs are re-enumerated (a GPU that left or joined shows within this time)."""

_FAILED = Status.FAILED.value
_LOST = Status.GPU_LOST.value


@dataclass
class GpuHealth:
    """Agent-side health of the reads of one GPU (served by /v1/health).

    Attributes:
        last_read_ms: duration of the last completed read of all fields.
        max_read_ms: longest completed read since the agent started.
        calls: NVML calls the last read made; ``last_read_ms / calls`` is the
            cost of one call.
        hung_since: agent-clock time since which reads do not return in time.
        last_ok_at: time of the last read that completed in time.
        failing: fields whose last reading failed (not: unsupported).
        stale_since: per failing field, since when it has had no fresh value.
    """

    index: int
    uuid: str
    state: str = GpuState.OK
    last_read_ms: float | None = None
    max_read_ms: float = 0.0
    calls: int = 0
    hung_since: float | None = None
    last_ok_at: float | None = None
    failing: list[str] = field(default_factory=list)
    stale_since: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        per_call = None
        if self.last_read_ms is not None and self.calls:
            per_call = round(self.last_read_ms / self.calls, 4)
        return {
            "index": self.index, "uuid": self.uuid, "state": self.state, "last_read_ms": self.last_read_ms,
            "max_read_ms": round(self.max_read_ms, 3), "calls": self.calls, "per_call_ms": per_call,
            "hung_since": self.hung_since, "last_ok_at": self.last_ok_at, "failing": list(self.failing),
            "stale_since": dict(self.stale_since),
        }


class Sampler:
    """Reads all GPUs periodically, keeps the latest sample, buffers minutes.

    Args:
        session: the NVML session.
        buffer: where completed minutes and events go.
        interval_s: sampling interval.
        read_timeout_s: how long one round waits for a GPU (default: 60 % of
            the interval, at least 1 s).
        clock: wall clock for timestamps (inject a fake one in tests; the
            simulated NVML can share it).
        refresh_every_s: re-enumeration period (by ``clock``).
    """

    def __init__(self, session: NvmlSession, buffer: Buffer, *, interval_s: float = DEFAULT_INTERVAL_S,
                 read_timeout_s: float | None = None, clock: Callable[[], float] = time.time,
                 refresh_every_s: float = REFRESH_EVERY_S) -> None:
        self.session = session
        self.buffer = buffer
        self.interval_s = interval_s
        self.read_timeout_s = read_timeout_s if read_timeout_s is not None else max(1.0, interval_s * 0.6)
        self.clock = clock
        self.refresh_every_s = refresh_every_s
        # The session's field catalog (fleetmon.fields.CATALOG unless it was built with another).
        self.fields: tuple[Field, ...] = getattr(session, "fields", CATALOG)
        self.sample_fields: tuple[str, ...] = getattr(session, "sample_fields", SAMPLE_FIELDS)
        self.aggregator = MinuteAggregator(self.fields)
        self.latest: dict[int, GpuSample] = {}
        self.health: dict[int, GpuHealth] = {}
        self.last_sample_at: float | None = None
        self.last_cycle_s: float | None = None
        self.max_cycle_s = 0.0
        self.max_lag_s = 0.0
        self.cycles = 0
        self.last_xid: dict[str, int] = {}  # uuid -> code of the last Xid (DCGM_FI_DEV_XID_ERRORS)
        self._lost: set[int] = set()
        self._lock = threading.Lock()
        self._last_energy: dict[int, float] = {}
        self._last_refresh = clock()
        self._saved_inventory_version = -1
        self._uuid_of: dict[int, str] = {}
        self._signals: dict[str, dict[str, Any]] = {}  # uuid -> the device's last fault signals
        adopt = getattr(session, "adopt_known_inventory", None)
        load = getattr(buffer, "load_inventory", None)
        if adopt is not None and load is not None:
            adopt(load())

    # -- one round ----------------------------------------------------------------

    @property
    def _library(self) -> str:
        """What the backend reads, in messages: "NVML", or the other backend's name (amdsmi, npu-smi, …)."""
        name = str(getattr(self.session, "name", "nvml"))
        return "NVML" if name == "nvml" else name

    def sample_once(self) -> list[GpuSample]:
        """Read every GPU once (bounded in time) and feed the minute buffer."""
        started = time.monotonic()
        now = self.clock()
        if abs(now - self._last_refresh) >= self.refresh_every_s:  # abs: the wall clock may step back
            self._last_refresh = now
            self._refresh(now)
        indices = self.session.indices()
        futures: dict[int, cf.Future[Any]] = {}
        for index in indices:
            fut = self.session.submit_read(index, self.read_timeout_s)
            if fut is not None:
                futures[index] = fut
        if futures:
            cf.wait(list(futures.values()), timeout=self.read_timeout_s)
        samples = [self._collect(index, now, futures.get(index)) for index in indices]
        minutes = []
        for s in samples:
            minutes.extend(self.aggregator.add(s))
        # Minutes of GPUs that no longer report under that uuid (a placeholder
        # replaced by the real one) are completed here rather than never.
        minutes.extend(self.aggregator.flush(before_ts=now))
        if minutes:
            self.buffer.append_minutes(minutes)
        with self._lock:
            for s in samples:
                self.latest[s.index] = s
            self.last_sample_at = now
            self.last_cycle_s = time.monotonic() - started
            self.max_cycle_s = max(self.max_cycle_s, self.last_cycle_s)
            self.cycles += 1
        self._save_inventory()
        self.buffer.maybe_prune(now)
        return samples

    def _refresh(self, now: float) -> None:
        changes = self.session.refresh_devices(wait_s=0, block_s=min(0.5, self.read_timeout_s))
        for index in changes.get("vanished", []):
            inv = self.session.inventory(index)
            self._lost.add(index)
            self._event(now, "gpu_lost", inv.uuid, inv.values.get("pci_bus_id"),
                        f"GPU {index} ({inv.name}) left enumeration: {self._library} no longer lists it")
        for index in changes.get("appeared", []):
            inv = self.session.inventory(index)
            self._event(now, "gpu_appeared", inv.uuid, inv.values.get("pci_bus_id"),
                        f"GPU {index} appeared in enumeration")
        for index in changes.get("returned", []):
            inv = self.session.inventory(index)
            self._event(now, "gpu_back", inv.uuid, inv.values.get("pci_bus_id"),
                        f"GPU {index} is listed by {self._library} again")

    def _save_inventory(self) -> None:
        version = getattr(self.session, "inventory_version", None)
        save = getattr(self.buffer, "save_inventory", None)
        if version is None or save is None or version == self._saved_inventory_version:
            return
        self._saved_inventory_version = version
        try:
            save([self.session.inventory(i).to_dict() for i in self.session.indices()])
        except Exception:  # the inventory cache is a convenience; never stop sampling for it
            log.exception("saving the inventory to the buffer failed")

    def _collect(self, index: int, now: float, fut: cf.Future[Any] | None) -> GpuSample:
        inv = self.session.inventory(index)
        health = self.health.get(index)
        if health is None:
            health = self.health[index] = GpuHealth(index=index, uuid=inv.uuid)
        health.uuid = inv.uuid
        pci = inv.values.get("pci_bus_id")
        if fut is None or not fut.done():
            # Still inside an earlier read, or this one did not answer in time.
            busy_since = getattr(self.session, "busy_since", lambda i: None)(index)
            slow_start = fut is None and busy_since is not None and (
                time.monotonic() - busy_since < self.read_timeout_s)  # e.g. a first inventory read
            if health.hung_since is None and not slow_start:
                health.hung_since = now
                log.warning("GPU %d (%s): %s read hung for more than %.1f s", index, inv.uuid, self._library,
                            self.read_timeout_s)
                self._event(now, "gpu_hung", inv.uuid, pci,
                            f"{self._library} reads of GPU {index} have not returned for {self.read_timeout_s:.1f} s")
            lost = inv.state == GpuState.LOST
            st = _LOST if lost else _FAILED
            values: dict[str, Any] = {name: None for name in self.sample_fields}
            status = {name: st for name in self.sample_fields}
            health.state = inv.state
            self._note_failing(health, status, now)
            return GpuSample(ts=now, uuid=inv.uuid, index=index, values=values, status=status,
                             state=GpuState.LOST if lost else GpuState.OK)
        try:
            values, status, lost, ms, calls = fut.result()
        except Exception as exc:  # a bug or an unexpected library error: keep serving
            log.exception("GPU %d: read raised", index)
            values = {name: None for name in self.sample_fields}
            status = {name: _FAILED for name in self.sample_fields}
            lost, ms, calls = False, 0.0, 0
            status["error"] = f"{type(exc).__name__}: {exc}"[:200]
        inv = self.session.inventory(index)  # the read may have completed the inventory
        pci = inv.values.get("pci_bus_id")
        lost = lost or inv.state == GpuState.LOST
        if health.hung_since is not None:
            health.hung_since = None
            self._event(now, "gpu_unhung", inv.uuid, pci, f"{self._library} reads of GPU {index} answer again")
        health.uuid = inv.uuid
        health.state = GpuState.LOST if lost else GpuState.OK
        health.last_read_ms = round(ms, 3)
        health.max_read_ms = max(health.max_read_ms, ms)
        health.calls = calls
        health.last_ok_at = now
        status.pop("error", None)
        self._note_failing(health, status, now)
        if lost and index not in self._lost:
            self._lost.add(index)
            reason = getattr(self.session, "lost_reason", None)  # a backend other than NVML says how it knows
            self._event(now, "gpu_lost", inv.uuid, pci, f"GPU {index} ({inv.name}) is lost: "
                        + (reason(index) if reason is not None else "NVML reports GPU_IS_LOST"))
        elif not lost and index in self._lost:
            self._lost.discard(index)
            self._event(now, "gpu_back", inv.uuid, pci, f"GPU {index} answers again")
        self._note_signals(index, inv.uuid, pci, now)
        energy = values.get("energy_mj")
        if energy is not None:
            prev = self._last_energy.get(index)
            if prev is not None and energy < prev:
                self._event(now, "energy_reset", inv.uuid, pci,
                            "energy counter went backwards: driver reload or GPU reset")
            self._last_energy[index] = energy
        return GpuSample(ts=now, uuid=inv.uuid, index=index, values=values, status=status,
                         state=GpuState.LOST if lost else GpuState.OK)

    def _note_signals(self, index: int, uuid: str, pci: str | None, now: float) -> None:
        """Events for the device's fault signals that changed since the last round (``Backend.extra``).

        The backend's vendor readings become the vendor-neutral signals of
        :mod:`fleetmon.signals`; the first reading is one ``device_signals`` event with
        them all (the store's baseline), then a change is one event, so a state that lasts
        is not written every round.
        """
        read = getattr(self.session, "extra", None)
        if read is None:
            return
        try:
            found = device_signals(read(index))
        except Exception:  # a backend's extra readings are a bonus; never stop sampling for them
            log.exception("GPU %d: reading its vendor signals failed", index)
            return
        if not found:
            return
        before = self._signals.get(uuid)
        events = signal_events(before, found)
        if before is None:
            events.insert(0, baseline_event(found))
        if before is not None and any(k not in before or before[k] != v for k, v in found.items()
                                      if k not in EVENT_KINDS):
            events.append(baseline_event({**before, **found}))  # a fact without events of its own changed
        for kind, message, data in events:
            self._event(now, kind, uuid, pci, f"GPU {index}: {message}", data=data)
        self._signals[uuid] = {**(before or {}), **found}

    @staticmethod
    def _note_failing(health: GpuHealth, status: dict[str, str], now: float) -> None:
        health.failing = sorted(k for k, v in status.items() if v in (_FAILED, _LOST))
        for k in health.failing:
            health.stale_since.setdefault(k, now)
        for k in list(health.stale_since):
            if k not in health.failing:
                del health.stale_since[k]

    def _event(self, ts: float, kind: str, uuid: str | None, pci: str | None, message: str,
               code: int | None = None, data: dict[str, Any] | None = None) -> None:
        self.buffer.append_event(Event(seq=0, ts=ts, kind=kind, uuid=uuid, pci_bus_id=pci, code=code,
                                       message=message, data=data or {}))

    def record_event(self, event: Event) -> None:
        """Store an event from another source (the Xid watcher); thread-safe."""
        if event.kind == "xid" and event.uuid and event.code is not None:
            self.last_xid[event.uuid] = int(event.code)
        self.buffer.append_event(event)

    # -- loop ---------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Sample at the interval until ``stop`` is set; aligned to a monotonic grid.

        When a round was taken already (the agent samples once before it
        serves), the first round of the loop waits one interval.
        """
        next_at = time.monotonic() + (self.interval_s if self.cycles else 0.0)
        if self.cycles:
            stop.wait(self.interval_s)
        while not stop.is_set():
            lag = time.monotonic() - next_at
            self.max_lag_s = max(self.max_lag_s, lag)
            try:
                self.sample_once()
            except Exception:  # keep sampling; the health endpoint shows failures
                log.exception("sampling round failed")
            next_at += self.interval_s
            delay = next_at - time.monotonic()
            if delay < 0:
                next_at = time.monotonic()
                delay = 0
            stop.wait(delay)
        self.close()

    def snapshot(self) -> tuple[list[GpuSample], float | None]:
        """The latest sample of every GPU and when it was taken."""
        with self._lock:
            return [self.latest[i] for i in sorted(self.latest)], self.last_sample_at

    def health_dict(self) -> dict[str, Any]:
        """Sampler part of /v1/health: cycle timing and per-GPU read health."""
        with self._lock:
            gpus = [self.health[i].to_dict() for i in sorted(self.health)]
            stale = [{"index": g["index"], "uuid": g["uuid"], "fields": g["failing"]}
                     for g in gpus if g["failing"]]
            return {
                "interval_s": self.interval_s,
                "read_timeout_s": self.read_timeout_s,
                "cycles": self.cycles,
                "last_sample_at": self.last_sample_at,
                "last_cycle_s": None if self.last_cycle_s is None else round(self.last_cycle_s, 4),
                "max_cycle_s": round(self.max_cycle_s, 4),
                "max_lag_s": round(self.max_lag_s, 4),
                "enumeration_error": getattr(self.session, "enumeration_error", None),
                "backend": getattr(self.session, "name", "nvml"),
                "backend_note": getattr(self.session, "note", None),
                "hung_gpus": [g["index"] for g in gpus if g["hung_since"] is not None],
                "failing": stale,
                "gpus": gpus,
            }

    def close(self) -> None:
        """Store the minutes that are complete.

        The minute in progress is dropped: a restarted agent begins that
        minute afresh, and two records for one GPU and minute would collide.
        """
        done = self.aggregator.flush(before_ts=self.clock())
        if done:
            try:
                self.buffer.append_minutes(done)
            except Exception:
                log.exception("storing the last minutes failed")
