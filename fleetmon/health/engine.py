"""The health engine: run the rules, judge nodes, compare reports, preflight.

All functions are pure: they take a :class:`FleetHistory` (or findings) and
return data; the CLI and storage layers do the reading and writing.

* :func:`evaluate` runs every rule and returns the findings, sorted and
  deterministic, with slot/card attribution filled in.
* :func:`node_verdicts` turns findings and reachability into a verdict per
  node (:data:`VERDICTS`): a node passes only on evidence.
* :func:`diff_findings` compares the previous report's open findings with
  the current ones: new, resolved, worsened.
* :func:`report` builds the daily inspection (:class:`ReportResult`).
* :func:`preflight` reviews nodes before a big run (:class:`PreflightResult`).
"""

from __future__ import annotations

import functools
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fleetmon.vocab import GpuState, Severity
from fleetmon.records import Status
from fleetmon import hostlist
from fleetmon.health.findings import Finding, kind_priority
from fleetmon.health.fleet import FleetHistory, GpuHistory
from fleetmon.health.isolate import Problem, isolated, run_isolated, unjudgeable_findings
from fleetmon.health.rules import RULES, Rule
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text
import fleetmon.health.verdict as verdict

__all__ = [
    "NO_GO_WARNINGS",
    "SLOT_FAMILIES",
    "VERDICTS",
    "NodePreflight",
    "PreflightResult",
    "ReportResult",
    "attribute_slots",
    "diff_findings",
    "evaluate",
    "fleet_summary",
    "node_verdicts",
    "preflight",
    "reachability",
    "report",
    "sort_findings",
]

VERDICTS: tuple[str, ...] = verdict.VERDICTS
"""Node verdicts, worst first: see :mod:`fleetmon.health.verdict` (the one place they are computed)."""

NO_GO_WARNINGS: frozenset[str] = frozenset({
    "ecc-correctable-storm", "retired-pages", "row-remap", "pcie-link-degraded", "pcie-replay",
    "power-brake", "power-instability", "power-unreadable", "thermal-throttle", "fan-stopped",
    "node-flapping", "gpu-missing", "gpu-lost", "xid", "arrival-history",
})
"""Open warnings of these kinds make a node no-go in a preflight (besides any
critical finding in the window): each can stop a multi-day job."""

SLOT_FAMILIES: dict[str, str] = {
    "pcie-link-degraded": "pcie", "pcie-replay": "pcie", "gpu-lost": "pcie",
    "power-brake": "power", "power-instability": "power",
}
"""Kinds whose cause may be the card or its slot/riser, by family (an Xid of
category pcie or power joins the family of that name)."""


# ---------------------------------------------------------------------------
# Evaluation


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Most severe first, open before resolved, then node, GPU, kind priority, onset, key."""
    return sorted(findings, key=lambda f: (
        -f.rank, f.state != "open", hostlist.sort_key(f.node),
        -1 if f.gpu_index is None else f.gpu_index, f.gpu_uuid or "", kind_priority(f.kind),
        f.first_seen, f.kind, f.key,
    ))


def _onset(f: Finding, history: FleetHistory) -> Finding:
    """A finding whose onset is the window's start began before the window or
    when its subject was first seen, whichever is later: never show an onset
    before there was any data (a rule that judges the whole window starts it
    at ``history.since``)."""
    if f.first_seen > history.since:
        return f
    gpu = history.gpu(f.gpu_uuid) if f.gpu_uuid else None
    node = history.node(f.node)
    if gpu is not None:
        first = _data_start(gpu)
    elif node is not None and node.first_seen is not None:
        first = float(node.first_seen)
    else:
        starts = [t for t in (_data_start(g) for g in history.gpus_on(f.node)) if t is not None]
        first = min(starts) if starts else None
    if first is None or not history.since < first <= f.last_seen:
        return f
    return replace(f, first_seen=first)


def _data_start(gpu: GpuHistory) -> float | None:
    """When the card's data begins: its first recorded row, or when it was first seen."""
    tl = gpu.timeline()
    starts = [float(t) for t in (tl.ts[0] if len(tl) else None, gpu.first_seen) if t is not None]
    return min(starts) if starts else None


