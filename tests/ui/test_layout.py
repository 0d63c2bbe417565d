"""The window at its default and smallest supported sizes (issue 21 item 5), and its navigation (items 7, 8).

Every key view is checked as a user sees it: the GPU detail pane only under the views that select GPUs,
no header cut (each section at least as wide as its header text needs), no table wider than its view
(no sideways scrolling to reach a column), the derating table's rows all visible, the pre-run result
list taller than a handful of rows.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QAbstractItemView, QTableView, QTreeView

from storage.rows import DeratingDay

pytestmark = pytest.mark.gui

DETAIL_VIEWS = {"Fleet", "Findings", "All GPUs"}


@pytest.fixture
def shown(qtbot, fleet_db: Path, tmp_path: Path):
    """The main window on the UI fixture database, shown (a real layout), its first snapshot applied."""
    from ui.main_window import MainWindow

    w = MainWindow(str(fleet_db), refresh_s=60, settings=QSettings(str(tmp_path / "w.ini"),
                                                                 QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    with qtbot.waitSignal(w.snapshot_shown, timeout=10000):
        w.show()
        qtbot.waitExposed(w)
        w.request_load()
    yield w
    w.close()


def _settle(qtbot, w) -> None:
    qtbot.wait(30)  # layouts and the column fitters run from the event loop


def _header(view: QAbstractItemView):
    return view.header() if isinstance(view, QTreeView) else view.horizontalHeader()  # type: ignore[attr-defined]


def assert_columns_fit(view: QAbstractItemView, name: str) -> None:
    """Every visible column at least as wide as its header text, and all of them within the view's width."""
    header = _header(view)
    columns = [c for c in range(header.count()) if not header.isSectionHidden(c)]
    for c in columns:
        title = str(view.model().headerData(c, Qt.Orientation.Horizontal) or "")
        assert header.sectionSize(c) >= header.sectionSizeHint(c) - 1, (name, title, header.sectionSize(c),
                                                                          header.sectionSizeHint(c))
    total = sum(header.sectionSize(c) for c in columns)
    assert total <= view.viewport().width() + 1, (name, total, view.viewport().width())
    assert not view.horizontalScrollBar().isVisible(), (name, total, view.viewport().width(), header.length(),
                                                         view.horizontalScrollBar().maximum())


def assert_view_fits_the_window(w, width: int, height: int) -> None:
    """The current view asks no more room than the window has: the window keeps its size and the sidebar
    its names (a view wider than the window squeezed the sidebar to "Findings (1")."""
    view = w.stack.currentWidget()
    assert view.minimumSizeHint().width() <= w.stack.width(), (w.current_view(), view.minimumSizeHint())
    assert (w.width(), w.height()) == (width, height), w.current_view()
    assert w.sidebar.width() >= w.sidebar.sizeHintForColumn(0), (w.current_view(), w.sidebar.width())


def _derating_days() -> tuple[list[DeratingDay], dict[str, str]]:
    """Six models (the demo's), four cards each, a T4's reserved memory, one card at 65 % of boost."""
    models = ("Tesla V100-SXM2-32GB", "Tesla P100-PCIE-16GB", "NVIDIA GeForce RTX 3090", "Tesla T4",
              "NVIDIA A100-SXM4-80GB", "NVIDIA GeForce RTX 4090")
    days, names = [], {}
    for m, model in enumerate(models):
        for i in range(4):
            uuid = f"GPU-{m}-{i}"
            names[uuid] = model
            days.append(DeratingDay(gpu_uuid=uuid, day=86400, node=f"node{m}", clock_ratio=0.65 if i == 0 and m == 2
                                    else 0.98, power_limit_ratio=1.0, memory_ratio=0.9375 if "T4" in model else 0.99,
                                    pcie_ratio=1.0))
    return days, names


