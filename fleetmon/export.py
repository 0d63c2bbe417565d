"""`fleetmon export`: the inventory sheet (XLSX, CSV or JSON) from the database.

One row per card ever seen: where it sits (node, group, index, PCI bus id),
what it is (model, UUID, serial, board part number, VBIOS, memory, power
limits, PCIe maximum), the node's driver, its state, when it was first and
last seen, its health, its verdict and its open findings. Cards that left the
fleet stay in the sheet with state "gone" unless ``--current`` is given.

Health and verdict are judged as the report judges a node
(:mod:`fleetmon.health.verdict`): ``verdict`` is the card's verdict word
(fail, unreachable, stale, unknown, warn, pass) from its own and its node's
open findings and its node's reachability at ``now`` (a card still in its
node's inventory whose newest record is older than the stale limit while the
node answers is stale too); ``health`` keeps its old words where they apply
(fail → "critical", warn → "warning", pass → "ok", or "info" when only info
findings are open) and says "unreachable", "stale" or "unknown" for a card
nobody hears from, never "ok".

``open_findings`` counts the open findings of the card and of its node (a
driver mismatch, a flapping node: the ones *Findings* lists as ``(node)``),
and ``worst_finding`` is the worst of them: what the verdict is judged from.

The XLSX workbook adds a sheet of the open findings and one of the version
matrix (driver / CUDA driver / VBIOS by group and model, with node counts).
CSV and JSON keep their columns (:data:`COLUMNS`).

Printed (or converted to PDF), the Inventory sheet is landscape A4 at a
readable scale (:data:`PRINT_SCALE`), the header row and the Node, Group and
Slot columns on every page, the columns that do not fit on following pages,
and a page header with the fleet and the export's date. The app's
*Print inventory…* (``ui.print_inventory``) prints :data:`PRINT_SECTIONS`:
the columns an inspector reads across the page, the rest in a second section, the vendor and its versions in a third.

The file written takes the mode the user's umask gives a new file (as
``open()`` or a shell redirection would), never the 0600 of a temporary file.

Formula injection: a text cell a spreadsheet would run as a formula (one that
starts with ``= + - @``, a tab or a carriage return; a node may be named
anything in a fleet file) is neutralised. In CSV it gets a leading ``'`` (the
OWASP advice: a CSV has no way to say "text"). In XLSX it is written as a
string cell (never a formula) with Excel's *quote prefix* format: the value
read back is the exact text, and the cell stays text when someone edits it
in Excel or LibreOffice. Numbers (a negative reading) stay numbers. JSON is
data, not a sheet, and is left as it is (its encoder escapes control characters).

Control characters: foreign text (a model name with ESC, BEL or NUL from a
hostile capture) is written to CSV and XLSX cells with its control characters
as visible escapes (``\x1b``, :func:`fleetmon.text.printable`), line breaks and tabs kept.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import errno
import io
import json
import os
import secrets
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleetmon import hostlist
from fleetmon.health import verdict as V
from fleetmon.health import wording as W
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text, current_language, localized
from fleetmon.i18n import gettext as _
from fleetmon.vocab import severity_rank
from fleetmon.errors import KnownError
from fleetmon.text import printable
from fleetmon.fields import DEFAULT_VENDOR
from fleetmon.vendors import runtime_name, vendor_key, vendor_name, vendor_order

COLUMNS: tuple[str, ...] = (
    "node", "group", "gpu_index", "model", "uuid", "serial", "board_part_number", "vbios", "pci_bus_id",
    "memory_total_mib", "power_default_w", "power_enforced_w", "driver_version", "cuda_driver_version",
    "state", "first_seen", "last_seen", "open_findings", "worst_finding", "verdict", "intake", "intake_at",
    "vendor", "runtime_version", "firmware_version",
)
"""The CSV and JSON columns, in order: the first sheet's, then those added since (``verdict``; ``intake``
and ``intake_at``, the card's newest intake verdict and its time; ``vendor`` (nvidia, amd, hygon, huawei,
intel, mthreads), ``runtime_version`` (the node's CUDA, ROCm, CANN, … version) and ``firmware_version``
(the card's, else its node's)), appended so that a script reading columns by position or by name keeps
working."""

HEALTH_OF_VERDICT: dict[str, str] = {"fail": "critical", "warn": "warning", "pass": "ok"}
"""The inventory's ``health`` word of a verdict; the silent verdicts (unreachable, stale, unknown) stand as
they are."""

FORMATS = ("xlsx", "csv", "json")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""What makes a spreadsheet read a text cell as a formula (OWASP, CSV injection)."""

