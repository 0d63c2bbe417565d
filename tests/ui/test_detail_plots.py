"""The GPU detail plots as an operator uses them (issue 21): a readout that belongs to the plots it describes,
a throttle/episode/Xid panel with a labelled row for everything in the window at every range, a mouse wheel
that scrolls the stack (Ctrl+wheel zooms, bounded), min–max bands and episode spans from the rollups, outages
as gaps with a marker."""

from __future__ import annotations

import shutil
import time

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QImage, QPainter, QWheelEvent

from fleetmon.records import Event
from helpers import Feeder, minute, poll, uuid_of
from storage.db import open_database
from storage.bulk import compact_hours
from storage.ingest import ingest_polls
from storage.queries import fleet_latest

pytestmark = pytest.mark.gui
NOW = int(time.time()) // 3600 * 3600
START = NOW - 30 * 86400
MINUTES_FROM = NOW - 3 * 3600
BRAKE_HOUR = NOW - 5 * 86400 - 3 * 3600  # an hour with a few minutes of power brake, five days ago
DROP_HOUR = NOW - 8 * 86400  # an hour whose power reading failed, eight days ago
DOWN_FROM, DOWN_TO = NOW - 10 * 86400, NOW - 10 * 86400 + 2 * 3600  # n2 unreachable, no minutes


