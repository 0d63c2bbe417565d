"""RowsTableModel: the shared plumbing of read-only table models over a list of typed rows."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from ui.i18n import column

Index = QModelIndex | QPersistentModelIndex
Row = TypeVar("Row")


class RowsTableModel(QAbstractTableModel, Generic[Row]):
    """Subclasses set ``COLUMNS`` and implement ``data``; rows are storage's typed rows (``Row``)."""

    COLUMNS: tuple[str, ...] = ()

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._rows: list[Row] = []

    def row(self, r: int) -> Row:
        return self._rows[r]

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802 - Qt API
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return column(self.COLUMNS[section])
        return None
