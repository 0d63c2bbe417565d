"""`fleetmon gui`: open the desktop app on a database (``ui.app``, imported only when it runs)."""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    from ui.app import run_gui

    return run_gui(args)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, metavar="FILE", help="SQLite database to show (asks before creating one that does not exist)")
    p.add_argument("--fleet", metavar="FLEET.toml",
                   help="also run the collector for this fleet (unless another collector holds the database)")
    p.add_argument("--interval", type=float, metavar="SECONDS", help="poll interval when collecting")
    p.add_argument("--refresh", type=float, default=2.0, metavar="SECONDS",
                   help="how often the window re-reads the database (default 2)")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("gui", help="open the desktop app on a database",
                       description="Open the fleetmon desktop app on a database; with --fleet it also collects.")
    add_arguments(p)
    p.set_defaults(func=run)
