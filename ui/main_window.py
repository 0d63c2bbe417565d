"""The main window: a sidebar of views, the GPU detail pane, menus, status bar and tray. Layout and wiring only.

Views register with :meth:`MainWindow.add_view` (name, widget, shortcut): the
fleet, findings and versions views here, others in one line each. Every read
goes through the reader on its worker thread (``ui.fleet_reader``); the GUI
thread only hands signals around and paints.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QByteArray, QCoreApplication, QItemSelection, QSettings, Qt, QThread, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (QHeaderView, QLabel, QLineEdit, QListWidget, QMainWindow, QSizePolicy, QSplitter,
                               QStackedWidget, QTableView, QVBoxLayout, QWidget)

from fleetmon.health.verdict import VERDICTS
from fleetmon.i18n import localized
from fleetmon.vocab import Severity
from storage.rows import FleetRow, StoredFinding
from ui import format as fmt
from ui.fleet_reader import FleetReader, FleetSnapshot
from ui.models.fleet_table import COL_HEALTH, COL_INTAKE, FleetTableModel
from ui.models.findings_table import FindingsTableModel
from ui import evidence_action, i18n as ui_i18n, slurm_action
from ui.i18n import QT_TRANSLATE_NOOP, verdict_word
from ui.export_action import InventoryExport
from ui.intake_action import IntakeAction, IntakeOutcome
from ui.print_inventory import InventoryPrint
from ui.shell import Tray, freeze_snapshot, settle_heap
from ui.views.findings import FindingsView
from fleetmon.specbook import SpecBook, book_of
from ui.views.fleet import FleetView
from ui.views.versions import VersionsView
from ui.views.derating import DeratingView
from ui.views.gpu_detail import GpuDetailView
from ui.views import inspection, prerun
from ui.verdicts import Verdicts

SETTINGS_ORG = "fleetmon"
SETTINGS_APP = "fleetmon"
DEFAULT_SIZE = (1240, 760)
"""The window's size on first start (then the size it was closed at)."""
MINIMUM_SIZE = (1024, 640)
"""The smallest supported window (docs/user-guide.md): every view's columns and controls fit at this size
(tests/ui/test_layout.py), smaller is refused by the window manager."""


