"""Rendering reports and preflights: text (default), JSON and printable HTML.

Inputs are the pure results of :mod:`fleetmon.health.engine`
(:class:`~fleetmon.health.engine.ReportResult`,
:class:`~fleetmon.health.engine.PreflightResult`). Nothing here reads a
clock or a file; the HTML is one self-contained page (inline CSS, every
value escaped) that prints cleanly.

JSON documents carry ``"schema": 1``; their fields are documented in
docs/findings.md and only ever gain keys within one schema version.

Exit status (:func:`exit_status`): 2 when anything critical was found (an
open critical finding in a report, a no-go node in a preflight), else 0.
1 is left for errors (bad arguments, unreadable database), so cron jobs can
tell "the fleet needs attention" from "the check failed".
"""

from __future__ import annotations

import datetime as _dt
import html
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fleetmon import hostlist
from fleetmon import i18n
from fleetmon.i18n import N_, current_language, localized
from fleetmon.i18n import gettext as _
from fleetmon.health.lifecycle import RESOLVE_REASONS
from fleetmon.health.engine import VERDICTS, NodePreflight, PreflightResult, ReportResult
from fleetmon.health import wording as W
from fleetmon.health.findings import Finding, worst_order
from fleetmon.text import printable

__all__ = [
    "EXIT_CRITICAL",
    "EXIT_ERROR",
    "EXIT_OK",
    "SCHEMA",
    "exit_status",
    "preflight_dict",
    "preflight_html",
    "preflight_json",
    "preflight_text",
    "report_dict",
    "report_html",
    "report_json",
    "report_text",
]

SCHEMA = 1
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CRITICAL = 2

def _hosts(names: Sequence[str]) -> str:
    """Host names as a readable hostlist: ``a, b, gpu[01-03,07]`` (a space after each top-level comma).

    A name no hostlist can hold (it came from outside unchecked) is listed after it, quoted: a report
    never fails for one name."""
    ok, bad = hostlist.split_writable(names)
    text = hostlist.compress(ok)
    out, depth = [], 0
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        out.append(", " if ch == "," and depth == 0 else ch)
    return ", ".join(([("".join(out))] if text else []) + [hostlist.quoted(h) for h in bad])


def _worst_kinds(findings: Iterable[Finding], with_severity: bool = False) -> list[str]:
    """Distinct kinds of ``findings``, worst first (:func:`worst_order`)."""
    seen: dict[str, str] = {}
    for f in sorted(findings, key=lambda f: worst_order(f.severity, f.kind, f.first_seen)):
        seen.setdefault(f.kind, f"{f.kind} ({W.word(f.severity)})" if with_severity else f.kind)
    return list(seen.values())


def _verdict_counts(verdicts: Mapping[str, str]) -> dict[str, int]:
    values = list(verdicts.values())
    return {v: values.count(v) for v in VERDICTS}


def _counts_line(counts: Mapping[str, int]) -> str:
    """"1 fail, 0 warn, 2 pass" and, where there are any, "1 unreachable", "1 unknown"."""
    parts = [_("{count} {verdict}").format(count=counts.get(v, 0), verdict=W.word(v))
             for v in VERDICTS if v in ("fail", "warn", "pass") or counts.get(v)]
    return ", ".join(parts)


def exit_status(result: ReportResult | PreflightResult | Iterable[Finding]) -> int:
    """2 if anything critical was found, else 0 (1 is reserved for errors).

    Critical means: an open critical finding (a report or a list of
    findings), or a no-go node (a preflight).
    """
    if isinstance(result, PreflightResult):
        return EXIT_CRITICAL if result.critical else EXIT_OK
    if isinstance(result, ReportResult):
        return EXIT_CRITICAL if result.critical else EXIT_OK
    return EXIT_CRITICAL if any(f.is_open and f.severity == "critical" for f in result) else EXIT_OK


def _stale_line(stale: Mapping[str, float]) -> str:
    return ", ".join(f"{n} ({W.age(float(a))})" for n, a in stale.items()) or _("none")


