"""The pre-run review view: go / no-go for the nodes of a big run, with their ECC, retired-page, power and
Xid history side by side, the exclude list for Slurm, and the review as HTML.

Nodes come from a Slurm hostlist typed in (validated with :mod:`fleetmon.hostlist`
as you type) or from the selection in the fleet view (``fleet``: the
:class:`ui.views.fleet.FleetView`, read by :func:`fleet_selection`; or
``selection``: a callable giving the selected rows or node names). The review
(:func:`fleetmon.assess.run_preflight`) runs on :class:`ui.inspection_worker.Jobs`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication, QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QGuiApplication
from PySide6.QtWidgets import (QAbstractItemView, QDoubleSpinBox, QGroupBox, QHBoxLayout,
                               QHeaderView, QLabel, QLineEdit, QPushButton, QScrollArea, QSplitter,
                               QStyle, QTableView, QVBoxLayout, QWidget)

from fleetmon import hostlist
from fleetmon.health import wording as W
from fleetmon.health.findings import Finding
from fleetmon.i18n import Text, localized, message_of
from ui import format as fmt
from ui.i18n import QT_TRANSLATE_NOOP
from ui.inspection_worker import Jobs, Review, review
from ui.models.base import RowsTableModel
from ui.views.save_html import save_html_dialog, write_html

if TYPE_CHECKING:  # the review's job imports the engine: the window opens without it
    from fleetmon.health.engine import NodePreflight

Index = QModelIndex | QPersistentModelIndex

GO_COLORS = {"go": "#2e7d32", "no-go": "#c62828"}
HINT = QT_TRANSLATE_NOOP("PrerunView", "Each node's ECC, retired pages, power and Xid history appears here, side by "
                         "side, after a review.")
STALE_HINT = QT_TRANSLATE_NOOP("PrerunView", "Out of date: press Review for the nodes' history with the current input.")
DEFAULT_DAYS = 14.0


def parse_nodes(text: str) -> list[str]:
    """The node names of a hostlist typed in, in order, without duplicates.

    Raises:
        ValueError: a malformed hostlist (the message says what is wrong).
    """
    return list(dict.fromkeys(hostlist.expand(text)))


def nodes_of(selection: Iterable[Any]) -> list[str]:
    """Node names of a fleet-view selection: FleetRows (``.node``) or names, sorted, without duplicates."""
    names = {str(getattr(s, "node", s)) for s in selection if getattr(s, "node", s)}
    return sorted(names, key=hostlist.sort_key)


def fleet_selection(view: Any) -> list[str]:
    """The nodes selected in the fleet view (:class:`ui.views.fleet.FleetView`), in hostlist order.

    A selected node counts (also one without GPUs, e.g. never reached), a
    selected GPU counts as its node, a selected group as all its nodes.
    """
    names: list[str] = []
    for index in view.tree.selectionModel().selectedRows():
        it = view.model.item(index)
        if it is None:
            continue
        if it.kind == "node":
            names.append(it.name)
        elif it.kind == "gpu" and it.gpu is not None:
            names.append(it.gpu.node)
        elif it.kind == "group":
            names += [c.name for c in it.children if c.kind == "node"]
    return nodes_of(names)


def exclude_list(result: Any) -> str:
    """The no-go nodes as one Slurm hostlist expression (``sbatch --exclude``); "" when all go."""
    return hostlist.compress_lenient(result.no_go) if result.no_go else ""


# -- the go / no-go list --------------------------------------------------------------------

def _vendors_text(r: Any) -> str:
    """"NVIDIA 2 GO, 0 NO-GO; AMD 1 GO, 1 NO-GO": a mixed pool's review per vendor (as preflight's text)."""
    from fleetmon.health.render import preflight_by_vendor
    from fleetmon.vendors import vendor_name

    return fmt.joined([QCoreApplication.translate("PrerunView", "{vendor} {go} GO, {no_go} NO-GO").format(
        vendor=vendor_name(v), go=len(d["go"]), no_go=len(d["no_go"])) for v, d in preflight_by_vendor(r).items()],
        semicolons=True)


class GoNoGoModel(RowsTableModel["NodePreflight"]):
    """One row per node, no-go first; the reasons (and non-blocking warnings) in words."""

    COLUMNS = ("Node", "Verdict", "GPUs", "Reasons", "Slurm")

    stale = False  # the rows answer an input since changed: shown without the verdict colours
    slurm_text: Callable[[str], str | None] | None = None  # each node's Slurm state (ui.slurm_action)

    def set_stale(self, stale: bool) -> None:
        self.stale = stale
        if self._rows:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self._rows) - 1, len(self.COLUMNS) - 1))

    def set_rows(self, rows: Iterable[NodePreflight]) -> None:
        self.beginResetModel()
        self._rows = sorted(rows, key=lambda n: (n.go, hostlist.sort_key(n.name)))
        self.endResetModel()

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        n = self._rows[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 4:
                return (self.slurm_text(n.name) if self.slurm_text is not None else None) or "—"
            if col == 0:
                return n.name
            if col == 1:
                return W.upper(n.verdict)  # GO / NO-GO, 可用 / 不可用 (the core's words, as the preflight's)
            if col == 2:
                return QCoreApplication.translate("GoNoGoModel", "{gpus} of {expected}").format(
                    gpus=n.gpus, expected=n.expected) if n.expected is not None else f"{n.gpus}"
            if n.reasons:
                return fmt.joined(n.reasons, semicolons=True)  # "；" in Chinese
            return (QCoreApplication.translate("GoNoGoModel", "go; {warnings}").format(
                warnings=fmt.joined(n.warnings, semicolons=True)) if n.warnings else
                QCoreApplication.translate("GoNoGoModel", "go: nothing in the window"))
        if role == Qt.ItemDataRole.ForegroundRole and col == 1 and not self.stale:
            return QBrush(QColor(GO_COLORS[n.verdict]))
        if role == Qt.ItemDataRole.FontRole and col == 1:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.ToolTipRole and col == 3:
            return "\n".join([*(QCoreApplication.translate("GoNoGoModel", "no-go: {reason}").format(reason=localized(r))
                                 for r in n.reasons),
                               *(QCoreApplication.translate("GoNoGoModel", "warning: {warning}").format(
                                   warning=localized(w)) for w in n.warnings)]) or None
        return None


# -- one node's history ------------------------------------------------------------------------

@dataclass(frozen=True)
class HistoryRow:
    section: str  # ECC / Power / Xid / Finding
    what: str
    value: str
    severity: str = ""


_RESOLVED = " (resolved)"
"""A finding row's "What" ends so when the finding has stopped (the row keeps English; shown translated)."""
_HISTORY_WORDS = {w: w for w in (
    QT_TRANSLATE_NOOP("PrerunHistory", "Power"), QT_TRANSLATE_NOOP("PrerunHistory", "Finding"),
    QT_TRANSLATE_NOOP("PrerunHistory", "corrected (new)"), QT_TRANSLATE_NOOP("PrerunHistory", "uncorrected (new)"),
    QT_TRANSLATE_NOOP("PrerunHistory", "retired pages (max per card)"),
    QT_TRANSLATE_NOOP("PrerunHistory", "retirement pending (cards)"),
    QT_TRANSLATE_NOOP("PrerunHistory", "row remap pending / failed"),
    QT_TRANSLATE_NOOP("PrerunHistory", "cards reporting ECC"), QT_TRANSLATE_NOOP("PrerunHistory", "mean / max"),
    QT_TRANSLATE_NOOP("PrerunHistory", "limit / default (min per card)"),
    QT_TRANSLATE_NOOP("PrerunHistory", "power-brake minutes"), QT_TRANSLATE_NOOP("PrerunHistory", "unreadable minutes"),
    QT_TRANSLATE_NOOP("PrerunHistory", "capped cards"), QT_TRANSLATE_NOOP("PrerunHistory", "power"),
    QT_TRANSLATE_NOOP("PrerunHistory", "Xid events"), QT_TRANSLATE_NOOP("PrerunHistory", "no data in this window"),
    QT_TRANSLATE_NOOP("PrerunHistory", "none in this window"))}
