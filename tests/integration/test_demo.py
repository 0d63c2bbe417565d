"""`fleetmon demo` end to end (offscreen): agents, collector and window start, and stop without leftovers."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.gui]


def test_demo_window_closes_and_leaves_no_process(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", TMPDIR=str(tmp_path))
    # 2.4 hours of generated history instead of the default month, and a minute of backfill of the vendor boxes
    # (two samples; through a tool's twin each is a subprocess): the window still opens after the generation and
    # its progress, on agents that backfilled (tests/integration/test_demo_vendors.py reads a longer backfill)
    proc = subprocess.Popen([sys.executable, "-m", "fleetmon", "demo", "--nodes", "3", "--duration", "6",
                             "--backfill", "1", "--history-days", "0.1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-2000:]
    assert "starting 6 simulated agents" in err  # three NVIDIA nodes, the AMD, Ascend and Hygon boxes
    # Every agent of this demo is gone: none of them is still running under any parent.
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(tmp_path) not in ps, [line for line in ps.splitlines() if str(tmp_path) in line]
    # The temporary folder was removed.
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("fleetmon-demo-")]


def test_demo_db_is_kept_and_reused(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", TMPDIR=str(tmp_path))
    db = tmp_path / "kept" / "demo.db"
    db.parent.mkdir()
    # 2.4 hours of history and a minute of backfill of the vendor boxes (a day and two hours took twice as long):
    # what is kept and reused does not depend on how much there is
    cmd = [sys.executable, "-m", "fleetmon", "demo", "--nodes", "3", "--history-days", "0.1", "--db", str(db),
           "--no-gui", "--duration", "3", "--backfill", "1"]
    first = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "generated 0.1 days of history" in first.stderr
    assert db.exists()
    second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "reusing the existing database" in second.stderr
    from fleetmon.assess import run_report
    from storage.db import open_database

    store = open_database(db)
    try:
        run = run_report(store, time.time(), 86400, None, save=False)
    finally:
        store.close()
    assert {"rig-3090-01", "rig-3090-02", "v100-srv-01"} <= set(run.result.verdicts)
    # the vendor boxes beside the generated fleet: their backfill and live minutes only
    assert {"mi100-srv-01", "ascend-srv-01", "dcu-k100-01"} <= set(run.result.verdicts)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("fleetmon-demo-")]
