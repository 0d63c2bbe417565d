"""Display strings for the UI: pure functions, testable without Qt."""

from __future__ import annotations

import time
from typing import Any

from collections.abc import Sequence

from fleetmon.health.findings import worst_order
from fleetmon.vocab import GpuState, Severity
from fleetmon.vocab import severity_rank as vocab_severity_rank

DASH = "—"


def number(value: Any, unit: str = "", digits: int = 0) -> str:
    """Format a number with a unit; None becomes a dash."""
    if value is None:
        return DASH
    try:
        v = float(value)
    except (TypeError, ValueError):
        return DASH
    text = f"{v:.{digits}f}"
    return f"{text} {unit}".strip() if unit not in ("%", "°C") else f"{text}{unit if unit == '%' else ' °C'}"


def power(draw: Any, limit: Any) -> str:
    """"245 / 350 W"; dashes for what is missing."""
    if draw is None and limit is None:
        return DASH
    d = DASH if draw is None else f"{float(draw):.0f}"
    lim = DASH if limit is None else f"{float(limit):.0f}"
    return f"{d} / {lim} W"


def age(ts: Any, now: float | None = None) -> str:
    """How long ago a Unix time was: "4 s", "3 min", "2 h", "5 d"; dash for None."""
    if ts is None:
        return DASH
    now = time.time() if now is None else now
    s = max(0.0, now - float(ts))
    if s < 90:
        return f"{s:.0f} s ago"
    if s < 90 * 60:
        return f"{s / 60:.0f} min ago"
    if s < 36 * 3600:
        return f"{s / 3600:.0f} h ago"
    return f"{s / 86400:.0f} d ago"


def gpu_status(node_status: str | None, gpu_state: str | None, latest_ts: Any, now: float | None = None,
               stale_after_s: float = 120.0) -> str:
    """One word for the status column: ok, lost, unreachable, stale, unknown."""
    now = time.time() if now is None else now
    if node_status == "unreachable":
        return "unreachable"
    if gpu_state == GpuState.LOST:
        return "lost"
    if latest_ts is None:
        return "unknown"
    if now - float(latest_ts) > stale_after_s:
        return "stale"
    return "ok"


STATUS_COLORS = {
    "ok": "#2e7d32",
    "lost": "#c62828",
    "unreachable": "#c62828",
    "stale": "#ef6c00",
    "unknown": "#757575",
}


SEVERITY_COLORS: dict[str, str] = {Severity.CRITICAL: "#c62828", Severity.WARNING: "#ef6c00", Severity.INFO: "#1565c0"}
"""Keyed by :class:`fleetmon.vocab.Severity` (whose members are their strings, so ``.get("critical")`` works)."""


def severity_rank(severity: Any) -> int:
    """Order of a severity (:attr:`fleetmon.vocab.Severity.rank`); 0 for None or "" (no finding)."""
    return vocab_severity_rank(severity)


def health(findings: Sequence[tuple[str, str]] | Sequence[tuple[str, str, float | None]],
           status: str | None = None) -> str:
    """One cell for a GPU's open findings, e.g. "critical: ecc-uncorrectable (+2)".

    The worst finding leads, by the report's fixed order
    (:func:`fleetmon.health.findings.worst_order`: severity, kind priority,
    then the earlier onset when a third element gives it), so the same
    faults always give the same label. With no findings the cell says "pass"
    only on evidence: "unreachable" or "unknown" (see :func:`gpu_status`)
    when the node does not answer or nothing was ever read.
    """
    if status in ("unreachable", "unknown"):
        return status + (f" (+{len(findings)})" if findings else "")
    if not findings:
        return "pass"
    worst = min(findings, key=lambda f: worst_order(str(f[0]), str(f[1]), f[2] if len(f) > 2 else None))
    more = f" (+{len(findings) - 1})" if len(findings) > 1 else ""
    return f"{worst[0]}: {worst[1]}{more}"
