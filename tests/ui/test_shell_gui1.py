"""The window shell: views and shortcuts, single-click navigation, acknowledgements stored in SQLite and
shown in reports, the exception dialog, and the prompt before creating a missing database."""

from __future__ import annotations

import argparse
import sys
import time

import pytest
from PySide6.QtCore import QSettings, Qt

pytestmark = pytest.mark.gui


def test_views_registered_with_shortcuts(window, qtbot):
    from PySide6.QtWidgets import QLabel

    assert [window.sidebar.item(i).text().split(" (")[0] for i in range(window.sidebar.count())] == [
        "Fleet", "Findings", "Versions", "All GPUs", "Derating", "Inspection", "Pre-run"]
    index = window.add_view("Extra", QLabel("extra"))
    assert index == 7 and window._view_actions[-1].shortcut().toString() == "Ctrl+8"
    window._view_actions[2].trigger()
    assert window.current_view() == "Versions"
    window.find_action.trigger()
    assert window.current_view() == "Fleet"
    assert window.refresh_action.shortcut().toString() == "F5"
    assert not window.poll_action.isEnabled()  # this window does not collect
    assert "2 critical" not in window.collector_label.text() and "1 critical" in window.collector_label.text()


def test_single_click_on_a_finding_shows_its_gpu(window, qtbot):
    window.show_view("Findings")
    window.show()
    view = window.findings_view
    r = next(r for r in range(view.model.rowCount()) if view.model.row(r).gpu_uuid == "GPU-n2-01")
    with qtbot.waitSignal(window.history_shown, timeout=5000):
        qtbot.mouseClick(view.table.viewport(), Qt.MouseButton.LeftButton,
                         pos=view.table.visualRect(view.model.index(r, 1)).center())
    assert window.detail.uuid == "GPU-n2-01"
    assert window.current_view() == "Findings"
    cur = window.fleet_view.model.item(window.fleet_view.tree.currentIndex())
    assert cur is not None and cur.key == "g:GPU-n2-01"
    r = next(r for r in range(view.model.rowCount()) if view.model.row(r).node == "m2")
    qtbot.mouseClick(view.table.viewport(), Qt.MouseButton.LeftButton,
                     pos=view.table.visualRect(view.model.index(r, 1)).center())
    assert window.current_view() == "Findings"  # a node's finding is selected by a click (issue 21 item 7)
    qtbot.keyClick(view.table, Qt.Key.Key_Return)  # and opened by Enter (or a double click)
    assert window.current_view() == "Fleet"
    cur = window.fleet_view.model.item(window.fleet_view.tree.currentIndex())
    assert cur is not None and cur.key == "n:m2"


def test_ack_and_snooze_round_trip_in_sqlite(window, qtbot, fleet_db):
    from storage.acks import acks
    from storage.db import open_database

    key = "temperature-high|gpu:GPU-n2-01|"

    def shown_keys() -> list[str]:
        return [window.findings_model.row(r).key for r in range(window.findings_model.rowCount())]

    # The reload after the save, not a timer refresh that may land between the request and the save.
    with qtbot.waitSignal(window.reader.ack_saved, timeout=10000):
        window.ack_requested.emit(key, "warning", "fan ordered", 0.0, "ann")
    db = open_database(fleet_db, readonly=True)
    stored = acks(db)[key]
    db.close()
    assert (stored.note, stored.by, stored.until, stored.severity) == ("fan ordered", "ann", None, "warning")
    qtbot.waitUntil(lambda: key not in shown_keys(), timeout=10000)  # hidden while acknowledged
    window.findings_view.show_acked.setChecked(True)
    assert key in shown_keys()
    # A snooze that already ended: the finding is back.
    with qtbot.waitSignal(window.reader.ack_saved, timeout=10000):
        window.ack_requested.emit(key, "warning", "later", time.time() - 1, "ann")
    qtbot.waitUntil(lambda: getattr(window.snapshot.acks.get(key), "note", None) == "later", timeout=10000)
    assert window.snapshot.acked(next(f for f in window.snapshot.findings if f.key == key)) is None
    with qtbot.waitSignal(window.reader.ack_saved, timeout=5000):
        window.ack_requested.emit(key, "warning", "", -1.0, "ann")
    db = open_database(fleet_db, readonly=True)
    assert acks(db) == {}
    db.close()


def test_report_lists_an_acknowledged_finding_with_its_note(tmp_path):
    from fleetmon.assess import _with_acks
    from fleetmon.health.engine import ReportResult
    from fleetmon.health.findings import Finding
    from fleetmon.health.render import report_text
    from fleetmon.health.render_html import report_html
    from storage import acks
    from storage.db import open_database

    db = open_database(tmp_path / "r.db")
    f = Finding(kind="temperature-high", severity="warning", node="n1", gpu_uuid="G1", first_seen=0.0,
                last_seen=10.0, evidence={}, action="cool it", summary="n1 gpu0: 97 °C (limit 90 °C)", key="k1",
                state="open", gpu_index=0)
    worse = Finding(**{**f.to_dict(), "key": "k2", "severity": "critical"})
    acks.acknowledge(db, "k1", "warning", "fan ordered", 100.0, by="ann")
    acks.acknowledge(db, "k2", "warning", "seen", 100.0)  # acknowledged at warning, now critical: not covered
    result = ReportResult(now=200.0, since=0.0, group=None, verdicts={"n1": "warn"}, findings=(f, worse), new=(),
                          resolved=(), worsened=(), summary={})
    marked = _with_acks(db, result, 200.0)
    db.close()
    assert set(marked.summary["acknowledged"]) == {"k1"}
    text = report_text(marked)
    assert "acknowledged by ann: fan ordered" in text and "seen" not in text
    assert "acknowledged by ann: fan ordered" in report_html(marked)


