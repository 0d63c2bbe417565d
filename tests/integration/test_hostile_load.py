"""Issue 20, item 10 (load part): 200 simulated agents with hostile nodes at the head of the fleet file.

The real collector polls 200 simulated agents (``python -m fleetmon.sim.fleet``: many agents in one
process, the real agent code) alone, then with 13 hostile nodes listed FIRST (see
:mod:`helpers.hostile_load`: two scrapes of healthy agents' UUIDs, a 6 MiB scrape, ``+Inf`` and a
400-digit integer, 64 invented UUIDs per scrape, garbage, a drip, a silent port, two dead ports, an
SSH node whose ``ssh`` hangs). Every healthy node is stored in every cycle, keeps its cards and has
none of its records dropped; the hostile cycle's median stays within 3× of the clean cycle's median
measured in the same run (3 cycles each, after a first unmeasured one): a guard against a hostile node
holding the cycle. The figures are printed; the performance target (≤ 2×) is measured by
benchmarks/bench_hostile_load.py on its own.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from helpers.hostile_load import run_load

from storage.db import query

pytestmark = pytest.mark.integration

NODES = 200
SKIP = frozenset(filter(None, os.environ.get("FLEETMON_HOSTILE_LOAD_SKIP", "").split(",")))
"""Hostile node names to leave out (``bad-inf,bad-bigint``…): only to tell which kinds a branch does not hold."""


def _check(db: Any, polls: list[Any], healthy: list[str]) -> list[str]:
    """The healthy nodes keep their cards and have none of their records dropped."""
    problems = []
    wrong = query(db, f"""SELECT count(*) AS n FROM gpus WHERE uuid IN (
                              SELECT g.uuid FROM gpus g WHERE g.node LIKE 'bad-%' AND g.uuid NOT LIKE 'GPU-huge-%'
                              AND g.uuid NOT LIKE 'GPU-new-%' AND g.uuid NOT LIKE 'GPU-inf-%'
                              AND g.uuid NOT LIKE 'GPU-big-%')""")[0]["n"]
    if wrong:
        problems.append(f"{wrong} healthy cards held by a hostile node")
    dropped = query(db, "SELECT node, sum(dropped) AS n FROM gpu_claim_conflicts WHERE node NOT LIKE 'bad-%' "
                        "GROUP BY node")
    if dropped:
        problems.append(f"healthy records dropped: {dropped[:3]}")
    stored = {r["name"] for r in query(db, "SELECT name FROM nodes WHERE status = 'ok' AND name NOT LIKE 'bad-%'")}
    if len(stored) != len(healthy):
        problems.append(f"{len(healthy) - len(stored)} healthy nodes not ok in the store")
    return problems


def test_hostile_nodes_at_the_head_of_a_200_node_fleet_cost_the_healthy_ones_nothing(tmp_path: Path) -> None:
    figures = run_load(tmp_path, nodes=NODES, gpus=2, cycles=3, check=_check, skip=SKIP)
    print("\nhostile load:", {k: (round(v, 3) if isinstance(v, float) else
                                  [round(x, 3) for x in v] if k.endswith("_s") and isinstance(v, list) else v)
                              for k, v in figures.items() if k != "problems"})
    for p in figures["problems"]:
        print("  problem:", p)
    assert figures["problems"] == []
    assert len(figures["hostile_nodes"]) >= 10 or SKIP
    # A guard, not the figure: a hostile node that held the cycle for its deadline would make it several times
    # the clean one. The figure (target ≤ 2×) is the benchmark's, benchmarks/bench_hostile_load.py; in the
    # suite, beside the other worker's tests, a quiet-machine fresh-clone run measured 2.11×.
    assert figures["ratio"] <= 3.0, figures
