"""FindingsTableModel: open findings of the health engine, worst first, filtered and sorted in the model."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from PySide6.QtCore import QCoreApplication, QModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from fleetmon.i18n import Text, localized
from storage.acks import AckRow
from storage.rows import StoredFinding
from ui import format as fmt
from ui.i18n import severity_text
from ui.models.base import Index, RowsTableModel

COLUMNS = ("Severity", "Kind", "Node", "GPU", "Since", "Last evidence", "Action", "Evidence", "Acknowledged")
COL_EVIDENCE, COL_ACK = 7, 8


class FindingsTableModel(RowsTableModel[StoredFinding]):
    """Rows are StoredFindings as returned by storage.findings.open_findings, ``gpu_index`` filled when known.

    :meth:`set_filter` keeps the findings of some kinds, severities and groups
    (None: all) and, unless ``show_acknowledged``, hides those an
    acknowledgement still covers; :meth:`all_rows` is everything last set.
    """

    COLUMNS = COLUMNS

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._now = time.time()
        self._all: list[StoredFinding] = []
        self._acks: Mapping[str, AckRow] = {}
        self._groups: Mapping[str, str] = {}
        self._kinds: set[str] | None = None
        self._severities: set[str] | None = None
        self._group_filter: set[str] | None = None
        self.show_acknowledged = False
        self._sort: tuple[int, Qt.SortOrder] | None = None

    def set_rows(self, rows: list[StoredFinding], now: float | None = None, *,
                 acks: Mapping[str, AckRow] | None = None, groups: Mapping[str, str] | None = None) -> None:
        """Replace the findings; ``acks`` by finding key, ``groups`` node → group (for the group filter)."""
        self._now = time.time() if now is None else now
        self._all = sorted(rows, key=lambda r: (-fmt.severity_rank(r.severity), r.node or "", r.kind or ""))
        if acks is not None:
            self._acks = acks
        if groups is not None:
            self._groups = groups
        self._apply()

    def set_filter(self, *, kinds: set[str] | None = None, severities: set[str] | None = None,
                   groups: set[str] | None = None, show_acknowledged: bool | None = None) -> None:
        self._kinds, self._severities, self._group_filter = kinds, severities, groups
        if show_acknowledged is not None:
            self.show_acknowledged = show_acknowledged
        self._apply()

    def ack(self, f: StoredFinding) -> AckRow | None:
        """The acknowledgement still covering ``f`` (not expired, not worsened), or None."""
        a = self._acks.get(f.key)
        return a if a is not None and a.covers(f.severity, self._now) else None

    def all_rows(self) -> list[StoredFinding]:
        return list(self._all)

    def group_of(self, f: StoredFinding) -> str:
        return self._groups.get(f.node or "", "")

    def _keep(self, f: StoredFinding) -> bool:
        if self._kinds is not None and f.kind not in self._kinds:
            return False
        if self._severities is not None and str(f.severity) not in self._severities:
            return False
        if self._group_filter is not None and self.group_of(f) not in self._group_filter:
            return False
        return self.show_acknowledged or self.ack(f) is None

    def _apply(self) -> None:
        rows = [f for f in self._all if self._keep(f)]
        if self._sort is not None:
            rows = self._sorted(rows, *self._sort)
        if [f.key for f in rows] == [f.key for f in self._rows] and rows:
            self._rows = rows
            self.dataChanged.emit(self.index(0, 0), self.index(len(rows) - 1, len(COLUMNS) - 1))
            return
        self.beginResetModel()
        self._rows = rows
        self.endResetModel()

    def _sorted(self, rows: list[StoredFinding], column: int, order: Qt.SortOrder) -> list[StoredFinding]:
        keys: dict[int, Callable[[StoredFinding], Any]] = {
            0: lambda f: fmt.severity_rank(f.severity), 1: lambda f: f.kind or "", 2: lambda f: f.node or "",
            3: lambda f: (f.gpu_index if f.gpu_index is not None else -1), 4: lambda f: f.first_seen,
            5: lambda f: f.last_seen, 6: lambda f: f.action or "",
            7: lambda f: fmt.evidence_text(f.kind, f.evidence), 8: lambda f: self.ack(f) is not None,
        }
        return sorted(rows, key=keys.get(column, keys[0]), reverse=order == Qt.SortOrder.DescendingOrder)

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        self._sort = (column, order)
        self.layoutAboutToBeChanged.emit()
        before = self.persistentIndexList()
        held = [(self._rows[i.row()].key if i.row() < len(self._rows) else None, i.column()) for i in before]
        self._rows = self._sorted(self._rows, column, order)
        where = {f.key: n for n, f in enumerate(self._rows)}
        self.changePersistentIndexList(before, [self.index(where[k], c) if k in where else QModelIndex()
                                                for k, c in held])
        self.layoutChanged.emit()

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        r = self._rows[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return severity_text(str(r.severity)) if r.severity else fmt.DASH
            if col == 1:
                return r.kind or fmt.DASH
            if col == 2:
                return r.node or fmt.DASH
            if col == 3:
                if r.gpu_index is not None:
                    return str(r.gpu_index)
                return r.gpu_uuid[:16] if r.gpu_uuid else QCoreApplication.translate("FindingsTable", "node")
            if col == 4:
                return fmt.age(r.first_seen, self._now)
            if col == 5:
                return fmt.age(r.last_seen, self._now)
            if col == 6:
                # the core's catalog (fleetmon.i18n): a fixed sentence, or one made again from its values (m017)
                return localized(r.action) if r.action else ""
            if col == COL_EVIDENCE:
                return fmt.evidence_text(r.kind, r.evidence)
            if col == COL_ACK:
                a = self.ack(r)
                if a is None:
                    return ""
                what = (QCoreApplication.translate("FindingsTable", "snoozed until {time}").format(
                    time=fmt.clock(a.until)) if a.until else QCoreApplication.translate("FindingsTable", "acknowledged"))
                return f"{what}: {a.note}" if a.note else what
        if role == Qt.ItemDataRole.ForegroundRole:
            if self.ack(r) is not None:
                return QBrush(QColor("#9e9e9e"))
            if col == 0:
                return QBrush(QColor(fmt.SEVERITY_COLORS.get(str(r.severity or ""), "#000000")))
        if role == Qt.ItemDataRole.ToolTipRole:
            evidence = r.evidence or {}  # the keys (identifiers) as stored, a text value said again
            lines = [f"{k}: {localized(v) if k == 'summary' or isinstance(v, Text) else v}"
                     for k, v in list(evidence.items())[:12]] \
                if isinstance(evidence, Mapping) else []
            action = [QCoreApplication.translate("FindingsTable", "action: {action}").format(
                action=localized(r.action))] if r.action else []  # its column elides
            head = QCoreApplication.translate("FindingsTable", "{kind} on {node} {gpu}").format(
                kind=r.kind, node=r.node, gpu=r.gpu_uuid or "").strip()
            return "\n".join([head, *lines, *action])
        return None
