"""The demo fleet's AMD, Ascend and Hygon boxes: in its fleet file, and their stories found through the real path.

The demo's own agents (``fleetmon agent --simulate demo-…`` subprocesses, the AMD box through the amdsmi
binding's twin, the others through npu-smi's and hy-smi's twins as subprocesses) with a short backfill, the real
collector into a real SQLite file, and its health pass: each box's story is a finding on its node and device.
"""

from __future__ import annotations

import tomllib

import pytest

from fleetmon.collector.poller import Collector
from fleetmon.demo import DEMO_VENDOR_NODES, start_demo
from fleetmon.fleet import load_fleet
from storage.db import open_database
from storage.findings import open_findings
from storage.queries import gpus, nodes

pytestmark = [pytest.mark.integration]


def test_the_demo_fleet_holds_the_vendor_boxes_and_their_stories_come_out() -> None:
    # 10 minutes of backfill: the MI100's ECC error (45 s), the Ascend warning (60 s) and the DCU's heat (95 °C
    # junction from ~2 min, 3 minutes needed) all lie in it
    with start_demo(1, interval_s=2.0, backfill_minutes=10) as demo:
        fleet = tomllib.loads(demo.fleet_path.read_text(encoding="utf-8"))
        groups = {n["name"]: n.get("group") for n in fleet["node"]}
        assert {name: group for name, _, group in DEMO_VENDOR_NODES} == {
            "mi100-srv-01": "amd-mi100", "ascend-srv-01": "ascend-910b", "dcu-k100-01": "hygon-k100"}
        assert {name: groups.get(name) for name, _, _ in DEMO_VENDOR_NODES} == {
            name: group for name, _, group in DEMO_VENDOR_NODES}
        assert len(fleet["node"]) == 4  # one NVIDIA node and the three boxes
        db = open_database(demo.db_path)
        try:
            Collector(load_fleet(demo.fleet_path), db).collect_once()
            vendor_of_node = {n.name: n.vendor for n in nodes(db)}
            gpu_rows = {g.uuid: g for g in gpus(db)}
            found = [(f.kind, f.node, str(f.severity), f.gpu_uuid, dict(f.evidence or {})) for f in open_findings(db)]
        finally:
            db.close()
    assert vendor_of_node["mi100-srv-01"] == "amd"
    assert vendor_of_node["ascend-srv-01"] == "huawei"
    assert vendor_of_node["dcu-k100-01"] == "hygon"

    def one(kind: str, node: str) -> tuple[str, dict[str, object]]:
        hits = [(sev, uuid, ev) for k, n, sev, uuid, ev in found if k == kind and n == node]
        assert len(hits) == 1, (kind, node, found)
        sev, uuid, ev = hits[0]
        assert uuid is not None and gpu_rows[uuid].vendor == vendor_of_node[node]
        return sev, {"index": gpu_rows[uuid].index, **ev}

    sev, ev = one("ecc-block", "mi100-srv-01")
    assert sev == "critical" and ev["index"] == 1 and "UMC" in str(ev), ev
    sev, ev = one("device-health", "ascend-srv-01")
    assert sev == "warning" and ev["index"] == 3 and "80E18401" in str(ev), ev
    sev, ev = one("temperature-high", "dcu-k100-01")
    assert sev == "warning" and ev["index"] == 2, ev
