"""`fleetmon gui`: the desktop app's entry point."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from pathlib import Path
from typing import Any

from fleetmon.errors import KnownError

log = logging.getLogger("fleetmon.ui")


def prepare_database(db_path: str, fleet_path: str | None, interval: float | None
                     ) -> tuple[Any, Any, str]:
    """Create/migrate the database and, with a fleet, start a collector if nobody else writes.

    Returns (collector or None, writer lock or None, a note for the status bar).
    """
    from fleetmon.collector.lock import WriterLock
    from storage.db import open_database

    lock = WriterLock(db_path)
    if not lock.acquire():
        note = f"collector: another process writes this database ({lock.holder()})"
        return None, None, note
    db = open_database(db_path)  # creates and migrates
    if not fleet_path:
        db.close()
        lock.release()
        return None, None, "collector: none (read-only view)"
    from fleetmon.collector.poller import Collector
    from fleetmon.fleetfile import load_fleet

    fleet = load_fleet(fleet_path)
    collector = Collector(fleet, db, interval_s=interval)
    return collector, lock, f"collector: this window, every {collector.interval_s:g} s"


def run_gui(args: argparse.Namespace, *, max_seconds: float = 0.0) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from ui.bridge import Bridge
    from ui.main_window import MainWindow

    db_path = str(Path(args.db))
    collector, lock, note = prepare_database(db_path, args.fleet, args.interval)
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("fleetmon")
    app.setDesktopFileName("io.github.fleetmon.Fleetmon")
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


def main() -> int:
    from fleetmon.cli import main as cli_main
    return cli_main(["gui", *sys.argv[1:]])


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except KnownError as exc:
        print(f"fleetmon gui: {exc}", file=sys.stderr)
        raise SystemExit(1)
