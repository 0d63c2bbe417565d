"""The dialogs and messages in Simplified Chinese (issue 25): export, print, evidence, intake, Slurm, the demo,
save-as-HTML, the error dialog, the tray, the collector's state line and the app's start-up errors. Each test
runs in zh_CN and again in English, where every text must read as it did before the translation."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QDialog, QFileDialog, QLineEdit, QMessageBox, QPushButton, QWidget

from ui import i18n as ui_i18n

pytestmark = pytest.mark.gui

CJK = re.compile(r"[\u4e00-\u9fff]")
_test_number = [0]  # a dialog watcher of an earlier test never acts on a later test's dialog


@pytest.fixture(params=["zh_CN", "en"])
def lang(request: Any, qapp: Any) -> Iterator[str]:
    """The application in this language for one test, English again after it (whatever happens)."""
    assert ui_i18n.install(request.param) == request.param
    try:
        yield request.param
    finally:
        _test_number[0] += 1
        ui_i18n.install("en")


def pick(lang: str, zh: Any, en: Any) -> Any:
    return zh if lang == "zh_CN" else en


def answer_modal(seen: list[dict[str, Any]], act: Callable[[QWidget], None] | None = None) -> None:
    """Once a modal dialog runs its own loop: note its texts in ``seen``, then ``act`` on it (default: close it)."""

    mine = _test_number[0]

    def look() -> None:
        if _test_number[0] != mine:
            return
        w = QApplication.activeModalWidget()
        if w is None or w.property("looked_at"):
            QTimer.singleShot(20, look)
            return
        w.setProperty("looked_at", True)
        seen.append({"title": w.windowTitle(), "text": w.text() if isinstance(w, QMessageBox) else "",
                     "filters": w.nameFilters() if isinstance(w, QFileDialog) else [],
                     "box": isinstance(w, QMessageBox)})
        if act is not None:
            act(w)
        elif isinstance(w, QDialog):
            w.reject()
        else:
            w.close()

    QTimer.singleShot(20, look)


def box_texts(seen: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(s["title"], s["text"]) for s in seen]


def test_export_save_dialog_progress_error_and_status(lang, qtbot, window, tmp_path):
    from ui.export_action import ask_save_path, show_error_box

    seen: list[dict[str, Any]] = []

    def choose(d: QWidget) -> None:  # the translated Excel filter, a name without extension
        assert isinstance(d, QFileDialog)
        d.selectNameFilter(d.nameFilters()[0])
        d.findChild(QLineEdit, "fileNameEdit").setText("inv")  # as typed (the dialog opened in tmp_path)
        d.accept()

    answer_modal(seen, choose)
    path = ask_save_path(window, str(tmp_path / "inventory-2026-12-03.xlsx"))
    assert seen[0]["title"] == pick(lang, "导出资产清单", "Export inventory")
    assert seen[0]["filters"] == [pick(lang, "Excel 工作簿 (*.xlsx)", "Excel workbook (*.xlsx)"), "CSV (*.csv)",
                               "JSON (*.json)"]
    assert path == str(tmp_path / "inv.xlsx")  # the translated filter still names its extension

    seen.clear()
    answer_modal(seen)
    show_error_box(window, "disk full")
    assert box_texts(seen) == [(pick(lang, "导出失败", "Export failed"), "disk full")]

    exporter = window.exporter
    with qtbot.waitSignal(exporter.finished, timeout=30000):
        exporter.export_to(str(tmp_path / "x.xlsx"))
        dlg = exporter.progress
        assert dlg is not None and dlg.windowTitle() == pick(lang, "导出资产清单", "Export inventory")
        assert dlg.labelText() == pick(lang, "正在将资产清单导出到 x.xlsx…", "Exporting inventory to x.xlsx…")
        assert dlg.findChild(QPushButton).text() == pick(lang, "取消", "Cancel")
    assert window.statusBar().currentMessage() == pick(lang, "已将 8 块 GPU 导出到 {path}",
                                                       "exported 8 GPUs to {path}").format(path=tmp_path / "x.xlsx")


def test_print_dialog_error_and_printed_headers(lang, qtbot, window, tmp_path):
    from PySide6.QtPrintSupport import QPrinter

    from fleetmon.export import PRINT_SECTIONS
    from ui.print_inventory import _read, ask_print_dialog, paint_inventory, setup_printer, show_error_box

    printer = QPrinter()
    seen: list[dict[str, Any]] = []
    answer_modal(seen)
    assert ask_print_dialog(window, printer) is False
    answer_modal(seen)
    show_error_box(window, "x")
    assert [w["title"] for w in seen] == [pick(lang, "打印资产清单", "Print the inventory"),
                                               pick(lang, "打印资产清单", "Print inventory")]

    shown: list[str] = []
    window.inventory_print.show_error = lambda parent, message: shown.append(message)
    window.inventory_print._on_failed("no paper")
    assert shown == [pick(lang, "无法打印资产清单：no paper", "Cannot print the inventory: no paper")]

    printer = QPrinter(QPrinter.PrinterMode.HighResolution)
    setup_printer(printer)
    printer.setOutputFormat(QPrinter.OutputFormat.PdfFormat)
    printer.setOutputFileName(str(tmp_path / "inv.pdf"))
    pages = paint_inventory(printer, _read(window.inventory_print.db_path, time.time(), None), fleet="lab", now=time.time())
    first = pages[0]
    assert first.table.header[:3] == pick(lang, [["节点"], ["分组"], ["槽位"]], [["Node"], ["Group"], ["Slot"]])
    assert first.header[0] == "Node" and first.table.title == PRINT_SECTIONS[0][0]  # identifiers stay English


def test_evidence_save_dialog_error_and_status(lang, qtbot, window, tmp_path):
    from ui.evidence_action import ask_save_path, show_error_box

    seen: list[dict[str, Any]] = []
    answer_modal(seen)
    assert ask_save_path(window, str(tmp_path / "evidence-SN-1-2026-12-03.zip")) is None
    answer_modal(seen)
    show_error_box(window, "disk full")
    assert [w["title"] for w in seen] == [pick(lang, "导出证据", "Export evidence"),
                                          pick(lang, "导出证据失败", "Export evidence failed")]
    assert seen[0]["filters"] == [pick(lang, "Zip 压缩包 (*.zip)", "Zip archive (*.zip)")]

    ev = window.evidence
    out = tmp_path / "e.zip"
    with qtbot.waitSignal(ev.finished, timeout=60000):
        ev.export_to("GPU-n2-01", str(out))
        assert window.statusBar().currentMessage() == pick(lang, "正在将 GPU-n2-01 的证据导出到 e.zip…",
                                                           "exporting evidence for GPU-n2-01 to e.zip…")
    assert window.statusBar().currentMessage().startswith(pick(lang, f"证据已写入 {out}（", f"evidence written to {out} ("))


@pytest.fixture
def intake_db(tmp_path: Path) -> Path:
    """n2 with a new card in the last 24 h that has half its memory (as tests/ui/test_intake_action.py)."""
    from storage.db import open_database
    from tests.health.test_intake_cli import ARRIVE, NOW, T0, _feed

    path = tmp_path / "intake.db"
    db = open_database(path)
    seq = {"n2": 0}
    over = {("n2", 2): {"memory_total_mib": 40960}}
    _feed(db, T0 - 3 * 86400, T0 - 3 * 86400 + 600, {"n2": [0, 1]}, over, seq)
    _feed(db, T0, ARRIVE, {"n2": [0, 1]}, over, seq)
    _feed(db, ARRIVE, NOW, {"n2": [0, 1, 2]}, over, seq)
    db.close()
    return path


def test_intake_dialog_its_save_dialog_and_failure(lang, qtbot, intake_db, tmp_path):
    from tests.health.test_intake_cli import NOW
    from ui.intake_action import IntakeAction, IntakeDialog, run_job

    parent = QWidget()
    qtbot.addWidget(parent)
    dialog = IntakeDialog(run_job(str(intake_db), NOW, "n2"), parent)
    assert dialog.windowTitle() == pick(lang, "验收 — n2", "Intake — n2")
    assert dialog.note.text() == pick(lang, "已检查 1 张卡：1 拒收 · 已随卡保存",
                                      "1 card checked: 1 REJECT · stored with the card")
    assert dialog.save_button.text() == pick(lang, "保存验收证书…", "Save certificate…")

    seen: list[dict[str, Any]] = []
    answer_modal(seen)
    assert dialog.save() is None  # the save dialog, cancelled
    assert seen[0]["title"] == pick(lang, "保存验收证书", "Save intake certificate")

    action = IntakeAction(str(intake_db), parent)
    answer_modal(seen)
    action._failed("unknown node 'n9'")
    assert box_texts(seen[1:]) == [(pick(lang, "验收", "Intake"), pick(
        lang, "无法完成验收：unknown node 'n9'", "The intake could not be made: unknown node 'n9'"))]
    dialog.close()


def test_intake_verdict_words_in_the_fleet_table_and_the_card_s_changes(lang, qtbot):
    """The stored verdict stays English (colours, sorting); the window says the core's word, as the certificate."""
    from types import SimpleNamespace

    from fleetmon.intake import CONDITIONAL, PASS, REJECT, IntakeResult
    from storage.intake import IntakeRow
    from ui.format import intake_word
    from ui.models.fleet_table import FleetTableModel
    from ui.views.gpu_detail import change_lines

    assert [intake_word(v) for v in (PASS, CONDITIONAL, REJECT, "UNKNOWN")] == pick(
        lang, ["通过", "有条件通过", "拒收", "未检查"], ["PASS", "CONDITIONAL", "REJECT", "NOT CHECKED"])
    result = IntakeResult.from_dict({"uuid": "GPU-1", "node": "n1", "verdict": REJECT}).stored()
    row = IntakeRow(id=1, ts=time.time(), gpu_uuid="GPU-1", verdict=REJECT, node="n1", result=result)
    table = FleetTableModel()
    table.set_intakes({"GPU-1": row})
    assert table.intake_text(SimpleNamespace(uuid="GPU-1")).split(" ")[0] == pick(lang, "拒收", "REJECT")
    assert change_lines([], [], [row])[0][1] == pick(lang, "验收 拒收", "intake REJECT")


