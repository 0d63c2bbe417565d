"""FleetTableModel: one row per GPU of the fleet, from storage.queries.fleet_latest rows (FleetRow)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

from PySide6.QtCore import QCoreApplication, QModelIndex, Qt
from PySide6.QtGui import QBrush, QColor

from fleetmon.fields import CATALOG, Field
from fleetmon.health.verdict import VERDICTS, verdict_rank
from fleetmon.vendors import vendor_name, vendor_order
from storage.rows import FleetRow
from ui import format as fmt
from ui.models.base import Index, RowsTableModel
from ui.models.fleet_build import row_matcher
from ui.verdicts import Verdicts, judge

FIELD_COLUMNS: tuple[Field, ...] = tuple(f for f in CATALOG if f.ui is not None)
"""The telemetry columns, declared in the field catalog (``Field.ui``), between Driver and Last seen."""
_FIRST = 5  # Node, GPU, Model, Vendor, Driver
_LAST = _FIRST + len(FIELD_COLUMNS)
COL_VENDOR, COL_DRIVER = 3, 4
COLUMNS = (("Node", "GPU", "Model", "Vendor", "Driver") + tuple(f.ui.header for f in FIELD_COLUMNS if f.ui is not None)
           + ("Last seen", "Status", "Health", "Intake"))
COL_HEALTH = COLUMNS.index("Health")
COL_INTAKE = COLUMNS.index("Intake")


INTAKE_COLORS = {"PASS": "#2e7d32", "CONDITIONAL": "#e65100", "REJECT": "#c62828"}
"""The intake verdicts' colours (as the report's pass / warn / fail)."""
_INTAKE_RANK = {"PASS": 1, "CONDITIONAL": 2, "REJECT": 3}


class FleetTableModel(RowsTableModel[FleetRow]):
    """Rows are FleetRows as returned by storage.queries.fleet_latest (with their findings attached)."""

    COLUMNS = COLUMNS

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._now = time.time()
        self._v = Verdicts(self._now)
        self._intakes: Mapping[str, Any] = {}
        self._all: list[FleetRow] = []  # every row given; ``_rows`` are those the filter keeps
        self._filter = ""
        self._sort: tuple[int, Qt.SortOrder] | None = None
        self.group_of: Callable[[str], Any] = lambda node: ""
        """A node's group, for ``group:`` words of the filter (the main window: its snapshot's)."""

    def set_filter(self, text: str) -> None:
        """Keep only the rows matching ``text``: the fleet view's filter syntax (``vendor:amd``, ``model:A100``,
        ``gpu[01-04]``, …, :func:`ui.models.fleet_build.row_matcher`)."""
        self._filter = text.strip()
        self._show(self._all)
        if self._sort is not None:
            self.sort(*self._sort)

    @property
    def filter_text(self) -> str:
        return self._filter

    def total(self) -> int:
        """Rows given, the filter's hidden ones included."""
        return len(self._all)

    def set_intakes(self, intakes: Mapping[str, Any]) -> None:
        """Each card's newest intake (:class:`storage.intake.IntakeRow` by UUID), shown in the Intake column."""
        self._intakes = intakes
        if self._rows:
            self.dataChanged.emit(self.index(0, COL_INTAKE), self.index(len(self._rows) - 1, COL_INTAKE))

    def intake_text(self, r: FleetRow) -> str:
        """"PASS 2026-12-03" for a card with a stored intake, else "—"."""
        found = self._intakes.get(r.uuid)
        if found is None:
            return fmt.DASH
        return f"{fmt.intake_word(found.verdict)} {time.strftime('%Y-%m-%d', time.localtime(found.ts))}"

    def set_rows(self, rows: list[FleetRow], now: float | None = None, verdicts: Verdicts | None = None) -> None:
        """Replace the rows (keeps the view's selection when the shape is unchanged).

        ``verdicts``: the snapshot's (``FleetSnapshot.verdicts``, judged on the reader thread); without
        them the rows are judged here alone, at ``now`` (their own nodes' newest good poll and status).
        """
        if verdicts is not None:
            self._now = verdicts.now if now is None else now
            self._v = verdicts
        else:
            self._now = time.time() if now is None else now
            self._v = judge(SimpleNamespace(rows=rows, nodes={}, findings=(), read_at=self._now))
        self._all = rows
        self._show(rows)

    def _show(self, rows: list[FleetRow]) -> None:
        if self._filter:
            keep = row_matcher(self._filter, self._v, self.group_of)
            rows = [r for r in rows if keep(r)]
        same_shape = [(r.node, r.uuid) for r in rows] == [(r.node, r.uuid) for r in self._rows]
        if same_shape and rows:
            self._rows = rows
            self.dataChanged.emit(self.index(0, 0), self.index(len(rows) - 1, len(COLUMNS) - 1))
            return
        self.beginResetModel()
        self._rows = rows
        self.endResetModel()

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Sort inside the model (no proxy); missing values sort first ascending, ties by node and index."""
        self._sort = (column, order)
        def key(r: FleetRow) -> tuple[Any, ...]:
            if column == 0:
                return (r.node,)
            if column == 1:
                return (r.index if r.index is not None else -1,)
            if column == 2:
                return (r.model or "",)
            if column == COL_VENDOR:
                return vendor_order(r.vendor)
            if column == COL_DRIVER:
                return (r.driver_version or "",)
            if _FIRST <= column < _LAST:
                v = r.values.get(FIELD_COLUMNS[column - _FIRST].name)
                return (0, 0.0) if not isinstance(v, (int, float)) else (1, float(v))
            if column == _LAST:
                return (r.latest_ts or 0.0,)
            if column == _LAST + 1:
                return (fmt.status_rank(self._status(r)), -verdict_rank(self._v.gpu(r.uuid)))
            if column == COL_INTAKE:
                found = self._intakes.get(r.uuid)
                return (_INTAKE_RANK.get(found.verdict, 0) if found else -1, found.ts if found else 0.0)
            return (len(VERDICTS) - verdict_rank(self._v.gpu(r.uuid)), fmt.status_rank(self._status(r)))

        self.layoutAboutToBeChanged.emit()
        before = self.persistentIndexList()
        held = [(self._rows[i.row()].uuid if i.row() < len(self._rows) else None, i.column()) for i in before]
        rows = sorted(self._rows, key=lambda r: (r.node, r.index if r.index is not None else -1))
        rows.sort(key=key, reverse=order == Qt.SortOrder.DescendingOrder)
        self._rows = rows
        where = {r.uuid: n for n, r in enumerate(rows)}
        self.changePersistentIndexList(before, [self.index(where[u], c) if u in where else QModelIndex()
                                                for u, c in held])
        self.layoutChanged.emit()

    def _status(self, r: FleetRow) -> str:
        return self._v.gpu_status.get(r.uuid) or fmt.gpu_status(r.node_status, r.state, r.latest_ts, self._now)

    def verdict(self, r: FleetRow) -> str:
        """The GPU's verdict (:class:`ui.verdicts.Verdicts`)."""
        return self._v.gpu(r.uuid)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._rows):
            return None
        r = self._rows[index.row()]
        col = index.column()
        v = r.values
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return r.node
            if col == 1:
                return str(r.index) if r.index is not None else fmt.DASH
            if col == 2:
                return r.model or fmt.DASH
            if col == COL_VENDOR:
                return vendor_name(r.vendor)
            if col == COL_DRIVER:
                return r.driver_version or fmt.DASH
            if _FIRST <= col < _LAST:
                return fmt.field(FIELD_COLUMNS[col - _FIRST], v, r.power_enforced_w)
            if col == _LAST:
                return fmt.age(r.latest_ts, self._now)
            if col == _LAST + 1:
                return fmt.status_text(self._status(r), r.last_error)
            if col == _LAST + 2:
                return fmt.verdict_label(self._v.gpu(r.uuid), r.findings, self._v.age(r.uuid))
            if col == COL_INTAKE:
                return self.intake_text(r)
        if role == Qt.ItemDataRole.ForegroundRole and col == _LAST + 1:
            return QBrush(QColor(fmt.STATUS_COLORS.get(self._status(r), "#000000")))
        if role == Qt.ItemDataRole.ForegroundRole and col == _LAST + 2:
            return QBrush(QColor(fmt.VERDICT_COLORS.get(self._v.gpu(r.uuid), "#757575")))
        if role == Qt.ItemDataRole.TextAlignmentRole and (col == 1 or _FIRST <= col < _LAST):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole and col == COL_INTAKE and r.uuid in self._intakes:
            return QBrush(QColor(INTAKE_COLORS.get(self._intakes[r.uuid].verdict, "#757575")))
        if role == Qt.ItemDataRole.ToolTipRole:
            found = self._intakes.get(r.uuid)
            if col == COL_INTAKE and found is not None:
                when = time.strftime('%Y-%m-%d %H:%M', time.localtime(found.ts))
                return (QCoreApplication.translate(
                    "FleetTable", "intake {verdict} at {time} on {node} (the card's Changes tab has the reasons)")
                    if found.node else QCoreApplication.translate(
                        "FleetTable", "intake {verdict} at {time} (the card's Changes tab has the reasons)")).format(
                    verdict=fmt.intake_word(found.verdict), time=when, node=found.node)
            return f"{r.node} GPU {r.index}: {r.model}\nUUID {r.uuid}"
        return None
