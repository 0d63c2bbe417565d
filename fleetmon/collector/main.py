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
import logging
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

from fleetmon.errors import KnownError

if TYPE_CHECKING:
    from fleetmon.collector.lock import WriterLock
    from fleetmon.collector.poller import Collector


def run_collect(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from fleetmon.collector.lock import WriterLock
    from fleetmon.collector.poller import Collector
    from fleetmon.fleet import load_fleet
    from storage.db import open_database

    if args.interval is not None and not 0.5 <= args.interval <= 86400:
        raise KnownError("--interval must be between 0.5 and 86400 seconds")
    fleet = load_fleet(args.fleet)
    # Handlers go in before the lock is taken: a SIGTERM at any moment after that is a clean stop.
    stop = threading.Event()

    def _stop(signum: int, frame: Any) -> None:
        stop.set()

    if not args.once:
        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
    lock = WriterLock(args.db)
    if not lock.acquire():
        raise KnownError(f"another collector writes {args.db} ({lock.holder()}); stop it first")
    try:
        db = open_database(args.db)
        collector = Collector(fleet, db, interval_s=args.interval)
        if args.once:
            polls = collector.collect_once()
            # Exit 0 when the cycle was stored, even if some nodes failed (unreachable, or their
            # answer refused by the client's checks or the store): those are recorded per node
            # (nodes.last_error, poll_log) and named below; 1 only when storing failed altogether.
            bad = [p for p in polls if not p.ok]
            refused = [p for p in bad if p.node in collector.refused]
            note = f", {len(refused)} refused by the store" if refused else ""
            print(f"polled {len(polls)} nodes: {len(polls) - len(bad)} ok, {len(bad) - len(refused)} unreachable"
                  f"{note}")
            for p in bad:
                print(f"  {p.node}: {p.error}", file=sys.stderr)
            return 0
        collector.start()
        print(f"fleetmon collect: polling {len(fleet.nodes)} nodes every {collector.interval_s:g} s into {args.db}",
              file=sys.stderr, flush=True)
        stop.wait()
        collector.stop()
        db.close()
        return 0
    finally:
        lock.release()


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
        note = f"collector: another process writes this database ({lock.holder()})"
        return None, None, note
    db = open_database(db_path)  # creates and migrates
    if not fleet_path:
        db.close()
        lock.release()
        return None, None, "collector: none (read-only view)"
    from fleetmon.collector.poller import Collector
    from fleetmon.fleet import load_fleet

    fleet = load_fleet(fleet_path)
    collector = Collector(fleet, db, interval_s=interval)
    return collector, lock, f"collector: this window, every {collector.interval_s:g} s"
