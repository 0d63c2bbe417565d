"""Inventory rules: cards added, removed or moved, versions changed (info)."""

from __future__ import annotations

from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory
from fleetmon.health.rules.helpers import (
    effective_thresholds,
    event_resolve_s,
    gpu_finding,
    gpu_label,
    node_finding,
)
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text

__all__ = ["check_inventory_changes"]


_CHANGE_ALIASES = {"moved": "gpu_moved", "appeared": "gpu_added", "disappeared": "gpu_removed"}


_CHANGE_WORDS = {
    "appeared": N_("appeared"), "disappeared": N_("disappeared"), "moved": N_("moved"),
    "gpu_added": N_("gpu added"), "gpu_removed": N_("gpu removed"), "gpu_moved": N_("gpu moved"),
    "driver_changed": N_("driver changed"), "vbios_changed": N_("vbios changed"),
    "serial_changed": N_("serial changed"), "power_limit_changed": N_("power limit changed"),
}
"""The recorded change kinds in words (the kind with spaces, as the English summary always said them); any
other kind is said as it is, its underscores spaced."""


def _change_summary(where: str, kind: str, before: object, after: object) -> Text:
    """"n1 gpu0: vbios changed (a -> b)"; the values as recorded."""
    change: str = Text(_CHANGE_WORDS[kind]) if kind in _CHANGE_WORDS else kind.replace("_", " ")
    if before is not None or after is not None:
        return Text(N_("{where}: {change} ({before} -> {after})"), where=where, change=change, before=before,
                    after=after)
    return Text(N_("{where}: {change}"), where=where, change=change)


_ENROLL_S = 300.0
"""Cards first seen within this long of a node's first card came with its first inventory."""


def check_inventory_changes(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Cards added, removed or moved, versions changed (info).

    Recorded changes come from ``history.inventory_changes``; moves and
    additions are also read from the cards' placements.
    """
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    seen: set[tuple[str, str | None, int]] = set()
    for c in history.inventory_changes:
        if not history.since <= c.ts <= history.now:
            continue
        seen.add((_CHANGE_ALIASES.get(c.kind, c.kind), c.gpu_uuid, int(c.ts // 3600)))
        gpu = history.gpu(c.gpu_uuid) if c.gpu_uuid else None
        evidence = {"change": c.kind, "before": c.before, "after": c.after, "detail": c.detail}
        summary = _change_summary(c.node, c.kind, c.before, c.after)
        if gpu is not None:
            summary = _change_summary(gpu_label(gpu), c.kind, c.before, c.after)
            f = gpu_finding(history, gpu, "inventory-change", "info", c.ts, c.ts, evidence,
                             N_("No action if the change was planned"), summary, event_resolve_s(t),
                             discriminator=f"{c.kind}:{int(c.ts)}")
            if f.node != c.node:
                f = Finding(**{**f.to_dict(), "node": c.node})
            out.append(f)
        else:
            out.append(node_finding(history, c.node, "inventory-change", "info", c.ts, c.ts, evidence,
                                     N_("No action if the change was planned"), summary, event_resolve_s(t),
                                     discriminator=f"{c.kind}:{int(c.ts)}"))
    # Cards that came with a node's first inventory are how the node was enrolled, not additions.
    enrolled_at: dict[str, float] = {}
    for gpu in history.gpus:
        if gpu.first_seen is not None and gpu.node:
            enrolled_at[gpu.node] = min(enrolled_at.get(gpu.node, gpu.first_seen), gpu.first_seen)
    for gpu in history.gpus:
        places = gpu.placements
        for prev, cur in zip(places, places[1:]):
            if not history.since <= cur.ts <= history.now:
                continue
            if (prev.node, prev.pci_bus_id) == (cur.node, cur.pci_bus_id):
                continue
            if ("gpu_moved", gpu.uuid, int(cur.ts // 3600)) in seen:
                continue
            out.append(gpu_finding(
                history, gpu, "inventory-change", "info", cur.ts, cur.ts,
                {"change": "gpu_moved", "before": prev.slot, "after": cur.slot,
                 "serial": gpu.serial},
                N_("No action if the move was planned; the card's history moves with it"),
                Text(N_("{uuid} moved from {before} to {after}"), uuid=gpu.uuid, before=prev.slot, after=cur.slot),
                event_resolve_s(t),
                discriminator=f"gpu_moved:{int(cur.ts)}",
            ))
        if (gpu.first_seen is not None and history.since < gpu.first_seen <= history.now
                and gpu.first_seen - enrolled_at.get(gpu.node, gpu.first_seen) > _ENROLL_S
                and len(places) <= 1 and ("gpu_added", gpu.uuid, int(gpu.first_seen // 3600)) not in seen):
            out.append(gpu_finding(
                history, gpu, "inventory-change", "info", gpu.first_seen, gpu.first_seen,
                {"change": "gpu_added", "before": None, "after": gpu.name, "serial": gpu.serial},
                N_("No action if the card was installed on purpose"),
                Text(N_("{gpu}: new card {model}"), gpu=gpu_label(gpu), model=gpu.name), event_resolve_s(t),
                discriminator=f"gpu_added:{int(gpu.first_seen)}",
            ))
    return out
