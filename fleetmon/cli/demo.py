"""`fleetmon demo`: simulated agents, a collector and the GUI on a throw-away database.

The agents and their fleet file come from ``fleetmon.demo``; the window from
``ui.demo``, imported only when it opens; ``--no-gui`` runs the collector here,
headless, until Ctrl-C or ``--duration``.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from fleetmon.errors import KnownError
from fleetmon.stopping import stop_on_signals
from fleetmon.i18n import N_, Text
from fleetmon.i18n import gettext as _

if TYPE_CHECKING:
    from fleetmon.demo import Demo


def run(args: argparse.Namespace) -> int:
    from fleetmon.cli.gui import CANNOT_SHOW, cannot_show_window
    from fleetmon.demo import start_demo, text_progress

    check_arguments(args)  # before anything starts: a bad value is one line, not a half-started demo
    if not args.no_gui and cannot_show_window("demo"):
        return CANNOT_SHOW  # before the agents and their temporary folder: nothing to leave behind
    history = args.history_days > 0
    db_path = Path(args.db).expanduser().resolve() if args.db else None
    with start_demo(args.nodes, interval_s=args.interval, backfill_minutes=args.backfill, keep=args.keep,
                    history=history, seed=args.seed, db_path=db_path,
                    vendors=not args.no_vendors) as demo:
        if history and (args.no_gui or db_path is not None and db_path.exists()):
            # headless (or nothing to generate): the terminal shows the progress
            print(_history(demo.db_path, args, text_progress(), demo.epoch), file=sys.stderr, flush=True)
        if args.no_gui:
            return _run_headless(demo, args)
        from ui.demo import run_demo

        generate = None
        if history and not demo.db_path.exists():
            def generate(progress: Callable[[int, int], None]) -> None:
                said = _history(demo.db_path, args, progress, demo.epoch)
                progress(1, 1)  # a Cancel during the last steps (rollups, ledger) stops here, before saying done
                print(said, file=sys.stderr, flush=True)
        # A cancelled history (Cancel, Ctrl-C) opens no window and leaves no database; the agents stop and
        # the temporary folder goes when this block ends.
        rc = run_demo(demo, interval_s=args.interval, max_seconds=args.duration, generate=generate)
        if db_path is not None and db_path.exists():
            print("fleetmon demo: " + _("kept the database {path}").format(path=db_path), file=sys.stderr)
        return rc


MAX_HISTORY_DAYS = 366
"""The longest generated history (a year; a month takes about a minute on 2 cores)."""


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse, in one line, a value the demo cannot run with (the agents' own bounds for --interval and
    --backfill, so no simulated agent exits after the others started)."""
    if not 1 <= args.nodes <= 64:
        raise KnownError(Text(N_("--nodes must be between 1 and 64")))
    if not 0.2 <= args.interval <= 3600:  # also refuses nan
        raise KnownError(Text(N_("--interval must be between 0.2 and 3600 seconds")))
    if not 0 <= args.backfill <= 10080:
        raise KnownError(Text(N_("--backfill must be between 0 and 10080 minutes (7 days)")))
    if not 0 <= args.history_days <= MAX_HISTORY_DAYS:
        raise KnownError(Text(N_("--history-days must be between 0 and {days}"), days=MAX_HISTORY_DAYS))
    if not 0 <= args.duration < float("inf"):
        raise KnownError(Text(N_("--duration must be 0 (until the window closes) or a number of seconds")))


def _history(db_path: Path, args: argparse.Namespace, progress: Callable[[int, int], None],
             epoch: float | None) -> str:
    """Generate the history (unless the database has a fleet); the line that says what was done."""
    from fleetmon.demo import prepare_history

    # The history ends at the demo's epoch: where its agents (started just before) took over.
    if prepare_history(db_path, nodes=args.nodes, days=args.history_days, seed=args.seed, progress=progress,
                       now=epoch):
        return "fleetmon demo: " + _("generated {days} days of history in {path}").format(
            days=f"{args.history_days:g}", path=db_path)
    return "fleetmon demo: " + _("reusing the existing database {path} (not regenerated)").format(path=db_path)


def _run_headless(demo: Demo, args: argparse.Namespace) -> int:
    from fleetmon.collector.poller import Collector
    from fleetmon.fleet import load_fleet
    from storage.db import open_database

    collector = Collector(load_fleet(demo.fleet_path), open_database(demo.db_path), interval_s=args.interval)
    stop = threading.Event()

    stop_on_signals(stop)
    collector.start()
    print("fleetmon demo: " + _("collecting into {path} (Ctrl-C stops)").format(path=demo.db_path), file=sys.stderr,
          flush=True)
    stop.wait(args.duration or None)
    collector.stop()
    collector.db.close()
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help=_("run the app on a built-in simulated fleet"),
                       description=_("Start simulated agents on 127.0.0.1, a collector and the GUI on a fresh "
                                   "database in a temporary folder (or --db FILE, kept) with a month of generated history of a "
                                   "24-node fleet, with an AMD, an Ascend and a Hygon box beside it; closing the window stops "
                                   "everything."))
    p.add_argument("--nodes", type=int, default=24,
                   help=_("number of simulated NVIDIA nodes (default 24); an AMD, an Ascend and a Hygon box join them"))
    p.add_argument("--no-vendors", action="store_true",
                   help=_("leave out the AMD, Ascend and Hygon boxes (NVIDIA nodes only)"))
    p.add_argument("--history-days", type=float, default=30, metavar="N",
                   help=_("days of generated history of the demo fleet before live polling starts "
                        "(default 30; 0 = none, the agents' --backfill instead)"))
    p.add_argument("--seed", type=int, default=None, help=_("seed of the generated fleet and history (fixed default)"))
    p.add_argument("--db", metavar="FILE",
                   help=_("keep the database in FILE (an existing one is reused, not regenerated); "
                        "default: a temporary database deleted on close"))
    p.add_argument("--interval", type=float, default=2.0, help=_("poll interval in seconds (default 2)"))
    p.add_argument("--keep", action="store_true", help=_("keep the temporary folder afterwards"))
    p.add_argument("--backfill", type=int, default=120, metavar="MINUTES",
                   help=_("history each simulated agent holds at start (default 120; 0 = none)"))
    p.add_argument("--no-gui", action="store_true", help=_("run agents and collector only (until Ctrl-C)"))
    p.add_argument("--duration", type=float, default=0.0,
                   help=_("stop after this many seconds (0 = until the window closes)"))
    p.set_defaults(func=run)
