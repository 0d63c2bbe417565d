"""`fleetmon demo`'s window: the desktop app, collecting, on a running demo fleet (``fleetmon.demo``)."""

from __future__ import annotations

import argparse
import threading
from typing import TYPE_CHECKING, Callable

from ui.app import run_gui

if TYPE_CHECKING:
    from fleetmon.demo import Demo

Progress = Callable[[int, int], None]


def run_demo(demo: Demo, *, interval_s: float, max_seconds: float = 0.0,
             generate: Callable[[Progress], None] | None = None) -> int:
    """Open the window on ``demo``'s database with a collector for its fleet; returns the app's exit code.

    ``generate(progress)`` (if given) writes the history first, off the GUI
    thread, under a progress dialog. ``max_seconds`` closes the window after
    that long (0 = when the user closes it).
    """
    if generate is not None:
        _generate_with_dialog(generate)
    gui_args = argparse.Namespace(db=str(demo.db_path), fleet=str(demo.fleet_path), interval=interval_s, refresh=1.0)
    return run_gui(gui_args, max_seconds=max_seconds, confirm_create=lambda path: True)  # the demo's own database


def _generate_with_dialog(generate: Callable[[Progress], None]) -> None:
    """Run ``generate`` in a worker thread while a QProgressDialog shows its progress; re-raise its error."""
    import sys

    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication, QProgressDialog

    found = QApplication.instance()
    app = found if isinstance(found, QApplication) else QApplication(sys.argv[:1])
    state = {"done": 0, "total": 1}
    failure: list[BaseException] = []

    def progress(done: int, total: int) -> None:  # worker thread: plain values, read by the timer below
        state["done"], state["total"] = done, total

    def work() -> None:
        try:
            generate(progress)
        except BaseException as exc:  # handed to the GUI thread
            failure.append(exc)

    dialog = QProgressDialog("Generating the demo fleet's history…", "", 0, 100)
    dialog.setWindowTitle("fleetmon demo")
    dialog.setCancelButton(None)
    dialog.setMinimumDuration(0)
    dialog.setValue(0)
    dialog.show()
    worker = threading.Thread(target=work, name="demo-history", daemon=True)
    worker.start()
    loop = QEventLoop()
    timer = QTimer()

    def tick() -> None:
        dialog.setMaximum(max(1, state["total"]))
        dialog.setValue(state["done"])
        if not worker.is_alive():
            loop.quit()

    timer.timeout.connect(tick)
    timer.start(100)
    loop.exec()
    timer.stop()
    worker.join()
    dialog.close()
    app.processEvents()
    if failure:
        raise failure[0]
