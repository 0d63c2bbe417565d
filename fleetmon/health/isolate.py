"""Rule isolation: one GPU's garbage never costs the fleet its report (issue 11, item 3).

Rules stay plain pure functions that assume well-typed records. When one
raises (a string where a number belongs in an old database, a list where a
text belongs…), :func:`run_isolated` finds the culprit by running the rule
again over smaller histories (pure rules make that safe): one GPU at a time,
then, if no GPU explains it, one node at a time. The rule's findings come
from the history without the culprits; each culprit gets one
``data-unjudgeable`` warning (:func:`unjudgeable_findings`) naming the rules
that could not judge it and why. Only when no GPU or node explains the
failure is the rule skipped for the whole fleet (a finding on every node).

The cost is paid only by a rule that failed: a healthy evaluation runs each
rule once, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from fleetmon.fields import INVENTORY_CATALOG
from fleetmon.health.findings import Finding, finding_key
from fleetmon.health.fleet import FleetHistory, GpuHistory
from fleetmon.i18n import N_, Text

__all__ = ["DATA_ERRORS", "NUMERIC_INVENTORY", "Problem", "isolated", "run_isolated", "unjudgeable_findings"]

DATA_ERRORS: tuple[type[Exception], ...] = (
    TypeError, ValueError, ArithmeticError, KeyError, IndexError, AttributeError)
"""What a rule raises on malformed data (a bug in a rule raises the same: it is reported the same way,
naming the rule, instead of stopping every report)."""

NUMERIC_INVENTORY: tuple[str, ...] = tuple(f.name for f in INVENTORY_CATALOG if f.type == "number")
"""Inventory values that should be numbers: one that is not is named in the finding's evidence."""

Rule = Callable[[FleetHistory, Any], list[Finding]]


@dataclass(frozen=True)
class Problem:
    """A rule (or summary) that could not judge one GPU, one node, or (both None) the fleet."""

    rule: str
    error: str
    gpu_uuid: str | None = None
    node: str | None = None


def _name(rule: Callable[..., Any]) -> str:
    return str(getattr(rule, "__name__", None) or type(rule).__name__)


def _why(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200] if text else ''}".rstrip(": ")


def _fails(fn: Callable[[FleetHistory], Any], history: FleetHistory) -> BaseException | None:
    try:
        fn(history)
    except DATA_ERRORS as exc:
        return exc
    return None


def isolated(fn: Callable[[FleetHistory], Any], history: FleetHistory, name: str
             ) -> tuple[Any, list[Problem], FleetHistory]:
    """Run ``fn(history)``; on a data error, again without the GPUs (then nodes) that make it fail.

    Returns ``(result, problems, history_used)``; ``result`` is None when the
    function failed for the fleet as a whole (one problem with no GPU or node).
    """
    try:
        return fn(history), [], history
    except DATA_ERRORS as exc:
        whole: BaseException = exc
    problems: list[Problem] = []
    bad_gpus: set[str] = set()
    for gpu in history.gpus:
        err = _fails(fn, replace(history, gpus=(gpu,), _cache={}))
        if err is not None:
            bad_gpus.add(gpu.uuid)
            problems.append(Problem(name, _why(err), gpu.uuid, gpu.node))
    rest = replace(history, gpus=tuple(g for g in history.gpus if g.uuid not in bad_gpus), _cache={})
    if bad_gpus:
        try:
            return fn(rest), problems, rest
        except DATA_ERRORS as exc:
            whole = exc
    bad_nodes: set[str] = set()
    for node in rest.nodes:
        sub = replace(rest, nodes=(node,), gpus=tuple(g for g in rest.gpus if g.node == node.name), _cache={})
        err = _fails(fn, sub)
        if err is not None:
            bad_nodes.add(node.name)
            problems.append(Problem(name, _why(err), None, node.name))
    if bad_nodes:
        rest = replace(rest, nodes=tuple(n for n in rest.nodes if n.name not in bad_nodes),
                       gpus=tuple(g for g in rest.gpus if g.node not in bad_nodes), _cache={})
        try:
            return fn(rest), problems, rest
        except DATA_ERRORS as exc:
            whole = exc
    return None, [Problem(name, _why(whole))], history


def run_isolated(rule: Rule, history: FleetHistory, thresholds: Any) -> tuple[list[Finding], list[Problem]]:
    """One rule's findings, isolating the GPUs or nodes whose data makes it raise."""
    result, problems, _ = isolated(lambda h: list(rule(h, thresholds)), history, _name(rule))
    return (result or []), problems


def _suspects(gpu: GpuHistory) -> dict[str, str]:
    out: dict[str, str] = {}
    for key in NUMERIC_INVENTORY:
        v = gpu.inventory.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            out[key] = ascii(v)[:40]
    return out


def unjudgeable_findings(history: FleetHistory, problems: Sequence[Problem]) -> list[Finding]:
    """One ``data-unjudgeable`` warning per GPU or node that some rule could not judge."""
    by_where: dict[tuple[str | None, str | None], list[Problem]] = {}
    for p in problems:
        if p.gpu_uuid is None and p.node is None:  # the whole fleet: every node says so
            for n in history.nodes:
                by_where.setdefault((None, n.name), []).append(p)
        else:
            by_where.setdefault((p.gpu_uuid, p.node), []).append(p)
    out: list[Finding] = []
    for (uuid, node), probs in by_where.items():
        rules = sorted({p.rule for p in probs})
        errors = sorted({f"{p.rule}: {p.error}" for p in probs})
        evidence: dict[str, Any] = {"rules": rules, "errors": errors}
        gpu = history.gpu(uuid) if uuid else None
        index = gpu.index if gpu is not None else None
        if gpu is not None:
            suspects = _suspects(gpu)
            if suspects:
                evidence["suspect_values"] = suspects
            where = f"{node} gpu{index}" if index is not None else f"{node} {uuid}"
            # The rules and the stored values are identifiers: listed as they are.
            what = (Text(N_("{where}: could not judge this GPU's data ({rules}); malformed stored values: {values}"),
                         where=where, rules=", ".join(rules), values=", ".join(sorted(suspects))) if suspects else
                    Text(N_("{where}: could not judge this GPU's data ({rules})"), where=where, rules=", ".join(rules)))
        else:
            what = Text(N_("{node}: could not judge this node's data ({rules})"), node=node, rules=", ".join(rules))
        out.append(Finding(
            "data-unjudgeable", "warning", node or (gpu.node if gpu else ""), uuid, history.now, history.now,
            evidence=evidence,
            action=N_("The stored data is malformed (an old database, or an answer stored before types were "
                      "checked): these checks were skipped for it, the rest of the fleet was judged. Fix or "
                      "remove the bad rows, or wait for the next good inventory to replace them."),
            summary=what, key=finding_key("data-unjudgeable", node or "", uuid), gpu_index=index,
            magnitude=float(len(rules))))
    return out
