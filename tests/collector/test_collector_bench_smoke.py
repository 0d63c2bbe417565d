"""benchmarks/bench_collector.py runs end to end on a tiny fleet and prints its figures."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


def test_collector_benchmark_prints_figures_beside_its_baseline():
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_collector.py"), "--nodes", "10",
                           "--procs", "2", "--gpus", "2", "--runs", "1", "--backfill-minutes", "2"],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "10 nodes × 2 GPUs in 2 processes" in out
    figures = {}
    for line in out.splitlines():
        m = re.match(r"(baseline: bare GET /v1/node sweep \(keep-alive\)|cold cycle|steady cycle)\S*.*?\s(\d+\.\d+)\s",
                     line)
        if m:
            figures[m.group(1)] = float(m.group(2))
    assert set(figures) == {"baseline: bare GET /v1/node sweep (keep-alive)", "cold cycle", "steady cycle"}, out
    assert all(0 < v < 30 for v in figures.values()), figures
    assert "(40 minute rows)" in out and "(20 rows)" in out  # 10 nodes × 2 GPUs × 2 minutes, then 1 minute
    assert re.search(r"target: steady cycle ≤ 5 s → met", out), out
    assert "warning" not in proc.stderr
