"""Drain and resume with a record, and the automatic drain (docs/slurm.md).

Every request goes on record (:mod:`storage.slurm_actions`) before Slurm is asked and is
finished with Slurm's answer, so a refused or timed-out request reads ``failed`` with its
one-line error and nothing the operator typed is lost. The automatic drain
(:func:`plan_auto_drain`, :func:`run_auto_drain`) acts only on open findings of the kinds
``[slurm] auto_drain`` names whose latest evidence is younger than the stale limit, never
drains more than ``max_fraction`` of the fleet by fleetmon's hand, never drains twice for the
same finding (an operator's resume stands) and never resumes.
"""

from __future__ import annotations

import getpass
import logging
import math
import socket
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text, reason_of
from fleetmon.slurm.client import SlurmClient, SlurmError, SlurmView, clean_reason
from fleetmon.slurm.names import slurm_name_of
from fleetmon.text import printable

__all__ = ["AutoDrainPlan", "Outcome", "client_for", "do_action", "finding_reason", "plan_auto_drain",
           "run_auto_drain", "slurm_summary", "who_am_i"]

log = logging.getLogger("fleetmon.slurm")


def who_am_i() -> str:
    """``user@host`` of this process (what the record says did it)."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def client_for(fleet: Any) -> SlurmClient:
    """A client with the fleet file's ``[slurm] conf`` and ``timeout_s`` (the defaults without a table)."""
    settings = getattr(fleet, "slurm", None)
    if settings is None:
        return SlurmClient()
    return SlurmClient(conf=settings.conf, timeout_s=settings.timeout_s)


def finding_reason(finding: Any) -> str:
    """The drain reason for a finding: its summary (else node and kind), prefixed ``fleetmon:`` by the client."""
    summary = getattr(finding, "summary", None)
    if not summary:
        evidence = getattr(finding, "evidence", None) or {}
        summary = evidence.get("summary") if isinstance(evidence, Mapping) else None
    if not summary:
        summary = f"{getattr(finding, 'kind', 'finding')} on {getattr(finding, 'node', '?')}"
    return str(summary)


@dataclass(frozen=True)
class Outcome:
    """What one drain or resume did: the stored record's id, Slurm's name, the reason as sent, the error."""

    action_id: int
    node: str
    slurm_name: str | None
    ok: bool
    error: str | None = None
    sent_reason: str | None = None

    def line(self, action: str) -> str:
        """One line for a terminal or a status bar."""
        target = printable(self.node, 80) + (f" (Slurm {self.slurm_name})" if self.slurm_name and self.slurm_name != self.node
                                   else "")
        # i18n.Text: the English line as before, said in the reader's language where printed; the action stays
        if self.ok and self.sent_reason:
            return Text(N_("{action} {target}: done — reason: {reason}"), action=action, target=target,
                        reason=self.sent_reason)
        if self.ok:
            return Text(N_("{action} {target}: done"), action=action, target=target)
        return Text(N_("{action} {target} failed: {error}"), action=action, target=target, error=self.error)


def do_action(db: Any, fleet: Any, node: str, action: str, *, reason: str = "", origin: str, who: str | None = None,
              finding_key: str | None = None, client: SlurmClient | None = None, now: float | None = None
              ) -> Outcome:
    """Drain (``action="drain"``) or resume ``node`` (a fleet name), recorded in ``db``; never raises for Slurm.

    The record is written first (``pending``); Slurm's answer finishes it. Returns the outcome.
    """
    from storage.slurm_actions import begin_action, finish_action

    if action not in ("drain", "resume"):
        raise ValueError(f"unknown Slurm action {action!r}")
    client = client or client_for(fleet)
    who = who or who_am_i()
    ts = time.time() if now is None else now
    name: str | None = None
    name_error: str | None = None
    try:
        name = slurm_name_of(fleet, node)
    except SlurmError as exc:
        name_error = reason_of(exc)  # a Text stays one: said in the reader's language where shown
    action_id = begin_action(db, ts, node, action, origin=origin, who=who, slurm_name=name, reason=reason or None,
                             finding_key=finding_key)
    sent: str | None = None
    error = name_error
    if name is not None:
        try:
            if action == "drain":
                sent = client.drain(name, reason)
            else:
                client.resume(name)
        except SlurmError as exc:
            error = reason_of(exc)
    finish_action(db, action_id, time.time() if now is None else now, ok=error is None, error=error,
                  sent_reason=sent if sent is not None else (clean_reason(reason) if action == "drain" else None))
    if error is None:
        log.info("slurm: %s %s (%s) by %s: %s", action, node, name, who, printable(sent or "", 200))
    else:
        log.info("slurm: %s %s by %s failed: %s", action, printable(node, 80), who, error)
    return Outcome(action_id, node, name, error is None, error, sent)


