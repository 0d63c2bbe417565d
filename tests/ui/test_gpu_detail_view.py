"""The GPU detail view: ranges by resolution, panels that hold data or say why not, the rendered window."""

from __future__ import annotations

import time

import numpy as np
import pytest

from fleetmon.records import Event
from helpers import Feeder, poll, uuid_of
from storage.db import open_database
from storage.history_window import detail_window, gpu_events, gpu_record, resolution_for
from storage.ingest import ingest_polls
from storage.queries import fleet_latest

pytestmark = pytest.mark.gui
NOW = int(time.time()) // 3600 * 3600


@pytest.fixture
def history_db(tmp_path):
    """Two nodes of two GPUs, three hours of minutes ending now, an Xid on n1 GPU 0, hot throttling on n1 GPU 1."""
    path = tmp_path / "fleet.db"
    db = open_database(path)
    feeder = Feeder(db, nodes=("n1", "n2"), gpus=2)
    feeder.feed(NOW - 3 * 3600, NOW, {("n1", 1): lambda ts: {"throttle_mask": 0x40}})
    ingest_polls(db, [poll("n1", NOW, events=[Event(seq=1, ts=NOW - 1800, kind="xid", uuid=uuid_of("n1", 0),
                                                    code=79, message="GPU has fallen off the bus")],
                           events_cursor=1)])
    db.close()
    return path


def test_resolution_follows_the_span():
    assert [resolution_for(s) for s in (86400, 7 * 86400, 90 * 86400, 365 * 86400)] == [
        "minute", "hour", "hour", "day"]


def test_detail_window_and_events(history_db):
    db = open_database(history_db, readonly=True)
    uuid = uuid_of("n1", 0)
    day = detail_window(db, uuid, NOW - 86400, NOW + 60)
    week = detail_window(db, uuid, NOW - 7 * 86400, NOW + 60)
    assert day.resolution == "minute" and len(day.rows) == 180
    assert week.resolution == "hour" and len(week.rows) == 3
    gpu = gpu_record(db, uuid)
    assert gpu is not None and gpu.node == "n1"
    assert [(e.kind, e.code) for e in gpu_events(db, gpu, NOW - 86400, NOW + 60)] == [("xid", 79)]
    db.close()


def _view(qtbot, path):
    from ui.views.gpu_detail import GpuDetailView

    view = GpuDetailView(str(path), now=lambda: NOW)
    qtbot.addWidget(view)
    view.resize(1240, 420)
    return view


def _row(path, node, index):
    db = open_database(path, readonly=True)
    row = next(r for r in fleet_latest(db) if r.uuid == uuid_of(node, index))
    db.close()
    return row


def test_panels_hold_data_or_say_why(qtbot, history_db):
    from ui.views.plots import PANELS

    view = _view(qtbot, history_db)
    assert view.stack.currentWidget() is view.placeholder  # no empty axes before a GPU is chosen
    with qtbot.waitSignal(view.history_shown, timeout=10000) as blocker:
        view.show_gpu(_row(history_db, "n1", 1))
    assert blocker.args == [uuid_of("n1", 1), 180]
    counts = view.plot.point_counts()
    for key in ("temp_c", "power_w", "sm_clock_mhz"):
        assert counts[key] > 0 and view.plot.reasons[key] is None
    for panel in PANELS:
        assert counts[panel.key] > 0 or view.plot.reasons[panel.key], panel.key
    # hw_thermal throttling is drawn on its row of the timeline, not as zero elsewhere.
    # The three hours of it are one bar on its labelled row.
    x, y = view.plot.throttle_curves["hw_thermal"].getData()
    assert list(x) == [NOW - 3 * 3600, NOW] and view.plot.reasons["throttle"] is None
    assert list(y) == [view.plot.row_y("hw_thermal")] * 2
    # The x axis is the requested day, not the three hours of data.
    lo, hi = view.plot.plots["temp_c"].vb.viewRange()[0]
    assert hi - lo > 20 * 3600
    assert view.plot.ref_lines["temp_c"].isVisible() is False or view.plot.ref_lines["temp_c"].value() > 0
    # Inventory and nominal spec are listed.
    cells = {view.inventory.item(r, 0).text(): view.inventory.item(r, 1).text()
             for r in range(view.inventory.rowCount())}
    assert cells["Serial"] == "SN-n1-1" and "TDP 400 W" in cells["Nominal spec"]
    assert view.changes.rowCount() >= 1
    view.shutdown()


def test_xid_marker_and_range_switch(qtbot, history_db):
    view = _view(qtbot, history_db)
    with qtbot.waitSignal(view.history_shown, timeout=10000):
        view.show_gpu(_row(history_db, "n1", 0))
    xs, ys = view.plot.xid_markers.getData()
    assert list(xs) == [NOW - 1800] and list(ys) == [view.plot.row_y("Xid")]
    assert "Xid 79" in view.plot._describe(float(NOW - 1800))
    with qtbot.waitSignal(view.history_shown, timeout=10000) as blocker:
        view.set_range(1)  # 7 d → hourly rollups
    assert blocker.args == [uuid_of("n1", 0), 3]
    assert view.last is not None and view.last.window.resolution == "hour"
    lo, hi = view.plot.plots["temp_c"].vb.viewRange()[0]
    assert hi - lo > 6 * 86400
    view.shutdown()


def test_no_data_in_window_is_said(qtbot, history_db):
    view = _view(qtbot, history_db)
    view._now = lambda: NOW + 30 * 86400  # a day a month later: nothing stored
    with qtbot.waitSignal(view.history_shown, timeout=10000) as blocker:
        view.show_gpu(_row(history_db, "n2", 0))
    assert blocker.args[1] == 0
    assert view.plot.reasons["temp_c"] == "no data in this window"
    assert view.plot.reasons["throttle"] == "no data in this window"
    view.shutdown()


def test_main_window_renders_at_default_size(qtbot, history_db, tmp_path):
    from ui.main_window import MainWindow

    window = MainWindow(str(history_db), refresh_s=60)
    qtbot.addWidget(window)
    window.show()
    with qtbot.waitSignal(window.rows_shown, timeout=10000):
        window.request_load()
    assert (window.width(), window.height()) == (1240, 760)
    row = next(r for r in range(window.model.rowCount()) if window.model.row(r).uuid == uuid_of("n1", 1))
    with qtbot.waitSignal(window.history_shown, timeout=10000):
        window.select_gpu(row)
    qtbot.wait(50)
    assert window.width() == 1240  # a long title does not widen the window
    window.grab().save(str(tmp_path / "main_window.png"))
    window.detail.grab().save(str(tmp_path / "gpu_detail.png"))
    assert (tmp_path / "main_window.png").stat().st_size > 10_000
    counts = window.detail.plot.point_counts()
    assert all(n > 0 or window.detail.plot.reasons[k] for k, n in counts.items())
    # Panels keep a legible height: the stack scrolls instead of squeezing them.
    assert window.detail.plot.plots["temp_c"].vb.height() >= 100
    window.close()


def test_the_inventory_pane_says_select_a_gpu_before_one_is_chosen(qtbot, history_db):
    from ui.views.gpu_detail import GpuDetailView

    view = GpuDetailView(str(history_db))
    qtbot.addWidget(view)
    try:
        assert view.inventory.rowCount() == 1 and "select a GPU" in view.inventory.item(0, 1).text()
    finally:
        view.shutdown()
