"""A card's RMA and return evidence: one zip archive of everything the store knows of one GPU.

NVIDIA's RMA process asks for the history of Xid errors and retired pages, a
seller for evidence of a fault; :func:`build_evidence` gathers it for one card
(``fleetmon evidence``, the app's *Export evidence…*) into one archive:

* ``summary.html``: a printable, self-contained page (inline CSS, the plots
  embedded) in the house style of the reports (:mod:`fleetmon.health.render`);
* raw data as CSV and JSON (``identity.json``, ``placements.csv``, ``xids.csv`` …),
  every file listed with what it holds in ``manifest.json`` and ``README.txt``;
* PNG plots of the card's life and of a window around each episode, drawn by a
  renderer the caller passes in (``ui.evidence_plots``: Qt lives only in ui/);
  without one the archive says the plots were skipped and why.

Sizes: a card's whole life is kept at hourly rollups (a year is 8,760 rows of
the telemetry columns) and daily rollups; raw minutes only around episodes
(:data:`EPISODE_MARGIN_S` either side, at most :data:`MAX_EPISODE_S` long, the
newest :data:`MAX_EPISODES` of them). Measured: a year of one card (the demo's weak-PSU
RTX 3090, four episodes) is a 576 KiB archive (2.4 MiB unpacked, most of it the 8,760
hourly rows), written in about 5 s; docs/evidence.md has the figures.

Values keep their meaning: a reading that failed or is not supported is an
empty cell with its status in the ``status`` column, never a 0.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import time
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleetmon.errors import KnownError
from fleetmon.export import _new_part_file, neutralise
from fleetmon.fields import HW_THROTTLE_REASONS
from fleetmon.health import render, render_html
from fleetmon.i18n import N_, Text, gettext, localized, when
from fleetmon.records import throttle_key
from fleetmon.text import printable

__all__ = ["EvidenceResult", "PlotPanel", "PlotRenderer", "PlotSeries", "PlotSpec", "PlotsUnavailable",
           "build_evidence", "proposed_name"]

DAY = 86400
HOUR = 3600
EPISODE_MARGIN_S = 2 * HOUR
"""Minutes (or hours, where minutes are pruned) kept before and after each episode."""
MAX_EPISODE_S = 24 * HOUR
"""An episode longer than this is shown by its first day (the rollups cover the rest)."""
MAX_EPISODES = 16
"""Episodes with a minute window and a plot of their own: the newest ones (all are listed in episodes.csv)."""

EPISODE_KINDS: frozenset[str] = frozenset({
    "thermal-throttle", "power-brake", "power-instability", "power-unreadable", "power-capped",
    "pcie-link-degraded", "pcie-replay", "xid", "gpu-lost", "ecc-uncorrectable", "ecc-correctable-storm",
    "retired-pages", "row-remap", "temperature-high", "derating",
})
"""Finding kinds whose windows get minute data and a plot (throttle, power brake and dropout, PCIe, faults)."""

TELEMETRY_KEYS: tuple[str, ...] = (
    "n", "temp_c", "mem_temp_c", "power_w", "power_limit_w", "sm_clock_mhz", "mem_clock_mhz", "util_gpu_pct",
    "pcie_gen", "pcie_width", "pcie_replay", "throttle_mask", "busy_n", "pcie_gen_busy_min",
    "pcie_width_busy_min",
) + tuple(throttle_key(r) for r in ("sw_power_cap", *HW_THROTTLE_REASONS)) + ("status",)
"""What the telemetry CSVs hold (gauges bring min/mean/max; rollups the minutes and lost counts too)."""

COUNTER_KEYS: tuple[str, ...] = ("ecc_corr_agg", "ecc_unc_agg", "ecc_corr_vol", "ecc_unc_vol", "retired_sbe",
                                 "retired_dbe", "retired_pending", "remap_corr", "remap_unc", "remap_pending",
                                 "remap_failure", "pcie_replay")
"""The memory-health counters followed over the card's life (ecc_pages.csv)."""

IDENTITY_KEYS: tuple[str, ...] = (
    "name", "serial", "board_part_number", "vbios", "pci_device_id", "pci_subsystem_id", "pci_bus_id",
    "inforom_image", "inforom_oem", "inforom_ecc", "inforom_power", "architecture", "compute_capability",
    "memory_total_mib", "power_default_w", "power_min_w", "power_max_w", "power_enforced_w", "max_sm_clock_mhz",
    "max_mem_clock_mhz", "pcie_max_gen", "pcie_max_width", "ecc_mode_current", "temp_slowdown_c",
    "temp_shutdown_c",
)


# -- plots: what to draw (the renderer lives in ui/) --------------------------------------

@dataclass(frozen=True)
class PlotSeries:
    """One line: (Unix time, value or None for a gap) points, oldest first."""

    label: str
    points: tuple[tuple[float, float | None], ...]


@dataclass(frozen=True)
class PlotPanel:
    """One chart of a plot, sharing the plot's time axis."""

    title: str
    unit: str
    series: tuple[PlotSeries, ...]


@dataclass(frozen=True)
class PlotSpec:
    """One PNG: panels over [since, until), shaded spans (the episode) and marked instants (Xids, moves)."""

    name: str
    title: str
    since: float
    until: float
    panels: tuple[PlotPanel, ...]
    shade: tuple[tuple[float, float], ...] = ()
    marks: tuple[tuple[float, str], ...] = ()


class PlotsUnavailable(Exception):
    """Raised by a renderer that cannot draw here (no Qt); the message says why."""


PlotRenderer = Callable[[Sequence[PlotSpec]], Mapping[str, bytes]]
"""Draws the specs; returns PNG bytes by spec name."""


@dataclass(frozen=True)
class EvidenceResult:
    """What :func:`build_evidence` wrote: the archive, its card and its files (name → bytes)."""

    path: str
    uuid: str
    serial: str | None
    size: int
    files: Mapping[str, int]
    plots_note: str | None = None


