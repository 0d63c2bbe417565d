"""`fleetmon intake` end to end on a real SQLite file: text, JSON, the certificate, the stored result, errors."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fleetmon.cli import main
from helpers import T0, inventory, minute, poll
from storage.db import open_database
from storage.ingest import ingest_polls
from storage.intake import intakes, latest_intakes

REPO = Path(__file__).resolve().parents[2]
ARRIVE = T0 + 3600
NOW = T0 + 3 * 3600
LINK = {"pcie_max_gen": 4, "pcie_max_width": 16, "pcie_gpu_max_gen": 4, "pcie_gpu_max_width": 16,
        "ecc_mode_current": 1}
"""What a real A100 also reports (the helpers' inventory leaves the link out)."""
WINDOW = "90m"
EMPTY = f"{T0 + 5400}..{NOW - 600}"
"""A window in which no card was first seen."""
"""The intake window: the newcomers were first seen by the poll at NOW, the others by the poll at ARRIVE."""


def _feed(db: Any, t_from: int, t_to: int, cards: dict[str, list[int]], over: dict[tuple[str, int], dict[str, Any]],
          seq: dict[str, int]) -> None:
    polls = []
    for node, indices in cards.items():
        mins = []
        for ts in range(t_from, t_to, 60):
            for i in indices:
                seq[node] += 1
                mins.append(minute(node, i, ts, seq=seq[node]))
        inv = [inventory(node, i, **{**LINK, **over.get((node, i), {})}) for i in indices]
        p = poll(node, t_to, minutes=mins, inv=inv, minutes_cursor=seq[node])
        assert p.info is not None
        polls.append(dataclasses.replace(p, info=dataclasses.replace(p.info, xid_source="nvml+kmsg")))
    ingest_polls(db, polls)


@pytest.fixture(scope="module")
def fleet_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """n1 and n2 with two A100s each for three hours; a third card arrives in each an hour in: n1's is
    healthy, n2's reports half its memory."""
    path = tmp_path_factory.mktemp("intake") / "fleet.db"
    db = open_database(path)
    seq = {"n1": 0, "n2": 0}
    over = {("n2", 2): {"memory_total_mib": 40960}}
    _feed(db, T0, ARRIVE, {"n1": [0, 1], "n2": [0, 1]}, over, seq)
    _feed(db, ARRIVE, NOW, {"n1": [0, 1, 2], "n2": [0, 1, 2]}, over, seq)
    db.close()
    return path


@pytest.fixture
def db_copy(fleet_db: Path, tmp_path: Path) -> Path:
    """A copy per test: intakes store themselves."""
    out = tmp_path / "fleet.db"
    out.write_bytes(fleet_db.read_bytes())
    return out


def intake(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["intake", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_healthy_new_card_passes_and_is_stored(db_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = intake(capsys, "--db", str(db_copy), "--node", "n1", "--now", str(NOW), "--window", WINDOW)
    assert code == 0, err
    assert out.startswith("n1 gpu2  NVIDIA A100-SXM4-80GB  GPU-n1-02  serial SN-n1-2\n  intake: PASS  (new to the fleet")
    assert "every check passed" in out
    db = open_database(db_copy, readonly=True)
    try:
        [row] = intakes(db, "GPU-n1-02")
        assert (row.verdict, row.node, row.ts, row.window_from) == ("PASS", "n1", NOW, NOW - 5400)
        assert [c["status"] for c in row.result["checks"]] == ["PASS"] * 9
        assert set(latest_intakes(db)) == {"GPU-n1-02"}
        # The inventory export carries each card's newest intake.
        from fleetmon.export import inventory_rows

        rows = {r["uuid"]: r for r in inventory_rows(db, now=NOW)}
        assert (rows["GPU-n1-02"]["intake"], rows["GPU-n1-00"]["intake"]) == ("PASS", "")
        assert rows["GPU-n1-02"]["intake_at"].startswith("2023-11-")
    finally:
        db.close()


def test_half_the_memory_is_rejected_with_a_certificate(db_copy: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "cert.html"
    code, out, err = intake(capsys, "--db", str(db_copy), "--node", "n2", "--now", str(NOW), "--window", WINDOW,
                            "--html", str(page))
    assert code == 2, err
    assert "intake: REJECT" in out and "40960 MiB reported, 50% of the nominal 80 GB" in out
    html = page.read_text(encoding="utf-8")
    assert "Intake certificate — n2 gpu2" in html and "SN-n2-2" in html
    for title in ("Memory size", "PCIe link under load", "Power limits", "VBIOS", "Xid history", "Clocks under load"):
        assert title in html
    db = open_database(db_copy, readonly=True)
    try:
        assert latest_intakes(db)["GPU-n2-02"].verdict == "REJECT"
    finally:
        db.close()


def test_any_card_on_request_json_and_no_save(db_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = intake(capsys, "--db", str(db_copy), "--node", "n1", "--gpu", "0", "--now", str(NOW),
                            "--window", f"{ARRIVE + 60}..{NOW}", "--json", "--no-save")
    assert code == 0, err
    doc = json.loads(out)
    [r] = doc["intakes"]
    assert (doc["schema"], r["uuid"], r["new"], r["window_from"]) == (1, "GPU-n1-00", False, ARRIVE + 60)
    assert r["verdict"] == "PASS"
    db = open_database(db_copy, readonly=True)
    try:
        assert intakes(db) == []
    finally:
        db.close()


def test_no_new_card_says_how_to_name_one(db_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = intake(capsys, "--db", str(db_copy), "--node", "n1", "--now", str(NOW), "--window", EMPTY)
    assert code == 0 and "no card of n1 was first seen in the window" in out and "--gpu" in out


@pytest.mark.parametrize("args,message", [
    (("--node", "zz"), "unknown node 'zz'; known nodes: n1, n2"),
    (("--node", "n1", "--gpu", "7"), "--gpu 7: no such card on n1 (indices: 0, 1, 2; or give a UUID)"),
    (("--node", "n1", "--gpu", "GPU-n2-00"), "--gpu GPU-n2-00: that card is on n2, not n1"),
    (("--node", "n1", "--window", "soon"), "--window 'soon'"),
    (("--node", "n1", "--html", "x.html"), "--html: 0 cards"),
])
def test_errors_are_one_line_and_exit_1(db_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        args: tuple[str, ...], message: str) -> None:
    argv = ["--db", str(db_copy), "--now", str(NOW), *(str(tmp_path / a) if a == "x.html" else a for a in args)]
    if "--html" in args:
        argv += ["--window", EMPTY]
    code, _, err = intake(capsys, *argv)
    assert code == 1
    assert err.startswith("fleetmon intake: ") and err.count("\n") == 1
    assert message in err or (message == "--html: 0 cards" and "no card was checked" in err)
    assert not (tmp_path / "x.html").exists()


def test_a_missing_database_and_a_usage_error_exit_1(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "fleetmon", "intake", "--db", str(tmp_path / "none.db"),
                           "--node", "n1"], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 1 and proc.stderr.strip() == f"fleetmon intake: database {tmp_path / 'none.db'}: no such file"
    proc = subprocess.run([sys.executable, "-m", "fleetmon", "intake", "--node", "n1"], capture_output=True,
                          text=True, timeout=60, cwd=REPO)
    assert proc.returncode == 1 and "--db" in proc.stderr


def test_intake_and_its_certificate_in_chinese(db_copy: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`fleetmon --lang zh_CN intake` (docs/i18n.md): the text, the certificate and the errors in Chinese; the
    stored result and the JSON in English."""
    page = tmp_path / "cert.html"
    code = main(["--lang", "zh_CN", "intake", "--db", str(db_copy), "--node", "n2", "--now", str(NOW), "--window",
                 WINDOW, "--html", str(page)])
    out = capsys.readouterr().out
    try:
        assert code == 2
        assert out.startswith("n2 gpu2  NVIDIA A100-SXM4-80GB  GPU-n2-02  序列号 SN-n2-2\n  验收：拒收（新加入集群；时间窗口 ")
        assert "显存容量：报告为 40960 MiB，是标称 80 GB 的 50%（低于 " in out  # the verdict's reason
        assert "拒收" in out and "显存容量" in out and "负载下的 PCIe 链路" in out
        html = page.read_text(encoding="utf-8")
        assert '<html lang="zh-CN">' in html and "<h1>验收证书 — n2 gpu2</h1>" in html
        assert "Noto Sans CJK SC" in html  # the Chinese faces, as the report's page
        for said in ("<h2>检查项</h2>", "<th class=\"nw\">板卡料号</th>", "结论：", ">拒收</span>", "报告为 40960 MiB", "签字确认：",
                     "年", "UTC"):
            assert said in html, said
        assert "Memory size" not in html and "reported" not in html
        db = open_database(db_copy, readonly=True)
        try:
            (row,) = intakes(db, "GPU-n2-02")
            assert row.result["reason"].startswith("Memory size: 40960 MiB reported")  # stored English
        finally:
            db.close()
        assert main(["--lang", "zh_CN", "intake", "--db", str(db_copy), "--node", "zz", "--now", str(NOW)]) == 1
        assert capsys.readouterr().err == "fleetmon intake: 未知节点 'zz'；已知节点：n1, n2\n"
    finally:
        from fleetmon import i18n

        i18n.set_language("en")


def test_a_stored_intake_is_said_again_in_chinese(db_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The stored result keeps how its reasons were made (``texts``, m017's companion in the result JSON): read
    back, the verdict's and each check's reason are said in Chinese; the English stays as stored."""
    from fleetmon import i18n
    from fleetmon.intake import IntakeResult, stored_reason

    code, _out, err = intake(capsys, "--db", str(db_copy), "--node", "n2", "--now", str(NOW), "--window", WINDOW)
    assert code == 2, err
    db = open_database(db_copy, readonly=True)
    try:
        (row,) = intakes(db, "GPU-n2-02")
    finally:
        db.close()
    assert row.result["reason"].startswith("Memory size: 40960 MiB reported")  # stored English, as before
    back = IntakeResult.from_dict(row.result)
    assert back.reason == row.result["reason"]
    assert stored_reason(row.result) == row.result["reason"]
    with i18n.speaking("zh_CN"):
        assert stored_reason(row.result).startswith("显存容量：报告为 40960 MiB"), stored_reason(row.result)
        memory = back.check("memory-size")
        assert memory is not None and "报告为 40960 MiB" in i18n.localized(memory.reason)
        damaged = {**row.result, "texts": {"checks": {"memory-size": {"t": "{nope}"}}}}
        assert stored_reason(damaged) == row.result["reason"]  # bad data: the English as stored
        assert stored_reason({k: v for k, v in row.result.items() if k != "texts"}) == row.result["reason"]  # old row
