"""fleetmon.assess: the database round trip of the health engine.

Polls built like the collector's (tests/helpers) are ingested
and rolled up; then load_history → evaluate_and_store → findings stored,
resolved when the fault stops (kept, not deleted), reopened on recurrence;
reports compare with the previous report; preflights read a hostlist.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest

from fleetmon import assess
from fleetmon.errors import KnownError
from fleetmon.fleet import parse_fleet
from fleetmon.health import engine
from fleetmon.health.hourly import rollup_hourly
from fleetmon.health.series import Series
from storage import findings as stored
from storage.health_input import load_minutes
from storage.rows import DeratingDay, NewFinding
from storage.db import open_database, query
from storage.ingest import ingest_polls
from storage.rollup import rollup
from helpers import HOT, NODES, T0, Feeder, between, minute, poll, uuid_of

@pytest.fixture
def db(tmp_path):
    d = open_database(tmp_path / "fleet.db")
    yield d
    d.close()


def _findings(db: Any) -> dict[str, dict[str, Any]]:
    return {r["key"]: r for r in query(db, "SELECT * FROM findings")}


# -- storage side: the hourly_health rollup ------------------------------------------------


def test_hourly_health_matches_the_engines_reference_rollup(db):
    feeder = Feeder(db, nodes=["n1"], gpus=1)
    hot = between(T0 + 600, T0 + 1200, {"thr_hw_thermal": 6})
    failed = between(T0 + 1800, T0 + 2100, {"status": {"power_w": "failed", "fan_pct": "unsupported"},
                                             "power_w_mean": None, "power_w_min": None, "power_w_max": None})
    pending = between(T0 + 2400, T0 + 2460, {"remap_pending": 1})
    feeder.feed(T0, T0 + 3600, {("n1", 0): lambda ts: {**hot(ts), **failed(ts), **pending(ts)}})
    # A few idle minutes in the second hour.
    feeder.feed(T0 + 3600, T0 + 7200, {("n1", 0): lambda ts: {"busy_n": 0 if ts < T0 + 4200 else 12}})
    history = assess.load_history(db, T0 + 7200, T0, minutes_s=4 * 3600)
    (gpu,) = history.gpus
    reference = rollup_hourly(gpu.minutes)
    got = assess.load_history(db, T0 + 7200, T0, minutes_s=0).gpus[0].hourly
    for key in ("ts", "busy_minutes", "sm_clock_busy_minutes", "failed_power_w", "remap_pending_max",
                "lost_minutes", "n", "busy_n"):
        assert list(got.col(key)) == list(reference.col(key)), key
    assert [round(v) for v in got.col("sm_clock_busy_mhz")] == [round(v) for v in reference.col("sm_clock_busy_mhz")]
    assert list(got.col("thr_hw_thermal")) == [60, 0]
    assert list(got.col("failed_power_w")) == [5, 0]


def test_column_reader_gives_what_the_row_loader_gives(db):
    feeder = Feeder(db, nodes=["n1", "n2"], gpus=2)
    feeder.feed(T0, T0 + 1800, {("n2", 1): lambda ts: {"ecc_corr_vol": (ts - T0) // 60, "pcie_gen_busy_min": 2,
                                                        "status": {"power_w": "failed"}}})
    history = assess.load_history(db, T0 + 1800, T0, minutes_s=3600)
    rows = load_minutes(db, T0, T0 + 1801)
    assert len(history.gpus) == 4
    for gpu in history.gpus:
        ref = Series.from_rows(rows[gpu.uuid])
        assert len(gpu.minutes) == len(ref) == 30
        for key in ("ts", "n", "busy_n", "power_w_mean", "power_w_min", "power_w_max", "temp_c_max",
                    "util_gpu_pct_min", "sm_clock_mhz_mean", "power_limit_w_mean", "ecc_corr_vol",
                    "pcie_gen_busy_min", "thr_hw_thermal", "retired_pending"):
            assert list(gpu.minutes.col(key)) == pytest.approx(list(ref.col(key))), (gpu.uuid, key)
        assert gpu.minutes.statuses() == [s or None for s in ref.col("status")]
        assert gpu.minutes.lost() == [False] * 30


# -- evaluate_and_store: the finding life cycle ------------------------------------------------


QUIET_2H = """
[fleet]
name = "t"
[thresholds]
quiet_hours = 2
quiet_data_frac = 0.5
quiet_busy_minutes = 30
"""


def test_a_fault_stays_open_until_a_quiet_period_with_data_then_reopens_as_a_recurrence(db, tmp_path):
    fleet = _fleet(tmp_path, QUIET_2H)
    feeder = Feeder(db)
    key_of = lambda found: next(k for k, r in found.items() if r["kind"] == "thermal-throttle")  # noqa: E731
    feeder.feed(T0, T0 + 3600, {("n2", 1): between(T0 + 1800, T0 + 3600, HOT)})
    out = assess.evaluate_and_store(db, T0 + 3600, fleet=fleet)
    found = _findings(db)
    key = key_of(found)
    assert key in out["new"]
    row = found[key]
    assert (row["node"], row["gpu_uuid"], row["severity"], row["resolved_at"]) == (
        "n2", uuid_of("n2", 1), "warning", None)
    assert (row["first_seen"], row["last_seen"]) == (T0 + 1800, T0 + 3600)  # onset, end of the latest evidence
    assert row["evidence"] and '"summary":"n2 gpu1: thermal slowdown' in row["evidence"]
    assert [f.key for f in stored.open_findings(db) if f.kind == "thermal-throttle"] == [key]

    # Silence is not health: with no data for three hours the finding stays open.
    out = assess.evaluate_and_store(db, T0 + 3 * 3600 + 3600, fleet=fleet)
    assert key not in out["resolved"] and _findings(db)[key]["resolved_at"] is None

    # Data arrives that shows the card busy and cool for the quiet period: then it is resolved, and kept.
    feeder.feed(T0 + 4 * 3600, T0 + 7 * 3600)
    out = assess.evaluate_and_store(db, T0 + 7 * 3600, fleet=fleet)
    assert key in out["resolved"]
    row = _findings(db)[key]
    assert row["resolved_at"] == T0 + 7 * 3600
    assert '"by":"data"' in row["evidence"]
    assert key not in {f.key for f in stored.open_findings(db)}

    # It comes back: the same finding reopens, linked to the earlier episode.
    feeder.feed(T0 + 7 * 3600, T0 + 7 * 3600 + 1200, {("n2", 1): between(T0 + 7 * 3600 + 600, T0 + 7 * 3600 + 1200, HOT)})
    out = assess.evaluate_and_store(db, T0 + 7 * 3600 + 1200, fleet=fleet)
    assert key in out["reopened"] and key in out["new"]
    row = _findings(db)[key]
    # The window holds both episodes: the new one is dated from the earlier one's resolution, not before.
    assert row["resolved_at"] is None and T0 + 7 * 3600 <= row["first_seen"] <= T0 + 7 * 3600 + 600
    assert '"previous":{' in row["evidence"]
    assert len([r for r in _findings(db).values() if r["kind"] == "thermal-throttle"]) == 1


def test_a_fault_is_named_within_10_minutes_of_its_onset(db):
    feeder = Feeder(db)
    onset = T0 + 3000
    feeder.feed(T0, onset + 600, {("n1", 0): between(onset, onset + 600, HOT)})
    out = assess.evaluate_and_store(db, onset + 600)
    kinds = {r.kind for r in stored.open_findings(db) if r.node == "n1"}
    assert "thermal-throttle" in kinds, out


def test_derating_rows_are_stored_for_today_only(db):
    feeder = Feeder(db)
    feeder.feed(T0 - 7200, T0 + 5400)  # spans midnight
    out = assess.evaluate_and_store(db, T0 + 5400)
    got = stored.derating_history(db, None, 0, T0 + 86400)
    assert out["derating_rows"] == len(got) == 6
    assert {r.day for r in got} == {T0}
    assert all(r.sm_clock_busy_mhz and r.clock_ratio for r in got)


def test_derating_history_is_stored_for_every_day_of_bulk_written_history(db):
    """History written in bulk (the demo's month) gets a derating row per GPU and day, not only today's."""
    feeder = Feeder(db)
    feeder.feed(T0 - 2 * 86400, T0 + 5400)  # three UTC days and a bit
    written = assess.store_derating_history(db, T0 + 5400, T0 - 2 * 86400)
    got = stored.derating_history(db, None, 0, T0 + 86400)
    assert written == len(got) == 6 * 3
    assert {r.day for r in got} == {T0 - 2 * 86400, T0 - 86400, T0}
    assert all(r.clock_ratio for r in got)


def test_stored_daily_rows_feed_the_trend(db):
    feeder = Feeder(db)
    feeder.feed(T0, T0 + 3600)
    stored.save_derating(db, [DeratingDay(gpu_uuid=uuid_of("n1", 0), day=T0 - d * 86400, clock_ratio=0.8 + 0.01 * d)
                              for d in range(1, 21)])
    history = assess.load_history(db, T0 + 3600, T0)
    days = {r["day"] for r in history.daily}
    assert len(days) == 20 and "2023-11-13" in days
    findings = engine.evaluate(history)
    trend = [f for f in findings if f.kind == "derating" and f.evidence.get("metric") == "clock-trend"]
    assert [f.gpu_uuid for f in trend] == [uuid_of("n1", 0)]


# -- fleet file: groups and thresholds ---------------------------------------------------------


def _fleet(tmp_path, text: str) -> Any:
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    return parse_fleet(text, str(path))


FLEET = """
[fleet]
name = "t"
[thresholds]
thermal_minutes = 40
[[group]]
name = "a100"
expected_driver = "535.161.08"
expected_gpus = 2
[[node]]
name = "n1"
url = "http://127.0.0.1:9401"
group = "a100"
[[node]]
name = "n2"
url = "http://127.0.0.1:9402"
group = "a100"
[[node]]
name = "n3"
url = "http://127.0.0.1:9403"
group = "other"
"""


def test_fleet_file_sets_groups_expectations_and_thresholds(db, tmp_path):
    fleet = _fleet(tmp_path, FLEET)
    Feeder(db, drivers={"n1": "535.161.08"}).feed(T0, T0 + 3600, {("n2", 1): between(T0 + 1800, T0 + 3600, HOT)})
    history = assess.load_history(db, T0 + 3600, T0, fleet=fleet)
    assert {n.name: n.group for n in history.nodes} == {"n1": "a100", "n2": "a100", "n3": "other"}
    assert history.thresholds.thermal_minutes == 40
    findings = engine.evaluate(history)
    kinds = {(f.node, f.kind) for f in findings if f.is_open and f.severity != "info"}
    assert ("n2", "driver-mismatch") in kinds  # 550 where the group expects 535
    assert ("n1", "driver-mismatch") not in kinds
    assert ("n2", "thermal-throttle") not in kinds  # 30 hot minutes < 40
    without = engine.evaluate(assess.load_history(db, T0 + 3600, T0))
    assert ("n2", "thermal-throttle") in {(f.node, f.kind) for f in without}


def test_invalid_threshold_override_is_a_clear_error(db, tmp_path):
    fleet = _fleet(tmp_path, FLEET.replace("thermal_minutes = 40", "thermal_minuets = 40"))
    with pytest.raises(KnownError, match="thermal_minuets.*did you mean thermal_minutes"):
        assess.load_history(db, T0, T0 - 3600, fleet=fleet)


# -- outages ------------------------------------------------------------------------------------


def test_outages_come_from_the_reachability_events(db):
    feeder = Feeder(db)
    feeder.feed(T0, T0 + 1800)
    for k in range(1, 13):  # n3 down for an hour, polled every 5 minutes
        feeder.feed(T0 + 1800 + 300 * (k - 1), T0 + 1800 + 300 * k, down=["n3"])
    history = assess.load_history(db, T0 + 5400, T0)
    n3 = history.node("n3")
    assert n3 is not None and len(n3.outages) == 1 and n3.outages[0].end is None
    assert n3.outages[0].start == T0 + 2100
    findings = [f for f in engine.evaluate(history) if f.kind == "node-unreachable"]
    assert [(f.node, f.is_open, f.evidence["minutes"]) for f in findings] == [("n3", True, 55)]


# -- reports ------------------------------------------------------------------------------------


def test_report_says_what_changed_since_the_previous_report(db):
    feeder = Feeder(db)
    feeder.feed(T0, T0 + 3600, {("n2", 1): between(T0 + 1800, T0 + 3600, HOT)})
    first = assess.run_report(db, T0 + 3600, 86400, None).result
    assert not first.previous and first.verdicts == {"n1": "pass", "n2": "warn", "n3": "pass"}
    assert [f.kind for f in first.new if f.severity != "info"] == ["thermal-throttle"]

    # n2 cools down; n3 gets new uncorrectable ECC errors.
    ecc = lambda ts: {"ecc_unc_vol": 2, "ecc_unc_agg": 2} if ts >= T0 + 6000 else {}  # noqa: E731
    feeder.feed(T0 + 3600, T0 + 7200, {("n3", 0): ecc})
    second = assess.run_report(db, T0 + 7200, 86400, None).result
    assert second.previous
    # An hour cool is not yet the quiet period (quiet_hours): the throttle stays open, with why.
    assert not [f.kind for f in second.resolved if f.severity != "info"]
    (thermal,) = [f for f in second.findings if f.kind == "thermal-throttle"]
    assert thermal.is_open and "h of data since" in thermal.evidence["lifecycle"]["open_because"]
    assert [(f.kind, f.node) for f in second.new if f.severity == "critical"] == [("ecc-uncorrectable", "n3")]
    assert second.verdicts["n3"] == "fail" and second.critical

    third = assess.run_report(db, T0 + 7300, 86400, None).result
    assert third.previous and not [f for f in third.new if f.severity != "info"] and not third.resolved
    assert len(query(db, "SELECT * FROM reports WHERE kind = 'report'")) == 3


def test_group_report_compares_with_the_previous_report_of_that_group(db, tmp_path):
    fleet = _fleet(tmp_path, FLEET)
    feeder = Feeder(db)
    feeder.feed(T0, T0 + 3600)
    assess.run_report(db, T0 + 3600, 86400, None, fleet)
    first = assess.run_report(db, T0 + 3600, 86400, "a100", fleet).result
    assert not first.previous and set(first.verdicts) == {"n1", "n2"}
    assert assess.run_report(db, T0 + 3700, 86400, "a100", fleet).result.previous
    with pytest.raises(KnownError, match="unknown group 'gpu'; known groups: a100, other"):
        assess.run_report(db, T0 + 3700, 86400, "gpu", fleet)


@pytest.mark.parametrize("text,seconds", [("24h", 86400), ("7d", 604800), ("90m", 5400), ("3600s", 3600),
                                          ("3600", 3600), ("2w", 1209600), (" 1.5h ", 5400)])
def test_durations(text, seconds):
    assert assess.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "h", "24x", "-1h", "0", "1y", "20000d"])
def test_bad_durations(text):
    with pytest.raises(KnownError, match="--since"):
        assess.parse_duration(text)


# -- preflight ----------------------------------------------------------------------------------


def test_preflight_from_the_database_with_a_hostlist(db):
    feeder = Feeder(db, nodes=["gpu01", "gpu02", "gpu03", "gpu07", "gpu08"])
    feeder.feed(T0, T0 + 3 * 3600, {("gpu03", 1): between(T0 + 9000, T0 + 3 * 3600, HOT)})
    # The collector saw gpu08 lose a GPU yesterday; it is resolved since.
    lost = NewFinding(key="gpu-lost|gpu:GPU-gpu08-00|", kind="gpu-lost", severity="critical", node="gpu08",
                      gpu_uuid=uuid_of("gpu08", 0), evidence={"summary": "gpu08 gpu0: GPU lost (fell off the bus)"},
                      action="Drain and reboot")
    stored.save_findings(db, [lost], T0 + 600)
    stored.save_findings(db, [], T0 + 1200)
    # A warning the collector left open still blocks: three hours of data are not its quiet period.
    fan = NewFinding(key="fan-stopped|gpu:GPU-gpu07-00|", kind="fan-stopped", severity="warning", node="gpu07",
                     gpu_uuid=uuid_of("gpu07", 0), evidence={"summary": "gpu07 gpu0: fan stopped"})
    stored.save_findings(db, [fan], T0 + 1300)
    run = assess.run_preflight(db, T0 + 3 * 3600, "gpu[01-03,07-08],gpu09", 14, None)
    result = run.result
    assert result.go == ["gpu01", "gpu02"]
    assert result.no_go == ["gpu03", "gpu07", "gpu08", "gpu09"]
    assert result.exclude == "gpu[03,07-09]"
    reasons = {n.name: n.reasons for n in result.nodes}
    assert any("thermal-throttle" in r for r in reasons["gpu03"])
    assert reasons["gpu08"] == ("gpu08 gpu0: GPU lost (fell off the bus) [gpu-lost, resolved]",)
    assert reasons["gpu09"] == ("no data: the node is not in the database",)
    fan_finding = next(f for f in result.findings if f.kind == "fan-stopped")
    assert fan_finding.state == "open" and fan_finding.summary.startswith("gpu07 gpu0: fan stopped")
    assert any("fan-stopped" in r for r in reasons["gpu07"])
    gpu01 = next(n for n in result.nodes if n.name == "gpu01")
    assert gpu01.ecc["cards_with_ecc"] == 2 and gpu01.power["mean_w"] == pytest.approx(320.5, abs=15)


def test_preflight_rejects_bad_input(db):
    with pytest.raises(KnownError, match="--nodes"):
        assess.run_preflight(db, T0, "gpu[3-1]", 14, None)
    with pytest.raises(KnownError, match="names no node"):
        assess.run_preflight(db, T0, " ", 14, None)
    with pytest.raises(KnownError, match="--days"):
        assess.run_preflight(db, T0, "gpu1", 0, None)


def test_a_node_that_never_answered_is_unreachable_since_its_first_attempt(db):
    feeder = Feeder(db, nodes=["n1", "n4"])
    for k in range(4):
        feeder.feed(T0 + 300 * k, T0 + 300 * (k + 1), down=["n4"])
    early = engine.evaluate(assess.load_history(db, T0 + 400, T0))
    assert [f for f in early if f.kind == "node-unreachable"] == []  # 100 s: too short to judge
    history = assess.load_history(db, T0 + 1200, T0)
    n4 = history.node("n4")
    assert n4 is not None and n4.last_ok is None and [(o.start, o.end, o.failed) for o in n4.outages] == [
        (T0 + 300, None, 4)]
    found = [f for f in engine.evaluate(history) if f.kind == "node-unreachable"]
    assert [(f.node, f.is_open, f.evidence["minutes"]) for f in found] == [("n4", True, 15)]


# -- the collector's maintenance ---------------------------------------------------------------


def _collector_fleet(tmp_path, url: str) -> Any:
    from fleetmon.fleet import load_fleet

    # The group expects another driver: a finding the evaluation must store.
    (tmp_path / "fleet.toml").write_text(f'[fleet]\ntimeout_s = 2\nraw_retention_days = 7\n'
                                         f'[[group]]\nname = "g"\nexpected_driver = "999.99.99"\n'
                                         f'[[node]]\nname = "sim1"\nurl = "{url}"\ngroup = "g"\n', encoding="utf-8")
    return load_fleet(tmp_path / "fleet.toml")


@pytest.fixture
def sim_node():
    from fleetmon.sim.fleet import make_node

    node = make_node("sim1", gpus=2, sample=False)
    node.backfill(90)
    node.serve(0.1)
    yield node
    node.close()


def test_collect_once_rolls_up_and_stores_findings_after_catching_up(tmp_path, sim_node, db, monkeypatch):
    from fleetmon.collector.poller import Collector

    collector = Collector(_collector_fleet(tmp_path, sim_node.url), db, record_budget=60)
    assert collector.raw_days == 7
    evaluations: list[int] = []
    real = assess.evaluate_and_store

    def counting(*args: Any, **kwargs: Any) -> dict[str, Any]:
        evaluations.append(query(db, "SELECT count(*) AS n FROM samples")[0]["n"])
        return real(*args, **kwargs)

    monkeypatch.setattr(assess, "evaluate_and_store", counting)
    collector.collect_once()
    assert evaluations == [180]  # once, after the whole backlog (3 cycles of 60 records)
    assert query(db, "SELECT count(*) AS n FROM hourly")[0]["n"] >= 2
    assert query(db, "SELECT count(*) AS n FROM hourly_health")[0]["n"] >= 2
    assert collector.last_health is not None and collector.last_health["open"] >= 1
    assert {f.kind for f in stored.open_findings(db)} >= {"driver-mismatch"}


def test_health_runs_at_most_every_period_and_backs_off_when_slow(tmp_path, sim_node, db, monkeypatch):
    import time as _time

    from fleetmon.collector.poller import HEALTH_BACKOFF, Collector

    calls: list[float] = []

    def slow(*args: Any, **kwargs: Any) -> dict[str, Any]:
        calls.append(_time.monotonic())
        _time.sleep(0.05)
        return {"open": 0, "new": [], "resolved": []}

    monkeypatch.setattr(assess, "evaluate_and_store", slow)
    collector = Collector(_collector_fleet(tmp_path, sim_node.url), db, health_every_s=0.01)
    _time.sleep(0.02)
    collector.run_cycle()
    assert len(calls) == 1
    assert collector.health_due - _time.monotonic() >= HEALTH_BACKOFF * 0.05 - 0.1  # ten times 50 ms
    collector.run_cycle()
    assert len(calls) == 1  # not yet due
    collector.health_due = 0
    collector.run_cycle()
    assert len(calls) == 2


def test_failing_maintenance_never_stops_polling(tmp_path, sim_node, db, monkeypatch, caplog):
    import storage.rollup
    from fleetmon.collector.poller import Collector

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(assess, "evaluate_and_store", broken)
    monkeypatch.setattr(storage.rollup, "maintain", broken)
    collector = Collector(_collector_fleet(tmp_path, sim_node.url), db)
    polls = collector.collect_once()
    assert [p.ok for p in polls] == [True]
    assert query(db, "SELECT count(*) AS n FROM samples")[0]["n"] == 180
    assert "rollup/retention failed" in caplog.text and "health evaluation failed" in caplog.text
    assert collector.run_cycle()[0].ok


def test_hours_not_rolled_up_yet_are_read_per_minute(db):
    feeder = Feeder(db, nodes=["n1"], gpus=1)
    feeder.feed(T0, T0 + 3600)
    # Two more hours arrive, but no rollup has run since (the collector was stopped before maintain).
    polls = [poll("n1", T0 + 3 * 3600, gpus=1, minutes=[minute("n1", 0, ts, seq=1000 + k) for k, ts in
                                                         enumerate(range(T0 + 3600, T0 + 3 * 3600, 60))])]
    ingest_polls(db, polls)
    (gpu,) = assess.load_history(db, T0 + 3 * 3600, T0, minutes_s=0).gpus
    assert len(gpu.hourly) == 1 and gpu.minutes.ts[0] == T0 + 3600 and len(gpu.minutes) == 120
    rollup(db, T0 + 3 * 3600)
    (gpu,) = assess.load_history(db, T0 + 3 * 3600, T0, minutes_s=0).gpus
    assert len(gpu.hourly) == 3 and len(gpu.minutes) == 0