# -- helpers --------------------------------------------------------------------------

def _iso(ts: Any) -> str:
    if ts is None:
        return ""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(float(ts)))


def _shown(ts: Any) -> str:
    """A moment on the summary page, for people: "2026-12-03 15:30 UTC" in English (as :func:`_when`), the
    reader's locale otherwise ("2026年12月3日 15:30 UTC")."""
    return "" if ts is None else f"{when(float(ts))} UTC"


def _day(ts: Any) -> str:
    return "" if ts is None else time.strftime("%Y-%m-%d", time.gmtime(float(ts)))


def _when(ts: Any) -> str:
    return "" if ts is None else time.strftime("%Y-%m-%d %H:%M", time.gmtime(float(ts))) + " UTC"


def _cell(value: Any) -> Any:
    """A CSV cell: None empty, dicts and lists as JSON, text with control characters escaped and neutralised."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return neutralise(printable(str(value)))


def _csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> bytes:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for r in rows:
        w.writerow([_cell(v) for v in r])
    return buf.getvalue().encode("utf-8")


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False) + "\n").encode("utf-8")


def proposed_name(serial: str | None, uuid: str, today: dt.date) -> str:
    """The archive's proposed file name: ``evidence-<serial or UUID>-YYYY-MM-DD.zip`` (safe characters only)."""
    ident = (serial or "").strip() or uuid
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in ident)[:64]
    return f"evidence-{safe}-{today.isoformat()}.zip"


def _intake_certificate(db: Any, uuid: str) -> str | None:
    """The card's newest intake certificate (``fleetmon intake``) as a self-contained HTML page, or None
    when it was never checked (the archive then says no intake certificate was recorded)."""
    from fleetmon.intake import IntakeResult, certificate_html
    from storage.intake import intakes

    for row in intakes(db, uuid, limit=10):  # newest first; a damaged row's result is empty: try the next
        try:
            return certificate_html(IntakeResult.from_dict(row.result))
        except (KeyError, TypeError, ValueError):
            continue
    return None


def _episodes(f: Any) -> list[tuple[float, float]]:
    """The finding's episodes (first, last seen): the current one and the earlier ones its lifecycle chains."""
    out = [(float(f.first_seen), float(f.last_seen))]
    lc = (f.evidence or {}).get("lifecycle") if isinstance(f.evidence, Mapping) else None
    prev = lc.get("previous") if isinstance(lc, Mapping) else None
    depth = 0
    while isinstance(prev, Mapping) and depth < 100:
        a, b = prev.get("first_seen"), prev.get("last_seen")
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            out.append((float(a), float(b)))
        prev = prev.get("previous")
        depth += 1
    return sorted(out)


def _finding_state(f: Any, resolutions: Sequence[Any]) -> str:
    # i18n.Text: English in findings.json and .csv, the reader's language on the summary page
    if f.resolved_at is None:
        return Text(N_("open"))
    lc = (f.evidence or {}).get("lifecycle") if isinstance(f.evidence, Mapping) else None
    res = lc.get("resolved") if isinstance(lc, Mapping) else None
    if isinstance(res, Mapping) and res.get("by") == "operator":
        return Text(N_("resolved by an operator"))
    if isinstance(res, Mapping) and res.get("why"):
        return Text(N_("closed by the data ({why})"), why=res.get("why"))
    return Text(N_("resolved"))


def _summary(f: Any) -> str:
    ev: Mapping[str, Any] = f.evidence if isinstance(f.evidence, Mapping) else {}
    lc = ev.get("lifecycle")
    base = lc.get("base_summary") if isinstance(lc, Mapping) else None
    return str(ev.get("summary") or base or f.kind)


# -- gathering ------------------------------------------------------------------------

@dataclass
class _Card:
    """Everything read for one card, before it is written."""

    gpu: Any
    since: float
    until: float
    placements: list[Any] = field(default_factory=list)
    changes: list[Any] = field(default_factory=list)
    drivers: list[dict[str, Any]] = field(default_factory=list)
    xids: list[dict[str, Any]] = field(default_factory=list)
    events: list[Any] = field(default_factory=list)
    findings: list[tuple[str, Any]] = field(default_factory=list)  # (scope, finding)
    acks: dict[str, Any] = field(default_factory=dict)
    resolutions: list[Any] = field(default_factory=list)
    claims: list[Any] = field(default_factory=list)
    derating: list[Any] = field(default_factory=list)
    hourly: Any = None
    daily: Any = None
    windows: list[tuple[Any, str, tuple[float, float], Any]] = field(default_factory=list)  # finding, file, span, rows
    intake: str | None = None


def _resolve_card(db: Any, ident: str) -> Any:
    from storage.evidence import find_cards
    from storage.history_window import gpu_record

    found = find_cards(db, ident)
    if not found:
        raise KnownError(Text(N_("no GPU with the UUID or serial {ident} in this database"),
                               ident=repr(printable(ident))))
    if len(found) > 1:
        where = ", ".join(f"{m.uuid} ({m.node} gpu{m.index})" for m in found[:4])
        raise KnownError(Text(N_("the serial {ident} names {count} GPUs ({where}): give the UUID"),
                               ident=repr(printable(ident)), count=len(found), where=where))
    gpu = gpu_record(db, found[0].uuid)
    assert gpu is not None  # found a moment ago, in the same read
    return gpu


