"""Done when (issue 23): a fleet of NVIDIA, AMD, Hygon and Ascend nodes, each kind of way in, shows in the store,
the rules, the report, the pre-run review, the export and the GUI's models with the vendor-specific faults found.

One fleet file lists:

* four real ``fleetmon agent --simulate SCENARIO.json`` subprocesses (their own buffer, port 0, --port-file,
  through :func:`fleetmon.demo.start_agents`): NVIDIA ``healthy`` (2x A100), and the built-in ``amd-mi100``,
  ``hygon-k100`` and ``ascend-910b`` stories cut to two devices with their faults from the start (an uncorrectable
  ECC error in the MI100's UMC block, a DCU running at 98 °C, an Ascend NPU in Warning with an error code), so
  they show within the test: ``--backfill-minutes 6`` has each agent sample the last 6 minutes first (a sample a
  minute), and the collector backfills them through the real path;
* agentless SSH nodes of each vendor on the real sshd (tests/helpers/vendor_ssh.py: fake tools printing real
  captures from ../shared/fixtures/F_other_vendors; the Ascend node's chip 2 in Warning with code 80E01809);

and ``fleetmon import`` adds one capture per vendor from the fixtures. One ``fleetmon collect --once``. The SSH
nodes and the imports skip when ../shared/fixtures or OpenSSH is absent (the agents' part still runs).
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from helpers.sshd import available
from helpers.vendor_ssh import SHARED, Nodes

from fleetmon.demo import AgentProcess, start_agents, stop_agents
from fleetmon.health.findings import KINDS
from fleetmon.sim.vendors import SCENARIOS
from storage.db import open_database
from storage.queries import gpus, nodes

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
F = SHARED / "F_other_vendors"

# The built-in stories, two devices each, their faults active from the start (onset 0).
AGENT_SCENARIOS: dict[str, dict[str, Any]] = {
    "ag-amd": {**SCENARIOS["amd-mi100"], "count": 2, "faults": [
        {"kind": "ecc_uncorrectable", "gpu": 1, "onset_s": 0, "block": "UMC", "count": 1}]},
    "ag-dcu": {**SCENARIOS["hygon-k100"], "count": 2, "faults": [
        {"kind": "hot", "gpu": 1, "onset_s": 0, "rate_c_per_min": 600.0, "peak_c": 98.0}]},
    "ag-npu": {**SCENARIOS["ascend-910b"], "count": 2, "faults": [
        {"kind": "health", "gpu": 1, "onset_s": 0, "state": "Warning", "codes": ["80E18401"]}]},
}
IMPORTS = {  # node -> capture
    "imp-mi100": F / "amd" / "telegraf_mi100_rocm571.json",  # rocm-smi --showallinfo --json, ROCm 5.7.1, 4x MI100
    "imp-dcu": F / "hygon" / "issue_gpustack-3257_rocm-smi-json_k100-ai_first-card_DERIVED.json",  # 1x K100_AI
    "imp-910b": F / "huawei_ascend" / "issue_1Panel-9472_npu-smi-24.1.1_910B4_excerpt.txt",  # npu-smi 24.1.1
    "imp-4090": SHARED / "A_nvidia_smi_xml" / "netdata_rtx-4090-driver-535.xml",
}
SSH_NODES = {"ssh-nv": None, "ssh-amd": "amd", "ssh-dcu": "hygon", "ssh-npu": "ascend"}  # node -> Nodes folder
VENDOR = {"ag-nv": "nvidia", "ag-amd": "amd", "ag-dcu": "hygon", "ag-npu": "huawei",
          "ssh-nv": "nvidia", "ssh-amd": "amd", "ssh-dcu": "hygon", "ssh-npu": "huawei",
          "imp-4090": "nvidia", "imp-mi100": "amd", "imp-dcu": "hygon", "imp-910b": "huawei"}
NVIDIA_ONLY = {"xid", "retired-pages", "row-remap", "thermal-throttle", "power-brake", "fan-stopped"}
"""Rules that read signals only NVIDIA's NVML/nvidia-smi gives (Xid, page retirement, row remapping, throttle
reasons, a fan at 0 % while hot): none may fire on another vendor's device."""


def _cli(*args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "fleetmon", *args], capture_output=True, text=True, timeout=120,
                          cwd=REPO)
    assert done.returncode in ok, (args, done.returncode, done.stderr[-2000:])
    return done


