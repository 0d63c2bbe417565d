"""The findings view: open findings with their evidence, filters, acknowledge / snooze, and resolve."""

from __future__ import annotations

import getpass
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication, QDateTime, QEvent, QModelIndex, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (QAbstractItemView, QApplication, QCheckBox, QComboBox, QDateTimeEdit, QDialog,
                               QDialogButtonBox, QFormLayout, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QPushButton,
                               QTableView, QVBoxLayout, QWidget)

from storage.rows import StoredFinding
from ui import format as fmt
from ui.fleet_reader import FleetSnapshot
from ui.i18n import verdict_word
from ui.models.findings_table import COL_ACK, COL_EVIDENCE, COLUMNS, FindingsTableModel
from ui.widgets.columns import ColumnFitter

COL_ACTION = COLUMNS.index("Action")

SILENT_ORDER = ("unreachable", "stale", "unknown")
"""The verdicts of nodes nobody hears from (fleetmon.health.verdict.SILENT), worst first."""

WIDTHS = (70, 150, 110, 50, 85, 85, 300, 330, 200)
"""Starting widths by logical column (fixed: no ResizeToContents)."""
VISUAL_ORDER = (0, 1, 2, 3, COL_EVIDENCE, 4, 5, COL_ACK, 6)
"""Evidence next to the identity, the long action text last."""
SNOOZES: tuple[tuple[str, float], ...] = (("1 hour", 3600), ("4 hours", 4 * 3600), ("1 day", 86400),
                                          ("3 days", 3 * 86400), ("1 week", 7 * 86400))
AckAnswer = tuple[str, float | None]
"""(note, until): until None for an acknowledgement, a Unix time for a snooze."""


def _heading(finding: StoredFinding) -> str:
    """"<b>warning temperature-high</b> on n2 GPU 1" (the severity and kind stay as they are: identifiers)."""
    where = (QCoreApplication.translate("FindingsView", "{node} GPU {index}").format(node=finding.node,
                                                                                    index=finding.gpu_index)
             if finding.gpu_index is not None else finding.node)
    return QCoreApplication.translate("FindingsView", "<b>{severity} {kind}</b> on {where}").format(
        severity=finding.severity, kind=finding.kind, where=where)


class AckDialog(QDialog):
    """Asks for a note and, for a snooze, an expiry."""

    def __init__(self, finding: StoredFinding, snooze: bool, parent: Any = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("Snooze finding") if snooze else self.tr("Acknowledge finding"))
        self.note = QLineEdit(self)
        self.note.setPlaceholderText(self.tr("why (ticket, planned fix…)"))
        self.until = QDateTimeEdit(QDateTime.currentDateTime().addSecs(86400), self)
        self.until.setCalendarPopup(True)
        self.until.setEnabled(snooze)
        form = QFormLayout(self)
        form.addRow(QLabel(_heading(finding)))
        form.addRow(QLabel(fmt.evidence_text(finding.kind, finding.evidence)))
        form.addRow(self.tr("Note:"), self.note)
        if snooze:
            form.addRow(self.tr("Until:"), self.until)
        else:
            form.addRow(QLabel(self.tr("Holds until the finding worsens (its severity rises).")))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self._snooze = snooze

    def answer(self) -> AckAnswer:
        return self.note.text().strip(), float(self.until.dateTime().toSecsSinceEpoch()) if self._snooze else None

    @staticmethod
    def ask(parent: QWidget, finding: StoredFinding, snooze: bool) -> AckAnswer | None:
        d = AckDialog(finding, snooze, parent)
        return d.answer() if d.exec() == QDialog.DialogCode.Accepted else None


ResolveAnswer = tuple[str, str]
"""(reason, note): a reason of fleetmon.health.lifecycle.RESOLVE_REASONS and free text."""


class ResolveDialog(QDialog):
    """Asks why a finding is resolved (card replaced, reseated …) and for a note."""

    def __init__(self, finding: StoredFinding, parent: Any = None) -> None:
        from fleetmon.health.lifecycle import RESOLVE_REASONS

        super().__init__(parent)
        self.setWindowTitle(self.tr("Resolve finding"))
        self.reason = QComboBox(self)
        for key, words in RESOLVE_REASONS.items():
            self.reason.addItem(words, key)
        self.note = QLineEdit(self)
        self.note.setPlaceholderText(self.tr("what was done (RMA number, part, ticket…)"))
        form = QFormLayout(self)
        form.addRow(QLabel(_heading(finding)))
        form.addRow(QLabel(fmt.evidence_text(finding.kind, finding.evidence)))
        form.addRow(self.tr("Resolved because:"), self.reason)
        form.addRow(self.tr("Note:"), self.note)
        form.addRow(QLabel(self.tr("Closes this episode and keeps it in the card's history; if the fault comes "
                                   "back it reopens as a recurrence.")))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def answer(self) -> ResolveAnswer:
        return str(self.reason.currentData()), self.note.text().strip()

    @staticmethod
    def ask(parent: QWidget, finding: StoredFinding) -> ResolveAnswer | None:
        d = ResolveDialog(finding, parent)
        return d.answer() if d.exec() == QDialog.DialogCode.Accepted else None


