"""`fleetmon slurm`: drain and resume nodes in Slurm, show their Slurm state, plan the automatic drain.

Every drain and resume is recorded in the database (who, when, why, Slurm's answer) before
Slurm is asked, so a refused one is on record as failed (docs/slurm.md). Without --db the
default database is used, without --fleet the default fleet file when there is one.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from fleetmon.errors import KnownError
from fleetmon.paths import default_db_path, default_fleet_path, for_help
from fleetmon import i18n
from fleetmon.i18n import N_, Text
from fleetmon.i18n import gettext as _


def _fleet(args: argparse.Namespace) -> Any:
    from fleetmon.fleet import load_fleet

    if args.fleet:
        return load_fleet(args.fleet)
    path = default_fleet_path()
    return load_fleet(path) if path.is_file() else None


def _open_db(args: argparse.Namespace) -> Any:
    from storage.db import open_database

    return open_database(args.db or default_db_path())


def _known_node(fleet: Any, node: str) -> str:
    """The fleet's spelling of ``node``; a node the fleet file does not list passes as written (Slurm judges it)."""
    if fleet is None:
        return node
    try:
        return str(fleet.node(node).name)
    except KeyError:
        return node


def _act(args: argparse.Namespace, action: str) -> int:
    from fleetmon.slurm.actions import do_action

    fleet = _fleet(args)
    node = _known_node(fleet, args.node)
    reason = args.reason if action == "drain" else (args.reason or "")
    if action == "drain" and not reason.strip():
        raise KnownError(Text(N_("--reason must not be empty")))
    db = _open_db(args)
    try:
        out = do_action(db, fleet, node, action, reason=reason, origin="cli", who=args.by or None)
    finally:
        db.close()
    if out.ok:
        print(i18n.localized(out.line(action)))
        return 0
    print("fleetmon slurm: " + _("{what} (recorded as failed)").format(what=i18n.localized(out.line(action))), file=sys.stderr)
    return 1


def _status(args: argparse.Namespace) -> int:
    from fleetmon.slurm import SlurmError, slurm_name_of
    from fleetmon.slurm.actions import client_for

    fleet = _fleet(args)
    view = client_for(fleet).view(time.time())
    if not view.ok:
        raise KnownError(Text(N_("Slurm unavailable: {error}"), error=view.error))
    if args.node:
        names = [_known_node(fleet, args.node)]
    elif fleet is not None:
        names = [n.name for n in fleet.nodes]
    else:
        names = sorted(view.nodes)
    failed = False
    for node in names:
        try:
            name = slurm_name_of(fleet, node)
        except SlurmError as exc:
            print(f"{node:<24} " + _("error: {error}").format(error=i18n.message_of(exc)))
            failed = True
            continue
        state = view.nodes.get(name)
        shown = node if name == node else f"{node} ({name})"
        if state is None:
            print(f"{shown:<24} " + _("unknown to Slurm"))
            failed = failed or bool(args.node)
        else:
            print(f"{shown:<24} {state.label()}")
    return 1 if failed else 0


def _auto(args: argparse.Namespace) -> int:
    from fleetmon.slurm.actions import run_auto_drain

    fleet = _fleet(args)
    if fleet is None or fleet.slurm is None or not fleet.slurm.auto_drain:
        print(_("auto-drain is off: the fleet file's [slurm] auto_drain names no finding kinds"))
        return 0
    db = _open_db(args)
    try:
        plan = run_auto_drain(db, fleet, time.time(), dry_run=args.dry_run)
    finally:
        db.close()
    for line in plan.lines(dry_run=args.dry_run):
        print(i18n.localized(line))
    return 1 if plan.error else 0


def _history(args: argparse.Namespace) -> int:
    from storage.slurm_actions import slurm_actions

    db = _open_db(args)
    try:
        rows = slurm_actions(db, args.node)
    finally:
        db.close()
    if not rows:
        print(_("no Slurm drains or resumes recorded for {node}").format(node=args.node) if args.node else
              _("no Slurm drains or resumes recorded"))
    for r in rows:
        print(i18n.localized(action_line(r)))
    return 0


