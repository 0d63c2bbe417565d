"""The pre-run review view: nodes from a hostlist or the fleet selection, go / no-go with reasons, each node's
history side by side, the exclude list on the clipboard, the review as HTML. Real SQLite files, no mocks."""

from __future__ import annotations

import dataclasses

import time
from pathlib import Path

import pytest

from fleetmon import hostlist
from ui.inspection_worker import review
from fleetmon.i18n import N_, Text
from ui.views.prerun import (DEFAULT_DAYS, GoNoGoModel, NodeHistoryModel, PrerunView, exclude_list,
                             fleet_selection, history_rows, nodes_of, parse_nodes)

pytest.importorskip("pytestqt")


def _view(qtbot, path: Path, **kw) -> PrerunView:
    view = PrerunView(str(path), **kw)
    qtbot.addWidget(view)
    view.resize(1240, 430)
    return view


def _review(qtbot, view: PrerunView, text: str):
    view.nodes.setText(text)
    with qtbot.waitSignal(view.review_shown, timeout=30000) as sig:
        view.run_button.click()
    return sig.args[0]


def test_parse_nodes_and_selection() -> None:
    assert parse_nodes("n[1-3],m1,n2") == ["n1", "n2", "n3", "m1"]
    with pytest.raises(ValueError):
        parse_nodes("n[3-1]")
    assert nodes_of(["n10", "n2", "n2"]) == ["n2", "n10"]


def test_models_pass_the_model_tester(qtmodeltester, fleet_db: Path) -> None:
    rev = review(str(fleet_db), time.time(), ["n1", "n2", "n3", "m1", "m2"], DEFAULT_DAYS)
    go = GoNoGoModel()
    go.set_rows(rev.result.nodes)
    qtmodeltester.check(go)
    assert go.row(0).name == "m2" and not go.row(0).go  # no-go first
    for n in rev.result.nodes:
        hist = NodeHistoryModel()
        hist.set_rows(history_rows(n, rev.result.findings))
        qtmodeltester.check(hist)
        sections = {hist.row(i).section for i in range(hist.rowCount())}
        assert {"ECC", "Power", "Xid"} <= sections


def test_typed_hostlist_is_validated(qtbot, fleet_db: Path) -> None:
    view = _view(qtbot, fleet_db)
    assert view.days.value() == DEFAULT_DAYS
    view.nodes.setText("n[3-1]")
    assert not view.run_button.isEnabled() and "Not a hostlist" in view.parsed.text()
    view.nodes.setText("n[1-3]")
    assert view.run_button.isEnabled() and view.parsed.text().startswith("3 nodes: n1, n2, n3")


def test_review_go_no_go_exclude_list_and_html(qtbot, fleet_db: Path, tmp_path: Path) -> None:
    from PySide6.QtGui import QGuiApplication

    view = _view(qtbot, fleet_db)
    assert not view.copy_button.isEnabled() and not view.save_button.isEnabled()
    rev = _review(qtbot, view, "n[1-3],m[1-2],zz9")
    r = rev.result
    assert set(r.no_go) == {"m2", "zz9"}  # never reached; not in the database
    assert set(r.go) == {"n1", "n2", "n3", "m1"}
    reasons = {view.go_model.row(i).name: view.go_model.index(i, 3).data() for i in range(view.go_model.rowCount())}
    assert "never reached" in reasons["m2"] and "no data" in reasons["zz9"]
    assert view.go_model.index(0, 1).data() == "NO-GO"

    # One table per node, side by side, no-go first.
    assert [c.node.name for c in view.cards][:2] == ["m2", "zz9"] and len(view.cards) == 6

    # The exclude list, in Slurm hostlist form, on the clipboard.
    assert view.exclude.text() == exclude_list(r) == hostlist.compress(["m2", "zz9"]) == "m2,zz9"
    assert view.copy_button.isEnabled()
    QGuiApplication.clipboard().clear()
    assert view.copy_exclude() == "m2,zz9"
    assert QGuiApplication.clipboard().text() == "m2,zz9"
    assert sorted(hostlist.expand(QGuiApplication.clipboard().text())) == ["m2", "zz9"]

    out = view.save_html(tmp_path / "prerun.html")
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "fleetmon preflight" in html and "<code>m2,zz9</code>" in html


