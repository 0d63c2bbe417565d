"""The fleet, findings and versions models and views (pytest-qt; real SQLite files where data is read)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from storage.rows import FleetRow, StoredFinding
from ui.fleet_reader import FleetSnapshot

pytestmark = pytest.mark.gui

BG = Qt.ItemDataRole.BackgroundRole


def row(node: str, idx: int, **kw: object) -> FleetRow:
    base: dict[str, object] = {
        "node": node, "node_status": "ok", "driver_version": "550.54.15", "uuid": f"GPU-{node}-{idx}",
        "index": idx, "model": "NVIDIA A100-SXM4-80GB", "state": "ok", "latest_ts": 995.0,
        "power_enforced_w": 400.0, "values": {"temp_c": 55, "power_w": 301.2, "power_limit_w": 400.0,
                                              "util_gpu_pct": 88}}
    base.update(kw)
    return FleetRow(**base)  # type: ignore[arg-type]


def finding(i: int, **kw: object) -> StoredFinding:
    base: dict[str, object] = {"id": i, "key": f"k{i}", "kind": "xid", "severity": "warning", "first_seen": 0.0,
                               "last_seen": 0.0, "updated_at": 0.0}
    base.update(kw)
    return StoredFinding(**base)  # type: ignore[arg-type]


def _names(model, parent=None):
    from PySide6.QtCore import QModelIndex

    parent = parent or QModelIndex()
    return [model.data(model.index(r, 0, parent)) for r in range(model.rowCount(parent))]


def test_fleet_tree_groups_nodes_gpus_worst_first(qtmodeltester, snap):
    from ui.models.fleet_tree import FleetTreeModel

    model = FleetTreeModel()
    model.set_snapshot(snap)
    qtmodeltester.check(model)
    assert _names(model) == ["b", "a"]  # b holds the unreachable node: worst first
    b = model.index(0, 0)
    assert _names(model, b) == ["m2", "m1"]
    a = model.index(1, 0)
    assert _names(model, a)[:2] == ["n2", "n3"] or _names(model, a)[:2] == ["n3", "n2"]
    n2 = model.index_of_node("n2")
    assert _names(model, n2) == ["GPU 0", "GPU 1"]  # a node's GPUs by index, not by health (the hot one is GPU 1)


@pytest.mark.parametrize("column, descending", [("Health", True), ("Temp", True), ("Name", True), ("Temp", False)])
def test_gpus_inside_a_node_stay_in_index_order_whatever_the_sort(snap, column, descending):
    """Issue 21 item 10: GPU 1 (the hot, warned card) was listed above GPU 0; the sort orders the nodes."""
    from ui.models.fleet_tree import COLUMNS, FleetTreeModel

    model = FleetTreeModel()
    model.set_snapshot(snap)
    model.sort(COLUMNS.index(column), Qt.SortOrder.DescendingOrder if descending else Qt.SortOrder.AscendingOrder)
    for node in ("n1", "n2", "n3", "m1"):
        assert _names(model, model.index_of_node(node)) == ["GPU 0", "GPU 1"], (column, node)


def test_counts_use_the_singular_for_one(snap):
    """Issue 21 item 10: "1 nodes" in a group's row, its tooltip, the summary bar."""
    from ui import format as fmt
    from ui.models.fleet_build import summary_text
    from ui.models.fleet_tree import FleetTreeModel

    assert (fmt.plural(1, "node"), fmt.plural(0, "node"), fmt.plural(2, "GPU")) == ("1 node", "0 nodes", "2 GPUs")
    model = FleetTreeModel()
    model.set_snapshot(snap)
    model.set_filter("n[1],m[1]")  # one node left in each group
    groups = {model.data(model.index(r, 0)): r for r in range(model.rowCount())}
    assert set(groups) == {"a", "b"}
    for r in groups.values():
        assert model.data(model.index(r, 1)).startswith("1 node · 2× "), model.data(model.index(r, 1))
        assert ": 1 node, 2 GPUs" in model.data(model.index(r, 0), Qt.ItemDataRole.ToolTipRole)
    one = FleetSnapshot(rows=(row("a", 0),), read_at=1000.0)
    assert "<b>1</b> node (" in summary_text(one) and "<b>1</b> GPU " in summary_text(one)


