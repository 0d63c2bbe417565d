"""Ingest: idempotency, the compact encoding, inventory changes, reachability events."""

from __future__ import annotations

import random

import pytest

from fleetmon.fields import COUNTER_NAMES, GAUGE_NAMES
from fleetmon.records import Event
from storage.db import query
from storage.health_input import load_minutes
from storage.ingest import ingest_polls
from storage.queries import events, fleet_latest, inventory_changes, placements, poll_log
from storage.schema import (GAUGE_SCALE, _encode_values_fast, _encode_values_slow, decode_status, encode_minute,
                            encode_status, row_decoder)
from helpers import T0, fresh_db, inventory, minute, minute_values, minutes_for, poll, uuid_of  # noqa: F401

TABLES = ("nodes", "gpus", "samples", "events", "poll_log", "inventory_changes", "meta")


def _snapshot(db):
    return {t: query(db, f"SELECT * FROM {t} ORDER BY 1, 2") for t in TABLES}


def test_same_poll_twice_is_stored_once(fresh_db):
    ev = [Event(seq=1, ts=T0 + 10, kind="xid", uuid=uuid_of("n1", 0), code=79, message="fell off the bus")]
    p = poll("n1", T0 + 300, minutes=minutes_for("n1", 2, T0, 4), events=ev, minutes_cursor=8, events_cursor=1)
    assert ingest_polls(fresh_db, [p]) == 8
    first = _snapshot(fresh_db)
    assert ingest_polls(fresh_db, [p]) == 8
    assert _snapshot(fresh_db) == first
    assert len(first["samples"]) == 8 and len(first["events"]) == 1


def test_cursors_only_move_forward(fresh_db):
    ingest_polls(fresh_db, [poll("n1", T0, minutes_cursor=10, events_cursor=5)])
    ingest_polls(fresh_db, [poll("n1", T0 + 30, minutes_cursor=3, events_cursor=None)])
    row = query(fresh_db, "SELECT minutes_cursor, events_cursor FROM nodes")[0]
    assert row == {"minutes_cursor": 10, "events_cursor": 5}


def test_a_new_agent_buffer_resets_cursors_and_keeps_its_events(fresh_db):
    from dataclasses import replace

    old = replace(poll("n1", T0, events=[Event(seq=1, ts=T0, kind="xid", code=13, message="old buffer")],
                       minutes_cursor=500, events_cursor=7), buffer_id="buf-a")
    ingest_polls(fresh_db, [old])
    # The agent's buffer was wiped: its numbering starts again at 1 under a new identity.
    new = replace(poll("n1", T0 + 60, events=[Event(seq=1, ts=T0 + 60, kind="xid", code=79, message="new buffer")],
                       minutes_cursor=3, events_cursor=1), buffer_id="buf-b")
    ingest_polls(fresh_db, [new])
    row = query(fresh_db, "SELECT minutes_cursor, events_cursor, buffer_id FROM nodes")[0]
    assert row == {"minutes_cursor": 3, "events_cursor": 1, "buffer_id": "buf-b"}
    codes = sorted(r["code"] for r in query(fresh_db, "SELECT code FROM events WHERE kind = 'xid'"))
    assert codes == [13, 79]
    # The same buffer again: cursors only move forward.
    ingest_polls(fresh_db, [replace(poll("n1", T0 + 120, minutes_cursor=2, events_cursor=1), buffer_id="buf-b")])
    assert query(fresh_db, "SELECT minutes_cursor FROM nodes")[0]["minutes_cursor"] == 3