def _drivers(db: Any, placements: Sequence[Any], now: float) -> list[dict[str, Any]]:
    """The driver each placement ran, and every change of it while the card was there."""
    from storage.queries import inventory_changes, nodes

    current = {n.name: n.driver_version for n in nodes(db)}
    out: list[dict[str, Any]] = []
    for p in placements:
        if p.node is None:
            continue
        changes = [c for c in inventory_changes(db, node=p.node) if c.kind == "driver_changed"]
        before = [c for c in changes if c.ts <= p.since]
        after = [c for c in changes if c.ts > p.since]
        start = before[-1].new if before else (after[0].old if after else current.get(p.node))
        out.append({"node": p.node, "since": p.since, "until": p.until, "driver": start, "change": "at placement"})
        for c in after:
            if p.until is not None and c.ts >= p.until:
                break
            out.append({"node": p.node, "since": c.ts, "until": p.until, "driver": c.new,
                        "change": f"changed from {c.old}"})
    return out


def _xid_line(e: Any) -> str:
    """The kernel-log line of an Xid event as the agent recorded it (rebuilt from its parsed fields: NVRM's
    own format), or what NVML reported when no kernel line was read."""
    d = e.data if isinstance(e.data, Mapping) else {}
    if isinstance(d.get("line"), str):
        return str(d["line"])
    if d.get("source") == "nvml":
        return f"(no kernel-log line: NVML event) {e.message or ''}".strip()
    pci = d.get("raw_pci") or d.get("pci_address") or e.pci_bus_id or "?"
    parts = [f"NVRM: Xid (PCI:{pci}): {e.code}"]
    if d.get("pid") is not None or d.get("process"):
        parts.append(f"pid={d.get('pid') if d.get('pid') is not None else '<unknown>'}, "
                     f"name={d.get('process') or '<unknown>'}")
    if e.message:
        parts.append(str(e.message))
    return ", ".join(parts)


def _card_events(db: Any, gpu: Any, placements: Sequence[Any], since: float, until: float
                 ) -> tuple[list[dict[str, Any]], list[Any]]:
    """The card's Xids (decoded) and its other events, over its placements within [since, until)."""
    from fleetmon.xid import lookup
    from storage.queries import events

    xids: list[dict[str, Any]] = []
    other: list[Any] = []
    seen: set[int] = set()
    for p in placements:
        if p.node is None:
            continue
        a, b = max(since, p.since), min(until, p.until if p.until is not None else until + 1)
        if a >= b:
            continue
        for e in events(db, a, b, node=p.node):
            if e.id in seen:
                continue
            mine = e.gpu_uuid == gpu.uuid
            node_wide = e.gpu_uuid is None and e.pci_bus_id in (None, p.pci_bus_id) and e.kind in (
                "xid", "fallen_off_bus")
            if not (mine or node_wide):
                continue
            seen.add(e.id)
            if e.kind != "xid" or e.code is None:
                other.append(e)
                continue
            info = lookup(int(e.code))
            d = e.data if isinstance(e.data, Mapping) else {}
            xids.append({
                "ts": e.ts, "node": e.node, "pci_bus_id": e.pci_bus_id or p.pci_bus_id, "code": int(e.code),
                "name": info.name, "meaning": info.meaning, "category": info.category,
                "severity": d.get("severity") or info.severity, "action": info.action,
                "attributed": "this card" if mine else "its node (the Xid named no card)",
                "source": d.get("source") or "", "kernel_log_line": _xid_line(e),
                "process": d.get("process"), "pid": d.get("pid")})
    return xids, other


def _gather(db: Any, ident: str, now: float, since_s: float | None) -> _Card:
    from storage import acks, resolutions
    from storage.evidence import card_findings, claim_conflicts, node_findings
    from storage.findings import derating_history
    from storage.queries import gpu_history, inventory_changes, placements

    gpu = _resolve_card(db, ident)
    # Without --since, everything stored (0): rollups can start before the card's recorded first sight.
    since = min(now - since_s, now) if since_s is not None else 0.0
    card = _Card(gpu=gpu, since=since, until=now)
    card.placements = placements(db, gpu.uuid)
    card.changes = [c for c in inventory_changes(db, uuid=gpu.uuid) if c.ts < now]
    card.drivers = _drivers(db, card.placements, now)
    card.xids, card.events = _card_events(db, gpu, card.placements, since, now)
    mine = [("card", f) for f in card_findings(db, gpu.uuid) if f.first_seen < now
            and (f.resolved_at is None or f.resolved_at >= since)]
    nodes_: list[tuple[str, Any]] = []
    seen: set[str] = set()
    for p in card.placements:
        if p.node is None:
            continue
        for f in node_findings(db, p.node, max(since, p.since), p.until if p.until is not None else now):
            if f.key not in seen and f.first_seen < now:
                seen.add(f.key)
                nodes_.append(("node", f))
    card.findings = mine + nodes_
    keys = [f.key for _, f in card.findings]
    card.acks = acks.acks(db, keys)
    wanted = set(keys)
    card.resolutions = [r for r in resolutions.card_resolutions(db, gpu_uuid=gpu.uuid) if r.at < now]
    for name in sorted({p.node for p in card.placements if p.node}):
        card.resolutions += [r for r in resolutions.card_resolutions(db, node=name)
                             if r.gpu_uuid is None and r.key in wanted and r.at < now]
    card.resolutions.sort(key=lambda r: (r.at, r.id))
    card.claims = claim_conflicts(db, gpu.uuid)
    card.derating = derating_history(db, gpu.uuid, since, now)
    keys_wanted = list(TELEMETRY_KEYS) + list(COUNTER_KEYS)
    card.hourly = gpu_history(db, gpu.uuid, since, now, fields=keys_wanted, resolution="hour")
    card.daily = gpu_history(db, gpu.uuid, since, now, fields=keys_wanted, resolution="day")
    if since_s is None:  # the card's life: from its first stored trace
        starts = [float(gpu.first_seen or now), *(float(w.rows[0]["ts"]) for w in (card.hourly, card.daily)
                                                  if w.rows), *(p.since for p in card.placements)]
        card.since = min(starts)
    card.windows = _episode_windows(db, card, keys_wanted)
    card.intake = _intake_certificate(db, gpu.uuid)
    return card


