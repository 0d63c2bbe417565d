"""The report and the pre-run review per vendor (issue 23): keys added to the JSON (never renamed), a "By vendor"
line in the text and HTML of a mixed fleet, an NVIDIA-only fleet's text as before. Real subprocesses, as cron
runs them."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fleetmon.records import NodeInfo, NodePoll
from helpers import T0, Feeder, inventory, minutes_for
from storage.db import open_database
from storage.ingest import ingest_polls

REPO = Path(__file__).resolve().parents[2]
NOW = T0 + 7200


def fleetmon(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fleetmon", *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO)


def _amd_poll(node: str) -> NodePoll:
    """An AMD node as the collector stores one (wire schema 2: vendor and runtime in its answer)."""
    gpus = [dataclasses.replace(g, name="AMD Instinct MI100", values={**g.values, "vendor": "amd"})
            for g in (inventory(node, i) for i in range(2))]
    start = NOW - 3600
    return NodePoll(node=node, url=f"http://{node}:9400", ts=NOW, ok=True, info=NodeInfo(
        hostname=node, agent_version="0.1", values={"driver_version": "6.3.6", "vendor": "amd",
                                                     "runtime_version": "6.1.2", "gpu_count": 2}),
        gpus=gpus, latest=[], minutes=minutes_for(node, 2, start, 60), minutes_cursor=120)


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vendors")
    out = {}
    for name in ("nvidia", "mixed"):
        path = folder / f"{name}.db"
        db = open_database(path)
        Feeder(db, nodes=("n1", "n2")).feed(T0, NOW)
        if name == "mixed":
            ingest_polls(db, [_amd_poll("mi1")])
        db.close()
        out[name] = path
    return out


def test_the_report_counts_gpus_and_versions_per_vendor(dbs):
    doc = json.loads(fleetmon("report", "--db", str(dbs["mixed"]), "--now", str(NOW), "--json").stdout)
    s = doc["summary"]
    assert s["gpus_by_vendor"] == {"nvidia": 4, "amd": 2} and s["nodes_by_vendor"] == {"nvidia": 2, "amd": 1}
    assert s["drivers_by_vendor"] == {"nvidia": {"550.54.15": 2}, "amd": {"6.3.6": 1}}
    assert s["runtimes_by_vendor"]["amd"] == {"6.1.2": 1}
    assert s["driver_versions"] == {"550.54.15": 2, "6.3.6": 1} and s["gpus"] == 6  # the old keys stay
    text = fleetmon("report", "--db", str(dbs["mixed"]), "--now", str(NOW)).stdout
    line = next(x for x in text.splitlines() if x.strip().startswith("By vendor:"))
    assert "NVIDIA 4 GPUs on 2 nodes (driver 550.54.15 ×2" in line
    assert "AMD 2 GPUs on 1 node (driver 6.3.6 ×1, ROCm 6.1.2 ×1)" in line


def test_an_nvidia_only_report_reads_as_before(dbs):
    text = fleetmon("report", "--db", str(dbs["nvidia"]), "--now", str(NOW)).stdout
    assert "By vendor" not in text and "Drivers:" in text
    doc = json.loads(fleetmon("report", "--db", str(dbs["nvidia"]), "--now", str(NOW), "--json").stdout)
    assert doc["summary"]["gpus_by_vendor"] == {"nvidia": 4}


def test_the_prerun_review_per_vendor(dbs, tmp_path):
    html = tmp_path / "pre.html"
    proc = fleetmon("preflight", "--db", str(dbs["mixed"]), "--now", str(NOW), "--nodes", "n[1-2],mi1", "--days",
                    "1", "--json", "--html", str(html))
    doc = json.loads(proc.stdout)
    assert {n["name"]: n["vendor"] for n in doc["nodes"]} == {"n1": "nvidia", "n2": "nvidia", "mi1": "amd"}
    assert set(doc["by_vendor"]) == {"nvidia", "amd"}  # (the JSON sorts its keys)
    amd = doc["by_vendor"]["amd"]
    assert amd["nodes"] == 1 and amd["gpus"] == 2 and sorted(amd["go"] + amd["no_go"]) == ["mi1"]
    assert set(doc) >= {"go", "no_go", "exclude", "nodes", "findings"}  # the old keys stay
    text = fleetmon("preflight", "--db", str(dbs["mixed"]), "--now", str(NOW), "--nodes", "n[1-2],mi1",
                    "--days", "1").stdout
    assert any(x.startswith("By vendor: NVIDIA ") and "AMD " in x for x in text.splitlines())
    assert "mi1  (2 GPUs, AMD)" in text
    assert "By vendor: NVIDIA" in html.read_text()
