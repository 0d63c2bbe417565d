"""`fleetmon demo`'s "Generating history" dialog (issue 21, item 10): Cancel, closing it, Escape and Ctrl-C
stop the generation, remove the half-written database and open no window; the dialog ends at its button."""

from __future__ import annotations

import signal
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QProgressBar, QProgressDialog, QPushButton

import ui.demo
from ui.demo import CANCELLED, INTERRUPTED, run_demo

pytestmark = pytest.mark.gui

REPORTS = 300  # the fake generation's length: ~3 s unless it is stopped


def _dialog() -> QProgressDialog:
    return next(w for w in QApplication.topLevelWidgets() if isinstance(w, QProgressDialog) and w.isVisible())


@pytest.mark.parametrize("how", ["button", "close", "escape", "sigint"])
def test_cancelling_the_history_stops_it_and_opens_no_window(qtbot, tmp_path: Path, monkeypatch, capfd,
                                                               how: str) -> None:
    from PySide6.QtTest import QTest

    opened: list[object] = []
    monkeypatch.setattr(ui.demo, "run_gui", lambda *a, **k: opened.append(a) or 0)
    db = tmp_path / "demo.db"
    reports: list[int] = []

    def generate(progress) -> None:  # the worker thread
        db.write_bytes(b"half a database")
        (tmp_path / "demo.db-wal").write_bytes(b"wal")
        for i in range(REPORTS):
            progress(i, REPORTS)
            reports.append(i)
            time.sleep(0.01)

    seen: dict[str, object] = {}

    def act() -> None:  # the GUI thread, inside the dialog's event loop
        dlg = _dialog()
        bar, button = dlg.findChild(QProgressBar), dlg.findChild(QPushButton)
        seen["button"] = button is not None and button.isVisible()
        lowest = max(w.geometry().bottom() for w in (bar, button) if w is not None and w.isVisible())
        seen["gap"] = dlg.height() - 1 - lowest  # no empty strip under the last widget
        if how == "button":
            button.click()
        elif how == "close":
            dlg.close()
        elif how == "escape":
            QTest.keyClick(dlg, Qt.Key.Key_Escape)
        elif signal.getsignal(signal.SIGINT) is not before:  # never interrupt pytest itself
            signal.raise_signal(signal.SIGINT)
        else:
            seen["no handler"] = True
            button.click()

    before = signal.getsignal(signal.SIGINT)
    QTimer.singleShot(50, act)
    demo = SimpleNamespace(db_path=db, fleet_path=tmp_path / "fleet.toml")
    rc = run_demo(demo, interval_s=1.0, generate=generate)  # type: ignore[arg-type]
    assert rc == (INTERRUPTED if how == "sigint" else CANCELLED)
    assert opened == [] and len(reports) < REPORTS  # stopped, and no window
    assert not db.exists() and not (tmp_path / "demo.db-wal").exists()
    assert seen["button"] is True and isinstance(seen["gap"], int) and seen["gap"] <= 16
    assert signal.getsignal(signal.SIGINT) is before and "no handler" not in seen
    assert not any(isinstance(w, QProgressDialog) and w.isVisible() for w in QApplication.topLevelWidgets())
    err = capfd.readouterr().err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "cancelled" in err


def test_a_finished_history_opens_the_window(qtbot, tmp_path: Path, monkeypatch) -> None:
    opened: list[object] = []
    monkeypatch.setattr(ui.demo, "run_gui", lambda *a, **k: opened.append(a) or 0)
    db = tmp_path / "demo.db"

    def generate(progress) -> None:
        db.write_bytes(b"complete")
        progress(1, 1)

    assert run_demo(SimpleNamespace(db_path=db, fleet_path=tmp_path / "f.toml"),  # type: ignore[arg-type]
                    interval_s=1.0, generate=generate) == 0
    assert len(opened) == 1 and db.exists()


def test_a_failing_history_raises_its_error(qtbot, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(ui.demo, "run_gui", lambda *a, **k: pytest.fail("no window after a failure"))

    def generate(progress) -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        run_demo(SimpleNamespace(db_path=tmp_path / "d.db", fleet_path=tmp_path / "f.toml"),  # type: ignore[arg-type]
                 interval_s=1.0, generate=generate)
