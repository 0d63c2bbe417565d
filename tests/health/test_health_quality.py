"""Quality of the health engine on labelled simulated scenarios.

Every injected fault (one scenario per finding kind, plus escalations and
card/slot swaps) must be found with the right kind on the right node and GPU,
open, and named within 10 minutes of its onset: each scenario is evaluated
exactly 10 minutes after the onset and the finding's ``first_seen`` must not
be later than that. A healthy simulated fleet of 64 nodes over 7 days (hourly
rows for the older days, minutes for the last one) must give no warning or
critical finding. Recall per kind and false alarms are written, at the end of
the run, to the file named by ``--quality-report FILE`` (``-`` prints them in
pytest's terminal summary); without the option nothing is printed.
"""

from __future__ import annotations

import time
from pathlib import Path
from collections import defaultdict
from typing import Any

import pytest

from fleetmon.health import engine
from fleetmon.health.findings import Finding
from fleetmon.sim.synthetic import Label, SimFault, SimNode, SimSwap, generate, healthy_fleet

NOW = 1_750_000_000 // 60 * 60
ONSET = NOW - 600  # evaluated exactly 10 minutes after the onset


class _QualityReport:
    """Collects results and writes them where ``--quality-report`` says, at the end of the run."""

    def __init__(self, target: str | None) -> None:
        self.target = target
        self.recall: dict[str, list[bool]] = defaultdict(list)
        self.collateral = 0
        self.healthy: dict[str, Any] | None = None

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.target is None or (not self.recall and self.healthy is None):
            return
        lines = self.lines()
        if self.target == "-":
            terminalreporter.write_sep("-", "fleetmon health quality: recall and false alarms")
            for line in lines:
                terminalreporter.write_line(line)
        else:
            Path(self.target).write_text("\n".join(["fleetmon health quality: recall and false alarms", *lines, ""]),
                                         encoding="utf-8")

    def lines(self) -> list[str]:
        out: list[str] = []
        out.append(f"{'kind':<24}{'injected':>9}{'found':>7}{'recall':>8}")
        total = found = 0
        for kind in sorted(self.recall):
            hits = self.recall[kind]
            total += len(hits)
            found += sum(hits)
            out.append(f"{kind:<24}{len(hits):>9}{sum(hits):>7}{sum(hits) / len(hits):>8.0%}")
        if total:
            out.append(f"{'all kinds':<24}{total:>9}{found:>7}{found / total:>8.0%}")
        out.append(f"warnings/criticals on untouched GPUs in fault scenarios: {self.collateral}")
        if self.healthy:
            h = self.healthy
            out.append(
                f"healthy fleet: {h['nodes']} nodes, {h['gpus']} GPUs, {h['days']} days: "
                f"{h['alarms']} warning/critical findings (false alarms), {h['info']} info; "
                f"generated in {h['gen_s']:.1f} s, evaluated in {h['eval_s']:.1f} s")
        return out


@pytest.fixture(scope="module")
def quality(request: pytest.FixtureRequest) -> _QualityReport:
    name = "fleetmon-health-quality"
    manager = request.config.pluginmanager
    report = manager.get_plugin(name)
    if report is None:
        report = _QualityReport(request.config.getoption("--quality-report"))
        manager.register(report, name)
    return report


def _fleet(model: str, nodes: int = 4, gpus: int = 4) -> list[SimNode]:
    return [SimNode(f"node{i:02d}", model, gpus, group="g") for i in range(1, nodes + 1)]


