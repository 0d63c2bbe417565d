"""`fleetmon collect`: poll the agents of a fleet into an SQLite database (``fleetmon.collector.main``).

Without --fleet it reads the default fleet file and without --db it writes the
default database (``fleetmon.paths``: the XDG config and data directories), so
the systemd user unit and a desktop session need no paths. A missing default
fleet file is an error that names the path and how to create one.
"""

from __future__ import annotations

import argparse
import importlib.util

from fleetmon.errors import KnownError
from fleetmon.paths import default_db_path, default_fleet_path, fleet_file_hint, for_help
from fleetmon.i18n import N_, Text
from fleetmon.i18n import gettext as _


def require_app_extra(command: str, modules: tuple[str, ...]) -> None:
    """A clear error instead of a traceback when the workstation's dependencies are not installed.

    `pipx install .` / `pip install fleetmon` install only what the node agent needs.
    """
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise KnownError(Text(N_("`fleetmon {command}` needs the workstation's dependencies ({missing} not installed): "
                                 "install fleetmon with its app extra, e.g. `pipx install 'fleetmon[app]'` or "
                                 "`pip install 'fleetmon[app]'`"), command=command, missing=", ".join(missing)))


def resolve_paths(args: argparse.Namespace) -> None:
    """Fill in the default fleet file and database (whose folder is created)."""
    if args.fleet is None:
        fleet = default_fleet_path()
        if not fleet.is_file():
            raise KnownError(Text(N_("no fleet file at {path} (the default when --fleet is not given); {hint}"),
                                  path=str(fleet), hint=fleet_file_hint(fleet)))
        args.fleet = str(fleet)
    if args.db is None:
        db = default_db_path()
        db.parent.mkdir(parents=True, exist_ok=True)
        args.db = str(db)


def run(args: argparse.Namespace) -> int:
    require_app_extra("collect", ("aiohttp", "sqlite_utils", "apscheduler"))
    from fleetmon.collector.main import run_collect

    resolve_paths(args)
    return run_collect(args)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fleet", metavar="FLEET.toml",
                   help=_("the fleet file listing the nodes (default: {path})").format(path=for_help(default_fleet_path())))
    p.add_argument("--db", metavar="FILE",
                   help=_("SQLite database to write, created if missing (default: {path})").format(
                       path=for_help(default_db_path())))
    p.add_argument("--once", action="store_true", help=_("poll every node once, write, and exit"))
    p.add_argument("--interval", type=float, metavar="SECONDS",
                   help=_("poll interval (default: the fleet file's poll_interval_s, else 30)"))
    p.add_argument("--control", choices=("stdio",),
                   help=_("stdio: take poll/pause/resume/stop commands on standard input, one per line, report "
                        "each finished cycle as a JSON line on standard output, and stop at the end of input "
                        "(how `fleetmon gui` runs its collector in a child process)"))
    p.add_argument("-v", "--verbose", action="store_true", help=_("log every poll"))


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("collect", help=_("poll the agents of a fleet into an SQLite database"),
                       description=_("Poll every node of a fleet file on a schedule and record it in SQLite. "
                                   "With no arguments: the default fleet file and database (see --fleet, --db)."))
    add_arguments(p)
    p.set_defaults(func=run)
