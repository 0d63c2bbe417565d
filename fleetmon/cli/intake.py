"""`fleetmon intake`: check a card new to the fleet against its spec and its model's fleet (``fleetmon.intake``)."""

from __future__ import annotations

import argparse
import sys

from fleetmon.cli.reporting import fleet_of, now_of, open_for_report, short_lived, write_html
from fleetmon.i18n import N_, Text
from fleetmon.i18n import gettext as _

EXITS = N_("Exit status: 0 every card checked is PASS or CONDITIONAL (or no card was new), 2 a card was "
         "REJECTed, 1 an error (bad arguments, unknown node or card, unreadable database). See docs/intake.md.")


def run(args: argparse.Namespace) -> int:
    from fleetmon import intake
    from fleetmon.errors import KnownError

    short_lived()
    now = now_of(args)
    window = intake.parse_window(args.window, now)
    fleet = fleet_of(args)
    db, writable = open_for_report(args.db, write=not args.no_save)
    try:
        outcome = intake.run_intake(db, now, args.node, args.gpu, window, fleet, save=writable)
    finally:
        db.close()
    if outcome.save_error:
        print("fleetmon intake: " + _("the result was not stored with the card: {error}").format(
            error=outcome.save_error), file=sys.stderr)
    if args.html:
        if len(outcome.results) != 1:
            raise KnownError(Text(N_("--html: {count} cards were checked; a certificate is one card (name it with "
                                     "--gpu)"), count=len(outcome.results)) if outcome.results else
                             Text(N_("--html: no card was checked, no certificate written")))
        write_html(args.html, intake.certificate_html(outcome.results[0]))
    sys.stdout.write(intake.results_json(outcome.results, outcome.note) if args.json
                     else intake.result_text(outcome.results, outcome.note))
    return intake.exit_status(outcome.results)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("intake", help=_("check a card new to the fleet: PASS / CONDITIONAL / REJECT with reasons"),
                       description=_("The intake check of the cards of a node new to the fleet (first seen within "
                                   "the window), or of one card on request (--gpu): memory size, PCIe capability "
                                   "and link under load, power limits against the spec, VBIOS against the model's "
                                   "fleet, lifetime ECC / retired pages / remapped rows, Xids since first seen, "
                                   "and clocks under load against nominal and the fleet. Each result is stored "
                                   "with the card (its history in the app)."),
                       epilog=_(EXITS))
    p.add_argument("--db", required=True, metavar="FILE", help=_("the fleetmon database (as written by `fleetmon collect`)"))
    p.add_argument("--node", required=True, metavar="NAME", help=_("the node the card sits in"))
    p.add_argument("--gpu", metavar="INDEX|UUID", help=_("check this card (default: every card of the node first "
                                                       "seen within the window)"))
    p.add_argument("--window", default="24h", metavar="SPEC",
                   help=_("the intake window: a duration back from now (24h, 3d) or FROM..TO (Unix seconds or ISO "
                        "8601 UTC); the checks under load look at it (default 24h)"))
    p.add_argument("--fleet", metavar="FLEET.toml", help=_("apply this fleet file's [thresholds] overrides"))
    p.add_argument("--no-save", action="store_true", help=_("do not store the result with the card"))
    out = p.add_argument_group(_("output (text on stdout by default)"))
    out.add_argument("--json", action="store_true", help=_("print JSON instead of text (schema 1, docs/intake.md)"))
    out.add_argument("--html", metavar="FILE", help=_("also write the intake certificate (one card) as a printable, "
                                                    "self-contained HTML page to FILE"))
    p.add_argument("--now", metavar="TIME", help=_("judge as of TIME (Unix seconds or ISO 8601 UTC; default: now)"))
    p.set_defaults(func=run)
