"""Issue 20, item 4, with real parts: a dcgm-exporter node that lists a healthy agent's GPU UUIDs.

A real simulated agent (``fleetmon agent --simulate`` with its own ``--buffer``, a subprocess) and a
real HTTP server on 127.0.0.1 serving a dcgm-exporter scrape of the agent's UUIDs ("Evil GPU"). The
fleet file names the hijacker FIRST; four collector cycles on a fresh database (the real collector:
client, sources, ingest). The healthy node keeps its cards, every minute its agent served is stored
and none of its records is dropped; the report names the hijacker with ``uuid-conflict``, never the
healthy node. Before the fix the first node in the fleet file held the UUIDs: the healthy node had
0 samples and the report failed it with ``uuid-conflict``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.hostile_dcgm import Exporter, dcgm_scrape

from fleetmon.collector.poller import Collector
from fleetmon.demo import start_agents, stop_agents
from fleetmon.fleet import load_fleet
from storage.db import open_database, query

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[object]:
    agents = start_agents(tmp_path / "agents", [("healthy-01", "a100*2")], interval_s=1.0, timeout_s=45.0,
                          extra_args=["--backfill-minutes", "10"])
    try:
        yield agents[0]
    finally:
        stop_agents(agents)


def test_a_scrape_of_a_healthy_agents_uuids_first_in_the_fleet_file_takes_nothing(tmp_path: Path, agent) -> None:
    uuids = sorted(g["uuid"] for g in _get(agent.url + "/v1/node")["gpus"])
    assert len(uuids) == 2
    exporter = Exporter(dcgm_scrape(uuids))
    try:
        fleet_file = tmp_path / "fleet.toml"
        fleet_file.write_text(
            '[fleet]\nname = "hijack"\ntimeout_s = 5\n\n'
            f'[[node]]\nname = "evil-01"\nurl = "{exporter.url}"\ngroup = "a100"\n\n'
            f'[[node]]\nname = "healthy-01"\nurl = "{agent.url}"\ngroup = "a100"\n', encoding="utf-8")
        db_path = tmp_path / "fleet.db"
        db = open_database(str(db_path))
        collector = Collector(load_fleet(fleet_file), db)
        for _ in range(4):
            polls = collector.run_cycle(force=True)
            assert {p.node: p.ok for p in polls} == {"evil-01": True, "healthy-01": True}
        collector.maintain(force_health=True)
        assert exporter.scrapes >= 4
        served = _get(agent.url + "/v1/minutes?after=0&limit=5000")
        last_seq = served["last_seq"]
        served_keys = {(m["uuid"], m["ts"]) for m in served["records"] if m["seq"] <= last_seq}
        cards = {r["uuid"]: r["node"] for r in query(db, "SELECT uuid, node FROM gpus")}
        stored = {(r["uuid"], r["ts"]) for r in query(
            db, "SELECT g.uuid, s.ts FROM samples s JOIN gpus g ON g.id = s.gpu_id WHERE g.node = 'healthy-01'")}
        conflicts = query(db, "SELECT node, holder, sum(dropped) AS dropped FROM gpu_claim_conflicts "
                              "GROUP BY node, holder")
        cursor = query(db, "SELECT minutes_cursor FROM nodes WHERE name = 'healthy-01'")[0]["minutes_cursor"]
        db.close()
    finally:
        exporter.close()
    assert cards == {u: "healthy-01" for u in uuids}
    assert cursor >= 20 and served_keys and {k for k in served_keys if k[0] in uuids} <= stored
    assert len(stored) >= 20  # ten backfilled minutes of two GPUs, and the live ones
    assert conflicts == [{"node": "evil-01", "holder": "healthy-01", "dropped": 4 * 3 * 2}]  # 0 of the healthy node

    report = subprocess.run([sys.executable, "-m", "fleetmon", "report", "--db", str(db_path), "--json"],
                            capture_output=True, text=True, timeout=120, cwd=REPO)
    assert report.returncode in (0, 1, 2), report.stderr
    doc = json.loads(report.stdout)
    conflict = [(f["node"], f["state"]) for f in doc["findings"] if f["kind"] == "uuid-conflict"]
    assert conflict == [("evil-01", "open")]
    verdicts = {n["name"]: n["verdict"] for n in doc["nodes"]}
    assert verdicts["evil-01"] == "fail"
    assert verdicts["healthy-01"] != "fail", [f for f in doc["findings"] if f["node"] == "healthy-01"]
