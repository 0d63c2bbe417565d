"""`fleetmon export`: the inventory sheet (CSV or JSON) from the database.

One row per card ever seen: where it sits (node, index, PCI bus id), what it is
(model, UUID, serial, board part number, VBIOS, memory, power limits), the
node's driver, its state and when it was first and last seen, and its worst
open finding. Cards that left the fleet stay in the sheet with state "gone"
unless ``--current`` is given.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
import time
from pathlib import Path
from typing import Any

from fleetmon.vocab import severity_rank
from fleetmon.errors import KnownError

COLUMNS: tuple[str, ...] = (
    "node", "group", "gpu_index", "model", "uuid", "serial", "board_part_number", "vbios", "pci_bus_id",
    "memory_total_mib", "power_default_w", "power_enforced_w", "driver_version", "cuda_driver_version",
    "state", "first_seen", "last_seen", "open_findings", "worst_finding",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, metavar="FILE", help="the fleetmon database")
    p.add_argument("--format", choices=("csv", "json"), default="csv", help="output format (default csv)")
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
    p.add_argument("--current", action="store_true", help="only cards seen in the current inventory (not gone)")
    p.add_argument("--group", help="only nodes of this group")


def _iso(ts: Any) -> str:
    if ts is None:
        return ""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(ts)))


def inventory_rows(db: Any, *, current: bool = False, group: str | None = None) -> list[dict[str, Any]]:
    """The sheet's rows (keyed by :data:`COLUMNS`), ordered by node and index."""
    from storage.findings import open_findings
    from storage.queries import gpus, nodes
    from storage.rows import StoredFinding

    node_rows = {n.name: n for n in nodes(db)}
    findings: dict[str, list[StoredFinding]] = {}
    for f in open_findings(db):
        if f.gpu_uuid:
            findings.setdefault(f.gpu_uuid, []).append(f)
    out = []
    for g in gpus(db):
        n = node_rows.get(g.node or "")
        if current and g.state == "gone":
            continue
        if group is not None and (n.group if n else None) != group:
            continue
        mine = findings.get(g.uuid, [])
        # An integer severity (older callers) ranks as itself, as storage orders them.
        worst = max(mine, key=lambda f: f.severity if isinstance(f.severity, int) else severity_rank(f.severity),
                    default=None)
        out.append({
            "node": g.node or "", "group": (n.group if n else None) or "", "gpu_index": g.index,
            "model": g.model or "", "uuid": g.uuid, "serial": g.serial or "",
            "board_part_number": g.inventory.get("board_part_number") or "", "vbios": g.vbios or "",
            "pci_bus_id": g.pci_bus_id or "", "memory_total_mib": g.memory_total_mib,
            "power_default_w": g.power_default_w, "power_enforced_w": g.power_enforced_w,
            "driver_version": (n.driver_version if n else None) or "",
            "cuda_driver_version": (n.cuda_driver_version if n else None) or "",
            "state": g.state or "", "first_seen": _iso(g.first_seen),
            "last_seen": _iso(g.last_seen), "open_findings": len(mine),
            "worst_finding": f"{worst.severity}: {worst.kind}" if worst else "",
        })
    return out


def render(rows: list[dict[str, Any]], fmt: str) -> str:
    if fmt == "json":
        return json.dumps({"schema": 1, "columns": list(COLUMNS), "gpus": rows}, indent=2) + "\n"
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: "" if r.get(k) is None else r[k] for k in COLUMNS})
    return buf.getvalue()


def main(args: argparse.Namespace) -> int:
    from storage.db import open_database

    if not Path(args.db).is_file():
        raise KnownError(f"no database at {args.db}")
    db = open_database(args.db, readonly=True)
    try:
        rows = inventory_rows(db, current=args.current, group=args.group)
    finally:
        db.close()
    text = render(rows, args.format)
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise KnownError(f"cannot write {args.output}: {exc.strerror}") from exc
        print(f"wrote {len(rows)} GPUs to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
