"""`fleetmon demo`'s window: the desktop app, collecting, on a running demo fleet (``fleetmon.demo``)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from ui.app import install_language, run_gui

if TYPE_CHECKING:
    from fleetmon.demo import Demo

Progress = Callable[[int, int], None]

CANCELLED = 1
"""The exit code when the user cancels the history (the window is not opened)."""
INTERRUPTED = 130
"""The exit code of a Ctrl-C (SIGINT) during the history, as the shell's."""


class GenerationCancelled(Exception):
    """Raised in the generating thread by its progress callback once the user cancelled."""


def run_demo(demo: Demo, *, interval_s: float, max_seconds: float = 0.0,
             generate: Callable[[Progress], None] | None = None) -> int:
    """Open the window on ``demo``'s database with a collector for its fleet; returns the app's exit code.

    ``generate(progress)`` (if given) writes the history first, off the GUI
    thread, under a progress dialog. Cancel (the button, closing the dialog,
    Escape) or Ctrl-C stops it at its next progress report: the database it
    started is removed, the window is not opened, and the exit code is
    :data:`CANCELLED` or :data:`INTERRUPTED`. ``max_seconds`` closes the window
    after that long (0 = when the user closes it).
    """
    if generate is not None:
        existed = Path(demo.db_path).exists()
        outcome = _generate_with_dialog(generate)
        if outcome != "done":
            if not existed:
                _remove_database(Path(demo.db_path))
            print("fleetmon demo: history generation cancelled; the window is not opened", file=sys.stderr)
            return INTERRUPTED if outcome == "interrupted" else CANCELLED
    gui_args = argparse.Namespace(db=str(demo.db_path), fleet=str(demo.fleet_path), interval=interval_s, refresh=1.0)
    return run_gui(gui_args, max_seconds=max_seconds, confirm_create=lambda path: True)  # the demo's own database


def _remove_database(path: Path) -> None:
    """A half-written database (and its WAL files): a later ``--db FILE`` run would reuse it as complete."""
    for p in (path, *(path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal"))):
        p.unlink(missing_ok=True)


def _generate_with_dialog(generate: Callable[[Progress], None]) -> str:
    """Run ``generate`` in a worker thread while a QProgressDialog shows its progress; re-raise its error.

    Returns "done", "cancelled" (the dialog's Cancel, its close button or
    Escape) or "interrupted" (SIGINT, Ctrl-C in the terminal); in both last
    cases the worker was asked to stop and has ended.
    """
    from PySide6.QtCore import QCoreApplication, QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication, QProgressDialog

    found = QApplication.instance()
    app = found if isinstance(found, QApplication) else QApplication(sys.argv[:1])
    if found is None:
        install_language()  # the dialog comes before the window (run_gui installs it for the window)
    state = {"done": 0, "total": 1}
    failure: list[BaseException] = []
    stop = threading.Event()
    interrupted = threading.Event()

    def progress(done: int, total: int) -> None:  # worker thread: plain values, read by the timer below
        state["done"], state["total"] = done, total
        if stop.is_set():
            raise GenerationCancelled()

    def work() -> None:
        try:
            generate(progress)
        except GenerationCancelled:
            pass
        except BaseException as exc:  # handed to the GUI thread
            failure.append(exc)

    dialog = QProgressDialog(QCoreApplication.translate("demo", "Generating the demo fleet's history…"),
                             QCoreApplication.translate("demo", "Cancel"), 0, 100)
    dialog.setWindowTitle(QCoreApplication.translate("demo", "fleetmon demo"))
    dialog.setMinimumDuration(0)
    # No auto-reset: the last report must not reset (and re-show) the dialog while the work finishes.
    dialog.setAutoReset(False)
    dialog.setAutoClose(False)
    dialog.setValue(0)

    def cancel() -> None:
        if not stop.is_set():
            stop.set()
            print("fleetmon demo: cancelling the history generation…", file=sys.stderr, flush=True)
        dialog.hide()

    # The Cancel button, the title bar's close button and Escape all end in canceled() (or rejected()).
    dialog.canceled.connect(cancel)
    dialog.rejected.connect(cancel)

    def on_sigint(*_: Any) -> None:
        interrupted.set()
        cancel()

    previous = signal.signal(signal.SIGINT, on_sigint)  # Ctrl-C: stop cleanly, no traceback in a slot
    dialog.show()
    worker = threading.Thread(target=work, name="demo-history", daemon=True)
    worker.start()
    loop = QEventLoop()
    timer = QTimer()

    def tick() -> None:
        if not stop.is_set():
            # A cancelled dialog stays hidden: setValue would show it again.
            dialog.setMaximum(max(1, state["total"]))
            dialog.setValue(min(state["done"], max(1, state["total"])))
        if not worker.is_alive():
            loop.quit()

    timer.timeout.connect(tick)
    timer.start(100)  # also lets Python run the SIGINT handler while Qt's loop waits
    try:
        loop.exec()
    finally:
        timer.stop()
        worker.join()
        signal.signal(signal.SIGINT, previous)
        dialog.canceled.disconnect(cancel)  # closing it now is no cancel
        dialog.rejected.disconnect(cancel)
        dialog.close()
        dialog.deleteLater()
        app.processEvents()
    if failure and not stop.is_set():
        raise failure[0]
    if stop.is_set():
        return "interrupted" if interrupted.is_set() else "cancelled"
    return "done"