def evaluate(
    history: FleetHistory,
    thresholds: Thresholds | None = None,
    rules: Sequence[Rule] = RULES,
) -> list[Finding]:
    """Run every rule over ``history`` and return the findings, sorted.

    Args:
        history: the fleet's recorded history; ``history.now`` is the time.
        thresholds: overrides ``history.thresholds`` (defaults when both are None).
        rules: the rules to run (all by default).

    Returns:
        One finding per key (the most severe if two rules share one), with
        slot/card attribution in the evidence of PCIe and power findings.
        A rule that raises on malformed data never stops the evaluation: it is
        run again without the GPUs (or nodes) that break it, and each of those
        gets a ``data-unjudgeable`` warning (see :mod:`fleetmon.health.isolate`).
    """
    t = thresholds if thresholds is not None else (
        history.thresholds if isinstance(history.thresholds, Thresholds) else Thresholds())
    found: list[Finding] = []
    problems: list[Problem] = []
    for rule in rules:
        got, trouble = run_isolated(rule, history, t)
        found.extend(got)
        problems.extend(trouble)
    found.extend(unjudgeable_findings(history, problems))
    by_key: dict[str, Finding] = {}
    for f in found:
        old = by_key.get(f.key)
        if old is None:
            by_key[f.key] = f
            continue
        keep = f if (f.rank, f.is_open) > (old.rank, old.is_open) else old
        by_key[f.key] = replace(
            keep, first_seen=min(f.first_seen, old.first_seen), last_seen=max(f.last_seen, old.last_seen),
            state="open" if (f.is_open or old.is_open) else "resolved")
    return sort_findings(attribute_slots([_onset(f, history) for f in by_key.values()], history))


def _family(f: Finding) -> str | None:
    fam = SLOT_FAMILIES.get(f.kind)
    if fam is None and f.kind == "xid":
        category = f.evidence.get("category")
        if category in ("pcie", "power"):
            fam = str(category)
    return fam


_LEAD = re.compile(r"^The fault (?:followed|stays|moved) [^;]*; ")
"""The lead :func:`attribute_slots` puts before an action (removed first: attributing again replaces it)."""
_LEAD_TEMPLATES = (
    N_("The fault followed this card to another slot and also hit other cards in {slots}: replace the card and "
       "check that slot/riser; {action}"),
    N_("The fault stays with slot {slots} across card swaps: check the slot, riser/extender and its power cable, "
       "not the card; {action}"),
    N_("The fault moved with the card across slots ({slots}): replace or RMA the card; {action}"),
)
"""The action with the lead of :func:`attribute_slots`: card and slot, slot, card."""


def attribute_slots(findings: Sequence[Finding], history: FleetHistory) -> list[Finding]:
    """Tell a card's fault from a slot's (riser, PSU rail) across card swaps.

    For PCIe and power findings that name the slots the card sat in while
    failing (``evidence["slots"]``): a fault seen on two or more cards in one
    slot is attributed to the slot or riser; one seen with one card in two or
    more slots to the card. ``evidence["attribution"]`` becomes "slot",
    "card", "card and slot" or stays absent when one placement cannot tell.
    """
    slot_cards: dict[tuple[str, str], set[str]] = defaultdict(set)
    card_slots: dict[tuple[str, str], set[str]] = defaultdict(set)
    for f in findings:
        fam = _family(f)
        slots = f.evidence.get("slots")
        if fam is None or not slots or f.gpu_uuid is None:
            continue
        gpu = history.gpu(f.gpu_uuid)
        card = gpu.card_id if gpu else f.gpu_uuid
        for slot in slots:
            slot_cards[(fam, slot)].add(card)
            card_slots[(fam, card)].add(slot)
    if not slot_cards:
        return list(findings)
    out = []
    for f in findings:
        fam = _family(f)
        slots = f.evidence.get("slots")
        if fam is None or not slots or f.gpu_uuid is None:
            out.append(f)
            continue
        gpu = history.gpu(f.gpu_uuid)
        card = gpu.card_id if gpu else f.gpu_uuid
        shared = sorted(s for s in slots if len(slot_cards[(fam, s)]) >= 2)
        moved = len(card_slots[(fam, card)]) >= 2
        if not shared and not moved:
            out.append(f)
            continue
        evidence = dict(f.evidence)
        # the lead and the action in one i18n.Text (one sentence each, the action said in the reader's language
        # too): the English string is the lead followed by the action, as before
        action: str = f.action
        if isinstance(action, Text) and action.template in _LEAD_TEMPLATES:  # attributed again: the lead is replaced
            before = action.args["action"]
            action = before if isinstance(before, str) else str(before)
        else:
            action = _LEAD.sub("", action, count=1)
        inner = action if isinstance(action, Text) else Text(action)  # a fixed sentence: found in the catalog
        if shared and moved:
            attribution = "card and slot"
            text = Text(_LEAD_TEMPLATES[0], slots=", ".join(shared), action=inner)
        elif shared:
            attribution = "slot"
            others = sorted(set().union(*(slot_cards[(fam, s)] for s in shared)) - {card})
            evidence["other_cards"] = others
            text = Text(_LEAD_TEMPLATES[1], slots=", ".join(shared), action=inner)
        else:
            attribution = "card"
            text = Text(_LEAD_TEMPLATES[2], slots=", ".join(sorted(card_slots[(fam, card)])), action=inner)
        evidence["attribution"] = attribution
        out.append(replace(f, evidence=evidence, action=text))
    return out


