"""Issue 11, item 3: one GPU's garbage in the database never breaks the report or the preflight.

An old database (written before the store checked types) holds a string in a numeric inventory
field; it is planted with plain sqlite3. Every report still renders for the whole fleet and names
the GPU whose data could not be judged (finding kind ``data-unjudgeable``).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from fleetmon.health import engine
from fleetmon.health.findings import Finding
from fleetmon.health.rules import RULES
from storage.db import open_database
from helpers import T0, Feeder, uuid_of

REPO = Path(__file__).resolve().parents[2]
NOW = T0 + 7200
BAD = uuid_of("n2", 1)


def fleetmon(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fleetmon", *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO)


@pytest.fixture(scope="module")
def garbage_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("garbage") / "fleet.db"
    db = open_database(path)
    Feeder(db).feed(T0, NOW)
    db.close()
    conn = sqlite3.connect(path)
    with conn:
        (inv,) = conn.execute("SELECT inventory FROM gpus WHERE uuid = ?", (BAD,)).fetchone()
        doc = json.loads(inv)
        doc["values"]["power_default_w"] = "hot"
        doc["values"]["pcie_max_gen"] = "four"
        doc["values"]["temp_slowdown_c"] = [1, 2]
        conn.execute("UPDATE gpus SET inventory = ?, power_default_w = 'hot' WHERE uuid = ?",
                     (json.dumps(doc), BAD))
    conn.close()
    return path


@pytest.mark.parametrize("fmt", ["text", "json", "html"])
def test_report_renders_for_the_whole_fleet_and_names_the_gpu(garbage_db, fmt, tmp_path) -> None:
    args = ["report", "--db", str(garbage_db), "--now", str(NOW)]
    if fmt == "json":
        args.append("--json")
    if fmt == "html":
        args += ["--html", str(tmp_path / "r.html")]
    proc = fleetmon(*args)
    assert proc.returncode in (0, 2), proc.stderr
    assert "Traceback" not in proc.stderr
    if fmt == "json":
        doc = json.loads(proc.stdout)
        found = [f for f in doc["findings"] if f["kind"] == "data-unjudgeable"]
        assert [f["gpu_uuid"] for f in found] == [BAD]
        assert "power_default_w" in json.dumps(found[0]["evidence"])
        assert {n["name"]: n["verdict"] for n in doc["nodes"]} == {"n1": "pass", "n2": "warn", "n3": "pass"}
    elif fmt == "text":
        assert "Status: WARN — 0 fail, 1 warn, 2 pass (3 nodes, 6 GPUs)" in proc.stdout
        assert "data-unjudgeable" in proc.stdout and "could not judge" in proc.stdout
    else:
        assert "data-unjudgeable" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_preflight_renders_for_every_node(garbage_db) -> None:
    proc = fleetmon("preflight", "--db", str(garbage_db), "--now", str(NOW), "--nodes", "n[1-3]", "--json")
    assert "Traceback" not in proc.stderr
    assert proc.returncode in (0, 2), proc.stderr
    doc = json.loads(proc.stdout)
    by_name = {n["name"]: n for n in doc["nodes"]}
    assert sorted(by_name) == ["n1", "n2", "n3"]
    assert by_name["n1"]["verdict"] == "go" and by_name["n3"]["verdict"] == "go"
    assert by_name["n2"]["verdict"] == "go"  # a warning: the node's other data was judged and is fine
    notes = [w for w in by_name["n2"]["warnings"] if w.endswith("[data-unjudgeable]")]
    assert notes and all(w.startswith("n2 gpu1: could not judge") for w in notes), notes


def test_a_crashing_rule_is_isolated_to_the_gpu_that_breaks_it() -> None:
    """Engine level: a rule that raises on one GPU still judges every other GPU, and says which failed."""
    from fleetmon.sim.synthetic import SimNode, generate

    history, _ = generate([SimNode(f"g{i}", "a100", 2, group="a") for i in range(1, 4)], NOW, days=1,
                          minute_hours=2, seed=3)
    victim = history.gpus[3].uuid

    def fragile(h, t=None):
        out = []
        for g in h.gpus:
            if g.uuid == victim:
                raise TypeError("'<' not supported between instances of 'str' and 'float'")
            out.append(Finding("inventory-change", "info", g.node, g.uuid, h.now, h.now, summary="seen"))
        return out

    fragile.__name__ = "check_fragile"
    found = engine.evaluate(history, rules=[*RULES, fragile])
    seen = {f.gpu_uuid for f in found if f.kind == "inventory-change" and f.summary == "seen"}
    assert seen == {g.uuid for g in history.gpus} - {victim}
    bad = [f for f in found if f.kind == "data-unjudgeable"]
    assert [f.gpu_uuid for f in bad] == [victim]
    assert bad[0].evidence["rules"] == ["check_fragile"]
    assert "TypeError" in bad[0].evidence["errors"][0]
