"""File ▸ Export inventory…: the save dialog, the export on a worker thread, its progress and its errors.

The export (:func:`fleetmon.export.export_database`) opens the database
read-only on its own thread and reports rows written through its progress
callback; the GUI thread only shows a :class:`QProgressDialog` whose Cancel
stops the export at the next report (no half file is left). The format follows
the chosen file's extension (.xlsx, .csv, .json; none: the chosen filter's).

The save dialog opens in the folder of the last export (remembered in the
window's QSettings; at first the user's Documents folder, else the home
folder, never the current directory) and proposes ``inventory-YYYY-MM-DD``
with the last format's extension.

The dialog and the error message are injectable (``ask_path``, ``show_error``)
so that tests drive the whole path without a modal window.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QObject, QSettings, QStandardPaths, Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog, QMessageBox, QProgressDialog, QWidget

from ui.i18n import QT_TRANSLATE_NOOP

FILTERS = {QT_TRANSLATE_NOOP("InventoryExport", "Excel workbook (*.xlsx)"): ".xlsx", "CSV (*.csv)": ".csv",
           "JSON (*.json)": ".json"}
"""The save dialog's filters (English, as marked) and each one's extension; :func:`filters` shows them translated."""

FOLDER_KEY = "export/folder"
SUFFIX_KEY = "export/suffix"

AskPath = Callable[[QWidget, str], "str | None"]
"""``ask_path(parent, proposed)``: the file to write (None: cancelled); ``proposed`` is the full path offered."""
ShowError = Callable[[QWidget, str], None]


def default_folder() -> str:
    """Where a first export is offered: the user's Documents folder when it exists, else the home folder."""
    docs = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    if docs and Path(docs).is_dir():
        return docs
    return QStandardPaths.writableLocation(QStandardPaths.StandardLocation.HomeLocation) or str(Path.home())


def proposed_path(settings: QSettings, today: dt.date) -> str:
    """The path the save dialog offers: the last export's folder (while it exists) and format, dated ``today``."""
    folder = str(settings.value(FOLDER_KEY, "") or "")
    if not folder or not Path(folder).is_dir():
        folder = default_folder()
    suffix = str(settings.value(SUFFIX_KEY, ".xlsx") or ".xlsx")
    if suffix not in FILTERS.values():
        suffix = ".xlsx"
    return str(Path(folder) / f"inventory-{today.isoformat()}{suffix}")


def remember_path(settings: QSettings, path: str) -> None:
    """Keep the folder and the format of the file just chosen, for the next export."""
    settings.setValue(FOLDER_KEY, str(Path(path).resolve().parent))
    suffix = Path(path).suffix.lower()
    if suffix in FILTERS.values():
        settings.setValue(SUFFIX_KEY, suffix)


def filters() -> dict[str, str]:
    """:data:`FILTERS` as the dialog shows them (a name translated, its ``(*.xlsx)`` pattern kept)."""
    return {QCoreApplication.translate("InventoryExport", f): ext for f, ext in FILTERS.items()}


def ask_save_path(parent: QWidget, proposed: str) -> str | None:
    """The save dialog, offering ``proposed``; the chosen filter's extension is added when the name has none
    of ours."""
    shown = filters()
    suffix = Path(proposed).suffix.lower()
    selected = next((f for f, ext in shown.items() if ext == suffix), next(iter(shown)))
    title = QCoreApplication.translate("InventoryExport", "Export inventory")
    path, chosen = QFileDialog.getSaveFileName(parent, title, proposed, ";;".join(shown), selected)
    if not path:
        return None
    if Path(path).suffix.lower() not in FILTERS.values():
        path += shown.get(chosen, ".xlsx")
    return path


def show_error_box(parent: QWidget, message: str) -> None:
    QMessageBox.warning(parent, QCoreApplication.translate("InventoryExport", "Export failed"), message)


