"""The fleet view: nodes grouped by group, expandable to their GPUs, a filter box and a summary bar."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QItemSelection, QModelIndex, QObject, QPoint, Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QCheckBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QMenu,
                               QTreeView, QVBoxLayout, QWidget)

from storage.rows import FleetRow
from ui import format as fmt
from ui.fleet_reader import FleetSnapshot
from ui.models.fleet_build import summary_text
from ui.models.fleet_tree import COL_HEALTH, COLUMNS, FleetTreeModel

__all__ = ["COLUMN_WIDTHS", "FleetView", "summary_text"]

COLUMN_WIDTHS = {"Name": 150, "Model": 215, "Vendor": 110, "Driver": 90, "Temp": 75, "Power / limit": 115, "Util": 50,
                 "Last seen": 75, "Status": 85}
"""Fixed starting widths (never ResizeToContents over the model: it measures every cell on each refresh)."""
COL_MODEL = COLUMNS.index("Model")
HEALTH_WIDTH = 260
"""Room kept for the last column (Health) before a wide window widens the Model column."""
NARROW_HEALTH = 150
"""In a narrow window the Model column gives way (elided, down to MODEL_MIN) until Health has this much."""
MODEL_MIN = 110


class FleetView(QWidget):
    """Emits ``gpu_selected`` (a GPU row clicked) and ``node_selected`` (a node row clicked);
    ``intake_requested(node, uuid)`` from a row's context menu (uuid "" for a node: its new cards)."""

    gpu_selected = Signal(object)  # FleetRow
    node_selected = Signal(str)
    intake_requested = Signal(str, str)

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.model = FleetTreeModel(self)
        self.filter = QLineEdit(self)
        self.filter.setPlaceholderText(self.tr("Filter: node, gpu[01-16] hostlist, model:A100, vendor:amd, driver:535, "
                                                "status:critical…"))
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._on_filter)
        self.grouped = QCheckBox(self.tr("Group by group"), self)
        self.grouped.setChecked(True)
        self.grouped.toggled.connect(self._on_grouped)
        self.summary = QLabel(self.tr("reading database…"), self)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setWordWrap(True)  # a long drivers list wraps instead of widening the window
        self.summary.setToolTip(self.tr("Nodes are counted by their verdict (fail, warn, pass …, as the report judges "
                                        "them), one verdict per node.\nOpen findings are counted one by one: a node "
                                        "with three warnings is one warn node and three warning findings."))
        self.tree = QTreeView(self)
        self.tree.setModel(self.model)
        self.model.expanded = self.tree.isExpanded
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        self.tree.setSortingEnabled(True)
        self.tree.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        header = self.tree.header()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for i, name in enumerate(COLUMNS):  # never narrower than the header's text ("Last seen" was cut)
            header.resizeSection(i, max(COLUMN_WIDTHS.get(name, 100), header.sectionSizeHint(i)))
        header.setSortIndicator(COL_HEALTH, Qt.SortOrder.DescendingOrder)
        self._model_width_chosen = False  # the user (or a restored layout) sized the Model column
        self._fitting = False
        header.sectionResized.connect(self._on_section_resized)
        self.tree.selectionModel().selectionChanged.connect(self._on_selection)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._on_context_menu)
        self.menu_hooks: list[Callable[[QMenu, Any], None]] = []
        """Called with each row's context menu and its tree item, to add their actions (ui.evidence_action)."""
        self.last_menu: QMenu | None = None
        self.model.modelAboutToBeReset.connect(self._save_state)
        self.model.modelReset.connect(self._restore_state)
        self._selected: list[str] = []
        self._current = ""
        self._expanded: set[str] = set()
        self._collapsed: set[str] = set()
        self._scroll = 0
        self._first = True
        self._viewport = self.tree.viewport()
        self._viewport.installEventFilter(self)
        self.tree.expanded.connect(lambda i: self._note_expanded(i, True))
        self.tree.collapsed.connect(lambda i: self._note_expanded(i, False))
        top = QHBoxLayout()
        top.addWidget(self.filter, 1)
        top.addWidget(self.grouped)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 0)
        layout.addLayout(top)
        layout.addWidget(self.summary)
        layout.addWidget(self.tree, 1)

    # -- data --------------------------------------------------------------------------

    def set_snapshot(self, snap: FleetSnapshot) -> None:
        self.summary.setText(snap.derived.get("summary") or summary_text(snap))
        self.model.set_snapshot(snap)
        if self.model.rowCount() and not self.filter.text():
            self._expand_defaults()  # nodes that turned critical open (unless the operator closed them)

    def _expand_defaults(self) -> None:
        """Groups open; nodes open when something critical is on them (the operator sees the cards at once)."""
        nodes = []
        for g in self.model.roots():
            if g.kind == "group":
                self.tree.expand(self.model.index_of_key(g.key))
                nodes += g.children
            else:
                nodes.append(g)
        for n in nodes:
            if fmt.severity_rank(n.severity) >= fmt.severity_rank("critical") and n.key not in self._collapsed:
                self.tree.expand(self.model.index_of_key(n.key))

    def _note_expanded(self, index: QModelIndex, expanded: bool) -> None:
        it = self.model.item(index)
        if it is None:
            return
        (self._expanded.add if expanded else self._expanded.discard)(it.key)
        (self._collapsed.discard if expanded else self._collapsed.add)(it.key)

    def _on_section_resized(self, index: int, old: int, new: int) -> None:
        if index != COL_HEALTH and not self._fitting and self.tree.isVisible():  # Health stretches on its own
            self._model_width_chosen = True

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        # The tree's viewport, once resized (the view's own resize comes before its layout has sized the tree).
        if watched is self._viewport and event.type() == QEvent.Type.Resize:
            self.fit_model_column()
        return False

    def fit_model_column(self) -> None:
        """On a wide window the Model column gets half of the room beyond the default widths.

        Otherwise all of it went to the last column (Health, whose text is short) while
        "3 nodes · 12× NVIDIA A100-SXM4-80GB" was cut. In a narrow window (down to the smallest
        supported, 1024 px) the Model column gives way instead, elided, so that no column is pushed
        out of sight. A width the user chose is kept.
        """
        if self._model_width_chosen:
            return
        header = self.tree.header()
        # Every column but Health at its default (never narrower than its header's text).
        widths = {i: max(COLUMN_WIDTHS.get(name, 100), header.sectionSizeHint(i))
                  for i, name in enumerate(COLUMNS) if i != COL_HEALTH}
        spare = self.tree.viewport().width() - sum(widths.values()) - HEALTH_WIDTH
        if spare >= 0:
            widths[COL_MODEL] += min(spare // 2, 200)
        else:  # narrow: Model gives way first (to MODEL_MIN), then the figures down to their headers (not Name)
            short = sum(widths.values()) + NARROW_HEALTH - self.tree.viewport().width()
            give = min(max(0, short), widths[COL_MODEL] - MODEL_MIN)
            widths[COL_MODEL] -= give
            short -= give
            room = {i: w - header.sectionSizeHint(i) for i, w in widths.items() if i not in (0, COL_MODEL)}
            total = sum(room.values())
            if short > 0 and total > 0:
                share = min(1.0, short / total)
                for i, r in room.items():
                    widths[i] -= int(r * share + 0.999)
        self._fitting = True
        try:
            for i, w in widths.items():
                header.resizeSection(i, w)
        finally:
            self._fitting = False

    def _save_state(self) -> None:
        sel = self.tree.selectionModel()
        self._selected = [it.key for i in sel.selectedRows() if (it := self.model.item(i)) is not None]
        cur = self.model.item(self.tree.currentIndex())
        self._current = cur.key if cur is not None else ""
        self._scroll = self.tree.verticalScrollBar().value()

    def _restore_state(self) -> None:
        self.tree.blockSignals(True)
        for key in list(self._expanded):
            i = self.model.index_of_key(key)
            if i.isValid():
                self.tree.expand(i)
        self.tree.blockSignals(False)
        if not self._expanded:
            self._expand_defaults()
        sel = self.tree.selectionModel()
        sel.blockSignals(True)
        for key in self._selected:
            i = self.model.index_of_key(key)
            if i.isValid():
                sel.select(i, sel.SelectionFlag.Select | sel.SelectionFlag.Rows)
        cur = self.model.index_of_key(self._current) if self._current else QModelIndex()
        if cur.isValid():
            sel.setCurrentIndex(cur, sel.SelectionFlag.NoUpdate)
        sel.blockSignals(False)
        self.tree.verticalScrollBar().setValue(self._scroll)

    def _on_filter(self, text: str) -> None:
        self.model.set_filter(text)
        if text.strip():
            self.tree.expandAll()

    def _on_grouped(self, on: bool) -> None:
        self.model.set_grouped(on)

    # -- selection ---------------------------------------------------------------------

    def _on_selection(self, selected: QItemSelection, deselected: QItemSelection) -> None:
        it = self.model.item(self.tree.currentIndex())
        if it is None:
            rows = self.tree.selectionModel().selectedRows()
            it = self.model.item(rows[0]) if rows else None
        if it is None:
            return
        if it.kind == "gpu" and it.gpu is not None:
            self.gpu_selected.emit(it.gpu)
        elif it.kind == "node":
            self.node_selected.emit(it.name)

    def context_menu(self, index: QModelIndex) -> QMenu | None:
        """The context menu of a node or GPU row (None for a group row or empty space)."""
        it = self.model.item(index)
        if it is None or it.kind not in ("node", "gpu"):
            return None
        menu = QMenu(self.tree)
        if it.kind == "gpu" and it.gpu is not None:
            gpu = it.gpu
            act = menu.addAction(self.tr("Intake… (check {node} GPU {index})").format(node=gpu.node, index=gpu.index))
            act.setToolTip(self.tr("Check this card against its spec and its model's fleet (PASS / CONDITIONAL / "
                                   "REJECT)"))
            act.triggered.connect(lambda: self.intake_requested.emit(gpu.node, gpu.uuid))
        else:
            node = it.name
            act = menu.addAction(self.tr("Intake… (cards of {node} new in the last 24 h)").format(node=node))
            act.setToolTip(self.tr("Check the node's cards first seen in the last 24 h against their spec and fleet"))
            act.triggered.connect(lambda: self.intake_requested.emit(node, ""))
        for hook in self.menu_hooks:  # other actions on the same row (Export evidence…), one menu for all
            hook(menu, it)
        return menu

    def _on_context_menu(self, pos: QPoint) -> None:
        menu = self.context_menu(self.tree.indexAt(pos))
        if menu is not None:
            # popup, not exec: the event loop keeps running (a blocking exec stalls the window and tests).
            menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            self.last_menu = menu
            menu.popup(self.tree.viewport().mapToGlobal(pos))

    def show_gpu(self, uuid: str) -> bool:
        """Select and reveal a GPU (clearing a filter that hides it); whether it was found."""
        i = self.model.index_of_gpu(uuid)
        if not i.isValid() and self.filter.text():
            self.filter.clear()
            i = self.model.index_of_gpu(uuid)
        return self._reveal(i)

    def show_node(self, node: str) -> bool:
        i = self.model.index_of_node(node)
        if not i.isValid() and self.filter.text():
            self.filter.clear()
            i = self.model.index_of_node(node)
        return self._reveal(i)

    def _reveal(self, i: QModelIndex) -> bool:
        if not i.isValid():
            return False
        p = i.parent()
        while p.isValid():
            self.tree.expand(p)
            p = p.parent()
        self.tree.setCurrentIndex(i)
        self.tree.scrollTo(i, QAbstractItemView.ScrollHint.PositionAtCenter)
        return True

    def selected_gpus(self) -> list[FleetRow]:
        out: list[FleetRow] = []
        for i in self.tree.selectionModel().selectedRows():
            it = self.model.item(i)
            if it is not None:
                out += [r for r in it.gpus if r not in out]
        return out
