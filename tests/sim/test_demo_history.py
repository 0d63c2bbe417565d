"""The demo fleet's generated history: deterministic, and every story is a finding of the report."""

from __future__ import annotations

import pytest

from fleetmon.assess import run_report
from fleetmon.sim.demo_history import FLEET_SIZE, STORIES, demo_fleet, generate_history
from storage.db import open_database

NOW = 1_780_000_000.0
DAYS = 3


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    db = open_database(tmp_path_factory.mktemp("demo") / "fleet.db")
    generate_history(db, nodes=FLEET_SIZE, days=DAYS, now=NOW)
    run = run_report(db, NOW, DAYS * 86400, None, save=False)
    db.close()
    return run.result


def test_every_story_is_a_finding_on_its_node_and_gpu(report):
    found = {(f.kind, f.node, f.gpu_index) for f in report.findings}
    for story, (kind, node, gpus) in STORIES.items():
        for gpu in gpus or (None,):
            assert (kind, node, gpu) in found, (story, sorted(found))


def test_healthy_nodes_have_no_finding(report):
    story_nodes = {n.name for n in demo_fleet() if n.story}
    healthy = {n.name for n in demo_fleet()} - story_nodes
    assert len(healthy) >= 10
    assert not [f for f in report.findings if f.node in healthy]
    assert all(report.verdicts[n] == "pass" for n in healthy)


def _dump(path) -> list[tuple]:
    db = open_database(path)
    try:
        conn = db.conn
        rows = []
        for table in ("gpus", "samples", "hourly", "daily", "events", "inventory_changes"):
            rows += [(table, *r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2")]  # noqa: S608
        return rows
    finally:
        db.close()


def test_deterministic_for_a_seed(tmp_path):
    # a day and a half, the last 6 hours as raw minutes: every kind of row (raw minutes, hours compacted from
    # representative minutes, days); the raw minutes of a whole day made the test three times slower
    for name in ("a.db", "b.db"):
        db = open_database(tmp_path / name)
        generate_history(db, nodes=4, days=1.5, now=NOW, seed=7, minute_hours=6)
        db.close()
    assert _dump(tmp_path / "a.db") == _dump(tmp_path / "b.db")
    db = open_database(tmp_path / "c.db")
    generate_history(db, nodes=4, days=1.5, now=NOW, seed=8, minute_hours=6)
    db.close()
    assert _dump(tmp_path / "c.db") != _dump(tmp_path / "a.db")
