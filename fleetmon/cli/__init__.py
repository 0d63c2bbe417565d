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
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any, NoReturn

from fleetmon import __version__, i18n
from fleetmon.cli import (agent, collect, demo, evidence, export, fleet, gui, import_smi, intake, notify, preflight, report,
                          resolve, slurm, xid)
from fleetmon.errors import KnownError
from fleetmon.i18n import N_
from fleetmon.i18n import gettext as _

__all__ = ["build_parser", "main"]

# In the order `fleetmon --help` lists them.
_COMMANDS = (agent, collect, gui, demo, xid, fleet, report, preflight, intake, resolve, export, import_smi, evidence,
             slurm, notify)


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout with its own "usage: " said in the reader's language."""

    def add_usage(self, usage: str | None, actions: Iterable[argparse.Action],
                  groups: Iterable[argparse._MutuallyExclusiveGroup], prefix: str | None = None) -> None:
        if prefix is None and i18n.current_language() != "en":
            prefix = _("usage: ")
        super().add_usage(usage, actions, groups, prefix)


class _Parser(argparse.ArgumentParser):
    """The parser of `fleetmon` and (argparse makes every subparser of its parent's class) of every command.

    Its help texts are marked with ``_()`` in each command's ``add_parser`` and translated when the parser
    is built: :func:`main` sets the language from ``--lang`` (read ahead of the parse) or the environment
    first. argparse's own words (the default group titles, ``-h``'s help, "usage:") are said in the
    reader's language too; in English they are argparse's, untouched (docs/cli.md is rendered in English).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)
        if i18n.current_language() == "en":
            return
        self._positionals.title = _("positional arguments")
        self._optionals.title = _("options")
        for action in self._actions:
            if isinstance(action, argparse._HelpAction):
                action.help = _("show this help message and exit")

    def error(self, message: str) -> NoReturn:
        """A usage error: argparse's own in English; otherwise the usage, then one line in the reader's language."""
        if i18n.current_language() == "en":
            super().error(message)
        self.print_usage(sys.stderr)
        self.exit(2, _("{prog}: error: {message}").format(prog=self.prog, message=_argparse_said(message)) + "\n")


# argparse's usage errors, said again in the reader's language. Hand-written: argparse formats its messages
# with the standard library's gettext domain "argparse", for which Python ships no catalog; these are the
# messages a command line of fleetmon can meet (Python 3.10 to 3.13 spell them so). Another stays English.
_ARGPARSE_MESSAGES: tuple[tuple[str, str], ...] = (
    (r"the following arguments are required: (?P<args>.+)", N_("the following arguments are required: {args}")),
    (r"unrecognized arguments: (?P<args>.+)", N_("unrecognized arguments: {args}")),
    (r"one of the arguments (?P<args>.+) is required", N_("one of the arguments {args} is required")),
    (r"argument (?P<arg>\S+): invalid choice: (?P<value>.+?) \(choose from (?P<choices>.+)\)",
     N_("argument {arg}: invalid choice: {value} (choose from {choices})")),
    (r"argument (?P<arg>\S+): invalid (?P<type>\w+) value: (?P<value>.+)",
     N_("argument {arg}: invalid {type} value: {value}")),
    (r"argument (?P<arg>\S+): expected one argument", N_("argument {arg}: expected one argument")),
    (r"argument (?P<arg>\S+): expected at least one argument", N_("argument {arg}: expected at least one argument")),
    (r"argument (?P<arg>\S+): not allowed with argument (?P<other>.+)",
     N_("argument {arg}: not allowed with argument {other}")),
    (r"argument (?P<arg>\S+): ignored explicit argument (?P<value>.+)",
     N_("argument {arg}: ignored explicit argument {value}")),
    (r"argument (?P<arg>\S+): expected at most one argument", N_("argument {arg}: expected at most one argument")),
    (r"ambiguous option: (?P<option>\S+) could match (?P<matches>.+)",
     N_("ambiguous option: {option} could match {matches}")),
)
_ARGPARSE_ERRORS = tuple((re.compile(pattern), template) for pattern, template in _ARGPARSE_MESSAGES)


def _argparse_said(message: str) -> str:
    """An argparse error message in the reader's language (itself when not one of :data:`_ARGPARSE_ERRORS`)."""
    for pattern, template in _ARGPARSE_ERRORS:
        match = pattern.fullmatch(message)
        if match:
            return _(template).format(**match.groupdict())
    return message


def _command_word(words: Sequence[str]) -> str | None:
    """The command named in ``words``: the first word after the global options (``--lang zh_CN report …``)."""
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word == "--lang":
            skip = True
        elif not word.startswith("-"):
            return word
    return None


def _language_asked(words: Sequence[str]) -> str | None:
    """``--lang`` as given before the command (``fleetmon --lang zh_CN report --help``), read ahead of the
    parse so that the parser's help is built in that language; None when not given."""
    for i, word in enumerate(words):
        if word == "--lang":
            return words[i + 1] if i + 1 < len(words) else None
        if word.startswith("--lang="):
            return word.split("=", 1)[1]
        if not word.startswith("-"):  # the command: a --lang after it is not the global option
            return None
    return None


def build_parser() -> argparse.ArgumentParser:
    """The `fleetmon` parser, its help in the current language (:func:`fleetmon.i18n.set_language`)."""
    parser = _Parser(prog="fleetmon", description=_("GPU fleet inventory and health monitor."))
    parser.add_argument("--version", action="version", version=f"fleetmon {__version__}",
                        help=_("show program's version number and exit"))
    parser.add_argument("--lang", metavar="LANG", choices=i18n.SUPPORTED, default=None,
                        help=_("language of reports, findings, exports and messages: {languages} (default: "
                               "FLEETMON_LANG, then LC_ALL, LC_MESSAGES, LANG; JSON output stays English)").format(
                            languages=", ".join(i18n.SUPPORTED)))
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in _COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    i18n.set_language(_language_asked(words) or i18n.language_from_environment())
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        # report, preflight and intake keep 2 for "something critical": their usage errors exit 1.
        if exc.code == 2 and _command_word(words) in ("report", "preflight", "intake"):
            raise SystemExit(1) from None
        raise
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