def _episode_windows(db: Any, card: _Card, keys: Sequence[str]) -> list[tuple[Any, str, tuple[float, float], Any]]:
    """Minute data around the newest :data:`MAX_EPISODES` episodes of the card's own findings (hourly rows
    where the minutes are pruned)."""
    from storage.evidence import episode_window

    spans: list[tuple[float, Any]] = []
    for scope, f in card.findings:
        if scope != "card" or f.kind not in EPISODE_KINDS:
            continue
        for a, _b in _episodes(f):
            spans.append((a, f))
    out = []
    for n, (a, f) in enumerate(sorted(spans, key=lambda s: s[0])[-MAX_EPISODES:], start=1):
        b = next((y for x, y in _episodes(f) if x == a), a)
        b = min(max(b, a + 60), a + MAX_EPISODE_S)
        lo, hi = max(card.since, a - EPISODE_MARGIN_S), min(card.until, b + EPISODE_MARGIN_S)
        if hi <= lo:
            continue
        window = episode_window(db, card.gpu.uuid, lo, hi, list(keys))
        name = f"episode-{n:02d}-{f.kind}"
        out.append((f, name, (a, b), window))
    return out


# -- writing --------------------------------------------------------------------------

def _history_columns(window: Any) -> list[str]:
    keys: list[str] = []
    for r in window.rows[:1] or ():
        keys = [k for k in r if k not in ("ts", "status")]
    return ["ts", "time_utc", *keys, "status"]


def _history_csv(window: Any) -> bytes:
    cols = _history_columns(window)
    body = cols[2:-1]
    return _csv(cols, ([r.get("ts"), _iso(r.get("ts")), *(r.get(k) for k in body), r.get("status") or None]
                       for r in window.rows))


def _counter_rows(window: Any) -> list[dict[str, Any]]:
    """The rows at which any memory-health counter changed, with the first and the last (ecc_pages.csv)."""
    out: list[dict[str, Any]] = []
    last: tuple[Any, ...] | None = None
    rows = list(window.rows)
    for i, r in enumerate(rows):
        values = tuple(r.get(k) for k in COUNTER_KEYS)
        if values != last or i == len(rows) - 1:
            out.append({"ts": r.get("ts"), **{k: r.get(k) for k in COUNTER_KEYS}})
            last = values
    return out


def _series(window: Any, key: str, label: str) -> PlotSeries:
    return PlotSeries(label, tuple((float(r["ts"]), r.get(key)) for r in window.rows))


def _plot_specs(card: _Card) -> list[PlotSpec]:
    life = card.hourly if card.until - card.since <= 120 * DAY else card.daily
    marks = tuple([(x["ts"], f"Xid {x['code']}") for x in card.xids] +
                  [(p.since, f"→ {p.node}") for p in card.placements[1:]])
    # the titles, units and legends drawn on the PNGs in the reader's language (English as before); the Xid
    # marks, node names and finding kinds stay
    t = gettext
    life_title = (N_("Whole history (hourly): clock, power, temperature") if life is card.hourly else
                  N_("Whole history (daily): clock, power, temperature"))
    specs = [
        PlotSpec("life-telemetry", t(life_title), card.since, card.until, (
            PlotPanel(t(N_("SM clock")), "MHz", (_series(life, "sm_clock_mhz_max", t(N_("max"))),
                                                 _series(life, "sm_clock_mhz_mean", t(N_("mean"))))),
            PlotPanel(t(N_("Power")), "W", (_series(life, "power_w_max", t(N_("max"))),
                                            _series(life, "power_w_mean", t(N_("mean"))),
                                            _series(life, "power_limit_w_mean", t(N_("limit"))))),
            PlotPanel(t(N_("Temperature")), "°C", (_series(life, "temp_c_max", t(N_("max"))),
                                                    _series(life, "temp_c_mean", t(N_("mean"))))),
        ), marks=marks),
        PlotSpec("life-memory", t(N_("Whole history (hourly): ECC errors, retired pages, remapped rows")),
                 card.since, card.until, (
                     PlotPanel(t(N_("ECC errors (aggregate)")), t(N_("count")), (
                         _series(card.hourly, "ecc_corr_agg", t(N_("corrected"))),
                         _series(card.hourly, "ecc_unc_agg", t(N_("uncorrected"))))),
                     PlotPanel(t(N_("Retired pages")), t(N_("pages")), (
                         _series(card.hourly, "retired_sbe", t(N_("single-bit"))),
                         _series(card.hourly, "retired_dbe", t(N_("double-bit"))))),
                     PlotPanel(t(N_("Remapped rows")), t(N_("rows")), (
                         _series(card.hourly, "remap_corr", t(N_("correctable"))),
                         _series(card.hourly, "remap_unc", t(N_("uncorrectable"))))),
                 ), marks=marks),
    ]
    for f, name, (a, b), w in card.windows:
        lo = min((float(r["ts"]) for r in w.rows), default=a)
        hi = max((float(r["ts"]) for r in w.rows), default=b) + w.step_s
        # Whole sentences per resolution (the word is not translated alone; the English is as before).
        template = (N_("{kind} {when} (hour data): {summary}") if w.resolution == "hour" else
                    N_("{kind} {when} (minute data): {summary}"))
        title = localized(Text(template, kind=f.kind, when=_shown(a), summary=_summary(f)))
        specs.append(PlotSpec(name, title, lo, hi, (
            PlotPanel(t(N_("SM clock")), "MHz", (_series(w, "sm_clock_mhz_mean", t(N_("mean"))),
                                                 _series(w, "sm_clock_mhz_min", t(N_("min"))))),
            PlotPanel(t(N_("Power")), "W", (_series(w, "power_w_mean", t(N_("mean"))),
                                            _series(w, "power_limit_w_mean", t(N_("limit"))))),
            PlotPanel(t(N_("Temperature")), "°C", (_series(w, "temp_c_max", t(N_("max"))),)),
            PlotPanel(t(N_("PCIe link")), t(N_("gen / width")), (_series(w, "pcie_gen", t(N_("gen"))),
                                                                  _series(w, "pcie_width", t(N_("width"))))),
        ), shade=((a, b),), marks=tuple(m for m in marks if lo <= m[0] < hi)))
    return specs


