"""What the notifier sends: events from what a health pass changed, and the messages made of them.

Pure functions of their input (time passed in), no I/O: the :class:`Event`
payloads are what :mod:`storage.notify` keeps in the outbox, and
:func:`compose` turns the due events of one destination into one message (one
event) or a folded one (a storm: many events, one message listing them).
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from fleetmon import i18n
from fleetmon.health import wording as W
from fleetmon.i18n import N_, localized, ngettext
from fleetmon.i18n import gettext as _
from fleetmon.text import printable
from fleetmon.vocab import Severity

__all__ = ["FOLD_OVER", "Event", "compose", "finding_event", "open_command", "stale_event"]

FOLD_OVER = 3
"""More events than this, due together for one destination, go as one message that lists them."""
MAX_LISTED = 60
"""A folded message lists at most this many events (the count says how many more)."""
EVIDENCE_CHARS = 300


@dataclass(frozen=True)
class Event:
    """One thing to tell: a finding's lifecycle transition, a node gone stale, a day's digest.

    ``key`` is unique per event (a finding key with its transition and onset): the outbox keeps
    one row per destination and key, so nothing is sent twice for it.
    """

    key: str
    transition: str
    """"new", "reopened", "worsened", "stale", "digest" or "test"."""
    kind: str
    severity: str
    node: str | None
    gpu: str | None
    """The card as people name it ("gpu3", else its UUID); None for a node event."""
    evidence: str
    action: str
    command: str
    group: str | None = None
    at: float = 0.0
    title: str = ""
    body: str = ""
    """Only a digest or a test carries its own text."""
    evidence_data: Any = None
    """How a finding's summary was made (:func:`fleetmon.i18n.to_data`): ``evidence`` said in a destination's
    language. None: shown as ``evidence`` (English; events queued before it was kept)."""
    action_data: Any = None
    """The same for an action with values (a fixed one is in the catalog as it is)."""

    def payload(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_payload(cls, data: Mapping[str, Any]) -> Event:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def where(self) -> str:
        return " ".join(p for p in (self.node, self.gpu) if p) or "fleet"


def open_command(db: str, node: str | None, kind: str | None = None, gpu_uuid: str | None = None) -> str:
    """The ``fleetmon`` command that shows a finding (its key, to resolve it) from the collector's database."""
    parts = ["fleetmon", "resolve", "--db", db, "--list"]
    if node:
        parts += ["--node", node]
    if gpu_uuid:
        parts += ["--gpu", gpu_uuid]
    if kind:
        parts += ["--kind", kind]
    return " ".join(shlex.quote(p) for p in parts)


