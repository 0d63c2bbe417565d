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