"""The history rows' fixed words (sections, labels, "no data"): the rows keep them in English (tests and the
width code read them), the table says them translated. "ECC" and "Xid" stay as they are (identifiers)."""


def history_word(text: str) -> str:
    """A history row's section or fixed label as the window says it (free text, names and figures as they are)."""
    if text in _HISTORY_WORDS:
        return QCoreApplication.translate("PrerunHistory", _HISTORY_WORDS[text])
    return text


def shown_row(r: HistoryRow) -> tuple[str, str, str]:
    """(section, what, value) of a history row as the window shows them: fixed words translated, a finding's
    summary in the reader's language, "(resolved)" too; kinds, Xid codes, places and figures as they are."""
    what = history_word(r.what)
    if r.section == "Finding" and r.what.endswith(_RESOLVED):
        what = QCoreApplication.translate("PrerunHistory", "{what} (resolved)").format(
            what=r.what.removesuffix(_RESOLVED))
    value = localized(r.value) if isinstance(r.value, Text) else history_word(r.value)
    return history_word(r.section), what, value


def _n(value: Any, unit: str = "", digits: int = 0) -> str:
    if value is None:
        return fmt.DASH
    if isinstance(value, float):
        return f"{value:.{digits}f}{unit}"
    return f"{value}{unit}"


