"""The daily inspection view: the health engine's report as a checklist per node, what changed since the
last sign-off, the sign-off itself, and the printable report.

The report runs on :class:`ui.inspection_worker.Jobs` (never on the GUI thread):
when the view is first shown, on Run inspection, and after each sign-off (so
the next inspection at once diffs against the sign-off just stored).
"""

from __future__ import annotations

import getpass
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (QAbstractItemModel, QCoreApplication, QModelIndex, QPersistentModelIndex, Qt, QTimer,
                            Signal)
from PySide6.QtGui import QBrush, QColor, QShowEvent
from PySide6.QtWidgets import (QAbstractItemView, QHBoxLayout, QHeaderView, QLabel, QLineEdit,
                               QPushButton, QSplitter, QTableView, QTabWidget, QTextBrowser,
                               QTreeView, QVBoxLayout, QWidget)

from fleetmon import hostlist
from fleetmon.i18n import localized
from fleetmon.health.verdict import VERDICTS
from fleetmon.health.findings import Finding
from storage.signoffs import SignoffRow
from ui import format as fmt
from ui.i18n import QT_TRANSLATE_NOOP, column, severity_text, verdict_word
from ui.inspection_worker import Inspection, Jobs, inspect, sign_off
from ui.models.base import RowsTableModel
from ui.views.save_html import save_html_dialog, write_html
from ui.widgets.columns import ColumnFitter

if TYPE_CHECKING:
    # QtPrintSupport is imported when the user prints (about 0.2 s of the window's launch otherwise).
    from PySide6.QtPrintSupport import QPrinter

Index = QModelIndex | QPersistentModelIndex

VERDICT_COLORS = fmt.VERDICT_COLORS
"""One colour per verdict, stale included (the same table as the fleet tree's)."""


def _when(ts: Any) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(float(ts))) if ts else fmt.DASH


def ack_text(ack: Mapping[str, Any] | None) -> str:
    """"acknowledged by ann: fan ordered", "snoozed until …: note", or "" for none."""
    if not ack:
        return ""
    who = QCoreApplication.translate("ChecklistModel", " by {name}").format(name=ack["by"]) if ack.get("by") else ""
    head = (QCoreApplication.translate("ChecklistModel", "snoozed{who} until {time}").format(
        who=who, time=_when(ack["until"])) if ack.get("until")
        else QCoreApplication.translate("ChecklistModel", "acknowledged{who}").format(who=who))
    return f"{head}: {ack.get('note') or QCoreApplication.translate('ChecklistModel', '(no note)')}"


# -- the checklist: nodes with their open findings ---------------------------------------

@dataclass
class CheckItem:
    """A node (``finding`` None) or one of its open findings."""

    node: str
    verdict: str = ""
    finding: Finding | None = None
    ack: Mapping[str, Any] | None = None
    children: list[CheckItem] = field(default_factory=list)
    parent: CheckItem | None = None
    row: int = 0


CHECK_COLUMNS = ("Node / finding", "Verdict", "Kind", "Summary", "Acknowledged")