# name, model, fault kind, gpu, params, extra generate() keywords
SCENARIOS: list[tuple[str, str, str, int | None, dict[str, Any], dict[str, Any]]] = [
    ("driver-mismatch", "a100", "driver-mismatch", None, {}, {}),
    ("vbios-mismatch", "a100", "vbios-mismatch", 1, {}, {}),
    ("ecc-uncorrectable", "a100", "ecc-uncorrectable", 1, {}, {}),
    ("ecc-correctable-storm", "a100", "ecc-correctable-storm", 1, {"per_min": 600}, {}),
    ("retired-pages (V100)", "v100", "retired-pages", 1, {}, {}),
    ("retired-pages (T4)", "t4", "retired-pages", 3, {"sbe": 58, "dbe": 4}, {}),
    ("row-remap pending", "a100", "row-remap", 2, {}, {}),
    ("row-remap failure", "h100", "row-remap", 5, {"failure": True}, {}),
    ("xid 48 DBE", "a100", "xid", 1, {"code": 48}, {}),
    ("xid 13 application", "rtx3090", "xid", 0, {"code": 13}, {}),
    ("xid 79 on two GPUs (PSU)", "rtx4090", "xid", 1, {"code": 79, "gpus": [3]}, {}),
    ("gpu-lost", "a100", "gpu-lost", 3, {}, {}),
    ("gpu-missing", "l40s", "gpu-missing", 2, {}, {}),
    ("pcie-link-degraded", "rtx4090", "pcie-link-degraded", 1, {}, {}),
    ("pcie-replay", "rtx4090", "pcie-replay", 2, {}, {}),
    ("power-brake", "rtx4090", "power-brake", 1, {}, {}),
    ("power-instability", "rtx3090", "power-instability", 2, {}, {}),
    ("power-unreadable", "a10", "power-unreadable", 1, {}, {}),
    ("power-capped", "a100", "power-capped", 4, {}, {}),
    ("thermal-throttle", "a100", "thermal-throttle", 1, {}, {}),
    ("temperature-high", "h100", "temperature-high", 6, {}, {}),
    ("fan-stopped", "rtx3090", "fan-stopped", 1, {}, {}),
    ("derating", "a100", "derating", 1, {}, {}),
    ("derating (GeForce)", "rtx4090", "derating", 2, {"frac": 0.7}, {}),
    ("derating trend over weeks", "a100", "derating-trend", 1, {"per_week": 0.025}, {"daily_days": 21}),
    ("node-unreachable", "a100", "node-unreachable", None, {}, {}),
    ("node-flapping", "a100", "node-flapping", None, {}, {}),
    ("inventory-change (new card)", "a100", "inventory-change", 4, {}, {}),
]


def _found(findings: list[Finding], label: Label) -> Finding | None:
    for f in findings:
        if f.kind != label.kind or f.node != label.node or not f.is_open:
            continue
        if label.gpu_uuid is not None and f.gpu_uuid != label.gpu_uuid:
            continue
        if f.first_seen > label.onset + 600:
            continue
        return f
    return None


def _collateral(findings: list[Finding], labels: list[Label]) -> list[Finding]:
    """Warning/critical findings on nodes and GPUs no label touched."""
    gpus = {lab.gpu_uuid for lab in labels if lab.gpu_uuid}
    nodes = {lab.node for lab in labels if lab.gpu_uuid is None}
    return [f for f in findings if f.severity != "info" and f.gpu_uuid not in gpus
            and not (f.gpu_uuid is None and f.node in nodes) and f.node not in nodes
            and not (f.gpu_uuid is None and any(lab.node == f.node for lab in labels))]


