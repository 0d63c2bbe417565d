"""Xid rules: events by code and card, grouped into bursts and escalated (rules X1-X5, W3)."""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from typing import Any

from fleetmon import xid as xidcat
from fleetmon.health.findings import Finding, finding_key
from fleetmon.health.fleet import FleetHistory, GpuHistory
from fleetmon.health.rules.helpers import (
    effective_thresholds,
    event_resolve_s,
    gpu_finding,
    gpu_label,
    node_finding,
)
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text

__all__ = ["GSP_XIDS", "HARDWARE_CATEGORIES", "PSU_XIDS", "RESET_EVENTS", "check_xid"]


RESET_EVENTS = frozenset({"energy_reset", "gpu_reset", "driver_reload", "reboot", "agent_start"})
"""Event kinds after which a GPU starts afresh (for Xid recurrence, rule X3)."""

PSU_XIDS = frozenset({62, 79})
"""Xids that, on several GPUs of one node in one burst, point at the PSU (rule W3)."""

GSP_XIDS = frozenset({119, 120})
"""GSP errors that, on several nodes with one driver, suggest a driver regression (rule X5)."""

HARDWARE_CATEGORIES = frozenset({"hardware", "memory", "pcie", "nvlink", "power"})
"""Catalog categories whose company makes an application Xid a warning."""


def _card_at(history: FleetHistory, node: str, pci: str | None, ts: float) -> GpuHistory | None:
    """The card that sat in ``node``'s slot ``pci`` at ``ts``."""
    if not pci:
        return None
    want = xidcat.normalize_pci(pci)
    for gpu in history.gpus:
        place = gpu.placement_at(ts)
        if place.node == node and place.pci_bus_id and xidcat.normalize_pci(place.pci_bus_id) == want:
            return gpu
    return None


def _meaning(info: xidcat.XidInfo) -> Text:
    """The code's meaning, said in the reader's language where shown (the catalog's rows are marked)."""
    if info.code in xidcat.XID_CATALOG:
        return Text(info.meaning)
    return Text(N_("Xid {code} (not in fleetmon's catalog)"), code=info.code)


