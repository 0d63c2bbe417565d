"""`fleetmon import-smi`: add an ``nvidia-smi -q -x`` capture of a node to the database by hand.

For a node that was inspected once (an inspector's visit, a support bundle): the
capture goes through storage's normal ingest as one poll of that node
(:func:`fleetmon.sources.capture.capture_poll`), so its GPUs appear in the
inventory, the export, the reports and the node's history like any other.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from fleetmon.errors import KnownError

_DESCRIPTION = (
    "Add a capture of one node to the database: the output of `nvidia-smi -q -x` (or `nvidia-smi -q`) saved to a "
    "file. Its GPUs join the inventory (fleetmon export), the node shows in `fleetmon report`, and the readings are "
    "stored as one sample per GPU at the capture time. The capture time is the document's <timestamp> (read as "
    "this machine's local time: nvidia-smi writes no zone); a document without one (trimmed) takes the file's "
    "modification time. nvidia-smi writes no host name: the node is named by --node, else by the file name "
    "without its extension (node7.xml -> node7). What the document lacks is stored as not available, never zero.")


def run(args: argparse.Namespace) -> int:
    from fleetmon.sources.capture import capture_poll
    from fleetmon.sources.smi_text import parse_smi_report
    from fleetmon.sources.smi_xml import parse_smi_xml
    from storage.db import open_database
    from storage.ingest import ingest_polls
    from storage.rollup import maintain

    path = Path(args.file)
    try:
        data = path.read_bytes()
        mtime = os.stat(path).st_mtime
    except OSError as exc:
        raise KnownError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if data.lstrip()[:1] == b"<":
        capture = parse_smi_xml(data)
    else:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise KnownError(f"{path}: neither nvidia-smi XML nor text") from None
        capture = parse_smi_report(text)
    if not capture.gpus:
        raise KnownError(f"{path}: the capture describes no GPU")
    when = "the document's timestamp"
    if capture.ts is None:
        capture, when = capture.with_time(mtime), "the file's modification time (the document has no timestamp)"
    assert capture.ts is not None
    node = args.node or path.stem
    poll = capture_poll(capture, node, path.resolve().as_uri(), capture.ts)
    db = open_database(args.db)
    try:
        ingest_polls(db, [poll])
        maintain(db)
    finally:
        db.close()
    for note in capture.notes:
        print(f"fleetmon import-smi: note: {note}", file=sys.stderr)
    print(f"{node}: {len(capture.gpus)} GPU(s) from {path.name} ({capture.source}), captured "
          f"{_iso(capture.ts)} ({when})")
    return 0


def _iso(ts: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("import-smi", help="add an `nvidia-smi -q -x` capture of a node by hand",
                       description=_DESCRIPTION)
    p.add_argument("file", metavar="FILE.xml", help="the saved output of `nvidia-smi -q -x` (or `nvidia-smi -q`)")
    p.add_argument("--db", required=True, metavar="FILE", help="the fleetmon database (created if missing)")
    p.add_argument("--node", metavar="NAME",
                   help="the node's name in the fleet (default: the file name without its extension)")
    p.set_defaults(func=run)
