"""fleetmon.health.lifecycle: each class of finding kind, judged against a ledger, resolutions and data coverage."""

from __future__ import annotations

from typing import Any

import pytest

from fleetmon.health.findings import KINDS, Finding
from fleetmon.health.lifecycle import (LIFE_CLASSES, LIFECYCLE, Coverage, LedgerEntry, Resolution, judge,
                                       recurrence_text)
from fleetmon.health.thresholds import Thresholds

NOW = 1_750_000_000.0 // 86400 * 86400 + 8 * 3600  # 08:00 UTC
H = 3600.0


def f(kind: str = "thermal-throttle", severity: str = "warning", first: float = NOW - 20 * H,
      last: float = NOW - 16 * H, state: str = "open", **evidence: Any) -> Finding:
    return Finding(kind, severity, "n1", "GPU-1", first, last, dict(evidence), "act", f"n1 gpu0: {kind}",
                   state=state, gpu_index=0)


def cov(hours: float = 0.0, busy: float = 0.0, newest: float | None = None) -> Any:
    return lambda finding, after: Coverage(hours, busy, newest)


def one(fresh: list[Finding], ledger: dict[str, LedgerEntry] | None = None,
        res: dict[str, Resolution] | None = None, coverage: Any = None, now: float = NOW,
        t: Thresholds | None = None) -> Finding:
    (got,) = judge(fresh, ledger or {}, res or {}, coverage or cov(), now, t)
    return got


def test_every_kind_has_a_lifecycle_of_a_known_class() -> None:
    assert set(LIFECYCLE) == set(KINDS)
    assert {v.cls for v in LIFECYCLE.values()} <= set(LIFE_CLASSES)


# -- recurring -------------------------------------------------------------------------------------------


def test_a_recurring_condition_stays_open_without_data_and_resolves_after_a_quiet_period_with_data() -> None:
    assert one([f()]).is_open  # no data since: missing data is not health
    assert one([f()], coverage=cov(hours=40, busy=0)).is_open  # data, but idle: a throttle needs load
    got = one([f()], coverage=cov(hours=40, busy=300, newest=NOW))
    assert not got.is_open and got.evidence["lifecycle"]["resolved"]["by"] == "data"
    # Less than the quiet period's share of data hours: still open, and says why.
    got = one([f()], coverage=cov(hours=20, busy=300))
    assert got.is_open and got.evidence["lifecycle"]["open_because"] == "20 of 36 h of data since"


def test_a_recurring_condition_carries_its_recurrence_from_the_ledger() -> None:
    days = [f"2025-06-{d:02d}" for d in range(8, 15)]  # the seven days before NOW (2025-06-15)
    stored = f(first=NOW - 7 * 24 * H, last=NOW - 2 * 24 * H, lifecycle={"days": days[1:6]})  # Jun 9-13
    got = one([f()], {stored.key: LedgerEntry(stored)})
    assert got.is_open and got.first_seen == NOW - 7 * 24 * H  # the true onset, before the window
    assert got.evidence["lifecycle"]["recurrence"] == "6 of the last 7 days, last at Jun 14 16:00 UTC"
    assert got.summary.endswith("(6 of the last 7 days, last at Jun 14 16:00 UTC)")


def test_recurrence_text() -> None:
    assert recurrence_text(["2025-06-15", "2025-06-14"], NOW - 60, NOW) == "2 of the last 7 days, last at 07:59 UTC"


# -- events ----------------------------------------------------------------------------------------------


def test_a_critical_point_event_waits_for_an_operator_however_clean_the_card_has_been() -> None:
    xid = f("xid", "critical", NOW - 9 * 24 * H, NOW - 9 * 24 * H, state="resolved")
    got = one([xid], coverage=cov(hours=200, busy=5000, newest=NOW))
    assert got.is_open and got.evidence["lifecycle"]["open_because"] == "waits for an operator's resolution"


def test_a_non_critical_xid_resolves_after_its_clean_period_with_data_and_load() -> None:
    xid = f("xid", "warning", NOW - 9 * 24 * H, NOW - 9 * 24 * H)
    assert one([xid], coverage=cov(hours=200, busy=0)).is_open
    assert not one([xid], coverage=cov(hours=200, busy=5000)).is_open
    assert one([xid], coverage=cov(hours=100, busy=5000)).is_open  # 168 h × 0.75 = 126 h of data needed


def test_an_operators_resolution_closes_the_episode_and_new_evidence_reopens_it_as_a_recurrence() -> None:
    xid = f("xid", "critical", NOW - 30 * H, NOW - 30 * H)
    res = Resolution(1, xid.key, NOW - 20 * H, "reseated", "riser swapped", "alice")
    got = one([xid], res={xid.key: res})
    assert not got.is_open and got.evidence["lifecycle"]["resolved"]["resolution"]["by"] == "alice"
    again = f("xid", "critical", NOW - 30 * H, NOW - 2 * H)  # the window holds both bursts
    got = one([again], res={xid.key: res})
    assert got.is_open and got.first_seen == NOW - 20 * H
    assert got.evidence["lifecycle"]["recurs_after"]["reason"] == "reseated"
    assert "[back after it was resolved: card reseated]" in got.summary
    # Judged before the resolution was made (a report --now in the past): still open then.
    assert one([xid], res={}, now=NOW - 25 * H).is_open


def test_a_ledger_entry_older_than_the_window_is_kept() -> None:
    xid = f("gpu-lost", "critical", NOW - 6 * 24 * H, NOW - 6 * 24 * H)
    got = one([], {xid.key: LedgerEntry(xid)}, coverage=cov(hours=140, busy=9000, newest=NOW))
    assert got.is_open and got.first_seen == xid.first_seen


def test_an_entry_stored_after_the_moment_judged_is_ignored() -> None:
    later = f(first=NOW + H, last=NOW + 2 * H)
    assert judge([], {later.key: LedgerEntry(later)}, {}, cov(), NOW) == []


# -- states ----------------------------------------------------------------------------------------------


def test_a_state_resolves_only_on_newer_data() -> None:
    pending = f("row-remap", "warning", NOW - 3 * H, NOW - 2 * H)
    entry = {pending.key: LedgerEntry(pending)}
    assert one([], entry).is_open  # no data since
    assert one([], entry, coverage=cov(hours=2, newest=NOW - 60)).state == "resolved"
    assert one([], entry, coverage=cov(hours=2, newest=NOW - 5 * H)).is_open  # data, but older than its evidence


@pytest.mark.parametrize("severity", ["warning", "critical"])
def test_the_worst_of_an_open_episode_stays_until_it_resolves(severity: str) -> None:
    hot = f("temperature-high", "critical", NOW - 10 * H, NOW - 9 * H)
    now_warm = f("temperature-high", severity, NOW - 2 * H, NOW - 60)
    got = one([now_warm], {hot.key: LedgerEntry(hot)})
    assert got.severity == "critical" and got.first_seen == NOW - 10 * H


def test_judging_again_does_not_repeat_what_the_lifecycle_added_to_the_summary() -> None:
    days = ["2025-06-13", "2025-06-14"]
    stored = f(first=NOW - 50 * H, last=NOW - 30 * H, lifecycle={"days": days})
    once = one([f()], {stored.key: LedgerEntry(stored)})
    twice = one([f()], {once.key: LedgerEntry(once)})
    thrice = one([], {twice.key: LedgerEntry(twice)})
    assert once.summary == twice.summary == thrice.summary == "n1 gpu0: thermal-throttle (2 of the last 7 days, last at Jun 14 16:00 UTC)"
