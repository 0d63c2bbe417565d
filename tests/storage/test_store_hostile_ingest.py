"""Issue 11, item 1 (store part): one node's unstorable answer costs that node's answer alone.

The polls are built directly (they bypass the collector client's checks), holding the values
that raised OverflowError / UnicodeEncodeError in ingest and aborted the whole cycle's write.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace
from typing import Any

import pytest

from fleetmon.records import Event, NodePoll
from storage.db import query
from storage.ingest import ingest_polls
from helpers import T0, fresh_db, inventory, minute, minutes_for, poll, uuid_of  # noqa: F401

HEALTHY = ("good1", "good2")


def _healthy(node: str, t0: int = T0) -> NodePoll:
    return poll(node, t0 + 300, minutes=minutes_for(node, 2, t0, 3), minutes_cursor=6, events_cursor=1,
                events=[Event(seq=1, ts=t0 + 5, kind="xid", uuid=uuid_of(node, 0), code=79, message="fell off")])


def _hostile() -> dict[str, NodePoll]:
    """One node per hostile value of the issue."""
    out: dict[str, NodePoll] = {}
    out["seq"] = poll("seq", T0 + 300, minutes=minutes_for("seq", 2, T0, 1), minutes_cursor=2**63)
    out["index"] = poll("index", T0 + 300, minutes=[replace(minute("index", 0, T0, seq=1), index=10**20)],
                        inv=[replace(inventory("index", 0), index=10**20)], minutes_cursor=1)
    out["value"] = poll("value", T0 + 300, minutes=[minute("value", 0, T0, seq=1, power_w_mean=1e30)],
                        minutes_cursor=1)
    out["code"] = poll("code", T0 + 300, events=[Event(seq=1, ts=T0, kind="xid", uuid=uuid_of("code", 0),
                                                       code=10**30, message="x")], events_cursor=1)
    out["uuid"] = poll("uuid", T0 + 300, minutes=[replace(minute("uuid", 0, T0, seq=1), uuid="\ud800")],
                       minutes_cursor=1)
    out["inv-uuid"] = poll("inv-uuid", T0 + 300, inv=[inventory("inv-uuid", 0, uuid="GPU-\ud800")])
    out["hot"] = poll("hot", T0 + 300, inv=[inventory("hot", 0, power_default_w="hot")], minutes_cursor=4)
    return out


def _assert_healthy_stored(db: Any) -> None:
    for node in HEALTHY:
        row = query(db, "SELECT status, minutes_cursor, events_cursor, last_error FROM nodes WHERE name = ?", (node,))
        assert row == [{"status": "ok", "minutes_cursor": 6, "events_cursor": 1, "last_error": None}], node
        n = query(db, "SELECT count(*) AS n FROM samples JOIN gpus ON gpus.id = gpu_id WHERE gpus.node = ?", (node,))
        assert n[0]["n"] == 6, node
        ev = query(db, "SELECT code FROM events WHERE node = ? AND kind = 'xid'", (node,))
        assert ev == [{"code": 79}], node


@pytest.mark.parametrize("case", sorted(_hostile()))
def test_one_bad_node_costs_its_answer_alone(fresh_db, case, caplog) -> None:
    bad = _hostile()[case]
    polls = [_healthy("good1"), bad, _healthy("good2")]
    with caplog.at_level(logging.WARNING, logger="fleetmon.storage"):
        ingest_polls(fresh_db, polls)
    _assert_healthy_stored(fresh_db)
    row = query(fresh_db, "SELECT status, minutes_cursor, events_cursor, last_error FROM nodes WHERE name = ?",
                (case,))
    assert len(row) == 1
    assert row[0]["status"] == "unreachable"
    assert (row[0]["minutes_cursor"], row[0]["events_cursor"]) == (0, 0)  # the cursors did not advance
    reason = row[0]["last_error"]
    assert reason.startswith("storage refused the answer: ") and "\n" not in reason and len(reason) < 400
    assert query(fresh_db, "SELECT ok, error FROM poll_log WHERE node = ?", (case,)) == [{"ok": 0, "error": reason}]
    # Nothing of the bad answer was kept.
    assert query(fresh_db, "SELECT count(*) AS n FROM gpus WHERE node = ?", (case,))[0]["n"] == 0
    assert query(fresh_db, "SELECT count(*) AS n FROM events WHERE node = ? AND kind = 'xid'", (case,))[0]["n"] == 0
    # Logged once, with the node's name and the reason.
    lines = [r.getMessage() for r in caplog.records if case in r.getMessage()]
    assert lines == [f"node {case}: {reason}"]
    assert query(fresh_db, "PRAGMA integrity_check") == [{"integrity_check": "ok"}]


def test_wrong_type_at_the_boundary_names_the_field(fresh_db) -> None:
    refused: dict[str, str] = {}
    ingest_polls(fresh_db, [_hostile()["hot"], _healthy("good1")], refused=refused)
    assert list(refused) == ["hot"]
    assert "power_default_w 'hot' is not a number (str)" in refused["hot"]
    assert query(fresh_db, "SELECT count(*) AS n FROM gpus WHERE node = 'good1'")[0]["n"] == 2


def test_every_hostile_node_in_one_cycle_and_the_next_good_answer(fresh_db) -> None:
    bad = _hostile()
    refused: dict[str, str] = {}
    ingest_polls(fresh_db, [_healthy("good1"), *bad.values(), _healthy("good2")], refused=refused)
    assert sorted(refused) == sorted(bad)
    _assert_healthy_stored(fresh_db)
    # The node fixed: its next answer is stored, and it is back.
    ingest_polls(fresh_db, [poll("value", T0 + 400, minutes=minutes_for("value", 2, T0, 2), minutes_cursor=4)])
    row = query(fresh_db, "SELECT status, minutes_cursor, last_error FROM nodes WHERE name = 'value'")
    assert row == [{"status": "ok", "minutes_cursor": 4, "last_error": None}]


def test_collect_once_stores_the_healthy_nodes_and_exits_0(tmp_path, monkeypatch, capsys) -> None:
    """The collector's --once path: the refused node is a failed poll with the store's reason; exit 0."""
    import argparse

    from fleetmon.collector import main, poller

    t0 = int(time.time()) // 60 * 60 - 3600  # recent: the collector's retention keeps these minutes
    bad = _hostile()["value"]
    crafted = {p.node: p for p in (_healthy("good1", t0), bad, _healthy("good2", t0))}

    async def crafted_poll_all(targets: list[Any], **kw: Any) -> list[NodePoll]:
        return [crafted[t.name] for t in targets]

    monkeypatch.setattr(poller, "poll_all", crafted_poll_all)
    fleet = tmp_path / "fleet.toml"
    fleet.write_text("".join(f'[[node]]\nname = "{n}"\nurl = "http://127.0.0.1:9"\n\n' for n in crafted),
                     encoding="utf-8")
    db_path = tmp_path / "fleet.db"
    args = argparse.Namespace(fleet=str(fleet), db=str(db_path), once=True, interval=None, verbose=False)
    assert main.run_collect(args) == 0
    out, err = capsys.readouterr()
    assert "polled 3 nodes: 2 ok, 0 unreachable, 1 refused by the store" in out
    assert "value: storage refused the answer: OverflowError" in err
    from storage.db import open_database

    db = open_database(db_path)
    try:
        _assert_healthy_stored(db)
        assert query(db, "SELECT status FROM nodes WHERE name = 'value'") == [{"status": "unreachable"}]
    finally:
        db.close()
