"""The report and preflight as printable HTML: one self-contained page each (inline CSS, every value escaped).

Split from :mod:`fleetmon.health.render` (its text, JSON and the helpers both share), which keeps the CSS and
the escaping that the evidence bundle and the intake certificate also use.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fleetmon import hostlist
from fleetmon.health import wording as W
from fleetmon.health.engine import PreflightResult, ReportResult
from fleetmon.health.findings import Finding
from fleetmon.health.render import (CSS, ack_text, badge, counts_line, drivers_line, esc, ecc_line, hosts,
                                    mixed_vendors, models_line, no_data_for, power_line, preflight_vendors_line,
                                    report_title, said_list, short_time, stale_line, vendors_line, verdict_counts,
                                    worst_kinds, exit_status, resolution_text, slurm_action_text,
                                    slurm_state_text)
from fleetmon.i18n import N_, current_language, localized
from fleetmon.i18n import gettext as _

__all__ = ["preflight_html", "report_html"]

# Simplified Chinese faces first (Noto/Source Han SC on Linux, PingFang on macOS, YaHei on Windows): a generic
# sans-serif may resolve to a Japanese CJK face (LibreOffice did), whose forms of some characters differ.
# Dates in table cells keep to one line ("2026年12月3日 15:30" breaks at any character in a narrow column).
_CSS_ZH = ('body{font-family:"Noto Sans CJK SC","Source Han Sans SC","PingFang SC","Microsoft YaHei",'
           'system-ui,sans-serif}td.nw,th{white-space:nowrap}\n')


def page(title: str, body: Sequence[str], css: str = CSS) -> str:
    """An HTML page of ``body`` in the reader's language (``lang``, and the Chinese font faces in Chinese): the
    report, the preflight, the evidence summary and the intake certificate."""
    lang = current_language().replace("_", "-")  # "en", "zh-CN": the browser picks a CJK font for zh-CN
    return (f"<!DOCTYPE html>\n<html lang=\"{lang}\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{css}{_CSS_ZH if lang == 'zh-CN' else ''}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")




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
            f"<tr{cls}><td class=\"nw\">{badge(f.severity)}</td><td class=\"tok\">{esc(f.where())}</td>"
            f"<td class=\"nw\"><code>{esc(f.kind)}</code></td><td>{esc(localized(f.summary))}{_ack_cell(acked, f.key)}"
            f"{_resolution_cell(f)}</td>"
            f"<td class=\"nw\">{esc(short_time(f.first_seen))}</td><td class=\"nw\">{esc(short_time(f.last_seen))}</td>"
            f"<td class=\"small\">{esc(localized(f.action))}</td></tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _resolution_cell(f: Finding) -> str:
    how = resolution_text(f)
    return f'<br><span class="small">{esc(how)}</span>' if how else ""


def _ack_cell(acked: Mapping[str, Mapping[str, Any]] | None, key: str) -> str:
    return f'<br><span class="small">{esc(ack_text(acked[key]))}</span>' if acked and key in acked else ""


def _row(label: str, value: str) -> str:
    """One row of a two-column table: the label (marked with N_, said here) and the value."""
    return f"<tr>{_tag('th', _(label))}<td>{esc(value)}</td></tr>"


def _tag(tag: str, text: str, cls: str = "") -> str:
    """``<tag class="cls">text</tag>``, the text escaped (marked text stays outside f-strings: on Python 3.11
    Babel's extractor does not look into them)."""
    return f'<{tag} class="{cls}">{esc(text)}</{tag}>' if cls else f"<{tag}>{esc(text)}</{tag}>"


def report_html(result: ReportResult) -> str:
    """The report as one printable, self-contained HTML page."""
    s = result.summary
    counts = verdict_counts(result.verdicts)
    never = set(s.get("never_reached") or ())
    down = [n for n in s.get("unreachable") or () if n not in never and n not in (s.get("stale") or {})]
    title = report_title(result.group)
    none = _("none")
    body = [
        f"<h1>{esc(title)} {badge(result.status)}</h1>",
        '<p class="meta">' + esc(_("Window {since} .. {now} UTC ({span}) · {counts} · {nodes}, {gpus} · "
                                  "exit status {code}").format(
            since=short_time(result.since), now=short_time(result.now), span=W.span(result.now - result.since),
            counts=counts_line(counts), nodes=W.nodes(s.get("nodes", 0)), gpus=W.gpus(s.get("gpus", 0)),
            code=exit_status(result))) + "</p>",
        _tag("h2", _("Fleet")) + "<table>",
        _row(N_("GPUs by model"), models_line(s.get("gpus_by_model", {}))),
        _row(N_("Driver versions"), drivers_line(s.get("driver_versions", {}))),
        *([_row(N_("By vendor"), vendors_line(s))] if mixed_vendors(s) else []),
        _row(N_("Unreachable"), hosts(down) if down else none),
        _row(N_("Never reached"), hosts(sorted(never, key=hostlist.sort_key)) if never else none),
        _row(N_("Stale"), stale_line(s.get("stale") or {})) + "</table>",
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
        body += [f"<tr><td>{esc(short_time(c['ts']))}</td><td>{esc(localized(c['summary']))}</td></tr>" for c in inventory]
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
        kinds = said_list(worst_kinds(by_node.get(name, ())))
        if verdict == "unknown":
            kinds = _("never reached: no evidence")
        elif verdict == "unreachable" and "node-unreachable" not in kinds:
            kinds = said_list([k for k in (_("not answering now"), kinds) if k])
        elif verdict == "stale" or name in (s.get("stale") or {}):
            age = no_data_for(float((s.get("stale") or {}).get(name, 0.0)))
            kinds = said_list([k for k in (age, kinds) if k])
        cell = f"<td>{esc(localized(slurm_state_text(slurm, name)))}</td>" if slurm and slurm_col else ""
        body.append(f"<tr><td>{esc(name)}</td><td>{badge(verdict)}</td>{cell}<td>{esc(kinds)}</td></tr>")
    body.append("</table>")
    if slurm is not None:
        if slurm.get("asked") and not slurm.get("available"):
            body.append(_tag("p", _("Slurm unavailable: {error}").format(error=slurm.get("error")), "small"))
        actions = list(slurm.get("actions") or ())
        body.append(_tag("h2", _("Slurm drains and resumes ({count})").format(count=len(actions))))
        if actions:
            body.append("<table><tr>" + _tag("th", _("When")) + _tag("th", _("What")) + "</tr>")
            body += [f"<tr><td>{esc(short_time(a.get('ts')))}</td><td>{esc(slurm_action_text(a, with_time=False))}</td></tr>"
                     for a in actions]
            body.append("</table>")
        else:
            body.append(_tag("p", _("None."), "small"))
    body.append(_tag("h2", _("Open findings")))
    body.append(_findings_table([f for f in result.findings if f.is_open], acked=s.get("acknowledged")))
    body.append(_tag("h2", _("Resolved in the window")))
    body.append(_findings_table([f for f in result.findings if not f.is_open], resolved=True))
    return page(title, body)


def preflight_html(result: PreflightResult) -> str:
    """The preflight as one printable, self-contained HTML page."""
    title = _("fleetmon preflight")
    body = [
        f"<h1>{esc(title)}</h1>",
        '<p class="meta">' + esc(_("{nodes}, window {days} ({since} .. {now} UTC) · GO {go} · NO-GO {no_go} · "
                                  "exit status {code}").format(
            nodes=W.nodes(len(result.nodes)), days=W.days(result.days), since=short_time(result.since),
            now=short_time(result.now), go=len(result.go), no_go=len(result.no_go), code=exit_status(result))) + "</p>",
        "<p>" + esc(_("Exclude:")) + " <code>" + esc(result.exclude or _("(none)")) + "</code></p>",
        *([f"<p>{esc(preflight_vendors_line(result))}</p>"] if any(v != "nvidia" for v in result.vendors.values())
          else []),
        "<table><tr>" + "".join(_tag("th", _(h)) for h in (N_("Node"), N_("Verdict"), N_("Reasons"), "ECC",
                                                                 N_("Power"))) + "</tr>",
    ]
    for n in sorted(result.nodes, key=lambda n: (n.go, hostlist.sort_key(n.name))):
        reasons = "".join(f"<li>{esc(localized(r))}</li>" for r in n.reasons)
        warnings = "".join(f'<li class="small">{esc(localized(w))}</li>' for w in n.warnings)
        listing = f"<ul>{reasons}{warnings}</ul>" if reasons or warnings else ""
        body.append(
            f"<tr><td>{esc(n.name)}</td><td>{badge(n.verdict)}</td><td>{listing}</td>"
            f'<td class="small">{esc(ecc_line(n.ecc))}</td><td class="small">{esc(power_line(n.power))}</td></tr>')
    body.append("</table>")
    body.append(_tag("h2", _("Findings in the window")))
    body.append(_findings_table(list(result.findings)))
    return page(title, body)
