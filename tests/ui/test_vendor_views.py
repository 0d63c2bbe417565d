"""A mixed fleet in the app (issue 23): the Vendor column and ``vendor:`` filter of the fleet view and All GPUs,
the GPU detail pane saying what another vendor's tool does not report, the versions matrix per vendor.

The database holds NVIDIA nodes fed as the other GUI tests feed them and real captures of other vendors' tools
(../shared/fixtures/F_other_vendors) stored through ``fleetmon import``'s own code path; the parts that need the
captures skip when ../shared is absent.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from helpers import Feeder, uuid_of
from storage.db import open_database

pytestmark = pytest.mark.gui
NOW = int(time.time()) // 60 * 60
FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "F_other_vendors"
CAPTURES = {
    "mi100": "amd/telegraf_mi100_rocm602.json",  # rocm-smi JSON, 4× MI100
    "mi300": "amd/dell-ai_amd_smi_static_json_root.json",  # amd-smi static JSON, 8× MI300X, another driver
    "npu-a3": "huawei_ascend/issue_vllm-ascend-5588_npu-smi-25.3.rc1_a3_excerpt.txt",  # npu-smi, an A3's two chips
    "dcu": "hygon/issue_gpustack-2032_hy-smi-json_k100-ai_first-2-cards_DERIVED.json",  # hy-smi JSON, 2× K100
}


def _build(folder: Path, *, captures: bool) -> Path:
    path = folder / "mixed.db"
    db = open_database(path)
    Feeder(db, nodes=("n1", "n2"), gpus=2).feed(NOW - 3600, NOW)
    if captures:
        from fleetmon.cli.import_smi import prepare, store

        for node, rel in CAPTURES.items():
            copy = folder / Path(rel).name  # the capture time is the file's: a copy stamped 5 minutes ago
            shutil.copyfile(FIXTURES / rel, copy)
            os.utime(copy, (NOW - 300, NOW - 300))
            store(db, prepare(copy, node, now=NOW))
    db.close()
    return path


@pytest.fixture
def mixed(tmp_path):
    if not FIXTURES.is_dir():
        pytest.skip("../shared/fixtures/F_other_vendors is not present")
    return _build(tmp_path, captures=True)


def _snapshot(path: Path):
    from ui.fleet_reader import read_snapshot

    db = open_database(path, readonly=True)
    try:
        return read_snapshot(db, now=NOW + 30)
    finally:
        db.close()


def test_the_filter_matches_the_vendor_without_captures(tmp_path):
    """``vendor:`` on rows stored before issue 23 (no vendor): NVIDIA's."""
    from ui.models.fleet_table import COLUMNS, FleetTableModel

    snap = _snapshot(_build(tmp_path, captures=False))
    model = FleetTableModel()
    model.set_rows(list(snap.rows), verdicts=snap.verdicts)
    assert {model.data(model.index(r, COLUMNS.index("Vendor"))) for r in range(model.rowCount())} == {"NVIDIA"}
    model.set_filter("vendor:nvidia")
    assert model.rowCount() == 4
    model.set_filter("vendor:amd")
    assert model.rowCount() == 0 and model.total() == 4


def test_fleet_tree_vendor_column_and_filter(qtbot, mixed):
    from ui.models.fleet_tree import COL_VENDOR
    from ui.views.fleet import FleetView

    view = FleetView()
    qtbot.addWidget(view)
    view.resize(1240, 600)
    view.set_snapshot(_snapshot(mixed))
    model = view.model
    shown = {it.name: model.data(model.index_of_node(it.name).siblingAtColumn(COL_VENDOR))
             for it in _nodes(model.roots())}
    assert shown == {"n1": "NVIDIA", "n2": "NVIDIA", "mi100": "AMD", "mi300": "AMD", "npu-a3": "Huawei Ascend",
                     "dcu": "Hygon"}
    gpu = model.index_of_gpu(_uuids(mixed, "npu-a3")[0])
    assert model.data(gpu.siblingAtColumn(COL_VENDOR)) == "Huawei Ascend"
    view.filter.setText("vendor:amd")
    assert sorted(it.name for it in _nodes(model.roots())) == ["mi100", "mi300"]
    assert sorted(len(n.children) for n in _nodes(model.roots())) == [4, 8]
    view.filter.setText("vendor:ascend")  # the readable name matches too
    assert [it.name for it in _nodes(model.roots())] == ["npu-a3"]
    view.filter.setText("vendor:nvidia model:A100")
    assert sorted(it.name for it in _nodes(model.roots())) == ["n1", "n2"]


