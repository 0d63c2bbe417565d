"""`fleetmon collect`: poll a fleet into a database, headless.

Only one collector writes a database: a second one (or a GUI that would
collect) finds the writer lock taken and names its holder. ``--once`` polls
every node, fetches all the records the agents hold, writes and exits; without
it the collector runs until SIGTERM/SIGINT (packaging/fleetmon-collect.service
runs it as a systemd user service). A kill at any moment loses nothing that
the agents still hold: each cycle commits its records together with the
cursors, and the next run asks the agents for everything after them.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, TextIO

from fleetmon.errors import KnownError
from fleetmon.i18n import N_, Text, localized
from fleetmon.i18n import gettext as _
from fleetmon.stopping import stop_on_signals

if TYPE_CHECKING:
    from fleetmon.collector.lock import WriterLock
    from fleetmon.collector.poller import Collector


def run_collect(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from fleetmon.collector.lock import WriterLock
    from fleetmon.collector.poller import Collector, CycleStopped
    from fleetmon.fleet import load_fleet
    from storage.db import open_database

    if args.interval is not None and not 0.5 <= args.interval <= 86400:
        raise KnownError(Text(N_("--interval must be between 0.5 and 86400 seconds")))
    fleet = load_fleet(args.fleet)
    # Handlers go in before the lock is taken: a SIGTERM at any moment after that is a clean stop.
    stop = threading.Event()

    stop_on_signals(stop)
    lock = WriterLock(args.db)
    if not lock.acquire():
        raise KnownError(Text(N_("another collector writes {db} ({holder}); stop it first"), db=str(args.db),
                              holder=lock.holder()))
    try:
        db = open_database(args.db)
        collector = Collector(fleet, db, interval_s=args.interval)
        if args.once:
            # A signal cancels the cycle's polls (ssh process groups killed) instead of leaving them behind.
            threading.Thread(target=_stop_once, args=(stop, collector), name="collect-once-stop", daemon=True).start()
            try:
                polls = collector.collect_once()
            except CycleStopped:
                print("fleetmon collect: " + _("stopped by a signal; this cycle was not stored"), file=sys.stderr)
                return 1
            # Exit 0 when the cycle was stored, even if some nodes failed (unreachable, or their
            # answer refused by the client's checks or the store): those are recorded per node
            # (nodes.last_error, poll_log) and named below; 1 only when storing failed altogether.
            bad = [p for p in polls if not p.ok]
            refused = [p for p in bad if p.node in collector.refused]
            counts = {"polled": len(polls), "ok": len(polls) - len(bad), "unreachable": len(bad) - len(refused),
                      "refused": len(refused)}
            if refused:
                print(_("polled {polled} nodes: {ok} ok, {unreachable} unreachable, {refused} refused by the store")
                      .format(**counts))
            else:
                print(_("polled {polled} nodes: {ok} ok, {unreachable} unreachable").format(**counts))
            for p in bad:  # the reason in the reader's language (an i18n.Text; the store keeps its English)
                print(f"  {p.node}: {localized(p.error)}", file=sys.stderr)
            if collector.notifier is not None:
                collector.notifier.stop(wait_s=2.0)
                _leave_if_notify_hangs(collector, lock)
            return 0
        if getattr(args, "control", None) == "stdio":
            serve_control(collector, stop, sys.stdin, sys.stdout)
        collector.start()
        print("fleetmon collect: " + _("polling {count} nodes every {seconds} s into {db}").format(
            count=len(fleet.nodes), seconds=f"{collector.interval_s:g}", db=args.db), file=sys.stderr, flush=True)
        stop.wait()
        if not collector.stop():
            # A cycle past its polls did not end within the stop's bound (a store or a health pass
            # that does not return): leave without it. Its thread would hold the interpreter's exit,
            # so the process ends here; the database keeps what was committed, the agents the rest.
            print("fleetmon collect: " + _("a poll cycle did not stop in time; exiting without it"), file=sys.stderr,
                  flush=True)
            lock.release()
            logging.shutdown()
            sys.stdout.flush()
            os._exit(0)
        db.close()
        _leave_if_notify_hangs(collector, lock)
        return 0
    finally:
        lock.release()


def _leave_if_notify_hangs(collector: Collector, lock: WriterLock) -> None:
    """Exit now when a notification destination hangs in a send after the notifier's stop: its thread (and
    the Apprise pool thread under it) would hold the interpreter's exit until the service's timeout. What it
    was sending stays pending in the outbox; the next run sends it."""
    if collector.notifier is None or not collector.notifier.busy():
        return
    print("fleetmon collect: " + _("a notification destination did not answer in time; exiting without it"),
          file=sys.stderr, flush=True)
    lock.release()
    logging.shutdown()
    sys.stdout.flush()
    os._exit(0)


def _stop_once(stop: threading.Event, collector: Collector) -> None:
    """``--once``: on SIGTERM/SIGINT cancel the running cycle; a cycle that does not end within
    ``STOP_WAIT_S`` (a store or a health pass) is not waited for: the process ends."""
    from fleetmon.collector.poller import STOP_WAIT_S

    stop.wait()
    collector.stop(wait_s=0)
    time.sleep(STOP_WAIT_S)
    print("fleetmon collect: " + _("the cycle did not stop in time; exiting without it"), file=sys.stderr, flush=True)
    os._exit(1)


CONTROL_COMMANDS = ("poll", "pause", "resume", "stop")


def serve_control(collector: Collector, stop: threading.Event, commands: TextIO, events: TextIO) -> threading.Thread:
    """``--control stdio``: the collector driven by the process that started it (the desktop app).

    Each line read from ``commands`` is one of :data:`CONTROL_COMMANDS`; the
    end of input (the parent is gone, or closed the pipe) stops the collector
    like ``stop`` does, so a child never outlives its window. Every finished
    cycle and every command is reported as one JSON line on ``events``:
    ``{"event": "cycle", "polled": N, "unreachable": N, "at": T}``,
    ``{"event": "paused"}``, ``{"event": "resumed"}``, ``{"event": "error", "message": …}``
    for an unknown command. The first line, ``{"event": "ready", "interval": S, "nodes": N}``,
    is written before the first cycle starts.
    """
    out_lock = threading.Lock()

    def emit(**event: Any) -> None:
        line = json.dumps(event)
        with out_lock:
            try:
                events.write(line + "\n")
                events.flush()
            except (OSError, ValueError):  # the parent closed its end: the end of input stops us
                pass

    def on_cycle(polls: list[Any]) -> None:
        emit(event="cycle", polled=len(polls), unreachable=sum(1 for p in polls if not p.ok), at=time.time())

    def read() -> None:
        for raw in commands:
            command = raw.strip()
            if command == "poll":
                collector.poll_now()
            elif command == "pause":
                collector.pause()
                emit(event="paused")
            elif command == "resume":
                collector.resume()
                emit(event="resumed")
            elif command == "stop":
                break
            elif command:
                emit(event="error", message=f"unknown command {command[:80]!r}; known: {', '.join(CONTROL_COMMANDS)}")
        stop.set()

    collector.listeners.append(on_cycle)
    emit(event="ready", interval=collector.interval_s, nodes=len(collector.nodes))
    reader = threading.Thread(target=read, name="collector-control", daemon=True)
    reader.start()
    return reader


def prepare_database(db_path: str, fleet_path: str | None, interval: float | None
                     ) -> tuple[Collector | None, WriterLock | None, str]:
    """Create/migrate the database and, with a fleet, make a collector if nobody else writes.

    The GUI (`fleetmon gui --fleet`) collects in its own process this way; the
    collector is not started yet, so the caller can add listeners first.

    Returns (collector or None, writer lock or None, a note for the status bar).
    """
    from fleetmon.collector.lock import WriterLock
    from storage.db import open_database

    lock = WriterLock(db_path)
    if not lock.acquire():
        note = Text(N_("collector: another process writes this database ({holder})"), holder=lock.holder())
        return None, None, note
    db = open_database(db_path)  # creates and migrates
    if not fleet_path:
        db.close()
        lock.release()
        return None, None, Text(N_("collector: none (read-only view)"))
    from fleetmon.collector.poller import Collector
    from fleetmon.fleet import load_fleet

    fleet = load_fleet(fleet_path)
    collector = Collector(fleet, db, interval_s=interval)
    return collector, lock, Text(N_("collector: this window, every {seconds} s"), seconds=f"{collector.interval_s:g}")
