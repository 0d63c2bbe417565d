"""Display strings for the UI: pure functions, testable without a window.

Their words are marked for Qt's translation (``QCoreApplication.translate`` with the "Format" and "Status"
contexts: docs/i18n.md); the reader thread calls some of them, which ``translate`` allows.
"""

from __future__ import annotations

import re
import time
from typing import Any

from collections.abc import Sequence

from PySide6.QtCore import QCoreApplication

from fleetmon.health.findings import worst_order
from fleetmon.health.verdict import SILENT, combine
from fleetmon.i18n import Text, listing, localized
from fleetmon.vocab import GpuState, Severity
from fleetmon.vocab import severity_rank as vocab_severity_rank
from ui.i18n import QT_TRANSLATE_NOOP, verdict_word
from ui.verdicts import STALE_AFTER_S

DASH = "—"


def joined(items: Sequence[str], semicolons: bool = False) -> str:
    """``items`` as the reader's language joins a list: "a, b" / "a; b" in English, "a、b" / "a；b" in Chinese
    (the core's :func:`fleetmon.i18n.listing`, so app and report join alike)."""
    return localized(listing(list(items), semicolons))


def noun(count: int, word: str, words: str | None = None) -> str:
    """The word for ``count`` of it: "node" for 1, "nodes" otherwise (``words`` for an irregular plural)."""
    return word if count == 1 else (words or word + "s")


def plural(count: int, word: str, words: str | None = None) -> str:
    """"1 node", "3 nodes", "0 nodes" (as the CLI reports say them, ``fleetmon.health.render``)."""
    return f"{count} {noun(count, word, words)}"


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


def field(f: Any, values: Any, enforced_w: Any = None) -> str:
    """A GPU's reading of one field column (a :data:`fleetmon.fields` field): power as draw of
    its limit (the sampled limit, else the enforced one), every other field as a number."""
    if f.ui is not None and f.ui.format == "power":
        return power(values.get(f.name), values.get("power_limit_w") or enforced_w)
    return number(values.get(f.name), f.unit)


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
        return QCoreApplication.translate("Format", "{n} s ago").format(n=f"{s:.0f}")
    if s < 90 * 60:
        return QCoreApplication.translate("Format", "{n} min ago").format(n=f"{s / 60:.0f}")
    if s < 36 * 3600:
        return QCoreApplication.translate("Format", "{n} h ago").format(n=f"{s / 3600:.0f}")
    return QCoreApplication.translate("Format", "{n} d ago").format(n=f"{s / 86400:.0f}")


def gpu_status(node_status: str | None, gpu_state: str | None, latest_ts: Any, now: float | None = None,
               stale_after_s: float = STALE_AFTER_S) -> str:
    """One word for the status column from a row alone: ok, lost, unreachable, stale, unknown.

    The GUI's surfaces read the snapshot's judged status instead (:class:`ui.verdicts.Verdicts`,
    which also knows the node's newest good poll); this is the same rule for a lone row.
    """
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


_BASIS_WORDS = (QT_TRANSLATE_NOOP("Evidence", "majority"), QT_TRANSLATE_NOOP("Evidence", "expected"))
"""A version finding's basis (fleetmon/health/rules/versions.py): the group's majority, or the version declared."""

_STATUS_WORDS = {w: w for w in (QT_TRANSLATE_NOOP("Status", "ok"), QT_TRANSLATE_NOOP("Status", "lost"),
                                 QT_TRANSLATE_NOOP("Status", "unreachable"), QT_TRANSLATE_NOOP("Status", "stale"),
                                 QT_TRANSLATE_NOOP("Status", "unknown"))}


def status_word(status: str) -> str:
    """A GPU/node status (:func:`gpu_status`) as the window says it; the status itself stays English (filters,
    colours, sorting). "lost" (掉卡), "unreachable" and "unknown" stay distinct words, and none reads as 0."""
    return QCoreApplication.translate("Status", _STATUS_WORDS[status]) if status in _STATUS_WORDS else status


def status_text(status: str, error: str | None = None) -> str:
    """The Status cell: the word, with an unreachable node's error ("unreachable: connection refused")."""
    if status == "unreachable" and error:
        return QCoreApplication.translate("Status", "unreachable: {error}").format(error=node_error(error))
    return status_word(status)


