"""Issue 25, m017: a finding stored by the collector's health pass is shown in Chinese in the Findings view
(its evidence tooltip's summary, an action made with values), as the database kept how the text was made;
a row from before m017 shows its English as stored."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from fleetmon import assess, ledger
from fleetmon.health.findings import Finding
from fleetmon.i18n import N_, Text
from helpers import HOT, T0, Feeder, between
from storage import findings as stored
from storage.db import open_database

pytestmark = pytest.mark.gui
CJK = re.compile(r"[\u4e00-\u9fff]")
TIP = Qt.ItemDataRole.ToolTipRole


def _db(path: Path) -> Path:
    """A real health pass (n2 gpu1 hot for half an hour) and a finding whose action is made with values."""
    db = open_database(path)
    try:
        Feeder(db).feed(T0, T0 + 3600, {("n2", 1): between(T0 + 1800, T0 + 3600, HOT)})
        assess.evaluate_and_store(db, T0 + 3600)
        ledger.store(db, [Finding(
            kind="driver-mismatch", severity="warning", node="n1", gpu_uuid=None, first_seen=T0, last_seen=T0,
            evidence={}, summary=Text(N_("{gpu}: GPU lost (fell off the bus)"), gpu="n1 gpu0"),
            action=Text(N_("Pick one {word} version for {where}"), word="driver", where="n1"),
            key="driver-mismatch:n1")], T0 + 3600)
    finally:
        db.close()
    return path


def _model(path: Path):  # type: ignore[no-untyped-def]
    from ui.models.findings_table import FindingsTableModel

    db = open_database(path, readonly=True)
    try:
        rows = stored.open_findings(db)
    finally:
        db.close()
    model = FindingsTableModel()
    model.set_rows(rows, now=T0 + 3700)
    return model, {r.kind: n for n, r in enumerate(rows)}


def test_the_findings_view_says_a_stored_summary_and_action_in_chinese(tmp_path: Path, chinese: None) -> None:
    model, row = _model(_db(tmp_path / "f.db"))
    tip = model.data(model.index(row["thermal-throttle"], 1), TIP)
    assert "过热降频" in tip, tip  # the summary the health pass stored, said in Chinese
    assert "n2 gpu1：" in tip
    action = model.data(model.index(row["driver-mismatch"], 6))
    assert CJK.search(action) and "driver" in action, action  # made again from its values
    # the evidence line falls back to the summary for a finding without figures: in Chinese too
    assert "掉卡" in model.data(model.index(row["driver-mismatch"], 7))
    assert model.data(model.index(row["driver-mismatch"], 3)) == "节点"  # a finding of the whole node


def test_an_old_row_shows_its_english_summary(tmp_path: Path, chinese: None) -> None:
    path = _db(tmp_path / "f.db")
    db = open_database(path)
    try:
        db.execute("UPDATE findings SET texts = NULL")  # as a row stored before m017
        db.conn.commit()
    finally:
        db.close()
    model, row = _model(path)
    tip = model.data(model.index(row["thermal-throttle"], 1), TIP)
    assert "n2 gpu1: thermal slowdown for" in tip and "过热降频" not in tip
    assert model.data(model.index(row["driver-mismatch"], 6)) == "Pick one driver version for n1"


def test_english_is_as_stored(tmp_path: Path, qapp) -> None:  # type: ignore[no-untyped-def]
    model, row = _model(_db(tmp_path / "f.db"))
    assert "n2 gpu1: thermal slowdown for" in model.data(model.index(row["thermal-throttle"], 1), TIP)
    assert model.data(model.index(row["driver-mismatch"], 6)) == "Pick one driver version for n1"
    assert model.data(model.index(row["driver-mismatch"], 3)) == "node"


def test_the_gpu_detail_says_a_stored_intake_reason_in_chinese(chinese: None) -> None:
    import dataclasses
    import json

    from fleetmon import i18n
    from fleetmon.intake import REJECT, Check, IntakeResult, overall
    from storage.intake import IntakeRow
    from ui.views.gpu_detail import change_lines

    said = Text(N_("{mib} MiB reported, {ratio} of the nominal {gb} GB"), mib="40960", ratio="50%", gb=80)
    checks = (Check("memory-size", REJECT, said),)
    with i18n.speaking("en"):
        reason = overall(checks)[1]
    result = dataclasses.replace(IntakeResult.from_dict({"uuid": "GPU-1", "node": "n1"}), verdict=REJECT,
                                 reason=reason, checks=checks)
    stored = json.loads(json.dumps(result.stored()))  # as storage.intake keeps it
    assert stored["reason"] == "Memory size: 40960 MiB reported, 50% of the nominal 80 GB"

    def detail(result: dict) -> str:  # type: ignore[type-arg]
        row = IntakeRow(id=1, ts=T0, gpu_uuid="GPU-1", verdict=REJECT, node="n1", result=result)
        return change_lines([], [], [row])[0][2]

    assert "显存容量" in detail(stored) and "报告为 40960 MiB" in detail(stored), detail(stored)
    old = {k: v for k, v in stored.items() if k != "texts"}  # stored before the texts were kept
    assert detail(old).endswith("Memory size: 40960 MiB reported, 50% of the nominal 80 GB")


def test_the_inspection_says_the_findings_in_chinese(tmp_path: Path, chinese: None) -> None:
    from ui.inspection_worker import inspect
    from ui.views.inspection import ChecklistModel

    path = _db(tmp_path / "f.db")
    # now (fresh findings) and two days on, when the hot hour has left the window: the finding is the one the
    # ledger kept (read back from the database)
    for now in (T0 + 3600, T0 + 3600 + 2 * 86400):
        insp = inspect(str(path), now)
        model = ChecklistModel()
        model.set_result(insp.result)
        said = []
        for i in range(model.rowCount()):
            parent = model.index(i, 0)
            said += [model.data(model.index(j, 3, parent)) for j in range(model.rowCount(parent))]
        assert any("过热降频" in s for s in said), (now, said)


def test_the_prerun_history_says_a_kept_finding_in_chinese(tmp_path: Path, chinese: None) -> None:
    from ui.inspection_worker import review
    from ui.views.prerun import DEFAULT_DAYS, NodeHistoryModel, history_rows

    path = _db(tmp_path / "f.db")
    rev = review(str(path), T0 + 3600 + 2 * 86400, ["n2"], DEFAULT_DAYS)  # the hot hour left the window
    (node,) = rev.result.nodes
    model = NodeHistoryModel()
    model.set_rows(history_rows(node, rev.result.findings))
    values = [model.data(model.index(i, 2)) for i in range(model.rowCount())]
    assert any("过热降频" in str(v) for v in values), values


def test_an_unreachable_nodes_error_in_the_evidence_cell_and_tooltip(tmp_path: Path, qapp) -> None:  # type: ignore[no-untyped-def]
    """The last failed poll's reason is stored in the evidence as English; the Findings view says it in the
    reader's language from the summary the rule made with it (m017/m018), the tooltip's frame too."""
    from fleetmon import i18n
    from ui import i18n as ui_i18n
    from ui.models.findings_table import COL_EVIDENCE, FindingsTableModel

    error = Text(N_("cannot connect: {reason}"), reason=Text(N_("{reason} ({host}:{port})"), host="127.0.0.1",
                                                              port=9, reason=Text(N_("Connection refused"))))
    summary = Text(N_("{node}: unreachable for {minutes} min ({error})"), node="n3", minutes=12, error=error)
    path = tmp_path / "f.db"
    db = open_database(path)
    try:
        ledger.store(db, [Finding(kind="node-unreachable", severity="critical", node="n3", gpu_uuid=None,
                                  first_seen=T0, last_seen=T0 + 720, summary=summary, key="node-unreachable:n3",
                                  evidence={"minutes": 12, "failed_polls": 4, "error": str(error)},
                                  action=N_("Check the node's power, network and agent"))], T0 + 720)
        rows = stored.open_findings(db)
    finally:
        db.close()
    model = FindingsTableModel()
    model.set_rows(rows, now=T0 + 800)
    english = model.data(model.index(0, COL_EVIDENCE))
    assert english == "unreachable 12 min, 4 failed polls: cannot connect: Connection refused (127.0.0.1:9)"
    i18n.set_language("zh_CN")
    ui_i18n.install("zh_CN")
    try:
        chinese = model.data(model.index(0, COL_EVIDENCE))
        tip = model.data(model.index(0, 1), TIP)
    finally:
        i18n.set_language("en")
        ui_i18n.install("en")
    assert "无法连接：连接被拒绝（127.0.0.1:9）" in chinese and "cannot connect" not in chinese, chinese
    assert tip.startswith("node-unreachable：n3") and "处理建议：" in tip and " on " not in tip, tip