def test_encoding_round_trip_within_resolution():
    rng = random.Random(7)
    for busy in (True, False):
        values = minute_values(rng, busy, energy_mj=123_456_789)
        values["ecc_corr_vol"] = 3
        status = {"fan_pct": "unsupported", "ecc_unc_agg": "failed", "temp_c": "gpu_lost"}
        row = encode_minute(5, T0, 12, "lost", values, status)
        cols, decode = row_decoder("minute")
        by_col = dict(zip(["gpu_id", "ts", "n", "lost"] + cols[3:], row))
        out = decode(tuple(by_col[c] for c in cols))
        assert out["state"] == "lost" and out["n"] == 12 and out["status"] == status
        for g in GAUGE_NAMES:
            tol = 0.5 / GAUGE_SCALE.get(g, 1) + 1e-9
            for st in ("min", "mean", "max"):
                want, got = values[f"{g}_{st}"], out[f"{g}_{st}"]
                assert (want is None) == (got is None), (g, st)
                if want is not None:
                    assert abs(got - want) <= tol, (g, st, want, got)
                    assert isinstance(got, float)
        assert out["energy_mj"] == 123_457_000  # whole joules
        for c in COUNTER_NAMES[1:]:
            assert out[c] == values[c] and isinstance(out[c], int)
        for k in ("thr_gpu_idle", "busy_n", "pcie_gen", "pcie_width", "pcie_gen_busy_min", "throttle_mask"):
            assert out[k] == values[k]


def test_fast_and_slow_encoders_agree_and_bad_values_become_null():
    rng = random.Random(3)
    for _ in range(50):
        v = minute_values(rng, rng.random() < 0.5, energy_mj=rng.randrange(10**12))
        assert _encode_values_fast(v) == _encode_values_slow(v)
    v = minute_values(rng, True)
    v["power_w_mean"] = "garbage"
    v["ecc_corr_vol"] = "7x"
    row = encode_minute(1, T0, 12, "ok", v, None)
    cols, decode = row_decoder("minute")
    out = decode((row[1], *row[2:]))
    assert out["power_w_mean"] is None and out["ecc_corr_vol"] is None and out["temp_c_mean"] is not None


def test_status_encoding_round_trip():
    assert encode_status({}) is None and decode_status(None) == {}
    s = {"pcie_width": "failed", "temp_c": "unsupported", "throttle_mask": "gpu_lost"}
    assert isinstance(encode_status(s), int) and decode_status(encode_status(s)) == s
    odd = {"not_a_field": "failed"}
    assert isinstance(encode_status(odd), str) and decode_status(encode_status(odd)) == odd


def test_load_minutes_returns_decoded_rows(fresh_db):
    ms = minutes_for("n1", 2, T0, 3)
    ingest_polls(fresh_db, [poll("n1", T0 + 300, minutes=ms)])
    got = load_minutes(fresh_db, T0, T0 + 3600)
    assert set(got) == {uuid_of("n1", 0), uuid_of("n1", 1)}
    rows = got[uuid_of("n1", 0)]
    assert [r["ts"] for r in rows] == [T0, T0 + 60, T0 + 120]
    assert rows[0]["power_w_max"] == ms[0].values["power_w_max"]
    assert rows[0]["status"] == {"fan_pct": "unsupported"} and rows[0]["state"] == "ok"
    assert load_minutes(fresh_db, T0, T0 + 3600, nodes=["other"]) == {}


def _kinds(db):
    return [(c.kind, c.gpu_uuid) for c in inventory_changes(db)]


