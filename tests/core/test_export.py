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


def test_health_and_verdict_of_silent_cards_in_every_format(tmp_path):
    """Issue 19: a card nobody hears from is never "ok"; ``verdict`` is the report's node verdict's word."""
    import openpyxl

    from fleetmon import assess
    from fleetmon.export import export_database
    from helpers import VERDICT_NODES, verdict_fleet
    from storage.db import open_database

    now = float(T0 + 7 * 86400)
    path = tmp_path / "f.db"
    db = open_database(path)
    verdict_fleet(db, now)
    report = assess.run_report(db, now, 86400, None, save=False).result.verdicts
    db.close()
    assert dict(report) == VERDICT_NODES
    # A card reads its node's verdict, except where its own findings say otherwise (warn1 GPU 0 has none).
    expected = {"ok1": [("ok", "pass")] * 2, "old1": [("stale", "stale")] * 2,
                "bad1": [("critical", "fail"), ("stale", "stale")], "warn1": [("ok", "pass"), ("warning", "warn")]}
    for fmt in ("csv", "json", "xlsx"):
        out = tmp_path / f"sheet.{fmt}"
        assert export_database(path, out, now=now) == 8
        if fmt == "csv":
            rows = list(csv.DictReader(io.StringIO(out.read_text())))
            assert list(rows[0]) == list(COLUMNS) and list(COLUMNS)[19:22] == ["verdict", "intake", "intake_at"] \
                    and list(COLUMNS)[22:] == ["vendor", "runtime_version", "firmware_version"]
            got = [(r["node"], r["verdict"]) for r in rows]
        elif fmt == "json":
            rows = json.loads(out.read_text())["gpus"]
            got = [(r["node"], r["verdict"]) for r in rows]
        else:
            ws = openpyxl.load_workbook(out)["Inventory"]
            head = [c.value for c in ws[1]]
            rows = [{h: c.value for h, c in zip(head, r)} for r in ws.iter_rows(min_row=2)]
            assert [(r["Node"], r["Health"], r["Verdict"]) for r in rows] == [
                (n, h, v) for n in sorted(expected) for h, v in expected[n]]
            got = [(r["Node"], r["Verdict"]) for r in rows]
        assert got == [(n, v) for n in sorted(expected) for _, v in expected[n]], fmt
        # The node's verdict is the worst of its cards' here, and the report's.
        from fleetmon.health.verdict import worst_verdict
        assert {n: worst_verdict(v for m, v in got if m == n) for n in expected} == VERDICT_NODES
    # The stale limit is a parameter: a day's limit makes the 6-h-old nodes answer.
    db = open_database(path, readonly=True)
    try:
        rows = inventory_rows(db, now=now, stale_after_s=86400)
    finally:
        db.close()
    assert {r["node"]: r["verdict"] for r in rows if r["gpu_index"] == 1} == {
        "ok1": "pass", "old1": "pass", "bad1": "pass", "warn1": "warn"}


def test_node_level_findings_count_in_open_findings(fresh_db):
    """Issue 21, item 9: a driver mismatch of the node is one of each of its cards' open findings (it showed 0
    while Findings listed it), in every format; the columns stay as they were."""
    _fill(fresh_db)
    save_findings(fresh_db, [NewFinding(key="k1", kind="ecc-uncorrectable", severity="critical", node="n1",
                                        gpu_uuid=uuid_of("n1", 1)),
                             NewFinding(key="k2", kind="pcie-replay", severity="warning", node="n1",
                                        gpu_uuid=uuid_of("n1", 1)),
                             NewFinding(key="k3", kind="driver-mismatch", severity="warning", node="n2")],
                  now=T0 + 60)
    rows = inventory_rows(fresh_db, now=T0 + 60)
    n2 = rows[2]
    assert n2["node"] == "n2" and n2["findings"] == "warning: driver-mismatch (node)"
    assert n2["open_findings"] == 1 and n2["worst_finding"] == "warning: driver-mismatch"
    assert rows[1]["open_findings"] == 2 and rows[0]["open_findings"] == 0
    parsed = list(csv.DictReader(io.StringIO(render(rows, "csv"))))
    assert list(parsed[0]) == list(COLUMNS) and parsed[2]["open_findings"] == "1"
    assert json.loads(render(rows, "json"))["gpus"][2]["open_findings"] == 1
