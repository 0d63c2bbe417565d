"""`fleetmon evidence`: a card's RMA / return archive, read back (issue 22, items 4 and 5).

One month of history of a card moved between two nodes, with Xid errors on both
(tests/helpers/card_history.py), archived by the real CLI on a real SQLite file.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fleetmon.cli import main
from helpers.card_history import NOW, build

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return build(tmp_path_factory.mktemp("evidence") / "fleet.db")


@pytest.fixture(scope="module")
def archive(history, tmp_path_factory):
    """The moved card's archive, written by `fleetmon evidence` in a process of its own (its plots offscreen)."""
    out = tmp_path_factory.mktemp("out") / "card.zip"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("QT_QPA_PLATFORM", None)  # the command makes its own offscreen application
    proc = subprocess.run([sys.executable, "-m", "fleetmon", "evidence", "--db", str(history.path), "--gpu",
                           history.moved_serial, "-o", str(out), "--now", str(NOW)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out}" in proc.stderr
    return zipfile.ZipFile(out)


def _rows(zf: zipfile.ZipFile, name: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(zf.read(name).decode("utf-8"))))


def test_listing_and_manifest(archive):
    names = set(archive.namelist())
    assert {"summary.html", "README.txt", "manifest.json", "identity.json", "placements.csv", "drivers.csv",
            "xids.csv", "ecc_pages.csv", "telemetry_hourly.csv", "telemetry_daily.csv", "episodes.csv",
            "findings.json", "findings.csv", "operator_notes.csv", "plots/life-telemetry.png",
            "plots/life-memory.png"} <= names
    manifest = json.loads(archive.read("manifest.json"))
    listed = {f["name"] for f in manifest["files"]}
    assert listed | {"manifest.json"} == names  # every file but the manifest itself
    assert all(f["holds"] for f in manifest["files"])
    assert manifest["plots"] == "drawn" and manifest["intake_certificate"] is False
    readme = archive.read("README.txt").decode()
    assert all(f"  {n}: " in readme for n in names)


def test_csv_rows_match_the_store(archive, history):
    from storage.db import open_database
    from storage.evidence import card_findings
    from storage.queries import events, gpu_history, placements

    db = open_database(history.path, readonly=True)
    try:
        places = placements(db, history.moved_uuid)
        xids = [e for e in events(db, kinds=["xid"]) if e.gpu_uuid == history.moved_uuid]
        hourly = gpu_history(db, history.moved_uuid, 0, NOW, fields=["n"], resolution="hour")
        daily = gpu_history(db, history.moved_uuid, 0, NOW, fields=["n"], resolution="day")
        found = card_findings(db, history.moved_uuid)
    finally:
        db.close()
    assert len(_rows(archive, "placements.csv")) == len(places) == 2
    assert [int(r["code"]) for r in _rows(archive, "xids.csv")] == [e.code for e in xids] == list(history.xid_codes)
    assert len(_rows(archive, "telemetry_hourly.csv")) == len(hourly.rows) > 24 * 28
    assert len(_rows(archive, "telemetry_daily.csv")) == len(daily.rows) >= 30
    card_rows = [r for r in _rows(archive, "findings.csv") if r["scope"] == "card"]
    assert sorted(r["key"] for r in card_rows) == sorted(f.key for f in found)
    notes = _rows(archive, "operator_notes.csv")
    assert {(n["act"], n["by"]) for n in notes} == {("acknowledgement", "alice"), ("resolution", "bob")}
    identity = json.loads(archive.read("identity.json"))
    assert identity["uuid"] == history.moved_uuid and identity["serial"] == history.moved_serial
    assert identity["inventory"]["board_part_number"] and identity["inventory"]["vbios"]
    assert identity["inventory"]["pci_device_id"] and identity["inventory"]["inforom_image"]


def test_xid_lines_are_decoded(archive):
    from fleetmon.xid import lookup

    for r in _rows(archive, "xids.csv"):
        info = lookup(int(r["code"]))
        assert r["meaning"] == info.meaning and r["name"] == info.name
        assert r["kernel_log_line"].startswith(f"NVRM: Xid (PCI:") and f": {r['code']}, pid=4242" in \
            r["kernel_log_line"]


def test_summary_names_every_xid_and_both_nodes(archive, history):
    from fleetmon.xid import lookup

    html = archive.read("summary.html").decode()
    for code in history.xid_codes:
        info = lookup(code)
        assert f"{code} {info.name}" in html and info.meaning.replace("'", "&#x27;") in html
    placements = html[html.index("<h2>Placements</h2>"):html.index("<h2>Driver versions</h2>")]
    assert "t4-infer-01" in placements and "t4-infer-03" in placements
    assert "RMA case 4711 opened" in html and "reseated before the move" in html
    assert html.count("data:image/png;base64,") == len([n for n in archive.namelist() if n.endswith(".png")])
    assert "<style>" in html and "<link" not in html and "<script" not in html