def test_all_go_leaves_nothing_to_exclude(qtbot, fleet_db: Path) -> None:
    view = _view(qtbot, fleet_db)
    view.days.setValue(1)
    rev = _review(qtbot, view, "n1,m1")
    assert rev.result.no_go == [] and view.exclude.text() == ""
    assert not view.copy_button.isEnabled() and view.copy_exclude() == ""
    assert rev.result.days == 1


def test_nodes_from_the_fleet_view_selection(qtbot, fleet_db: Path, snap) -> None:
    from PySide6.QtCore import QItemSelectionModel

    from ui.views.fleet import FleetView

    fleet = FleetView()
    qtbot.addWidget(fleet)
    fleet.set_snapshot(snap)
    view = _view(qtbot, fleet_db, fleet=fleet)
    view.use_selection()
    assert "Nothing is selected" in view.parsed.text() and view.nodes.text() == ""
    sel = fleet.tree.selectionModel()
    for name in ("n2", "m2", "n1"):
        sel.select(fleet.model.index_of_node(name),
                   QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows)
    gpu = fleet.model.index_of_gpu("GPU-n3-01")
    sel.select(gpu, QItemSelectionModel.SelectionFlag.Select | QItemSelectionModel.SelectionFlag.Rows)
    assert fleet_selection(fleet) == ["m2", "n1", "n2", "n3"]
    view.use_selection()
    assert view.nodes.text() == "m2,n[1-3]"
    rev = _review(qtbot, view, view.nodes.text())
    assert rev.result.no_go == ["m2"]


def test_a_bad_window_or_database_is_reported(qtbot, tmp_path: Path) -> None:
    bad = tmp_path / "not.db"
    bad.write_bytes(b"this is not a database" * 100)
    view = _view(qtbot, bad)
    view.nodes.setText("n1")
    with qtbot.waitSignal(view.failed, timeout=30000):
        view.run_review()
    assert "failed" in view.verdict.text() and view.review is None


def test_a_failed_review_clears_the_previous_result(qtbot, fleet_db: Path, tmp_path: Path) -> None:
    """Issue 21, item 6: after "Review failed" no old rows, exclude list or copy button stay on screen."""
    view = _view(qtbot, fleet_db)
    _review(qtbot, view, "n[1-3],m[1-2],zz9")
    assert view.exclude.text() == "m2,zz9" and view.copy_button.isEnabled() and view.cards
    view.nodes.setText("n[3-1]")  # a bad hostlist, reviewed with Enter
    with qtbot.waitSignal(view.failed, timeout=5000):
        view.nodes.returnPressed.emit()
    assert "Review failed" in view.verdict.text()
    assert view.review is None and view.go_model.rowCount() == 0 and view.cards == []
    assert view.exclude.text() == "" and not view.copy_button.isEnabled() and not view.save_button.isEnabled()
    assert view.copy_exclude() == "" and view.hint.isVisibleTo(view)
    with pytest.raises(RuntimeError):
        view.save_html(tmp_path / "stale.html")


def test_a_failing_database_after_a_good_review_clears_it(qtbot, fleet_db: Path, tmp_path: Path) -> None:
    view = _view(qtbot, fleet_db)
    _review(qtbot, view, "m2")
    assert view.copy_button.isEnabled()
    bad = tmp_path / "not.db"
    bad.write_bytes(b"this is not a database" * 100)
    view.db_path = str(bad)
    with qtbot.waitSignal(view.failed, timeout=30000):
        view.run_review()
    assert view.go_model.rowCount() == 0 and view.exclude.text() == "" and not view.copy_button.isEnabled()