def test_summary_bar_says_nodes_by_verdict_and_findings_apart(snap):
    """Issue 21 item 10: the bar's "7 warning" counted findings beside "6 warn" nodes: it says which is which."""
    from ui.models.fleet_build import summary_text

    text = summary_text(snap)
    nodes_part, _, rest = text.partition(" · ")
    assert nodes_part.startswith("<b>5</b> nodes (") and "</b> warn" in nodes_part  # node verdicts, in the nodes' part
    assert "open findings: " in rest and "</b> critical" in rest and "</b> warning" in rest
    assert "warning" not in nodes_part and "critical" not in nodes_part


def test_hot_temperature_cell_is_coloured_by_the_cards_threshold(snap):
    from ui.models.fleet_tree import COLUMNS, FleetTreeModel

    model = FleetTreeModel()
    model.set_snapshot(snap)
    temp = COLUMNS.index("Temp")
    hot = model.index_of_gpu("GPU-n2-01")
    cool = model.index_of_gpu("GPU-n2-00")
    assert model.data(model.index(hot.row(), temp, hot.parent())) == "88 °C"
    assert model.data(model.index(hot.row(), temp, hot.parent()), BG) is not None
    assert model.data(model.index(cool.row(), temp, cool.parent()), BG) is None
    # The node row aggregates: its temperature cell is coloured too.
    n2 = model.index_of_node("n2")
    assert model.data(model.index(n2.row(), temp, n2.parent()), BG) is not None


def test_fleet_tree_sorts_inside_the_model_and_keeps_persistent_indexes(qtmodeltester, snap):
    from PySide6.QtCore import QPersistentModelIndex

    from ui.models.fleet_tree import COLUMNS, FleetTreeModel

    model = FleetTreeModel()
    model.set_grouped(False)
    model.set_snapshot(snap)
    keep = QPersistentModelIndex(model.index_of_node("n1"))
    model.sort(0, Qt.SortOrder.AscendingOrder)
    assert _names(model) == ["m1", "m2", "n1", "n2", "n3"]
    assert keep.row() == 2 and model.data(keep) == "n1"
    model.sort(0, Qt.SortOrder.DescendingOrder)
    assert _names(model) == ["n3", "n2", "n1", "m2", "m1"]
    model.sort(COLUMNS.index("Temp"), Qt.SortOrder.DescendingOrder)
    assert _names(model)[0] == "n2"
    qtmodeltester.check(model)


@pytest.mark.parametrize("text, nodes", [
    ("n[1-2]", {"n1", "n2"}), ("model:A100", {"n1", "n2", "n3", "m1"}), ("driver:535", {"n3"}),
    ("status:unreachable", {"m2"}), ("status:warning", {"n2", "n3"}), ("m1", {"m1"}), ("group:b", {"m1", "m2"}),
    ("nothing-matches", set()),
])
def test_fleet_filter(snap, text, nodes):
    from ui.models.fleet_tree import FleetTreeModel

    model = FleetTreeModel()
    model.set_grouped(False)
    model.set_snapshot(snap)
    model.set_filter(text)
    assert set(_names(model)) == nodes


def test_refresh_with_the_same_shape_does_not_reset(qtbot, snap):
    from ui.models.fleet_tree import FleetTreeModel

    model = FleetTreeModel()
    model.set_snapshot(snap)
    resets = []
    model.modelReset.connect(lambda: resets.append(1))
    with qtbot.waitSignal(model.dataChanged, timeout=1000):
        model.set_snapshot(snap)
    assert resets == []


