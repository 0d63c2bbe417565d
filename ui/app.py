"""`fleetmon gui`: the desktop app's entry point (the command and its arguments are ``fleetmon.cli.gui``)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fleetmon.fleet import Fleet
    from fleetmon.specbook import SpecBook
    from ui.collector_process import CollectorProcess

log = logging.getLogger("fleetmon.ui")

Confirm = Callable[[str], bool]
ShowError = Callable[[str], None]


def ask_create(path: str) -> bool:
    """Ask before creating a database that does not exist (a typo must not open an empty window)."""
    from PySide6.QtWidgets import QMessageBox

    from PySide6.QtCore import QCoreApplication

    answer = QMessageBox.question(
        None, QCoreApplication.translate("app", "fleetmon: no such database"),
        QCoreApplication.translate("app", "There is no database at\n{path}\n\nCreate an empty fleetmon database there?")
        .format(path=path),
        QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.No)
    return answer == QMessageBox.StandardButton.Yes


def show_error(message: str) -> None:
    from PySide6.QtWidgets import QMessageBox

    QMessageBox.critical(None, "fleetmon", message)


def install_language() -> str:
    """Install the app's language (``FLEETMON_LANG``, else View ▸ Language's choice, else the locale) before any
    window or dialog: :func:`run_gui`, and the demo's history dialog before it. Returns the language."""
    from PySide6.QtCore import QSettings

    from ui import i18n as ui_i18n
    from ui.main_window import SETTINGS_APP, SETTINGS_ORG

    return ui_i18n.install(ui_i18n.chosen_language(QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope,
                                                             SETTINGS_ORG, SETTINGS_APP)))


def open_checks(db_path: str, fleet: str | None, interval: float | None, *, confirm_create: Confirm,
                error: ShowError) -> tuple[Any, Any, str] | None:
    """Everything that can refuse to open, as a clear message instead of a traceback.

    Missing database: asks ``confirm_create``; a No is the user's own answer, so
    it is not an error (one line on stderr, no second dialog). Corrupt or newer
    database, an unreadable fleet file: ``error`` shows why. Returns what
    :func:`fleetmon.collector.main.prepare_database` returns, or None (do not open).
    """
    from PySide6.QtCore import QCoreApplication

    from fleetmon.collector.main import prepare_database
    from fleetmon.errors import KnownError
    from storage.db import open_database

    if not Path(db_path).exists() and not confirm_create(db_path):
        print(f"fleetmon gui: not opened: there is no database at {db_path}", file=sys.stderr)
        return None
    try:
        collector, lock, note = prepare_database(db_path, fleet, interval)
        if collector is None and lock is None and "another process" in note:
            open_database(db_path, readonly=True).close()  # held by another collector: still check it reads
    except KnownError as exc:
        from fleetmon.i18n import message_of

        # the fleet file's problems in the app's language
        error(QCoreApplication.translate("app", "Cannot open {path}:\n\n{error}").format(path=db_path,
                                                                                       error=message_of(exc)))
        return None
    except OSError as exc:
        error(QCoreApplication.translate("app", "Cannot open {path}: {error}").format(path=db_path, error=exc))
        return None
    return collector, lock, note


def _history_source(fleet_path: str | None) -> None:
    """Read GPU history from the fleet file's ``[history] prometheus`` when it names one."""
    from ui.history_reader import set_prometheus

    if fleet_path:
        from fleetmon.errors import KnownError
        from fleetmon.fleet import load_fleet

        try:
            set_prometheus(load_fleet(fleet_path).history_prometheus)
        except KnownError:
            pass  # open_checks already said what is wrong with the file


def stale_after_s(fleet_path: str | None) -> float | None:
    """The fleet file's ``stale_after_minutes`` in seconds (None: no fleet file, or an unreadable one: the
    default), so that the window judges staleness as the fleet's reports do."""
    if not fleet_path:
        return None
    from fleetmon.errors import KnownError
    from fleetmon.fleet import load_fleet
    from fleetmon.health.thresholds import Thresholds

    try:
        return Thresholds.from_overrides(load_fleet(fleet_path).thresholds or {}).stale_after_minutes * 60.0
    except (KnownError, ValueError):
        return None  # open_checks already said what is wrong with the file