_CSS = render.CSS + """img{max-width:100%;border:1px solid #ddd;margin:.4em 0}.focus{background:#fff8e1}
@media print{img{page-break-inside:avoid}}
"""
"""The report pages' style (fleetmon.health.render), with images and the finding an export was made for."""


_e = render.esc  # the report's escaping: control characters shown, then HTML-escaped


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]], raw: Sequence[int] = ()) -> str:
    out = ["<table><tr>" + "".join(f"<th>{_e(h)}</th>" for h in header) + "</tr>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td>{v if i in raw else _e(v)}</td>" for i, v in enumerate(r)) + "</tr>")
    return "".join(out) + "</table>"


def _h2(text: str) -> str:
    return f"<h2>{_e(text)}</h2>"


def _p(text: str) -> str:
    return f"<p>{_e(text)}</p>"


def _badge(sev: Any) -> str:
    return render.badge(str(sev or ""))


def _summary_html(card: _Card, now: float, pngs: Mapping[str, bytes], plots_note: str | None,
                  focus: str | None, files: Sequence[str]) -> str:
    """The printable page, in the reader's language (headings, labels, table headers, times; English as
    before); the stored values (summaries as recorded, kinds, Xid names and meanings, states of the store) stay."""
    import base64

    t = gettext
    g = card.gpu
    inv = dict(g.inventory or {})
    title = t(N_("Evidence: {model} serial {serial}")).format(model=g.model or "GPU",
                                                              serial=g.serial or t(N_("(none)")))
    meta = t(N_("UUID {uuid} · history {since} to {until} · exported {now} by fleetmon")).format(
        uuid=f"<code>{_e(g.uuid)}</code>", since=_e(_shown(card.since)), until=_e(_shown(card.until)),
        now=_e(_shown(now)))
    body = [f"<h1>{_e(title)}</h1>", f'<p class="meta">{meta}</p>']
    if focus:
        f = next((f for _, f in card.findings if f.key == focus), None)
        if f is not None:
            said = t(N_("Exported for the finding: {severity} {summary} (first seen {when})")).format(
                severity=_badge(f.severity), summary=_e(_summary(f)), when=_e(_shown(f.first_seen)))
            body.append(f'<p class="focus">{said}</p>')
    # Identity
    ident_rows = [("UUID", g.uuid), (t(N_("Serial")), g.serial), (t(N_("Model")), g.model)]
    status = dict(g.inventory_status or {})
    ident_rows += [(k, inv.get(k) if inv.get(k) is not None else (status.get(k, "not read").replace("_", " ")))
                   for k in IDENTITY_KEYS if k not in ("name", "serial") and (k in inv or k in status)]
    ident_rows += [(t(N_("First seen")), _shown(g.first_seen)), (t(N_("Last seen")), _shown(g.last_seen)),
                   (t(N_("State")), g.state)]
    body += [_h2(t(N_("Identity"))), _table((t(N_("Field")), t(N_("Value"))), ident_rows)]
    now_word = t(N_("now"))
    # Placements
    body += [_h2(t(N_("Placements"))), _table(
        (t(N_("Node")), t(N_("Slot (index)")), t(N_("PCI bus id")), t(N_("From")), t(N_("Until"))), (
            (p.node, p.index, p.pci_bus_id, _shown(p.since), _shown(p.until) or now_word) for p in card.placements))
        if card.placements else _p(t(N_("No placement recorded.")))]
    if card.claims:
        body.append(_p(t(N_("Other nodes claimed this UUID while it sat elsewhere:"))) + _table(
            (t(N_("Node")), t(N_("Held by")), t(N_("From")), t(N_("Until")), t(N_("Records refused"))),
            ((c.node, c.holder, _shown(c.first_seen), _shown(c.last_seen), c.dropped) for c in card.claims)))
    body += [_h2(t(N_("Driver versions"))), _table(
        (t(N_("Node")), t(N_("Driver")), t(N_("From")), t(N_("Until")), t(N_("Note"))), (
            (d["node"], d["driver"], _shown(d["since"]), _shown(d["until"]) or now_word, d["change"])
            for d in card.drivers))
        if card.drivers else _p(t(N_("No driver recorded.")))]
    # Xids
    body.append(_h2(t(N_("Xid errors ({count})")).format(count=len(card.xids))))
    if card.xids:
        body.append(_table((t(N_("Time")), t(N_("Node")), "Xid", t(N_("Meaning")), t(N_("Category")),
                            t(N_("Severity")), t(N_("Kernel-log line"))), (
            (_shown(x["ts"]), x["node"], f"{x['code']} {x['name']}".strip(), x["meaning"], x["category"],
             x["severity"], x["kernel_log_line"]) for x in card.xids)))
    else:
        body.append(_p(t(N_("No Xid error recorded for this card."))))
    # Memory health
    counters = _counter_rows(card.hourly)
    body.append(_h2(t(N_("ECC errors, retired pages and remapped rows"))))
    if counters:
        shown = counters[-40:]
        body.append(('<p class="small">' + _e(t(N_(
            "The hours at which a counter changed (the last 40; all in ecc_pages.csv). An empty cell: not supported "
            "or not read, never zero."))) + "</p>") + _table(
            tuple(t(h) for h in (N_("Hour"), N_("ECC corr."), N_("ECC uncorr."), N_("Retired SBE"), N_("Retired DBE"),
                                 N_("Retire pending"), N_("Remap corr."), N_("Remap uncorr."), N_("Remap pending"),
                                 N_("Remap failure"))),
            ((_shown(c["ts"]), c["ecc_corr_agg"], c["ecc_unc_agg"], c["retired_sbe"], c["retired_dbe"],
              c["retired_pending"], c["remap_corr"], c["remap_unc"], c["remap_pending"], c["remap_failure"])
             for c in shown)))
    else:
        body.append(_p(t(N_("No hourly history stored."))))
    # Episodes and findings
    resol: dict[str, list[Any]] = {}
    for r in card.resolutions:
        resol.setdefault(r.key, []).append(r)
    body.append(_h2(t(N_("Findings and episodes ({count})")).format(count=len(card.findings))))
    if card.findings:
        rows = []
        for scope, f in card.findings:
            notes = []
            a = card.acks.get(f.key)
            if a is not None:
                if a.until and a.by:
                    note = t(N_("snoozed until {until} {at} by {who}: {note}"))
                elif a.until:
                    note = t(N_("snoozed until {until} {at}: {note}"))
                elif a.by:
                    note = t(N_("acknowledged {at} by {who}: {note}"))
                else:
                    note = t(N_("acknowledged {at}: {note}"))
                notes.append(note.format(until=_shown(a.until), at=_shown(a.created_at), who=a.by, note=a.note))
            for r in resol.get(f.key, []):
                note = (t(N_("resolved {at} by {who}: {reason} {note}")) if r.by else
                        t(N_("resolved {at}: {reason} {note}")))
                notes.append(note.format(at=_shown(r.at), who=r.by, reason=r.reason, note=r.note).strip())
            eps = _episodes(f)
            kind = f.kind if scope == "card" else t(N_("{kind} (node)")).format(kind=f.kind)
            rows.append((f'<span class="{"focus" if f.key == focus else ""}">{_badge(f.severity)}</span>',
                         _e(kind), _e(_summary(f)),
                         _e(_shown(f.first_seen)), _e(_shown(f.last_seen)), _e(localized(_finding_state(f, []))),
                         _e(f"{len(eps)}"), "<br>".join(_e(n) for n in notes)))
        body.append(_table(tuple(t(h) for h in (N_("Severity"), N_("Kind"), N_("Summary"), N_("First seen"),
                                                N_("Last seen"), N_("State"), N_("Episodes"), N_("Operator notes"))),
                           rows, raw=range(8)))
    else:
        body.append(_p(t(N_("No finding recorded."))))
    if card.events:
        body += [_h2(t(N_("Other events ({count})")).format(count=len(card.events))), _table(
            (t(N_("Time")), t(N_("Node")), t(N_("Event")), t(N_("Message"))), (
                (_shown(e.ts), e.node, e.kind, e.message) for e in card.events[-60:]))]
    body.append(_h2(t(N_("Intake certificate"))))
    body.append("<p>" + t(N_("Included as {file}.")).format(file="<code>intake-certificate.html</code>") + "</p>"
                if card.intake else _p(t(N_("No intake certificate recorded for this card."))))
    # Plots
    body.append(_h2(t(N_("Plots"))))
    if plots_note:
        body.append(f"<p>{_e(localized(plots_note))}</p>")
    for name, data in pngs.items():
        body.append(f'<img alt="{_e(name)}" src="data:image/png;base64,{base64.b64encode(data).decode()}">')
    body += [_h2(t(N_("Files in this archive"))), '<p class="small">' + t(N_(
        "{files}. manifest.json says what each holds.")).format(files=", ".join(f"<code>{_e(n)}</code>" for n in files))
        + "</p>"]
    return render_html.page(title, body, _CSS)


