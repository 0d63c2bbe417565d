"""The `fleetmon` command line: one command, several subcommands.

Heavy imports (Qt, sqlite-utils, APScheduler, aiohttp) happen inside the
subcommand that needs them, so `fleetmon agent` runs on a node that has only
the standard library and nvidia-ml-py.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from fleetmon import __version__
from fleetmon.errors import KnownError

def _agent(args: argparse.Namespace) -> int:
    from fleetmon.agent.main import main
    return main(args)


def _collect(args: argparse.Namespace) -> int:
    from fleetmon.collector.main import run_collect
    return run_collect(args)


def _gui(args: argparse.Namespace) -> int:
    from ui.app import run_gui
    return run_gui(args)


def _demo(args: argparse.Namespace) -> int:
    from fleetmon.demo import run_demo
    return run_demo(args)


def _xid_parse(args: argparse.Namespace) -> int:
    from fleetmon import xid
    return xid.main_parse(args.file, getattr(args, "gpus", None))


def _fleet_import(args: argparse.Namespace) -> int:
    from fleetmon import fleetfile
    return fleetfile.main_import(args)


def _export(args: argparse.Namespace) -> int:
    from fleetmon import export
    return export.main(args)


def _fleet_check(args: argparse.Namespace) -> int:
    from fleetmon import fleetfile
    return fleetfile.main_check(args)


def _now(args: argparse.Namespace) -> float:
    """--now (Unix seconds or ISO 8601 UTC) or the current time."""
    import time

    text = getattr(args, "now", None)
    if text is None:
        return time.time()
    try:
        return float(text)
    except ValueError:
        pass
    import datetime as dt

    try:
        value = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise KnownError(f"--now {text!r}: expected Unix seconds or an ISO 8601 time") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return value.timestamp()


def _open_for_report(path: str, *, write: bool) -> tuple[Any, bool]:
    """(database, writable): read-write when ``write`` and possible, else read-only."""
    from pathlib import Path

    from fleetmon.errors import StorageError
    from storage.db import open_database

    if not Path(path).is_file():
        raise KnownError(f"database {path}: no such file")
    if write:
        try:
            return open_database(path), True
        except StorageError as exc:
            if "read-only" not in str(exc) and "locked" not in str(exc):
                raise
            print(f"fleetmon: {exc}; reporting without saving this report", file=sys.stderr)
    return open_database(path, readonly=True), False


def _load_fleet(args: argparse.Namespace) -> Any:
    if not getattr(args, "fleet", None):
        return None
    from fleetmon.fleetfile import load_fleet

    return load_fleet(args.fleet)


def _write_html(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise KnownError(f"--html {path}: cannot write it ({exc.strerror or exc})") from exc


def _short_lived() -> None:
    """No cyclic garbage collection for the rest of this process.

    A report builds millions of small acyclic objects; the collector would
    rescan them repeatedly (and once more, fully, when re-enabled) for nothing
    that reference counting does not free anyway. The process ends right after.
    """
    import gc

    gc.disable()


def _report(args: argparse.Namespace) -> int:
    from fleetmon import assess
    from fleetmon.health import render

    _short_lived()
    since_s = assess.parse_duration(args.since)
    now = _now(args)
    fleet = _load_fleet(args)
    db, writable = _open_for_report(args.db, write=True)
    try:
        run = assess.run_report(db, now, since_s, args.group, fleet, save=writable)
    finally:
        db.close()
    result = run.result
    if run.save_error:
        print(f"fleetmon report: this report was not saved, the next one compares with the last saved: "
              f"{run.save_error}", file=sys.stderr)
    if args.html:
        _write_html(args.html, render.report_html(result))
    sys.stdout.write(render.report_json(result) if args.json else render.report_text(result))
    return render.exit_status(result)


def _preflight(args: argparse.Namespace) -> int:
    from fleetmon import assess
    from fleetmon.health import render

    _short_lived()
    now = _now(args)
    fleet = _load_fleet(args)
    db, _ = _open_for_report(args.db, write=False)
    try:
        run = assess.run_preflight(db, now, args.nodes, args.days, fleet)
    finally:
        db.close()
    result = run.result
    if args.html:
        _write_html(args.html, render.preflight_html(result))
    sys.stdout.write(render.preflight_json(result) if args.json else render.preflight_text(result))
    return render.exit_status(result)


def _add_report_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, metavar="FILE", help="the fleetmon database (as written by `fleetmon collect`)")
    p.add_argument("--fleet", metavar="FLEET.toml",
                   help="apply this fleet file's group expectations, node groups and [thresholds] overrides")
    out = p.add_argument_group("output (text on stdout by default)")
    out.add_argument("--json", action="store_true",
                     help="print JSON instead of text (schema 1, stable fields: docs/reports.md)")
    out.add_argument("--html", metavar="FILE", help="also write a printable, self-contained HTML page to FILE")
    p.add_argument("--now", metavar="TIME", help="judge the fleet as of TIME (Unix seconds or ISO 8601 UTC; "
                                                 "default: now), e.g. to reproduce an earlier report")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fleetmon", description="GPU fleet inventory and health monitor.")
    parser.add_argument("--version", action="version", version=f"fleetmon {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    from fleetmon.agent.main import add_arguments as agent_args
    p = sub.add_parser("agent", help="sample this node's GPUs and serve them over HTTP",
                       description="Sample this node's GPUs through NVML and serve inventory, telemetry, "
                                   "events and Prometheus metrics over HTTP.")
    agent_args(p)
    p.set_defaults(func=_agent)

    from fleetmon.collector.args import add_collect_arguments, add_gui_arguments
    p = sub.add_parser("collect", help="poll the agents of a fleet into an SQLite database",
                       description="Poll every node of a fleet file on a schedule and record it in SQLite.")
    add_collect_arguments(p)
    p.set_defaults(func=_collect)

    p = sub.add_parser("gui", help="open the desktop app on a database",
                       description="Open the fleetmon desktop app on a database; with --fleet it also collects.")
    add_gui_arguments(p)
    p.set_defaults(func=_gui)

    p = sub.add_parser("demo", help="run the app on a built-in simulated fleet",
                       description="Start simulated agents on 127.0.0.1, a collector and the GUI on a fresh "
                                   "database in a temporary folder; closing the window stops everything.")
    p.add_argument("--nodes", type=int, default=8, help="number of simulated nodes (default 8)")
    p.add_argument("--interval", type=float, default=2.0, help="poll interval in seconds (default 2)")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder afterwards")
    p.add_argument("--backfill", type=int, default=120, metavar="MINUTES",
                   help="history each simulated agent holds at start (default 120; 0 = none)")
    p.add_argument("--no-gui", action="store_true", help="run agents and collector only (until Ctrl-C)")
    p.add_argument("--duration", type=float, default=0.0,
                   help="stop after this many seconds (0 = until the window closes)")
    p.set_defaults(func=_demo)

    p = sub.add_parser("xid", help="Xid tools: parse kernel logs",
                       description="Xid event tools.")
    xsub = p.add_subparsers(dest="xid_command", metavar="SUBCOMMAND")
    xp = xsub.add_parser("parse", help="print the Xid events of a kernel log as JSON lines",
                         description="Read a kernel log (dmesg, journalctl -k, /var/log/kern.log) and print "
                                     "one JSON object per Xid event.")
    from fleetmon import xid as xidmod
    xidmod.add_arguments(xp)
    xp.set_defaults(func=_xid_parse)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])

    p = sub.add_parser("fleet", help="fleet file tools: import, check",
                       description="Build and validate fleet files.")
    fsub = p.add_subparsers(dest="fleet_command", metavar="SUBCOMMAND")
    from fleetmon import fleetfile
    fp = fsub.add_parser("import", help="build a fleet file from a host list, Ansible inventory or scontrol output",
                         description="Build a fleet file from a plain host list, an Ansible INI inventory or "
                                     "the output of `scontrol show nodes`.")
    fleetfile.add_import_arguments(fp)
    fp.set_defaults(func=_fleet_import)
    fp = fsub.add_parser("check", help="validate a fleet file", description="Validate a fleet file.")
    fleetfile.add_check_arguments(fp)
    fp.set_defaults(func=_fleet_check)
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])

    exits = ("Exit status: 0 nothing critical, 2 something critical was found (so cron can alert), "
             "1 an error (bad arguments, unreadable database). See docs/reports.md.")
    p = sub.add_parser("report", help="daily inspection: per node pass/warn/fail and what changed",
                       description="The daily inspection of the fleet: per node pass / warn / fail, what changed "
                                   "since the previous report (new, resolved and worsening findings, inventory "
                                   "changes) and a fleet summary (GPUs by model, driver versions, unreachable "
                                   "nodes). Each report is stored so the next one can compare.",
                       epilog=exits)
    _add_report_common(p)
    p.add_argument("--since", default="24h", metavar="DURATION",
                   help="window to review, e.g. 90m, 24h, 7d or 3600s (default 24h)")
    p.add_argument("--group", metavar="G", help="report on one group of nodes only")
    p.set_defaults(func=_report)

    p = sub.add_parser("preflight", help="go/no-go per node before a big run, with a Slurm --exclude list",
                       description="The review before a big run: for each node go / no-go with the reasons, ECC "
                                   "and power over the window, and the no-go nodes as a Slurm hostlist "
                                   "expression ready for sbatch --exclude.",
                       epilog=exits)
    _add_report_common(p)
    p.add_argument("--nodes", required=True, metavar="HOSTLIST",
                   help="nodes to review, in Slurm hostlist syntax, e.g. gpu[01-16,20]")
    p.add_argument("--days", type=float, default=14.0, help="window to review in days (default 14)")
    p.set_defaults(func=_preflight)

    from fleetmon import export
    p = sub.add_parser("export", help="export the inventory sheet (CSV or JSON)",
                       description="Export the inventory sheet: one row per card ever seen, with its place, "
                                   "identity, VBIOS, driver, state and worst open finding.")
    export.add_arguments(p)
    p.set_defaults(func=_export)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        # report and preflight keep 2 for "something critical": their usage errors exit 1.
        words = sys.argv[1:] if argv is None else argv
        if exc.code == 2 and words and words[0] in ("report", "preflight"):
            raise SystemExit(1) from None
        raise
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except KnownError as exc:
        print(f"fleetmon {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