@dataclass
class Fleet:
    db: Path
    folder: Path
    shared: bool  # the SSH nodes and the imports are in it
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def names(self) -> set[str]:
        return {n for n in VENDOR if self.shared or n.startswith("ag-")}


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    t0 = time.monotonic()
    folder = tmp_path_factory.mktemp("four-vendors")
    shared = F.is_dir() and (SHARED / "A_nvidia_smi_xml").is_dir() and available() is None
    specs = [("ag-nv", "healthy")]
    for name, scenario in AGENT_SCENARIOS.items():
        path = folder / f"{name}.json"
        path.write_text(json.dumps(scenario))
        specs.append((name, str(path)))
    db = folder / "fleet.db"
    imports = threading.Thread(target=_import_captures, args=(folder, db), daemon=True)
    if shared:  # one after another, while the agents simulate their last minutes
        imports.start()
    agents: list[AgentProcess] = []
    ssh: Nodes | None = None
    try:
        agents = start_agents(folder / "agents", specs, interval_s=5.0,  # a tool call may take 4.5 s on a busy machine
                              timeout_s=90.0, extra_args=["--backfill-minutes", "6", "--backfill-step", "60"])
        lines = ["[fleet]", "timeout_s = 10"]
        if shared:
            ssh = Nodes(folder / "ssh-nodes")
            lines.append(f'ssh_config = "{ssh.server.ssh_config}"')
        lines.append("")
        for a in agents:
            lines += ["[[node]]", f'name = "{a.name}"', f'url = "{a.url}"', ""]
        if ssh is not None:
            for name, node in SSH_NODES.items():
                url = ssh.server.url if node is None else ssh.server.url_for(node)
                lines += ["[[node]]", f'name = "{name}"', f'url = "{url}"', ""]
        fleet_file = folder / "fleet.toml"
        fleet_file.write_text("\n".join(lines))
        if shared:
            imports.join(timeout=300)
            assert (folder / "imports.done").exists(), "the imports failed (see the test's output)"
        started = time.monotonic()
        done = _cli("collect", "--once", "--fleet", str(fleet_file), "--db", str(db))
        n = len(agents) + (len(SSH_NODES) if ssh else 0)
        assert done.stdout.strip() == f"polled {n} nodes: {n} ok, 0 unreachable", (done.stdout, done.stderr)
        seconds = {"agents and imports": started - t0, "collect": time.monotonic() - started}
    finally:
        stop_agents(agents)
        if ssh is not None:
            ssh.server.close()
    seconds["total"] = time.monotonic() - t0
    print("four-vendor fleet built in", {k: round(v, 1) for k, v in seconds.items()})
    yield Fleet(db, folder, shared, seconds)


def _import_captures(folder: Path, db: Path) -> None:
    """``fleetmon import`` of each capture (copies stamped a minute ago: the capture time of a file without one);
    ``imports.done`` when all went in."""
    now = time.time()
    for node, capture in IMPORTS.items():
        copy = folder / capture.name
        shutil.copyfile(capture, copy)
        os.utime(copy, (now - 60, now - 60))
        _cli("import", str(copy), "--db", str(db), "--node", node)
    (folder / "imports.done").touch()


def _report(fleet: Fleet) -> dict[str, Any]:
    return json.loads(_cli("report", "--db", str(fleet.db), "--json", ok=(0, 2)).stdout)


EXPECTED_GPUS = {  # node -> (count, model, memory MiB, the first device's id where it is fixed)
    "ag-nv": (2, "NVIDIA A100 80GB PCIe", 81920, None), "ag-amd": (2, "AMD Instinct MI100", 32752, None),
    "ag-dcu": (2, "K100_AI", 65520, None), "ag-npu": (2, "Ascend 910B4", 32768, None),
    "ssh-nv": (1, "NVIDIA A100-SXM4-80GB", 81920, "GPU-513536b6-7d19-9063-b049-1e69664bb298"),
    "ssh-amd": (8, "AMD Instinct MI300X", 196592, "GPU-28246ce5673b4aa0"),
    "ssh-dcu": (2, "K100_AI", 65520, "GPU-7137d9b2a08a4841"),
    "ssh-npu": (4, "Ascend 310", 8192, "NPU-033GPW10K3000123-0"),  # one Atlas 300 card, four chips
    "imp-4090": (1, "NVIDIA GeForce RTX 4090", 24564, "GPU-71d1acc2-662d-2166-bf9f-65272d2fc437"),
    "imp-mi100": (6, "Arcturus GL-XL [Instinct MI100]", 32752, "unknown-gpu-0-0000:1e:00.0/imp-mi100"),
    "imp-dcu": (1, "K100_AI", 65520, "GPU-7137d9debef24861"),
    "imp-910b": (2, "Ascend 910B4", 32768, "NPU-0000:c1:00.0-0-0/imp-910b"),  # host-local ids: node-scoped
}