def _files(card: _Card, now: float, pngs: Mapping[str, bytes], plots_note: str | None, focus: str | None
           ) -> dict[str, tuple[bytes, str]]:
    """Every file of the archive but the manifest: name → (content, what it holds)."""
    g = card.gpu
    files: dict[str, tuple[bytes, str]] = {}
    identity = {"uuid": g.uuid, "serial": g.serial, "model": g.model, "node": g.node, "index": g.index,
                "state": g.state, "first_seen": _iso(g.first_seen), "last_seen": _iso(g.last_seen),
                "inventory": dict(g.inventory or {}), "inventory_status": dict(g.inventory_status or {})}
    files["identity.json"] = (_json(identity), N_("the card's identity: serial, UUID, board part number, VBIOS, "
                                 "PCI device and subsystem ids, InfoROM versions, limits (inventory_status: reads "
                                 "that were not supported or failed)"))
    files["placements.csv"] = (_csv(("node", "index", "pci_bus_id", "since", "until"), (
        (p.node, p.index, p.pci_bus_id, _iso(p.since), _iso(p.until)) for p in card.placements)),
        N_("every placement: node, slot index, PCI bus id, from and until (empty: still there)"))
    files["inventory_changes.csv"] = (_csv(("time_utc", "kind", "node", "old", "new"), (
        (_iso(c.ts), c.kind, c.node, c.old, c.new) for c in card.changes)),
        N_("the card's inventory change log: enrolment, moves, VBIOS, serial and power-limit changes"))
    files["claim_conflicts.csv"] = (_csv(("node", "holder", "first_seen", "last_seen", "records_refused"), (
        (c.node, c.holder, _iso(c.first_seen), _iso(c.last_seen), c.dropped) for c in card.claims)),
        N_("nodes that reported this UUID while another node held the card"))
    files["drivers.csv"] = (_csv(("node", "driver", "since", "until", "change"), (
        (d["node"], d["driver"], _iso(d["since"]), _iso(d["until"]), d["change"]) for d in card.drivers)),
        N_("the driver version of each node the card sat in, over time"))
    xcols = ("ts", "time_utc", "node", "pci_bus_id", "code", "name", "meaning", "category", "severity", "action",
             "attributed", "source", "process", "pid", "kernel_log_line")
    files["xids.csv"] = (_csv(xcols, ([x["ts"], _iso(x["ts"])] + [x[k] for k in xcols[2:]] for x in card.xids)),
                         N_("every Xid error with its kernel-log line and its decoded meaning (fleetmon.xid catalog)"))
    files["events.csv"] = (_csv(("ts", "time_utc", "node", "kind", "code", "pci_bus_id", "message", "data"), (
        (e.ts, _iso(e.ts), e.node, e.kind, e.code, e.pci_bus_id, e.message, dict(e.data)) for e in card.events)),
        N_("the card's other events (lost, back, reset, off the bus)"))
    files["ecc_pages.csv"] = (_csv(("ts", "time_utc", *COUNTER_KEYS), (
        (c["ts"], _iso(c["ts"]), *(c[k] for k in COUNTER_KEYS)) for c in _counter_rows(card.hourly))),
        N_("ECC error counts, retired pages and remapped rows: each hour a counter changed (hourly rollups, the "
           "counters' last value in the hour), first and last hour included; empty: not supported or not read"))
    files["telemetry_hourly.csv"] = (_history_csv(card.hourly), N_("hourly rollups over the whole window: gauges' "
                                        "min/mean/max, counters' last value and delta, throttle-reason minutes, busy "
                                        "minutes and the lowest busy PCIe link"))
    files["telemetry_daily.csv"] = (_history_csv(card.daily), N_("daily rollups over the whole window (as hourly)"))
    ep_rows = []
    for scope, f in card.findings:
        for n, (a, b) in enumerate(_episodes(f), start=1):
            window = next((name for ff, name, span, _ in card.windows if ff is f and span[0] == a), "")
            ep_rows.append((f.key, f.kind, scope, f.severity, n, _iso(a), _iso(b), _summary(f),
                            f"minutes/{window}.csv" if window else "",
                            f"plots/{window}.png" if window and window in pngs else ""))
    files["episodes.csv"] = (_csv(("key", "kind", "scope", "severity", "episode", "first_seen", "last_seen",
                                   "summary", "data_file", "plot"), ep_rows),
                             N_("every episode of every finding (throttle, power brake, power dropout, PCIe, Xid, "
                                "memory…), with the file of its minute data and its plot where one was made"))
    resol: dict[str, list[Any]] = {}
    for r in card.resolutions:
        resol.setdefault(r.key, []).append(r)
    fjson: list[dict[str, Any]] = []
    for scope, f in card.findings:
        ack = card.acks.get(f.key)
        fjson.append({"key": f.key, "kind": f.kind, "scope": scope, "severity": f.severity, "node": f.node,
                      "first_seen": _iso(f.first_seen), "last_seen": _iso(f.last_seen),
                      "resolved_at": _iso(f.resolved_at) or None, "state": _finding_state(f, []),
                      "summary": _summary(f), "action": f.action, "evidence": f.evidence,
                      "episodes": [[_iso(x), _iso(y)] for x, y in _episodes(f)],
                      "acknowledgement": None if ack is None else {
                          "at": _iso(ack.created_at), "by": ack.by, "note": ack.note, "severity": ack.severity,
                          "until": _iso(ack.until) or None},
                      "resolutions": [{"at": _iso(r.at), "by": r.by, "reason": r.reason, "note": r.note}
                                      for r in resol.get(f.key, [])]})
    files["findings.json"] = (_json(fjson), N_("the findings of the card (and of its nodes while it sat there) with "
                                 "their evidence, lifecycle (episodes, how each closed) and the operators' notes"))
    files["findings.csv"] = (_csv(("key", "kind", "scope", "severity", "node", "first_seen", "last_seen",
                                   "resolved_at", "state", "summary", "action"), (
        (f["key"], f["kind"], f["scope"], f["severity"], f["node"], f["first_seen"], f["last_seen"],
         f["resolved_at"], f["state"], f["summary"], f["action"]) for f in fjson)), N_("the findings, one a line"))
    notes = [("acknowledgement", k, _iso(a.created_at), a.by, a.note, "", _iso(a.until)) for k, a in card.acks.items()]
    notes += [("resolution", r.key, _iso(r.at), r.by, r.note, r.reason, "") for r in card.resolutions]
    files["operator_notes.csv"] = (_csv(("act", "key", "at", "by", "note", "reason", "until"),
                                        sorted(notes, key=lambda n: n[2])),
                                   N_("operators' acknowledgements, snoozes and resolutions (sign-offs of reports are "
                                      "fleet-wide and not part of a card's file)"))
    files["derating_daily.csv"] = (_csv(("day", "node", "sm_clock_busy_mhz", "clock_ratio", "power_limit_ratio",
                                         "memory_ratio", "pcie_ratio", "clock_vs_fleet"), (
        (_day(d.day), d.node, d.sm_clock_busy_mhz, d.clock_ratio, d.power_limit_ratio, d.memory_ratio,
         d.pcie_ratio, d.clock_vs_fleet) for d in card.derating)),
        N_("daily derating figures against the nominal spec and the model's fleet median"))
    for _f, name, _span, w in card.windows:
        about = (N_("hour data around the episode ({hours} h either side)") if w.resolution == "hour" else
                 N_("minute data around the episode ({hours} h either side)"))
        files[f"minutes/{name}.csv"] = (_history_csv(w), Text(about, hours=EPISODE_MARGIN_S // 3600))
    for name, data in pngs.items():
        files[f"plots/{name}.png"] = (data, N_("plot (PNG)"))
    if card.intake:
        files["intake-certificate.html"] = (card.intake.encode("utf-8"), N_("the intake certificate of the card"))
    readme = _readme(card, now, files, plots_note)
    files["README.txt"] = (readme.encode("utf-8"), N_("what this archive is, in words"))
    names = ["summary.html", "manifest.json", *files]
    files["summary.html"] = (_summary_html(card, now, pngs, plots_note, focus, names).encode("utf-8"),
                             N_("the printable summary (self-contained: inline style, plots embedded)"))
    return files


def _readme(card: _Card, now: float, files: Mapping[str, tuple[bytes, str]], plots_note: str | None) -> str:
    """The archive's README.txt in the reader's language (each line an i18n.Text, localized here; English as
    before, byte for byte). The files' descriptions are the manifest's (English in manifest.json, read by
    machines; translated here)."""
    g = card.gpu
    lines: list[str] = [
        Text(N_("RMA / return evidence for {model}, serial {serial}, UUID {uuid}"),
             model=g.model or Text(N_("a GPU")), serial=g.serial or Text(N_("(none)")), uuid=g.uuid),
        Text(N_("History from {start} to {end}; written by fleetmon at {written}."), start=_when(card.since),
             end=_when(card.until), written=_when(now)),
        "", Text(N_("Open summary.html in a browser (and print it) for the overview; the raw data is in CSV and "
                    "JSON.")),
        Text(N_("Times are UTC (ISO 8601) with Unix seconds in the ts columns. An empty cell is a value that was not\n"
                   "supported or not read; it is never a zero.")), ""]
    if plots_note:
        lines += [plots_note, ""]
    lines.append(Text(N_("Files:")))
    lines += [f"  {n}: {localized(what)}" for n, (_, what) in files.items()]
    lines += ["  summary.html: " + localized(N_("the printable summary")),
              "  manifest.json: " + localized(N_("this list, with sizes, as JSON")),
              "  README.txt: " + localized(N_("this file"))]
    return "\n".join(localized(line) for line in lines) + "\n"


def build_evidence(db_path: str | os.PathLike[str], ident: str, output: str | os.PathLike[str], *,
                   now: float | None = None, since_s: float | None = None, force: bool = False,
                   plots: PlotRenderer | None = None, plots_missing: str | None = None,
                   focus: str | None = None) -> EvidenceResult:
    """Write the evidence archive of the card ``ident`` (UUID or serial) to ``output`` (a .zip).

    Args:
        db_path: the fleetmon database, opened read-only.
        now: the end of the history (default: the clock).
        since_s: only the last ``since_s`` seconds of history (default: the card's whole life).
        force: replace an existing ``output``; without it an existing file is an error.
        plots: draws the PNGs; None: none drawn, ``plots_missing`` says why.
        focus: a finding key the archive is exported for (named first in the summary).

    The archive is written next to ``output`` and moved into place; nothing is left on an
    error, and an existing file is never replaced without ``force``.

    Raises:
        KnownError: no such database or card, an ambiguous serial, an existing output, a write error.
    """
    from storage.db import open_database

    out = Path(output)
    if not Path(db_path).is_file():
        raise KnownError(Text(N_("no database at {path}"), path=str(db_path)))
    if out.exists() and not force:
        raise KnownError(Text(N_("{path} exists: give --force to replace it"), path=str(output)))
    now = time.time() if now is None else float(now)
    db = open_database(Path(db_path), readonly=True)
    try:
        card = _gather(db, ident, now, since_s)
    finally:
        db.close()
    pngs: Mapping[str, bytes] = {}
    plots_note = plots_missing
    if plots is not None:
        try:
            pngs = dict(plots(_plot_specs(card)))
        except PlotsUnavailable as exc:
            plots_note = Text(N_("Plots skipped: {reason}"), reason=str(exc))
    elif plots_note is None:
        plots_note = Text(N_("Plots skipped: no renderer"))
    files = _files(card, now, pngs, plots_note, focus)
    manifest = {"schema": 1, "uuid": card.gpu.uuid, "serial": card.gpu.serial, "model": card.gpu.model,
                "since": _iso(card.since), "until": _iso(card.until), "written": _iso(now), "focus": focus,
                "plots": plots_note or "drawn", "intake_certificate": card.intake is not None,
                "files": [{"name": n, "bytes": len(data), "holds": what} for n, (data, what) in files.items()]}
    files["manifest.json"] = (_json(manifest), "the list of files")
    try:
        tmp = _new_part_file(out)
    except OSError as exc:
        raise KnownError(Text(N_("cannot write {path}: {error}"), path=str(output),
                              error=str(exc.strerror or exc))) from exc
    try:
        with zipfile.ZipFile(tmp, "w") as zf:
            stamp = time.gmtime(now)[:6]
            order = ["summary.html", "README.txt", "manifest.json"] + [n for n in files if n not in (
                "summary.html", "README.txt", "manifest.json")]
            for name in order:
                data, _ = files[name]
                info = zipfile.ZipInfo(name, date_time=max(stamp, (1980, 1, 1, 0, 0, 0)))
                info.compress_type = zipfile.ZIP_STORED if name.endswith(".png") else zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                zf.writestr(info, data)
        if force:
            os.replace(tmp, out)
        else:
            try:
                os.link(tmp, out)  # fails if the file appeared meanwhile: never replaced without --force
            except FileExistsError:
                raise KnownError(Text(N_("{path} exists: give --force to replace it"),
                                      path=str(output))) from None
            except OSError:  # a file system without hard links: the check above is what we have
                if out.exists():
                    raise KnownError(Text(N_("{path} exists: give --force to replace it"),
                                          path=str(output))) from None
                os.replace(tmp, out)
    except OSError as exc:
        raise KnownError(Text(N_("cannot write {path}: {error}"), path=str(output),
                              error=str(exc.strerror or exc))) from exc
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return EvidenceResult(path=str(out), uuid=card.gpu.uuid, serial=card.gpu.serial, size=out.stat().st_size,
                          files={n: len(d) for n, (d, _) in files.items()}, plots_note=plots_note)
