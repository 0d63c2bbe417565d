"""The health engine's input: a fleet's recorded history as frozen, pure data.

Nothing here reads a database or a clock. The storage layer (or the
synthetic generator in :mod:`fleetmon.sim.synthetic`) builds a
:class:`FleetHistory` and hands it to :func:`fleetmon.health.engine.evaluate`;
``FleetHistory.now`` is the time the rules use. Each GPU's telemetry is a
:class:`~fleetmon.health.series.Series` of minute rows and, for long
windows, hourly rows (:mod:`fleetmon.health.hourly`).
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fleetmon import signals as device_signals
from fleetmon.specbook import CATALOG_BOOK, GpuSpec, SpecBook
from fleetmon.vocab import GpuState
from fleetmon.health.outages import Outage, Poll, as_poll, outages_from_polls
from fleetmon.health.series import EMPTY, HOUR_S, MINUTE_S, Series
from fleetmon.health.thresholds import Thresholds

__all__ = [
    "EventRecord",
    "FleetHistory",
    "GpuHistory",
    "GroupExpect",
    "InventoryChange",
    "NodeHistory",
    "Outage",
    "Placement",
    "Poll",
    "outages_from_events",
    "outages_from_polls",
]


# ---------------------------------------------------------------------------
# Records


def outages_from_events(events: Iterable[EventRecord | Mapping[str, Any]]) -> tuple[Outage, ...]:
    """Outages from the storage layer's ``node_unreachable`` / ``node_back`` events.

    Cheaper than raw polls over long windows: one event per status flip.
    Events of other kinds are ignored; the order does not matter.
    """
    items: list[tuple[float, str, str | None]] = []
    for e in events:
        kind = e.kind if isinstance(e, EventRecord) else str(e.get("kind"))
        if kind not in ("node_unreachable", "node_back"):
            continue
        ts = e.ts if isinstance(e, EventRecord) else float(e["ts"])
        raw = e.message if isinstance(e, EventRecord) else e.get("message")
        message = raw if isinstance(raw, str) else str(raw or "")  # an i18n.Text stays one (said where shown)
        items.append((ts, kind, message or None))
    items.sort(key=lambda x: x[0])
    out: list[Outage] = []
    start: float | None = None
    error: str | None = None
    for at, what, text in items:
        if what == "node_unreachable" and start is None:
            start, error = at, text
        elif what == "node_back" and start is not None:
            out.append(Outage(start, at, error, 1))
            start = None
    if start is not None:
        out.append(Outage(start, None, error, 1))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a card sat from ``ts`` on: node and PCI bus id (the slot)."""

    ts: float
    node: str
    pci_bus_id: str | None = None
    index: int | None = None

    @property
    def slot(self) -> str:
        return f"{self.node}:{self.pci_bus_id or '?'}"


@dataclass(frozen=True, slots=True)
class GroupExpect:
    """What a group of nodes should have (from the fleet file's ``[[group]]``)."""

    name: str
    expected_driver: str | None = None
    expected_cuda_driver: str | None = None
    expected_gpus: int | None = None
    expected_model: str | None = None
    expected_runtime: str | None = None
    expected_firmware: str | None = None


@dataclass(frozen=True, slots=True)
class EventRecord:
    """Something that happened on a node: an Xid, a GPU lost or back, a reset.

    ``kind``: "xid", "gpu_lost", "gpu_back", "gpu_appeared", "agent_start",
    "energy_reset" (driver reload or GPU reset), "gpu_reset", "xid_source".
    """

    ts: float
    node: str
    kind: str
    gpu_uuid: str | None = None
    pci_bus_id: str | None = None
    code: int | None = None
    message: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> EventRecord:
        data = row.get("data") or {}
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except ValueError:
                data = {}
        code = row.get("code")
        return cls(
            ts=float(row["ts"]),
            node=str(row.get("node") or ""),
            kind=str(row.get("kind") or ""),
            gpu_uuid=row.get("gpu_uuid") or row.get("uuid"),
            pci_bus_id=row.get("pci_bus_id"),
            code=int(code) if code is not None else None,
            message=str(row.get("message") or ""),
            data=dict(data) if isinstance(data, Mapping) else {},
        )


