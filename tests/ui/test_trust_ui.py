"""The GUI's health column tells the same story as the report (issue 10, item 2): a fixed worst-finding
order, no "pass" without evidence, and no All-NaN warnings from the plots."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytest

from storage.rows import DeratingDay, FleetRow, StoredFinding
from ui import format as fmt


def _row(node: str, idx: int, **kw: object) -> FleetRow:
    base: dict[str, object] = {"node": node, "node_status": "ok", "last_ok": 995.0, "uuid": f"GPU-{node}-{idx}",
                               "index": idx, "model": "NVIDIA A100-SXM4-80GB", "state": "ok", "latest_ts": 995.0}
    base.update(kw)
    return FleetRow(**base)  # type: ignore[arg-type]


def _finding(i: int, **kw: object) -> StoredFinding:
    base: dict[str, object] = {"id": i, "key": f"k{i}", "first_seen": 0.0, "last_seen": 0.0, "updated_at": 0.0}
    base.update(kw)
    return StoredFinding(**base)  # type: ignore[arg-type]


def test_health_label_does_not_depend_on_the_order_of_equally_severe_findings() -> None:
    a = [("warning", "ecc-correctable-storm"), ("warning", "xid")]
    assert fmt.health(a) == fmt.health(list(reversed(a))) == "warn: xid (+1)"
    # Severity first, whatever the kind priority.
    assert fmt.health([("warning", "xid", 20.0), ("critical", "derating", 30.0)]) == "fail: derating (+1)"


def test_health_says_pass_only_on_evidence() -> None:
    assert fmt.health([], "ok") == "pass"
    assert fmt.health([], "unreachable") == "unreachable"
    assert fmt.health([], "unknown") == "unknown"
    assert fmt.health([("warning", "xid")], "unreachable") == "unreachable (+1)"


def test_attach_findings_orders_each_gpu_worst_first_by_the_fixed_order() -> None:
    from ui.reader import attach_findings

    rows = [_row("a", 0)]
    found = [_finding(1, severity="warning", kind="ecc-correctable-storm", node="a", gpu_uuid="GPU-a-0",
                      first_seen=5.0),
             _finding(2, severity="warning", kind="xid", node="a", gpu_uuid="GPU-a-0", first_seen=9.0),
             _finding(3, severity="warning", kind="driver-mismatch", node="a", gpu_uuid=None, first_seen=1.0)]
    for order in (found, list(reversed(found))):
        [row], _ = attach_findings(rows, order)
        assert row.findings == (("warning", "xid"), ("warning", "ecc-correctable-storm"),
                                ("warning", "driver-mismatch"))
        assert fmt.health(list(row.findings)) == "warn: xid (+2)"


@pytest.mark.gui
def test_fleet_table_health_of_an_unreachable_node(qtmodeltester: Any) -> None:
    from PySide6.QtCore import Qt

    from ui.models.fleet_table import COLUMNS, FleetTableModel

    model = FleetTableModel()
    model.set_rows([_row("a", 0, node_status="unreachable"), _row("b", 0)], now=1000.0)
    col = COLUMNS.index("Health")
    assert model.data(model.index(0, col), Qt.ItemDataRole.DisplayRole) == "unreachable"
    assert model.data(model.index(1, col), Qt.ItemDataRole.DisplayRole) == "pass"


@pytest.mark.gui
def test_all_nan_series_print_no_warning(qtbot: Any, tmp_path: Any) -> None:
    from storage.db import open_database
    from storage.rows import HistoryWindow
    from ui.history_reader import DeratingData, HistoryService
    from ui.views.derating import DeratingView
    from ui.views.plots import HistoryPlots

    t0 = 1e9
    window = HistoryWindow(resolution="minute", step_s=60,
                           rows=tuple({"ts": t0 + 60 * i, "temp_c_mean": None, "power_w_mean": math.nan}
                                      for i in range(50)))
    plots = HistoryPlots()
    qtbot.addWidget(plots)
    plots.resize(800, 600)
    plots.show()
    open_database(tmp_path / "fleet.db").close()
    service = HistoryService(str(tmp_path / "fleet.db"))
    view = DeratingView(service)
    qtbot.addWidget(view)
    view.show()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            plots.set_history(window, t0, t0 + 3000)
            plots.grab()
            days = tuple(DeratingDay(gpu_uuid="u", day=1_000_000_000 + 86400 * i) for i in range(5))
            view._on_loaded(DeratingData(since=t0, until=t0 + 5 * 86400, days=days, models={"u": "NVIDIA A100"}))
            view.grab()
            nan_day = (DeratingDay(gpu_uuid="u", day=1_000_000_000, clock_ratio=math.nan),)
            view._on_loaded(DeratingData(since=t0, until=t0 + 86400, days=nan_day, models={"u": "NVIDIA A100"}))
            view.grab()
    finally:
        service.stop()
    assert not [w for w in caught if "All-NaN" in str(w.message)], [str(w.message) for w in caught]
