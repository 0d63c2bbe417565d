"""User specs in the app (issue 22 item 2): a fleet file's ``[[spec]]`` reaches the GPU detail and the derating
view as "user spec", end to end: fleet file → the collector's health pass (stored derating figures) and the
app's spec book (``ui.app.spec_book``) → the main window's views."""

from __future__ import annotations

import time

import pytest

from fleetmon import assess
from helpers import uuid_of
from helpers.userspec import MYSTERY, RTX4090, feed, write_fleet
from storage.db import open_database
from storage.queries import fleet_latest

pytestmark = pytest.mark.gui
NOW = int(time.time()) // 3600 * 3600


@pytest.fixture
def spec_db(tmp_path):
    """A 4090 node (a stock and a 48 GB modded board) and a node of a model the catalog lacks, three busy
    hours ending now, judged by the collector's health pass with the fleet file's [[spec]] tables."""
    fleet_path, fleet = write_fleet(tmp_path)
    path = tmp_path / "fleet.db"
    db = open_database(path)
    feed(db, NOW - 3 * 3600, NOW)
    assess.evaluate_and_store(db, NOW, fleet=fleet)
    db.close()
    return path, fleet_path


def _row(path, node, index):
    db = open_database(path, readonly=True)
    try:
        return next(r for r in fleet_latest(db) if r.uuid == uuid_of(node, index))
    finally:
        db.close()


def _cells(view) -> dict[str, str]:
    return {view.inventory.item(r, 0).text(): view.inventory.item(r, 1).text() for r in range(view.inventory.rowCount())}


def test_gpu_detail_shows_the_user_spec_of_a_modded_board(qtbot, spec_db):
    from ui.app import spec_book
    from ui.views.gpu_detail import GpuDetailView

    path, fleet_path = spec_db
    view = GpuDetailView(str(path), now=lambda: NOW)
    qtbot.addWidget(view)
    view.spec_book = spec_book(str(fleet_path))
    with qtbot.waitSignal(view.history_shown, timeout=10000):
        view.show_gpu(_row(path, "r1", 1))
    cells = _cells(view)
    assert cells["Nominal spec"].startswith("user spec · ") and "48 GB GDDR6X" in cells["Nominal spec"]
    assert "fleet.toml:" in cells["Spec source"] and "user spec" in view.title.text()
    # The stock board beside it keeps its catalog row.
    with qtbot.waitSignal(view.history_shown, timeout=10000):
        view.show_gpu(_row(path, "r1", 0))
    cells = _cells(view)
    assert cells["Nominal spec"].startswith("catalog · ") and "24 GB" in cells["Nominal spec"]
    assert "user spec" not in view.title.text()
    view.shutdown()


def test_without_a_fleet_file_the_detail_shows_the_catalog(qtbot, spec_db):
    from ui.app import spec_book
    from ui.views.gpu_detail import GpuDetailView

    path, _ = spec_db
    view = GpuDetailView(str(path), now=lambda: NOW)
    qtbot.addWidget(view)
    view.spec_book = spec_book(None)
    with qtbot.waitSignal(view.history_shown, timeout=10000):
        view.show_gpu(_row(path, "x1", 0))
    assert _cells(view)["Nominal spec"].startswith("not in the spec catalog (add a [[spec]]")
    view.shutdown()


def test_fleet_file_to_views_end_to_end(qtbot, spec_db, tmp_path):
    from PySide6.QtCore import QSettings

    from ui.app import fleet_file
    from ui.inspection_worker import inspect, review
    from ui.main_window import MainWindow

    path, fleet_path = spec_db
    w = MainWindow(str(path), refresh_s=60, settings=QSettings(str(tmp_path / "w.ini"), QSettings.Format.IniFormat),
                   fleet_file=fleet_file(str(fleet_path)))  # as ui.app.run_gui builds it
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.snapshot_shown, timeout=10000):
        w.request_load()
    w.derating.refresh()
    qtbot.waitUntil(lambda: w.derating.data is not None and bool(w.derating.data.days), timeout=10000)
    # The collector's pass judged the unknown model against its [[spec]]: its stored ratios exist.
    days = {d.gpu_uuid: d for d in w.derating.data.days}
    assert days[uuid_of("x1", 0)].clock_ratio == pytest.approx(1410 / 1500, abs=0.01)
    assert days[uuid_of("r1", 1)].memory_ratio == pytest.approx(1.0, abs=0.01)
    models = {w.derating.model.data(w.derating.model.index(r, 0)) for r in range(w.derating.model.rowCount())}
    assert {f"{RTX4090} (some cards: user spec)", f"{MYSTERY} (user spec)"} <= models  # the 4090's matches one board
    with qtbot.waitSignal(w.detail.history_shown, timeout=10000):
        w.show_gpu_row(_row(path, "r1", 1))
    assert _cells(w.detail)["Nominal spec"].startswith("user spec")
    assert "nominal from user spec (" in w.derating.card_title.text()
    with qtbot.waitSignal(w.detail.history_shown, timeout=10000):
        w.show_gpu_row(_row(path, "x1", 1))
    assert _cells(w.detail)["Nominal spec"].startswith("user spec") and "96 GB" in _cells(w.detail)["Nominal spec"]
    # The app's inspection and pre-run review judge with the fleet file too (their jobs, run here directly).
    fleet = w.inspection_view.fleet_file
    assert fleet is not None and w.prerun_view.fleet_file is fleet

    def unknown(findings) -> list[str]:
        return [f.evidence["model"] for f in findings if f.evidence.get("metric") == "unknown-model"]

    assert unknown(inspect(str(path), NOW, None, fleet).result.findings) == []
    assert unknown(review(str(path), NOW, "x1", 1, fleet).result.findings) == []
    assert unknown(inspect(str(path), NOW, None, None).result.findings) == [MYSTERY]  # without: the catalog
    w.close()


def test_a_spec_without_a_tdp_shows_a_dash_not_none():
    # issue 23: catalog rows of other vendors may have no published TDP (Hygon's K100_AI); the detail's
    # nominal line says so with a dash and no power reference line is drawn from it
    from fleetmon import specs
    from ui.views.gpu_detail import nominal_text

    k100 = specs.lookup("K100_AI")
    assert k100 is not None and k100.tdp_w is None
    text = nominal_text(k100)
    assert "TDP — W" in text and "None" not in text and "64 GB HBM" in text
    assert "TDP 750 W" in nominal_text(specs.lookup("AMD Instinct MI300X"))