def node_error(error: str) -> str:
    """A node's reason for a failed poll as the reader reads it: said in the app's language when it was stored
    with how it was made (an ``i18n.Text``, m018), else as stored (English)."""
    return localized(error) if isinstance(error, Text) else error


STATUS_COLORS = {
    "ok": "#2e7d32",
    "lost": "#c62828",
    "unreachable": "#c62828",
    "stale": "#ef6c00",
    "unknown": "#757575",
}

VERDICT_COLORS: dict[str, str] = {"fail": "#c62828", "unreachable": "#c62828", "stale": "#ef6c00",
                                  "unknown": "#757575", "warn": "#ef6c00", "pass": "#2e7d32"}
"""A colour per verdict (:data:`fleetmon.health.verdict.VERDICTS`), for every surface."""


SEVERITY_COLORS: dict[str, str] = {Severity.CRITICAL: "#c62828", Severity.WARNING: "#ef6c00", Severity.INFO: "#1565c0"}
"""Keyed by :class:`fleetmon.vocab.Severity` (whose members are their strings, so ``.get("critical")`` works)."""


def severity_rank(severity: Any) -> int:
    """Order of a severity (:attr:`fleetmon.vocab.Severity.rank`); 0 for None or "" (no finding)."""
    return vocab_severity_rank(severity)


def span(seconds: Any) -> str:
    """A duration: "45 s", "12 min", "6.0 h", "3.2 d"; dash for None."""
    if seconds is None:
        return DASH
    s = max(0.0, float(seconds))
    if s < 90:
        return QCoreApplication.translate("Format", "{n} s").format(n=f"{s:.0f}")
    if s < 90 * 60:
        return QCoreApplication.translate("Format", "{n} min").format(n=f"{s / 60:.0f}")
    if s < 48 * 3600:
        return QCoreApplication.translate("Format", "{n} h").format(n=f"{s / 3600:.1f}")
    return QCoreApplication.translate("Format", "{n} d").format(n=f"{s / 86400:.1f}")


def verdict_label(verdict: str, findings: Sequence[tuple[str, str]] | Sequence[tuple[str, str, float | None]] = (),
                  age_s: float | None = None) -> str:
    """One health cell: the verdict word first, e.g. "fail: ecc-uncorrectable (+2)", "stale 6.0 h (+1)".

    ``verdict`` comes from :func:`fleetmon.health.verdict.combine` (never recomputed here). For
    fail and warn the worst finding of that severity is named, by the report's fixed order
    (:func:`fleetmon.health.findings.worst_order`: severity, kind priority, then the earlier onset
    when a third element gives it), so the same faults always give the same label; a silent node
    or GPU says how old its data is (``age_s``, for stale) and how many open findings it has.
    """
    n = len(findings)
    if verdict in ("fail", "warn"):
        want = Severity.CRITICAL if verdict == "fail" else Severity.WARNING
        named = [f for f in findings if str(f[0]) == want and str(f[1]) != "node-unreachable"] or list(findings)
        if named:
            worst = min(named, key=lambda f: worst_order(str(f[0]), str(f[1]), f[2] if len(f) > 2 else None))
            # The finding's kind stays as it is (an identifier users search for); the verdict word is translated.
            if n > 1:
                return QCoreApplication.translate("Format", "{verdict}: {kind} (+{more})").format(
                    verdict=verdict_word(verdict), kind=worst[1], more=n - 1)
            return QCoreApplication.translate("Format", "{verdict}: {kind}").format(
                verdict=verdict_word(verdict), kind=worst[1])
        return verdict_word(verdict)
    if verdict == "pass":
        return verdict_word("pass")
    head = (QCoreApplication.translate("Format", "{verdict} {age}").format(verdict=verdict_word(verdict),
                                                                           age=span(age_s))
            if verdict == "stale" and age_s is not None else verdict_word(verdict))
    return QCoreApplication.translate("Format", "{label} (+{count})").format(label=head, count=n) if n else head


