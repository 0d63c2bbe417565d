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
                                      "Tesla T4", "NVIDIA H100 80GB HBM3")] == ["A100", "V100", "RTX 3090", "T4",
                                                                                "H100 80GB HBM3"]
