"""The inventory export of a mixed fleet (issue 23): the vendor columns appended to CSV, JSON and XLSX, and the
Versions sheet per vendor (NVIDIA's rows as before, another vendor's runtime and firmware named for it)."""

from __future__ import annotations

import csv
import dataclasses
import io
import json

import openpyxl

from fleetmon.export import COLUMNS, export_database, version_matrix
from fleetmon.records import NodeInfo, NodePoll
from helpers import T0, Feeder, inventory
from storage.db import open_database
from storage.ingest import ingest_polls

NOW = T0 + 3600


def _build(path):
    db = open_database(path)
    Feeder(db, nodes=("n1", "n2")).feed(T0, NOW)
    for node in ("npu1", "npu2"):
        gpus = [dataclasses.replace(g, name="Ascend 910B4", values={
            **g.values, "vendor": "huawei", "vbios": None, "firmware_version": "7.3.0.1.231" if node == "npu1"
            else "7.1.0.5.220", "card_id": str(g.index // 2)}) for g in (inventory(node, i) for i in range(2))]
        ingest_polls(db, [NodePoll(node=node, url=f"file:///{node}.txt", ts=NOW, ok=True, info=NodeInfo(
            hostname=node, agent_version="npu-smi (fleetmon 1)", values={
                "driver_version": "24.1.rc2", "vendor": "huawei", "runtime_version": "8.0.RC2", "gpu_count": 2}),
            gpus=gpus)])
    db.close()
    return path


def test_csv_and_json_append_the_vendor_columns(tmp_path):
    db = _build(tmp_path / "f.db")
    assert export_database(db, tmp_path / "s.csv", now=NOW) == 8
    rows = list(csv.DictReader(io.StringIO((tmp_path / "s.csv").read_text())))
    assert list(rows[0])[-3:] == ["vendor", "runtime_version", "firmware_version"] == list(COLUMNS)[-3:]
    by_node = {r["node"]: r for r in rows}
    assert (by_node["n1"]["vendor"], by_node["n1"]["runtime_version"], by_node["n1"]["firmware_version"]) == (
        "nvidia", "", "")  # a Feeder node answers as an agent before issue 23 did: no runtime given
    assert (by_node["npu1"]["vendor"], by_node["npu1"]["runtime_version"], by_node["npu1"]["firmware_version"],
            by_node["npu1"]["driver_version"]) == ("huawei", "8.0.RC2", "7.3.0.1.231", "24.1.rc2")
    export_database(db, tmp_path / "s.json", now=NOW)
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["columns"] == list(COLUMNS) and {g["vendor"] for g in doc["gpus"]} == {"nvidia", "huawei"}


def test_the_workbook_names_vendors_and_their_versions(tmp_path):
    db = _build(tmp_path / "f.db")
    export_database(db, tmp_path / "s.xlsx", now=NOW)
    wb = openpyxl.load_workbook(tmp_path / "s.xlsx")
    inv = wb["Inventory"]
    head = [c.value for c in inv[1]]
    assert head[-3:] == ["Vendor", "Runtime", "Firmware"]
    npu = next(dict(zip(head, (c.value for c in r))) for r in inv.iter_rows(min_row=2) if r[0].value == "npu1")
    assert (npu["Vendor"], npu["Runtime"], npu["Firmware"]) == ("Huawei Ascend", "CANN 8.0.RC2", "7.3.0.1.231")
    ver = wb["Versions"]
    head = [c.value for c in ver[1]]
    rows = [dict(zip(head, (c.value for c in r))) for r in ver.iter_rows(min_row=2)]
    assert [r["Vendor"] for r in rows] == sorted((r["Vendor"] for r in rows), key=lambda v: v != "NVIDIA")
    nvidia = {(r["Component"], r["Version"]) for r in rows if r["Vendor"] == "NVIDIA"}
    assert ("Driver", "550.54.15") in nvidia and ("VBIOS", "92.00.45.00.01") in nvidia
    ascend = {(r["Component"], r["Version"], r["Baseline"]) for r in rows if r["Vendor"] == "Huawei Ascend"}
    assert ("Driver", "24.1.rc2", "baseline") in ascend and ("CANN", "8.0.RC2", "baseline") in ascend
    assert {("Firmware", "7.3.0.1.231", None), ("Firmware", "7.1.0.5.220", None)} <= ascend  # 2 against 2


def test_a_vendors_driver_is_no_outlier_against_anothers():
    rows = [{"node": f"n{i}", "group": "g", "model": "NVIDIA A100", "vendor": "nvidia", "driver_version": "550.54.15",
             "cuda_driver_version": "12.4", "vbios": "", "state": "ok"} for i in range(2)]
    rows += [{"node": "mi1", "group": "g", "model": "AMD Instinct MI100", "vendor": "amd", "driver_version": "6.3.6",
              "runtime_version": "6.1.2", "vbios": "", "state": "ok"}]
    out = version_matrix(rows)
    amd = [r for r in out if r["vendor"] == "amd"]
    assert {(r["component"], r["version"], r["baseline"]) for r in amd} == {("Driver", "6.3.6", "baseline"),
                                                                             ("ROCm", "6.1.2", "baseline")}
    assert all(r["baseline"] == "baseline" for r in out)