def test_all_gpus_vendor_column_and_filter(qtbot, mixed, tmp_path):
    from PySide6.QtCore import QSettings

    from ui.main_window import MainWindow
    from ui.models.fleet_table import COLUMNS

    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    w = MainWindow(str(mixed), refresh_s=3600, settings=settings)
    qtbot.addWidget(w)
    with qtbot.waitSignals([w.snapshot_shown, w.rows_shown], timeout=20000):
        w.request_load()
    w.show_view("All GPUs")
    model = w.model
    vendor = COLUMNS.index("Vendor")
    assert model.rowCount() == 4 + 4 + 8 + 2 + 2
    by_node = {}
    for r in range(model.rowCount()):
        by_node.setdefault(model.data(model.index(r, 0)), set()).add(model.data(model.index(r, vendor)))
    assert by_node == {"n1": {"NVIDIA"}, "n2": {"NVIDIA"}, "mi100": {"AMD"}, "mi300": {"AMD"},
                       "npu-a3": {"Huawei Ascend"}, "dcu": {"Hygon"}}
    w.table_filter.setText("vendor:amd")
    assert model.rowCount() == 12 and {model.data(model.index(r, 0)) for r in range(12)} == {"mi100", "mi300"}
    w.table_filter.setText("vendor:amd model:MI100")
    assert model.rowCount() == 4
    w.table_filter.setText("vendor:hygon")
    assert [model.row(r).node for r in range(model.rowCount())] == ["dcu", "dcu"]
    w.table_filter.clear()
    assert model.rowCount() == 20
    w.close()


def test_an_ascend_chips_detail_says_what_npu_smi_does_not_report(qtbot, mixed):
    from ui.views.gpu_detail import GpuDetailView

    snap = _snapshot(mixed)
    uuid = _uuids(mixed, "npu-a3")[0]
    row = next(r for r in snap.rows if r.uuid == uuid)
    view = GpuDetailView(str(mixed), now=lambda: NOW)
    qtbot.addWidget(view)
    view.resize(1240, 600)
    try:
        _check_detail(qtbot, view, row, snap)
    finally:
        view.shutdown()


def _check_detail(qtbot, view, row, snap) -> None:
    with qtbot.waitSignal(view.history_shown, timeout=20000):
        view.show_gpu(row)
    cells = {view.inventory.item(r, 0).text(): view.inventory.item(r, 1).text()
             for r in range(view.inventory.rowCount())}
    assert cells["Vendor"] == "Huawei Ascend · npu-smi"
    assert cells["Driver"] == "25.3.rc1" and cells["CANN"] == "not reported by npu-smi"
    assert cells["VBIOS"] == "not reported by npu-smi"
    reasons = view.plot.reasons
    assert reasons["temp_c"] is None  # npu-smi gives the temperature: drawn
    assert reasons["pcie"] == "not reported by npu-smi"  # no PCIe link in npu-smi's table: said, not empty
    assert reasons["throttle"] == "throttle reasons and Xid events: not reported by npu-smi"
    # An NVIDIA card keeps NVML's wording.
    nv = next(r for r in snap.rows if r.uuid == uuid_of("n1", 0))
    with qtbot.waitSignal(view.history_shown, timeout=20000):
        view.show_gpu(nv)
    cells = {view.inventory.item(r, 0).text(): view.inventory.item(r, 1).text()
             for r in range(view.inventory.rowCount())}
    assert cells["Vendor"] == "NVIDIA" and "not reported" not in " ".join(view.plot.reasons[k] or ""
                                                                          for k in view.plot.reasons)


def test_versions_matrix_per_vendor(mixed):
    from ui.models.versions import COLUMNS, VersionsModel

    model = VersionsModel()
    model.set_snapshot(_snapshot(mixed))
    rows = [[model.data(model.index(r, c)) for c in range(len(COLUMNS))] for r in range(model.rowCount())]
    vendor, driver = COLUMNS.index("Vendor"), COLUMNS.index("Driver")
    assert [r[vendor] for r in rows] == ["NVIDIA", "AMD", "AMD", "Hygon", "Huawei Ascend"]  # NVIDIA first
    by_model = {r[COLUMNS.index("Model")]: r for r in rows}
    assert by_model["NVIDIA A100-SXM4-80GB"][driver].startswith("★ 550.54.15")
    assert by_model["Arcturus GL-XL [Instinct MI100]"][driver] == "★ 6.3.6 (1)"
    assert by_model["AMD Instinct MI300X"][driver] == "★ 6.16.13 (1)"
    assert by_model["Ascend 910"][driver] == "★ 25.3.rc1 (1)"
    # A vendor's driver is judged against its own vendor's (the AMD nodes are no outliers against NVIDIA's)
    # and, ungrouped, per model as the driver-mismatch rule compares (the MI300X node's against no MI100's).
    assert all(model.data(model.index(r, driver), Qt.ItemDataRole.BackgroundRole) is None
               for r in range(model.rowCount()))
    assert by_model["Arcturus GL-XL [Instinct MI100]"][COLUMNS.index("VBIOS")] == "★ 113-D3431401-101 (4)"


