"""*Export evidence…* in the app (issue 22, item 4): context menus on a card and on a finding, the save
dialog's proposal, the archive written off the GUI thread, errors shown in one message."""

from __future__ import annotations

import datetime as dt
import json
import threading
import zipfile
from pathlib import Path

from PySide6.QtCore import QPoint


def _menu_at(window, view, pos: QPoint):
    view.customContextMenuRequested.emit(pos)
    menu = window.evidence.menu
    assert menu is not None
    (action,) = [a for a in menu.actions() if a.text() == "Export &evidence…"]  # beside Intake… in the tree
    return action


def _center(view, index) -> QPoint:
    return view.visualRect(index).center()


def test_export_from_the_fleet_tree(window, qtbot, tmp_path):
    asked: list[str] = []
    out = tmp_path / "docs" / "card.zip"
    out.parent.mkdir()
    ev = window.evidence
    ev.today = lambda: dt.date(2026, 5, 1)
    ev.ask_path = lambda parent, proposed: asked.append(proposed) or str(out)
    tree = window.fleet_view.tree
    window.fleet_view.show_gpu("GPU-n2-01")
    index = tree.currentIndex()
    action = _menu_at(window, tree, _center(tree, index))
    assert action.isEnabled()
    threads: list[str] = []
    import fleetmon.evidence as evidence_mod

    real = evidence_mod.build_evidence

    def spy(*a, **k):
        threads.append(threading.current_thread().name)
        return real(*a, **k)

    evidence_mod.build_evidence = spy
    try:
        with qtbot.waitSignal(ev.finished, timeout=60000) as got:
            action.trigger()
    finally:
        evidence_mod.build_evidence = real
    assert threads == ["evidence-export"]  # off the GUI thread
    assert Path(asked[0]).name == "evidence-SN-n2-1-2026-05-01.zip"
    assert got.args[0] == str(out) and out.is_file()
    zf = zipfile.ZipFile(out)
    pngs = [n for n in zf.namelist() if n.endswith(".png")]
    assert pngs and all(zf.read(n)[:4] == b"\x89PNG" for n in pngs)
    assert json.loads(zf.read("identity.json"))["uuid"] == "GPU-n2-01"
    assert "evidence written to" in window.statusBar().currentMessage()
    # The next export is offered in the folder just used.
    assert window.settings.value("evidence/folder") == str(out.parent.resolve())


def test_all_gpus_and_detail_menus_name_the_card(window):
    m = window.model
    row = next(r for r in range(m.rowCount()) if m.row(r).uuid == "GPU-n1-00")
    table = window.table
    started: list[tuple[str, str | None]] = []
    window.evidence.start = lambda uuid, focus=None: started.append((uuid, focus))
    _menu_at(window, table, _center(table, m.index(row, 0))).trigger()
    window.show_gpu("GPU-m1-01")
    _menu_at(window, window.detail.inventory, QPoint(5, 5)).trigger()
    assert started == [("GPU-n1-00", None), ("GPU-m1-01", None)]


def test_a_finding_exports_its_card_and_names_the_finding(window, qtbot, tmp_path):
    window.show_view("Findings")
    view, model = window.findings, window.findings_model
    rows = {model.row(r).key: r for r in range(model.rowCount())}
    node_only = _menu_at(window, view, _center(view, model.index(rows["node-unreachable|node:m2|"], 0)))
    assert not node_only.isEnabled()  # a node's finding has no card
    key = "temperature-high|gpu:GPU-n2-01|"
    out = tmp_path / "finding.zip"
    window.evidence.ask_path = lambda parent, proposed: str(out)
    with qtbot.waitSignal(window.evidence.finished, timeout=60000):
        _menu_at(window, view, _center(view, model.index(rows[key], 0))).trigger()
    zf = zipfile.ZipFile(out)
    assert json.loads(zf.read("manifest.json"))["focus"] == key
    assert "Exported for the finding" in zf.read("summary.html").decode()


def test_a_failed_export_is_one_message_and_no_file(window, qtbot, tmp_path):
    shown: list[str] = []
    window.evidence.show_error = lambda parent, message: shown.append(message)
    target = tmp_path / "missing-folder" / "card.zip"
    window.evidence.ask_path = lambda parent, proposed: str(target)
    with qtbot.waitSignal(window.evidence.failed, timeout=60000):
        window.evidence.start("GPU-n1-01")
    assert len(shown) == 1 and "cannot write" in shown[0] and "\n" not in shown[0]
    assert not target.parent.exists()
    assert not window.evidence.busy
