"""The command-line reference (docs/cli.md), rendered from the argument parser itself.

``python -m fleetmon.cli.reference > docs/cli.md`` walks the parser that
:func:`fleetmon.cli.build_parser` builds and writes every command and
subcommand's usage, description, arguments and epilog as Markdown; a test
(tests/core/test_cli_reference.py) renders it again and compares it with the
committed file, so the reference cannot drift from the flags.

The rendering is deterministic on any machine and Python version:

* the usage lines and option tables are built here from the parser's actions,
  not taken from argparse's help formatter, whose wrapping follows the terminal
  width and whose layout changes between Python versions;
* help texts that name the resolved default paths (`fleetmon gui --help` and
  `fleetmon collect --help` print the database and fleet file as found on this
  machine, ``fleetmon.paths``) show the Linux defaults without ``XDG_*``
  variables (``~/.local/share/fleetmon``, ``~/.config/fleetmon``) instead.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["REGENERATE", "render", "stable_paths"]

REGENERATE = "python -m fleetmon.cli.reference > docs/cli.md"
"""The command that rewrites docs/cli.md (what the staleness test tells you to run)."""

USAGE_WIDTH = 100
STABLE_DATA_DIR = "~/.local/share/fleetmon"
STABLE_CONFIG_DIR = "~/.config/fleetmon"

HEADER = f"""\
# Command-line reference

<!-- Generated from the argument parser (fleetmon/cli/) by `{REGENERATE}`.
     Do not edit by hand: tests/core/test_cli_reference.py fails when this file is out of date. -->

Every command and subcommand also takes `-h` / `--help`, which prints the same text; `fleetmon --version`
prints the version. Default paths are shown as they resolve on Linux without `XDG_*` variables
(`{STABLE_DATA_DIR}/fleet.db`, `{STABLE_CONFIG_DIR}/fleet.toml`); `--help` prints them as resolved on
your machine. The user guide is [user-guide.md](user-guide.md); report formats and exit codes are in
[reports.md](reports.md).
"""


def stable_paths(text: str) -> str:
    """``text`` with this machine's fleetmon data and config directories replaced by the stable placeholders."""
    from fleetmon.paths import user_config_dir, user_data_dir

    pairs = sorted(((str(user_data_dir()), STABLE_DATA_DIR), (str(user_config_dir()), STABLE_CONFIG_DIR)),
                   key=lambda pair: -len(pair[0]))
    for real, placeholder in pairs:
        text = text.replace(real, placeholder)
    return text


# -- walking the parser --------------------------------------------------------------------


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[argparse.ArgumentParser] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def _commands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of each subcommand, in the order `--help` lists them."""
    sub = _subparsers(parser)
    if sub is None:
        return []
    helps = {a.dest: a.help or "" for a in sub._choices_actions}
    return [(name, helps.get(name, ""), p) for name, p in sub.choices.items()]


def _walk(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """Every command below ``parser``, depth first: (full name, one-line help, parser)."""
    for name, help_text, p in _commands(parser):
        yield p.prog, help_text, p
        yield from _walk(p)


# -- rendering one parser --------------------------------------------------------------------


def _expand(text: str | None, action: argparse.Action | None = None, prog: str = "") -> str:
    """A help text as argparse prints it: ``%(default)s`` and friends filled in, ``%%`` as ``%``."""
    if not text:
        return ""
    params: dict[str, Any] = dict(vars(action)) if action is not None else {}
    params["prog"] = prog
    for key, value in list(params.items()):
        if hasattr(value, "__name__"):
            params[key] = value.__name__
    try:
        text = text % params
    except (KeyError, TypeError, ValueError):
        pass
    return " ".join(stable_paths(text).split())


def _metavar(action: argparse.Action) -> str:
    if isinstance(action.metavar, tuple):
        return " ".join(action.metavar)
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None and not isinstance(action, argparse._SubParsersAction):
        return "{" + ",".join(str(c) for c in action.choices) + "}"
    return action.dest if not action.option_strings else action.dest.upper()


def _args_of(action: argparse.Action) -> str:
    """What follows the option (or stands for the positional) in a usage line."""
    if action.nargs == 0:
        return ""
    m = _metavar(action)
    if action.nargs == "?":
        return f"[{m}]"
    if action.nargs == "*":
        return f"[{m} ...]"
    if action.nargs == "+":
        return f"{m} [{m} ...]"
    if action.nargs == argparse.REMAINDER:
        return "..."
    if isinstance(action.nargs, int):
        return " ".join([m] * action.nargs)
    return m


def _shown(action: argparse.Action) -> bool:
    return action.help != argparse.SUPPRESS and not isinstance(action, (argparse._HelpAction,
                                                                        argparse._VersionAction))


def _usage(parser: argparse.ArgumentParser) -> str:
    words: list[str] = []
    positionals: list[str] = []
    for action in parser._actions:
        if not _shown(action):
            continue
        if isinstance(action, argparse._SubParsersAction):
            positionals.append(f"{_metavar(action)} ...")
        elif action.option_strings:
            word = " ".join(w for w in (action.option_strings[-1], _args_of(action)) if w)
            words.append(word if action.required else f"[{word}]")
        else:
            positionals.append(_args_of(action))
    # Wrapped between words, never inside one ("[--interval SECONDS]" stays whole), as argparse does.
    indent = " " * (len(parser.prog) + 1)
    lines = [parser.prog]
    for word in words + positionals:
        if len(lines[-1]) + 1 + len(word) > USAGE_WIDTH and lines[-1].strip():
            lines.append(indent + word)
        else:
            lines[-1] += " " + word
    return "\n".join(lines)


def _markdown(text: str) -> str:
    """Plain help text made safe for Markdown: ``<tag>`` outside code spans is not taken for HTML."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = parts[i].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def _cell(text: str) -> str:
    return _markdown(text).replace("|", "\\|")


