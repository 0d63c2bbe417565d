"""The findings ledger: one evaluation judged against what earlier passes stored.

The health engine judges a window; a finding whose evidence left the window
would be forgotten. The collector's health pass therefore keeps a ledger (the
``findings`` table) and every judgement (the pass, ``fleetmon report``,
``fleetmon preflight``, the GUI's inspection) merges its fresh evaluation with
it through :func:`fleetmon.health.lifecycle.judge`: point events stay open
until an operator resolves them, recurring conditions until a quiet period
with data, states until data shows them gone. This module reads the ledger,
the operators' resolutions and the data coverage through storage; it holds
no SQL.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from fleetmon import i18n
from fleetmon.health import engine, lifecycle
from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory, GpuHistory
from fleetmon.health.lifecycle import Coverage, LedgerEntry, Resolution
from fleetmon.health.thresholds import Thresholds
from storage import findings as stored
from storage import health_input
from storage.resolutions import ResolutionRow, latest_resolutions
from storage.rows import NewFinding, StoredFinding

__all__ = ["judge", "ledger_entries", "new_finding", "resolutions", "store"]

KEEP_RESOLVED_S = lifecycle.DAYS_KEPT * 86400.0
"""Resolved findings are read back this long (a recurrence links to them; reports list them)."""


def stored_finding(r: StoredFinding, index_of: Mapping[str, int | None] | None = None) -> Finding | None:
    """A Finding from a stored row, its state as stored (None for a kind or severity this build does not know)."""
    evidence = dict(r.evidence or {})
    summary = evidence.pop("summary", "") or f"{r.node}: {r.kind}"
    summary = summary if isinstance(summary, str) else str(summary)  # an i18n.Text (m017) stays one
    try:
        return Finding(
            kind=str(r.kind), severity=str(r.severity), node=str(r.node or ""), gpu_uuid=r.gpu_uuid,
            first_seen=float(r.first_seen), last_seen=float(r.last_seen), evidence=evidence,
            action=r.action if isinstance(r.action, str) else "", summary=summary, key=str(r.key),
            state="open" if r.resolved_at is None else "resolved",
            gpu_index=(index_of or {}).get(r.gpu_uuid) if r.gpu_uuid else None,
        )
    except (ValueError, TypeError):
        return None


def ledger_entries(db: Any, now: float, index_of: Mapping[str, int | None] | None = None) -> dict[str, LedgerEntry]:
    """The stored findings that matter at ``now``: begun by then, open or resolved in the last 30 days."""
    out: dict[str, LedgerEntry] = {}
    for r in stored.ledger_rows(db, until=now, resolved_since=now - KEEP_RESOLVED_S):
        f = stored_finding(r, index_of)
        if f is not None:
            out[f.key] = LedgerEntry(f, r.resolved_at)
    return out


def _resolution(r: ResolutionRow) -> Resolution:
    return Resolution(id=r.id, key=r.key, at=r.at, reason=r.reason, note=r.note, by=r.by, first_seen=r.first_seen,
                      last_seen=r.last_seen, severity=r.severity, summary=r.summary)


def resolutions(db: Any, now: float) -> dict[str, Resolution]:
    """The newest operator's resolution of each finding key, at or before ``now``."""
    return {k: _resolution(r) for k, r in latest_resolutions(db, until=now).items()}