class MainWindow(QMainWindow):
    """Shows the fleet; re-reads the database on a timer and after each poll.

    ``collector`` is what collects for this window, else None: the
    :class:`ui.collector_process.CollectorProcess` child of `fleetmon gui --fleet`
    (or, in tests, an in-process :class:`fleetmon.collector.poller.Collector`);
    Poll now and Pause collecting call its ``poll_now``, ``pause`` and ``resume``.
    """

    load_requested = Signal()
    refresh_requested = Signal()  # the timer's: read only if the database changed
    ack_requested = Signal(str, str, str, float, str)
    resolve_requested = Signal(str, str, str, str)
    rows_shown = Signal(int)
    history_shown = Signal(str, int)
    snapshot_shown = Signal(object)  # FleetSnapshot

    def __init__(self, db_path: str, *, refresh_s: float = 2.0, collector_note: str = "", collector: Any = None,
                 settings: QSettings | None = None, stale_after_s: float | None = None,
                 spec_book: SpecBook | None = None, fleet_file: Any = None) -> None:
        super().__init__()
        self.setWindowTitle(f"fleetmon — {db_path}")
        self.setMinimumSize(*MINIMUM_SIZE)
        self.resize(*DEFAULT_SIZE)
        # The INI format on every platform, so that QSettings.setPath (the tests' temporary folder) applies.
        self.settings = settings if settings is not None else QSettings(
            QSettings.Format.IniFormat, QSettings.Scope.UserScope, SETTINGS_ORG, SETTINGS_APP)
        self.collector = collector
        self.collector_note = collector_note
        self.snapshot = FleetSnapshot()
        self._last_cycle: float | None = None
        self._views: list[tuple[str, QWidget]] = []
        self._with_detail: set[int] = set()  # the views the GPU detail pane sits under
        self._splitter_state: QByteArray | None = None  # the detail pane's size while a view without it shows
        self._view_actions: list[QAction] = []

        # -- views ----------------------------------------------------------------
        self.sidebar = QListWidget(self)
        self.sidebar.setMaximumWidth(160)
        self.sidebar.setMinimumWidth(130)  # "Findings (15, 4 crit)" whole, never squeezed by a wide view
        self.stack = QStackedWidget(self)
        self.sidebar.currentRowChanged.connect(self._on_view_changed)
        self.fleet_view = FleetView(self)
        self.findings_view = FindingsView(self)
        self.versions_view = VersionsView(self)
        # The flat table of every GPU (sortable in the model), also what tests read cell by cell.
        self.model = FleetTableModel(self)
        self.table = QTableView(self)
        self.table.setModel(self.model)
        self.table.setAlternatingRowColors(True)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        for i, w in enumerate((120, 40, 250, 110, 100, 70, 110, 60, 90, 110)):
            header.resizeSection(i, w)
        # Health takes the spare width (its text is the longest), not the short Intake column after it.
        header.setSectionResizeMode(COL_HEALTH, QHeaderView.ResizeMode.Stretch)
        header.resizeSection(COL_INTAKE, 170)
        self.findings_model: FindingsTableModel = self.findings_view.model
        self.findings = self.findings_view.table
        self.file_menu = self.menuBar().addMenu(self.tr("&File"))
        self.view_menu = self.menuBar().addMenu(self.tr("&View"))  # views first (add_view), then Refresh and Find
        self._view_separator: QAction | None = None
        self.detail = GpuDetailView(db_path, self)
        self.derating = DeratingView(self.detail.service, self)
        # The fleet file's [[spec]] tables over the catalog: the detail pane and the derating view show the spec
        # the collector's health pass judged each card against ("user spec" where it is one).
        self.spec_book = spec_book if spec_book is not None else book_of(fleet_file)
        self.detail.spec_book = self.derating.spec_book = self.spec_book
        # The detail pane goes under the views that select GPUs (fleet, findings, the flat table); the
        # others need the height (the pre-run results, the inspection checklist) or show a card themselves
        # (derating).
        self.add_view(QT_TRANSLATE_NOOP("MainWindow", "Fleet"), self.fleet_view, detail=True)
        self.add_view(QT_TRANSLATE_NOOP("MainWindow", "Findings"), self.findings_view, detail=True)
        self.add_view(QT_TRANSLATE_NOOP("MainWindow", "Versions"), self.versions_view)
        # All GPUs: the flat table under a filter box of the fleet view's syntax (vendor:amd, model:A100, …).
        self.table_filter = QLineEdit(self)
        self.table_filter.setPlaceholderText(self.tr("Filter: node, gpu[01-16] hostlist, model:A100, vendor:amd, "
                                                     "driver:535, status:critical…"))
        self.table_filter.setClearButtonEnabled(True)
        self.table_filter.textChanged.connect(self.model.set_filter)
        self.model.group_of = lambda node: self.snapshot.group_of(node)
        self.all_gpus = QWidget(self)
        all_layout = QVBoxLayout(self.all_gpus)
        all_layout.setContentsMargins(4, 4, 4, 0)
        all_layout.addWidget(self.table_filter)
        all_layout.addWidget(self.table, 1)
        self.add_view(QT_TRANSLATE_NOOP("MainWindow", "All GPUs"), self.all_gpus, detail=True)
        self.add_view(QT_TRANSLATE_NOOP("MainWindow", "Derating"), self.derating)
        self.inspection_view = inspection.InspectionView(db_path, self)
        self.prerun_view = prerun.PrerunView(db_path, self, fleet=self.fleet_view)
        # The fleet file (None: none given) reaches the inspection and the pre-run review as it reaches the
        # collector's health pass: its groups, thresholds and [[spec]] tables.
        self.inspection_view.fleet_file = self.prerun_view.fleet_file = fleet_file
        self.add_view(QT_TRANSLATE_NOOP("MainWindow", "Inspection"), self.inspection_view)
        self.add_view(QT_TRANSLATE_NOOP("MainWindow", "Pre-run"), self.prerun_view)

        self.splitter = QSplitter(Qt.Orientation.Vertical, self)
        self.splitter.addWidget(self.stack)
        self.splitter.addWidget(self.detail)
        self.splitter.setSizes([430, 330])
        self.splitter.setChildrenCollapsible(False)
        self.outer = QSplitter(Qt.Orientation.Horizontal, self)
        self.outer.addWidget(self.sidebar)
        self.outer.addWidget(self.splitter)
        self.outer.setStretchFactor(1, 1)
        self.outer.setCollapsible(0, False)
        self.outer.setSizes([130, 1110])
        self.setCentralWidget(self.outer)
        self.exporter = InventoryExport(db_path, self, settings=self.settings)
        self.exporter.stale_after_s = stale_after_s
        self.inventory_print = InventoryPrint(db_path, self)
        self.inventory_print.stale_after_s = stale_after_s
        # Export evidence… in the context menus of the fleet tree, All GPUs, the detail pane and the findings.
        self.evidence = evidence_action.install(self, db_path)
        # Drain… / Resume… in Slurm (the fleet tree, the findings, the pre-run review); each node's Slurm state.
        self.slurm = slurm_action.install(self, db_path, fleet_file)
        self._build_menus()

        self.status_label = QLabel(self.tr("reading database…"))
        self.collector_label = QLabel(localized(collector_note))
        # The left label gives way in a narrow window (its text is its tooltip too); the collector's stays whole.
        self.status_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.statusBar().addWidget(self.status_label, 1)
        self.statusBar().addPermanentWidget(self.collector_label)
        self.tray = Tray(self)

        # -- the reader thread -------------------------------------------------------
        self._thread = QThread(self)
        self._thread.setObjectName("db-reader")
        self.reader = FleetReader(db_path)
        self.reader.stale_after_s = stale_after_s  # the fleet file's stale_after_minutes (None: the default)
        self.reader.moveToThread(self._thread)
        self.load_requested.connect(self.reader.load_fleet)
        self.refresh_requested.connect(self.reader.load_fleet_if_changed)
        self.reader.unchanged.connect(self._load_done)
        self._loading_since: float | None = None  # a load asked of the reader and not answered yet
        self._applying: FleetSnapshot | None = None  # a snapshot whose steps are still being applied
        self._steps: list[Callable[[FleetSnapshot], None]] = []
        self._rows_pending: tuple[list[FleetRow], dict[str, Any]] | None = None
        self._load_again: bool | None = None  # asked meanwhile: None = no, False = a timer refresh, True = a load
        self.reader.loaded.connect(self._on_loaded)
        self.reader.snapshot_loaded.connect(self._on_snapshot)
        self.ack_requested.connect(self.reader.save_ack)
        self.resolve_requested.connect(self.reader.save_resolution)
        self.reader.failed.connect(self._on_failed)
        self.detail.history_shown.connect(self.history_shown)
        self.table.selectionModel().selectionChanged.connect(self._on_selection_changed)
        self.fleet_view.gpu_selected.connect(self.show_gpu_row)
        self.findings_view.gpu_requested.connect(self.show_gpu)
        self.findings_view.gpu_opened.connect(self.open_gpu)
        self.findings_view.node_requested.connect(self.show_node)
        self.derating.gpu_requested.connect(self.show_gpu)
        self.derating.card_lookup = lambda uuid: self.snapshot.gpus.get(uuid)
        self.findings_view.ack_requested.connect(self.ack_requested)
        self.findings_view.resolve_requested.connect(self.resolve_requested)
        self.versions_view.node_requested.connect(self.show_node)
        # Intake… (the fleet tree's context menu, the GPU detail's button): off the GUI thread, then re-read.
        self.intake = IntakeAction(db_path, self)
        self.fleet_view.intake_requested.connect(self.start_intake)
        self.detail.intake_requested.connect(self.start_intake)
        self.intake.finished.connect(self._intake_done)
        self._thread.start()

        self._timer = QTimer(self)
        self._timer.setInterval(int(refresh_s * 1000))
        self._timer.timeout.connect(self.request_refresh)
        self._timer.start()
        self._restore_settings()
        settle_heap()  # start-up's objects out of the garbage collector's way (once per process)
        QTimer.singleShot(0, self.request_load)

    # -- views -------------------------------------------------------------------------

    def add_view(self, name: str, widget: QWidget, shortcut: str | None = None, *, detail: bool = False) -> int:
        """Add a view to the sidebar and the View menu; ``shortcut`` defaults to Ctrl+<position>.

        ``name`` is the view's identifier (:meth:`show_view`, the saved settings); the sidebar and the menu show
        its translation in the "MainWindow" context (mark it with ``QT_TRANSLATE_NOOP("MainWindow", name)``).

        ``detail``: the GPU detail pane shows under this view (else the view has the window's height).
        Returns the view's index (for :meth:`show_view`).
        """
        index = self.stack.addWidget(widget)
        if detail:
            self._with_detail.add(index)
        title = QCoreApplication.translate("MainWindow", name)
        self.sidebar.addItem(title)
        self._views.append((name, widget))
        action = QAction(title, self)
        keys = shortcut or (f"Ctrl+{index + 1}" if index < 9 else "")
        if keys:
            action.setShortcut(QKeySequence(keys))
        action.triggered.connect(lambda _=False, i=index: self.show_view(i))
        self._insert_view_action(action)
        self.addAction(action)
        if self.sidebar.currentRow() < 0:
            self.sidebar.setCurrentRow(0)
        return index

    def _insert_view_action(self, action: QAction) -> None:
        if self._view_separator is not None:
            self.view_menu.insertAction(self._view_separator, action)
        else:
            self.view_menu.addAction(action)
        self._view_actions.append(action)

    def show_view(self, index_or_name: int | str) -> None:
        index = index_or_name if isinstance(index_or_name, int) else \
            next(i for i, (n, _) in enumerate(self._views) if n == index_or_name)
        self.sidebar.setCurrentRow(index)

    def _on_view_changed(self, index: int) -> None:
        self.stack.setCurrentIndex(index)
        self._place_detail()

    def _place_detail(self) -> None:
        """Show the detail pane under a view that has it, hide it under the others (keeping its size)."""
        want = self.stack.currentIndex() in self._with_detail
        if want == (not self.detail.isHidden()):
            return
        if want:
            self.detail.show()
            if self._splitter_state is not None:
                self.splitter.restoreState(self._splitter_state)
        else:
            self._splitter_state = self.splitter.saveState()
            self.detail.hide()

    def detail_shown(self) -> bool:
        """Whether the GPU detail pane is part of the current view (shown when the window is)."""
        return not self.detail.isHidden()

    def current_view(self) -> str:
        i = self.stack.currentIndex()
        return self._views[i][0] if 0 <= i < len(self._views) else ""

    def _build_menus(self) -> None:
        quit_action = QAction(self.tr("&Quit"), self)
        quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        quit_action.triggered.connect(self.close)
        self.file_menu.addAction(self.exporter.action)
        self.file_menu.addAction(self.inventory_print.action)
        self.file_menu.addSeparator()
        self.file_menu.addAction(quit_action)
        self._view_separator = self.view_menu.addSeparator()
        self.refresh_action = QAction(self.tr("&Refresh"), self)
        self.refresh_action.setShortcut(QKeySequence(Qt.Key.Key_F5))
        self.refresh_action.triggered.connect(self.request_load)
        self.find_action = QAction(self.tr("&Find…"), self)
        self.find_action.setShortcut(QKeySequence.StandardKey.Find)
        self.find_action.triggered.connect(self.focus_search)
        self.view_menu.addAction(self.refresh_action)
        self.view_menu.addAction(self.find_action)
        self._build_language_menu()
        collect = self.menuBar().addMenu(self.tr("&Collector"))
        self.poll_action = QAction(self.tr("&Poll now"), self)
        self.poll_action.setShortcut(QKeySequence("Ctrl+R"))
        self.poll_action.triggered.connect(self.poll_now)
        self.pause_action = QAction(self.tr("Pa&use collecting"), self)
        self.pause_action.setCheckable(True)
        self.pause_action.toggled.connect(self.set_paused)
        for a in (self.poll_action, self.pause_action):
            a.setEnabled(self.collector is not None)
            if self.collector is None:
                a.setToolTip(self.tr("this window does not collect (no --fleet, or another collector writes)"))
            collect.addAction(a)
        collect.setToolTipsVisible(True)

    def _build_language_menu(self) -> None:
        """View ▸ Language: each language in its own name; the choice is saved and applies at the next start
        (widgets take their strings when built; retranslating every view live is not worth its code)."""
        self.language_menu = self.view_menu.addMenu(self.tr("&Language"))
        group = QActionGroup(self)
        group.setExclusive(True)
        self.language_actions: dict[str, QAction] = {}
        saved = self.settings.value(ui_i18n.SETTING)
        chosen = saved if isinstance(saved, str) and saved in ui_i18n.NATIVE_NAMES else ui_i18n.current()
        for lang, name in ui_i18n.NATIVE_NAMES.items():
            action = QAction(name, self)
            action.setCheckable(True)
            action.setChecked(lang == chosen)
            action.triggered.connect(lambda _=False, code=lang: self.choose_language(code))
            group.addAction(action)
            self.language_menu.addAction(action)
            self.language_actions[lang] = action

    def choose_language(self, lang: str) -> None:
        """Save View ▸ Language's choice; it applies at the next start (said in the status bar)."""
        ui_i18n.save_language(self.settings, lang)
        if lang == ui_i18n.current():
            self.statusBar().showMessage(self.tr("language: {name}").format(name=ui_i18n.NATIVE_NAMES[lang]), 5000)
        else:
            self.statusBar().showMessage(self.tr("language: {name}, from the next start of fleetmon").format(
                name=ui_i18n.NATIVE_NAMES[lang]), 15000)

    def focus_search(self) -> None:
        """Ctrl+F: the fleet view's filter box (the fleet view is shown first)."""
        self.show_view(0)
        self.fleet_view.filter.setFocus()
        self.fleet_view.filter.selectAll()

    # -- collector -----------------------------------------------------------------------

    def poll_now(self) -> None:
        if self.collector is not None:
            self.collector.poll_now()  # only reschedules the job: returns at once
            self.statusBar().showMessage(self.tr("poll requested"), 3000)

    def set_paused(self, paused: bool) -> None:
        if self.collector is None:
            return
        (self.collector.pause if paused else self.collector.resume)()
        self._update_collector_label()

    def set_collector_note(self, note: str) -> None:
        """The collector's state as the child process reports it (started, exited and why)."""
        self.collector_note = note
        self._update_collector_label()

    def on_cycle_finished(self, polled: int, unreachable: int) -> None:
        self._last_cycle = time.time()
        self.request_load()

    def _update_collector_label(self) -> None:
        snap = self.snapshot
        state = localized(self.collector_note) or self.tr("collector: none")
        if self.collector is not None and self.pause_action.isChecked():
            state = self.tr("collector: PAUSED")
        last = self._last_cycle or snap.last_poll
        counts = snap.verdicts.counts()  # nodes per verdict, as the report judges them
        silent = "".join(self.tr(", {count} {verdict}").format(count=counts[v], verdict=verdict_word(v))
                         for v in ("stale", "unknown") if counts[v])
        crit = sum(1 for f in snap.findings if f.severity == Severity.CRITICAL and snap.acked(f) is None)
        self.collector_label.setText(self.tr(
            "{state} · last poll {age} · nodes: {fail} fail, {unreachable} unreachable{silent} · {critical}").format(
            state=state, age=fmt.age(last, snap.read_at or None), fail=counts["fail"],
            unreachable=counts["unreachable"], silent=silent,
            critical=self.tr("1 critical finding") if crit == 1 else self.tr("{count} critical findings").format(
                count=crit)))

    # -- data ----------------------------------------------------------------------------

    def request_load(self) -> None:
        """Read the fleet now (after a poll, F5, an acknowledgement)."""
        self._request(changed_only=False)

    def request_refresh(self) -> None:
        """The timer's refresh: the reader reads only if the database changed (or a while has passed)."""
        self._request(changed_only=True)

    def _request(self, changed_only: bool) -> None:
        # One load in flight at a time: requests meanwhile fold into one more after it, so a
        # reader slower than the timer never builds a queue of loads (each ~1 s at 8,000 GPUs).
        if self._loading_since is not None and time.monotonic() - self._loading_since < 60:
            self._load_again = bool(self._load_again) or not changed_only
            return
        self._loading_since = time.monotonic()
        self.reader.tree_params = self.fleet_view.model.params()  # the reader builds the fleet tree for these
        (self.refresh_requested if changed_only else self.load_requested).emit()

    def _load_done(self) -> None:
        self._loading_since = None
        again, self._load_again = self._load_again, None
        if again is not None:
            self._request(changed_only=not again)

    def _on_loaded(self, rows: list[FleetRow], info: dict[str, Any]) -> None:
        if self._applying is not None:  # the snapshot of the same load is being applied: its last step
            self._rows_pending = (rows, info)
            return
        self._apply_rows(rows, info)

    def _apply_rows(self, rows: list[FleetRow], info: dict[str, Any]) -> None:
        verdicts = info.get("verdicts")
        self.model.set_rows(rows, info.get("read_at"), verdicts=verdicts if isinstance(verdicts, Verdicts) else None)
        if self.table.horizontalHeader().sortIndicatorSection() >= 0:
            h = self.table.horizontalHeader()
            self.model.sort(h.sortIndicatorSection(), h.sortIndicatorOrder())
        nodes = len({r.node for r in rows})
        judged = verdicts.nodes if isinstance(verdicts, Verdicts) else {}
        silent: dict[str, int] = {"unreachable": 0, "stale": 0, "unknown": 0}
        for name in {r.node for r in rows}:
            if judged.get(name) in silent:
                silent[judged[name]] += 1
        silent_text = self.tr(", ").join(self.tr("{count} {verdict}").format(count=n, verdict=verdict_word(v))
                                         for v, n in silent.items() if n or v == "unreachable")
        self.status_label.setText(self.tr("{gpus} on {nodes} ({silent}) · newest sample {age}").format(
            gpus=self.tr("1 GPU") if len(rows) == 1 else self.tr("{count} GPUs").format(count=len(rows)),
            nodes=self.tr("1 node") if nodes == 1 else self.tr("{count} nodes").format(count=nodes),
            silent=silent_text,
            age=fmt.age(max((r.latest_ts for r in rows if r.latest_ts), default=None), info['read_at'])))
        self.status_label.setToolTip(self.status_label.text())
        self.rows_shown.emit(len(rows))
        # The reader's last signal of a load (after snapshot_loaded): only now may the next load start,
        # so that its Python work does not share the interpreter with the GUI thread applying this one.
        self._load_done()

    def _on_snapshot(self, snap: FleetSnapshot) -> None:
        """Apply a snapshot in steps, each its own turn of the event loop.

        At 8,000 GPUs the fleet tree, the findings, the versions matrix and the flat table take
        10–20 ms each to take in; done in one go they held the event loop (input, paint, timers)
        for 50–100 ms. The fleet view, the one on screen first, goes first.
        """
        self.snapshot = snap
        self._applying = snap
        self.fleet_view.set_snapshot(snap)
        self.model.set_intakes(snap.intakes)
        # A newer snapshot replaces the steps left of an older one. (Kept on the window, not in a
        # recursive closure: that would be a reference cycle holding the snapshot until a sweep.)
        self._steps = [self._apply_findings, self.versions_view.set_snapshot, self._applied]
        QTimer.singleShot(0, self, self._next_step)  # the window as context: dropped with it

    def _next_step(self) -> None:
        if not self._steps or self._applying is None:
            return
        self._steps.pop(0)(self._applying)
        if self._steps:
            QTimer.singleShot(0, self, self._next_step)

    def _apply_findings(self, snap: FleetSnapshot) -> None:
        self.findings_view.set_snapshot(snap)
        live = [f for f in snap.findings if snap.acked(f) is None]
        crit = sum(1 for f in live if f.severity == Severity.CRITICAL)
        self.sidebar.item(1).setText(
            self.tr("Findings ({count}, {critical} crit)").format(count=len(live), critical=crit) if live
            else QCoreApplication.translate("MainWindow", "Findings"))
        self._update_collector_label()
        # The tray shows the fleet's worst node verdict (as the report's status), in its severity's colour.
        v = snap.verdicts
        worst = v.worst() if v.nodes else ""
        counts = v.counts()
        by_key = {f.key: f for f in live}
        # The worst verdict as the report says it (FAIL; translated: 不通过), then each verdict's count.
        head = verdict_word(worst).upper()  # upper() leaves Chinese as it is
        self.tray.update(worst, {f.key for f in live if f.severity == Severity.CRITICAL},
                         lambda k: _describe(by_key[k]),
                         status=(f"{head}: " + fmt.joined([f"{counts[x]} {verdict_word(x)}" for x in VERDICTS
                                                           if counts[x]])) if worst else "")

    def _applied(self, snap: FleetSnapshot) -> None:
        self._applying = None
        freeze_snapshot()
        self.snapshot_shown.emit(snap)
        pending, self._rows_pending = self._rows_pending, None
        if pending is not None:
            QTimer.singleShot(0, self, lambda: self._apply_rows(*pending))

    def _on_selection_changed(self, selected: QItemSelection, deselected: QItemSelection) -> None:
        rows = self.table.selectionModel().selectedRows()
        if rows:
            self.show_gpu_row(self.model.row(rows[0].row()))

    def select_gpu(self, row: int) -> None:
        """Select row ``row`` of the flat GPU table (its detail pane follows)."""
        self.table.selectRow(row)

    def show_gpu_row(self, row: FleetRow) -> None:
        """Show a GPU in the detail pane and the derating view."""
        self.detail.show_gpu(row)
        self.derating.show_gpu(row)

    def show_gpu(self, uuid: str) -> None:
        """Show a GPU in the detail pane and select it in the fleet view (without leaving the current view)."""
        row = next((r for r in self.snapshot.rows if r.uuid == uuid), None)
        if row is None:
            self.statusBar().showMessage(self.tr("GPU {uuid} is not in the fleet any more").format(uuid=uuid), 5000)
            return
        self.show_gpu_row(row)
        self.fleet_view.tree.selectionModel().blockSignals(True)
        self.fleet_view.show_gpu(uuid)
        self.fleet_view.tree.selectionModel().blockSignals(False)
        self.fleet_view.tree.viewport().update()

    def open_gpu(self, uuid: str) -> None:
        """Show a GPU in the fleet view (and the detail pane): a finding opened with a double click or Enter."""
        self.show_gpu(uuid)
        if any(r.uuid == uuid for r in self.snapshot.rows):
            self.show_view(0)
            self.fleet_view.tree.setFocus()

    def start_intake(self, node: str, uuid: str = "") -> None:
        """Intake… of ``node``'s cards new in the last 24 h, or of its card ``uuid``; the result shows in a dialog."""
        self.statusBar().showMessage(self.tr("intake of {target} running…").format(
            target=f"{node} {uuid}" if uuid else node), 10000)
        self.intake.start(node, uuid or None)

    def _intake_done(self, outcome: IntakeOutcome) -> None:
        results = outcome.run.results
        self.statusBar().showMessage(
            self.tr("intake of {node}: ").format(node=outcome.node)
            + (", ".join(f"GPU {r.index} {r.verdict}" for r in results) if results else outcome.run.note), 15000)
        self.request_load()  # the Intake column and tooltips
        if self.detail.uuid and any(r.uuid == self.detail.uuid for r in results):
            self.detail.refresh()  # the card's history shows the new intake

    def show_node(self, node: str) -> None:
        """Show a node in the fleet view (its GPUs expanded)."""
        self.show_view(0)
        if self.fleet_view.show_node(node):
            self.fleet_view.tree.expand(self.fleet_view.tree.currentIndex())

    def _on_failed(self, message: str) -> None:
        self.status_label.setText(self.tr("cannot read the database: {message}").format(message=message))
        self._load_done()

    # -- settings --------------------------------------------------------------------------

    def _state_widgets(self) -> dict[str, Any]:
        return {"splitter": self.splitter, "outer": self.outer, "fleet_header": self.fleet_view.tree.header(),
                "findings_header": self.findings.horizontalHeader(), "gpus_header": self.table.horizontalHeader(),
                "versions_split": self.versions_view.splitter}  # (versions_splitter: the old, side by side)

    def _restore_settings(self) -> None:
        s = self.settings
        geometry = s.value("window/geometry")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        for key, w in self._state_widgets().items():
            state = s.value(f"window/{key}")
            if isinstance(w, QHeaderView) and str(s.value(f"window/{key}_columns", "")) != str(w.count()):
                # A header saved with other columns (before the Vendor column, issue 23) would give each
                # width to the wrong column: the default widths instead.
                continue
            if isinstance(state, QByteArray):
                w.restoreState(state)
        view = s.value("window/view")
        names = [n for n, _ in self._views]
        if isinstance(view, str) and view in names:
            self.show_view(names.index(view))
        self.fleet_view.grouped.setChecked(s.value("fleet/grouped", True) not in (False, "false"))
        header = self.fleet_view.tree.header()
        self.fleet_view.model.sort(header.sortIndicatorSection(), header.sortIndicatorOrder())

    def save_settings(self) -> None:
        s = self.settings
        s.setValue("window/geometry", self.saveGeometry())
        for key, w in self._state_widgets().items():
            s.setValue(f"window/{key}", w.saveState())
            if isinstance(w, QHeaderView):
                s.setValue(f"window/{key}_columns", w.count())
        if self.detail.isHidden() and self._splitter_state is not None:  # the pane's size, not its absence
            s.setValue("window/splitter", self._splitter_state)
        s.setValue("window/view", self.current_view())
        s.setValue("fleet/grouped", self.fleet_view.grouped.isChecked())
        s.sync()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        self.save_settings()
        self._timer.stop()
        self._thread.quit()
        self._thread.wait(5000)
        self.reader.close()
        self.intake.wait(5000)  # a running intake finishes its write
        self.detail.shutdown()
        if self.tray.icon is not None:
            self.tray.icon.hide()
        super().closeEvent(event)


def _describe(f: StoredFinding) -> str:
    gpu = f" GPU {f.gpu_index}" if f.gpu_index is not None else ""
    return f"{f.node}{gpu}: {f.kind} — {fmt.evidence_text(f.kind, f.evidence)}"

