"""`fleetmon xid parse FILE`: the Xid events of a kernel log as JSON lines.

The parser is ``fleetmon.xid.parse``; this module reads the file (bytes,
decoded leniently, so a binary or half-written log never stops it), maps PCI
addresses to GPU UUIDs and prints.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from collections.abc import Iterable, Iterator
from typing import IO

from fleetmon.xid import parse_kernel_events, to_json
from fleetmon.i18n import current_language
from fleetmon.i18n import gettext as _

_PROG = "fleetmon xid parse"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``FILE`` and ``--gpus MAP.json`` to the ``xid parse`` subparser."""
    parser.add_argument(
        "file", metavar="FILE",
        help=_("kernel log to read (dmesg, journalctl -k, /var/log/kern.log); '-' reads stdin"),
    )
    parser.add_argument(
        "--gpus", metavar="MAP.json", default=None,
        help=_("JSON object mapping PCI address to GPU UUID, used to fill the 'gpu' field"),
    )


def _decoded_lines(stream: IO[bytes]) -> Iterator[str]:
    for raw in stream:
        yield raw.decode("utf-8", errors="replace")


def _load_gpu_map(path: str) -> dict[str, str]:
    with open(path, "rb") as f:
        data = json.loads(f.read().decode("utf-8", errors="replace"))
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise ValueError("expected a JSON object mapping PCI address to UUID string")
    return data


def main_parse(path: str, gpu_map_file: str | None = None, stdout: IO[str] = sys.stdout) -> int:
    """Print one JSON object per kernel event in ``path`` ('-' = stdin).

    Returns:
        0 on success; 1 if the log or the GPU map cannot be read, after one
        line "fleetmon xid parse: cannot read FILE: reason" on stderr.
    """
    gpu_map: dict[str, str] | None = None
    if gpu_map_file is not None:
        try:
            gpu_map = _load_gpu_map(gpu_map_file)
        except (OSError, ValueError) as e:
            print(f"{_PROG}: " + _("cannot read {file}: {why}").format(file=gpu_map_file, why=_reason(e)),
                  file=sys.stderr)
            return 1
    try:
        if path == "-":
            if sys.stdin is None:
                raise OSError(errno.EBADF, "no standard input")
            buffer = getattr(sys.stdin, "buffer", None)
            if buffer is not None:
                _emit(_decoded_lines(buffer), gpu_map, stdout)
            else:
                _emit(iter(sys.stdin), gpu_map, stdout)
        else:
            with open(path, "rb") as f:
                _emit(_decoded_lines(f), gpu_map, stdout)
    except BrokenPipeError:
        _silence_stdout(stdout)
        return 0
    except OSError as e:
        print(f"{_PROG}: " + _("cannot read {file}: {why}").format(file=path, why=_reason(e)), file=sys.stderr)
        return 1
    return 0


def _emit(lines: Iterable[str], gpu_map: dict[str, str] | None, stdout: IO[str]) -> None:
    translated = current_language() != "en"
    for event in parse_kernel_events(lines):
        d = to_json(event, gpu_map)
        if translated:
            # Scripts keep parsing the English ``meaning`` and ``action`` (as report --json's ``summary``); a
            # translated run adds the same in the reader's language, as report --json adds ``summary_text``.
            d["meaning_text"] = _(d["meaning"])
            d["action_text"] = _(d["action"])
        stdout.write(json.dumps(d, ensure_ascii=not translated) + "\n")  # English: byte for byte as before
    stdout.flush()


def _reason(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e) or type(e).__name__


def _silence_stdout(stdout: IO[str]) -> None:
    # https://docs.python.org/3/library/signal.html#note-on-sigpipe
    if stdout is sys.stdout:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass


def _run_parse(args: argparse.Namespace) -> int:
    return main_parse(args.file, getattr(args, "gpus", None))


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("xid", help=_("Xid tools: parse kernel logs"),
                       description=_("Xid event tools."))
    xsub = p.add_subparsers(dest="xid_command", metavar="SUBCOMMAND")
    xp = xsub.add_parser("parse", help=_("print the Xid events of a kernel log as JSON lines"),
                         description=_("Read a kernel log (dmesg, journalctl -k, /var/log/kern.log) and print "
                                     "one JSON object per Xid event."))
    add_arguments(xp)
    xp.set_defaults(func=_run_parse)

    def _help(args: argparse.Namespace) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=_help)
