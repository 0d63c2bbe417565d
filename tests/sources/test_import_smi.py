"""`fleetmon import-smi` end to end: a capture into a fresh database, then export and report see it."""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

from fleetmon.sources.smi_xml import parse_smi_xml


def _fleetmon(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fleetmon", *args], capture_output=True, text=True, timeout=120)


def test_import_then_export_and_report(shared_fixtures: Path, tmp_path: Path) -> None:
    src = shared_fixtures / "A_nvidia_smi_xml" / "k8s-test-infra_hw_qx-b200.xml"
    db = tmp_path / "fleet.db"
    out = _fleetmon("import-smi", str(src), "--db", str(db), "--node", "b200-visit")
    assert out.returncode == 0, out.stderr
    assert "b200-visit: 8 GPU(s)" in out.stdout and "the document's timestamp" in out.stdout

    exported = _fleetmon("export", "--db", str(db))
    assert exported.returncode == 0, exported.stderr
    rows = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert len(rows) == 8 and {r["node"] for r in rows} == {"b200-visit"}
    assert rows[0]["model"] == "NVIDIA B200" and rows[0]["serial"] == "1650000000001"
    assert rows[0]["driver_version"] == "580.105.08" and rows[0]["memory_total_mib"] == "183359"
    assert rows[0]["power_enforced_w"] == "1000.0"

    ts = parse_smi_xml(src.read_bytes()).ts
    assert ts is not None
    report = _fleetmon("report", "--db", str(db), "--now", str(ts + 600))
    assert report.returncode in (0, 2), report.stderr
    assert "b200-visit" in report.stdout and "8x NVIDIA B200" in report.stdout


def test_node_name_defaults_to_the_file_stem_and_time_to_mtime(shared_fixtures: Path, tmp_path: Path) -> None:
    src = tmp_path / "ws-12.xml"
    shutil.copy(shared_fixtures / "A_nvidia_smi_xml" / "netdata_rtx-pro-6000-driver-580_excerpt.xml", src)
    os.utime(src, (1_700_000_000, 1_700_000_000))
    db = tmp_path / "fleet.db"
    out = _fleetmon("import-smi", str(src), "--db", str(db))
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ws-12: 1 GPU(s)") and "modification time" in out.stdout
    assert "2023-11-14 22:13:20 UTC" in out.stdout
    rows = list(csv.DictReader(io.StringIO(_fleetmon("export", "--db", str(db)).stdout)))
    assert [(r["node"], r["uuid"]) for r in rows] == [("ws-12", "GPU-11111111-2222-3333-4444-555555555555")]
    assert rows[0]["driver_version"] == ""  # the trimmed document has none: not invented


def test_hostile_or_missing_files_are_refused(tmp_path: Path) -> None:
    bad = tmp_path / "evil.xml"
    bad.write_text('<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><nvidia_smi_log>&a;</nvidia_smi_log>')
    out = _fleetmon("import-smi", str(bad), "--db", str(tmp_path / "f.db"))
    assert out.returncode == 1 and "refused" in out.stderr
    out = _fleetmon("import-smi", str(tmp_path / "none.xml"), "--db", str(tmp_path / "f.db"))
    assert out.returncode == 1 and "cannot read it" in out.stderr
