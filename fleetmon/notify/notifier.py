"""The collector's notifier: events queued after each health pass, delivered off the poll loop.

The collector calls :meth:`Notifier.after_health` on its own thread once a
health pass has stored its findings. That call only writes the new events to
the outbox (:mod:`storage.notify`, one row per destination and event key, a
few inserts in one transaction) and wakes the destinations' senders through
bounded queues; it never talks to a service. A destination that hangs, answers
500 or refuses connections costs its own sender thread's time, not the
collector's.

Each destination has one sender thread with its own database connection:

* it sends the due rows of its destination, one message per event, or one
  folded message when more than :data:`~fleetmon.notify.message.FOLD_OVER`
  are due together (a storm of 50 lost GPUs: one message listing them);
* quiet hours hold everything but critical events until they end;
* at most ``max_per_hour`` messages an hour; what waits for a slot is folded
  into the next message, nothing is dropped;
* a failed send is retried after ``retry_s``, doubling each time up to
  :data:`MAX_RETRY_S`; after ``max_attempts`` the event is a dead letter
  (``state = 'dead'`` with its last error, logged, listed by
  ``fleetmon notify dead``).

Delivered events are marked ``sent`` in the outbox; the event keys make a
restart resend nothing delivered, and what was pending at a stop is sent by
the next run. The daily digest (the morning inspection, the report of
:func:`fleetmon.assess.run_report`) is built on a thread of its own.
"""

from __future__ import annotations

import datetime as dt
import logging
import queue
import threading
import time
import zoneinfo
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from fleetmon import i18n
from fleetmon.fleet.notify import NotifySpec
from fleetmon.i18n import gettext as _
from fleetmon.notify.message import FOLD_OVER, Event, compose, finding_event, stale_event, transitions_of
from fleetmon.notify.send import DeliveryError, Destination, destinations
from fleetmon.vocab import Severity

__all__ = ["MAX_ATTEMPTS", "MAX_RETRY_S", "RETRY_S", "Notifier", "accepts", "in_quiet_hours"]

log = logging.getLogger("fleetmon.notify")

RETRY_S = 30.0
"""Wait before the first retry of a failed send; doubled each time."""
MAX_RETRY_S = 1800.0
"""Longest wait between two tries."""
MAX_ATTEMPTS = 8
"""Tries of one event before it becomes a dead letter (about two hours at the defaults)."""
SCAN_S = 30.0
"""A sender looks at its outbox at least this often (a retry or a quiet spell that ended)."""
WAKE_QUEUE = 16
"""Each sender's wake-up queue holds at most this many signals (the outbox holds the events)."""
DIGEST_TEXT_LINES = 80


def _local(now: float, spec: NotifySpec) -> dt.datetime:
    tz = zoneinfo.ZoneInfo(spec.timezone) if spec.timezone else None
    moment = dt.datetime.fromtimestamp(now, tz)
    return moment if tz else moment.astimezone()


def in_quiet_hours(spec: NotifySpec, now: float) -> float:
    """Seconds until ``spec``'s quiet hours end, 0 when it is not quiet at ``now``."""
    if spec.quiet is None:
        return 0.0
    local = _local(now, spec)
    minute = local.hour * 60 + local.minute
    start, end = spec.quiet
    quiet = start <= minute < end if start < end else (minute >= start or minute < end)
    if not quiet:
        return 0.0
    return float(((end - minute) % 1440) * 60 - local.second) or 60.0


def accepts(spec: NotifySpec, event: Event) -> bool:
    """Whether ``spec`` wants ``event``: at or above its severity floor, of one of its groups (if any)."""
    if event.transition == "digest":
        return spec.digest
    try:
        if Severity.parse(event.severity).rank < spec.min_severity.rank:
            return False
    except ValueError:
        return False
    return not spec.groups or event.group in spec.groups