def check_xid(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Xid events by code and card, grouped into bursts and escalated (rules X1-X5, W3).

    * Bursts: one node's Xids belong together until ``xid_burst_gap_s`` of
      silence; secondary codes (45, 154) are attributed to the burst's
      primary codes and reported alone only when nothing else is there.
    * Severity: the catalog's; application codes (13, 31, 43, 68, 69) are
      info until they recur in ``xid_app_repeat_bursts`` bursts or come with
      hardware codes in one burst (then warning).
    * Escalated to critical when a non-application code recurs after
      ``xid_recurrence_resets`` resets (X3), or Xid 79/62 or a power Xid hits
      ``xid_multi_gpu`` GPUs of one node in one burst (W3: PSU or rail; a
      node finding is added).
    * GSP codes (119/120) on ``xid_driver_regression_nodes`` nodes with one
      driver version are flagged as a suspected driver regression (X5).
    """
    t = effective_thresholds(history, thresholds)
    xids = [e for e in history.events if e.kind == "xid" and e.code is not None]
    if not xids:
        return []
    resets: dict[str, list[tuple[float, str | None]]] = defaultdict(list)
    for e in history.events:
        if e.kind in RESET_EVENTS:
            resets[e.node].append((e.ts, e.gpu_uuid))

    # Attribute each event to a card.
    by_node: dict[str, list[tuple[Any, GpuHistory | None]]] = defaultdict(list)
    for e in xids:
        gpu = history.gpu(e.gpu_uuid) if e.gpu_uuid else None
        if gpu is None:
            gpu = _card_at(history, e.node, e.pci_bus_id, e.ts)
        by_node[e.node].append((e, gpu))

    # GSP codes by driver version (X5).
    gsp_nodes: dict[str, set[str]] = defaultdict(set)
    for node, items in by_node.items():
        if any(e.code in GSP_XIDS for e, _ in items):
            nh = history.node(node)
            if nh is not None and nh.driver_version:
                gsp_nodes[nh.driver_version].add(node)
    regression = {v for v, nodes in gsp_nodes.items() if len(nodes) >= t.xid_driver_regression_nodes}

    out: list[Finding] = []
    for node, items in sorted(by_node.items()):
        items.sort(key=lambda p: p[0].ts)
        bursts: list[list[tuple[Any, GpuHistory | None]]] = []
        for item in items:
            if bursts and item[0].ts - bursts[-1][-1][0].ts <= t.xid_burst_gap_s:
                bursts[-1].append(item)
            else:
                bursts.append([item])
        groups: dict[tuple[str, int], dict[str, Any]] = {}
        psu_bursts: list[dict[str, Any]] = []
        for b_index, burst in enumerate(bursts):
            cats = {xidcat.lookup(e.code).category for e, _ in burst}
            primaries = [(e, g) for e, g in burst if xidcat.lookup(e.code).category != "secondary"]
            secondaries = [(e, g) for e, g in burst if xidcat.lookup(e.code).category == "secondary"]
            counted = primaries or secondaries
            psu_gpus = {
                (g.uuid if g else e.pci_bus_id) for e, g in burst
                if e.code in PSU_XIDS or xidcat.lookup(e.code).category == "power"
            }
            multi = len(psu_gpus) >= t.xid_multi_gpu
            if multi:
                psu_bursts.append({"ts": burst[0][0].ts, "gpus": len(psu_gpus),
                                   "codes": sorted({e.code for e, _ in burst})})
            for e, g in counted:
                ident = g.uuid if g else f"pci:{e.pci_bus_id or '?'}"
                entry = groups.setdefault((ident, e.code), {
                    "gpu": g, "code": e.code, "times": [], "bursts": set(), "attributed": Counter(),
                    "hw_company": False, "multi": False, "pci": e.pci_bus_id, "messages": [],
                })
                entry["times"].append(e.ts)
                entry["bursts"].add(b_index)
                if cats & HARDWARE_CATEGORIES:
                    entry["hw_company"] = True
                if multi and (e.code in PSU_XIDS or xidcat.lookup(e.code).category == "power"):
                    entry["multi"] = True
                if e.message and len(entry["messages"]) < 3:
                    entry["messages"].append(e.message[:200])
                if primaries:
                    for s, _ in secondaries:
                        entry["attributed"][s.code] += 1
        node_resets = sorted(resets.get(node, ()))
        nh = history.node(node)
        for (_, code), entry in sorted(groups.items(), key=lambda kv: (min(kv[1]["times"]), kv[0][1])):
            info = xidcat.lookup(code)
            card: GpuHistory | None = entry["gpu"]
            times = sorted(entry["times"])
            gpu_resets = [r for r, who in node_resets if who is None or card is None or who == card.uuid]
            epochs = {bisect.bisect_right(gpu_resets, ts) for ts in times}
            resets_between = len(epochs) - 1
            severity = info.severity
            action: str = info.action
            reasons: list[str] = []
            if info.category == "application":
                if len(entry["bursts"]) >= t.xid_app_repeat_bursts or entry["hw_company"]:
                    severity = "warning"
                    reasons.append(N_("recurs") if len(entry["bursts"]) >= t.xid_app_repeat_bursts
                                   else N_("with hardware Xids"))
                else:
                    severity = "info"
            elif info.category == "secondary":
                severity = "info"
            if info.category not in ("application", "secondary") and resets_between >= t.xid_recurrence_resets:
                severity = "critical"
                action = Text(N_("Recurs after {resets} resets: hardware inspection, run `dcgmi diag -r 3`, "
                                 "RMA candidate"), resets=resets_between)
                reasons.append(f"recurs after {resets_between} resets")
            if entry["multi"]:
                severity = "critical"
                action = Text(N_("Several GPUs of this node failed together: suspect the PSU or power rail; "
                                 "check PSU, power cables and risers; {action}"), action=Text(info.action))
                reasons.append(N_("several GPUs in one burst"))
            driver = nh.driver_version if nh is not None else None
            suspect_driver = code in GSP_XIDS and driver in regression
            if suspect_driver:
                action = Text(N_("Same GSP error on several nodes with driver {driver}: suspect a driver "
                                 "regression; {action}"), driver=driver, action=Text(info.action))
                reasons.append(N_("driver regression suspected"))
            evidence = {
                "code": code, "name": info.name, "category": info.category,
                "meaning": info.meaning, "count": len(times), "bursts": len(entry["bursts"]),
                "resets_between": resets_between, "multi_gpu": entry["multi"],
                "attributed": {str(k): v for k, v in sorted(entry["attributed"].items())},
                "nvidia_action": info.nvidia_action, "escalation": reasons,
                "driver_regression_suspected": suspect_driver, "messages": entry["messages"],
                "first_ts": times[0], "last_ts": times[-1],
            }
            summary_where = gpu_label(card) if card else f"{node} (PCI {entry['pci'] or '?'})"
            summary = Text(N_("{where}: Xid {code} {meaning} ({count}x, {category})"), where=summary_where,
                           code=code, meaning=_meaning(info), count=len(times), category=info.category)
            if card is not None:
                place = card.placement_at(times[-1])
                evidence["slots"] = sorted({card.placement_at(ts).slot for ts in times})
                f = gpu_finding(history, card, "xid", severity, times[0], times[-1], evidence,
                                 action, summary, event_resolve_s(t), discriminator=str(code),
                                 magnitude=float(len(times)))
                if place.node != node:  # the event names the node it happened on
                    f = Finding(**{**f.to_dict(), "node": node,
                                   "key": finding_key("xid", node, card.uuid, str(code))})
                out.append(f)
            else:
                evidence["pci_bus_id"] = entry["pci"]
                out.append(node_finding(history, node, "xid", severity, times[0], times[-1], evidence,
                                         action, summary, event_resolve_s(t),
                                         discriminator=f"{code}:{entry['pci'] or '?'}",
                                         magnitude=float(len(times))))
        if psu_bursts:
            first, last = psu_bursts[0]["ts"], psu_bursts[-1]["ts"]
            out.append(node_finding(
                history, node, "xid", "critical", first, last,
                {"bursts": psu_bursts, "multi_gpu": True,
                 "gpus": max(b["gpus"] for b in psu_bursts)},
                N_("Several GPUs fell off the bus or halted together: suspect the PSU or power rail; "
                   "check the PSU, power cables and risers; lock clocks (`nvidia-smi -lgc`) to test"),
                Text(N_("{node}: Xid on {count} GPUs at once (PSU or power rail suspected)"), node=node,
                     count=max(b["gpus"] for b in psu_bursts)), event_resolve_s(t), discriminator="psu",
                magnitude=float(len(psu_bursts)),
            ))
    return out