def _option_name(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{_args_of(action)}`"
    args = _args_of(action)
    return ", ".join(f"`{s} {args}`" if args else f"`{s}`" for s in action.option_strings)


def _table(parser: argparse.ArgumentParser, actions: list[argparse.Action]) -> list[str]:
    rows = ["| argument | meaning |", "|---|---|"]
    for action in actions:
        meaning = _expand(action.help, action, parser.prog)
        if action.required and action.option_strings:
            meaning = f"**required**; {meaning}" if meaning else "**required**"
        rows.append(f"| {_option_name(action)} | {_cell(meaning)} |")
    return rows


def _section(name: str, help_text: str, parser: argparse.ArgumentParser, level: int) -> list[str]:
    out = [f"{'#' * level} `{name}`", ""]
    description = _expand(parser.description, prog=parser.prog) or _expand(help_text, prog=parser.prog)
    if description:
        out += [_markdown(description), ""]
    out += ["```", _usage(parser), "```", ""]
    positionals: list[argparse.Action] = []
    options: list[argparse.Action] = []
    groups: list[tuple[str, list[argparse.Action]]] = []
    for group in parser._action_groups:
        shown = [a for a in group._group_actions if _shown(a) and not isinstance(a, argparse._SubParsersAction)]
        # argparse's two default groups (their titles differ between Python versions) get ours.
        if group is parser._positionals:
            positionals += shown
        elif group is parser._optionals:
            options += shown
        elif shown:
            groups.append((group.title or "", shown))
    for title, actions in (("Arguments", positionals), ("Options", options), *groups):
        if actions:
            out += [f"{title[:1].upper()}{title[1:]}:", ""] + _table(parser, actions) + [""]
    commands = _commands(parser)
    if commands:
        out += ["Subcommands:", "", "| command | what |", "|---|---|"]
        out += [f"| [`{p.prog}`](#{_anchor(p.prog)}) | {_cell(_expand(h))} |" for _, h, p in commands]
        out.append("")
    epilog = _expand(parser.epilog, prog=parser.prog)
    if epilog:
        out += [_markdown(epilog), ""]
    return out


def _anchor(title: str) -> str:
    """GitHub's anchor of a heading "`title`": lower case, spaces as hyphens, other punctuation dropped."""
    return "".join(c if c.isalnum() or c in "-_" else "-" if c == " " else "" for c in title.lower())


def render(parser: argparse.ArgumentParser | None = None) -> str:
    """The whole reference as Markdown (``parser`` defaults to the `fleetmon` command's)."""
    if parser is None:
        from fleetmon import i18n
        from fleetmon.cli import build_parser

        # the reference is English whatever the language of the process (the help follows it when built)
        was = i18n.current_language()
        i18n.set_language("en")
        try:
            parser = build_parser()
        finally:
            i18n.set_language(was)
    lines = [HEADER, "## Commands", "", "| command | what |", "|---|---|"]
    lines += [f"| [`{prog}`](#{_anchor(prog)}) | {_cell(_expand(h))} |" for prog, h, _ in _walk(parser)]
    lines.append("")
    top = [a for a in parser._optionals._group_actions if _shown(a)]
    if top:
        lines += ["## Global options", "", "Given before the command (`fleetmon --lang zh_CN report ...`):", ""]
        lines += _table(parser, top) + [""]
    for prog, help_text, p in _walk(parser):
        lines += _section(prog, help_text, p, 2 if prog.count(" ") == 1 else 3)
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> int:
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