class Notifier:
    """The notifications of one collector (see the module doc).

    Args:
        fleet: the fleet file (:class:`fleetmon.fleet.Fleet`): its ``notify`` destinations, node groups and
            staleness limit.
        db_path: the collector's database file (each sender opens its own connection).
        retry_s, max_attempts: the retry schedule.
        clock: the wall clock (tests move it).
    """

    def __init__(self, fleet: Any, db_path: str, *, retry_s: float = RETRY_S, max_attempts: int = MAX_ATTEMPTS,
                 scan_s: float = SCAN_S, clock: Any = time.time) -> None:
        from fleetmon.health.thresholds import Thresholds

        self.fleet = fleet
        self.db_path = db_path
        self.retry_s = float(retry_s)
        self.max_attempts = int(max_attempts)
        self.scan_s = float(scan_s)
        self.clock = clock
        self.groups: dict[str, str | None] = {n.name: n.group for n in fleet.nodes}
        try:
            self.stale_after_s = Thresholds.from_overrides(fleet.thresholds or {}).stale_after_minutes * 60.0
        except ValueError:
            self.stale_after_s = Thresholds().stale_after_minutes * 60.0
        ready, errors = destinations(fleet.notify)
        self.errors = errors
        """One line per destination that cannot send (its file, its URL): it is left out, collection goes on."""
        for line in errors:
            log.error("%s (this destination is left out; collection goes on)", line)
        self.senders: dict[str, _Sender] = {d.name: _Sender(self, d) for d in ready}
        self._stopping = threading.Event()
        self._started = False
        self._digest: threading.Thread | None = None

    # -- the collector's side (its thread) -------------------------------------------

    def start(self) -> None:
        """Start the sender threads (again after :meth:`stop` is not supported: make a new Notifier)."""
        if self._started:
            return
        self._started = True
        for sender in self.senders.values():
            sender.start()

    def after_health(self, db: Any, changes: Any, now: float) -> int:
        """Queue the events of one stored health pass; returns how many outbox rows were added. Never raises
        (a failure is logged: collection goes on); the findings themselves are in the store either way."""
        if not self.senders:
            return 0
        try:
            return self._queue(db, changes, now)
        except Exception as exc:
            log.error("notifications: could not queue this pass's events (collection goes on): %s", exc)
            return 0

    def _queue(self, db: Any, changes: Any, now: float) -> int:
        from storage import notify as outbox
        from storage.queries import nodes

        pairs = list(transitions_of(changes))
        index = outbox.gpu_indexes(db, [f.gpu_uuid for f, _t in pairs if f.gpu_uuid]) if pairs else {}
        events = [finding_event(f, how, self.db_path, group=self.groups.get(f.node or ""),
                                gpu_index=index.get(f.gpu_uuid or ""))
                  for f, how in pairs]
        from fleetmon.health.verdict import reach_of

        for row in nodes(db):
            if row.name not in self.groups or row.last_ok is None:
                continue
            if reach_of(last_ok=row.last_ok, last_attempt=row.last_attempt, now=now,
                        stale_after_s=self.stale_after_s) == "stale":
                events.append(stale_event(row.name, float(row.last_ok), now, self.db_path,
                                          group=self.groups.get(row.name)))
        added = self.enqueue(db, events, now)
        self._digest_if_due(db, now)
        return added

    def enqueue(self, db: Any, events: Iterable[Event], now: float, *, to: Sequence[str] | None = None) -> int:
        """Put ``events`` in the outbox of each destination that accepts them (``to``: only these) and wake
        those senders; an event already there for a destination is not added again."""
        from storage import notify as outbox

        items = [outbox.OutboxItem(name, e.key, e.severity, e.payload())
                 for e in events for name, sender in self.senders.items()
                 if (to is None or name in to) and accepts(sender.spec, e)]
        woke = outbox.enqueue(db, items, now, due_at=float(self.clock()))  # due by the senders' clock
        for name in woke:
            self.senders[name].wake()
        return sum(1 for _item in items) if woke else 0

    def flush(self, timeout_s: float) -> bool:
        """Wait until every sender has tried what is due now (``collect --once`` before it exits); False when
        ``timeout_s`` ran out first. What is left pending is sent by the next run."""
        deadline = time.monotonic() + timeout_s
        if self._digest is not None:
            self._digest.join(max(0.0, deadline - time.monotonic()))
        for sender in self.senders.values():
            sender.settled.clear()
            sender.wake()
        return all(s.settled.wait(max(0.0, deadline - time.monotonic())) for s in self.senders.values())

    def stop(self, wait_s: float = 5.0) -> bool:
        """Stop the senders, waiting at most ``wait_s`` in all; False when one is still sending (a hanging
        destination: its thread is a daemon and left to it; its event stays pending in the outbox)."""
        self._stopping.set()
        for sender in self.senders.values():
            sender.wake()
        deadline = time.monotonic() + wait_s
        ok = True
        for sender in self.senders.values():
            if sender.is_alive():
                sender.join(max(0.0, deadline - time.monotonic()))
                ok = ok and not sender.is_alive()
        return ok

    def busy(self) -> bool:
        """Whether a sender thread still runs (after :meth:`stop`: one hanging in a send)."""
        return any(s.is_alive() for s in self.senders.values())

    # -- the daily digest -------------------------------------------------------------

    def _digest_if_due(self, db: Any, now: float) -> None:
        """Start the digest thread when a destination's digest time of today has come and today's digest
        is not in its outbox yet."""
        from storage import notify as outbox

        if self._digest is not None and self._digest.is_alive():
            return
        wanted: list[tuple[str, str]] = []
        for name, sender in self.senders.items():
            spec = sender.spec
            if not spec.digest:
                continue
            local = _local(now, spec)
            if local.hour * 60 + local.minute < spec.digest_at:
                continue
            key = f"digest:{local.date().isoformat()}"
            if not outbox.outbox_has(db, name, key):
                wanted.append((name, key))
        if wanted:
            self._digest = threading.Thread(target=self._make_digest, args=(wanted, now), name="notify-digest",
                                            daemon=True)
            self._digest.start()

    def _make_digest(self, wanted: list[tuple[str, str]], now: float) -> None:
        from fleetmon import assess
        from fleetmon.health.render import report_text
        from storage.db import open_database

        try:
            reader = open_database(self.db_path, readonly=True)
            texts: dict[tuple[str | None, str | None], tuple[str, str]] = {}
            try:
                for name, _key in wanted:
                    spec = self.senders[name].spec
                    group = spec.groups[0] if len(spec.groups) == 1 else None
                    if (group, spec.lang) not in texts:
                        window = assess.inspection_window(reader, now, group)
                        run = assess.run_report(reader, now, window, group, self.fleet, save=False)
                        with i18n.speaking(spec.lang):  # the destination's language, this thread only
                            texts[group, spec.lang] = digest_text(run.result, report_text(run.result), self.db_path,
                                                                  group)
            finally:
                reader.close()
            writer = open_database(self.db_path)
            try:
                for name, key in wanted:
                    spec = self.senders[name].spec
                    title, body = texts[spec.groups[0] if len(spec.groups) == 1 else None, spec.lang]
                    event = Event(key=key, transition="digest", kind="digest", severity="info", node=None, gpu=None,
                                  evidence="", action="", command="", at=now, title=title, body=body)
                    self.enqueue(writer, [event], now, to=[name])
            finally:
                writer.close()
        except Exception as exc:
            log.error("notifications: the daily digest could not be made (tried again after the next health "
                      "pass): %s", exc)