Progress = Callable[[int, int], "bool | None"]
"""``progress(done, total)`` during a write: rows written so far of all rows; returning False cancels."""


class ExportCancelled(Exception):
    """The progress callback asked to stop; no file was left behind."""


@dataclass(frozen=True)
class Column:
    """One column of a workbook sheet: the row key, its header, width (characters) and kind.

    ``kind`` is "text", "wrap" (long text, wrapped in the column's width so that a printed page
    shows all of it), "int", "float" or "date" (a Unix time, written as an Excel date).
    """

    key: str
    header: str  # English, marked for translation: shown as fleetmon.i18n._(header)
    width: float
    kind: str = "text"


INVENTORY_SHEET: tuple[Column, ...] = (
    Column("node", N_("Node"), 14), Column("group", N_("Group"), 13), Column("gpu_index", N_("Slot"), 6, "int"),
    Column("pci_bus_id", N_("PCI bus id"), 17), Column("model", N_("Model"), 24), Column("serial", N_("Serial"), 16),
    Column("uuid", N_("UUID"), 42), Column("board_part_number", N_("Board part"), 20), Column("vbios", N_("VBIOS"), 15),
    Column("driver_version", N_("Driver"), 11), Column("cuda_driver_version", N_("CUDA driver"), 11),
    Column("memory_total_mib", N_("Memory (MiB)"), 12, "int"),
    Column("power_default_w", N_("Power default (W)"), 12, "float"),
    Column("power_enforced_w", N_("Power limit (W)"), 11, "float"),
    Column("power_min_w", N_("Power min (W)"), 10, "float"), Column("power_max_w", N_("Power max (W)"), 10, "float"),
    Column("pcie_max_gen", N_("PCIe max gen"), 9, "int"), Column("pcie_max_width", N_("PCIe max width"), 9, "int"),
    Column("state", N_("State"), 8), Column("first_seen_ts", N_("First seen (UTC)"), 18, "date"),
    Column("last_seen_ts", N_("Last seen (UTC)"), 18, "date"), Column("health", N_("Health"), 9),
    Column("open_findings", N_("Open findings"), 9, "int"), Column("findings", N_("Findings"), 70, "wrap"),
    Column("verdict", N_("Verdict"), 11), Column("intake_text", N_("Intake"), 16),
    # issue 23, appended (a sheet read by column keeps its columns): the vendor and its versions.
    Column("vendor_name", N_("Vendor"), 13), Column("runtime_text", N_("Runtime"), 14),
    Column("firmware_version", N_("Firmware"), 14),
)
FINDINGS_SHEET: tuple[Column, ...] = (
    Column("severity", N_("Severity"), 9), Column("kind", N_("Kind"), 22), Column("node", N_("Node"), 14),
    Column("group", N_("Group"), 13), Column("gpu_index", N_("GPU"), 5, "int"), Column("gpu_uuid", N_("UUID"), 42),
    Column("first_seen", N_("First seen (UTC)"), 17, "date"), Column("last_seen", N_("Last seen (UTC)"), 17, "date"),
    Column("evidence", N_("Evidence"), 50, "wrap"), Column("action", N_("Action"), 60, "wrap"),
    Column("ack", N_("Acknowledged"), 30, "wrap"),
)
VERSIONS_SHEET: tuple[Column, ...] = (
    Column("group", N_("Group"), 13), Column("model", N_("Model"), 24), Column("component", N_("Component"), 12),
    Column("version", N_("Version"), 16), Column("baseline", N_("Baseline"), 9), Column("nodes", N_("Nodes"), 7, "int"),
    Column("gpus", N_("GPUs"), 7, "int"), Column("node_list", N_("Nodes running it"), 40, "wrap"),
    Column("vendor_name", N_("Vendor"), 13),  # issue 23, appended; the rows are grouped by vendor (NVIDIA first)
)


PRINT_SCALE = 75
"""The Inventory sheet's print scale (%): Calibri 11 prints at about 8 pt."""

