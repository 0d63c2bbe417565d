"""What `fleetmon report` and `fleetmon preflight` share: common arguments, --now, opening the database."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from fleetmon.errors import KnownError
from fleetmon.i18n import N_, Text, message_of
from fleetmon.i18n import gettext as _

if TYPE_CHECKING:
    from fleetmon.fleet import Fleet
    from sqlite_utils import Database

EXITS = N_("Exit status: 0 nothing critical, 2 something critical was found (so cron can alert), "
         "1 an error (bad arguments, unreadable database). See docs/reports.md.")


def add_report_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, metavar="FILE", help=_("the fleetmon database (as written by `fleetmon collect`)"))
    p.add_argument("--fleet", metavar="FLEET.toml",
                   help=_("apply this fleet file's group expectations, node groups and [thresholds] overrides"))
    out = p.add_argument_group(_("output (text on stdout by default)"))
    out.add_argument("--json", action="store_true",
                     help=_("print JSON instead of text (schema 1, stable fields: docs/reports.md)"))
    out.add_argument("--html", metavar="FILE", help=_("also write a printable, self-contained HTML page to FILE"))
    p.add_argument("--now", metavar="TIME", help=_("judge the fleet as of TIME (Unix seconds or ISO 8601 UTC; "
                                                 "default: now), e.g. to reproduce an earlier report"))


def now_of(args: argparse.Namespace) -> float:
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
        raise KnownError(Text(N_("--now {text!r}: expected Unix seconds or an ISO 8601 time"), text=text)) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return value.timestamp()


def open_for_report(path: str, *, write: bool) -> tuple[Database, bool]:
    """(database, writable): read-write when ``write`` and possible, else read-only.

    Never creates or migrates a file that is not already a fleetmon database:
    an empty file or another program's SQLite file is refused with one line
    (exit 1) instead of being given a schema and reported as "PASS, 0 nodes".
    A real fleetmon database opened for writing keeps the report it gets.
    """
    from pathlib import Path

    from fleetmon.errors import StorageError
    from storage.db import open_database

    if not Path(path).is_file():
        raise KnownError(Text(N_("database {path}: no such file"), path=str(path)))
    if write:
        try:
            return open_database(path, existing=True), True
        except StorageError as exc:
            if "read-only" not in str(exc) and "locked" not in str(exc):
                raise
            print("fleetmon: " + _("{error}; reporting without saving this report").format(error=message_of(exc)),
                  file=sys.stderr)
    return open_database(path, readonly=True), False


def fleet_of(args: argparse.Namespace) -> Fleet | None:
    """The --fleet file, loaded, or None."""
    if not getattr(args, "fleet", None):
        return None
    from fleetmon.fleet import load_fleet

    return load_fleet(args.fleet)


def write_html(path: str, text: str) -> None:
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise KnownError(Text(N_("--html {path}: cannot write it ({error})"), path=str(path),
                              error=exc.strerror or exc)) from exc


def short_lived() -> None:
    """No cyclic garbage collection for the rest of this process.

    A report builds millions of small acyclic objects; the collector would
    rescan them repeatedly (and once more, fully, when re-enabled) for nothing
    that reference counting does not free anyway. The process ends right after.
    """
    import gc

    gc.disable()
