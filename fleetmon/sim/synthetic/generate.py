"""Assembling the synthetic fleet history: :func:`generate` and :func:`with_now`.

:func:`generate` builds a :class:`~fleetmon.health.fleet.FleetHistory`
directly (no NVML, no database): per-minute rows for the recent hours and
hourly rows for the older days, for healthy GPUs of several catalog models
running busy/idle jobs, plus injected faults (:class:`SimFault`, one kind per
finding kind), card swaps between slots and nodes (:class:`SimSwap`),
unreachable and flapping nodes, version mismatches and missing GPUs. Each
injected fault yields a :class:`Label` (kind, node, card, onset) that the
quality tests compare with the findings.

Speed: columns are assembled from pre-computed noise tables by slicing per
busy/idle stretch, so 512 GPUs x 1,440 minutes take well under a second.

Unlike :mod:`fleetmon.sim.nvml` (which simulates NVML calls live), this
module produces already aggregated history. Model constants follow the spec
catalog (:mod:`fleetmon.specs`) and the twin's profiles.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from fleetmon.vocab import GpuState
from fleetmon.health.fleet import (
    EventRecord,
    FleetHistory,
    GpuHistory,
    GroupExpect,
    InventoryChange,
    NodeHistory,
    Outage,
    Placement,
)
from fleetmon.health.series import HOUR_S, MINUTE_S, Series
from fleetmon.health.thresholds import Thresholds
from fleetmon.sim.synthetic.columns import (
    _Const,
    _counters,
    _force,
    _fractions,
    _hourly_columns,
    _mask,
    _minute_columns,
    _P,
    _tables,
    _workload,
)
from fleetmon.sim.synthetic.faults import _apply, _Card
from fleetmon.sim.synthetic.model import DRIVERS, LOAD_FAULTS, MODELS, Label, SimFault, SimNode, SimSwap


# ---------------------------------------------------------------------------
# generate()


def generate(
    nodes: Sequence[SimNode],
    now: float,
    days: float = 7.0,
    minute_hours: float = 24.0,
    faults: Iterable[SimFault] = (),
    swaps: Iterable[SimSwap] = (),
    seed: int = 0,
    thresholds: Thresholds | Mapping[str, Any] | None = None,
    groups: Mapping[str, GroupExpect] | None = None,
    daily_days: int = 0,
    since: float | None = None,
) -> tuple[FleetHistory, list[Label]]:
    """Build a fleet history and the labels of its injected faults.

    Args:
        nodes: the fleet (see :func:`healthy_fleet`).
        now: evaluation time (Unix s; rounded down to the minute).
        days: history length; rows older than ``minute_hours`` are hourly.
        minute_hours: how much recent history is per minute.
        faults: injected faults (onset in Unix s).
        swaps: card swaps between slots.
        seed: everything random derives from it.
        thresholds: Thresholds or overrides for the history.
        groups: group expectations (default: one per node group, with the
            expected GPU count and model, no expected versions).
        daily_days: also produce stored daily derating rows for that many
            days before the window (``history.daily``), for trend rules.
        since: window start (default ``now - days``).
    """
    rng = random.Random(seed)
    now_i = int(now) // 60 * 60
    start = int(now_i - days * 86400) // HOUR_S * HOUR_S
    m0 = max(start, int(now_i - minute_hours * 3600) // HOUR_S * HOUR_S)
    minute_count = (now_i - m0) // 60
    hour_count = (m0 - start) // HOUR_S
    minute_ts = list(range(m0, now_i, 60))
    hour_ts = list(range(start, m0, HOUR_S))
    const = _Const(minute_count)
    faults = sorted(faults, key=lambda f: f.onset)
    swaps = sorted(swaps, key=lambda s: s.ts)

    # Workloads per node, kept busy around load-dependent faults.
    work: dict[str, list[tuple[int, int]]] = {}
    for node in nodes:
        w = _workload(rng, start, now_i)
        for f in faults:
            if f.node == node.name and f.kind in LOAD_FAULTS:
                w = _force(w, f.onset - 1800, min(now_i, f.onset + 7200))
        work[node.name] = w
    masks = {n.name: _mask(work[n.name], m0, minute_count) for n in nodes}
    fracs = {n.name: _fractions(work[n.name], start, hour_count) for n in nodes}

    tables = {key: _tables(MODELS[key], minute_count, random.Random(f"{seed}:{key}"))
              for key in sorted({n.model for n in nodes})}

    # Cards and their placements.
    cards: list[_Card] = []
    slot: dict[tuple[str, int], _Card] = {}
    node_by_name = {n.name: n for n in nodes}
    for node in nodes:
        model = MODELS[node.model]
        for i in range(node.gpus):
            made = (f"GPU-{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-{rng.getrandbits(16):04x}-"
                    f"{rng.getrandbits(16):04x}-{rng.getrandbits(48):012x}")
            serial = f"13{rng.randrange(10 ** 10):010d}" if model.serial else None
            card = _Card(made, model, serial)
            card.placements.append(Placement(float(start - 30 * 86400), node.name, _pci(i), i))
            card.first_seen = float(start - 30 * 86400)
            cards.append(card)
            slot[(node.name, i)] = card
    for s in swaps:
        ca, cb = slot[s.a], slot[s.b]
        ca.placements.append(Placement(float(s.ts), s.b[0], _pci(s.b[1]), s.b[1]))
        cb.placements.append(Placement(float(s.ts), s.a[0], _pci(s.a[1]), s.a[1]))
        slot[s.a], slot[s.b] = cb, ca

    labels: list[Label] = []
    events: list[EventRecord] = []
    changes: list[InventoryChange] = []
    node_overrides: dict[str, dict[str, Any]] = {}
    outages: dict[str, list[Outage]] = {}
    truncate: dict[str, float] = {}  # card -> no rows from this time
    new_cards: list[tuple[_Card, float]] = []

    def card_in(node: str, index: int | None, ts: float) -> _Card | None:
        if index is None:
            return None
        for c in cards:
            p = c.slot_at(ts)
            if p.node == node and p.index == index:
                return c
        return None

    for f in faults:
        target = card_in(f.node, f.gpu, f.onset)
        p = f.params
        expect = "derating" if f.kind == "derating-trend" else f.kind
        uuid: str | None = target.uuid if target else None
        if f.kind == "driver-mismatch":
            node_overrides.setdefault(f.node, {}).update(
                driver=p.get("driver", "550.54.15"), cuda=p.get("cuda", "12.4"))
            old = node_by_name[f.node].driver or DRIVERS[_family(node_by_name[f.node])][0]
            changes.append(InventoryChange(f.onset, f.node, "driver_changed", None, old,
                                           p.get("driver", "550.54.15")))
            uuid = None
        elif f.kind == "vbios-mismatch" and target:
            target.inventory["vbios"] = p.get("vbios", target.model.vbios[:-2] + "FF")
        elif f.kind == "xid":
            count = int(p.get("count", 1))
            interval = float(p.get("interval_s", 600))
            resets = bool(p.get("resets", False))
            targets = [target] + [card_in(f.node, g, f.onset) for g in p.get("gpus", ())]
            for k in range(count):
                ts = f.onset + k * interval
                for c in targets:
                    if c is None:
                        continue
                    place = c.slot_at(ts)
                    events.append(EventRecord(ts, place.node, "xid", c.uuid, place.pci_bus_id,
                                              int(p.get("code", 48)), f"simulated Xid {p.get('code', 48)}"))
                if resets and k < count - 1:
                    events.append(EventRecord(ts + interval / 2, f.node, "energy_reset",
                                              target.uuid if target else None))
            for g in p.get("gpus", ()):
                other = card_in(f.node, g, f.onset)
                if other is not None:
                    labels.append(Label("xid", f.node, other.uuid, f.onset, f.kind))
        elif f.kind == "gpu-lost" and target:
            place = target.slot_at(f.onset)
            events.append(EventRecord(f.onset, place.node, "xid", target.uuid, place.pci_bus_id, 79,
                                      "GPU has fallen off the bus."))
            events.append(EventRecord(f.onset, place.node, "gpu_lost", target.uuid, place.pci_bus_id))
            if f.until is not None:
                events.append(EventRecord(f.until, place.node, "gpu_back", target.uuid, place.pci_bus_id))
        elif f.kind == "gpu-missing" and target:
            truncate[target.uuid] = f.onset
            target.state = GpuState.MISSING
        elif f.kind == "node-unreachable":
            outages.setdefault(f.node, []).append(Outage(f.onset, None, "timed out", 10))
            for c in cards:
                if c.slot_at(f.onset).node == f.node:
                    truncate[c.uuid] = f.onset
            uuid = None
        elif f.kind == "node-flapping":
            count = int(p.get("count", 3))
            gap = float(p.get("gap_s", 1200))
            length = float(p.get("length_s", 180))
            for k in range(count):
                end = f.onset - (count - 1 - k) * gap
                outages.setdefault(f.node, []).append(Outage(end - length, end, "connection refused", 6))
            uuid = None
        elif f.kind == "inventory-change":
            model = MODELS[node_by_name[f.node].model]
            index = f.gpu if f.gpu is not None else node_by_name[f.node].gpus
            new = _Card(f"GPU-{rng.getrandbits(32):08x}-0000-0000-0000-{rng.getrandbits(48):012x}",
                        model, None)
            new.placements.append(Placement(f.onset, f.node, _pci(index), index))
            new.first_seen = f.onset
            new_cards.append((new, f.onset))
            uuid = new.uuid
        labels.append(Label(expect, f.node, uuid, f.onset, f.kind))

    cards.extend(c for c, _ in new_cards)

    # Columns per card.
    for card in cards:
        model = card.model
        counters = _counters(model, rng)
        mask: list[bool] = []
        frac: list[float] = []
        places = card.placements
        for k, place in enumerate(places):
            lo = place.ts
            hi = places[k + 1].ts if k + 1 < len(places) else float("inf")
            i0 = max(0, min(minute_count, int((lo - m0) // 60))) if lo > m0 else 0
            i1 = max(0, min(minute_count, int((hi - m0) // 60))) if hi < float("inf") else minute_count
            if i1 > i0:
                mask.extend(masks[place.node][i0:i1])
            h0 = max(0, min(hour_count, int((lo - start) // HOUR_S))) if lo > start else 0
            h1 = max(0, min(hour_count, int((hi - start) // HOUR_S))) if hi < float("inf") else hour_count
            if h1 > h0:
                frac.extend(fracs[place.node][h0:h1])
        first_minute = minute_count - len(mask)
        first_hour = hour_count - len(frac)
        offset = rng.randrange(_P)
        if mask:
            cols = _minute_columns(model, mask, tables[model.key], offset, minute_ts[first_minute:],
                                   _Const(len(mask)) if first_minute else const, counters)
            card.minutes = cols
        if frac:
            card.hourly = _hourly_columns(model, frac, hour_ts[first_hour:], rng, counters)
        gen, width = model.pcie
        card.inventory = {
            "name": model.name, "vbios": model.vbios, "memory_total_mib": model.memory_mib,
            "power_default_w": float(model.power_w), "power_enforced_w": float(model.power_w),
            "power_max_w": float(model.power_w), "pcie_max_gen": gen, "pcie_max_width": width,
            "pcie_gpu_max_gen": gen, "pcie_gpu_max_width": width, "temp_slowdown_c": model.slowdown_c,
            "temp_shutdown_c": model.shutdown_c, "ecc_mode_current": 1 if model.ecc else (
                0 if model.geforce and model.key == "rtx4090" else None),
            "serial": card.serial, "max_sm_clock_mhz": model.boost_mhz, **card.inventory,
        }
        card.last_seen = float(now_i)

    for f in faults:
        if f.kind in ("driver-mismatch", "xid", "node-unreachable", "node-flapping", "inventory-change",
                      "gpu-missing", "derating-trend"):
            continue
        for card in cards:
            if f.bound == "slot" or card_in(f.node, f.gpu, f.onset) is card:
                if f.bound == "card" and card_in(f.node, f.gpu, f.onset) is not card:
                    continue
                _apply(card, f)

    daily = _daily_rows(cards, nodes, faults, start, daily_days, rng)
    for f in faults:  # the drift continues into the window
        if f.kind == "derating-trend":
            drifting = card_in(f.node, f.gpu, f.onset)
            if drifting is not None:
                per_week = float(f.params.get("per_week", 0.025))
                base = 1.05 if drifting.model.geforce else 0.985
                drift = (base - per_week * daily_days / 7.0) / base
                _apply(drifting, SimFault("derating", f.node, f.gpu, float(start), params={"frac": drift}))
    for card in cards:
        cut = truncate.get(card.uuid)
        if cut is None:
            continue
        for cols in (card.minutes, card.hourly):
            if not cols:
                continue
            keep = sum(1 for t in cols["ts"] if t < cut)
            for key in list(cols):
                cols[key] = cols[key][:keep]
        card.last_seen = float(max([t for t in card.minutes.get("ts", [])] or [cut - 60]))

    # Nodes.
    node_hist = []
    for node in nodes:
        fam = _family(node)
        over = node_overrides.get(node.name, {})
        outs = tuple(sorted(outages.get(node.name, ()), key=lambda o: o.start))
        last_ok = float(now_i - 10)
        if outs and outs[-1].end is None:
            last_ok = outs[-1].start - 30
        present = sum(1 for c in cards if c.placements[-1].node == node.name and c.state != GpuState.MISSING)
        node_hist.append(NodeHistory(
            name=node.name, group=node.group,
            driver_version=over.get("driver", node.driver or DRIVERS[fam][0]),
            cuda_driver_version=over.get("cuda", node.cuda or DRIVERS[fam][1]),
            gpu_count=present, outages=outs, last_ok=last_ok, last_attempt=float(now_i - 10),
            last_error=outs[-1].error if outs and outs[-1].end is None else None,
            first_seen=float(start - 30 * 86400),
        ))

    gpu_hist = []
    for card in cards:
        last = card.placements[-1]
        gpu_hist.append(GpuHistory(
            uuid=card.uuid, name=card.model.name, node=last.node, index=last.index,
            pci_bus_id=last.pci_bus_id, serial=card.serial, inventory=card.inventory,
            state=card.state, first_seen=card.first_seen, last_seen=card.last_seen,
            minutes=Series.from_columns(card.minutes, MINUTE_S) if card.minutes else Series(columns={"ts": []}),
            hourly=(Series.from_columns(card.hourly, HOUR_S) if card.hourly
                    else Series(columns={"ts": []}, step_s=HOUR_S)),
            placements=tuple(card.placements),
        ))

    if groups is None:
        groups = {}
        for node in nodes:
            if node.group and node.group not in groups:
                groups[node.group] = GroupExpect(node.group, expected_gpus=node.gpus,
                                                 expected_model=MODELS[node.model].name)
    if isinstance(thresholds, Mapping) or thresholds is None:
        thresholds = Thresholds.from_overrides(dict(thresholds or {}))
    history = FleetHistory(
        now=float(now_i), since=float(since if since is not None else now_i - days * 86400),
        nodes=tuple(node_hist), gpus=tuple(gpu_hist),
        events=tuple(sorted(events, key=lambda e: e.ts)), inventory_changes=tuple(changes),
        groups=dict(groups), thresholds=thresholds, daily=tuple(daily),
    )
    return history, labels


def _family(node: SimNode) -> str:
    return "geforce" if MODELS[node.model].geforce else "datacenter"


def _pci(index: int) -> str:
    return f"0000:{0x18 + 0x10 * index:02x}:00.0"


def _daily_rows(cards: Sequence[_Card], nodes: Sequence[SimNode], faults: Sequence[SimFault],
                start: int, days: int, rng: random.Random) -> list[dict[str, Any]]:
    """Stored daily derating rows for ``days`` days before ``start``."""
    if days <= 0:
        return []
    from fleetmon import specs
    from fleetmon.health.series import day_of

    trend = {}
    for f in faults:
        if f.kind == "derating-trend":
            for c in cards:
                if c.slot_at(f.onset).node == f.node and c.slot_at(f.onset).index == f.gpu:
                    trend[c.uuid] = float(f.params.get("per_week", 0.025))
    rows = []
    for card in cards:
        spec = specs.lookup(card.model.name)
        base = (1.05 if card.model.geforce else 0.985)
        for d in range(days, 0, -1):
            ts = start - d * 86400
            ratio = base + 0.004 * (rng.random() - 0.5)
            if card.uuid in trend:
                ratio -= trend[card.uuid] * (days - d) / 7.0
            sm = card.model.boost_mhz * ratio
            rows.append({
                "uuid": card.uuid, "node": card.slot_at(ts).node, "model": card.model.name,
                "day": day_of(ts), "busy_minutes": 600, "sm_clock_busy_mhz": round(sm, 1),
                "clock_ratio": round(sm / spec.boost_clock_mhz, 4) if spec and spec.boost_clock_mhz else None,
                "power_limit_w": float(card.model.power_w), "power_limit_ratio": None,
                "memory_total_mib": card.model.memory_mib, "memory_ratio": None, "pcie_gen": card.model.pcie[0],
                "pcie_width": card.model.pcie[1], "pcie_ratio": None, "clock_vs_fleet": None,
                "known_model": spec is not None,
            })
    return rows


def with_now(history: FleetHistory, now: float) -> FleetHistory:
    """The same history evaluated at an earlier ``now`` (rows after it dropped)."""
    gpus = []
    for g in history.gpus:
        gpus.append(replace(g, minutes=g.minutes.before(now), hourly=g.hourly.before(now), _cache={}))
    return replace(history, now=now, gpus=tuple(gpus), _cache={})
