"""The window's values in Simplified Chinese (issue 25): the cells ui/format.py and the fleet models build
(ages, "max 72 °C", "3 nodes · …", health and status words, a finding's evidence line), the GPU detail's title line, status line, range
buttons and history plots, the derating view and the collector's state line; and English again after."""

from __future__ import annotations

import re
import time

import pytest
from PySide6.QtCore import QProcess, Qt

from helpers import Feeder, uuid_of
from storage.db import open_database
from storage.findings import save_derating
from storage.queries import fleet_latest
from storage.rows import DeratingDay
from ui import i18n as ui_i18n

pytestmark = pytest.mark.gui
CJK = re.compile(r"[\u4e00-\u9fff]")
H = Qt.Orientation.Horizontal
NOW = int(time.time()) // 86400 * 86400


@pytest.fixture
def history_db(tmp_path):
    """n1 with two GPUs: an hour of minutes, and a day of derating ratios."""
    path = tmp_path / "fleet.db"
    db = open_database(path)
    Feeder(db, nodes=("n1",), gpus=2).feed(NOW - 3600, NOW)
    save_derating(db, [DeratingDay(gpu_uuid=uuid_of("n1", i), day=NOW - 86400, clock_ratio=r, power_limit_ratio=1.0,
                                   memory_ratio=0.99, pcie_ratio=1.0) for i, r in enumerate((0.65, 0.95))])
    db.close()
    return path


def _row(path, node, index):
    db = open_database(path, readonly=True)
    try:
        return next(r for r in fleet_latest(db) if r.uuid == uuid_of(node, index))
    finally:
        db.close()


def format_cells() -> dict[str, str]:
    from ui import format as fmt

    now = 1_000_000.0
    return {
        "age_s": fmt.age(now - 3, now), "age_h": fmt.age(now - 2 * 3600, now), "span": fmt.span(6 * 3600),
        "fail": fmt.verdict_label("fail", [("critical", "xid"), ("warning", "pcie-replay")]),
        "stale": fmt.verdict_label("stale", [("warning", "pcie-replay")], 6 * 3600),
        "pass": fmt.verdict_label("pass"),
        "ok": fmt.status_word("ok"), "lost": fmt.status_word("lost"), "unreachable": fmt.status_word("unreachable"),
        "unknown": fmt.status_word("unknown"), "refused": fmt.status_text("unreachable", "connect: refused"),
        "evidence": fmt.evidence_text("temperature-high", {"max_temp_c": 88, "limit_c": 85, "critical_c": 95,
                                                           "minutes": 4}),
        "gpu_lost": fmt.evidence_text("gpu-lost", {"lost_minutes": 3, "lost_events": 1, "back_events": 0}),
        "driver": fmt.evidence_text("driver-mismatch", {"field": "driver", "version": "535.161.08",
                                                        "expected": "550.54.15", "basis": "majority"}),
        "joined": fmt.joined(["3 " + fmt.verdict_word("fail"), "2 " + fmt.verdict_word("warn"), "xid"]),
        "semicolons": fmt.joined(["a", "b"], semicolons=True),
    }


ENGLISH_CELLS = {"age_s": "3 s ago", "age_h": "2 h ago", "span": "6.0 h", "fail": "fail: xid (+1)",
                 "stale": "stale 6.0 h (+1)", "pass": "pass", "ok": "ok", "lost": "lost", "unreachable": "unreachable",
                 "unknown": "unknown", "refused": "unreachable: connect: refused",
                 "evidence": "88 °C, limit 85 °C (critical 95 °C) for 4 min", "gpu_lost": "lost 3 min (1 lost, 0 back)",
                 "driver": "driver 535.161.08, expected 550.54.15 (majority)", "joined": "3 fail, 2 warn, xid",
                 "semicolons": "a; b"}


def test_format_cells_in_chinese_then_english_again(chinese):
    cells = format_cells()
    assert cells == {"age_s": "3 秒前", "age_h": "2 小时前", "span": "6.0 小时", "fail": "不通过：xid（+1）",
                     "stale": "数据过期 6.0 小时（+1）", "pass": "通过", "ok": "正常", "lost": "掉卡",
                     "unreachable": "不可达", "unknown": "未知", "refused": "不可达：connect: refused",
                     "evidence": "88 °C，上限 85 °C（严重 95 °C），持续 4 分钟",
                     "gpu_lost": "掉卡 3 分钟（掉卡 1 次，恢复 0 次）",
                     "driver": "驱动 535.161.08，应为 550.54.15（多数版本）", "joined": "3 不通过、2 警告、xid",
                     "semicolons": "a；b"}
    # lost, unreachable and unknown stay distinct words, and none reads as a number
    markers = [cells[k] for k in ("ok", "lost", "unreachable", "unknown")]
    assert len(set(markers)) == 4 and not any(re.search(r"\d", m) for m in markers)
    ui_i18n.install("en")
    assert format_cells() == ENGLISH_CELLS


