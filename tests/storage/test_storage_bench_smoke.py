"""The storage benchmark runs end to end with tiny parameters and prints its figures (no timing checks)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_storage.py"


def test_bench_storage_prints_its_figures(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--gpus", "4", "--days", "2", "--raw-days", "1", "--ingest-minutes", "3",
         "--cache", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for figure in ("ingest_polls, catch-up", "ingest_polls, steady state", "bytes per metric value",
                   "Prometheus TSDB", "one GPU's 2-day history", "fleet latest state", "open database",
                   "medians of 3 runs"):
        assert figure in out, f"{figure!r} missing from:\n{out}"
    assert "Traceback" not in proc.stderr
    assert list(tmp_path.glob("fleet-g4-d2-r1-*.db"))  # cached for the next run
