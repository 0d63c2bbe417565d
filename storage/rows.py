"""What leaves the store: typed, read-only rows named for what they are.

Callers of :mod:`storage` (the GUI, the export, the collector, the health
glue) get these instead of dicts keyed by column names, so a column called
``idx`` or ``grp`` in the schema is ``index`` or ``group`` everywhere else and
a renamed column is one edit here. Values are decoded: JSON columns come back
as dicts, flags as bools, gauges in their :mod:`fleetmon.fields` units.

Severities stay the plain values the health engine stored (names such as
``"warning"``; integers compare as numbers).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Severity = str | int
"""A stored severity: a name ("info", "warning", "critical") or, from older callers, a number."""


@dataclass(frozen=True)
class NodeRow:
    """One node as the collector last recorded it: reachability, versions and poll cursors."""

    name: str
    url: str | None = None
    group: str | None = None
    hostname: str | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    nvml_version: str | None = None
    kernel: str | None = None
    os_release: str | None = None
    agent_version: str | None = None
    xid_source: str | None = None
    gpu_count: int | None = None
    status: str | None = None
    last_ok: float | None = None
    last_attempt: float | None = None
    last_error: str | None = None
    skew_s: float | None = None
    agent_started_at: float | None = None
    minutes_cursor: int = 0
    events_cursor: int = 0
    buffer_id: str | None = None
    notice: str | None = None
    """Why GPU UUIDs of the latest stored poll were refused (the per-node GPU cap), else None."""
    refused_uuids: int = 0
    """GPU UUID sightings refused to this node by the cap, over all polls."""
    vendor: str | None = None
    """The node's device vendor (issue 23): nvidia, amd, hygon, huawei, intel, mthreads; None before any answer."""
    runtime_version: str | None = None
    """The vendor's runtime or toolkit version (CUDA, ROCm, CANN, SynapseAI, MUSA)."""
    firmware_version: str | None = None
    """The devices' firmware version when the node reports one for all."""


@dataclass(frozen=True)
class GpuRow:
    """One card ever seen, where it sits (or last sat) and its stored inventory.

    ``model`` is the name NVML reports ("NVIDIA A100-SXM4-80GB"); ``state`` is
    "ok", "lost" or "gone" (no longer in its node's inventory); ``inventory``
    holds the :data:`fleetmon.fields.INVENTORY_FIELDS` values and
    ``inventory_status`` the inventory reads that did not succeed.
    """

    uuid: str
    node: str | None = None
    index: int | None = None
    pci_bus_id: str | None = None
    model: str | None = None
    serial: str | None = None
    vbios: str | None = None
    memory_total_mib: int | None = None
    power_default_w: float | None = None
    power_enforced_w: float | None = None
    state: str | None = None
    first_seen: float | None = None
    last_seen: float | None = None
    inventory: Mapping[str, Any] = field(default_factory=dict)
    inventory_status: Mapping[str, str] = field(default_factory=dict)
    vendor: str | None = None
    """The card's vendor (issue 23); None for a card known from samples alone."""
    signals: Mapping[str, Any] = field(default_factory=dict)
    """The card's current fault signals (``{"values", "since", "ts"}``: :mod:`fleetmon.signals`)."""


@dataclass(frozen=True)
class FleetRow:
    """One GPU of the fleet table: its node, identity and latest reading.

    ``values`` and ``status`` are the latest sample's decoded values and
    non-OK reads (field names of :mod:`fleetmon.fields`). ``findings`` is
    left empty by storage; a reader that also loads the open findings fills
    it (``dataclasses.replace``) with (severity, kind) pairs for display.
    """

    node: str
    uuid: str
    node_status: str | None = None
    last_ok: float | None = None
    last_error: str | None = None
    driver_version: str | None = None
    index: int | None = None
    model: str | None = None
    state: str | None = None
    latest_ts: float | None = None
    power_default_w: float | None = None
    power_enforced_w: float | None = None
    values: Mapping[str, Any] = field(default_factory=dict)
    status: Mapping[str, str] = field(default_factory=dict)
    findings: tuple[tuple[str, str], ...] = ()
    vendor: str | None = None
    """The card's vendor (issue 23), else its node's."""


@dataclass(frozen=True)
class NewFinding:
    """A finding as the health engine hands it to :func:`storage.findings.save_findings`.

    ``key`` is the engine's stable identity of the problem; ``first_seen`` /
    ``last_seen`` the onset and the latest evidence (None: the time of saving).
    """

    key: str
    kind: str
    severity: Severity
    node: str | None = None
    gpu_uuid: str | None = None
    first_seen: float | None = None
    last_seen: float | None = None
    evidence: Mapping[str, Any] | None = None
    action: str | None = None
    texts: str | None = None
    """How the summary and action were made (:func:`fleetmon.i18n.dumps`), stored in ``findings.texts``."""