@pytest.mark.parametrize("change", ["nodes", "days"])
def test_a_changed_input_invalidates_the_shown_review(qtbot, fleet_db: Path, change: str) -> None:
    """Editing the hostlist or the window after a review: the old verdict is marked out of date, its exclude
    list cannot be copied, and reviewing again shows a fresh one."""
    view = _view(qtbot, fleet_db)
    _review(qtbot, view, "n[1-3],m[1-2],zz9")
    if change == "nodes":
        view.nodes.setText("n[1-3],m1")
    else:
        view.days.setValue(3)
    assert view.exclude.text() == "" and not view.copy_button.isEnabled() and view.copy_exclude() == ""
    assert not view.save_button.isEnabled() and not view.go_table.isEnabled()
    assert "out of date" in view.verdict.text().lower()
    # The old rows stay greyed, without their verdict colours; the nodes' history cards go.
    from PySide6.QtCore import Qt

    assert view.go_model.rowCount() and view.go_model.index(0, 1).data(Qt.ItemDataRole.ForegroundRole) is None
    assert view.cards == [] and "Out of date" in view.hint.text()
    rev = _review(qtbot, view, view.nodes.text())
    assert view.go_model.index(0, 1).data(Qt.ItemDataRole.ForegroundRole) is not None
    assert view.cards and "Out of date" not in view.hint.text()
    assert view.go_table.isEnabled() and "out of date" not in view.verdict.text().lower()
    assert view.exclude.text() == exclude_list(rev.result) and view.copy_button.isEnabled() == bool(rev.result.no_go)


def test_a_result_for_an_input_changed_meanwhile_arrives_out_of_date(qtbot, fleet_db: Path) -> None:
    view = _view(qtbot, fleet_db)
    view.nodes.setText("m2")
    with qtbot.waitSignal(view.review_shown, timeout=30000):
        view.run_review()
        view.nodes.setText("n1")  # typed while the review runs
    assert view.exclude.text() == "" and not view.copy_button.isEnabled()
    assert "out of date" in view.verdict.text().lower()


def test_a_node_cards_what_column_is_never_cut(qtbot, fleet_db: Path) -> None:
    # Issue 21, item 5: at a fixed 165 px the cards cut "retired pages (max per card)" and the like.
    view = _view(qtbot, fleet_db)
    _review(qtbot, view, "m[1-2],zz9")
    assert view.cards
    for card in view.cards:
        table, header = card.table, card.table.horizontalHeader()
        assert header.sectionSize(0) >= table.sizeHintForColumn(0), card.node.name
        metrics = table.fontMetrics()
        for i in range(card.model.rowCount()):
            row = card.model.row(i)
            if row.section in ("ECC", "Power"):  # fixed labels; Xid and finding rows are free text, elided
                assert header.sectionSize(1) >= metrics.horizontalAdvance(row.what), (card.node.name, row.what)
        # ... and the card is wide enough for them and a value column (up to its widest).
        fixed = header.sectionSize(0) + header.sectionSize(1)
        assert card.width() >= min(card.MAX_WIDTH, fixed + card.VALUE_WIDTH), (card.node.name, card.width(), fixed)


@pytest.mark.parametrize("lang", ["zh_CN", "en"])
def test_the_history_rows_fixed_words_follow_the_language(qapp, fleet_db: Path, lang: str) -> None:
    """The ECC / power labels, "no data", "Xid events", the Finding section and "(resolved)" in the reader's
    language; the rows keep English (identifiers), kinds, Xid codes and figures stay; English reads as before."""
    from PySide6.QtCore import Qt

    from ui import i18n as ui_i18n
    from ui.views.prerun import HistoryRow, shown_row

    rev = review(str(fleet_db), time.time(), ["n1", "n2", "n3", "m1", "m2"], DEFAULT_DAYS)
    rows = [r for n in rev.result.nodes for r in history_rows(n, rev.result.findings)]
    rows += [HistoryRow("Finding", "n1 GPU 0 · thermal-throttle (resolved)", "x", "warning"),
             HistoryRow("ECC", "ECC", "no data in this window"), HistoryRow("Power", "power", "no data in this window"),
             HistoryRow("Xid", "Xid events", "none in this window")]
    assert ui_i18n.install(lang) == lang
    try:
        model = NodeHistoryModel()
        model.set_rows(rows)
        shown = {tuple(model.data(model.index(i, c)) for c in range(3)) for i in range(model.rowCount())}
        tips = {model.data(model.index(i, 1), Qt.ItemDataRole.ToolTipRole) for i in range(model.rowCount())}
    finally:
        ui_i18n.install("en")
    zh = lang == "zh_CN"
    english = {(r.section, r.what, r.value) for r in rows if isinstance(r.value, str)}
    if not zh:
        assert english <= shown and shown_row(rows[0]) == (rows[0].section, rows[0].what, rows[0].value)
        return
    assert ("问题", "n1 GPU 0 · thermal-throttle（已恢复）", "x") in shown
    assert ("ECC", "ECC", "该时间窗口内无数据") in shown and ("功耗", "功耗", "该时间窗口内无数据") in shown
    assert ("Xid", "Xid 事件", "该时间窗口内没有") in shown
    whats = {w for _s, w, _v in shown}
    assert {"可纠正（新增）", "平均 / 最大", "上限 / 默认（单卡最小）"} <= whats, whats
    assert not whats & {r.what for r in rows if r.section in ("ECC", "Power") and r.what != "ECC"}
    assert any(str(t).startswith("平均 / 最大：") for t in tips), tips