PRINT_SECTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (N_("Health"), ("node", "group", "gpu_index", "model", "serial", "pci_bus_id", "state", "verdict", "health",
                "open_findings", "findings", "last_seen_ts", "intake_text")),
    (N_("Identity, firmware and limits"), (
        "node", "gpu_index", "uuid", "board_part_number", "vbios", "driver_version", "cuda_driver_version",
        "memory_total_mib", "power_default_w", "power_enforced_w", "power_min_w", "power_max_w", "pcie_max_gen",
        "pcie_max_width", "first_seen_ts")),
    (N_("Vendor and versions"), ("node", "gpu_index", "model", "vendor_name", "driver_version", "runtime_text",
                             "firmware_version")),  # issue 23: a section of its own (the others are full)
)
"""The printed inventory's sections, each a page-wide table of :data:`INVENTORY_SHEET` keys: first what an
inspector reads (where a card sits, what it is, its verdict and findings), then the rest, each row named
again by node and slot. Every column of the sheet is in one of them."""


def fleet_label(db_path: str | os.PathLike[str], name: str | None = None) -> str:
    """The fleet a printed sheet names: the fleet file's ``name`` when it has one, else the database's file name."""
    return name or Path(db_path).name


@dataclass
class Sheet:
    """What an export writes: the inventory rows, the open findings and the version matrix."""

    gpus: list[dict[str, Any]] = field(default_factory=list)
    findings: list[dict[str, Any]] = field(default_factory=list)
    versions: list[dict[str, Any]] = field(default_factory=list)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", required=True, metavar="FILE", help=_("the fleetmon database"))
    p.add_argument("--format", choices=FORMATS, default=None,
                   help=_("output format (default: from the -o extension, .xlsx/.csv/.json; else csv)"))
    p.add_argument("-o", "--output", metavar="FILE", help=_("write here instead of standard output (xlsx needs it)"))
    p.add_argument("--current", action="store_true", help=_("only cards seen in the current inventory (not gone)"))
    p.add_argument("--group", help=_("only nodes of this group"))


def format_for(path: str | os.PathLike[str] | None, fmt: str | None = None) -> str:
    """The format: ``fmt`` when given, else the file's extension (.xlsx, .csv, .json), else csv."""
    if fmt:
        return fmt
    ext = Path(path).suffix.lower().lstrip(".") if path else ""
    return ext if ext in FORMATS else "csv"


