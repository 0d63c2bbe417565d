"""`fleetmon --lang zh_CN export`: the workbook's sheet names, headers and advice in Chinese, read back with
openpyxl; the CSV keeps its English column keys (a contract for scripts) in every language."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import openpyxl

from fleetmon import export, i18n
from fleetmon.export import COLUMNS
from helpers import T0, inventory, poll, uuid_of
from storage.acks import acknowledge
from storage.db import open_database
from storage.findings import save_findings
from storage.ingest import ingest_polls
from storage.rows import NewFinding

REPO = Path(__file__).resolve().parents[2]
ACTION = "Check cooling: fans, airflow, dust, room temperature, thermal paste"  # a rule's fixed advice


def _db(path: Path) -> Path:
    db = open_database(path)
    ingest_polls(db, [poll("n1", T0, inv=[inventory("n1", i) for i in range(2)])])
    save_findings(db, [NewFinding(key="k1", kind="thermal-throttle", severity="warning", node="n1",
                                  gpu_uuid=uuid_of("n1", 1), first_seen=T0 - 600, last_seen=T0, action=ACTION)],
                  now=T0 + 60)
    db.close()
    return path


def _export(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fleetmon", *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO, env={**os.environ, "FLEETMON_LANG": "en"})


def test_workbook_in_chinese_reads_back(tmp_path: Path) -> None:
    db = _db(tmp_path / "f.db")
    out = tmp_path / "sheet.xlsx"
    proc = _export("--lang", "zh_CN", "export", "--db", str(db), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    wb = openpyxl.load_workbook(out)
    assert wb.sheetnames == ["资产清单", "未关闭的问题", "版本"]
    inv = wb["资产清单"]
    head = [c.value for c in inv[1]]
    assert head[:6] == ["节点", "分组", "槽位", "PCI 总线地址", "型号", "序列号"] and "显存 (MiB)" in head
    assert inv.cell(2, 1).value == "n1"  # names stay as they are
    findings = wb["未关闭的问题"]
    fhead = [c.value for c in findings[1]]
    assert fhead[:3] == ["级别", "类型", "节点"]
    row = {h: c.value for h, c in zip(fhead, findings[2])}
    assert row["类型"] == "thermal-throttle"  # identifiers stay
    assert row["级别"] == "警告"  # a severity is read by people, as in the report
    assert row["处理建议"].startswith("检查散热")
    assert [c.value for c in wb["版本"][1]][:4] == ["分组", "型号", "组件", "版本"]


def test_csv_keeps_its_english_columns_in_every_language(tmp_path: Path) -> None:
    db = _db(tmp_path / "f.db")
    english = _export("export", "--db", str(db), "--format", "csv")
    chinese = _export("--lang", "zh_CN", "export", "--db", str(db), "--format", "csv")
    assert english.returncode == chinese.returncode == 0, chinese.stderr
    assert chinese.stdout == english.stdout
    assert next(csv.reader(io.StringIO(chinese.stdout))) == list(COLUMNS)


def _fleet_db(path: Path) -> Path:
    """Three nodes, one on another driver (an outlier in the Versions sheet), a finding an operator acknowledged."""
    db = open_database(path)
    ingest_polls(db, [poll(n, T0, driver="535.161.08" if n == "n3" else "550.54.15") for n in ("n1", "n2", "n3")])
    save_findings(db, [NewFinding(key="k1", kind="thermal-throttle", severity="warning", node="n1",
                                  gpu_uuid=uuid_of("n1", 1), first_seen=T0 - 600, last_seen=T0, action=ACTION)],
                  now=T0 + 60)
    acknowledge(db, "k1", "warning", "fan ordered", T0 + 120, by="ann")
    db.close()
    return path


def test_workbook_cells_people_read_are_chinese_csv_and_json_stay_english(tmp_path: Path) -> None:
    db = open_database(_fleet_db(tmp_path / "f.db"))
    out, english_out = tmp_path / "zh.xlsx", tmp_path / "en.xlsx"
    sheet = export.read_sheet(db, now=T0 + 300)
    english_text = {fmt: export.render(sheet.gpus, fmt) for fmt in ("csv", "json")}
    export.write_xlsx(english_out, sheet)
    i18n.set_language("zh_CN")
    try:
        export.write_xlsx(out, export.read_sheet(db, now=T0 + 300))
        for fmt in ("csv", "json"):  # byte for byte: a contract for scripts
            assert export.render(export.read_sheet(db, now=T0 + 300).gpus, fmt) == english_text[fmt]
    finally:
        i18n.set_language("en")
        db.close()
    wb, en = openpyxl.load_workbook(out), openpyxl.load_workbook(english_out)

    def rows(sheet: Any) -> list[dict[str, Any]]:
        head = [c.value for c in sheet[1]]
        return [dict(zip(head, (c.value for c in r))) for r in sheet.iter_rows(min_row=2)]

    words = {"通过", "警告", "不通过", "不可达", "数据过期", "未知", "正常", "严重", "提示"}
    cards, english_cards = rows(wb["资产清单"]), rows(en["Inventory"])
    assert len(cards) == len(english_cards) == 6
    for zh, english in zip(cards, english_cards):
        assert zh["健康状态"] in words and zh["结论"] in words, zh  # health and verdict words
        assert english["Health"] in {"ok", "warning", "critical", "info", "unreachable", "stale", "unknown"}
        assert zh["节点"] == english["Node"] and zh["UUID"] == english["UUID"]  # names stay as they are
    assert {c["结论"] for c in cards} == {"通过", "警告"}  # n1 gpu1 has the finding
    [finding] = rows(wb["未关闭的问题"])
    assert finding["已确认"] == "ann 已确认：fan ordered" and finding["类型"] == "thermal-throttle"
    assert rows(en["Open findings"])[0]["Acknowledged"] == "acknowledged by ann: fan ordered"
    drivers = {r["版本"]: r["基线"] for r in rows(wb["版本"]) if r["组件"] == "Driver"}
    assert drivers == {"550.54.15": "基线", "535.161.08": "偏离基线"}
    assert {r["Version"]: r["Baseline"] for r in rows(en["Versions"]) if r["Component"] == "Driver"} == {
        "550.54.15": "baseline", "535.161.08": "outlier"}
    assert not any("\u4e00" <= ch <= "\u9fff" for text in english_text.values() for ch in text)


def test_workbook_intake_cell_says_the_verdict_in_chinese_csv_keeps_the_identifier(tmp_path: Path) -> None:
    from storage.intake import save_intake

    path = _db(tmp_path / "f.db")
    db = open_database(path)
    save_intake(db, T0 + 30, uuid_of("n1", 0), "REJECT", node="n1")
    db.close()
    out, csv_out = tmp_path / "sheet.xlsx", tmp_path / "sheet.csv"
    assert _export("--lang", "zh_CN", "export", "--db", str(path), "-o", str(out)).returncode == 0
    assert _export("--lang", "zh_CN", "export", "--db", str(path), "-o", str(csv_out)).returncode == 0
    inv = openpyxl.load_workbook(out)["资产清单"]
    head = [c.value for c in inv[1]]
    cells = {inv.cell(r, 3).value: inv.cell(r, head.index("验收") + 1).value for r in (2, 3)}
    assert cells[0].startswith("拒收 ") and cells[1] in (None, "")
    assert ",REJECT," in csv_out.read_text(encoding="utf-8")  # the CSV keeps the identifier