def _gpu_coverage(gpu: GpuHistory, after: float, now: float) -> Coverage:
    tl = gpu.timeline()
    if not len(tl):
        return Coverage(newest=None)
    ts, dur = tl.ts, tl.dur
    busy_n, n, busy_min = tl.col("busy_n"), tl.col("n"), tl.col("busy_minutes")
    hours: set[int] = set()
    busy = 0.0
    newest: float | None = None
    for i in range(len(tl)):
        t = ts[i]
        if t < after or t > now:
            continue
        hours.add(int(t) // 3600)
        newest = t + (dur[i] or 60)
        if (dur[i] or 60) <= 60:
            b, k = busy_n[i], n[i]
            if b and k and b >= k / 2:
                busy += 1
        elif busy_min[i]:
            busy += float(busy_min[i])
    return Coverage(hours=float(len(hours)), busy_minutes=busy, newest=None if newest is None else min(newest, now))


def coverage_fn(history: FleetHistory, db: Any = None) -> lifecycle.CoverageFn:
    """coverage(finding, after): the data of the finding's card (a node finding: its best card) after ``after``.

    Within the history's window it is counted from the history; before it (a
    finding the ledger kept from an earlier window) from the stored hourly
    rollups when ``db`` is given (else the window alone: a lower bound).
    """
    now = history.now
    memo: dict[tuple[tuple[str, ...], float], Coverage] = {}

    def subjects(f: Finding) -> list[GpuHistory]:
        if f.gpu_uuid:
            g = history.gpu(f.gpu_uuid)
            return [g] if g is not None else []
        return list(history.gpus_on(f.node))

    def cov(f: Finding, after: float) -> Coverage:
        gpus = subjects(f)
        key = (tuple(g.uuid for g in gpus), after)
        if key in memo:
            return memo[key]
        if db is not None and after < history.since and gpus:
            got = health_input.coverage(db, [g.uuid for g in gpus], after, now)
            parts = [Coverage(hours=h, busy_minutes=b, newest=t) for h, b, t in got.values()]
        else:
            parts = [_gpu_coverage(g, after, now) for g in gpus]
        # A good poll is data too (versions, inventory, the latest sample): the newest of it counts as
        # the subject's newest data, so a state that a poll shows gone (a driver fixed) resolves.
        polled = [min(float(g.last_seen), now) for g in gpus if g.last_seen is not None]
        if not f.gpu_uuid:
            node = history.node(f.node)
            if node is not None and node.last_ok is not None:
                polled.append(min(float(node.last_ok), now))
        if polled:
            parts.append(Coverage(newest=max(polled)))
        best = Coverage(
            hours=max((p.hours for p in parts), default=0.0),
            busy_minutes=max((p.busy_minutes for p in parts), default=0.0),
            newest=max((p.newest for p in parts if p.newest is not None), default=None))
        memo[key] = best
        return best

    return cov


def judge(db: Any, history: FleetHistory, fresh: Sequence[Finding], *,
          since: float | None = None) -> list[Finding]:
    """``fresh`` (the engine's findings over ``history``) judged against the ledger, sorted.

    Returns the open findings, and the resolved ones whose last evidence (or
    resolution) falls at or after ``since`` (default: the history's window).
    """
    now = history.now
    index_of = {g.uuid: g.index for g in history.gpus}
    t = history.thresholds if isinstance(history.thresholds, Thresholds) else Thresholds()
    judged = lifecycle.judge(fresh, ledger_entries(db, now, index_of), resolutions(db, now),
                             coverage_fn(history, db), now, t)
    # Card or slot, told again over the merged findings: a fault the ledger kept from an earlier window
    # (a card that left the bad slot hours ago) still counts for its slot.
    judged = engine.attribute_slots(judged, history)
    start = history.since if since is None else since
    out = []
    for f in judged:
        if f.gpu_uuid and f.gpu_index is None and f.gpu_uuid in index_of:
            f = replace(f, gpu_index=index_of[f.gpu_uuid])
        if f.is_open or f.last_seen >= start or _resolved_at(f) >= start:
            out.append(f)
    return engine.sort_findings(out)


def _resolved_at(f: Finding) -> float:
    lc = f.evidence.get("lifecycle")
    if isinstance(lc, Mapping):
        why = lc.get("resolved")
        if isinstance(why, Mapping):
            at = why.get("at")
            if at is None and isinstance(why.get("resolution"), Mapping):
                at = why["resolution"].get("at")
            if isinstance(at, (int, float)) and math.isfinite(at):
                return float(at)
    return -math.inf


def new_finding(f: Finding) -> NewFinding:
    """A finding as storage keeps it (the summary rides in the evidence, in English; ``texts`` keeps how the
    summary and action were made, so that a reader can say them in its language: docs/i18n.md)."""
    return NewFinding(key=f.key, kind=f.kind, severity=f.severity, node=f.node, gpu_uuid=f.gpu_uuid,
                      first_seen=f.first_seen, last_seen=f.last_seen,
                      evidence={"summary": f.summary, **f.evidence}, action=f.action,
                      texts=i18n.dumps({"summary": f.summary, "action": f.action, "base_summary": _base_summary(f),
                                        "why": _data_why(f)}))


def _base_summary(f: Finding) -> object:
    """The rule's own summary that the lifecycle keeps in the evidence (``lifecycle.base_summary``), if any."""
    lc = f.evidence.get("lifecycle")
    return lc.get("base_summary") if isinstance(lc, Mapping) else None


def _data_why(f: Finding) -> object:
    """Why the data closed the finding (``lifecycle.resolved.why``: "24 h without it, 30 h of data"), if it did."""
    lc = f.evidence.get("lifecycle")
    resolved = lc.get("resolved") if isinstance(lc, Mapping) else None
    return resolved.get("why") if isinstance(resolved, Mapping) else None


def store(db: Any, judged: Iterable[Finding], now: float) -> Any:
    """Store one pass's judged findings in the ledger (:func:`storage.findings.save_ledger`)."""
    items = list(judged)
    return stored.save_ledger(db, [new_finding(f) for f in items if f.is_open],
                              [new_finding(f) for f in items if not f.is_open], now)