@pytest.mark.parametrize("lang", ["zh_CN", "en"])
def test_the_go_no_go_table_and_cards_follow_the_language(qtbot, fleet_db: Path, lang: str) -> None:
    """GO / NO-GO (可用 / 不可用, the core's words), the reasons in the reader's language, "go: nothing in the
    window", the GPU count and the tooltip's frame; each node card's title; English as before."""
    from PySide6.QtCore import Qt

    from ui import i18n as ui_i18n
    from ui.views.prerun import NodeCard

    rev = review(str(fleet_db), time.time(), ["n1", "n2", "n3", "m1", "m2"], DEFAULT_DAYS)
    assert ui_i18n.install(lang) == lang
    try:
        go = GoNoGoModel()
        go.set_rows(rev.result.nodes)
        cells = [[go.data(go.index(i, c)) for c in range(4)] for i in range(go.rowCount())]
        tips = [go.data(go.index(i, 3), Qt.ItemDataRole.ToolTipRole) for i in range(go.rowCount())]
        card = NodeCard(go.row(0), rev.result.findings)
        qtbot.addWidget(card)
        title = card.title()
        first = go.row(0).name
        two = dataclasses.replace(rev.result.nodes[0], reasons=[
            Text(N_("stale: no good poll for {age} [node-unreachable]"), age="42 min"),
            Text(N_("{gpu}: GPU lost (fell off the bus)"), gpu="n1 gpu0")])
        go.set_rows([two])
        joined = go.data(go.index(0, 3))
    finally:
        ui_i18n.install("en")
    zh = lang == "zh_CN"
    verdicts = {c[1] for c in cells}
    assert verdicts <= ({"可用", "不可用"} if zh else {"GO", "NO-GO"}) and len(verdicts) == 2
    assert title == f"{first} — " + ("不可用" if zh else "NO-GO")
    quiet = [c[3] for c in cells if c[1] in ("可用", "GO")]
    assert quiet and all(q.startswith("可用" if zh else "go") for q in quiet)
    assert ("；" in joined and "; " not in joined) if zh else joined.count("; ") == 1, joined  # a list of reasons
    no_go_tip = next(t for c, t in zip(cells, tips) if c[1] in ("不可用", "NO-GO"))
    assert no_go_tip.startswith("不可用：" if zh else "no-go: ")


@pytest.mark.parametrize("lang", ["zh_CN", "en"])
def test_hostlist_errors_in_the_reader_s_language(qtbot, fleet_db: Path, lang: str) -> None:
    """Issue 25: the hostlist's own error after the view's frame, in Chinese too; English as before."""
    from ui import i18n as ui_i18n

    assert ui_i18n.install(lang) == lang
    try:
        view = _view(qtbot, fleet_db)
        view.nodes.setText("n[3-1]")
        failed: list[str] = []
        view.failed.connect(failed.append)
        view.run_review()
    finally:
        ui_i18n.install("en")
    if lang == "zh_CN":
        assert view.parsed.text() == "不是主机列表：hostlist 'n[3-1]'：范围 '3-1' 起止颠倒"
        assert failed == ["不是主机列表：hostlist 'n[3-1]'：范围 '3-1' 起止颠倒"]
    else:
        assert view.parsed.text() == "Not a hostlist: hostlist 'n[3-1]': reversed range '3-1'"
        assert failed == ["not a hostlist: hostlist 'n[3-1]': reversed range '3-1'"]
