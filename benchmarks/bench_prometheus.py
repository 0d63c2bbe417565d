"""Benchmark: a real Prometheus and fleetmon's collector polling the same simulated agents, side by side.

Starts ``--procs`` processes of ``python -m fleetmon.sim.fleet`` serving
``--nodes`` simulated agents (``--gpus`` GPUs each, real agent code, sampling
every ``--sample-interval`` s so the values move between scrapes), then, in the
same run and at the same ``--interval``:

* a real Prometheus (``prometheus`` on PATH; Debian: ``apt-get install -y
  prometheus``) scraping every agent's ``/metrics``;
* fleetmon's collector (``Collector.run_cycle``: poll every agent's
  ``/v1/...`` and store the minutes in SQLite) in this process.

Both run for ``--minutes`` minutes. It prints:

* CPU seconds per target per scrape: Prometheus's process CPU
  (``/proc/<pid>/stat``, user + system, over the measured run) divided by the
  scrapes it made (``up`` samples); the collector's CPU (this process's, over
  its cycles only: poll, validate, store) divided by its polls. The rollups
  and the health pass that run inside the same cycles (``Collector.maintain``)
  are timed apart and printed beside it, with the total: they are the judging
  a Prometheus would do with rules, and this Prometheus runs none;
* bytes per stored sample on disk: Prometheus's persisted block (chunks +
  index + tombstones; ``meta.json``'s ``numSamples``). By default Prometheus
  runs with its own 2-hour block duration and, at the end of the run, the TSDB
  admin API's snapshot writes the whole head (the run's hour) as one block
  through the same block writer its compaction uses: one compacted block over
  the run. ``--block-minutes N`` instead cuts N-minute blocks during the run
  (``--storage.tsdb.min/max-block-duration``; small blocks carry a larger
  share of per-series index). fleetmon: the ``samples`` table's pages
  (``dbstat``) per stored metric value, as ``bench_storage.py`` counts them;
* the same as bytes per GPU-hour at this interval (the operational figure:
  fleetmon stores one record per GPU-minute, Prometheus one sample per metric
  per scrape);
* the ratios against the targets: fleetmon's CPU per target ≤ Prometheus's,
  fleetmon's bytes per sample ≤ 1.5× Prometheus's.

Run: ``python benchmarks/bench_prometheus.py`` (1,000 nodes × 8 GPUs, 60
minutes at 30 s). A quick look: ``--nodes 100 --minutes 10``. Prometheus's
blocks compress better the longer the run (a chunk holds up to 120 samples): a
short run understates its compression; say what you ran.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from fleetmon.collector.poller import Collector  # noqa: E402
from fleetmon.fleet import load_fleet  # noqa: E402
from fleetmon.sim.fleet import raise_fd_limit  # noqa: E402
from storage.db import open_database  # noqa: E402
from storage.schema import metric_value_columns  # noqa: E402

TARGET_CPU_RATIO = 1.0
TARGET_BYTES_RATIO = 1.5


def _pdeathsig() -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except OSError:
        pass


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


class GcClock:
    """Wall time the cyclic garbage collector takes in this process, per generation (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]
        self._t0 = 0.0
        gc.callbacks.append(self._tick)

    def _tick(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        else:
            g = int(info.get("generation", 2))
            self.seconds[g] += time.perf_counter() - self._t0
            self.count[g] += 1

    def reset(self) -> None:
        self.seconds, self.count = [0.0, 0.0, 0.0], [0, 0, 0]


def start_sims(folder: Path, nodes: int, procs: int, gpus: int, sample_s: float) -> tuple[list[Any], list[dict[str, Any]]]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    per = [nodes // procs + (1 if i < nodes % procs else 0) for i in range(procs)]
    started = []
    for i, count in enumerate(c for c in per if c > 0):
        port_file = folder / f"sim{i}.json"
        cmd = [sys.executable, "-m", "fleetmon.sim.fleet", "--nodes", str(count), "--gpus", str(gpus),
               "--prefix", f"p{i}", "--seed", str(i * 10_000), "--sample-interval", str(sample_s),
               "--port-file", str(port_file)]
        log = open(folder / f"sim{i}.log", "w")
        started.append((subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL,
                                         env=env, preexec_fn=_pdeathsig), port_file))
    described: list[dict[str, Any]] = []
    deadline = time.monotonic() + 600
    for proc, port_file in started:
        while not port_file.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"simfleet did not start: see {folder}")
            time.sleep(0.1)
        described.extend(json.loads(port_file.read_text())["nodes"])
    return [p for p, _ in started], described