def _one_line(text: str, limit: int = EVIDENCE_CHARS) -> str:
    line = " ".join(printable(str(text)).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def finding_event(finding: Any, transition: str, db: str, *, group: str | None = None,
                  gpu_index: int | None = None) -> Event:
    """The event of a stored finding (:class:`storage.rows.StoredFinding`) that is new, reopened or worsened."""
    evidence = dict(finding.evidence or {})
    summary = evidence.get("summary") or f"{finding.node}: {finding.kind}"
    # How the summary was made (an i18n.Text read back with m017), so that each destination says it in its
    # language; the outbox keeps the event as JSON until it is sent.
    made = i18n.to_data(summary) if isinstance(summary, i18n.Text) else None
    action = finding.action or ""
    action_made = i18n.to_data(action) if isinstance(action, i18n.Text) else None
    gpu = None
    if finding.gpu_uuid:
        gpu = f"gpu{gpu_index}" if gpu_index is not None else str(finding.gpu_uuid)
    severity = str(getattr(finding.severity, "value", finding.severity))
    onset = int(float(finding.first_seen))
    # One event per finding key and lifecycle transition: a reopening has a new onset; a worsening is
    # keyed by the severity it reached, so it is told once however long the finding stays so.
    stamp = f"{severity}" if transition == "worsened" else f"{onset}"
    return Event(key=f"finding:{finding.key}:{transition}:{stamp}", transition=transition, kind=str(finding.kind),
                 severity=severity, node=finding.node, gpu=gpu, evidence=_one_line(summary),
                 action=_one_line(str(action), 400), evidence_data=made, action_data=action_made,
                 command=open_command(db, finding.node, str(finding.kind), finding.gpu_uuid),
                 group=group, at=float(finding.last_seen))


STALE_ACTION = N_("Check that the collector still polls this node and that the node and its agent are up")


def _stale_evidence(node: str, last_ok: float, now: float) -> str:
    """"n3: no good poll for 42 min (last at 2026-12-03 15:30 UTC)", in the current language."""
    minutes = max(0, int((now - last_ok) // 60))
    return _("{node}: no good poll for {minutes} min (last at {when} UTC)").format(
        node=node, minutes=minutes, when=i18n.when(last_ok))


def stale_event(node: str, last_ok: float, now: float, db: str, *, group: str | None = None) -> Event:
    """The event of a node whose newest good poll is older than the staleness limit (one per stale spell)."""
    with i18n.speaking("en"):  # stored English, said again in each destination's language by compose()
        evidence = _stale_evidence(node, last_ok, now)
    return Event(key=f"stale:{node}:{int(last_ok)}", transition="stale", kind="node-stale", severity="critical",
                 node=node, gpu=None, evidence=evidence, action=STALE_ACTION,
                 command=open_command(db, node), group=group, at=now)


def _evidence(e: Event) -> str:
    """The event's evidence in the current language: a stale node's is made again from its key (the outbox
    keeps the English text); a finding's summary is made again from ``evidence_data`` when it gives the same
    English line (else shown as stored: docs/i18n.md)."""
    if e.transition == "stale" and e.node and i18n.current_language() != "en":
        try:
            last_ok = float(e.key.rsplit(":", 1)[1])
        except (IndexError, ValueError):
            return e.evidence
        return _one_line(_stale_evidence(e.node, last_ok, e.at))
    if e.evidence_data is not None and i18n.current_language() != "en":
        made = i18n.remake(e.evidence_data)
        if made is not None and _one_line(str.__str__(made)) == e.evidence:
            return _one_line(localized(made))
    return e.evidence


def _action(e: Event) -> str:
    """The event's action in the current language: made again from ``action_data`` when it gives the same
    English line, else the catalog's sentence (a fixed action) or as stored."""
    if e.action_data is not None and i18n.current_language() != "en":
        made = i18n.remake(e.action_data)
        if made is not None and _one_line(str.__str__(made), 400) == e.action:
            return _one_line(localized(made), 400)
    return localized(e.action)


def _rank(severity: str) -> int:
    try:
        return Severity.parse(severity).rank
    except ValueError:
        return 0


_CHANGES = {"new": N_("new"), "reopened": N_("back"), "stale": N_("stale")}


def compose(events: Sequence[Event], *, db: str = "", lang: str | None = None) -> tuple[str, str]:
    """(title, body) of one message for ``events``: one event in full, or (more than one) a folded list.

    Said in ``lang`` (a destination's ``lang``; None: the process's language); kinds, node and GPU names and
    commands stay as they are. English is as it always was.
    """
    with i18n.speaking(lang):
        return _compose(events, db)


def _compose(events: Sequence[Event], db: str) -> tuple[str, str]:
    if len(events) == 1:
        e = events[0]
        if e.transition in ("digest", "test"):
            return e.title, e.body
        severity = W.word(e.severity)
        if e.transition == "worsened":
            change = _("worsened to {severity}").format(severity=severity)
        else:
            change = _(_CHANGES[e.transition]) if e.transition in _CHANGES else e.transition
        where = e.where if e.where != "fleet" else _("fleet")
        title = _("[fleetmon] {severity} {kind}: {where}").format(severity=W.upper(e.severity), kind=e.kind,
                                                                  where=where)
        body = "\n".join([
            _("{where}: {kind}, {severity} ({change})").format(where=where, kind=e.kind, severity=severity,
                                                               change=change),
            _("Node: {node}   GPU: {gpu}").format(node=e.node or "-", gpu=e.gpu or "-"),
            _("Evidence: {evidence}").format(evidence=_evidence(e)),
            _("Action: {action}").format(action=_action(e)),
            _("Open: {command}").format(command=e.command),
        ])
        return title, body
    worst = max(events, key=lambda e: _rank(e.severity)).severity
    kinds = Counter(e.kind for e in events)
    nodes = sorted({e.node for e in events if e.node})
    kind_text = ", ".join(f"{n} × {k}" for k, n in kinds.most_common())
    title = ngettext("[fleetmon] {worst}: {count} events on {nodes} node ({kinds})",
                     "[fleetmon] {worst}: {count} events on {nodes} nodes ({kinds})", len(nodes)).format(
        worst=W.upper(worst), count=len(events), nodes=len(nodes), kinds=kind_text)
    lines = [_("{count} events ({kinds}), worst {worst}:").format(count=len(events), kinds=kind_text,
                                                                   worst=W.word(worst))]
    for e in sorted(events, key=lambda e: (-_rank(e.severity), e.kind, e.node or "", e.gpu or ""))[:MAX_LISTED]:
        if e.transition in ("digest", "test"):
            lines.append(f"- {e.title}")
            continue
        lines.append(f"- {e.where}  {e.kind}  {W.word(e.severity)}  {_evidence(e)}")
    if len(events) > MAX_LISTED:
        lines.append(_("… and {count} more").format(count=len(events) - MAX_LISTED))
    actions = list(dict.fromkeys(_action(e) for e in events if e.action))[:3]
    for action in actions:
        lines.append(_("Action: {action}").format(action=action))
    if db:
        lines.append(_("Open: {command}").format(command=f"fleetmon report --db {shlex.quote(db)}"))
    return title, "\n".join(lines)


def transitions_of(changes: Any) -> Iterable[tuple[Any, str]]:
    """(stored finding, transition) for what a health pass changed (:class:`storage.rows.FindingChanges`):
    new (reopened ones told as reopened) and worsened findings."""
    reopened = {f.key for f in getattr(changes, "reopened", ())}
    for f in getattr(changes, "new", ()):
        yield f, "reopened" if f.key in reopened else "new"
    for f in getattr(changes, "worsened", ()):
        yield f, "worsened"
