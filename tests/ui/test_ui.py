"""UI pieces: display formatting (no Qt) and the fleet table model (pytest-qt)."""

from __future__ import annotations

import pytest

from storage.rows import FleetRow, StoredFinding
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
    ("ok", "ok", 300.0, "stale"), ("ok", "ok", 990.0, "ok"),
])
def test_gpu_status(node, gpu, ts, expected):
    assert fmt.gpu_status(node, gpu, ts, now=1000.0) == expected


def _row(node, idx, **kw):
    base = {"node": node, "node_status": "ok", "last_ok": 995.0, "last_error": None, "driver_version": "535.161.08",
            "uuid": f"GPU-{node}-{idx}", "index": idx, "model": "NVIDIA A100-SXM4-80GB", "state": "ok",
            "latest_ts": 995.0, "power_default_w": 400.0, "power_enforced_w": 400.0,
            "values": {"temp_c": 55, "power_w": 301.2, "power_limit_w": 400.0, "util_gpu_pct": 88}, "status": {}}
    base.update(kw)
    return FleetRow(**base)


def _finding(i, **kw):
    base = {"id": i, "key": f"k{i}", "first_seen": 0.0, "last_seen": 0.0, "updated_at": 0.0}
    base.update(kw)
    return StoredFinding(**base)


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
        "a", "0", "NVIDIA A100-SXM4-80GB", "NVIDIA", "535.161.08", "55 °C", "301 / 400 W", "88%", "5 s ago", "ok", "pass", "—"]
    status, temp = COLUMNS.index("Status"), COLUMNS.index("Temp")
    assert cell(1, status) == "lost" and cell(1, temp) == "—"
    assert cell(2, status) == "unreachable: cannot connect: refused"
    # Same rows again: data changes in place, rows are not reset.
    model.set_rows([_row("a", 0, values={"temp_c": 70}), _row("a", 1), _row("b", 0)], now=1000.0)
    assert cell(0, temp) == "70 °C"


def test_health_cell():
    assert fmt.health([]) == "pass"
    assert fmt.health([("warning", "pcie-replay"), ("critical", "ecc-uncorrectable"), ("info", "derating")]) == \
        "fail: ecc-uncorrectable (+2)"


def test_attach_findings_gives_node_findings_to_every_gpu():
    from ui.reader import attach_findings

    rows = [_row("a", 0), _row("a", 1), _row("b", 0)]
    findings = [_finding(1, severity="critical", kind="gpu-lost", node="a", gpu_uuid="GPU-a-1"),
                _finding(2, severity="warning", kind="driver-mismatch", node="a", gpu_uuid=None)]
    rows, findings = attach_findings(rows, findings)
    assert rows[0].findings == (("warning", "driver-mismatch"),)
    assert rows[1].findings == (("critical", "gpu-lost"), ("warning", "driver-mismatch"))
    assert rows[2].findings == ()
    assert findings[0].gpu_index == 1


@pytest.mark.gui
def test_findings_model_sorts_worst_first(qtmodeltester):
    from ui.models.findings_table import FindingsTableModel

    model = FindingsTableModel()
    model.set_rows([
        _finding(1, severity="info", kind="derating", node="b", gpu_uuid="G2", first_seen=900.0,
                 last_seen=990.0, action="compare", evidence={"ratio": 0.6}),
        _finding(2, severity="critical", kind="ecc-uncorrectable", node="a", gpu_uuid="G1", gpu_index=3,
                 first_seen=400.0, last_seen=995.0, action="drain the node", evidence={"new_errors": 2}),
    ], now=1000.0)
    qtmodeltester.check(model)
    assert [model.data(model.index(0, c)) for c in range(7)] == [
        "critical", "ecc-uncorrectable", "a", "3", "10 min ago", "5 s ago", "drain the node"]
    assert "new_errors: 2" in model.data(model.index(0, 0), role=0x03)  # ToolTipRole
