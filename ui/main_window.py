"""The main window: the fleet table and a status bar. Layout and wiring only."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QItemSelection, Qt, QThread, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QHeaderView, QLabel, QMainWindow, QSplitter, QTableView, QTabWidget

from ui import format as fmt
from ui.models.fleet_table import FleetTableModel
from ui.models.findings_table import FindingsTableModel
from storage.rows import FleetRow, StoredFinding
from ui.reader import DbReader
from ui.views.derating import DeratingView
from ui.views.gpu_detail import GpuDetailView


class MainWindow(QMainWindow):
    """Shows every GPU of the fleet; re-reads the database on a timer and after each poll."""

    load_requested = Signal()
    history_requested = Signal(str, int)
    rows_shown = Signal(int)
    history_shown = Signal(str, int)

    def __init__(self, db_path: str, *, refresh_s: float = 2.0, collector_note: str = "") -> None:
        super().__init__()
        self.setWindowTitle(f"fleetmon — {db_path}")
        self.resize(1240, 760)
        self.model = FleetTableModel(self)
        self.table = QTableView(self)
        self.table.setModel(self.model)
        self.table.setAlternatingRowColors(True)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.detail = GpuDetailView(db_path, self)
        self.derating = DeratingView(self.detail.service, self)
        self.findings_model = FindingsTableModel(self)
        self.findings = QTableView(self)
        self.findings.setModel(self.findings_model)
        self.findings.setAlternatingRowColors(True)
        self.findings.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.findings.verticalHeader().setVisible(False)
        self.findings.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.findings.horizontalHeader().setStretchLastSection(True)
        self.findings.doubleClicked.connect(self._on_finding_activated)
        self.tabs = QTabWidget(self)
        self.tabs.addTab(self.detail, "GPU history")
        self.tabs.addTab(self.findings, "Findings")
        self.tabs.addTab(self.derating, "Derating")
        splitter = QSplitter(Qt.Orientation.Vertical, self)
        splitter.addWidget(self.table)
        splitter.addWidget(self.tabs)
        splitter.setSizes([430, 400])
        self.setCentralWidget(splitter)
        quit_action = QAction("&Quit", self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        self.menuBar().addMenu("&File").addAction(quit_action)
        self.status_label = QLabel("reading database…")
        self.collector_label = QLabel(collector_note)
        self.statusBar().addWidget(self.status_label, 1)
        self.statusBar().addPermanentWidget(self.collector_label)

        self._thread = QThread(self)
        self._thread.setObjectName("db-reader")
        self.reader = DbReader(db_path)
        self.reader.moveToThread(self._thread)
        self.load_requested.connect(self.reader.load)
        self.reader.loaded.connect(self._on_loaded)
        self.reader.findings_loaded.connect(self._on_findings_loaded)
        self.detail.history_shown.connect(self.history_shown)
        self.table.selectionModel().selectionChanged.connect(self._on_selection_changed)
        self.reader.failed.connect(self._on_failed)
        self._thread.start()

        self._timer = QTimer(self)
        self._timer.setInterval(int(refresh_s * 1000))
        self._timer.timeout.connect(self.request_load)
        self._timer.start()
        QTimer.singleShot(0, self.request_load)

    def request_load(self) -> None:
        self.load_requested.emit()

    def _on_loaded(self, rows: list[FleetRow], info: dict[str, Any]) -> None:
        self.model.set_rows(rows)
        nodes = len({r.node for r in rows})
        bad = len({r.node for r in rows if r.node_status == "unreachable"})
        self.status_label.setText(
            f"{len(rows)} GPUs on {nodes} nodes ({bad} unreachable) · newest sample "
            f"{fmt.age(max((r.latest_ts for r in rows if r.latest_ts), default=None), info['read_at'])}")
        self.rows_shown.emit(len(rows))

    def _on_findings_loaded(self, findings: list[StoredFinding]) -> None:
        self.findings_model.set_rows(findings)
        crit = sum(1 for f in findings if f.severity == "critical")
        self.tabs.setTabText(1, f"Findings ({len(findings)}, {crit} critical)" if findings else "Findings (none)")

    def _on_finding_activated(self, index: Any) -> None:
        """Double-click on a finding: select its GPU (or the node's first GPU) and show its history."""
        f = self.findings_model.row(index.row())
        for r in range(self.model.rowCount()):
            row = self.model.row(r)
            if (f.gpu_uuid and row.uuid == f.gpu_uuid) or (not f.gpu_uuid and row.node == f.node):
                self.select_gpu(r)
                self.tabs.setCurrentIndex(0)
                return

    def _on_selection_changed(self, selected: QItemSelection, deselected: QItemSelection) -> None:
        rows = self.table.selectionModel().selectedRows()
        if rows:
            self.detail.show_gpu(self.model.row(rows[0].row()))
            self.derating.show_gpu(self.model.row(rows[0].row()))

    def select_gpu(self, row: int) -> None:
        self.table.selectRow(row)

    def _on_failed(self, message: str) -> None:
        self.status_label.setText(f"cannot read the database: {message}")

    def on_cycle_finished(self, polled: int, unreachable: int) -> None:
        self.collector_label.setText(f"last poll: {polled} nodes, {unreachable} unreachable")
        self.request_load()

    def closeEvent(self, event: Any) -> None:  # noqa: N802 - Qt API
        self._timer.stop()
        self._thread.quit()
        self._thread.wait(5000)
        self.reader.close()
        self.detail.shutdown()
        super().closeEvent(event)
