"""Node polls and the outages they make (the health engine's reachability input).

Kept apart from :mod:`fleetmon.health.fleet`, which re-exports these names: a node's
polls become its outages here; the storage layer's status-flip events become them in
:func:`fleetmon.health.fleet.outages_from_events`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Outage", "Poll", "as_poll", "outages_from_polls"]


@dataclass(frozen=True, slots=True)
class Poll:
    """One poll of a node's agent: ``ts`` (Unix s), ``ok``, ``error`` (one line)."""

    ts: float
    ok: bool
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Outage:
    """A stretch of failed polls: from the first failed poll to the first good one.

    ``end`` is None while the outage lasts. ``failed`` is the number of failed
    polls in it.
    """

    start: float
    end: float | None
    error: str | None = None
    failed: int = 1

    def duration_s(self, now: float) -> float:
        return (self.end if self.end is not None else now) - self.start


def outages_from_polls(polls: Iterable[Poll | Mapping[str, Any] | Sequence[Any]]) -> tuple[Outage, ...]:
    """Turn a node's polls (any order) into its outages, oldest first."""
    items = sorted((as_poll(p) for p in polls), key=lambda p: p.ts)
    out: list[Outage] = []
    start: float | None = None
    error: str | None = None
    failed = 0
    for p in items:
        if not p.ok:
            if start is None:
                start, error, failed = p.ts, p.error, 0
            failed += 1
        elif start is not None:
            out.append(Outage(start, p.ts, error, failed))
            start = None
    if start is not None:
        out.append(Outage(start, None, error, failed))
    return tuple(out)


def as_poll(p: Poll | Mapping[str, Any] | Sequence[Any]) -> Poll:
    """A poll from a Poll, a mapping (``ts``, ``ok``, ``error``) or a tuple ``(ts, ok[, error])``."""
    if isinstance(p, Poll):
        return p
    if isinstance(p, Mapping):
        return Poll(float(p["ts"]), bool(p.get("ok")), p.get("error"))
    ts, ok, *rest = p
    return Poll(float(ts), bool(ok), rest[0] if rest else None)