@dataclass(frozen=True, slots=True)
class InventoryChange:
    """A change in what a node holds, as the storage layer recorded it.

    ``kind``: "gpu_added" (storage: "appeared"), "gpu_removed"
    ("disappeared"), "gpu_moved" ("moved"), "driver_changed",
    "vbios_changed", "serial_changed", "power_limit_changed" or any other
    short word; ``before``/``after`` (storage: ``old``/``new``) are the old
    and new values.
    """

    ts: float
    node: str
    kind: str
    gpu_uuid: str | None = None
    before: Any = None
    after: Any = None
    detail: str = ""

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> InventoryChange:
        return cls(
            ts=float(row["ts"]),
            node=str(row.get("node") or ""),
            kind=str(row.get("kind") or "changed"),
            gpu_uuid=row.get("gpu_uuid") or row.get("uuid"),
            before=row.get("before", row.get("old")),
            after=row.get("after", row.get("new")),
            detail=str(row.get("detail") or ""),
        )


@dataclass(frozen=True)
class NodeHistory:
    """One node: group, versions and reachability.

    Attributes:
        name: the node's name in the fleet file.
        group: its group, or None.
        driver_version, cuda_driver_version: as the agent last reported them.
        expected_gpus: overrides the group's ``expected_gpus`` when set.
        gpu_count: GPUs the agent last enumerated (None if unknown).
        polls: recent polls, oldest first (may be empty).
        outages: failed-poll stretches in the window (derived from ``polls``
            when not given).
        last_ok: time of the last good poll; last_attempt: of the last poll.
        first_seen: when the node was first polled successfully, if known.
        vendor: its devices' vendor (None: not recorded; an older store's nodes are NVIDIA's).
        runtime_version, firmware_version: the vendor-neutral versions (CUDA, ROCm, CANN, ...).
    """

    name: str
    group: str | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    expected_gpus: int | None = None
    gpu_count: int | None = None
    polls: tuple[Poll, ...] = ()
    outages: tuple[Outage, ...] = ()
    last_ok: float | None = None
    last_attempt: float | None = None
    last_error: str | None = None
    first_seen: float | None = None
    vendor: str | None = None
    runtime_version: str | None = None
    firmware_version: str | None = None

    @classmethod
    def from_row(
        cls, row: Mapping[str, Any], polls: Iterable[Any] = (), outages: Iterable[Outage] | None = None
    ) -> NodeHistory:
        """Build from a ``nodes`` table row (``grp`` or ``group``) and its polls."""
        poll_list = tuple(sorted((as_poll(p) for p in polls), key=lambda p: p.ts))
        found = tuple(outages) if outages is not None else outages_from_polls(poll_list)
        last_ok = row.get("last_ok")
        if last_ok is None and poll_list:
            oks = [p.ts for p in poll_list if p.ok]
            last_ok = oks[-1] if oks else None
        last_attempt = row.get("last_attempt")
        if last_attempt is None and poll_list:
            last_attempt = poll_list[-1].ts
        cuda = row.get("cuda_driver_version")
        return cls(
            name=str(row["name"]),
            group=row.get("group", row.get("grp")),
            driver_version=row.get("driver_version"),
            cuda_driver_version=None if cuda is None else str(cuda),
            expected_gpus=row.get("expected_gpus"),
            gpu_count=row.get("gpu_count"),
            polls=poll_list,
            outages=found,
            last_ok=last_ok,
            last_attempt=last_attempt,
            last_error=row.get("last_error"),
            first_seen=row.get("first_seen"),
            vendor=row.get("vendor"),
            runtime_version=None if row.get("runtime_version") is None else str(row.get("runtime_version")),
            firmware_version=None if row.get("firmware_version") is None else str(row.get("firmware_version")),
        )


