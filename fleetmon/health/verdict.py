"""One verdict for a node (and a GPU), computed here for every surface.

The report's status and exit status, its JSON and HTML, the GUI's fleet tree,
All GPUs table, Findings counts, inspection checklist and tray, and the
export's health column all call these functions, so that a node never reads
PASS on one surface and FAIL on another.

Worst first (:data:`VERDICTS`):

* ``fail`` — an open critical finding (other than ``node-unreachable``, which
  is what ``unreachable`` says); a failed node stays failed when it goes silent.
* ``unreachable`` — the node answered before, but its latest poll failed, its
  last outage is still open, or a ``node-unreachable`` finding is open.
* ``stale`` — nobody has heard from the node for longer than
  ``stale_after_minutes``: its newest good poll is old (no collector ran, or
  it stopped polling). Missing data is not health.
* ``unknown`` — the node was never reached.
* ``warn`` — an open warning.
* ``pass`` — fresh data and no open warning or critical finding.
"""

from __future__ import annotations

from collections.abc import Iterable

from fleetmon.vocab import Severity

__all__ = ["SILENT", "VERDICTS", "combine", "reach_of", "verdict_rank", "worst_verdict"]

VERDICTS: tuple[str, ...] = ("fail", "unreachable", "stale", "unknown", "warn", "pass")
"""Node verdicts, worst first (see the module doc)."""

SILENT: frozenset[str] = frozenset({"unreachable", "stale", "unknown"})
"""Verdicts of a node nobody hears from now: each is critical for a report's exit status."""

_RANK = {v: i for i, v in enumerate(VERDICTS)}


def verdict_rank(verdict: str) -> int:
    """0 for the worst verdict; an unknown word sorts after "unknown" and before "warn"."""
    return _RANK.get(verdict, _RANK["unknown"])


def worst_verdict(verdicts: Iterable[str]) -> str:
    """The worst of ``verdicts`` ("pass" for none)."""
    return min(verdicts, key=verdict_rank, default="pass")


def reach_of(*, last_ok: float | None, last_attempt: float | None = None, outage_open: bool = False,
             now: float, stale_after_s: float) -> str | None:
    """Whether a node answers now: None (it does), "unknown", "unreachable" or "stale".

    Args:
        last_ok: its newest good poll (None: never).
        last_attempt: its newest poll attempt.
        outage_open: its last outage has not ended.
        now: the time judged (a report's ``--now``).
        stale_after_s: the age of the newest good poll beyond which it is stale.
    """
    if last_ok is None:
        return "unknown"
    if (last_attempt is not None and last_attempt > last_ok) or outage_open:
        return "unreachable"
    if now - float(last_ok) > stale_after_s:
        return "stale"
    return None


def combine(open_findings: Iterable[tuple[str, str]], reach: str | None) -> str:
    """A verdict from the open findings (``(severity, kind)`` pairs) of a node or GPU and its reachability.

    Info findings never change a verdict. An open critical finding makes
    ``fail`` whatever the reachability; then a node that does not answer now
    reads its reachability (an open ``node-unreachable`` finding counts as
    "unreachable"); then ``warn`` for an open warning, else ``pass``.
    """
    critical = warning = down = False
    for severity, kind in open_findings:
        try:
            sev = Severity.parse(severity)
        except ValueError:  # a severity this build does not know (a newer database): judged as a warning
            sev = Severity.WARNING
        if kind == "node-unreachable":
            down = True
            continue
        if sev == Severity.CRITICAL:
            critical = True
        elif sev == Severity.WARNING:
            warning = True
    if critical:
        return "fail"
    if reach is not None:
        return reach
    if down:
        return "unreachable"
    return "warn" if warning else "pass"