def resolution_text(f: Finding) -> str:
    """How a resolved finding was resolved: "resolved by alice at …: card replaced — note", or by data."""
    lc = f.evidence.get("lifecycle")
    if not isinstance(lc, Mapping):
        return ""
    why = lc.get("resolved")
    if not isinstance(why, Mapping):
        return ""
    res = why.get("resolution")
    if why.get("by") == "operator" and isinstance(res, Mapping):
        who = f" by {res.get('by')}" if res.get("by") else ""
        note = f" — {res.get('note')}" if res.get("note") else ""
        reason = str(res.get("reason") or "")
        return (f"resolved{who} at {_short(res.get('at'))}: "
                f"{res.get('reason_text') or RESOLVE_REASONS.get(reason, reason)}{note}")
    if why.get("why"):
        return f"resolved by data: {why.get('why')}"
    return ""


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _short(ts: float | None) -> str:
    """A moment for people, in the reader's locale (English: "2026-12-03 15:30"; zh_CN: "2026年12月3日 15:30")."""
    if ts is None:
        return "—"
    return i18n.when(float(ts))


def _finding_dict(f: Finding) -> dict[str, Any]:
    d = f.to_dict()
    d["first_seen_iso"] = _iso(f.first_seen)
    d["last_seen_iso"] = _iso(f.last_seen)
    return d


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value != value:  # NaN
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


# ---------------------------------------------------------------------------
# Report


def report_dict(result: ReportResult) -> dict[str, Any]:
    """The report as a JSON-ready dict (schema 1; see docs/findings.md)."""
    verdicts = list(result.verdicts.values())
    nodes = []
    by_node: dict[str, list[Finding]] = {}
    for f in result.findings:
        by_node.setdefault(f.node, []).append(f)
    for name, verdict in result.verdicts.items():
        mine = [f for f in by_node.get(name, ()) if f.is_open and f.severity != "info"]
        node: dict[str, Any] = {"name": name, "verdict": verdict, "findings": [f.key for f in mine]}
        slurm = result.summary.get("slurm")
        if isinstance(slurm, Mapping) and slurm.get("asked"):
            node["slurm"] = slurm_state_text(slurm, name)
        nodes.append(node)
    doc = {
        "schema": SCHEMA,
        "kind": "report",
        "generated_at": result.now,
        "generated_at_iso": _iso(result.now),
        "since": result.since,
        "since_iso": _iso(result.since),
        "group": result.group,
        "status": result.status,
        "exit_status": exit_status(result),
        "summary": {
            **result.summary,
            "verdicts": {v: verdicts.count(v) for v in VERDICTS},
        },
        "nodes": nodes,
        "changes": {
            "compared": result.previous,
            "new": [_finding_dict(f) for f in result.new],
            "resolved": [_finding_dict(f) for f in result.resolved],
            "worsened": [_finding_dict(f) for f in result.worsened],
            "inventory": list(result.summary.get("inventory_changes", [])),
        },
        "findings": [_finding_dict(f) for f in result.findings],
    }
    out: dict[str, Any] = _jsonable(doc)
    return out