@pytest.mark.parametrize("size", ["default", "minimum"])
def test_key_views_fit_the_window(qtbot, shown, size):
    from ui.history_reader import DeratingData
    from ui.main_window import DEFAULT_SIZE, MINIMUM_SIZE

    w = shown
    width, height = DEFAULT_SIZE if size == "default" else MINIMUM_SIZE
    w.resize(width, height)
    _settle(qtbot, w)
    assert (w.width(), w.height()) == (width, height)

    w.show_view("Findings")
    long_fleet = "1,234 of 5,678 shown · 321 acknowledged · nodes not heard from: 22 stale, 3 unknown" * 2
    w.findings_view.count.setText(long_fleet)  # a big fleet's count line does not widen the view
    w.fleet_view.summary.setText("<b>1000</b> nodes (" + ", ".join(f"{v} x" for v in range(40)) + ")")
    _settle(qtbot, w)
    assert w.findings_view.model.rowCount() == 3
    assert_columns_fit(w.findings, "findings")  # "Last evidence" and the last column were cut at 1240 px
    assert_view_fits_the_window(w, width, height)

    w.show_view("Versions")
    _settle(qtbot, w)
    assert_columns_fit(w.versions_view.table, "versions")
    assert_view_fits_the_window(w, width, height)
    w.show_view("Fleet")
    _settle(qtbot, w)
    assert_view_fits_the_window(w, width, height)
    assert_columns_fit(w.fleet_view.tree, "fleet")
    from ui.views.fleet import COLUMN_WIDTHS
    assert w.fleet_view.tree.header().sectionSize(0) >= COLUMN_WIDTHS["Name"]  # node names whole; Model gives way

    inspection = dict(w._views)["Inspection"]
    with qtbot.waitSignal(inspection.inspection_shown, timeout=30000):
        w.show_view("Inspection")
    _settle(qtbot, w)
    assert_columns_fit(inspection.tree, "inspection checklist")  # its Summary column was cut
    assert_columns_fit(inspection.changes_table, "inspection changes")
    assert inspection.tree.header().sectionSize(3) >= 250  # the summary is read, not guessed
    assert_view_fits_the_window(w, width, height)

    w.show_view("Derating")
    days, models = _derating_days()
    w.derating._on_loaded(DeratingData(since=0.0, until=2 * 86400.0, days=tuple(days), models=models))
    _settle(qtbot, w)
    table = w.derating.table
    assert_columns_fit(table, "derating")
    rows = w.derating.model.rowCount()
    assert rows == 6
    last = table.visualRect(w.derating.model.index(rows - 1, 0))
    assert last.bottom() <= table.viewport().height(), "a derating row is out of sight"  # 4 of 6 showed
    assert w.derating.title.width() >= w.derating.title.sizeHint().width()  # the title is not cut
    assert_view_fits_the_window(w, width, height)

    w.show_view("Pre-run")
    _settle(qtbot, w)
    prerun = dict(w._views)["Pre-run"]
    rows_fit = prerun.go_table.viewport().height() // prerun.go_table.verticalHeader().defaultSectionSize()
    assert rows_fit >= (8 if size == "default" else 6), rows_fit  # it showed 4 under the detail pane at 1240×760
    assert_view_fits_the_window(w, width, height)


def test_detail_pane_only_under_the_views_that_select_gpus(qtbot, shown):
    w = shown
    w.splitter.setSizes([400, 300])
    before = w.splitter.sizes()
    for name, _ in w._views:
        w.show_view(name)
        assert w.detail_shown() == (name in DETAIL_VIEWS), name
        assert w.detail.isVisible() == (name in DETAIL_VIEWS), name
    w.show_view("Fleet")
    assert w.splitter.sizes() == before  # the pane keeps its size across the views without it


def test_the_pane_size_is_saved_while_a_view_without_it_shows(qtbot, fleet_db, tmp_path):
    from ui.main_window import MainWindow

    ini = QSettings(str(tmp_path / "w.ini"), QSettings.Format.IniFormat)
    w = MainWindow(str(fleet_db), refresh_s=60, settings=ini)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    w.splitter.setSizes([380, 300])
    w.show_view("Derating")
    w.close()  # saves the settings
    again = MainWindow(str(fleet_db), refresh_s=60, settings=QSettings(str(tmp_path / "w.ini"),
                                                                       QSettings.Format.IniFormat))
    qtbot.addWidget(again)
    again.show()
    qtbot.waitExposed(again)
    assert again.current_view() == "Derating" and not again.detail_shown()
    again.show_view("Fleet")
    assert again.detail_shown() and again.splitter.sizes()[1] > 150  # not collapsed to nothing
    again.close()


