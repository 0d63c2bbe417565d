"""The window in Simplified Chinese (issue 25): the .ts complete and current, the .qm built from it, the
language chosen from FLEETMON_LANG / View ▸ Language / the locale, and menus, views and dialogs in Chinese."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt, QTranslator

from ui import i18n as ui_i18n

pytestmark = pytest.mark.gui

ROOT = Path(__file__).resolve().parents[2]
TS = ROOT / "ui" / "translations" / "fleetmon_zh_CN.ts"
PLACEHOLDER = re.compile(r"\{[a-z_]+\}|%\d+|%n")
TAG = re.compile(r"</?[a-z]+[^>]*>")
CJK = re.compile(r"[\u4e00-\u9fff]")
H = Qt.Orientation.Horizontal


def messages(path: Path) -> list[tuple[str, str, ET.Element]]:
    """(context, source, translation element) of every message of a .ts file."""
    out = []
    for ctx in ET.parse(path).getroot().iter("context"):
        for m in ctx.iter("message"):
            tr = m.find("translation")
            assert tr is not None
            out.append((ctx.findtext("name") or "", m.findtext("source") or "", tr))
    return out


def lupdate(ts: Path) -> None:
    """Collect ui/'s marked strings into ``ts`` as `make translations` does."""
    tool = Path(ui_i18n.lrelease()[0]).with_name("lupdate")
    subprocess.run([str(tool), "-extensions", "py", "-locations", "none", "-no-obsolete", str(ROOT / "ui"),
                    "-ts", str(ts)], check=True, capture_output=True, timeout=120)


def test_every_string_has_a_finished_translation_with_its_placeholders():
    found = messages(TS)
    assert len(found) > 100
    for ctx, source, tr in found:
        where = f"{ctx}: {source!r}"
        assert tr.get("type") is None, f"{where} is {tr.get('type')}"
        assert (tr.text or "").strip(), f"{where} has no translation"
        assert sorted(PLACEHOLDER.findall(tr.text or "")) == sorted(PLACEHOLDER.findall(source)), where
        assert sorted(TAG.findall(tr.text or "")) == sorted(TAG.findall(source)), where
        if re.search(r"&\w", source):  # a menu's accelerator stays reachable: 文件(&F)
            assert re.search(r"&\w", tr.text or ""), where


def test_lupdate_over_the_sources_finds_no_new_or_gone_string(tmp_path):
    """A string marked in ui/ and not translated in the .ts (or one no longer used) fails here: run
    `make translations` and translate it."""
    copy = tmp_path / TS.name
    shutil.copy(TS, copy)
    lupdate(copy)
    before = {(c, s) for c, s, _ in messages(TS)}
    after = {(c, s): tr for c, s, tr in messages(copy)}
    assert set(after) - before == set(), "marked but not in the .ts: run make translations"
    assert before - set(after) == set(), "in the .ts but no longer marked: run make translations"
    assert [k for k, tr in after.items() if tr.get("type") is not None] == []


def test_the_built_catalog_translates_every_message():
    """The .qm Qt loads is the .ts's current content (built from it when missing or older)."""
    qm = ui_i18n.qm_path("zh_CN")
    assert qm is not None and qm.stat().st_mtime >= TS.stat().st_mtime
    t = QTranslator()
    assert t.load(str(qm))
    for ctx, source, tr in messages(TS):
        assert t.translate(ctx, source) == tr.text, (ctx, source)


