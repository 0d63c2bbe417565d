"""Intake… in the app (issue 22 item 3): from the fleet tree's context menu and the GPU detail, off the GUI
thread; the result shown, stored (Intake column, the card's Changes), and its certificate saved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings

from storage.db import open_database
from storage.intake import intakes
from tests.health.test_intake_cli import ARRIVE, NOW, T0, _feed

pytestmark = pytest.mark.gui


@pytest.fixture
def intake_db(tmp_path: Path) -> Path:
    """n1 and n2 with two A100s (first seen three days ago), then a third card each, new in the last 24 h:
    n1's healthy, n2's with half its memory."""
    path = tmp_path / "fleet.db"
    db = open_database(path)
    seq = {"n1": 0, "n2": 0}
    over = {("n2", 2): {"memory_total_mib": 40960}}
    _feed(db, T0 - 3 * 86400, T0 - 3 * 86400 + 600, {"n1": [0, 1], "n2": [0, 1]}, over, seq)
    _feed(db, T0, ARRIVE, {"n1": [0, 1], "n2": [0, 1]}, over, seq)
    _feed(db, ARRIVE, NOW, {"n1": [0, 1, 2], "n2": [0, 1, 2]}, over, seq)
    db.close()
    return path


@pytest.fixture
def app_window(qtbot: Any, intake_db: Path, tmp_path: Path) -> Any:
    from ui.main_window import MainWindow

    w = MainWindow(str(intake_db), refresh_s=60, settings=QSettings(str(tmp_path / "w.ini"),
                                                                    QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.intake.clock = lambda: NOW  # the recorded fleet's time, not the wall clock
    with qtbot.waitSignal(w.snapshot_shown, timeout=10000):
        w.request_load()
    yield w
    w.intake.wait()
    if w.intake.dialog is not None:
        w.intake.dialog.close()
    w.close()


def test_intake_of_a_node_from_the_fleet_tree(qtbot: Any, app_window: Any, tmp_path: Path) -> None:
    w = app_window
    view = w.fleet_view
    menu = view.context_menu(view.model.index_of_node("n2"))
    assert menu is not None
    [action] = [a for a in menu.actions() if a.text().startswith("Intake…")]  # beside Export evidence…
    assert action.text() == "Intake… (cards of n2 new in the last 24 h)"
    with qtbot.waitSignal(w.intake.finished, timeout=20000) as got:
        action.trigger()
    outcome = got.args[0]
    assert [(r.uuid, r.verdict) for r in outcome.run.results] == [("GPU-n2-02", "REJECT")]
    assert outcome.stored
    dialog = w.intake.dialog
    assert dialog is not None and dialog.isVisible()
    assert "1 card checked: 1 REJECT · stored with the card" == dialog.note.text()
    text = dialog.browser.toPlainText()
    assert "Intake certificate — n2 gpu2" in text and "40960 MiB reported, 50% of the nominal 80 GB" in text
    saved = dialog.save_to(tmp_path / "cert.html")
    page = saved.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "Memory size" in page and "Clocks under load" in page

    # Stored with the card, and shown in All GPUs once the window has re-read the fleet.
    db = open_database(w.intake.db_path, readonly=True)
    try:
        assert [i.verdict for i in intakes(db, "GPU-n2-02")] == ["REJECT"]
    finally:
        db.close()
    qtbot.waitUntil(lambda: "GPU-n2-02" in w.snapshot.intakes, timeout=10000)
    from ui.models.fleet_table import COL_INTAKE

    def cells() -> dict[str, str]:
        return {w.model.row(r).uuid: str(w.model.data(w.model.index(r, COL_INTAKE))) for r in range(w.model.rowCount())}

    qtbot.waitUntil(lambda: cells()["GPU-n2-02"].startswith("REJECT "), timeout=5000)
    assert cells()["GPU-n1-00"] == "—"
    from PySide6.QtCore import Qt

    tip = view.model.data(view.model.index_of_gpu("GPU-n2-02"), Qt.ItemDataRole.ToolTipRole)
    assert "intake: REJECT" in str(tip)


def test_intake_of_a_gpu_from_its_detail_shows_in_its_history(qtbot: Any, app_window: Any) -> None:
    w = app_window
    w.intake.show_dialogs = False
    assert not w.detail.intake_button.isEnabled()  # no card chosen yet
    w.show_gpu("GPU-n1-00")
    assert w.detail.intake_button.isEnabled()
    with qtbot.waitSignal(w.intake.finished, timeout=20000) as got:
        w.detail.intake_button.click()
    [r] = got.args[0].run.results
    assert (r.uuid, r.verdict, r.new) == ("GPU-n1-00", "PASS", False)  # an intake on request
    qtbot.waitUntil(lambda: any(w.detail.changes.item(i, 1) is not None
                                and w.detail.changes.item(i, 1).text() == "intake PASS"
                                for i in range(w.detail.changes.rowCount())), timeout=10000)


def test_the_gpu_context_menu_names_the_card(qtbot: Any, app_window: Any) -> None:
    view = app_window.fleet_view
    menu = view.context_menu(view.model.index_of_gpu("GPU-n1-02"))
    assert menu is not None and menu.actions()[0].text() == "Intake… (check n1 GPU 2)"
    with qtbot.waitSignal(view.intake_requested) as got:
        menu.actions()[0].trigger()
    assert got.args == ["n1", "GPU-n1-02"]
    app_window.intake.wait()


def test_a_failed_intake_is_a_message_not_a_crash(qtbot: Any, app_window: Any) -> None:
    w = app_window
    w.intake.show_dialogs = False
    with qtbot.waitSignal(w.intake.failed, timeout=20000) as got:
        w.start_intake("no-such-node")
    assert got.args[0].startswith("unknown node 'no-such-node'")


def test_the_fleet_trees_one_menu_holds_intake_and_evidence(app_window: Any) -> None:
    # Both actions in one menu, shown with popup (a second handler's blocking exec() hung the window before).
    view = app_window.fleet_view
    assert view.show_gpu("GPU-n1-02")  # its node expanded, so the point is on the card's row
    view.tree.customContextMenuRequested.emit(view.tree.visualRect(view.model.index_of_gpu("GPU-n1-02")).center())
    menu = view.last_menu
    assert menu is not None and menu.isVisible()
    texts = [a.text() for a in menu.actions() if not a.isSeparator()]
    assert texts == ["Intake… (check n1 GPU 2)", "Export &evidence…"]
    menu.close()


def test_all_gpus_gives_the_spare_width_to_health_not_intake(app_window: Any, qtbot: Any) -> None:
    # The Intake column came last and stretched, squeezing Health into two lines ("warn: row-" / "remap").
    from ui.models.fleet_table import COL_HEALTH, COL_INTAKE

    app_window.resize(1920, 1050)
    app_window.show()
    qtbot.waitExposed(app_window)
    app_window.show_view("All GPUs")
    qtbot.wait(50)
    header = app_window.table.horizontalHeader()
    assert header.sectionSize(COL_HEALTH) > header.sectionSize(COL_INTAKE) >= 150
