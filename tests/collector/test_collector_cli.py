"""`fleetmon collect` as a process: one writer per database, clean stop, the systemd user unit."""

from __future__ import annotations

import configparser
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import dead_url

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def running_collector(tmp_path):
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'[fleet]\ntimeout_s = 1\n[[node]]\nname = "down"\nurl = "{dead_url()}"\n', encoding="utf-8")
    db = tmp_path / "fleet.db"
    proc = subprocess.Popen([sys.executable, "-m", "fleetmon", "collect", "--fleet", str(fleet), "--db", str(db),
                             "--interval", "30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=REPO)
    lock = Path(str(db) + ".lock")
    deadline = time.monotonic() + 30
    while not (lock.exists() and f"pid={proc.pid}" in lock.read_text()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the collector did not take the lock"
        time.sleep(0.05)
    yield proc, fleet, db
    if proc.poll() is None:
        proc.kill()
        proc.wait()


@pytest.mark.integration
def test_only_one_collector_writes_a_database(running_collector):
    proc, fleet, db = running_collector
    second = subprocess.run([sys.executable, "-m", "fleetmon", "collect", "--fleet", str(fleet), "--db", str(db),
                             "--once"], capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=REPO)
    assert second.returncode == 1
    line = second.stderr.strip()
    assert line.startswith("fleetmon collect: another collector writes") and f"pid={proc.pid}" in line, line
    assert "Traceback" not in second.stderr


@pytest.mark.integration
def test_the_gui_starts_no_collector_while_another_holds_the_database(running_collector):
    from fleetmon.collector.main import prepare_database

    proc, fleet, db = running_collector
    collector, lock, note = prepare_database(str(db), str(fleet), None)
    assert collector is None and lock is None
    assert f"pid={proc.pid}" in note and "another process writes this database" in note

    proc.send_signal(signal.SIGTERM)  # a clean stop releases the lock …
    assert proc.wait(30) == 0, proc.communicate()
    collector, lock, note = prepare_database(str(db), str(fleet), None)
    try:
        assert collector is not None and note.startswith("collector: this window")  # … and the GUI collects
    finally:
        collector.db.close()
        lock.release()


def test_the_systemd_user_unit_runs_the_headless_collector():
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.optionxform = str  # type: ignore[assignment, method-assign]
    unit.read(REPO / "packaging" / "fleetmon-collect.service", encoding="utf-8")
    exec_start = unit["Service"]["ExecStart"]
    assert exec_start.split()[0].endswith("/fleetmon")
    assert exec_start.split()[1:] == ["collect", "--fleet", "%h/.config/fleetmon/fleet.toml",
                                      "--db", "%h/.local/share/fleetmon/fleet.db"]
    assert unit["Service"]["Restart"] == "on-failure"
    assert unit["Install"]["WantedBy"] == "default.target"