def reachability(history: FleetHistory) -> dict[str, str]:
    """The nodes that do not answer now: node -> "unknown", "unreachable" or "stale".

    Unreachable: the node answered once, and its latest poll failed or its
    last outage is still open (the state right after an agent dies, before the
    node-unreachable finding's threshold is reached). Stale: its newest good
    poll is older than ``stale_after_minutes`` before ``history.now`` (nobody
    polled it since: no news is not good news). See :func:`fleetmon.health.verdict.reach_of`.
    """
    t = history.thresholds if isinstance(history.thresholds, Thresholds) else Thresholds()
    out: dict[str, str] = {}
    for node in history.nodes:
        state = verdict.reach_of(
            last_ok=node.last_ok, last_attempt=node.last_attempt,
            outage_open=bool(node.outages and node.outages[-1].end is None),
            now=history.now, stale_after_s=t.stale_after_minutes * 60.0)
        if state is not None:
            out[node.name] = state
    return out


def node_verdicts(findings: Iterable[Finding], nodes: Iterable[str] | None = None,
                  reach: Mapping[str, str] | None = None) -> dict[str, str]:
    """A verdict of :data:`VERDICTS` per node, by :func:`fleetmon.health.verdict.combine`.

    From each node's open findings and ``reach`` (see :func:`reachability`).
    Nodes given in ``nodes`` without findings are judged on reachability
    alone; the result is ordered by node name.
    """
    reach = reach or {}
    found: dict[str, list[tuple[str, str]]] = {n: [] for n in (nodes or ())}
    for f in findings:
        mine = found.setdefault(f.node, [])
        if f.is_open:
            mine.append((f.severity, f.kind))
    return {n: verdict.combine(found[n], reach.get(n)) for n in sorted(found, key=hostlist.sort_key)}


def diff_findings(
    previous_open: Iterable[Finding], current: Iterable[Finding], worsen_factor: float = 1.1
) -> tuple[list[Finding], list[Finding], list[Finding]]:
    """Compare the previous report's open findings with the current findings.

    Returns:
        ``(new, resolved, worsened)``: open now but not before; open before
        but not now (the current resolved finding, or the previous one
        marked resolved when it no longer appears at all); open in both with
        a higher severity or a magnitude grown by ``worsen_factor``.
    """
    prev = {f.key: f for f in previous_open if f.is_open}
    cur = list(current)
    cur_open = {f.key: f for f in cur if f.is_open}
    cur_any = {f.key: f for f in cur}
    new = [f for k, f in cur_open.items() if k not in prev]
    resolved = []
    for k, f in prev.items():
        if k in cur_open:
            continue
        resolved.append(cur_any[k] if k in cur_any else replace(f, state="resolved"))
    worsened = []
    for k, f in cur_open.items():
        old = prev.get(k)
        if old is None:
            continue
        if f.rank > old.rank:
            worsened.append(f)
        elif (f.rank == old.rank and f.magnitude is not None and old.magnitude is not None
              and f.magnitude > old.magnitude * worsen_factor and f.magnitude - old.magnitude > 1e-9):
            worsened.append(f)
    return sort_findings(new), sort_findings(resolved), sort_findings(worsened)


