"""Footprint of the node agent with the test NVML fake serving 8 GPUs.

Measures, and prints as a table with the targets of issue 3:

1. CPU time per sample per GPU: process CPU time (all threads) over N
   sampling rounds of an in-process Sampler, divided by N x GPUs; projected to
   % of one core at the sampling interval. Baseline in the same run: the
   fake NVML's own cost (the same reads made directly, without the agent).
2. CPU of a real ``fleetmon agent`` process at the default 5 s interval,
   measured from /proc/PID/stat over a wall-clock window.
3. Resident memory (VmRSS and its peak VmHWM from /proc/PID/status) of that
   process after warm-up (samples taken, every endpoint fetched once).
4. Latency of fetching a 24-hour backlog (8 GPUs x 1440 minutes = 11,520
   records) over HTTP with keep-alive, paged as the collector pages
   (limit 2000), median of several runs. Baseline: the same number of
   requests for an empty page (after = the last sequence number).

The agent subprocess runs ``python -m fleetmon agent`` with
``tests/helpers/fakenvml`` first on PYTHONPATH, exactly as a node would run it with
the real nvidia-ml-py.

Usage:
    python benchmarks/bench_agent.py                 # full run (about a minute)
    python benchmarks/bench_agent.py --rounds 5 --window-s 1 --runs 1 --hours 1   # smoke
    python benchmarks/bench_agent.py --json          # also print the figures as JSON
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fleetmon.agent.buffer import Buffer  # noqa: E402
from fleetmon.agent.nvml import open_nvml  # noqa: E402
from fleetmon.agent.sampler import Sampler  # noqa: E402
from fleetmon.records import GpuMinute  # noqa: E402
from fleetmon.sim.nvml import SimulatedNvml  # noqa: E402

TARGET_CPU_PCT = 1.0
TARGET_RSS_MB = 60.0
PAGE_LIMIT = 2000  # fleetmon.collector.client.PAGE_LIMIT


class _Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def bench_sampling(gpus: int, rounds: int, interval_s: float) -> dict[str, float]:
    """CPU per sample per GPU of the in-process sampler, and of the bare fake NVML reads."""
    clock = _Clock(float(int(time.time()) // 60 * 60))
    session = open_nvml(SimulatedNvml(f"a100*{gpus}", clock=clock))
    folder = tempfile.mkdtemp(prefix="bench-agent-")
    buffer = Buffer(Path(folder) / "agent.db")
    sampler = Sampler(session, buffer, interval_s=interval_s, clock=clock)
    for _ in range(3):  # warm-up: inventory, unsupported memo, first minute
        clock.t += interval_s
        sampler.sample_once()
    t0 = time.process_time()
    w0 = time.perf_counter()
    for _ in range(rounds):
        clock.t += interval_s
        sampler.sample_once()
    cpu = time.process_time() - t0
    wall = time.perf_counter() - w0
    # Baseline: the same reads straight through the boundary, no threads, no buffer.
    t0 = time.process_time()
    for _ in range(rounds):
        clock.t += interval_s
        for i in session.indices():
            session.read_sample(i)
    raw = time.process_time() - t0
    sampler.close()
    buffer.close()
    session.close()
    per_sample_ms = cpu / (rounds * gpus) * 1000
    return {
        "rounds": rounds, "gpus": gpus,
        "cpu_per_sample_per_gpu_ms": round(per_sample_ms, 4),
        "raw_nvml_per_gpu_ms": round(raw / (rounds * gpus) * 1000, 4),
        "round_wall_ms": round(wall / rounds * 1000, 3),
        "projected_core_pct": round(per_sample_ms * gpus / (interval_s * 1000) * 100, 4),
    }


def _minute_records(gpus: int, hours: float, end_ts: int) -> list[GpuMinute]:
    """A realistic backlog: one real minute per GPU from the sampler, copied back in time."""
    clock = _Clock(float(end_ts - 120))
    session = open_nvml(SimulatedNvml(f"a100*{gpus}", clock=clock))
    buf = Buffer(None)
    sampler = Sampler(session, buf, interval_s=5.0, clock=clock)
    for _ in range(13):
        clock.t += 5
        sampler.sample_once()
    first = [GpuMinute.from_dict(r) for r in buf.minutes_after(0, 10_000)][:gpus]
    buf.close()
    session.close()
    minutes = int(hours * 60)
    return [replace(m, ts=int(end_ts - 60 * (minutes - k))) for k in range(minutes) for m in first]


def _proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def _proc_mem_mb(pid: int) -> tuple[float, float]:
    rss = hwm = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) / 1024
        elif line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) / 1024
    return rss, hwm


def _get(conn: http.client.HTTPConnection, path: str) -> dict[str, Any]:
    conn.request("GET", path)
    resp = conn.getresponse()
    body = resp.read()
    if resp.status != 200:
        raise RuntimeError(f"{path}: HTTP {resp.status}")
    return json.loads(body)


def _fetch_all(port: int, after: int = 0) -> tuple[float, int, int]:
    """Page every minute after ``after``; returns (seconds, records, requests)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    t0 = time.perf_counter()
    cursor, records, requests = after, 0, 0
    while True:
        doc = _get(conn, f"/v1/minutes?after={cursor}&limit={PAGE_LIMIT}")
        requests += 1
        records += len(doc["records"])
        cursor = doc["next"]
        if not doc["more"] or not doc["records"]:
            break
    elapsed = time.perf_counter() - t0
    conn.close()
    return elapsed, records, requests