def test_plots_are_valid_pngs(archive):
    pngs = [n for n in archive.namelist() if n.endswith(".png")]
    assert len(pngs) >= 3  # the two life plots and at least one episode (the Xids)
    for name in pngs:
        data = archive.read(name)
        assert data[:8] == b"\x89PNG\r\n\x1a\n", name
        assert len(data) > 5000, (name, len(data))
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert width >= 800 and height >= 300


def _one_line_error(capsys, argv: list[str]) -> str:
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_unknown_gpu_is_one_line_and_no_file(history, tmp_path, capsys):
    out = tmp_path / "x.zip"
    err = _one_line_error(capsys, ["evidence", "--db", str(history.path), "--gpu", "GPU-nope", "-o", str(out)])
    assert "GPU-nope" in err and "no GPU" in err
    assert list(tmp_path.iterdir()) == []


def test_ambiguous_serial_is_one_line_and_no_file(tmp_path, capsys):
    import dataclasses

    from helpers import inventory, poll
    from storage.db import open_database
    from storage.ingest import ingest_polls

    db_path = tmp_path / "dup.db"
    db = open_database(db_path)
    ingest_polls(db, [poll(n, NOW, inv=[dataclasses.replace(inventory(n, 0), values={
        **inventory(n, 0).values, "serial": "SN-TWIN"})]) for n in ("a1", "a2")])
    db.close()
    out = tmp_path / "out" / "x.zip"
    out.parent.mkdir()
    err = _one_line_error(capsys, ["evidence", "--db", str(db_path), "--gpu", "SN-TWIN", "-o", str(out)])
    assert "SN-TWIN" in err and "2 GPUs" in err and "give the UUID" in err
    assert list(out.parent.iterdir()) == []


def test_existing_output_is_kept_without_force(history, tmp_path, capsys):
    out = tmp_path / "card.zip"
    out.write_bytes(b"keep me")
    argv = ["evidence", "--db", str(history.path), "--gpu", history.v100_uuid, "-o", str(out), "--no-plots",
            "--now", str(NOW)]
    err = _one_line_error(capsys, argv)
    assert "exists" in err and "--force" in err
    assert out.read_bytes() == b"keep me" and list(tmp_path.iterdir()) == [out]
    old = os.umask(0o027)
    try:
        assert main(argv + ["--force"]) == 0
    finally:
        os.umask(old)
    assert zipfile.is_zipfile(out) and list(tmp_path.iterdir()) == [out]
    assert out.stat().st_mode & 0o777 == 0o640  # the umask's mode, not a temporary file's 0600
    zf = zipfile.ZipFile(out)
    manifest = json.loads(zf.read("manifest.json"))
    assert manifest["plots"] == "Plots skipped: --no-plots"
    assert "Plots skipped: --no-plots" in zf.read("summary.html").decode()
    # The V100 that retires pages: its counters over time are in the archive.
    pages = _rows(zf, "ecc_pages.csv")
    assert pages and int(pages[-1]["retired_sbe"]) + int(pages[-1]["retired_dbe"]) > 0


def test_plots_skipped_without_qt(monkeypatch):
    """Without PySide6 the command still writes the archive and says the plots were skipped."""
    from fleetmon.cli.evidence import plot_renderer

    for name in ("PySide6", "PySide6.QtCore", "PySide6.QtGui"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "ui.evidence_plots", raising=False)
    renderer, why = plot_renderer()
    assert renderer is None and why is not None and "PySide6" in why


def test_the_cards_intake_certificate_is_in_its_archive(history, tmp_path, capsys):
    # The V100 checked with `fleetmon intake` (it retires pages: not PASS); its archive carries the stored
    # certificate, and the summary says so. Done on a copy: the module's archive was made before any intake.
    import shutil

    db = tmp_path / "fleet.db"
    shutil.copy(history.path, db)
    rc = main(["intake", "--db", str(db), "--node", "v100-srv-02", "--gpu", history.v100_uuid, "--now", str(NOW)])
    assert rc in (0, 2)
    capsys.readouterr()
    out = tmp_path / "v100.zip"
    assert main(["evidence", "--db", str(db), "--gpu", history.v100_uuid, "-o", str(out), "--no-plots",
                 "--now", str(NOW)]) == 0
    zf = zipfile.ZipFile(out)
    assert json.loads(zf.read("manifest.json"))["intake_certificate"] is True
    cert = zf.read("intake-certificate.html").decode()
    assert "Intake certificate" in cert and history.v100_uuid in cert and "retired page" in cert
    assert "Included as <code>intake-certificate.html</code>" in zf.read("summary.html").decode()