def test_the_store_holds_each_vendors_nodes_and_devices(fleet: Fleet) -> None:
    db = open_database(str(fleet.db), readonly=True)
    try:
        by_node = {n.name: n for n in nodes(db)}
        cards = list(gpus(db))
    finally:
        db.close()
    assert set(by_node) == fleet.names
    assert {n: r.vendor for n, r in by_node.items()} == {n: VENDOR[n] for n in fleet.names}
    assert all(g.vendor == VENDOR[g.node] for g in cards)
    seen: dict[str, list[Any]] = {}
    for g in sorted(cards, key=lambda g: (g.node, g.index)):
        seen.setdefault(g.node, []).append(g)
    for name in fleet.names:
        count, model, memory, first = EXPECTED_GPUS[name]
        assert (len(seen[name]), {g.model for g in seen[name]}, {g.memory_total_mib for g in seen[name]}) == (
            count, {model}, {memory}), name
        if first is not None:
            assert seen[name][0].uuid == first, name
    assert len({g.uuid for g in cards}) == len(cards)  # no two nodes' devices share an id
    want = Counter({v: 0 for v in VENDOR.values()})
    for name in fleet.names:
        want[VENDOR[name]] += EXPECTED_GPUS[name][0]
    assert Counter(g.vendor for g in cards) == +want
    # the agents' versions: each vendor's driver (and ROCm / CUDA runtime where the tool reports one)
    assert {n: (by_node[n].driver_version, by_node[n].runtime_version) for n in ("ag-nv", "ag-amd", "ag-dcu",
                                                                              "ag-npu")} == {
        "ag-nv": ("535.161.08", "12.2"), "ag-amd": ("6.2.4", "6.0.2"), "ag-dcu": ("6.3.3", None),
        "ag-npu": ("24.1.1", None)}
    assert all(g.uuid.startswith("NPU-") for g in seen["ag-npu"])  # the chip is the device, named by its card


def _findings(doc: dict[str, Any]) -> set[tuple[str, int | None, str, str]]:
    return {(f["node"], f.get("gpu_index"), f["kind"], f["severity"]) for f in doc["findings"]
            if f["state"] == "open"}


