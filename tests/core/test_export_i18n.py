"""`fleetmon --lang zh_CN export`: the workbook's sheet names, headers and advice in Chinese, read back with
openpyxl; the CSV keeps its English column keys (a contract for scripts) in every language."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import openpyxl

from fleetmon.export import COLUMNS
from helpers import T0, inventory, poll, uuid_of
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
    assert row["类型"] == "thermal-throttle" and row["级别"] == "warning"  # identifiers stay
    assert row["处理建议"].startswith("检查散热")
    assert [c.value for c in wb["版本"][1]][:4] == ["分组", "型号", "组件", "版本"]


def test_csv_keeps_its_english_columns_in_every_language(tmp_path: Path) -> None:
    db = _db(tmp_path / "f.db")
    english = _export("export", "--db", str(db), "--format", "csv")
    chinese = _export("--lang", "zh_CN", "export", "--db", str(db), "--format", "csv")
    assert english.returncode == chinese.returncode == 0, chinese.stderr
    assert chinese.stdout == english.stdout
    assert next(csv.reader(io.StringIO(chinese.stdout))) == list(COLUMNS)