def _nodes(roots):
    out = []
    for it in roots:
        out += _nodes(it.children) if it.kind == "group" else [it]
    return out


def _uuids(path: Path, node: str) -> list[str]:
    db = open_database(path, readonly=True)
    try:
        return [r["uuid"] for r in db.query("select uuid from gpus where node = ? order by idx", [node])]
    finally:
        db.close()


def test_the_prerun_views_verdict_line_counts_per_vendor(qapp):
    from fleetmon.health.engine import NodePreflight, PreflightResult
    from ui.views.prerun import _vendors_text

    r = PreflightResult(now=NOW, since=NOW - 86400, days=1, exclude="mi1", findings=(),
                        nodes=(NodePreflight("n1", True, gpus=8), NodePreflight("mi1", False, gpus=8),
                               NodePreflight("mi2", True, gpus=8)),
                        vendors={"n1": "nvidia", "mi1": "amd", "mi2": "amd"})
    assert _vendors_text(r) == "NVIDIA 1 GO, 0 NO-GO; AMD 1 GO, 1 NO-GO"
    from ui import i18n as ui_i18n

    assert ui_i18n.install("zh_CN") == "zh_CN"
    try:
        assert _vendors_text(r) == "NVIDIA 可用 1，不可用 0；AMD 可用 1，不可用 1"  # the language's semicolon
    finally:
        ui_i18n.install("en")
    assert _vendors_text(r) == "NVIDIA 1 GO, 0 NO-GO; AMD 1 GO, 1 NO-GO"


def test_a_header_layout_saved_before_the_vendor_column_is_not_applied_to_the_new_columns(qtbot, tmp_path):
    """A fleet header saved with the nine columns of before gave each width to its right-hand neighbour
    (Status took Health's stretched width); it is left out, and a layout saved now is restored."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QHeaderView

    from ui.main_window import MainWindow
    from ui.models.fleet_tree import COL_STATUS

    path = _build(tmp_path, captures=False)
    old = QHeaderView(Qt.Orientation.Horizontal)
    from PySide6.QtGui import QStandardItemModel

    model = QStandardItemModel(0, 9)
    old.setModel(model)
    old.resizeSection(8, 900)  # the old Health column (stretched): Qt restores by index, onto the new Status
    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    settings.setValue("window/fleet_header", old.saveState())
    w = MainWindow(str(path), refresh_s=3600, settings=settings)
    qtbot.addWidget(w)
    header = w.fleet_view.tree.header()
    assert header.count() == 10 and header.sectionSize(COL_STATUS) < 300
    header.resizeSection(COL_STATUS, 123)
    w.save_settings()
    w.close()
    again = MainWindow(str(path), refresh_s=3600, settings=settings)
    qtbot.addWidget(again)
    assert again.fleet_view.tree.header().sectionSize(COL_STATUS) == 123
    again.close()


def test_the_identity_lines_show_card_firmware_and_runtime_where_present():
    from storage.rows import GpuRow, NodeRow
    from ui.views.gpu_detail import inventory_lines

    chip = GpuRow(uuid="NPU-1", node="a3", index=1, model="Ascend 910", vendor="huawei",
                  inventory={"card_id": "0", "firmware_version": "7.7.0.1.231"}, inventory_status={"vbios": "unsupported"})
    node = NodeRow(name="a3", vendor="huawei", driver_version="25.3.rc1", runtime_version="8.1.RC1",
                   agent_version="npu-smi (fleetmon 0.1.0)")
    lines = dict(inventory_lines(chip, None, node=node))
    assert lines["Vendor"] == "Huawei Ascend · npu-smi" and lines["Card"] == "card 0"
    assert lines["Firmware"] == "7.7.0.1.231" and lines["CANN"] == "8.1.RC1" and lines["Driver"] == "25.3.rc1"
    assert lines["VBIOS"] == "not reported by npu-smi"
    amd = GpuRow(uuid="GPU-a", node="m", index=0, model="AMD Instinct MI300X", vendor="amd")
    lines = dict(inventory_lines(amd, None, node=NodeRow(name="m", vendor="amd", runtime_version="6.1.2",
                                                         agent_version="amd-smi-json (fleetmon 0.1.0)")))
    assert lines["Vendor"] == "AMD · amd-smi" and lines["ROCm"] == "6.1.2" and "Card" not in lines
    nv = dict(inventory_lines(GpuRow(uuid="GPU-n", node="n", index=0, model="NVIDIA A100"), None))
    assert nv["Vendor"] == "NVIDIA" and "Firmware" not in nv and "CUDA" not in nv  # NVIDIA's sheet as before
