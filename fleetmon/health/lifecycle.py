"""How long a finding stays open: the lifecycle of every kind, declared in one place.

A rule judges a window of history; what it saw there is *evidence*. Whether
the problem is still open is decided here, from that evidence, the stored
ledger of earlier findings (what earlier passes saw, beyond the window), the
operator's resolutions and how much data the card (node) has sent since the
last evidence. The principle: a verdict never gets better without evidence.
Missing data is not health, and only data showing a condition gone (or an
operator's act) resolves a finding.

Four classes (:data:`LIFE_CLASSES`):

* ``event`` — a point event (an Xid, a GPU off the bus, uncorrectable ECC, a
  power dropout, a row-remap failure, a UUID conflict, a card arriving with a
  past). It stays open until an operator resolves it; where the kind allows it
  (:attr:`KindLife.clean`) and the finding is not critical, also after
  ``event_clean_hours`` clean *with data* (and load, for load-dependent kinds).
* ``recurring`` — a condition that comes and goes (thermal, power brake, PCIe
  replays and downtraining, flapping, derating). It stays open with its
  recurrence ("6 of the last 7 days, last at 16:00 UTC") until ``quiet_hours``
  pass without it, with data (and load) in them.
* ``state`` — a state the latest data shows or not (retired pages over a limit,
  a pending remap, a driver mismatch, an unreachable node). It resolves when
  fresh data of its subject no longer shows it; without fresh data it stays.
* ``notice`` — information (inventory changes): open for
  ``event_resolve_hours``; it never changes a verdict.

:func:`judge` merges one evaluation with the ledger and returns the findings
with their state and lifecycle evidence (``evidence["lifecycle"]``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from fleetmon.health.findings import KINDS, Finding
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text
from fleetmon.vocab import Severity

__all__ = [
    "LIFECYCLE",
    "LIFE_CLASSES",
    "RESOLVE_REASONS",
    "Coverage",
    "KindLife",
    "LedgerEntry",
    "Resolution",
    "judge",
    "lifecycle_markdown",
    "reason_words",
    "recurrence_text",
]

LIFE_CLASSES: tuple[str, ...] = ("event", "recurring", "state", "notice")

RESOLVE_REASONS: dict[str, str] = {
    "replaced": N_("card replaced"),
    "reseated": N_("card reseated"),
    "riser-replaced": N_("riser, slot or cable replaced"),
    "psu-replaced": N_("power supply or cabling fixed"),
    "driver-updated": N_("driver updated"),
    "repaired": N_("repaired or serviced"),
    "cooling-fixed": N_("cooling fixed"),
    "accepted": N_("accepted by the operator"),
    "false-alarm": N_("false alarm"),
    "other": N_("other (see the note)"),
}
"""Why an operator resolved a finding (``fleetmon resolve --reason``): stable identifiers, words for people
(marked: :func:`reason_words` says them in the reader's language where shown)."""


def reason_words(reason: str) -> str:
    """A resolution reason in words, as :class:`fleetmon.i18n.Text` (localized where shown); an unknown one as is."""
    return Text(RESOLVE_REASONS[reason]) if reason in RESOLVE_REASONS else reason


@dataclass(frozen=True, slots=True)
class KindLife:
    """The lifecycle of one finding kind.

    Attributes:
        kind: the finding kind.
        cls: one of :data:`LIFE_CLASSES`.
        load: the quiet (clean) period must hold ``quiet_busy_minutes`` busy minutes.
        clean: an event that may resolve after ``event_clean_hours`` clean (never a critical one).
        how: the rule in words (docs/findings.md).
    """

    kind: str
    cls: str
    load: bool = False
    clean: bool = False
    how: str = ""


LIFECYCLE: dict[str, KindLife] = {k.kind: k for k in (
    KindLife("xid", "event", load=True, clean=True,
             how="open until an operator resolves it; a non-critical Xid also after `event_clean_hours` "
                 "clean with data and load"),
    KindLife("gpu-lost", "event", how="open until an operator resolves it (the card fell off the bus once)"),
    KindLife("ecc-uncorrectable", "event", how="open until an operator resolves it"),
    KindLife("power-instability", "event", load=True, clean=True,
             how="a power dropout: open until an operator resolves it, or `event_clean_hours` clean with "
                 "data and load"),
    KindLife("uuid-conflict", "event", how="open until an operator resolves it"),
    KindLife("arrival-history", "event", how="open until an operator resolves it (the intake decision)"),
    KindLife("row-remap", "state",
             how="while the latest data shows a pending remap or a failure; a failure is critical and, "
                 "as the counter persists, stays until the card is replaced or an operator resolves it"),
    KindLife("retired-pages", "state", how="while the latest data shows the count or the pending retirement"),
    KindLife("gpu-missing", "state", how="until the card is enumerated again (data shows it back)"),
    KindLife("node-unreachable", "state", how="until the node answers again"),
    KindLife("driver-mismatch", "state", how="while the node's reported versions differ"),
    KindLife("vbios-mismatch", "state", how="while the card's reported VBIOS differs"),
    KindLife("data-unjudgeable", "state", how="while the stored data cannot be judged"),
    KindLife("gpus-refused", "state", how="while the store keeps refusing the node's new GPU UUIDs"),
    KindLife("power-capped", "state", how="while the enforced limit (or the platform cap) holds"),
    KindLife("thermal-throttle", "recurring", load=True,
             how="open with its recurrence until `quiet_hours` without it, with data and load"),
    KindLife("temperature-high", "recurring", load=True,
             how="open with its recurrence until `quiet_hours` without it, with data and load"),
    KindLife("fan-stopped", "recurring", load=True,
             how="open with its recurrence until `quiet_hours` without it, with data and load"),
    KindLife("power-brake", "recurring", load=True,
             how="open with its recurrence until `quiet_hours` without it, with data and load"),
    KindLife("power-unreadable", "recurring",
             how="open with its recurrence until `quiet_hours` of readable data"),
    KindLife("pcie-link-degraded", "recurring", load=True,
             how="open with its recurrence until `quiet_hours` without it, with data and load "
                 "(links are judged only under load)"),
    KindLife("pcie-replay", "recurring", load=True,
             how="open with its recurrence until `quiet_hours` without it, with data and load"),
    KindLife("ecc-correctable-storm", "recurring",
             how="open with its recurrence until `quiet_hours` without it, with data"),
    KindLife("node-flapping", "recurring",
             how="open with its recurrence until `quiet_hours` without an outage, with the node answering"),
    KindLife("derating", "recurring", load=True,
             how="open until `quiet_hours` of busy data at the expected clocks"),
    KindLife("device-health", "state",
             how="while the device's latest health signal is not OK; resolves when a later one says OK "
                 "(never because the signals stopped)"),
    KindLife("ecc-block", "event", how="open until an operator resolves it (an uncorrectable error in the block)"),
    KindLife("ecc-deferred", "state",
             how="while the latest signals show deferred errors; resolves when a later reading shows none"),
    KindLife("bad-pages-exceeded", "state",
             how="while the latest signals show the threshold exceeded; resolves when a later reading does not"),
    KindLife("inventory-change", "notice", how="information: shown for `event_resolve_hours`"),
)}


def _check_table() -> None:
    missing = sorted(set(KINDS) - set(LIFECYCLE))
    bad = sorted(k for k, v in LIFECYCLE.items() if v.cls not in LIFE_CLASSES or k not in KINDS)
    if missing or bad:  # pragma: no cover - guards the two tables
        raise ValueError(f"LIFECYCLE must give every kind of KINDS a lifecycle (missing {missing}, bad {bad})")


_check_table()


def life_of(kind: str) -> KindLife:
    """The lifecycle of ``kind`` (a kind this build does not know: a state, judged on fresh data)."""
    return LIFECYCLE.get(kind) or KindLife(kind, "state")


@dataclass(frozen=True, slots=True)
class Coverage:
    """How much data a card (node) sent after a moment: hours holding data, busy minutes, the newest data."""

    hours: float = 0.0
    busy_minutes: float = 0.0
    newest: float | None = None


@dataclass(frozen=True, slots=True)
class Resolution:
    """An operator's resolution of a finding (``storage.resolutions``)."""

    id: int
    key: str
    at: float
    reason: str
    note: str = ""
    by: str | None = None
    first_seen: float | None = None
    last_seen: float | None = None
    severity: str | None = None
    summary: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "at": self.at, "reason": self.reason,
                "reason_text": RESOLVE_REASONS.get(self.reason, self.reason), "note": self.note, "by": self.by,
                "first_seen": self.first_seen, "last_seen": self.last_seen, "severity": self.severity,
                "summary": self.summary}


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """A finding as an earlier pass stored it: ``finding`` (its state as stored), when it was resolved."""

    finding: Finding
    resolved_at: float | None = None


