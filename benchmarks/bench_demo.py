"""Demo history benchmark: seconds to generate the demo fleet's history (``fleetmon demo``'s wait).

Usage:
    python benchmarks/bench_demo.py                    # 24 nodes × 30 days, 3 runs
    python benchmarks/bench_demo.py --nodes 8 --days 7 --runs 3

Each run writes the history of :func:`fleetmon.sim.demo_history.generate_history`
into a fresh database file in a temporary folder (the same path as ``fleetmon
demo``: storage.ingest, storage.bulk, storage.rollup) and times it end to end.
Prints the median (and min/max) of ``--runs`` runs, the database size and the
rows written; the target is under 30 s for 24 nodes × 30 days on 2 cores.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fleetmon.sim.demo_history import DEFAULT_SEED, generate_history  # noqa: E402
from storage.db import open_database  # noqa: E402
from storage.queries import counts  # noqa: E402

TARGET_S = 30.0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=24)
    p.add_argument("--days", type=float, default=30)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = p.parse_args(argv)
    times: list[float] = []
    size = 0
    rows: dict[str, int] = {}
    now = time.time()
    for _ in range(max(1, args.runs)):
        with tempfile.TemporaryDirectory(prefix="bench-demo-") as tmp:
            path = Path(tmp) / "demo.db"
            db = open_database(path)
            t0 = time.perf_counter()
            generate_history(db, nodes=args.nodes, days=args.days, seed=args.seed, now=now)
            times.append(time.perf_counter() - t0)
            rows = counts(db)
            db.close()
            size = path.stat().st_size
    med = statistics.median(times)
    print(f"demo history, {args.nodes} nodes × {args.days:g} days, {len(times)} runs")
    print(f"  generate: median {med:.1f} s (min {min(times):.1f}, max {max(times):.1f}); target < {TARGET_S:g} s "
          f"-> {'OK' if med < TARGET_S else 'OVER'}")
    print(f"  database: {size / 2**20:.1f} MiB; rows: " + ", ".join(f"{k} {v}" for k, v in sorted(rows.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
