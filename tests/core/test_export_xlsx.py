"""The XLSX inventory sheet, read back with openpyxl cell by cell; formula injection in XLSX and CSV."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
import subprocess
import sys
from pathlib import Path

import openpyxl
import pytest

from storage.db import open_database
from storage.findings import save_findings
from storage.ingest import ingest_polls
from storage.rows import NewFinding
from helpers import T0, inventory, poll, uuid_of

from fleetmon.export import (COLUMNS, ExportCancelled, export_database, format_for, inventory_rows, neutralise,
                             render)

EVIL_NODE = "=cmd|' /C calc'!A0"


def _poll(node, group, driver="550.54.15", cuda="12.4", gpus=2, **inv_over):
    over = {"pcie_max_gen": 4, "pcie_max_width": 16, "power_min_w": 100.0, "power_max_w": 400.0,
            "board_part_number": "900-21001-0000-000", **inv_over}
    p = poll(node, T0, inv=[inventory(node, i, **over) for i in range(gpus)], driver=driver)
    info = dataclasses.replace(p.info, values={**p.info.values, "cuda_driver_version": cuda})
    return dataclasses.replace(p, group=group, info=info)


def _build(path: Path, evil: bool = False) -> Path:
    db = open_database(path)
    polls = [_poll("n1", "a"), _poll("n2", "a", driver="535.161.08", vbios="94.00.01"), _poll("m1", "b", gpus=1)]
    if evil:
        polls.append(_poll(EVIL_NODE, "\tx", gpus=1, serial="+1+1", vbios="@SUM(1)", board_part_number="-2+3",
                           power_min_w=-5.0))
    ingest_polls(db, polls)
    save_findings(db, [
        NewFinding(key="k1", kind="ecc-uncorrectable", severity="critical", node="n1", gpu_uuid=uuid_of("n1", 1),
                   first_seen=T0 - 3600, last_seen=T0, evidence={"summary": "n1 gpu1: 3 uncorrectable"},
                   action="Drain the node"),
        NewFinding(key="k2", kind="pcie-replay", severity="warning", node="n1", gpu_uuid=uuid_of("n1", 1)),
        NewFinding(key="k3", kind="driver-mismatch", severity="warning", node="n2",
                   evidence={"field": "driver", "version": "535.161.08", "expected": "550.54.15"}),
    ], now=T0 + 60)
    db.close()
    return path


def _header(ws):
    return [c.value for c in ws[1]]


def _row(ws, key_col, key):
    head = _header(ws)
    for r in ws.iter_rows(min_row=2):
        if r[head.index(key_col)].value == key:
            return {h: c for h, c in zip(head, r)}
    raise AssertionError(f"no row with {key_col}={key!r}")


def test_workbook_cell_by_cell(tmp_path):
    db = _build(tmp_path / "f.db")
    out = tmp_path / "sheet.xlsx"
    seen = []
    assert export_database(db, out, progress=lambda done, total: seen.append((done, total)), now=T0 + 60) == 5
    assert seen and seen[-1][0] == seen[-1][1]
    wb = openpyxl.load_workbook(out)
    assert wb.sheetnames == ["Inventory", "Open findings", "Versions"]
    inv = wb["Inventory"]
    assert _header(inv) == ["Node", "Group", "Slot", "PCI bus id", "Model", "Serial", "UUID", "Board part", "VBIOS",
                            "Driver", "CUDA driver", "Memory (MiB)", "Power default (W)", "Power limit (W)",
                            "Power min (W)", "Power max (W)", "PCIe max gen", "PCIe max width", "State",
                            "First seen (UTC)", "Last seen (UTC)", "Health", "Open findings", "Findings", "Verdict",
                            "Intake", "Vendor", "Runtime", "Firmware"]
    assert inv["A1"].font.b and inv.freeze_panes == "C2"
    assert inv.auto_filter.ref == "A1:AC6"
    assert inv.max_row == 6 and [inv.cell(r, 1).value for r in range(2, 7)] == ["m1", "n1", "n1", "n2", "n2"]
    row = _row(inv, "UUID", uuid_of("n1", 1))
    values = {k: c.value for k, c in row.items()}
    assert values["Node"] == "n1" and values["Group"] == "a" and values["Slot"] == 1
    assert values["Model"] == "NVIDIA A100-SXM4-80GB" and values["Serial"] == "SN-n1-1"
    assert values["VBIOS"] == "92.00.45.00.01" and values["Driver"] == "550.54.15" and values["CUDA driver"] == "12.4"
    assert values["Memory (MiB)"] == 81920 and values["Power limit (W)"] == 400 and values["Power max (W)"] == 400
    assert values["PCIe max gen"] == 4 and values["PCIe max width"] == 16
    assert values["Health"] == "critical" and values["Open findings"] == 2 and values["Verdict"] == "fail"
    assert values["Findings"] == "critical: ecc-uncorrectable; warning: pcie-replay"
    for k in ("Slot", "Memory (MiB)", "Power limit (W)", "PCIe max gen", "Open findings"):
        assert row[k].data_type == "n", k
    first = row["First seen (UTC)"]
    assert isinstance(first.value, dt.datetime) and first.is_date and "yyyy" in first.number_format
    assert first.value == dt.datetime.fromtimestamp(T0, dt.timezone.utc).replace(tzinfo=None)
    # A node-level finding makes its cards' health, listed as the node's.
    n2 = _row(inv, "UUID", uuid_of("n2", 0))
    assert n2["Health"].value == "warning" and n2["Findings"].value == "warning: driver-mismatch (node)"
    assert n2["Verdict"].value == "warn"
    assert n2["Open findings"].value == 1  # the node's finding, listed in Findings, is counted (issue 21)
    assert inv.column_dimensions["G"].width > 30  # the UUID fits

    fnd = wb["Open findings"]
    assert _header(fnd)[:4] == ["Severity", "Kind", "Node", "Group"] and fnd.freeze_panes == "A2"
    assert fnd.auto_filter.ref == "A1:K4"
    assert [fnd.cell(r, 1).value for r in range(2, 5)] == ["critical", "warning", "warning"]
    ecc = _row(fnd, "Kind", "ecc-uncorrectable")
    assert ecc["GPU"].value == 1 and ecc["UUID"].value == uuid_of("n1", 1)
    assert ecc["Evidence"].value == "n1 gpu1: 3 uncorrectable" and ecc["Action"].value == "Drain the node"
    assert ecc["First seen (UTC)"].is_date
    assert "expected=550.54.15" in _row(fnd, "Kind", "driver-mismatch")["Evidence"].value

    ver = wb["Versions"]
    assert _header(ver) == ["Group", "Model", "Component", "Version", "Baseline", "Nodes", "GPUs", "Nodes running it",
                            "Vendor"]
    rows = [tuple(c.value for c in r)[:8] for r in ver.iter_rows(min_row=2)]
    assert {r[8].value for r in ver.iter_rows(min_row=2)} == {"NVIDIA"}
    model = "NVIDIA A100-SXM4-80GB"
    # Group a: one node on each driver, so no majority; VBIOS 2 cards against 2.
    assert ("a", model, "Driver", "535.161.08", None, 1, 2, "n2") in rows
    assert ("a", model, "Driver", "550.54.15", None, 1, 2, "n1") in rows
    assert ("a", model, "CUDA driver", "12.4", "baseline", 2, 4, "n[1-2]") in rows
    assert ("b", model, "VBIOS", "92.00.45.00.01", "baseline", 1, 1, "m1") in rows
    assert ver.auto_filter.ref == f"A1:I{len(rows) + 1}"


def test_formula_injection_xlsx_and_csv(tmp_path):
    db = _build(tmp_path / "f.db", evil=True)
    out = tmp_path / "sheet.xlsx"
    export_database(db, out)
    wb = openpyxl.load_workbook(out)
    inv = wb["Inventory"]
    row = _row(inv, "Node", EVIL_NODE)
    for k, text in (("Node", EVIL_NODE), ("Group", "\tx"), ("Serial", "+1+1"), ("VBIOS", "@SUM(1)"),
                    ("Board part", "-2+3")):
        cell = row[k]
        assert cell.value == text and cell.data_type == "s", k  # text, never a formula ("f")
        assert cell.quotePrefix, k  # and stays text when edited in Excel or LibreOffice
    assert row["Power min (W)"].value == -5 and row["Power min (W)"].data_type == "n"  # a number stays a number
    assert not _row(inv, "Node", "n1")["Node"].quotePrefix
    assert _row(wb["Versions"], "Group", "\tx")["Version"].value in ("550.54.15", "12.4", "@SUM(1)")
    # No formula anywhere in the workbook.
    for ws in wb:
        assert all(c.data_type != "f" for r in ws.iter_rows() for c in r)

    conn = open_database(db, readonly=True)
    try:
        rows = inventory_rows(conn)
    finally:
        conn.close()
    text = render(rows, "csv")
    parsed = {r["uuid"]: r for r in csv.DictReader(io.StringIO(text))}
    evil = parsed[uuid_of(EVIL_NODE, 0)]
    assert evil["node"] == "'" + EVIL_NODE and evil["group"] == "'\tx" and evil["serial"] == "'+1+1"
    assert evil["vbios"] == "'@SUM(1)" and evil["board_part_number"] == "'-2+3"
    assert parsed[uuid_of("n1", 0)]["node"] == "n1" and parsed[uuid_of("n1", 0)]["memory_total_mib"] == "81920"
    # JSON is data, not a sheet: unchanged.
    assert '"=cmd|' in render(rows, "json")


def test_neutralise():
    assert [neutralise(t) for t in ("=1", "+1", "-1", "@a", "\tx", "\rx", "a=1", "", "1-2")] == \
        ["'=1", "'+1", "'-1", "'@a", "'\tx", "'\rx", "a=1", "", "1-2"]


def test_csv_and_json_keep_their_columns(tmp_path):
    db = _build(tmp_path / "f.db")
    for ext in ("csv", "json"):
        out = tmp_path / f"sheet.{ext}"
        export_database(db, out)
        text = out.read_text()
        if ext == "csv":
            assert text.splitlines()[0] == ",".join(COLUMNS)
        else:
            assert "pcie_max_gen" not in text and '"schema": 1' in text
    assert format_for("x.XLSX") == "xlsx" and format_for("x.txt") == "csv" and format_for("x.xlsx", "csv") == "csv"


def test_cancel_leaves_no_file(tmp_path):
    db = _build(tmp_path / "f.db")
    out = tmp_path / "sheet.xlsx"
    with pytest.raises(ExportCancelled):
        export_database(db, out, progress=lambda done, total: False)
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("f.db")] == []


def test_command_xlsx(tmp_path):
    db = _build(tmp_path / "f.db")
    out = tmp_path / "sheet.xlsx"
    proc = subprocess.run([sys.executable, "-m", "fleetmon", "export", "--db", str(db), "-o", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "wrote 5 GPUs" in proc.stderr
    assert openpyxl.load_workbook(out)["Inventory"].max_row == 6
    proc = subprocess.run([sys.executable, "-m", "fleetmon", "export", "--db", str(db), "--format", "xlsx"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "needs a file" in proc.stderr


def test_long_text_wraps_and_its_row_grows_for_print(tmp_path):
    """Evidence and actions wrap in their column and the row is tall enough (a PDF of the sheet overprinted before)."""
    from fleetmon.export import FINDINGS_SHEET, wrapped_lines

    db = open_database(tmp_path / "f.db")
    ingest_polls(db, [_poll("n1", "a")])
    long_action = "Check the PSU, the board power cables and the BMC power policy; " * 3
    save_findings(db, [NewFinding(key="k", kind="power-brake", severity="warning", node="n1",
                                  gpu_uuid=uuid_of("n1", 0), evidence={"summary": "short"}, action=long_action)],
                  now=T0 + 60)
    db.close()
    out = tmp_path / "sheet.xlsx"
    export_database(tmp_path / "f.db", out)
    fnd = openpyxl.load_workbook(out)["Open findings"]
    row = _row(fnd, "Kind", "power-brake")
    assert row["Action"].value == long_action and row["Action"].alignment.wrap_text
    width = next(c.width for c in FINDINGS_SHEET if c.key == "action")
    lines = wrapped_lines(long_action, width)
    assert lines >= 3 and fnd.row_dimensions[row["Action"].row].height == 15 * lines
    assert row["Severity"].alignment.vertical == "top" and row["First seen (UTC)"].alignment.vertical == "top"
    assert wrapped_lines("", 10) == 1 and wrapped_lines("a b", 10) == 1 and wrapped_lines("x" * 25, 10) == 3


def test_printed_inventory_is_readable(tmp_path):
    """Issue 21, item 9: landscape A4 at a readable scale (not 25 columns fitted to one page at 3 pt), the
    header row and the card's node, group and slot on every page, a title with the fleet and the date."""
    db = _build(tmp_path / "f.db")
    out = tmp_path / "sheet.xlsx"
    export_database(db, out, now=T0 + 60, fleet_name="lab & cluster")
    inv = openpyxl.load_workbook(out)["Inventory"]
    setup = inv.page_setup
    assert setup.orientation == "landscape" and setup.paperSize == 9
    assert not inv.sheet_properties.pageSetUpPr or not inv.sheet_properties.pageSetUpPr.fitToPage
    assert setup.scale is not None and setup.scale >= 70  # Calibri 11 at 70 % is 7.7 pt
    assert inv.print_title_rows == "$1:$1" and inv.print_title_cols == "$A:$C"
    header = inv.oddHeader
    date = dt.datetime.fromtimestamp(T0 + 60, dt.timezone.utc).strftime("%Y-%m-%d")
    assert "lab && cluster" in header.left.text and "inventory" in header.left.text
    assert date in header.right.text
    wb = openpyxl.load_workbook(out)
    assert all(ws.page_setup.orientation == "landscape" for ws in wb.worksheets)
    export_database(db, tmp_path / "plain.xlsx", now=T0 + 60)
    assert "f.db" in openpyxl.load_workbook(tmp_path / "plain.xlsx")["Inventory"].oddHeader.left.text


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
@pytest.mark.parametrize("name", ["sheet.xlsx", "sheet.csv"])
def test_the_written_file_follows_the_umask(tmp_path, mask, name):
    """Issue 21, item 9: the sheet gets the mode any new file gets (it was always 0600, a temporary file's)."""
    import os
    import stat

    db = _build(tmp_path / "f.db")
    out = tmp_path / name
    old = os.umask(mask)
    try:
        export_database(db, out, now=T0 + 60)
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~mask
    assert not [p for p in tmp_path.iterdir() if p.suffix == ".part"]
