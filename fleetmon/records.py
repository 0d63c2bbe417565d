"""Record types shared by the agent, the collector, storage, rules and the UI.

Every record is a frozen dataclass with ``to_dict``/``from_dict`` for the wire
(JSON, schema version :data:`WIRE_SCHEMA`). Timestamps are Unix seconds taken by
the *agent's* clock; the collector records the skew separately.

A value that could not be read is ``None`` in ``values`` and the reason is in
``status`` (field name -> :class:`Status` value). A field missing from
``status`` was read fine.
"""

from __future__ import annotations

from dataclasses import Field, asdict, dataclass, field, fields, replace
from typing import Any, ClassVar, Dict

from fleetmon.compat import SLOTS, StrEnum
from fleetmon.fields import DEFAULT_VENDOR
from fleetmon.vocab import GpuState

WIRE_SCHEMA = 2
"""The wire's schema version the agent writes. 2 (issue 23): the node's values and each GPU's inventory name
the ``vendor``, the node's values the vendor-neutral ``runtime_version`` and ``firmware_version``
(:data:`fleetmon.fields.NODE_CATALOG`). Everything else is as in 1."""
WIRE_SCHEMAS_READ: frozenset[int] = frozenset({1, 2})
"""The versions the collector reads: a version-1 answer (an agent before issue 23) is an NVIDIA node's, and
:func:`vendor_defaults` fills what version 2 added."""


class Status(StrEnum):
    """How one reading turned out (a member is its wire string: ``Status.FAILED == "failed"``)."""

    OK = "ok"
    UNSUPPORTED = "unsupported"  # NVML_ERROR_NOT_SUPPORTED / FUNCTION_NOT_FOUND: permanent, never an alarm
    FAILED = "failed"  # transient: UNKNOWN, TIMEOUT, NO_PERMISSION, a hung call
    GPU_LOST = "gpu_lost"  # NVML_ERROR_GPU_IS_LOST or gone from enumeration


Values = Dict[str, Any]
Statuses = Dict[str, str]


