"""Rendering reports and preflights: text (default), JSON and printable HTML.

Inputs are the pure results of :mod:`fleetmon.health.engine`
(:class:`~fleetmon.health.engine.ReportResult`,
:class:`~fleetmon.health.engine.PreflightResult`). Nothing here reads a
clock or a file; the HTML is one self-contained page (inline CSS, every
value escaped) that prints cleanly.

The HTML pages are :mod:`fleetmon.health.render_html`'s (``report_html``, ``preflight_html``).

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
from fleetmon.i18n import N_, Text, current_language, listing, localized
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
    "preflight_json",
    "preflight_text",
    "report_dict",
    "report_json",
    "report_text",
]

SCHEMA = 1
EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CRITICAL = 2

def hosts(names: Sequence[str]) -> str:
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


def worst_kinds(findings: Iterable[Finding], with_severity: bool = False) -> list[str]:
    """Distinct kinds of ``findings``, worst first (:func:`worst_order`)."""
    seen: dict[str, str] = {}
    for f in sorted(findings, key=lambda f: worst_order(f.severity, f.kind, f.first_seen)):
        seen.setdefault(f.kind, _("{kind} ({severity})").format(kind=f.kind, severity=W.word(f.severity))
                        if with_severity else f.kind)
    return list(seen.values())


def verdict_counts(verdicts: Mapping[str, str]) -> dict[str, int]:
    values = list(verdicts.values())
    return {v: values.count(v) for v in VERDICTS}


def counts_line(counts: Mapping[str, int]) -> str:
    """"1 fail, 0 warn, 2 pass" and, where there are any, "1 unreachable", "1 unknown"."""
    parts = [_("{count} {verdict}").format(count=counts.get(v, 0), verdict=W.word(v))
             for v in VERDICTS if v in ("fail", "warn", "pass") or counts.get(v)]
    return said_list(parts)


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


def stale_line(stale: Mapping[str, float]) -> str:
    return said_list([_("{node} ({age})").format(node=n, age=W.age(float(a))) for n, a in stale.items()]) or _("none")


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
        reason = str(res.get("reason") or "")
        words = localized(res.get("reason_text") or RESOLVE_REASONS.get(reason, reason))  # marked reasons
        text = (_("resolved by {who} at {at}: {reason}") if res.get("by") else _("resolved at {at}: {reason}")).format(
            who=res.get("by"), at=short_time(res.get("at")), reason=words)
        return _("{text} — {note}").format(text=text, note=res.get("note")) if res.get("note") else text
    if why.get("why"):
        return _("resolved by data: {why}").format(why=localized(why.get("why")))
    return ""


def _iso(ts: float | None) -> str | None:
    if ts is None:
        return None
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def short_time(ts: float | None) -> str:
    """A moment for people, in the reader's locale (English: "2026-12-03 15:30"; zh_CN: "2026年12月3日 15:30")."""
    if ts is None:
        return "—"
    return i18n.when(float(ts))


def _finding_dict(f: Finding) -> dict[str, Any]:
    d = f.to_dict()
    d["first_seen_iso"] = _iso(f.first_seen)
    d["last_seen_iso"] = _iso(f.last_seen)
    if current_language() != "en":
        # Scripts keep parsing the English ``summary`` and ``action``; a chat bot or a dashboard that shows the
        # finding to people takes these (only in a translated run: the English JSON is unchanged).
        d["summary_text"] = localized(f.summary)
        d["action_text"] = localized(f.action)
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


def said_list(items: Sequence[str], semicolons: bool = False) -> str:
    """``items`` joined as the reader's language joins a list ("a, b" / "a; b"; "a，b" / "a；b")."""
    return localized(listing(items, semicolons))


def models_line(models: Mapping[str, int]) -> str:
    return said_list([f"{n}x {m}" for m, n in models.items()]) or _("none")


def drivers_line(drivers: Mapping[str, int]) -> str:
    return said_list([_("{version} ({nodes})").format(version=v, nodes=W.nodes(n))
                       for v, n in drivers.items()]) or _("none")