# -- the automatic drain --------------------------------------------------------------------------

@dataclass(frozen=True)
class AutoDrainPlan:
    """What the automatic drain would do now: ``drain`` ((node, finding key, reason) each), and why the
    others are left (``skipped``: (node, kind, why) each). ``error``: Slurm could not be asked."""

    drain: tuple[tuple[str, str, str], ...] = ()
    skipped: tuple[tuple[str, str, str], ...] = ()
    error: str | None = None
    limit: int = 0
    drained_by_fleetmon: int = 0

    def lines(self, dry_run: bool = True) -> list[str]:
        """The plan in lines (``i18n.Text``: English, said in the reader's language where shown); ``dry_run``
        False: "drained" in place of "would drain"."""
        out: list[str] = [Text(N_("auto-drain: {count} to drain; {drained} drained by fleetmon now, at most {limit} "
                                  "at once"),
                               count=len(self.drain), drained=self.drained_by_fleetmon, limit=self.limit)]
        if self.error:
            out.append(Text(N_("auto-drain: Slurm unavailable: {error}"), error=self.error))
        template = N_("would drain {node}: {reason}") if dry_run else N_("drained {node}: {reason}")
        out += [Text(template, node=node, reason=printable(reason, 200)) for node, _key, reason in self.drain]
        out += [Text(N_("skip {node} ({kind}): {why}"), node=node, kind=kind, why=why)
                for node, kind, why in self.skipped]
        return out


def plan_auto_drain(findings: Sequence[Any], fleet: Any, view: SlurmView, done_keys: Iterable[str], now: float
                    ) -> AutoDrainPlan:
    """Which nodes the automatic drain should drain now (a pure function of what it is given).

    ``findings``: the open findings (stored or fresh: ``kind``, ``node``, ``key``, ``last_seen``,
    ``summary`` or ``evidence["summary"]``); ``view``: Slurm's state; ``done_keys``: the finding keys
    fleetmon already drained for (a resume by an operator is never undone).
    """
    settings = getattr(fleet, "slurm", None)
    kinds = set(getattr(settings, "auto_drain", ()) or ())
    if not kinds:
        return AutoDrainPlan()
    overrides = getattr(fleet, "thresholds", None) or {}
    try:
        stale_s = Thresholds.from_overrides(overrides).stale_after_minutes * 60.0
    except ValueError:
        stale_s = Thresholds().stale_after_minutes * 60.0
    fleet_size = len(getattr(fleet, "nodes", ()) or ())
    limit = math.floor(float(getattr(settings, "max_fraction", 0.0)) * fleet_size + 1e-9)
    if not view.ok:
        return AutoDrainPlan(error=view.error, limit=limit)
    ours: set[str] = set()  # the fleet's nodes by their Slurm names: the fraction is of this fleet, not the cluster
    for spec in getattr(fleet, "nodes", ()) or ():
        try:
            ours.add(slurm_name_of(fleet, spec.name))
        except SlurmError:
            continue
    by_fleetmon = sum(1 for name, s in view.nodes.items() if s.by_fleetmon and name in ours)
    done = set(done_keys)
    chosen: dict[str, tuple[str, str, str]] = {}
    skipped: list[tuple[str, str, str]] = []
    for f in sorted(findings, key=lambda f: (-float(f.last_seen or 0), str(f.node))):
        if f.kind not in kinds or not f.node or f.node in chosen:
            continue
        if getattr(f, "resolved_at", None) is not None or getattr(f, "state", "open") != "open":
            continue
        age = now - float(f.last_seen or 0)
        if age > stale_s:
            skipped.append((f.node, f.kind, Text(N_("its data is {age:.0f} min old (stale after {stale:.0f})"),
                                                   age=age / 60, stale=stale_s / 60)))
            continue
        if f.key in done:
            skipped.append((f.node, f.kind, Text(
                N_("already drained once for this finding (never again automatically)"))))
            continue
        try:
            name = slurm_name_of(fleet, f.node)
        except SlurmError as exc:
            skipped.append((f.node, f.kind, reason_of(exc)))
            continue
        state = view.nodes.get(name)
        if state is None:
            skipped.append((f.node, f.kind, Text(N_("Slurm does not know node {name!r}"), name=name)))
            continue
        if state.drained or state.down:
            skipped.append((f.node, f.kind, Text(N_("already {state} in Slurm"), state=state.short)))
            continue
        if by_fleetmon + len(chosen) >= limit:
            skipped.append((f.node, f.kind, Text(N_("max_fraction reached ({count} of at most {limit} drained by "
                                                    "fleetmon)"), count=by_fleetmon + len(chosen), limit=limit)))
            continue
        chosen[f.node] = (f.node, f.key, finding_reason(f))
    return AutoDrainPlan(drain=tuple(chosen.values()), skipped=tuple(skipped), limit=limit,
                         drained_by_fleetmon=by_fleetmon)


