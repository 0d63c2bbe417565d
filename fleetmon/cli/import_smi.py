"""`fleetmon import-smi`: add an ``nvidia-smi -q -x`` capture of a node to the database by hand.

For a node that was inspected once (an inspector's visit, a support bundle): the
capture goes through storage's normal ingest as one poll of that node
(:func:`fleetmon.sources.capture.capture_poll`), so its GPUs appear in the
inventory, the export, the reports and the node's history like any other.

A capture is foreign input, checked as the collector checks a polled source
(issue 20): only a regular file, its size checked before it is read and never
more than :data:`~fleetmon.sources.smi_xml.MAX_BYTES` + 1 bytes read; the node
name by the fleet file's rule; the capture by the collector's own checks
(GPU count, duplicate UUIDs, ranges, text) and then by the store's; a capture
time more than the collector's ``MAX_FUTURE_S`` ahead is refused. Whatever is
refused ends in one line on stderr, exit status 1, and nothing stored.
"""

from __future__ import annotations

import argparse
import codecs
import os
import re
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from fleetmon.errors import KnownError
from fleetmon.text import printable
from fleetmon.i18n import N_, Text, localized, reason_of
from fleetmon.i18n import gettext as _

if TYPE_CHECKING:
    from fleetmon.records import NodePoll
    from fleetmon.sources.capture import Capture
    from fleetmon.sources.formats import Format
    from sqlite_utils import Database

_DESCRIPTION = N_(
    "Add a capture of one node to the database: the output of `nvidia-smi -q -x` (or `nvidia-smi -q`) saved to a "
    "file. Its GPUs join the inventory (fleetmon export), the node shows in `fleetmon report`, and the readings are "
    "stored as one sample per GPU at the capture time. The capture time is the document's <timestamp> (read as "
    "this machine's local time: nvidia-smi writes no zone); a document without one (trimmed) takes the file's "
    "modification time (a modification time ahead of this machine's clock is not a capture time: the import "
    "takes now and says so). nvidia-smi writes no host name: the node is named by --node, else by the file name "
    "without its extension (node7.xml -> node7); either must be a valid node name as in the fleet file (letters, "
    "digits, '.', '-', '_'), else the import is refused and suggests one. What the document lacks is stored as "
    "not available, never zero. The capture passes the collector's checks (at most 64 MiB, a regular file, at "
    "most 64 GPUs, no duplicate UUIDs, no capture time more than 7 days ahead); a refused capture stores nothing "
    "and exits 1 with one line.")


@dataclass(frozen=True)
class Prepared:
    """A capture read, parsed and checked, ready to store (:func:`prepare`).

    Attributes:
        poll: the node's poll as storage's ingest takes it.
        capture: the parsed capture (its ``ts`` the capture time).
        notes: what to say on stderr after storing.
        when: where the capture time came from, for the summary line.
        shown: the file's path as messages show it.
    """

    poll: NodePoll
    capture: Capture
    notes: list[str]
    when: str
    shown: str


def run(args: argparse.Namespace) -> int:
    from storage.db import open_database

    path = Path(args.file)
    ready = prepare(path, args.node, fmt=getattr(args, "format", "auto"))
    db = open_database(args.db)  # opened only now: a refused capture leaves no trace, not even a new file
    try:
        stored = store(db, ready)
    finally:
        db.close()
    for note in ready.notes:
        print(f"fleetmon {_name(args)}: " + _("note: {note}").format(note=printable(localized(note), 400)),
              file=sys.stderr)
    dropped = len(ready.poll.minutes) - stored
    if dropped > 0:
        print(f"fleetmon {_name(args)}: " + _("note: {count} GPU(s) not stored: held by another node that answers "
                                              "(uuid-conflict)").format(count=dropped), file=sys.stderr)
    assert ready.capture.ts is not None
    print(_("{node}: {count} GPU(s) from {file} ({source}), captured {when} ({how})").format(
        node=ready.poll.node, count=stored, file=printable(path.name, 200), source=ready.capture.source,
        when=_iso(ready.capture.ts), how=localized(ready.when)))
    return 0


def _detected(data: bytes) -> Format | None:
    """The format the content shows, or None (then nvidia-smi's text parser says what is wrong)."""
    from fleetmon.sources import SourceError, formats

    try:
        return formats.detect(data)
    except SourceError:
        return None


def _name(args: argparse.Namespace) -> str:
    return str(getattr(args, "command_name", "import"))