# ---------------------------------------------------------------------------
# Daily report


@dataclass(frozen=True)
class ReportResult:
    """The daily inspection, ready to render (see render.report_dict for JSON).

    Attributes:
        now, since: the window (Unix s).
        group: the group reported on, or None for the whole fleet.
        verdicts: node -> one of :data:`VERDICTS`.
        findings: every finding in scope (open and resolved), sorted.
        new, resolved, worsened: changes since the previous report.
        summary: :func:`fleet_summary`.
        previous: whether a previous report was given to compare with.
    """

    now: float
    since: float
    group: str | None
    verdicts: Mapping[str, str]
    findings: tuple[Finding, ...]
    new: tuple[Finding, ...]
    resolved: tuple[Finding, ...]
    worsened: tuple[Finding, ...]
    summary: Mapping[str, Any]
    previous: bool = False

    @property
    def status(self) -> str:
        """The worst verdict (:data:`VERDICTS` order); "pass" for no nodes."""
        values = set(self.verdicts.values())
        return next((v for v in VERDICTS if v in values), "pass")

    @property
    def critical(self) -> bool:
        """Whether any open critical finding is in the report, or a node fails, is unreachable, stale or unknown."""
        return any(f.is_open and f.severity == Severity.CRITICAL for f in self.findings) or any(
            v in verdict.SILENT or v == "fail" for v in self.verdicts.values())


def _in_group(history: FleetHistory, group: str | None) -> list[str]:
    return [n.name for n in history.nodes if group is None or n.group == group]


def fleet_summary(
    history: FleetHistory, findings: Sequence[Finding] = (), group: str | None = None
) -> dict[str, Any]:
    """Fleet facts for the report header.

    Returns a dict: ``nodes``, ``gpus``, ``gpus_by_model`` (model -> count of
    cards present), ``driver_versions`` (version -> nodes), ``unreachable``
    (nodes not answering now: an open node-unreachable finding, a failed
    latest poll, or no good poll ever), ``never_reached`` (of those, the nodes
    that never answered), and
    ``stale`` (node -> age in seconds of its newest good poll, for the nodes
    nobody has heard from for longer than ``stale_after_minutes``),
    ``inventory_changes`` (the window's inventory-change findings as
    ``{ts, node, gpu_uuid, change, before, after, summary}``).
    """
    names = set(_in_group(history, group))
    models: Counter[str] = Counter()
    gpus = 0
    for gpu in history.gpus:
        if gpu.node in names and gpu.state != GpuState.MISSING:
            models[gpu.name or "unknown"] += 1
            gpus += 1
    drivers: Counter[str] = Counter(
        str(n.driver_version or "unknown") for n in history.nodes if n.name in names)
    reach = {n: v for n, v in reachability(history).items() if n in names}
    unreachable = sorted(
        {f.node for f in findings if f.kind == "node-unreachable" and f.is_open and f.node in names}
        | set(reach), key=hostlist.sort_key)
    never = sorted((n for n, v in reach.items() if v == "unknown"), key=hostlist.sort_key)
    ages = {n.name: history.now - float(n.last_ok) for n in history.nodes
            if n.name in names and reach.get(n.name) == "stale" and n.last_ok is not None}
    stale = {n: round(ages[n], 1) for n in sorted(ages, key=hostlist.sort_key)}
    changes = [
        {"ts": f.first_seen, "node": f.node, "gpu_uuid": f.gpu_uuid,
         "change": f.evidence.get("change"), "before": f.evidence.get("before"),
         "after": f.evidence.get("after"), "summary": f.summary}
        for f in sorted(findings, key=lambda f: f.first_seen)
        if f.kind == "inventory-change" and f.first_seen >= history.since and f.node in names
    ]
    return {
        "nodes": len(names),
        "gpus": gpus,
        "gpus_by_model": dict(sorted(models.items(), key=lambda kv: (-kv[1], kv[0]))),
        "driver_versions": dict(sorted(drivers.items(), key=lambda kv: (-kv[1], kv[0]))),
        "unreachable": unreachable,
        "never_reached": never,
        "stale": stale,
        "inventory_changes": changes,
    }