class FindingsView(QWidget):
    """A click selects a finding (to acknowledge, snooze or resolve it, node-level ones too) and emits
    ``gpu_requested`` for a GPU's finding (the detail pane shows the card; the view stays). A double
    click or Enter opens the finding in the fleet view: ``gpu_opened`` (its GPU) or ``node_requested``
    (a node's finding), as item views do in the rest of Qt.

    ``ack_requested(key, severity, note, until, by)`` asks the reader to store
    an acknowledgement (until 0), a snooze, or a removal (until -1).
    ``resolve_requested(key, reason, note, by)`` asks it to store an
    operator's resolution. ``ask_ack`` and ``ask_resolve`` are the prompts
    (replaceable in tests).
    """

    gpu_requested = Signal(str)
    gpu_opened = Signal(str)
    node_requested = Signal(str)
    ack_requested = Signal(str, str, str, float, str)
    resolve_requested = Signal(str, str, str, str)

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.ask_ack: Callable[[QWidget, StoredFinding, bool], AckAnswer | None] = AckDialog.ask
        self.ask_resolve: Callable[[QWidget, StoredFinding], ResolveAnswer | None] = ResolveDialog.ask
        self.model = FindingsTableModel(self)
        self.kind = QComboBox(self)
        self.severity = QComboBox(self)
        for label, data in ((self.tr("All severities"), None), (self.tr("Critical"), {"critical"}),
                            (self.tr("Warning and worse"), {"critical", "warning"}), (self.tr("Info"), {"info"})):
            self.severity.addItem(label, data)
        self.group = QComboBox(self)
        self.show_acked = QCheckBox(self.tr("Show acknowledged"), self)
        for w in (self.kind, self.severity, self.group):
            w.currentIndexChanged.connect(self._apply_filter)
            w.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.show_acked.toggled.connect(self._apply_filter)
        self.ack_button = QPushButton(self.tr("Acknowledge…"), self)
        self.snooze_button = QPushButton(self.tr("Snooze…"), self)
        self.clear_button = QPushButton(self.tr("Clear ack"), self)  # short: the bar fits a 1024 px window
        self.clear_button.setToolTip(self.tr("Clear the acknowledgement or snooze of the selected finding"))
        self.ack_button.clicked.connect(lambda: self.acknowledge(snooze=False))
        self.snooze_button.clicked.connect(lambda: self.acknowledge(snooze=True))
        self.clear_button.clicked.connect(self.clear_ack)
        self.resolve_button = QPushButton(self.tr("Resolve…"), self)
        self.resolve_button.setToolTip(self.tr("Resolve as an operator's act: card replaced, reseated, driver "
                                               "updated …"))
        self.resolve_button.clicked.connect(self.resolve)
        self.table = QTableView(self)
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 8)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        header.setSortIndicatorShown(True)
        header.setSortIndicator(0, Qt.SortOrder.DescendingOrder)  # worst first (sorts the model)
        for logical, width in enumerate(WIDTHS):
            header.resizeSection(logical, width)
        for visual, logical in enumerate(VISUAL_ORDER):
            header.moveSection(header.visualIndex(logical), visual)
        # Short columns as wide as their header and cells; the evidence and the action share the rest, elided
        # (the row's tooltip has both in full).
        self.fitter = ColumnFitter(self.table, flexible={COL_EVIDENCE: 3, COL_ACTION: 2},
                                   caps={1: 170, 2: 140, COL_ACK: 170})
        self.table.clicked.connect(self._on_clicked)
        # Open on a double click or Enter, never on a single click: not ``activated``, which a style that
        # activates items on a single click (KDE's setting) emits on a click.
        self.table.doubleClicked.connect(self.open_finding)
        self.table.installEventFilter(self)
        self.table.selectionModel().currentRowChanged.connect(self._on_current)
        self._shown = ""  # the key of the finding whose GPU was last asked for (gpu_requested)
        self.count = QLabel(self)
        bar = QHBoxLayout()
        widgets: tuple[QWidget, ...] = (self.severity, self.kind, self.group, self.show_acked)
        for widget in widgets:
            bar.addWidget(widget)
        bar.addStretch(1)
        for button in (self.ack_button, self.snooze_button, self.clear_button, self.resolve_button):
            bar.addWidget(button)
        # The count on a line of its own: in the bar, its text ("… nodes not heard from: 22 stale") widened
        # the view past a 1240 px window and squeezed the sidebar.
        self.count.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 0)
        layout.addLayout(bar)
        layout.addWidget(self.count)
        layout.addWidget(self.table, 1)
        self._kinds: list[str] = []
        self._groups: list[str] = []
        self._silent = ""
        self._update_buttons()

    # -- data ----------------------------------------------------------------------------

    def set_snapshot(self, snap: FleetSnapshot) -> None:
        groups = {n: (row.group or "") for n, row in snap.nodes.items()}
        self._refill(self.kind, self.tr("All kinds"), sorted({f.kind for f in snap.findings}), "_kinds")
        self._refill(self.group, self.tr("All groups"), sorted({snap.group_of(f.node) for f in snap.findings}),
                     "_groups")
        self.model.set_rows(list(snap.findings), snap.read_at, acks=snap.acks, groups=groups)
        # Nodes nobody hears from have no finding that says so (a stale node's findings are old news):
        # the count line names them, by the snapshot's verdicts, as every other surface does.
        counts = snap.verdicts.counts()
        self._silent = fmt.joined([f"{counts[v]} {verdict_word(v)}" for v in SILENT_ORDER if counts[v]])
        self._update_count()
        self._update_buttons()

    def _refill(self, combo: QComboBox, label: str, values: list[str], attr: str) -> None:
        if values == getattr(self, attr):
            return
        setattr(self, attr, values)
        current = combo.currentData()
        combo.blockSignals(True)
        combo.clear()
        combo.addItem(label, None)
        for v in values:
            combo.addItem(v or self.tr("(no group)"), {v})
        i = combo.findData(current) if current is not None else 0
        combo.setCurrentIndex(max(0, i))
        combo.blockSignals(False)

    def _apply_filter(self) -> None:
        self.model.set_filter(kinds=self.kind.currentData(), severities=self.severity.currentData(),
                              groups=self.group.currentData(), show_acknowledged=self.show_acked.isChecked())
        self._update_count()

    def _update_count(self) -> None:
        shown, total = self.model.rowCount(), len(self.model.all_rows())
        acked = sum(1 for f in self.model.all_rows() if self.model.ack(f) is not None)
        self.count.setText(self.tr("{shown} of {total} shown").format(shown=shown, total=total)
                           + (self.tr(" · {count} acknowledged").format(count=acked) if acked else "")
                           + (self.tr(" · nodes not heard from: {silent}").format(silent=self._silent)
                              if self._silent else ""))

    def current(self) -> StoredFinding | None:
        i = self.table.currentIndex()
        return self.model.row(i.row()) if i.isValid() and i.row() < self.model.rowCount() else None

    def _update_buttons(self) -> None:
        f = self.current()
        self.ack_button.setEnabled(f is not None)
        self.snooze_button.setEnabled(f is not None)
        self.clear_button.setEnabled(f is not None and self.model.ack(f) is not None)
        self.resolve_button.setEnabled(f is not None)

    # -- actions --------------------------------------------------------------------------

    def _on_clicked(self, index: QModelIndex) -> None:
        """A click selects (Qt's selection does that) and shows the finding's GPU in the detail pane."""
        if index.isValid() and index.row() < self.model.rowCount():
            self._show(self.model.row(index.row()), again=True)

    def _on_current(self, current: QModelIndex, previous: QModelIndex) -> None:
        self._update_buttons()
        f = self.current()
        if f is not None and QApplication.mouseButtons() == Qt.MouseButton.NoButton:
            self._show(f, again=False)  # the arrow keys walk the findings: the detail follows (a click: _on_clicked)

    def _show(self, f: StoredFinding, again: bool) -> None:
        # A refresh that keeps the same finding current asks nothing again (the pane would reload its plots).
        if f.gpu_uuid and (again or f.key != self._shown):
            self._shown = f.key
            self.gpu_requested.emit(f.gpu_uuid)

    def open_finding(self, index: QModelIndex | None = None) -> None:
        """Double click or Enter: the finding's GPU (``gpu_opened``) or node (``node_requested``) in the fleet."""
        i = self.table.currentIndex() if index is None else index
        if not i.isValid() or i.row() >= self.model.rowCount():
            return
        f = self.model.row(i.row())
        if f.gpu_uuid:
            self.gpu_opened.emit(f.gpu_uuid)
        elif f.node:
            self.node_requested.emit(f.node)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if (watched is self.table and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent)
                and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.table.currentIndex().isValid()):
            self.open_finding()
            return True
        return super().eventFilter(watched, event)

    def acknowledge(self, snooze: bool) -> None:
        f = self.current()
        if f is None:
            return
        answer = self.ask_ack(self, f, snooze)
        if answer is None:
            return
        note, until = answer
        if until is not None and until <= time.time():
            until = time.time() + 3600
        self.ack_requested.emit(f.key, str(f.severity), note, float(until or 0.0), _user())

    def resolve(self) -> None:
        f = self.current()
        if f is None:
            return
        answer = self.ask_resolve(self, f)
        if answer is None:
            return
        reason, note = answer
        self.resolve_requested.emit(f.key, reason, note, _user())

    def clear_ack(self) -> None:
        f = self.current()
        if f is not None:
            self.ack_requested.emit(f.key, str(f.severity), "", -1.0, _user())


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name (containers): the note stands alone
        return ""