def slurm_state_text(slurm: Mapping[str, Any], node: str) -> str:
    """A node's Slurm state in words, beside its verdict: ``idle``, ``drain (reason; who when)``, ``down``;
    ``Slurm unavailable`` or ``unknown to Slurm`` (never taken for a state)."""
    if not slurm.get("available"):
        return Text(N_("Slurm unavailable"))  # English in the JSON; localized() where shown
    state = (slurm.get("nodes") or {}).get(node)
    if not state:
        return Text(N_("unknown to Slurm"))
    text = str(state.get("short") or state.get("state") or "?")
    if state.get("reason"):
        who = " ".join(str(x) for x in (state.get("reason_by"), state.get("reason_at")) if x)
        text += f" ({state['reason']}{'; ' + who if who else ''})"
    return text


def slurm_action_text(a: Mapping[str, Any], with_time: bool = True) -> str:
    """One recorded drain or resume: when (``with_time``), what, by whom, the result and why."""
    result = "ok" if a.get("result") == "ok" else f"{str(a.get('result', '?')).upper()}: {a.get('error') or ''}".rstrip(": ")
    # The action (drain, resume), the result and the origin are Slurm's and fleetmon's identifiers: as they are.
    text = _("{action} {node} by {who} ({origin}): {result}").format(result=result, **{
        k: a.get(k) for k in ("action", "node", "who", "origin")})
    if a.get("reason"):
        text = _("{text} — {reason}").format(text=text, reason=a["reason"])
    return f"{short_time(a.get('ts'))} {text}" if with_time else text


def _slurm_lines(s: Mapping[str, Any], verdicts: Mapping[str, str]) -> list[str]:
    slurm = s.get("slurm")
    if not isinstance(slurm, Mapping):
        return []
    out = ["Slurm"]
    if slurm.get("asked"):
        if not slurm.get("available"):
            out.append("  " + _("Slurm unavailable: {error}").format(error=slurm.get("error")))
        else:
            name_w = max([12, *(len(n) for n in verdicts)])
            for name in sorted(verdicts, key=hostlist.sort_key):
                out.append(f"  {name:<{name_w}} {W.ljust(W.upper(verdicts[name]), 11)} "
                           f"{localized(slurm_state_text(slurm, name))}")
    actions = list(slurm.get("actions") or ())
    out.append("  " + _("Drains and resumes in the window ({count})").format(count=len(actions)))
    out += [f"    {slurm_action_text(a)}" for a in actions]
    out.append("")
    return out


def mixed_vendors(summary: Mapping[str, Any]) -> bool:
    """Whether the report speaks of vendors: any device not NVIDIA's (an NVIDIA-only report reads as before)."""
    return any(v != "nvidia" for v in (summary.get("nodes_by_vendor") or {}))


def vendors_line(s: Mapping[str, Any]) -> str:
    """"NVIDIA 8 GPUs on 2 nodes (driver 550.54.15 ×2, CUDA 12.4 ×2); AMD 4 GPUs on 1 node (driver 6.3.6 ×1)"."""
    from fleetmon.vendors import runtime_name, vendor_name

    parts = []
    for vendor, nodes in (s.get("nodes_by_vendor") or {}).items():
        gpus = (s.get("gpus_by_vendor") or {}).get(vendor, 0)
        versions = [_("driver {version} ×{count}").format(version=v, count=n)
                    for v, n in ((s.get("drivers_by_vendor") or {}).get(vendor) or {}).items()]
        versions += [f"{runtime_name(vendor)} {v} ×{n}"
                     for v, n in ((s.get("runtimes_by_vendor") or {}).get(vendor) or {}).items()]
        part = _("{vendor} {gpus} on {nodes}").format(vendor=vendor_name(vendor), gpus=W.gpus(gpus),
                                                      nodes=W.nodes(nodes))
        parts.append(_("{text} ({versions})").format(text=part, versions=said_list(versions)) if versions else part)
    return said_list(parts, semicolons=True) or _("none")