def test_save_html_dialog_and_its_write_error(lang, qtbot, tmp_path):
    from ui.views.save_html import save_html_dialog

    parent = QWidget()
    qtbot.addWidget(parent)
    seen: list[dict[str, Any]] = []
    target = tmp_path / "x.html"

    def choose(d: QWidget) -> None:
        assert isinstance(d, QFileDialog)
        answer_modal(seen)  # then the write error
        d.setDirectory(str(tmp_path))
        d.findChild(QLineEdit, "fileNameEdit").setText(target.name)
        d.finished.connect(lambda *_: target.mkdir())  # once chosen, a folder takes its name: the write fails
        d.accept()

    answer_modal(seen, choose)
    assert save_html_dialog(parent, "<p>x</p>", title="T", stem="inspection", now=0.0) is None
    assert seen[0]["filters"] == [pick(lang, "HTML 网页 (*.html *.htm)", "HTML (*.html *.htm)")]
    assert len(seen) == 2 and seen[1]["box"] and seen[1]["title"] == "T"
    assert seen[1]["text"].startswith(pick(lang, f"无法写入 {target}：", f"Cannot write {target}: "))


def test_slurm_confirmation_outcomes_and_states(lang, qtbot, tmp_path):
    from fleetmon.fleet import load_fleet
    from fleetmon.slurm.actions import Outcome
    from ui.slurm_action import SlurmAction, SlurmStates, action_title, confirm_dialog, outcome_line

    fleet_path = tmp_path / "fleet.toml"
    fleet_path.write_text('[slurm]\nconf = "/nonexistent/slurm.conf"\n\n[[node]]\nname = "gpu01"\n'
                          'url = "http://127.0.0.1:9"\nslurm_name = "node-a"\n\n'
                          '[[node]]\nname = "gpu02"\nurl = "http://127.0.0.1:9"\n')
    fleet = load_fleet(fleet_path)
    parent = QWidget()
    qtbot.addWidget(parent)
    action = SlurmAction(str(tmp_path / "f.db"), parent, fleet)
    text = action.confirmation("drain", [("gpu01", "gpu lost", None)])
    assert text.splitlines()[:4] == pick(
        lang, ["在 Slurm 中下线 (drain) 此节点？", "", "节点：gpu01    Slurm 名：node-a", "原因：fleetmon: gpu lost"],
        ["Drain this node in Slurm?", "", "Node: gpu01    Slurm name: node-a", "Reason: fleetmon: gpu lost"])
    assert text.splitlines()[-2] == pick(lang, "正在运行的作业会跑完；已下线的节点不再启动新作业。",
                                         "Running jobs finish; no new jobs start on a drained node.")
    assert action.confirmation("resume", [("gpu01", "", None), ("gpu02", "", None)]).startswith(
        pick(lang, "在 Slurm 中恢复 (resume) 这 2 个节点？", "Resume 2 nodes in Slurm?"))
    for verb, title, button in (("drain", pick(lang, "在 Slurm 中下线 (drain)", "Drain in Slurm"),
                                 pick(lang, "下线", "Drain")),
                                ("resume", pick(lang, "在 Slurm 中恢复 (resume)", "Resume in Slurm"),
                                 pick(lang, "恢复", "Resume"))):
        box = confirm_dialog(parent, action_title(verb), text)
        assert box.windowTitle() == title and box.button(QMessageBox.StandardButton.Yes).text() == button
        box.deleteLater()

    outcomes = [Outcome(1, "gpu01", "node-a", True, sent_reason="fleetmon: gpu lost"), Outcome(2, "gpu02", "gpu02", True),
                Outcome(0, "gpu01", None, False, "scontrol: error")]
    lines = [outcome_line(verb, o) for verb in ("drain", "resume") for o in outcomes]
    if lang == "en":  # the status bar's words as the core's (and the CLI's) Outcome.line
        assert lines == [o.line(verb) for verb in ("drain", "resume") for o in outcomes]
    else:
        assert lines[:3] == ["下线 (drain) gpu01（Slurm 名 node-a）：完成 — 原因：fleetmon: gpu lost",
                             "下线 (drain) gpu02：完成", "下线 (drain) gpu01 失败：scontrol: error"]
        assert lines[4] == "恢复 (resume) gpu02：完成"
    from fleetmon.i18n import N_, Text

    failed = Outcome(0, "gpu01", None, False, Text(N_("Slurm is not installed here: no {program!r} on PATH"),
                                                   program="scontrol"))
    assert outcome_line("drain", failed) == pick(lang, "下线 (drain) gpu01 失败：本机未安装 Slurm：PATH 中没有 'scontrol'",
                                                 "drain gpu01 failed: Slurm is not installed here: no 'scontrol' on PATH")

    from fleetmon.slurm import SlurmClient

    states = SlurmStates(fleet, client=SlurmClient(bin_dir=str(tmp_path)))  # no sinfo there
    assert states.tooltip() == pick(lang, "Slurm：尚未读取", "Slurm: not read yet")
    with qtbot.waitSignal(states.changed, timeout=10000):
        states.refresh()
    assert states.text("gpu01") == pick(lang, "Slurm 不可用", "Slurm unavailable")
    assert states.tooltip().startswith(pick(lang, "Slurm：", "Slurm: "))
    assert pick(lang, "本机未安装 Slurm", "not installed") in states.tooltip(), states.tooltip()  # Slurm's error too


