"""The poll schedule: one APScheduler interval job over the whole fleet.

The job never overlaps itself (``max_instances=1``) and coalesces missed runs.
Each run polls every node concurrently (asyncio + aiohttp, under a
concurrency cap, with connect/read timeouts), then writes the batch in one
transaction from this same thread, the database's only writer. Results reach
listeners through a plain callback; nothing here knows about Qt.

This is the only module that imports apscheduler.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable

from apscheduler.schedulers.background import BackgroundScheduler

from fleetmon.collector.client import Target, poll_all
from fleetmon.records import NodePoll

log = logging.getLogger("fleetmon.poll")

CycleListener = Callable[[list[NodePoll]], None]


def _read_token(path: str | None, cache: dict[str, str | None]) -> str | None:
    if not path:
        return None
    if path not in cache:
        try:
            cache[path] = Path(path).expanduser().read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            log.warning("cannot read token file %s: %s", path, exc)
            cache[path] = None
    return cache[path]


class Collector:
    """Polls a fleet into a database on a schedule (or once)."""

    def __init__(self, fleet: Any, db: Any, *, interval_s: float | None = None,
                 on_cycle: CycleListener | None = None) -> None:
        self.fleet = fleet
        self.db = db
        self.interval_s = float(interval_s or getattr(fleet, "poll_interval_s", 30) or 30)
        self.timeout_s = float(getattr(fleet, "timeout_s", 5) or 5)
        self.concurrency = int(getattr(fleet, "concurrency", 64) or 64)
        self.listeners: list[CycleListener] = [on_cycle] if on_cycle else []
        self._scheduler: BackgroundScheduler | None = None
        self._tokens: dict[str, str | None] = {}
        self._lock = threading.Lock()
        self.cycles = 0
        self.last_cycle_s: float | None = None
        self.last_error: str | None = None

    def targets(self) -> list[Target]:
        from storage.db import query

        cursors = {r["name"]: r for r in query(self.db, "SELECT name, minutes_cursor, events_cursor FROM nodes")}
        out = []
        default_token = getattr(self.fleet, "token_file", None)
        for spec in self.fleet.nodes:
            c = cursors.get(spec.name, {})
            out.append(Target(
                name=spec.name, url=spec.url, group=getattr(spec, "group", None),
                token=_read_token(getattr(spec, "token_file", None) or default_token, self._tokens),
                minutes_cursor=int(c.get("minutes_cursor") or 0), events_cursor=int(c.get("events_cursor") or 0),
            ))
        return out

    def run_cycle(self) -> list[NodePoll]:
        """Poll every node once and store the results; returns them."""
        from storage.ingest import ingest_polls

        with self._lock:
            t0 = time.monotonic()
            polls = asyncio.run(poll_all(self.targets(), concurrency=self.concurrency, timeout_s=self.timeout_s))
            try:
                ingest_polls(self.db, polls)
                self.last_error = None
            except Exception as exc:  # storage errors are reported, polling goes on
                self.last_error = str(exc)
                log.error("could not store poll results: %s", exc)
                raise
            finally:
                self.cycles += 1
                self.last_cycle_s = time.monotonic() - t0
            bad = [p for p in polls if not p.ok]
            log.info("cycle %d: %d nodes, %d unreachable, %.2f s", self.cycles, len(polls), len(bad),
                     self.last_cycle_s)
            for p in bad:
                log.info("node %s: %s", p.node, p.error)
        for listener in self.listeners:
            try:
                listener(polls)
            except Exception:
                log.exception("cycle listener failed")
        return polls

    def _job(self) -> None:
        try:
            self.run_cycle()
        except Exception:
            log.exception("poll cycle failed")

    def start(self) -> None:
        """Start the interval job in a background thread (first run immediately)."""
        from datetime import datetime

        self._scheduler = BackgroundScheduler(daemon=True)
        self._scheduler.add_job(self._job, "interval", seconds=self.interval_s, max_instances=1, coalesce=True,
                                next_run_time=datetime.now(), id="poll", misfire_grace_time=None)
        self._scheduler.start()

    def stop(self) -> None:
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=True)
            self._scheduler = None