def test_inventory_changes_each_kind(fresh_db):
    db = fresh_db
    ingest_polls(db, [poll("n1", T0, gpus=2), poll("n2", T0, gpus=1)])
    # A node's first inventory enrolls its cards: how the fleet came to be known, not a hardware change.
    assert _kinds(db) == [("enrolled", uuid_of("n1", 0)), ("enrolled", uuid_of("n1", 1)),
                          ("enrolled", uuid_of("n2", 0))]
    ingest_polls(db, [poll("n1", T0 + 30, gpus=2)])  # nothing changed
    assert len(inventory_changes(db)) == 3

    g0, g1 = uuid_of("n1", 0), uuid_of("n1", 1)
    inv = [inventory("n1", 0, vbios="96.00.01.00.01", serial="SN-NEW", power_enforced_w=300.0),
           inventory("n1", 1)]
    ingest_polls(db, [poll("n1", T0 + 60, inv=inv, driver="555.42.02")])
    changes = inventory_changes(db, since=T0 + 60)
    assert [(c.kind, c.gpu_uuid) for c in changes] == [
        ("driver_changed", None), ("vbios_changed", g0), ("serial_changed", g0), ("power_limit_changed", g0)]
    assert changes[0].old == "550.54.15" and changes[0].new == "555.42.02"
    assert changes[3].old["enforced_w"] == 400.0 and changes[3].new["enforced_w"] == 300.0
    # What the health engine reads: every kind but the enrolments, filters combined.
    assert [c.kind for c in inventory_changes(db, except_kinds=("enrolled",))] == [c.kind for c in changes]
    assert [c.kind for c in inventory_changes(db, uuid=g0, except_kinds=("enrolled", "serial_changed"))] == [
        "vbios_changed", "power_limit_changed"]

    # GPU 1 leaves n1 (disappeared), then shows up in n2's slot 1 (appeared + moved).
    ingest_polls(db, [poll("n1", T0 + 90, inv=[inv[0]], driver="555.42.02")])
    ingest_polls(db, [poll("n2", T0 + 120, inv=[inventory("n2", 0), inventory("n2", 1, uuid=g1, serial="SN-n1-1")])])
    changes = inventory_changes(db, since=T0 + 90)
    assert [(c.kind, c.gpu_uuid) for c in changes] == [
        ("disappeared", g1), ("appeared", g1), ("moved", g1)]
    assert changes[2].old["node"] == "n1" and changes[2].new == {
        "node": "n2", "index": 1, "pci_bus_id": "00000000:11:00.0"}
    states = {r.uuid: (r.node, r.state) for r in fleet_latest(db)}
    assert states[g1] == ("n2", "ok")

    # Same node, other slot.
    ingest_polls(db, [poll("n1", T0 + 150, inv=[inventory("n1", 3, uuid=g0, vbios="96.00.01.00.01", serial="SN-NEW", power_enforced_w=300.0)], driver="555.42.02")])
    moved = inventory_changes(db, since=T0 + 150, node="n1")
    assert [(c.kind, c.old["index"], c.new["index"]) for c in moved] == [("moved", 0, 3)]
    places = placements(db, g1)
    assert [(p.node, p.index, p.until) for p in places] == [("n1", 1, T0 + 90), ("n2", 1, None)]


def test_failed_or_empty_poll_never_reports_disappearance(fresh_db):
    ingest_polls(fresh_db, [poll("n1", T0, gpus=2)])
    ingest_polls(fresh_db, [poll("n1", T0 + 30, ok=False), poll("n1", T0 + 60, inv=[])])
    assert [c.kind for c in inventory_changes(fresh_db)] == ["enrolled", "enrolled"]


def test_a_card_added_to_a_known_node_appears(fresh_db):
    ingest_polls(fresh_db, [poll("n1", T0, gpus=1)])
    ingest_polls(fresh_db, [poll("n1", T0 + 60, gpus=2)])
    assert [(c.kind, c.gpu_uuid) for c in inventory_changes(fresh_db)] == [
        ("enrolled", uuid_of("n1", 0)), ("appeared", uuid_of("n1", 1))]


def test_reachability_events(fresh_db):
    db = fresh_db
    ingest_polls(db, [poll("n1", T0, ok=False)])  # never seen ok: no transition
    ingest_polls(db, [poll("n1", T0 + 30)])
    assert events(db) == []
    ingest_polls(db, [poll("n1", T0 + 60, ok=False)])
    ingest_polls(db, [poll("n1", T0 + 90, ok=False)])
    ingest_polls(db, [poll("n1", T0 + 120)])
    got = events(db, node="n1")
    assert [(e.kind, e.ts, e.seq) for e in got] == [("node_unreachable", T0 + 60, None),
                                                             ("node_back", T0 + 120, None)]
    assert "refused" in (got[0].message or "")
    assert [e.kind for e in events(db, kinds=["node_back"])] == ["node_back"]
    assert [p.ok for p in poll_log(db, "n1")] == [False, True, False, False, True]