class ChecklistModel(QAbstractItemModel):
    """Nodes worst verdict first, each with its open (non-info) findings; node rows carry a check box.

    The ticks are the operator's ("looked at this node"); :meth:`checked` is kept
    with the sign-off. A new inspection keeps the ticks of nodes whose verdict
    did not change.
    """

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._nodes: list[CheckItem] = []
        self._checked: set[str] = set()

    def set_result(self, result: Any) -> None:
        acked: Mapping[str, Mapping[str, Any]] = result.summary.get("acknowledged") or {}
        by_node: dict[str, list[Finding]] = {}
        for f in result.findings:
            if f.is_open and f.severity != "info":
                by_node.setdefault(f.node, []).append(f)
        old = {n.node: n.verdict for n in self._nodes}
        order = {v: i for i, v in enumerate(VERDICTS)}
        names = sorted(result.verdicts, key=lambda n: (order.get(result.verdicts[n], 9), hostlist.sort_key(n)))
        self.beginResetModel()
        self._nodes = []
        for r, name in enumerate(names):
            node = CheckItem(name, str(result.verdicts[name]), row=r)
            for i, f in enumerate(by_node.get(name, ())):
                node.children.append(CheckItem(name, node.verdict, f, acked.get(f.key), parent=node, row=i))
            self._nodes.append(node)
        self._checked = {n for n in self._checked if old.get(n) == result.verdicts.get(n)}
        self.endResetModel()

    def checked(self) -> list[str]:
        return sorted(self._checked, key=hostlist.sort_key)

    def set_all_checked(self, on: bool) -> None:
        self._checked = {n.node for n in self._nodes} if on else set()
        if self._nodes:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self._nodes) - 1, 0),
                                  [Qt.ItemDataRole.CheckStateRole])

    def nodes(self) -> list[CheckItem]:
        return list(self._nodes)

    def item(self, index: Index) -> CheckItem | None:
        if not index.isValid():
            return None
        ptr = index.internalPointer()
        return ptr if isinstance(ptr, CheckItem) else None

    # -- QAbstractItemModel -------------------------------------------------------------

    def index(self, row: int, column: int, parent: Index = QModelIndex()) -> QModelIndex:  # noqa: B008
        if column < 0 or column >= len(CHECK_COLUMNS) or row < 0:
            return QModelIndex()
        if not parent.isValid():
            return self.createIndex(row, column, self._nodes[row]) if row < len(self._nodes) else QModelIndex()
        p = self.item(parent)
        if p is None or p.finding is not None or row >= len(p.children):
            return QModelIndex()
        return self.createIndex(row, column, p.children[row])

    def parent(self, index: Index = QModelIndex()) -> QModelIndex:  # type: ignore[override]  # noqa: B008
        it = self.item(index)
        if it is None or it.parent is None:
            return QModelIndex()
        return self.createIndex(it.parent.row, 0, it.parent)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802 - Qt API
        if not parent.isValid():
            return len(self._nodes)
        if parent.column() != 0:
            return 0
        it = self.item(parent)
        return len(it.children) if it is not None and it.finding is None else 0

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008, N802
        return len(CHECK_COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return column(CHECK_COLUMNS[section])
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        it = self.item(index)
        if it is None:
            return Qt.ItemFlag.NoItemFlags
        base = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if it.finding is None and index.column() == 0:
            base |= Qt.ItemFlag.ItemIsUserCheckable
        return base

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:  # noqa: N802
        it = self.item(index)
        if it is None or it.finding is not None or index.column() != 0 or role != Qt.ItemDataRole.CheckStateRole:
            return False
        on = value in (Qt.CheckState.Checked, Qt.CheckState.Checked.value, 2, True)
        (self._checked.add if on else self._checked.discard)(it.node)
        self.dataChanged.emit(index, index, [Qt.ItemDataRole.CheckStateRole])
        return True

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        it = self.item(index)
        if it is None:
            return None
        col = index.column()
        f = it.finding
        if role == Qt.ItemDataRole.DisplayRole:
            if f is None:
                acked = sum(1 for c in it.children if c.ack)
                return (it.node, verdict_word(it.verdict).upper(),
                        self.tr("{count} open").format(count=len(it.children)) if it.children else fmt.DASH,
                        fmt.joined(list(dict.fromkeys(c.finding.kind for c in it.children if c.finding))) or fmt.DASH,
                        self.tr("{acked} of {count}").format(acked=acked, count=len(it.children)) if acked
                        else "")[col]
            where = f.where()
            short = where[len(f.node):].strip() if where.startswith(f.node) else where  # the parent names the node
            return (short or self.tr("node"), severity_text(str(f.severity)), f.kind, localized(f.summary),
                    ack_text(it.ack))[col]
        if role == Qt.ItemDataRole.CheckStateRole and f is None and col == 0:
            return Qt.CheckState.Checked if it.node in self._checked else Qt.CheckState.Unchecked
        if role == Qt.ItemDataRole.ForegroundRole:
            if f is None and col == 1:
                return QBrush(QColor(VERDICT_COLORS.get(it.verdict, "#757575")))
            if f is not None and col == 1:
                return QBrush(QColor(fmt.SEVERITY_COLORS.get(str(f.severity), "#757575")))
            if f is not None and it.ack:
                return QBrush(QColor("#757575"))  # acknowledged: shown, but quieter
        if role == Qt.ItemDataRole.FontRole and f is None and col == 1:
            from PySide6.QtGui import QFont

            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.ToolTipRole and f is not None:
            return "\n".join(x for x in (localized(f.summary), f"action: {localized(f.action)}" if f.action else "",
                                         ack_text(it.ack)) if x)
        return None


# -- what changed since the sign-off ------------------------------------------------------

@dataclass(frozen=True)
class ChangeRow:
    change: str  # new / resolved / worsened / inventory
    severity: str
    where: str
    kind: str
    summary: str
    when: float | None


def change_rows(result: Any) -> list[ChangeRow]:
    """New, worsened, resolved findings and inventory changes of an inspection, in that order."""
    out: list[ChangeRow] = []
    for label, items in (("new", result.new), ("worsened", result.worsened), ("resolved", result.resolved)):
        for f in items:
            out.append(ChangeRow(label, str(f.severity), f.where(), f.kind, f.summary,
                                 f.last_seen if label == "resolved" else f.first_seen))
    for c in result.summary.get("inventory_changes", []) or []:
        out.append(ChangeRow("inventory", "info", str(c.get("node") or ""), str(c.get("change") or "inventory"),
                             _text(c.get("summary")), c.get("ts")))
    return out


def _text(value: Any) -> str:
    """A summary as it came (an i18n.Text stays one, said in the reader's language where shown)."""
    return value if isinstance(value, str) else ("" if value is None else str(value))


_CHANGE_WORDS = (QT_TRANSLATE_NOOP("Change", "new"), QT_TRANSLATE_NOOP("Change", "worsened"),
                 QT_TRANSLATE_NOOP("Change", "resolved"), QT_TRANSLATE_NOOP("Change", "inventory"))
"""The Change column's words, for lupdate (the rows keep them in English)."""
CHANGE_COLORS = {"new": "#c62828", "worsened": "#ef6c00", "resolved": "#2e7d32", "inventory": "#1565c0"}


class ChangesModel(RowsTableModel[ChangeRow]):
    COLUMNS = ("Change", "Severity", "Where", "Kind", "When (UTC)", "Summary")

    def set_rows(self, rows: Iterable[ChangeRow]) -> None:
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        r = self._rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            when = time.strftime("%m-%d %H:%M", time.gmtime(float(r.when))) if r.when else fmt.DASH
            return (QCoreApplication.translate("Change", r.change), severity_text(r.severity), r.where, r.kind,
                    when, localized(r.summary))[index.column()]
        if role == Qt.ItemDataRole.ForegroundRole:
            if index.column() == 0:
                return QBrush(QColor(CHANGE_COLORS.get(r.change, "#757575")))
            if index.column() == 1:
                return QBrush(QColor(fmt.SEVERITY_COLORS.get(r.severity, "#757575")))
        if role == Qt.ItemDataRole.ToolTipRole:
            return localized(r.summary)
        return None


# -- the view -------------------------------------------------------------------------------

class InspectionView(QWidget):
    """Runs the inspection off the GUI thread, shows it, signs it off, prints and saves it.

    Signals: ``inspection_shown`` (an :class:`Inspection`), ``signed_off`` (a
    :class:`SignoffRow`), ``failed`` (a message, also shown in the view).
    """

    inspection_shown = Signal(object)
    signed_off = Signal(object)
    failed = Signal(str)

    STALE_S = 300.0
    """Showing the view again after this long runs the inspection again (the Run button does it any time)."""
    RETRY_EMPTY_S = 15.0

    def __init__(self, db_path: str, parent: Any = None, *, group: str | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self.group = group
        self.clock = clock
        self.fleet_file: Any = None  # the app's fleet file (groups, thresholds, [[spec]]): the main window sets it
        self.inspection: Inspection | None = None
        self._ran_at: float | None = None
        self.jobs = Jobs(self)
        # While shown: inspect again when the last one found no nodes yet (a collector just starting).
        self._retry = QTimer(self)
        self._retry.setSingleShot(True)
        self._retry.setInterval(int(self.RETRY_EMPTY_S * 1000))
        self._retry.timeout.connect(self._retry_if_shown)

        self.run_button = QPushButton(self.tr("Run inspection"), self)
        self.run_button.setToolTip(self.tr("Judge the window back to the last sign-off (at least 24 h) again"))
        self.run_button.clicked.connect(self.run_inspection)
        self.print_button = QPushButton(self.tr("Print…"), self)
        self.print_button.clicked.connect(self.print_report)
        self.save_button = QPushButton(self.tr("Save HTML…"), self)
        self.save_button.clicked.connect(self.save_html_dialog)
        self.headline = QLabel(self.tr("Not run yet"), self)
        self.headline.setTextFormat(Qt.TextFormat.RichText)
        self.headline.setWordWrap(True)
        self.headline.setToolTip(self.tr("The fleet's status, then its nodes counted by verdict (one per node); "
                                         "the checklist below lists each node's open findings."))
        self.baseline_label = QLabel("", self)
        self.baseline_label.setWordWrap(True)

        self.checklist = ChecklistModel(self)
        self.tree = QTreeView(self)
        self.tree.setModel(self.checklist)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        self.tree.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        header = self.tree.header()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for i, w in enumerate((135, 70, 140, 320)):
            header.resizeSection(i, w)
        self.tree_fitter = ColumnFitter(self.tree, flexible=(3,), minimum={0: 150})  # the summary takes the rest
        self.check_all = QPushButton(self.tr("Tick all"), self)
        self.check_all.clicked.connect(lambda: self.checklist.set_all_checked(True))

        self.changes = ChangesModel(self)
        self.changes_table = QTableView(self)
        self.changes_table.setModel(self.changes)
        self.changes_table.setAlternatingRowColors(True)
        self.changes_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.changes_table.verticalHeader().setVisible(False)
        self.changes_table.setWordWrap(False)
        self.changes_table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        ch = self.changes_table.horizontalHeader()
        ch.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        ch.setStretchLastSection(True)
        for i, w in enumerate((62, 62, 125, 135, 82)):
            ch.resizeSection(i, w)
        self.changes_fitter = ColumnFitter(self.changes_table, flexible=(5,))
        self.changes_label = QLabel(self.tr("What changed since the last sign-off"), self)

        self.browser = QTextBrowser(self)
        self.browser.setOpenLinks(False)

        self.name = QLineEdit(self)
        self.name.setPlaceholderText(self.tr("your name"))
        self.name.setText(_user())
        self.name.setMaximumWidth(180)
        self.note = QLineEdit(self)
        self.note.setPlaceholderText(self.tr("note (optional): what you did, what to watch"))
        self.sign_button = QPushButton(self.tr("Sign off"), self)
        self.sign_button.setEnabled(False)
        self.sign_button.clicked.connect(self.sign_off)
        self.name.textChanged.connect(lambda _: self._update_buttons())
        self.jobs.busy_changed.connect(lambda _: self._update_buttons())

        # Layout: a bar, then tabs (checklist + changes | the printable report), then the sign-off form.
        bar = QHBoxLayout()
        bar.addWidget(self.headline, 1)
        for b in (self.run_button, self.print_button, self.save_button):
            bar.addWidget(b)
        left = QWidget(self)
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lrow = QHBoxLayout()
        lrow.addWidget(QLabel(self.tr("Checklist: tick each node as you review it"), left), 1)
        lrow.addWidget(self.check_all)
        lv.addLayout(lrow)
        lv.addWidget(self.tree, 1)
        right = QWidget(self)
        rv = QVBoxLayout(right)
        rv.setContentsMargins(0, 0, 0, 0)
        rv.addWidget(self.changes_label)
        rv.addWidget(self.changes_table, 1)
        # The checklist above what changed, each the view's width: side by side at 1240 px both cut their
        # summaries to a few characters.
        self.splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.splitter.addWidget(left)
        self.splitter.addWidget(right)
        self.splitter.setSizes([330, 250])
        self.tabs = QTabWidget(self)
        self.tabs.addTab(self.splitter, self.tr("Checklist"))
        self.tabs.addTab(self.browser, self.tr("Report (printable)"))
        form = QHBoxLayout()
        form.addWidget(QLabel(self.tr("Sign off as"), self))
        form.addWidget(self.name)
        form.addWidget(self.note, 1)
        form.addWidget(self.sign_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(bar)
        layout.addWidget(self.baseline_label)
        layout.addWidget(self.tabs, 1)
        layout.addLayout(form)
        self._update_buttons()

    # -- running -------------------------------------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt API
        """Inspect when first shown, and again when shown with an inspection older than ``STALE_S``."""
        super().showEvent(event)
        if not self.jobs.busy and (self._ran_at is None or time.monotonic() - self._ran_at > self.STALE_S):
            self.run_inspection()

    def _retry_if_shown(self) -> None:
        if self.isVisible() and not self.jobs.busy:
            self.run_inspection()

    def run_inspection(self) -> None:
        """Start the inspection on the job thread (a second request while one runs is queued behind it)."""
        self._ran_at = time.monotonic()
        self.headline.setText(self.tr("Running the inspection…"))
        path, now, group, fleet = self.db_path, self.clock(), self.group, self.fleet_file
        self.jobs.submit(lambda: inspect(path, now, group, fleet), self._on_inspection, self._on_failed)

    def _on_inspection(self, insp: Inspection) -> None:
        self.inspection = insp
        r = insp.result
        self.checklist.set_result(r)
        self.tree.expandAll()
        rows = change_rows(r)
        self.changes.set_rows(rows)
        counts = {v: list(r.verdicts.values()).count(v) for v in VERDICTS}
        color = VERDICT_COLORS.get(r.status, "#757575")
        parts = [f"{counts[v]} {verdict_word(v)}" for v in VERDICTS if counts[v]]
        nodes = len(r.verdicts)
        self.headline.setText(self.tr("{status} · {nodes} ({verdicts}) · window {since} .. {until} UTC").format(
            status=f"<b style='color:{color}'>{verdict_word(r.status).upper()}</b>",
            nodes=self.tr("1 node") if nodes == 1 else self.tr("{count} nodes").format(count=nodes),
            verdicts=self.tr(", ").join(parts) or self.tr("none"), since=_when(r.since), until=_when(r.now)))
        b = insp.baseline
        if b is None:
            self.baseline_label.setText(self.tr("No sign-off yet: every open finding counts as new. Sign off below "
                                                "to set the baseline for the next inspection."))
            self.changes_label.setText(self.tr("What changed: no sign-off to compare with ({count} rows)").format(
                count=len(rows)))
        else:
            note = f" — “{b.note}”" if b.note else ""
            self.baseline_label.setText(self.tr("Compared with the sign-off by {name} at {time} UTC{note}.").format(
                name=b.name, time=_when(b.ts), note=note))
            self.changes_label.setText(self.tr(
                "Since the sign-off by {name} at {time} UTC: {new} new, {worsened} worsened, {resolved} resolved, "
                "{inventory} inventory changes").format(
                name=b.name, time=_when(b.ts), new=len(r.new), worsened=len(r.worsened), resolved=len(r.resolved),
                inventory=len(r.summary.get('inventory_changes') or [])))
        self.browser.setHtml(insp.html)
        if not r.verdicts:
            self.headline.setText(self.headline.text() + self.tr(" · no nodes in the database yet"))
            self._retry.start()
        self._update_buttons()
        self.inspection_shown.emit(insp)

    def _on_failed(self, message: str) -> None:
        self.headline.setText(self.tr("<b style='color:#c62828'>The inspection failed:</b> {message}").format(
            message=_escape(message)))
        self._update_buttons()
        self.failed.emit(message)

    def _update_buttons(self) -> None:
        have = self.inspection is not None
        self.sign_button.setEnabled(have and bool(self.name.text().strip()) and not self.jobs.busy)
        self.print_button.setEnabled(have)
        self.save_button.setEnabled(have)

    # -- sign-off ------------------------------------------------------------------------

    def sign_off(self) -> None:
        """Store the sign-off (name, now, note, ticked nodes) of the inspection shown, then inspect again."""
        if self.inspection is None or not self.name.text().strip():
            return
        path, name, note, now = self.db_path, self.name.text().strip(), self.note.text().strip(), self.clock()
        result, checked = self.inspection.result, self.checklist.checked()
        self.sign_button.setEnabled(False)
        self.jobs.submit(lambda: sign_off(path, name, note, now, result, checked), self._on_signed, self._on_failed)

    def _on_signed(self, row: SignoffRow) -> None:
        self.note.clear()
        self.signed_off.emit(row)
        self.run_inspection()  # the next inspection diffs against this sign-off

    # -- printing and saving -----------------------------------------------------------------

    def print_to(self, printer: QPrinter) -> None:
        """Print the report shown (the same HTML as Save HTML) to ``printer``."""
        self.browser.document().print_(printer)

    def print_report(self) -> None:
        if self.inspection is None:
            return
        from PySide6.QtPrintSupport import QPrintDialog, QPrinter

        printer = QPrinter(QPrinter.PrinterMode.HighResolution)
        dialog = QPrintDialog(printer, self)
        dialog.setWindowTitle(self.tr("Print the inspection"))
        if dialog.exec() == QPrintDialog.DialogCode.Accepted:
            self.print_to(printer)

    def save_html(self, path: str | Path) -> Path:
        """Write the report's HTML to ``path``."""
        if self.inspection is None:
            raise RuntimeError("no inspection to save yet")
        return write_html(path, self.inspection.html)

    def save_html_dialog(self) -> None:
        if self.inspection is not None:
            save_html_dialog(self, self.inspection.html, title=self.tr("Save the inspection as HTML"),
                             stem="fleetmon-inspection", now=self.inspection.result.now)


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name (a container): the operator types one
        return ""


def _escape(text: str) -> str:
    from html import escape

    return escape(text)
