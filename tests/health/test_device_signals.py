"""Issue 23 item 2: other vendors' fault signals into the rule families, and versions judged per vendor.

A device's vendor readings (a parser's ``Capture.extra``, an agent backend's ``extra``) become
vendor-neutral signals (:mod:`fleetmon.signals`); a change is one event, on the capture
path (``fleetmon import``, the SSH source: storage compares with the stored signals) and on the
agent path (the sampler compares with its last round); the rules judge each card's current
signals through the real store (SQLite file, ingest, ledger). The fixtures are real tool outputs
(../shared/fixtures, section F of PROVENANCE.md); the tests skip without them.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from fleetmon import specs
from fleetmon.agent.buffer import Buffer
from fleetmon.agent.nvml import open_nvml
from fleetmon.agent.sampler import Sampler
from fleetmon.assess import load_history
from fleetmon.cli import main
from fleetmon.health import engine
from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory, GroupExpect
from fleetmon.health.rules import check_driver_versions
from fleetmon.ledger import judge, store
from fleetmon.records import Event, NodePoll
from fleetmon.sim.nvml import SimulatedNvml
from fleetmon.sources import formats
from fleetmon.sources.capture import capture_poll
from fleetmon.signals import baseline_event, device_signals, fold, signal_events
from storage.db import open_database
from storage.ingest import ingest_polls

V = "F_other_vendors"
TRAIN = f"{V}/huawei_ascend/gpustack_ai-server_atlas-800-training-server_model-9010_version-24.1.RC2"
INF = f"{V}/huawei_ascend/gpustack_ai-server_atlas-800-inference-server_model-3000_version-1.0.11-1.0.15"
AMD_STATIC = f"{V}/amd/dell-ai_amd_smi_static_json_root.json"
T0 = float(int(time.time()) // 60 * 60 - 7200)  # two hours ago, on a minute: captures lie in the past

AMD_METRIC: dict[str, Any] = {
    "gpu": 0,
    "asic": {"market_name": "AMD Instinct MI300X", "asic_serial": "0x1D2B3C4D5E6F7081"},
    "bus": {"bdf": "0000:0c:00.0"},
    "ecc": {"total_correctable_count": 12, "total_uncorrectable_count": 1, "total_deferred_count": 4},
    "ecc_blocks": {"UMC": {"correctable_count": 12, "uncorrectable_count": 1, "deferred_count": 4},
                   "GFX": {"correctable_count": 0, "uncorrectable_count": 0, "deferred_count": 0},
                   "SDMA": "N/A"},
    "temperature": {"edge": "N/A", "hotspot": {"value": 83, "unit": "C"}, "mem": {"value": 71, "unit": "C"}},
}
"""One GPU of ``amd-smi metric --json`` (the layout tests/sources/test_amd.py checks; no capture in the fixtures
has non-zero ECC blocks): an uncorrectable error and four deferred ones in UMC."""


def _read(shared: Path, rel: str) -> str:
    return (shared / rel).read_text(encoding="utf-8")


def _import(path: Path, db: Path, node: str, ts: float) -> None:
    os.utime(path, (ts, ts))  # the import takes the file's modification time as the capture time
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["import", str(path), "--db", str(db), "--node", node])
    assert rc == 0, err.getvalue()


def _events(db_path: Path, *kinds: str) -> list[dict[str, Any]]:
    db = open_database(str(db_path))
    try:
        marks = ", ".join("?" for _ in kinds)
        return [dict(r) for r in db.query(
            f"SELECT node, ts, kind, gpu_uuid, message, data FROM events WHERE kind IN ({marks}) ORDER BY ts, id",
            list(kinds))]
    finally:
        db.close()


def _judge(db_path: Path, now: float) -> list[Finding]:
    """One health pass over the store as the collector runs it: evaluate, judge against the ledger, store."""
    db = open_database(str(db_path))
    try:
        history = load_history(db, now, now - 86400)
        found = judge(db, history, engine.evaluate(history))
        store(db, found, now)
        return found
    finally:
        db.close()


def _poll(data: str | bytes, node: str, ts: float, group: str | None = None) -> NodePoll:
    c = formats.parse(data)
    return capture_poll(c.with_time(ts) if c.ts is None else c, node, f"file://{node}", ts, group=group)


def _ingest(db_path: Path, *polls: NodePoll) -> None:
    db = open_database(str(db_path))
    try:
        ingest_polls(db, list(polls))
    finally:
        db.close()


# -- signals from every fixture that has them ----------------------------------------------------------------

def test_signals_from_the_fixtures(shared_fixtures: Path) -> None:
    train = formats.parse(_read(shared_fixtures, f"{TRAIN}.txt") + _read(shared_fixtures, f"{TRAIN}_mapping.txt"))
    sig = [device_signals(x) for x in train.extra]
    assert [s["health"]["state"] for s in sig] == ["ok", "ok", "ok", "warning", "ok", "ok", "ok", "warning"]
    assert sig[3] == {"health": {"state": "warning", "text": "Warning", "codes": []}}
    assert sig[0] == {"health": {"state": "ok", "text": "OK", "codes": []}}
    inference = formats.parse(_read(shared_fixtures, f"{INF}.txt"))
    assert [device_signals(x) for x in inference.extra] == [{"health": {"state": "ok", "text": "OK", "codes": []}}] * 4
    static = formats.parse((shared_fixtures / AMD_STATIC).read_bytes())
    assert [device_signals(x) for x in static.extra] == [{"bad_pages_exceeded": False, "bad_page_threshold": 128}] * 8
    # AMD and Hygon name the sensor temp_c is (no fault signal); the others' tools say nothing of the kind
    # and give no signal (absent, never a healthy default).
    junction = {"temp_sensor": "junction"}
    for name, want in (("telegraf_mi100_rocm602.json", [junction] * 4),
                       ("virtualclient_metrics_8xMI300X.txt", [junction] * 8),
                       ("gpustack_amd-gpu-6.2.4-rocm-smi.json", [junction]),
                       ("issue_wandb-5449_rocm-smi-concise_8xMI250X-GCD_excerpt.txt", [{"temp_sensor": "edge"}] * 8)):
        c = formats.parse((shared_fixtures / V / "amd" / name).read_bytes())
        assert [device_signals(x) for x in c.extra] == want, name
    hygon = formats.parse((shared_fixtures / V / "hygon" / "issue_gpustack-2032_hy-smi-json_k100-ai_first-2-cards_DERIVED.json")
                          .read_bytes())
    assert [device_signals(x) for x in hygon.extra] == [junction] * 2
    none = 0
    for folder in ("intel", "moore_threads"):
        for path in sorted((shared_fixtures / V / folder).iterdir()):
            c = formats.parse(path.read_bytes())
            assert c.gpus and all(device_signals(x) == {} for x in c.extra), path.name
            none += 1
    assert none == 5


def test_signals_from_npu_smi_health_and_amd_smi_ecc_blocks(shared_fixtures: Path) -> None:
    # npu-smi info -t health after the table (its layout from Huawei's reference; the codes are ours).
    health = ("npu-smi info -i 0 -c 0 -t health\n        Health Status                  : Alarm\n"
              "        Error Code                     : 80E01809 80E18008\n"
              "        Error Information              : HBM multi-bit ECC\n")
    c = formats.parse(_read(shared_fixtures, f"{TRAIN}.txt") + _read(shared_fixtures, f"{TRAIN}_mapping.txt") + health)
    chip = next(i for i, x in enumerate(c.extra) if (x.get("npu_id"), x.get("chip_id")) == (0, 0))
    assert device_signals(c.extra[chip]) == {"health": {"state": "alarm", "text": "Alarm",
                                                        "codes": ["80E01809", "80E18008"], "info": "HBM multi-bit ECC"}}
    amd = formats.parse(json.dumps([AMD_METRIC]))
    assert device_signals(amd.extra[0]) == {
        "ecc_blocks": {"GFX": {"correctable": 0, "uncorrectable": 0, "deferred": 0},
                       "UMC": {"correctable": 12, "uncorrectable": 1, "deferred": 4}},
        "ecc_deferred": 4, "temp_sensor": "junction"}
    # xpu-smi dump's cache error columns (metric titles as Intel's XPU Manager documents them; no capture of
    # them is in the fixtures) are the CACHE block.
    dump = ("Timestamp, DeviceId, GPU Power (W), Cache Errors Correctable, Cache Errors Uncorrectable\n"
            "08:08:16.817,    0, 281.13, 3, 0\n08:08:17.817,    0, 282.00, 5, 1\n")
    xpu = formats.parse(dump)
    assert device_signals(xpu.extra[0]) == {"ecc_blocks": {"CACHE": {"correctable": 5, "uncorrectable": 1}}}


def test_signal_events_are_written_on_change_only() -> None:
    warn = {"health": {"state": "warning", "text": "Warning", "codes": ["80E01801"]}}
    ok = {"health": {"state": "ok", "text": "OK", "codes": []}}
    assert signal_events(None, ok) == []  # the healthy value at first sight is no event
    assert signal_events(ok, ok) == [] and signal_events(warn, warn) == []
    [(kind, message, data)] = signal_events(ok, warn)
    assert (kind, message) == ("device_health", "health Warning, error code 80E01801 (was OK)")
    assert data == {"signal": "health", "value": warn["health"], "previous": ok["health"]}
    assert signal_events(warn, {}) == []  # a signal the tool did not give this time changes nothing
    state = fold(None, kind, data, 100.0)
    assert state == {"values": warn, "since": {"health": 100.0}, "ts": 100.0}
    assert fold(state, "xid", data, 200.0) is None
    # The agent's baseline (all signals at first sight) folds whole; a later change keeps the other's since.
    kind0, message0, data0 = baseline_event({**ok, "temp_sensor": "junction"})
    assert (kind0, message0) == ("device_signals", "vendor signals: health OK, temperature from the junction sensor")
    state = fold(None, kind0, data0, 50.0)
    assert state == {"values": {**ok, "temp_sensor": "junction"}, "since": {"health": 50.0, "temp_sensor": 50.0},
                     "ts": 50.0}
    assert fold(state, kind, data, 60.0) == {"values": {**warn, "temp_sensor": "junction"},
                                             "since": {"health": 60.0, "temp_sensor": 50.0}, "ts": 60.0}
    # Correctable counts tick on without events; an uncorrectable or deferred one that moves is one.
    a = {"ecc_blocks": {"UMC": {"correctable": 1, "uncorrectable": 0, "deferred": 0}}}
    b = {"ecc_blocks": {"UMC": {"correctable": 9, "uncorrectable": 0, "deferred": 0}}}
    assert signal_events(None, a) == [] and signal_events(a, b) == []
    c = {"ecc_blocks": {"UMC": {"correctable": 9, "uncorrectable": 1, "deferred": 0}}}
    assert [(k, m) for k, m, _ in signal_events(b, c)] == [
        ("ecc_block", "ECC block UMC: 9 correctable, 1 uncorrectable, 0 deferred")]


# -- the capture path: fleetmon import ----------------------------------------------------------------------

def test_an_ascend_warning_is_one_event_and_a_finding_until_a_later_ok(shared_fixtures: Path, tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    text = _read(shared_fixtures, f"{TRAIN}.txt") + _read(shared_fixtures, f"{TRAIN}_mapping.txt")
    capture = tmp_path / "npu-smi.txt"
    capture.write_text(text, encoding="utf-8")
    for k in range(3):  # the same capture three times: polled every 5 minutes, nothing changed
        _import(capture, db, "atlas", T0 + 300 * k)
    events = _events(db, "device_health")
    assert [(e["message"], e["ts"]) for e in events] == [("health Warning", T0)] * 2
    warned = sorted(e["gpu_uuid"] for e in events)

    found = [f for f in _judge(db, T0 + 700) if f.kind == "device-health"]
    assert sorted(f.gpu_uuid for f in found) == warned
    f = found[0]
    assert (f.severity, f.state, f.first_seen) == ("warning", "open", T0)
    assert (f.evidence["state"], f.evidence["text"], f.evidence["codes"], f.evidence["vendor"]) == (
        "warning", "Warning", [], "huawei")
    assert {g.summary.split(": ", 1)[1] for g in found} == {"health Warning"}
    assert sorted(g.gpu_index for g in found) == [3, 7]

    # Chip 3 says OK again: one event, and its finding resolves on that evidence; chip 7's stays.
    first = text.index("Warning")
    capture.write_text(text[:first] + "OK     " + text[first + len("Warning"):], encoding="utf-8")
    _import(capture, db, "atlas", T0 + 1200)
    later = _events(db, "device_health")[2:]
    assert [e["message"] for e in later] == ["health OK (was Warning)"]
    judged = {f.gpu_index: f for f in _judge(db, T0 + 1500) if f.kind == "device-health"}
    assert (judged[3].state, judged[3].evidence["lifecycle"]["resolved"]["by"]) == ("resolved", "data")
    assert judged[7].state == "open"
    # No data at all for a day: chip 7's Warning is not forgotten (missing data is not health).
    judged = {f.gpu_index: f for f in _judge(db, T0 + 1500 + 86400) if f.kind == "device-health"}
    assert judged[7].state == "open" and judged[7].first_seen == T0


def test_amd_ecc_per_block_deferred_and_bad_pages(shared_fixtures: Path, tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    metric = json.dumps([AMD_METRIC])
    _ingest(db, _poll(metric, "mi300", T0))
    _ingest(db, _poll(metric, "mi300", T0 + 60))  # the same again: no event
    assert [(e["kind"], e["message"]) for e in _events(db, "ecc_block", "ecc_deferred")] == [
        ("ecc_block", "ECC block UMC: 12 correctable, 1 uncorrectable, 4 deferred"),
        ("ecc_deferred", "4 deferred ECC error(s)")]
    found = {f.kind: f for f in _judge(db, T0 + 120)}
    block = found["ecc-block"]
    assert (block.severity, block.state, block.first_seen, block.key.endswith("|UMC")) == (
        "critical", "open", T0, True)
    assert block.summary.endswith("1 uncorrectable ECC error(s) in block UMC")
    assert (block.evidence["block"], block.evidence["uncorrectable"], block.evidence["deferred"]) == ("UMC", 1, 4)
    assert block.evidence["blocks"] == {"UMC": {"correctable": 12, "uncorrectable": 1, "deferred": 4}}
    deferred = found["ecc-deferred"]
    assert (deferred.severity, deferred.evidence["deferred"], deferred.evidence["blocks"]) == ("warning", 4, {"UMC": 4})
    assert "ecc-uncorrectable" in found  # the card's total counter is judged as NVIDIA's is

    # A reset cleared the deferred errors: the warning resolves on that reading; the block's error stays
    # (an event: an operator resolves it) and a second one in UMC is one more event.
    cleared = json.loads(metric)
    cleared[0]["ecc"]["total_deferred_count"] = 0
    cleared[0]["ecc_blocks"]["UMC"] = {"correctable_count": 12, "uncorrectable_count": 2, "deferred_count": 0}
    _ingest(db, _poll(json.dumps(cleared), "mi300", T0 + 600))
    assert [e["message"] for e in _events(db, "ecc_block", "ecc_deferred")][2:] == [
        "ECC block UMC: 12 correctable, 2 uncorrectable, 0 deferred", "0 deferred ECC error(s) (was 4)"]
    _ingest(db, _poll(metric, "mi300", T0 + 300))  # an older capture imported late: history, not the state
    assert len(_events(db, "ecc_block", "ecc_deferred")) == 4
    found = {f.kind: f for f in _judge(db, T0 + 700)}
    assert found["ecc-deferred"].state == "resolved"
    assert (found["ecc-block"].state, found["ecc-block"].evidence["uncorrectable"]) == ("open", 2)

    # amd-smi static's bad_page_threshold_exceeded (the fixture's GPU 0 flipped to True).
    doc = (shared_fixtures / AMD_STATIC).read_text(encoding="utf-8")
    at = doc.index('"bad_page_threshold_exceeded": "False"')
    bad = doc[:at] + '"bad_page_threshold_exceeded": "True"' + doc[at + len('"bad_page_threshold_exceeded": "False"'):]
    _ingest(db, _poll(doc, "mi300x-8", T0 + 60), _poll(bad, "mi300x-8", T0 + 300 + 60))
    assert [e["message"] for e in _events(db, "bad_pages")] == [
        "bad-page threshold exceeded: the driver retired more pages than its threshold"]
    [f] = [f for f in _judge(db, T0 + 800) if f.kind == "bad-pages-exceeded"]
    assert (f.severity, f.node, f.gpu_index, f.evidence["threshold"]) == ("critical", "mi300x-8", 0, 128)


# -- the agent path: the sampler and Backend.extra ------------------------------------------------------------

class _VendorReadings:
    """A backend double at the device boundary: the simulated NVML node's devices, with the vendor readings
    (``Backend.extra``) the test sets, as an npu-smi or amd-smi backend would return them."""

    name = "npu-smi-double"
    vendor = "huawei"

    def __init__(self, session: Any) -> None:
        self._session = session
        self.readings: dict[int, dict[str, Any]] = {}

    def extra(self, index: int) -> dict[str, Any]:
        return dict(self.readings.get(index, {}))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


def test_the_sampler_writes_signal_events_on_change_and_the_store_keeps_them(tmp_path: Path) -> None:
    clock = [T0]
    nv = SimulatedNvml("healthy-a100", clock=lambda: clock[0], start=T0 - 600, seed=3)
    session = open_nvml(nv, inventory_wait_s=2.0)
    backend = _VendorReadings(session)
    buffer = Buffer(tmp_path / "buffer.db")
    try:
        sampler = Sampler(backend, buffer, interval_s=5.0, clock=lambda: clock[0])  # type: ignore[arg-type]
        backend.readings = {i: {"health": "OK", "error_codes": []} for i in session.indices()}
        backend.readings[2] = {"health": "Warning", "error_codes": ["80E01801"], "error_info": "HBM ECC"}
        for _ in range(6):  # 30 s of rounds, nothing changes after the first
            clock[0] += 5
            sampler.sample_once()
        backend.readings[2] = {"health": "OK", "error_codes": []}
        for _ in range(3):
            clock[0] += 5
            sampler.sample_once()
        events = [Event.from_dict(e) for e in buffer.events_after(0)]
        inventory = [session.inventory(i) for i in session.indices()]
        samples, _ = sampler.snapshot()
    finally:
        buffer.close()
        session.close()
    health = [e for e in events if e.kind == "device_health"]
    uuid = inventory[2].uuid
    assert [(e.uuid, e.message, e.ts) for e in health] == [
        (uuid, "GPU 2: health Warning, error code 80E01801: HBM ECC", T0 + 5),
        (uuid, "GPU 2: health OK (was Warning)", T0 + 35)]
    # One baseline per device at its first reading (the store learns the healthy ones too), nothing more.
    baseline = [e for e in events if e.kind == "device_signals"]
    assert [(e.uuid, e.ts) for e in baseline] == [
        (g.uuid, T0 + 5) for g in inventory]
    assert baseline[0].message == "GPU 0: vendor signals: health OK"
    assert len(events) == len(inventory) + 2

    # Through the store: the first events open the finding, the later one resolves it.
    db = tmp_path / "fleet.db"
    base = NodePoll(node="npu-1", url="http://npu-1", ts=T0 + 10, ok=True, gpus=inventory, latest=samples)
    _ingest(db, replace(base, events=[e for e in events if e.ts <= T0 + 5]))
    store_ = open_database(str(db))
    try:
        history = load_history(store_, T0 + 20, T0 - 3600)
    finally:
        store_.close()
    assert [g.signal("health")["state"] for g in sorted(history.gpus, key=lambda g: g.index or 0)] == [
        "ok", "ok", "warning", "ok", "ok", "ok", "ok", "ok"]
    [f] = [f for f in _judge(db, T0 + 20) if f.kind == "device-health"]
    assert (f.gpu_uuid, f.severity, f.evidence["codes"], f.evidence["info"], f.first_seen) == (
        uuid, "warning", ["80E01801"], "HBM ECC", T0 + 5)
    # 80E01801 is "restart the job" in Huawei's fault-code table; an unknown code would be shown as printed.
    assert f.evidence["handling"] == {"80E01801": "RestartBusiness"}
    assert f.action.endswith("Huawei's handling: 80E01801: restart the job on the chip")
    _ingest(db, replace(base, ts=T0 + 40, events=[e for e in events if e.ts > T0 + 5]))
    [f] = [f for f in _judge(db, T0 + 50) if f.kind == "device-health"]
    assert f.state == "resolved"


# -- a mixed fleet: nothing NVIDIA-only fires on the others; versions judged per vendor ----------------------

MIXED = {
    "nv-a100": "A_nvidia_smi_xml/k8s-test-infra_hw_qx-a100.xml",
    "amd-mi100": f"{V}/amd/telegraf_mi100_rocm602.json",
    "amd-mi300x": AMD_STATIC,
    "hygon-k100": f"{V}/hygon/issue_gpustack-2032_hy-smi-json_k100-ai_first-2-cards_DERIVED.json",
    "ascend-910": f"{TRAIN}.txt",
    "gaudi-3": f"{V}/intel/all-smi_hl-smi_2xHL-325L_excerpt.csv",
    "mtt-s5000": f"{V}/moore_threads/issue_vllm-omni-2337_mthreads-gmi-2.3.2_mtt-s5000_excerpt.txt",
    "mi300x-metrics": f"{V}/amd/virtualclient_metrics_8xMI300X.txt",  # amd-smi metric text: no model name
}


def test_a_mixed_fleet_gets_only_its_own_findings(shared_fixtures: Path, tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    data = {node: (shared_fixtures / rel).read_bytes() for node, rel in MIXED.items()}
    data["ascend-910"] += (shared_fixtures / f"{TRAIN}_mapping.txt").read_bytes()
    for k in range(3):
        _ingest(db, *[_poll(d, node, T0 + 300 * k) for node, d in data.items()])
    found = [f for f in _judge(db, T0 + 700) if f.is_open]
    by_node: dict[str, set[str]] = {}
    for f in found:
        by_node.setdefault(f.node, set()).add(f.kind)
    assert by_node.get("ascend-910") == {"device-health"}  # chips 3 and 7; the redacted name is known by -m
    assert sorted(f.gpu_index for f in found if f.kind == "device-health") == [3, 7]
    for node in ("amd-mi100", "amd-mi300x", "hygon-k100", "gaudi-3", "mtt-s5000"):
        assert node not in by_node, (node, by_node.get(node))
    [unnamed] = [f for f in found if f.node == "mi300x-metrics"]
    assert (unnamed.kind, unnamed.severity, unnamed.summary) == (
        "derating", "info", "mi300x-metrics: 8x card(s) whose source names no model (derating unknown)")
    # Each named model resolves through the spec catalog (derating and intake have its figures).
    store_ = open_database(str(db))
    try:
        history = load_history(store_, T0 + 700, T0 - 3600)
    finally:
        store_.close()
    models = {g.node: (g.name, specs.lookup(g.name, g.inv("memory_total_mib"))) for g in history.gpus}
    assert models["mi300x-metrics"] == ("unknown", None)
    # Derating judges them against their spec: MI100's 290 W limit of a 300 W TDP, its memory of 32 GB.
    from fleetmon.health.rules.derating import daily_ratios
    mi100 = [r for r in daily_ratios(history) if r["uuid"] in {g.uuid for g in history.gpus if g.node == "amd-mi100"}]
    assert mi100 and {(r["known_model"], r["spec_origin"], r["power_limit_ratio"], r["memory_ratio"]) for r in mi100} == {
        (True, "catalog", 0.9667, 0.9995)}
    assert {n: s.vendor for n, (_m, s) in models.items() if s is not None} == {
        "nv-a100": "nvidia", "amd-mi100": "amd", "amd-mi300x": "amd", "hygon-k100": "hygon",
        "ascend-910": "huawei", "gaudi-3": "intel", "mtt-s5000": "mthreads"}


def _versions(node: str, vendor: str, driver: str, runtime: str | None, firmware: str | None = None,
              group: str | None = "pool") -> dict[str, Any]:
    return {"name": node, "group": group, "driver_version": driver, "vendor": vendor, "runtime_version": runtime,
            "firmware_version": firmware, "cuda_driver_version": runtime if vendor == "nvidia" else None}


def test_versions_are_judged_per_vendor_through_the_store(shared_fixtures: Path, tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    polls = []
    for node, rel, driver, runtime in (  # one capture per node: two nodes may not share cards
            ("nv-1", "A_nvidia_smi_xml/k8s-test-infra_hw_qx-a100.xml", "570.148.08", "12.8"),
            ("nv-2", "A_nvidia_smi_xml/k8s-test-infra_hw_qx-b200.xml", "570.148.08", "12.8"),
            ("amd-1", f"{V}/amd/telegraf_mi100_rocm602.json", "6.3.6", "6.2.4"),
            ("amd-2", f"{V}/amd/telegraf_rx6700xt_rocm612.json", "6.3.6", "6.2.4"),
            ("amd-3", AMD_STATIC, "6.3.6", "6.1.0")):
        p = _poll((shared_fixtures / rel).read_bytes(), node, T0, group="pool")
        assert p.info is not None
        values = dict(p.info.values)
        values.update(driver_version=driver, runtime_version=runtime)
        if node.startswith("nv-"):
            values["cuda_driver_version"] = runtime
        polls.append(replace(p, info=replace(p.info, values=values)))
    _ingest(db, *polls)
    found = [f for f in _judge(db, T0 + 60) if f.kind == "driver-mismatch"]
    # Before, one group was one driver: the three AMD nodes' 6.3.6 outvoted NVIDIA's 570 on the NVIDIA nodes.
    assert [(f.node, f.severity, f.evidence["field"], f.evidence["version"], f.evidence["expected"],
             f.evidence["vendor"]) for f in found] == [("amd-3", "warning", "runtime", "6.1.0", "6.2.4", "amd")]
    assert found[0].summary == "amd-3: ROCm 6.1.0, expected 6.2.4 (majority of group pool (amd nodes))"


def test_declared_versions_and_firmware_per_vendor_and_model() -> None:
    nodes = [_versions("nv-1", "nvidia", "570.148.08", "12.8"), _versions("nv-2", "nvidia", "570.148.08", "12.8"),
             _versions("nv-3", "nvidia", "550.54.15", "12.4"),
             _versions("asc-1", "huawei", "24.1.RC2", "8.0.RC3", "7.1.0.7.220"),
             _versions("asc-2", "huawei", "24.1.RC2", "8.0.RC3", "7.1.0.7.220"),
             _versions("asc-3", "huawei", "24.1.RC2", "8.0.RC3", "7.1.0.5.220")]
    history = FleetHistory.from_rows(T0, T0 - 3600, nodes=nodes, groups=[GroupExpect("pool", expected_driver="570.148.08")])
    found = {f.node: f for f in check_driver_versions(history)}
    assert sorted(found) == ["asc-3", "nv-3"]
    # The group's expected_driver is the NVIDIA nodes' in a group of several vendors, never the Ascend nodes'.
    assert (found["nv-3"].evidence["basis"], found["nv-3"].evidence["expected"]) == ("expected", "570.148.08")
    asc = found["asc-3"].evidence
    assert (asc["field"], asc["version"], asc["expected"], asc["basis"], asc["vendor"]) == (
        "firmware", "7.1.0.5.220", "7.1.0.7.220", "majority", "huawei")


def test_temperatures_against_each_vendors_limits(shared_fixtures: Path, tmp_path: Path) -> None:
    """A junction sensor without limits (rocm-smi) is judged by the junction defaults; tool limits win."""
    db = tmp_path / "fleet.db"
    doc = json.loads((shared_fixtures / V / "amd" / "telegraf_mi100_rocm602.json").read_text(encoding="utf-8"))
    polls = []
    for k, temp in enumerate((90.0, 91.0, 92.0, 93.0, 97.0, 98.0, 99.0, 98.0)):
        for card in [v for key, v in doc.items() if key.startswith("card")]:
            card["Temperature (Sensor junction) (C)"] = f"{temp:.1f}"
        polls.append(_poll(json.dumps(doc), "mi100", T0 + 60 * k))
    _ingest(db, *polls[:4])
    # 90-93 °C on the junction: under 95 (an edge or NVIDIA sensor would warn from 85).
    assert [f for f in _judge(db, T0 + 240) if f.kind == "temperature-high"] == []
    _ingest(db, *polls[4:])
    found = [f for f in _judge(db, T0 + 480) if f.kind == "temperature-high"]
    assert len(found) == 4 and {f.node for f in found} == {"mi100"}
    f = found[0]
    assert (f.severity, f.evidence["limit_c"], f.evidence["critical_c"], f.evidence["sensor"],
            f.evidence["max_temp_c"]) == ("warning", 95.0, 105.0, "junction", 99.0)
    # amd-smi static gives the hotspot limits (100 / 110 °C): they are the card's, less the margin.
    static = formats.parse((shared_fixtures / AMD_STATIC).read_bytes())
    assert {(g.values["temp_slowdown_c"], g.values["temp_shutdown_c"]) for g in static.gpus} == {(100.0, 110.0)}


def test_a_vanished_npu_chip_is_missing(shared_fixtures: Path, tmp_path: Path) -> None:
    """gpu-missing works for an Ascend chip's node-scoped id (npu-smi has no UUID)."""
    db = tmp_path / "fleet.db"
    text = _read(shared_fixtures, f"{TRAIN}.txt")
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("| 6 "))
    without = "".join(lines[:at] + lines[at + 3:])  # NPU 6's two rows and its rule
    _ingest(db, _poll(text, "atlas", T0))
    gone = formats.parse(without)
    assert len(gone.gpus) == 7
    _ingest(db, *[_poll(without, "atlas", T0 + 60 * k) for k in range(1, 9)])
    [f] = [f for f in _judge(db, T0 + 540) if f.kind == "gpu-missing"]
    assert (f.severity, f.node, f.gpu_uuid) == ("critical", "atlas", "NPU-0000:42:00.0-6-0/atlas")
    # Besides: the removal as an inventory change, the chips' Warning, and "Ascend xxx" (the table's redacted
    # name; npu-smi info -m names it) unknown to the spec catalog. Nothing NVIDIA-only.
    assert {f.kind for f in _judge(db, T0 + 540) if f.is_open} == {
        "gpu-missing", "inventory-change", "device-health", "derating"}


