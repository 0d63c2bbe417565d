"""A fast synthetic fleet history for tests, benchmarks and demos (pure, seeded).

:func:`generate` builds a :class:`~fleetmon.health.fleet.FleetHistory`
directly (no NVML, no database): per-minute rows for the recent hours and
hourly rows for the older days, for healthy GPUs of several catalog models
running busy/idle jobs, plus injected faults (:class:`SimFault`, one kind per
finding kind), card swaps between slots and nodes (:class:`SimSwap`),
unreachable and flapping nodes, version mismatches and missing GPUs. Each
injected fault yields a :class:`Label` (kind, node, card, onset) that the
quality tests compare with the findings.

One module per concern, importing in one direction (model ← columns, faults ← generate):

* :mod:`~fleetmon.sim.synthetic.model` - GPU models, nodes, faults, swaps, labels;
* :mod:`~fleetmon.sim.synthetic.columns` - noise tables, per-minute and hourly columns, workloads;
* :mod:`~fleetmon.sim.synthetic.faults` - what each injected fault does to a card;
* :mod:`~fleetmon.sim.synthetic.generate` - :func:`generate` and :func:`with_now`.

Unlike :mod:`fleetmon.sim.nvml` (which simulates NVML calls live), this
package produces already aggregated history.
"""

from __future__ import annotations

from fleetmon.sim.synthetic.generate import generate, with_now
from fleetmon.sim.synthetic.model import (
    DRIVERS,
    FAULT_KINDS,
    LOAD_FAULTS,
    MODELS,
    Label,
    SimFault,
    SimModel,
    SimNode,
    SimSwap,
    healthy_fleet,
)

__all__ = [
    "DRIVERS",
    "FAULT_KINDS",
    "LOAD_FAULTS",
    "MODELS",
    "Label",
    "SimFault",
    "SimModel",
    "SimNode",
    "SimSwap",
    "generate",
    "healthy_fleet",
    "with_now",
]