def bench_process(gpus: int, hours: float, window_s: float, runs: int, warmup_s: float) -> dict[str, Any]:
    """A real agent process: CPU over a window, RSS after warm-up, backlog fetch latency."""
    folder = Path(tempfile.mkdtemp(prefix="bench-agent-proc-"))
    db = folder / "agent.db"
    end_ts = int(time.time()) // 60 * 60 - 120
    buf = Buffer(db)
    backlog = _minute_records(gpus, hours, end_ts)
    buf.append_minutes(backlog)
    last = buf.bounds("minutes")[1]
    buf.close()
    port_file = folder / "port"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests" / "helpers" / "fakenvml"), str(REPO)]),
           "FLEETMON_SIM_SCENARIO": f"a100*{gpus}"}
    proc = subprocess.Popen([sys.executable, "-m", "fleetmon", "agent", "--port", "0", "--port-file",
                             str(port_file), "--buffer", str(db)], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the agent did not start")
            time.sleep(0.05)
        port = int(port_file.read_text())
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for path in ("/v1/node", "/v1/latest", "/v1/health", "/metrics", "/v1/events?after=0"):
            conn.request("GET", path)
            conn.getresponse().read()
        conn.close()
        time.sleep(warmup_s)
        # CPU at the default interval, idle clients: what the node pays all day.
        c0, w0 = _proc_cpu_s(proc.pid), time.monotonic()
        time.sleep(window_s)
        c1, w1 = _proc_cpu_s(proc.pid), time.monotonic()
        rss_idle, _ = _proc_mem_mb(proc.pid)
        fetch, empty = [], []
        records = requests = 0
        for _ in range(runs):
            elapsed, records, requests = _fetch_all(port)
            fetch.append(elapsed)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            t0 = time.perf_counter()
            for _ in range(requests):
                _get(conn, f"/v1/minutes?after={last + 10_000_000}&limit={PAGE_LIMIT}")
            empty.append(time.perf_counter() - t0)
            conn.close()
        rss, hwm = _proc_mem_mb(proc.pid)
        return {
            "backlog_records": len(backlog), "fetched_records": records, "requests": requests,
            "fetch_median_s": round(statistics.median(fetch), 4), "fetch_runs_s": [round(x, 4) for x in fetch],
            "empty_pages_median_s": round(statistics.median(empty), 4),
            "process_core_pct": round((c1 - c0) / (w1 - w0) * 100, 3), "window_s": round(w1 - w0, 1),
            "rss_idle_mb": round(rss_idle, 1), "rss_mb": round(rss, 1), "rss_peak_mb": round(hwm, 1),
        }
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--rounds", type=int, default=500, help="in-process sampling rounds (default 500)")
    p.add_argument("--interval", type=float, default=5.0, help="sampling interval to project to (default 5)")
    p.add_argument("--window-s", type=float, default=30.0, help="CPU window of the agent process (default 30)")
    p.add_argument("--warmup-s", type=float, default=6.0, help="wait before measuring the process (default 6)")
    p.add_argument("--runs", type=int, default=5, help="backlog fetches, median reported (default 5)")
    p.add_argument("--hours", type=float, default=24.0, help="backlog length (default 24)")
    p.add_argument("--json", action="store_true", help="also print the figures as JSON")
    args = p.parse_args(argv)

    sampling = bench_sampling(args.gpus, args.rounds, args.interval)
    process = bench_process(args.gpus, args.hours, args.window_s, args.runs, args.warmup_s)
    rows = [
        ("CPU per sample per GPU (in-process)", f"{sampling['cpu_per_sample_per_gpu_ms']:.3f} ms", "",
         f"fake NVML alone {sampling['raw_nvml_per_gpu_ms']:.3f} ms"),
        (f"projected CPU, {args.gpus} GPUs every {args.interval:g} s", f"{sampling['projected_core_pct']:.3f} %",
         f"< {TARGET_CPU_PCT:g} % of a core", "ok" if sampling["projected_core_pct"] < TARGET_CPU_PCT else "MISSED"),
        (f"agent process CPU over {process['window_s']:g} s", f"{process['process_core_pct']:.3f} %",
         f"< {TARGET_CPU_PCT:g} % of a core", "ok" if process["process_core_pct"] < TARGET_CPU_PCT else "MISSED"),
        ("resident memory (VmRSS after fetches)", f"{process['rss_mb']:.1f} MB", f"< {TARGET_RSS_MB:g} MB",
         "ok" if process["rss_mb"] < TARGET_RSS_MB else "MISSED"),
        ("resident memory peak (VmHWM)", f"{process['rss_peak_mb']:.1f} MB", f"< {TARGET_RSS_MB:g} MB",
         "ok" if process["rss_peak_mb"] < TARGET_RSS_MB else "MISSED"),
        (f"fetch {args.hours:g} h backlog ({process['backlog_records']} records, {process['requests']} pages)",
         f"{process['fetch_median_s'] * 1000:.0f} ms", "", f"median of {args.runs}"),
        (f"baseline: {process['requests']} empty pages", f"{process['empty_pages_median_s'] * 1000:.1f} ms", "",
         "same connection"),
    ]
    print(f"fleetmon agent footprint, fake NVML, {args.gpus} GPUs, python {sys.version.split()[0]}")
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    header = ("figure", "measured", "target", "note")
    widths = [max(w, len(h)) for w, h in zip(widths, header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    if args.json:
        print(json.dumps({"sampling": sampling, "process": process}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