def history_rows(node: NodePreflight, findings: Sequence[Finding]) -> list[HistoryRow]:
    """A node's ECC, retired pages, power and Xid history of the window, then its other findings."""
    e, p = node.ecc, node.power
    rows: list[HistoryRow] = []
    if e:
        rows += [HistoryRow("ECC", "corrected (new)", _n(e.get("corrected", 0))),
                 HistoryRow("ECC", "uncorrected (new)", _n(e.get("uncorrected", 0)),
                            "critical" if e.get("uncorrected") else ""),
                 HistoryRow("ECC", "retired pages (max per card)", _n(e.get("retired_pages", 0)),
                            "warning" if e.get("retired_pages") else ""),
                 HistoryRow("ECC", "retirement pending (cards)", _n(e.get("retirement_pending", 0)),
                            "warning" if e.get("retirement_pending") else ""),
                 HistoryRow("ECC", "row remap pending / failed", f"{_n(e.get('remap_pending', 0))} / "
                            f"{_n(e.get('remap_failure', 0))}", "critical" if e.get("remap_failure") else ""),
                 HistoryRow("ECC", "cards reporting ECC", _n(e.get("cards_with_ecc")))]
    else:
        rows.append(HistoryRow("ECC", "ECC", "no data in this window"))
    if p:
        rows += [HistoryRow("Power", "mean / max", f"{_n(p.get('mean_w'), ' W')} / {_n(p.get('max_w'), ' W')}"),
                 HistoryRow("Power", "limit / default (min per card)",
                            f"{_n(p.get('limit_w'), ' W')} / {_n(p.get('default_w'), ' W')}"),
                 HistoryRow("Power", "power-brake minutes", _n(p.get("power_brake_minutes", 0)),
                            "warning" if p.get("power_brake_minutes") else ""),
                 HistoryRow("Power", "unreadable minutes", _n(p.get("unreadable_minutes", 0)),
                            "warning" if p.get("unreadable_minutes") else ""),
                 HistoryRow("Power", "capped cards", _n(p.get("capped_gpus", 0)))]
    else:
        rows.append(HistoryRow("Power", "power", "no data in this window"))
    mine = [f for f in findings if f.node == node.name]
    xids = [f for f in mine if f.kind == "xid"]
    if xids:
        rows += [HistoryRow("Xid", f"{f.where()} · {_when(f.first_seen)}", f.summary, str(f.severity)) for f in xids]
    else:
        rows.append(HistoryRow("Xid", "Xid events", "none in this window"))
    rows += [HistoryRow("Finding", f"{f.where()} · {f.kind}" + ("" if f.is_open else _RESOLVED), f.summary,
                        str(f.severity)) for f in mine if f.kind != "xid"]
    return rows


def _when(ts: Any) -> str:
    return time.strftime("%m-%d %H:%M", time.gmtime(float(ts))) if ts else fmt.DASH


SUMMARY_SECTIONS = ("ECC", "Power")
"""The rows of fixed labels (their "What" is never cut); Xid and Finding rows carry free text."""


