"""Counter deltas across a restart, a gap or a move are charged to the placement where they were counted."""

from __future__ import annotations

from typing import Any

from fleetmon.health import engine, rules
from fleetmon.health.fleet import FleetHistory, GpuHistory, Placement
from fleetmon.health.hourly import rollup_hourly
from fleetmon.health.series import Series

from tests.health.test_health_rules import INV, NOW, card, fleet, minutes

BAD = "0000:18:00.0"   # index 0: a marginal riser, replays on whatever card sits in it
GOOD = "0000:19:00.0"  # index 1
DOWN = NOW - 3600      # the node powers down; the two cards are swapped
UP = NOW - 40 * 60     # back up: the agent samples from here
POLLED = UP + 5 * 60 + 17  # the collector's first poll after the restart records the moves


def swap_rows(before: Any, after: Any) -> list[dict[str, Any]]:
    """An hour in the old slot, the node down for 20 minutes, 40 minutes in the new slot."""
    return (minutes(60, end=DOWN, pcie_replay=before)
            + minutes(40, end=NOW, pcie_replay=after))


def swapped(a_after: Any, b_after: Any) -> FleetHistory:
    # Card A: in the bad slot first (30 replays a minute), then in the good one.
    a_rows = swap_rows(lambda i: 2 + 30 * i, a_after)
    # Card B: in the good slot first (no replays), then in the bad one.
    b_rows = swap_rows(2, b_after)
    a = card(a_rows, uuid="GPU-a", index=1, placements=(
        (NOW - 86400, "n1", BAD, 0), (POLLED, "n1", GOOD, 1)))
    b = card(b_rows, uuid="GPU-b", index=0, placements=(
        (NOW - 86400, "n1", GOOD, 1), (POLLED, "n1", BAD, 0)))
    return fleet(a, b)


def replay_findings(h: FleetHistory) -> dict[str, Any]:
    return {f.gpu_uuid: f for f in engine.evaluate(h) if f.kind == "pcie-replay"}


def test_swap_after_a_power_down_charges_replays_to_the_bad_slot_only() -> None:
    # Power-off resets the replay counter: A reads 0 in the good slot, B counts up from 0 in the bad one.
    found = replay_findings(swapped(0, lambda i: 30 * i))
    a, b = found["GPU-a"], found["GPU-b"]
    assert a.evidence["slots"] == [f"n1:{BAD}"]
    assert b.evidence["slots"] == [f"n1:{BAD}"]  # not its old, healthy slot
    assert a.evidence["attribution"] == b.evidence["attribution"] == "slot"
    assert b.node == "n1" and b.first_seen >= UP


def test_growth_across_the_move_is_charged_to_neither_slot() -> None:
    # No reset seen: A's counter grew by 45 after its last row in the bad slot (before the power-down),
    # B's first reading in the bad slot is already above its old value. Where those increases were
    # counted is unknown: neither card gets the good slot, and A's finding comes from its old rows only.
    a_last = 2 + 30 * 59
    found = replay_findings(swapped(a_last + 45, lambda i: 30 * (i + 1)))
    assert found["GPU-a"].evidence["slots"] == [f"n1:{BAD}"]
    assert found["GPU-a"].last_seen <= DOWN
    assert found["GPU-b"].evidence["slots"] == [f"n1:{BAD}"]
    assert found["GPU-a"].evidence["attribution"] == found["GPU-b"].evidence["attribution"] == "slot"


def test_the_first_minutes_before_the_recorded_move_belong_to_the_new_slot() -> None:
    h = swapped(0, lambda i: 30 * i)
    b = h.gpu("GPU-b")
    assert b is not None
    assert b.placement_at(UP + 60).pci_bus_id == BAD  # buffered by the agent, before the poll
    assert b.placement_at(DOWN - 60).pci_bus_id == GOOD
    assert [p.ts for p in b.located_placements()] == [NOW - 86400, UP]
    assert [p.ts for p in b.placements] == [NOW - 86400, POLLED]  # the store's record is kept as is