@pytest.fixture(scope="module")
def month_db_built(tmp_path_factory):
    """n1 and n2 (two GPUs each): 30 days as hourly rollups (one stored minute per hour, as the demo writes
    them) and the last 3 hours as minutes; idle one hour in four.

    n1 GPU 0: a few minutes of hw_power_brake five days ago, a failed power reading eight days ago, an Xid 79
    half an hour ago; n1 GPU 1: hw_thermal in the last hours; n2 unreachable for two hours ten days ago (no
    minutes, node_unreachable / node_back events). Built once for the module (about a second);
    each test gets its own copy (:func:`month_db`).
    """
    path = tmp_path_factory.mktemp("month") / "fleet.db"
    db = open_database(path)
    polls = []
    for day in range(START, MINUTES_FROM, 86400):
        for node in ("n1", "n2"):
            mins = []
            for h in range(day, min(day + 86400, MINUTES_FROM), 3600):
                if node == "n2" and DOWN_FROM <= h < DOWN_TO:
                    continue
                for i in range(2):
                    extra: dict = {}
                    if (node, i, h) == ("n1", 0, BRAKE_HOUR):
                        extra = {"throttle_mask": 0x80, "thr_hw_power_brake": 7}
                    if (node, i, h) == ("n1", 0, DROP_HOUR):
                        extra = {"power_w_min": None, "power_w_mean": None, "power_w_max": None,
                                 "status": {"power_w": "failed", "fan_pct": "unsupported"}}
                    mins.append(minute(node, i, h, busy=(h // 3600) % 4 != 0, **extra))
            end = min(day + 86400, MINUTES_FROM)
            if node == "n2" and day <= DOWN_FROM < end:
                polls += [poll("n2", DOWN_FROM + 60, ok=False), poll("n2", DOWN_TO)]
            polls.append(poll(node, end, minutes=mins))
    polls.sort(key=lambda p: (p.ts, p.node))
    ingest_polls(db, polls)
    compact_hours(db, START // 3600 * 3600, MINUTES_FROM, now=NOW)
    feeder = Feeder(db, nodes=("n1", "n2"), gpus=2)
    feeder.feed(MINUTES_FROM, NOW, {("n1", 1): lambda ts: {"throttle_mask": 0x40, "thr_hw_thermal": 12}})
    ingest_polls(db, [poll("n1", NOW, events=[Event(seq=1, ts=NOW - 1800, kind="xid", uuid=uuid_of("n1", 0),
                                                    code=79, message="GPU has fallen off the bus")],
                           events_cursor=1)])
    db.close()
    return path


@pytest.fixture
def month_db(month_db_built, tmp_path):
    """A copy of the month's database of its own for the test (the view may write to the file it opens)."""
    path = tmp_path / "fleet.db"
    shutil.copyfile(month_db_built, path)
    return path


def _row(path, node, index):
    db = open_database(path, readonly=True)
    row = next(r for r in fleet_latest(db) if r.uuid == uuid_of(node, index))
    db.close()
    return row


def _view(qtbot, path, size=(1240, 700)):
    from ui.views.gpu_detail import GpuDetailView

    view = GpuDetailView(str(path), now=lambda: NOW)
    qtbot.addWidget(view)
    view.resize(*size)
    view.show()
    return view


def _show(qtbot, view, path, node, index, rng=None):
    with qtbot.waitSignal(view.history_shown, timeout=10000):
        if rng is None:
            view.show_gpu(_row(path, node, index))
        else:
            view.set_range(rng)
    qtbot.wait(20)


def test_readout_clears_when_another_gpu_is_shown(qtbot, month_db):
    view = _view(qtbot, month_db)
    try:
        _show(qtbot, view, month_db, "n1", 0)
        plot = view.plot.plots["temp_c"]
        pos = plot.vb.mapViewToScene(QPointF(NOW - 1800, 50))
        view.plot._crosshair.moved(pos)
        assert "Xid 79" in view.plot.readout.text()
        _show(qtbot, view, month_db, "n2", 1)
        assert "Xid 79" not in view.plot.readout.text()
        assert not any(line.isVisible() for line in view.plot._crosshair.lines)
        # A range change redraws the plots too: the readout of the old range goes.
        view.plot._crosshair.moved(plot.vb.mapViewToScene(QPointF(NOW - 1800, 50)))
        said = view.plot.readout.text()
        _show(qtbot, view, month_db, "n2", 1, rng=1)
        assert view.plot.readout.text() != said
    finally:
        view.shutdown()


def _drawn_labels(axis) -> list[str]:
    """The tick labels the axis actually paints (pyqtgraph drops a label that would overlap its neighbour)."""
    image = QImage(10, 10, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        specs = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [text for _, _, text in specs[2]] if specs else []


@pytest.mark.parametrize("rng, node, index, expected", [
    (0, "n1", 1, ["hw_thermal", "Xid"]),  # 24 h, minutes; the node's Xid names no other card: only n1 GPU 0's
    (0, "n1", 0, ["Xid"]),
    (2, "n1", 0, ["gpu_idle", "hw_power_brake", "power dropout", "Xid"]),  # 30 d, rollups
    (1, "n1", 0, ["gpu_idle", "Xid"]),  # 7 d: the brake was 5 days 3 h ago... inside the week
    (2, "n2", 0, ["gpu_idle", "no data", "node unreachable", "Xid"]),
])
def test_every_reason_and_episode_in_the_window_has_a_labelled_row(qtbot, month_db, rng, node, index, expected):
    view = _view(qtbot, month_db, size=(1240, 700))
    try:
        view.set_range(rng)
        _show(qtbot, view, month_db, node, index)
        plots = view.plot
        labels = _drawn_labels(plots.throttle.getAxis("left"))
        for want in expected:
            assert want in labels, (want, labels)
        if "hw_power_brake" in expected:
            # The brake is a bar at its hour, not an isolated point a finite-connected line never draws.
            x, y = plots.throttle_curves["hw_power_brake"].getData()
            assert len(x) >= 2 and x.min() <= BRAKE_HOUR < x.max()
            assert np.all(y == plots.row_y("hw_power_brake"))
    finally:
        view.shutdown()


def test_the_week_shows_the_brake_of_five_days_ago(qtbot, month_db):
    view = _view(qtbot, month_db)
    try:
        view.set_range(1)
        _show(qtbot, view, month_db, "n1", 0)
        assert "hw_power_brake" in _drawn_labels(view.plot.throttle.getAxis("left"))
        assert any(a <= BRAKE_HOUR < b for a, b in view.plot.spans["power_w"]["power_brake"].spans)
    finally:
        view.shutdown()


def test_the_xid_row_and_time_axis_are_not_cut_off(qtbot, month_db):
    view = _view(qtbot, month_db, size=(1920, 1000))
    try:
        view.set_range(2)
        _show(qtbot, view, month_db, "n1", 0)
        plots = view.plot
        bar = plots.scroll_area.verticalScrollBar()
        bar.setValue(bar.maximum())
        qtbot.wait(20)
        axis = plots.throttle.getAxis("bottom")
        bottom = axis.mapRectToScene(axis.boundingRect()).bottom()
        assert bottom <= plots.graphics.height() + 1
        # The Xid is a labelled marker, with its message on hover (tooltip) and on a click (readout, signal).
        xs, ys = plots.xid_markers.getData()
        assert list(xs) == [NOW - 1800] and list(ys) == [plots.row_y("Xid")]
        assert [t.toPlainText() for t in plots._xid_labels] == ["Xid 79"]
        spot = plots.xid_markers.points()[0]
        assert "fallen off the bus" in plots._xid_tip(spot.pos().x(), spot.pos().y(), spot.data())
        with qtbot.waitSignal(plots.event_clicked, timeout=2000) as blocker:
            plots._on_xid_clicked(plots.xid_markers, [spot])
        assert "Xid 79" in blocker.args[0] and "fallen off the bus" in plots.readout.text()
    finally:
        view.shutdown()


def _wheel(widget, pos: QPointF, ctrl: bool = False, delta: int = -120) -> None:
    from PySide6.QtWidgets import QApplication

    mods = Qt.KeyboardModifier.ControlModifier if ctrl else Qt.KeyboardModifier.NoModifier
    glob = widget.mapToGlobal(pos.toPoint())
    event = QWheelEvent(pos, QPointF(glob), QPoint(0, 0), QPoint(0, delta), Qt.MouseButton.NoButton, mods,
                        Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)


def test_wheel_scrolls_the_stack_and_ctrl_wheel_zooms_within_bounds(qtbot, month_db):
    view = _view(qtbot, month_db, size=(1240, 700))
    try:
        _show(qtbot, view, month_db, "n1", 0)
        plots = view.plot
        power = plots.plots["power_w"]
        full = power.vb.viewRange()[0]
        bar = plots.scroll_area.verticalScrollBar()
        assert bar.maximum() > 0 and bar.value() == 0
        viewport = plots.graphics.viewport()
        at = QPointF(plots.graphics.mapFromScene(power.vb.sceneBoundingRect().center()))
        _wheel(viewport, at)
        qtbot.wait(20)
        assert bar.value() > 0, "the wheel scrolls the stack of plots"
        assert power.vb.viewRange()[0] == pytest.approx(full), "and does not zoom"
        assert not plots.reset_button.isEnabled()
        # Ctrl+wheel zooms the time axis only, about the cursor.
        at = QPointF(plots.graphics.mapFromScene(power.vb.sceneBoundingRect().center()))
        _wheel(viewport, at, ctrl=True, delta=240)
        qtbot.wait(20)
        lo, hi = power.vb.viewRange()[0]
        assert hi - lo < (full[1] - full[0]) * 0.9
        assert plots.reset_button.isEnabled()
        # Zooming far out stays within the window: no future, nothing before it; y never below zero.
        for _ in range(30):
            _wheel(viewport, at, ctrl=True, delta=-240)
        qtbot.wait(20)
        lo, hi = power.vb.viewRange()[0]
        since, until = plots.span_x
        assert lo >= since - 1 and hi <= until + 1 and until <= NOW + 61
        for key in ("temp_c", "power_w", "sm_clock_mhz"):
            assert plots.plots[key].vb.viewRange()[1][0] >= 0
        plots.reset_button.click()
        assert power.vb.viewRange()[0] == pytest.approx(full)
        assert not plots.reset_button.isEnabled()
    finally:
        view.shutdown()


def test_a_month_is_bands_and_episode_spans_not_a_comb(qtbot, month_db):
    from ui.views.plots import MAX_BUCKETS

    view = _view(qtbot, month_db)
    try:
        view.set_range(2)
        _show(qtbot, view, month_db, "n1", 0)
        plots = view.plot
        assert plots.drawn is not None and len(plots.drawn.ts) <= MAX_BUCKETS  # hours merged, not 720 of them
        for key in ("temp_c", "power_w", "sm_clock_mhz"):
            x, ylo, yhi = plots.band_data[key]
            assert len(x) > 100 and np.all(ylo <= yhi) and np.any(ylo < yhi)
            assert plots.bands[key].opts["y1"] is not None and len(plots.bands[key].opts["y1"]) == len(x)
        assert any(a <= BRAKE_HOUR < b for a, b in plots.spans["power_w"]["power_brake"].spans)
        assert any(a <= DROP_HOUR < b for a, b in plots.spans["power_w"]["power_dropout"].spans)
        # The limits are named in the title line, not on a label inside the data.
        line = plots.ref_lines["sm_clock_mhz"]
        assert line.isVisible() and getattr(line, "label", None) is None
        assert "nominal boost" in plots.plots["sm_clock_mhz"].titleLabel.text
        # Generation and width each have their own axis: a width of 16 is not drawn at 16 on the generation axis.
        _, gen = plots.curves["pcie"]["pcie_gen"].getData()
        _, width = plots.curves["pcie"]["pcie_width"].getData()
        assert np.nanmax(gen) == 4 and np.nanmax(width) < 5
        right = _drawn_labels(plots.plots["pcie"].getAxis("right"))
        assert "×16" in right and "Gen4" in _drawn_labels(plots.plots["pcie"].getAxis("left"))
    finally:
        view.shutdown()


def test_an_outage_is_a_gap_with_a_marker(qtbot, month_db):
    view = _view(qtbot, month_db)
    try:
        for rng in (2, 3):  # 30 d (hours merged four by four) and 90 d
            view.set_range(rng)
            _show(qtbot, view, month_db, "n2", 0)
            plots = view.plot
            mid = (DOWN_FROM + DOWN_TO) / 2
            for key, series in (("temp_c", "temp_c_mean"), ("power_w", "power_w_mean")):
                x, y = plots.curves[key][series].getData()
                crossing = [i for i in range(len(x) - 1)
                            if np.isfinite(y[i]) and np.isfinite(y[i + 1]) and x[i] < mid < x[i + 1]]
                assert not crossing, "no line is drawn across the outage"
                assert any(a <= mid < b for a, b in plots.spans[key]["unreachable"].spans)
            assert {"no data", "node unreachable"} <= set(plots.rows)
    finally:
        view.shutdown()


def test_failed_power_hours_and_outage_spans(month_db):
    from storage.history_window import failed_power_hours
    from storage.rows import EventRow
    from ui.views.plots import outages

    db = open_database(month_db, readonly=True)
    try:
        assert failed_power_hours(db, uuid_of("n1", 0), START, NOW) == [(float(DROP_HOUR), 60)]
        assert failed_power_hours(db, uuid_of("n1", 1), START, NOW) == []
    finally:
        db.close()
    ev = [EventRow(id=1, node="n", ts=100, kind="node_back"), EventRow(id=2, node="n", ts=200, kind="node_unreachable"),
          EventRow(id=3, node="n", ts=300, kind="node_back"), EventRow(id=4, node="n", ts=400, kind="node_unreachable")]
    assert outages(ev, 500, since=50) == [(50, 100), (200, 300), (400, 500)]
