"""The poll schedule: one APScheduler interval job over the whole fleet.

The job never overlaps itself (``max_instances=1``) and coalesces missed runs
(``coalesce=True``, no misfire grace limit): after a suspend, or a cycle
longer than the interval, it runs once, not once per missed interval. Each
run polls the nodes that are due concurrently (asyncio + aiohttp under the
fleet's concurrency cap, connect and read timeouts per request; see
:mod:`fleetmon.collector.client` for retries within a cycle), then writes the
batch in one transaction from this same thread, the database's only writer.
Listeners get each cycle's polls through a plain callback; nothing here knows
about Qt.

Backoff across cycles (per node):

* a failed poll is recorded (``nodes.last_error``, ``poll_log``: when and what
  error) every time the node is tried;
* after the first failure the node is tried again at the next cycle; after
  its k-th consecutive failure (k ≥ 2) it sits out min(2^(k-2), cap) cycles:
  1, 2, 4, 8 …, where the cap keeps the time sat out at or below
  ``MAX_BACKOFF_S`` (5 minutes): at a 30 s interval, 10 cycles, so such a node
  is tried every 5.5 minutes;
* an answer the store refuses (one node's data it cannot keep, see
  :func:`storage.ingest.ingest_polls`) counts as a failed poll of that node,
  with the store's reason; the other nodes' data of the cycle is stored;
* one successful poll returns it to every cycle;
* ``--once``, :meth:`Collector.poll_now` and the first cycle of a process try
  every node regardless.

Backfill: each cycle fetches at most ``record_budget`` minute records over the
fleet (memory stays bounded after a long outage). Nodes left with a backlog
are polled again straight away, cycle after cycle, until they are caught up
or the next regular run is due.

Sources (issue 12): a node whose URL is ``dcgm+http(s)://…`` (dcgm-exporter) or
``ssh://…`` (``nvidia-smi -q -x`` over OpenSSH) is polled by
:mod:`fleetmon.collector.sources` through the same client, concurrency cap and
timeouts; each poll is one reading, stored like an agent's (its inventory every
time, its samples as one-sample minutes), with no cursors and no backfill.

Inventory (``/v1/node``) is fetched on a node's first poll in this process,
every ``INVENTORY_EVERY_S`` seconds, and on the poll after anything that
suggests a change (an event, a GPU UUID not in the last inventory, a new agent
buffer, a failure); other polls ask only for the latest samples and the
records after the cursors.

After each stored cycle the collector maintains the database on its own
thread: :func:`storage.rollup.maintain` (hourly/daily rollups, raw-minute
retention of the fleet's ``raw_retention_days``) and, at most every
``health_every_s`` (default 60 s; at least ten times the last evaluation's
duration, so a large fleet is not judged back to back), the health engine
(:func:`fleetmon.assess.evaluate_and_store`), so the open findings in the
database are never more than a minute or two old and a fault that persists
is named within 10 minutes of its onset. Each evaluation reads only the
telemetry stored since the last one (:class:`storage.health_input.WindowCache`).
``--once`` evaluates once, after the backlogs are fetched. A failure of either
step is logged and polling goes on.

This is the only module that imports apscheduler.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, JobEvent
from apscheduler.schedulers.background import BackgroundScheduler

from fleetmon.collector.client import CYCLE_RECORD_BUDGET, Target, make_ssl_context, poll_all
from fleetmon.collector.limits import GPUS_SEEN_SPAN_S, MAX_GPUS_SEEN_PER_NODE
from fleetmon.errors import KnownError
from fleetmon.i18n import N_, Text, reason_of
from fleetmon.records import NodePoll
from fleetmon.sources import SourceError, Token, source_of, source_type
from fleetmon.sources.ssh_tools import AUTO
from fleetmon.text import printable
from fleetmon.tokens import TokenFileError, read_token_file

log = logging.getLogger("fleetmon.poll")

CycleListener = Callable[[list[NodePoll]], None]

MAX_BACKOFF_S = 300.0
"""Longest time a failing node sits out between tries (rounded to whole cycles)."""
INVENTORY_EVERY_S = 300.0
"""How often a node's inventory is fetched when nothing suggests a change."""
DEFAULT_INTERVAL_S = 30.0
HEALTH_EVERY_S = 60.0
"""Shortest time between two health evaluations of the collector."""
FREEZE_FROM_GPUS = 512
"""From this many cards in the health window on, the heap is frozen after each pass (see ``_settle_heap``)."""
THAW_EVERY_S = 3600.0
"""How often the frozen heap is thawed and collected."""
HEALTH_BACKOFF = 10.0
"""The next evaluation waits at least this many times the last one's duration."""
NOTIFY_FLUSH_S = 10.0
"""``--once`` waits this long at most for the notifications of its pass to be tried."""
STOP_WAIT_S = 5.0
"""Longest time :meth:`Collector.stop` waits for a running cycle to end after telling it to stop."""


