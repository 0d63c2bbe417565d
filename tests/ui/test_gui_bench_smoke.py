"""benchmarks/bench_gui.py runs end to end on a tiny database and fleet and prints its figures with targets."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


def test_gui_benchmark_prints_every_figure_and_the_in_process_baseline(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_gui.py"), "--gpus", "4", "--days", "2",
                           "--raw-days", "1", "--runs", "1", "--nodes", "3", "--procs", "1", "--node-gpus", "2",
                           "--poll-seconds", "2", "--interval", "1", "--cache", str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=300, cwd=REPO,
                          env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    for label in ("launch → window shown, fleet table populated", "switch GPU detail, 90-day range",
                  "change range → 24 h", "change range → 1 y", "RSS with the fleet and a 90-day detail open",
                  "longest GUI event-loop stall while polling",
                  "longest stall, collector in the window's thread (before)"):
        line = next((x for x in out.splitlines() if label in x), None)
        assert line is not None, (label, out)
        value = float(re.search(r"\s(\d+\.\d+)\s", line[len(label):]).group(1))
        assert value > 0, line
    assert re.search(r"stall while polling .*\((ok|MISSED) \(target ≤ 50 ms\)|target ≤ 50 ms", out), out
    assert "ratio child process / in-process collector:" in out
    stall = next(x for x in out.splitlines() if "longest GUI event-loop stall" in x)
    cycles = int(re.search(r"(\d+) cycles", stall).group(1))
    assert cycles >= 1 and "6 GPU rows" in stall, stall  # the child collected: 3 nodes × 2 GPUs shown
