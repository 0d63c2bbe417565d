"""UI pieces: display formatting (no Qt) and the fleet table model (pytest-qt)."""

from __future__ import annotations

import pytest

from ui import format as fmt


@pytest.mark.parametrize("value, unit, expected", [
    (None, "W", "—"), ("x", "W", "—"), (41.6, "°C", "42 °C"), (97, "%", "97%"), (12.345, "MHz", "12 MHz"),
])
def test_number(value, unit, expected):
    assert fmt.number(value, unit) == expected


@pytest.mark.parametrize("draw, limit, expected", [
    (245.4, 350, "245 / 350 W"), (None, 350, "— / 350 W"), (None, None, "—"), (12, None, "12 / — W"),
])
def test_power(draw, limit, expected):
    assert fmt.power(draw, limit) == expected


@pytest.mark.parametrize("delta, expected", [(3, "3 s ago"), (600, "10 min ago"), (7200, "2 h ago"),
                                             (3 * 86400, "3 d ago")])
def test_age(delta, expected):
    assert fmt.age(1000.0 - delta, now=1000.0) == expected
    assert fmt.age(None) == "—"


@pytest.mark.parametrize("node, gpu, ts, expected", [
    ("unreachable", "ok", 990.0, "unreachable"), ("ok", "lost", 990.0, "lost"), ("ok", "ok", None, "unknown"),
    ("ok", "ok", 700.0, "stale"), ("ok", "ok", 990.0, "ok"),
])
def test_gpu_status(node, gpu, ts, expected):
    assert fmt.gpu_status(node, gpu, ts, now=1000.0) == expected


def _row(node, idx, **kw):
    base = {"node": node, "node_status": "ok", "last_ok": 1.0, "last_error": None, "driver_version": "535.161.08",
            "uuid": f"GPU-{node}-{idx}", "idx": idx, "name": "NVIDIA A100-SXM4-80GB", "state": "ok",
            "latest_ts": 995.0, "power_default_w": 400.0, "power_enforced_w": 400.0,
            "values": {"temp_c": 55, "power_w": 301.2, "power_limit_w": 400.0, "util_gpu_pct": 88}, "status": {}}
    base.update(kw)
    return base


@pytest.mark.gui
def test_fleet_table_model(qtmodeltester):
    from ui.models.fleet_table import COLUMNS, FleetTableModel

    model = FleetTableModel()
    model.set_rows([_row("a", 0), _row("a", 1, state="lost", values={}),
                    _row("b", 0, node_status="unreachable", last_error="cannot connect: refused")], now=1000.0)
    qtmodeltester.check(model)
    cell = lambda r, c: model.data(model.index(r, c))  # noqa: E731
    assert model.columnCount() == len(COLUMNS) and model.rowCount() == 3
    assert [cell(0, c) for c in range(len(COLUMNS))] == [
        "a", "0", "NVIDIA A100-SXM4-80GB", "535.161.08", "55 °C", "301 / 400 W", "88%", "5 s ago", "ok"]
    assert cell(1, 8) == "lost" and cell(1, 4) == "—"
    assert cell(2, 8) == "unreachable: cannot connect: refused"
    # Same rows again: data changes in place, rows are not reset.
    model.set_rows([_row("a", 0, values={"temp_c": 70}), _row("a", 1), _row("b", 0)], now=1000.0)
    assert cell(0, 4) == "70 °C"
