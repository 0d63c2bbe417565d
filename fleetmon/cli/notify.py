"""`fleetmon notify`: check the fleet file's ``[[notify]]`` destinations and read the dead letters.

* ``fleetmon notify test [--to NAME] [--fleet FILE]`` sends a sample message to each destination (or
  one), straight away, and says per destination whether it was delivered (one line each); exit 1 when
  any was not.
* ``fleetmon notify dead [--db FILE]`` lists the dead letters: events given up after their retries.

See docs/notifications.md.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time

from fleetmon.errors import KnownError
from fleetmon.paths import default_db_path, default_fleet_path, fleet_file_hint, for_help
from fleetmon.i18n import N_, Text
from fleetmon.i18n import gettext as _


def _fleet(path: str | None) -> object:
    from fleetmon.fleet import load_fleet

    if path is None:
        default = default_fleet_path()
        if not default.is_file():
            raise KnownError(Text(N_("no fleet file at {path} (the default when --fleet is not given); {hint}"),
                                  path=str(default), hint=fleet_file_hint(default)))
        path = str(default)
    return load_fleet(path)


def sample_message(lang: str | None = None) -> tuple[str, str]:
    """The title and body of ``notify test``'s message: the shape of a real one, marked as a test, in ``lang``
    (a destination's ``lang``; None: the process's language)."""
    from fleetmon import i18n
    from fleetmon.notify.message import Event, compose

    host = socket.gethostname()
    with i18n.speaking(lang):
        evidence = _("TEST from `fleetmon notify test` on {host} at {when} UTC: this is how a lost GPU would "
                     "read").format(host=host, when=i18n.when(time.time(), seconds=True))
        event = Event(key="test", transition="new", kind="gpu-lost", severity="critical", node="node-example",
                      gpu="gpu3", evidence=evidence, action=_("Nothing: this is a test. A real one says what to do."),
                      command="fleetmon resolve --db FLEET.db --list --node node-example --kind gpu-lost")
        title, body = compose([event], lang=lang)
        return _("[fleetmon] TEST {title}").format(title=title.removeprefix("[fleetmon] ")), body


def run_test(args: argparse.Namespace) -> int:
    from fleetmon import i18n
    from fleetmon.notify.send import DeliveryError, Destination

    fleet = _fleet(args.fleet)
    specs = list(getattr(fleet, "notify", ()))
    if not specs:
        raise KnownError(Text(N_("{path} has no [[notify]] table (see docs/fleet-file.md)"),
                              path=str(getattr(fleet, "path", "fleet.toml"))))
    if args.to is not None:
        specs = [s for s in specs if s.name.lower() == args.to.lower()]
        if not specs:
            names = ", ".join(s.name for s in fleet.notify)  # type: ignore[attr-defined]
            raise KnownError(Text(N_("no [[notify]] destination called {name}; the fleet file has: {names}"),
                                  name=repr(args.to), names=names))
    failed = 0
    for spec in specs:
        title, body = sample_message(spec.lang)
        try:
            Destination(spec).send(title, body)
        except DeliveryError as exc:
            failed += 1
            print(_("{name}: FAILED: {error}").format(name=spec.name, error=i18n.localized(exc.reason)),
                  file=sys.stderr)
            continue
        print(_("{name}: sent").format(name=spec.name))
    if failed:
        raise KnownError(Text(N_("{failed} of {count} destinations did not take the test message"), failed=failed,
                              count=len(specs)) if len(specs) != 1 else
                         Text(N_("{failed} of {count} destination did not take the test message"), failed=failed,
                              count=len(specs)))
    return 0


def run_dead(args: argparse.Namespace) -> int:
    from fleetmon import i18n
    from fleetmon.text import printable
    from storage.db import open_database
    from storage.notify import dead_letters

    path = args.db or str(default_db_path())
    db = open_database(path, readonly=True)
    try:
        rows = dead_letters(db, args.to)
    finally:
        db.close()
    if not rows:
        print(_("no dead letters"))
        return 0
    for r in rows:
        what = r.payload.get("title") or f"{r.payload.get('kind')} {r.payload.get('node') or ''} " \
                                          f"{r.payload.get('gpu') or ''}".strip()
        when = i18n.when(r.done_at or r.created)
        print(printable(_("{when} UTC  {dest}  {key}  {what}  after {attempts} tries: {error}").format(
            when=when, dest=r.dest, key=r.event_key, what=what, attempts=r.attempts, error=r.last_error)))
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("notify", help=_("notification destinations: send a test, list the dead letters"),
                       description=_("Check the fleet file's [[notify]] destinations (docs/notifications.md)."))
    nsub = p.add_subparsers(dest="notify_command", metavar="SUBCOMMAND")
    tp = nsub.add_parser("test", help=_("send a sample message to the destinations"),
                         description=_("Send a sample message to every [[notify]] destination of the fleet file "
                                     "(or the one named by --to) now, and say for each whether it was delivered. "
                                     "Exit status 1 when any was not."))
    tp.add_argument("--to", metavar="NAME", help=_("only the destination with this name"))
    tp.add_argument("--fleet", metavar="FLEET.toml",
                    help=_("the fleet file (default: {path})").format(path=for_help(default_fleet_path())))
    tp.set_defaults(func=run_test)
    dp = nsub.add_parser("dead", help=_("list the dead letters (events given up after their retries)"),
                         description=_("List the notifications the collector gave up on after its retries, "
                                     "newest first, with the last error."))
    dp.add_argument("--db", metavar="FILE", help=_("the fleetmon database (default: {path})").format(
        path=for_help(default_db_path())))
    dp.add_argument("--to", metavar="NAME", help=_("only this destination's"))
    dp.set_defaults(func=run_dead)

    def _help(args: argparse.Namespace) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=_help)