def test_the_rules_find_each_vendors_faults_and_no_nvidia_only_rule_fires_on_others(fleet: Fleet) -> None:
    doc = _report(fleet)
    found = _findings(doc)
    by_summary = {(f["node"], f["kind"]): f for f in doc["findings"]}
    # the MI100 agent: an uncorrectable ECC error named by its RAS block (and in the device total)
    assert {("ag-amd", 1, "ecc-block", "critical"), ("ag-amd", 1, "ecc-uncorrectable", "critical")} <= found
    umc = by_summary["ag-amd", "ecc-block"]
    assert umc["summary"] == "ag-amd gpu1: 1 uncorrectable ECC error(s) in block UMC"
    assert (umc["evidence"]["block"], umc["evidence"]["vendor"]) == ("UMC", "amd")
    assert "amd-smi reset" in umc["action"] and "dcgmi" not in by_summary["ag-amd", "ecc-uncorrectable"]["action"]
    # the hot DCU: 98 °C against the 95 °C a junction sensor without a reported limit is judged by
    hot = by_summary["ag-dcu", "temperature-high"]
    assert (hot["gpu_index"], hot["severity"], hot["evidence"]["max_temp_c"], hot["evidence"]["limit_c"],
            hot["evidence"].get("sensor")) == (1, "warning", 98.0, 95.0, "junction")
    # the Ascend NPUs: health Warning with its code (the agent's twin; the SSH node's real-layout -t health)
    npu = by_summary["ag-npu", "device-health"]
    assert (npu["gpu_index"], npu["severity"], npu["evidence"]["codes"], npu["summary"]) == (
        1, "warning", ["80E18401"], "ag-npu gpu1: health Warning, error code 80E18401")
    if fleet.shared:
        ssh_npu = by_summary["ssh-npu", "device-health"]
        assert (ssh_npu["gpu_index"], ssh_npu["evidence"]["codes"], ssh_npu["evidence"]["handling"]) == (
            2, ["80E01809"], {"80E01809": "NotHandleFault"})
    # nothing else is wrong with the agents' devices; no rule reading NVIDIA-only signals fires on another
    # vendor's device, and no other vendor's finding sends the operator to NVIDIA's tools
    assert {f for f in found if f[0].startswith("ag-")} == {
        ("ag-amd", 1, "ecc-block", "critical"), ("ag-amd", 1, "ecc-uncorrectable", "critical"),
        ("ag-dcu", 1, "temperature-high", "warning"), ("ag-npu", 1, "device-health", "warning")}
    others = [f for f in doc["findings"] if VENDOR.get(f["node"]) != "nvidia"]
    assert NVIDIA_ONLY <= set(KINDS) and not {f["kind"] for f in others} & NVIDIA_ONLY
    assert not [f["action"] for f in others if "dcgmi" in f["action"] or "nvidia-smi" in f["action"]]
    # the report's verdicts and per-vendor counts
    verdicts = {n["name"]: n["verdict"] for n in doc["nodes"]}
    assert (verdicts["ag-amd"], verdicts["ag-dcu"], verdicts["ag-npu"], verdicts["ag-nv"]) == (
        "fail", "warn", "warn", "pass")
    summary = doc["summary"]
    names = fleet.names
    assert summary["nodes_by_vendor"] == dict(Counter(VENDOR[n] for n in names))
    assert summary["gpus_by_vendor"] == dict(Counter({VENDOR[n]: 0 for n in names}) + Counter(
        {v: sum(EXPECTED_GPUS[n][0] for n in names if VENDOR[n] == v) for v in set(VENDOR.values())}))
    assert summary["drivers_by_vendor"]["amd"]["6.2.4"] == (2 if fleet.shared else 1)
    assert summary["runtimes_by_vendor"]["amd"] == {"6.0.2": 1}


def test_the_prerun_review_per_vendor(fleet: Fleet) -> None:
    names = sorted(fleet.names)
    done = _cli("preflight", "--db", str(fleet.db), "--json", "--nodes", ",".join(names), "--days", "1", ok=(2,))
    doc = json.loads(done.stdout)  # status 2: something critical (the MI100's ECC error)
    node = {n["name"]: n for n in doc["nodes"]}
    assert {n: v["vendor"] for n, v in node.items()} == {n: VENDOR[n] for n in names}
    # no-go: the MI100 with its ECC error, and the RTX 4090 capture of 2023 (its document's time: stale)
    no_go = ["ag-amd", "imp-4090"] if fleet.shared else ["ag-amd"]
    assert doc["exclude"] == ",".join(no_go) and [n for n in names if not node[n]["go"]] == no_go
    assert any("in block UMC [ecc-block, open]" in r for r in node["ag-amd"]["reasons"])
    if fleet.shared:
        assert [r.split(" for ")[0] for r in node["imp-4090"]["reasons"]] == ["stale: no good poll"]
    assert node["ag-dcu"]["warnings"] == ["ag-dcu gpu1: 98 °C (limit 95 °C) [temperature-high]"]
    assert any("health Warning, error code 80E18401" in w for w in node["ag-npu"]["warnings"])
    per_vendor = {v: (sorted(d["go"]), d["no_go"], d["nodes"], d["gpus"]) for v, d in doc["by_vendor"].items()}
    assert per_vendor["amd"][1:3] == (["ag-amd"], 3 if fleet.shared else 1)
    for vendor in ("nvidia", "hygon", "huawei"):
        all_ = sorted(n for n in names if VENDOR[n] == vendor)
        go = [n for n in all_ if n not in no_go]
        assert per_vendor[vendor] == (go, [n for n in all_ if n in no_go], len(all_),
                                      sum(EXPECTED_GPUS[n][0] for n in all_)), vendor


