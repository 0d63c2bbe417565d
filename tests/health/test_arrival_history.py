"""arrival-history: a card that arrives with a past (lifetime ECC, retired pages, remaps) at first sight."""

from __future__ import annotations

from typing import Any

import pytest

from fleetmon.health import engine, rules
from fleetmon.health.findings import finding_key
from fleetmon.health.fleet import FleetHistory
from fleetmon.health.hourly import rollup_hourly
from fleetmon.health.series import Series
from fleetmon.health.thresholds import Thresholds

from tests.health.test_health_rules import BUSY, INV, NOW, card, fleet, minutes

ARRIVED = NOW - 3600  # first sight: an hour ago, inside the day under review


def arrived(n: int = 60, first_seen: float = ARRIVED, **cols: Any) -> Any:
    return card(minutes(n, **cols), first_seen=first_seen)


def judge(*gpus: Any, **kw: Any) -> list[Any]:
    return rules.check_arrival_history(fleet(*gpus, **kw), None)


def test_lifetime_uncorrectable_ecc_at_first_sight_is_a_warning() -> None:
    [f] = judge(arrived(ecc_unc_agg=2))
    assert (f.kind, f.severity, f.state) == ("arrival-history", "warning", "open")
    assert f.summary == "n1 gpu0: arrived with 2 lifetime uncorrectable ECC errors"
    assert f.key == finding_key("arrival-history", "n1", "GPU-a") == "arrival-history|gpu:GPU-a|"
    first_row = NOW - 60 * 60
    assert f.first_seen == f.last_seen == f.evidence["first_sight"] == min(ARRIVED, first_row)
    assert f.evidence["ecc_unc_agg"] == 2 and f.evidence["ecc_corr_agg"] == 3
    assert "seller" in f.action and "burn-in" in f.action


def test_everything_that_applies_is_listed() -> None:
    [f] = judge(arrived(ecc_unc_agg=2, retired_sbe=10, retired_dbe=5, retired_pending=1, remap_corr=3,
                        remap_unc=1))
    assert f.summary == ("n1 gpu0: arrived with 2 lifetime uncorrectable ECC errors, 15 retired pages, "
                         "a page retirement pending, 4 remapped rows")
    assert f.severity == "warning"
    ev = f.evidence
    assert (ev["retired_sbe"], ev["retired_dbe"], ev["retired_pending"]) == (10, 5, True)
    assert (ev["remap_correctable_rows"], ev["remap_uncorrectable_rows"], ev["remap_failure"]) == (3, 1, False)


CRITICAL_CASES = [
    ("5 lifetime uncorrectable errors", {"ecc_unc_agg": 5}),
    ("16 retired pages", {"retired_sbe": 10, "retired_dbe": 6}),
    ("8 uncorrectable remapped rows", {"remap_unc": 8}),
    ("a remap failure", {"remap_failure": 1}),
]


@pytest.mark.parametrize("name,cols", CRITICAL_CASES, ids=[c[0] for c in CRITICAL_CASES])
def test_critical_history(name: str, cols: dict[str, Any]) -> None:
    [f] = judge(arrived(**cols))
    assert f.severity == "critical" and "return it" in f.action


def test_thresholds_decide() -> None:
    t = Thresholds.from_overrides({"arrival_unc_ecc_critical": 2, "arrival_retired_pages_warning": 20,
                                  "arrival_retired_pages_critical": 30})
    h = fleet(arrived(ecc_unc_agg=2), card(minutes(60, retired_sbe=15), uuid="GPU-b", index=1,
                                           first_seen=ARRIVED), thresholds=t)
    [f] = rules.check_arrival_history(h, None)
    assert (f.gpu_uuid, f.severity) == ("GPU-a", "critical")
    with pytest.raises(ValueError, match="arrival_retired_pages_warning"):
        Thresholds.from_overrides({"arrival_retired_pages_warning": 30, "arrival_retired_pages_critical": 20})