class ExportWorker(QObject):
    """Runs one export on a plain thread; its signals arrive queued on the GUI thread."""

    progressed = Signal(int, int)  # rows written, rows in all
    finished = Signal(str, int)  # path, GPUs written
    failed = Signal(str)  # a message for the operator
    cancelled = Signal()

    def __init__(self, db_path: str, output: str, stale_after_s: float | None = None,
                 fleet_name: str | None = None) -> None:
        super().__init__()
        self.db_path = db_path
        self.output = output
        self.stale_after_s = stale_after_s
        self.fleet_name = fleet_name
        self._stop = threading.Event()
        self.runner: threading.Thread | None = None

    def cancel(self) -> None:
        self._stop.set()

    def start(self) -> None:
        # A daemon thread: a window closed mid-export does not wait for it (the file is written aside).
        self.runner = threading.Thread(target=self.run, name="inventory-export", daemon=True)
        self.runner.start()

    def _progress(self, done: int, total: int) -> bool:
        self.progressed.emit(done, total)
        return not self._stop.is_set()

    def run(self) -> None:
        from fleetmon.errors import KnownError
        from fleetmon.export import ExportCancelled, export_database
        from fleetmon.i18n import message_of

        try:
            if self._stop.is_set():
                raise ExportCancelled()
            n = export_database(self.db_path, self.output, progress=self._progress, stale_after_s=self.stale_after_s,
                                fleet_name=self.fleet_name)
        except ExportCancelled:
            self.cancelled.emit()
        except KnownError as exc:
            self.failed.emit(message_of(exc))  # the core's error (an i18n.Text) in the reader's language
        except Exception as exc:  # noqa: BLE001 - any failure becomes a message, not a dead thread
            self.failed.emit(QCoreApplication.translate("InventoryExport", "cannot export to {path}: {error}").format(
                path=self.output, error=f"{type(exc).__name__}: {exc}"))
        else:
            self.finished.emit(self.output, n)


class InventoryExport(QObject):
    """The File menu's action and what it starts: ask for a file, export with progress, report the outcome."""

    progressed = Signal(int, int)  # re-emitted on the GUI thread after the dialog shows it
    finished = Signal(str, int)
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, db_path: str, parent: QWidget, *, ask_path: AskPath = ask_save_path,
                 show_error: ShowError = show_error_box, settings: QSettings | None = None,
                 today: Callable[[], dt.date] = dt.date.today) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self.window = parent
        self.ask_path = ask_path
        self.show_error = show_error
        # The window's settings (None: the application's, by organisation and application name).
        self.settings = settings if settings is not None else QSettings()
        self.today = today
        self.action = QAction(QCoreApplication.translate("InventoryExport", "&Export inventory…"), parent)
        self.action.setShortcut("Ctrl+E")
        self.action.setStatusTip(QCoreApplication.translate("InventoryExport", "Write the inventory sheet (XLSX, CSV "
                                                                               "or JSON)"))
        self.action.triggered.connect(self.start)
        self.worker: ExportWorker | None = None
        self.progress: QProgressDialog | None = None
        self.stale_after_s: float | None = None  # the fleet's stale limit (None: the default), set by the window
        self.fleet_name: str | None = None  # the fleet file's name, titling printed pages (set by the app)

    def start(self) -> None:
        path = self.ask_path(self.window, proposed_path(self.settings, self.today()))
        if path:
            remember_path(self.settings, path)
            self.export_to(path)

    def export_to(self, path: str) -> ExportWorker:
        """Start the export to ``path`` with a progress dialog; one at a time (the action is off meanwhile)."""
        self.action.setEnabled(False)
        dlg = QProgressDialog(self.tr("Exporting inventory to {file}…").format(file=Path(path).name),
                              self.tr("Cancel"), 0, 0, self.window)
        dlg.setWindowTitle(self.tr("Export inventory"))
        dlg.setWindowModality(Qt.WindowModality.WindowModal)
        dlg.setMinimumDuration(300)  # short exports finish before it shows
        dlg.setAutoClose(False)
        dlg.setAutoReset(False)
        self.progress = dlg
        worker = ExportWorker(self.db_path, path, self.stale_after_s, self.fleet_name)
        worker.progressed.connect(self._on_progress)
        worker.finished.connect(self._on_finished)
        worker.failed.connect(self._on_failed)
        worker.cancelled.connect(self._on_cancelled)
        dlg.canceled.connect(worker.cancel)
        self.worker = worker
        worker.start()
        return worker

    def wait(self, timeout_s: float = 30.0) -> bool:
        """Join the worker thread (tests, shutdown); whether it ended."""
        t = self.worker.runner if self.worker else None
        if t is not None:
            t.join(timeout_s)
            return not t.is_alive()
        return True

    def _on_progress(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress.setMaximum(max(total, 1))
            self.progress.setValue(done)
            self.progress.setLabelText(self.tr("{done} of {total} rows written").format(done=f"{done:,}",
                                                                                         total=f"{total:,}"))
        self.progressed.emit(done, total)

    def _done(self) -> None:
        if self.progress is not None:
            self.progress.close()
            self.progress.deleteLater()
            self.progress = None
        self.action.setEnabled(True)

    def _on_finished(self, path: str, n: int) -> None:
        self._done()
        status = getattr(self.window, "statusBar", None)
        if callable(status):
            status().showMessage(self.tr("exported {count} GPUs to {path}").format(count=n, path=path), 10000)
        self.finished.emit(path, n)

    def _on_failed(self, message: str) -> None:
        self._done()
        self.show_error(self.window, message)
        self.failed.emit(message)

    def _on_cancelled(self) -> None:
        self._done()
        self.cancelled.emit()
