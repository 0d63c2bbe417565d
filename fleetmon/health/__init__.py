"""The health engine: pure rules over a fleet's recorded history.

Modules:
    history: the input model (FleetHistory, NodeHistory, GpuHistory, Series).
    findings: the Finding record and the vocabulary of kinds.
    thresholds: every threshold with its default and source.
    rules: one pure function per condition (RULES).
    derating: per-GPU per-day ratios against nominal specs and the fleet.
    engine: evaluate, node verdicts, report diffs, preflight.
    render: text, JSON and HTML for reports and preflights.

Nothing here does I/O or reads a clock; the time is ``FleetHistory.now``.
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
from fleetmon.health.history import (
    EventRecord,
    FleetHistory,
    GpuHistory,
    GroupExpect,
    InventoryChange,
    NodeHistory,
    Outage,
    Placement,
    Poll,
    Series,
)
from fleetmon.health.thresholds import Thresholds

__all__ = [
    "KINDS",
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
]
