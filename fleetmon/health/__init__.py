"""The health engine: pure rules over a fleet's recorded history.

Modules:
    fleet: the input model (FleetHistory, NodeHistory, GpuHistory, events, outages).
    series: one GPU's rows held by column (Series), the time constants.
    hourly: the hourly rollup of minute rows (rollup_hourly).
    findings: the Finding record and the vocabulary of kinds.
    thresholds: every threshold with its default and source.
    rules: one module per family of rules, one pure function per condition;
        the one list of rules is ``rules.RULES``; ``rules.derating`` also gives
        the per-GPU per-day ratios against nominal specs and the fleet.
    engine: evaluate, node verdicts, report diffs, preflight.
    render: text, JSON and HTML for reports and preflights.

Nothing here does I/O or reads a clock; the time is ``FleetHistory.now``.
The names below are the public API; import a submodule for anything else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# The names are loaded on first use (PEP 562): importing a submodule (the app's verdict words, the
# findings' vocabulary) then costs that submodule alone, not the engine and every rule (0.15 s of the
# desktop app's launch, benchmarks/bench_gui.py).
if TYPE_CHECKING:
    from fleetmon.health.engine import (
        NodePreflight,
        PreflightResult,
        ReportResult,
        diff_findings,
        evaluate,
        fleet_summary,
        node_verdicts,
        preflight,
        report,
    )
    from fleetmon.health.findings import KINDS, SEVERITIES, Finding
    from fleetmon.health.fleet import (
        EventRecord,
        FleetHistory,
        GpuHistory,
        GroupExpect,
        InventoryChange,
        NodeHistory,
        Outage,
        Placement,
        Poll,
    )
    from fleetmon.health.hourly import rollup_hourly
    from fleetmon.health.rules import RULES
    from fleetmon.health.series import Series
    from fleetmon.health.thresholds import Thresholds

_LAZY = {
    "NodePreflight": "fleetmon.health.engine",
    "PreflightResult": "fleetmon.health.engine",
    "ReportResult": "fleetmon.health.engine",
    "diff_findings": "fleetmon.health.engine",
    "evaluate": "fleetmon.health.engine",
    "fleet_summary": "fleetmon.health.engine",
    "node_verdicts": "fleetmon.health.engine",
    "preflight": "fleetmon.health.engine",
    "report": "fleetmon.health.engine",
    "KINDS": "fleetmon.health.findings",
    "SEVERITIES": "fleetmon.health.findings",
    "Finding": "fleetmon.health.findings",
    "EventRecord": "fleetmon.health.fleet",
    "FleetHistory": "fleetmon.health.fleet",
    "GpuHistory": "fleetmon.health.fleet",
    "GroupExpect": "fleetmon.health.fleet",
    "InventoryChange": "fleetmon.health.fleet",
    "NodeHistory": "fleetmon.health.fleet",
    "Outage": "fleetmon.health.fleet",
    "Placement": "fleetmon.health.fleet",
    "Poll": "fleetmon.health.fleet",
    "rollup_hourly": "fleetmon.health.hourly",
    "RULES": "fleetmon.health.rules",
    "Series": "fleetmon.health.series",
    "Thresholds": "fleetmon.health.thresholds",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "KINDS",
    "RULES",
    "SEVERITIES",
    "EventRecord",
    "Finding",
    "FleetHistory",
    "GpuHistory",
    "GroupExpect",
    "InventoryChange",
    "NodeHistory",
    "NodePreflight",
    "Outage",
    "Placement",
    "Poll",
    "PreflightResult",
    "ReportResult",
    "Series",
    "Thresholds",
    "diff_findings",
    "evaluate",
    "fleet_summary",
    "node_verdicts",
    "preflight",
    "report",
    "rollup_hourly",
]