def test_uncaught_exception_shows_the_traceback_and_the_app_goes_on(qtbot):
    from ui.shell import ExceptionDialog, install_excepthook

    shown: list[str] = []
    previous = install_excepthook(show=shown.append)
    try:
        try:
            raise RuntimeError("boom in a slot")
        except RuntimeError:
            sys.excepthook(*sys.exc_info())
    finally:
        sys.excepthook = previous
    assert len(shown) == 1 and "RuntimeError: boom in a slot" in shown[0] and "Traceback" in shown[0]
    dialog = ExceptionDialog(shown[0])
    qtbot.addWidget(dialog)
    dialog.copy()
    from PySide6.QtGui import QGuiApplication

    assert "boom in a slot" in QGuiApplication.clipboard().text()


def test_missing_database_asks_before_creating(tmp_path, qapp):
    from ui.app import open_checks

    path = tmp_path / "typo.db"
    asked, errors = [], []
    assert open_checks(str(path), None, None, confirm_create=lambda p: asked.append(p) or False,
                       error=errors.append) is None
    assert asked == [str(path)] and not path.exists() and errors == []  # No is an answer, not an error
    opened = open_checks(str(path), None, None, confirm_create=lambda p: True, error=errors.append)
    assert opened is not None and path.exists()


def test_answering_no_to_create_exits_quietly(tmp_path, qapp, capsys):
    """Issue 21, item 10: `gui --db typo.db`, No: exit 1 with one line on stderr, no second (critical) dialog."""
    from ui.app import run_gui

    path = tmp_path / "typo.db"
    errors: list[str] = []
    args = argparse.Namespace(db=str(path), fleet=None, interval=None, refresh=1.0)
    assert run_gui(args, confirm_create=lambda p: False, error=errors.append) == 1
    assert errors == [] and not path.exists()
    assert capsys.readouterr().err.strip() == f"fleetmon gui: not opened: there is no database at {path}"


@pytest.mark.parametrize("content, words", [(b"this is not sqlite at all" * 100, "corrupt")])
def test_corrupt_database_is_a_message_not_a_traceback(tmp_path, qapp, content, words):
    from ui.app import run_gui

    path = tmp_path / "bad.db"
    path.write_bytes(content)
    errors: list[str] = []
    args = argparse.Namespace(db=str(path), fleet=None, interval=None, refresh=1.0)
    assert run_gui(args, confirm_create=lambda p: False, error=errors.append) == 1
    assert words in errors[0] and "Traceback" not in errors[0]


def test_unreadable_fleet_file_is_a_message(tmp_path, qapp):
    from ui.app import open_checks

    fleet = tmp_path / "fleet.toml"
    fleet.write_text("[[nodes]\nname = ")
    errors: list[str] = []
    assert open_checks(str(tmp_path / "x.db"), str(fleet), None, confirm_create=lambda p: True,
                       error=errors.append) is None
    assert str(fleet) in errors[0] or "fleet" in errors[0]


def test_settings_remember_the_view(qtbot, fleet_db, tmp_path):
    from ui.main_window import MainWindow

    ini = str(tmp_path / "s.ini")
    w = MainWindow(str(fleet_db), refresh_s=60, settings=QSettings(ini, QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.show_view("Versions")
    w.close()
    w2 = MainWindow(str(fleet_db), refresh_s=60, settings=QSettings(ini, QSettings.Format.IniFormat))
    qtbot.addWidget(w2)
    assert w2.current_view() == "Versions"
    w2.close()


def test_tray_notifies_only_on_a_new_critical(qapp):
    from PySide6.QtWidgets import QWidget

    from ui.shell import Tray

    tray = Tray(QWidget())
    assert tray.update("critical", {"a"}, str) == []  # the first look is not news
    assert tray.update("critical", {"a", "b"}, str) == ["b"]
    assert tray.update("warning", set(), str) == []


def test_resolve_from_the_findings_view_round_trip_in_sqlite(window, qtbot, fleet_db):
    """Resolve…: the operator's reason and note are stored (storage.resolutions), the finding leaves the open list."""
    from storage.db import open_database
    from storage.resolutions import card_resolutions

    key = "temperature-high|gpu:GPU-n2-01|"
    view = window.findings_view
    r = next(r for r in range(view.model.rowCount()) if view.model.row(r).key == key)
    view.table.setCurrentIndex(view.model.index(r, 1))
    assert view.resolve_button.isEnabled()
    asked = []
    view.ask_resolve = lambda parent, f: (asked.append(f.key), ("cooling-fixed", "fan replaced"))[1]
    with qtbot.waitSignal(window.reader.resolved, timeout=10000):
        view.resolve_button.click()
    assert asked == [key]
    db = open_database(fleet_db, readonly=True)
    (row,) = card_resolutions(db, "GPU-n2-01")
    db.close()
    assert (row.key, row.reason, row.note) == (key, "cooling-fixed", "fan replaced") and row.by
    qtbot.waitUntil(lambda: key not in {f.key for f in window.snapshot.findings}, timeout=10000)
