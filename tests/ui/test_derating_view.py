"""The derating view: per-model distribution, a card's daily ratios readable for a single day."""

from __future__ import annotations

import time

import pytest

from helpers import Feeder, uuid_of
from storage.db import open_database
from storage.findings import save_derating
from storage.queries import fleet_latest
from storage.rows import DeratingDay

pytestmark = pytest.mark.gui
NOW = int(time.time()) // 86400 * 86400


@pytest.fixture
def derating_db(tmp_path):
    path = tmp_path / "fleet.db"
    db = open_database(path)
    Feeder(db, nodes=("n1",), gpus=3).feed(NOW - 3600, NOW)
    days = [DeratingDay(gpu_uuid=uuid_of("n1", i), day=NOW - 86400, clock_ratio=r, power_limit_ratio=1.0,
                        memory_ratio=0.99, pcie_ratio=1.0) for i, r in enumerate((0.65, 0.7, 0.95))]
    save_derating(db, days)
    db.close()
    return path


def test_summary_model(qtmodeltester):
    from ui.views.derating import ModelSummaryModel, summarize

    days = [DeratingDay(gpu_uuid=u, day=d, clock_ratio=r) for u, r in (("a", 0.6), ("b", 0.7), ("c", 1.0))
            for d in (0, 86400)]
    summary = summarize(days, {"a": "RTX 3090", "b": "RTX 3090", "c": "A100"})
    assert [s.model for s in summary] == ["RTX 3090", "A100"]  # worst first
    assert summary[0].stats["clock_ratio"] == pytest.approx((0.6, 0.65, 0.7)) and summary[0].cards == 2
    model = ModelSummaryModel()
    model.set_rows(summary)
    qtmodeltester.check(model)
    assert model.data(model.index(0, 3)) == "60 % · 65 % · 70 %"


def test_one_day_of_data_is_readable(qtbot, derating_db):
    from ui.history_reader import HistoryService
    from ui.views.derating import MIN_SPAN_S, DeratingView

    service = HistoryService(str(derating_db))
    view = DeratingView(service, now=lambda: NOW)
    qtbot.addWidget(view)
    view.resize(1240, 420)
    assert view.reason == "select a GPU"
    db = open_database(derating_db, readonly=True)
    row = next(r for r in fleet_latest(db) if r.uuid == uuid_of("n1", 0))
    db.close()
    view.refresh()
    qtbot.waitUntil(lambda: view.data is not None, timeout=10000)  # the answer is queued to the GUI thread
    view.show_gpu(row)
    assert view.reason is None
    assert view.point_counts()["clock_ratio"] == 1
    lo, hi = view.card.getPlotItem().vb.viewRange()[0]
    assert hi - lo >= MIN_SPAN_S * 0.99  # no sub-second ticks around a single day
    assert view.model.rowCount() == 1 and "65 %" in view.model.data(view.model.index(0, 3))
    _, y = view.median_curve.getData()
    assert list(y) == [0.7]
    service.stop()


def test_strip_plot_axis_labels_are_short_model_names():
    from ui.views.derating import short_model

    assert [short_model(m) for m in ("NVIDIA A100-SXM4-80GB", "Tesla V100-SXM2-32GB", "NVIDIA GeForce RTX 3090",
                                      "Tesla T4", "NVIDIA H100 80GB HBM3", "AMD Instinct MI100")] == [
        "A100", "V100", "RTX 3090", "T4", "H100 80GB HBM3", "MI100"]


def test_memory_is_shown_against_the_models_usual_not_the_marketing_size(qtmodeltester):
    """Issue 21 item 8: every T4 reports 94 % of 16 GB; that is the T4's usual, not derating. A card short of
    its peers still shows (and tints) as derated; the nominal share stays in the tooltip."""
    from PySide6.QtCore import Qt

    from ui.views.derating import RATIOS, ModelSummaryModel, summarize

    col = 3 + [k for k, _, _ in RATIOS].index("memory_ratio")
    t4 = [DeratingDay(gpu_uuid=f"t{i}", day=0, clock_ratio=0.98, memory_ratio=0.9375) for i in range(4)]
    short = [DeratingDay(gpu_uuid=f"a{i}", day=0, clock_ratio=0.98, memory_ratio=r)
             for i, r in enumerate((0.996, 0.996, 0.996, 0.70))]
    models = {**{f"t{i}": "Tesla T4" for i in range(4)}, **{f"a{i}": "NVIDIA A100-SXM4-80GB" for i in range(4)}}
    summary = {s.model: s for s in summarize(t4 + short, models)}
    assert summary["Tesla T4"].stats["memory_ratio"] == pytest.approx((1.0, 1.0, 1.0))
    assert summary["Tesla T4"].usual["memory_ratio"] == pytest.approx(0.9375)
    model = ModelSummaryModel()
    model.set_rows(list(summary.values()))
    qtmodeltester.check(model)
    rows = {model.data(model.index(r, 0)): r for r in range(model.rowCount())}
    t4_cell = model.index(rows["Tesla T4"], col)
    assert model.data(t4_cell) == "100 % · 100 % · 100 %"
    assert model.data(t4_cell, Qt.ItemDataRole.BackgroundRole) is None  # not tinted as derating
    assert "94 %" in model.data(t4_cell, Qt.ItemDataRole.ToolTipRole)  # the nominal share, said where asked
    a100 = model.data(model.index(rows["NVIDIA A100-SXM4-80GB"], col))
    assert a100.startswith("70 % · ")  # the short card, against its peers


