"""`fleetmon export`: the inventory sheet from a real database file."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

from storage.findings import save_findings
from storage.ingest import ingest_polls
from storage.rows import NewFinding
from helpers import T0, fresh_db, poll, uuid_of  # noqa: F401

from fleetmon.export import COLUMNS, inventory_rows, render


def _fill(db):
    ingest_polls(db, [poll("n1", T0, gpus=2), poll("n2", T0, gpus=1, driver="535.161.08")])
    save_findings(db, [NewFinding(key="k1", kind="ecc-uncorrectable", severity="critical", node="n1",
                                  gpu_uuid=uuid_of("n1", 1)),
                       NewFinding(key="k2", kind="pcie-replay", severity="warning", node="n1",
                                  gpu_uuid=uuid_of("n1", 1))], now=T0 + 60)


def test_rows_and_csv(fresh_db):
    _fill(fresh_db)
    rows = inventory_rows(fresh_db, now=T0 + 60)  # a minute after the polls: every node answers
    assert [(r["node"], r["gpu_index"]) for r in rows] == [("n1", 0), ("n1", 1), ("n2", 0)]
    assert rows[1]["open_findings"] == 2 and rows[1]["worst_finding"] == "critical: ecc-uncorrectable"
    assert [(r["health"], r["verdict"]) for r in rows] == [("ok", "pass"), ("critical", "fail"), ("ok", "pass")]
    assert rows[2]["driver_version"] == "535.161.08" and rows[0]["driver_version"] == "550.54.15"
    parsed = list(csv.DictReader(io.StringIO(render(rows, "csv"))))
    assert list(parsed[0]) == list(COLUMNS) and len(parsed) == 3
    assert parsed[1]["uuid"] == uuid_of("n1", 1)
    doc = json.loads(render(rows, "json"))
    assert doc["schema"] == 1 and len(doc["gpus"]) == 3


def test_command(tmp_path):
    from storage.db import open_database

    path = tmp_path / "f.db"
    db = open_database(path)
    _fill(db)
    db.close()
    out = tmp_path / "sheet.csv"
    proc = subprocess.run([sys.executable, "-m", "fleetmon", "export", "--db", str(path), "-o", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "wrote 3 GPUs" in proc.stderr
    assert out.read_text().startswith("node,group,gpu_index,model,uuid")
    proc = subprocess.run([sys.executable, "-m", "fleetmon", "export", "--db", str(tmp_path / "missing.db")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "no database at" in proc.stderr
