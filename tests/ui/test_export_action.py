"""File ▸ Export inventory…: the file dialog (injected), the export off the GUI thread with progress, errors."""

from __future__ import annotations

import threading

import openpyxl
import pytest
from PySide6.QtCore import QSettings

pytestmark = pytest.mark.gui


@pytest.fixture
def window(qtbot, fleet_db, tmp_path):
    from ui.main_window import MainWindow

    w = MainWindow(str(fleet_db), refresh_s=60, settings=QSettings(str(tmp_path / "w.ini"),
                                                                 QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    yield w
    w.exporter.wait()
    w.close()


def test_file_menu_exports_through_the_progress_path(window, qtbot, tmp_path):
    out = tmp_path / "inventory.xlsx"
    asked = []
    window.exporter.ask_path = lambda parent, proposed: asked.append(parent) or str(out)
    action = next(a for a in window.file_menu.actions() if a.text() == "&Export inventory…")
    gui = threading.get_ident()
    seen = []
    window.exporter.progressed.connect(lambda d, t: seen.append((d, t, threading.get_ident())))

    with qtbot.waitSignal(window.exporter.finished, timeout=20000) as done:
        action.trigger()
        worker = window.exporter.worker
        assert not action.isEnabled()  # one export at a time
    assert asked == [window] and done.args == [str(out), 8]
    assert worker.runner is not None and worker.runner.ident != gui  # ran off the GUI thread
    assert seen and seen[-1][0] == seen[-1][1] and all(ident == gui for *_, ident in seen)  # delivered queued
    assert action.isEnabled() and window.exporter.progress is None
    assert "exported 8 GPUs" in window.statusBar().currentMessage()
    wb = openpyxl.load_workbook(out)
    inv = wb["Inventory"]
    assert inv["A1"].value == "Node" and inv.max_row == 9 and inv.freeze_panes == "C2"
    assert {c.value for c in inv["A"][1:]} == {"n1", "n2", "n3", "m1"}
    assert {r[0].value for r in wb["Open findings"].iter_rows(min_row=2)} == {"critical", "warning"}


@pytest.mark.parametrize("name", ["inventory.csv", "inventory.json"])
def test_format_from_the_extension(window, qtbot, tmp_path, name):
    out = tmp_path / name
    with qtbot.waitSignal(window.exporter.finished, timeout=20000):
        window.exporter.export_to(str(out))
    text = out.read_text()
    assert text.startswith("node,group") if name.endswith(".csv") else text.startswith("{")


def test_a_clear_message_on_error(window, qtbot, tmp_path):
    shown = []
    window.exporter.show_error = lambda parent, message: shown.append(message)
    bad = tmp_path / "no such folder" / "inventory.xlsx"
    with qtbot.waitSignal(window.exporter.failed, timeout=20000):
        window.exporter.export_to(str(bad))
    assert len(shown) == 1 and shown[0].startswith(f"cannot write {bad}") and "Traceback" not in shown[0]
    assert window.exporter.action.isEnabled()


def test_cancel_stops_and_leaves_no_file(qtbot, fleet_db, tmp_path):
    from ui.export_action import ExportWorker

    out = tmp_path / "inventory.xlsx"
    worker = ExportWorker(str(fleet_db), str(out))
    worker.cancel()  # the dialog's Cancel, before the first report
    with qtbot.waitSignal(worker.cancelled, timeout=20000):
        worker.start()
    worker.runner.join(10)
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.suffix == ".part"]


def test_no_file_chosen_does_nothing(window):
    window.exporter.ask_path = lambda parent, proposed: None
    window.exporter.action.trigger()
    assert window.exporter.worker is None and window.exporter.action.isEnabled()


def test_the_dialog_offers_a_dated_name_in_the_last_folder(window, qtbot, tmp_path, monkeypatch):
    """Issue 21, item 10: first in the user's Documents (not the current directory), then where the last
    export went, with the date in the proposed name and the last format; remembered across windows."""
    import datetime as dt
    from pathlib import Path

    from ui.export_action import InventoryExport

    home = tmp_path / "home"
    (home / "Documents").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_DOCUMENTS_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.chdir(tmp_path)
    offered = []
    out = tmp_path / "reports" / "fleet.csv"
    out.parent.mkdir()
    exporter = window.exporter
    exporter.today = lambda: dt.date(2026, 12, 3)
    exporter.ask_path = lambda parent, proposed: offered.append(proposed) or str(out)
    with qtbot.waitSignal(exporter.finished, timeout=20000):
        exporter.action.trigger()
    assert Path(offered[0]) == home / "Documents" / "inventory-2026-12-03.xlsx"
    exporter.ask_path = lambda parent, proposed: offered.append(proposed) or None
    exporter.today = lambda: dt.date(2026, 12, 4)
    exporter.action.trigger()
    assert Path(offered[1]) == out.parent / "inventory-2026-12-04.csv"

    again = InventoryExport(exporter.db_path, window, settings=window.settings, today=lambda: dt.date(2026, 12, 5),
                            ask_path=lambda parent, proposed: offered.append(proposed) or None)
    again.start()
    assert Path(offered[2]) == out.parent / "inventory-2026-12-05.csv"
    (home / "Documents").rmdir()
    out.unlink()
    out.parent.rmdir()  # the remembered folder is gone: back to the home folder
    again.start()
    assert Path(offered[3]) == home / "inventory-2026-12-05.csv"
