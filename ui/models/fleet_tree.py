"""FleetTreeModel: groups → nodes → GPUs, worst first, sorted and filtered inside the model.

Sorting and filtering live here, not in a QSortFilterProxyModel (a 10,000-row
sort through the proxy was measured at 2.1 s against 57 ms in the model).
Items keep their internal id across refreshes (by key), so a refresh with the
same shape only emits ``dataChanged`` and the view keeps selection, expansion
and scroll position; a different shape resets the model and the view restores
them by key (:meth:`FleetTreeModel.index_of_key`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QAbstractItemModel, QCoreApplication, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from fleetmon.sources import node_source
from fleetmon.vendors import runtime_name, vendor_name, vendor_order
from fleetmon.vocab import Severity
from storage.rows import FleetRow
from ui import format as fmt
from ui.i18n import column, severity_text, verdict_word
from ui.models.fleet_build import (LEAF, _F0, _LAST, COL_DRIVER, COL_HEALTH, COL_MODEL, COL_STATUS, COL_VENDOR,
                                   COLUMNS, FIELD_COLUMNS, Item, Tree, TreeParams, build_from_roots, build_tree,
                                   gpu_severity, gpu_status, known_uid, sort_items)
from ui.snapshot import FleetSnapshot

__all__ = ["COLUMNS", "COL_HEALTH", "COL_STATUS", "COL_VENDOR", "FIELD_COLUMNS", "FleetTreeModel", "Item", "TINT", "gpu_severity"]

Index = QModelIndex | QPersistentModelIndex
TINT: dict[str, QColor] = {Severity.CRITICAL: QColor(198, 40, 40, 70), Severity.WARNING: QColor(239, 108, 0, 60)}
"""Cell backgrounds for offending cells: translucent, so they read on light and dark palettes."""


class CellValues:
    """The fleet tree's cells over one snapshot at one time: plain Python, no Qt object.

    :class:`FleetTreeModel` answers ``data()`` through it; the reader thread uses it alone to
    compute the top level's cells ahead (:func:`warm`).
    """

    _snap: FleetSnapshot
    _now: float

    def _aggregate(self, it: Item, key: int) -> Any:
        """A group or node row's cell, computed once per tree: ``key`` is the column for its text,
        ``-1 - column`` for its tint (a group's cells walk all of its GPUs; a repaint asks for each
        cell several times, and the reader thread fills the top level ahead, see :func:`warm`)."""
        cells = it.cells
        if cells is None:
            cells = it.cells = {}
        if key not in cells:
            cells[key] = self._display(it, key) if key >= 0 else self._cell_severity(it, -1 - key)
        return cells[key]

    def _cell_severity(self, it: Item, col: int) -> str:
        if col in (0, COL_HEALTH):
            return it.severity if fmt.severity_rank(it.severity) >= 2 else ""
        if col == COL_STATUS:
            return fmt.STATUS_SEVERITY.get(it.status, "")
        if _F0 <= col < _LAST and FIELD_COLUMNS[col - _F0].name == "temp_c":
            return fmt.worst(fmt.temperature_severity(r.values.get("temp_c"), self._inventory(r)) for r in it.gpus)
        return ""

    def _inventory(self, r: FleetRow) -> Any:
        g = self._snap.gpus.get(r.uuid)
        return g.inventory if g is not None else {}

    def _display(self, it: Item, col: int) -> Any:
        rows = it.gpus
        if it.kind == "gpu" and it.gpu is not None:
            r = it.gpu
            if col == 0:
                return f"GPU {r.index}" if r.index is not None else r.uuid[:12]
            if col == COL_MODEL:
                return r.model or fmt.DASH
            if col == COL_VENDOR:
                return vendor_name(r.vendor)
            if col == COL_DRIVER:
                return r.driver_version or fmt.DASH
            if _F0 <= col < _LAST:
                return fmt.field(FIELD_COLUMNS[col - _F0], r.values, r.power_enforced_w)
            if col == _LAST:
                return fmt.age(r.latest_ts, self._now)
            if col == COL_STATUS:
                return fmt.status_text(it.status, r.last_error)
            if col == COL_HEALTH:
                return fmt.verdict_label(it.verdict, r.findings, self._snap.verdicts.age(r.uuid))
            return None
        # node and group rows: aggregates over their GPUs
        if col == 0:
            if it.kind == "group" and it.key == "G:":  # nodes without a group (the name stays for sorting)
                return QCoreApplication.translate("FleetTree", "(no group)")
            return it.name
        if col == COL_VENDOR:  # a mixed group lists its vendors (NVIDIA first)
            vendors = sorted({r.vendor or "" for r in rows}, key=vendor_order)
            if not rows and it.kind == "node" and it.name in self._snap.nodes:
                vendors = [self._snap.nodes[it.name].vendor or ""]
            return fmt.joined(list(dict.fromkeys(vendor_name(x) for x in vendors))) if vendors else fmt.DASH
        if col == COL_MODEL:
            models: dict[str, int] = {}
            for r in rows:
                models[r.model or "?"] = models.get(r.model or "?", 0) + 1
            gpus = fmt.joined([f"{n}× {m}" for m, n in sorted(models.items(), key=lambda kv: -kv[1])])
            if it.kind == "group":
                nodes = len(it.children)
                return (QCoreApplication.translate("FleetTree", "1 node · {gpus}") if nodes == 1 else
                        QCoreApplication.translate("FleetTree", "{count} nodes · {gpus}")).format(count=nodes,
                                                                                                   gpus=gpus)
            return gpus
        if col == COL_DRIVER:
            drivers = sorted({r.driver_version for r in rows if r.driver_version})
            return fmt.joined(drivers) if drivers else fmt.DASH
        if _F0 <= col < _LAST:
            f = FIELD_COLUMNS[col - _F0]
            vals = [float(v) for r in rows if isinstance(v := r.values.get(f.name), (int, float))]
            if not vals:
                return fmt.DASH
            if f.ui is not None and f.ui.format == "power":
                limits = [float(x) for r in rows if isinstance(x := (r.values.get("power_limit_w")
                                                                      or r.power_enforced_w), (int, float))]
                return fmt.power(sum(vals), sum(limits) if limits else None)
            return QCoreApplication.translate("FleetTree", "max {value}").format(
                value=fmt.number(max(vals), f.unit)) if f.name.startswith("temp") else \
                fmt.number(sum(vals) / len(vals), f.unit)
        if col == _LAST:
            return fmt.age(max((r.latest_ts for r in rows if r.latest_ts), default=None), self._now)
        if col == COL_STATUS:
            return fmt.status_word(it.status)
        if col == COL_HEALTH:
            # The node's own verdict (the report's), the worst of its nodes for a group.
            v = self._snap.verdicts
            if it.verdict in ("fail", "warn"):  # how many of its GPUs read that verdict themselves
                same = sum(1 for r in rows if v.gpus.get(r.uuid) == it.verdict)
                if not rows:
                    return verdict_word(it.verdict)
                return (QCoreApplication.translate("FleetTree", "{verdict} · {same}/1 GPU") if len(rows) == 1 else
                        QCoreApplication.translate("FleetTree", "{verdict} · {same}/{total} GPUs")).format(
                    verdict=verdict_word(it.verdict), same=same, total=len(rows))
            if it.kind == "node":
                age = v.age(it.name)
            else:  # a group: the age of its freshest stale node's data
                age = min((a for n in it.children if (a := v.age(n.name)) is not None), default=None)
            return fmt.verdict_label(it.verdict, (), age)
        return None


class FleetTreeModel(QAbstractItemModel, CellValues):
    """Feed it :meth:`set_snapshot`; ``sort`` and :meth:`set_filter` reorder and hide inside the model.

    ``expanded`` (set by the view: ``QTreeView.isExpanded``) limits the
    ``dataChanged`` of a same-shape refresh to the top level and the children
    the view shows: the view maps every changed row to a rectangle through
    Python calls, so announcing 8,000 collapsed GPUs cost ~0.4 s per refresh,
    and a collapsed node's rows are read afresh when it opens anyway.
    """

    COLUMNS = COLUMNS

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._snap = FleetSnapshot()
        self._now = time.time()
        self._roots: list[Item] = []
        self._by_uid: dict[int, Item] = {}
        self._shape: tuple[Any, ...] = ()
        self._filter = ""
        self._sort_col = COL_HEALTH
        self._sort_order = Qt.SortOrder.DescendingOrder
        self.grouped = True
        self.expanded: Callable[[QModelIndex], bool] | None = None
        # Each node's Slurm state in words (ui.slurm_action.SlurmStates.text), None: Slurm not offered.
        self.slurm_text: Callable[[str], str | None] | None = None
        self.slurm_tip = ""

    # -- feeding -------------------------------------------------------------------

    def params(self) -> TreeParams:
        """The filter, grouping and sort a tree for this model is built with (the reader thread asks)."""
        return TreeParams(self._filter, self.grouped, self._sort_col,
                          self._sort_order == Qt.SortOrder.DescendingOrder)

    def set_snapshot(self, snap: FleetSnapshot, now: float | None = None) -> None:
        """Show ``snap``; a tree built for it on the reader thread with the current params is used as is."""
        self._snap = snap
        self._now = snap.read_at if now is None else now
        tree = snap.derived.pop("tree", None)  # used once: the model then owns (and may re-sort) its items
        if isinstance(tree, Tree) and tree.params == self.params() and tree.now == self._now and tree.snap is snap:
            self._show(tree)
        else:
            self._rebuild()

    def set_slurm(self, text: Callable[[str], str | None], tooltip: str = "") -> None:
        """Show each node's Slurm state (``text(node)``) beside its verdict; repaints the Health column."""
        self.slurm_text, self.slurm_tip = text, tooltip
        if self._roots:
            self.dataChanged.emit(self.index(0, COL_HEALTH), self.index(len(self._roots) - 1, COL_HEALTH))
            for root in self._roots:
                if root.kind == "group" and root.children:
                    parent = self.index_of_key(root.key)
                    if parent.isValid():
                        self.dataChanged.emit(self.index(0, COL_HEALTH, parent),
                                              self.index(len(root.children) - 1, COL_HEALTH, parent))

    def set_filter(self, text: str) -> None:
        self._filter = text.strip()
        self._rebuild()

    def set_grouped(self, grouped: bool) -> None:
        self.grouped = grouped
        self._rebuild(force_reset=True)

    def status_of(self, r: FleetRow) -> str:
        """The GPU's status word as judged for the snapshot shown (:class:`ui.verdicts.Verdicts`)."""
        return self._snap.verdicts.gpu_status.get(r.uuid) or gpu_status(r, self._now)

    def verdict_of(self, r: FleetRow) -> str:
        """The GPU's verdict as judged for the snapshot shown."""
        return self._snap.verdicts.gpu(r.uuid)

    def _rebuild(self, force_reset: bool = False) -> None:
        self._show(build_tree(self._snap, self._now, self.params()), force_reset)

    def _show(self, tree: Tree, force_reset: bool = False) -> None:
        roots = tree.roots
        old = self._by_uid
        try:
            self._swap(tree, roots, force_reset)
        finally:
            if old is not self._by_uid:
                _release(old)

    def _swap(self, tree: Tree, roots: list[Item], force_reset: bool) -> None:
        if tree.shape == self._shape and roots and not force_reset:
            # Same shape: same ids at the same rows, so the view's indexes stay valid; swap the items in.
            self._roots, self._by_uid = roots, tree.by_uid
            last = len(COLUMNS) - 1
            self.dataChanged.emit(self.index(0, 0), self.index(len(roots) - 1, last))
            shown = self.expanded
            stack = list(roots)
            while stack:
                item = stack.pop()
                if not item.children:
                    continue
                parent = self.createIndex(item.row, 0, item.uid)
                if shown is not None and not shown(parent):
                    continue
                self.dataChanged.emit(self.index(0, 0, parent), self.index(len(item.children) - 1, last, parent))
                stack += item.children
            return
        self.beginResetModel()
        self._roots, self._by_uid, self._shape = roots, tree.by_uid, tree.shape
        self.endResetModel()

    # -- sorting --------------------------------------------------------------------

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self._sort_col, self._sort_order = column, order
        self.layoutAboutToBeChanged.emit()
        before = self.persistentIndexList()
        keep = [(self._by_uid.get(i.internalId()), i.column()) for i in before]
        sort_items(self._roots, column, order == Qt.SortOrder.DescendingOrder)
        self._by_uid, self._shape = build_from_roots(self._roots)
        after = [self.createIndex(it.row, c, it.uid) if it is not None else QModelIndex() for it, c in keep]
        self.changePersistentIndexList(before, after)
        self.layoutChanged.emit()

    @property
    def sort_column(self) -> int:
        return self._sort_col

    @property
    def sort_order(self) -> Qt.SortOrder:
        return self._sort_order

    # -- lookup --------------------------------------------------------------------------

    def item(self, index: Index) -> Item | None:
        return self._by_uid.get(index.internalId()) if index.isValid() else None

    def index_of_key(self, key: str, column: int = 0) -> QModelIndex:
        uid = known_uid(key)
        it = self._by_uid.get(uid) if uid is not None else None
        return self.createIndex(it.row, column, it.uid) if it is not None else QModelIndex()

    def index_of_gpu(self, uuid: str) -> QModelIndex:
        return self.index_of_key(f"g:{uuid}")

    def index_of_node(self, node: str) -> QModelIndex:
        return self.index_of_key(f"n:{node}")

    def roots(self) -> list[Item]:
        return list(self._roots)

    # -- Qt model API ---------------------------------------------------------------------

    def index(self, row: int, column: int, parent: Index = QModelIndex()) -> QModelIndex:  # noqa: B008
        if column < 0 or column >= len(COLUMNS) or row < 0:
            return QModelIndex()
        items = self._children(parent)
        if items is None or row >= len(items):
            return QModelIndex()
        return self.createIndex(row, column, items[row].uid)

    def _children(self, parent: Index) -> list[Item] | None:
        if not parent.isValid():
            return self._roots
        it = self.item(parent)
        if it is None or parent.column() != 0:
            return None
        return it.children

    def parent(self, index: Index = QModelIndex()) -> QModelIndex:  # type: ignore[override]  # noqa: B008
        it = self.item(index)
        if it is None or it.parent is None:
            return QModelIndex()
        return self.createIndex(it.parent.row, 0, it.parent.uid)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        items = self._children(parent)
        return 0 if items is None else len(items)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return len(COLUMNS)

    def hasChildren(self, parent: Index = QModelIndex()) -> bool:  # noqa: B008, N802
        return self.rowCount(parent) > 0

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return column(COLUMNS[section])
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        it = self.item(index)
        if it is None:
            return None
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            shown = self._display(it, col) if it.kind == "gpu" else self._aggregate(it, col)
            if col == COL_HEALTH and it.kind == "node" and self.slurm_text is not None:
                slurm = self.slurm_text(it.name)  # beside the verdict: "fail · 2/8 GPUs · Slurm drain (…)"
                if slurm:
                    return f"{shown} · Slurm {slurm}"
            return shown
        if role == Qt.ItemDataRole.ToolTipRole and col == COL_HEALTH and it.kind == "node" and self.slurm_text:
            return f"{self._tooltip(it)}\n{self.slurm_tip}".strip()
        if role == Qt.ItemDataRole.BackgroundRole:
            sev = self._cell_severity(it, col) if it.kind == "gpu" else self._aggregate(it, -1 - col)
            return QBrush(TINT[sev]) if sev in TINT else None
        if role == Qt.ItemDataRole.ForegroundRole and col in (COL_STATUS, COL_HEALTH):
            if col == COL_STATUS:
                return QBrush(QColor(fmt.STATUS_COLORS.get(it.status, "#757575")))
            return QBrush(QColor(fmt.VERDICT_COLORS.get(it.verdict, "#757575")))
        if role == Qt.ItemDataRole.DecorationRole and col == 0:
            return QColor(fmt.VERDICT_COLORS.get(it.verdict, "#757575"))
        if role == Qt.ItemDataRole.TextAlignmentRole and _F0 <= col < _LAST:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(it)
        return None

    def _tooltip(self, it: Item) -> str:
        if it.kind == "gpu" and it.gpu is not None:
            r = it.gpu
            lines = [f"{r.node} GPU {r.index}: {r.model}", f"UUID {r.uuid}"]
            inv = self._inventory(r)
            if inv.get("temp_slowdown_c"):
                lines.append(QCoreApplication.translate("FleetTree", "slowdown temperature {value} °C").format(
                    value=inv["temp_slowdown_c"]))
            lines.append(QCoreApplication.translate("FleetTree", "verdict: {verdict}").format(
                verdict=fmt.verdict_label(it.verdict, r.findings, self._snap.verdicts.age(r.uuid))))
            lines += [f"{severity_text(sev)}: {kind}" for sev, kind in r.findings]
            intake = getattr(self._snap, "intakes", {}).get(r.uuid)
            if intake is not None:
                lines.append(QCoreApplication.translate("FleetTree", "intake: {verdict} ({date})").format(
                    verdict=fmt.intake_word(intake.verdict), date=time.strftime('%Y-%m-%d', time.localtime(intake.ts))))
            return "\n".join(lines)
        if it.kind == "node":
            n = self._snap.nodes.get(it.name)
            if n is None:
                return it.name
            runtime = n.runtime_version or (n.cuda_driver_version if runtime_name(n.vendor) == "CUDA" else None)
            values = {"vendor": vendor_name(n.vendor), "driver": n.driver_version or "—",
                      "runtime_name": runtime_name(n.vendor), "runtime": runtime or "—",
                      "firmware": n.firmware_version}
            versions = (QCoreApplication.translate(
                "FleetTree", "{vendor} · driver {driver}, {runtime_name} {runtime}, firmware {firmware}")
                if n.firmware_version else
                QCoreApplication.translate("FleetTree", "{vendor} · driver {driver}, {runtime_name} {runtime}"))
            return "\n".join(x for x in (
                f"{n.name} ({n.group or QCoreApplication.translate('FleetTree', 'no group')}) · {n.url or ''}",
                versions.format(**values),
                QCoreApplication.translate("FleetTree", "last poll {age}").format(
                    age=fmt.age(n.last_attempt, self._now)),
                node_source(n.url).note,  # what a dcgm-exporter, ssh or imported node cannot tell ("" for agents)
                QCoreApplication.translate("FleetTree", "last error: {error}").format(
                    error=fmt.node_error(n.last_error))
                if n.last_error and n.status == "unreachable" else "") if x)
        nodes, gpus = len(it.children), len(it.gpus)
        return QCoreApplication.translate("FleetTree", "group {name}: {nodes}, {gpus}").format(
            name=it.name, nodes=(QCoreApplication.translate("FleetTree", "1 node") if nodes == 1 else
                                 QCoreApplication.translate("FleetTree", "{count} nodes").format(count=nodes)),
            gpus=(QCoreApplication.translate("FleetTree", "1 GPU") if gpus == 1 else
                  QCoreApplication.translate("FleetTree", "{count} GPUs").format(count=gpus)))


def _release(items: dict[int, Item]) -> None:
    """Break the parent ↔ children cycles of items no longer shown, so that they are freed at once.

    Left as cycles, every replaced tree (9,000 items at 8,000 GPUs, with the
    snapshot they point into) waited for a full garbage collection, which then
    held the interpreter for a few hundred milliseconds: a frozen window.
    """
    for item in items.values():
        item.parent = None
        item.children = LEAF


def warm(tree: Tree, snap: Any) -> None:
    """Compute the top-level rows' cells on the reader thread, before the tree reaches the GUI thread.

    The top level (groups, or nodes when ungrouped) is always on screen and its aggregates are the
    costly cells: a group of 100 nodes sums and compares 800 GPUs per column.
    """
    cells = CellValues()
    cells._snap, cells._now = snap, tree.now
    for it in tree.roots:
        for col in range(len(COLUMNS)):
            cells._aggregate(it, col)
            cells._aggregate(it, -1 - col)
