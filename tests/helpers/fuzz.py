"""How much the seeded fuzz tests do.

The suite runs each fuzz test at a size that fits its time budget (the whole suite < 10 min on two
cores). ``FLEETMON_FUZZ_SCALE`` multiplies every fuzz test's mutation, request and batch counts for a
deeper run (``FLEETMON_FUZZ_SCALE=4 pytest tests -k fuzz``: four times the mutations, same seeds);
``FLEETMON_FUZZ_SEED`` replays another seed. Both are described in benchmarks/README.md ("Fuzz tests").
"""

from __future__ import annotations

import os

SCALE = float(os.environ.get("FLEETMON_FUZZ_SCALE", "1"))
"""The multiplier (1: the suite's size)."""


def rounds(n: int) -> int:
    """``n`` (the suite's count) scaled by ``FLEETMON_FUZZ_SCALE``; at least 1."""
    return max(1, round(n * SCALE))
