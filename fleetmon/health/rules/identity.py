"""Identity rule: a node reporting GPU UUIDs that another node reports at the same time (issue 11)."""

from __future__ import annotations

from fleetmon.health.findings import Finding
from fleetmon.health.fleet import EventRecord, FleetHistory
from fleetmon.health.rules.helpers import node_finding
from fleetmon.health.thresholds import Thresholds

__all__ = ["check_uuid_conflict"]

DEFAULT_REPEAT_S = 600.0
"""How often the store repeats a ``uuid_conflict`` event while the conflict lasts, when the event
does not say (``data["repeat_s"]``, see storage.ingest.CLAIM_REPORT_EVERY_S)."""


def check_uuid_conflict(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Node X reports GPU UUIDs already seen on node Y at the same time (critical).

    From the store's ``uuid_conflict`` events: the store kept the cards with
    Y and did not store X's records of them. Open while the events keep coming
    (within twice their repeat period), resolved after.
    """
    groups: dict[tuple[str, str], list[EventRecord]] = {}
    for e in history.events:
        if e.kind == "uuid_conflict":
            groups.setdefault((e.node, str(e.data.get("holder") or "?")), []).append(e)
    out: list[Finding] = []
    for (node, holder), evs in sorted(groups.items()):
        uuids = sorted({str(u) for e in evs for u in (e.data.get("uuids") or [e.gpu_uuid]) if u})
        repeat = max(float(e.data.get("repeat_s") or DEFAULT_REPEAT_S) for e in evs)
        first, last = evs[0].ts, evs[-1].ts
        dropped = sum(int(e.data.get("dropped") or 0) for e in evs)
        out.append(node_finding(
            history, node, "uuid-conflict", "critical", first, last,
            {"holder": holder, "uuids": uuids, "gpus": len(uuids), "dropped_records": dropped},
            action=(f"One of the two nodes reports cards that are not its own: check the fleet file (two names "
                    f"for one agent URL?), a second agent or a copied agent buffer on {node}, or a compromised "
                    f"host. The cards stay with {holder}; {node}'s records of them are not stored meanwhile."),
            summary=(f"node {node} reports GPU UUIDs already seen on node {holder} at the same time "
                     f"({len(uuids)} GPU{'s' if len(uuids) != 1 else ''})"),
            resolve_s=2 * repeat, discriminator=holder, magnitude=float(len(uuids))))
    return out
