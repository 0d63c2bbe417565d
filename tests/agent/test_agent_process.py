"""`python -m fleetmon agent` as a real process: a fake pynvml first on PYTHONPATH, a hung GPU, restarts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from fleetmon.agent.nvml import SAMPLE_FIELDS
from fleetmon.fields import INVENTORY_FIELDS, NODE_FIELDS

REPO = Path(__file__).resolve().parents[2]
FAKE_PYNVML = REPO / "tests" / "helpers" / "fakenvml"


class Agent:
    def __init__(self, proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.proc = proc
        self.log = log
        self.url = f"http://127.0.0.1:{port}"

    def get(self, path: str, token: str | None = None) -> tuple[int, Any]:
        req = urllib.request.Request(self.url + path)
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, None

    def stop(self) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        return self.proc.returncode, self.log.read_text(errors="replace")


@pytest.fixture
def spawn(tmp_path):
    agents: list[Agent] = []

    def start(*args: str, env: dict[str, str] | None = None, timeout_s: float = 20.0) -> Agent:
        port_file = tmp_path / f"port{len(agents)}"
        log = tmp_path / f"agent{len(agents)}.log"
        cmd = [sys.executable, "-m", "fleetmon", "agent", "--port", "0", "--port-file", str(port_file), *args]
        with open(log, "wb") as err:
            proc = subprocess.Popen(cmd, cwd=REPO, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
                                    stderr=err)
        deadline = time.monotonic() + timeout_s
        while not port_file.exists():
            if proc.poll() is not None:
                raise AssertionError(f"agent exited with {proc.returncode}: {log.read_text(errors='replace')}")
            if time.monotonic() > deadline:
                proc.kill()
                raise AssertionError(f"agent did not listen within {timeout_s} s")
            time.sleep(0.05)
        agent = Agent(proc, int(port_file.read_text()), log)
        agents.append(agent)
        return agent

    yield start
    for a in agents:
        a.stop()


def test_fake_pynvml_first_on_pythonpath_serves_every_field(spawn, tmp_path):
    env = {"PYTHONPATH": os.pathsep.join([str(FAKE_PYNVML), str(REPO)]), "FLEETMON_SIM_SCENARIO": "healthy-a100"}
    agent = spawn("--buffer", str(tmp_path / "fake.db"), "--interval", "1", env=env)
    code, doc = agent.get("/v1/node")
    assert code == 200
    node = doc["node"]
    assert all(node["values"].get(k) is not None or node["status"].get(k) == "unsupported" for k in NODE_FIELDS)
    assert node["values"]["vendor"] == "nvidia" and node["status"]["firmware_version"] == "unsupported"
    assert doc["node"]["values"]["gpu_count"] == 8 and doc["node"]["xid_source"]
    for gpu in doc["gpus"]:
        for key in INVENTORY_FIELDS:
            assert key in gpu["values"]
            assert gpu["values"][key] is not None or gpu["status"][key] == "unsupported", key
    _, latest = agent.get("/v1/latest")
    assert len(latest["samples"]) == 8
    for s in latest["samples"]:
        for key in SAMPLE_FIELDS:
            assert s["values"][key] is not None or s["status"][key] == "unsupported", key
    _, health = agent.get("/v1/health")
    assert health["xid"]["nvml"] in ("nvml", "nvml (registering)")
    code, err = agent.stop()
    assert code == 0 and "Traceback" not in err


def test_hung_gpu_agent_listens_and_answers_fast(spawn, tmp_path):
    t0 = time.monotonic()
    agent = spawn("--simulate", "hung", "--buffer", str(tmp_path / "hung.db"), "--interval", "0.5")
    assert time.monotonic() - t0 < 10
    time.sleep(1.0)
    t1 = time.monotonic()
    code, latest = agent.get("/v1/latest")
    assert code == 200 and time.monotonic() - t1 < 1.0
    by_index = {s["index"]: s for s in latest["samples"]}
    assert set(by_index[1]["status"].values()) == {"failed"}
    assert all(by_index[i]["values"]["temp_c"] is not None for i in (0, 2, 3))
    assert time.time() - latest["sampled_at"] < 2.0, "the other GPUs are sampled on schedule"
    _, health = agent.get("/v1/health")
    assert health["sampler"]["hung_gpus"] == [1]
    code, err = agent.stop()
    assert code == 0, err


def test_events_cursor_across_process_restarts(spawn, tmp_path):
    db = str(tmp_path / "restart.db")
    first = spawn("--simulate", "lost", "--buffer", db, "--interval", "0.5")
    _, page = first.get("/v1/events?after=0")
    kinds = [e["kind"] for e in page["records"]]
    assert "agent_start" in kinds and "gpu_lost" in kinds
    seqs = [e["seq"] for e in page["records"]]
    assert seqs == list(range(1, len(seqs) + 1))
    cursor, buffer_id = page["next"], page["buffer_id"]
    _, node = first.get("/v1/node")
    lost_uuid = node["gpus"][2]["uuid"]
    assert first.stop()[0] == 0

    second = spawn("--simulate", "lost", "--buffer", db, "--interval", "0.5")
    _, page = second.get(f"/v1/events?after={cursor}")
    assert page["buffer_id"] == buffer_id and page["gap"] is False
    seqs2 = [e["seq"] for e in page["records"]]
    assert seqs2 and seqs2 == list(range(cursor + 1, cursor + 1 + len(seqs2)))
    assert page["records"][0]["kind"] == "agent_start"
    _, node = second.get("/v1/node")
    assert node["gpus"][2]["uuid"] == lost_uuid  # the same lost GPU, named the same way


def test_token_file_from_the_command_line(spawn, tmp_path):
    token = tmp_path / "token"
    token.write_text("0123456789abcdef-cli-token\n")
    token.chmod(0o600)
    agent = spawn("--simulate", "healthy", "--buffer", str(tmp_path / "tok.db"), "--token-file", str(token))
    assert agent.get("/v1/node")[0] == 401
    assert agent.get("/v1/node", token="0123456789abcdef-cli-token")[0] == 200


def test_no_driver_scenario_exits_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fleetmon", "agent", "--simulate", "no-driver", "--port", "0",
                           "--buffer", str(tmp_path / "b.db")], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "Driver Not Loaded" in proc.stderr and "Traceback" not in proc.stderr
