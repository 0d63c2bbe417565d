"""Health-engine outputs: findings life cycle, derating upsert, reports; GPU and node loaders."""

from __future__ import annotations

from storage.findings import (derating_history, findings_between, last_report, open_findings, save_derating,
                              save_findings, save_report)
from storage.health_input import load_hourly
from storage.queries import gpus as load_gpus
from storage.queries import nodes as load_nodes
from storage.rows import DeratingDay, NewFinding
from storage.ingest import ingest_polls
from storage.rollup import rollup
from helpers import T0, fresh_db, minutes_for, poll, uuid_of  # noqa: F401


def _f(key, severity="warning", **kw):
    return NewFinding(**{"key": key, "kind": key.split(":")[0], "severity": severity, "node": "n1",
                         "gpu_uuid": uuid_of("n1", 0), "evidence": {"count": 1}, "action": "watch it", **kw})


def _keys(rows):
    return [r.key for r in rows]


def test_findings_new_resolve_reopen_worsen(fresh_db):
    db = fresh_db
    out = save_findings(db, [_f("ecc:a"), _f("temp:a", "info")], now=T0)
    assert _keys(out.new) == ["ecc:a", "temp:a"] and out.resolved == out.worsened == ()
    assert out.new[0].evidence == {"count": 1} and out.new[0].first_seen == T0

    out = save_findings(db, [_f("ecc:a"), _f("temp:a", "critical")], now=T0 + 60)
    assert out.new == () and _keys(out.worsened) == ["temp:a"]
    assert out.worsened[0].severity == "critical" and out.worsened[0].last_seen == T0 + 60

    out = save_findings(db, [_f("temp:a", "critical")], now=T0 + 120)
    assert _keys(out.resolved) == ["ecc:a"] and out.resolved[0].resolved_at == T0 + 120
    assert _keys(open_findings(db)) == ["temp:a"]

    out = save_findings(db, [_f("temp:a", "warning"), _f("ecc:a")], now=T0 + 180)
    assert _keys(out.new) == ["ecc:a"] and _keys(out.reopened) == ["ecc:a"] and out.worsened == ()
    reopened = out.new[0]
    assert reopened.resolved_at is None and reopened.first_seen == T0 + 180
    assert sorted(_keys(open_findings(db))) == ["ecc:a", "temp:a"]

    # Open at some moment of the window: ecc:a's first episode (T0..T0+120) overlaps [T0+60, T0+100).
    assert sorted(_keys(findings_between(db, T0, T0 + 100))) == ["temp:a"]
    assert sorted(_keys(findings_between(db, T0 + 150, T0 + 200))) == ["ecc:a", "temp:a"]
    assert save_findings(db, [], now=T0 + 240).resolved and open_findings(db) == []


def test_integer_severities_compare_as_numbers(fresh_db):
    save_findings(fresh_db, [_f("x:1", 2)], now=T0)
    assert _keys(save_findings(fresh_db, [_f("x:1", 3)], now=T0 + 1).worsened) == ["x:1"]


def test_derating_upsert_and_history(fresh_db):
    ingest_polls(fresh_db, [poll("n1", T0, gpus=2)])
    g0, g1 = uuid_of("n1", 0), uuid_of("n1", 1)
    assert save_derating(fresh_db, [
        DeratingDay(gpu_uuid=g0, day=T0, sm_clock_busy_mhz=1400.0, clock_ratio=0.99),
        DeratingDay(gpu_uuid=g1, day=T0, clock_ratio=0.7, clock_vs_fleet=0.71),
        DeratingDay(gpu_uuid="GPU-unknown", day=T0, clock_ratio=1.0),
    ]) == 2
    save_derating(fresh_db, [DeratingDay(gpu_uuid=g0, day=T0, clock_ratio=0.9),
                             DeratingDay(gpu_uuid=g0, day=T0 + 86400, clock_ratio=0.8)])
    hist = derating_history(fresh_db, g0, T0, T0 + 2 * 86400)
    assert [(r.day, r.clock_ratio, r.sm_clock_busy_mhz) for r in hist] == [(T0, 0.9, None),
                                                                                    (T0 + 86400, 0.8, None)]
    assert len(derating_history(fresh_db, None, T0, T0 + 1)) == 2


def test_reports_remember_the_previous_one(fresh_db):
    assert last_report(fresh_db, "weekly") is None
    save_report(fresh_db, "weekly", T0, {"open": ["ecc:a"]})
    rid = save_report(fresh_db, "weekly", T0 + 7 * 86400, {"open": []})
    save_report(fresh_db, "daily", T0 + 8 * 86400, {"x": 1})
    last = last_report(fresh_db, "weekly")
    assert last is not None and last.id == rid and last.summary == {"open": []}
    before = last_report(fresh_db, "weekly", before=T0 + 86400)
    assert before is not None and before.summary == {"open": ["ecc:a"]}


def test_load_gpus_nodes_and_hourly(fresh_db):
    ingest_polls(fresh_db, [poll("n1", T0 + 3600, gpus=2, minutes=minutes_for("n1", 2, T0, 3))])
    rollup(fresh_db, T0 + 3600)
    gpus = load_gpus(fresh_db)
    assert [g.uuid for g in gpus] == [uuid_of("n1", 0), uuid_of("n1", 1)]
    g = gpus[0]
    assert (g.node, g.index, g.serial, g.power_enforced_w, g.state) == ("n1", 0, "SN-n1-0", 400.0, "ok")
    assert g.inventory["memory_total_mib"] == 81920 and g.first_seen == T0 + 3600
    assert [n.name for n in load_nodes(fresh_db)] == ["n1"]
    hourly = load_hourly(fresh_db, T0, T0 + 3600, fields=["power_w"])
    assert set(hourly) == {uuid_of("n1", 0), uuid_of("n1", 1)}
    assert hourly[uuid_of("n1", 0)][0]["ts"] == T0 and hourly[uuid_of("n1", 0)][0]["power_w_max"] > 0


def test_findings_keep_the_onset_not_the_evaluation_time(fresh_db):
    from dataclasses import replace

    f = NewFinding(key="power-brake|gpu:G1|", kind="power-brake", severity="warning", node="n1",
                   gpu_uuid="G1", first_seen=T0 + 60, last_seen=T0 + 540, evidence={"minutes": 7})
    save_findings(fresh_db, [f], now=T0 + 600)
    (row,) = open_findings(fresh_db)
    assert (row.first_seen, row.last_seen) == (T0 + 60, T0 + 540)
    save_findings(fresh_db, [replace(f, last_seen=T0 + 1140)], now=T0 + 1200)
    (row,) = open_findings(fresh_db)
    assert (row.first_seen, row.last_seen) == (T0 + 60, T0 + 1140)
    save_findings(fresh_db, [], now=T0 + 3000)  # stopped recurring: resolved, kept
    save_findings(fresh_db, [replace(f, first_seen=T0 + 5000, last_seen=T0 + 5100)], now=T0 + 5200)
    (row,) = open_findings(fresh_db)
    assert row.first_seen == T0 + 5000  # reopened at the new onset