def report(
    history: FleetHistory,
    previous_open: Iterable[Finding] = (),
    group: str | None = None,
    findings: Sequence[Finding] | None = None,
    thresholds: Thresholds | None = None,
    has_previous: bool | None = None,
) -> ReportResult:
    """Build the daily inspection.

    Args:
        history: the window to report on (``since`` .. ``now``).
        previous_open: the open findings of the previous report (for "what
            changed"); empty on the first report.
        group: restrict to one group's nodes.
        findings: already evaluated findings (else :func:`evaluate` runs).
        thresholds: passed to :func:`evaluate`.
        has_previous: whether there was a previous report (default: whether
            ``previous_open`` is non-empty).
    """
    previous = list(previous_open)
    all_findings = list(findings) if findings is not None else evaluate(history, thresholds)
    names = _in_group(history, group)
    scope = set(names)
    mine = [f for f in all_findings if f.node in scope or (group is None and f.node not in scope)]
    prev_mine = [f for f in previous if group is None or f.node in scope]
    new, resolved, worsened = diff_findings(prev_mine, mine)
    return ReportResult(
        now=history.now, since=history.since, group=group,
        verdicts=node_verdicts(mine, names, {n: v for n, v in reachability(history).items() if n in scope}),
        findings=tuple(sort_findings(mine)),
        new=tuple(new), resolved=tuple(resolved), worsened=tuple(worsened),
        summary=fleet_summary(history, mine, group),
        previous=bool(previous) if has_previous is None else has_previous,
    )


# ---------------------------------------------------------------------------
# Preflight


@dataclass(frozen=True)
class NodePreflight:
    """One node's preflight verdict.

    Attributes:
        name: the node.
        go: True for go, False for no-go.
        reasons: why no-go (empty for go).
        warnings: open warnings that do not block the run.
        ecc: summary over the window: ``corrected``, ``uncorrected`` (new
            errors), ``retired_pages`` (max per card), ``retirement_pending``,
            ``remap_pending``, ``remap_failure`` (cards), ``cards_with_ecc``.
        power: summary over the window: ``mean_w`` (per-card mean power),
            ``max_w``, ``power_brake_minutes``, ``unreadable_minutes``,
            ``capped_gpus``, ``limit_w`` / ``default_w`` (per card, min).
        gpus: cards on the node; expected: the group's expected count.
    """

    name: str
    go: bool
    reasons: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    ecc: Mapping[str, Any] = field(default_factory=dict)
    power: Mapping[str, Any] = field(default_factory=dict)
    gpus: int = 0
    expected: int | None = None

    @property
    def verdict(self) -> str:
        return "go" if self.go else "no-go"


@dataclass(frozen=True)
class PreflightResult:
    """The review before a big run (see render.preflight_dict for JSON).

    ``exclude`` is the no-go nodes as a Slurm hostlist expression, ready for
    ``sbatch --exclude``.
    """

    now: float
    since: float
    days: float
    nodes: tuple[NodePreflight, ...]
    exclude: str
    findings: tuple[Finding, ...]
    vendors: Mapping[str, str] = field(default_factory=dict)
    """node → its devices' vendor (issue 23; fleetmon.assess fills it from the store; absent: NVIDIA's)."""

    @property
    def go(self) -> list[str]:
        return [n.name for n in self.nodes if n.go]

    @property
    def no_go(self) -> list[str]:
        return [n.name for n in self.nodes if not n.go]

    @property
    def critical(self) -> bool:
        """Whether any node is no-go."""
        return any(not n.go for n in self.nodes)