def test_agent_and_collector_events_coexist(fresh_db):
    ev = [Event(seq=s, ts=T0 + s, kind="xid", code=48) for s in (1, 2)]
    ingest_polls(fresh_db, [poll("n1", T0 + 10, events=ev)])
    ingest_polls(fresh_db, [poll("n1", T0 + 20, ok=False)])
    ingest_polls(fresh_db, [poll("n1", T0 + 30, events=ev)])  # resent: ignored
    assert [e.kind for e in events(fresh_db)] == ["xid", "xid", "node_unreachable", "node_back"]


def test_minute_for_unknown_gpu_creates_it(fresh_db):
    m = minute("n1", 5, T0)
    ingest_polls(fresh_db, [poll("n1", T0 + 60, minutes=[m])])
    assert uuid_of("n1", 5) in {r.uuid for r in fleet_latest(fresh_db)}
    assert fresh_db.execute("SELECT count(*) FROM samples").fetchone()[0] == 1


@pytest.mark.parametrize("stat", ["min", "max"])
def test_gauge_without_spread_costs_no_payload(stat):
    v = minute_values(random.Random(1), busy=False)
    row = encode_minute(1, T0, 12, "ok", v, None)
    i = 4 + 3 * GAUGE_NAMES.index("temp_c") + (1 if stat == "min" else 2)
    assert row[i] == 0  # SQLite stores integer 0 in the record header alone


def test_latest_sample_state_reaches_the_gpu_row(fresh_db):
    from dataclasses import replace

    ingest_polls(fresh_db, [poll("n1", T0, gpus=2)])
    p = poll("n1", T0 + 30, gpus=2)
    p = replace(p, latest=[replace(s, state="lost") if s.index == 1 else s for s in p.latest])
    ingest_polls(fresh_db, [p])
    rows = {r.index: r for r in fleet_latest(fresh_db)}
    assert rows[0].state == "ok" and rows[1].state == "lost"
    assert rows[1].latest_ts == T0 + 30 and rows[1].values["temp_c"] == 40
    ingest_polls(fresh_db, [poll("n1", T0 + 60, gpus=2)])  # back
    assert {r.index: r.state for r in fleet_latest(fresh_db)} == {0: "ok", 1: "ok"}


def test_cards_another_process_stored_meanwhile_are_not_inserted_twice(tmp_path) -> None:
    # A collector's connection keeps the GPU rows between batches; `fleetmon import-smi` (another
    # connection, another process) stored card C meanwhile. Before: the collector's next answer with C
    # inserted it again, failed that node on gpus.uuid's UNIQUE and kept failing it in every cycle.
    from dataclasses import replace

    from helpers import T0, inventory, poll

    from storage.db import open_database, query
    from storage.ingest import ingest_polls

    path = tmp_path / "fleet.db"
    collector, importer = open_database(str(path)), open_database(str(path))
    refused: dict[str, str] = {}
    ingest_polls(collector, [poll("n1", T0, inv=[inventory("n1", 0, uuid="A")])], refused=refused)
    capture = replace(poll("n1", T0 + 10, inv=[inventory("n1", 1, uuid="C")]), url="file:///tmp/n1-smi.xml")
    ingest_polls(importer, [capture])
    ingest_polls(collector, [poll("n1", T0 + 60, inv=[inventory("n1", 0, uuid="A"), inventory("n1", 1, uuid="C")])],
                 refused=refused)
    assert refused == {}
    assert query(collector, "SELECT uuid, node FROM gpus ORDER BY uuid") == [
        {"uuid": "A", "node": "n1"}, {"uuid": "C", "node": "n1"}]
    assert query(collector, "SELECT status FROM nodes WHERE name = 'n1'") == [{"status": "ok"}]
    collector.close()
    importer.close()