def test_a_clean_card_and_unsupported_readings_have_no_history() -> None:
    unsupported = {k: None for k in ("ecc_unc_agg", "ecc_corr_agg", "retired_sbe", "retired_dbe",
                                     "retired_pending", "remap_corr", "remap_unc", "remap_failure")}
    assert judge(arrived(), card(minutes(60, **unsupported), uuid="GPU-b", index=1, first_seen=ARRIVED,
                                 status={k: "unsupported" for k in unsupported})) == []


def test_a_card_seen_before_the_window_has_no_arrival() -> None:
    # Its first row in the window is only the window's start: the errors are old news, judged elsewhere.
    assert judge(card(minutes(60, ecc_unc_agg=2, remap_failure=1), first_seen=NOW - 30 * 86400)) == []
    assert judge(card(minutes(60, ecc_unc_agg=2), first_seen=None)) == []


def test_errors_that_come_after_arrival_are_not_arrival_history() -> None:
    # Clean at first sight; a DBE an hour later is ecc-uncorrectable's, not an arrival's.
    rows = minutes(120, ecc_unc_agg=lambda i: 0 if i < 60 else 1)
    assert judge(card(rows, first_seen=NOW - 7200)) == []


def test_a_reading_missing_from_the_first_row_comes_from_the_next_minutes() -> None:
    [f] = judge(arrived(ecc_unc_agg=lambda i: None if i < 2 else 2))
    assert f.evidence["ecc_unc_agg"] == 2
    # ... but not from an hour later.
    assert judge(arrived(ecc_unc_agg=lambda i: None if i < 30 else 2)) == []


def test_remaps_ignored_with_ecc_off() -> None:
    g = card(minutes(60, remap_corr=5, remap_failure=1), first_seen=ARRIVED, inventory={"ecc_mode_current": 0})
    assert judge(g) == []


def test_hourly_first_row_counts_the_value_at_the_start_of_the_hour() -> None:
    # Arrived with 3 lifetime DBEs, 2 more within the first hour: history is 3, not 5.
    rows = minutes(180, end=NOW - 3600, ecc_unc_agg=lambda i: 3 if i < 30 else 5)
    hourly = rollup_hourly(Series.from_rows(rows))
    h = FleetHistory.from_rows(
        NOW, NOW - 86400, nodes=[{"name": "n1", "last_ok": NOW - 10}],
        gpus=[{"uuid": "GPU-a", "node": "n1", "index": 0, "inventory": INV, "first_seen": NOW - 4 * 3600}],
        hourly={"GPU-a": hourly})
    [f] = rules.check_arrival_history(h, None)
    assert f.evidence["ecc_unc_agg"] == 3 and f.summary.endswith("arrived with 3 lifetime uncorrectable ECC errors")


def test_buffered_minutes_before_the_first_poll_date_the_arrival() -> None:
    # The agent buffered minutes before the collector's first poll enrolled the card.
    [f] = judge(card(minutes(30, retired_dbe=2), first_seen=NOW - 10 * 60))
    assert f.first_seen == NOW - 30 * 60 and f.summary.endswith("arrived with 2 retired pages")


def test_engine_reports_it_from_rows() -> None:
    h = FleetHistory.from_rows(
        NOW, NOW - 86400, nodes=[{"name": "n1", "grp": "g", "last_ok": NOW - 10, "last_attempt": NOW - 10}],
        gpus=[{"uuid": "GPU-a", "node": "n1", "index": 0, "name": "NVIDIA A100-SXM4-80GB", "inventory": INV,
               "first_seen": ARRIVED}],
        minutes={"GPU-a": minutes(60, ecc_unc_agg=2)})
    found = [f for f in engine.evaluate(h) if f.kind == "arrival-history"]
    assert [(f.severity, f.node, f.gpu_index) for f in found] == [("warning", "n1", 0)]
    assert BUSY["ecc_unc_agg"] == 0  # the shared minute rows are clean by default