def tree_cells(snap) -> dict[str, str]:
    from ui.models.fleet_build import _LAST, COL_HEALTH, COL_MODEL, COL_STATUS, FIELD_COLUMNS, _F0
    from ui.models.fleet_tree import FleetTreeModel

    model = FleetTreeModel()
    model.set_snapshot(snap)
    temp = _F0 + [f.name for f in FIELD_COLUMNS].index("temp_c")
    groups = {model.data(model.index(r, 0)): r for r in range(model.rowCount())}
    a = groups["a"]
    n2, m2 = model.index_of_node("n2"), model.index_of_node("m2")
    return {
        "group_model": model.data(model.index(a, COL_MODEL)), "group_health": model.data(model.index(a, COL_HEALTH)),
        "node_temp": model.data(n2.siblingAtColumn(temp)), "node_seen": model.data(n2.siblingAtColumn(_LAST)),
        "m2_status": model.data(m2.siblingAtColumn(COL_STATUS)),
        "gpu_status": model.data(model.index_of_gpu("GPU-n2-01").siblingAtColumn(COL_STATUS)),
        "group_tip": model.data(model.index(a, 0), Qt.ItemDataRole.ToolTipRole),
    }


def test_fleet_tree_cells_in_chinese_then_english_again(chinese, snap):
    cells = tree_cells(snap)
    assert cells["group_model"].startswith("3 个节点 · 6× "), cells
    assert cells["group_health"] == "警告 · 3/6 块 GPU", cells
    assert cells["node_temp"] == "最高 88 °C" and cells["node_seen"].endswith("秒前"), cells
    assert cells["m2_status"] == "不可达" and cells["gpu_status"] == "正常", cells
    assert cells["group_tip"] == "分组 a：3 个节点，6 块 GPU", cells
    ui_i18n.install("en")
    cells = tree_cells(snap)
    assert cells["group_model"].startswith("3 nodes · 6× ") and cells["group_health"] == "warn · 3/6 GPUs", cells
    assert cells["node_temp"] == "max 88 °C" and cells["node_seen"].endswith(" s ago"), cells
    assert cells["m2_status"] == "unreachable" and cells["gpu_status"] == "ok", cells
    assert cells["group_tip"] == "group a: 3 nodes, 6 GPUs", cells


def test_summary_bar_in_chinese_punctuation_then_english_again(chinese, snap):
    from ui.models.fleet_build import summary_text

    plain = re.compile(r"<[^>]+>")
    text = plain.sub("", summary_text(snap))
    assert re.search(r"^5 个节点（[^)]*）", text) and "，" in text.split(" · ")[0] and ", " not in text, text
    assert re.search(r"驱动：[^ ]+（\d+）", text), text
    ui_i18n.install("en")
    text = plain.sub("", summary_text(snap))
    assert re.search(r"^5 nodes \(\d+ \w+, ", text) and re.search(r"drivers: \S+ \(\d+\)", text), text


def detail_texts(qtbot, path) -> dict[str, str]:
    from ui.views.gpu_detail import GpuDetailView

    view = GpuDetailView(str(path), now=lambda: NOW)
    qtbot.addWidget(view)
    view.resize(1240, 700)
    try:
        with qtbot.waitSignal(view.history_shown, timeout=10000):
            view.show_gpu(_row(path, "n1", 0))
        plots = view.plot
        plots._set_rows(["gpu_idle", "no data", "Xid"])
        return {
            "title": view.title.text(), "status": view.status.text(),
            "range": view.range_buttons.button(0).text(),
            "temp": plots.plots["temp_c"].titleLabel.text, "ecc": plots.plots["ecc"].titleLabel.text,
            "rows": " | ".join(t for _, t in plots.throttle.getAxis("left")._tickLevels[0]),
            "readout": plots.readout.text(), "reset": plots.reset_button.text(),
            "ecc_reason": str(plots.reasons.get("ecc")),
            "change": f"{view.changes.item(0, 1).text()} {view.changes.item(0, 2).text()}",
            "state": view.inventory.item(view.inventory.rowCount() - 1, 1).text(),
        }
    finally:
        view.shutdown()


def test_gpu_detail_title_and_plots_in_chinese_then_english_again(chinese, qtbot, history_db):
    t = detail_texts(qtbot, history_db)
    assert "<b>n1 GPU 0</b> — " in t["title"] and ("标称：" in t["title"] or "不在规格目录中" in t["title"]), t
    assert "个数据点 · 分钟粒度" in t["status"] and t["range"] == "24 小时", t
    assert "<b>温度</b> (°C)" in t["temp"] and "平均" in t["temp"] and "最小–最大" in t["temp"], t
    assert "<b>ECC 错误、退役页、行重映射</b> (次数)" in t["ecc"] and "退役页" in t["ecc"], t
    assert t["rows"] == "gpu_idle | 无数据 | Xid", t  # NVML's reason names and "Xid" stay as they are
    assert t["readout"].startswith("鼠标移到图上") and t["reset"] == "复位缩放", t
    assert t["change"] == "首次登记 位于 n1 #0 00000000:10:00.0", t
    assert t["state"] == "正常", t  # the card's state: "lost" would read 掉卡
    ui_i18n.install("en")
    t = detail_texts(qtbot, history_db)
    assert not any(CJK.search(v) for v in t.values()), t
    assert "<b>Temperature</b> (°C)" in t["temp"] and " points · minute resolution · read " in t["status"], t
    assert t["rows"] == "gpu_idle | no data | Xid" and t["range"] == "24 h" and t["reset"] == "Reset zoom", t
    assert t["change"] == "enrolled in n1 #0 00000000:10:00.0" and t["state"] == "ok", t


