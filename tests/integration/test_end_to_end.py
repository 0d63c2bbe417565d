"""End to end: real agent subprocesses on 127.0.0.1 → collector → SQLite → Qt window."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fleetmon.collector.poller import Collector
from fleetmon.demo import start_agents, stop_agents, write_fleet
from fleetmon.fleet import load_fleet
from storage.db import open_database, query
from storage.queries import fleet_latest

pytestmark = pytest.mark.integration

NODES = [("node-a", "healthy-a100"), ("node-b", "geforce")]


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    """Two simulated agents, one collector pass; yields (db path, fleet path, agents)."""
    folder = tmp_path_factory.mktemp("e2e")
    agents = start_agents(folder, NODES, interval_s=1.0)
    try:
        fleet = folder / "fleet.toml"
        write_fleet(fleet, agents, interval_s=2)
        db_path = folder / "fleet.db"
        db = open_database(db_path)
        polls = Collector(load_fleet(fleet), db).run_cycle()
        db.close()
        yield db_path, fleet, agents, polls
    finally:
        stop_agents(agents)


def test_one_pass_stores_nodes_gpus_and_readings(collected):
    db_path, _, _, polls = collected
    assert [p.ok for p in polls] == [True, True], [p.error for p in polls]
    db = open_database(db_path, readonly=True)
    nodes = {r["name"]: r for r in query(db, "SELECT * FROM nodes")}
    assert set(nodes) == {"node-a", "node-b"}
    assert all(n["status"] == "ok" and n["last_error"] is None for n in nodes.values())
    assert nodes["node-a"]["hostname"] == "node-a"
    assert nodes["node-a"]["driver_version"] and nodes["node-b"]["driver_version"]
    rows = fleet_latest(db)
    by_node: dict[str, list] = {}
    for r in rows:
        by_node.setdefault(r.node, []).append(r)
    assert len(by_node["node-a"]) == 8 and len(by_node["node-b"]) == 4
    assert [r.index for r in by_node["node-a"]] == list(range(8))
    for r in rows:
        assert r.uuid.startswith("GPU-")
        assert 10 < r.values["temp_c"] < 100
        assert r.values["power_w"] > 0
        assert r.latest_ts is not None
    assert {r.model for r in by_node["node-a"]} == {"NVIDIA A100-SXM4-80GB"}
    assert {r.model for r in by_node["node-b"]} == {"NVIDIA GeForce RTX 3090"}
    # GeForce has no ECC: recorded as unsupported, never as a value or a failure.
    geforce = by_node["node-b"][0]
    assert geforce.values["ecc_unc_vol"] is None
    assert geforce.status["ecc_unc_vol"] == "unsupported"
    a100_inv = json.loads(query(db, "SELECT inventory FROM gpus WHERE node='node-a' LIMIT 1")[0]["inventory"])
    assert a100_inv["values"]["ecc_mode_current"] is True
    assert query(db, "SELECT count(*) AS n FROM poll_log WHERE ok = 1")[0]["n"] == 2
    db.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_node_is_recorded_and_delays_nobody(collected, tmp_path):
    _, _, agents, _ = collected
    dead_port = _free_port()
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(
        "[fleet]\ntimeout_s = 2\n"
        + "".join(f'[[node]]\nname = "{a.name}"\nurl = "{a.url}"\n' for a in agents)
        + f'[[node]]\nname = "dead"\nurl = "http://127.0.0.1:{dead_port}"\n')
    db = open_database(tmp_path / "f.db")
    t0 = time.monotonic()
    polls = {p.node: p for p in Collector(load_fleet(fleet), db).run_cycle()}
    elapsed = time.monotonic() - t0
    assert polls["node-a"].ok and polls["node-b"].ok
    assert not polls["dead"].ok and "connect" in polls["dead"].error
    assert elapsed < 2.0, f"a refused connection held the cycle for {elapsed:.2f} s"
    row = query(db, "SELECT status, last_error FROM nodes WHERE name='dead'")[0]
    assert row["status"] == "unreachable" and "connect" in row["last_error"]
    db.close()


def test_collect_once_command(collected, tmp_path):
    _, fleet, _, _ = collected
    db_path = tmp_path / "cli.db"
    proc = subprocess.run([sys.executable, "-m", "fleetmon", "collect", "--fleet", str(fleet), "--db", str(db_path),
                           "--once"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "polled 2 nodes: 2 ok, 0 unreachable" in proc.stdout
    db = open_database(db_path, readonly=True)
    assert len(fleet_latest(db)) == 12
    db.close()


@pytest.mark.gui
def test_main_window_lists_the_collected_gpus(collected, qtbot):
    from ui.main_window import MainWindow
    from ui.models.fleet_table import COLUMNS

    db_path, _, _, _ = collected
    window = MainWindow(str(db_path), refresh_s=60)
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.rows_shown, timeout=10000) as blocker:
        window.request_load()
    assert blocker.args == [12]
    model = window.table.model()
    assert model.rowCount() == 12
    cells = [[model.data(model.index(r, c)) for c in range(len(COLUMNS))] for r in range(model.rowCount())]
    assert {row[0] for row in cells} == {"node-a", "node-b"}
    assert sum(1 for row in cells if row[2] == "NVIDIA GeForce RTX 3090") == 4
    temp, power, status = (COLUMNS.index(c) for c in ("Temp", "Power / limit", "Status"))
    assert all(row[COLUMNS.index("Vendor")] == "NVIDIA" for row in cells)
    assert all(row[temp].endswith("°C") for row in cells)
    assert all(row[power].endswith(" W") and "—" not in row[power] for row in cells)
    assert all(row[status] == "ok" for row in cells)
    window.close()


def test_agent_without_gpu_exits_2_with_one_line(tmp_path):
    # The real pynvml is installed here but there is no driver: NVML cannot start.
    proc = subprocess.run([sys.executable, "-m", "fleetmon", "agent", "--port", "0", "--buffer",
                           str(tmp_path / "b.db")], capture_output=True, text=True, timeout=60)
    if proc.returncode == 0:
        pytest.skip("a real NVIDIA driver is present")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fleetmon agent: "), proc.stderr
    assert "NVML" in lines[0] or "pynvml" in lines[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.gui
def test_selecting_a_gpu_plots_its_history(collected, qtbot, tmp_path):
    import shutil

    from fleetmon.records import GpuMinute, NodePoll
    from storage.ingest import ingest_polls
    from ui.main_window import MainWindow

    db_path, _, _, _ = collected
    copy = tmp_path / "hist.db"
    shutil.copy(db_path, copy)
    db = open_database(copy)
    uuid = fleet_latest(db)[0].uuid
    now = int(time.time()) // 60 * 60
    minutes = [GpuMinute(seq=i + 1, ts=now - 60 * (90 - i), uuid=uuid, index=0, n=12,
                         values={"temp_c_mean": 50.0 + i % 7, "temp_c_max": 60.0, "power_w_mean": 250.0,
                                 "power_w_max": 300.0, "sm_clock_mhz_mean": 1400.0, "util_gpu_pct_mean": 90.0})
               for i in range(90)]
    ingest_polls(db, [NodePoll(node="node-a", url="http://x", ts=time.time(), ok=True, minutes=minutes,
                               minutes_cursor=90)])
    db.close()
    window = MainWindow(str(copy), refresh_s=60)
    qtbot.addWidget(window)
    with qtbot.waitSignal(window.rows_shown, timeout=10000):
        window.request_load()
    row = next(r for r in range(window.model.rowCount()) if window.model.row(r).uuid == uuid)
    with qtbot.waitSignal(window.history_shown, timeout=10000) as blocker:
        window.select_gpu(row)
    assert blocker.args == [uuid, 90]
    x, y = window.detail.plot.mean_curves["temp_c"].getData()
    assert len(x) == 90 and float(y[0]) == 50.0
    # The card's own slowdown temperature (from its stored inventory) is drawn as the limit line.
    line = window.detail.plot.ref_lines["temp_c"]
    ro = open_database(copy, readonly=True)
    inventory = json.loads(query(ro, "SELECT inventory FROM gpus WHERE uuid = ?", (uuid,))[0]["inventory"])
    ro.close()
    assert line.isVisible() and line.value() == inventory["values"]["temp_slowdown_c"]
    assert "node-a GPU 0" in window.detail.title.text()
    window.close()