def test_fleet_view_summary_and_selection_survive_refresh(qtbot, snap):
    from ui.views.fleet import FleetView, summary_text

    text = summary_text(snap)
    # m2 was never reached (its only poll failed): its verdict is "unknown", as the report says, not "unreachable".
    for part in ("<b>5</b> nodes (", "<b>8</b> GPUs", "0</b> unreachable", "1</b> unknown", "1</b> critical",
                 "2</b> warning",
                 "550.54.15 (3)", "535.161.08 (1)"):
        assert part in text, (part, text)
    view = FleetView()
    qtbot.addWidget(view)
    view.resize(1000, 400)
    view.set_snapshot(snap)
    seen = []
    view.gpu_selected.connect(lambda r: seen.append(r.uuid))
    assert view.show_gpu("GPU-n1-00")
    assert seen == ["GPU-n1-00"]
    # A refresh that changes the shape (a filter) and back keeps the selection.
    view.filter.setText("n1")
    view.filter.setText("")
    view.set_snapshot(snap)
    cur = view.model.item(view.tree.currentIndex())
    assert cur is not None and cur.key == "g:GPU-n1-00"
    assert [r.uuid for r in view.selected_gpus()] == ["GPU-n1-00"]


def test_findings_model_evidence_filters_and_acks(qtmodeltester):
    from storage.acks import AckRow
    from ui.models.findings_table import COL_ACK, COL_EVIDENCE, FindingsTableModel

    rows = [finding(1, kind="temperature-high", severity="warning", node="a1",
                    evidence={"max_temp_c": 97, "limit_c": 90, "critical_c": 95}),
            finding(2, kind="xid", severity="critical", node="b1", evidence={"code": 79, "name": "fell off", "count": 2}),
            finding(3, kind="pcie-replay", severity="info", node="a2", evidence={"summary": "a2 gpu0: 12 replays"})]
    model = FindingsTableModel()
    model.set_rows(rows, now=1000.0, groups={"a1": "ga", "a2": "ga", "b1": "gb"},
                   acks={"k3": AckRow(key="k3", note="known", created_at=900.0, severity="info")})
    qtmodeltester.check(model)
    assert model.rowCount() == 2  # the acknowledged one is hidden
    assert model.data(model.index(1, COL_EVIDENCE)) == "97 °C, limit 90 °C (critical 95 °C)"
    model.set_filter(show_acknowledged=True)
    assert model.rowCount() == 3
    assert model.data(model.index(2, COL_ACK)) == "acknowledged: known"
    model.set_filter(groups={"gb"}, show_acknowledged=True)
    assert [model.row(r).key for r in range(model.rowCount())] == ["k2"]
    model.set_filter(severities={"critical", "warning"})
    assert [model.row(r).key for r in range(model.rowCount())] == ["k2", "k1"]
    model.set_filter(kinds={"temperature-high"})
    assert [model.row(r).key for r in range(model.rowCount())] == ["k1"]
    model.set_filter(show_acknowledged=False)
    model.sort(2, Qt.SortOrder.AscendingOrder)
    assert [model.row(r).node for r in range(model.rowCount())] == ["a1", "b1"]
    qtmodeltester.check(model)


def test_an_ack_stops_covering_a_worsened_or_expired_finding():
    from storage.acks import AckRow

    ack = AckRow(key="k", note="", created_at=0.0, severity="warning", until=100.0)
    assert ack.covers("warning", 50.0) and ack.covers("info", 50.0)
    assert not ack.covers("critical", 50.0)
    assert not ack.covers("warning", 100.0)


def test_versions_matrix_marks_baseline_and_outliers(qtmodeltester, snap):
    from ui.models.versions import COLUMNS, VersionsModel

    model = VersionsModel()
    model.set_snapshot(snap)
    qtmodeltester.check(model)
    rows = {(model.data(model.index(r, 0)), model.data(model.index(r, 1))): r for r in range(model.rowCount())}
    r = rows[("a", "NVIDIA A100-SXM4-80GB")]
    driver = COLUMNS.index("Driver")
    assert model.data(model.index(r, driver)) == "★ 550.54.15 (2)  535.161.08 (1)"
    assert model.data(model.index(r, driver), BG) is not None
    assert model.nodes_behind(r, driver) == {"550.54.15": ["n1", "n2"], "535.161.08": ["n3"]}
    vbios = COLUMNS.index("VBIOS")
    assert model.data(model.index(r, vbios)).startswith("★ 92.00.45.00.01 (5)")
    assert "94.00.01 (outlier): n3" in model.data(model.index(r, vbios), Qt.ItemDataRole.ToolTipRole)
    b = rows[("b", "NVIDIA A100-SXM4-80GB")]
    assert model.data(model.index(b, driver), BG) is None