def report_text(result: ReportResult) -> str:
    """The report as plain text for a terminal or a mail."""
    s = result.summary
    counts = verdict_counts(result.verdicts)
    never = set(s.get("never_reached") or ())
    down = [n for n in s.get("unreachable") or () if n not in never and n not in (s.get("stale") or {})]
    ww = _where_width([*result.findings, *result.new, *result.resolved, *result.worsened])
    out = [
        report_title(result.group),
        _("Window: {since} .. {now} UTC ({span})").format(since=short_time(result.since), now=short_time(result.now),
                                                        span=W.span(result.now - result.since)),
        _("Status: {status} — {counts} ({nodes}, {gpus})").format(
            status=W.upper(result.status), counts=counts_line(counts), nodes=W.nodes(s.get("nodes", 0)),
            gpus=W.gpus(s.get("gpus", 0))),
        "",
        _("Fleet"),
        _("  GPUs by model: {models}").format(models=models_line(s.get("gpus_by_model", {}))),
        _("  Drivers:       {drivers}").format(drivers=drivers_line(s.get("driver_versions", {}))),
        *([_("  By vendor:     {vendors}").format(vendors=vendors_line(s))] if mixed_vendors(s) else []),
        _("  Unreachable:   {nodes}").format(nodes=hosts(down) if down else _("none")),
        _("  Never reached: {nodes}").format(
            nodes=hosts(sorted(never, key=hostlist.sort_key)) if never else _("none")),
        _("  Stale:         {nodes}").format(nodes=stale_line(s.get("stale") or {})),
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
        out.append(f"    {short_time(c['ts'])}  {localized(c['summary'])}")
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
        kinds = worst_kinds(by_node.get(name, ()), with_severity=True)
        if verdict == "unknown":
            kinds = [_("never reached: no evidence")]
        elif verdict == "unreachable" and not any(k.startswith("node-unreachable") for k in kinds):
            kinds = [_("not answering now"), *kinds]
        elif verdict == "stale" or name in (s.get("stale") or {}):
            kinds = [no_data_for(float((s.get("stale") or {}).get(name, 0.0))), *kinds]
        out.append(f"  {W.ljust(W.upper(verdict), verdict_w)}  {name:<{name_w}} {said_list(kinds)}".rstrip())
    if passing:
        out.append(f"  {W.ljust(W.upper('pass'), verdict_w)}  " + _("{nodes}: {hosts}").format(nodes=W.nodes(len(passing)),
                                                                                      hosts=hosts(passing)))
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
            out.append(f"        {ack_text(acked[f.key])}")
        out.append("        " + _("since {first}, last {last}; action: {action}").format(
            first=short_time(f.first_seen), last=short_time(f.last_seen), action=localized(f.action)))
    out.append("")
    out.append(_("Resolved in the window ({count})").format(count=len(resolved)))
    for f in resolved:
        out.append(_finding_line(f, ww) + "  " + _("(last {last})").format(last=short_time(f.last_seen)))
        how = resolution_text(f)
        if how:
            out.append(f"        {how}")
    out.append("")
    code = exit_status(result)
    out.append(_("Exit status: {code} (critical findings)").format(code=code) if code == EXIT_CRITICAL
               else _("Exit status: {code}").format(code=code))
    return _lines(out)


def report_title(group: str | None) -> str:
    return _("fleetmon report — group {group}").format(group=group) if group else _("fleetmon report")


def no_data_for(seconds: float) -> str:
    return _("no data for {age}").format(age=W.age(seconds))


def _lines(out: Sequence[str]) -> str:
    """The text's lines, each made safe for a terminal: the foreign text in them (node and model names,
    versions, finding summaries) cannot move the cursor, ring the bell or break a line."""
    return "".join(printable(line) + "\n" for line in out)


# ---------------------------------------------------------------------------
# Preflight


def _node_preflight_dict(n: NodePreflight, vendor: str = "nvidia") -> dict[str, Any]:
    d = {
        "name": n.name, "verdict": n.verdict, "go": n.go, "reasons": list(n.reasons),
        "warnings": list(n.warnings), "ecc": dict(n.ecc), "power": dict(n.power),
        "gpus": n.gpus, "expected_gpus": n.expected, "vendor": vendor,
    }
    if current_language() != "en":  # as _finding_dict: the English lists stay for scripts
        d["reasons_text"] = [localized(r) for r in n.reasons]
        d["warnings_text"] = [localized(w) for w in n.warnings]
    return d


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


def ecc_line(ecc: Mapping[str, Any]) -> str:
    if not ecc:
        return _("ECC: no data")
    return _("ECC: {corrected} corrected, {uncorrected} uncorrected, retired pages {retired}, pending {pending}, "
             "remap pending {remap_pending}, remap failed {remap_failed}").format(
        corrected=ecc.get("corrected", 0), uncorrected=ecc.get("uncorrected", 0),
        retired=ecc.get("retired_pages", 0), pending=ecc.get("retirement_pending", 0),
        remap_pending=ecc.get("remap_pending", 0), remap_failed=ecc.get("remap_failure", 0))


def power_line(power: Mapping[str, Any]) -> str:
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


def preflight_vendors_line(result: PreflightResult) -> str:
    """"By vendor: NVIDIA 2 GO, 0 NO-GO (16 GPUs); AMD 1 GO, 1 NO-GO (8 GPUs)"."""
    from fleetmon.vendors import vendor_name

    return _("By vendor: {vendors}").format(vendors=said_list([
        _("{vendor} {go} GO, {no_go} NO-GO ({gpus})").format(
            vendor=vendor_name(v), go=len(d["go"]), no_go=len(d["no_go"]), gpus=W.gpus(d["gpus"]))
        for v, d in preflight_by_vendor(result).items()], semicolons=True))


def preflight_text(result: PreflightResult) -> str:
    """The preflight as plain text."""
    out = [
        _("fleetmon preflight — {nodes}, window {days} ({since} .. {now} UTC)").format(
            nodes=W.nodes(len(result.nodes)), days=W.days(result.days), since=short_time(result.since),
            now=short_time(result.now)),
        _("GO {go}   NO-GO {no_go}").format(go=len(result.go), no_go=len(result.no_go)),
        _("Exclude: {hosts}").format(hosts=result.exclude or _("(none)")),
        *([preflight_vendors_line(result)] if any(v != "nvidia" for v in result.vendors.values()) else []),
        "",
    ]
    mixed = any(v != "nvidia" for v in result.vendors.values())
    for n in sorted(result.nodes, key=lambda n: (n.go, hostlist.sort_key(n.name))):
        gpus = (_("{count} GPUs of {expected}").format(count=n.gpus, expected=n.expected) if n.expected is not None
                else _("{count} GPUs").format(count=n.gpus))
        if mixed:  # a mixed pool says whose devices each node holds
            from fleetmon.vendors import vendor_name

            gpus = _("{gpus}, {vendor}").format(gpus=gpus, vendor=vendor_name(result.vendors.get(n.name)))
        out.append(f"{W.ljust(W.upper(n.verdict), 6)} {n.name}  " + _("({what})").format(what=gpus))
        out += [f"    - {localized(r)}" for r in n.reasons]
        out += [f"    ~ {localized(w)}" for w in n.warnings]
        out.append(f"    {ecc_line(n.ecc)}")
        out.append(f"    {power_line(n.power)}")
    out.append("")
    code = exit_status(result)
    out.append(_("Exit status: {code} (no-go nodes)").format(code=code) if code == EXIT_CRITICAL
               else _("Exit status: {code}").format(code=code))
    return _lines(out)


# ---------------------------------------------------------------------------
# HTML

CSS = """
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


def esc(value: Any) -> str:
    """Text for the page: control characters as visible escapes (as in the terminal), then HTML-escaped."""
    return html.escape(printable("" if value is None else str(value)), quote=True)


def badge(word: str) -> str:
    return f'<span class="b {esc(word)}">{esc(W.upper(word))}</span>'

def ack_text(ack: Mapping[str, Any]) -> str:
    """"acknowledged by ann: fan ordered" / "snoozed until 2024-05-02 10:00: …" (an operator's mark)."""
    who, until = ack.get("by"), ack.get("until")
    text = ((_("snoozed by {who} until {until}: {note}") if who else _("snoozed until {until}: {note}")) if until
            else _("acknowledged by {who}: {note}") if who else _("acknowledged: {note}"))
    return text.format(who=who, until=short_time(until) if until else "", note=ack.get("note") or _("(no note)"))