@dataclass(frozen=True)
class GpuHistory:
    """One card, keyed by UUID; its history follows it across nodes and slots.

    Attributes:
        uuid: NVML UUID.
        name: model as NVML reports it ("NVIDIA A100-SXM4-80GB").
        node, index, pci_bus_id: where the card is now (or was last seen).
        serial: board serial, where the card has one (data-center boards).
        inventory: static facts (keys of ``fleetmon.fields.INVENTORY_FIELDS``:
            vbios, power_default_w, power_enforced_w, memory_total_mib,
            pcie_max_gen, pcie_max_width, pcie_gpu_max_gen, temp_slowdown_c,
            ecc_mode_current, ...). Missing keys are fine.
        state: a :class:`fleetmon.vocab.GpuState`: OK, LOST (fell off the
            bus) or MISSING (no longer enumerated on its node; the storage
            layer's "gone" is read as MISSING by ``GpuState.for_rules``).
        first_seen, last_seen: Unix s.
        minutes: per-minute rows (recent, e.g. the last 24 h).
        hourly: hourly rows (older than the minutes; optional).
        placements: where the card sat, oldest first (each from its ``ts``).
        signals: the card's current fault signals as storage keeps them
            (``{"values": {signal: value}, "since": {signal: ts}}``:
            :mod:`fleetmon.signals`); {} for a card that reports none.
    """

    uuid: str
    name: str = ""
    node: str = ""
    index: int | None = None
    pci_bus_id: str | None = None
    serial: str | None = None
    inventory: Mapping[str, Any] = field(default_factory=dict)
    state: str = GpuState.OK
    first_seen: float | None = None
    last_seen: float | None = None
    minutes: Series = EMPTY
    hourly: Series = EMPTY
    placements: tuple[Placement, ...] = ()
    signals: Mapping[str, Any] = field(default_factory=dict)
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_row(
        cls,
        row: Mapping[str, Any],
        minutes: Iterable[Mapping[str, Any]] | Series | None = None,
        hourly: Iterable[Mapping[str, Any]] | Series | None = None,
        placements: Iterable[Placement | Mapping[str, Any] | Sequence[Any]] = (),
    ) -> GpuHistory:
        """Build from a ``gpus`` table row plus its rows (dicts or a Series).

        ``inventory`` may be a dict, the storage layer's JSON text
        (``{"values": {...}, "status": {...}}``) or absent; the row's own
        columns (vbios, memory_total_mib, power_default_w, ...) fill gaps.
        """
        inventory = _inventory(row)
        index = row.get("index", row.get("idx"))
        if isinstance(minutes, Series):
            mins = minutes
        else:
            mins = Series.from_rows(minutes or (), MINUTE_S) if minutes is not None else EMPTY
        if isinstance(hourly, Series):
            hrs = hourly
        else:
            hrs = Series.from_rows(hourly or (), HOUR_S) if hourly is not None else EMPTY
        places = tuple(sorted((_placement(p) for p in placements), key=lambda p: p.ts))
        node = str(row.get("node") or "")
        pci = row.get("pci_bus_id") or inventory.get("pci_bus_id")
        if not places and node:
            places = (Placement(float(row.get("first_seen") or 0.0), node, pci, index),)
        return cls(
            uuid=str(row["uuid"]),
            name=str(row.get("name") or inventory.get("name") or ""),
            node=node,
            index=None if index is None else int(index),
            pci_bus_id=pci,
            serial=row.get("serial") or inventory.get("serial") or None,
            inventory=inventory,
            state=GpuState.for_rules(row.get("state")),
            first_seen=row.get("first_seen"),
            last_seen=row.get("last_seen"),
            minutes=mins,
            hourly=hrs,
            placements=places,
            signals=device_signals.stored(row.get("signals")),
        )

    def signal(self, key: str) -> Any:
        """The card's current fault signal ``key`` (:mod:`fleetmon.signals`), None when it has none."""
        return device_signals.current(self.signals, key)

    def signal_since(self, key: str) -> float | None:
        """When the signal ``key`` last changed (None when unknown)."""
        return device_signals.changed_at(self.signals, key)

    @property
    def card_id(self) -> str:
        """The card's identity: its serial where it has one, else its UUID."""
        return f"serial:{self.serial}" if self.serial else self.uuid

    def timeline(self) -> Series:
        """Hourly rows older than the first minute row, then the minutes."""
        cached = self._cache.get("timeline")
        if cached is None:
            if self.minutes and self.hourly:
                cached = Series.chain(self.hourly.before(float(self.minutes.ts[0])), self.minutes)
            else:
                cached = self.minutes or self.hourly
            self._cache["timeline"] = cached
        return cached

    def located_placements(self) -> tuple[Placement, ...]:
        """:attr:`placements` with each move dated by the card's rows, not by the store's record.

        The store dates a move by the poll that first saw the card in its new
        place, but the agent buffers minutes while no one polls it: after a
        power-down and a swap, the first minutes in the new slot are older
        than that poll. A card moves only while it is off, which leaves a gap
        in its minute rows, so a move is dated to the first row after the
        latest gap in the contiguous minute rows before the recorded time.
        Without such a gap (the rows run on, or the rows before it are hourly,
        whose gaps cannot be seen) the recorded time stands.
        """
        places = self.placements
        if len(places) < 2:
            return places
        cached: tuple[Placement, ...] | None = self._cache.get("located")
        if cached is not None:
            return cached
        tl = self.timeline()
        ts, dur, n = tl.ts, tl.dur, len(tl)
        out = [places[0]]
        floor = 0  # rows before this belong to earlier placements
        for p in places[1:]:
            first = bisect_left(ts, p.ts, floor, n)  # the first row at or after the record
            start = first
            k = first - 1
            while k > floor and dur[k] <= MINUTE_S:
                if float(ts[k]) > float(ts[k - 1]) + float(dur[k - 1]):  # a gap before row k
                    start = k
                    break
                k -= 1
            if start < first:
                p = replace(p, ts=float(ts[start]))
            out.append(p)
            floor = max(floor, start)
        located = tuple(out)
        self._cache["located"] = located
        return located

    def move_rows(self) -> tuple[tuple[int, int | None], ...]:
        """Per move after the first placement: (its first timeline row, a row that spans it or None).

        A row spans a move when the located move falls strictly inside it (an
        hourly row, or a minute row cut by a recorded time): what the row
        counted cannot be charged to either placement.
        """
        cached: tuple[tuple[int, int | None], ...] | None = self._cache.get("move_rows")
        if cached is not None:
            return cached
        places = self.located_placements()
        out: list[tuple[int, int | None]] = []
        if len(places) > 1:
            tl = self.timeline()
            ts, dur, n = tl.ts, tl.dur, len(tl)
            for p in places[1:]:
                b = bisect_left(ts, p.ts, 0, n)
                spans = b - 1 if b > 0 and float(ts[b - 1]) + float(dur[b - 1]) > p.ts else None
                out.append((b, spans))
        result = tuple(out)
        self._cache["move_rows"] = result
        return result

    def placed_delta(self, counter: str) -> list[float]:
        """The timeline's :meth:`Series.delta` with each increase charged where it was counted.

        An increase between two rows in different placements is charged to
        the later row only when the counter was reset in between (power-off,
        reset or driver reload: what it holds was counted since, in the new
        place); an increase that grew across the move (it may have been
        counted in the old place after its last row, or in the new one) and
        the increase of a row that spans a move cannot be placed, and count
        for neither (0). Cards that never moved get :meth:`Series.delta`.
        """
        tl = self.timeline()
        delta = tl.delta(counter)
        moves = self.move_rows()
        if not moves:
            return delta
        key = "placed:" + counter
        cached: list[float] | None = self._cache.get(key)
        if cached is not None:
            return cached
        out = list(delta)
        values, given = tl.col(counter), tl.col(counter + "_delta")
        n = len(tl)
        for b, spans in moves:
            if spans is not None:
                out[spans] = 0.0  # the next row counts from a value read after the move
                continue
            k = b
            while k < n and values[k] is None and given[k] is None:
                k += 1
            if k == n:
                continue
            prev = None
            for j in range(b - 1, -1, -1):
                if values[j] is not None:
                    prev = values[j]
                    break
            v = values[k]
            if prev is not None and v is not None and v < prev:
                continue  # reset across the move: counted since, in the new place
            if prev is not None or given[k] is not None:
                out[k] = 0.0
        self._cache[key] = out
        return out

    def placement_at(self, ts: float) -> Placement:
        """Where the card sat at ``ts`` (its current place when unknown), moves dated by its rows."""
        found: Placement | None = None
        for p in self.located_placements():
            if p.ts <= ts:
                found = p
            else:
                break
        if found is None:
            found = self.placements[0] if self.placements else Placement(
                0.0, self.node, self.pci_bus_id, self.index)
        return found

    def inv(self, key: str) -> Any:
        """One inventory value, or None."""
        return self.inventory.get(key)