def health(findings: Sequence[tuple[str, str]] | Sequence[tuple[str, str, float | None]],
           status: str | None = None, age_s: float | None = None) -> str:
    """One cell for a GPU's open findings and its status (see :func:`gpu_status`), e.g. "fail: xid (+2)".

    The verdict is :func:`fleetmon.health.verdict.combine` of the findings and, for a status of a
    silent node or GPU ("unreachable", "stale", "unknown"), that status: "pass" only on evidence.
    The label is :func:`verdict_label`'s.
    """
    reach = status if status in SILENT else None
    return verdict_label(combine([(str(f[0]), str(f[1])) for f in findings], reach), findings, age_s)


# -- fleet view cells ------------------------------------------------------------------

STATUS_SEVERITY: dict[str, str] = {"unreachable": Severity.CRITICAL, "lost": Severity.CRITICAL,
                                   "stale": Severity.WARNING}
"""A GPU status that counts as a finding of this severity when ranking worst first."""


def temperature_severity(temp_c: Any, inventory: Any = None) -> str:
    """"critical", "warning" or "" for a GPU temperature, by the card's own limits where known.

    The limits are those of the temperature rule (fleetmon.health.rules.thermal): the
    card's slowdown (shutdown) temperature minus the margin, else the default
    warning (critical) temperature of :class:`fleetmon.health.thresholds.Thresholds`.
    """
    from fleetmon.health.thresholds import Thresholds

    if temp_c is None:
        return ""
    try:
        temp = float(temp_c)
    except (TypeError, ValueError):
        return ""
    t = Thresholds()
    inv = inventory if isinstance(inventory, dict) else dict(inventory or {})
    slowdown, shutdown = inv.get("temp_slowdown_c"), inv.get("temp_shutdown_c")
    warning = float(slowdown) - t.temperature_margin_c if slowdown else t.temperature_warning_c
    critical = float(shutdown) - t.temperature_margin_c if shutdown else t.temperature_critical_c
    if temp >= critical:
        return Severity.CRITICAL
    if temp >= warning:
        return Severity.WARNING
    return ""


def worst(severities: Any) -> str:
    """The most severe of some severities ("" when none)."""
    best = ""
    for s in severities:
        if s and severity_rank(s) > severity_rank(best):
            best = str(s)
    return best


def _num(v: Any, unit: str = "", digits: int = 0) -> str:
    return number(v, unit, digits) if v is not None else DASH