def _age_text(minutes: float) -> Text:
    """"42 min", "6.0 h", "1.5 d": the age of a node's newest data (said in the reader's language where shown)."""
    if minutes < 120:
        return Text(N_("{value} min"), value=f"{minutes:.0f}")
    if minutes < 48 * 60:
        return Text(N_("{value} h"), value=f"{minutes / 60:.1f}")
    return Text(N_("{value} d"), value=f"{minutes / 1440:.1f}")


def _ecc_power(history: FleetHistory, node: str) -> tuple[dict[str, Any], dict[str, Any]]:
    corrected = uncorrected = 0.0
    retired = 0
    pending = remap_pending = remap_failure = with_ecc = 0
    means: list[float] = []
    peak = None
    brake = unreadable = 0.0
    capped = 0
    limits: list[float] = []
    defaults: list[float] = []
    for gpu in history.gpus:
        if gpu.node != node and all(p.node != node for p in gpu.placements):
            continue
        tl = gpu.timeline()
        if not tl:
            continue
        ts = tl.ts
        rows = [i for i in range(len(tl)) if gpu.placement_at(ts[i]).node == node] if (
            len({p.node for p in gpu.placements}) > 1) else None

        def sel(col: Sequence[Any], rows: list[int] | None = rows) -> Sequence[Any]:
            return col if rows is None else [col[i] for i in rows]

        dc = [max(a, b) for a, b in zip(tl.delta("ecc_corr_vol"), tl.delta("ecc_corr_agg"))]
        du = [max(a, b) for a, b in zip(tl.delta("ecc_unc_vol"), tl.delta("ecc_unc_agg"))]
        corrected += sum(sel(dc))
        uncorrected += sum(sel(du))
        if any(v is not None for v in tl.col("ecc_corr_agg")) or any(
                v is not None for v in tl.col("ecc_corr_vol")):
            with_ecc += 1
        sbe = [v for v in sel(tl.col("retired_sbe")) if v is not None]
        dbe = [v for v in sel(tl.col("retired_dbe")) if v is not None]
        if sbe or dbe:
            retired = max(retired, (sbe[-1] if sbe else 0) + (dbe[-1] if dbe else 0))
        if any(sel(tl.col("retired_pending"))) or any(sel(tl.col("retired_pending_max"))):
            pending += 1
        if any(sel(tl.col("remap_pending"))) or any(sel(tl.col("remap_pending_max"))):
            remap_pending += 1
        if any(sel(tl.col("remap_failure"))) or any(sel(tl.col("remap_failure_max"))):
            remap_failure += 1
        pm = [v for v in sel(tl.col("power_w_mean")) if v is not None]
        if pm:
            means.append(statistics.fmean(pm))
        px = [v for v in sel(tl.col("power_w_max")) if v is not None]
        if px:
            peak = max(px) if peak is None else max(peak, max(px))
        dur = sel(tl.dur)
        n = sel(tl.col("n"))
        for b, d, nn in zip(sel(tl.col("thr_hw_power_brake")), dur, n):
            if b:
                brake += 1.0 if d <= 60 else d / 60.0 * min(1.0, b / nn) if nn else d / 60.0
        statuses = [tl.statuses()[i] for i in rows] if rows is not None else tl.statuses()
        for st, hf in zip(statuses, sel(tl.col("failed_power_w"))):
            if hf:
                unreadable += hf
            elif st and st.get("power_w") == Status.FAILED:
                unreadable += 1
        default = gpu.inv("power_default_w")
        limit = next((v for v in reversed(tl.col("power_limit_w_mean")) if v is not None),
                     gpu.inv("power_enforced_w"))
        if default and limit is not None:
            limits.append(float(limit))
            defaults.append(float(default))
            if limit < 0.99 * default:
                capped += 1
    ecc = {
        "corrected": int(corrected), "uncorrected": int(uncorrected), "retired_pages": retired,
        "retirement_pending": pending, "remap_pending": remap_pending,
        "remap_failure": remap_failure, "cards_with_ecc": with_ecc,
    }
    power = {
        "mean_w": round(statistics.fmean(means), 1) if means else None,
        "max_w": peak, "power_brake_minutes": int(round(brake)),
        "unreadable_minutes": int(round(unreadable)), "capped_gpus": capped,
        "limit_w": min(limits) if limits else None, "default_w": min(defaults) if defaults else None,
    }
    return ecc, power