def action_line(r: Any) -> str:
    """One line of a stored drain or resume (also the report's and the app's wording)."""
    from fleetmon.text import printable

    when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r.ts))
    # i18n.Text: the English line as before; the action, origin and result words stay as recorded
    result = "ok" if r.result == "ok" else (Text(N_("FAILED: {error}"), error=r.error) if r.result == "failed"
                                            else r.result)
    values = {"when": when, "action": r.action, "node": printable(r.node, 80), "who": printable(r.who, 80),
              "origin": r.origin, "result": result}
    if r.reason:
        return Text(N_("{when} UTC {action} {node} by {who} ({origin}): {result} — {reason}"),
                    reason=printable(r.reason, 160), **values)
    return Text(N_("{when} UTC {action} {node} by {who} ({origin}): {result}"), **values)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "slurm", help=_("drain and resume nodes in Slurm; their Slurm state; the automatic drain"),
        description=_("Drain and resume nodes through the system's Slurm commands (scontrol, sinfo), recording "
                    "each request (who, when, why, Slurm's answer) in the database; show each node's Slurm "
                    "state; plan or run the automatic drain of [slurm] auto_drain. Fleet names map to Slurm "
                    "names by slurm_name or [slurm] name_pattern (docs/slurm.md)."))
    actions = p.add_subparsers(dest="slurm_command", metavar="ACTION", required=True)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument("--db", metavar="FILE",
                       help=_("the fleetmon database that records it (default: {path})").format(
                           path=for_help(default_db_path())))
        q.add_argument("--fleet", metavar="FILE",
                       help=_("the fleet file: Slurm names and [slurm] (default: {path} when it exists)").format(
                           path=for_help(default_fleet_path())))

    d = actions.add_parser("drain", help=_("drain a node (no new jobs; running ones finish)"),
                           description=_("Drain NODE in Slurm with REASON (one line, prefixed 'fleetmon:', at most "
                                       "240 characters; the full text stays in the record)."))
    d.add_argument("node", metavar="NODE", help=_("the fleet's node name (mapped to its Slurm name)"))
    d.add_argument("--reason", required=True, metavar="TEXT", help=_("why (Slurm shows it with who set it)"))
    d.add_argument("--by", metavar="NAME", help=_("who drains it, for the record (default: user@host)"))
    common(d)
    d.set_defaults(func=lambda a: _act(a, "drain"))

    r = actions.add_parser("resume", help=_("return a drained node to service"),
                           description=_("Resume NODE in Slurm (State=RESUME). fleetmon never resumes on its own."))
    r.add_argument("node", metavar="NODE", help=_("the fleet's node name"))
    r.add_argument("--reason", metavar="TEXT", help=_("why, for the record"))
    r.add_argument("--by", metavar="NAME", help=_("who resumes it, for the record (default: user@host)"))
    common(r)
    r.set_defaults(func=lambda a: _act(a, "resume"))

    s = actions.add_parser("status", help=_("each node's Slurm state (idle, alloc, drain with its reason, down)"),
                           description=_("Print the Slurm state of NODE, or of every node of the fleet file (every "
                                       "node Slurm knows without one). Exit 1 when Slurm cannot be asked."))
    s.add_argument("node", nargs="?", metavar="NODE", help=_("one node (default: all)"))
    s.add_argument("--fleet", metavar="FILE", help=_("the fleet file (default: the default one when it exists)"))
    s.set_defaults(func=_status)

    a = actions.add_parser("auto", help=_("the automatic drain of [slurm] auto_drain, now (--dry-run: only say)"),
                           description=_("Drain the nodes that open findings of the [slurm] auto_drain kinds call "
                                       "for, on data younger than the stale limit, never more than [slurm] "
                                       "max_fraction of the fleet by fleetmon at once. The collector runs this "
                                       "after each health pass; --dry-run prints what it would do."))
    a.add_argument("--dry-run", action="store_true", help=_("print what it would drain and why others are left"))
    common(a)
    a.set_defaults(func=_auto)

    h = actions.add_parser("history", help=_("the recorded drains and resumes (newest first)"))
    h.add_argument("node", nargs="?", metavar="NODE", help=_("one node (default: all)"))
    h.add_argument("--db", metavar="FILE", help=_("the database (default: {path})").format(path=for_help(default_db_path())))
    h.set_defaults(func=_history)