@pytest.mark.parametrize("name,model,kind,gpu,params,extra", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_injected_fault_is_found_within_10_minutes(
    quality: _QualityReport, name: str, model: str, kind: str, gpu: int | None,
    params: dict[str, Any], extra: dict[str, Any],
) -> None:
    gpus = 8 if model in ("a100", "h100") else 4
    if kind == "inventory-change":
        gpus = 4
    history, labels = generate(_fleet(model, gpus=gpus), NOW, days=1, minute_hours=6, seed=11,
                               faults=[SimFault(kind, "node02", gpu, ONSET, params=params)], **extra)
    findings = engine.evaluate(history)
    assert labels
    for label in labels:
        hit = _found(findings, label)
        quality.recall[label.kind].append(hit is not None)
        assert hit is not None, (
            f"{name}: no open {label.kind} finding on {label.node}/{label.gpu_uuid} within 10 min; got "
            + "; ".join(f"{f.kind} {f.node} {f.gpu_uuid} {f.state} {f.summary}" for f in findings))
    extra_alarms = _collateral(findings, labels)
    quality.collateral += len(extra_alarms)
    assert not extra_alarms, [f.summary for f in extra_alarms]


def test_escalation_psu_and_recurrence(quality: _QualityReport) -> None:
    history, labels = generate(_fleet("rtx4090"), NOW, days=1, minute_hours=6, seed=2, faults=[
        SimFault("xid", "node02", 1, ONSET, params={"code": 79, "gpus": [2, 3]}),
        SimFault("xid", "node03", 0, NOW - 5 * 3600, params={"code": 8, "count": 3, "interval_s": 7200,
                                                              "resets": True}),
    ])
    findings = engine.evaluate(history)
    psu = [f for f in findings if f.kind == "xid" and f.gpu_uuid is None and f.node == "node02"]
    assert [(f.severity, f.key.split("|")[-1]) for f in psu] == [("critical", "psu")]
    assert all(f.severity == "critical" and f.evidence["multi_gpu"]
               for f in findings if f.kind == "xid" and f.node == "node02")
    [recurring] = [f for f in findings if f.kind == "xid" and f.node == "node03"]
    assert recurring.severity == "critical" and recurring.evidence["resets_between"] == 2
    for label in labels:
        quality.recall["xid"].append(_found(findings, label) is not None)


@pytest.mark.parametrize("bound,attribution", [("slot", "slot"), ("card", "card")])
def test_fault_follows_the_card_or_stays_with_the_slot(
    quality: _QualityReport, bound: str, attribution: str
) -> None:
    """A bad riser (slot) versus a bad card, told apart across a card swap two days ago."""
    nodes = _fleet("rtx4090")
    history, labels = generate(
        nodes, NOW, days=4, minute_hours=24, seed=5,
        faults=[SimFault("pcie-replay", "node02", 1, NOW - 3 * 86400, bound=bound)],
        swaps=[SimSwap(NOW - 2 * 86400, ("node02", 1), ("node03", 0))])
    findings = [f for f in engine.evaluate(history) if f.kind == "pcie-replay"]
    [label] = labels
    original = label.gpu_uuid
    open_now = [f for f in findings if f.is_open]
    assert len(open_now) == 1
    if bound == "slot":
        # The card now in the bad slot shows the fault; both cards' findings blame the slot.
        assert open_now[0].node == "node02" and open_now[0].gpu_uuid != original
        assert {f.gpu_uuid for f in findings} == {original, open_now[0].gpu_uuid}
        old = next(f for f in findings if f.gpu_uuid == original)
        assert old.state == "resolved" and old.node == "node02"
    else:
        # The card took its fault to node03: its history followed it.
        assert open_now[0].gpu_uuid == original and open_now[0].node == "node03"
        assert len(open_now[0].evidence["slots"]) == 2
    assert all(f.evidence["attribution"] == attribution for f in findings)
    assert ("slot" if bound == "slot" else "card") in open_now[0].action.split(":")[0]
    quality.recall["pcie-replay"].append(True)


def test_unknown_model_is_reported_as_unknown(quality: _QualityReport) -> None:
    history, _ = generate(_fleet("mystery", nodes=2), NOW, days=1, minute_hours=6, seed=4)
    findings = engine.evaluate(history)
    assert [(f.kind, f.severity, f.evidence["metric"]) for f in findings] == [
        ("derating", "info", "unknown-model")] * 2


def test_healthy_fleet_of_64_nodes_over_7_days_has_no_alarm(quality: _QualityReport) -> None:
    nodes = healthy_fleet(64)
    start = time.perf_counter()
    history, labels = generate(nodes, NOW, days=7, minute_hours=24, seed=2024)
    generated = time.perf_counter()
    findings = engine.evaluate(history)
    evaluated = time.perf_counter()
    alarms = [f for f in findings if f.severity != "info"]
    quality.healthy = {
        "nodes": len(history.nodes), "gpus": len(history.gpus), "days": 7, "alarms": len(alarms),
        "info": len(findings) - len(alarms), "gen_s": generated - start, "eval_s": evaluated - generated,
    }
    assert labels == []
    assert len(history.nodes) == 64
    assert alarms == [], [f.summary for f in alarms[:10]]
    report = engine.report(history, findings=findings)
    assert report.status == "pass" and set(report.verdicts.values()) == {"pass"}
    preflight = engine.preflight(history, [n.name for n in nodes], days=7, findings=findings)
    assert preflight.no_go == [] and preflight.exclude == ""


@pytest.mark.parametrize("kind,model", [("pcie-replay", "rtx4090"), ("thermal-throttle", "a100"),
                                        ("power-brake", "rtx4090"), ("derating", "a100")])
def test_nothing_is_reported_before_the_onset(kind: str, model: str) -> None:
    """The same history cut one minute before the onset has no such finding (no premature alarm)."""
    from fleetmon.sim.synthetic import with_now

    history, labels = generate(_fleet(model), NOW, days=1, minute_hours=6, seed=7,
                               faults=[SimFault(kind, "node02", 1, ONSET)])
    assert _found(engine.evaluate(history), labels[0]) is not None
    before = with_now(history, ONSET - 60)
    assert [f for f in engine.evaluate(before) if f.severity != "info"] == []