class CycleStopped(Exception):
    """The collector was stopped while a cycle polled: its polls were cancelled and nothing of it was stored."""


@dataclass(slots=True)
class NodeState:
    """What the collector remembers about one node between cycles (in memory only)."""

    failures: int = 0
    skip: int = 0
    inventory_at: float | None = None
    inventory_due: bool = True
    uuids: frozenset[str] = frozenset()
    buffer_id: str | None = None
    last_error: str | None = None
    cursors: tuple[int, int] | None = None
    """Cursors set by a buffer reset, used until the database holds them too."""


def backoff_cycles(failures: int, interval_s: float, max_backoff_s: float = MAX_BACKOFF_S) -> int:
    """Cycles a node sits out after its ``failures``-th consecutive failure (see the module docstring)."""
    if failures < 2:
        return 0
    cap = max(1, int(max_backoff_s // max(interval_s, 1e-3)))
    return min(1 << min(failures - 2, 30), cap)


def _refused_poll(poll: NodePoll, reason: str) -> NodePoll:
    """The failed poll that the store recorded for an answer it refused (see storage.ingest)."""
    return NodePoll(node=poll.node, url=poll.url, ts=poll.ts, ok=False, group=poll.group, error=reason,
                    duration_ms=poll.duration_ms)


def _read_token(path: str) -> tuple[str | None, str | None]:
    """(token, None) or (None, one-line error): :func:`fleetmon.tokens.read_token_file`'s rules."""
    try:
        return read_token_file(path), None
    except TokenFileError as exc:
        return None, reason_of(exc)


class Collector:
    """Polls a fleet into a database on a schedule (or once).

    Args:
        fleet: a :class:`fleetmon.fleet.Fleet` (nodes, timeouts, TLS, tokens).
        db: an open read-write sqlite-utils Database; this collector is its writer.
        interval_s: poll interval; default the fleet's ``poll_interval_s``.
        on_cycle: called with each cycle's polls (from the polling thread).
        record_budget: minute records fetched per cycle over the fleet.
    """

    def __init__(self, fleet: Any, db: Any, *, interval_s: float | None = None,
                 on_cycle: CycleListener | None = None, record_budget: int = CYCLE_RECORD_BUDGET,
                 inventory_every_s: float = INVENTORY_EVERY_S, health_every_s: float = HEALTH_EVERY_S) -> None:
        self.fleet = fleet
        self.db = db
        self.interval_s = float(interval_s or getattr(fleet, "poll_interval_s", None) or DEFAULT_INTERVAL_S)
        self.timeout_s = float(getattr(fleet, "timeout_s", 5) or 5)
        self.concurrency = int(getattr(fleet, "concurrency", 64) or 64)
        self.record_budget = record_budget
        self.inventory_every_s = inventory_every_s
        self.listeners: list[CycleListener] = [on_cycle] if on_cycle else []
        self.nodes: dict[str, NodeState] = {spec.name: NodeState() for spec in fleet.nodes}
        self.backlog: set[str] = set()
        self.refused: set[str] = set()
        """Nodes whose answer the store refused in some cycle of this run (``collect --once`` names them)."""
        self._scheduler: BackgroundScheduler | None = None
        self._ssl: Any = None  # the https agents' ssl argument, loaded once per cycle
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._cycle: tuple[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None = None
        """The running cycle's event loop and polling task, for :meth:`stop` to cancel."""
        self._job_idle = threading.Event()
        self._job_idle.set()
        self.cycles = 0
        self.overruns = 0
        self.last_cycle_s: float | None = None
        self.last_poll_s: float | None = None
        self.last_requests = 0
        self.last_error: str | None = None
        self.raw_days = float(getattr(fleet, "raw_retention_days", None) or 30)
        self.health_every_s = float(health_every_s)
        # Monotonic time of the next evaluation: the schedule's first run (and --once)
        # evaluate once caught up; plain run_cycle() calls wait one period first.
        self.health_due = time.monotonic() + self.health_every_s
        self.last_health_s: float | None = None
        self.last_health: dict[str, Any] | None = None
        self.last_maintain: dict[str, Any] | None = None
        self._defer_health = False
        self._window: Any = None  # storage.health_input.WindowCache: what the last health pass read
        self._drain_thread: threading.Thread | None = None  # the automatic Slurm drain after a health pass
        self.freeze_from_gpus = FREEZE_FROM_GPUS
        self._frozen_at: float | None = None  # monotonic time of the first freeze since the last thaw
        self.thaws = 0
        self.notifier: Any = None
        """The ``[[notify]]`` destinations' :class:`fleetmon.notify.Notifier` (None without any): fed after
        each health pass, delivering on threads of its own."""
        if getattr(fleet, "notify", ()) and db is not None:
            from fleetmon.notify import Notifier
            from storage.notify import database_file

            path = database_file(db)
            if path in ("", ":memory:", "?"):
                log.error("notifications need a database file (the senders open their own connections); "
                          "this collector's is in memory: none are sent")
            else:
                self.notifier = Notifier(fleet, path)

    # -- one cycle --------------------------------------------------------------

    def targets(self, *, force: bool = False, only: set[str] | None = None) -> list[Target]:
        """The nodes due this cycle, with tokens, cursors and what to fetch.

        Nodes in backoff are left out (unless ``force``); ``only`` restricts
        the cycle to those names (catch-up cycles).
        """
        from storage.queries import nodes as stored_nodes

        stored = {r.name: r for r in stored_nodes(self.db)}
        tokens: dict[str, tuple[str | None, str | None]] = {}
        ssl_error: str | None = None
        now = time.monotonic()
        out = []
        for spec in self.fleet.nodes:
            state = self.nodes.setdefault(spec.name, NodeState())
            if only is not None and spec.name not in only:
                continue
            if not force and only is None and state.skip > 0:
                state.skip -= 1
                continue
            error = None
            token = None
            # The fleet-wide token is the agents' secret: a dcgm-exporter gets only a token its node names,
            # an ssh node none (the source registry's Token says which).
            policy = _token_policy(spec.url)
            path = (self._token_file(spec) if policy is Token.FLEET
                    else getattr(spec, "token_file", None) if policy is Token.OWN else None)
            if path:
                if path not in tokens:
                    tokens[path] = _read_token(path)
                token, error = tokens[path]
            https = spec.url.startswith(("https:", "dcgm+https:"))
            if error is None and https and ssl_error is None and self._ssl is None:
                ssl_error = self._load_ssl()
            if error is None and https and ssl_error:
                error = ssl_error
            row = stored.get(spec.name)
            m_cursor, e_cursor = (row.minutes_cursor, row.events_cursor) if row is not None else (0, 0)
            if state.cursors is not None:
                if state.cursors == (m_cursor, e_cursor):
                    state.cursors = None  # storage holds the reset cursors now
                else:
                    m_cursor, e_cursor = state.cursors
            buffer_id = (row.buffer_id if row is not None else None) or state.buffer_id
            inventory = (state.inventory_due or state.inventory_at is None
                         or now - state.inventory_at >= self.inventory_every_s)
            out.append(Target(name=spec.name, url=spec.url, group=getattr(spec, "group", None), token=token,
                              minutes_cursor=m_cursor, events_cursor=e_cursor, buffer_id=buffer_id,
                              inventory=inventory, error=error,
                              ssh_config=getattr(self.fleet, "ssh_config", None),
                              timeout_s=getattr(spec, "timeout_s", None),
                              tool=getattr(spec, "tool", None) or AUTO))
        return out

    def _token_file(self, spec: Any) -> str | None:
        token_file_for = getattr(self.fleet, "token_file_for", None)
        if token_file_for is not None:
            return token_file_for(spec)  # type: ignore[no-any-return]
        return getattr(spec, "token_file", None) or getattr(self.fleet, "token_file", None)

    def _load_ssl(self) -> str | None:
        ca = getattr(self.fleet, "tls_ca", None)
        try:
            self._ssl = make_ssl_context(ca, bool(getattr(self.fleet, "tls_verify", True)))
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            self._ssl = None
            return Text(N_("TLS CA file {path}: cannot load it ({reason})"), path=str(ca),
                        reason=getattr(exc, "strerror", None) or str(exc))
        return None

    def run_cycle(self, *, force: bool = False, only: set[str] | None = None) -> list[NodePoll]:
        """Poll the due nodes once and store the results in one transaction; returns the polls.

        Raises:
            StorageError: the batch could not be written (nothing of it is kept;
                the cursors did not move, so the next cycle fetches it again).
        """
        from storage.ingest import GpuCap, ingest_polls

        with self._lock:
            t0 = time.monotonic()
            self._ssl = None  # reload the CA bundle once per cycle
            targets = self.targets(force=force, only=only)
            backlog: set[str] = set()
            stats: dict[str, int] = {}
            polls = self._poll(targets, backlog, stats)
            t_poll = self.last_poll_s = time.monotonic() - t0
            self.last_requests = stats.get("requests", 0)
            refused: dict[str, str] = {}
            try:
                ingest_polls(self.db, polls, refused=refused,
                             gpu_cap=GpuCap(MAX_GPUS_SEEN_PER_NODE, GPUS_SEEN_SPAN_S))
                self.last_error = None
            except Exception as exc:  # storage errors are reported; polling goes on next cycle
                self.last_error = str(exc)
                log.error("could not store poll results: %s", exc)
                raise
            finally:
                self.cycles += 1
                self.last_cycle_s = time.monotonic() - t0
            if refused:
                # The store kept none of these answers (recorded as failed polls with the reason):
                # from here on they are failed polls, so backoff, logging and cursors treat them so.
                polls = [_refused_poll(p, refused[p.node]) if p.node in refused else p for p in polls]
                self.refused |= refused.keys()
            self._remember(targets, polls, backlog, only)
            self.maintain()
            failed = sum(1 for p in polls if not p.ok)
            log.info("cycle %d: %d nodes polled, %d failed, %d in backoff, %d minutes, %d events, "
                     "%.2f s (poll %.2f s)", self.cycles, len(polls), failed,
                     sum(1 for s in self.nodes.values() if s.skip > 0),
                     sum(len(p.minutes) for p in polls), sum(len(p.events) for p in polls),
                     self.last_cycle_s, t_poll)
        for listener in self.listeners:
            try:
                listener(polls)
            except Exception:
                log.exception("cycle listener failed")
        return polls

    def _poll(self, targets: list[Target], backlog: set[str], stats: dict[str, int]) -> list[NodePoll]:
        """The cycle's polls, on an event loop of this call; :meth:`stop` cancels them.

        Raises:
            CycleStopped: the collector is stopping (the polls were cancelled: an ssh command is
                killed with its process group, an HTTP request dropped; the agents keep their records).
        """
        async def cycle() -> list[NodePoll]:
            task = asyncio.current_task()
            assert task is not None
            self._cycle = (asyncio.get_running_loop(), task)
            try:
                if self._stopping.is_set():  # stop() came before the cycle could be cancelled
                    raise asyncio.CancelledError
                return await poll_all(targets, concurrency=self.concurrency, timeout_s=self.timeout_s,
                                      ssl_ctx=self._ssl, record_budget=self.record_budget, backlog=backlog,
                                      stats=stats)
            finally:
                self._cycle = None

        try:
            return asyncio.run(cycle())
        except asyncio.CancelledError:
            raise CycleStopped("the collector is stopping: this cycle's polls were cancelled, none stored") from None

    def _remember(self, targets: list[Target], polls: list[NodePoll], backlog: set[str],
                  only: set[str] | None) -> None:
        """Update backoff, inventory and buffer bookkeeping after a stored cycle."""
        by_name = {t.name: t for t in targets}
        now = time.monotonic()
        if only is not None:
            self.backlog -= only
        self.backlog |= backlog
        for poll in polls:
            state = self.nodes.setdefault(poll.node, NodeState())
            target = by_name[poll.node]
            if not poll.ok:
                state.failures += 1
                state.skip = backoff_cycles(state.failures, self.interval_s)
                state.inventory_due = True
                self.backlog.discard(poll.node)
                if poll.error != state.last_error:
                    log.warning("node %s: %s", poll.node, printable(poll.error or ""))
                else:
                    log.debug("node %s: %s (failure %d, next try in %d cycles)", poll.node, printable(poll.error or ""),
                              state.failures, state.skip + 1)
                state.last_error = poll.error
                continue
            if state.failures:
                log.info("node %s answers again after %d failed polls", poll.node, state.failures)
            state.failures = state.skip = 0
            state.last_error = None
            if poll.info is not None:
                state.inventory_at = now
                state.inventory_due = False
                state.uuids = frozenset(g.uuid for g in poll.gpus)
            if poll.events or any(s.uuid not in state.uuids for s in poll.latest):
                state.inventory_due = True
            if poll.gap:
                log.warning("node %s: the agent had pruned records this collector never received", poll.node)
            reset = ((poll.minutes_cursor or 0) < target.minutes_cursor
                     or (poll.events_cursor or 0) < target.events_cursor)
            if reset or (poll.buffer_id and target.buffer_id and poll.buffer_id != target.buffer_id):
                log.warning("node %s: the agent's record buffer is new (%s → %s); its records are fetched "
                            "from the start", poll.node, target.buffer_id, poll.buffer_id)
                state.inventory_due = True
            if reset:
                state.cursors = (poll.minutes_cursor or 0, poll.events_cursor or 0)
            elif state.cursors is not None:
                state.cursors = (max(state.cursors[0], poll.minutes_cursor or 0),
                                 max(state.cursors[1], poll.events_cursor or 0))
            if poll.buffer_id:
                state.buffer_id = poll.buffer_id

    def maintain(self, *, force_health: bool = False) -> None:
        """Roll up, prune and (when due, or with ``force_health``) evaluate health; never raises.

        Runs on the thread that stores the cycles (the database's only writer).
        """
        from storage.rollup import maintain

        now = time.time()
        try:
            self.last_maintain = maintain(self.db, now, self.raw_days)
        except Exception as exc:
            log.error("rollup/retention failed (polling goes on): %s", exc)
        if self._defer_health and not force_health:
            return
        if not force_health and time.monotonic() < self.health_due:
            return
        from fleetmon.assess import evaluate_and_store
        from storage.health_input import WindowCache

        if self._window is None:
            self._window = WindowCache()
        t0 = time.monotonic()
        try:
            self.last_health = evaluate_and_store(self.db, now, fleet=self.fleet, cache=self._window)
            log.info("health: %d open findings (%d new, %d resolved) in %.2f s", self.last_health["open"],
                     len(self.last_health["new"]), len(self.last_health["resolved"]), time.monotonic() - t0)
            self._auto_drain(now)
            if self.notifier is not None:  # only queues: the senders deliver on their own threads
                self.notifier.after_health(self.db, self.last_health.get("changes"), now)
        except Exception as exc:
            log.error("health evaluation failed (polling goes on): %s", exc,
                      exc_info=not isinstance(exc, KnownError))
        finally:
            self.last_health_s = time.monotonic() - t0
            self.health_due = time.monotonic() + max(self.health_every_s, HEALTH_BACKOFF * self.last_health_s)
            self._settle_heap()

    def _auto_drain(self, now: float) -> None:
        """After a health pass: the automatic Slurm drain (``[slurm] auto_drain``, off by default), on a thread
        of its own with its own database connection, so a slow or dead slurmctld never holds the store up;
        one at a time (a pass still running is not doubled)."""
        settings = getattr(self.fleet, "slurm", None)
        if not getattr(settings, "auto_drain", ()):
            return
        if self._drain_thread is not None and self._drain_thread.is_alive():
            return
        from storage.slurm_actions import reopen

        try:
            db = reopen(self.db)  # here, on the writer's thread: the writer connection is not shared
        except Exception as exc:
            log.error("auto-drain: cannot open the database again: %s", exc)
            return

        def drain() -> None:
            from fleetmon.slurm.actions import run_auto_drain

            try:
                try:
                    plan = run_auto_drain(db, self.fleet, now)
                finally:
                    db.close()
                for line in plan.lines() if plan.drain or plan.error else ():
                    log.warning("%s", line)
            except Exception as exc:
                log.error("auto-drain failed (polling goes on): %s", exc, exc_info=not isinstance(exc, KnownError))

        self._drain_thread = threading.Thread(target=drain, name="fleetmon-auto-drain", daemon=True)
        self._drain_thread.start()

    def _settle_heap(self) -> None:
        """Keep the cyclic garbage collector off the window the health pass keeps between passes.

        At 1,000 nodes the window cache holds hundreds of MB of plain lists (no reference
        cycles) for the whole run, and every full collection walked all of them: 95 full
        collections, 44 s of an hour's collector run (benchmarks/bench_prometheus.py). After a
        pass that holds ``FREEZE_FROM_GPUS`` cards or more, what survives moves to the permanent
        generation (``gc.freeze``: freed by reference counting as before, never walked); once an
        hour it is thawed and collected, so cyclic garbage frozen meanwhile is freed.
        """
        held = getattr(self._window, "gpus_held", 0)
        if held < self.freeze_from_gpus:
            if self._frozen_at is not None:  # the fleet shrank: back to the plain collector
                gc.unfreeze()
                self._frozen_at = None
            return
        if self._frozen_at is not None and time.monotonic() - self._frozen_at >= THAW_EVERY_S:
            gc.unfreeze()
            gc.collect()
            self.thaws += 1
            self._frozen_at = None
        if self._frozen_at is None:
            self._frozen_at = time.monotonic()
        gc.freeze()

    def collect_once(self) -> list[NodePoll]:
        """Poll every node (backoff ignored), keep fetching backlogs until caught up, then judge health.

        Returns the first cycle's polls.
        """
        self._defer_health = True
        if self.notifier is not None:
            self.notifier.start()
        try:
            polls = self.run_cycle(force=True)
            rounds = 0
            while self.backlog and not self._stopping.is_set() and rounds < 10_000:
                self.run_cycle(only=set(self.backlog))
                rounds += 1
        finally:
            self._defer_health = False
        if not self._stopping.is_set():  # a stop during the catch-up: no health pass on the way out
            self.maintain(force_health=True)
            if self.notifier is not None and not self.notifier.flush(NOTIFY_FLUSH_S):
                log.warning("notifications: not all sent within %g s; the rest stays queued for the next run",
                            NOTIFY_FLUSH_S)
        return polls

    # -- the schedule -----------------------------------------------------------

    def _job(self) -> None:
        self._job_idle.clear()
        try:
            if not self._stopping.is_set():  # a run the scheduler handed over as stop() came
                self._run_job()
        finally:
            self._job_idle.set()

    def _run_job(self) -> None:
        started = time.monotonic()
        first = self.cycles == 0
        self._defer_health = first  # the first run judges health once, after catching up
        try:
            self.run_cycle(force=first)
            # Catch up on backlogs until the next regular run is due.
            while (self.backlog and not self._stopping.is_set()
                   and time.monotonic() - started < 0.8 * self.interval_s):
                self.run_cycle(only=set(self.backlog))
        except CycleStopped as exc:
            log.info("%s", exc)
        except Exception:
            log.exception("poll cycle failed")
        finally:
            self._defer_health = False
        if first and self.db is not None and not self._stopping.is_set():
            self.maintain(force_health=True)

    def _on_max_instances(self, event: JobEvent) -> None:
        self.overruns += 1
        log.info("a poll cycle is still running at the next interval; this run is skipped (coalesced)")

    def start(self) -> None:
        """Start the interval job in a background thread (first run immediately)."""
        self._stopping.clear()
        self._scheduler = BackgroundScheduler(daemon=True)
        self._scheduler.add_listener(self._on_max_instances, EVENT_JOB_MAX_INSTANCES)
        self._scheduler.add_job(self._job, "interval", seconds=self.interval_s, max_instances=1, coalesce=True,
                                next_run_time=datetime.now(), id="poll", misfire_grace_time=None)
        self._scheduler.start()
        if self.notifier is not None:
            self.notifier.start()

    def poll_now(self) -> None:
        """Run a cycle as soon as possible (skipped if one is running: its result is as fresh)."""
        if self._scheduler is not None:
            self._scheduler.modify_job("poll", next_run_time=datetime.now())

    def pause(self) -> None:
        """Stop starting cycles until :meth:`resume` (a running cycle finishes)."""
        if self._scheduler is not None:
            self._scheduler.pause()

    def resume(self) -> None:
        """Start cycles again; the runs missed while paused coalesce into one."""
        if self._scheduler is not None:
            self._scheduler.resume()

    def stop(self, wait_s: float = STOP_WAIT_S) -> bool:
        """Stop the schedule; a running cycle is told to stop and waited for at most ``wait_s``.

        The cycle's polls are cancelled (an ssh command is killed with its process
        group) and nothing of that cycle is stored: the agents keep their records,
        the next run fetches them. A cycle past its polls (storing, the health pass)
        finishes them. Until :meth:`start`, a cycle run by hand ends in
        :class:`CycleStopped`.

        Returns:
            True when no cycle runs any more; False when one is still running after
            ``wait_s`` (its thread is left to it: ``fleetmon collect`` then exits
            without waiting for it).
        """
        self._stopping.set()
        if self.notifier is not None:
            self.notifier.stop(wait_s=min(wait_s, 2.0))
        cycle = self._cycle
        if cycle is not None:
            loop, task = cycle
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # that cycle's loop closed meanwhile: it is over
                pass
        if self._scheduler is not None:
            # Not shutdown(wait=True): that waits for the running job however long it takes.
            self._scheduler.shutdown(wait=False)
            self._scheduler = None
        if self._job_idle.wait(wait_s):
            return True
        log.warning("a poll cycle was still running %g s after the stop; not waiting for it", wait_s)
        return False


def _token_policy(url: str) -> Token:
    """Which bearer token a node's source gets (the registry's; a URL no source takes: the agent's, as
    :func:`fleetmon.sources.node_source` reads it; its poll fails before any request)."""
    try:
        return source_type(source_of(url).kind).token
    except SourceError:
        return Token.FLEET