def test_core_errors_in_the_app_s_dialogs_follow_the_language(lang, qtbot, tmp_path):
    """Export, evidence, a background job (print, intake, pre-run) and Slurm's record error: the core's errors
    (an i18n.Text) said in the reader's language (fleetmon.i18n.message_of); English as before."""
    from fleetmon.slurm import SlurmClient
    from storage.db import open_database
    from ui.evidence_action import _Worker
    from ui.export_action import ExportWorker
    from ui.inspection_worker import _Job
    from ui.slurm_action import SlurmAction

    missing = str(tmp_path / "gone.db")
    said: list[str] = []
    export = ExportWorker(missing, str(tmp_path / "x.xlsx"))
    export.failed.connect(said.append)
    export.run()
    evidence = _Worker(missing, "GPU-1", str(tmp_path / "e.zip"), None, 0.0)
    evidence.failed.connect(said.append)
    evidence.run()
    assert said == [pick(lang, f"{missing} 处没有数据库", f"no database at {missing}")] * 2
    job = _Job(lambda: open_database(missing, existing=True))
    job.signals.failed.connect(said.append)
    job.run()
    assert bool(CJK.search(said[-1])) == (lang == "zh_CN") and missing in said[-1]

    from fleetmon.fleet import load_fleet

    fleet_path = tmp_path / "fleet.toml"
    fleet_path.write_text('[[node]]\nname = "gpu01"\nurl = "http://127.0.0.1:9"\n')
    parent = QWidget()
    qtbot.addWidget(parent)
    action = SlurmAction(missing, parent, load_fleet(fleet_path), confirm=lambda *a: True,
                         show_error=lambda *a: None, client=SlurmClient(bin_dir=str(tmp_path)))
    with qtbot.waitSignal(action.finished, timeout=10000) as sig:
        assert action.request("drain", [("gpu01", "gpu lost", None)])
    (outcome,) = sig.args[1]
    assert outcome.error.startswith(pick(lang, "无法记录：", "cannot record it: ")) and missing in outcome.error
    assert bool(CJK.search(outcome.error.split("：", 1)[-1])) == (lang == "zh_CN")


