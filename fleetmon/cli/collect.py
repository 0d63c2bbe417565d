"""`fleetmon collect`: poll the agents of a fleet into an SQLite database (``fleetmon.collector.main``)."""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    from fleetmon.collector.main import run_collect

    return run_collect(args)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fleet", required=True, metavar="FLEET.toml", help="the fleet file listing the nodes")
    p.add_argument("--db", required=True, metavar="FILE", help="SQLite database to write (created if missing)")
    p.add_argument("--once", action="store_true", help="poll every node once, write, and exit")
    p.add_argument("--interval", type=float, metavar="SECONDS",
                   help="poll interval (default: the fleet file's poll_interval_s, else 30)")
    p.add_argument("-v", "--verbose", action="store_true", help="log every poll")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("collect", help="poll the agents of a fleet into an SQLite database",
                       description="Poll every node of a fleet file on a schedule and record it in SQLite.")
    add_arguments(p)
    p.set_defaults(func=run)
