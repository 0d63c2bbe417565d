"""`fleetmon gui`: the desktop app's entry point (the command and its arguments are ``fleetmon.cli.gui``)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path

log = logging.getLogger("fleetmon.ui")


def run_gui(args: argparse.Namespace, *, max_seconds: float = 0.0) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from fleetmon.collector.main import prepare_database
    from ui.bridge import Bridge
    from ui.main_window import MainWindow

    db_path = str(Path(args.db))
    collector, lock, note = prepare_database(db_path, args.fleet, args.interval)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("fleetmon")
    QApplication.setDesktopFileName("io.github.fleetmon.Fleetmon")
    window = MainWindow(db_path, refresh_s=args.refresh, collector_note=note)
    bridge = Bridge()
    bridge.cycle_finished.connect(window.on_cycle_finished)
    if collector is not None:
        collector.listeners.append(bridge.on_cycle)
        collector.start()
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
        if collector is not None:
            collector.stop()
            collector.db.close()
        if lock is not None:
            lock.release()
    return int(code)
