"""Table-driven tests of the health rules, the input model and the engine helpers.

Each rule gets positive, negative and boundary rows; unsupported readings and
idle PCIe links must never alarm. Histories are built by hand from minute-row
dicts, the way the storage layer hands them over.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from fleetmon.health import engine, rules
from fleetmon.health.findings import KINDS, Finding, finding_key
from fleetmon.health.fleet import (
    EventRecord,
    FleetHistory,
    GpuHistory,
    GroupExpect,
    InventoryChange,
    NodeHistory,
    Outage,
    Placement,
    Poll,
    outages_from_polls,
)
from fleetmon.health.hourly import rollup_hourly
from fleetmon.health.rules import derating
from fleetmon.health.series import Series
from fleetmon.health.thresholds import Thresholds, describe

NOW = 1_750_000_000 // 3600 * 3600  # an hour boundary
A100 = "NVIDIA A100-SXM4-80GB"

BUSY: dict[str, Any] = {
    "n": 12, "busy_n": 12, "util_gpu_pct_min": 92, "util_gpu_pct_mean": 96, "util_gpu_pct_max": 100,
    "power_w_min": 330.0, "power_w_mean": 350.0, "power_w_max": 365.0, "power_limit_w_mean": 400.0,
    "sm_clock_mhz_mean": 1395, "temp_c_min": 60.0, "temp_c_mean": 62.0, "temp_c_max": 63.0,
    "fan_pct_max": None, "thr_gpu_idle": 0, "thr_sw_power_cap": 0, "thr_hw_slowdown": 0,
    "thr_hw_thermal": 0, "thr_sw_thermal": 0, "thr_hw_power_brake": 0, "pcie_gen": 4,
    "pcie_width": 16, "pcie_gen_busy_min": 4, "pcie_width_busy_min": 16, "ecc_corr_vol": 0,
    "ecc_unc_vol": 0, "ecc_corr_agg": 3, "ecc_unc_agg": 0, "remap_pending": 0, "remap_failure": 0,
    "remap_corr": 0, "remap_unc": 0, "pcie_replay": 2, "state": "ok", "status": {},
}
IDLE: dict[str, Any] = {
    **BUSY, "busy_n": 0, "util_gpu_pct_min": 0, "util_gpu_pct_mean": 0, "util_gpu_pct_max": 0,
    "power_w_min": 58.0, "power_w_mean": 60.0, "power_w_max": 62.0, "sm_clock_mhz_mean": 210,
    "temp_c_min": 31.0, "temp_c_mean": 32.0, "temp_c_max": 33.0, "thr_gpu_idle": 12, "pcie_gen": 1,
    "pcie_gen_busy_min": None, "pcie_width_busy_min": None,
}
INV: dict[str, Any] = {
    "pcie_max_gen": 4, "pcie_max_width": 16, "pcie_gpu_max_gen": 4, "pcie_gpu_max_width": 16,
    "power_default_w": 400.0, "power_enforced_w": 400.0, "temp_slowdown_c": 89, "temp_shutdown_c": 92,
    "ecc_mode_current": 1, "memory_total_mib": 81920, "vbios": "92.00.45.00.06",
}
UNSUPPORTED = "unsupported"


def minutes(n: int = 20, busy: bool | Callable[[int], bool] = True, end: int = NOW,
            **cols: Any) -> list[dict[str, Any]]:
    """``n`` minute rows ending at ``end``; a column value may be a scalar, list or f(i)."""
    rows = []
    for i in range(n):
        is_busy = busy(i) if callable(busy) else busy
        row = dict(BUSY if is_busy else IDLE)
        row["ts"] = end - (n - i) * 60
        for key, value in cols.items():
            row[key] = value(i) if callable(value) else value[i] if isinstance(value, list) else value
        rows.append(row)
    return rows


def card(rows: list[dict[str, Any]] | None = None, uuid: str = "GPU-a", node: str = "n1",
         index: int = 0, name: str = A100, inventory: dict[str, Any] | None = None,
         **kw: Any) -> GpuHistory:
    placements = kw.pop("placements", ())
    row = {"uuid": uuid, "node": node, "index": index, "name": name,
           "pci_bus_id": f"0000:{0x18 + index:02x}:00.0", "inventory": {**INV, **(inventory or {})},
           "first_seen": NOW - 30 * 86400, "last_seen": NOW - 30, **kw}
    return GpuHistory.from_row(row, minutes=rows if rows is not None else minutes(), placements=placements)


def node(name: str = "n1", **kw: Any) -> NodeHistory:
    base = {"name": name, "group": "g", "driver_version": "535.161.08", "cuda_driver_version": "12.2",
            "last_ok": NOW - 10, "last_attempt": NOW - 10}
    return NodeHistory(**{**base, **kw})


def fleet(*gpus: GpuHistory, nodes: tuple[NodeHistory, ...] | None = None, now: float = NOW,
          since: float | None = None, **kw: Any) -> FleetHistory:
    if nodes is None:
        names = sorted({g.node for g in gpus} or {"n1"})
        nodes = tuple(node(n) for n in names)
    return FleetHistory(now=now, since=since if since is not None else now - 86400, nodes=nodes,
                        gpus=tuple(gpus), thresholds=kw.pop("thresholds", Thresholds()), **kw)


def kinds(found: list[Finding]) -> list[tuple[str, str]]:
    return sorted((f.kind, f.severity) for f in found)


def step(at: int, before: Any, after: Any) -> Callable[[int], Any]:
    return lambda i: before if i < at else after


# ---------------------------------------------------------------------------
# ECC and memory repair

ECC_CASES = [
    ("new DBE", dict(ecc_unc_vol=step(10, 0, 1), ecc_unc_agg=step(10, 0, 1)), {}, [("ecc-uncorrectable", "critical")]),
    ("clean", {}, {}, []),
    ("unsupported", dict(ecc_unc_vol=None, ecc_unc_agg=None, status={"ecc_unc_vol": UNSUPPORTED}), {}, []),
    ("aggregate only, below threshold", dict(ecc_unc_vol=None, ecc_unc_agg=step(10, 0, 1)),
     {"ecc_uncorrected_critical": 2}, [("ecc-uncorrectable", "warning")]),
    ("aggregate only, at threshold", dict(ecc_unc_vol=None, ecc_unc_agg=step(10, 0, 2)),
     {"ecc_uncorrected_critical": 2}, [("ecc-uncorrectable", "critical")]),
    ("old errors, reset before the window", dict(ecc_unc_agg=5), {}, []),
]


@pytest.mark.parametrize("name,cols,over,expected", ECC_CASES, ids=[c[0] for c in ECC_CASES])
def test_check_ecc_uncorrectable(name: str, cols: dict, over: dict, expected: list) -> None:
    h = fleet(card(minutes(**cols)), thresholds=Thresholds.from_overrides(over))
    found = rules.check_ecc_uncorrectable(h, None)
    assert kinds(found) == expected
    if expected and "step" not in name:
        assert found[0].first_seen == NOW - 10 * 60  # row 10 of 20


def test_check_ecc_uncorrectable_stays_open_until_reset() -> None:
    h = fleet(card(minutes(60, ecc_unc_vol=step(0, 0, 1))), now=NOW + 5 * 3600)
    f = rules.check_ecc_uncorrectable(h, None)[0]
    assert f.is_open and f.last_seen == h.now


STORM_CASES = [
    ("20 per minute", 20, [("ecc-correctable-storm", "warning")]),
    ("exactly the threshold", 10, [("ecc-correctable-storm", "warning")]),
    ("below", 9, []),
    ("none", 0, []),
]


@pytest.mark.parametrize("name,per_min,expected", STORM_CASES, ids=[c[0] for c in STORM_CASES])
def test_check_ecc_correctable(name: str, per_min: int, expected: list) -> None:
    h = fleet(card(minutes(30, ecc_corr_vol=lambda i: per_min * i, ecc_corr_agg=lambda i: 3 + per_min * i)))
    assert kinds(rules.check_ecc_correctable(h, None)) == expected


def test_check_ecc_correctable_ignores_unsupported() -> None:
    h = fleet(card(minutes(30, ecc_corr_vol=None, ecc_corr_agg=None,
                           status={"ecc_corr_vol": UNSUPPORTED, "ecc_corr_agg": UNSUPPORTED})))
    assert rules.check_ecc_correctable(h, None) == []


def test_check_ecc_correctable_daily_trend_is_info() -> None:
    rows = []
    total = 10_000
    for day, per_day in enumerate((30, 50, 80)):
        end = NOW - (2 - day) * 86400
        rows += minutes(2, end=end, ecc_corr_agg=[total, total + per_day], ecc_corr_vol=None)
        total += per_day
    h = fleet(card(rows), since=NOW - 4 * 86400)
    found = rules.check_ecc_correctable(h, None)
    assert [(f.kind, f.severity, f.key.endswith("|trend")) for f in found] == [
        ("ecc-correctable-storm", "info", True)]


RETIRED_CASES = [
    ("near the limit", dict(retired_sbe=50, retired_dbe=8), [("retired-pages", "warning")]),
    ("at the DCGM limit", dict(retired_sbe=52, retired_dbe=8), [("retired-pages", "critical")]),
    ("below warning", dict(retired_sbe=40, retired_dbe=7), []),
    ("just at warning", dict(retired_sbe=40, retired_dbe=8), [("retired-pages", "warning")]),
    ("pending", dict(retired_sbe=1, retired_dbe=0, retired_pending=1), [("retired-pages", "warning")]),
    ("DBE soft limit with new pages", dict(retired_sbe=0, retired_dbe=step(5, 15, 17)),
     [("retired-pages", "critical")]),
    ("unsupported", dict(retired_sbe=None, retired_dbe=None, retired_pending=None), []),
]


@pytest.mark.parametrize("name,cols,expected", RETIRED_CASES, ids=[c[0] for c in RETIRED_CASES])
def test_check_retired_pages(name: str, cols: dict, expected: list) -> None:
    h = fleet(card(minutes(**cols), name="Tesla V100-SXM2-32GB"))
    assert kinds(rules.check_retired_pages(h, None)) == expected


REMAP_CASES = [
    ("pending", dict(remap_pending=step(5, 0, 1)), {}, [("row-remap", "warning")]),
    ("failure", dict(remap_failure=1, remap_unc=8), {}, [("row-remap", "critical")]),
    ("healthy", {}, {}, []),
    ("ECC off (RTX 4090 quirk)", dict(remap_pending=1), {"ecc_mode_current": 0}, []),
    ("unsupported", dict(remap_pending=None, remap_failure=None), {}, []),
]


@pytest.mark.parametrize("name,cols,inv,expected", REMAP_CASES, ids=[c[0] for c in REMAP_CASES])
def test_check_row_remap(name: str, cols: dict, inv: dict, expected: list) -> None:
    h = fleet(card(minutes(**cols), inventory=inv))
    found = rules.check_row_remap(h, None)
    assert kinds(found) == expected
    if name == "pending":
        assert found[0].first_seen == NOW - 15 * 60 and found[0].is_open


def test_check_row_remap_resolved_after_reset() -> None:
    h = fleet(card(minutes(120, remap_pending=lambda i: 1 if 10 <= i < 20 else 0)))
    [f] = rules.check_row_remap(h, None)
    assert f.state == "resolved"


# ---------------------------------------------------------------------------
# Xid


def xid(ts: float, code: int, uuid: str | None = "GPU-a", node_name: str = "n1",
        pci: str | None = None) -> EventRecord:
    return EventRecord(ts, node_name, "xid", uuid, pci, code, f"Xid {code}")


def reset(ts: float, node_name: str = "n1") -> EventRecord:
    return EventRecord(ts, node_name, "energy_reset")


def two_cards(*events: EventRecord, **kw: Any) -> FleetHistory:
    return fleet(card(), card(uuid="GPU-b", index=1), events=tuple(sorted(events, key=lambda e: e.ts)), **kw)


XID_CASES: list[tuple[str, tuple[EventRecord, ...], list[tuple[str, str, str]]]] = [
    ("DBE is critical", (xid(NOW - 600, 48),), [("GPU-a", "48", "critical")]),
    ("application Xid once is info", (xid(NOW - 600, 13),), [("GPU-a", "13", "info")]),
    ("application Xid in 3 bursts is a warning",
     (xid(NOW - 3600, 13), xid(NOW - 2400, 13), xid(NOW - 1200, 13)), [("GPU-a", "13", "warning")]),
    ("application Xid in 2 bursts stays info", (xid(NOW - 3600, 13), xid(NOW - 2400, 13)),
     [("GPU-a", "13", "info")]),
    ("burst gap boundary: 180 s is one burst", (xid(NOW - 600, 13), xid(NOW - 420, 13), xid(NOW - 240, 13)),
     [("GPU-a", "13", "info")]),
    ("burst gap boundary: 181 s splits", (xid(NOW - 600, 13), xid(NOW - 419, 13), xid(NOW - 238, 13)),
     [("GPU-a", "13", "warning")]),
    ("application Xid with a hardware Xid", (xid(NOW - 600, 13), xid(NOW - 590, 79)),
     [("GPU-a", "13", "warning"), ("GPU-a", "79", "critical")]),
    ("driver Xid recurring after 2 resets",
     (xid(NOW - 5000, 8), reset(NOW - 4000), xid(NOW - 3000, 8), reset(NOW - 2000), xid(NOW - 1000, 8)),
     [("GPU-a", "8", "critical")]),
    ("driver Xid after 1 reset", (xid(NOW - 5000, 8), reset(NOW - 4000), xid(NOW - 3000, 8)),
     [("GPU-a", "8", "warning")]),
    ("secondary attributed to the primary", (xid(NOW - 600, 48), xid(NOW - 590, 45)),
     [("GPU-a", "48", "critical")]),
    ("secondary alone", (xid(NOW - 600, 45),), [("GPU-a", "45", "info")]),
    ("Xid 79 on two GPUs: PSU", (xid(NOW - 600, 79), xid(NOW - 595, 79, "GPU-b")),
     [("-", "psu", "critical"), ("GPU-a", "79", "critical"), ("GPU-b", "79", "critical")]),
    ("mapped by PCI address", (xid(NOW - 600, 48, None, pci="0000:19:00"),), [("GPU-b", "48", "critical")]),
    ("unknown PCI address: node finding", (xid(NOW - 600, 48, None, pci="0000:99:00"),),
     [("-", "48:0000:99:00", "critical")]),
]


@pytest.mark.parametrize("name,events,expected", XID_CASES, ids=[c[0] for c in XID_CASES])
def test_check_xid(name: str, events: tuple[EventRecord, ...], expected: list) -> None:
    found = rules.check_xid(two_cards(*events), None)
    got = sorted((f.gpu_uuid or "-", f.key.split("|")[-1], f.severity) for f in found)
    assert got == expected


def test_check_xid_evidence() -> None:
    [f] = rules.check_xid(two_cards(xid(NOW - 600, 48), xid(NOW - 590, 45)), None)
    assert f.evidence["category"] == "memory" and f.evidence["attributed"] == {"45": 1}
    assert f.first_seen == NOW - 600 and f.is_open


def test_check_xid_resolves_after_a_day() -> None:
    [f] = rules.check_xid(two_cards(xid(NOW - 25 * 3600, 48), since=NOW - 2 * 86400), None)
    assert f.state == "resolved"


def test_check_xid_gsp_driver_regression() -> None:
    cards = [card(uuid=f"GPU-{i}", node=f"n{i}") for i in range(3)]
    events = tuple(xid(NOW - 600, 119, f"GPU-{i}", f"n{i}") for i in range(3))
    found = rules.check_xid(fleet(*cards, events=events), None)
    assert len(found) == 3 and all(f.evidence["driver_regression_suspected"] for f in found)
    found = rules.check_xid(fleet(*cards[:2], events=events[:2]), None)
    assert not any(f.evidence["driver_regression_suspected"] for f in found)


# ---------------------------------------------------------------------------
# Presence and reachability


def test_check_gpu_lost_is_immediate_and_critical() -> None:
    h = fleet(card(minutes(20, state=step(19, "ok", "lost")), state="lost"))
    [f] = rules.check_gpu_lost(h, None)
    assert (f.kind, f.severity, f.first_seen, f.is_open) == ("gpu-lost", "critical", NOW - 60, True)


def test_check_gpu_lost_from_the_storage_lost_column_and_back() -> None:
    h = fleet(card(minutes(120, state=None, lost=lambda i: 1 if 10 <= i < 15 else 0)),
              events=(EventRecord(NOW - 104 * 60, "n1", "gpu_back", "GPU-a"),))
    [f] = rules.check_gpu_lost(h, None)
    assert f.state == "resolved" and f.first_seen == NOW - 110 * 60


def test_check_gpu_lost_healthy() -> None:
    assert rules.check_gpu_lost(fleet(card()), None) == []


@pytest.mark.parametrize("last_seen,node_ok,expected", [
    (NOW - 3600, NOW - 10, [("gpu-missing", "critical")]),
    (NOW - 30, NOW - 10, []),
    (NOW - 3600, NOW - 3000, [("gpu-missing", "critical")]),  # missing when the node last answered: still missing
    (NOW - 3100, NOW - 3000, []),  # the node went silent with the card present: left to node-unreachable
    (NOW - 10 - 300, NOW - 10, [("gpu-missing", "critical")]),  # boundary: exactly 5 min
    (NOW - 10 - 299, NOW - 10, []),
])
def test_check_gpu_missing(last_seen: float, node_ok: float, expected: list) -> None:
    h = fleet(card(last_seen=last_seen), nodes=(node(last_ok=node_ok, gpu_count=1),))
    assert kinds(rules.check_gpu_missing(h, None)) == expected


def test_gpu_missing_stays_open_when_its_node_goes_silent() -> None:
    # The card was missing for an hour while the node answered; then the node stopped answering. Twelve hours
    # later (no ledger: a report on the database alone) the card is still missing, its evidence ending at the
    # node's last good poll, not the report's time. It was "absent" before: fail turned into stale by itself.
    node_ok = NOW - 12 * 3600
    h = fleet(card(last_seen=node_ok - 3600), nodes=(node(last_ok=node_ok, gpu_count=1),))
    [f] = rules.check_gpu_missing(h, None)
    assert (f.kind, f.severity, f.state) == ("gpu-missing", "critical", "open")
    assert (f.first_seen, f.last_seen) == (node_ok - 3600, node_ok)
    groups = {"g": GroupExpect("g", expected_gpus=8)}
    [f] = rules.check_gpu_missing(fleet(card(), nodes=(node(last_ok=node_ok, gpu_count=7),), groups=groups), None)
    assert (f.evidence["reported"], f.state, f.last_seen) == (7, "open", node_ok)


def test_check_gpu_missing_against_expected_count() -> None:
    groups = {"g": GroupExpect("g", expected_gpus=8)}
    h = fleet(card(), nodes=(node(gpu_count=7),), groups=groups)
    [f] = rules.check_gpu_missing(h, None)
    assert f.gpu_uuid is None and f.evidence == {"expected": 8, "reported": 7, "named": 0}
    assert rules.check_gpu_missing(fleet(card(), nodes=(node(gpu_count=8),), groups=groups), None) == []


def test_check_gpu_missing_not_for_a_moved_card() -> None:
    moved = card(node="n2", placements=[Placement(NOW - 86400, "n1", "0000:18:00.0", 0),
                                        Placement(NOW - 3600, "n2", "0000:18:00.0", 0)])
    h = fleet(moved, nodes=(node("n1"), node("n2")))
    assert rules.check_gpu_missing(h, None) == []


@pytest.mark.parametrize("outages,expected,state", [
    ((Outage(NOW - 360, None, "timed out", 12),), [("node-unreachable", "critical")], "open"),
    ((Outage(NOW - 300, None, "timed out", 10),), [("node-unreachable", "critical")], "open"),  # boundary
    ((Outage(NOW - 299, None, "timed out", 10),), [], None),
    ((Outage(NOW - 7200, NOW - 6000, "refused", 40),), [("node-unreachable", "critical")], "resolved"),
    ((Outage(NOW - 7200, NOW - 7100, "refused", 3),), [], None),
])
def test_check_node_unreachable(outages: tuple, expected: list, state: str | None) -> None:
    last_ok = outages[-1].start - 30 if outages[-1].end is None else NOW - 10
    h = fleet(nodes=(node(outages=outages, last_ok=last_ok),))
    found = rules.check_node_unreachable(h, None)
    assert kinds(found) == expected
    if state:
        assert found[0].state == state


def test_check_node_unreachable_from_polls() -> None:
    polls = [Poll(NOW - 900 + 30 * i, i < 10, None if i < 10 else "timed out") for i in range(30)]
    n = NodeHistory.from_row({"name": "n1", "grp": "g"}, polls)
    assert n.outages == (Outage(NOW - 600, None, "timed out", 20),)
    [f] = rules.check_node_unreachable(fleet(nodes=(n,)), None)
    assert f.first_seen == NOW - 600 and f.evidence["failed_polls"] == 20


def _flaps(count: int, length: float = 180, gap: float = 1200) -> tuple[Outage, ...]:
    return tuple(Outage(NOW - 1000 - k * gap - length, NOW - 1000 - k * gap, "refused", 6)
                 for k in range(count))[::-1]


@pytest.mark.parametrize("outages,expected", [
    (_flaps(3), [("node-flapping", "warning")]),
    (_flaps(2), []),
    (_flaps(5, length=30), []),  # blips under a minute do not count
    (_flaps(3, gap=4 * 3600), []),  # spread over 8 h: outside the 6 h window
])
def test_check_node_flapping(outages: tuple, expected: list) -> None:
    assert kinds(rules.check_node_flapping(fleet(nodes=(node(outages=outages),)), None)) == expected


def test_outages_from_polls_accepts_dicts_and_tuples() -> None:
    polls = [{"ts": 1, "ok": True}, (2, False, "x"), (3, False), {"ts": 4, "ok": True}, (5, False, "y")]
    assert outages_from_polls(polls) == (Outage(2, 4, "x", 2), Outage(5, None, "y", 1))


# ---------------------------------------------------------------------------
# Versions and inventory


@pytest.mark.parametrize("drivers,expected_driver,expected", [
    (("535", "535", "550"), None, [("n3", "driver", "warning")]),
    (("535", "550"), None, [("n1", "driver", "info"), ("n2", "driver", "info")]),  # tie
    (("535", "535", "535"), "550", [("n1", "driver", "warning"), ("n2", "driver", "warning"),
                                    ("n3", "driver", "warning")]),
    (("550", "550"), "550", []),
    (("535",), None, []),
])
def test_check_driver_versions(drivers: tuple, expected_driver: str | None, expected: list) -> None:
    nodes = tuple(node(f"n{i + 1}", driver_version=d) for i, d in enumerate(drivers))
    groups = {"g": GroupExpect("g", expected_driver=expected_driver)}
    found = rules.check_driver_versions(fleet(nodes=nodes, groups=groups), None)
    assert sorted((f.node, f.evidence["field"], f.severity) for f in found) == expected


def test_check_driver_versions_cuda() -> None:
    nodes = (node("n1"), node("n2"), node("n3", cuda_driver_version="12.4"))
    [f] = rules.check_driver_versions(fleet(nodes=nodes), None)
    assert (f.node, f.evidence["field"], f.evidence["expected"]) == ("n3", "cuda", "12.2")


def test_check_vbios_majority_per_model() -> None:
    cards = [card(uuid=f"GPU-{i}", index=i) for i in range(3)]
    cards.append(card(uuid="GPU-odd", index=3, inventory={"vbios": "92.00.45.00.FF"}))
    cards.append(card(uuid="GPU-t4", index=4, name="Tesla T4", inventory={"vbios": "90.04"}))
    [f] = rules.check_vbios(fleet(*cards), None)
    assert (f.gpu_uuid, f.severity, f.evidence["expected"]) == ("GPU-odd", "warning", "92.00.45.00.06")


def test_check_inventory_changes() -> None:
    moved = card(placements=[Placement(NOW - 86400 * 3, "n2", "0000:18:00.0", 0),
                             Placement(NOW - 3600, "n1", "0000:18:00.0", 0)])
    new = card(uuid="GPU-new", index=1, first_seen=NOW - 1800)
    change = InventoryChange(NOW - 600, "n1", "driver_changed", None, "535", "550")
    found = rules.check_inventory_changes(fleet(moved, new, inventory_changes=(change,)), None)
    got = sorted((f.evidence["change"], f.severity, f.gpu_uuid or "-") for f in found)
    assert got == [("driver_changed", "info", "-"), ("gpu_added", "info", "GPU-new"),
                   ("gpu_moved", "info", "GPU-a")]


# ---------------------------------------------------------------------------
# PCIe

PCIE_CASES = [
    ("degraded 3 busy minutes", minutes(10, pcie_gen_busy_min=step(7, 4, 1)), {}, [("pcie-link-degraded", "warning")]),
    ("degraded 2 busy minutes (boundary)", minutes(10, pcie_gen_busy_min=step(8, 4, 1)), {}, []),
    ("narrow link", minutes(10, pcie_width_busy_min=8), {}, [("pcie-link-degraded", "warning")]),
    ("idle at gen 1 never alarms", minutes(60, busy=False), {}, []),
    ("idle minutes do not break a run",
     minutes(9, busy=lambda i: i % 2 == 0, pcie_gen_busy_min=lambda i: 1 if i % 2 == 0 else None), {},
     [("pcie-link-degraded", "warning")]),
    ("a healthy busy minute breaks a run",
     minutes(5, pcie_gen_busy_min=[1, 1, 4, 1, 1]), {}, []),
    ("maximum unknown", minutes(10, pcie_gen_busy_min=1),
     {"pcie_max_gen": None, "pcie_max_width": None}, []),
    ("slot caps the link", minutes(10, pcie_gen_busy_min=3),
     {"pcie_max_gen": 3}, [("pcie-link-degraded", "info")]),
]


@pytest.mark.parametrize("name,rows,inv,expected", PCIE_CASES, ids=[c[0] for c in PCIE_CASES])
def test_check_pcie_link(name: str, rows: list, inv: dict, expected: list) -> None:
    assert kinds(rules.check_pcie_link(fleet(card(rows, inventory=inv)), None)) == expected


REPLAY_CASES = [
    ("30 per minute", 30, [("pcie-replay", "warning")]),
    ("8 per minute is the limit", 8, [("pcie-replay", "info")]),
    ("9 per minute", 9, [("pcie-replay", "warning")]),
    ("none", 0, []),
]


@pytest.mark.parametrize("name,per_min,expected", REPLAY_CASES, ids=[c[0] for c in REPLAY_CASES])
def test_check_pcie_replay(name: str, per_min: int, expected: list) -> None:
    h = fleet(card(minutes(20, pcie_replay=lambda i: 2 + per_min * i)))
    assert kinds(rules.check_pcie_replay(h, None)) == expected


def test_check_pcie_replay_counter_reset_is_not_negative() -> None:
    h = fleet(card(minutes(20, pcie_replay=lambda i: 1000 if i < 10 else 1)))
    assert rules.check_pcie_replay(h, None) == []


def test_check_pcie_replay_unsupported() -> None:
    h = fleet(card(minutes(20, pcie_replay=None, status={"pcie_replay": UNSUPPORTED})))
    assert rules.check_pcie_replay(h, None) == []


# ---------------------------------------------------------------------------
# Power

BRAKE_CASES = [
    ("brake 6 of 10 minutes", dict(thr_hw_power_brake=step(4, 0, 6)), [("power-brake", "warning")]),
    ("brake 2 minutes", dict(thr_hw_power_brake=step(8, 0, 6)), []),
    ("brake 5 of 10 busy minutes (boundary)", dict(thr_hw_power_brake=step(5, 0, 6)), []),
    ("brake in all 3 busy minutes of the window",
     dict(thr_hw_power_brake=lambda i: 6 if i >= 7 else 0, busy_n=lambda i: 12 if i >= 7 else 0),
     [("power-brake", "warning")]),
    ("HW slowdown with HW thermal is thermal", dict(thr_hw_slowdown=6, thr_hw_thermal=6), []),
    ("HW slowdown while hot is thermal", dict(thr_hw_slowdown=6, temp_c_max=90.0), []),
    ("HW slowdown while cool", dict(thr_hw_slowdown=6), [("power-brake", "warning")]),
    ("3 of 10 busy minutes is below the fraction",
     dict(thr_hw_power_brake=lambda i: 6 if i in (0, 4, 9) else 0), []),
]


@pytest.mark.parametrize("name,cols,expected", BRAKE_CASES, ids=[c[0] for c in BRAKE_CASES])
def test_check_power_brake(name: str, cols: dict, expected: list) -> None:
    assert kinds(rules.check_power_brake(fleet(card(minutes(10, **cols))), None)) == expected


INSTABILITY_CASES = [
    ("drops under full load", dict(power_w_min=step(5, 330.0, 100.0)), [("power-instability", "warning")]),
    ("drops at low utilization", dict(power_w_min=100.0, util_gpu_pct_min=50), []),
    ("drop to exactly half", dict(power_w_min=182.5), []),
    ("2 minutes", dict(power_w_min=step(8, 330.0, 100.0)), []),
    ("power unsupported", dict(power_w_min=None, power_w_max=None, status={"power_w": UNSUPPORTED}), []),
]


@pytest.mark.parametrize("name,cols,expected", INSTABILITY_CASES, ids=[c[0] for c in INSTABILITY_CASES])
def test_check_power_instability(name: str, cols: dict, expected: list) -> None:
    assert kinds(rules.check_power_instability(fleet(card(minutes(10, **cols))), None)) == expected


@pytest.mark.parametrize("name,status,expected", [
    ("failed 3 minutes", step(7, {}, {"power_w": "failed"}), [("power-unreadable", "warning")]),
    ("failed 2 minutes", step(8, {}, {"power_w": "failed"}), []),
    ("unsupported never alarms", {"power_w": UNSUPPORTED}, []),
    ("JSON text from storage", step(5, "{}", json.dumps({"power_w": "failed"})), [("power-unreadable", "warning")]),
])
def test_check_power_unreadable(name: str, status: Any, expected: list) -> None:
    h = fleet(card(minutes(10, status=status, power_w_mean=None)))
    assert kinds(rules.check_power_unreadable(h, None)) == expected


@pytest.mark.parametrize("limit,default,expected", [
    (240.0, 400.0, [("power-capped", "warning")]),
    (380.0, 400.0, [("power-capped", "info")]),
    (360.0, 400.0, [("power-capped", "info")]),  # exactly 0.9: info
    (400.0, 400.0, []),
    (240.0, None, []),
])
def test_check_power_capped(limit: float, default: float | None, expected: list) -> None:
    h = fleet(card(minutes(10, power_limit_w_mean=step(3, 400.0, limit)),
                   inventory={"power_default_w": default}))
    found = rules.check_power_capped(h, None)
    assert kinds(found) == expected
    if expected:
        assert found[0].first_seen == NOW - 7 * 60


def test_check_power_capped_platform_cap() -> None:
    rows = minutes(10, thr_sw_power_cap=12, power_w_mean=step(4, 350.0, 200.0))
    [f] = rules.check_power_capped(fleet(card(rows)), None)
    assert (f.key.endswith("|platform"), f.severity) == (True, "warning")
    assert rules.check_power_capped(fleet(card(minutes(10, thr_sw_power_cap=12))), None) == []


# ---------------------------------------------------------------------------
# Thermal


@pytest.mark.parametrize("name,cols,expected", [
    ("SW thermal 3 minutes", dict(thr_sw_thermal=step(7, 0, 12)), [("thermal-throttle", "warning")]),
    ("HW thermal 5 minutes", dict(thr_hw_thermal=step(5, 0, 12)), [("thermal-throttle", "warning")]),
    ("2 minutes", dict(thr_sw_thermal=step(8, 0, 12)), []),
    ("none", {}, []),
])
def test_check_thermal_throttle(name: str, cols: dict, expected: list) -> None:
    assert kinds(rules.check_thermal_throttle(fleet(card(minutes(10, **cols))), None)) == expected


@pytest.mark.parametrize("name,temp,inv,expected", [
    ("near slowdown", 86.0, {}, [("temperature-high", "warning")]),
    ("at the margin", 84.0, {}, [("temperature-high", "warning")]),
    ("just below the margin", 83.9, {}, []),
    ("near shutdown", 88.0, {}, [("temperature-high", "critical")]),
    ("slowdown unknown: absolute warning", 85.0, {"temp_slowdown_c": None, "temp_shutdown_c": None},
     [("temperature-high", "warning")]),
    ("slowdown unknown: below", 84.0, {"temp_slowdown_c": None, "temp_shutdown_c": None}, []),
    ("temperature unsupported", None, {}, []),
])
def test_check_temperature(name: str, temp: float | None, inv: dict, expected: list) -> None:
    h = fleet(card(minutes(10, temp_c_max=step(6, 62.0, temp)), inventory=inv))
    assert kinds(rules.check_temperature(h, None)) == expected


@pytest.mark.parametrize("name,fan,temp,expected", [
    ("stopped while hot", 0, 80.0, [("fan-stopped", "warning")]),
    ("zero-RPM while cool", 0, 40.0, []),
    ("spinning", 60, 80.0, []),
    ("no fan reading", None, 80.0, []),
])
def test_check_fan_stopped(name: str, fan: int | None, temp: float, expected: list) -> None:
    h = fleet(card(minutes(10, fan_pct_max=fan, temp_c_max=temp)))
    assert kinds(rules.check_fan_stopped(h, None)) == expected


# ---------------------------------------------------------------------------
# Derating


def _peers(n: int = 4, slow: dict[int, float] | None = None, name: str = A100,
           inventory: dict[str, Any] | None = None) -> list[GpuHistory]:
    slow = slow or {}
    return [card(minutes(60, sm_clock_mhz_mean=round(1395 * slow.get(i, 1.0))), uuid=f"GPU-{i}", index=i,
                 name=name, inventory=inventory) for i in range(n)]


def test_check_derating_against_the_fleet_median() -> None:
    found = [f for f in derating.check_derating(fleet(*_peers(4, {2: 0.8})), None)
             if f.evidence.get("metric") == "clock"]
    assert [(f.gpu_uuid, f.severity, f.evidence["basis"]) for f in found] == [("GPU-2", "warning", "fleet")]
    assert found[0].evidence["vs_fleet"] == pytest.approx(0.8, abs=0.01)


def test_check_derating_boundary() -> None:
    assert derating.check_derating(fleet(*_peers(4, {2: 0.91})), None) == []


def test_check_derating_without_peers_uses_nominal() -> None:
    found = derating.check_derating(fleet(*_peers(2, {1: 0.7})), None)
    assert [(f.gpu_uuid, f.evidence["basis"]) for f in found] == [("GPU-1", "nominal")]
    assert derating.check_derating(fleet(*_peers(2, {1: 0.8})), None) == []


def test_check_derating_unknown_model_is_reported_not_guessed() -> None:
    found = derating.check_derating(fleet(*_peers(2, {1: 0.5}, name="NVIDIA Mystery 9000")), None)
    assert [(f.severity, f.evidence["metric"]) for f in found] == [("info", "unknown-model")]
    rows = derating.daily_ratios(fleet(*_peers(2, name="NVIDIA Mystery 9000")))
    assert all(r["known_model"] is False and r["clock_ratio"] is None for r in rows)


@pytest.mark.parametrize("name,memory_mib", [
    # issue 22: both boxes were "not in the spec catalog (derating unknown)"
    ("NVIDIA A100-SXM4-40GB", 40960),
    ("NVIDIA GB200", 189471),
])
def test_check_derating_issue_22_boxes_get_ratios(name: str, memory_mib: int) -> None:
    h = fleet(*_peers(4, name=name, inventory={"memory_total_mib": memory_mib}))
    found = derating.check_derating(h, None)
    assert "unknown-model" not in [f.evidence.get("metric") for f in found]
    rows = derating.daily_ratios(h, Thresholds.from_overrides({"derate_min_busy_minutes": 10}))
    assert rows and all(r["known_model"] is True for r in rows)
    assert all(r["clock_ratio"] is not None and r["memory_ratio"] is not None for r in rows)
    assert all(0.98 < r["memory_ratio"] <= 1.0 for r in rows)


def test_check_derating_memory() -> None:
    cards = _peers(3) + [card(minutes(60), uuid="GPU-small", index=3, inventory={"memory_total_mib": 40960})]
    found = [f for f in derating.check_derating(fleet(*cards), None) if f.evidence["metric"] == "memory"]
    assert [(f.gpu_uuid, f.severity) for f in found] == [("GPU-small", "warning")]
    modded = _peers(1, inventory={"memory_total_mib": 98304})
    found = derating.check_derating(fleet(*modded), None)
    assert [f.evidence["metric"] for f in found] == ["memory-modded"]


def test_daily_ratios_rows() -> None:
    rows = derating.daily_ratios(fleet(*_peers(3)), Thresholds.from_overrides({"derate_min_busy_minutes": 10}))
    assert set(rows[0]) == set(derating.DAILY_KEYS)
    r = rows[0]
    assert r["clock_ratio"] == pytest.approx(1395 / 1410, abs=1e-3)
    assert (r["power_limit_ratio"], r["memory_ratio"], r["pcie_ratio"], r["clock_vs_fleet"]) == (1.0, 1.0, 1.0, 1.0)
    assert (r["pcie_gen"], r["pcie_width"]) == (4, 16)


def test_daily_ratios_link_is_the_one_seen_most_while_busy() -> None:
    def link_of(gens: list[Any], widths: list[Any]) -> tuple[Any, Any]:
        rows = minutes(len(gens), pcie_gen_busy_min=gens, pcie_width_busy_min=widths)
        return tuple(derating.daily_ratios(fleet(card(rows)))[0][k] for k in ("pcie_gen", "pcie_width"))

    assert link_of([4] * 10, [16] * 10) == (4, 16)
    assert link_of([4] * 4 + [3] * 6, [16] * 4 + [8] * 6) == (3, 8)
    assert link_of([None] * 6 + [4] * 4, [None] * 6 + [16] * 4) == (4, 16)   # idle minutes name no link
    assert link_of([4] * 6 + [4] * 4, [None] * 6 + [16] * 4) == (4, 16)     # half-known rows are skipped
    assert link_of([None] * 10, [None] * 10) == (None, None)
    assert link_of([4] * 10, [None] * 10) == (None, None)


def test_days_convert_both_ways() -> None:
    from fleetmon.health.series import day_of, day_start

    assert day_of(0) == "1970-01-01" and day_of(86399.9) == "1970-01-01" and day_of(-1) == "1969-12-31"
    assert day_start("2026-12-02") == 1796169600 and day_of(1796169600 + 43200) == "2026-12-02"
    for bad in ("2026-13-01", "yesterday", ""):
        with pytest.raises(ValueError):
            day_start(bad)


def test_derating_trend_from_stored_rows() -> None:
    from fleetmon.health.series import day_of

    daily = [{"uuid": "GPU-0", "day": day_of(NOW - d * 86400), "clock_ratio": 0.99 - 0.005 * (20 - d)}
             for d in range(20, 0, -1)]
    found = derating.check_derating(fleet(*_peers(3, {0: 0.9}), daily=tuple(daily)), None)
    trend = [f for f in found if f.evidence["metric"] == "clock-trend"]
    assert [(f.gpu_uuid, f.severity) for f in trend] == [("GPU-0", "warning")]
    flat = [{**r, "clock_ratio": 0.99} for r in daily]
    found = derating.check_derating(fleet(*_peers(3), daily=tuple(flat)), None)
    assert not [f for f in found if f.evidence["metric"] == "clock-trend"]


# ---------------------------------------------------------------------------
# The input model


def test_series_from_rows_is_tolerant() -> None:
    s = Series.from_rows([{"ts": 120, "a": 1}, {"ts": 60}, {"b": 2}])
    assert list(s.ts) == [60, 120] and list(s.col("a")) == [None, 1] and list(s.col("zzz")) == [None, None]
    assert list(s.dur) == [60, 60]


def test_series_delta_handles_resets_and_hourly_deltas() -> None:
    s = Series.from_rows([{"ts": 0, "c": 5}, {"ts": 60, "c": 7}, {"ts": 120, "c": 2},
                          {"ts": 180, "c": None}, {"ts": 240, "c": 4, "c_delta": 9}])
    assert s.delta("c") == [0.0, 2.0, 2.0, 0.0, 9.0]


def test_timeline_chains_hourly_and_minutes() -> None:
    hourly = [{"ts": NOW - 3 * 3600 + 3600 * i, "pcie_replay": 10 * i, "pcie_replay_delta": 10}
              for i in range(3)]
    g = GpuHistory.from_row({"uuid": "u", "node": "n1"}, minutes=minutes(5, pcie_replay=40), hourly=hourly)
    tl = g.timeline()
    assert len(tl) == 3 + 5
    assert list(tl.dur) == [3600] * 3 + [60] * 5
    assert tl.delta("pcie_replay")[:4] == [10.0, 10.0, 10.0, 20.0]


def test_hourly_rollup_keeps_faults_visible() -> None:
    rows = minutes(180, end=NOW - 3600, thr_sw_thermal=lambda i: 12 if i >= 60 else 0,
                   pcie_replay=lambda i: 30 * i, status=lambda i: {"power_w": "failed"} if i >= 100 else {})
    hourly = rollup_hourly(Series.from_rows(rows))
    assert len(hourly) == 3 and list(hourly.col("minutes")) == [60, 60, 60]
    assert list(hourly.col("failed_power_w")) == [0, 20, 60]
    g = GpuHistory.from_row({"uuid": "GPU-a", "node": "n1", "inventory": INV}, hourly=hourly)
    h = fleet(g)
    got = {f.kind for f in engine.evaluate(h)}
    assert {"thermal-throttle", "pcie-replay", "power-unreadable"} <= got
    assert all(f.state == "resolved" for f in engine.evaluate(h) if f.kind == "thermal-throttle")


def test_fleet_history_from_rows() -> None:
    h = FleetHistory.from_rows(
        now=NOW, since=NOW - 86400,
        nodes=[{"name": "n1", "grp": "g", "driver_version": "535", "last_ok": NOW - 5}],
        gpus=[{"uuid": "GPU-a", "node": "n1", "idx": 0, "name": A100,
               "inventory": json.dumps({"values": {"vbios": "x", "pcie_max_gen": 4}}),
               "memory_total_mib": 81920}],
        minutes={"GPU-a": minutes(3)},
        events=[{"ts": NOW - 60, "node": "n1", "kind": "xid", "code": 13, "gpu_uuid": "GPU-a",
                 "data": "{\"x\": 1}"}],
        groups=[{"name": "g", "expected_gpus": 1}],
        thresholds={"pcie_replay_per_min": 16},
    )
    g = h.gpu("GPU-a")
    assert g is not None and g.inventory["vbios"] == "x" and g.inventory["memory_total_mib"] == 81920
    assert g.index == 0 and g.placements[0].node == "n1"
    assert h.thresholds.pcie_replay_per_min == 16 and h.groups["g"].expected_gpus == 1
    assert h.events[0].data == {"x": 1}
    assert h.expected_gpus(h.nodes[0]) == 1


def test_groups_from_the_fleet_file() -> None:
    from fleetmon.fleet import Group

    h = FleetHistory.from_rows(now=NOW, since=NOW - 60, nodes=[{"name": "n1", "group": "a100"}],
                               groups={"a100": Group("a100", expected_driver="535.161.08", expected_gpus=8)})
    assert h.groups["a100"] == GroupExpect("a100", "535.161.08", None, 8, None)


# ---------------------------------------------------------------------------
# Thresholds, findings, engine helpers


def test_thresholds_overrides_and_errors() -> None:
    t = Thresholds.from_overrides({"pcie_replay_per_min": 16, "temperature_warning": 83})
    assert t.pcie_replay_per_min == 16.0 and t.temperature_warning_c == 83.0
    assert t.overrides() == {"pcie_replay_per_min": 16.0, "temperature_warning_c": 83.0}
    with pytest.raises(ValueError, match="unknown threshold 'pcie_replay_per_mn'; did you mean pcie_replay_per_min"):
        Thresholds.from_overrides({"pcie_replay_per_mn": 1})
    with pytest.raises(ValueError, match="expected a whole number"):
        Thresholds.from_overrides({"flap_count": 2.5})
    with pytest.raises(ValueError, match="out of range"):
        Thresholds.from_overrides({"hw_slowdown_fraction": 2})
    with pytest.raises(ValueError, match="expected a number"):
        Thresholds.from_overrides({"flap_count": True})
    with pytest.raises(ValueError, match="must not exceed"):
        Thresholds.from_overrides({"retired_pages_warning": 62})


def test_thresholds_are_used_by_the_rules() -> None:
    h = fleet(card(minutes(20, pcie_replay=lambda i: 30 * i)))
    t = Thresholds.from_overrides({"pcie_replay_per_min": 50})
    assert kinds(rules.check_pcie_replay(h, t)) == [("pcie-replay", "info")]
    assert kinds(rules.check_pcie_replay(h.with_thresholds(t), None)) == [("pcie-replay", "info")]


def test_describe_lists_every_threshold() -> None:
    text = describe()
    for name in Thresholds().to_dict():
        assert f"`{name}`" in text


def test_finding_round_trip_and_validation() -> None:
    f = Finding("xid", "critical", "n1", "GPU-a", 1.0, 2.0, {"code": 79}, "act", "sum",
                finding_key("xid", "n1", "GPU-a", "79"), gpu_index=3, magnitude=1.0)
    assert Finding.from_dict(json.loads(json.dumps(f.to_dict()))) == f
    assert f.key == "xid|gpu:GPU-a|79" and f.where() == "n1 gpu3"
    with pytest.raises(ValueError):
        Finding("no-such-kind", "critical", "n1", None, 0, 0)
    with pytest.raises(ValueError):
        Finding("xid", "fatal", "n1", None, 0, 0)
    assert Finding("node-flapping", "warning", "n1", None, 0, 0).key == "node-flapping|node:n1|"


def _f(kind: str, severity: str, node_name: str, state: str = "open", magnitude: float | None = None,
       uuid: str | None = None) -> Finding:
    return Finding(kind, severity, node_name, uuid, 0.0, 1.0, state=state, magnitude=magnitude)


def test_node_verdicts() -> None:
    findings = [_f("xid", "critical", "n1"), _f("xid", "warning", "n2"), _f("xid", "info", "n3"),
                _f("xid", "critical", "n4", "resolved"), _f("xid", "warning", "n1")]
    assert engine.node_verdicts(findings, ["n5", "n10"]) == {
        "n1": "fail", "n2": "warn", "n3": "pass", "n4": "pass", "n5": "pass", "n10": "pass"}


def test_diff_findings() -> None:
    prev = [_f("pcie-replay", "warning", "n1", magnitude=10), _f("thermal-throttle", "warning", "n2"),
            _f("fan-stopped", "warning", "n3"), _f("xid", "warning", "n4")]
    cur = [_f("pcie-replay", "warning", "n1", magnitude=30), _f("thermal-throttle", "warning", "n2", "resolved"),
           _f("xid", "critical", "n4"), _f("gpu-lost", "critical", "n5")]
    new, resolved, worsened = engine.diff_findings(prev, cur)
    assert [f.node for f in new] == ["n5"]
    assert sorted((f.node, f.state) for f in resolved) == [("n2", "resolved"), ("n3", "resolved")]
    assert sorted(f.node for f in worsened) == ["n1", "n4"]
    assert engine.diff_findings(cur, cur)[2] == []


def test_evaluate_is_deterministic_and_sorted() -> None:
    h = fleet(card(minutes(20, pcie_replay=lambda i: 30 * i, thr_sw_thermal=12)),
              card(minutes(20, ecc_unc_vol=step(5, 0, 1)), uuid="GPU-b", index=1),
              events=(xid(NOW - 300, 13),))
    first, second = engine.evaluate(h), engine.evaluate(replace(h, _cache={}))
    assert [f.to_dict() for f in first] == [f.to_dict() for f in second]
    ranks = [f.rank for f in first]
    assert ranks == sorted(ranks, reverse=True)
    assert {f.kind for f in first} == {"pcie-replay", "thermal-throttle", "ecc-uncorrectable", "xid"}


def test_every_rule_is_listed_and_every_kind_documented() -> None:
    names = {r.__name__ for r in rules.RULES}
    assert len(names) == len(rules.RULES) == 29
    assert all(name.startswith("check_") for name in names)
    for kind in ("device-health", "ecc-block", "ecc-deferred", "bad-pages-exceeded", "driver-mismatch", "vbios-mismatch", "ecc-uncorrectable", "ecc-correctable-storm",
                 "retired-pages", "row-remap", "xid", "gpu-lost", "gpu-missing", "pcie-link-degraded",
                 "pcie-replay", "power-brake", "power-instability", "power-capped", "thermal-throttle",
                 "derating", "node-unreachable", "node-flapping", "inventory-change", "arrival-history", "gpus-refused"):
        assert kind in KINDS


def test_unsupported_fleet_never_alarms() -> None:
    """A card that supports almost nothing: every reading None/unsupported."""
    blank = {k: None for k in BUSY if k not in ("n", "busy_n", "thr_gpu_idle", "status")}
    status = {k: UNSUPPORTED for k in blank}
    rows = minutes(60, **blank, status=status)
    h = fleet(card(rows, inventory={k: None for k in INV}, name="NVIDIA GeForce RTX 3090"))
    assert [f for f in engine.evaluate(h) if f.severity != "info"] == []


def test_outages_from_events() -> None:
    from fleetmon.health.fleet import outages_from_events

    events = [{"ts": 50, "kind": "node_back"}, {"ts": 10, "kind": "node_unreachable", "message": "timeout"},
              EventRecord(20, "n1", "xid", code=13), EventRecord(90, "n1", "node_unreachable")]
    assert outages_from_events(events) == (Outage(10, 50, "timeout", 1), Outage(90, None, None, 1))


def test_storage_layer_spellings() -> None:
    """The storage layer says "gone", "appeared"/"moved", old/new and since: all understood."""
    g = GpuHistory.from_row({"uuid": "u", "node": "n1", "state": "gone"}, placements=[
        {"since": 5, "until": 9, "node": "n0", "index": 1, "pci_bus_id": "x"},
        {"since": 9, "until": None, "node": "n1", "index": 0, "pci_bus_id": "y"}])
    assert g.state == "missing" and [p.ts for p in g.placements] == [5.0, 9.0]
    c = InventoryChange.from_dict({"ts": 1, "node": "n1", "kind": "moved", "old": "a", "new": "b"})
    assert (c.before, c.after) == ("a", "b")


def test_cards_of_a_node_first_inventory_are_not_additions() -> None:
    # A node enrolled 30 minutes ago with two cards: no finding. A third card 20 minutes later is one.
    first = [card(uuid=f"GPU-{i}", index=i, first_seen=NOW - 1800 + i) for i in range(2)]
    assert rules.check_inventory_changes(fleet(*first), None) == []
    later = card(uuid="GPU-later", index=2, first_seen=NOW - 600)
    [f] = rules.check_inventory_changes(fleet(*first, later), None)
    assert (f.evidence["change"], f.gpu_uuid) == ("gpu_added", "GPU-later")


def test_gpus_refused_is_a_node_warning_open_while_the_store_keeps_refusing() -> None:
    from fleetmon.health.rules.identity import check_gpus_refused

    notice = "62 new GPU UUIDs refused: the node was seen with 128 distinct GPUs within 24 h"

    def refused(ts: float) -> EventRecord:
        return EventRecord(ts, "n1", "gpus_refused", message=notice,
                           data={"refused": 62, "cap": 128, "span_s": 86400.0, "repeat_s": 600.0})

    (f,) = check_gpus_refused(fleet(card(), events=(refused(NOW - 1500), refused(NOW - 900), refused(NOW - 300))))
    assert (f.kind, f.severity, f.node, f.gpu_uuid, f.is_open) == ("gpus-refused", "warning", "n1", None, True)
    assert f.evidence["refused"] == 62 and f.evidence["cap"] == 128 and f.evidence["notice"] == notice
    assert "128 distinct GPUs within 24 h" in f.summary
    # The events stopped more than twice their period ago: the rule no longer sees it open.
    (old,) = check_gpus_refused(fleet(card(), events=(refused(NOW - 3 * 3600),)))
    assert not old.is_open
    assert check_gpus_refused(fleet(card(), events=(EventRecord(NOW - 60, "n1", "xid", code=13),))) == []
