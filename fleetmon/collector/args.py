"""Command-line arguments of `fleetmon collect` and `fleetmon gui` (shared)."""

from __future__ import annotations

import argparse


def add_collect_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fleet", required=True, metavar="FLEET.toml", help="the fleet file listing the nodes")
    p.add_argument("--db", required=True, metavar="FILE", help="SQLite database to write (created if missing)")
    p.add_argument("--once", action="store_true", help="poll every node once, write, and exit")
    p.add_argument("--interval", type=float, metavar="SECONDS",
                   help="poll interval (default: the fleet file's poll_interval_s, else 30)")
    p.add_argument("-v", "--verbose", action="store_true", help="log every poll")


def add_gui_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, metavar="FILE", help="SQLite database to show (created if missing)")
    p.add_argument("--fleet", metavar="FLEET.toml",
                   help="also run the collector for this fleet (unless another collector holds the database)")
    p.add_argument("--interval", type=float, metavar="SECONDS", help="poll interval when collecting")
    p.add_argument("--refresh", type=float, default=2.0, metavar="SECONDS",
                   help="how often the window re-reads the database (default 2)")
