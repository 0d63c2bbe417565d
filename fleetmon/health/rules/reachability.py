"""Reachability rules: nodes whose agent does not answer, or keeps dropping off."""

from __future__ import annotations

from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory, Outage
from fleetmon.health.rules.helpers import condition_resolve_s, effective_thresholds, node_finding
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text

__all__ = ["check_node_flapping", "check_node_unreachable"]


def check_node_unreachable(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """The node's agent has not answered for ``unreachable_minutes`` (critical)."""
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    limit = t.unreachable_minutes * 60.0
    for node in history.nodes:
        long_outages = [o for o in node.outages if o.duration_s(history.now) >= limit
                        and (o.end is None or o.end >= history.since)]
        current = None
        if node.outages and node.outages[-1].end is None:
            current = node.outages[-1]
        elif (node.last_ok is not None and node.last_attempt is not None
              and node.last_attempt > node.last_ok and history.now - node.last_ok >= limit):
            current = None  # polls fail but no outage list: synthesise one below
            start = node.last_ok
            current = Outage(start, None, node.last_error, 0)
            long_outages.append(current)
        elif node.last_ok is None and node.last_attempt is not None:
            current = Outage(node.first_seen or history.since, None, node.last_error, 0)
            long_outages.append(current)
        if current is not None and current.duration_s(history.now) < limit:
            current = None
        if not long_outages:
            continue
        first = long_outages[0].start
        last = history.now if current is not None else max(o.end or history.now for o in long_outages)
        latest = current or long_outages[-1]
        minutes = int(latest.duration_s(history.now) // 60)
        evidence = {
            "since": latest.start, "minutes": minutes,
            "error": latest.error, "failed_polls": latest.failed, "outages": len(long_outages),
            "last_ok": node.last_ok,
        }
        out.append(node_finding(
            history, node.name, "node-unreachable", "critical", first, last, evidence,
            N_("Check that the node is up, its network and the fleetmon agent "
               "(`systemctl status fleetmon-agent`)"),
            Text(N_("{node}: unreachable for {minutes} min ({error})"), node=node.name, minutes=minutes,
                 error=latest.error or Text(N_("no answer"))),
            condition_resolve_s(t), magnitude=float(minutes),
            open_now=current is not None,
        ))
    return out


def check_node_flapping(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """A node lost and back ``flap_count`` times within ``flap_window_hours`` (warning).

    Only outages of at least ``flap_min_outage_s`` count (a single slow
    poll is not a flap).
    """
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    window = t.flap_window_hours * 3600.0
    for node in history.nodes:
        ended = [o for o in node.outages if o.end is not None and o.end - o.start >= t.flap_min_outage_s
                 and o.end >= history.since - window]
        if len(ended) < t.flap_count:
            continue
        hits: list[tuple[float, float, int]] = []
        left = 0
        for right in range(len(ended)):
            while ended[right].end - ended[left].start > window:  # type: ignore[operator]
                left += 1
            if right - left + 1 >= t.flap_count:
                start, end = ended[left].start, float(ended[right].end or 0)
                if hits and start <= hits[-1][1] + window:
                    hits[-1] = (hits[-1][0], end, hits[-1][2] + 1)
                else:
                    hits.append((start, end, right - left + 1))
        if not hits:
            continue
        first, last = hits[0][0], hits[-1][1]
        in_window = [o for o in ended if o.end and o.end >= last - window]
        out.append(node_finding(
            history, node.name, "node-flapping", "warning", first, last,
            {"outages": len(in_window), "window_h": t.flap_window_hours,
             "errors": sorted({o.error or "?" for o in in_window})[:5]},
            N_("The node keeps dropping off: check its network link, power and the agent's logs; "
               "consider draining it"),
            Text(N_("{node}: lost and back {count} times in {hours} h"), node=node.name, count=len(in_window),
                 hours=t.flap_window_hours), window, magnitude=float(len(in_window)),
        ))
    return out
