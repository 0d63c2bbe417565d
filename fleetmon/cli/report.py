"""`fleetmon report`: the daily inspection of the fleet (``fleetmon.assess`` and ``fleetmon.health.render``)."""

from __future__ import annotations

import argparse
import sys

from fleetmon.cli.reporting import EXITS, add_report_common, fleet_of, now_of, open_for_report, short_lived, write_html
from fleetmon.i18n import gettext as _


def run(args: argparse.Namespace) -> int:
    from fleetmon import assess
    from fleetmon.health import render, render_html

    short_lived()
    since_s = assess.parse_duration(args.since)
    now = now_of(args)
    fleet = fleet_of(args)
    db, writable = open_for_report(args.db, write=True)
    try:
        outcome = assess.run_report(db, now, since_s, args.group, fleet, save=writable)
    finally:
        db.close()
    result = outcome.result
    if outcome.save_error:
        print("fleetmon report: " + _("this report was not saved, the next one compares with the last saved: "
                                      "{error}").format(error=outcome.save_error), file=sys.stderr)
    if args.html:
        write_html(args.html, render_html.report_html(result))
    sys.stdout.write(render.report_json(result) if args.json else render.report_text(result))
    return render.exit_status(result)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("report", help=_("daily inspection: per node pass/warn/fail and what changed"),
                       description=_("The daily inspection of the fleet: per node pass / warn / fail, what changed "
                                   "since the previous report (new, resolved and worsening findings, inventory "
                                   "changes) and a fleet summary (GPUs by model, driver versions, unreachable "
                                   "nodes). Each report is stored so the next one can compare."),
                       epilog=_(EXITS))
    add_report_common(p)
    p.add_argument("--since", default="24h", metavar="DURATION",
                   help=_("window to review, e.g. 90m, 24h, 7d or 3600s (default 24h)"))
    p.add_argument("--group", metavar="G", help=_("report on one group of nodes only"))
    p.set_defaults(func=run)
