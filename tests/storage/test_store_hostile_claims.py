"""Issue 11, item 4 (store part): a node reporting another node's GPU UUIDs does not take them over."""

from __future__ import annotations

import pytest

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


# -- issue 20, item 4: a source that cannot prove the card never displaces an agent ----------------------------


def _scrape(node: str, ts: float, uuids: list[str], url: str = "dcgm+http://127.0.0.1:9400/metrics") -> object:
    """A dcgm-exporter node's poll listing ``uuids`` (inventory, latest sample and its one-sample minute)."""
    inv = [inventory(node, i, uuid=u, serial=None) for i, u in enumerate(uuids)]
    p = poll(node, ts, inv=inv, minutes=[GpuMinute(seq=0, ts=int(ts) // 60 * 60, uuid=u, index=i, n=1,
                                                   values=dict(minute(node, i, int(ts) // 60 * 60).values))
                                         for i, u in enumerate(uuids)])
    p.url = url
    return p


def _agent_minutes(db, node: str) -> int:
    return query(db, """SELECT count(*) AS n FROM samples s JOIN gpus g ON g.id = s.gpu_id
                        WHERE g.uuid IN (?, ?)""", (uuid_of(node, 0), uuid_of(node, 1)))[0]["n"]


@pytest.mark.parametrize("url", ["dcgm+http://127.0.0.1:9400/metrics", "ssh://root@evil", "file:///tmp/evil.xml"])
def test_a_source_listed_first_on_a_fresh_database_does_not_take_an_agents_cards(fresh_db, url) -> None:
    db = fresh_db
    agent_uuids = [uuid_of("n1", 0), uuid_of("n1", 1)]
    for k in range(4):
        t = T0 + 30 * k
        mins = [minute("n1", i, int(t) - 60, seq=2 * k + i + 1) for i in range(2)]
        # The hijacker comes first in the batch (first in the fleet file).
        ingest_polls(db, [_scrape("evil", t, agent_uuids, url), poll("n1", t, minutes=mins, minutes_cursor=2 * k + 2)])
    assert {u: _gpu(db, u)["node"] for u in agent_uuids} == {u: "n1" for u in agent_uuids}
    assert _agent_minutes(db, "n1") == 8  # every minute the agent served, each kept once
    rows = query(db, "SELECT node, holder, sum(dropped) AS dropped FROM gpu_claim_conflicts GROUP BY node, holder")
    assert rows == [{"node": "evil", "holder": "n1", "dropped": 4 * 3 * 2}]
    assert [c.kind for c in inventory_changes(db, since=0) if c.gpu_uuid in agent_uuids] == ["enrolled"] * 2
    found = [f for f in engine.evaluate(load_history(db, T0 + 120, T0 - 600)) if f.kind == "uuid-conflict"]
    assert [(f.node, f.evidence["holder"], f.evidence["gpus"]) for f in found] == [("evil", "n1", 2)]


def test_an_agent_arriving_later_takes_its_cards_from_a_scrape_and_the_scrape_is_quarantined(fresh_db) -> None:
    db = fresh_db
    agent_uuids = [uuid_of("n1", 0), uuid_of("n1", 1)]
    # Two cycles with the agent silent: the scrape holds the cards (a stored row per card and minute).
    ingest_polls(db, [_scrape("evil", T0, agent_uuids), poll("n1", T0, ok=False)])
    ingest_polls(db, [_scrape("evil", T0 + 60, agent_uuids), poll("n1", T0 + 60, ok=False)])
    assert _gpu(db, agent_uuids[0])["node"] == "evil" and _agent_minutes(db, "n1") == 4
    # The agent answers with a backlog that covers the minutes the scrape wrote (and the scrape first again).
    t = T0 + 120
    backlog = [minute("n1", i, T0 + 60 * k, seq=2 * k + i + 1) for k in range(3) for i in range(2)]
    ingest_polls(db, [_scrape("evil", t, agent_uuids), poll("n1", t, minutes=backlog, minutes_cursor=6)])
    assert {u: _gpu(db, u)["node"] for u in agent_uuids} == {u: "n1" for u in agent_uuids}
    stored = query(db, """SELECT g.uuid, s.ts, s.n FROM samples s JOIN gpus g ON g.id = s.gpu_id
                          ORDER BY g.uuid, s.ts""")
    # The agent's minutes, not the scrape's one-sample rows of the same minutes.
    assert stored == [{"uuid": u, "ts": T0 + 60 * k, "n": 12} for u in agent_uuids for k in range(3)]
    # The conflict is the scrape's: its event, its finding; the agent is not named.
    ev = query(db, "SELECT node, data FROM events WHERE kind = 'uuid_conflict'")
    assert [e["node"] for e in ev] == ["evil"]
    assert query(db, "SELECT DISTINCT node, holder FROM gpu_claim_conflicts") == [{"node": "evil", "holder": "n1"}]
    # The scrape of the same cycle (stored after the agents) is dropped and counted, and so are its later ones.
    assert query(db, "SELECT sum(dropped) AS n FROM gpu_claim_conflicts")[0]["n"] == 2 * 3
    ingest_polls(db, [_scrape("evil", t + 30, agent_uuids), poll("n1", t + 30, minutes_cursor=6)])
    assert _agent_minutes(db, "n1") == 6
    assert query(db, "SELECT sum(dropped) AS n FROM gpu_claim_conflicts")[0]["n"] == 2 * 2 * 3
    found = [f for f in engine.evaluate(load_history(db, t + 60, T0 - 600)) if f.kind == "uuid-conflict"]
    assert [(f.node, f.evidence["holder"]) for f in found] == [("evil", "n1")]


def test_between_two_scrapes_the_first_holder_keeps_the_card(fresh_db) -> None:
    db = fresh_db
    ingest_polls(db, [_scrape("s1", T0, [G0]), _scrape("s2", T0, [G0], "dcgm+http://127.0.0.1:9401/metrics")])
    assert _gpu(db, G0)["node"] == "s1"
    assert query(db, "SELECT node, holder FROM gpu_claim_conflicts") == [{"node": "s2", "holder": "s1"}]


def test_an_agent_poll_without_inventory_takes_its_cards_too(fresh_db) -> None:
    db = fresh_db
    ingest_polls(db, [_scrape("evil", T0, [G0, G1]), poll("n1", T0, ok=False)])
    # The agent's poll between two inventories: latest samples and minutes only.
    p = poll("n1", T0 + 30, minutes=[minute("n1", i, T0, seq=i + 1) for i in range(2)], minutes_cursor=2)
    p.gpus, p.info = [], None
    ingest_polls(db, [p])
    assert {u: (_gpu(db, u)["node"], _gpu(db, u)["idx"]) for u in (G0, G1)} == {G0: ("n1", 0), G1: ("n1", 1)}
    assert [(c.kind, c.node) for c in inventory_changes(db, since=T0 + 1) if c.gpu_uuid == G0] == [("moved", "n1")]
    assert _agent_minutes(db, "n1") == 2
    assert query(db, "SELECT DISTINCT node, holder FROM gpu_claim_conflicts") == [{"node": "evil", "holder": "n1"}]


@pytest.mark.parametrize("url", [None, "", "http://a:9414", "HTTPS://a", "dcgm+http://a:9400/metrics", "DCGM+HTTPS://a",
                                 "ssh://u@h:22", "file:///x.xml", "ftp://a", "no-scheme", " http://a"])
def test_the_store_reads_an_agent_from_its_url_as_the_sources_do(url) -> None:
    from fleetmon.sources import SourceKind, node_source
    from storage.ingest import proves_cards

    assert proves_cards(url) is (node_source(url).kind is SourceKind.AGENT)