def prepare(path: Path, node_arg: str | None, now: float | None = None, fmt: str = "auto") -> Prepared:
    """Read, parse and check a capture file as ``import`` does, writing nothing.

    ``fmt``: a name of :data:`fleetmon.sources.formats.FORMATS`, or ``auto`` (told by the content).

    Raises:
        KnownError: the file, its name or its capture is refused (one line: the reason).
    """
    from fleetmon.collector.client import _check_capture  # the checks a polled source's reading passes
    from fleetmon.collector.limits import MAX_FUTURE_S, MAX_GPUS_PER_NODE
    from fleetmon.collector.validate import BadAnswer
    from fleetmon.sources import SourceError, formats
    from fleetmon.sources.capture import capture_poll
    from fleetmon.sources.smi_text import parse_smi_report
    from fleetmon.sources.smi_xml import MAX_BYTES, parse_smi_xml
    from storage.boundary import RefusedPoll, check_poll

    shown = printable(str(path), 300)
    if fmt != "auto":
        try:
            formats.by_name(fmt)
        except SourceError as exc:
            raise KnownError(Text(N_("--format: {error}"), error=reason_of(exc))) from None
    data, mtime = _read_capped(path, shown, MAX_BYTES)
    node = _node_name(node_arg, path)
    body = data.lstrip()
    body = body[len(codecs.BOM_UTF8):].lstrip() if body.startswith(codecs.BOM_UTF8) else body
    try:
        chosen = formats.by_name(fmt) if fmt != "auto" else _detected(data)
        if chosen is None and body[:1] == b"<" or chosen is not None and chosen.name == "nvidia-smi-xml":
            capture = parse_smi_xml(data, MAX_GPUS_PER_NODE)  # the XML parser bounds the tree as it reads it
        elif chosen is None or chosen.name == "nvidia-smi-text":
            try:
                text = formats.decode(data)
            except SourceError:
                raise KnownError(Text(N_("{file}: not a capture (neither UTF-8 nor UTF-16 text)"), file=shown)) from None
            try:
                capture = parse_smi_report(text, MAX_GPUS_PER_NODE)
            except SourceError as exc:
                if chosen is not None:
                    raise
                raise SourceError(Text(N_("not a capture fleetmon reads (tried {formats}): {error}"),
                                       formats=", ".join(formats.names()), error=reason_of(exc))) from None
        else:
            capture = chosen.parse(data)
    except SourceError as exc:
        raise KnownError(Text(N_("{file}: {error}"), file=shown, error=reason_of(exc))) from None
    if not capture.gpus:
        raise KnownError(Text(N_("{file}: the capture describes no GPU"), file=shown))
    now = time.time() if now is None else now
    notes = list(capture.notes)
    when: str = Text(N_("the document's timestamp"))
    if capture.ts is None:
        if mtime > now + MAX_FUTURE_S:
            raise KnownError(Text(N_("{file}: the document has no timestamp and the file's modification time ({when}) "
                                     "is more than {days} days ahead of this machine's clock: not a capture time "
                                     "(set it with `touch -d`)"), file=shown, when=_iso(mtime),
                                  days=f"{MAX_FUTURE_S / 86_400:g}"))
        if mtime > now:
            notes.append(Text(N_("the file's modification time ({when}) is ahead of this machine's clock: the capture "
                                 "is stored as taken now"), when=_iso(mtime)))
            capture, when = capture.with_time(now), Text(N_("now (the document has no timestamp, the file's time is "
                                                            "ahead)"))
        else:
            capture, when = capture.with_time(mtime), Text(N_("the file's modification time (the document has no "
                                                              "timestamp)"))
    elif capture.ts > now + MAX_FUTURE_S:
        raise KnownError(Text(N_("{file}: the document's timestamp ({when}) is more than {days} days ahead of this "
                                 "machine's clock"), file=shown, when=_iso(capture.ts),
                              days=f"{MAX_FUTURE_S / 86_400:g}"))
    assert capture.ts is not None
    try:
        _check_capture(capture, shown)
    except BadAnswer as exc:
        raise KnownError(Text(N_("refused: {why}"), why=printable(" ".join(str(exc).split()), 400))) from None
    poll = capture_poll(capture, node, path.resolve().as_uri(), capture.ts)
    try:
        check_poll(poll)  # the store's own checks, before anything is written
    except RefusedPoll as exc:
        raise KnownError(Text(N_("{file}: the database refuses the capture: {why}"), file=shown,
                              why=printable(str(exc), 400))) from None
    return Prepared(poll, capture, notes, when, shown)


def store(db: Database, ready: Prepared) -> int:
    """Store a prepared capture: the number of GPUs stored (≥ 1).

    Raises:
        KnownError: the store refused it after all, or every GPU of it is held by another node.
    """
    from storage.ingest import ingest_polls
    from storage.rollup import maintain

    refused: dict[str, str] = {}
    stored = ingest_polls(db, [ready.poll], refused=refused)
    node = ready.poll.node
    if node in refused:
        raise KnownError(Text(N_("{file}: nothing stored, {why}"), file=ready.shown, why=printable(refused[node], 400)))
    maintain(db)
    if stored == 0:
        raise KnownError(Text(N_("{file}: no GPU stored: every GPU of the capture is held by another node that "
                                 "answers (see `fleetmon report`: uuid-conflict)"), file=ready.shown))
    return stored