def report_json(result: ReportResult) -> str:
    """The report as JSON text (sorted keys, indented, ends with a newline)."""
    return json.dumps(report_dict(result), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _finding_line(f: Finding, where_w: int = 18) -> str:
    return f"  {W.ljust(_(W.SEV[f.severity]), 4)}  {f.where():<{where_w}} {f.kind:<22} {localized(f.summary)}"


def _where_width(findings: Iterable[Finding]) -> int:
    """The Where column's width: 18, or the longest place so long names keep the columns aligned."""
    return max([18, *(len(f.where()) for f in findings)])


def _models_line(models: Mapping[str, int]) -> str:
    return ", ".join(f"{n}x {m}" for m, n in models.items()) or _("none")


def _drivers_line(drivers: Mapping[str, int]) -> str:
    return ", ".join(f"{v} ({W.nodes(n)})" for v, n in drivers.items()) or _("none")


def slurm_state_text(slurm: Mapping[str, Any], node: str) -> str:
    """A node's Slurm state in words, beside its verdict: ``idle``, ``drain (reason; who when)``, ``down``;
    ``Slurm unavailable`` or ``unknown to Slurm`` (never taken for a state)."""
    if not slurm.get("available"):
        return "Slurm unavailable"
    state = (slurm.get("nodes") or {}).get(node)
    if not state:
        return "unknown to Slurm"
    text = str(state.get("short") or state.get("state") or "?")
    if state.get("reason"):
        who = " ".join(str(x) for x in (state.get("reason_by"), state.get("reason_at")) if x)
        text += f" ({state['reason']}{'; ' + who if who else ''})"
    return text


def slurm_action_text(a: Mapping[str, Any], with_time: bool = True) -> str:
    """One recorded drain or resume: when (``with_time``), what, by whom, the result and why."""
    result = "ok" if a.get("result") == "ok" else f"{str(a.get('result', '?')).upper()}: {a.get('error') or ''}".rstrip(": ")
    why = f" — {a['reason']}" if a.get("reason") else ""
    when = f"{_short(a.get('ts'))} " if with_time else ""
    return f"{when}{a.get('action')} {a.get('node')} by {a.get('who')} ({a.get('origin')}): {result}{why}"


def _slurm_lines(s: Mapping[str, Any], verdicts: Mapping[str, str]) -> list[str]:
    slurm = s.get("slurm")
    if not isinstance(slurm, Mapping):
        return []
    out = ["Slurm"]
    if slurm.get("asked"):
        if not slurm.get("available"):
            out.append(f"  Slurm unavailable: {slurm.get('error')}")
        else:
            name_w = max([12, *(len(n) for n in verdicts)])
            for name in sorted(verdicts, key=hostlist.sort_key):
                out.append(f"  {name:<{name_w}} {verdicts[name].upper():<11} {slurm_state_text(slurm, name)}")
    actions = list(slurm.get("actions") or ())
    out.append(f"  Drains and resumes in the window ({len(actions)})")
    out += [f"    {slurm_action_text(a)}" for a in actions]
    out.append("")
    return out


def _mixed(summary: Mapping[str, Any]) -> bool:
    """Whether the report speaks of vendors: any device not NVIDIA's (an NVIDIA-only report reads as before)."""
    return any(v != "nvidia" for v in (summary.get("nodes_by_vendor") or {}))


def _vendors_line(s: Mapping[str, Any]) -> str:
    """"NVIDIA 8 GPUs on 2 nodes (driver 550.54.15 ×2, CUDA 12.4 ×2); AMD 4 GPUs on 1 node (driver 6.3.6 ×1)"."""
    from fleetmon.vendors import runtime_name, vendor_name

    parts = []
    for vendor, nodes in (s.get("nodes_by_vendor") or {}).items():
        gpus = (s.get("gpus_by_vendor") or {}).get(vendor, 0)
        versions = [_("driver {version} ×{count}").format(version=v, count=n)
                    for v, n in ((s.get("drivers_by_vendor") or {}).get(vendor) or {}).items()]
        versions += [f"{runtime_name(vendor)} {v} ×{n}"
                     for v, n in ((s.get("runtimes_by_vendor") or {}).get(vendor) or {}).items()]
        parts.append(_("{vendor} {gpus} on {nodes}").format(vendor=vendor_name(vendor), gpus=W.gpus(gpus),
                                                            nodes=W.nodes(nodes))
                     + (f" ({', '.join(versions)})" if versions else ""))
    return "; ".join(parts) or _("none")


def report_text(result: ReportResult) -> str:
    """The report as plain text for a terminal or a mail."""
    s = result.summary
    counts = _verdict_counts(result.verdicts)
    never = set(s.get("never_reached") or ())
    down = [n for n in s.get("unreachable") or () if n not in never and n not in (s.get("stale") or {})]
    ww = _where_width([*result.findings, *result.new, *result.resolved, *result.worsened])
    out = [
        _report_title(result.group),
        _("Window: {since} .. {now} UTC ({span})").format(since=_short(result.since), now=_short(result.now),
                                                        span=W.span(result.now - result.since)),
        _("Status: {status} — {counts} ({nodes}, {gpus})").format(
            status=W.upper(result.status), counts=_counts_line(counts), nodes=W.nodes(s.get("nodes", 0)),
            gpus=W.gpus(s.get("gpus", 0))),
        "",
        _("Fleet"),
        _("  GPUs by model: {models}").format(models=_models_line(s.get("gpus_by_model", {}))),
        _("  Drivers:       {drivers}").format(drivers=_drivers_line(s.get("driver_versions", {}))),
        *([_("  By vendor:     {vendors}").format(vendors=_vendors_line(s))] if _mixed(s) else []),
        _("  Unreachable:   {nodes}").format(nodes=_hosts(down) if down else _("none")),
        _("  Never reached: {nodes}").format(
            nodes=_hosts(sorted(never, key=hostlist.sort_key)) if never else _("none")),
        _("  Stale:         {nodes}").format(nodes=_stale_line(s.get("stale") or {})),
        "",
    ]
    if result.previous:
        out.append(_("Changes since the previous report"))
        for title, items in ((N_("New ({count})"), result.new), (N_("Resolved ({count})"), result.resolved),
                             (N_("Worsened ({count})"), result.worsened)):
            out.append("  " + _(title).format(count=len(items)))
            out += ["  " + _finding_line(f, ww) for f in items]
    else:
        out.append(_("Changes: no previous report to compare with"))
    inventory = s.get("inventory_changes", [])
    out.append("  " + _("Inventory changes ({count})").format(count=len(inventory)))
    for c in inventory:
        out.append(f"    {_short(c['ts'])}  {c['summary']}")
    out.append("")
    out.append(_("Nodes"))
    passing = []
    by_node: dict[str, list[Finding]] = {}
    for f in result.findings:
        if f.is_open and f.severity != "info":
            by_node.setdefault(f.node, []).append(f)
    name_w = max([12, *(len(n) for n, v in result.verdicts.items() if v != "pass")])
    verdict_w = max([W.cols(W.upper("pass")), *(W.cols(W.upper(v)) for v in result.verdicts.values())])
    for name, verdict in sorted(result.verdicts.items(),
                                key=lambda kv: (VERDICTS.index(kv[1]), hostlist.sort_key(kv[0]))):
        if verdict == "pass":
            passing.append(name)
            continue
        kinds = _worst_kinds(by_node.get(name, ()), with_severity=True)
        if verdict == "unknown":
            kinds = [_("never reached: no evidence")]
        elif verdict == "unreachable" and not any(k.startswith("node-unreachable") for k in kinds):
            kinds = [_("not answering now"), *kinds]
        elif verdict == "stale" or name in (s.get("stale") or {}):
            kinds = [_no_data_for(float((s.get("stale") or {}).get(name, 0.0))), *kinds]
        out.append(f"  {W.ljust(W.upper(verdict), verdict_w)}  {name:<{name_w}} {', '.join(kinds)}".rstrip())
    if passing:
        out.append(f"  {W.ljust(W.upper('pass'), verdict_w)}  {W.nodes(len(passing))}: {_hosts(passing)}")
    elif not result.verdicts:
        out.append("  " + _("(no nodes)"))
    out.append("")
    out += _slurm_lines(s, result.verdicts)
    open_findings = [f for f in result.findings if f.is_open]
    resolved = [f for f in result.findings if not f.is_open]
    out.append(_("Open findings ({count})").format(count=len(open_findings)))
    acked = result.summary.get("acknowledged", {})
    for f in open_findings:
        out.append(_finding_line(f, ww))
        if f.key in acked:
            out.append(f"        {_ack_text(acked[f.key])}")
        out.append("        " + _("since {first}, last {last}; action: {action}").format(
            first=_short(f.first_seen), last=_short(f.last_seen), action=localized(f.action)))
    out.append("")
    out.append(_("Resolved in the window ({count})").format(count=len(resolved)))
    for f in resolved:
        out.append(_finding_line(f, ww) + "  " + _("(last {last})").format(last=_short(f.last_seen)))
        how = resolution_text(f)
        if how:
            out.append(f"        {how}")
    out.append("")
    code = exit_status(result)
    out.append(_("Exit status: {code} (critical findings)").format(code=code) if code == EXIT_CRITICAL
               else _("Exit status: {code}").format(code=code))
    return _lines(out)


def _report_title(group: str | None) -> str:
    return _("fleetmon report — group {group}").format(group=group) if group else _("fleetmon report")


def _no_data_for(seconds: float) -> str:
    return _("no data for {age}").format(age=W.age(seconds))


def _lines(out: Sequence[str]) -> str:
    """The text's lines, each made safe for a terminal: the foreign text in them (node and model names,
    versions, finding summaries) cannot move the cursor, ring the bell or break a line."""
    return "".join(printable(line) + "\n" for line in out)


# ---------------------------------------------------------------------------
# Preflight


def _node_preflight_dict(n: NodePreflight, vendor: str = "nvidia") -> dict[str, Any]:
    return {
        "name": n.name, "verdict": n.verdict, "go": n.go, "reasons": list(n.reasons),
        "warnings": list(n.warnings), "ecc": dict(n.ecc), "power": dict(n.power),
        "gpus": n.gpus, "expected_gpus": n.expected, "vendor": vendor,
    }


def preflight_by_vendor(result: PreflightResult) -> dict[str, dict[str, Any]]:
    """vendor → ``nodes``, ``go``, ``no_go`` (node names) and ``gpus``: the review per vendor (issue 23)."""
    from fleetmon.vendors import vendor_order

    out: dict[str, dict[str, Any]] = {}
    for n in result.nodes:
        v = out.setdefault(result.vendors.get(n.name, "nvidia"), {"nodes": 0, "go": [], "no_go": [], "gpus": 0})
        v["nodes"] += 1
        v["go" if n.go else "no_go"].append(n.name)
        v["gpus"] += n.gpus
    return {k: out[k] for k in sorted(out, key=vendor_order)}


def preflight_dict(result: PreflightResult) -> dict[str, Any]:
    """The preflight as a JSON-ready dict (schema 1; see docs/findings.md)."""
    doc = {
        "schema": SCHEMA,
        "kind": "preflight",
        "generated_at": result.now,
        "generated_at_iso": _iso(result.now),
        "since": result.since,
        "since_iso": _iso(result.since),
        "days": result.days,
        "exit_status": exit_status(result),
        "go": result.go,
        "no_go": result.no_go,
        "exclude": result.exclude,
        "nodes": [_node_preflight_dict(n, result.vendors.get(n.name, "nvidia")) for n in result.nodes],
        "findings": [_finding_dict(f) for f in result.findings],
        "by_vendor": preflight_by_vendor(result),
    }
    out: dict[str, Any] = _jsonable(doc)
    return out


def preflight_json(result: PreflightResult) -> str:
    """The preflight as JSON text."""
    return json.dumps(preflight_dict(result), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _ecc_line(ecc: Mapping[str, Any]) -> str:
    if not ecc:
        return _("ECC: no data")
    return _("ECC: {corrected} corrected, {uncorrected} uncorrected, retired pages {retired}, pending {pending}, "
             "remap pending {remap_pending}, remap failed {remap_failed}").format(
        corrected=ecc.get("corrected", 0), uncorrected=ecc.get("uncorrected", 0),
        retired=ecc.get("retired_pages", 0), pending=ecc.get("retirement_pending", 0),
        remap_pending=ecc.get("remap_pending", 0), remap_failed=ecc.get("remap_failure", 0))


def _power_line(power: Mapping[str, Any]) -> str:
    if not power:
        return _("Power: no data")
    mean = power.get("mean_w")
    peak = power.get("max_w")
    return _("Power: mean {mean}, max {peak}, brake {brake} min, unreadable {unreadable} min, "
             "capped GPUs {capped}").format(
        mean="—" if mean is None else f"{i18n.number(mean)} W",
        peak="—" if peak is None else f"{i18n.number(peak)} W",
        brake=power.get("power_brake_minutes", 0), unreadable=power.get("unreadable_minutes", 0),
        capped=power.get("capped_gpus", 0))


def _preflight_vendors_line(result: PreflightResult) -> str:
    """"By vendor: NVIDIA 2 GO, 0 NO-GO (16 GPUs); AMD 1 GO, 1 NO-GO (8 GPUs)"."""
    from fleetmon.vendors import vendor_name

    return _("By vendor: {vendors}").format(vendors="; ".join(
        _("{vendor} {go} GO, {no_go} NO-GO ({gpus})").format(
            vendor=vendor_name(v), go=len(d["go"]), no_go=len(d["no_go"]), gpus=W.gpus(d["gpus"]))
        for v, d in preflight_by_vendor(result).items()))


def preflight_text(result: PreflightResult) -> str:
    """The preflight as plain text."""
    out = [
        _("fleetmon preflight — {nodes}, window {days} ({since} .. {now} UTC)").format(
            nodes=W.nodes(len(result.nodes)), days=W.days(result.days), since=_short(result.since),
            now=_short(result.now)),
        _("GO {go}   NO-GO {no_go}").format(go=len(result.go), no_go=len(result.no_go)),
        _("Exclude: {hosts}").format(hosts=result.exclude or _("(none)")),
        *([_preflight_vendors_line(result)] if any(v != "nvidia" for v in result.vendors.values()) else []),
        "",
    ]
    mixed = any(v != "nvidia" for v in result.vendors.values())
    for n in sorted(result.nodes, key=lambda n: (n.go, hostlist.sort_key(n.name))):
        gpus = (_("{count} GPUs of {expected}").format(count=n.gpus, expected=n.expected) if n.expected is not None
                else _("{count} GPUs").format(count=n.gpus))
        if mixed:  # a mixed pool says whose devices each node holds
            from fleetmon.vendors import vendor_name

            gpus += f", {vendor_name(result.vendors.get(n.name))}"
        out.append(f"{W.ljust(W.upper(n.verdict), 6)} {n.name}  ({gpus})")
        out += [f"    - {localized(r)}" for r in n.reasons]
        out += [f"    ~ {localized(w)}" for w in n.warnings]
        out.append(f"    {_ecc_line(n.ecc)}")
        out.append(f"    {_power_line(n.power)}")
    out.append("")
    code = exit_status(result)
    out.append(_("Exit status: {code} (no-go nodes)").format(code=code) if code == EXIT_CRITICAL
               else _("Exit status: {code}").format(code=code))
    return _lines(out)


# ---------------------------------------------------------------------------
# HTML

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em;color:#222;font-size:14px}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;width:100%;margin:.5em 0;table-layout:auto}th,td{border:1px solid #ddd;
padding:4px 6px;text-align:left;vertical-align:top;word-break:normal;overflow-wrap:normal}
th{background:#f3f3f3}.meta{color:#555}.nw{white-space:nowrap}.tok{overflow-wrap:anywhere}
.b{display:inline-block;padding:1px 6px;border-radius:3px;font-weight:600;font-size:.85em}
.critical,.fail,.no-go{background:#c62828;color:#fff}.warning,.warn{background:#f9a825;color:#000}
.info{background:#90a4ae;color:#fff}.pass,.go{background:#2e7d32;color:#fff}
.resolved{color:#777}.small{font-size:.85em;color:#555}code{background:#f3f3f3;padding:1px 4px}
@media print{body{margin:0;font-size:11px}h2{page-break-after:avoid}tr{page-break-inside:avoid}
.b{border:1px solid #000}}
"""


def _e(value: Any) -> str:
    """Text for the page: control characters as visible escapes (as in the terminal), then HTML-escaped."""
    return html.escape(printable("" if value is None else str(value)), quote=True)


def _badge(word: str) -> str:
    return f'<span class="b {_e(word)}">{_e(W.upper(word))}</span>'


def _page(title: str, body: Sequence[str]) -> str:
    lang = current_language().replace("_", "-")  # "en", "zh-CN": the browser picks a CJK font for zh-CN
    return (f"<!DOCTYPE html>\n<html lang=\"{lang}\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def _ack_text(ack: Mapping[str, Any]) -> str:
    """"acknowledged by ann: fan ordered" / "snoozed until 2024-05-02 10:00: …" (an operator's mark)."""
    who = f" by {ack['by']}" if ack.get("by") else ""
    when = f"snoozed{who} until {_short(ack['until'])}" if ack.get("until") else f"acknowledged{who}"
    return f"{when}: {ack.get('note') or '(no note)'}"


_FINDING_HEADERS = (N_("Severity"), N_("Where"), N_("Kind"), N_("Summary"), N_("First seen"), N_("Last seen"),
                    N_("Action"))


def _findings_table(findings: Sequence[Finding], resolved: bool = False,
                    acked: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    if not findings:
        return _tag("p", _("None."), "small")
    rows = ["<table><tr>" + "".join(_tag("th", _(h)) for h in _FINDING_HEADERS) + "</tr>"]
    for f in findings:
        cls = ' class="resolved"' if resolved or not f.is_open else ""
        rows.append(
            f"<tr{cls}><td class=\"nw\">{_badge(f.severity)}</td><td class=\"tok\">{_e(f.where())}</td>"
            f"<td class=\"nw\"><code>{_e(f.kind)}</code></td><td>{_e(localized(f.summary))}{_ack_cell(acked, f.key)}"
            f"{_resolution_cell(f)}</td>"
            f"<td class=\"nw\">{_e(_short(f.first_seen))}</td><td class=\"nw\">{_e(_short(f.last_seen))}</td>"
            f"<td class=\"small\">{_e(localized(f.action))}</td></tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _resolution_cell(f: Finding) -> str:
    how = resolution_text(f)
    return f'<br><span class="small">{_e(how)}</span>' if how else ""


def _ack_cell(acked: Mapping[str, Mapping[str, Any]] | None, key: str) -> str:
    return f'<br><span class="small">{_e(_ack_text(acked[key]))}</span>' if acked and key in acked else ""


def _row(label: str, value: str) -> str:
    """One row of a two-column table: the label (marked with N_, said here) and the value."""
    return f"<tr>{_tag('th', _(label))}<td>{_e(value)}</td></tr>"


def _tag(tag: str, text: str, cls: str = "") -> str:
    """``<tag class="cls">text</tag>``, the text escaped (marked text stays outside f-strings: on Python 3.11
    Babel's extractor does not look into them)."""
    return f'<{tag} class="{cls}">{_e(text)}</{tag}>' if cls else f"<{tag}>{_e(text)}</{tag}>"


def report_html(result: ReportResult) -> str:
    """The report as one printable, self-contained HTML page."""
    s = result.summary
    counts = _verdict_counts(result.verdicts)
    never = set(s.get("never_reached") or ())
    down = [n for n in s.get("unreachable") or () if n not in never and n not in (s.get("stale") or {})]
    title = _report_title(result.group)
    none = _("none")
    body = [
        f"<h1>{_e(title)} {_badge(result.status)}</h1>",
        '<p class="meta">' + _e(_("Window {since} .. {now} UTC ({span}) · {counts} · {nodes}, {gpus} · "
                                  "exit status {code}").format(
            since=_short(result.since), now=_short(result.now), span=W.span(result.now - result.since),
            counts=_counts_line(counts), nodes=W.nodes(s.get("nodes", 0)), gpus=W.gpus(s.get("gpus", 0)),
            code=exit_status(result))) + "</p>",
        _tag("h2", _("Fleet")) + "<table>",
        _row(N_("GPUs by model"), _models_line(s.get("gpus_by_model", {}))),
        _row(N_("Driver versions"), _drivers_line(s.get("driver_versions", {}))),
        *([_row(N_("By vendor"), _vendors_line(s))] if _mixed(s) else []),
        _row(N_("Unreachable"), _hosts(down) if down else none),
        _row(N_("Never reached"), _hosts(sorted(never, key=hostlist.sort_key)) if never else none),
        _row(N_("Stale"), _stale_line(s.get("stale") or {})) + "</table>",
        _tag("h2", _("Changes since the previous report")),
    ]
    if result.previous:
        for label, items in ((N_("New ({count})"), result.new), (N_("Resolved ({count})"), result.resolved),
                             (N_("Worsened ({count})"), result.worsened)):
            body.append(_tag("h3", _(label).format(count=len(items))))
            body.append(_findings_table(items, resolved=label == "Resolved ({count})"))
    else:
        body.append(_tag("p", _("No previous report to compare with."), "small"))
    inventory = s.get("inventory_changes", [])
    body.append(_tag("h3", _("Inventory changes ({count})").format(count=len(inventory))))
    if inventory:
        body.append("<table><tr>" + _tag("th", _("When")) + _tag("th", _("Change")) + "</tr>")
        body += [f"<tr><td>{_e(_short(c['ts']))}</td><td>{_e(c['summary'])}</td></tr>" for c in inventory]
        body.append("</table>")
    else:
        body.append(_tag("p", _("None."), "small"))
    slurm = s.get("slurm") if isinstance(s.get("slurm"), Mapping) else None
    slurm_col = bool(slurm and slurm.get("asked"))
    body.append(_tag("h2", _("Nodes")) + "<table><tr>" + _tag("th", _("Node")) + _tag("th", _("Verdict"))
                + ("<th>Slurm</th>" if slurm_col else "") + _tag("th", _("Open findings")) + "</tr>")
    by_node: dict[str, list[Finding]] = {}
    for f in result.findings:
        if f.is_open and f.severity != "info":
            by_node.setdefault(f.node, []).append(f)
    for name, verdict in result.verdicts.items():
        kinds = ", ".join(_worst_kinds(by_node.get(name, ())))
        if verdict == "unknown":
            kinds = _("never reached: no evidence")
        elif verdict == "unreachable" and "node-unreachable" not in kinds:
            kinds = ", ".join(k for k in (_("not answering now"), kinds) if k)
        elif verdict == "stale" or name in (s.get("stale") or {}):
            age = _no_data_for(float((s.get("stale") or {}).get(name, 0.0)))
            kinds = ", ".join(k for k in (age, kinds) if k)
        cell = f"<td>{_e(slurm_state_text(slurm, name))}</td>" if slurm and slurm_col else ""
        body.append(f"<tr><td>{_e(name)}</td><td>{_badge(verdict)}</td>{cell}<td>{_e(kinds)}</td></tr>")
    body.append("</table>")
    if slurm is not None:
        if slurm.get("asked") and not slurm.get("available"):
            body.append(f'<p class="small">Slurm unavailable: {_e(slurm.get("error"))}</p>')
        actions = list(slurm.get("actions") or ())
        body.append(f"<h2>Slurm drains and resumes ({len(actions)})</h2>")
        if actions:
            body.append("<table><tr><th>When</th><th>What</th></tr>")
            body += [f"<tr><td>{_e(_short(a.get('ts')))}</td><td>{_e(slurm_action_text(a, with_time=False))}</td></tr>"
                     for a in actions]
            body.append("</table>")
        else:
            body.append(_tag("p", _("None."), "small"))
    body.append(_tag("h2", _("Open findings")))
    body.append(_findings_table([f for f in result.findings if f.is_open], acked=s.get("acknowledged")))
    body.append(_tag("h2", _("Resolved in the window")))
    body.append(_findings_table([f for f in result.findings if not f.is_open], resolved=True))
    return _page(title, body)


def preflight_html(result: PreflightResult) -> str:
    """The preflight as one printable, self-contained HTML page."""
    title = _("fleetmon preflight")
    body = [
        f"<h1>{_e(title)}</h1>",
        '<p class="meta">' + _e(_("{nodes}, window {days} ({since} .. {now} UTC) · GO {go} · NO-GO {no_go} · "
                                  "exit status {code}").format(
            nodes=W.nodes(len(result.nodes)), days=W.days(result.days), since=_short(result.since),
            now=_short(result.now), go=len(result.go), no_go=len(result.no_go), code=exit_status(result))) + "</p>",
        "<p>" + _e(_("Exclude:")) + " <code>" + _e(result.exclude or _("(none)")) + "</code></p>",
        *([f"<p>{_e(_preflight_vendors_line(result))}</p>"] if any(v != "nvidia" for v in result.vendors.values())
          else []),
        "<table><tr>" + "".join(_tag("th", _(h)) for h in (N_("Node"), N_("Verdict"), N_("Reasons"), "ECC",
                                                                 N_("Power"))) + "</tr>",
    ]
    for n in sorted(result.nodes, key=lambda n: (n.go, hostlist.sort_key(n.name))):
        reasons = "".join(f"<li>{_e(localized(r))}</li>" for r in n.reasons)
        warnings = "".join(f'<li class="small">{_e(localized(w))}</li>' for w in n.warnings)
        listing = f"<ul>{reasons}{warnings}</ul>" if reasons or warnings else ""
        body.append(
            f"<tr><td>{_e(n.name)}</td><td>{_badge(n.verdict)}</td><td>{listing}</td>"
            f'<td class="small">{_e(_ecc_line(n.ecc))}</td><td class="small">{_e(_power_line(n.power))}</td></tr>')
    body.append("</table>")
    body.append(_tag("h2", _("Findings in the window")))
    body.append(_findings_table(list(result.findings)))
    return _page(title, body)
