"""`fleetmon gui`: open the desktop app on a database (``ui.app``, imported only when it runs).

With no path arguments (what the desktop entry runs) it opens the default
database (``fleetmon.paths``), creating it quietly the first time, and collects
from the default fleet file when one exists. An explicit --db that does not
exist is still asked about first: a typo must not open an empty window. The
default fleet file is read only when --db is the default too, so `fleetmon gui
--db other.db` stays a read-only view as before.
"""

from __future__ import annotations

import argparse
import sys

from fleetmon.cli.collect import require_app_extra
from fleetmon.paths import default_db_path, default_fleet_path, fleet_file_hint, for_help
from fleetmon.i18n import gettext as _
from fleetmon.i18n import localized


def resolve_paths(args: argparse.Namespace) -> bool:
    """Fill in the default database and fleet file; True when the database is the default one.

    The default database's folder is created; a missing default fleet file is
    not an error (the window shows the database without collecting) but is named
    on standard error with how to create it.
    """
    if args.db is not None:
        return False
    db = default_db_path()
    db.parent.mkdir(parents=True, exist_ok=True)
    args.db = str(db)
    if args.fleet is None:
        fleet = default_fleet_path()
        if fleet.is_file():
            args.fleet = str(fleet)
        else:
            print("fleetmon gui: " + _("no fleet file at {path}, so not collecting; {hint}").format(
                path=fleet, hint=localized(fleet_file_hint(fleet))), file=sys.stderr)
    return True


CANNOT_SHOW = 2
"""Exit status when this machine cannot show a window (no display, a missing library): nothing was started."""


def cannot_show_window(command: str) -> bool:
    """True, after saying why in one line on standard error, when this machine cannot show a window.

    Asked before the QApplication exists (``ui.display_check``, which imports
    no Qt): Qt itself would abort the process (exit 134) with advice to
    reinstall, leaving behind whatever the command had started.
    """
    from ui.display_check import window_problem

    problem = window_problem(command)
    if problem is None:
        return False
    print(f"fleetmon {command}: {localized(problem)}", file=sys.stderr)
    return True


def run(args: argparse.Namespace) -> int:
    require_app_extra("gui", ("PySide6", "pyqtgraph", "aiohttp", "sqlite_utils", "apscheduler"))
    if cannot_show_window("gui"):
        return CANNOT_SHOW
    from ui.app import run_gui

    if resolve_paths(args):
        return run_gui(args, confirm_create=lambda path: True)
    return run_gui(args)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", metavar="FILE",
                   help=_("SQLite database to show (default: {path}, created quietly when missing; "
                          "asks before creating any other that does not exist)").format(path=for_help(default_db_path())))
    p.add_argument("--fleet", metavar="FLEET.toml",
                   help=_("also run the collector for this fleet (unless another collector holds the database); "
                          "without --db and --fleet: {path} when it exists").format(path=for_help(default_fleet_path())))
    p.add_argument("--interval", type=float, metavar="SECONDS", help=_("poll interval when collecting"))
    p.add_argument("--refresh", type=float, default=2.0, metavar="SECONDS",
                   help=_("how often the window re-reads the database (default 2)"))


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("gui", help=_("open the desktop app on a database"),
                       description=_("Open the fleetmon desktop app on a database; with --fleet it also collects. "
                                   "With no arguments: the default database and fleet file (see --db, --fleet)."))
    add_arguments(p)
    p.set_defaults(func=run)