def test_the_smallest_supported_size_is_the_windows_minimum_and_documented(shown):
    from ui.main_window import MINIMUM_SIZE

    assert (shown.minimumWidth(), shown.minimumHeight()) == MINIMUM_SIZE
    shown.resize(800, 500)
    assert (shown.width(), shown.height()) == MINIMUM_SIZE
    guide = (Path(__file__).resolve().parents[2] / "docs" / "user-guide.md").read_text(encoding="utf-8")
    assert f"{MINIMUM_SIZE[0]}×{MINIMUM_SIZE[1]}" in guide


def test_a_node_finding_is_selected_by_a_click_and_opened_by_enter(qtbot, shown):
    """Issue 21 item 7: one click on a node-level finding jumped to the fleet view, so it could not be acknowledged."""
    w = shown
    w.show_view("Findings")
    _settle(qtbot, w)
    table, model = w.findings, w.findings_view.model
    r = next(r for r in range(model.rowCount()) if model.row(r).node == "n3" and not model.row(r).gpu_uuid)
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=table.visualRect(model.index(r, 1)).center())
    assert w.current_view() == "Findings"
    assert w.findings_view.current() is not None and w.findings_view.current().kind == "driver-mismatch"
    assert w.findings_view.ack_button.isEnabled()
    qtbot.keyClick(table, Qt.Key.Key_Return)
    assert w.current_view() == "Fleet"
    it = w.fleet_view.model.item(w.fleet_view.tree.currentIndex())
    assert it is not None and it.kind == "node" and it.name == "n3"


def test_a_gpu_finding_click_shows_the_card_and_a_double_click_opens_it(qtbot, shown):
    w = shown
    w.show_view("Findings")
    _settle(qtbot, w)
    table, model = w.findings, w.findings_view.model
    r = next(r for r in range(model.rowCount()) if model.row(r).gpu_uuid == "GPU-n2-01")
    pos = table.visualRect(model.index(r, 1)).center()
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert w.current_view() == "Findings" and w.detail.uuid == "GPU-n2-01"  # shown in the pane below
    qtbot.mouseDClick(table.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert w.current_view() == "Fleet"
    it = w.fleet_view.model.item(w.fleet_view.tree.currentIndex())
    assert it is not None and it.gpu is not None and it.gpu.uuid == "GPU-n2-01"


def test_a_clicked_derating_dot_opens_its_card(qtbot, shown):
    """Issue 21 item 8: a dot's click selects the GPU: the derating card plot and the detail pane show it."""
    w = shown
    w.show_view("Derating")
    w.derating.gpu_requested.emit("GPU-n2-01")
    assert w.current_view() == "Derating"
    assert w.derating.row is not None and w.derating.row.uuid == "GPU-n2-01"
    assert w.detail.uuid == "GPU-n2-01"
    assert w.derating.card_name("GPU-n2-01").startswith("n2 GPU 1 · ")  # named from the window's snapshot


def test_status_bar_counts_say_what_they_count(shown):
    """Issue 21 item 10: node verdicts and findings apart; "1 critical finding", not "1 critical"."""
    text = shown.collector_label.text()
    assert "nodes: 0 fail, 0 unreachable" in text and "· 1 critical finding" in text, text
    assert "8 GPUs on 4 nodes" in shown.status_label.text()  # m2 has no GPU known


@pytest.mark.parametrize("size", ["default", "minimum"])
def test_the_gpu_details_title_is_not_cut_by_its_buttons(qtbot, shown, size):
    """Issue 21: at 1240×760 the detail's "node GPU i — model · nominal …" title was cut after the model's first
    word by the Intake… and range buttons on its row (the tooltip had the text). It has a row of its own now."""
    from ui.main_window import DEFAULT_SIZE, MINIMUM_SIZE

    w = shown
    w.resize(*(DEFAULT_SIZE if size == "default" else MINIMUM_SIZE))
    with qtbot.waitSignal(w.detail.history_shown, timeout=10000):
        w.select_gpu(0)
    _settle(qtbot, w)
    title = w.detail.title
    assert "nominal" in title.text() or "not in the spec catalog" in title.text()
    assert title.width() >= title.sizeHint().width(), (title.width(), title.sizeHint().width(), title.text())
    assert w.detail.intake_button.isVisible() and w.detail.intake_button.isEnabled()