class NodeHistoryModel(RowsTableModel[HistoryRow]):
    """A node's review as rows of (section, what, value); warnings and critical values coloured."""

    COLUMNS = ("", "What", "Value")

    def set_rows(self, rows: Iterable[HistoryRow]) -> None:
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        r = self._rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:  # a finding's summary (stored too) and the fixed words translated
            return shown_row(r)[index.column()]
        if role == Qt.ItemDataRole.ForegroundRole and r.severity and index.column() == 2:
            return QBrush(QColor(fmt.SEVERITY_COLORS.get(r.severity, "#757575")))
        if role == Qt.ItemDataRole.ToolTipRole:
            _section, what, value = shown_row(r)
            return QCoreApplication.translate("PrerunHistory", "{what}: {value}").format(what=what, value=value)
        return None


class NodeCard(QGroupBox):
    """One node's table in the side-by-side strip."""

    WIDTH = 400
    """The narrowest card."""
    MAX_WIDTH = 640
    VALUE_WIDTH = 200
    """What the value column gets at least, beside the fitted section and "What" columns."""

    def __init__(self, node: NodePreflight, findings: Sequence[Finding], parent: Any = None) -> None:
        super().__init__(f"{node.name} — {W.upper(node.verdict)}", parent)
        self.node = node
        self.setStyleSheet(f"QGroupBox {{ font-weight: bold; color: {GO_COLORS[node.verdict]}; }}")
        self.model = NodeHistoryModel(self)
        self.model.set_rows(history_rows(node, findings))
        self.table = QTableView(self)
        self.table.setModel(self.model)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.table.setWordWrap(False)
        self.table.setAlternatingRowColors(True)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        h = self.table.horizontalHeader()
        self.table.setStyleSheet("QTableView { font-weight: normal; color: palette(text); }")
        # The section column and the summary rows' "What" labels fit their text (never cut: "retired pages
        # (max per card)" was cut at a fixed 165 px); the long Xid and finding rows are elided like the
        # values, their full text in the tooltip, so the value column keeps its room.
        self.table.resizeColumnToContents(0)
        pad = 2 * self.table.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin) + 12
        metrics = self.table.fontMetrics()
        rows = [self.model.row(i) for i in range(self.model.rowCount())]
        labels = [shown_row(r)[1] for r in rows if r.section in SUMMARY_SECTIONS] or [str(self.model.headerData(
            1, Qt.Orientation.Horizontal))]
        h.resizeSection(1, max(metrics.horizontalAdvance(t) for t in labels) + pad)
        h.resizeSection(2, self.VALUE_WIDTH)
        fixed = h.sectionSize(0) + h.sectionSize(1)
        h.setStretchLastSection(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.table)
        chrome = 2 * self.table.frameWidth() + self.table.verticalScrollBar().sizeHint().width() + 16
        self.setFixedWidth(max(self.WIDTH, min(self.MAX_WIDTH, fixed + self.VALUE_WIDTH + chrome)))


# -- the view -------------------------------------------------------------------------------------

