"""The `fleetmon` command line: one command, several subcommands.

One module per subcommand (agent, collect, gui, demo, xid, fleet, report,
preflight, intake, resolve, export, import / import-smi, evidence, slurm, notify), each holding its argument definitions next to its command;
this module builds the parser from them. Heavy imports (Qt, sqlite-utils,
APScheduler, aiohttp) and the ui package happen inside the command that needs
them, so `fleetmon agent` runs on a node that has only the standard library
and nvidia-ml-py.
"""

from __future__ import annotations

import argparse
import sys

from fleetmon import __version__, i18n
from fleetmon.cli import (agent, collect, demo, evidence, export, fleet, gui, import_smi, intake, notify, preflight, report,
                          resolve, slurm, xid)
from fleetmon.errors import KnownError

__all__ = ["build_parser", "main"]

# In the order `fleetmon --help` lists them.
_COMMANDS = (agent, collect, gui, demo, xid, fleet, report, preflight, intake, resolve, export, import_smi, evidence,
             slurm, notify)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fleetmon", description="GPU fleet inventory and health monitor.")
    parser.add_argument("--version", action="version", version=f"fleetmon {__version__}")
    parser.add_argument("--lang", metavar="LANG", choices=i18n.SUPPORTED, default=None,
                        help="language of reports, findings, exports and messages: "
                             f"{', '.join(i18n.SUPPORTED)} (default: FLEETMON_LANG, then LC_ALL, LC_MESSAGES, LANG; "
                             "JSON output stays English)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in _COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        # report, preflight and intake keep 2 for "something critical": their usage errors exit 1.
        words = sys.argv[1:] if argv is None else argv
        if exc.code == 2 and words and words[0] in ("report", "preflight", "intake"):
            raise SystemExit(1) from None
        raise
    i18n.set_language(args.lang or i18n.language_from_environment())
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args) or 0)
    except KnownError as exc:
        # the message in the reader's language when it was made with fleetmon.i18n.Text (or is in the catalog)
        message = i18n.localized(exc.args[0]) if len(exc.args) == 1 and isinstance(exc.args[0], str) else str(exc)
        print(f"fleetmon {args.command}: {message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