def test_the_export_names_each_cards_vendor(fleet: Fleet) -> None:
    rows = list(csv.DictReader(io.StringIO(_cli("export", "--db", str(fleet.db), "--format", "csv").stdout)))
    assert Counter(r["vendor"] for r in rows) == Counter(VENDOR[r["node"]] for r in rows)
    assert {r["node"] for r in rows} == fleet.names
    assert len(rows) == sum(EXPECTED_GPUS[n][0] for n in fleet.names)
    out = fleet.folder / "inventory.xlsx"
    _cli("export", "--db", str(fleet.db), "-o", str(out))
    sheet = openpyxl.load_workbook(out)["Inventory"]
    head = [c.value for c in sheet[1]]
    cells = [dict(zip(head, (c.value for c in r))) for r in sheet.iter_rows(min_row=2)]
    assert {(r["Node"], r["Vendor"]) for r in cells} == {
        (n, {"nvidia": "NVIDIA", "amd": "AMD", "hygon": "Hygon", "huawei": "Huawei Ascend"}[VENDOR[n]])
        for n in fleet.names}
    amd = next(r for r in cells if r["Node"] == "ag-amd")
    assert amd["Runtime"] == "ROCm 6.0.2"


def test_the_apps_models_show_and_filter_each_vendor(qtbot: Any, fleet: Fleet) -> None:
    from ui.fleet_reader import read_snapshot
    from ui.models.fleet_table import COL_VENDOR, FleetTableModel
    from ui.models.fleet_tree import COL_VENDOR as TREE_VENDOR
    from ui.models.versions import COLUMNS as VERSION_COLUMNS
    from ui.models.versions import VersionsModel
    from ui.views.fleet import FleetView

    db = open_database(str(fleet.db), readonly=True)
    try:
        snap = read_snapshot(db)
    finally:
        db.close()
    names = fleet.names
    shown = {"nvidia": "NVIDIA", "amd": "AMD", "hygon": "Hygon", "huawei": "Huawei Ascend"}
    # All GPUs: one row per device, its vendor; vendor:amd keeps the AMD ones
    table = FleetTableModel()
    table.set_rows(list(snap.rows), verdicts=snap.verdicts)
    per_node = Counter(table.row(r).node for r in range(table.rowCount()))
    assert per_node == Counter({n: EXPECTED_GPUS[n][0] for n in names})
    assert {(table.row(r).node, table.data(table.index(r, COL_VENDOR))) for r in range(table.rowCount())} == {
        (n, shown[VENDOR[n]]) for n in names}
    table.set_filter("vendor:amd")
    amd_nodes = {n for n in names if VENDOR[n] == "amd"}
    assert table.rowCount() == sum(EXPECTED_GPUS[n][0] for n in amd_nodes)
    assert {table.row(r).node for r in range(table.rowCount())} == amd_nodes
    table.set_filter("vendor:ascend")
    assert {table.row(r).node for r in range(table.rowCount())} == {n for n in names if VENDOR[n] == "huawei"}
    # the fleet tree: a node per fleet node with its vendor; the filter keeps the AMD nodes and their devices
    view = FleetView()
    qtbot.addWidget(view)
    view.set_snapshot(snap)
    model = view.model
    tree = _tree_nodes(model.roots())
    assert {it.name: model.data(model.index_of_node(it.name).siblingAtColumn(TREE_VENDOR)) for it in tree} == {
        n: shown[VENDOR[n]] for n in names}
    view.filter.setText("vendor:amd")
    assert {it.name: len(it.children) for it in _tree_nodes(model.roots())} == {
        n: EXPECTED_GPUS[n][0] for n in amd_nodes}
    # the versions matrix: rows per vendor and model, NVIDIA first, each vendor's drivers its own
    versions = VersionsModel()
    versions.set_snapshot(snap)
    rows = [[versions.data(versions.index(r, c)) for c in range(len(VERSION_COLUMNS))]
            for r in range(versions.rowCount())]
    vendor_col, model_col = VERSION_COLUMNS.index("Vendor"), VERSION_COLUMNS.index("Model")
    assert {(r[model_col], r[vendor_col]) for r in rows} == {
        (EXPECTED_GPUS[n][1], shown[VENDOR[n]]) for n in names}
    assert rows[0][vendor_col] == "NVIDIA"


def _tree_nodes(roots: Any) -> list[Any]:
    out: list[Any] = []
    for it in roots:
        out += _tree_nodes(it.children) if it.kind == "group" else [it]
    return out
