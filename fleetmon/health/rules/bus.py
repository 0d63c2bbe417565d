"""Bus presence rules: cards that fell off the bus or are no longer enumerated."""

from __future__ import annotations

import datetime as _dt
from collections import Counter, defaultdict
from typing import Any

from fleetmon.vocab import GpuState
from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory, NodeHistory
from fleetmon.health.rules.helpers import (
    Episode,
    condition_resolve_s,
    effective_thresholds,
    gpu_finding,
    gpu_label,
    held_seconds,
    node_finding,
    slots_of,
)
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text

__all__ = ["check_gpu_lost", "check_gpu_missing"]


def check_gpu_lost(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """A GPU that fell off the bus or answers GPU_IS_LOST (critical, no waiting)."""
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    events: dict[str, list[Any]] = defaultdict(list)
    for e in history.events:
        if e.kind in ("gpu_lost", "gpu_back") and e.gpu_uuid:
            events[e.gpu_uuid].append(e)
    for gpu in history.gpus:
        tl = gpu.timeline()
        state_col = tl.col("state")
        quick = (GpuState.LOST in state_col or any(tl.col("lost")) or any(tl.col("lost_minutes"))
                 or gpu.state == GpuState.LOST or gpu.uuid in events)
        if not quick:
            continue
        lost = tl.lost()
        ts, dur = tl.ts, tl.dur
        rows = [i for i, x in enumerate(lost) if x]
        evs = events.get(gpu.uuid, [])
        lost_ts = [e.ts for e in evs if e.kind == "gpu_lost"]
        back_ts = [e.ts for e in evs if e.kind == "gpu_back"]
        starts = [float(ts[i]) for i in rows[:1]] + lost_ts[:1]
        if not starts and gpu.state != GpuState.LOST:
            continue
        first = min(starts) if starts else (gpu.last_seen or history.now)
        ends = [float(ts[rows[-1]]) + float(dur[rows[-1]])] if rows else []
        ends += lost_ts[-1:]
        still = gpu.state == GpuState.LOST or (bool(lost_ts) and (not back_ts or back_ts[-1] < lost_ts[-1])
                                        and gpu.state != GpuState.OK) or (bool(rows) and rows[-1] == len(tl) - 1)
        last = history.now if still else max(ends + back_ts[-1:] or [first])
        minutes = sum(held_seconds(float(dur[i]), tl.col("lost_minutes")[i] or 1, (float(dur[i]) / 60) if dur[i] > 60 else 1)
                      for i in rows) / 60.0
        eps = [Episode(first, last, 0, len(rows), float(ts[rows[-1]]) if rows else first)]
        evidence = {"lost_minutes": int(round(minutes)), "lost_events": len(lost_ts),
                    "back_events": len(back_ts), "slots": slots_of(gpu, eps)}
        out.append(gpu_finding(
            history, gpu, "gpu-lost", "critical", first, last, evidence,
            N_("Drain and reboot the node; reseat the card and check the riser, slot, power cables "
               "and PSU; watch temperatures"),
            Text(N_("{gpu}: GPU lost (fell off the bus)"), gpu=gpu_label(gpu)), condition_resolve_s(t),
            magnitude=float(minutes), open_now=still or None,
        ))
    return out


def _reachable(node: NodeHistory | None, now: float, t: Thresholds) -> bool:
    return node is not None and node.last_ok is not None and now - node.last_ok < t.unreachable_minutes * 60


def _evidence_until(node: NodeHistory, now: float, t: Thresholds) -> float:
    """Until when the node's answers show what they show: now while it answers, its last good poll after."""
    return now if _reachable(node, now, t) else float(node.last_ok or now)


def check_gpu_missing(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """A card no longer enumerated on a node that answers, or too few GPUs (critical).

    Per card: its state is "missing", or it was last seen more than
    ``gpu_missing_minutes`` before its node's last good poll, and no other card
    answers in its slot since (that is a replacement, not a missing card). Per node: the
    node reports fewer GPUs than its group expects (beyond the cards already
    named). A node that stopped answering keeps what its last answers showed: a
    card missing then is still missing (the finding's evidence ends at the
    node's last good poll; missing data is not the card coming back), while the
    node's silence itself is left to ``node-unreachable``.
    """
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    per_node: Counter[str] = Counter()
    # The newest card seen in each slot: a card whose slot another card took after it was replaced.
    newest: dict[tuple[str, str], float] = {}
    for gpu in history.gpus:
        if gpu.pci_bus_id and gpu.last_seen is not None and gpu.state != GpuState.MISSING:
            slot = (gpu.node, gpu.pci_bus_id.lower())
            newest[slot] = max(newest.get(slot, float("-inf")), float(gpu.last_seen))
    for gpu in history.gpus:
        node = history.node(gpu.node)
        if node is None or node.last_ok is None or gpu.last_seen is None:
            continue
        gone = node.last_ok - gpu.last_seen >= t.gpu_missing_minutes * 60
        if gpu.state != GpuState.MISSING and not gone:
            continue
        if gpu.pci_bus_id and newest.get((gpu.node, gpu.pci_bus_id.lower()), float("-inf")) > float(gpu.last_seen):
            continue  # replaced: another card answers in its slot (the inventory change says so)
        per_node[gpu.node] += 1
        out.append(gpu_finding(
            history, gpu, "gpu-missing", "critical", float(gpu.last_seen), _evidence_until(node, history.now, t),
            {"last_seen": gpu.last_seen, "node_last_ok": node.last_ok, "state": gpu.state},
            N_("The card is no longer enumerated: check `nvidia-smi -L` and the kernel log (Xid 79), "
               "reseat the card, check the riser and power cables"),
            Text(N_("{gpu}: GPU missing since {time}"), gpu=gpu_label(gpu), time=_hhmm(gpu.last_seen)),
            condition_resolve_s(t),
            open_now=True,
        ))
    for node in history.nodes:
        expected = history.expected_gpus(node)
        if expected is None or node.last_ok is None:
            continue
        reported = node.gpu_count
        if reported is None:
            reported = sum(1 for g in history.gpus_on(node.name) if g.state != GpuState.MISSING
                           and not (node.last_ok and g.last_seen and
                                    node.last_ok - g.last_seen >= t.gpu_missing_minutes * 60))
        short = expected - reported
        if short > per_node[node.name]:
            out.append(node_finding(
                history, node.name, "gpu-missing", "critical", history.since, _evidence_until(node, history.now, t),
                {"expected": expected, "reported": reported, "named": per_node[node.name]},
                N_("Fewer GPUs than the group expects: check `nvidia-smi -L`, the kernel log and the "
                   "BIOS PCIe settings; reseat cards and risers"),
                Text(N_("{node}: {reported} of {expected} expected GPUs"), node=node.name, reported=reported,
                     expected=expected), condition_resolve_s(t),
                discriminator="count", magnitude=float(short), open_now=True,
            ))
    return out


def _hhmm(ts: float | None) -> str:
    if ts is None:
        return "?"
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
