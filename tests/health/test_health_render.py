"""Report and preflight rendering: text, JSON, HTML, escaping, exit status, docs."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from fleetmon import hostlist
from fleetmon.health import engine, render, render_html
from fleetmon.health.findings import KINDS, Finding, kinds_markdown
from fleetmon.health.thresholds import describe
from fleetmon.sim.synthetic import SimFault, SimNode, generate

NOW = 1_750_000_000 // 60 * 60
DOCS = Path(__file__).resolve().parents[2] / "docs" / "findings.md"


def _nodes() -> list[SimNode]:
    return [SimNode(f"gpu{i:02d}", "a100", 4, group="a100") for i in range(1, 9)]


@pytest.fixture(scope="module")
def scenario():
    history, labels = generate(_nodes(), NOW, days=1, minute_hours=6, seed=9, faults=[
        SimFault("ecc-uncorrectable", "gpu03", 1, NOW - 3600),
        SimFault("pcie-replay", "gpu07", 0, NOW - 7200),
        SimFault("pcie-link-degraded", "gpu08", 2, NOW - 7200),
        SimFault("node-unreachable", "gpu05", None, NOW - 1800),
        SimFault("vbios-mismatch", "gpu02", 0, NOW - 3600),
    ])
    findings = engine.evaluate(history)
    return history, labels, findings


def test_report_text(scenario) -> None:
    history, _, findings = scenario
    previous = [f for f in findings if f.kind == "pcie-replay"]
    result = engine.report(history, previous_open=previous, findings=findings)
    text = render.report_text(result)
    assert "Status: FAIL — 1 fail, 1 unreachable, 3 warn, 3 pass (8 nodes, 32 GPUs)" in text
    assert "Unreachable:   gpu05" in text
    assert "  New (" in text and "  Resolved (0)" in text
    assert re.search(r"^  FAIL +gpu03 ", text, re.M) and re.search(r"^  WARN +gpu07 ", text, re.M)
    assert re.search(r"^  UNREACHABLE +gpu05 +node-unreachable \(critical\)", text, re.M)
    assert re.search(r"^  PASS +3 nodes: gpu\[01,04,06\]$", text, re.M)
    assert text.rstrip().endswith("Exit status: 2 (critical findings)")
    assert render.exit_status(result) == render.EXIT_CRITICAL


def test_report_json_is_stable_and_documented(scenario) -> None:
    history, _, findings = scenario
    result = engine.report(history, findings=findings)
    doc = json.loads(render.report_json(result))
    assert doc["schema"] == 1 and doc["kind"] == "report" and doc["exit_status"] == 2
    assert set(doc) == {"schema", "kind", "generated_at", "generated_at_iso", "since", "since_iso", "group",
                        "status", "exit_status", "summary", "nodes", "changes", "findings"}
    assert set(doc["summary"]) == {"nodes", "gpus", "gpus_by_model", "driver_versions", "unreachable",
                                   "never_reached", "stale", "inventory_changes", "verdicts"}
    assert doc["summary"]["verdicts"] == {"pass": 3, "warn": 3, "fail": 1, "unreachable": 1, "stale": 0, "unknown": 0}
    assert doc["summary"]["gpus_by_model"] == {"NVIDIA A100-SXM4-80GB": 32}
    assert doc["changes"]["compared"] is False
    finding = doc["findings"][0]
    assert set(finding) == {"kind", "severity", "node", "gpu_uuid", "first_seen", "last_seen", "evidence",
                            "action", "summary", "key", "state", "gpu_index", "magnitude",
                            "first_seen_iso", "last_seen_iso"}
    assert Finding.from_dict(finding) == result.findings[0]
    text = DOCS.read_text(encoding="utf-8")
    for key in list(doc) + list(doc["summary"]):
        assert f"`{key}`" in text or f"`summary.{key}`" in text or f'"{key}"' in text, key
    assert render.report_json(result) == render.report_json(result)


def test_report_group_filter(scenario) -> None:
    history, _, findings = scenario
    result = engine.report(history, findings=findings, group="nope")
    assert result.verdicts == {} and result.findings == () and render.exit_status(result) == 0
    assert "Status: PASS" in render.report_text(result)


def test_report_changes_since_previous(scenario) -> None:
    history, _, findings = scenario
    first = engine.report(history, findings=findings)
    previous_open = [f for f in first.findings if f.is_open]
    gone = previous_open[0]
    current = [f for f in findings if f.key != gone.key]
    second = engine.report(history, previous_open=previous_open, findings=current)
    assert [f.key for f in second.resolved] == [gone.key] and second.new == ()
    doc = json.loads(render.report_json(second))
    assert doc["changes"]["compared"] is True
    assert [f["key"] for f in doc["changes"]["resolved"]] == [gone.key]
    assert doc["changes"]["resolved"][0]["state"] == "resolved"


def test_preflight_exclude_is_a_hostlist(scenario) -> None:
    history, _, findings = scenario
    result = engine.preflight(history, "gpu[01-08],gpu99", days=14, findings=findings)
    assert result.no_go == ["gpu03", "gpu05", "gpu07", "gpu08", "gpu99"]
    assert result.exclude == "gpu[03,05,07-08,99]"
    assert hostlist.expand(result.exclude) == result.no_go
    no_data = next(n for n in result.nodes if n.name == "gpu99")
    assert no_data.reasons == ("no data: the node is not in the database",)
    from fleetmon import i18n

    i18n.set_language("zh_CN")
    try:
        assert [i18n.localized(r) for r in no_data.reasons] == ["无数据：数据库中没有该节点"]
    finally:
        i18n.set_language("en")
    vbios = next(n for n in result.nodes if n.name == "gpu02")
    assert vbios.go and any("vbios-mismatch" in w for w in vbios.warnings)
    ecc = next(n for n in result.nodes if n.name == "gpu03").ecc
    assert ecc["uncorrected"] == 1 and ecc["cards_with_ecc"] == 4
    assert render.exit_status(result) == 2
    text = render.preflight_text(result)
    assert "Exclude: gpu[03,05,07-08,99]" in text and "GO 4   NO-GO 5" in text
    doc = json.loads(render.preflight_json(result))
    assert doc["schema"] == 1 and doc["kind"] == "preflight" and doc["exclude"] == "gpu[03,05,07-08,99]"
    assert set(doc["nodes"][0]) == {"name", "verdict", "go", "reasons", "warnings", "ecc", "power", "gpus",
                                    "expected_gpus", "vendor"}  # vendor: issue 23, added
    assert set(doc["nodes"][0]["power"]) == {"mean_w", "max_w", "power_brake_minutes", "unreadable_minutes",
                                             "capped_gpus", "limit_w", "default_w"}


def test_preflight_all_go_exits_zero(scenario) -> None:
    history, _, findings = scenario
    result = engine.preflight(history, ["gpu01", "gpu04", "gpu06"], days=14, findings=findings)
    assert result.exclude == "" and render.exit_status(result) == 0
    assert "Exclude: (none)" in render.preflight_text(result)


def test_preflight_resolved_critical_is_no_go() -> None:
    history, _ = generate(_nodes()[:2], NOW, days=3, minute_hours=6, seed=1, faults=[
        SimFault("gpu-lost", "gpu01", 1, NOW - 2 * 86400, until=NOW - 2 * 86400 + 3600)])
    result = engine.preflight(history, ["gpu01", "gpu02"], days=14)
    assert result.no_go == ["gpu01"]
    assert any("[gpu-lost, resolved]" in r for r in result.nodes[0].reasons)
    report = engine.report(history)
    assert report.verdicts["gpu01"] == "pass"  # resolved: the daily report does not fail the node


class _Collect(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs) -> None:  # noqa: ANN001
        self.tags.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_html_is_self_contained_printable_and_escaped(scenario) -> None:
    history, _, findings = scenario
    evil = Finding("xid", "critical", "gpu03", None, NOW - 60, NOW, {"code": 1},
                   "<script>alert(1)</script>", 'Xid "1" <b>bold</b> & more', state="open")
    result = engine.report(history, findings=findings + [evil])
    page = render_html.report_html(result)
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page and "@media print" in page
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; more" in page
    assert not re.search(r"(src|href)=\"?https?:", page)
    parser = _Collect()
    parser.feed(page)
    assert "table" in parser.tags and "script" not in parser.tags
    pf = render_html.preflight_html(engine.preflight(history, "gpu[01-08]", findings=findings))
    assert "gpu[03,05,07-08]" in pf and "<script" not in pf


def test_exit_status_of_findings() -> None:
    crit = Finding("gpu-lost", "critical", "n1", "u", 0, 1)
    assert render.exit_status([crit]) == 2
    assert render.exit_status([Finding("gpu-lost", "critical", "n1", "u", 0, 1, state="resolved")]) == 0
    assert render.exit_status([Finding("xid", "warning", "n1", "u", 0, 1)]) == 0
    assert (render.EXIT_OK, render.EXIT_ERROR, render.EXIT_CRITICAL) == (0, 1, 2)


def _block(text: str, name: str) -> str:
    match = re.search(rf"<!-- {name}:begin -->\n(.*?)<!-- {name}:end -->", text, re.S)
    assert match, f"docs/findings.md lacks the {name} block"
    return match.group(1)


def test_docs_thresholds_table_is_generated() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert _block(text, "thresholds") == describe()


def test_docs_lifecycle_table_is_generated() -> None:
    from fleetmon.health.lifecycle import lifecycle_markdown

    assert _block(DOCS.read_text(encoding="utf-8"), "lifecycle") == lifecycle_markdown()


def test_docs_kinds_table_is_generated() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert _block(text, "kinds") == kinds_markdown()
    for kind in KINDS:
        assert f"**{kind}**" in text or kind == "derating", kind


def test_slurm_beside_the_verdict_and_unavailable_never_as_a_state(scenario) -> None:
    from dataclasses import replace

    history, _, findings = scenario
    result = engine.report(history, findings=findings)
    assert "Slurm" not in render.report_text(result) and "slurm" not in render.report_dict(result)["nodes"][0]
    drained = {"state": "drained", "short": "drain", "responding": True, "reason": "fleetmon: Xid 79",
               "reason_by": "root", "reason_at": "2026-12-03T12:41:17"}
    action = {"ts": NOW - 60, "node": "gpu03", "action": "drain", "origin": "auto", "who": "fleetmon auto-drain",
              "reason": "gpu03 GPU 1: ECC", "result": "failed", "error": "slurmctld did not answer within 10 s"}
    up = replace(result, summary={**result.summary, "slurm": {
        "asked": True, "available": True, "error": None, "actions": [action],
        "nodes": {"gpu03": drained, "gpu01": {"state": "idle", "short": "idle"}}}})
    text = render.report_text(up)
    assert re.search(r"^  gpu03 +FAIL +drain \(fleetmon: Xid 79; root 2026-12-03T12:41:17\)$", text, re.M)
    assert re.search(r"^  gpu02 +WARN +unknown to Slurm$", text, re.M)
    assert "drain gpu03 by fleetmon auto-drain (auto): FAILED: slurmctld did not answer within 10 s" in text
    nodes = {n["name"]: n["slurm"] for n in render.report_dict(up)["nodes"]}
    assert nodes["gpu01"] == "idle" and nodes["gpu02"] == "unknown to Slurm"
    down = replace(result, summary={**result.summary, "slurm": {
        "asked": True, "available": False, "error": "Slurm is not installed here: no 'sinfo' on PATH",
        "nodes": {}, "actions": []}})
    text = render.report_text(down)
    assert "  Slurm unavailable: Slurm is not installed here: no 'sinfo' on PATH" in text
    assert not re.search(r"\b(idle|drain|down)\b", text.split("\nSlurm\n", 1)[1].split("Open findings")[0])
    assert {n["slurm"] for n in render.report_dict(down)["nodes"]} == {"Slurm unavailable"}
    assert "Slurm unavailable: Slurm is not installed here" in render_html.report_html(down)
