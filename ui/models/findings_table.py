"""FindingsTableModel: open findings of the health engine, worst first."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor

from storage.rows import StoredFinding
from ui import format as fmt
from ui.models.base import Index, RowsTableModel

COLUMNS = ("Severity", "Kind", "Node", "GPU", "Since", "Last evidence", "Action")


class FindingsTableModel(RowsTableModel[StoredFinding]):
    """Rows are StoredFindings as returned by storage.findings.open_findings, ``gpu_index`` filled when known."""

    COLUMNS = COLUMNS

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._now = time.time()

    def set_rows(self, rows: list[StoredFinding], now: float | None = None) -> None:
        self._now = time.time() if now is None else now
        self.beginResetModel()
        self._rows = sorted(rows, key=lambda r: (-fmt.severity_rank(r.severity), r.node or "", r.kind or ""))
        self.endResetModel()

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        r = self._rows[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return r.severity or fmt.DASH
            if col == 1:
                return r.kind or fmt.DASH
            if col == 2:
                return r.node or fmt.DASH
            if col == 3:
                if r.gpu_index is not None:
                    return str(r.gpu_index)
                return (r.gpu_uuid or "node")[:16]
            if col == 4:
                return fmt.age(r.first_seen, self._now)
            if col == 5:
                return fmt.age(r.last_seen, self._now)
            if col == 6:
                return r.action or ""
        if role == Qt.ItemDataRole.ForegroundRole and col == 0:
            return QBrush(QColor(fmt.SEVERITY_COLORS.get(str(r.severity or ""), "#000000")))
        if role == Qt.ItemDataRole.ToolTipRole:
            evidence = r.evidence or {}
            lines = [f"{k}: {v}" for k, v in list(evidence.items())[:12]] if isinstance(evidence, Mapping) else []
            return "\n".join([f"{r.kind} on {r.node} {r.gpu_uuid or ''}".strip(), *lines])
        return None
