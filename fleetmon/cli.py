"""The `fleetmon` command line: one command, several subcommands.

Heavy imports (Qt, sqlite-utils, APScheduler, aiohttp) happen inside the
subcommand that needs them, so `fleetmon agent` runs on a node that has only
the standard library and nvidia-ml-py.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from fleetmon import __version__
from fleetmon.errors import KnownError

NOT_YET = ("report", "preflight", "export")


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


def _fleet_check(args: argparse.Namespace) -> int:
    from fleetmon import fleetfile
    return fleetfile.main_check(args)


def _not_yet(name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        print(f"fleetmon {name}: not yet available in fleetmon {__version__}", file=sys.stderr)
        return 2
    return run


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

    for name, text in (("report", "daily inspection report"), ("preflight", "go/no-go review before a big run"),
                       ("export", "export the inventory sheet")):
        p = sub.add_parser(name, help=f"{text} (not yet available)", description=f"{text} (not yet available).")
        p.set_defaults(func=_not_yet(name))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
