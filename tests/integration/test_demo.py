"""`fleetmon demo` end to end (offscreen): agents, collector and window start, and stop without leftovers."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.gui]


def test_demo_window_closes_and_leaves_no_process(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-m", "fleetmon", "demo", "--nodes", "3", "--duration", "6",
                             "--backfill", "10"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-2000:]
    assert "starting 3 simulated agents" in err
    # Every agent of this demo is gone: none of them is still running under any parent.
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(tmp_path) not in ps, [line for line in ps.splitlines() if str(tmp_path) in line]
    # The temporary folder was removed.
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("fleetmon-demo-")]
