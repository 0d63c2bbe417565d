"""`fleetmon export`: the inventory sheet (XLSX, CSV or JSON); arguments and command in ``fleetmon.export``."""

from __future__ import annotations

import argparse
from fleetmon.i18n import gettext as _


def run(args: argparse.Namespace) -> int:
    from fleetmon import export

    return export.main(args)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from fleetmon import export

    p = sub.add_parser("export", help=_("export the inventory sheet (XLSX, CSV or JSON)"),
                       description=_("Export the inventory sheet: one row per card ever seen, with its place, "
                                   "identity, VBIOS, driver, state and open findings. The format follows the -o "
                                   "extension (.xlsx adds sheets of the open findings and the version matrix)."))
    export.add_arguments(p)
    p.set_defaults(func=run)