def run_auto_drain(db: Any, fleet: Any, now: float, *, dry_run: bool = False,
                   client: SlurmClient | None = None) -> AutoDrainPlan:
    """Plan the automatic drain from the stored open findings and (unless ``dry_run``) carry it out, recorded."""
    from fleetmon.ledger import stored_finding
    from storage.findings import open_findings
    from storage.slurm_actions import slurm_actions

    settings = getattr(fleet, "slurm", None)
    if not getattr(settings, "auto_drain", ()):
        return AutoDrainPlan()
    client = client or client_for(fleet)
    findings = [f for f in (stored_finding(r) for r in open_findings(db)) if f is not None]
    done = {r.finding_key for r in slurm_actions(db, limit=100_000)
            if r.origin == "auto" and r.action == "drain" and r.result == "ok" and r.finding_key}
    plan = plan_auto_drain(findings, fleet, client.view(now), done, now)
    if dry_run:
        return plan
    for node, key, reason in plan.drain:
        do_action(db, fleet, node, "drain", reason=reason, origin="auto", who=f"fleetmon auto-drain ({who_am_i()})",
                  finding_key=key, client=client)
    return plan


def slurm_summary(db: Any, fleet: Any, since: float, nodes: Iterable[str], *, client: SlurmClient | None = None,
                  now: float | None = None) -> dict[str, Any] | None:
    """The report's Slurm part: each node's state (asked only when the fleet file has ``[slurm]``) and the
    drains and resumes recorded since ``since``; None when there is neither.

    ``{"asked": bool, "available": bool, "error": str | None, "nodes": {node: state dict | None (Slurm does
    not know it)}, "actions": [record dicts, newest first]}``. Slurm unavailable is ``available`` false with
    the ``error``, never a state.
    """
    from storage.slurm_actions import slurm_actions

    names = list(nodes)
    rows = [r for r in slurm_actions(db, since=since, limit=1000) if not names or r.node in names]
    asked = getattr(fleet, "slurm", None) is not None
    if not asked and not rows:
        return None
    out: dict[str, Any] = {"asked": asked, "available": False, "error": None, "nodes": {},
                           "actions": [r.to_dict() for r in rows]}
    if asked:
        view = (client or client_for(fleet)).view(now)
        out["available"], out["error"] = view.ok, view.error
        if view.ok:
            for node in names:
                try:
                    state = view.nodes.get(slurm_name_of(fleet, node))
                except SlurmError:
                    state = None
                out["nodes"][node] = None if state is None else state.to_dict()
    return out