def evidence_text(kind: str | None, evidence: Any) -> str:
    """One line of a finding's evidence: its values against their limits, e.g. "97 °C, limit 90 °C".

    Keys are those the rules store (fleetmon/health/rules/*.py); a kind this
    does not know falls back to the rule's summary, then to key=value pairs.
    """
    e = dict(evidence) if isinstance(evidence, dict) else {}
    g = e.get
    text = ""
    # Each variant is one whole template (a translation may reorder it); kinds, Xid codes and names, NVML reason
    # names and versions stay as they are. Context "Evidence" (docs/i18n.md).
    if kind == "temperature-high":
        values = {"temp": _num(g("max_temp_c"), "°C"), "limit": _num(g("limit_c"), "°C"),
                  "critical": _num(g("critical_c"), "°C"), "minutes": g("minutes")}
        critical, minutes = g("critical_c") is not None, g("minutes") is not None
        if critical and minutes:
            text = QCoreApplication.translate("Evidence",
                                              "{temp}, limit {limit} (critical {critical}) for {minutes} min")
        elif critical:
            text = QCoreApplication.translate("Evidence", "{temp}, limit {limit} (critical {critical})")
        elif minutes:
            text = QCoreApplication.translate("Evidence", "{temp}, limit {limit} for {minutes} min")
        else:
            text = QCoreApplication.translate("Evidence", "{temp}, limit {limit}")
        text = text.format(**values)
    elif kind == "thermal-throttle":
        values = {"minutes": g("minutes"), "reasons": ", ".join(map(str, g("reasons") or [])),
                  "peak": _num(g("max_temp_c"), "°C"), "slowdown": _num(g("slowdown_c"), "°C")}
        if g("max_temp_c") is not None and g("slowdown_c"):
            text = QCoreApplication.translate(
                "Evidence", "thermal slowdown {minutes} min ({reasons}), peak {peak}, slowdown {slowdown}")
        elif g("max_temp_c") is not None:
            text = QCoreApplication.translate("Evidence", "thermal slowdown {minutes} min ({reasons}), peak {peak}")
        else:
            text = QCoreApplication.translate("Evidence", "thermal slowdown {minutes} min ({reasons})")
        text = text.format(**values)
    elif kind == "fan-stopped":
        text = QCoreApplication.translate("Evidence", "fan 0 % at {temp} for {minutes} min").format(
            temp=_num(g("max_temp_c"), "°C"), minutes=g("minutes"))
    elif kind == "ecc-uncorrectable":
        text = QCoreApplication.translate(
            "Evidence", "{new} new uncorrectable, volatile {volatile}, aggregate {aggregate}, limit 0").format(
            new=g("new"), volatile=g("volatile"), aggregate=g("aggregate"))
    elif kind == "ecc-correctable-storm" and g("rate_per_min") is not None:
        text = QCoreApplication.translate("Evidence", "{rate} corrected/min, limit {limit}/min (total {total})").format(
            rate=g("rate_per_min"), limit=g("threshold_per_min"), total=g("total"))
    elif kind == "retired-pages":
        values = {"total": g("total"), "sbe": g("sbe"), "dbe": g("dbe"), "limit": g("limit")}
        limit, pending = g("limit") is not None, bool(g("pending"))
        if limit and pending:
            text = QCoreApplication.translate(
                "Evidence", "{total} retired pages (SBE {sbe}, DBE {dbe}), limit {limit}, retirement pending "
                "(reset needed)")
        elif limit:
            text = QCoreApplication.translate("Evidence", "{total} retired pages (SBE {sbe}, DBE {dbe}), limit {limit}")
        elif pending:
            text = QCoreApplication.translate(
                "Evidence", "{total} retired pages (SBE {sbe}, DBE {dbe}), retirement pending (reset needed)")
        else:
            text = QCoreApplication.translate("Evidence", "{total} retired pages (SBE {sbe}, DBE {dbe})")
        text = text.format(**values)
    elif kind == "row-remap":
        if g("failure"):
            text = QCoreApplication.translate(
                "Evidence", "remap failed (no spare rows), rows: {correctable} correctable, {uncorrectable} "
                "uncorrectable")
        else:
            text = QCoreApplication.translate(
                "Evidence", "remap pending (reset needed), rows: {correctable} correctable, {uncorrectable} "
                "uncorrectable")
        text = text.format(correctable=g("correctable_rows"), uncorrectable=g("uncorrectable_rows"))
    elif kind == "pcie-link-degraded":
        ratio = g("bandwidth_ratio")
        values = {"gen": g("gen"), "width": g("width"), "max_gen": g("max_gen"), "max_width": g("max_width")}
        if isinstance(ratio, (int, float)):
            text = QCoreApplication.translate(
                "Evidence", "Gen{gen} x{width}, max Gen{max_gen} x{max_width} ({ratio} of the bandwidth)").format(
                ratio=f"{float(ratio):.0%}", **values)
        else:
            text = QCoreApplication.translate("Evidence", "Gen{gen} x{width}, max Gen{max_gen} x{max_width}").format(
                **values)
    elif kind == "pcie-replay":
        text = QCoreApplication.translate("Evidence", "{rate} replays/min, limit {limit}/min (total {total})").format(
            rate=g("max_per_min"), limit=g("threshold_per_min"), total=g("total"))
    elif kind == "power-brake":
        values = {"minutes": g("minutes"), "window": g("window_min"), "temp": _num(g("max_temp_c"), "°C"),
                  "slowdown": _num(g("slowdown_c"), "°C")}
        if g("max_temp_c") is not None:
            text = QCoreApplication.translate(
                "Evidence", "power brake {minutes} min in {window} min, {temp} (slowdown {slowdown})")
        else:
            text = QCoreApplication.translate("Evidence", "power brake {minutes} min in {window} min")
        text = text.format(**values)
    elif kind == "power-instability":
        text = QCoreApplication.translate("Evidence", "{min} to {max} at ≥{util} % load, {minutes} min").format(
            min=_num(g("min_w"), "W"), max=_num(g("max_w"), "W"), util=g("util_min_pct"), minutes=g("minutes"))
    elif kind == "derating" and g("value") is not None:
        values = {"value": _num(g("value"), "MHz"), "limit": _num(g("limit_mhz"), "MHz"), "nominal": g("nominal")}
        if g("nominal") and g("spec_origin") == "user":
            text = QCoreApplication.translate(
                "Evidence", "SM clock {value} under load, limit {limit} (nominal boost {nominal} MHz, user spec)")
        elif g("nominal"):
            text = QCoreApplication.translate(
                "Evidence", "SM clock {value} under load, limit {limit} (nominal boost {nominal} MHz)")
        else:
            text = QCoreApplication.translate("Evidence", "SM clock {value} under load, limit {limit}")
        text = text.format(**values)
        if g("explained_by"):
            text = QCoreApplication.translate("Evidence", "{evidence}, {explained_by}").format(
                evidence=text, explained_by=g("explained_by"))
    elif kind == "gpu-lost":
        text = QCoreApplication.translate("Evidence", "lost {minutes} min ({lost} lost, {back} back)").format(
            minutes=g("lost_minutes"), lost=g("lost_events"), back=g("back_events"))
    elif kind == "node-unreachable":
        values = {"minutes": g("minutes"), "polls": g("failed_polls"), "error": localized(g("error"))}
        if g("error"):
            text = QCoreApplication.translate("Evidence", "unreachable {minutes} min, {polls} failed polls: {error}")
        else:
            text = QCoreApplication.translate("Evidence", "unreachable {minutes} min, {polls} failed polls")
        text = text.format(**values)
    elif kind == "driver-mismatch":
        expected = g("expected") or QCoreApplication.translate("Evidence", "(no majority)")
        if g("field") == "cuda":
            text = QCoreApplication.translate("Evidence", "CUDA driver {version}, expected {expected} ({basis})")
        else:
            text = QCoreApplication.translate("Evidence", "driver {version}, expected {expected} ({basis})")
        basis = g("basis")  # the core's word for where the expected version comes from, said in the language
        text = text.format(version=g("version"), expected=expected,
                           basis=QCoreApplication.translate("Evidence", basis) if basis in _BASIS_WORDS else basis)
    elif kind == "vbios-mismatch":
        text = QCoreApplication.translate("Evidence", "VBIOS {vbios}, expected {expected}").format(
            vbios=g("vbios"), expected=g("expected") or QCoreApplication.translate("Evidence", "(no majority)"))
    elif kind == "xid" and g("code") is not None:
        text = f"Xid {g('code')} {g('name') or ''} ×{g('count')}".replace("  ", " ")
        escalation = g("escalation")
        if escalation and isinstance(escalation, list):
            # the fixed reasons are marked in the core (rules/xid.py): said in the reader's language
            text += f" ({'; '.join(localized(str(r)) for r in escalation)})"
    elif kind == "inventory-change":
        text = f"{g('change')}: {g('before')} → {g('after')}"
    if "None" in text or not text:
        summary = g("summary")
        if summary:
            # said in the reader's language when stored with how it was made (m017); "n1 gpu0: " (or "：") goes
            said = localized(summary) if isinstance(summary, str) else str(summary)
            return re.split(r": |：", said, maxsplit=1)[-1]
        if not text:
            shown = [f"{k}={v}" for k, v in e.items() if k not in ("summary", "model") and not isinstance(v, (dict, list))]
            return ", ".join(shown[:6])
    return text


_STATUS_RANK = {"ok": 0, "unknown": 1, "stale": 2, "lost": 3, "unreachable": 4}


def status_rank(status: str | None) -> int:
    """Order of a GPU/node status for "worst first": ok < unknown < stale < lost < unreachable."""
    return _STATUS_RANK.get(status or "", 0)


def worst_status(statuses: Any) -> str:
    """The worst of some statuses ("ok" when none)."""
    return max(statuses, key=status_rank, default="ok") or "ok"


def clock(ts: Any) -> str:
    """A Unix time as local "2024-05-02 14:05"; dash for None."""
    if ts is None:
        return DASH
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(float(ts)))


def intake_word(verdict: str) -> str:
    """An intake verdict as the window says it, the core's word (PASS 通过, CONDITIONAL 有条件通过, REJECT 拒收): the
    same as the certificate's; the stored verdict stays English (colours and sorting read it)."""
    from fleetmon.intake import status_word  # imported when shown: the window opens without the intake checks

    return status_word(verdict)
