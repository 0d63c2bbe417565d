"""The collector's health pass at 1,000 nodes × 8 GPUs, in its steady state.

Usage:
    python benchmarks/bench_health_pass.py                # 8,000 GPUs, medians of 5 passes
    python benchmarks/bench_health_pass.py --gpus 512 --runs 3

Every minute or so the collector judges the last 24 h (``fleetmon.assess.evaluate_and_store``):
the last two to three hours per minute, the hours before from the hourly rollups. The database
here holds that window for every GPU (bench_storage's generator: 22 h of hourly rows, then
2 h of minutes, rolled up as the collector leaves them), cached under ``--cache``.

Printed, medians of ``--runs`` passes each, measured in the same run:

* the baseline: a pass that reads the whole window (what every pass did before the collector
  kept a :class:`storage.health_input.WindowCache`, and what a pass still does once an hour);
* the collector's pass: through one cache, each pass a minute after the last, reading the
  minutes stored in between.

The split (load / evaluate / store) shows where a pass's time goes. The ratio is cached/whole.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import bench_storage as bs  # noqa: E402

from fleetmon import assess  # noqa: E402
from storage.db import open_database  # noqa: E402
from storage.health_input import WindowCache  # noqa: E402
from storage.ingest import _SAMPLE_SQL, ingest_polls  # noqa: E402
from storage.rollup import rollup  # noqa: E402
from storage.schema import ROLLUP_COLUMNS  # noqa: E402

DAY_MINUTES = 1440
RAW_MINUTES = 120


def build(path: Path, gpus: int) -> None:
    fleet = bs.Fleet(gpus, bs.NOW - 86400, DAY_MINUTES, seed=42)
    tmp = path.with_suffix(".building")
    for f in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        f.unlink(missing_ok=True)
    db = open_database(tmp)
    ingest_polls(db, fleet.polls(bs.NOW - 30))
    ids = [r[0] for r in db.execute("SELECT id FROM gpus ORDER BY id")]
    conn = db.conn
    raw0 = DAY_MINUTES - RAW_MINUTES
    conn.execute("BEGIN")
    conn.executemany(f"INSERT INTO hourly ({', '.join(ROLLUP_COLUMNS)}) VALUES "
                     f"({', '.join('?' for _ in ROLLUP_COLUMNS)})", fleet.hourly_rows(0, raw0 // 60, ids))
    conn.execute("COMMIT")
    for m0 in range(raw0, DAY_MINUTES, 30):
        conn.execute("BEGIN")
        conn.executemany(_SAMPLE_SQL, fleet.minute_rows(m0, min(DAY_MINUTES, m0 + 30), ids))
        conn.execute("COMMIT")
    rollup(db, bs.NOW, since=0)
    conn.execute("ANALYZE")
    db.close()
    bs.checkpoint(tmp)
    os.replace(tmp, path)


def one_pass(db: Any, now: float, cache: WindowCache | None) -> dict[str, float]:
    t0 = time.perf_counter()
    out = assess.evaluate_and_store(db, now, cache=cache)
    return {"wall": time.perf_counter() - t0, "load": out["load_s"], "evaluate": out["evaluate_s"],
            "store": out["store_s"]}


def med(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpus", type=int, default=8000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "fleetmon-bench"))
    args = ap.parse_args(argv)
    runs = max(3, args.runs)
    say = lambda s: print(s, flush=True)  # noqa: E731
    folder = Path(args.cache)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"health-pass-g{args.gpus}-{bs.schema_key()}.db"
    say(f"fleetmon collector health pass: {args.gpus} GPUs ({args.gpus // bs.GPUS_PER_NODE} nodes), the last 24 h "
        f"({DAY_MINUTES // 60 - RAW_MINUTES // 60} h hourly, {RAW_MINUTES // 60} h per minute), medians of {runs}; "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    if not path.exists():
        say(f"database: building {path} …")
        t0 = time.perf_counter()
        build(path, args.gpus)
        say(f"  built in {time.perf_counter() - t0:.0f} s")
    else:
        say(f"database: {path} (cached)")
    db = open_database(path)
    # Passes a minute apart inside one hour of the generated day, as the collector makes them.
    start = float(bs.NOW - 3000)
    assess.evaluate_and_store(db, start)  # warm the page cache, outside the clock
    whole = [one_pass(db, start + 60 * k, None) for k in range(runs)]
    cache = WindowCache()
    one_pass(db, start, cache)  # the cache's first (whole) read
    cached = [one_pass(db, start + 60 * (k + 1), cache) for k in range(runs)]
    db.close()
    for label, rows in (("whole window read (baseline)", whole), ("through the window cache", cached)):
        say(f"  {label:30s} {med(rows, 'wall'):6.2f} s   (load {med(rows, 'load'):.2f}, evaluate "
            f"{med(rows, 'evaluate'):.2f}, store {med(rows, 'store'):.2f}; runs "
            f"{', '.join(format(r['wall'], '.2f') for r in rows)})")
    say(f"  ratio cached/whole {med(cached, 'wall') / med(whole, 'wall'):.2f}; the cache read in full "
        f"{cache.full_reads}× and read {cache.gpus_reread} cards again")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
