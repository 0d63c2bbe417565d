"""`fleetmon preflight`: go / no-go per node before a big run, with a Slurm --exclude list."""

from __future__ import annotations

import argparse
import sys

from fleetmon.cli.reporting import EXITS, add_report_common, fleet_of, now_of, open_for_report, short_lived, write_html
from fleetmon.i18n import gettext as _


def run(args: argparse.Namespace) -> int:
    from fleetmon import assess
    from fleetmon.health import render, render_html

    short_lived()
    now = now_of(args)
    fleet = fleet_of(args)
    db, _writable = open_for_report(args.db, write=False)
    try:
        outcome = assess.run_preflight(db, now, args.nodes, args.days, fleet)
    finally:
        db.close()
    result = outcome.result
    if args.html:
        write_html(args.html, render_html.preflight_html(result))
    sys.stdout.write(render.preflight_json(result) if args.json else render.preflight_text(result))
    return render.exit_status(result)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("preflight", help=_("go/no-go per node before a big run, with a Slurm --exclude list"),
                       description=_("The review before a big run: for each node go / no-go with the reasons, ECC "
                                   "and power over the window, and the no-go nodes as a Slurm hostlist "
                                   "expression ready for sbatch --exclude."),
                       epilog=_(EXITS))
    add_report_common(p)
    p.add_argument("--nodes", required=True, metavar="HOSTLIST",
                   help=_("nodes to review, in Slurm hostlist syntax, e.g. gpu[01-16,20]"))
    p.add_argument("--days", type=float, default=14.0, help=_("window to review in days (default 14)"))
    p.set_defaults(func=run)
