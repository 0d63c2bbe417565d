"""Issue 11, item 4 (store part): a node reporting another node's GPU UUIDs does not take them over."""

from __future__ import annotations

from fleetmon.assess import load_history
from fleetmon.records import GpuMinute
from fleetmon.health import engine
from storage.db import query
from storage.ingest import CLAIM_REPORT_EVERY_S, CLAIM_WINDOW_S, ingest_polls
from storage.queries import inventory_changes
from helpers import T0, fresh_db, inventory, minute, poll, uuid_of  # noqa: F401

G0, G1 = uuid_of("n1", 0), uuid_of("n1", 1)


def _impostor(ts: float, seq: int) -> object:
    """n3 answers with n1's cards (other serials, other slots) and minutes of them, beside one card of its own."""
    inv = [inventory("n3", 0), inventory("n3", 1, uuid=G0, serial="SN-FAKE-0"),
           inventory("n3", 2, uuid=G1, serial="SN-FAKE-1")]
    mins = [minute("n3", 0, int(ts) - 60, seq=seq)]
    mins += [GpuMinute(seq=seq + 1 + i, ts=int(ts) - 60, uuid=u, index=1 + i, n=12, values=dict(mins[0].values))
             for i, u in enumerate((G0, G1))]
    return poll("n3", ts, inv=inv, minutes=mins, minutes_cursor=seq + 2)


def _gpu(db, uuid):
    return query(db, "SELECT node, idx, serial, state FROM gpus WHERE uuid = ?", (uuid,))[0]


def test_a_claim_of_present_cards_is_quarantined_not_a_move(fresh_db) -> None:
    db = fresh_db
    ingest_polls(db, [poll("n1", T0, gpus=2), poll("n2", T0, gpus=2)])
    before = {u: _gpu(db, u) for u in (G0, G1)}
    ingest_polls(db, [poll("n1", T0 + 30, gpus=2), _impostor(T0 + 30, 1)])
    # The passports stay with n1: no move, no serial change, no appearance.
    assert {u: _gpu(db, u) for u in (G0, G1)} == before
    kinds = [(c.kind, c.gpu_uuid) for c in inventory_changes(db, since=T0 + 1)]
    assert all(u not in (G0, G1) for _, u in kinds), kinds
    assert ("enrolled", uuid_of("n3", 0)) in kinds  # n3's own card is stored
    # None of n3's records of n1's cards were stored; its own minute was.
    mine = query(db, "SELECT g.uuid, count(*) AS n FROM samples s JOIN gpus g ON g.id = s.gpu_id GROUP BY g.uuid")
    assert mine == [{"uuid": uuid_of("n3", 0), "n": 1}]
    assert query(db, "SELECT minutes_cursor FROM nodes WHERE name = 'n3'") == [{"minutes_cursor": 3}]
    # The conflict is stored and reported once as an event of the claimant.
    rows = query(db, "SELECT node, gpu_uuid, holder, dropped FROM gpu_claim_conflicts ORDER BY gpu_uuid")
    assert rows == [{"node": "n3", "gpu_uuid": G0, "holder": "n1", "dropped": 3},
                    {"node": "n3", "gpu_uuid": G1, "holder": "n1", "dropped": 3}]
    ev = query(db, "SELECT node, message FROM events WHERE kind = 'uuid_conflict'")
    assert ev == [{"node": "n3", "message": "node n3 reports GPU UUIDs already seen on node n1 at the same time"}]

    # It goes on: not reported again within the repeat period, then again.
    ingest_polls(db, [poll("n1", T0 + 60, gpus=2), _impostor(T0 + 60, 4)])
    assert len(query(db, "SELECT id FROM events WHERE kind = 'uuid_conflict'")) == 1
    t = T0 + 30 + CLAIM_REPORT_EVERY_S
    ingest_polls(db, [poll("n1", t, gpus=2), _impostor(t, 7)])
    assert len(query(db, "SELECT id FROM events WHERE kind = 'uuid_conflict'")) == 2
    assert {u: _gpu(db, u) for u in (G0, G1)} == before

    # The health engine names it.
    history = load_history(db, t + 60, T0)
    found = [f for f in engine.evaluate(history) if f.kind == "uuid-conflict"]
    assert len(found) == 1
    f = found[0]
    assert (f.node, f.severity, f.state, f.evidence["holder"], f.evidence["uuids"]) == (
        "n3", "critical", "open", "n1", [G0, G1])
    assert f.summary == "node n3 reports GPU UUIDs already seen on node n1 at the same time (2 GPUs)"
    later = [f for f in engine.evaluate(load_history(db, t + 3 * CLAIM_REPORT_EVERY_S, T0))
             if f.kind == "uuid-conflict"]
    assert [f.state for f in later] == ["resolved"]


def test_the_claim_of_a_card_whose_node_went_silent_is_a_move(fresh_db) -> None:
    db = fresh_db
    ingest_polls(db, [poll("n1", T0, gpus=2)])
    # n1 stops answering; well after the window its card shows up on n3.
    ingest_polls(db, [poll("n1", T0 + 30, ok=False)])
    t = T0 + CLAIM_WINDOW_S + 120
    ingest_polls(db, [poll("n3", t, inv=[inventory("n3", 0, uuid=G1, serial="SN-n1-1")])])
    assert _gpu(db, G1)["node"] == "n3"
    assert [c.kind for c in inventory_changes(db, since=t) if c.gpu_uuid == G1][-1] == "moved"
    assert query(db, "SELECT count(*) AS n FROM gpu_claim_conflicts")[0]["n"] == 0
    assert query(db, "SELECT count(*) AS n FROM events WHERE kind = 'uuid_conflict'")[0]["n"] == 0


def test_the_claim_of_a_card_that_disappeared_from_its_node_is_a_move(fresh_db) -> None:
    db = fresh_db
    ingest_polls(db, [poll("n1", T0, gpus=2)])
    ingest_polls(db, [poll("n1", T0 + 30, inv=[inventory("n1", 0)])])  # GPU 1 left n1
    ingest_polls(db, [poll("n1", T0 + 60, inv=[inventory("n1", 0)]),
                      poll("n3", T0 + 60, inv=[inventory("n3", 0, uuid=G1, serial="SN-n1-1")])])
    assert _gpu(db, G1)["node"] == "n3"
    assert [c.kind for c in inventory_changes(db, since=T0 + 60) if c.gpu_uuid == G1][-1] == "moved"
    assert query(db, "SELECT count(*) AS n FROM gpu_claim_conflicts")[0]["n"] == 0