def test_demo_history_dialog(lang, qtbot):
    from PySide6.QtWidgets import QProgressDialog

    from ui.demo import _generate_with_dialog

    seen: dict[str, str] = {}
    release = threading.Event()

    def look() -> None:
        dlg = next((w for w in QApplication.topLevelWidgets() if isinstance(w, QProgressDialog) and w.isVisible()),
                   None)
        if dlg is None:
            QTimer.singleShot(20, look)
            return
        seen.update(title=dlg.windowTitle(), label=dlg.labelText(), button=dlg.findChild(QPushButton).text())
        release.set()

    def generate(progress: Callable[[int, int], None]) -> None:  # the worker thread: waits until looked at
        progress(0, 10)
        release.wait(20)
        progress(10, 10)

    QTimer.singleShot(20, look)
    assert _generate_with_dialog(generate) == "done"
    assert seen == pick(lang, {"title": "fleetmon 演示", "label": "正在生成演示集群的历史数据…", "button": "取消"},
                        {"title": "fleetmon demo", "label": "Generating the demo fleet's history…",
                         "button": "Cancel"})


def test_error_dialog_tray_and_collector_state(lang, qtbot, fleet_db, tmp_path):
    from ui.collector_process import CollectorProcess
    from ui.shell import ExceptionDialog, Tray

    d = ExceptionDialog("Traceback …")
    qtbot.addWidget(d)
    assert d.windowTitle() == pick(lang, "fleetmon：意外错误", "fleetmon: unexpected error")
    assert d.copy_button.text() == pick(lang, "复制错误堆栈", "Copy traceback")
    assert d.label.text().startswith(pick(lang, "fleetmon 内部出错。", "Something went wrong inside fleetmon."))

    tray = Tray(QWidget())
    tray.update("", set(), str)
    assert tray.tooltip == pick(lang, "fleetmon：一切正常", "fleetmon: all clear")

    child = CollectorProcess(str(fleet_db), str(tmp_path / "fleet.toml"), 60)
    assert child.state == pick(lang, "采集：启动中", "collector: starting")
    child.command = [str(tmp_path / "no-such-program")]
    with qtbot.waitSignal(child.state_changed, timeout=10000,
                          check_params_cb=lambda s: "no-such-program" in s) as got:
        child.start()
    assert got.args[0].startswith(pick(lang, f"采集：无法启动 {tmp_path / 'no-such-program'}：",
                                       f"collector: could not start {tmp_path / 'no-such-program'}: "))


def test_start_up_errors_and_the_window_s_tray_and_prerun_lines(lang, qtbot, window, tmp_path):
    from ui.app import open_checks
    from ui.i18n import verdict_word

    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite at all" * 100)
    errors: list[str] = []
    assert open_checks(str(bad), None, None, confirm_create=lambda p: True, error=errors.append) is None
    assert errors[0].startswith(pick(lang, f"无法打开 {bad}：\n\n", f"Cannot open {bad}:\n\n"))

    worst = window.snapshot.verdicts.worst()
    assert worst  # a node that is not pass (m2 unreachable)
    assert window.tray.tooltip.startswith(pick(lang, f"fleetmon：{verdict_word(worst)}: ",
                                               f"fleetmon: {worst.upper()}: "))
    assert bool(CJK.search(window.tray.tooltip)) == (lang == "zh_CN")

    window.prerun_view.nodes.setText("n[1-3]")
    assert window.prerun_view.parsed.text() == pick(lang, "3 个节点：n1, n2, n3", "3 nodes: n1, n2, n3")
