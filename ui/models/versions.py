"""VersionsModel: the driver-mismatch matrix, driver / runtime / VBIOS / firmware by vendor, group and model.

One row per (vendor, group, GPU model), NVIDIA's first, then each vendor's (issue 23); the runtime
column is NVIDIA's CUDA driver and another vendor's runtime named for it ("ROCm 6.0.2", "CANN 8.0");
each version column lists the versions in use
with their counts, the group's baseline first and marked (the expected version
a driver-mismatch finding names, else the majority), outliers highlighted.
:meth:`VersionsModel.nodes_behind` gives the nodes behind each cell.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor

from fleetmon import hostlist
from fleetmon.fields import DEFAULT_VENDOR
from fleetmon.vendors import runtime_name, vendor_key, vendor_name, vendor_order
from storage.rows import NodeRow
from ui.snapshot import FleetSnapshot
from ui.models.base import Index, RowsTableModel

COLUMNS = ("Group", "Model", "Vendor", "Nodes", "GPUs", "Driver", "CUDA driver / runtime", "VBIOS", "Firmware")
VERSION_COLUMNS = {5: "driver", 6: "cuda", 7: "vbios", 8: "firmware"}
"""Version column → cell key (``cuda``: NVIDIA's CUDA driver, another vendor's runtime)."""
OUTLIER = QColor(239, 108, 0, 70)


@dataclass(frozen=True)
class VersionCell:
    """One version column of one row: version → the nodes running it, and the baseline."""

    nodes: dict[str, list[str]] = field(default_factory=dict)
    baseline: str | None = None
    counts: dict[str, int] = field(default_factory=dict)
    """Cards per version (VBIOS); drivers count nodes."""

    def count(self, version: str) -> int:
        return self.counts.get(version, len(self.nodes.get(version, [])))

    @property
    def outliers(self) -> list[str]:
        return [v for v in self.nodes if v != self.baseline]

    def text(self) -> str:
        if not self.nodes:
            return "—"
        order = sorted(self.nodes, key=lambda v: (v != self.baseline, -self.count(v), v))
        return "  ".join((f"★ {v} ({self.count(v)})" if v == self.baseline else f"{v} ({self.count(v)})")
                         for v in order)


@dataclass(frozen=True)
class VersionRow:
    group: str
    model: str
    nodes: tuple[str, ...]
    gpus: int
    cells: dict[str, VersionCell]
    vendor: str = DEFAULT_VENDOR
    """The stored vendor value of the row's cards (:data:`fleetmon.fields.VENDORS`)."""


def _baseline(counts: Counter[str], expected: str | None) -> str | None:
    if expected:
        return expected
    top = counts.most_common(2)
    if not top or (len(top) == 2 and top[0][1] == top[1][1]):
        return None  # no majority
    return top[0][0]


def _runtime(node: NodeRow | None, vendor: str) -> str | None:
    """The node's runtime as the matrix shows it: NVIDIA's CUDA driver version bare (as before issue 23),
    another vendor's named ("ROCm 6.0.2")."""
    if node is None:
        return None
    if vendor == DEFAULT_VENDOR:
        return node.cuda_driver_version or node.runtime_version
    return f"{runtime_name(vendor)} {node.runtime_version}" if node.runtime_version else None