def fleet_file(fleet_path: str | None) -> Fleet | None:
    """The fleet file, read and checked (None: no fleet file, or an unreadable one: open_checks said why)."""
    if not fleet_path:
        return None
    from fleetmon.errors import KnownError
    from fleetmon.fleet import load_fleet

    try:
        return load_fleet(fleet_path)
    except KnownError:
        return None  # open_checks already said what is wrong with the file


def spec_book(fleet_path: str | None) -> SpecBook:
    """The fleet file's ``[[spec]]`` tables over the catalog (the catalog alone without a readable fleet file):
    what the GPU detail and the derating view show, as the collector's health pass judges with it."""
    from fleetmon.specbook import book_of

    return book_of(fleet_file(fleet_path))


def fleet_name(fleet_path: str | None) -> str | None:
    """The fleet file's ``name`` (None: no fleet file, no name, or an unreadable file), titling printed sheets."""
    if not fleet_path:
        return None
    from fleetmon.errors import KnownError
    from fleetmon.fleet import load_fleet

    try:
        return load_fleet(fleet_path).name
    except KnownError:
        return None  # open_checks already said what is wrong with the file


def run_gui(args: argparse.Namespace, *, max_seconds: float = 0.0, confirm_create: Confirm | None = None,
            error: ShowError | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from PySide6.QtCore import QCoreApplication, QTimer
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from ui.collector_process import CollectorProcess
    from ui.main_window import SETTINGS_APP, SETTINGS_ORG, MainWindow
    from ui.shell import follow_color_scheme, install_excepthook

    found = QApplication.instance()
    app = found if isinstance(found, QApplication) else QApplication(sys.argv[:1])
    app.setOrganizationName(SETTINGS_ORG)
    app.setApplicationName(SETTINGS_APP)
    app.setDesktopFileName("io.github.fleetmon.Fleetmon")
    app.setWindowIcon(QIcon(str(Path(__file__).with_name("icons") / "io.github.fleetmon.Fleetmon.svg")))
    follow_color_scheme(app)
    # The language before any window or dialog: FLEETMON_LANG, else View ▸ Language's choice, else the locale.
    install_language()
    db_path = str(Path(args.db))

    def _error(message: str) -> None:
        print(f"fleetmon gui: {message}", file=sys.stderr)
        (error or show_error)(message)

    opened = open_checks(db_path, args.fleet, args.interval, confirm_create=confirm_create or ask_create,
                         error=_error)
    if opened is None:
        return 1
    collector, lock, note = opened
    child: CollectorProcess | None = None
    if collector is not None:
        # Checked here (database created and migrated, fleet file read, nobody else writing) so that
        # any refusal is a dialog; then the writer lock passes to the child process that collects.
        child = CollectorProcess(db_path, args.fleet, collector.interval_s)
        collector.db.close()
        lock.release()
        note = QCoreApplication.translate("app", "collector: starting, every {interval} s").format(
            interval=f"{collector.interval_s:g}")
    _history_source(args.fleet)
    window = MainWindow(db_path, refresh_s=args.refresh, collector_note=note, collector=child,
                        stale_after_s=stale_after_s(args.fleet), fleet_file=fleet_file(args.fleet))
    window.exporter.fleet_name = window.inventory_print.fleet_name = fleet_name(args.fleet)
    previous_hook = install_excepthook(window)
    if child is not None:
        child.cycle_finished.connect(window.on_cycle_finished)
        child.state_changed.connect(window.set_collector_note)
        child.start()
    window.show()
    # Let Ctrl-C and SIGTERM close the window cleanly.
    signal.signal(signal.SIGINT, lambda *a: window.close())
    signal.signal(signal.SIGTERM, lambda *a: window.close())
    tick = QTimer()
    tick.start(250)
    tick.timeout.connect(lambda: None)  # lets Python run signal handlers
    if max_seconds:
        QTimer.singleShot(int(max_seconds * 1000), window.close)
    try:
        code = app.exec()
    finally:
        sys.excepthook = previous_hook
        if child is not None:
            child.stop()
    return int(code)