def test_the_summary_page_and_the_plot_titles_in_chinese(history, tmp_path):
    """Issue 25: `fleetmon --lang zh_CN evidence` writes the summary page in Chinese (headings, labels, table
    headers, times, the plots' note); the stored values, the CSVs and the manifest stay English. The plots'
    titles, units and legends are given to the renderer in Chinese too."""
    from fleetmon.xid import lookup

    out = tmp_path / "card.zip"
    proc = subprocess.run([sys.executable, "-m", "fleetmon", "--lang", "zh_CN", "evidence", "--db", str(history.path),
                           "--gpu", history.moved_serial, "-o", str(out), "--now", str(NOW), "--no-plots"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "；未生成图表：--no-plots" in proc.stderr, proc.stderr
    zf = zipfile.ZipFile(out)
    html = zf.read("summary.html").decode()
    assert '<html lang="zh-CN">' in html and "Noto Sans CJK SC" in html
    for said in ("<h2>身份信息</h2>", "<h2>安装位置</h2>", "<h2>驱动版本</h2>", "<h2>ECC 错误、退役页与行重映射</h2>",
                 "<th>插槽（序号）</th>", "<th>内核日志行</th>", "<h2>图表</h2>", "<p>未生成图表：--no-plots</p>",
                 "各文件的内容见 manifest.json。", "由 fleetmon 于 2026年"):
        assert said in html, said
    assert "<h2>Xid 错误（3）</h2>" in html and f"79 {lookup(79).name}" in html  # Xid codes and names stay
    for english in ("<h2>Placements</h2>", "<th>Kernel-log line</th>", "Plots skipped", "says what each holds"):
        assert english not in html, english
    manifest = json.loads(zf.read("manifest.json"))
    assert manifest["plots"] == "Plots skipped: --no-plots"
    # README.txt is read by people: in the reader's language; manifest.json (read by machines) stays English
    readme = zf.read("README.txt").decode()
    assert f" 的 RMA / 退货证据，序列号 {history.moved_serial}，UUID GPU-" in readme.splitlines()[0], readme
    for said in ("；由 fleetmon 于 2026-", "概览请在浏览器中打开 summary.html", "绝不表示零。", "未生成图表：--no-plots",
                 "文件：", "  placements.csv: 每次安装位置：节点、插槽序号", "  summary.html: 可打印的摘要",
                 "  manifest.json: 本清单，含文件大小，JSON 格式", "  README.txt: 本文件"):
        assert said in readme, said
    for english in ("RMA / return evidence", "History from", "Files:", "every placement", "this file",
                    "data around the episode"):
        assert english not in readme, english
    episodes = [line for line in readme.splitlines() if line.startswith("  minutes/")]
    assert episodes and all("数据（前后各 " in line for line in episodes), episodes
    assert all(f["holds"].endswith("data around the episode (2 h either side)")
               for f in manifest["files"] if f["name"].startswith("minutes/"))
    holds = {f["name"]: f["holds"] for f in manifest["files"]}
    assert holds["placements.csv"].startswith("every placement: node, slot index")
    assert holds["README.txt"] == "what this archive is, in words"

    from fleetmon import i18n
    from fleetmon.evidence import build_evidence

    seen: list = []
    i18n.set_language("zh_CN")
    try:
        build_evidence(history.path, history.moved_serial, tmp_path / "plots.zip", now=NOW,
                       plots=lambda specs: seen.extend(specs) or {})
    finally:
        i18n.set_language("en")
    life = next(s for s in seen if s.name == "life-telemetry")
    assert life.title == "全部历史（按小时）：频率、功耗、温度"
    assert [p.title for p in life.panels] == ["SM 频率", "功耗", "温度"]
    assert [s.label for s in life.panels[0].series] == ["最大", "平均"]
    memory = next(s for s in seen if s.name == "life-memory")
    assert [p.unit for p in memory.panels] == ["次数", "页", "行"]
    episode = next(s for s in seen if s.name not in ("life-telemetry", "life-memory"))
    assert "UTC（" in episode.title and ("（分钟数据）：" in episode.title or "（小时数据）：" in episode.title), episode.title
    assert "minute" not in episode.title and "hour" not in episode.title
    assert episode.panels[-1].title == "PCIe 链路" and episode.panels[-1].unit == "代数 / 宽度"