def version_rows(snap: FleetSnapshot) -> list[VersionRow]:
    """The matrix: per (vendor, group, model) the nodes per driver, runtime (CUDA driver), VBIOS and firmware,
    with baselines.

    Driver and runtime baselines are per vendor and group (a node's driver serves all its cards; an AMD
    node's driver is never an outlier against NVIDIA's; ungrouped nodes per model, as the driver-mismatch
    rule compares them), the VBIOS and firmware baselines per group and model (as the vbios-mismatch rule
    compares).
    """
    def node_vendor(name: str | None) -> str:
        n = snap.nodes.get(name or "")
        return vendor_key(n.vendor if n is not None else None)

    expected: dict[tuple[str, str, str], str] = {}
    for f in snap.findings:
        ev = f.evidence or {}
        vendor = vendor_key(ev.get("vendor")) if ev.get("vendor") else node_vendor(f.node)
        if f.kind == "driver-mismatch" and ev.get("expected"):
            what = "cuda" if ev.get("field") in ("cuda", "runtime") else "driver"
            expected[(vendor, snap.group_of(f.node), what)] = str(ev["expected"])
        if f.kind == "vbios-mismatch" and ev.get("expected"):
            expected[(vendor, snap.group_of(f.node), f"vbios:{ev.get('model')}")] = str(ev["expected"])
    # Ungrouped nodes are compared per model, as the driver-mismatch rule (and the export) does: an MI300X
    # node's driver is no outlier against an MI100 node's.
    node_models: dict[str, set[str]] = {}
    for r in snap.rows:
        if r.state != "gone":
            node_models.setdefault(r.node, set()).add(r.model or "?")
    group_counts: dict[tuple[str, str, str], Counter[str]] = {}
    for n in snap.nodes.values():
        g = n.group or ""
        vendor = vendor_key(n.vendor)
        scopes = [g] if g else [f"\0{m}" for m in node_models.get(n.name, ())]
        for what, v in (("driver", n.driver_version), ("cuda", _runtime(n, vendor))):
            if v:
                for scope in scopes:
                    group_counts.setdefault((vendor, scope, what), Counter())[v] += 1
    keyed: dict[tuple[str, str, str], list[Any]] = {}
    for r in snap.rows:
        if r.state == "gone":
            continue
        keyed.setdefault((vendor_key(r.vendor or node_vendor(r.node)), snap.group_of(r.node), r.model or "?"),
                         []).append(r)
    out = []
    for (vendor, group, model), rows in sorted(keyed.items(), key=lambda kv: (vendor_order(kv[0][0]), kv[0][1:])):
        nodes = sorted({r.node for r in rows}, key=hostlist.sort_key)
        cells: dict[str, VersionCell] = {}
        for what in ("driver", "cuda"):
            by: dict[str, list[str]] = {}
            for name in nodes:
                node = snap.nodes.get(name)
                v = (node.driver_version if node else None) if what == "driver" else _runtime(node, vendor)
                if v:
                    by.setdefault(v, []).append(name)
            scope = group if group else f"\0{model}"
            cells[what] = VersionCell(by, _baseline(group_counts.get((vendor, scope, what), Counter()),
                                                    expected.get((vendor, group, what))))
        for what in ("vbios", "firmware"):
            vb: dict[str, dict[str, None]] = {}  # version → its nodes, in first-seen order (a dict: O(1) membership)
            counts: Counter[str] = Counter()
            for r in rows:
                card = snap.gpus.get(r.uuid)
                if what == "vbios":
                    v = card.vbios if card is not None else None
                else:  # the card's firmware, else its node's (a node reporting one for all its devices)
                    node = snap.nodes.get(r.node)
                    v = (card.inventory.get("firmware_version") if card is not None else None) or (
                        node.firmware_version if node is not None else None)
                if v:
                    vb.setdefault(str(v), {})[r.node] = None
                    counts[str(v)] += 1
            cells[what] = VersionCell({v: list(ns) for v, ns in vb.items()},
                                      _baseline(counts, expected.get((vendor, group, f"{what}:{model}"))), dict(counts))
        out.append(VersionRow(group, model, tuple(nodes), len(rows), cells, vendor))
    return out


class VersionsModel(RowsTableModel[VersionRow]):
    """Rows from :func:`version_rows`; outlier cells tinted, tooltips list the nodes per version."""

    COLUMNS = COLUMNS

    def set_snapshot(self, snap: FleetSnapshot) -> None:
        rows = snap.derived.get("versions")  # built on the reader thread (ui.fleet_reader.prepare)
        if rows is None:
            rows = version_rows(snap)
        if [(r.vendor, r.group, r.model) for r in rows] == [(r.vendor, r.group, r.model) for r in self._rows] and rows:
            self._rows = rows
            self.dataChanged.emit(self.index(0, 0), self.index(len(rows) - 1, len(COLUMNS) - 1))
            return
        self.beginResetModel()
        self._rows = rows
        self.endResetModel()

    def cell(self, row: int, column: int) -> VersionCell | None:
        what = VERSION_COLUMNS.get(column)
        return self._rows[row].cells.get(what) if what and row < len(self._rows) else None

    def nodes_behind(self, row: int, column: int) -> dict[str, list[str]]:
        """Version → nodes for a version cell; for the other columns, all the row's nodes."""
        c = self.cell(row, column)
        if c is not None:
            return dict(c.nodes)
        return {"": list(self._rows[row].nodes)} if row < len(self._rows) else {}

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        r = self._rows[index.row()]
        col = index.column()
        c = self.cell(index.row(), col)
        if role == Qt.ItemDataRole.DisplayRole:
            if c is not None:
                return c.text()
            return [r.group or self.tr("(no group)"), r.model, vendor_name(r.vendor), str(len(r.nodes)), str(r.gpus)][col]
        if role == Qt.ItemDataRole.BackgroundRole and c is not None and c.outliers and c.nodes:
            return QBrush(OUTLIER)
        if role == Qt.ItemDataRole.ToolTipRole:
            if c is None:
                return hostlist.compress_lenient(r.nodes)
            lines = []
            for v, names in sorted(c.nodes.items(), key=lambda kv: (kv[0] != c.baseline, kv[0])):
                mark = self.tr("baseline") if v == c.baseline else self.tr("outlier")
                lines.append(f"{v} ({mark}): {hostlist.compress_lenient(names)}")
            return "\n".join(lines) or self.tr("no version reported")
        return None