def test_model_usual_is_the_rules_basis():
    from fleetmon.health.rules.derating import model_usual

    assert model_usual([0.9375, 0.9375, None, 0.9]) == pytest.approx(0.9375)
    assert model_usual([0.9, 0.9], min_peers=3) is None  # too few cards to tell
    assert model_usual([]) is None and model_usual([0.0]) is None


def _strip_point(view, uuid):
    from PySide6.QtCore import QPointF

    x, y = view.dot_position(uuid)
    scene = view.strip.getPlotItem().vb.mapViewToScene(QPointF(x, y))
    return view.strip.mapFromScene(scene)


def test_hovering_a_dot_names_the_card_and_clicking_opens_it(qtbot, derating_db):
    """Issue 21 item 8: the 65 % card is the point of the view: hover names it (node, GPU index, model, ratios),
    a click asks for it (the main window shows it in the detail and the card plot)."""
    from PySide6.QtCore import QEvent, QPointF, Qt
    from PySide6.QtGui import QMouseEvent
    from PySide6.QtWidgets import QApplication

    from ui.fleet_reader import read_snapshot
    from ui.history_reader import HistoryService
    from ui.views.derating import DeratingView

    db = open_database(derating_db, readonly=True)
    snap = read_snapshot(db)
    db.close()
    service = HistoryService(str(derating_db))
    view = DeratingView(service, now=lambda: NOW)
    view.card_lookup = snap.gpus.get
    qtbot.addWidget(view)
    view.resize(1240, 700)
    view.show()
    qtbot.waitExposed(view)
    qtbot.waitUntil(lambda: view.data is not None, timeout=10000)
    slow = uuid_of("n1", 0)
    pos = _strip_point(view, slow)
    port = view.strip.viewport()
    p = QPointF(pos)  # one move (pyqtgraph drops a second one within a frame's time)
    QApplication.sendEvent(port, QMouseEvent(QEvent.Type.MouseMove, p, port.mapToGlobal(p), Qt.MouseButton.NoButton,
                                             Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier))
    tip = view.strip.getPlotItem().vb.toolTip()  # pyqtgraph puts a hovered dot's tip on its view box
    assert tip.startswith("n1 GPU 0 · ")  # node, GPU index, model
    assert "clock under load / boost: 65 %" in tip and "power limit / TDP: 100 %" in tip
    with qtbot.waitSignal(view.gpu_requested, timeout=3000) as blocker:
        qtbot.mouseClick(port, Qt.MouseButton.LeftButton, pos=pos)
    assert blocker.args == [slow]
    service.stop()


def drawn(axis) -> list[str]:  # type: ignore[no-untyped-def]
    """The tick labels pyqtgraph would draw now (it leaves out one that reaches past the axis)."""
    from PySide6.QtGui import QImage, QPainter

    image = QImage(8, 8, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    try:
        return [text for _rect, _flags, text in axis.generateDrawSpecs(painter)[2]]
    finally:
        painter.end()


def test_crowded_model_labels_take_two_lines_and_none_overlaps(qtbot, derating_db):
    """Nine models at the default window size: the strip plot's labels ran into each other (in English and in
    Chinese); every other one now goes a line lower, only when they would overlap."""
    from PySide6.QtGui import QFontMetrics

    from ui.history_reader import HistoryService
    from ui.views.derating import DeratingView

    service = HistoryService(str(derating_db))
    try:
        view = DeratingView(service, now=lambda: NOW)
        qtbot.addWidget(view)
        view.resize(1240, 700)
        view.show()
        qtbot.waitExposed(view)
        qtbot.waitUntil(lambda: view.data is not None, timeout=10000)
        labels = ["V100", "P100", "RTX 3090", "T4", "A100", "RTX 4090", "AMD Instinct MI100", "K100_AI", "Ascend 910B4"]

        def shown() -> list[str]:
            view._strip_labels = list(labels)
            view._fit_strip_labels()
            return [text for _, text in view.strip.getAxis("bottom")._tickLevels[0]]

        view.strip.resize(380, 300)
        qtbot.waitUntil(lambda: view.strip.getViewBox().width() < 400, timeout=5000)
        crowded = shown()
        assert [t.strip() for t in crowded] == labels
        assert all(t.startswith("\n") == bool(i % 2) for i, t in enumerate(crowded)), crowded
        axis = view.strip.getAxis("bottom")
        qtbot.waitUntil(lambda: drawn(axis) == crowded, timeout=5000)  # none left out at an edge
        lines = QFontMetrics(axis.style.get("tickFont") or view.strip.font()).height()
        assert axis.height() >= 2 * lines + 10, (axis.height(), lines)  # room for the lower line
        view.strip.resize(1800, 300)
        qtbot.waitUntil(lambda: view.strip.getViewBox().width() > 1500, timeout=5000)
        assert shown() == labels  # room for each: one line
        qtbot.waitUntil(lambda: drawn(axis) == labels, timeout=5000)
    finally:
        service.stop()
