"""Health benchmark: `fleetmon report` and `fleetmon preflight` on a fleet-sized database.

Usage:
    python benchmarks/bench_health.py               # 512 GPUs × 90 days (bench_storage's cached database)
    python benchmarks/bench_health.py --quick       # 64 GPUs × 14 days (7 raw)
    python benchmarks/bench_health.py --gpus 16 --days 2 --raw-days 1

The database is the one benchmarks/bench_storage.py builds and caches (same
generator, same cache key): raw minutes for the last ``--raw-days``, hourly and
daily rollups for all ``--days``, one day of poll log. A missing one is built
first (512 GPUs × 90 days: about 15 minutes, once). Its synthetic fleet is
healthy, so these figures measure speed, not findings.

Every figure is the median of ``--runs`` runs (at least 3), printed beside
baselines measured in the same run:

* the wall time of ``fleetmon --version`` (interpreter start and imports: what
  any command costs before it reads anything);
* the raw SQL read of the same window (``SELECT`` of every stored column of
  the rows the command reads, fetched in Python, nothing decoded).

The commands run as subprocesses (whole-command wall time, as cron sees it),
with ``--now`` set to the end of the generated data; the in-process split
(load / evaluate / render) shows where the time goes. A report writes one row
into the ``reports`` table of the cached database (the next report compares
with it); nothing else is changed.

Targets (issue 5): report ≤ 5 s, preflight of 64 nodes over 14 days ≤ 2 s.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_storage as bs  # noqa: E402

from fleetmon import assess, hostlist  # noqa: E402
from fleetmon.health import engine, render  # noqa: E402
from fleetmon.health.series import DAY_S, HOUR_S  # noqa: E402
from storage.db import open_database  # noqa: E402

REPORT_TARGET_S = 5.0
PREFLIGHT_TARGET_S = 2.0


def median_s(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def ensure_db(cache: Path, gpus: int, days: int, raw_days: int, say: Callable[[str], None]) -> Path:
    """bench_storage's cached database for these parameters (built when missing)."""
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"fleet-g{gpus}-d{days}-r{raw_days}-{bs.schema_key()}.db"
    if path.exists() and path.with_suffix(".json").exists():
        say(f"database: {path} (cached)")
        return path
    say(f"database: building {path} (bench_storage's generator) …")
    fleet = bs.Fleet(gpus, bs.NOW - days * DAY_S, days * 1440, seed=42)
    stats = bs.build_db(path, fleet, days, raw_days, say)
    say(f"  built in {stats['build_s']:.0f} s")
    return path


