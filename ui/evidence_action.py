"""*Export evidence…* on a GPU or a finding: the save dialog, the archive built off the GUI thread, its outcome.

The archive (:func:`fleetmon.evidence.build_evidence`, what ``fleetmon evidence``
writes) reads the card's whole history and draws its plots: seconds for a card
with a year of history. It runs on a plain worker thread (as the inventory export
does, :mod:`ui.export_action`); the plots are painted on QImages there
(:mod:`ui.evidence_plots`, which Qt allows off the GUI thread), and the outcome
comes back as queued signals.

The save dialog opens in the folder of the last evidence export (remembered in the
window's QSettings; at first the user's Documents folder) and proposes
``evidence-<serial>-YYYY-MM-DD.zip``; the dialog asks before replacing a file.
The action sits in the context menu of the fleet tree, the All GPUs table, the
GPU detail pane and the Findings table (a finding's export names the finding in
the summary). Dialog and error box are injectable for tests.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QPoint, QSettings, Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QAbstractItemView, QFileDialog, QMenu, QMessageBox, QWidget

from ui.export_action import default_folder

FOLDER_KEY = "evidence/folder"

AskPath = Callable[[QWidget, str], "str | None"]
ShowError = Callable[[QWidget, str], None]


def proposed_path(settings: QSettings, serial: str | None, uuid: str, today: dt.date) -> str:
    """The last evidence folder (while it exists, else Documents or home) and a dated name with the serial."""
    folder = str(settings.value(FOLDER_KEY, "") or "")
    from fleetmon.evidence import proposed_name  # here, not at import: the window opens without the archive code

    if not folder or not Path(folder).is_dir():
        folder = default_folder()
    return str(Path(folder) / proposed_name(serial, uuid, today))


def ask_save_path(parent: QWidget, proposed: str) -> str | None:
    path, _ = QFileDialog.getSaveFileName(parent, QCoreApplication.translate("EvidenceExport", "Export evidence"),
                                          proposed, QCoreApplication.translate("EvidenceExport", "Zip archive (*.zip)"))
    if not path:
        return None
    return path if path.lower().endswith(".zip") else path + ".zip"


def show_error_box(parent: QWidget, message: str) -> None:
    QMessageBox.warning(parent, QCoreApplication.translate("EvidenceExport", "Export evidence failed"), message)


class _Worker(QObject):
    finished = Signal(str, int)  # path, bytes
    failed = Signal(str)

    def __init__(self, db_path: str, uuid: str, output: str, focus: str | None, now: float) -> None:
        super().__init__()
        self.args = (db_path, uuid, output, focus, now)
        self.runner: threading.Thread | None = None

    def start(self) -> None:
        # A daemon thread: a window closed meanwhile does not wait (the archive is written aside, then moved).
        self.runner = threading.Thread(target=self.run, name="evidence-export", daemon=True)
        self.runner.start()

    def run(self) -> None:
        from fleetmon.errors import KnownError
        from fleetmon.evidence import build_evidence
        from fleetmon.i18n import message_of
        from ui.evidence_plots import render_plots

        db_path, uuid, output, focus, now = self.args
        try:
            # The dialog asked before replacing an existing file: force.
            result = build_evidence(db_path, uuid, output, now=now, force=True, plots=render_plots, focus=focus)
        except KnownError as exc:
            self.failed.emit(message_of(exc))  # the core's error (an i18n.Text) in the reader's language
        except Exception as exc:  # noqa: BLE001 - any failure becomes a message, not a dead thread
            self.failed.emit(QCoreApplication.translate("EvidenceExport", "cannot export evidence to {path}: {error}")
                             .format(path=output, error=f"{type(exc).__name__}: {exc}"))
        else:
            self.finished.emit(result.path, result.size)


class EvidenceExport(QObject):
    """Asks for a file and builds the archive of one card, one export at a time."""

    finished = Signal(str, int)
    failed = Signal(str)

    def __init__(self, db_path: str, parent: QWidget, *, ask_path: AskPath = ask_save_path,
                 show_error: ShowError = show_error_box, settings: QSettings | None = None,
                 today: Callable[[], dt.date] = dt.date.today, now: Callable[[], float] = time.time,
                 serial_of: Callable[[str], str | None] = lambda uuid: None) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self.window = parent
        self.ask_path = ask_path
        self.show_error = show_error
        self.settings = settings if settings is not None else QSettings()
        self.today = today
        self.now = now
        self.serial_of = serial_of
        self.worker: _Worker | None = None
        self.menu: QMenu | None = None

    @property
    def busy(self) -> bool:
        return self.worker is not None

    def action(self, uuid: str | None, parent: QObject, focus: str | None = None) -> QAction:
        """The menu entry for the card ``uuid`` (disabled without one: a node, a node-wide finding)."""
        a = QAction(QCoreApplication.translate("EvidenceExport", "Export &evidence…"), parent)
        a.setStatusTip(QCoreApplication.translate(
            "EvidenceExport", "Write the card's RMA / return evidence: history, Xids, pages, findings and plots (zip)"))
        if uuid is None or self.busy:
            a.setEnabled(False)
            a.setToolTip(QCoreApplication.translate("EvidenceExport", "a card only (not a node)") if uuid is None
                         else QCoreApplication.translate("EvidenceExport", "an export is running"))
        else:
            a.triggered.connect(lambda _=False, u=uuid, f=focus: self.start(u, f))
        return a

    def start(self, uuid: str, focus: str | None = None) -> None:
        if self.busy:
            return
        path = self.ask_path(self.window, proposed_path(self.settings, self.serial_of(uuid), uuid, self.today()))
        if path:
            self.settings.setValue(FOLDER_KEY, str(Path(path).resolve().parent))
            self.export_to(uuid, path, focus)

    def export_to(self, uuid: str, path: str, focus: str | None = None) -> None:
        worker = _Worker(self.db_path, uuid, path, focus, self.now())
        worker.finished.connect(self._on_finished)
        worker.failed.connect(self._on_failed)
        self.worker = worker
        self._status(self.tr("exporting evidence for {gpu} to {file}…").format(gpu=uuid, file=Path(path).name))
        worker.start()

    def wait(self, timeout_s: float = 60.0) -> bool:
        """Join the worker thread (tests, shutdown); whether it ended."""
        t = self.worker.runner if self.worker else None
        if t is not None:
            t.join(timeout_s)
            return not t.is_alive()
        return True

    def _status(self, text: str) -> None:
        status = getattr(self.window, "statusBar", None)
        if callable(status):
            status().showMessage(text, 10000)

    def _on_finished(self, path: str, size: int) -> None:
        self.worker = None
        self._status(self.tr("evidence written to {path} ({size} KiB)").format(path=path, size=f"{size / 1024:,.0f}"))
        self.finished.emit(path, size)

    def _on_failed(self, message: str) -> None:
        self.worker = None
        self.show_error(self.window, message)
        self.failed.emit(message)


def install_menu(view: QAbstractItemView, target: Callable[[QPoint], "tuple[str | None, str | None] | None"],
                 evidence: EvidenceExport) -> None:
    """A context menu with *Export evidence…* on ``view``; ``target(pos)`` says (card UUID, finding key) at
    the point, or None where nothing is."""

    def show(pos: QPoint) -> None:
        found = target(pos)
        if found is None:
            return
        menu = menu_for(view, evidence, *found)
        for hook in getattr(view, "menu_hooks", ()):  # other actions on the same row (Drain… in Slurm)
            hook(menu, *found)
        evidence.menu = menu  # the last one shown (tests)
        menu.popup(view.viewport().mapToGlobal(pos))

    view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
    view.customContextMenuRequested.connect(show)


def menu_for(parent: QWidget, evidence: EvidenceExport, uuid: str | None, focus: str | None) -> QMenu:
    """The context menu for a card (or a finding of it): its *Export evidence…* entry."""
    menu = QMenu(parent)
    menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    menu.addAction(evidence.action(uuid, menu, focus))
    return menu


def install(window: Any, db_path: str) -> EvidenceExport:
    """*Export evidence…* in the main window: the fleet tree, All GPUs, the GPU detail pane, the Findings table."""
    evidence = EvidenceExport(db_path, window, settings=window.settings,
                              serial_of=lambda uuid: getattr(window.snapshot.gpus.get(uuid), "serial", None))

    def in_table(pos: QPoint) -> tuple[str | None, str | None] | None:
        i = window.table.indexAt(pos)
        return (window.model.row(i.row()).uuid, None) if i.isValid() else None

    def in_findings(pos: QPoint) -> tuple[str | None, str | None] | None:
        i = window.findings.indexAt(pos)
        if not i.isValid() or i.row() >= window.findings_model.rowCount():
            return None
        f = window.findings_model.row(i.row())
        return f.gpu_uuid, f.key

    def in_detail(pos: QPoint) -> tuple[str | None, str | None] | None:
        return (window.detail.uuid, None) if window.detail.uuid else None

    def in_tree_menu(menu: QMenu, it: Any) -> None:  # the fleet tree's one menu also holds Intake…
        menu.addSeparator()
        menu.addAction(evidence.action(it.gpu.uuid if it.kind == "gpu" and it.gpu is not None else None, menu))
        evidence.menu = menu

    window.fleet_view.menu_hooks.append(in_tree_menu)
    install_menu(window.table, in_table, evidence)
    install_menu(window.findings, in_findings, evidence)
    for table in (window.detail.inventory, window.detail.changes):
        install_menu(table, in_detail, evidence)
    return evidence