def _inventory(row: Mapping[str, Any]) -> dict[str, Any]:
    raw = row.get("inventory")
    inventory: dict[str, Any] = {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = None
    if isinstance(raw, Mapping):
        values = raw.get("values")
        inventory.update(values if isinstance(values, Mapping) else raw)
    for key in ("vbios", "memory_total_mib", "power_default_w", "power_enforced_w", "serial",
                "pci_bus_id", "name", "pcie_max_gen", "pcie_max_width", "pcie_gpu_max_gen",
                "temp_slowdown_c", "temp_shutdown_c", "ecc_mode_current"):
        if inventory.get(key) is None and row.get(key) is not None:
            inventory[key] = row[key]
    return inventory


def _placement(p: Placement | Mapping[str, Any] | Sequence[Any]) -> Placement:
    if isinstance(p, Placement):
        return p
    if isinstance(p, Mapping):
        idx = p.get("index", p.get("idx"))
        ts = p.get("ts", p.get("since"))
        return Placement(float(ts or 0.0), str(p["node"]), p.get("pci_bus_id"),
                         None if idx is None else int(idx))
    ts, node, *rest = p
    return Placement(float(ts), str(node), rest[0] if rest else None,
                     rest[1] if len(rest) > 1 else None)


@dataclass(frozen=True)
class FleetHistory:
    """Everything the rules look at, for one evaluation at ``now``.

    Attributes:
        now: the evaluation time (Unix s); rules never read a clock.
        since: start of the window under review (Unix s).
        nodes: every node in scope.
        gpus: every card seen in the window, keyed by UUID (one entry per card
            even when it moved between nodes).
        events: node events in the window, oldest first.
        inventory_changes: recorded inventory changes in the window.
        groups: group name -> expectations.
        thresholds: a :class:`fleetmon.health.thresholds.Thresholds` (defaults
            when None).
        daily: stored per-GPU per-day derating rows from earlier evaluations
            (the dicts :func:`fleetmon.health.rules.derating.daily_ratios` returns),
            for the week-long trend.
        spec_book: what the rules resolve a card's spec with (:mod:`fleetmon.specbook`; None: the catalog).
    """

    now: float
    since: float
    nodes: tuple[NodeHistory, ...] = ()
    gpus: tuple[GpuHistory, ...] = ()
    events: tuple[EventRecord, ...] = ()
    inventory_changes: tuple[InventoryChange, ...] = ()
    groups: Mapping[str, GroupExpect] = field(default_factory=dict)
    thresholds: Any = None
    daily: tuple[Mapping[str, Any], ...] = ()
    spec_book: SpecBook | None = None
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_rows(
        cls,
        now: float,
        since: float,
        nodes: Iterable[Mapping[str, Any]] = (),
        gpus: Iterable[Mapping[str, Any]] = (),
        minutes: Mapping[str, Iterable[Mapping[str, Any]] | Series] | None = None,
        hourly: Mapping[str, Iterable[Mapping[str, Any]] | Series] | None = None,
        polls: Mapping[str, Iterable[Any]] | None = None,
        placements: Mapping[str, Iterable[Any]] | None = None,
        events: Iterable[Mapping[str, Any]] = (),
        inventory_changes: Iterable[Mapping[str, Any]] = (),
        groups: Mapping[str, Mapping[str, Any] | GroupExpect] | Iterable[Any] | None = None,
        thresholds: Any = None,
        daily: Iterable[Mapping[str, Any]] = (),
        spec_book: SpecBook | None = None,
    ) -> FleetHistory:
        """Assemble a history from plain rows, as the storage layer returns them.

        ``minutes``, ``hourly`` and ``placements`` are keyed by GPU UUID,
        ``polls`` by node name. Groups may be dicts, ``GroupExpect`` or
        ``fleetmon.fleet.Group`` objects. ``thresholds`` may be a
        Thresholds or a dict of overrides (the fleet file's ``[thresholds]``).
        """
        minutes = minutes or {}
        hourly = hourly or {}
        polls = polls or {}
        placements = placements or {}
        node_list = tuple(
            NodeHistory.from_row(row, polls.get(str(row["name"]), ())) for row in nodes
        )
        gpu_list = tuple(
            GpuHistory.from_row(
                row, minutes.get(str(row["uuid"])), hourly.get(str(row["uuid"])),
                placements.get(str(row["uuid"]), ()),
            )
            for row in gpus
        )
        event_list = tuple(sorted((EventRecord.from_dict(e) for e in events), key=lambda e: e.ts))
        change_list = tuple(
            sorted((InventoryChange.from_dict(c) for c in inventory_changes), key=lambda c: c.ts)
        )
        if thresholds is None or isinstance(thresholds, Mapping):
            thresholds = Thresholds.from_overrides(thresholds or {})
        return cls(
            now=float(now),
            since=float(since),
            nodes=node_list,
            gpus=gpu_list,
            events=event_list,
            inventory_changes=change_list,
            groups=_groups(groups),
            thresholds=thresholds,
            daily=tuple(daily),
            spec_book=spec_book,
        )

    def node(self, name: str) -> NodeHistory | None:
        """The node called ``name``, or None."""
        return self.node_map().get(name)

    def node_map(self) -> dict[str, NodeHistory]:
        cached = self._cache.get("node_map")
        if cached is None:
            cached = {n.name: n for n in self.nodes}
            self._cache["node_map"] = cached
        return cached

    def gpu(self, uuid: str) -> GpuHistory | None:
        return self.gpu_map().get(uuid)

    def gpu_map(self) -> dict[str, GpuHistory]:
        cached = self._cache.get("gpu_map")
        if cached is None:
            cached = {g.uuid: g for g in self.gpus}
            self._cache["gpu_map"] = cached
        return cached

    def gpus_on(self, node: str) -> list[GpuHistory]:
        """Cards whose current node is ``node``, by index."""
        cached = self._cache.get("gpus_on")
        if cached is None:
            cached = {}
            for g in self.gpus:
                cached.setdefault(g.node, []).append(g)
            for cards in cached.values():
                cards.sort(key=lambda g: (g.index if g.index is not None else 1 << 30, g.uuid))
            self._cache["gpus_on"] = cached
        return list(cached.get(node, ()))

    def expected_gpus(self, node: NodeHistory) -> int | None:
        """GPUs the node should have: its own override, else its group's."""
        if node.expected_gpus is not None:
            return node.expected_gpus
        group = self.groups.get(node.group or "")
        return group.expected_gpus if group else None

    def book(self) -> SpecBook:
        """The spec book of this evaluation (the catalog alone when none was given)."""
        return self.spec_book if self.spec_book is not None else CATALOG_BOOK

    def spec_of(self, gpu: GpuHistory) -> GpuSpec | None:
        """The card's nominal spec as every rule sees it: :meth:`SpecBook.for_inventory` (None: unknown)."""
        return self.book().for_inventory(gpu.name, gpu.inventory)

    def with_thresholds(self, thresholds: Any) -> FleetHistory:
        """A copy evaluated with other thresholds."""
        return replace(self, thresholds=thresholds, _cache={})


def _groups(groups: Any) -> dict[str, GroupExpect]:
    if not groups:
        return {}
    items = groups.values() if isinstance(groups, Mapping) else groups
    out: dict[str, GroupExpect] = {}
    for g in items:
        if isinstance(g, GroupExpect):
            out[g.name] = g
            continue
        get = g.get if isinstance(g, Mapping) else (lambda k, d=None, _g=g: getattr(_g, k, d))
        name = str(get("name"))
        out[name] = GroupExpect(
            name=name,
            expected_driver=get("expected_driver"),
            expected_cuda_driver=get("expected_cuda_driver"),
            expected_gpus=get("expected_gpus"),
            expected_model=get("expected_model"),
            expected_runtime=get("expected_runtime"),
            expected_firmware=get("expected_firmware"),
        )
    return out
