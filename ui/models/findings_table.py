"""FindingsTableModel: open findings of the health engine, worst first."""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor

from ui import format as fmt
from ui.models.base import Index, RowsTableModel

COLUMNS = ("Severity", "Kind", "Node", "GPU", "Since", "Last evidence", "Action")


class FindingsTableModel(RowsTableModel):
    """Rows are dicts as returned by storage.history.open_findings, plus ``gpu_index`` when known."""

    COLUMNS = COLUMNS

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._now = time.time()

    def set_rows(self, rows: list[dict[str, Any]], now: float | None = None) -> None:
        self._now = time.time() if now is None else now
        self.beginResetModel()
        self._rows = sorted(rows, key=lambda r: (-fmt.severity_rank(r.get("severity")), r.get("node") or "",
                                                 r.get("kind") or ""))
        self.endResetModel()

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        r = self._rows[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return r.get("severity") or fmt.DASH
            if col == 1:
                return r.get("kind") or fmt.DASH
            if col == 2:
                return r.get("node") or fmt.DASH
            if col == 3:
                if r.get("gpu_index") is not None:
                    return str(r["gpu_index"])
                return (r.get("gpu_uuid") or "node")[:16]
            if col == 4:
                return fmt.age(r.get("first_seen"), self._now)
            if col == 5:
                return fmt.age(r.get("last_seen"), self._now)
            if col == 6:
                return r.get("action") or ""
        if role == Qt.ItemDataRole.ForegroundRole and col == 0:
            return QBrush(QColor(fmt.SEVERITY_COLORS.get(r.get("severity") or "", "#000000")))
        if role == Qt.ItemDataRole.ToolTipRole:
            evidence = r.get("evidence") or {}
            lines = [f"{k}: {v}" for k, v in list(evidence.items())[:12]] if isinstance(evidence, dict) else []
            return "\n".join([f"{r.get('kind')} on {r.get('node')} {r.get('gpu_uuid') or ''}".strip(), *lines])
        return None