def digest_text(result: Any, text: str, db_path: str, group: str | None) -> tuple[str, str]:
    """(title, body) of the daily digest: the inspection's status and counts, then the report's text."""
    import shlex

    lines = text.splitlines()
    # the report's status line, less its "Status: " as the report's language says it
    prefix = _("Status: {status} — {counts} ({nodes}, {gpus})").split("{status}", 1)[0]
    status = lines[2].removeprefix(prefix) if len(lines) > 2 else str(getattr(result, "status", "?"))
    if group:
        title = _("[fleetmon] daily inspection (group {group}): {status}").format(group=group, status=status)
    else:
        title = _("[fleetmon] daily inspection: {status}").format(status=status)
    body = lines[:DIGEST_TEXT_LINES]
    if len(lines) > DIGEST_TEXT_LINES:
        body.append(_("… {count} more lines").format(count=len(lines) - DIGEST_TEXT_LINES))
    command = ["fleetmon", "report", "--db", db_path] + (["--group", group] if group else [])
    body.append(_("Open: {command}").format(command=" ".join(shlex.quote(p) for p in command)))
    return title, "\n".join(body)


class _Sender(threading.Thread):
    """One destination's delivery: its outbox rows, its quiet hours, rate limit and retries."""

    def __init__(self, owner: Notifier, destination: Destination) -> None:
        super().__init__(name=f"notify-{destination.name}", daemon=True)
        self.owner = owner
        self.destination = destination
        self.spec = destination.spec
        self.wakeups: queue.Queue[None] = queue.Queue(maxsize=WAKE_QUEUE)
        self.sent_at: deque[float] = deque()
        self.not_before = 0.0
        self.rate_held = False
        self.settled = threading.Event()
        self.last_error: str | None = None

    def wake(self) -> None:
        try:
            self.wakeups.put_nowait(None)
        except queue.Full:  # a wake-up is already waiting; the events are in the outbox
            pass

    def run(self) -> None:
        from storage.db import open_database

        try:
            db = open_database(self.owner.db_path)
        except Exception as exc:
            log.error("notify %s: cannot open the database %s: %s", self.name, self.owner.db_path, exc)
            return
        try:
            from storage import notify as outbox

            # What an earlier run left waiting for a retry is tried at once: the destination may be fixed.
            outbox.retry_now(db, self.spec.name, float(self.owner.clock()))
        except Exception as exc:
            log.error("notify %s: %s", self.spec.name, exc)
        try:
            while not self.owner._stopping.is_set():
                try:
                    self.wakeups.get(timeout=self._timeout(db))
                except queue.Empty:
                    pass
                while not self.owner._stopping.is_set():
                    try:
                        tried = self._pass(db)
                    except Exception as exc:  # a database error: logged, tried again at the next wake-up
                        log.error("notify %s: %s", self.spec.name, exc)
                        tried = False
                    if not tried:
                        self.settled.set()
                        break
        finally:
            db.close()

    def _timeout(self, db: Any) -> float:
        from storage import notify as outbox

        try:
            due = outbox.next_due(db, self.spec.name)
        except Exception:
            return self.owner.scan_s
        if due is None:
            return self.owner.scan_s
        return min(self.owner.scan_s, max(0.05, max(due, self.not_before) - float(self.owner.clock())))

    def _pass(self, db: Any) -> bool:
        """Send what is due; True when something was tried (the caller looks again at once)."""
        from storage import notify as outbox

        now = float(self.owner.clock())
        self.not_before = 0.0
        rows = outbox.due(db, self.spec.name, now)
        if not rows:
            return False
        quiet_for = in_quiet_hours(self.spec, now)
        if quiet_for:
            rows = [r for r in rows if r.severity == Severity.CRITICAL.value]
            if not rows:
                self.not_before = now + quiet_for
                return False
        mono = time.monotonic()
        while self.sent_at and mono - self.sent_at[0] >= 3600.0:
            self.sent_at.popleft()
        left = self.spec.max_per_hour - len(self.sent_at)
        if left <= 0:
            self.not_before = now + 3600.0 - (mono - self.sent_at[0])
            self.rate_held = True
            return False
        # One message per event, or one folded message: a storm, more than the rate limit leaves room
        # for, or what waited for a slot.
        fold = len(rows) > min(FOLD_OVER, left) or (self.rate_held and len(rows) > 1)
        self.rate_held = False
        batches = [list(rows)] if fold else [[r] for r in rows]
        for batch in batches:
            self._send(db, batch)
            if self.owner._stopping.is_set():
                break
        return True

    def _send(self, db: Any, rows: Sequence[Any]) -> None:
        from storage import notify as outbox

        events = [Event.from_payload(r.payload) for r in rows]
        title, body = compose(events, db=self.owner.db_path, lang=self.spec.lang)
        ids = [r.id for r in rows]
        try:
            self.destination.send(title, body)
        except DeliveryError as exc:
            now = self.owner.clock()
            self.last_error = str(exc)
            attempts = max(r.attempts for r in rows) + 1
            if attempts >= self.owner.max_attempts:
                outbox.record_attempt(db, ids, now, error=str(exc))
                log.error("%s; gave up after %d tries: %d event(s) moved to the dead letters "
                          "(`fleetmon notify dead`)", exc, attempts, len(rows))
            else:
                wait = min(MAX_RETRY_S, self.owner.retry_s * 2 ** (attempts - 1))
                outbox.record_attempt(db, ids, now, error=str(exc), retry_at=now + wait)
                log.warning("%s; try %d of %d, next in %g s", exc, attempts, self.owner.max_attempts, wait)
            return
        self.sent_at.append(time.monotonic())
        self.last_error = None
        outbox.record_attempt(db, ids, self.owner.clock())
        log.info("notify %s: sent %s", self.spec.name, title)
