"""The agent's sampling loop: every GPU, every few seconds, bounded in time.

Each GPU is read by its own worker thread. A read that has not finished within
``read_timeout_s`` is reported as failed for this round, and that GPU gets no
new read until the hung one returns, so one wedged GPU cannot stall the other
GPUs, the loop or the HTTP server.
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
from fleetmon.records import Event, GpuSample, Status

log = logging.getLogger("fleetmon.sampler")

DEFAULT_INTERVAL_S = 5.0


@dataclass
class GpuHealth:
    """Agent-side health of the reads of one GPU."""

    index: int
    uuid: str
    last_read_ms: float | None = None
    max_read_ms: float = 0.0
    hung_since: float | None = None
    failing: list[str] = field(default_factory=list)
    stale_since: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index, "uuid": self.uuid, "last_read_ms": self.last_read_ms,
            "max_read_ms": round(self.max_read_ms, 3), "hung_since": self.hung_since,
            "failing": self.failing, "stale_since": self.stale_since,
        }


class Sampler:
    """Reads all GPUs periodically, keeps the latest sample, buffers minutes."""

    def __init__(self, session: NvmlSession, buffer: Buffer, *, interval_s: float = DEFAULT_INTERVAL_S,
                 read_timeout_s: float | None = None, clock: Callable[[], float] = time.time) -> None:
        self.session = session
        self.buffer = buffer
        self.interval_s = interval_s
        self.read_timeout_s = read_timeout_s if read_timeout_s is not None else max(1.0, interval_s * 0.6)
        self.clock = clock
        self.aggregator = MinuteAggregator()
        self.latest: dict[int, GpuSample] = {}
        self.health: dict[int, GpuHealth] = {}
        self.last_sample_at: float | None = None
        self.last_cycle_s: float | None = None
        self.max_lag_s = 0.0
        self.cycles = 0
        self._pools: dict[int, cf.ThreadPoolExecutor] = {}
        self._inflight: dict[int, tuple[cf.Future[Any], float]] = {}
        self._lost: set[int] = set()
        self._lock = threading.Lock()
        self._last_energy: dict[int, float] = {}

    # -- one round ----------------------------------------------------------------

    def sample_once(self) -> list[GpuSample]:
        """Read every GPU once (bounded in time) and feed the minute buffer."""
        started = time.monotonic()
        now = self.clock()
        if self.cycles % 12 == 0 and self.cycles:
            self.session.refresh_devices()
        indices = self.session.indices()
        futures: dict[int, cf.Future[Any]] = {}
        for index in indices:
            pending = self._inflight.get(index)
            if pending is not None and not pending[0].done():
                continue  # still hung from an earlier round
            pool = self._pools.get(index)
            if pool is None:
                pool = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"gpu{index}")
                self._pools[index] = pool
            fut = pool.submit(self._timed_read, index)
            self._inflight[index] = (fut, time.monotonic())
            futures[index] = fut
        if futures:
            cf.wait(list(futures.values()), timeout=self.read_timeout_s)
        samples = []
        for index in indices:
            samples.append(self._collect(index, now))
        minutes = []
        for s in samples:
            minutes.extend(self.aggregator.add(s))
        if minutes:
            self.buffer.append_minutes(minutes)
        with self._lock:
            for s in samples:
                self.latest[s.index] = s
            self.last_sample_at = now
            self.last_cycle_s = time.monotonic() - started
            self.cycles += 1
        self.buffer.maybe_prune(now)
        return samples

    def _timed_read(self, index: int) -> tuple[dict[str, Any], dict[str, str], bool, float]:
        t0 = time.perf_counter()
        values, status, lost = self.session.read_sample(index)
        return values, status, lost, (time.perf_counter() - t0) * 1000.0

    def _collect(self, index: int, now: float) -> GpuSample:
        inv = self.session.inventory(index)
        health = self.health.get(index)
        if health is None:
            health = self.health[index] = GpuHealth(index=index, uuid=inv.uuid)
        fut, submitted = self._inflight[index]
        if not fut.done():
            # Hung: report every field as failed for this round.
            if health.hung_since is None:
                health.hung_since = now
                log.warning("GPU %d (%s): NVML read hung for more than %.1f s",
                            index, inv.uuid, self.read_timeout_s)
                self._event(now, "gpu_hung", inv.uuid, inv.values.get("pci_bus_id"),
                            f"NVML reads of GPU {index} have not returned for {self.read_timeout_s:.1f} s")
            values = {name: None for name in SAMPLE_FIELDS}
            status = {name: Status.FAILED.value for name in SAMPLE_FIELDS}
            health.failing = list(SAMPLE_FIELDS)
            return GpuSample(ts=now, uuid=inv.uuid, index=index, values=values, status=status, state="ok")
        try:
            values, status, lost, ms = fut.result()
        except Exception as exc:  # a bug or an unexpected library error: keep serving
            log.exception("GPU %d: read raised", index)
            values = {name: None for name in SAMPLE_FIELDS}
            status = {name: Status.FAILED.value for name in SAMPLE_FIELDS}
            lost, ms = False, 0.0
            health.failing = [f"error: {exc}"]
        if health.hung_since is not None:
            health.hung_since = None
            self._event(now, "gpu_unhung", inv.uuid, inv.values.get("pci_bus_id"),
                        f"NVML reads of GPU {index} answer again")
        health.last_read_ms = round(ms, 3)
        health.max_read_ms = max(health.max_read_ms, ms)
        health.failing = sorted(k for k, v in status.items() if v == Status.FAILED.value)
        for k in health.failing:
            health.stale_since.setdefault(k, now)
        for k in list(health.stale_since):
            if k not in health.failing:
                del health.stale_since[k]
        if lost and index not in self._lost:
            self._lost.add(index)
            self._event(now, "gpu_lost", inv.uuid, inv.values.get("pci_bus_id"),
                        f"GPU {index} ({inv.name}) is lost: NVML reports GPU_IS_LOST")
        elif not lost and index in self._lost:
            self._lost.discard(index)
            self._event(now, "gpu_back", inv.uuid, inv.values.get("pci_bus_id"), f"GPU {index} answers again")
        energy = values.get("energy_mj")
        if energy is not None:
            prev = self._last_energy.get(index)
            if prev is not None and energy < prev:
                self._event(now, "energy_reset", inv.uuid, inv.values.get("pci_bus_id"),
                            "energy counter went backwards: driver reload or GPU reset")
            self._last_energy[index] = energy
        return GpuSample(ts=now, uuid=inv.uuid, index=index, values=values, status=status,
                         state="lost" if lost else "ok")

    def _event(self, ts: float, kind: str, uuid: str | None, pci: str | None, message: str,
               code: int | None = None, data: dict[str, Any] | None = None) -> None:
        self.buffer.append_event(Event(seq=0, ts=ts, kind=kind, uuid=uuid, pci_bus_id=pci, code=code,
                                       message=message, data=data or {}))

    def record_event(self, event: Event) -> None:
        """Store an event from another source (Xid watcher)."""
        self.buffer.append_event(event)

    # -- loop ---------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Sample at the interval until ``stop`` is set; aligned to a monotonic grid."""
        next_at = time.monotonic()
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
        with self._lock:
            return [self.latest[i] for i in sorted(self.latest)], self.last_sample_at

    def health_dict(self) -> dict[str, Any]:
        with self._lock:
            return {
                "interval_s": self.interval_s,
                "cycles": self.cycles,
                "last_sample_at": self.last_sample_at,
                "last_cycle_s": None if self.last_cycle_s is None else round(self.last_cycle_s, 4),
                "max_lag_s": round(self.max_lag_s, 4),
                "gpus": [self.health[i].to_dict() for i in sorted(self.health)],
            }

    def close(self) -> None:
        done = self.aggregator.flush(before_ts=self.clock())
        if done:
            self.buffer.append_minutes(done)
        for pool in self._pools.values():
            pool.shutdown(wait=False, cancel_futures=True)
