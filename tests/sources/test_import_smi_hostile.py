"""`fleetmon import-smi` of hostile captures (issue 20, items 1, 6, 8 and 9's output side).

Whatever is refused ends in exit status 1, one line on stderr, no traceback and
nothing in the database (no node row, so no "unreachable" finding either); what
is stored leaves `report` and `export` working, with control characters shown
as escapes. Most cases call the CLI's own entry point in-process
(:func:`fleetmon.cli.main`); the ones about files that could block (a FIFO,
/dev/zero, a 2 GB sparse file) and the encoding traceback of the issue run the
real command as a subprocess with a deadline.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fleetmon.cli import main
from fleetmon.sources.capture import capture_poll
from fleetmon.sources.smi_text import parse_smi_text
from storage.db import open_database
from storage.ingest import ingest_polls

XML = "A_nvidia_smi_xml"
B200 = "k8s-test-infra_hw_qx-b200.xml"
TRIMMED = "netdata_rtx-pro-6000-driver-580_excerpt.xml"  # no timestamp: the file's time is the capture time
H100_TEXT = "A2_nvidia_smi_q_text/gpud_nvidia-smi-query.535.161.08.out.0.valid.h100"


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(args)
    out, err = capsys.readouterr()
    return rc, out, err


def _subprocess(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fleetmon", *args], capture_output=True, text=True,
                          timeout=timeout)


def _nodes(db: Path) -> list[str]:
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT name FROM nodes")]


def _refused(rc: int, err: str, *needles: str) -> None:
    assert rc == 1, err
    assert err.count("\n") == 1 and err.startswith("fleetmon import-smi: "), err
    assert "Traceback" not in err and "\x1b" not in err and "\x00" not in err
    for needle in needles:
        assert needle in err, err


def test_unknown_encoding_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    """The issue's reproduction: LookupError from the XML parser ended `import-smi` in a traceback."""
    bad = tmp_path / "node1.xml"
    bad.write_bytes(b'<?xml version="1.0" encoding="x-bogus"?>\n<nvidia_smi_log></nvidia_smi_log>\n')
    out = _subprocess("import-smi", str(bad), "--db", str(tmp_path / "f.db"))
    _refused(out.returncode, out.stderr, "unknown character encoding")
    assert _nodes(tmp_path / "f.db") == []


