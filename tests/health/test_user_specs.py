"""User specs through the real health pass (issue 22 item 2): the fleet file's ``[[spec]]`` tables reach the
rules as the thresholds do (``assess.load_history`` from the fleet file: the collector's health pass, report,
preflight), and the stored derating figures and findings follow them; without a fleet file, the catalog."""

from __future__ import annotations

from typing import Any

import pytest

from fleetmon import assess
from fleetmon.health import engine
from fleetmon.health.rules import derating
from helpers import T0, uuid_of
from helpers.userspec import MODDED_MIB, MYSTERY, feed, write_fleet
from storage import findings as stored
from storage.db import open_database

NOW = T0 + 3 * 3600


@pytest.fixture
def db(tmp_path):
    d = open_database(tmp_path / "fleet.db")
    feed(d, T0, NOW)
    yield d
    d.close()


def _derating(db: Any) -> dict[str, Any]:
    return {r.gpu_uuid: r for r in stored.derating_history(db, None, 0, NOW + 86400)}


def _open(db: Any, metric: str) -> list[Any]:
    return [f for f in stored.open_findings(db) if f.kind == "derating" and (f.evidence or {}).get("metric") == metric]


def test_an_unknown_model_with_a_spec_gets_derating_ratios_and_loses_its_info_finding(db, tmp_path):
    _, bare = write_fleet(tmp_path, with_specs=False)
    assess.evaluate_and_store(db, NOW, fleet=bare)  # the collector's health pass, fleet file without [[spec]]
    (unknown,) = _open(db, "unknown-model")
    assert unknown.severity == "info" and unknown.evidence["model"] == MYSTERY
    assert "[[spec]]" in (unknown.action or "") and "fleet file" in (unknown.action or "")
    assert f'name = "{MYSTERY}"' in (unknown.action or "") and "tdp_w" in (unknown.action or "")
    rows = _derating(db)
    assert rows[uuid_of("x1", 0)].clock_ratio is None and rows[uuid_of("x1", 0)].power_limit_ratio is None

    _, fleet = write_fleet(tmp_path)
    history = assess.load_history(db, NOW, NOW - 86400, fleet=fleet)
    assert not [f for f in engine.evaluate(history) if f.evidence.get("metric") == "unknown-model"]
    # (The ledger keeps the one stored above open for derating's quiet hours, as any derating finding.)
    fresh = open_database(tmp_path / "with-specs.db")
    try:
        feed(fresh, T0, NOW)
        assess.evaluate_and_store(fresh, NOW, fleet=fleet)
        assert _open(fresh, "unknown-model") == []
        rows = _derating(fresh)
    finally:
        fresh.close()
    x = rows[uuid_of("x1", 0)]
    assert x.clock_ratio == pytest.approx(1410 / 1500, abs=0.01)  # busy SM clock / the [[spec]]'s boost
    assert x.power_limit_ratio == pytest.approx(1.0, abs=0.01)  # 400 W limit / tdp_w 400
    assert x.memory_ratio == pytest.approx(1.0)  # 98304 MiB / 96 GB
    assert x.pcie_ratio == pytest.approx(0.5)  # a Gen4 x16 link on a card the [[spec]] says is Gen5 x16


def test_a_memory_modded_4090_is_judged_against_its_user_spec(db, tmp_path):
    _, bare = write_fleet(tmp_path, with_specs=False)
    history = assess.load_history(db, NOW, NOW - 86400, fleet=bare)
    rows = {r["uuid"]: r for r in derating.daily_ratios(history)}
    modded, stock = rows[uuid_of("r1", 1)], rows[uuid_of("r1", 0)]
    assert modded["memory_ratio"] == pytest.approx(MODDED_MIB / (24 * 1024), abs=1e-3)  # ~2.0 against the catalog
    assert modded["spec_origin"] == "catalog"
    found = [f for f in engine.evaluate(history) if f.kind == "derating" and f.gpu_uuid == uuid_of("r1", 1)
             and f.evidence["metric"].startswith("memory")]
    assert [f.evidence["metric"] for f in found] == ["memory-modded"]
    assert "[[spec]]" in found[0].action

    _, fleet = write_fleet(tmp_path)
    history = assess.load_history(db, NOW, NOW - 86400, fleet=fleet)
    rows = {r["uuid"]: r for r in derating.daily_ratios(history)}
    modded, stock = rows[uuid_of("r1", 1)], rows[uuid_of("r1", 0)]
    assert modded["memory_ratio"] == pytest.approx(1.0, abs=0.01) and modded["spec_origin"] == "user"
    assert stock["memory_ratio"] == pytest.approx(1.0, abs=0.01) and stock["spec_origin"] == "catalog"
    spec = history.spec_of(history.gpu(uuid_of("r1", 1)))  # type: ignore[arg-type]
    assert spec is not None and spec.origin == "user" and spec.memory_gb == 48 and "fleet.toml:" in spec.source
    assert not [f for f in engine.evaluate(history) if f.kind == "derating" and f.gpu_uuid == uuid_of("r1", 1)
                and f.evidence.get("metric") in ("memory-modded", "memory")]
    # A 4090 at 1410 MHz under load is far below its boost: the finding says which spec judged it.
    clock = {f.gpu_uuid: f for f in engine.evaluate(history) if f.kind == "derating" and f.evidence["metric"] == "clock"}
    modded_clock, stock_clock = clock[uuid_of("r1", 1)], clock[uuid_of("r1", 0)]
    assert modded_clock.evidence["spec_origin"] == "user" and "of nominal boost (user spec)" in modded_clock.summary
    assert stock_clock.evidence["spec_origin"] == "catalog" and "user spec" not in stock_clock.summary
    from ui.format import evidence_text  # the findings table's evidence column (no Qt needed)
    assert "nominal boost 2520 MHz, user spec" in evidence_text("derating", modded_clock.evidence)


def test_report_and_preflight_read_the_specs_from_the_fleet_file(db, tmp_path):
    _, fleet = write_fleet(tmp_path)
    report = assess.run_report(db, NOW, 86400, None, fleet, save=False).result
    preflight = assess.run_preflight(db, NOW, "x1", 1, fleet).result
    assert [n.name for n in preflight.nodes] == ["x1"]
    for findings in (report.findings, preflight.findings):
        assert not [f for f in findings if f.evidence.get("metric") == "unknown-model"]
    without = assess.run_report(db, NOW, 86400, None, None, save=False).result
    assert [f.evidence["model"] for f in without.findings if f.evidence.get("metric") == "unknown-model"] == [MYSTERY]