def test_card_firmware_against_its_models_majority(shared_fixtures: Path, tmp_path: Path) -> None:
    """npu-smi -t board's Firmware Version is the chip's firmware_version; a chip off its model's majority is told."""
    db = tmp_path / "fleet.db"
    boards = "".join(f"npu-smi info -t board -i {n}\n        NPU ID                         : {n}\n"
                     f"        Firmware Version               : {fw}\n        Compatibility                  : {ok}\n\n"
                     for n, fw, ok in ((0, "7.1.0.7.220", "OK"), (1, "7.1.0.7.220", "OK"), (2, "7.1.0.7.220", "OK"),
                                       (3, "7.1.0.5.220", "NOK")))
    text = _read(shared_fixtures, f"{TRAIN}.txt") + _read(shared_fixtures, f"{TRAIN}_mapping.txt") + boards
    c = formats.parse(text)
    assert [g.values.get("firmware_version") for g in c.gpus] == ["7.1.0.7.220"] * 3 + ["7.1.0.5.220"] + [None] * 4
    _ingest(db, _poll(text, "atlas", T0))
    assert [(e["message"]) for e in _events(db, "version_compat")] == [
        "driver and firmware do not match (npu-smi Compatibility NOK)"]
    found = {f.key.rsplit("|", 1)[1]: f for f in _judge(db, T0 + 60) if f.kind == "vbios-mismatch"}
    assert sorted(found) == ["compatibility", "firmware"]
    f = found["compatibility"]
    assert (f.gpu_index, f.severity, f.summary, f.evidence["driver"], f.evidence["firmware"]) == (
        3, "warning", "atlas gpu3: driver and firmware do not match (npu-smi Compatibility NOK)", "24.1.RC2",
        "7.1.0.5.220")
    f = found["firmware"]
    assert (f.gpu_index, f.severity, f.summary) == (3, "warning", "atlas gpu3: firmware 7.1.0.5.220, peers run 7.1.0.7.220")
    assert (f.evidence["field"], f.evidence["expected"], f.evidence["peers"], f.evidence["model"]) == (
        "firmware", "7.1.0.7.220", {"7.1.0.5.220": 1, "7.1.0.7.220": 3}, "Ascend 910A")


