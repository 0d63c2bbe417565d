"""A real Prometheus scrapes simulated agents; dashboard queries written for dcgm-exporter return data.

Three agents (``python -m fleetmon agent --simulate``: 8x H100 with GPM, 8x A100, 4x RTX 3090) and a
Prometheus (Debian package ``prometheus``) on 127.0.0.1, with the shipped configuration
(packaging/prometheus/: job, relabelling to fleetmon node names, the derating recording rules) at a
1 s scrape and evaluation interval and targets from ``fleetmon fleet prometheus-targets``. The queries
are those of dcgm-exporter's Grafana dashboard, per ``instance`` and ``gpu``. Bounded to 40 s.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGING = REPO / "packaging" / "prometheus"
PROMETHEUS = shutil.which("prometheus") or ("/usr/bin/prometheus" if os.path.exists("/usr/bin/prometheus") else None)
NODES = {"h100-node": "healthy-h100", "a100-node": "healthy-a100", "rig-3090": "geforce"}
GPUS = {"h100-node": 8, "a100-node": 8, "rig-3090": 4}
DEADLINE_S = 40.0

pytestmark = pytest.mark.skipif(PROMETHEUS is None,
                                reason="prometheus is not installed (apt-get install -y prometheus)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_file(path: Path, proc: subprocess.Popen, until: float) -> str:
    while time.monotonic() < until:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        if proc.poll() is not None:
            raise AssertionError(f"agent exited with {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.05)
    raise AssertionError(f"{path} did not appear in time")


def _query(base: str, expr: str) -> list[dict]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as resp:
        doc = json.load(resp)
    assert doc["status"] == "success", doc
    result: list[dict] = doc["data"]["result"]
    return result


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    """(base URL, tmp dir) of a Prometheus scraping the three simulated agents."""
    from fleetmon.cli.fleet import prometheus_targets
    from fleetmon.fleet import load_fleet

    tmp = tmp_path_factory.mktemp("prom")
    until = time.monotonic() + 20.0
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs: list[subprocess.Popen] = []
    try:
        for name, scenario in NODES.items():
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "fleetmon", "agent", "--simulate", scenario, "--node-name", name,
                 "--port", "0", "--port-file", str(tmp / f"{name}.port"), "--buffer", str(tmp / f"{name}.db"),
                 "--interval", "1"], cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True))
        fleet_toml = "".join(
            f'[[node]]\nname = "{name}"\nurl = "http://127.0.0.1:{_wait_file(tmp / f"{name}.port", proc, until)}"\n\n'
            for (name, _), proc in zip(NODES.items(), procs))
        (tmp / "fleet.toml").write_text(fleet_toml)
        groups, skipped = prometheus_targets(load_fleet(tmp / "fleet.toml"))
        assert not skipped and len(groups) == 3
        (tmp / "fleetmon-targets.json").write_text(json.dumps(groups))
        config = (PACKAGING / "prometheus.yml").read_text().replace("interval: 15s", "interval: 1s").replace(
            "scrape_timeout: 10s", "scrape_timeout: 1s")
        (tmp / "prometheus.yml").write_text(config)
        shutil.copy(PACKAGING / "fleetmon-rules.yml", tmp / "fleetmon-rules.yml")
        port = _free_port()
        procs.append(subprocess.Popen(
            [PROMETHEUS, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}"], cwd=tmp, stdout=subprocess.DEVNULL,
            stderr=open(tmp / "prometheus.log", "w")))
        base = f"http://127.0.0.1:{port}"
        while True:
            try:
                with urllib.request.urlopen(base + "/-/ready", timeout=1) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            assert procs[-1].poll() is None, (tmp / "prometheus.log").read_text()[-2000:]
            assert time.monotonic() < until, "prometheus did not become ready"
            time.sleep(0.1)
        yield base, tmp
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


DASHBOARD_QUERIES = {
    # name -> (PromQL, instances expected to answer)
    "temperature": ("avg by (instance, gpu) (DCGM_FI_DEV_GPU_TEMP)", set(NODES)),
    "power": ("sum by (instance, gpu) (DCGM_FI_DEV_POWER_USAGE)", set(NODES)),
    "sm clock (Hz)": ("avg by (instance, gpu) (DCGM_FI_DEV_SM_CLOCK) * 1000000", set(NODES)),
    "utilization": ("avg by (instance, gpu) (DCGM_FI_DEV_GPU_UTIL)", set(NODES)),
    "framebuffer used": ("avg by (instance, gpu) (DCGM_FI_DEV_FB_USED)", set(NODES)),
    "tensor activity": ("avg by (instance, gpu) (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE)", {"h100-node"}),
    "energy rate": ("sum by (instance, gpu) (rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[30s]))", set(NODES)),
    "clock ratio (recording rule)": ("fleetmon:gpu_clock_ratio:busy", {"h100-node", "a100-node", "rig-3090"}),
    "power limit ratio (recording rule)": ("fleetmon:gpu_power_limit_ratio", set(NODES)),
}


def test_dashboard_queries_return_data(prometheus):
    base, tmp = prometheus
    until = time.monotonic() + DEADLINE_S
    answers: dict[str, list[dict]] = {}
    while True:
        missing = []
        for name, (expr, instances) in DASHBOARD_QUERIES.items():
            result = _query(base, expr)
            per_instance: dict[str, set[str]] = {}
            for r in result:
                per_instance.setdefault(r["metric"].get("instance", ""), set()).add(r["metric"].get("gpu", ""))
            # A rate needs the counter to have moved inside its window: right after start (or on a busy
            # machine) two scrapes may still hold the same sample, and the rate reads 0 until the next one.
            settled = name != "energy rate" or all(float(r["value"][1]) > 0 for r in result)
            if settled and {i for i, gpus in per_instance.items() if len(gpus) == GPUS.get(i)} >= instances:
                answers[name] = result
            else:
                missing.append(f"{name}: {sorted(per_instance)}")
        if not missing:
            break
        assert time.monotonic() < until, f"no data within {DEADLINE_S} s for {missing}"
        time.sleep(0.5)
    # The relabelling names instances by fleetmon node, and the values are in dcgm-exporter's units.
    for r in answers["sm clock (Hz)"]:
        assert 1e8 < float(r["value"][1]) < 4e9, r
    for r in answers["energy rate"]:  # mJ/s = mW: a GPU draws between 10 W and 1 kW
        assert 1e4 < float(r["value"][1]) < 1e6, r
    for r in answers["tensor activity"]:
        assert 0.0 <= float(r["value"][1]) <= 1.0, r
    for r in answers["clock ratio (recording rule)"]:
        assert 0.5 < float(r["value"][1]) < 1.2 and r["metric"]["modelName"], r
    assert {r["metric"]["instance"] for r in answers["temperature"]} == set(NODES)


def test_labels_are_dcgm_exporters_current_ones(prometheus):
    base, _ = prometheus
    until = time.monotonic() + DEADLINE_S
    while not (result := _query(base, 'DCGM_FI_DEV_GPU_TEMP{instance="a100-node",gpu="0"}')):
        assert time.monotonic() < until
        time.sleep(0.5)
    labels = result[0]["metric"]
    assert labels["hostname"] == "a100-node" and "Hostname" not in labels
    assert labels["pci_bus_id"].startswith("00000000:") and labels["UUID"].startswith("GPU-")
    assert labels["modelName"] == "NVIDIA A100-SXM4-80GB" and labels["device"] == "nvidia0"
    assert labels["job"] == "fleetmon" and labels["node"] == "a100-node"
    assert labels["fleetmon_address"].startswith("127.0.0.1:")
    xid = _query(base, 'DCGM_FI_DEV_XID_ERRORS{instance="a100-node"}')
    assert xid and all(r["metric"].get("err_code") == "0" for r in xid)
    # What a GPU cannot give has no series: no GPM on the A100, no NVLink on the RTX 3090.
    assert not _query(base, 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{instance="a100-node"}')
    assert not _query(base, 'DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{instance="rig-3090"}')
