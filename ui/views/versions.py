"""The versions view: driver / CUDA driver or runtime / VBIOS / firmware by vendor, group and model, with the
nodes behind each cell."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtWidgets import (QAbstractItemView, QHeaderView, QLabel, QListWidget, QListWidgetItem, QSplitter,
                               QTableView, QVBoxLayout, QWidget)

from ui import format as fmt
from ui.fleet_reader import FleetSnapshot
from ui.models.versions import COLUMNS, VersionsModel
from ui.widgets.columns import ColumnFitter

WIDTHS = (110, 260, 90, 60, 60, 260, 160, 260, 160)
MAX_WIDTH = 420


class VersionsView(QWidget):
    """Click a cell: the list beside it shows the nodes per version; double-click a node: ``node_requested``."""

    node_requested = Signal(str)

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.model = VersionsModel(self)
        self.table = QTableView(self)
        self.table.setModel(self.model)
        self.table.setAlternatingRowColors(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectItems)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for i, w in enumerate(WIDTHS[:len(COLUMNS)]):
            header.resizeSection(i, w)
        self.table.clicked.connect(self.show_cell)
        self.caption = QLabel(self.tr("★ marks the group's baseline (its expected version, else the majority); "
                                      "tinted cells have outliers. Click a cell for its nodes (listed below)."), self)
        self.caption.setWordWrap(True)
        self.nodes = QListWidget(self)
        self.nodes.itemActivated.connect(self._on_node)
        self._hint()
        # The node list under the matrix: beside it, it took a fifth of the width and the matrix cut its
        # versions at 1240 px.
        self.splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(self.nodes)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([3 * 150, 150])  # the matrix first; a saved layout (QSettings) replaces this
        # Columns as wide as their text up to MAX_WIDTH; in a narrow window the widest give way (elided).
        self.fitter = ColumnFitter(self.table, flexible=(), caps={c: MAX_WIDTH for c in range(len(COLUMNS))})
        self._shape: tuple[tuple[str, str, str], ...] = ()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 0)
        layout.addWidget(self.caption)
        layout.addWidget(self.splitter, 1)
        self._cell: tuple[int, int] | None = None

    def _hint(self) -> None:
        hint = QListWidgetItem(self.tr("Click a cell of the matrix to list the nodes behind each version; "
                                       "double-click a node to show it in the fleet view."))
        hint.setFlags(Qt.ItemFlag.NoItemFlags)
        self.nodes.clear()
        self.nodes.setWordWrap(True)
        self.nodes.addItem(hint)

    def set_snapshot(self, snap: FleetSnapshot) -> None:
        self.model.set_snapshot(snap)
        shape = tuple((r.vendor, r.group, r.model) for r in (self.model.row(i) for i in range(self.model.rowCount())))
        if shape != self._shape:
            self._shape = shape
            self.fit_columns()
        if self._cell is not None and self._cell[0] < self.model.rowCount():
            self.show_cell(self.model.index(*self._cell))

    def fit_columns(self) -> None:
        """Columns as wide as their text (capped), so that versions are read, not guessed.

        The matrix has one row per (group, model), a few dozen at most, so asking every
        cell for its size is cheap here (unlike the fleet table, whose widths are fixed).
        """
        if self.model.rowCount() > 500:
            return
        self.fitter.fit()

    def show_cell(self, index: QModelIndex) -> None:
        if not index.isValid():
            return
        self._cell = (index.row(), index.column())
        cell = self.model.cell(index.row(), index.column())
        self.nodes.clear()
        for version, names in sorted(self.model.nodes_behind(index.row(), index.column()).items(),
                                     key=lambda kv: (cell is not None and kv[0] != cell.baseline, kv[0])):
            if version:
                mark = " (baseline)" if cell is not None and version == cell.baseline else " (outlier)"
                head = QListWidgetItem(f"{version}{mark}: {fmt.plural(len(names), 'node')}")
                head.setFlags(Qt.ItemFlag.ItemIsEnabled)
                font = head.font()
                font.setBold(True)
                head.setFont(font)
                self.nodes.addItem(head)
            for n in names:
                self.nodes.addItem(QListWidgetItem(f"   {n}"))

    def _on_node(self, item: QListWidgetItem) -> None:
        name = item.text().strip()
        if name and not name.endswith(")") and ":" not in name:
            self.node_requested.emit(name)