def run_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, "-m", "fleetmon", *args], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=600)
    if proc.returncode not in (0, 2):
        raise SystemExit(f"fleetmon {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def raw_read(path: Path, table: str, since: float, until: float) -> int:
    """Every stored column of the window's rows, fetched (the floor any reader pays)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return len(conn.execute(f"SELECT * FROM {table} WHERE gpu_id IN (SELECT id FROM gpus) AND ts >= ? "
                                f"AND ts <= ? ORDER BY gpu_id, ts", (int(since), int(until))).fetchall())
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpus", type=int, default=512)
    ap.add_argument("--days", type=int, default=90)
    ap.add_argument("--raw-days", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--preflight-days", type=float, default=14)
    ap.add_argument("--preflight-nodes", type=int, default=64)
    ap.add_argument("--quick", action="store_true", help="64 GPUs × 14 days (7 raw)")
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "fleetmon-bench"))
    args = ap.parse_args(argv)
    if args.quick:
        args.gpus, args.days, args.raw_days = 64, 14, 7
    args.runs = max(1, args.runs)
    args.raw_days = min(args.raw_days, args.days)
    say = lambda s: print(s, flush=True)  # noqa: E731

    nodes = (args.gpus + bs.GPUS_PER_NODE - 1) // bs.GPUS_PER_NODE
    say(f"fleetmon health benchmark: {args.gpus} GPUs ({nodes} nodes) × {args.days} days, raw minutes for the "
        f"last {args.raw_days} days, medians of {args.runs} runs; SQLite {sqlite3.sqlite_version}, "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    if args.runs < 3:
        say("  (fewer than 3 runs: a check that the benchmark runs, not a measurement to quote)")
    path = ensure_db(Path(args.cache), args.gpus, args.days, args.raw_days, say)
    now = float(bs.NOW)
    pf_nodes = hostlist.compress(f"node-{n:04d}" for n in range(min(nodes, args.preflight_nodes)))
    pf_count = min(nodes, args.preflight_nodes)
    db_arg = ["--db", str(path), "--now", str(int(now))]

    # Warm the page cache and apply pending schema steps once, outside the clock.
    run_cli(["report", *db_arg, "--json"])

    base_s, _ = median_s(lambda: run_cli(["--version"]), args.runs)
    rep_s, rep = median_s(lambda: run_cli(["report", *db_arg]), args.runs)
    rep_json_s, _ = median_s(lambda: run_cli(["report", *db_arg, "--json"]), args.runs)
    # A preflight reads the current hour per minute: judge it one minute before the hour ends
    # (59 minutes per GPU, its slowest moment).
    pf_now = now - 60
    pf_args = ["preflight", "--db", str(path), "--now", str(int(pf_now)), "--nodes", pf_nodes,
               "--days", f"{args.preflight_days:g}"]
    pf_s, pf = median_s(lambda: run_cli(pf_args), args.runs)

    # In process: where the time goes.
    db = open_database(path, readonly=True)
    try:
        since = now - DAY_S
        load_s, history = median_s(lambda: assess.load_history(db, now, since, minutes_s=DAY_S), args.runs)
        eval_s, findings = median_s(lambda: engine.evaluate(history), args.runs)
        render_s, _ = median_s(lambda: render.report_text(engine.report(history, findings=findings)), args.runs)
        minutes = sum(len(g.minutes) for g in history.gpus)
        pf_since = pf_now - args.preflight_days * DAY_S
        names = hostlist.expand(pf_nodes)
        pf_load_s, pf_hist = median_s(lambda: assess.load_history(
            db, pf_now, pf_since, nodes=names, minutes_s=assess.PREFLIGHT_MINUTES_S), args.runs)
        pf_eval_s, pf_found = median_s(lambda: engine.evaluate(pf_hist), args.runs)
        pf_review_s, _ = median_s(lambda: render.preflight_text(engine.preflight(
            pf_hist, names, days=args.preflight_days, findings=pf_found)), args.runs)
        pf_hours = sum(len(g.hourly) for g in pf_hist.gpus)
        pf_minutes = sum(len(g.minutes) for g in pf_hist.gpus)
        col_s, col_hist = median_s(lambda: assess.load_history(
            db, now, now - assess.HEALTH_WINDOW_S, minutes_s=assess.HEALTH_MINUTES_S), args.runs)
        col_eval_s, _ = median_s(lambda: engine.evaluate(col_hist), args.runs)
    finally:
        db.close()
    raw_s, raw_rows = median_s(lambda: raw_read(path, "samples", since, now), args.runs)
    minute_from = int(pf_now - assess.PREFLIGHT_MINUTES_S) // HOUR_S * HOUR_S
    pf_raw_s, pf_raw_rows = median_s(lambda: raw_read(path, "hourly", pf_since, minute_from - 1)
                                     + raw_read(path, "samples", minute_from, pf_now), args.runs)

    def line(label: str, value: str, baseline: str, verdict: str = "") -> None:
        say(f"  {label:<52} {value:>10}   {baseline:<52} {verdict}")

    def check(value: float, target: float) -> str:
        return f"{'ok' if value <= target else 'MISSED'} (target ≤ {target:g} s)"

    say("")
    say("Baselines (same run): interpreter + imports = `fleetmon --version`; raw read = SELECT * of the window's "
        "rows, fetched, nothing decoded")
    line("fleetmon --version (subprocess)", f"{base_s:.2f} s", "interpreter start and imports")
    say("")
    say(f"1. fleetmon report --since 24h ({args.gpus} GPUs, {minutes:,} minute rows read; subprocess wall time)")
    line("fleetmon report (text)", f"{rep_s:.2f} s", f"--version {base_s:.2f} s", check(rep_s, REPORT_TARGET_S))
    line("fleetmon report --json", f"{rep_json_s:.2f} s", "", check(rep_json_s, REPORT_TARGET_S))
    line("  in process: load_history (24 h of minutes)", f"{load_s:.2f} s",
         f"raw read {raw_s:.2f} s ({raw_rows:,} rows × all columns)")
    line("  in process: evaluate (every rule)", f"{eval_s:.2f} s", f"{len(findings)} findings")
    line("  in process: report() + render text", f"{render_s:.3f} s", "")
    say("")
    say(f"2. fleetmon preflight --nodes {pf_nodes} --days {args.preflight_days:g} ({pf_count} nodes; "
        f"{pf_hours:,} hourly + {pf_minutes:,} minute rows read, at minute 59 of the hour)")
    line("fleetmon preflight (text)", f"{pf_s:.2f} s", f"--version {base_s:.2f} s", check(pf_s, PREFLIGHT_TARGET_S))
    line("  in process: load_history (hourly + this hour)", f"{pf_load_s:.2f} s",
         f"raw read {pf_raw_s:.2f} s ({pf_raw_rows:,} rows × all columns)")
    line("  in process: evaluate", f"{pf_eval_s:.2f} s", f"{len(pf_found)} findings")
    line("  in process: preflight() + render text", f"{pf_review_s:.3f} s", "")
    say("")
    say("3. The collector's periodic health step (every ≥ 60 s): 24 h window, the last 2 h per minute")
    line("  load_history", f"{col_s:.2f} s", "")
    line("  evaluate", f"{col_eval_s:.2f} s", "then save_findings / save_derating (small writes)")
    say("")
    say(f"report exit status {rep.returncode}, preflight exit status {pf.returncode} "
        f"({pf.stdout.splitlines()[1] if len(pf.stdout.splitlines()) > 1 else ''})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