def neutralise(text: str) -> str:
    """``text`` with a leading ``'`` when a spreadsheet would run it as a formula (for CSV)."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def shown(text: str) -> str:
    """A sheet's text cell: control characters (ESC, BEL, NUL … of a hostile model name) as visible escapes,
    line breaks and tabs kept (a wrapped cell lists one finding a line; a tab moves no cursor and is
    neutralised as a formula start); see :func:`fleetmon.text.printable`."""
    return "\n".join("\t".join(printable(part) for part in line.split("\t")) for line in text.split("\n"))


def is_formula_like(text: str) -> bool:
    return text.startswith(FORMULA_STARTS)


def _iso(ts: Any) -> str:
    if ts is None:
        return ""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(ts)))


def _rank(severity: Any) -> int:
    # An integer severity (older callers) ranks as itself, as storage orders them.
    return severity if isinstance(severity, int) else severity_rank(severity)


def _evidence_text(ev: Mapping[str, Any] | None) -> str:
    if not ev:
        return ""
    if ev.get("summary"):
        summary = ev["summary"]
        return summary if isinstance(summary, str) else str(summary)  # an i18n.Text (m017) stays one: the XLSX says it
    return ", ".join(f"{k}={v}" for k, v in ev.items() if isinstance(v, (str, int, float)) and v != "")


def inventory_rows(db: Any, *, current: bool = False, group: str | None = None, now: float | None = None,
                   stale_after_s: float | None = None) -> list[dict[str, Any]]:
    """The sheet's rows (keyed by :data:`COLUMNS` and the workbook's extra keys), ordered by node and index."""
    return read_sheet(db, current=current, group=group, now=now, stale_after_s=stale_after_s).gpus


def health_word(verdict: str, severities: Iterable[Any] = ()) -> str:
    """The ``health`` cell of a card of ``verdict`` whose open findings have ``severities``."""
    if verdict == "pass" and any(str(s) == "info" for s in severities):
        return "info"
    return HEALTH_OF_VERDICT.get(verdict, verdict)


def read_sheet(db: Any, *, current: bool = False, group: str | None = None, now: float | None = None,
               stale_after_s: float | None = None) -> Sheet:
    """Everything an export writes, read from an open database.

    ``now`` (default: the clock) is when health and verdict are judged; ``stale_after_s`` is the stale
    limit (default: :class:`fleetmon.health.thresholds.Thresholds` ``stale_after_minutes``).
    """
    from storage.acks import active_acks
    from storage.findings import open_findings
    from storage.health_input import nodes_as_of
    from storage.intake import latest_intakes
    from storage.queries import gpus, nodes
    from storage.rows import StoredFinding

    now = time.time() if now is None else now
    limit = Thresholds().stale_after_minutes * 60.0 if stale_after_s is None else float(stale_after_s)
    node_rows = {n.name: n for n in nodes_as_of(db, nodes(db), now)}
    reach: dict[str, str | None] = {
        n.name: V.reach_of(last_ok=n.last_ok, last_attempt=n.last_attempt, outage_open=n.status == "unreachable",
                           now=now, stale_after_s=limit) for n in node_rows.values()}
    card_findings: dict[str, list[StoredFinding]] = {}
    node_findings: dict[str, list[StoredFinding]] = {}
    all_open = open_findings(db)
    for f in all_open:
        if f.gpu_uuid:
            card_findings.setdefault(f.gpu_uuid, []).append(f)
        elif f.node:
            node_findings.setdefault(f.node, []).append(f)
    intakes = latest_intakes(db)
    sheet = Sheet()
    cards: dict[str, dict[str, Any]] = {}
    for g in gpus(db):
        n = node_rows.get(g.node or "")
        if current and g.state == "gone":
            continue
        if group is not None and (n.group if n else None) != group:
            continue
        mine = card_findings.get(g.uuid, [])
        theirs = node_findings.get(g.node or "", [])
        worst = max(mine + theirs, key=lambda f: _rank(f.severity), default=None)
        # The card's reachability: its node's (a card whose node is unknown here: "unknown"); while the
        # node answers, a card still in its inventory with no record for longer than the limit is stale.
        own = reach.get(g.node or "", "unknown")
        if own is None and g.state != "gone" and (g.last_seen is None or now - float(g.last_seen) > limit):
            own = "unknown" if g.last_seen is None else "stale"
        verdict = V.combine([(str(f.severity), f.kind) for f in mine + theirs], own)
        listed = sorted(mine, key=lambda f: -_rank(f.severity)) + sorted(theirs, key=lambda f: -_rank(f.severity))
        inv = g.inventory
        vendor = vendor_key(g.vendor or (n.vendor if n else None))
        runtime = (n.runtime_version if n else None) or (
            (n.cuda_driver_version if n else None) if vendor == DEFAULT_VENDOR else None)
        row = {
            "node": g.node or "", "group": (n.group if n else None) or "", "gpu_index": g.index,
            "model": g.model or "", "uuid": g.uuid, "serial": g.serial or "",
            "board_part_number": inv.get("board_part_number") or "", "vbios": g.vbios or "",
            "pci_bus_id": g.pci_bus_id or "", "memory_total_mib": g.memory_total_mib,
            "power_default_w": g.power_default_w, "power_enforced_w": g.power_enforced_w,
            "driver_version": (n.driver_version if n else None) or "",
            "cuda_driver_version": (n.cuda_driver_version if n else None) or "",
            "state": g.state or "", "first_seen": _iso(g.first_seen),
            # The card's and its node's open findings, as Findings lists them and the verdict weighs them.
            "last_seen": _iso(g.last_seen), "open_findings": len(mine) + len(theirs),
            "worst_finding": f"{worst.severity}: {worst.kind}" if worst else "",
            # The workbook's further columns (CSV and JSON keep COLUMNS).
            "power_min_w": inv.get("power_min_w"), "power_max_w": inv.get("power_max_w"),
            "pcie_max_gen": inv.get("pcie_max_gen"), "pcie_max_width": inv.get("pcie_max_width"),
            "first_seen_ts": g.first_seen, "last_seen_ts": g.last_seen,
            "health": health_word(verdict, (f.severity for f in mine + theirs)),
            "verdict": verdict,
            "intake": intakes[g.uuid].verdict if g.uuid in intakes else "",
            "intake_at": _iso(intakes[g.uuid].ts) if g.uuid in intakes else "",
            "intake_text": f"{intakes[g.uuid].verdict} {_iso(intakes[g.uuid].ts)[:10]}" if g.uuid in intakes else "",
            "findings": "; ".join(f"{f.severity}: {f.kind}" + ("" if f.gpu_uuid else " (node)") for f in listed),
            # issue 23: the card's vendor and the vendor's versions (appended to COLUMNS).
            "vendor": vendor, "vendor_name": vendor_name(vendor),
            "runtime_version": runtime or "",
            "runtime_text": f"{runtime_name(vendor)} {runtime}" if runtime else "",
            "firmware_version": str(inv.get("firmware_version") or (n.firmware_version if n else None) or ""),
        }
        cards[g.uuid] = row
        sheet.gpus.append(row)

    def group_of(node: str | None) -> str:
        n = node_rows.get(node or "")
        return (n.group if n else None) or ""

    def shown_finding(f: StoredFinding) -> bool:
        if f.gpu_uuid:
            return f.gpu_uuid in cards
        return group is None or (f.node in node_rows and group_of(f.node) == group)

    shown = [f for f in all_open if shown_finding(f)]
    acked = active_acks(db, [(f.key, f.severity) for f in shown], now)
    for f in sorted(shown, key=lambda f: (-_rank(f.severity), hostlist.sort_key(f.node or ""), f.kind)):
        a = acked.get(f.key)
        ack = ""
        if a is not None:
            ack = _ack_text(_iso(a.until) if a.until is not None else None, a.by, a.note)
        card = cards.get(f.gpu_uuid or "")
        sheet.findings.append({
            "severity": str(f.severity), "kind": f.kind, "node": f.node or "", "group": group_of(f.node),
            "gpu_index": card["gpu_index"] if card else None, "gpu_uuid": f.gpu_uuid or "",
            "first_seen": f.first_seen, "last_seen": f.last_seen, "evidence": _evidence_text(f.evidence),
            "action": f.action or "", "ack": ack})
    sheet.versions = version_matrix(sheet.gpus)
    return sheet


def _ack_text(until: str | None, by: str | None, note: str | None) -> Text:
    """"acknowledged by ann: fan ordered", "snoozed until 2024-05-02T10:00:00Z" (an i18n.Text: the workbook
    says it in the reader's language)."""
    if until is not None:
        text = (Text(N_("snoozed until {until} by {who}"), until=until, who=by) if by else
                Text(N_("snoozed until {until}"), until=until))
    else:
        text = Text(N_("acknowledged by {who}"), who=by) if by else Text(N_("acknowledged"))
    return Text(N_("{text}: {note}"), text=text, note=note) if note else text


_VERSION_WORDS = {"baseline": N_("baseline"), "outlier": N_("outlier")}
"""The Versions sheet's baseline column in words (the rows keep the English values)."""


def shown_value(key: str, value: Any) -> Any:
    """A workbook (and printed) cell's value in the reader's language: the verdict and health words, the intake
    verdict, a finding's severity, baseline / outlier, a rule's fixed advice (in the catalog), the acknowledgement
    and a stored finding's summary (an ``i18n.Text`` when the row keeps how it was made, m017; else as stored); anything
    else (names, identifiers, figures) as it is. CSV and JSON never come here: they keep the English values."""
    if not isinstance(value, str) or not value:
        return value
    if key in ("health", "verdict"):
        return W.word(value)
    if key == "severity" and value in W.SEV and current_language() != "en":
        return _(W.SEV[value])  # 严重 / 警告 / 提示, as the report says them (English: the stored word, as before)
    if key == "baseline":
        return _(_VERSION_WORDS[value]) if value in _VERSION_WORDS else value
    if key == "intake_text":  # "REJECT 2026-12-03": the verdict said as the certificate says it (拒收)
        from fleetmon.intake import status_word  # imported here: the intake checks pull in the health engine

        verdict, sep, day = value.partition(" ")
        return f"{status_word(verdict)}{sep}{day}"
    if key in ("action", "ack", "evidence"):
        return localized(value)
    return value


def _hostlist(names: set[str]) -> str:
    """A Slurm hostlist of ``names``; a name that cannot be in one (a space, a comma) is listed after it, quoted."""
    return hostlist.compress_lenient(names)


def _baseline(counts: Counter[str]) -> str | None:
    top = counts.most_common(2)
    if not top or (len(top) == 2 and top[0][1] == top[1][1]):
        return None  # no majority
    return top[0][0]


def version_matrix(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Driver / runtime / VBIOS / firmware by vendor, group and model: one row per version in use, with node
    and GPU counts.

    NVIDIA's rows are those of before issue 23 (Driver, CUDA driver, VBIOS); another vendor's runtime is
    named for it (ROCm, CANN, …, :data:`fleetmon.vendors.RUNTIME_NAMES`), and a firmware version (the card's,
    else its node's) gets a Firmware row. Each row carries ``vendor`` (the stored value) and
    ``vendor_name``; rows are grouped by vendor (NVIDIA first), then group and model. Cards that are gone
    are left out. The baseline is the majority, within one vendor: of the group's nodes for the drivers
    and runtimes (a node's driver serves all its cards), of the group's cards of that model for the VBIOS
    and firmware, as the mismatch rules compare (ungrouped nodes: of the ungrouped nodes of that model).
    """
    present = [r for r in rows if r.get("state") != "gone"]
    group_nodes: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in present:
        vendor = vendor_key(r.get("vendor"))
        for comp, key in (("driver", "driver_version"), ("runtime", _runtime_key(vendor))):
            if r.get(key):
                # Ungrouped nodes are compared per model, as the driver-mismatch rule does.
                scope = r["group"] if r["group"] else f"\0{r['model']}"
                group_nodes.setdefault((vendor, scope, comp), {})[r["node"]] = r[key]
    keyed: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for r in present:
        keyed.setdefault((vendor_key(r.get("vendor")), r["group"], r["model"]), []).append(r)
    out: list[dict[str, Any]] = []
    for (vendor, grp, model), cards in sorted(keyed.items(), key=lambda kv: (vendor_order(kv[0][0]), kv[0][1:])):
        for comp, key, label in (("driver", "driver_version", "Driver"),
                                 ("runtime", _runtime_key(vendor), _runtime_label(vendor)),
                                 ("vbios", "vbios", "VBIOS"), ("firmware", "firmware_version", "Firmware")):
            if comp in ("vbios", "firmware"):
                base = _baseline(Counter(c[key] for c in cards if c.get(key)))
            else:
                base = _baseline(Counter(group_nodes.get((vendor, grp if grp else f"\0{model}", comp), {}).values()))
            by: dict[str, list[Mapping[str, Any]]] = {}
            for c in cards:
                if c.get(key):
                    by.setdefault(str(c[key]), []).append(c)
            for version, having in sorted(by.items(), key=lambda kv: (kv[0] != base, -len(kv[1]), kv[0])):
                names = {c["node"] for c in having}
                out.append({"group": grp, "model": model, "component": label, "version": version,
                            "baseline": "baseline" if version == base else ("outlier" if base else ""),
                            "nodes": len(names), "gpus": len(having), "node_list": _hostlist(names),
                            "vendor": vendor, "vendor_name": vendor_name(vendor)})
    return out


def _runtime_key(vendor: str) -> str:
    """The row key of a vendor's runtime: NVIDIA's stays the CUDA driver version (the sheet's first column)."""
    return "cuda_driver_version" if vendor == DEFAULT_VENDOR else "runtime_version"


def _runtime_label(vendor: str) -> str:
    return "CUDA driver" if vendor == DEFAULT_VENDOR else runtime_name(vendor)


def render(rows: list[dict[str, Any]], fmt: str) -> str:
    """CSV or JSON text of :data:`COLUMNS`; CSV text cells that would run as formulas get a leading ``'``."""
    if fmt == "json":
        gpus = [{k: r.get(k) for k in COLUMNS} for r in rows]
        return json.dumps({"schema": 1, "columns": list(COLUMNS), "gpus": gpus}, indent=2) + "\n"
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: "" if r.get(k) is None else (neutralise(shown(r[k])) if isinstance(r[k], str) else r[k])
                         for k in COLUMNS})
    return buf.getvalue()


def _excel_date(ts: float) -> dt.datetime:
    # Excel dates carry no zone: the sheet says UTC in the header.
    return dt.datetime.fromtimestamp(float(ts), dt.timezone.utc).replace(tzinfo=None)


def write_xlsx(path: str | os.PathLike[str], sheet: Sheet, progress: Progress | None = None, *,
               fleet: str = "", now: float | None = None) -> None:
    """The workbook: Inventory, Open findings and Versions sheets, each with a bold frozen header and filters.

    ``fleet`` and ``now`` (default: the clock) title the printed pages.
    """
    import xlsxwriter  # type: ignore[import-untyped]  # no py.typed; the Workbook is Any here

    total = len(sheet.gpus) + len(sheet.findings) + len(sheet.versions)
    done = 0
    # write_string/number/datetime only; no sheet text is ever taken for a formula or a link.
    wb = xlsxwriter.Workbook(str(path), {"strings_to_formulas": False, "strings_to_urls": False,
                                         "strings_to_numbers": False})
    try:
        header = wb.add_format({"bold": True, "bg_color": "#DDE4EE", "bottom": 1, "text_wrap": True,
                                "valign": "top"})
        # Every cell aligned to the top, so that a row grown for wrapped text reads as one line of facts.
        fmts = {"date": wb.add_format({"num_format": "yyyy-mm-dd hh:mm", "align": "center", "valign": "top"}),
                "float": wb.add_format({"num_format": "0.0", "valign": "top"}),
                "int": wb.add_format({"num_format": "0", "align": "center", "valign": "top"}),
                "wrap": wb.add_format({"text_wrap": True, "valign": "top"})}
        quoted = wb.add_format({"quote_prefix": True, "text_wrap": True, "valign": "top"})
        red = wb.add_format({"bg_color": "#F4C7C3", "valign": "top"})
        amber = wb.add_format({"bg_color": "#FCE8B2", "valign": "top"})
        grey = wb.add_format({"bg_color": "#E0E0E0", "valign": "top"})
        # Health and verdict cells of a card that is not well, and severity cells of findings.
        tint = {"critical": red, "warning": amber, "fail": red, "unreachable": red, "stale": amber,
                "unknown": grey, "warn": amber}
        for name, columns, rows in (("Inventory", INVENTORY_SHEET, sheet.gpus),
                                    ("Open findings", FINDINGS_SHEET, sheet.findings),
                                    ("Versions", VERSIONS_SHEET, sheet.versions)):
            # Sheet names and headers are read by people: they follow the language (CSV and JSON keep
            # COLUMNS, a contract for scripts).
            title = _(_SHEET_NAMES[name])
            ws = wb.add_worksheet(title)
            for c, col in enumerate(columns):
                ws.write_string(0, c, _(col.header), header)
                ws.set_column(c, c, col.width, fmts.get(col.kind))
            ws.set_row(0, 30)
            ws.freeze_panes(1, 2 if name == "Inventory" else 0)
            # Printed (or converted to PDF): landscape A4 at a readable scale (fitting the 25 columns onto one
            # page wide printed them at 3 pt), the header row on every page and, on the Inventory, the card's
            # node, group and slot too, so that the columns that go to the following pages stay attributable.
            ws.set_landscape()
            ws.set_paper(9)
            ws.set_print_scale(PRINT_SCALE)
            ws.repeat_rows(0)
            if name == "Inventory":
                ws.repeat_columns(0, 2)
            ws.print_across()  # a page's rows continue to the right before the next rows
            ws.set_margins(left=0.4, right=0.4, top=0.7, bottom=0.5)
            ws.set_header(_page_header(_(_PAGE_TITLES[name]), fleet, now), {"margin": 0.3})
            # "&P" and "&N" are Excel's page codes; "&" in a sheet name would start one, so it is doubled
            ws.set_footer(f"&L{title.replace('&', '&&')}&R" + _("Page {page} of {pages}").format(page="&P", pages="&N"))
            ws.autofilter(0, 0, max(len(rows), 1), len(columns) - 1)
            for r, row in enumerate(rows, start=1):
                shown = [shown_value(col.key, row.get(col.key)) for col in columns]  # once per cell
                for c, col in enumerate(columns):
                    _write_cell(ws, r, c, shown[c], col.kind, fmts, quoted)
                lines = max((wrapped_lines(shown[c], col.width) for c, col in enumerate(columns) if col.kind == "wrap"),
                            default=1)
                if lines > 1:
                    # Spreadsheets do not all grow a row for wrapped text on opening (LibreOffice's
                    # PDF conversion keeps one line and overprints): the height is set here.
                    ws.set_row(r, 15 * lines, fmts["wrap"])  # the row's plain text cells: top, wrapped
                for key in (("health", "verdict") if name == "Inventory" else ("severity",)):
                    sev = row.get(key)
                    if sev in tint:
                        c = next(i for i, col in enumerate(columns) if col.key == key)
                        ws.write_string(r, c, str(shown_value(key, sev)), tint[str(sev)])
                done += 1
                if progress is not None and (done % 200 == 0 or done == total) and progress(done, total) is False:
                    raise ExportCancelled()
        if progress is not None and total == 0:
            progress(0, 0)
    finally:
        wb.close()


_SHEET_NAMES = {"Inventory": N_("Inventory"), "Open findings": N_("Open findings"), "Versions": N_("Versions")}
_PAGE_TITLES = {"Inventory": N_("fleetmon inventory"), "Open findings": N_("fleetmon open findings"),
                "Versions": N_("fleetmon versions")}


def _page_header(title: str, fleet: str, now: float | None) -> str:
    """A printed page's header: the title and fleet at the left, the export's date (UTC) at the right."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(time.time() if now is None else now))
    text = f"{title} — {fleet}" if fleet else title
    # "&" starts a header code in Excel's syntax: a literal one is doubled.
    return f'&L&"-,Bold"{text.replace("&", "&&")}&R{when}'


def wrapped_lines(value: Any, width: float) -> int:
    """Lines that ``value`` takes wrapped at ``width`` characters (an estimate: word-wrapped, one font)."""
    if value is None or value == "":
        return 1
    lines = sum(max(1, len(textwrap.wrap(para, max(1, int(width))))) for para in str(value).splitlines() or [""])
    return min(lines, 40)


def _write_cell(ws: Any, r: int, c: int, value: Any, kind: str, fmts: Mapping[str, Any], quoted: Any) -> None:
    if value is None or value == "":
        return
    if kind == "date" and isinstance(value, (int, float)):
        ws.write_datetime(r, c, _excel_date(value), fmts["date"])
    elif kind in ("int", "float") and isinstance(value, (int, float)) and not isinstance(value, bool):
        ws.write_number(r, c, value, fmts[kind])
    else:
        text = shown(str(value))
        if is_formula_like(text):
            ws.write_string(r, c, text, quoted)
        else:
            ws.write_string(r, c, text)


def export_database(db_path: str | os.PathLike[str], output: str | os.PathLike[str], fmt: str | None = None, *,
                    current: bool = False, group: str | None = None, progress: Progress | None = None,
                    now: float | None = None, stale_after_s: float | None = None,
                    fleet_name: str | None = None) -> int:
    """Write the sheet of the database at ``db_path`` (opened read-only) to ``output``; the number of GPUs.

    ``now`` and ``stale_after_s``: see :func:`read_sheet`; ``fleet_name`` (default: the database's file
    name, :func:`fleet_label`) titles the printed pages of a workbook.

    The file is written next to ``output`` and renamed into place, so that a
    failed or cancelled export (:class:`ExportCancelled`) leaves no half file.
    """
    from storage.db import open_database

    fmt = format_for(output, fmt)
    if not Path(db_path).is_file():
        raise KnownError(Text(N_("no database at {path}"), path=str(db_path)))
    db = open_database(Path(db_path), readonly=True)
    try:
        sheet = read_sheet(db, current=current, group=group, now=now, stale_after_s=stale_after_s)
    finally:
        db.close()
    out = Path(output)
    now = time.time() if now is None else now
    try:
        tmp = _new_part_file(out)
    except OSError as exc:
        raise KnownError(Text(N_("cannot write {path}: {error}"), path=str(output), error=exc.strerror)) from exc
    try:
        if fmt == "xlsx":
            write_xlsx(tmp, sheet, progress, fleet=fleet_label(db_path, fleet_name), now=now)
        else:
            Path(tmp).write_text(render(sheet.gpus, fmt), encoding="utf-8")
            if progress is not None and progress(len(sheet.gpus), len(sheet.gpus)) is False:
                raise ExportCancelled()
        os.replace(tmp, out)
    except OSError as exc:
        raise KnownError(Text(N_("cannot write {path}: {error}"), path=str(output),
                              error=exc.strerror or exc)) from exc
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return len(sheet.gpus)


def _new_part_file(out: Path) -> str:
    """A new, empty file next to ``out`` to write into before renaming it into place.

    Not :func:`tempfile.mkstemp`: its file is 0600 whatever the umask, and the
    rename would hand that to the user's sheet. Created with 0666 here, the
    kernel applies the umask as it does to any new file (reading the umask
    would mean setting it, process-wide, from the export's thread).
    """
    folder = out.parent if str(out.parent) else Path(".")
    for _ in range(100):
        path = folder / f".{out.name}.{secrets.token_hex(4)}.part"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return str(path)
    raise FileExistsError(errno.EEXIST, f"no free temporary name next to {out}")


def main(args: argparse.Namespace) -> int:
    from storage.db import open_database

    fmt = format_for(args.output, args.format)
    if not Path(args.db).is_file():
        raise KnownError(Text(N_("no database at {path}"), path=str(args.db)))
    if args.output:
        n = export_database(args.db, args.output, fmt, current=args.current, group=args.group)
        print(_("wrote {count} GPUs to {file}").format(count=n, file=args.output), file=sys.stderr)
        return 0
    if fmt == "xlsx":
        raise KnownError(Text(N_("an XLSX workbook needs a file: give -o FILE.xlsx")))
    db = open_database(args.db, readonly=True)
    try:
        rows = inventory_rows(db, current=args.current, group=args.group)
    finally:
        db.close()
    sys.stdout.write(render(rows, fmt))
    return 0