def derating_texts(qtbot, path) -> dict[str, str]:
    from ui.history_reader import HistoryService
    from ui.views.derating import DeratingView

    service = HistoryService(str(path))
    view = DeratingView(service, now=lambda: NOW)
    qtbot.addWidget(view)
    view.resize(1240, 700)
    try:
        view.show()
        qtbot.waitUntil(lambda: view.data is not None, timeout=10000)
        m = view.model
        texts = {
            "title": view.title.text(), "info": view.info.text(), "window": view.window_box.currentText(),
            "headers": " | ".join(str(m.headerData(i, H)) for i in range(m.columnCount())),
            "legend": view.legend.text(), "card_title": view.card_title.text(),
            "reason": view.card_reason.toPlainText(), "strip": view.strip.getPlotItem().titleLabel.text,
            "tip": str(m.data(m.index(0, 3), Qt.ItemDataRole.ToolTipRole)),
            "dot": view.card_tip(data=uuid_of("n1", 0)),
        }
        view.show_gpu(_row(path, "n1", 0))
        texts["shown"] = view.card_title.text()
        return texts
    finally:
        service.stop()


def test_derating_view_in_chinese_then_english_again(chinese, qtbot, history_db):
    t = derating_texts(qtbot, history_db)
    assert t["title"].startswith("<b>降额</b>：") and t["window"] == "90 天", t
    assert t["info"].startswith("2 个 GPU·日，1 个型号 · 读取 "), t
    assert t["headers"].startswith("型号 | 卡数") or "型号" in t["headers"], t
    assert "负载频率 / 加速频率\n最小 · 中位 · 最大" in t["headers"], t
    assert "同型号集群中位数" in t["legend"] and "点击一个点" in t["card_title"], t
    assert t["reason"] == "请选择一块 GPU" and "每卡频率" in t["strip"], t
    assert "张卡：负载频率 / 加速频率" in t["tip"] and "点击打开此卡" in t["dot"], t
    ui_i18n.install("en")
    t = derating_texts(qtbot, history_db)
    assert not any(CJK.search(v) for v in t.values()), t
    assert t["info"].startswith("2 GPU-days, 1 model · read ") and t["window"] == "90 days", t
    assert "clock under load / boost\nmin · median · max" in t["headers"] and t["reason"] == "select a GPU", t


def test_collector_state_line_in_chinese_then_english_again(chinese, tmp_path):
    from ui.collector_process import CollectorProcess

    child = CollectorProcess(str(tmp_path / "f.db"), str(tmp_path / "fleet.toml"))
    assert child.state == "采集：启动中"
    child._finished(3, QProcess.ExitStatus.NormalExit)  # as the process's finished signal calls it
    assert child.state == "采集：已退出，退出码 3（“立即采集”可重新启动）"
    ui_i18n.install("en")
    child = CollectorProcess(str(tmp_path / "f.db"), str(tmp_path / "fleet.toml"))
    child._finished(3, QProcess.ExitStatus.NormalExit)
    assert child.state == "collector: exited with code 3 (Poll now restarts it)"


def test_plot_date_axes_name_weekdays_and_months_in_chinese_then_as_pyqtgraph_does(chinese):
    import pyqtgraph as pg
    from pyqtgraph.graphicsItems import DateAxisItem as pg_dates

    from ui.views.plots import LocalDateAxis

    ts = [1_796_000_000.0, 1_796_000_000.0 + 86400]  # the last of November 2026 and the first of December

    def ticks(axis: pg.DateAxisItem) -> list[list[str]]:
        out = []
        for level in (pg_dates.DAY_HOUR_ZOOM_LEVEL, pg_dates.MONTH_DAY_ZOOM_LEVEL):
            axis.zoomLevel = level
            out.append(axis.tickStrings(ts, 1, level.tickSpecs[0].spacing))
        return out

    days, months = ticks(LocalDateAxis())
    assert all(re.fullmatch(r"\d\d日 周[一二三四五六日]", d) for d in days), days
    assert all(re.fullmatch(r"1[12]月", m) for m in months), months
    ui_i18n.install("en")
    assert ticks(LocalDateAxis()) == ticks(pg.DateAxisItem())  # English: pyqtgraph's own ("Mon 30", "Nov")
