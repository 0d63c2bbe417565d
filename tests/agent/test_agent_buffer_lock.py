"""One buffer, one agent, one node (issue 11, item 6): real `python -m fleetmon agent` processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

REPO = Path(__file__).resolve().parents[2]


class Proc:
    def __init__(self, proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.proc = proc
        self.log = log
        self.url = f"http://127.0.0.1:{port}"

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=5) as resp:
            return json.loads(resp.read())

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.log.read_text(errors="replace")


def command(port_file: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "fleetmon", "agent", "--port", "0", "--port-file", str(port_file),
            "--interval", "1", *args]


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Any]:
    procs: list[Proc] = []

    def start(*args: str) -> Proc:
        n = len(procs)
        port_file, log = tmp_path / f"port{n}", tmp_path / f"agent{n}.log"
        with open(log, "wb") as err:
            proc = subprocess.Popen(command(port_file, *args), cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 30
        while not port_file.exists():
            if proc.poll() is not None:
                raise AssertionError(f"agent exited with {proc.returncode}: {log.read_text(errors='replace')}")
            if time.monotonic() > deadline:
                proc.kill()
                raise AssertionError("agent did not listen within 30 s")
            time.sleep(0.05)
        agent = Proc(proc, int(port_file.read_text()), log)
        procs.append(agent)
        return agent

    yield start
    for p in procs:
        p.stop()


def test_a_second_agent_on_the_same_buffer_is_refused(spawn: Any, tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    first = spawn("--simulate", "healthy", "--node-name", "node-a", "--buffer", str(db))
    before = first.get("/v1/node")
    second = subprocess.run(command(tmp_path / "port-x", "--simulate", "healthy-a100", "--node-name", "node-b",
                                    "--buffer", str(db)), cwd=REPO, capture_output=True, text=True, timeout=30)
    assert second.returncode == 2, second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and f"PID {first.proc.pid}" in lines[0] and str(db) in lines[0], second.stderr
    assert "Traceback" not in second.stderr
    assert not (tmp_path / "port-x").exists()
    after = first.get("/v1/node")  # the first agent serves on, its own GPUs only
    assert after["buffer_id"] == before["buffer_id"]
    assert [g["uuid"] for g in after["gpus"]] == [g["uuid"] for g in before["gpus"]]
    assert first.proc.poll() is None


def test_the_lock_goes_with_a_killed_agent(spawn: Any, tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    first = spawn("--simulate", "healthy", "--node-name", "node-a", "--buffer", str(db))
    buffer_id = first.get("/v1/node")["buffer_id"]
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(timeout=10)
    second = spawn("--simulate", "healthy", "--node-name", "node-a", "--buffer", str(db))
    assert second.get("/v1/node")["buffer_id"] == buffer_id  # the same node's history goes on


def test_a_buffer_of_another_node_is_moved_aside(spawn: Any, tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    first = spawn("--simulate", "healthy", "--node-name", "node-a", "--buffer", str(db))
    old = first.get("/v1/node")
    old_uuids = {g["uuid"] for g in old["gpus"]}
    time.sleep(1.2)
    assert first.get("/v1/minutes?after=0")["records"] or first.get("/v1/events?after=0")["records"]
    assert "Traceback" not in first.stop()

    second = spawn("--simulate", "healthy", "--node-name", "node-b", "--buffer", str(db))
    node = second.get("/v1/node")
    assert node["buffer_id"] != old["buffer_id"]
    new_uuids = {g["uuid"] for g in node["gpus"]}
    events = second.get("/v1/events?after=0")
    minutes = second.get("/v1/minutes?after=0")
    assert events["buffer_id"] == node["buffer_id"]
    assert all(e["uuid"] is None or e["uuid"] in new_uuids for e in events["records"])
    assert [e["kind"] for e in events["records"]].count("agent_start") == 1
    assert all(m["uuid"] in new_uuids for m in minutes["records"])
    assert not old_uuids & new_uuids
    aside = sorted(p.name for p in tmp_path.glob("agent.db.node-a.*"))
    assert len(aside) == 1, sorted(p.name for p in tmp_path.iterdir())
    log = second.stop()
    notes = [line for line in log.splitlines() if "another node" in line]
    assert len(notes) == 1 and aside[0] in notes[0] and "node-a" in notes[0], log


def test_same_host_with_other_gpus_starts_a_new_buffer(spawn: Any, tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    first = spawn("--simulate", "healthy", "--node-name", "node-a", "--buffer", str(db))
    old = first.get("/v1/node")
    first.stop()
    second = spawn("--simulate", "healthy-h100", "--node-name", "node-a", "--buffer", str(db))
    node = second.get("/v1/node")
    assert not {g["uuid"] for g in old["gpus"]} & {g["uuid"] for g in node["gpus"]}
    assert node["buffer_id"] != old["buffer_id"]
    assert len(list(tmp_path.glob("agent.db.node-a.*"))) == 1
    assert os.path.exists(db)