@dataclass(frozen=True)
class StoredFinding:
    """A stored finding with its life cycle (``resolved_at`` None while open).

    ``updated_at`` is when a collector last judged it open. ``gpu_index`` is
    not stored: a reader that knows the card's index may fill it for display.
    ``evidence["summary"]`` and ``action`` are the English text as stored; where the
    row keeps how they were made (``findings.texts``, m017) they are
    :class:`fleetmon.i18n.Text` (equal to that English), which ``i18n.localized``
    says in the reader's language.
    """

    id: int
    key: str
    kind: str
    severity: Severity
    first_seen: float
    last_seen: float
    updated_at: float
    node: str | None = None
    gpu_uuid: str | None = None
    resolved_at: float | None = None
    evidence: Mapping[str, Any] | None = None
    action: str | None = None
    gpu_index: int | None = None

    @property
    def is_open(self) -> bool:
        return self.resolved_at is None


@dataclass(frozen=True)
class FindingChanges:
    """What one :func:`storage.findings.save_findings` call changed (reopened ones are in ``new`` too)."""

    new: tuple[StoredFinding, ...] = ()
    reopened: tuple[StoredFinding, ...] = ()
    resolved: tuple[StoredFinding, ...] = ()
    worsened: tuple[StoredFinding, ...] = ()

    def keys(self) -> dict[str, list[str]]:
        """``{"new", "reopened", "resolved", "worsened"}`` → finding keys."""
        return {what: [f.key for f in getattr(self, what)] for what in ("new", "reopened", "resolved", "worsened")}


DERATING_RATIOS: tuple[str, ...] = ("sm_clock_busy_mhz", "clock_ratio", "power_limit_ratio", "memory_ratio",
                                    "pcie_ratio", "clock_vs_fleet")
"""The figures of a :class:`DeratingDay`, in storage order."""


@dataclass(frozen=True)
class DeratingDay:
    """One GPU's derating figures for one UTC day (``day``: the day's start, Unix s).

    ``sm_clock_busy_mhz``: mean SM clock over busy unthrottled minutes; the
    ratios compare with the nominal spec (and ``clock_vs_fleet`` with the
    model's fleet median). None where the day gave no figure.
    """

    gpu_uuid: str
    day: int
    node: str | None = None
    sm_clock_busy_mhz: float | None = None
    clock_ratio: float | None = None
    power_limit_ratio: float | None = None
    memory_ratio: float | None = None
    pcie_ratio: float | None = None
    clock_vs_fleet: float | None = None


@dataclass(frozen=True)
class ReportRow:
    """A stored report: its kind ("report", "report:<group>"), time and JSON summary."""

    id: int
    ts: float
    kind: str
    summary: Any = None


@dataclass(frozen=True)
class EventRow:
    """A node event (agent: Xid, GPU lost/back/reset…; collector: node_unreachable/node_back).

    ``seq`` is None for the events the collector generates itself.
    """

    id: int
    node: str
    ts: float
    kind: str
    seq: int | None = None
    gpu_uuid: str | None = None
    pci_bus_id: str | None = None
    code: int | None = None
    message: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class InventoryChangeRow:
    """An entry of the inventory change log.

    ``old``/``new`` are dicts (``{"node", "index", "pci_bus_id"}`` for
    enrolled/appeared/disappeared/moved; ``{"default_w", "enforced_w"}`` for
    power_limit_changed) or plain strings (driver, VBIOS, serial).
    """

    id: int
    ts: float
    kind: str
    gpu_uuid: str | None = None
    node: str | None = None
    old: Any = None
    new: Any = None


@dataclass(frozen=True)
class PollRow:
    """One poll attempt of a node."""

    id: int
    ts: float
    node: str
    ok: bool
    error: str | None = None
    duration_ms: float | None = None
    minutes: int | None = None
    events: int | None = None


@dataclass(frozen=True)
class PlacementRow:
    """Where a card sat from ``since`` until ``until`` (None while it is still there)."""

    uuid: str
    node: str | None
    index: int | None
    pci_bus_id: str | None
    since: float
    until: float | None = None


@dataclass(frozen=True)
class HistoryWindow:
    """One GPU's recorded history over a window, at one resolution, oldest first.

    ``rows`` are decoded points keyed by field names: ``ts`` and, for minute
    rows, the GpuMinute value keys, ``n``, ``state``, ``status``; for rollup
    rows ``minutes``, ``n``, ``lost``, gauge min/mean/max, counters' last
    value and ``_delta``, states' last value, ``thr_*``/``busy_n`` counts.
    """

    resolution: str
    step_s: int
    rows: tuple[Mapping[str, Any], ...] = ()

    def column(self, key: str) -> list[Any]:
        """One key over every row (None where a row lacks it)."""
        return [r.get(key) for r in self.rows]


GpuColumns = Mapping[str, Sequence[Any]]
"""One GPU's values read column by column: key → one value per row (``ts`` ascending)."""
