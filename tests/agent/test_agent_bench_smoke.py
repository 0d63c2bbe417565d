"""benchmarks/bench_agent.py runs with tiny parameters and prints every figure with its target."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_bench_agent_prints_its_figures():
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_agent.py"), "--rounds", "5",
                           "--window-s", "0.5", "--warmup-s", "0.2", "--runs", "1", "--hours", "1", "--json"],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for words in ("CPU per sample per GPU", "projected CPU, 8 GPUs every 5 s", "agent process CPU",
                  "resident memory (VmRSS", "fetch 1 h backlog (480 records", "baseline: 1 empty pages",
                  "< 1 % of a core", "< 60 MB", "fake NVML alone"):
        assert words in out, words
    figures = json.loads(out[out.index("{"):])
    assert figures["sampling"]["cpu_per_sample_per_gpu_ms"] > 0
    # The live agent may close a minute of its own while the benchmark runs: at least the backlog.
    assert figures["process"]["fetched_records"] >= figures["process"]["backlog_records"] == 480
    assert 5 < figures["process"]["rss_mb"] < 500
