"""Findings an operator can trust (issue 10, item 2): verdicts on evidence only, driver baselines per
group or GPU model with minimum drivers, real onsets, a fixed worst-finding order, and report wording."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from fleetmon import assess, specs
from fleetmon.health import engine, render, render_html
from fleetmon.health.findings import KIND_PRIORITY, KINDS, Finding, worst_order
from fleetmon.health.fleet import FleetHistory, GpuHistory, GroupExpect, NodeHistory
from fleetmon.health.rules.versions import check_driver_versions
from helpers import HOT, T0, Feeder, between
from storage.db import open_database

NOW = 1_750_000_000.0
A100 = "NVIDIA A100-SXM4-80GB"
H100 = "NVIDIA H100 80GB HBM3"


@pytest.fixture
def db(tmp_path: Any) -> Iterator[Any]:
    d = open_database(tmp_path / "fleet.db")
    yield d
    d.close()


def _ghost_and_dead(db: Any) -> engine.ReportResult:
    """n1 healthy, n2 answered for two hours and its agent just died (one failed poll), ghost never answered."""
    feeder = Feeder(db, nodes=("n1", "n2", "ghost"))
    feeder.feed(T0, T0 + 3600, down=["ghost"])
    feeder.feed(T0 + 3600, T0 + 7200, down=["ghost"])
    feeder.feed(T0 + 7200, T0 + 7260, down=["ghost", "n2"])
    return assess.run_report(db, T0 + 7260, 86400, None).result


# -- verdicts -----------------------------------------------------------------------------------


def test_a_node_never_reached_is_unknown_and_a_dead_agent_unreachable_in_every_format(db: Any) -> None:
    result = _ghost_and_dead(db)
    assert result.verdicts == {"n1": "pass", "n2": "unreachable", "ghost": "unknown"}
    assert result.status == "unreachable" and render.exit_status(result) == render.EXIT_CRITICAL
    text = render.report_text(result)
    assert "Unreachable:   n2\n" in text and "Never reached: ghost\n" in text
    assert re.search(r"^  UNREACHABLE +n2 ", text, re.M) and re.search(r"^  UNKNOWN +ghost ", text, re.M)
    assert re.search(r"^  PASS +1 node: n1$", text, re.M)
    doc = json.loads(render.report_json(result))
    assert {n["name"]: n["verdict"] for n in doc["nodes"]} == result.verdicts
    assert doc["summary"]["unreachable"] == ["ghost", "n2"] and doc["summary"]["never_reached"] == ["ghost"]
    assert doc["summary"]["verdicts"]["unknown"] == 1 and doc["summary"]["verdicts"]["unreachable"] == 1
    html = render_html.report_html(result)
    assert '<td>ghost</td><td><span class="b unknown">UNKNOWN</span>' in html
    assert '<td>n2</td><td><span class="b unreachable">UNREACHABLE</span>' in html


def test_preflight_is_no_go_for_never_reached_and_unreachable_nodes(db: Any) -> None:
    _ghost_and_dead(db)
    result = assess.run_preflight(db, T0 + 7260, "n[1-2],ghost", 1).result
    assert result.go == ["n1"] and set(result.no_go) == {"n2", "ghost"}
    reasons = {n.name: n.reasons for n in result.nodes}
    assert any("unreachable now" in r for r in reasons["n2"])
    assert any("never reached" in r for r in reasons["ghost"])


def test_node_verdicts_take_reachability_over_warnings_but_a_failed_node_stays_failed() -> None:
    findings = [Finding("xid", "critical", "n1", "u", 0, 1), Finding("node-unreachable", "critical", "n3", None, 0, 1),
                Finding("thermal-throttle", "warning", "n5", "v", 0, 1)]
    got = engine.node_verdicts(findings, ["n1", "n2", "n3", "n4", "n5", "n6"],
                               {"n1": "unreachable", "n2": "unknown", "n5": "stale", "n6": "stale"})
    # A node silent now with an open critical finding is still failed: its silence is not evidence.
    assert got == {"n1": "fail", "n2": "unknown", "n3": "unreachable", "n4": "pass", "n5": "stale", "n6": "stale"}
    assert engine.VERDICTS[0] == "fail" and engine.VERDICTS[-1] == "pass"


# -- drivers ------------------------------------------------------------------------------------


def _node(name: str, driver: str, cuda: str = "12.2", group: str | None = None) -> NodeHistory:
    return NodeHistory(name=name, group=group, driver_version=driver, cuda_driver_version=cuda,
                       last_ok=NOW - 10, last_attempt=NOW - 10)


def _card(node: str, model: str) -> GpuHistory:
    return GpuHistory.from_row({"uuid": f"GPU-{node}", "node": node, "index": 0, "name": model,
                                "first_seen": NOW - 30 * 86400, "last_seen": NOW - 30}, minutes=None)


def _fleet(nodes: list[tuple[NodeHistory, str]], groups: dict[str, GroupExpect] | None = None) -> FleetHistory:
    return FleetHistory(now=NOW, since=NOW - 86400, nodes=tuple(n for n, _ in nodes),
                        gpus=tuple(_card(n.name, m) for n, m in nodes), groups=groups or {})


def test_ungrouped_nodes_are_judged_against_nodes_with_the_same_gpu_model() -> None:
    # A mixed pool: the fleet majority is 535 (A100s), the H100s run 550 by design.
    nodes = [(_node(f"a{i}", "535.161.08"), A100) for i in range(4)]
    nodes += [(_node(f"h{i}", "550.54.15", "12.4"), H100) for i in range(2)]
    nodes += [(_node("a9", "550.54.15", "12.4"), A100)]
    found = check_driver_versions(_fleet(nodes))
    assert [(f.node, f.severity, f.evidence["expected"], f.evidence["peers"]) for f in found] == [
        ("a9", "warning", "535.161.08", "model")]
    assert "group (none)" not in found[0].summary and "ungrouped NVIDIA A100-SXM4-80GB nodes" in found[0].summary


def test_one_driver_finding_per_node_not_one_more_for_the_cuda_version() -> None:
    nodes = [(_node(f"n{i}", "535.161.08", "12.2", group="g"), A100) for i in range(3)]
    nodes += [(_node("n9", "550.54.15", "12.4", group="g"), A100)]
    [f] = check_driver_versions(_fleet(nodes))
    assert (f.node, f.evidence["field"], f.evidence["cuda_version"]) == ("n9", "driver", "12.4")


def test_a_driver_older_than_the_card_supports_is_never_advised() -> None:
    groups = {"g": GroupExpect("g", expected_driver="470.82.01")}
    nodes = [(_node("h1", "550.54.15", group="g"), H100), (_node("a1", "550.54.15", group="g"), A100)]
    by_node = {f.node: f for f in check_driver_versions(_fleet(nodes, groups))}
    hopper = by_node["h1"]
    assert hopper.evidence["min_driver"] == "520.61.05"
    assert "Install" not in hopper.action and "at least 520.61.05" in hopper.action
    assert by_node["a1"].action.startswith("Install the driver of group g (470.82.01)")  # Ampere runs 470


def test_minimum_drivers_cover_every_architecture_of_the_catalog() -> None:
    archs = {s.architecture for s in specs.all_specs() if s.vendor == "nvidia"}  # NVIDIA's driver floors only
    assert archs == {m.architecture for m in specs.MIN_DRIVERS}
    assert all(m.source for m in specs.MIN_DRIVERS)
    assert specs.min_driver(H100) is not None and specs.min_driver("NVIDIA Unknown 9000") is None
    assert specs.version_key("535.161.08") > specs.version_key("520.61.05") > specs.version_key("455.23")


def test_docs_min_driver_table_is_generated() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "spec-catalog.md").read_text(encoding="utf-8")
    begin = "<!-- BEGIN GENERATED: python -m fleetmon.specs --min-drivers -->\n"
    assert begin in text
    assert text.split(begin, 1)[1].split("<!-- END GENERATED -->", 1)[0] == specs.min_drivers_markdown()


# -- onsets -------------------------------------------------------------------------------------


def test_first_seen_is_the_real_onset_not_the_start_of_the_window(db: Any) -> None:
    feeder = Feeder(db, nodes=("n1", "n2", "n3"), drivers={"n3": "535.161.08"})
    feeder.feed(T0, T0 + 7200)  # two hours of data, a 24 h window
    result = assess.run_report(db, T0 + 7200, 86400, None).result
    [f] = [f for f in result.findings if f.kind == "driver-mismatch"]
    assert f.first_seen == T0 and f.first_seen > result.since
    assert "since " + render.short_time(T0) in render.report_text(result)


def test_a_report_carries_the_stored_onset_of_a_finding_older_than_its_window(db: Any) -> None:
    feeder = Feeder(db, nodes=("n1", "n2", "n3"), drivers={"n3": "535.161.08"})
    feeder.feed(T0, T0 + 7200)
    assess.evaluate_and_store(db, T0 + 7200)
    feeder.feed(T0 + 7200, T0 + 4 * 3600)
    result = assess.run_report(db, T0 + 4 * 3600, 3600, None).result  # a one-hour window
    [f] = [f for f in result.findings if f.kind == "driver-mismatch"]
    assert f.first_seen == T0


# -- worst finding ------------------------------------------------------------------------------


def test_kind_priority_lists_every_kind_once_and_orders_ties() -> None:
    assert sorted(KIND_PRIORITY) == sorted(KINDS)
    pairs = [("warning", "ecc-correctable-storm"), ("warning", "xid")]
    assert min(pairs, key=lambda p: worst_order(*p)) == ("warning", "xid")
    assert min(reversed(pairs), key=lambda p: worst_order(*p)) == ("warning", "xid")
    assert worst_order("critical", "derating") < worst_order("warning", "xid")
    assert worst_order("warning", "xid", 10.0) < worst_order("warning", "xid", 20.0)


def test_report_orders_a_nodes_kinds_worst_first(db: Any) -> None:
    feeder = Feeder(db, nodes=("n1", "n2", "n3"), drivers={"n3": "535.161.08"})
    feeder.feed(T0, T0 + 3600, {("n3", 0): between(T0 + 1800, T0 + 3600, HOT)})
    text = render.report_text(assess.run_report(db, T0 + 3600, 86400, None).result)
    nodes = text.split("\nNodes\n", 1)[1].split("\n\n", 1)[0]
    [line] = [ln for ln in nodes.splitlines() if re.match(r"^  WARN +n3 ", ln)]
    assert line.index("thermal-throttle") < line.index("driver-mismatch")


# -- wording and layout -------------------------------------------------------------------------


def test_counts_are_pluralised_and_host_lists_spaced(db: Any) -> None:
    feeder = Feeder(db, nodes=("n1", "x1", "gpu01", "gpu02", "gpu05"), gpus=1)
    feeder.feed(T0, T0 + 3600)
    text = render.report_text(assess.run_report(db, T0 + 3600, 86400, None).result)
    assert "(s)" not in text and "1 nodes" not in text
    assert "(5 nodes, 5 GPUs)" in text
    assert re.search(r"^  PASS +5 nodes: gpu\[01-02,05\], n1, x1$", text, re.M)
    one = Feeder(db, nodes=("solo",), gpus=1)
    one.feed(T0 + 3600, T0 + 7200)
    solo = assess.run_report(db, T0 + 7200, 3600, None).result
    pf = render.preflight_text(assess.run_preflight(db, T0 + 7200, "solo", 1).result)
    assert "— 1 node, window 1 day " in pf and "(s)" not in pf
    assert "PASS 0" not in render.report_text(solo)


def test_no_pass_line_when_no_node_passes(db: Any) -> None:
    feeder = Feeder(db, nodes=("n1",))
    feeder.feed(T0, T0 + 3600, down=["n1"])
    text = render.report_text(assess.run_report(db, T0 + 3600, 86400, None).result)
    assert "PASS" not in text.split("Nodes", 1)[1].split("Open findings", 1)[0]


def test_text_columns_stay_aligned_for_long_names(db: Any) -> None:
    long = "a-very-long-node-name-in-rack-17"
    feeder = Feeder(db, nodes=("n1", long), drivers={long: "535.161.08"})
    feeder.feed(T0, T0 + 3600, {(long, 1): between(T0 + 1800, T0 + 3600, HOT), ("n1", 0): between(
        T0 + 1800, T0 + 3600, HOT)})
    text = render.report_text(assess.run_report(db, T0 + 3600, 86400, None).result)
    rows = [ln for ln in text.split("Open findings", 1)[1].splitlines() if re.match(r"^  (WARN|INFO|CRIT)  ", ln)]
    assert len(rows) >= 2
    kind_cols = {ln.index(next(k for k in KINDS if f" {k} " in ln)) for ln in rows}
    assert len(kind_cols) == 1, rows
    nodes = [ln for ln in text.split("\nNodes\n", 1)[1].split("\n\n", 1)[0].splitlines() if "WARN" in ln]
    assert len({ln.index("thermal-throttle") for ln in nodes}) == 1, nodes


def test_html_never_breaks_words_mid_way(db: Any) -> None:
    feeder = Feeder(db)
    feeder.feed(T0, T0 + 3600, {("n2", 1): between(T0 + 1800, T0 + 3600, HOT)})
    html = render_html.report_html(assess.run_report(db, T0 + 3600, 86400, None).result)
    assert "break-all" not in html and "word-break:break-word" not in html
    css = html.split("<style>", 1)[1].split("</style>", 1)[0]
    assert re.findall(r"([.\w,]+)\{[^}]*overflow-wrap:anywhere", css) == [".tok"]
    assert "table-layout:auto" in css
    assert '<td class="nw"><code>thermal-throttle</code></td>' in html
