"""The window's collector in a child process (`fleetmon collect --control stdio`, ui.collector_process).

Real parts: a simulated agent served over HTTP on 127.0.0.1, a real child
process, a real SQLite file and its writer lock.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fleetmon.collector.lock import WriterLock
from fleetmon.sim.fleet import make_node
from helpers import dead_url
from storage.db import open_database, query

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def live_fleet(tmp_path: Path):
    node = make_node("live", gpus=2)
    node.serve(0.1)
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'[fleet]\ntimeout_s = 1\npoll_interval_s = 2\n'
                     f'[[node]]\nname = "live"\nurl = "{node.url}"\n'
                     f'[[node]]\nname = "down"\nurl = "{dead_url()}"\n', encoding="utf-8")
    db = tmp_path / "fleet.db"
    open_database(db).close()
    yield fleet, db
    node.close()


def _nodes(db: Path) -> dict[str, str]:
    conn = open_database(db, readonly=True)
    try:
        return {r["name"]: r["status"] for r in query(conn, "SELECT name, status FROM nodes")}
    finally:
        conn.close()


def test_the_child_collects_reports_cycles_pauses_and_stops(qtbot, live_fleet):
    from ui.collector_process import CollectorProcess

    fleet, db = live_fleet
    child = CollectorProcess(str(db), str(fleet), 1.0)
    states: list[str] = []
    child.state_changed.connect(states.append)
    with qtbot.waitSignal(child.cycle_finished, timeout=60_000) as cycle:
        child.start()
    assert cycle.args == [2, 1]  # two nodes polled, the dead one unreachable
    assert child.pid not in (0, os.getpid())
    assert f"pid={child.pid}" in Path(str(db) + ".lock").read_text()  # the child holds the writer lock
    assert any(s.startswith(f"collector: child process {child.pid}, every 1 s") for s in states), states
    assert _nodes(db) == {"live": "ok", "down": "unreachable"}  # stored by the child, read here

    child.pause()
    qtbot.wait(300)
    before = child.cycles
    qtbot.wait(2500)  # a 1 s interval: no cycle while paused
    assert child.cycles == before
    with qtbot.waitSignal(child.cycle_finished, timeout=30_000):
        child.resume()

    child.stop()
    assert not child.running and child.state == "collector: stopped"
    lock = WriterLock(str(db))
    assert lock.acquire(), "the stopped child released the writer lock"
    lock.release()


def test_a_child_that_cannot_collect_says_why_and_poll_now_restarts_it(qtbot, live_fleet):
    from ui.collector_process import CollectorProcess

    fleet, db = live_fleet
    holder = WriterLock(str(db))
    assert holder.acquire()
    child = CollectorProcess(str(db), str(fleet), 1.0)
    try:
        with qtbot.waitSignal(child.state_changed, timeout=60_000,
                              check_params_cb=lambda s: "exited with code 1" in s) as blocker:
            child.start()
        message = blocker.args[0]
        assert "another collector writes" in message and "Poll now restarts it" in message, message
        assert "Traceback" not in "\n".join(child.stderr_tail)
    finally:
        holder.release()
    with qtbot.waitSignal(child.cycle_finished, timeout=60_000):
        child.poll_now()  # the lock is free now: the restarted child collects
    child.stop()


def test_the_end_of_input_stops_the_child_and_bad_commands_are_answered(live_fleet):
    """A child never outlives its window: when the pipe closes (the window died), it stops."""
    fleet, db = live_fleet
    proc = subprocess.Popen([sys.executable, "-m", "fleetmon", "collect", "--db", str(db), "--fleet", str(fleet),
                             "--interval", "30", "--control", "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=REPO)
    try:
        assert proc.stdout is not None and proc.stdin is not None
        ready = json.loads(proc.stdout.readline())
        assert ready == {"event": "ready", "interval": 30.0, "nodes": 2}
        proc.stdin.write("reboot-everything\n")
        proc.stdin.flush()
        events = [json.loads(proc.stdout.readline()) for _ in range(2)]  # the first cycle and the answer, any order
        error = next(e for e in events if e["event"] == "error")
        assert "unknown command 'reboot-everything'" in error["message"]
        proc.stdin.close()
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    lock = WriterLock(str(db))
    assert lock.acquire()
    lock.release()


def test_fleetmon_gui_collects_in_a_child_and_stops_it_on_close(qtbot, live_fleet):
    from ui.app import run_gui

    fleet, db = live_fleet
    started = time.monotonic()
    args = argparse.Namespace(db=str(db), fleet=str(fleet), interval=1.0, refresh=1.0)
    assert run_gui(args, max_seconds=6.0, error=lambda m: pytest.fail(m)) == 0
    assert time.monotonic() - started < 60
    assert _nodes(db) == {"live": "ok", "down": "unreachable"}
    lock = WriterLock(str(db))
    assert lock.acquire(), "closing the window stopped the child collector"
    lock.release()
