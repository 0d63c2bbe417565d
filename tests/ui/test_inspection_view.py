"""The daily inspection view: checklist per node, changes since the last sign-off, sign-off in the database,
printing to PDF and saving the HTML. Real SQLite files (tests/ui/conftest.py build_db), no mocks."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

import pytest

from helpers import inventory, poll
from storage.acks import acknowledge
from storage.db import open_database
from storage.ingest import ingest_polls
from storage.signoffs import last_signoff, signoffs
from ui.inspection_worker import inspect
from ui.views.inspection import ChangesModel, ChecklistModel, InspectionView, change_rows

pytest.importorskip("pytestqt")

DRIVER_KEY = "driver-mismatch|node:n3|driver"


def _view(qtbot, path: Path, clock=time.time) -> InspectionView:
    view = InspectionView(str(path), clock=clock)
    qtbot.addWidget(view)
    view.resize(1240, 430)
    return view


def _run(qtbot, view: InspectionView):
    with qtbot.waitSignal(view.inspection_shown, timeout=30000) as sig:
        view.run_inspection()
    return sig.args[0]


def _fix_n3_driver(path: Path, ts: float) -> None:
    """n3 gets the group's driver: its driver-mismatch resolves."""
    db = open_database(path)
    p = poll("n3", ts, gpus=2, driver="550.54.15",
             inv=[inventory("n3", i, temp_slowdown_c=90, temp_shutdown_c=100,
                            vbios="94.00.01" if i == 1 else "92.00.45.00.01") for i in range(2)])
    ingest_polls(db, [dataclasses.replace(p, group="a")])
    db.close()


def test_models_pass_the_model_tester(qtmodeltester, fleet_db: Path) -> None:
    insp = inspect(str(fleet_db), time.time())
    checklist = ChecklistModel()
    checklist.set_result(insp.result)
    qtmodeltester.check(checklist)
    names = [n.node for n in checklist.nodes()]
    assert set(names) == {"n1", "n2", "n3", "m1", "m2"}
    assert names[0] == "m2"  # worst first: m2 never answered ("unknown" before "warn" and "pass")
    n3 = next(n for n in checklist.nodes() if n.node == "n3")
    assert n3.verdict == "warn" and DRIVER_KEY in {c.finding.key for c in n3.children if c.finding}
    changes = ChangesModel()
    changes.set_rows(change_rows(insp.result))
    qtmodeltester.check(changes)
    assert insp.baseline is None and not insp.result.previous


def test_checklist_ticks_are_kept_with_the_signoff(qtbot, fleet_db: Path) -> None:
    view = _view(qtbot, fleet_db)
    _run(qtbot, view)
    model = view.checklist
    row = next(i for i, n in enumerate(model.nodes()) if n.node == "n3")
    assert model.setData(model.index(row, 0), 2, 0x0a)  # Qt.CheckStateRole
    assert model.checked() == ["n3"]


def test_acknowledged_findings_are_marked(qtbot, fleet_db: Path) -> None:
    db = open_database(fleet_db)
    acknowledge(db, DRIVER_KEY, "warning", "upgrade booked for Friday", time.time(), by="bob")
    db.close()
    view = _view(qtbot, fleet_db)
    _run(qtbot, view)
    n3 = next(n for n in view.checklist.nodes() if n.node == "n3")
    child = next(c for c in n3.children if c.finding and c.finding.key == DRIVER_KEY)
    row = n3.children.index(child)
    text = view.checklist.index(row, 4, view.checklist.index(n3.row, 0)).data()
    assert text == "acknowledged by bob: upgrade booked for Friday"
    assert "upgrade booked for Friday" in view.inspection.html