def preflight(
    history: FleetHistory,
    nodes: Sequence[str] | str,
    days: float = 14,
    findings: Sequence[Finding] | None = None,
    thresholds: Thresholds | None = None,
) -> PreflightResult:
    """Go / no-go per node before a big run, with reasons and the window's ECC and power.

    A node is no-go when, in the window: any critical finding was seen (open
    or resolved: a GPU that fell off the bus last week is a risk), or a
    warning of a kind in :data:`NO_GO_WARNINGS` is open, or there is no
    data for it. Other open warnings are listed but do not block.

    Args:
        history: covering at least ``days`` before ``history.now``.
        nodes: node names or a Slurm hostlist expression (``gpu[01-08]``).
        days: the window reviewed (the default of the CLI is 14).
        findings: already evaluated findings (else :func:`evaluate` runs).
    """
    names = hostlist.expand(nodes) if isinstance(nodes, str) else list(nodes)
    names = list(dict.fromkeys(names))
    all_findings = list(findings) if findings is not None else evaluate(history, thresholds)
    since = history.now - days * 86400.0
    by_node: dict[str, list[Finding]] = defaultdict(list)
    for f in all_findings:
        if f.last_seen >= since:
            by_node[f.node].append(f)
    result = []
    reach = reachability(history)
    for name in names:
        node = history.node(name)
        if node is None:
            result.append(NodePreflight(name, False, (Text(N_("no data: the node is not in the database")),)))
            continue
        # Text: the English string the JSON carries, said in the reader's language by the text and HTML
        reasons: list[str] = []
        warnings: list[str] = []
        for f in sort_findings(by_node.get(name, ())):
            if f.severity == Severity.CRITICAL:
                when = Text(N_("open")) if f.is_open else Text(N_("resolved"))
                reasons.append(Text(N_("{summary} [{kind}, {state}]"), summary=f.summary, kind=f.kind, state=when))
            elif f.severity == Severity.WARNING and f.is_open:
                if f.kind in NO_GO_WARNINGS:
                    reasons.append(Text(N_("{summary} [{kind}]"), summary=f.summary, kind=f.kind))
                else:
                    warnings.append(Text(N_("{summary} [{kind}]"), summary=f.summary, kind=f.kind))
        state = reach.get(name)
        if state == "unknown":
            reasons.insert(0, Text(N_("never reached: no successful poll yet [node-unreachable]")))
        elif state == "stale":
            age = (history.now - node.last_ok) / 60.0 if node.last_ok is not None else 0.0
            reasons.append(Text(N_("stale: no good poll for {age} [node-unreachable]"), age=_age_text(age)))
        elif state == "unreachable" and not any("[node-unreachable, open]" in r for r in reasons):
            reasons.append(Text(N_("unreachable now: the latest poll failed ({error}) [node-unreachable]"),
                                error=node.last_error or Text(N_("no answer"))))
        # One card's malformed data must not cost the node (or the fleet) its preflight.
        summary, problems, _ = isolated(functools.partial(_ecc_power, node=name), history, "ECC/power summary")
        ecc, power = summary if summary is not None else ({}, {})
        for p in problems:
            gpu = history.gpu(p.gpu_uuid) if p.gpu_uuid else None
            where = f"{name} gpu{gpu.index}" if gpu is not None and gpu.index is not None else p.gpu_uuid or name
            warnings.append(Text(N_("{where}: could not judge its ECC/power data, left out of the summary below "
                                    "({error}) [data-unjudgeable]"), where=where, error=p.error))
        result.append(NodePreflight(
            name, not reasons, tuple(reasons), tuple(warnings), ecc, power,
            gpus=len([g for g in history.gpus_on(name) if g.state != GpuState.MISSING]),
            expected=history.expected_gpus(node),
        ))
    no_go = [n.name for n in result if not n.go]
    return PreflightResult(
        now=history.now, since=since, days=days, nodes=tuple(result),
        exclude=hostlist.compress_lenient(no_go) if no_go else "",  # never fails for one name
        findings=tuple(sort_findings(f for f in all_findings if f.node in set(names))),
    )

