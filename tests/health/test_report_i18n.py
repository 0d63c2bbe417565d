"""`fleetmon report` and `preflight` in Simplified Chinese (docs/i18n.md): text and HTML read back with the
translated headings and finding summaries; identifiers and the JSON stay English."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import HOT, T0, Feeder, between
from storage.db import open_database

REPO = Path(__file__).resolve().parents[2]
NOW = T0 + 7200


def fleetmon(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fleetmon", *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def faulty(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fleet with a hot card (n2) and uncorrectable ECC errors (n3)."""
    path = tmp_path_factory.mktemp("i18n") / "faulty.db"
    db = open_database(path)
    Feeder(db, drivers={"n1": "550.54.15", "n2": "550.54.15", "n3": "550.54.15"}).feed(T0, NOW, {
        ("n2", 1): between(T0 + 3600, NOW, HOT),
        ("n3", 0): lambda ts: {"ecc_unc_vol": 2, "ecc_unc_agg": 2} if ts >= T0 + 6000 else {}})
    db.close()
    return path


def _copy(db: Path, tmp_path: Path, name: str) -> str:
    """A copy per run: a report saves itself, and the next one would compare with it."""
    shutil.copyfile(db, tmp_path / name)
    return str(tmp_path / name)


def test_report_text_and_html_in_chinese(faulty: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    proc = fleetmon("--lang", "zh_CN", "report", "--db", _copy(faulty, tmp_path, "a.db"), "--now", str(NOW),
                    "--html", str(page))
    assert proc.returncode == 2, proc.stderr
    out = proc.stdout
    assert out.startswith("fleetmon 巡检报告\n时间窗口：")
    for heading in ("集群", "节点", "未关闭的问题", "时间窗口内已恢复", "退出码：2（有严重问题）"):
        assert heading in out, heading
    assert "状态：不通过 — 不通过 1、警告 1、通过 1（3 个节点，6 块 GPU）" in out
    assert "个不可纠正 ECC 错误" in out and "处理建议：节点下线（drain）并重置 GPU" in out  # summary, action
    assert "ecc-uncorrectable" in out and "n3 gpu0" in out  # identifiers and names stay as they are
    html = page.read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in html
    for heading in ("<h2>集群</h2>", "<h2>未关闭的问题</h2>", "<th>处理建议</th>", "<th>GPU 型号</th>",
                    ">不通过</span>"):
        assert heading in html, heading
    assert "Open findings" not in html and "Open findings" not in out


def test_preflight_follows_fleetmon_lang(faulty: Path, tmp_path: Path) -> None:
    page = tmp_path / "preflight.html"
    proc = fleetmon("preflight", "--db", _copy(faulty, tmp_path, "p.db"), "--nodes", "n[1-3]", "--now", str(NOW),
                    "--html", str(page), env={"FLEETMON_LANG": "zh_CN"})
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout.startswith("fleetmon 训练前检查 — 3 个节点，时间窗口 ")
    assert "可用 1   不可用 2" in proc.stdout and "排除：n[2-3]" in proc.stdout
    assert "ECC：可纠正 " in proc.stdout and "个不可纠正 ECC 错误 [ecc-uncorrectable，未关闭]" in proc.stdout
    html = page.read_text(encoding="utf-8")
    assert "<h1>fleetmon 训练前检查</h1>" in html and "<th>原因</th>" in html


def test_json_stays_english_in_every_language(faulty: Path, tmp_path: Path) -> None:
    english = fleetmon("report", "--db", _copy(faulty, tmp_path, "en.db"), "--now", str(NOW), "--json")
    chinese = fleetmon("--lang", "zh_CN", "report", "--db", _copy(faulty, tmp_path, "zh.db"), "--now", str(NOW),
                       "--json")
    assert english.returncode == chinese.returncode == 2
    assert "summary_text" not in english.stdout and "reasons_text" not in english.stdout
    doc = json.loads(chinese.stdout)
    # Keys and values scripts parse stay English; the one addition is each finding's text for people.
    texts = {}
    for part in (doc["findings"], *(v for v in doc["changes"].values() if isinstance(v, list))):
        for f in part:
            if isinstance(f, dict) and "summary" in f:
                texts[f["key"]] = (f.pop("summary_text"), f.pop("action_text"))
    assert doc == json.loads(english.stdout)
    ecc = next(v for k, v in texts.items() if k.startswith("ecc-uncorrectable"))
    assert "不可纠正" in ecc[0] and "drain" in ecc[1] and "节点下线" in ecc[1]
    pre_en = fleetmon("preflight", "--db", _copy(faulty, tmp_path, "pe.db"), "--now", str(NOW), "--nodes", "n[1-3]",
                      "--json")
    pre_zh = fleetmon("--lang", "zh_CN", "preflight", "--db", _copy(faulty, tmp_path, "pz.db"), "--now", str(NOW),
                      "--nodes", "n[1-3]",
                      "--json")
    doc = json.loads(pre_zh.stdout)
    reasons = {}
    for n in doc["nodes"]:
        reasons[n["name"]] = n.pop("reasons_text")
        assert len(n.pop("warnings_text")) == len(n["warnings"])
    for f in doc["findings"]:
        f.pop("summary_text"), f.pop("action_text")
    assert doc == json.loads(pre_en.stdout)
    assert reasons["n1"] == [] and any("不可纠正" in r for r in reasons["n3"])


def test_errors_are_one_line_in_chinese(faulty: Path, tmp_path: Path) -> None:
    proc = fleetmon("--lang", "zh_CN", "report", "--db", _copy(faulty, tmp_path, "e.db"), "--since", "yesterday")
    assert proc.returncode == 1
    assert proc.stderr == "fleetmon report: --since 'yesterday'：应为时长，例如 90m、24h、7d 或 3600s\n"
    proc = fleetmon("report", "--db", str(tmp_path / "missing.db"), env={"FLEETMON_LANG": "zh_CN"})
    assert proc.returncode == 1 and proc.stderr == f"fleetmon report: 数据库 {tmp_path / 'missing.db'}：文件不存在\n"


def test_dates_and_figures_follow_the_locale(faulty: Path, tmp_path: Path) -> None:
    """zh_CN reads "2023年11月14日 02:00" where English reads "2023-11-14 02:00" (docs/i18n.md); UTC stays said."""
    import datetime as dt

    def chinese(ts: float) -> str:
        d = dt.datetime.fromtimestamp(ts, dt.timezone.utc)
        return f"{d.year}年{d.month}月{d.day}日 {d:%H:%M}"

    page = tmp_path / "r.html"
    zh = fleetmon("--lang", "zh_CN", "report", "--db", _copy(faulty, tmp_path, "d.db"), "--now", str(NOW),
                  "--since", "2h", "--html", str(page))
    assert f"时间窗口：{chinese(NOW - 7200)} .. {chinese(NOW)} UTC" in zh.stdout, zh.stdout[:200]
    assert chinese(NOW) in page.read_text(encoding="utf-8")
    iso = dt.datetime.fromtimestamp(NOW, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
    assert iso not in zh.stdout
    en = fleetmon("report", "--db", _copy(faulty, tmp_path, "den.db"), "--now", str(NOW), "--since", "2h")
    assert f".. {iso} UTC" in en.stdout  # English as before
    pre = fleetmon("--lang", "zh_CN", "preflight", "--db", _copy(faulty, tmp_path, "dp.db"), "--nodes", "n[1-3]",
                   "--now", str(NOW))
    assert chinese(NOW) in pre.stdout


def test_lists_in_the_report_use_chinese_punctuation() -> None:
    """The fleet lines and a node's kinds are joined as Chinese joins a list (、 and ；, full-width brackets);
    English byte for byte as before."""
    from fleetmon import i18n
    from fleetmon.health import render

    s = {"nodes_by_vendor": {"nvidia": 2, "amd": 1}, "gpus_by_vendor": {"nvidia": 8, "amd": 4},
         "drivers_by_vendor": {"nvidia": {"550.54.15": 2}, "amd": {"6.3.6": 1}},
         "runtimes_by_vendor": {"nvidia": {"12.4": 2}}}
    english = (render.models_line({"NVIDIA A100": 8, "MI100": 4}), render.drivers_line({"550.54.15": 2, "6.3.6": 1}),
               render.vendors_line(s))
    assert english == ("8x NVIDIA A100, 4x MI100", "550.54.15 (2 nodes), 6.3.6 (1 node)",
                       "NVIDIA 8 GPUs on 2 nodes (driver 550.54.15 ×2, CUDA 12.4 ×2); AMD 4 GPUs on 1 node "
                       "(driver 6.3.6 ×1)")
    i18n.set_language("zh_CN")
    try:
        chinese = (render.models_line({"NVIDIA A100": 8, "MI100": 4}),
                   render.drivers_line({"550.54.15": 2, "6.3.6": 1}), render.vendors_line(s))
    finally:
        i18n.set_language("en")
    assert chinese == ("8x NVIDIA A100、4x MI100", "550.54.15（2 个节点）、6.3.6（1 个节点）",
                       "NVIDIA 8 块 GPU，2 个节点（驱动 550.54.15 ×2、CUDA 12.4 ×2）；AMD 4 块 GPU，1 个节点（驱动 6.3.6 ×1）")