def test_versions_view_click_lists_the_nodes(qtbot, snap):
    from ui.models.versions import COLUMNS
    from ui.views.versions import VersionsView

    view = VersionsView()
    qtbot.addWidget(view)
    view.set_snapshot(snap)
    r = next(r for r in range(view.model.rowCount()) if view.model.data(view.model.index(r, 0)) == "a")
    view.show_cell(view.model.index(r, COLUMNS.index("Driver")))
    items = [view.nodes.item(i).text().strip() for i in range(view.nodes.count())]
    assert items == ["550.54.15 (baseline): 2 nodes", "n1", "n2", "535.161.08 (outlier): 1 node", "n3"]
    got = []
    view.node_requested.connect(got.append)
    view.nodes.itemActivated.emit(view.nodes.item(4))
    assert got == ["n3"]


def test_versions_view_columns_fit_their_versions_and_the_list_says_what_to_do(qtbot, snap):
    from ui.views.versions import MAX_WIDTH, VersionsView

    view = VersionsView()
    qtbot.addWidget(view)
    view.resize(1100, 400)
    view.show()
    assert view.nodes.count() == 1 and "Click a cell" in view.nodes.item(0).text()  # not an empty white box
    view.set_snapshot(snap)
    header, metrics = view.table.horizontalHeader(), view.table.fontMetrics()
    for c in range(view.model.columnCount()):
        widest = max(metrics.horizontalAdvance(str(view.model.data(view.model.index(r, c)) or ""))
                     for r in range(view.model.rowCount()))
        assert header.sectionSize(c) >= min(widest, MAX_WIDTH - 12), (c, header.sectionSize(c), widest)
    table_w, list_w = view.splitter.sizes()
    assert table_w > 2 * list_w  # the matrix gets the room, the node list the rest


def test_findings_view_single_click_and_ack_prompt(qtbot, snap):
    """A click selects (a node-level finding too, to acknowledge it) and shows a GPU's finding in the detail pane;
    a double click or Enter opens the finding in the fleet view (issue 21 item 7)."""
    from ui.views.findings import FindingsView

    view = FindingsView()
    qtbot.addWidget(view)
    view.resize(1200, 300)
    view.show()
    view.set_snapshot(snap)
    assert view.model.rowCount() == 3
    gpus, opened, nodes = [], [], []
    view.gpu_requested.connect(gpus.append)
    view.gpu_opened.connect(opened.append)
    view.node_requested.connect(nodes.append)

    def centre(r):
        return view.table.visualRect(view.model.index(r, 1)).center()

    r = next(r for r in range(view.model.rowCount()) if view.model.row(r).gpu_uuid)
    qtbot.mouseClick(view.table.viewport(), Qt.MouseButton.LeftButton, pos=centre(r))
    assert gpus == ["GPU-n2-01"] and opened == [] and nodes == []  # shown in the detail pane, not navigated
    m2 = next(r for r in range(view.model.rowCount()) if view.model.row(r).node == "m2")
    qtbot.mouseClick(view.table.viewport(), Qt.MouseButton.LeftButton, pos=centre(m2))
    assert nodes == [] and view.current() is not None and view.current().node == "m2"  # selected, still here
    assert view.ack_button.isEnabled() and view.resolve_button.isEnabled()
    qtbot.keyClick(view.table, Qt.Key.Key_Return)
    assert nodes == ["m2"]  # Enter opens it
    qtbot.mouseClick(view.table.viewport(), Qt.MouseButton.LeftButton, pos=centre(r))  # QTest's double click
    qtbot.mouseDClick(view.table.viewport(), Qt.MouseButton.LeftButton, pos=centre(r))  # is its second half
    assert opened == ["GPU-n2-01"] and nodes == ["m2"]  # a double click opens too
    qtbot.mouseClick(view.table.viewport(), Qt.MouseButton.LeftButton, pos=centre(m2))
    asked = []
    view.ask_ack = lambda parent, f, snooze: (asked.append((f.key, snooze)), ("ticket 42", 4e9))[1]
    with qtbot.waitSignal(view.ack_requested) as blocker:
        view.snooze_button.click()
    assert asked == [("node-unreachable|node:m2|", True)]
    assert blocker.args == ["node-unreachable|node:m2|", "critical", "ticket 42", 4e9, blocker.args[4]]


