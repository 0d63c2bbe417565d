"""Issue 25: the findings of every rule family, the Xid catalog's meanings and actions, the lifecycle's
recurrence and resolution lines and the report's Slurm section in Simplified Chinese (docs/i18n.md), while
the English (stored, compared, written to JSON) stays exactly as it was."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

import pytest

from fleetmon import i18n
from fleetmon.health import engine, lifecycle, render, render_html
from fleetmon.health.findings import Finding
from fleetmon.health.fleet import EventRecord, FleetHistory, InventoryChange
from fleetmon.health.isolate import Problem, unjudgeable_findings
from fleetmon.health.rules import check_arrival_history, check_inventory_changes, check_xid, derating
from fleetmon.health.rules.device import check_device_health
from fleetmon.health.rules.identity import check_gpus_refused, check_uuid_conflict
from fleetmon.i18n import localized

from tests.health.test_health_rules import NOW, _peers, card, fleet, minutes

CJK = re.compile(r"[\u4e00-\u9fff]")


def _fleet() -> FleetHistory:
    """One fleet with a finding of each family marked here: a derated card (n1 GPU-2), a card that arrived with
    a past (n2), an Ascend NPU in Warning (n3), a UUID conflict and refused UUIDs (n3), a driver change (n2)
    and Xid 79 and an unknown Xid on n1."""
    npu = card(minutes(60), uuid="NPU-0", node="n3", name="Ascend910B", inventory={"vendor": "huawei"},
               signals={"values": {"health": {"state": "warning", "text": "Warning", "codes": ["80E01801"]}},
                        "since": {"health": NOW - 3000}})
    arrived = card(minutes(60, ecc_unc_agg=2, retired_sbe=10, retired_dbe=5), uuid="GPU-arr", node="n2",
                   first_seen=NOW - 3600)
    events = (
        EventRecord(NOW - 600, "n1", "xid", "GPU-0", None, 79, "Xid 79"),
        EventRecord(NOW - 500, "n1", "xid", "GPU-0", None, 999, "Xid 999"),
        EventRecord(NOW - 300, "n3", "uuid_conflict", "GPU-0", data={"holder": "n1", "uuids": ["GPU-0"]}),
        EventRecord(NOW - 300, "n3", "gpus_refused", data={"refused": 62, "cap": 128, "span_s": 86400.0}),
    )
    change = InventoryChange(NOW - 600, "n2", "driver_changed", None, "535", "550")
    return fleet(*_peers(4, {2: 0.8}), arrived, npu, events=events, inventory_changes=(change,))


def _findings(h: FleetHistory) -> dict[str, list[Finding]]:
    return {
        "derating": derating.check_derating(h, None),
        "arrival-history": check_arrival_history(h, None),
        "device-health": check_device_health(h, None),
        "uuid-conflict": check_uuid_conflict(h, None),
        "gpus-refused": check_gpus_refused(h, None),
        "inventory-change": [f for f in check_inventory_changes(h, None) if f.evidence["change"] == "driver_changed"],
        "xid": check_xid(h, None),
        "data-unjudgeable": unjudgeable_findings(h, [Problem("check_fragile", "TypeError: bad", "GPU-1", "n1")]),
    }


ENGLISH = {
    "derating": "n1 gpu2: SM clock 1116 MHz under load, 80% of the NVIDIA A100-SXM4-80GB fleet median",
    "arrival-history": "n2 gpu0: arrived with 2 lifetime uncorrectable ECC errors, 15 retired pages",
    "device-health": "n3 gpu0: health Warning, error code 80E01801",
    "uuid-conflict": "node n3 reports GPU UUIDs already seen on node n1 at the same time (1 GPU)",
    "gpus-refused": ("node n3: 62 new GPU UUIDs refused, the node was seen with 128 distinct GPUs within 24 h "
                     "(the most one node may have)"),
    "inventory-change": "n2: driver changed (535 -> 550)",
    "data-unjudgeable": "n1 gpu1: could not judge this GPU's data (check_fragile)",
}
"""The summaries as they read before issue 25 marked them (the English is a contract: stored, compared)."""


def test_each_rule_family_says_its_summary_and_action_in_chinese_and_keeps_its_english() -> None:
    h = _fleet()
    found = _findings(h)
    for kind, english in ENGLISH.items():
        assert english in [f.summary for f in found[kind]], (kind, [f.summary for f in found[kind]])
    i18n.set_language("zh_CN")
    said = {kind: [(localized(f.summary), localized(f.action)) for f in fs] for kind, fs in found.items()}
    for kind, pairs in said.items():
        assert pairs, kind
        for summary, action in pairs:
            assert CJK.search(summary) and CJK.search(action), (kind, summary, action)
    summaries = {kind: [s for s, _ in pairs] for kind, pairs in said.items()}
    assert "n1 gpu2：负载下 SM 频率 1116 MHz，为集群 NVIDIA A100-SXM4-80GB 中位数的 80%" in summaries["derating"]
    assert "n2 gpu0：到货时已有 累计 2 个不可纠正 ECC 错误、15 个退役页" in summaries["arrival-history"]
    assert summaries["device-health"] == ["n3 gpu0：健康状态 Warning，错误码 80E01801"]  # the tool's words stay
    assert "华为的处理建议：80E01801：在该芯片上重启作业" in said["device-health"][0][1]
    assert summaries["uuid-conflict"] == ["节点 n3 上报的 GPU UUID 同时出现在节点 n1 上（1 块 GPU）"]
    assert summaries["gpus-refused"][0].startswith("节点 n3：拒收 62 个新 GPU UUID，该节点在 24 小时内已出现 128 块")
    assert summaries["inventory-change"] == ["n2：驱动变更（535 -> 550）"]
    assert summaries["data-unjudgeable"] == ["n1 gpu1：无法判定该 GPU 的数据（check_fragile）"]  # the rule's name stays


def test_xid_meanings_and_actions_in_chinese_codes_stay_numbers() -> None:
    found = check_xid(_fleet(), None)
    by_code = {f.evidence["code"]: f for f in found if "code" in f.evidence}
    assert by_code[79].summary == "n1 gpu0: Xid 79 GPU has fallen off the bus (1x, pcie)"
    assert by_code[999].summary == "n1 gpu0: Xid 999 Xid 999 (not in fleetmon's catalog) (1x, unknown)"
    assert by_code[79].evidence["meaning"] == "GPU has fallen off the bus"  # evidence (JSON) stays English
    i18n.set_language("zh_CN")
    assert localized(by_code[79].summary) == "n1 gpu0：Xid 79 GPU 从总线上掉线（掉卡）（1 次，pcie）"
    assert localized(by_code[79].action).startswith("节点下线（drain）并重启；检查转接卡（riser）")
    assert localized(by_code[999].summary) == "n1 gpu0：Xid 999 Xid 999（不在 fleetmon 的目录中）（1 次，unknown）"
    assert localized(by_code[999].action) == "在 NVIDIA 的 Xid 目录中查询该代码；关注是否再次出现"
    from fleetmon.xid import XID_CATALOG
    untranslated = [(c, text) for c, info in XID_CATALOG.items() for text in (info.meaning, info.action)
                    if not CJK.search(localized(text))]
    assert not untranslated, untranslated


def test_lifecycle_recurrence_and_resolution_lines_in_chinese() -> None:
    days = ["2026-11-28", "2026-11-30", "2026-12-01", "2026-12-02", "2026-12-03"]
    now = 1_796_300_000.0  # 2026-12-03 12:13 UTC
    today = lifecycle.recurrence_text(days, now - 3600, now)
    earlier = lifecycle.recurrence_text(days, now - 86400, now)
    assert today == "5 of the last 7 days, last at 11:13 UTC"
    assert earlier == "5 of the last 7 days, last at Dec 02 12:13 UTC"
    assert json.dumps({"r": today}) == '{"r": "5 of the last 7 days, last at 11:13 UTC"}'
    resolved = Finding("thermal-throttle", "warning", "n1", "GPU-a", now - 7200, now - 3600, state="resolved",
                       summary="n1 gpu0: thermal slowdown for 12 min (hw_thermal)",
                       evidence={"lifecycle": {"resolved": {"by": "operator", "resolution": {
                           "by": "ann", "at": now - 600, "reason": "cooling-fixed", "note": "fan replaced"}}}})
    ok, why = lifecycle._quiet(lifecycle.KindLife("x", "recurring"), lifecycle.Coverage(hours=30.0), 12.0,
                               lifecycle.Thresholds())  # the lifecycle's own words for a quiet period
    assert ok
    by_data = replace(resolved, evidence={"lifecycle": {"resolved": {"by": "data", "why": why}}})
    assert render.resolution_text(resolved) == "resolved by ann at 2026-12-03 12:03: cooling fixed — fan replaced"
    assert render.resolution_text(by_data) == "resolved by data: 12 h without it, 30 h of data"
    i18n.set_language("zh_CN")
    assert localized(today) == "近 7 天中有 5 天出现，最近一次 11:13 UTC"
    assert localized(earlier) == "近 7 天中有 5 天出现，最近一次 12月02日 12:13 UTC"
    assert render.resolution_text(resolved) == "ann 于 2026年12月3日 12:03 处理完成：散热已修复 — fan replaced"
    assert render.resolution_text(by_data) == "数据表明已恢复：12 小时未出现，30 小时的数据"
    assert localized(lifecycle.reason_words("replaced")) == "已更换卡"


def _ack_and_slurm(result: engine.ReportResult) -> engine.ReportResult:
    first = next(f for f in result.findings if f.is_open)
    drained = {"state": "drained", "short": "drain", "reason": "fleetmon: Xid 79", "reason_by": "root",
               "reason_at": "2026-12-03T12:41:17"}
    action = {"ts": NOW - 60, "node": "n1", "action": "drain", "origin": "auto", "who": "fleetmon auto-drain",
              "reason": "n1 GPU 0: Xid 79", "result": "ok"}
    return replace(result, summary={
        **result.summary, "acknowledged": {first.key: {"by": "ann", "note": "RMA ordered", "until": None}},
        "slurm": {"asked": True, "available": True, "error": None, "actions": [action],
                  "nodes": {"n1": drained, "n2": {"state": "idle", "short": "idle"}}}})


def _without_texts(doc: Any) -> Any:
    """``doc`` less the ``summary_text`` / ``action_text`` a translated run adds to each finding."""
    if isinstance(doc, dict):
        return {k: _without_texts(v) for k, v in doc.items() if k not in ("summary_text", "action_text")}
    if isinstance(doc, list):
        return [_without_texts(v) for v in doc]
    return doc


def test_a_chinese_report_shows_every_family_the_slurm_section_and_the_acknowledgement() -> None:
    h = _fleet()
    found = [f for fs in _findings(h).values() for f in fs]
    result = _ack_and_slurm(engine.report(h, findings=found))
    english_json = render.report_json(result)
    english = render.report_text(result)
    assert "  Drains and resumes in the window (1)" in english and "unknown to Slurm" in english
    assert "acknowledged by ann: RMA ordered" in english
    i18n.set_language("zh_CN")
    # The JSON stays English in every language; a translated run only adds each finding's text for people.
    assert _without_texts(json.loads(render.report_json(result))) == json.loads(english_json)
    text = render.report_text(result)
    slurm = text.split("\nSlurm\n", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"^  n1 +不通过 +drain \(fleetmon: Xid 79; root 2026-12-03T12:41:17\)$", slurm, re.M), slurm
    assert re.search(r"^  n3 +\S+ +Slurm 中无此节点$", slurm, re.M), slurm
    assert "  时间窗口内的下线与恢复上线（1）" in slurm
    assert "drain n1" in slurm and "fleetmon auto-drain（auto）" in slurm  # Slurm's words and names stay
    assert "ann 已确认：RMA ordered" in text
    assert re.search(r"^    \S+ \S+  n2：驱动变更（535 -> 550）$", text, re.M)  # the inventory changes too
    for summary in ("负载下 SM 频率", "到货时已有", "健康状态 Warning", "同时出现在节点 n1 上", "拒收 62 个新 GPU UUID",
                    "驱动变更（535 -> 550）", "GPU 从总线上掉线（掉卡）", "无法判定该 GPU 的数据"):
        assert summary in text, summary
    for kind in ("derating", "arrival-history", "device-health", "uuid-conflict", "gpus-refused", "xid"):
        assert kind in text, kind  # identifiers stay
    html = render_html.report_html(result)
    assert "<h2>Slurm 下线与恢复上线（1）</h2>" in html and "<th>内容</th>" in html
    assert "Slurm 中无此节点" in html and "Drains and resumes" not in html
    assert "<td>n2：驱动变更（535 -&gt; 550）</td>" in html


def test_slurm_unavailable_in_chinese_and_english_in_the_json() -> None:
    h = _fleet()
    result = engine.report(h, findings=[])
    down = replace(result, summary={**result.summary, "slurm": {
        "asked": True, "available": False, "error": "no 'sinfo' on PATH", "nodes": {}, "actions": []}})
    i18n.set_language("zh_CN")
    assert "  Slurm 不可用：no 'sinfo' on PATH" in render.report_text(down)
    assert {n["slurm"] for n in render.report_dict(down)["nodes"]} == {"Slurm unavailable"}
    assert "Slurm 不可用：no &#x27;sinfo&#x27; on PATH" in render_html.report_html(down)


@pytest.fixture(autouse=True)
def _english_after() -> Any:
    yield
    i18n.set_language("en")


def test_an_amd_ecc_block_action_and_the_xid_escalation_reasons_in_chinese() -> None:
    from fleetmon.health.rules.device import check_ecc_blocks

    mi100 = card(minutes(60), uuid="GPU-amd", node="m1", name="AMD Instinct MI100", inventory={"vendor": "amd"},
                 signals={"values": {"ecc_blocks": {"UMC": {"correctable": 0, "uncorrectable": 1, "deferred": 0}}},
                          "since": {"ecc_blocks": NOW - 600}})
    (f,) = check_ecc_blocks(fleet(mi100), None)
    assert f.action.startswith("Drain the card and reset it (amd-smi reset -G -g <gpu>); an uncorrectable error in "
                               "UMC that comes back")
    i18n.set_language("zh_CN")
    assert localized(f.action).startswith("将该卡下线（drain）并重置（amd-smi reset -G -g <gpu>）；若 UMC 中")
    # The Xid escalation reasons are stored in the evidence as English words; where shown they are said again.
    assert [localized(r) for r in ("several GPUs in one burst", "recurs", "with hardware Xids")] == [
        "同一时刻多块 GPU", "反复出现", "伴随硬件类 Xid"]


def test_the_ecc_actions_name_each_vendors_diagnostics_in_chinese() -> None:
    from fleetmon.health.rules import check_ecc_uncorrectable
    from tests.health.test_health_rules import step

    said = {}
    for vendor in ("amd", "huawei", "intel", "moorethreads"):
        gpu = card(minutes(20, ecc_unc_vol=step(10, 0, 1), ecc_unc_agg=step(10, 0, 1)), inventory={"vendor": vendor})
        (f,) = check_ecc_uncorrectable(fleet(gpu), None)
        i18n.set_language("en")
        english = localized(f.action)
        i18n.set_language("zh_CN")
        said[vendor] = (english, localized(f.action))
    assert said["amd"][0] == ("Drain the node and reset the GPU; run AMD's ROCm Validation Suite (`rvs`); if errors "
                              "recur, RMA the card")
    assert said["amd"][1] == "节点下线（drain）并重置 GPU；运行 AMD 的 ROCm 验证套件（`rvs`）；如错误再次出现，返修（RMA）该卡"
    assert "华为的 `ascend-dmi` 诊断" in said["huawei"][1] and "Habana 的 `hl_qual`" in said["intel"][1]
    assert "厂商的设备诊断工具" in said["moorethreads"][1] and "the vendor's device diagnostics" in said["moorethreads"][0]
    assert not any(re.search(r"[A-Za-z]+'s\b", zh) for _en, zh in said.values()), said


def test_threshold_errors_in_chinese_english_as_before() -> None:
    """The fleet file's [thresholds] errors (all problems together) and the range of each unit in Chinese."""
    from fleetmon.health import thresholds as th
    from fleetmon.health.thresholds import Thresholds

    with pytest.raises(ValueError) as caught:
        Thresholds.from_overrides({"pcie_replay_per_mn": 1, "flap_count": 2.5, "hw_slowdown_fraction": 2,
                                   "quiet_hours": True})
    assert str(caught.value) == ("unknown threshold 'pcie_replay_per_mn'; did you mean pcie_replay_per_min, pcie_replay_info_count?; "
                                 "flap_count: expected a whole number, got 2.5; hw_slowdown_fraction: 2.0 is out of "
                                 "range 0.01..1 fraction; quiet_hours: expected a number, got True")
    with pytest.raises(ValueError) as order:
        Thresholds.from_overrides({"retired_pages_warning": 62})
    i18n.set_language("zh_CN")
    assert i18n.message_of(caught.value) == (
        "未知阈值 'pcie_replay_per_mn'；是否想写 pcie_replay_per_min, pcie_replay_info_count？；flap_count：应为整数，实际为 2.5；"
        "hw_slowdown_fraction：2.0 超出范围 0.01..1（比例）；quiet_hours：应为数字，实际为 True")
    assert i18n.message_of(order.value).startswith("retired_pages_warning 不得大于 retired_pages_critical（62 > ")
    # every unit a threshold has is said as a whole range in Chinese
    units = {r["unit"] for r in th.rows()}
    assert units and units <= set(th._RANGES), units - set(th._RANGES)
    assert all(re.search(r"[\u4e00-\u9fff]", i18n.localized(i18n.Text(th._RANGES[u], low=0, high=1)))
               for u in units if u not in ("%", "°C")), units