def _from_dict(cls: type, data: dict[str, Any]) -> Any:
    """Build a dataclass from a dict, ignoring unknown keys (forward compatible)."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


class _Wire:
    # Every subclass is a @dataclass; declaring the field table here lets asdict() accept self.
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        return _from_dict(cls, data)


@dataclass(frozen=True, **SLOTS)
class NodeInfo(_Wire):
    """A GPU node as its agent describes itself.

    Attributes:
        hostname: the node's host name.
        agent_version: fleetmon version of the agent.
        values: driver_version, nvml_version, cuda_driver_version, kernel,
            os_release, gpu_count (see fleetmon.fields.NODE_FIELDS).
        status: non-OK reading statuses by field.
        xid_source: where Xid events come from ("nvml+kmsg", "nvml", "none: why").
        started_at: agent start time, Unix seconds.
    """

    hostname: str
    agent_version: str
    values: Values = field(default_factory=dict)
    status: Statuses = field(default_factory=dict)
    xid_source: str = ""
    started_at: float = 0.0


@dataclass(frozen=True, **SLOTS)
class GpuInventory(_Wire):
    """Static facts about one GPU (fleetmon.fields.INVENTORY_FIELDS in ``values``).

    ``state`` is :class:`~fleetmon.vocab.GpuState` ``OK`` or ``LOST``. ``uuid`` and
    ``index`` duplicate the values for convenience.
    """

    uuid: str
    index: int
    name: str
    values: Values = field(default_factory=dict)
    status: Statuses = field(default_factory=dict)
    state: str = GpuState.OK


@dataclass(frozen=True, **SLOTS)
class GpuSample(_Wire):
    """One instantaneous reading of one GPU (the agent's latest sample).

    ``values`` holds every gauge, counter and state of fleetmon.fields by name.
    """

    ts: float
    uuid: str
    index: int
    values: Values = field(default_factory=dict)
    status: Statuses = field(default_factory=dict)
    state: str = GpuState.OK


def vendor_defaults(info: NodeInfo, gpus: list[GpuInventory]) -> tuple[NodeInfo, list[GpuInventory]]:
    """A node answer with what wire version 2 added filled in where absent: the vendor (NVIDIA's, the only one
    a version-1 agent read) and the runtime version (NVIDIA's: its CUDA driver version). A value given is kept;
    a value filled in loses its "not read" status."""
    values, status = dict(info.values), dict(info.status)

    def fill(vals: dict[str, Any], stat: dict[str, str], key: str, value: Any) -> None:
        if vals.get(key) is None and value is not None:
            vals[key] = value
            stat.pop(key, None)

    fill(values, status, "vendor", DEFAULT_VENDOR)
    if values["vendor"] == "nvidia":
        fill(values, status, "runtime_version", values.get("cuda_driver_version"))
    out = []
    for g in gpus:
        if g.values.get("vendor") is None:
            gv, gs = dict(g.values), dict(g.status)
            fill(gv, gs, "vendor", values["vendor"])
            g = replace(g, values=gv, status=gs)
        out.append(g)
    return replace(info, values=values, status=status), out


def minute_key(gauge: str, stat: str) -> str:
    """Key of a per-minute gauge statistic, e.g. ``minute_key("power_w", "max")``."""
    return f"{gauge}_{stat}"


def throttle_key(reason: str) -> str:
    """Key of the per-minute count of samples in which a throttle reason was active."""
    return f"thr_{reason}"


@dataclass(frozen=True, **SLOTS)
class GpuMinute(_Wire):
    """One GPU's aggregated minute, as the agent buffers and serves it.

    Attributes:
        seq: the agent's sequence number (strictly increasing, survives restarts).
        ts: start of the minute, Unix seconds (agent clock), a multiple of 60.
        uuid, index: the GPU.
        n: number of samples aggregated.
        values: for each gauge G: ``G_min``, ``G_mean``, ``G_max``; for each
            counter and state: the last value; for each throttle reason R:
            ``thr_R`` = samples in which it was active; ``busy_n`` = samples
            with the GPU busy; ``pcie_gen_busy_min`` / ``pcie_width_busy_min`` =
            lowest link seen while busy (None if never busy).
        status: per field, the worst non-OK status seen during the minute.
        state: GpuState ``OK`` or ``LOST`` (lost if the GPU was lost at the minute's end).
    """

    seq: int
    ts: int
    uuid: str
    index: int
    n: int
    values: Values = field(default_factory=dict)
    status: Statuses = field(default_factory=dict)
    state: str = GpuState.OK


@dataclass(frozen=True, **SLOTS)
class Event(_Wire):
    """Something that happened on a node at one instant.

    kinds: "xid", "gpu_lost", "gpu_back", "gpu_appeared", "agent_start",
    "energy_reset" (driver reload or GPU reset), "xid_source" (log unreadable); a device's
    vendor signals (:mod:`fleetmon.signals`): "device_signals", "device_health",
    "ecc_block", "ecc_deferred", "bad_pages", "version_compat".
    """

    seq: int
    ts: float
    kind: str
    uuid: str | None = None
    pci_bus_id: str | None = None
    code: int | None = None
    message: str = ""
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(**SLOTS)
class NodePoll:
    """The result of one poll of one node's agent, as the collector hands it to storage.

    Attributes:
        node: the node's name in the fleet file.
        url: the agent URL polled.
        group: the node's group (partition) or None.
        ts: workstation time of the poll, Unix seconds.
        ok: whether the agent answered usable data.
        error: why not, when ``ok`` is False (one line).
        duration_ms: wall time of the poll.
        info, gpus, latest: node description, inventory, latest samples.
        minutes, events: buffered records newer than the stored cursors.
        minutes_cursor, events_cursor: the cursors after this poll (the last
            sequence numbers now held), or None to keep the stored ones.
        skew_s: agent clock minus workstation clock (None if unknown).
        gap: True when the agent had pruned records the collector never got.
        buffer_id: the agent buffer's identity; a new one means the agent's
            sequence numbers restarted and stored cursors no longer apply.
        signals: per GPU UUID, the device's fault signals as a source without an
            event buffer read them this time (:func:`fleetmon.signals.device_signals`;
            a capture's). Storage writes an event when they change and keeps the current ones.
    """

    node: str
    url: str
    ts: float
    ok: bool
    group: str | None = None
    error: str | None = None
    duration_ms: float = 0.0
    info: NodeInfo | None = None
    gpus: list[GpuInventory] = field(default_factory=list)
    latest: list[GpuSample] = field(default_factory=list)
    minutes: list[GpuMinute] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    minutes_cursor: int | None = None
    events_cursor: int | None = None
    skew_s: float | None = None
    gap: bool = False
    buffer_id: str | None = None
    signals: dict[str, dict[str, Any]] = field(default_factory=dict)