def test_empty_snapshot_is_fine(qtbot):
    from ui.views.findings import FindingsView
    from ui.views.fleet import FleetView
    from ui.views.versions import VersionsView

    for cls in (FleetView, FindingsView, VersionsView):
        w = cls()
        qtbot.addWidget(w)
        w.set_snapshot(FleetSnapshot())


def test_flat_fleet_table_sorts_in_the_model(qtmodeltester):
    from ui.models.fleet_table import COLUMNS, FleetTableModel

    model = FleetTableModel()
    model.set_rows([row("a", 0, values={"temp_c": 50}), row("b", 0, values={"temp_c": 80}),
                    row("c", 0, values={})], now=1000.0)
    model.sort(COLUMNS.index("Temp"), Qt.SortOrder.DescendingOrder)
    assert [model.row(r).node for r in range(3)] == ["b", "a", "c"]
    qtmodeltester.check(model)


def test_a_node_without_a_buffer_says_so_in_its_tooltip(snap):
    """A dcgm-exporter node has no backfill: its row's tooltip says so; an agent's says nothing of it."""
    import dataclasses

    from PySide6.QtCore import Qt

    from fleetmon.sources import node_source
    from ui.models.fleet_tree import FleetTreeModel

    nodes = dict(snap.nodes)
    nodes["n3"] = dataclasses.replace(nodes["n3"], url="dcgm+http://n3:9400/metrics")
    model = FleetTreeModel()
    model.set_snapshot(dataclasses.replace(snap, nodes=nodes))
    note = node_source("dcgm+http://n3:9400/metrics").note
    assert "backfill" in note
    n3, n2 = model.index_of_node("n3"), model.index_of_node("n2")
    assert note in model.data(model.index(n3.row(), 0, n3.parent()), Qt.ItemDataRole.ToolTipRole)
    assert note not in model.data(model.index(n2.row(), 0, n2.parent()), Qt.ItemDataRole.ToolTipRole)


def test_fleet_view_gives_a_wide_window_to_the_model_column_unless_the_user_sized_it(qtbot, snap):
    from ui.views.fleet import COL_MODEL, COLUMN_WIDTHS, FleetView

    view = FleetView()
    qtbot.addWidget(view)
    view.resize(1200, 400)  # every column at its default width, none to spare (1100 before the Vendor column)
    view.show()
    view.set_snapshot(snap)
    header = view.tree.header()
    assert header.sectionSize(COL_MODEL) == COLUMN_WIDTHS["Model"]  # the default size: the default widths
    view.resize(1800, 400)
    qtbot.waitUntil(lambda: header.sectionSize(COL_MODEL) > COLUMN_WIDTHS["Model"] + 100)
    header.resizeSection(COL_MODEL, 180)  # the user's choice stays
    view.resize(1700, 400)
    qtbot.wait(50)
    assert header.sectionSize(COL_MODEL) == 180


def test_a_replaced_fleet_tree_is_freed_at_once_not_left_to_the_garbage_collector(qtbot, fleet_db):
    """Cycles (parent ↔ children) in replaced trees waited for full collections, which froze the window."""
    import gc
    import weakref

    from tests.ui.conftest import snapshot
    from ui.models.fleet_tree import FleetTreeModel

    model = FleetTreeModel()
    model.set_snapshot(snapshot(fleet_db))
    old = [weakref.ref(it) for it in model._by_uid.values()]
    assert old
    gc.disable()
    try:
        model.set_snapshot(snapshot(fleet_db))  # a refresh: a new tree of new items
        assert all(ref() is None for ref in old)  # freed by reference counting alone
    finally:
        gc.enable()
    assert model.rowCount() > 0 and all(it.parent is not None for it in model._by_uid.values()
                                        if it.kind == "gpu")  # the shown tree is intact