def _node_name(given: str | None, path: Path) -> str:
    """The node's name, by the fleet file's rule for node names; refused (one line) when it breaks it.

    A default taken from the file name is refused too, not rewritten: two files whose names differ only
    in what a rewrite would change would land on one node unnoticed. The message suggests a valid name.
    """
    from fleetmon.fleet.validate import _HOSTNAME  # the fleet file's rule: one rule for every way a name enters

    name = path.stem if given is None else given
    if _HOSTNAME.fullmatch(name):
        return name
    rule = Text(N_("a node name is letters, digits, '.', '-', '_', starting and ending with a letter or digit"))
    if given is not None:
        raise KnownError(Text(N_("--node {name}: {rule}"), name=printable(repr(given), 300), rule=rule))
    fixed = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-._")[:253].strip("-._")
    if fixed and _HOSTNAME.fullmatch(fixed):
        raise KnownError(Text(N_("{file}: the file name {name} is no valid node name ({rule}): give one with --node "
                                 "(e.g. --node {fixed})"), file=printable(str(path), 300),
                              name=printable(repr(name), 300), rule=rule, fixed=fixed))
    raise KnownError(Text(N_("{file}: the file name {name} is no valid node name ({rule}): give one with --node"),
                          file=printable(str(path), 300), name=printable(repr(name), 300), rule=rule))


def _read_capped(path: Path, shown: str, cap: int) -> tuple[bytes, float]:
    """The file's bytes and modification time: a regular file only, its size checked before reading and
    at most ``cap`` + 1 bytes read (a file growing under us, /proc files that state size 0)."""
    try:
        before = os.stat(path)
    except OSError as exc:
        raise KnownError(_unreadable(shown, exc)) from None
    _check_kind(before, shown, cap)
    try:
        # O_NONBLOCK: should the path have become a FIFO since the stat, the open does not wait for a writer.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
                     | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        raise KnownError(_unreadable(shown, exc)) from None
    try:
        st = os.fstat(fd)
        _check_kind(st, shown, cap)
        chunks: list[bytes] = []
        got = 0
        while got <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
    except OSError as exc:
        raise KnownError(_unreadable(shown, exc)) from None
    finally:
        os.close(fd)
    if got > cap:
        raise KnownError(Text(N_("{file}: more than {cap} bytes, larger than an nvidia-smi capture may be"),
                              file=shown, cap=cap))
    return b"".join(chunks), st.st_mtime


def _unreadable(shown: str, exc: OSError) -> Text:
    return Text(N_("{file}: cannot read it ({why})"), file=shown, why=str(exc.strerror or exc))


def _check_kind(st: os.stat_result, shown: str, cap: int) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise KnownError(Text(N_("{file}: a directory, not a capture file"), file=shown))
    if not stat.S_ISREG(st.st_mode):
        kind = (Text(N_("a FIFO")) if stat.S_ISFIFO(st.st_mode) else Text(N_("a device")) if stat.S_ISCHR(st.st_mode)
                or stat.S_ISBLK(st.st_mode) else Text(N_("a socket")) if stat.S_ISSOCK(st.st_mode)
                else Text(N_("a special file")))
        raise KnownError(Text(N_("{file}: {kind}, not a regular file: save the capture to a file first"), file=shown,
                              kind=kind))
    if st.st_size > cap:
        raise KnownError(Text(N_("{file}: {size} bytes, more than the {cap} an nvidia-smi capture may have"),
                              file=shown, size=st.st_size, cap=cap))


def _iso(ts: float) -> str:
    """A capture time for people, in the reader's locale ("2026-12-03 15:30:00 UTC"; zh_CN "2026年12月3日 …")."""
    from fleetmon import i18n

    try:
        return f"{i18n.when(ts, seconds=True)} UTC"
    except (OverflowError, OSError, ValueError):
        return _("{seconds} s after 1970").format(seconds=f"{ts:.0f}")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("import", help=_("add a capture of a node by hand (nvidia-smi, amd-smi, npu-smi, …)"),
                       description=_(_DESCRIPTION) + _(_FORMATS_TEXT))
    p.add_argument("file", metavar="FILE", help=_("the saved output of a device tool (see --format)"))
    _common(p)
    p.set_defaults(func=run, command_name="import")
    p = sub.add_parser("import-smi", help=_("add an `nvidia-smi -q -x` capture of a node by hand (`import`'s alias)"),
                       description=_(_DESCRIPTION) + _(" `import-smi` is `fleetmon import` under its first name: it "
                                                         "takes the same files and flags."))
    p.add_argument("file", metavar="FILE.xml", help=_("the saved output of `nvidia-smi -q -x` (or `nvidia-smi -q`)"))
    _common(p)
    p.set_defaults(func=run, command_name="import-smi")


_FORMATS_TEXT = N_(" Besides nvidia-smi's XML and text, `import` reads the other vendors' tools named by --format; "
                 "with --format auto (the default) the content tells which.")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, metavar="FILE", help=_("the fleetmon database (created if missing)"))
    p.add_argument("--node", metavar="NAME",
                   help=_("the node's name in the fleet (default: the file name without its extension); letters, "
                        "digits, '.', '-', '_' as in the fleet file"))
    # The names are checked when the command runs (fleetmon.sources.formats), so that every other command
    # (the node agent among them) starts without importing the parsers.
    p.add_argument("--format", default="auto", metavar="NAME",
                   help=_("the capture's format: auto (the default: told by the content), nvidia-smi-xml, "
                        "nvidia-smi-text, or another vendor's tool format (the error for a wrong name lists them)"))
