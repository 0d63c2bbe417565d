"""The 200-node cycle with and without hostile nodes at the head of the fleet file (issue 20, item 10).

Runs :func:`tests/helpers/hostile_load.run_load`: ``--nodes`` simulated agents in one process
(``python -m fleetmon.sim.fleet``), polled by the real collector alone, then with 13 hostile nodes
listed first (hijacking, huge, ``+Inf``, 400-digit, inventing and garbage scrapes, a drip, a silent
port, two dead ports, an SSH node whose ``ssh`` hangs); prints each run's cycle times, their medians
and the ratio (target: ≤ 2×), and the healthy nodes not stored, if any.

    python benchmarks/bench_hostile_load.py                       # 200 nodes × 2 GPUs, 3 cycles each
    python benchmarks/bench_hostile_load.py --cycles 5 --skip bad-inf,bad-bigint
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]


def main() -> int:
    from helpers.hostile_load import run_load

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=200)
    p.add_argument("--gpus", type=int, default=2)
    p.add_argument("--cycles", type=int, default=3, help="measured cycles per run (after one unmeasured)")
    p.add_argument("--skip", default="", help="hostile node names to leave out, comma-separated")
    p.add_argument("--json", action="store_true", help="also print the raw figures")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="fleetmon-hostile-load-") as tmp:
        f = run_load(Path(tmp), nodes=args.nodes, gpus=args.gpus, cycles=args.cycles,
                     skip=frozenset(filter(None, args.skip.split(","))))
    print(f"{args.nodes} simulated agents × {args.gpus} GPUs; hostile nodes first: {', '.join(f.get('hostile_nodes', []))}")
    if "clean_median_s" in f:
        print(f"clean cycle:   median {f['clean_median_s']:.2f} s  ({', '.join(f'{x:.2f}' for x in f['clean_s'])})")
    if "hostile_median_s" in f:
        print(f"hostile cycle: median {f['hostile_median_s']:.2f} s  ({', '.join(f'{x:.2f}' for x in f['hostile_s'])};"
              f" timeout_s {f['hostile_timeout_s']:.2f})")
        print(f"ratio: {f['ratio']:.2f}× (target ≤ 2×)")
    print(f"problems: {len(f['problems'])}")
    for line in f["problems"][:20]:
        print("  " + line)
    if args.json:
        print(json.dumps(f, indent=1))
    return 0 if not f["problems"] and f.get("ratio", 99) <= 2 else 1


if __name__ == "__main__":
    sys.exit(main())
