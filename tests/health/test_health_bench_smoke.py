"""benchmarks/bench_health.py runs end to end on a tiny database and prints its figures beside the baselines."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.integration


def test_health_benchmark_prints_figures_beside_its_baselines(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_health.py"), "--gpus", "16", "--days", "2",
                           "--raw-days", "1", "--runs", "1", "--cache", str(tmp_path)],
                          capture_output=True, text=True, timeout=180, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    figures = {}
    for line in out.splitlines():
        m = re.match(r"\s+(fleetmon --version \(subprocess\)|fleetmon report \(text\)|fleetmon report --json|"
                     r"fleetmon preflight \(text\)|in process: load_history \(24 h of minutes\))\s+(\d+\.\d+) s", line)
        if m:
            figures[m.group(1)] = float(m.group(2))
    assert set(figures) == {"fleetmon --version (subprocess)", "fleetmon report (text)", "fleetmon report --json",
                            "fleetmon preflight (text)", "in process: load_history (24 h of minutes)"}, out
    assert all(0 <= v < 60 for v in figures.values()), figures
    assert "16 GPUs, 23,040 minute rows read" in out  # 16 GPUs × 1,440 minutes
    assert re.search(r"raw read \d+\.\d+ s \(23,040 rows × all columns\)", out), out
    assert "fleetmon preflight --nodes node-[0000-0001] --days 14 (2 nodes;" in out
    assert out.count("(target ≤ 5 s)") == 2 and out.count("(target ≤ 2 s)") == 1
    assert (tmp_path / "fleet-g16-d2-r1-").parent.exists() and list(tmp_path.glob("fleet-g16-d2-r1-*.db"))


def test_health_pass_benchmark_prints_both_passes_and_the_ratio(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_health_pass.py"), "--gpus", "16",
                           "--runs", "3", "--cache", str(tmp_path)],
                          capture_output=True, text=True, timeout=180, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    walls = re.findall(r"^\s+(whole window read \(baseline\)|through the window cache)\s+(\d+\.\d+) s", out, re.M)
    assert [w[0] for w in walls] == ["whole window read (baseline)", "through the window cache"], out
    assert re.search(r"ratio cached/whole \d+\.\d+; the cache read in full 1× and read 0 cards again", out), out
    assert list(tmp_path.glob("health-pass-g16-*.db"))
