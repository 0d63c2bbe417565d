"""`fleetmon evidence`: a card's RMA and return evidence as one zip archive (``fleetmon.evidence``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any
from fleetmon.i18n import N_, Text, localized
from fleetmon.i18n import gettext as _


def plot_renderer() -> tuple[Any, str | None]:
    """(renderer, None), or (None, why the plots are skipped) where Qt is not installed.

    The plots are drawn by ``ui.evidence_plots`` (only ui/ imports Qt), offscreen.
    """
    try:
        from ui.evidence_plots import render_plots
    except ImportError as exc:
        return None, Text(N_("Plots skipped: PySide6 is not installed here ({error})"), error=str(exc))
    return render_plots, None


def run(args: argparse.Namespace) -> int:
    from fleetmon import assess
    from fleetmon.cli.reporting import now_of
    from fleetmon.evidence import build_evidence

    since_s = assess.parse_duration(args.since) if args.since else None
    now = now_of(args)
    renderer, why = (None, Text(N_("Plots skipped: {reason}"), reason="--no-plots")) if args.no_plots else plot_renderer()
    result = build_evidence(args.db, args.gpu, args.output, now=now, since_s=since_s, force=args.force,
                            plots=renderer, plots_missing=why)
    said = _("wrote {file}: {count} files, {size} KiB, for GPU {uuid} (serial {serial})").format(
        file=result.path, count=len(result.files), size=f"{result.size / 1024:,.0f}", uuid=result.uuid,
        serial=result.serial or _("none"))
    if result.plots_note:
        said = _("{what}; {note}").format(what=said, note=localized(result.plots_note))
    print(said, file=sys.stderr)
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "evidence", help=_("a card's RMA / return evidence: one zip of its history, Xids, pages, findings, plots"),
        description=_("Gather everything the database knows of one card into one zip archive for an RMA or a "
                    "return to a seller: a printable summary.html, its identity (serial, UUID, board part "
                    "number, VBIOS, PCI ids, InfoROM), every placement, driver versions over time, every Xid "
                    "with its kernel-log line and meaning, ECC counts, retired pages and remapped rows over time, "
                    "throttle, power and PCIe episodes with their data, the findings with their lifecycle and "
                    "operators' notes, and PNG plots (CSV and JSON inside; manifest.json lists the files)."),
        epilog=_("Exit status: 0 written, 1 an error (unknown or ambiguous GPU, existing output, unreadable "
               "database); nothing is left behind on an error. See docs/evidence.md."))
    p.add_argument("--db", required=True, metavar="FILE", help=_("the fleetmon database (read only)"))
    p.add_argument("--gpu", required=True, metavar="UUID|SERIAL", help=_("the card, by its UUID or its serial number"))
    p.add_argument("-o", "--output", required=True, metavar="FILE.zip", help=_("the archive to write"))
    p.add_argument("--force", action="store_true", help=_("replace the output file if it exists"))
    p.add_argument("--since", metavar="DURATION",
                   help=_("only the last DURATION of history, e.g. 90d (default: the card's whole life)"))
    p.add_argument("--now", metavar="TIME", help=_("the end of the history (Unix seconds or ISO 8601 UTC; "
                                                 "default: now), e.g. to reproduce an earlier archive"))
    p.add_argument("--no-plots", action="store_true", help=_("write no PNG plots (the archive says so)"))
    p.set_defaults(func=run)
