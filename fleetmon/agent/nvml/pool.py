"""The per-GPU worker lanes: every call that touches one GPU runs on a pool thread.

One job per GPU at a time (:class:`_Worker`), so a wedged GPU blocks only its
own call and holds at most one thread; the threads are shared by every
session of the process (:class:`_ElasticPool`).
"""

from __future__ import annotations

import concurrent.futures as cf
import queue
import threading
import time
from typing import Any, Callable


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