class PrerunView(QWidget):
    """Pick nodes and a window, run the review off the GUI thread, show go / no-go and each node's history.

    Signals: ``review_shown`` (a :class:`Review`), ``failed`` (a message).
    """

    review_shown = Signal(object)
    failed = Signal(str)
    drain_requested = Signal(object)  # [(node, reason, None)]: the no-go nodes (ui.slurm_action asks first)

    def __init__(self, db_path: str, parent: Any = None, *, selection: Callable[[], Iterable[Any]] | None = None,
                 fleet: Any = None, clock: Callable[[], float] = time.time) -> None:
        super().__init__(parent)
        self.db_path = db_path
        if selection is None and fleet is not None:
            selection = lambda: fleet_selection(fleet)  # noqa: E731 - the fleet view's selection, read when asked
        self.selection = selection
        self.clock = clock
        self.fleet_file: Any = None  # the app's fleet file (groups, thresholds, [[spec]]): the main window sets it
        self.review: Review | None = None
        # The input (hostlist text, window) of the review shown and of the one running: a result whose input
        # no longer matches what is typed is out of date (its exclude list must not reach sbatch).
        self._shown_input: tuple[str, float] | None = None
        self._asked_input: tuple[str, float] | None = None
        self.jobs = Jobs(self)
        self.cards: list[NodeCard] = []

        self.nodes = QLineEdit(self)
        self.nodes.setPlaceholderText(self.tr("Slurm hostlist, e.g. gpu[01-16,20],dgx[1-4]"))
        self.nodes.setClearButtonEnabled(True)
        self.nodes.textChanged.connect(self._on_text)
        self.nodes.textChanged.connect(self._on_input_changed)
        self.nodes.returnPressed.connect(self.run_review)
        self.from_fleet = QPushButton(self.tr("Use fleet selection"), self)
        self.from_fleet.setToolTip(self.tr("The nodes selected in the fleet view (select rows there, "
                                           "Ctrl/Shift-click)"))
        self.from_fleet.clicked.connect(self.use_selection)
        self.from_fleet.setEnabled(selection is not None)
        self.days = QDoubleSpinBox(self)
        self.days.setRange(0.1, 3650)
        self.days.setDecimals(1)
        self.days.setValue(DEFAULT_DAYS)
        self.days.setSuffix(self.tr(" days"))
        self.days.valueChanged.connect(self._on_input_changed)
        self.run_button = QPushButton(self.tr("Review"), self)
        self.run_button.clicked.connect(self.run_review)
        self.parsed = QLabel("", self)
        self.verdict = QLabel(self.tr("Type a hostlist or use the fleet selection, then Review."), self)
        self.verdict.setTextFormat(Qt.TextFormat.RichText)
        self.exclude = QLineEdit(self)
        self.exclude.setReadOnly(True)
        self.exclude.setPlaceholderText(self.tr("no-go nodes appear here"))
        self.copy_button = QPushButton(self.tr("Copy exclude list"), self)
        self.copy_button.setToolTip(self.tr("The no-go nodes in Slurm hostlist form, for sbatch --exclude"))
        self.copy_button.clicked.connect(self.copy_exclude)
        self.drain_button = QPushButton(self.tr("Drain the no-go nodes"), self)
        self.drain_button.setToolTip(self.tr("Drain the no-go nodes in Slurm, each with its reasons (asks first; "
                                             "recorded)"))
        self.drain_button.clicked.connect(self.drain_no_go)
        self.drain_button.setVisible(False)  # shown when the app offers Slurm (ui.slurm_action.install)
        self.slurm_enabled = False
        self.save_button = QPushButton(self.tr("Save as HTML…"), self)
        self.save_button.clicked.connect(self.save_html_dialog)

        self.go_model = GoNoGoModel(self)
        self.go_table = QTableView(self)
        self.go_table.setModel(self.go_model)
        self.go_table.setAlternatingRowColors(True)
        self.go_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.go_table.verticalHeader().setVisible(False)
        self.go_table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        self.go_table.setWordWrap(False)
        gh = self.go_table.horizontalHeader()
        for i, w in enumerate((120, 70, 60)):
            gh.resizeSection(i, w)
        gh.setStretchLastSection(True)
        gh.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.go_table.setColumnHidden(4, True)  # the Slurm column: shown by set_slurm
        self.go_table.clicked.connect(self._reveal_card)

        self.strip = QWidget(self)
        self.strip_layout = QHBoxLayout(self.strip)
        self.strip_layout.setContentsMargins(0, 0, 0, 0)
        self.hint = QLabel(self.tr(HINT), self.strip)
        self.hint.setStyleSheet("color: palette(mid)")
        self.strip_layout.addWidget(self.hint)
        self.strip_layout.addStretch(1)
        self.scroll_area = QScrollArea(self)
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setWidget(self.strip)
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)

        pick = QHBoxLayout()
        pick.addWidget(QLabel(self.tr("Nodes"), self))
        pick.addWidget(self.nodes, 1)
        pick.addWidget(self.from_fleet)
        pick.addWidget(QLabel(self.tr("Window"), self))
        pick.addWidget(self.days)
        pick.addWidget(self.run_button)
        out = QHBoxLayout()
        out.addWidget(self.verdict)
        out.addWidget(QLabel(self.tr("Exclude:"), self))
        out.addWidget(self.exclude, 1)
        out.addWidget(self.copy_button)
        out.addWidget(self.drain_button)
        out.addWidget(self.save_button)
        self.splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.splitter.addWidget(self.go_table)
        self.splitter.addWidget(self.scroll_area)
        self.splitter.setSizes([140, 260])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(pick)
        layout.addWidget(self.parsed)
        layout.addLayout(out)
        layout.addWidget(self.splitter, 1)
        self._update_buttons()

    # -- picking nodes ---------------------------------------------------------------------------

    def _on_text(self, text: str) -> None:
        if not text.strip():
            self.parsed.setText("")
            self.parsed.setStyleSheet("")
            self.run_button.setEnabled(False)
            return
        try:
            names = parse_nodes(text)
        except ValueError as exc:
            self.parsed.setText(self.tr("Not a hostlist: {error}").format(error=message_of(exc)))
            self.parsed.setStyleSheet("color: #c62828")
            self.run_button.setEnabled(False)
            return
        shown = ", ".join(names[:8]) + (self.tr(", … ({count} nodes)").format(count=len(names))
                                        if len(names) > 8 else "")
        self.parsed.setText(self.tr("1 node: {nodes}").format(nodes=shown) if len(names) == 1 else
                            self.tr("{count} nodes: {nodes}").format(count=len(names), nodes=shown))
        self.parsed.setStyleSheet("")
        self.run_button.setEnabled(not self.jobs.busy)

    def use_selection(self) -> None:
        """Fill the hostlist with the fleet view's selected nodes (compressed)."""
        names = nodes_of(self.selection()) if self.selection is not None else []
        if not names:
            self.parsed.setText(self.tr("Nothing is selected in the fleet view: select nodes or GPUs there first."))
            self.parsed.setStyleSheet("color: #ef6c00")
            return
        self.nodes.setText(hostlist.compress_lenient(names))

    # -- running ---------------------------------------------------------------------------------

    def run_review(self) -> None:
        text = self.nodes.text()
        try:
            names = parse_nodes(text)
        except ValueError as exc:
            self._on_failed(self.tr("not a hostlist: {error}").format(error=message_of(exc)))
            return
        if not names:
            self._on_failed(self.tr("no nodes: type a hostlist or use the fleet selection"))
            return
        path, now, days, fleet_file = self.db_path, self.clock(), float(self.days.value()), self.fleet_file
        self._invalidate(self.tr("Reviewing…"))  # the previous verdict is not this input's
        self._asked_input = self._input()
        self.run_button.setEnabled(False)
        self.jobs.submit(lambda: review(path, now, names, days, fleet_file), self._on_review, self._on_failed)

    def _input(self) -> tuple[str, float]:
        return self.nodes.text(), float(self.days.value())

    def _on_review(self, rev: Review) -> None:
        self.review = rev
        self._shown_input = self._asked_input
        r = rev.result
        self.go_model.set_rows(r.nodes)
        self.exclude.setText(exclude_list(r))
        nogo = len(r.no_go)
        self.verdict.setText(
            f"<b style='color:{GO_COLORS['no-go' if nogo else 'go']}'>{W.upper('go')} {len(r.go)} · "
            f"{W.upper('no-go')} {nogo}</b> "
            + self.tr("· {days} days to {time} UTC").format(
                days=f"{r.days:g}", time=time.strftime('%Y-%m-%d %H:%M', time.gmtime(r.now)))
            + (f" · {_escape(_vendors_text(r))}" if any(v != "nvidia" for v in r.vendors.values()) else ""))
        self._set_cards(r.nodes, r.findings)
        self.go_model.set_stale(False)
        self.go_table.setEnabled(True)
        self._update_buttons()
        if self._shown_input != self._input():
            self._invalidate()  # typed over while it ran: shown, but out of date
        self.review_shown.emit(rev)

    def _set_cards(self, nodes: Sequence[NodePreflight], findings: Sequence[Finding]) -> None:
        for c in self.cards:
            self.strip_layout.removeWidget(c)
            c.deleteLater()
        self.cards = []
        self.hint.setVisible(not nodes)
        if nodes:
            self.hint.setText(self.tr(HINT))
        for i, n in enumerate(sorted(nodes, key=lambda n: (n.go, hostlist.sort_key(n.name)))):
            card = NodeCard(n, findings, self.strip)
            self.strip_layout.insertWidget(i, card)
            self.cards.append(card)

    def _on_failed(self, message: str) -> None:
        # Nothing of an earlier review stays: its rows, cards and exclude list answered other input.
        self.review = None
        self._shown_input = None
        self.go_model.set_rows([])
        self.go_model.set_stale(False)
        self.exclude.clear()
        self._set_cards([], [])
        self.hint.setText(self.tr(HINT))
        self.go_table.setEnabled(True)
        self.verdict.setText(self.tr("<b style='color:#c62828'>Review failed:</b> {message}").format(
            message=_escape(message)))
        self._update_buttons()
        self.failed.emit(message)

    def _on_input_changed(self, *_: Any) -> None:
        if self.review is not None and self._shown_input != self._input():
            self._invalidate()

    def _invalidate(self, message: str | None = None) -> None:
        """Mark the review shown as out of date: rows greyed, no exclude list to copy, nothing to save."""
        if self.review is None:
            if message:
                self.verdict.setText(message)
            return
        self.review = None
        self.exclude.clear()
        self.go_model.set_stale(True)
        self.go_table.setEnabled(False)
        self._set_cards([], [])  # the nodes' history tables read as live: gone until the next review
        self.hint.setText(self.tr(STALE_HINT))
        self.verdict.setText(message or self.tr("<b style='color:#ef6c00'>Out of date:</b> the nodes or the "
                                                "window changed since this review; Review again."))
        self._update_buttons()

    def set_slurm(self, text: Callable[[str], str | None]) -> None:
        """Show each node's Slurm state (``text(node)``) in the go / no-go list, and *Drain the no-go nodes*."""
        self.go_model.slurm_text = text
        self.slurm_enabled = True
        self.go_table.setColumnHidden(4, False)
        gh = self.go_table.horizontalHeader()  # the reasons keep the spare width, the Slurm state a column of its own
        gh.setStretchLastSection(False)
        gh.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        gh.resizeSection(4, 360)
        self.drain_button.setVisible(True)
        if self.go_model.rowCount():
            self.go_model.dataChanged.emit(self.go_model.index(0, 4), self.go_model.index(self.go_model.rowCount() - 1, 4))
        self._update_buttons()

    def no_go_targets(self) -> list[tuple[str, str, None]]:
        """(node, reason, None) for each no-go node of the review shown (none when it is stale or failed)."""
        if self.review is None:
            return []
        r = self.review.result
        by_name = {n.name: n for n in r.nodes}
        out: list[tuple[str, str, None]] = []
        for name in r.no_go:
            n = by_name.get(name)
            reasons = "; ".join(n.reasons) if n is not None and n.reasons else "no-go"
            out.append((name, f"pre-run no-go: {reasons}", None))
        return out

    def drain_no_go(self) -> None:
        """Ask to drain the no-go nodes (``drain_requested``; the Slurm action confirms and records)."""
        targets = self.no_go_targets()
        if targets:
            self.drain_requested.emit(targets)

    def _update_buttons(self) -> None:
        have = self.review is not None
        self.copy_button.setEnabled(have and bool(self.exclude.text()))
        self.drain_button.setEnabled(have and bool(self.exclude.text()))
        self.save_button.setEnabled(have)
        self._on_text(self.nodes.text())

    def _reveal_card(self, index: QModelIndex) -> None:
        name = self.go_model.row(index.row()).name
        card = next((c for c in self.cards if c.node.name == name), None)
        if card is not None:
            self.scroll_area.ensureWidgetVisible(card)

    # -- output ----------------------------------------------------------------------------------

    def copy_exclude(self) -> str:
        """Put the exclude list on the clipboard; returns it ("" when every node is go)."""
        text = self.exclude.text()
        if text:
            QGuiApplication.clipboard().setText(text)
            self.verdict.setText(self.verdict.text().split(" · copied")[0] + " · copied to the clipboard")
        return text

    def save_html(self, path: str | Path) -> Path:
        if self.review is None:
            raise RuntimeError("no review to save yet")
        return write_html(path, self.review.html)

    def save_html_dialog(self) -> None:
        if self.review is not None:
            save_html_dialog(self, self.review.html, title=self.tr("Save the pre-run review as HTML"),
                             stem="fleetmon-prerun", now=self.review.result.now)


def _escape(text: str) -> str:
    from html import escape

    return escape(text)
