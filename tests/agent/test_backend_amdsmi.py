"""Issue 23 item 2: the agent's amdsmi backend (AMD's binding) through its simulated twin, served over real HTTP
and read back by the collector's client; its fall-back to the amd-smi tool; ``fleetmon agent --simulate amd-mi100``."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from fleetmon.agent.amdsmi import open_amdsmi
from fleetmon.agent.main import start_agent
from fleetmon.collector.client import Target, poll_all
from fleetmon.records import NodePoll
from fleetmon.sim import vendors

REPO = Path(__file__).resolve().parents[2]


def _scenario(tmp_path: Path, faults: list[dict[str, Any]] | None = None, count: int = 2) -> Path:
    path = tmp_path / "mi100.json"
    path.write_text(json.dumps({"backend": "amdsmi", "model": "mi100", "count": count, "seed": 3,
                                "faults": faults or []}))
    return path


def _start(tmp_path: Path, scenario: Path) -> Any:
    def open_backend(**kw: Any) -> Any:
        return open_amdsmi(simulate=str(scenario), node_name="mi100-node", **kw)

    return start_agent(open_backend=open_backend, buffer=tmp_path / "agent.db", port=0, loop=False,
                       watch_xid=False, simulate=True, node_name="mi100-node", read_timeout_s=20.0)


def _poll(url: str) -> NodePoll:
    (p,) = asyncio.run(poll_all([Target("n", url)], timeout_s=10.0))
    assert p.ok, p.error
    return p


def test_amdsmi_backend_serves_the_binding_s_readings_to_the_collector(tmp_path):
    path = _scenario(tmp_path, [{"kind": "ecc_uncorrectable", "gpu": 1, "onset_s": 0, "block": "UMC", "count": 1}])
    agent = _start(tmp_path, path)
    try:
        assert agent.session.name == "amdsmi"
        p = _poll(agent.url)
        entry = vendors.resolve(str(path))
        prof = vendors.PROFILES["mi100"]
        assert p.info.values["vendor"] == "amd" and p.info.values["runtime_version"] == prof.runtime
        assert p.info.values["driver_version"] == prof.driver
        assert len(p.gpus) == 2
        for gpu, sample in zip(p.gpus, p.latest):
            twin = vendors.device_state(entry, gpu.index, 0.0, "mi100-node")
            assert gpu.uuid == f"GPU-{twin['uuid_hex']}"  # the unique id as rocm-smi's and amd-smi's parsers spell it
            assert gpu.values["serial"] == twin["serial"] and gpu.values["pci_bus_id"] == twin["bus_id"]
            assert gpu.values["name"] == "AMD Instinct MI100" and gpu.values["vendor"] == "amd"
            assert gpu.values["memory_total_mib"] == prof.memory_mib
            assert gpu.values["power_enforced_w"] == prof.power_cap_w
            assert gpu.values["temp_slowdown_c"] == prof.slowdown_c
            assert gpu.values["firmware_version"] == "00.54.29.00" and gpu.values["architecture"] == "cdna"
            v, st = sample.values, sample.status
            extra = agent.session.extra(gpu.index)
            assert extra["temp_sensor"] == "junction" and v["temp_c"] == extra["temp_junction_c"]
            assert prof.junction_c - 1 <= v["temp_c"] <= prof.slowdown_c
            assert prof.idle_w - 2 <= v["power_w"] <= prof.busy_w + 2 and v["power_limit_w"] == prof.power_cap_w
            assert v["mem_used_mib"] + v["mem_free_mib"] == prof.memory_mib
            assert v["fan_pct"] is None and st["fan_pct"] == "unsupported"  # never 0
            assert v["pcie_gen"] == 4 and v["pcie_width"] == 16
        assert p.latest[0].values["ecc_unc_vol"] == 0 and p.latest[1].values["ecc_unc_vol"] == 1
        blocks = agent.session.extra(1)["ecc_blocks"]
        assert blocks["UMC"] == {"correctable": 0, "uncorrectable": 1, "deferred": 0}
        assert agent.session.extra(1)["bad_pages"] == 1 and agent.session.extra(1)["ecc_deferred"] == 0
    finally:
        agent.close()


def test_amdsmi_device_leaving_the_list_is_lost(tmp_path):
    path = _scenario(tmp_path, [{"kind": "vanish", "gpu": 0, "onset_s": 0.5}])
    agent = _start(tmp_path, path)
    try:
        time.sleep(0.6)
        samples = agent.sampler.sample_once()
        assert [s.state for s in samples] == ["lost", "ok"]
        events = [e for e in _poll(agent.url).events if e.kind == "gpu_lost"]
        assert len(events) == 1 and "amdsmi no longer lists it" in events[0].message
    finally:
        agent.close()


@pytest.mark.parametrize(("error", "why"), [("version", "amdsmi_init failed"),
                                            ("library", "amd-smi library cannot be loaded")])
def test_amdsmi_init_failure_falls_back_to_the_amd_smi_tool_with_one_log_line(tmp_path, caplog, error, why):
    path = _scenario(tmp_path, [{"kind": "init_error", "error": error}])
    with caplog.at_level(logging.WARNING, logger="fleetmon.agent.amdsmi"):
        backend = open_amdsmi(simulate=str(path), node_name="mi100-node", inventory_wait_s=20.0)
    try:
        lines = [r.getMessage() for r in caplog.records if r.name == "fleetmon.agent.amdsmi"]
        assert len(lines) == 1 and why in lines[0] and "through the amd-smi tool instead" in lines[0]
        assert backend.name == "amd-smi" and len(backend.indices()) == 2
        assert backend.inventory(0).values["memory_total_mib"] == vendors.PROFILES["mi100"].memory_mib
        assert why in str(getattr(backend, "note", ""))
    finally:
        backend.close()


def test_fleetmon_agent_simulate_amd_mi100_serves_through_amdsmi(tmp_path):
    port_file = tmp_path / "port"
    cmd = [sys.executable, "-m", "fleetmon", "agent", "--simulate", "amd-mi100", "--buffer", str(tmp_path / "b.db"),
           "--port", "0", "--port-file", str(port_file), "--interval", "2"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists():
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.1)
        url = f"http://127.0.0.1:{port_file.read_text()}"
        p = _poll(url)
        assert p.info.values["vendor"] == "amd" and len(p.gpus) == 4
        assert {g.values["name"] for g in p.gpus} == {"AMD Instinct MI100"}
        with urllib.request.urlopen(url + "/v1/health", timeout=10) as resp:
            assert json.loads(resp.read())["sampler"]["backend"] == "amdsmi"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