def test_a_lost_npu_chip_is_gpu_lost(shared_fixtures: Path, tmp_path: Path) -> None:
    """gpu-lost works on other vendors' ids: an agent backend's gpu_lost event for an Ascend chip."""
    db = tmp_path / "fleet.db"
    poll = _poll(_read(shared_fixtures, f"{TRAIN}.txt"), "atlas", T0)
    chip = poll.gpus[5]
    lost = Event(seq=1, ts=T0 + 30, kind="gpu_lost", uuid=chip.uuid, pci_bus_id=chip.values.get("pci_bus_id"),
                 message="GPU 5 (Ascend xxx) left enumeration")
    _ingest(db, poll, replace(poll, ts=T0 + 60, events=[lost]))
    [f] = [f for f in _judge(db, T0 + 120) if f.kind == "gpu-lost"]
    assert (f.severity, f.node, f.gpu_uuid, f.gpu_index) == ("critical", "atlas", chip.uuid, 5)
    assert chip.uuid == "NPU-0000:82:00.0-5-0/atlas"


def test_the_fleet_file_declares_a_runtime_and_firmware(tmp_path: Path) -> None:
    """[[group]] expected_runtime / expected_firmware: parsed, written back, and judged for a one-vendor group."""
    from fleetmon.errors import ConfigError
    from fleetmon.fleet import load_fleet
    from fleetmon.fleet.write import render_fleet_toml

    path = tmp_path / "fleet.toml"
    path.write_text('[[group]]\nname = "npu"\nexpected_driver = "24.1.RC2"\nexpected_runtime = "8.0.RC3"\n'
                    'expected_firmware = "7.1.0.7.220"\n\n[[node]]\nname = "asc-1"\nurl = "http://asc-1:9414"\n'
                    'group = "npu"\n', encoding="utf-8")
    fleet = load_fleet(path)
    group = fleet.groups["npu"]
    assert (group.expected_runtime, group.expected_firmware) == ("8.0.RC3", "7.1.0.7.220")
    text = render_fleet_toml([{"name": "asc-1", "url": "http://asc-1:9414", "group": "npu"}], groups=fleet.groups)
    assert 'expected_runtime = "8.0.RC3"\nexpected_firmware = "7.1.0.7.220"' in text
    bad = tmp_path / "bad.toml"
    bad.write_text('[[group]]\nname = "npu"\nexpected_runtime = 8.0\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="expected_runtime"):
        load_fleet(bad)

    nodes = [_versions("asc-1", "huawei", "24.1.RC2", "8.0.RC2", "7.1.0.7.220", group="npu"),
             _versions("asc-2", "huawei", "24.1.RC2", "8.0.RC3", "7.1.0.5.220", group="npu")]
    history = FleetHistory.from_rows(T0, T0 - 3600, nodes=nodes, groups=fleet.groups)
    found = {f.node: f.evidence for f in check_driver_versions(history)}
    assert {n: (e["field"], e["version"], e["expected"], e["basis"]) for n, e in found.items()} == {
        "asc-1": ("runtime", "8.0.RC2", "8.0.RC3", "expected"),
        "asc-2": ("firmware", "7.1.0.5.220", "7.1.0.7.220", "expected")}


def test_signals_as_of_leave_out_a_state_that_began_later() -> None:
    from fleetmon.signals import as_of

    state = {"values": {"health": {"state": "warning"}, "ecc_deferred": 4}, "since": {"health": 2000.0,
                                                                                      "ecc_deferred": 500.0},
             "ts": 2500.0}
    assert as_of(state, 3000.0) is state  # everything began before: as stored
    earlier = as_of(state, 1000.0)
    assert earlier["values"] == {"ecc_deferred": 4} and earlier["since"] == {"ecc_deferred": 500.0}
    assert as_of(state, 100.0)["values"] == {}


def test_a_report_as_of_an_earlier_time_does_not_see_a_later_warning(shared_fixtures: Path, tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    capture = tmp_path / "npu-smi.txt"
    capture.write_text(_read(shared_fixtures, f"{TRAIN}.txt") + _read(shared_fixtures, f"{TRAIN}_mapping.txt"),
                       encoding="utf-8")
    _import(capture, db, "atlas", T0)
    store_ = open_database(str(db))
    try:
        def kinds(now: float) -> list[str]:
            return sorted(f.kind for f in engine.evaluate(load_history(store_, now, now - 7 * 86400))
                          if f.kind == "device-health")

        assert kinds(T0 - 2 * 86400) == []  # two days before the capture: its Warning did not exist yet
        assert kinds(T0 + 700) == ["device-health", "device-health"]
    finally:
        store_.close()