def test_the_language_follows_fleetmon_lang_then_the_setting_then_the_locale(tmp_path, monkeypatch):
    settings = QSettings(str(tmp_path / "lang.ini"), QSettings.Format.IniFormat)
    for var in ("FLEETMON_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert ui_i18n.chosen_language(settings) == "zh_CN"  # the system's
    ui_i18n.save_language(settings, "en")
    assert ui_i18n.chosen_language(settings) == "en"  # the user's choice over the system's
    monkeypatch.setenv("FLEETMON_LANG", "zh_CN")
    assert ui_i18n.chosen_language(settings) == "zh_CN"  # this run's explicit choice over both
    monkeypatch.setenv("FLEETMON_LANG", "de_DE.UTF-8")
    assert ui_i18n.chosen_language(settings) == "en"  # not translated: English


def window_texts(w) -> list[str]:
    return ([a.text() for a in w.menuBar().actions()]
            + [w.sidebar.item(i).text() for i in range(w.sidebar.count())]
            + [w.fleet_view.model.headerData(i, H) for i in range(w.fleet_view.model.columnCount())]
            + [w.model.headerData(i, H) for i in range(w.model.columnCount())]
            + [w.findings_model.headerData(i, H) for i in range(w.findings_model.columnCount())])


def make_window(qtbot, db: Path, ini: Path):
    from ui.main_window import MainWindow

    w = MainWindow(str(db), refresh_s=60, settings=QSettings(str(ini), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    return w


def test_the_window_in_chinese_and_english_again(chinese, qtbot, fleet_db, tmp_path):
    from fleetmon import i18n
    from PySide6.QtWidgets import QLabel, QMessageBox

    assert i18n.current_language() == "zh_CN"  # the core's strings follow the window's language
    w = make_window(qtbot, fleet_db, tmp_path / "zh.ini")
    texts = window_texts(w)
    assert [a.text() for a in w.menuBar().actions()] == ["文件(&F)", "视图(&V)", "采集(&C)"]
    assert [w.sidebar.item(i).text() for i in range(w.sidebar.count())] == [
        "集群", "问题", "版本", "全部 GPU", "降额", "巡检", "训练前检查"]
    assert w.view_menu.actions()[0].text() == "集群"
    assert [a.text() for a in w.file_menu.actions()][:2] == ["导出资产清单(&E)…", "打印资产清单(&P)…"]
    assert w.current_view() == "Fleet"  # the identifier stays English (settings, show_view)
    assert w.fleet_view.model.headerData(0, H) == "名称" and "最后上报" in texts
    assert "按分组显示" == w.fleet_view.grouped.text()
    qtbot.waitUntil(lambda: "个节点" in w.fleet_view.summary.text(), timeout=20000)
    qtbot.waitUntil(lambda: "问题（" in w.sidebar.item(1).text(), timeout=20000)
    assert [w.inspection_view.tabs.tabText(i) for i in range(2)] == ["检查单", "巡检报告（可打印）"]
    assert w.inspection_view.sign_button.text() == "签字确认"
    assert w.detail.side.tabText(0) == "资产清单" and w.prerun_view.run_button.text() == "检查"
    assert w.prerun_view.days.suffix() == " 天"
    # Our dialogs: the GPU detail's time range, the findings' acknowledgement (with Qt's OK / Cancel).
    from ui.views.findings import AckDialog
    from ui.views.gpu_detail import CustomRangeDialog

    d = CustomRangeDialog(0.0, 3600.0)
    qtbot.addWidget(d)
    assert d.windowTitle() == "自定义时间范围"
    qtbot.waitUntil(lambda: w.findings_model.rowCount() > 0, timeout=20000)
    ack = AckDialog(w.findings_model.row(0), snooze=True)
    qtbot.addWidget(ack)
    assert ack.windowTitle() == "暂缓问题" and "，位于" in ack.findChildren(QLabel)[0].text()
    # Qt's own strings (qtbase_zh_CN.qm): a standard dialog's buttons.
    box = QMessageBox(QMessageBox.Icon.Question, "fleetmon", "?",
                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No)
    qtbot.addWidget(box)
    assert CJK.search(box.button(QMessageBox.StandardButton.Yes).text())
    w.close()

    ui_i18n.install("en")
    assert i18n.current_language() == "en"
    e = make_window(qtbot, fleet_db, tmp_path / "en.ini")
    assert [a.text() for a in e.menuBar().actions()] == ["&File", "&View", "&Collector"]
    assert not any(CJK.search(t) for t in window_texts(e))
    e.close()


def test_view_language_menu_saves_the_choice_for_the_next_start(qtbot, fleet_db, tmp_path, monkeypatch):
    monkeypatch.delenv("FLEETMON_LANG", raising=False)
    ini = tmp_path / "menu.ini"
    w = make_window(qtbot, fleet_db, ini)
    assert list(w.language_actions) == ["en", "zh_CN"]
    assert w.language_actions["zh_CN"].text() == "简体中文" and w.language_actions["en"].isChecked()
    w.language_actions["zh_CN"].trigger()
    assert w.language_actions["zh_CN"].isChecked() and not w.language_actions["en"].isChecked()
    assert "next start" in w.statusBar().currentMessage()
    assert ui_i18n.current() == "en"  # not live: applies at the next start
    assert ui_i18n.chosen_language(QSettings(str(ini), QSettings.Format.IniFormat)) == "zh_CN"
    w.close()