def test_signoff_round_trip_and_the_next_inspection_diffs_against_it(qtbot, fleet_db: Path) -> None:
    now = [time.time()]
    view = _view(qtbot, fleet_db, clock=lambda: now[0])
    gui = threading.get_ident()
    first = _run(qtbot, view)
    assert first.baseline is None
    assert DRIVER_KEY in {f.key for f in first.result.new}  # no sign-off yet: every open finding is new
    assert "Changes since the last sign-off" in first.html and "No sign-off yet" in first.html
    assert not view.sign_button.isEnabled() or view.name.text()
    view.name.setText("ann")
    view.note.setText("n3 driver upgrade booked")
    row = next(i for i, n in enumerate(view.checklist.nodes()) if n.node == "n3")
    view.checklist.setData(view.checklist.index(row, 0), 2, 0x0a)
    assert view.sign_button.isEnabled()

    now[0] += 120
    with qtbot.waitSignal(view.signed_off, timeout=30000) as signed:
        with qtbot.waitSignal(view.inspection_shown, timeout=30000) as again:
            view.sign_button.click()
            assert threading.get_ident() == gui and view.jobs.busy  # the work runs off the GUI thread
    row_back = signed.args[0]
    assert (row_back.name, row_back.note) == ("ann", "n3 driver upgrade booked")

    # Stored in the real file, with what the inspection saw.
    db = open_database(fleet_db, readonly=True)
    stored = last_signoff(db)
    assert len(signoffs(db)) == 1
    db.close()
    assert stored is not None and stored.name == "ann" and stored.ts == pytest.approx(now[0])
    assert stored.summary["checked"] == ["n3"]
    assert DRIVER_KEY in {d["key"] for d in stored.open_findings}

    # The inspection right after the sign-off compares with it: nothing new.
    second = again.args[0]
    assert second.baseline is not None and second.baseline.id == stored.id
    assert second.result.previous and not second.result.new and not second.result.resolved
    assert "Changes since the sign-off by ann at" in second.html and "n3 driver upgrade booked" in second.html
    assert "sign-off by ann" in view.baseline_label.text()

    # n3 gets the group's driver; the next inspection lists the mismatch as resolved since ann's sign-off.
    now[0] += 600
    _fix_n3_driver(fleet_db, now[0] - 5)
    third = _run(qtbot, view)
    assert third.baseline.id == stored.id
    assert DRIVER_KEY in {f.key for f in third.result.resolved}
    shown = [view.changes.row(i) for i in range(view.changes.rowCount())]
    assert any(r.change == "resolved" and r.kind == "driver-mismatch" for r in shown)
    assert "1 resolved" in view.changes_label.text()


def test_save_html_and_print_to_pdf(qtbot, fleet_db: Path, tmp_path: Path) -> None:
    from PySide6.QtPrintSupport import QPrinter

    view = _view(qtbot, fleet_db)
    assert not view.print_button.isEnabled() and not view.save_button.isEnabled()
    _run(qtbot, view)
    assert view.print_button.isEnabled() and view.save_button.isEnabled()
    out = view.save_html(tmp_path / "inspection.html")
    text = out.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "fleetmon report" in text and "n3" in text
    assert view.browser.toPlainText().startswith("fleetmon report")

    pdf = tmp_path / "inspection.pdf"
    printer = QPrinter(QPrinter.PrinterMode.HighResolution)
    printer.setOutputFormat(QPrinter.OutputFormat.PdfFormat)
    printer.setOutputFileName(str(pdf))
    view.print_to(printer)
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and len(data) > 2000


def test_a_broken_database_shows_a_message(qtbot, tmp_path: Path) -> None:
    bad = tmp_path / "not.db"
    bad.write_bytes(b"this is not a database" * 100)
    view = _view(qtbot, bad)
    with qtbot.waitSignal(view.failed, timeout=30000):
        view.run_inspection()
    assert "failed" in view.headline.text()
    assert not view.sign_button.isEnabled()


def test_the_main_window_hosts_the_inspection_and_prerun_views(qtbot, fleet_db: Path) -> None:
    from ui.main_window import MainWindow

    win = MainWindow(str(fleet_db), refresh_s=60)
    qtbot.addWidget(win)
    names = [n for n, _ in win._views]
    assert "Inspection" in names and "Pre-run" in names
    view = dict(win._views)["Inspection"]
    with qtbot.waitSignal(view.inspection_shown, timeout=30000):
        win.show()
        win.show_view("Inspection")  # first shown: the inspection starts on its own
    win.close()


def test_report_baseline_is_the_last_signoff_and_reports_do_not_move_it(fleet_db: Path) -> None:
    """assess.run_report(baseline="signoff"): what changed since the last sign-off, not the last report."""
    from fleetmon import assess
    from storage.signoffs import save_signoff

    db = open_database(fleet_db)
    now = time.time()
    first = assess.run_report(db, now, 86400, None, save=False, baseline="signoff")
    assert first.signoff is None and not first.result.previous and first.result.new
    assert assess.inspection_window(db, now) == 86400
    row = save_signoff(db, "ann", now, summary=assess.signoff_summary(first.result, ["n3"]))
    assess.run_report(db, now + 30, 86400, None)  # a CLI report in between (saved) changes nothing here
    again = assess.run_report(db, now + 60, 86400, None, save=False, baseline="signoff")
    assert again.signoff == row and again.result.previous and not again.result.new
    # Three days later the window reaches back to the sign-off (capped at 30 days).
    assert assess.inspection_window(db, now + 3 * 86400) == pytest.approx(3 * 86400)
    assert assess.inspection_window(db, now + 90 * 86400) == assess.INSPECTION_MAX_S
    with pytest.raises(ValueError):
        assess.run_report(db, now, 86400, None, baseline="yesterday")
    db.close()