def test_a_delta_across_a_move_is_charged_to_the_row_only_after_a_reset() -> None:
    rows = [{"ts": DOWN - 120, "c": 10}, {"ts": DOWN - 60, "c": 12},                   # old slot
            {"ts": UP, "c": 3}, {"ts": UP + 60, "c": 5},                                # reset: new slot
            ]
    g = GpuHistory.from_row({"uuid": "u", "node": "n1"}, minutes=rows,
                            placements=[(0, "n1", GOOD, 1), (POLLED, "n1", BAD, 0)])
    assert g.placed_delta("c") == [0.0, 2.0, 3.0, 2.0]
    grown = [*rows[:2], {"ts": UP, "c": 15}, {"ts": UP + 60, "c": 17}]
    g = GpuHistory.from_row({"uuid": "u", "node": "n1"}, minutes=grown,
                            placements=[(0, "n1", GOOD, 1), (POLLED, "n1", BAD, 0)])
    assert g.timeline().delta("c") == [0.0, 2.0, 3.0, 2.0]  # the card's own count: unchanged
    assert g.placed_delta("c") == [0.0, 2.0, 0.0, 2.0]      # the 3 across the move: neither slot's


def test_a_card_that_never_moved_keeps_every_delta_across_a_gap_or_restart() -> None:
    rows = [{"ts": DOWN - 60, "c": 12}, {"ts": UP, "c": 15}, {"ts": UP + 60, "c": 1}, {"ts": UP + 120, "c": 4}]
    g = GpuHistory.from_row({"uuid": "u", "node": "n1"}, minutes=rows)
    assert g.located_placements() == g.placements
    assert g.placed_delta("c") == g.timeline().delta("c") == [0.0, 3.0, 1.0, 3.0]  # a drop is a reset


def test_a_move_without_a_gap_in_the_rows_keeps_the_recorded_time() -> None:
    rows = minutes(30, pcie_replay=lambda i: 2 * i)
    recorded = NOW - 10 * 60 + 17  # inside a minute row: that row spans the move
    g = card(rows, placements=((NOW - 86400, "n1", GOOD, 1), (recorded, "n2", BAD, 0)))
    assert [p.ts for p in g.located_placements()] == [NOW - 86400, recorded]
    placed = g.placed_delta("pcie_replay")
    spans = [i for i, ts in enumerate(g.timeline().ts) if ts < recorded < ts + 60]
    assert len(spans) == 1 and placed[spans[0]] == 0.0
    assert sum(placed) == sum(g.timeline().delta("pcie_replay")) - 2


def test_an_hourly_row_that_holds_the_move_is_charged_to_neither_slot() -> None:
    # Both cards' history is hourly only: the hour of the swap holds the bad slot's replays of one card
    # and the other's; neither can be told apart, so that hour counts for no slot.
    def hourly(before: Any, after: Any) -> Series:
        return rollup_hourly(Series.from_rows(swap_rows(before, after)))
    # The window's hourly rows end an hour before now, where the minutes would begin.
    h = FleetHistory.from_rows(
        NOW, NOW - 86400, nodes=[{"name": "n1", "last_ok": NOW - 10, "last_attempt": NOW - 10}],
        gpus=[{"uuid": "GPU-a", "node": "n1", "index": 1, "pci_bus_id": GOOD, "inventory": INV},
              {"uuid": "GPU-b", "node": "n1", "index": 0, "pci_bus_id": BAD, "inventory": INV}],
        hourly={"GPU-a": hourly(lambda i: 2 + 30 * i, 0), "GPU-b": hourly(2, lambda i: 30 * i)},
        placements={"GPU-a": [(NOW - 86400, "n1", BAD, 0), (POLLED, "n1", GOOD, 1)],
                    "GPU-b": [(NOW - 86400, "n1", GOOD, 1), (POLLED, "n1", BAD, 0)]})
    found = {f.gpu_uuid: f for f in rules.check_pcie_replay(h, None)}
    for f in found.values():
        assert f"n1:{GOOD}" not in f.evidence["slots"], f.evidence
    assert found["GPU-a"].evidence["slots"] == [f"n1:{BAD}"]
    assert Placement(0.0, "n1", BAD).slot == f"n1:{BAD}"
