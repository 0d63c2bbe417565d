"""`fleetmon resolve`: an operator resolves findings ("card replaced"), or lists what can be resolved.

A resolution is an act, kept in the card's history (``storage.resolutions``):
it closes the finding's current episode; a fault that comes back after it
reopens as a recurrence linked to it (docs/findings.md, the lifecycle).
"""

from __future__ import annotations

import argparse
import getpass
from typing import Any

from fleetmon import i18n
from fleetmon.cli.reporting import now_of
from fleetmon.errors import KnownError
from fleetmon.i18n import N_, Text
from fleetmon.i18n import gettext as _


def _by(args: argparse.Namespace) -> str | None:
    if args.by:
        return str(args.by)
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name in a container: the resolution says nobody
        return None


def _matches(f: Any, args: argparse.Namespace) -> bool:
    if args.node and f.node != args.node:
        return False
    if args.kind and f.kind != args.kind:
        return False
    if args.gpu is not None:
        want = str(args.gpu)
        if f.gpu_uuid != want and not (want.isdigit() and f.gpu_index == int(want)):
            return False
    return True


def _open_findings(db: Any) -> list[Any]:
    from storage.findings import open_findings
    from storage.queries import gpus

    index_of = {g.uuid: g.index for g in gpus(db)}
    from dataclasses import replace

    return [replace(f, gpu_index=index_of.get(f.gpu_uuid)) if f.gpu_uuid else f for f in open_findings(db)]


def _where(f: Any) -> str:
    if f.gpu_uuid is None:
        return str(f.node)
    return f"{f.node} gpu{f.gpu_index}" if f.gpu_index is not None else f"{f.node} {f.gpu_uuid}"


def _summary(f: Any) -> str:
    return i18n.localized((f.evidence or {}).get("summary") or f.kind)  # said again when stored with m017


def run(args: argparse.Namespace) -> int:
    from fleetmon.health.lifecycle import RESOLVE_REASONS, reason_words
    from fleetmon.cli.reporting import open_for_report
    from storage import resolutions

    if args.history:
        db, _writable = open_for_report(args.db, write=False)
        try:
            rows = resolutions.card_resolutions(db, gpu_uuid=args.history) or resolutions.card_resolutions(
                db, node=args.history)
        finally:
            db.close()
        if not rows:
            print(_("no resolutions recorded for {what}").format(what=args.history))
        for r in rows:
            note = f" — {r.note}" if r.note else ""
            reason = i18n.localized(reason_words(r.reason))
            head = (_("{when} UTC by {who}: {reason}") if r.by else _("{when} UTC: {reason}")).format(
                when=i18n.when(r.at), who=r.by, reason=reason)
            print(f"{head}{note}\n    {i18n.localized(r.summary or r.kind)}  [{r.key}]")
        return 0
    filtering = bool(args.keys or args.node or args.kind or args.gpu is not None)
    if args.list or not filtering:
        db, _writable = open_for_report(args.db, write=False)
        try:
            found = [f for f in _open_findings(db) if _matches(f, args)]
        finally:
            db.close()
        if not found:
            print(_("no open findings match") if filtering else _("no open findings"))
        for f in found:
            print(f"{f.severity:<8} {_where(f):<24} {_summary(f)}\n         key: {f.key}")
        return 0
    if not args.reason:
        raise KnownError(Text(N_("--reason is required to resolve (one of: {reasons})"),
                              reasons=", ".join(RESOLVE_REASONS)))
    at = now_of(args)
    db, writable = open_for_report(args.db, write=True)
    if not writable:
        db.close()
        raise KnownError(Text(N_("database {path}: cannot write to it, nothing resolved"), path=str(args.db)))
    try:
        candidates = _open_findings(db)
        chosen = [f for f in candidates if (not args.keys or f.key in args.keys) and _matches(f, args)]
        unknown = [k for k in args.keys if k not in {f.key for f in candidates}]
        if unknown:
            raise KnownError(Text(N_("no open finding with the key {key} (list them: {command})"), key=repr(unknown[0]),
                                  command=f"fleetmon resolve --db {args.db} --list"))
        if not chosen:
            raise KnownError(Text(N_("no open finding matches --node/--gpu/--kind (list them with --list)")))
        by = _by(args)
        for f in chosen:
            resolutions.resolve(db, f.key, args.reason, args.note or "", at, by)
            print((_("resolved: {where} {summary} [{reason}, by {who}]") if by else
                   _("resolved: {where} {summary} [{reason}]")).format(
                where=_where(f), summary=_summary(f), reason=i18n.localized(reason_words(args.reason)), who=by))
    finally:
        db.close()
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from fleetmon.health.lifecycle import RESOLVE_REASONS

    p = sub.add_parser(
        "resolve", help=_("resolve findings as an operator (card replaced, reseated, driver updated ...)"),
        description=_("Resolve open findings as an operator's act, apart from acknowledging or snoozing them: the "
                    "finding's current episode closes, the resolution (who, when, why, a note) is kept in the "
                    "card's history and shown in reports, and a fault that comes back afterwards reopens as a "
                    "recurrence linked to it. Point events (an Xid, a GPU off the bus, uncorrectable ECC) stay "
                    "open until resolved. Without a key or filter it lists the open findings with their keys."))
    p.add_argument("--db", required=True, metavar="FILE", help=_("the fleetmon database"))
    p.add_argument("keys", nargs="*", metavar="KEY", help=_("finding keys to resolve (as --list prints them)"))
    p.add_argument("--node", metavar="NODE", help=_("resolve (or list) the open findings of this node"))
    p.add_argument("--gpu", metavar="INDEX|UUID", help=_("... of this GPU (its index on --node, or its UUID)"))
    p.add_argument("--kind", metavar="KIND", help=_("... of this finding kind (e.g. xid, gpu-lost)"))
    p.add_argument("--reason", choices=sorted(RESOLVE_REASONS), help=_("why it is resolved"))
    p.add_argument("--note", default="", help=_("free text kept with the resolution (an RMA number, what was done)"))
    p.add_argument("--by", metavar="NAME", help=_("who resolves it (default: the current user)"))
    p.add_argument("--now", metavar="TIME", help=_("the time of the resolution (Unix seconds or ISO 8601 UTC; "
                                                 "default: now)"))
    p.add_argument("--list", action="store_true", help=_("list the matching open findings and their keys, resolve nothing"))
    p.add_argument("--history", metavar="UUID|NODE", help=_("print the resolutions recorded for a card or node"))
    p.set_defaults(func=run)