def prom_query(url: str, expr: str, at: float | None = None) -> float:
    """An instant query, at ``at`` (Unix seconds) when given so that several queries see one window."""
    q = urllib.parse.urlencode({"query": expr} if at is None else {"query": expr, "time": f"{at:.3f}"})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=30) as resp:
        result = json.loads(resp.read())["data"]["result"]
    return float(result[0]["value"][1]) if result else 0.0


def own_metric(url: str, name: str) -> float:
    """A family of Prometheus's own ``/metrics`` (summed over its labels; it does not scrape itself here)."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as resp:
        page = resp.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in page.splitlines()
               if line.startswith(name) and line[len(name):len(name) + 1] in ("{", " "))


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def prometheus_bytes(data: Path) -> dict[str, Any]:
    """Bytes per sample of the persisted blocks (or, without one, of the head's WAL + chunks)."""
    blocks = [d for d in data.iterdir() if (d / "meta.json").is_file()]
    if blocks:
        samples = sum(json.loads((d / "meta.json").read_text())["stats"]["numSamples"] for d in blocks)
        size = sum(dir_bytes(d) for d in blocks)
        chunks = sum(dir_bytes(d / "chunks") for d in blocks if (d / "chunks").is_dir())
        return {"source": f"{len(blocks)} persisted block(s)", "bytes": size, "chunks": chunks, "samples": samples}
    size = sum(dir_bytes(data / d) for d in ("wal", "chunks_head") if (data / d).exists())
    return {"source": "head (WAL + head chunks: no block cut yet)", "bytes": size, "chunks": None, "samples": None}


def snapshot_head(url: str, data: Path) -> Path:
    """The run's head written as one block (``POST /api/v1/admin/tsdb/snapshot``); the snapshot folder.

    Prometheus writes the head's samples through the same block writer its
    compaction uses (chunks + index), so this is the compacted form of the
    hour, without waiting the 3 hours its head needs before it cuts a 2-hour
    block by itself.
    """
    req = urllib.request.Request(f"{url}/api/v1/admin/tsdb/snapshot?skip_head=false", method="POST")
    with urllib.request.urlopen(req, timeout=600) as resp:
        name = json.loads(resp.read())["data"]["name"]
    return data / "snapshots" / name


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--gpus", type=int, default=8)
    p.add_argument("--procs", type=int, default=8, help="simulated-fleet processes (default 8)")
    p.add_argument("--minutes", type=float, default=60.0, help="measured run (default 60)")
    p.add_argument("--interval", type=float, default=30.0, help="scrape and poll interval, s (default 30)")
    p.add_argument("--sample-interval", type=float, default=5.0, help="agents sample every S s (default 5)")
    p.add_argument("--block-minutes", type=int, default=0,
                   help="cut N-minute Prometheus blocks during the run; 0 (default): Prometheus's own 2-hour "
                        "blocks and, at the end, a snapshot that writes the run's head as one block")
    p.add_argument("--prometheus", default="prometheus")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = p.parse_args(argv)
    if args.interval < 1 or args.interval != int(args.interval):
        p.error("--interval must be a whole number of seconds (Prometheus's scrape_interval)")
    raise_fd_limit(args.nodes * 4 + 256)
    folder = Path(tempfile.mkdtemp(prefix="bench-prom-"))
    print(f"bench_prometheus: {args.nodes} nodes × {args.gpus} GPUs in {args.procs} processes, every "
          f"{args.interval:g} s for {args.minutes:g} min; folder {folder}", flush=True)
    sims, described = start_sims(folder, args.nodes, args.procs, args.gpus, args.sample_interval)
    prom = None
    try:
        fleet_file = folder / "fleet.toml"
        fleet_file.write_text(f"[fleet]\npoll_interval_s = {args.interval}\ntimeout_s = {min(10, args.interval / 2)}\n"
                              f"concurrency = 64\n\n" + "".join(
                                  f'[[node]]\nname = "{n["name"]}"\nurl = "{n["url"]}"\n\n' for n in described))
        targets = [n["url"].split("//", 1)[1] for n in described]
        cfg = folder / "prometheus.yml"
        cfg.write_text(f"global:\n  scrape_interval: {int(args.interval)}s\n  scrape_timeout: "
                       f"{max(1, int(min(10, args.interval / 2)))}s\nscrape_configs:\n  - job_name: fleetmon\n"
                       f"    static_configs:\n      - targets: {json.dumps(targets)}\n")
        data = folder / "tsdb"
        with socket_port() as port:
            pass
        url = f"http://127.0.0.1:{port}"
        blocks = ([f"--storage.tsdb.min-block-duration={args.block_minutes}m",
                   f"--storage.tsdb.max-block-duration={args.block_minutes}m"] if args.block_minutes
                  else ["--web.enable-admin-api"])
        prom = subprocess.Popen([args.prometheus, f"--config.file={cfg}", f"--storage.tsdb.path={data}",
                                 f"--web.listen-address=127.0.0.1:{port}", *blocks],
                                stdout=open(folder / "prometheus.log", "wb"), stderr=subprocess.STDOUT,
                                preexec_fn=_pdeathsig)
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/-/ready", timeout=2).close()
                break
            except OSError:
                if prom.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"prometheus did not start: see {folder / 'prometheus.log'}")
                time.sleep(0.3)
        db_path = folder / "fleet.db"
        db = open_database(db_path)
        collector = Collector(load_fleet(fleet_file), db)
        # The rollups and the health pass run inside the cycle (Collector.maintain): timed apart, so
        # that the scrape-and-store part is compared with Prometheus's scrape-and-append, and the
        # judging (which a Prometheus would do with recording and alerting rules) is shown beside it.
        judged = [0.0]
        passes: list[float] = []  # seconds of each health pass
        parts: dict[str, list[float]] = {"load_s": [], "evaluate_s": [], "store_s": []}  # each pass's split
        plain_maintain = collector.maintain

        def timed_maintain(**kw: Any) -> None:
            m0 = own_cpu_s()
            before = collector.last_health
            try:
                plain_maintain(**kw)
            finally:
                judged[0] += own_cpu_s() - m0
                done = collector.last_health
                if done is not None and done is not before and collector.last_health_s is not None:
                    passes.append(collector.last_health_s)
                    for k, v in parts.items():
                        v.append(float(done.get(k) or 0.0))
        collector.maintain = timed_maintain  # type: ignore[method-assign]
        gc_clock = GcClock()
        collector.run_cycle(force=True)  # the cold cycle (inventory) is not a steady poll
        judged[0] = 0.0
        passes.clear()
        for v in parts.values():
            v.clear()
        gc_clock.reset()
        p0, t_start = proc_cpu_s(prom.pid), time.time()
        end = time.monotonic() + args.minutes * 60
        cpu = 0.0
        polls = ok = cycles = 0
        while time.monotonic() < end:
            cycle_start = time.monotonic()
            c0 = own_cpu_s()
            done = collector.run_cycle(force=True)
            cpu += own_cpu_s() - c0
            polls += len(done)
            ok += sum(1 for x in done if x.ok)
            cycles += 1
            time.sleep(max(0.0, args.interval - (time.monotonic() - cycle_start)))
        prom_cpu = proc_cpu_s(prom.pid) - p0
        t_end = time.time()
        span = int(t_end - t_start)
        scrapes = prom_query(url, f"sum(count_over_time(up[{span}s]))", at=t_end)
        scraped_ok = prom_query(url, f"sum(sum_over_time(up[{span}s]))", at=t_end)
        appended = own_metric(url, "prometheus_tsdb_head_samples_appended_total")
        db.close()
        conn = sqlite3.connect(db_path)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        cols = metric_value_columns()
        rows, values = conn.execute(
            f"SELECT count(*), {' + '.join(f'count({c})' for c in cols)} FROM samples").fetchone()
        fm_bytes = conn.execute("SELECT sum(pgsize) FROM dbstat WHERE name = 'samples'").fetchone()[0] or 0
        conn.close()
        if args.block_minutes:
            # Give Prometheus the time to cut the block its head now spans.
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not any((d / "meta.json").is_file() for d in data.iterdir()):
                time.sleep(2)
            pb = prometheus_bytes(data)
        else:
            pb = prometheus_bytes(snapshot_head(url, data))
            pb["source"] = "the run as one block, written by the TSDB snapshot"
        if pb["samples"] is None:
            pb["samples"] = appended

        fm_cpu_per = (cpu - judged[0]) / max(1, polls)
        fm_judge_per = judged[0] / max(1, polls)
        pr_cpu_per = prom_cpu / max(1.0, scrapes)
        fm_bps = fm_bytes / max(1, values)
        pr_bps = pb["bytes"] / max(1.0, pb["samples"])
        gpus = args.nodes * args.gpus
        samples_per_gpu_scrape = appended / max(1.0, scrapes) / args.gpus
        print(f"\nran {args.minutes:g} min: collector {cycles} cycles, {ok}/{polls} polls ok; Prometheus "
              f"{scraped_ok:.0f}/{scrapes:.0f} scrapes up, {appended:.0f} samples appended")
        print("CPU seconds per target per scrape")
        print(f"  Prometheus  {pr_cpu_per * 1e3:8.3f} ms   ({prom_cpu:.1f} CPU s over {scrapes:.0f} scrapes)")
        print(f"  fleetmon    {fm_cpu_per * 1e3:8.3f} ms   ({cpu - judged[0]:.1f} CPU s over {polls} polls: poll, "
              f"validate, store)")
        print(f"  fleetmon, with the rollups and health pass that run inside its cycles: "
              f"{(cpu / max(1, polls)) * 1e3:.3f} ms ({fm_judge_per * 1e3:.3f} ms of it judging, {judged[0]:.1f} CPU s;"
              f" the Prometheus here evaluates no rules)")
        whole = cpu / max(1, polls) / pr_cpu_per if pr_cpu_per else float("inf")
        window = collector._window
        print(f"  (health passes: {len(passes)}, median {statistics.median(passes) if passes else 0:.2f} s, "
              f"last {passes[-1] if passes else 0:.2f} s; window reads in full: "
              f"{getattr(window, 'full_reads', 0)}, cards read again: {getattr(window, 'gpus_reread', 0)})")
        if passes:
            print("  (a pass's medians: " + ", ".join(
                f"{k.removesuffix('_s')} {statistics.median(v):.2f} s" for k, v in parts.items()) + ")")
        print(f"  (the collector's cyclic garbage collection over the run: {sum(gc_clock.seconds):.1f} s in "
              f"{sum(gc_clock.count)} collections; full ones {gc_clock.count[2]}, {gc_clock.seconds[2]:.1f} s)")
        cpu_ratio = fm_cpu_per / pr_cpu_per if pr_cpu_per else float("inf")
        for label, ratio in (("poll, validate, store", cpu_ratio), ("the whole cycle, judging included", whole)):
            print(f"  ratio fleetmon/Prometheus, {label}: {ratio:.2f} (target ≤ {TARGET_CPU_RATIO:g}: "
                  f"{'met' if ratio <= TARGET_CPU_RATIO else 'NOT met'})")
        print("bytes per stored sample on disk")
        print(f"  Prometheus  {pr_bps:8.3f} B    ({pb['bytes']:,} B / {pb['samples']:,.0f} samples; {pb['source']})")
        print(f"  fleetmon    {fm_bps:8.3f} B    ({fm_bytes:,} B / {values:,} values in {rows:,} GPU-minute rows; "
              f"samples table pages)")
        if pb["chunks"] is not None:
            print(f"  (Prometheus chunks alone, without the block's index: "
                  f"{pb['chunks'] / max(1.0, pb['samples']):.3f} B per sample; the index is per series and "
                  f"weighs less the longer the block)")
        b_ratio = fm_bps / pr_bps if pr_bps else float("inf")
        print(f"  ratio fleetmon/Prometheus {b_ratio:.2f} (target ≤ {TARGET_BYTES_RATIO:g}: "
              f"{'met' if b_ratio <= TARGET_BYTES_RATIO else 'NOT met'})")
        per_hour_prom = pr_bps * samples_per_gpu_scrape * 3600 / args.interval
        per_hour_fm = fm_bytes / max(1, rows) * 60
        print(f"bytes per GPU-hour at {args.interval:g} s: Prometheus {per_hour_prom:,.0f} B "
              f"({samples_per_gpu_scrape:.0f} samples per GPU per scrape), fleetmon {per_hour_fm:,.0f} B "
              f"(60 rows); {gpus} GPUs")
        print(json.dumps({"nodes": args.nodes, "gpus": args.gpus, "minutes": args.minutes, "interval_s": args.interval,
                          "prom_cpu_per_scrape_s": pr_cpu_per, "fleetmon_cpu_per_poll_s": fm_cpu_per,
                          "fleetmon_judge_cpu_per_poll_s": fm_judge_per,
                          "cpu_ratio": cpu_ratio, "whole_cycle_cpu_ratio": whole, "health_passes": len(passes),
                          "gc_s": sum(gc_clock.seconds), "gc_full_s": gc_clock.seconds[2],
                          "health_pass_median_s": {k: statistics.median(v) if v else None for k, v in parts.items()},
                          "prom_bytes_per_sample": pr_bps,
                          "fleetmon_bytes_per_value": fm_bps, "bytes_ratio": b_ratio,
                          "prom_bytes_source": pb["source"], "prom_chunk_bytes": pb["chunks"],
                          "prom_block_samples": pb["samples"], "prom_bytes_per_gpu_hour": per_hour_prom,
                          "fleetmon_bytes_per_gpu_hour": per_hour_fm}))
        return 0
    finally:
        if prom is not None and prom.poll() is None:
            prom.terminate()
            prom.wait(30)
        for s in sims:
            s.terminate()
        for s in sims:
            try:
                s.wait(15)
            except subprocess.TimeoutExpired:
                s.kill()
        if not args.keep:
            import shutil

            shutil.rmtree(folder, ignore_errors=True)


class socket_port:
    """A free TCP port on 127.0.0.1 (``with socket_port() as port``)."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        return None


if __name__ == "__main__":
    sys.exit(main())