@pytest.mark.parametrize("node", ["a,b", "gpu[1]", "dgx 07", "gpu\x1b[31m", "node\n", "", "-a", "a" * 300, "ü"])
def test_a_node_name_the_fleet_file_refuses_is_refused(shared_fixtures: Path, tmp_path: Path, node: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "f.db"
    rc, _, err = _cli(["import-smi", str(shared_fixtures / XML / B200), "--db", str(db), f"--node={node}"], capsys)
    _refused(rc, err, "--node", "a node name is letters, digits")
    assert _nodes(db) == []


def test_a_file_name_that_is_no_node_name_is_refused_with_a_suggestion(
        shared_fixtures: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Refused, not rewritten: `dgx 07.xml` and `dgx,07.xml` would both become dgx-07 unnoticed."""
    src = tmp_path / "dgx 07.xml"
    shutil.copy(shared_fixtures / XML / B200, src)
    db = tmp_path / "f.db"
    rc, _, err = _cli(["import-smi", str(src), "--db", str(db)], capsys)
    _refused(rc, err, "'dgx 07' is no valid node name", "--node dgx-07")
    assert _nodes(db) == []
    rc, out, err = _cli(["import-smi", str(src), "--db", str(db), "--node", "dgx-07"], capsys)
    assert rc == 0 and out.startswith("dgx-07: 8 GPU(s)"), err
    rc, out, err = _cli(["report", "--db", str(db)], capsys)
    assert rc in (0, 2) and "dgx-07" in out, err


def test_special_files_are_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "node1.xml"
    os.mkfifo(fifo)
    db = tmp_path / "f.db"
    out = _subprocess("import-smi", str(fifo), "--db", str(db), timeout=30)  # it blocked forever
    _refused(out.returncode, out.stderr, "a FIFO, not a regular file")
    if Path("/dev/zero").exists():  # it read 3.8 GB
        out = _subprocess("import-smi", "/dev/zero", "--db", str(db), "--node", "zero", timeout=30)
        _refused(out.returncode, out.stderr, "a device, not a regular file")
    (tmp_path / "dir.xml").mkdir()
    out = _subprocess("import-smi", str(tmp_path / "dir.xml"), "--db", str(db), timeout=30)
    _refused(out.returncode, out.stderr, "a directory")
    assert _nodes(db) == []


def test_size_is_checked_before_reading(tmp_path: Path) -> None:
    """A 2 GB sparse file reached 4.2 GB of memory; now its size refuses it before a byte is read."""
    sparse = tmp_path / "big.xml"
    with open(sparse, "wb") as f:
        f.truncate(2 * 1024**3)
    out = _subprocess("import-smi", str(sparse), "--db", str(tmp_path / "f.db"), timeout=30)
    _refused(out.returncode, out.stderr, "2147483648 bytes, more than the 67108864")
    assert _nodes(tmp_path / "f.db") == []


def test_an_oversize_text_capture_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The text format had no size limit (200 MB accepted at 1.6 GB RSS)."""
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.write(b"==NVSMI LOG==\nDriver Version : 550.54.15\n")
        f.truncate(64 * 1024 * 1024 + 1)
    rc, _, err = _cli(["import-smi", str(big), "--db", str(tmp_path / "f.db")], capsys)
    _refused(rc, err, "more than the 67108864")


def _gpus_xml(src: Path, copies: int, dup: bool) -> bytes:
    text = src.read_text()
    first = text.index("<gpu ")
    end = text.rindex("</gpu>") + len("</gpu>")
    one = text[first:text.index("</gpu>") + len("</gpu>")]
    gpus = [one.replace("GPU-00000000-0000-0000-0000-000000000000", f"GPU-00000000-0000-0000-0000-{i:012d}")
            for i in range(copies)]
    if dup:
        gpus = [one, one]
    return (text[:first] + "\n".join(gpus) + text[end:]).encode()


@pytest.mark.parametrize("copies, dup, message", [(2, True, "2 records for GPU UUID"),
                                                   (100, False, "100 GPUs in one document, more than the 64")])
def test_the_collectors_capture_checks_apply(shared_fixtures: Path, tmp_path: Path, copies: int, dup: bool,
                                             message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """10,000 GPUs were stored for one node; duplicate UUIDs were merged silently; and the refusal then
    left an "unreachable for 1440 min" node behind. Now: one line, nothing stored, no node."""
    src = tmp_path / "node1.xml"
    src.write_bytes(_gpus_xml(shared_fixtures / XML / B200, copies, dup))
    db = tmp_path / "f.db"
    rc, _, err = _cli(["import-smi", str(src), "--db", str(db)], capsys)
    _refused(rc, err, message)
    assert _nodes(db) == []


def test_control_characters_in_a_model_name_are_refused(shared_fixtures: Path, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "node1.txt"
    text = (shared_fixtures / H100_TEXT).read_text()
    src.write_text(text.replace("NVIDIA H100 80GB HBM3", "NVIDIA\x1b[31m H100\x07\x00"))
    rc, _, err = _cli(["import-smi", str(src), "--db", str(tmp_path / "f.db")], capsys)
    _refused(rc, err, "control characters", "\\x1b[31m")
    assert _nodes(tmp_path / "f.db") == []


def test_a_modification_time_in_the_future_is_no_capture_time(shared_fixtures: Path, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "ws-1.xml"
    shutil.copy(shared_fixtures / XML / TRIMMED, src)
    db = tmp_path / "f.db"
    far = 15_064_000_000.0  # in 2446 (it was taken as the capture time)
    os.utime(src, (far, far))
    rc, _, err = _cli(["import-smi", str(src), "--db", str(db)], capsys)
    _refused(rc, err, "no timestamp", "2446-", "more than 7 days ahead")
    assert _nodes(db) == []
    soon = time.time() + 86_400  # a day ahead: a clock off, not a capture time either; stored as now
    os.utime(src, (soon, soon))
    before = time.time()
    rc, out, err = _cli(["import-smi", str(src), "--db", str(db)], capsys)
    assert rc == 0 and "note: the file's modification time" in err and "ahead" in err, err
    with sqlite3.connect(db) as conn:
        (last_ok,) = conn.execute("SELECT last_ok FROM nodes WHERE name = 'ws-1'").fetchone()
    assert before - 1 <= last_ok <= time.time() + 1


def test_a_document_timestamp_far_ahead_is_refused(shared_fixtures: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "node1.xml"
    text = (shared_fixtures / XML / B200).read_text()
    start = text.index("<timestamp>") + len("<timestamp>")
    src.write_text(text[:start] + "Fri Aug  4 11:44:30 2446" + text[text.index("</timestamp>"):])
    rc, _, err = _cli(["import-smi", str(src), "--db", str(tmp_path / "f.db")], capsys)
    _refused(rc, err, "the document's timestamp", "more than 7 days ahead")


def test_report_and_export_show_control_characters_as_escapes(shared_fixtures: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A model name with ESC/BEL/NUL that reached the database (before these checks, or another way in)
    was printed raw by `report` and written raw to the CSV."""
    evil = "NVIDIA\x1b[2J\x1b]0;owned\x07 H100\x00\u202e"
    capture = parse_smi_text((shared_fixtures / H100_TEXT).read_text().replace("NVIDIA H100 80GB HBM3", evil))
    assert capture.ts is not None
    db = tmp_path / "f.db"
    store = open_database(db)
    try:
        ingest_polls(store, [capture_poll(capture, "h100-1", "file:///h100-1.txt", capture.ts)])
    finally:
        store.close()
    html = tmp_path / "r.html"
    rc, out, err = _cli(["report", "--db", str(db), "--now", str(capture.ts + 600), "--html", str(html)], capsys)
    assert rc in (0, 2), err
    shown = "NVIDIA\\x1b[2J\\x1b]0;owned\\x07 H100\\x00\\u202e"
    for text in (out, html.read_text()):
        assert shown in text
        assert not any(ch in text for ch in "\x1b\x07\x00\u202e")
    rc, out, err = _cli(["export", "--db", str(db)], capsys)
    assert rc == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows and {r["model"] for r in rows} == {shown}
    assert not any(ch in out for ch in "\x1b\x07\x00\u202e")
