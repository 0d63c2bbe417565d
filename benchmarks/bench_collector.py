"""Benchmark: poll cycles of a simulated fleet on 127.0.0.1 with the real collector.

Starts ``--procs`` processes of ``python -m fleetmon.sim.fleet``
serving ``--nodes`` simulated agents in total (``--gpus`` GPUs each, each node
on its own port, real agent code), writes a fleet file, and measures in the
same run:

* baseline: a bare aiohttp sweep (``GET /v1/node`` once per agent, same
  concurrency cap) — once with keep-alive connections, once with a new
  connection per request;
* the cold cycle: ``Collector.run_cycle`` on a fresh database: inventory,
  latest samples and the ``--backfill-minutes`` backlog of every node;
* steady cycles: every agent gets one new finished minute per GPU, then one
  ``Collector.run_cycle`` (``poll_all`` + ``ingest_polls`` in one
  transaction); reported as total, poll phase and ingest phase;
* the CPU seconds spent by this process (collector) and by the agent
  processes during each measurement: on one 2-core machine they compete.

Every figure is the median of ``--runs`` runs (at least 3 for the report).
Run: ``python benchmarks/bench_collector.py`` (1,000 nodes × 8 GPUs in 8
processes; the target is a steady cycle ≤ 5 s on 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import aiohttp  # noqa: E402

from fleetmon.collector.poller import Collector  # noqa: E402
from fleetmon.sim.fleet import raise_fd_limit  # noqa: E402
from fleetmon.fleet import load_fleet  # noqa: E402
from storage.db import open_database  # noqa: E402
from storage.queries import counts  # noqa: E402

TARGET_S = 5.0


def _pdeathsig() -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except OSError:
        pass


class SimProcs:
    """The simulated-fleet processes, controlled through their standard input."""

    def __init__(self, folder: Path, nodes: int, procs: int, gpus: int, backfill: int) -> None:
        self.procs: list[subprocess.Popen[str]] = []
        self.nodes: list[dict[str, Any]] = []
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        per = [nodes // procs + (1 if i < nodes % procs else 0) for i in range(procs)]
        files = []
        for i, count in enumerate(c for c in per if c > 0):
            port_file = folder / f"sim{i}.json"
            cmd = [sys.executable, "-m", "fleetmon.sim.fleet", "--nodes", str(count), "--gpus", str(gpus),
                   "--prefix", f"p{i}", "--seed", str(i * 10_000), "--backfill-minutes", str(backfill),
                   "--sample-interval", "0", "--port-file", str(port_file), "--control"]
            log = open(folder / f"sim{i}.log", "w")
            self.procs.append(subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                               text=True, env=env, preexec_fn=_pdeathsig))
            files.append(port_file)
        deadline = time.monotonic() + 600
        for proc, port_file in zip(self.procs, files):
            while not port_file.exists():
                if proc.poll() is not None:
                    raise SystemExit(f"simfleet exited with {proc.returncode}: see {folder}")
                if time.monotonic() > deadline:
                    raise SystemExit("simfleet did not start in time")
                time.sleep(0.1)
            self.nodes.extend(json.loads(port_file.read_text())["nodes"])

    def add_minute(self) -> int:
        for p in self.procs:
            assert p.stdin is not None
            p.stdin.write("minute\n")
            p.stdin.flush()
        added = 0
        for p in self.procs:
            assert p.stdout is not None
            line = p.stdout.readline().split()
            if not line or line[0] != "ok":
                raise SystemExit(f"simfleet answered {line!r}")
            added += int(line[1])
        return added

    def cpu_s(self) -> float:
        total = 0.0
        for p in self.procs:
            try:
                fields = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except (OSError, IndexError, ValueError):
                pass
        return total

    def stop(self) -> None:
        for p in self.procs:
            if p.stdin:
                p.stdin.close()
            p.terminate()
        deadline = time.monotonic() + 15
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def measure(fn: Callable[[], Any], sims: SimProcs) -> tuple[float, float, float, Any]:
    """(wall s, collector CPU s, agents CPU s, result of fn)."""
    c0, a0, t0 = _own_cpu_s(), sims.cpu_s(), time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, _own_cpu_s() - c0, sims.cpu_s() - a0, result


async def bare_sweep(urls: list[str], concurrency: int, keep_alive: bool) -> int:
    """GET /v1/node once per agent; returns the bytes received."""
    sem = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=0, force_close=not keep_alive)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def one(url: str) -> int:
            async with sem, session.get(url + "/v1/node") as resp:
                return len(await resp.read())

        return sum(await asyncio.gather(*(one(u) for u in urls)))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--procs", type=int, default=8, help="simulated-fleet processes (default 8)")
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--runs", type=int, default=3, help="runs of each measurement (median; default 3)")
    p.add_argument("--concurrency", type=int, default=64, help="requests in flight (default 64, the fleet default)")
    p.add_argument("--compare-concurrency", default="16,256", metavar="N,N",
                   help="also measure steady cycles at these caps (default 16,256; '' for none)")
    p.add_argument("--backfill-minutes", type=int, default=4,
                   help="minutes per GPU each agent holds before the cold cycle (default 4)")
    p.add_argument("--profile", action="store_true",
                   help="profile one more steady cycle (cProfile, collector side) and print the top functions")
    args = p.parse_args(argv)
    raise_fd_limit(args.nodes * 3 + 256)
    folder = Path(tempfile.mkdtemp(prefix="fleetmon-bench-collector-"))
    t0 = time.monotonic()
    sims = SimProcs(folder, args.nodes, args.procs, args.gpus, args.backfill_minutes)
    rows: list[tuple[str, list[float], str, str]] = []
    profile_text = ""
    try:
        startup = time.monotonic() - t0
        urls = [n["url"] for n in sims.nodes]
        fleet_file = folder / "fleet.toml"
        fleet_file.write_text(
            f"[fleet]\nname = \"bench\"\ntimeout_s = 10\nconcurrency = {args.concurrency}\n\n"
            + "".join(f'[[node]]\nname = "{n["name"]}"\nurl = "{n["url"]}"\n\n' for n in sims.nodes),
            encoding="utf-8")
        fleet = load_fleet(fleet_file)

        def add(name: str, results: list[tuple[float, float, float, Any]], requests: int, note: str = "") -> None:
            walls = [r[0] for r in results]
            med = statistics.median(walls)
            cpu = f"{statistics.median(r[1] for r in results):5.2f} / {statistics.median(r[2] for r in results):5.2f}"
            rate = f"{requests / med:7.0f}" if requests else "      -"
            rows.append((name, walls, rate, cpu + (f"  {note}" if note else "")))

        for keep_alive in (True, False):
            res = [measure(lambda: asyncio.run(bare_sweep(urls, args.concurrency, keep_alive)), sims)
                   for _ in range(args.runs)]
            add(f"baseline: bare GET /v1/node sweep ({'keep-alive' if keep_alive else 'new connection each'})",
                res, len(urls))

        db = open_database(folder / "bench.db")
        collector = Collector(fleet, db, interval_s=30)
        cold = measure(collector.run_cycle, sims)
        polls = cold[3]
        failed = [p for p in polls if not p.ok]
        if failed:
            print(f"warning: {len(failed)} nodes failed in the cold cycle, e.g. {failed[0].node}: {failed[0].error}",
                  file=sys.stderr)
        cold_rows = sum(len(p.minutes) for p in polls)
        add(f"cold cycle: inventory + backlog ({cold_rows} minute rows)", [cold], collector.last_requests,
            f"poll {collector.last_poll_s:.2f} s + ingest {cold[0] - (collector.last_poll_s or 0):.2f} s")
        steady = []
        poll_s = []
        requests = 0
        rows_per_cycle = 0
        for _ in range(args.runs):
            sims.add_minute()
            steady.append(measure(collector.run_cycle, sims))
            poll_s.append(collector.last_poll_s or 0.0)
            requests = collector.last_requests
            rows_per_cycle = sum(len(p.minutes) for p in steady[-1][3])
            failed = [p for p in steady[-1][3] if not p.ok]
            if failed:
                print(f"warning: {len(failed)} nodes failed, e.g. {failed[0].node}: {failed[0].error}",
                      file=sys.stderr)
        add(f"steady cycle: 1 new minute per GPU ({rows_per_cycle} rows)", steady, requests,
            f"poll {statistics.median(poll_s):.2f} s + ingest "
            f"{statistics.median(s[0] - q for s, q in zip(steady, poll_s)):.2f} s")
        headline = statistics.median(r[0] for r in steady)
        for cap in [int(c) for c in args.compare_concurrency.split(",") if c.strip()]:
            collector.concurrency = cap
            other = []
            for _ in range(args.runs):
                sims.add_minute()
                other.append(measure(collector.run_cycle, sims))
            add(f"steady cycle at concurrency {cap} instead", other, collector.last_requests)
        if args.profile:
            import cProfile
            import io
            import pstats

            collector.concurrency = args.concurrency
            sims.add_minute()
            prof = cProfile.Profile()
            prof.runcall(collector.run_cycle)
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(15)
            profile_text = buf.getvalue()
        table = counts(db)
        db.close()
    finally:
        sims.stop()

    print(f"fleetmon collector benchmark: {args.nodes} nodes × {args.gpus} GPUs in {args.procs} processes on "
          f"127.0.0.1, concurrency {args.concurrency}, {os.cpu_count()} CPUs, median of {args.runs} "
          f"(agents started in {startup:.1f} s)")
    print(f"{'measurement':64} {'median s':>9} {'runs s':>20} {'req/s':>8}  CPU s collector / agents")
    for name, walls, rate, cpu in rows:
        runs = " ".join(f"{w:.2f}" for w in walls)
        print(f"{name:64} {statistics.median(walls):9.3f} {runs:>20} {rate:>8}  {cpu}")
    if profile_text:
        print("\nprofile of one steady cycle (collector process, by own time):")
        print("\n".join(line for line in profile_text.splitlines() if line.strip())[:4000])
    verdict = "met" if headline <= TARGET_S else "NOT met"
    print(f"target: steady cycle ≤ {TARGET_S:g} s → {verdict} ({headline:.2f} s at concurrency "
          f"{args.concurrency}); database rows: "
          + ", ".join(f"{k} {v}" for k, v in table.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
