"""Issue 19, "Verdicts that do not forget": one verdict per node and GPU, judged once per snapshot
(ui.verdicts), on every surface of the app and in the export, the same as the report's.

The fleet (tests/helpers.verdict_fleet) has a node for each of pass, stale (newest good poll 6 h old, no
finding), fail (an open critical in the ledger, and stale too) and warn."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from helpers import VERDICT_NODES, uuid_of, verdict_fleet
from storage.db import open_database
from storage.rows import FleetRow, NodeRow, StoredFinding

GPU_VERDICTS = {uuid_of("ok1", 0): "pass", uuid_of("ok1", 1): "pass", uuid_of("old1", 0): "stale",
                uuid_of("old1", 1): "stale", uuid_of("bad1", 0): "fail", uuid_of("bad1", 1): "stale",
                uuid_of("warn1", 0): "pass", uuid_of("warn1", 1): "warn"}


@pytest.fixture
def verdict_db(tmp_path: Path) -> Path:
    path = tmp_path / "verdicts.db"
    db = open_database(path)
    try:
        verdict_fleet(db, float(int(time.time())))
    finally:
        db.close()
    return path


@pytest.fixture
def vwindow(qtbot: Any, verdict_db: Path, tmp_path: Path) -> Any:
    from PySide6.QtCore import QSettings

    from ui.main_window import MainWindow

    w = MainWindow(str(verdict_db), refresh_s=60, settings=QSettings(str(tmp_path / "w.ini"),
                                                                     QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.snapshot_shown, timeout=10000):
        w.request_load()
    qtbot.waitUntil(lambda: w.model.rowCount() == 8, timeout=5000)
    yield w
    w.close()


def _report_verdicts(path: Path, now: float) -> dict[str, str]:
    from fleetmon import assess

    db = open_database(path, readonly=True)
    try:
        return dict(assess.run_report(db, now, 86400, None, save=False).result.verdicts)
    finally:
        db.close()


def _plain(html: str) -> str:
    return re.sub(r"<[^>]+>", "", html)


def test_every_surface_shows_the_one_verdict(vwindow: Any, verdict_db: Path) -> None:
    from PySide6.QtCore import QModelIndex, Qt

    from fleetmon.export import read_sheet
    from ui.models.fleet_tree import COL_HEALTH, COL_STATUS

    snap = vwindow.snapshot
    now = snap.read_at
    # One judgement per snapshot, and it is the report's for the same database and time.
    assert dict(snap.verdicts.nodes) == VERDICT_NODES
    assert dict(snap.verdicts.gpus) == GPU_VERDICTS
    assert _report_verdicts(verdict_db, now) == VERDICT_NODES

    # The fleet tree: node rows and their GPUs (health cell starts with the verdict; stale names the age).
    tree = vwindow.fleet_view.model
    health: dict[str, str] = {}
    for r in range(tree.rowCount()):
        node = tree.index(r, 0)
        name = tree.data(node)
        health[name] = tree.data(tree.index(r, COL_HEALTH))
        for c in range(tree.rowCount(node)):
            it = tree.item(tree.index(c, 0, node))
            assert it is not None and it.gpu is not None
            health[it.gpu.uuid] = tree.data(tree.index(c, COL_HEALTH, node))
    assert health["ok1"] == "pass" and health["warn1"] == "warn · 1/2 GPUs" and health["bad1"] == "fail · 1/2 GPUs"
    assert health["old1"] == "stale 6.0 h"
    assert health[uuid_of("old1", 0)] == health[uuid_of("old1", 1)] == health[uuid_of("bad1", 1)] == "stale 6.0 h"
    assert health[uuid_of("bad1", 0)] == "fail: ecc-uncorrectable"
    assert health[uuid_of("warn1", 1)] == "warn: xid" and health[uuid_of("warn1", 0)] == "pass"
    for key, verdict in {**VERDICT_NODES, **GPU_VERDICTS}.items():
        assert health[key].split(":")[0].split(" ")[0] == verdict, (key, health[key])
    # Worst first by verdict (the default sort: health, descending).
    assert [tree.data(tree.index(r, 0)) for r in range(tree.rowCount())] == ["bad1", "old1", "warn1", "ok1"]
    old1 = tree.index_of_node("old1")
    assert tree.data(tree.index(old1.row(), COL_STATUS)) == "stale"
    assert tree.data(tree.index(0, 0), Qt.ItemDataRole.DecorationRole).name() == "#c62828"

    # All GPUs: the same verdict per card, and "pass" only where the tree says pass.
    table = vwindow.model
    col = table.COLUMNS.index("Health")
    flat = {table.row(r).uuid: table.data(table.index(r, col)) for r in range(table.rowCount())}
    assert flat == {u: health[u] for u in GPU_VERDICTS}
    for r in range(table.rowCount()):
        if table.row(r).node in ("old1", "bad1"):
            cells = [str(table.data(table.index(r, c))) for c in range(table.columnCount())]
            assert not any("pass" in c for c in cells), cells
            assert table.data(table.index(r, col - 1)) == "stale"

    # The summary bar, the status bar, the Findings count line and the tray count nodes by verdict.
    summary = _plain(vwindow.fleet_view.summary.text())
    for part in ("4 nodes", "8 GPUs", "1 fail", "0 unreachable", "1 stale", "1 warn", "1 pass"):
        assert part in summary, (part, summary)
    assert "nodes: 1 fail, 0 unreachable, 1 stale" in vwindow.collector_label.text()
    assert "0 unreachable, 1 stale" in vwindow.status_label.text()
    assert "nodes not heard from: 1 stale" in vwindow.findings_view.count.text()
    assert vwindow.tray.worst == "fail"
    assert "FAIL" in vwindow.tray.tooltip and "1 stale" in vwindow.tray.tooltip

    # The export at the same time: health in its old words where they apply, the verdict beside it.
    db = open_database(verdict_db, readonly=True)
    try:
        sheet = read_sheet(db, now=now)
    finally:
        db.close()
    exported = {r["uuid"]: (r["health"], r["verdict"]) for r in sheet.gpus}
    old = {"fail": "critical", "warn": "warning", "pass": "ok"}
    assert exported == {u: (old.get(v, v), v) for u, v in GPU_VERDICTS.items()}
    assert QModelIndex  # (imported for the type of the indexes above)


@pytest.mark.parametrize("text, nodes", [
    ("status:stale", {"old1", "bad1"}), ("verdict:stale", {"old1", "bad1"}), ("severity:fail", {"bad1"}),
    ("status:critical", {"bad1"}), ("severity:warning", {"old1", "bad1", "warn1"}), ("status:pass", {"ok1", "warn1"}),
    ("verdict:warn", {"warn1"}),
])
def test_filter_words_follow_the_verdict(verdict_db: Path, text: str, nodes: set[str]) -> None:
    from ui.fleet_reader import read_snapshot
    from ui.models.fleet_tree import FleetTreeModel

    db = open_database(verdict_db, readonly=True)
    try:
        snap = read_snapshot(db)
    finally:
        db.close()
    model = FleetTreeModel()
    model.set_snapshot(snap)
    model.set_filter(text)
    assert {model.data(model.index(r, 0)) for r in range(model.rowCount())} == nodes


def test_the_inspection_checklist_shows_stale(qtbot: Any, verdict_db: Path) -> None:
    from PySide6.QtCore import Qt

    from fleetmon import assess
    from ui.views.inspection import VERDICT_COLORS, ChecklistModel

    db = open_database(verdict_db, readonly=True)
    try:
        result = assess.run_report(db, time.time(), 86400, None, save=False).result
    finally:
        db.close()
    model = ChecklistModel()
    model.set_result(result)
    rows = {model.data(model.index(r, 0)): r for r in range(model.rowCount())}
    assert list(rows) == ["bad1", "old1", "warn1", "ok1"]  # worst verdict first
    stale = model.index(rows["old1"], 1)
    assert model.data(stale) == "STALE"
    assert model.data(stale, Qt.ItemDataRole.ForegroundRole).color().name() == VERDICT_COLORS["stale"] == "#ef6c00"


def _node(name: str, **kw: Any) -> NodeRow:
    return NodeRow(name=name, **kw)


def test_judge_never_passes_a_silent_node_or_gpu() -> None:
    from ui.snapshot import FleetSnapshot
    from ui.verdicts import judge

    now = 100_000.0
    nodes = {"fresh": _node("fresh", status="ok", last_ok=now - 5, last_attempt=now - 5),
             "down": _node("down", status="unreachable", last_ok=now - 100, last_attempt=now - 5),
             "never": _node("never", status="unreachable", last_attempt=now - 5),
             "quiet": _node("quiet", status="ok", last_ok=now - 3600, last_attempt=now - 3600)}
    rows = (FleetRow(node="fresh", uuid="f0", latest_ts=now - 5),
            FleetRow(node="fresh", uuid="f1", latest_ts=now - 2 * 3600),  # its samples stopped: stale
            FleetRow(node="fresh", uuid="f2", latest_ts=None),  # never sampled: unknown
            FleetRow(node="fresh", uuid="f3", latest_ts=now - 5, state="lost"),
            FleetRow(node="down", uuid="d0", latest_ts=now - 100, findings=(("warning", "xid"),)),
            FleetRow(node="quiet", uuid="q0", latest_ts=now - 3600, findings=(("info", "inventory-change"),)),
            FleetRow(node="quiet", uuid="q1", latest_ts=now - 3600, findings=(("critical", "gpu-lost"),)))
    findings = (StoredFinding(id=1, key="k1", kind="gpu-lost", severity="critical", first_seen=0.0, last_seen=0.0,
                              updated_at=0.0, node="quiet", gpu_uuid="q1"),)
    v = judge(FleetSnapshot(rows=rows, nodes=nodes, findings=findings, read_at=now), stale_after_s=600)
    assert dict(v.nodes) == {"fresh": "pass", "down": "unreachable", "never": "unknown", "quiet": "fail"}
    assert dict(v.gpus) == {"f0": "pass", "f1": "stale", "f2": "unknown", "f3": "pass", "d0": "unreachable",
                            "q0": "stale", "q1": "fail"}
    assert dict(v.gpu_status) == {"f0": "ok", "f1": "stale", "f2": "unknown", "f3": "lost", "d0": "unreachable",
                                  "q0": "stale", "q1": "stale"}
    assert v.age("quiet") == v.age("q0") == 3600 and v.age("f1") == 7200 and v.age("fresh") is None
    assert v.counts()["unknown"] == 1 and v.worst() == "fail"
    # The stale limit is the one given (a fleet file's stale_after_minutes), not a constant.
    assert judge(FleetSnapshot(rows=rows, nodes=nodes, read_at=now), stale_after_s=7200).nodes["quiet"] == "pass"