DAYS_KEPT = 30
"""Days of recurrence kept in a finding's lifecycle evidence."""


def _day(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%d")


_MONTHS = (N_("Jan"), N_("Feb"), N_("Mar"), N_("Apr"), N_("May"), N_("Jun"), N_("Jul"), N_("Aug"), N_("Sep"),
           N_("Oct"), N_("Nov"), N_("Dec"))
"""Month abbreviations as strftime's %b gives them in the C locale, marked (a translation may say "12月")."""


def recurrence_text(days: Iterable[str], last: float, now: float, span: int = 7) -> str:
    """"6 of the last 7 days, last at 16:00 UTC" (the date too when the last is not today).

    A :class:`fleetmon.i18n.Text`: the English as always, said in the reader's language where shown."""
    today = dt.datetime.fromtimestamp(now, dt.timezone.utc).date()
    recent = {d for d in days if 0 <= (today - dt.date.fromisoformat(d)).days < span}
    when = dt.datetime.fromtimestamp(last, dt.timezone.utc)
    time = when.strftime("%H:%M")
    at = (Text(N_("{time} UTC"), time=time) if when.date() == today else
          Text(N_("{month} {day} {time} UTC"), month=Text(_MONTHS[when.month - 1]), day=when.strftime("%d"),
               time=time))
    return Text(N_("{count} of the last {span} days, last at {at}"), count=len(recent), span=span, at=at)


def _lc(f: Finding) -> dict[str, Any]:
    raw = f.evidence.get("lifecycle")
    return dict(raw) if isinstance(raw, Mapping) else {}


def _quiet(life: KindLife, cov: Coverage, hours: float, t: Thresholds) -> tuple[bool, str]:
    """Whether ``cov`` (data after the last evidence) makes a quiet (clean) period of ``hours``; and why not."""
    need_h = hours * t.quiet_data_frac
    if cov.hours < need_h:
        return False, Text(N_("{hours:.0f} of {need:.0f} h of data since"), hours=cov.hours, need=need_h)
    if life.load and cov.busy_minutes < t.quiet_busy_minutes:
        return False, Text(N_("{minutes:.0f} of {need} busy minutes since"), minutes=cov.busy_minutes,
                           need=t.quiet_busy_minutes)
    if life.load:
        return True, Text(N_("{quiet:.0f} h without it, {hours:.0f} h of data, {minutes:.0f} busy min"), quiet=hours,
                          hours=cov.hours, minutes=cov.busy_minutes)
    return True, Text(N_("{quiet:.0f} h without it, {hours:.0f} h of data"), quiet=hours, hours=cov.hours)


CoverageFn = Callable[[Finding, float], Coverage]
"""coverage(finding, after_ts): the data of the finding's subject after ``after_ts`` (up to now)."""


def judge(
    fresh: Sequence[Finding],
    ledger: Mapping[str, LedgerEntry],
    resolutions: Mapping[str, Resolution],
    coverage: CoverageFn,
    now: float,
    thresholds: Thresholds | None = None,
) -> list[Finding]:
    """Merge this evaluation (``fresh``) with the stored ledger, applying each kind's lifecycle.

    Args:
        fresh: the engine's findings over its window (their ``state`` is the
            rules' own view; it counts for ``state`` and ``notice`` kinds only).
        ledger: key -> what earlier passes stored (open or resolved).
        resolutions: key -> the operator's latest resolution (at or before ``now``).
        coverage: see :data:`CoverageFn`.
        now: the time judged.

    Returns:
        One finding per key of ``fresh`` or of the ledger (resolved ledger
        entries only when resolved at or after ``now - DAYS_KEPT days``),
        ``evidence["lifecycle"]`` holding ``class``, ``days`` (UTC days with
        evidence), ``recurrence``, and ``resolved`` (``by``: "operator" or
        "quiet"; why) or ``recurs_after`` (the resolution it came back after).
    """
    t = thresholds or Thresholds()
    out: list[Finding] = []
    by_key = {f.key: f for f in fresh}
    keys = list(by_key) + [k for k in ledger if k not in by_key]
    for key in keys:
        f = by_key.get(key)
        entry = ledger.get(key)
        judged = _judge_one(f, entry, resolutions.get(key), coverage, now, t)
        if judged is not None:
            out.append(judged)
    return out


def _judge_one(f: Finding | None, entry: LedgerEntry | None, res: Resolution | None, coverage: CoverageFn,
               now: float, t: Thresholds) -> Finding | None:
    stored = entry.finding if entry is not None else None
    if stored is not None and stored.first_seen > now:
        stored, entry = None, None  # stored after the moment judged (a report --now in the past)
    if f is None and stored is None:
        return None
    kind = (f or stored).kind  # type: ignore[union-attr]
    life = life_of(kind)
    res = res if res is not None and res.at <= now else None
    cutoff = res.at if res is not None else float("-inf")
    # Was the stored entry still open at `now`? (resolved later than now: open then)
    stored_open = stored is not None and (entry.resolved_at is None or entry.resolved_at > now)  # type: ignore[union-attr]
    if stored is not None and res is not None and stored.last_seen <= cutoff:
        stored_open = False
    prev = _lc(stored) if stored is not None else {}
    days = set(prev.get("days") or ())
    # Evidence counts only when it is newer than the last resolution, the operator's or the data's.
    if stored is not None and not stored_open and entry is not None and entry.resolved_at is not None:
        cutoff = max(cutoff, min(entry.resolved_at, now))
    fresh_after = f is not None and f.last_seen > cutoff
    base: Finding
    recurs_after: dict[str, Any] | None = None
    previous: dict[str, Any] | None = prev.get("previous") if isinstance(prev.get("previous"), Mapping) else None
    if f is not None and fresh_after:
        base = f
        first = f.first_seen if f.first_seen > cutoff else max(f.first_seen, cutoff)
        if stored is not None and stored_open and stored.first_seen < first:
            first = stored.first_seen  # the same episode began before this window: the true onset
            if stored.rank > f.rank and life.cls != "state":  # the episode's worst stays until it resolves
                base = replace(stored, evidence={**f.evidence, **{k: v for k, v in stored.evidence.items()
                                                                  if k != "lifecycle"}})
        elif stored is not None and not stored_open:
            # It came back after it was resolved: a recurrence, linked to the earlier episode. The
            # window may hold both episodes; the new one began after the earlier one was resolved
            # (``first`` is already no earlier than the resolution).
            previous = {"first_seen": stored.first_seen, "last_seen": stored.last_seen,
                        "resolved_at": entry.resolved_at if entry else None,
                        "resolved": prev.get("resolved")}
            if res is not None:
                recurs_after = res.to_dict()
        elif stored is None and res is not None:
            recurs_after = res.to_dict()
        if recurs_after is None and isinstance(prev.get("recurs_after"), Mapping) and stored_open:
            recurs_after = dict(prev["recurs_after"])
        last = max(f.last_seen, stored.last_seen if stored is not None and stored_open else f.last_seen)
        base = replace(base, first_seen=first, last_seen=last)
        for ts in (f.first_seen if f.first_seen > cutoff else None, f.last_seen):
            if ts is not None:
                days.add(_day(ts))
    elif f is not None and stored is None:
        # Every bit of this evidence predates the operator's resolution.
        base = f
        return _resolved(base, days, {"by": "operator", "resolution": res.to_dict() if res else None,
                                      "at": res.at if res else None}, now)
    else:
        assert stored is not None  # the evidence predates the stored entry's resolution, or there is none
        base = stored
        if not stored_open:
            if entry is not None and entry.resolved_at is not None and entry.resolved_at < now - DAYS_KEPT * 86400:
                return None
            earlier: dict[str, Any] = dict(prev["resolved"]) if isinstance(prev.get("resolved"), Mapping) else (
                {"by": "operator", "resolution": res.to_dict()} if res is not None else {"by": "data"})
            if entry is not None and entry.resolved_at is not None:
                earlier.setdefault("at", entry.resolved_at)
            return _resolved(stored, days, earlier, now)
    # Open or resolved by the kind's lifecycle.
    state, why = _state(life, base, f if fresh_after else None, coverage, now, t)
    lc: dict[str, Any] = {"class": life.cls, "days": sorted(days)[-DAYS_KEPT:]}
    if recurs_after is not None:
        lc["recurs_after"] = recurs_after
    if previous is not None:
        lc["previous"] = previous
    if life.cls in ("recurring", "event") and len(days) >= 2:
        lc["recurrence"] = recurrence_text(days, base.last_seen, now)
    if state == "open" and why:
        lc["open_because"] = why
    if state == "resolved":
        lc["resolved"] = {"by": "data", "why": why, "at": now}
    summary = _base_summary(base)
    lc["base_summary"] = summary
    if lc.get("recurrence") and life.cls == "recurring":
        summary = Text(N_("{summary} ({recurrence})"), summary=summary, recurrence=lc["recurrence"])
    if recurs_after is not None:
        reason = str(recurs_after.get("reason") or "")
        summary = Text(N_("{summary} [back after it was resolved: {reason}]"), summary=summary,
                       reason=reason_words(reason))
    return replace(base, state=state, summary=summary, evidence={**_plain(base.evidence), "lifecycle": lc})


def _plain(evidence: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in evidence.items() if k != "lifecycle"}


def _base_summary(f: Finding) -> str:
    """The rule's own summary, without what the lifecycle added to it (a stored finding carries both)."""
    base = _lc(f).get("base_summary")
    return base if isinstance(base, str) and base else f.summary  # as made (an i18n.Text stays one)


def _resolved(f: Finding, days: set[str], why: Mapping[str, Any] | None, now: float) -> Finding:
    lc = {"class": life_of(f.kind).cls, "days": sorted(days)[-DAYS_KEPT:], "resolved": dict(why or {}),
          "base_summary": _base_summary(f)}
    return replace(f, state="resolved", evidence={**_plain(f.evidence), "lifecycle": lc})


def _state(life: KindLife, f: Finding, fresh: Finding | None, coverage: CoverageFn, now: float,
           t: Thresholds) -> tuple[str, str]:
    """(state, why) of an episode whose latest evidence is ``f.last_seen``; ``fresh``: this evaluation saw it."""
    recent = f.last_seen >= now - t.resolve_after_minutes * 60.0
    if life.cls == "notice":
        if fresh is not None:
            return fresh.state, ""
        return ("open" if f.last_seen >= now - t.event_resolve_hours * 3600.0 else "resolved"), Text(
            N_("notice expired"))
    if life.cls == "state":
        if fresh is not None and fresh.is_open:
            return "open", ""
        cov = coverage(f, f.last_seen)
        # Gone only when data newer than the last evidence shows it gone (a rule's "resolved" on fresh
        # data, or a stored finding this evaluation no longer reports while the subject sends data).
        fresh_data = cov.newest is not None and cov.newest > f.last_seen and cov.newest >= now - max(
            t.stale_after_minutes, t.resolve_after_minutes) * 60.0
        if fresh_data:
            return "resolved", Text(N_("the latest data no longer shows it"))
        return "open", Text(N_("no data since to show it gone"))
    if life.cls == "event":
        if not life.clean or Severity.parse(f.severity) == Severity.CRITICAL:
            return "open", Text(N_("waits for an operator's resolution"))
        if recent:
            return "open", ""
        ok, why = _quiet(life, coverage(f, f.last_seen), t.event_clean_hours, t)
        return ("resolved", why) if ok else ("open", why)
    # recurring
    if recent:
        return "open", ""
    ok, why = _quiet(life, coverage(f, f.last_seen), t.quiet_hours, t)
    return ("resolved", why) if ok else ("open", why)


def lifecycle_markdown() -> str:
    """The lifecycle table embedded in docs/findings.md."""
    lines = ["| Kind | Class | Stays open |", "|---|---|---|"]
    for k in KINDS:
        life = life_of(k)
        lines.append(f"| `{k}` | {life.cls} | {life.how} |")
    return "\n".join(lines) + "\n"
