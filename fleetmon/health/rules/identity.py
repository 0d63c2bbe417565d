"""Identity rules: a node reporting GPU UUIDs that another node reports at the same time (issue 11), and a
node whose new GPU UUIDs the store refuses past the per-node cap (issue 20)."""

from __future__ import annotations

from fleetmon.health.findings import Finding
from fleetmon.health.fleet import EventRecord, FleetHistory
from fleetmon.health.rules.helpers import node_finding
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text

__all__ = ["check_gpus_refused", "check_uuid_conflict"]

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
            action=Text(N_("One of the two nodes reports cards that are not its own: check the fleet file (two "
                           "names for one agent URL?), a second agent or a copied agent buffer on {node}, or a "
                           "compromised host. The cards stay with {holder}; {node}'s records of them are not "
                           "stored meanwhile."), node=node, holder=holder),
            summary=Text(N_("node {node} reports GPU UUIDs already seen on node {holder} at the same time "
                            "({count} GPUs)") if len(uuids) != 1 else
                         N_("node {node} reports GPU UUIDs already seen on node {holder} at the same time "
                            "({count} GPU)"), node=node, holder=holder, count=len(uuids)),
            resolve_s=2 * repeat, discriminator=holder, magnitude=float(len(uuids))))
    return out


def check_gpus_refused(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """The store refuses node X's new GPU UUIDs: X was seen with the most distinct GPUs one node may have
    within the cap's span (warning).

    From the store's ``gpus_refused`` events (storage.ingest, when the refusing starts and then every
    ``repeat_s`` while it lasts). Open while they keep coming (within twice their repeat period); as a
    ``state`` kind it resolves only when fresh data of the node shows no refusal.
    """
    by_node: dict[str, list[EventRecord]] = {}
    for e in history.events:
        if e.kind == "gpus_refused":
            by_node.setdefault(e.node, []).append(e)
    out: list[Finding] = []
    for node, evs in sorted(by_node.items()):
        last = evs[-1]
        cap = int(last.data.get("cap") or 0)
        span_h = float(last.data.get("span_s") or 0) / 3600.0
        repeat = max(float(e.data.get("repeat_s") or DEFAULT_REPEAT_S) for e in evs)
        refused = int(last.data.get("refused") or 0)
        out.append(node_finding(
            history, node, "gpus-refused", "warning", evs[0].ts, last.ts,
            {"refused": refused, "cap": cap, "span_h": span_h, "notice": last.message},
            action=Text(N_("{node} keeps reporting GPU UUIDs never seen before: check its source (a dcgm-exporter "
                           "or script inventing UUIDs, an exporter behind a load balancer, one fleet-file name for "
                           "many hosts). Its known cards are still stored; the new ones are not until it reports at "
                           "most {cap} within {hours:g} h."), node=node, cap=cap, hours=span_h),
            summary=Text(N_("node {node}: {refused} new GPU UUIDs refused, the node was seen with {cap} distinct "
                            "GPUs within {hours:g} h (the most one node may have)") if refused != 1 else
                         N_("node {node}: {refused} new GPU UUID refused, the node was seen with {cap} distinct "
                            "GPUs within {hours:g} h (the most one node may have)"),
                         node=node, refused=refused, cap=cap, hours=span_h),
            resolve_s=2 * repeat, magnitude=float(refused)))
    return out
