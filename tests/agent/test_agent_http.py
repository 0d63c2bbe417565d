"""The agent over real HTTP on 127.0.0.1, in-process, with the simulated NVML.

Every field the issue lists, per scenario (healthy A100, GeForce, V100 with
retired pages, A100 with remapped rows, lost GPU, hung GPU, a GPU that leaves
enumeration), and the sequence cursor across restarts. A fake clock drives
both the sampler and the simulation, so minutes pass without sleeping.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from fleetmon.records import WIRE_SCHEMA
from fleetmon.agent.buffer import Buffer
from fleetmon.agent.main import RunningAgent, start_agent
from fleetmon.agent.nvml import SAMPLE_FIELDS
from fleetmon.fields import INVENTORY_FIELDS, NODE_FIELDS
from fleetmon.records import Event, GpuMinute
from fleetmon.sim.nvml import SimulatedNvml

T0 = 1_800_000_000.0  # a multiple of 60: minute boundaries are easy to reason about


class FakeClock:
    """Wall clock for the sampler and the simulation; moves only when told."""

    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


def get(agent: RunningAgent, path: str, token: str | None = None) -> tuple[int, Any]:
    req = urllib.request.Request(agent.url + path)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def run_rounds(agent: RunningAgent, clock: FakeClock, n: int, step: float = 5.0) -> None:
    for _ in range(n):
        clock.advance(step)
        agent.sampler.sample_once()


@pytest.fixture
def make_agent(tmp_path):
    """Start in-process agents on simulated scenarios; all closed at the end."""
    agents: list[RunningAgent] = []

    def make(scenario: str = "healthy", *, clock: Any = None, buffer: Path | Buffer | None = None,
             hang_s: float | None = None, loop: bool = False, nvml: SimulatedNvml | None = None,
             **kw: Any) -> RunningAgent:
        clock = clock or FakeClock()
        if nvml is None:
            nvml = SimulatedNvml(scenario, clock=clock, hang_s=hang_s)
        kw.setdefault("inventory_wait_s", 0.5)
        agent = start_agent(nvml, buffer=buffer or tmp_path / f"{scenario}.db", clock=clock, loop=loop,
                            watch_xid=False, simulate=True, poll_interval_s=0.05, **kw)
        agents.append(agent)
        return agent

    yield make
    for a in agents:
        a.close()


def _statuses(record: dict[str, Any]) -> set[str]:
    return set(record["status"].values())


# ---------------------------------------------------------------------------
# Coverage: every field the issue lists
# ---------------------------------------------------------------------------

# The issue's words -> fleetmon names, so a missing field is named in the failure.
ISSUE_NODE = {"hostname": "hostname", "driver version": "driver_version", "NVML version": "nvml_version",
              "CUDA driver version": "cuda_driver_version", "kernel": "kernel", "OS release": "os_release",
              "GPU count": "gpu_count",
              # issue 23: the vendor-neutral versions
              "vendor": "vendor", "runtime version": "runtime_version", "firmware version": "firmware_version"}
ISSUE_INVENTORY = {
    "index": "index", "name": "name", "UUID": "uuid", "serial": "serial", "board part number": "board_part_number",
    "VBIOS": "vbios", "InfoROM image": "inforom_image", "InfoROM OEM": "inforom_oem", "InfoROM ECC": "inforom_ecc",
    "InfoROM power": "inforom_power", "PCI bus id": "pci_bus_id", "PCI device id": "pci_device_id",
    "PCI subsystem id": "pci_subsystem_id", "architecture": "architecture",
    "compute capability": "compute_capability", "memory total": "memory_total_mib",
    "power limit default": "power_default_w", "power limit min": "power_min_w", "power limit max": "power_max_w",
    "power limit enforced": "power_enforced_w", "max SM clock": "max_sm_clock_mhz",
    "max memory clock": "max_mem_clock_mhz", "max PCIe gen (link)": "pcie_max_gen",
    "max PCIe width (link)": "pcie_max_width", "max PCIe gen (GPU)": "pcie_gpu_max_gen",
    "max PCIe width (GPU)": "pcie_gpu_max_width", "ECC mode current": "ecc_mode_current",
    "ECC mode pending": "ecc_mode_pending", "persistence mode": "persistence_mode",
    "MIG mode current": "mig_mode_current", "MIG mode pending": "mig_mode_pending",
    # beyond the issue's list: the thresholds the health rules compare temperatures with
    "slowdown temperature": "temp_slowdown_c", "shutdown temperature": "temp_shutdown_c",
    # issue 23: the vendor, a device firmware beside the VBIOS, the card a chip sits on
    "vendor": "vendor", "firmware version": "firmware_version", "card": "card_id",
}
ISSUE_TELEMETRY = {
    "temperature": "temp_c", "memory temperature": "mem_temp_c", "fan speeds": "fan_pct", "power draw": "power_w",
    "energy counter": "energy_mj", "enforced power limit": "power_limit_w", "SM clock": "sm_clock_mhz",
    "memory clock": "mem_clock_mhz", "graphics clock": "gr_clock_mhz", "GPU utilization": "util_gpu_pct",
    "memory utilization": "util_mem_pct", "memory used": "mem_used_mib", "memory free": "mem_free_mib",
    "performance state": "pstate", "clocks-event reasons": "throttle_mask",
    "ECC corrected volatile": "ecc_corr_vol", "ECC uncorrected volatile": "ecc_unc_vol",
    "ECC corrected aggregate": "ecc_corr_agg", "ECC uncorrected aggregate": "ecc_unc_agg",
    "retired pages single-bit": "retired_sbe", "retired pages double-bit": "retired_dbe",
    "retired pages pending": "retired_pending", "remapped rows correctable": "remap_corr",
    "remapped rows uncorrectable": "remap_unc", "remapped rows pending": "remap_pending",
    "remapped rows failure": "remap_failure", "PCIe generation": "pcie_gen", "PCIe width": "pcie_width",
    "PCIe replay counter": "pcie_replay", "PCIe TX throughput": "pcie_tx_kbs", "PCIe RX throughput": "pcie_rx_kbs",
}
ISSUE12_TELEMETRY = {  # dcgm-exporter's remaining default counters (issue 12, export-only)
    "encoder utilization": "enc_util_pct", "decoder utilization": "dec_util_pct",
    "framebuffer reserved": "mem_reserved_mib", "NVLink bandwidth total": "nvlink_kib",
    "vGPU license status": "vgpu_license", "graphics engine active": "gr_engine_active",
    "tensor pipe active": "tensor_active", "DRAM active": "dram_active",
}


def test_issue_field_lists_match_the_catalogs():
    assert set(ISSUE_NODE.values()) == set(NODE_FIELDS)
    assert set(ISSUE_INVENTORY.values()) == set(INVENTORY_FIELDS)
    assert set(ISSUE_TELEMETRY.values()) | set(ISSUE12_TELEMETRY.values()) == set(SAMPLE_FIELDS)


def test_healthy_a100_serves_every_listed_field(make_agent):
    agent = make_agent("healthy-a100")
    code, doc = get(agent, "/v1/node")
    assert code == 200 and doc["schema"] == WIRE_SCHEMA and doc["buffer_id"] == agent.buffer.buffer_id
    node = doc["node"]
    for words, key in ISSUE_NODE.items():
        if key == "firmware_version":  # an NVIDIA node has none besides each card's VBIOS and InfoROM
            assert node["values"][key] is None and node["status"] == {key: "unsupported"}
            continue
        assert node["values"].get(key) is not None, f"node {words} ({key}) missing"
    assert node["values"]["gpu_count"] == 8 and node["values"]["vendor"] == "nvidia"
    assert node["values"]["runtime_version"] == node["values"]["cuda_driver_version"]
    assert len(doc["gpus"]) == 8
    # An A100 SXM has no fans, retires no pages (it remaps rows), has no power InfoROM object,
    # and NVML has no call for the GPU-side maximum PCIe width.
    expected_unsupported_inv = {"inforom_power", "pcie_gpu_max_width", "firmware_version", "card_id"}
    expected_unsupported_sample = {"fan_pct", "retired_sbe", "retired_dbe", "retired_pending"}
    for gpu in doc["gpus"]:
        assert gpu["state"] == "ok" and gpu["uuid"].startswith("GPU-")
        for words, key in ISSUE_INVENTORY.items():
            assert key in gpu["values"], f"inventory {words} ({key}) missing"
            if key in expected_unsupported_inv:
                assert gpu["status"][key] == "unsupported"
            else:
                assert gpu["values"][key] is not None, f"inventory {words} ({key}) has no value: {gpu['status']}"
        assert gpu["values"]["ecc_mode_current"] is True and gpu["values"]["mig_mode_current"] is False
        assert gpu["values"]["architecture"] == "ampere" and gpu["values"]["compute_capability"] == "8.0"
        assert gpu["values"]["pci_bus_id"].startswith("0000:")
    code, latest = get(agent, "/v1/latest")
    assert code == 200 and len(latest["samples"]) == 8
    for s in latest["samples"]:
        assert s["state"] == "ok"
        for words, key in ISSUE_TELEMETRY.items():
            assert key in s["values"], f"telemetry {words} ({key}) missing"
            if key in expected_unsupported_sample:
                assert s["status"][key] == "unsupported"
            else:
                assert s["values"][key] is not None, f"telemetry {words} ({key}) has no value: {s['status']}"
        assert s["values"]["ecc_unc_vol"] == 0 and s["values"]["remap_failure"] == 0
        assert 0 < s["values"]["power_w"] <= s["values"]["power_limit_w"]
        assert s["values"]["mem_temp_c"] > 0


def test_geforce_reports_unsupported_never_failed(make_agent):
    agent = make_agent("geforce")
    _, doc = get(agent, "/v1/node")
    _, latest = get(agent, "/v1/latest")
    for gpu in doc["gpus"]:
        assert gpu["values"]["serial"] is None and gpu["status"]["serial"] == "unsupported"
        assert gpu["status"]["ecc_mode_current"] == "unsupported"
        assert _statuses(gpu) == {"unsupported"}
    for s in latest["samples"]:
        for key in ("ecc_corr_vol", "ecc_unc_vol", "ecc_corr_agg", "ecc_unc_agg", "retired_sbe", "remap_unc",
                    "mem_temp_c"):
            assert s["values"][key] is None and s["status"][key] == "unsupported"
        assert _statuses(s) == {"unsupported"}, "a GeForce card must not show failures"
        assert s["values"]["fan_pct"] > 0 and len(s["values"]["fan_speeds_pct"]) == 2
    _, health = get(agent, "/v1/health")
    assert health["sampler"]["failing"] == [] and health["sampler"]["hung_gpus"] == []


def test_v100_retired_pages(make_agent):
    agent = make_agent("v100-retired")
    _, latest = get(agent, "/v1/latest")
    by_index = {s["index"]: s["values"] for s in latest["samples"]}
    assert (by_index[1]["retired_sbe"], by_index[1]["retired_dbe"], by_index[1]["retired_pending"]) == (50, 8, 1)
    assert (by_index[0]["retired_sbe"], by_index[0]["retired_dbe"], by_index[0]["retired_pending"]) == (0, 0, 0)
    assert latest["samples"][0]["status"]["remap_corr"] == "unsupported"  # Volta retires pages, remaps no rows


def test_a100_remapped_rows(make_agent):
    agent = make_agent("a100-remap")
    _, latest = get(agent, "/v1/latest")
    v = {s["index"]: s["values"] for s in latest["samples"]}
    assert (v[2]["remap_corr"], v[2]["remap_unc"], v[2]["remap_pending"], v[2]["remap_failure"]) == (1, 0, 1, 0)
    assert (v[5]["remap_unc"], v[5]["remap_failure"]) == (8, 1)
    assert (v[0]["remap_corr"], v[0]["remap_unc"], v[0]["remap_pending"], v[0]["remap_failure"]) == (0, 0, 0, 0)


def test_old_driver_reads_the_throttle_mask_by_its_old_name(make_agent):
    agent = make_agent("old-driver")
    _, latest = get(agent, "/v1/latest")
    for s in latest["samples"]:
        assert isinstance(s["values"]["throttle_mask"], int) and "throttle_mask" not in s["status"]


def test_lost_gpu_is_a_row_and_the_others_are_served(make_agent, tmp_path):
    agent = make_agent("lost")
    _, doc = get(agent, "/v1/node")
    assert [g["index"] for g in doc["gpus"]] == [0, 1, 2, 3]
    lost = doc["gpus"][2]
    assert lost["state"] == "lost" and lost["uuid"].startswith("lost-gpu-2-")
    assert _statuses(lost) <= {"gpu_lost", "unsupported"} and "gpu_lost" in _statuses(lost)
    _, latest = get(agent, "/v1/latest")
    s2 = latest["samples"][2]
    assert s2["state"] == "lost" and set(s2["status"][k] for k in SAMPLE_FIELDS) == {"gpu_lost"}
    assert all(latest["samples"][i]["state"] == "ok" and latest["samples"][i]["values"]["temp_c"]
               for i in (0, 1, 3))
    _, events = get(agent, "/v1/events?after=0")
    assert any(e["kind"] == "gpu_lost" and e["uuid"] == lost["uuid"] for e in events["records"])


def test_lost_gpu_keeps_its_uuid_from_the_previous_run(make_agent, tmp_path):
    clock = FakeClock()
    db = tmp_path / "node.db"
    first = make_agent("a100*4", clock=clock, buffer=db)
    _, doc = get(first, "/v1/node")
    uuid2 = doc["gpus"][2]["uuid"]
    first.close()
    lost = SimulatedNvml("a100*4+gpu_lost@2:0", clock=clock)  # same node (same seed): GPU 2 now lost at start
    second = make_agent(clock=clock, buffer=db, nvml=lost)
    _, doc = get(second, "/v1/node")
    gpu2 = doc["gpus"][2]
    assert gpu2["state"] == "lost" and gpu2["uuid"] == uuid2
    assert gpu2["values"]["inventory_source"] == "previous_run" and gpu2["values"]["pci_bus_id"]


def test_gpu_that_leaves_enumeration_is_reported_lost(make_agent):
    clock = FakeClock()
    agent = make_agent("lost-later", clock=clock)
    _, doc = get(agent, "/v1/node")
    uuid3 = doc["gpus"][3]["uuid"]
    run_rounds(agent, clock, 30)  # 150 s: GPU 3 fell off at 120 s and left enumeration
    _, doc = get(agent, "/v1/node")
    assert doc["node"]["values"]["gpu_count"] == 3
    assert [g["index"] for g in doc["gpus"]] == [0, 1, 2, 3]
    gone = doc["gpus"][3]
    assert gone["state"] == "lost" and gone["uuid"] == uuid3 and gone["values"]["name"] == "NVIDIA A100-SXM4-80GB"
    _, latest = get(agent, "/v1/latest")
    assert latest["samples"][3]["state"] == "lost"
    assert all(s["state"] == "ok" for s in latest["samples"][:3])
    _, events = get(agent, "/v1/events?after=0")
    kinds = [(e["kind"], e["uuid"]) for e in events["records"]]
    assert ("gpu_lost", uuid3) in kinds
    assert any(e["kind"] == "gpu_lost" and "left enumeration" in e["message"] for e in events["records"])


def test_hung_gpu_does_not_stall_the_others_or_the_server(make_agent):
    agent = make_agent("hung", hang_s=4.0, loop=True, interval_s=0.3, read_timeout_s=0.3, clock=time.time)
    time.sleep(1.2)
    t0 = time.monotonic()
    code, latest = get(agent, "/v1/latest")
    elapsed = time.monotonic() - t0
    assert code == 200 and elapsed < 1.0, f"/v1/latest took {elapsed:.2f} s"
    samples = {s["index"]: s for s in latest["samples"]}
    assert set(samples) == {0, 1, 2, 3}
    assert set(samples[1]["status"].values()) == {"failed"} and samples[1]["state"] == "ok"
    for i in (0, 2, 3):
        assert samples[i]["values"]["temp_c"] is not None
    _, health = get(agent, "/v1/health")
    assert health["sampler"]["hung_gpus"] == [1]
    hung = health["sampler"]["gpus"][1]
    assert hung["hung_since"] is not None and "temp_c" in hung["failing"] and "temp_c" in hung["stale_since"]
    assert health["sampler"]["cycles"] >= 3, "the sampling loop kept going"
    assert health["sample_lag_s"] < 1.0
    _, node = get(agent, "/v1/node")
    assert node["gpus"][1]["state"] == "ok" and node["gpus"][1]["status"]["name"] == "failed"


# ---------------------------------------------------------------------------
# The sequence cursor
# ---------------------------------------------------------------------------


def _page_all(agent: RunningAgent, path: str, after: int, limit: int) -> tuple[list[dict[str, Any]], int]:
    out: list[dict[str, Any]] = []
    cursor = after
    while True:
        code, doc = get(agent, f"{path}?after={cursor}&limit={limit}")
        assert code == 200 and doc["buffer_id"] == agent.buffer.buffer_id
        out.extend(doc["records"])
        cursor = doc["next"]
        if not doc["more"]:
            return out, cursor


def test_minutes_cursor_no_gap_no_duplicate_across_restart(make_agent, tmp_path):
    clock = FakeClock()
    db = tmp_path / "cursor.db"
    nvml = SimulatedNvml("healthy", clock=clock)  # the same simulated machine across the restart
    agent = make_agent("healthy", clock=clock, buffer=db, nvml=nvml)
    run_rounds(agent, clock, 12 * 5)  # 5 minutes of 2 GPUs
    got, cursor = _page_all(agent, "/v1/minutes", 0, 3)
    seqs = [r["seq"] for r in got]
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) >= 8
    assert {r["ts"] % 60 for r in got} == {0} and all(r["n"] >= 1 for r in got)
    assert all(r["uuid"].startswith("GPU-") for r in got)
    buffer_id = agent.buffer.buffer_id
    agent.close()

    agent = make_agent("healthy", clock=clock, buffer=db, nvml=nvml)  # restart on the same file
    assert agent.buffer.buffer_id == buffer_id
    run_rounds(agent, clock, 12 * 3)
    more, cursor2 = _page_all(agent, "/v1/minutes", cursor, 4)
    seqs2 = [r["seq"] for r in more]
    assert seqs2 == list(range(cursor + 1, cursor + 1 + len(seqs2))) and len(seqs2) >= 4
    keys = [(r["uuid"], r["ts"]) for r in got + more]
    assert len(keys) == len(set(keys)), "a minute was recorded twice"
    code, doc = get(agent, f"/v1/minutes?after={cursor2}")
    assert doc["records"] == [] and doc["more"] is False and doc["next"] == cursor2 and doc["gap"] is False


def test_minutes_and_events_gap_flag_after_pruning(make_agent, tmp_path):
    old = int(T0) - 10 * 86400  # older than keep_days: pruned
    buf = Buffer(tmp_path / "pruned.db", keep_days=7)
    buf.append_minutes([GpuMinute(seq=0, ts=old + 60 * i, uuid="GPU-x", index=0, n=12, values={}) for i in range(10)])
    for i in range(5):
        buf.append_event(Event(seq=0, ts=float(old + 60 * i), kind="xid", code=13))
    buf.append_minutes([GpuMinute(seq=0, ts=int(T0) - 120, uuid="GPU-x", index=0, n=12, values={})])
    buf.append_event(Event(seq=0, ts=T0 - 120, kind="xid", code=79))
    buf.prune(now=T0)
    agent = make_agent("healthy", buffer=buf)
    for path, first in (("/v1/minutes", 11), ("/v1/events", 6)):
        _, doc = get(agent, f"{path}?after=0")
        assert doc["gap"] is True and doc["first_seq"] == first
        assert doc["records"][0]["seq"] == first
        _, doc = get(agent, f"{path}?after={first - 1}")
        assert doc["gap"] is False and doc["records"][0]["seq"] == first


def test_wiped_buffer_gets_a_new_identity(make_agent, tmp_path):
    db = tmp_path / "wiped.db"
    agent = make_agent("healthy", buffer=db)
    old = agent.buffer.buffer_id
    _, ev = get(agent, "/v1/events?after=0")
    assert ev["buffer_id"] == old
    agent.close()
    for p in tmp_path.glob("wiped.db*"):
        p.unlink()
    agent = make_agent("healthy", buffer=db)
    _, node = get(agent, "/v1/node")
    assert node["buffer_id"] != old
    _, doc = get(agent, "/v1/minutes?after=500")
    assert doc["ahead"] is True and doc["buffer_id"] == node["buffer_id"] and doc["records"] == []


def test_minute_records_carry_aggregates(make_agent):
    clock = FakeClock()
    agent = make_agent("fault-power_brake", clock=clock)
    run_rounds(agent, clock, 12 * 2)
    _, doc = get(agent, "/v1/minutes?after=0")
    rec = next(r for r in doc["records"] if r["index"] == 1 and r["values"]["busy_n"] > 0)
    v = rec["values"]
    assert v["power_w_min"] <= v["power_w_mean"] <= v["power_w_max"]
    assert v["thr_hw_power_brake"] >= 1 and v["pcie_gen_busy_min"] is not None
    assert v["energy_mj"] is not None  # counters keep their last value


def test_events_cursor(make_agent):
    agent = make_agent("healthy")
    for code in range(10):
        agent.sampler.record_event(Event(seq=0, ts=time.time(), kind="xid", uuid="GPU-x", code=code))
    got, _ = _page_all(agent, "/v1/events", 0, 3)
    seqs = [e["seq"] for e in got]
    assert seqs == list(range(1, len(seqs) + 1))
    assert [e["code"] for e in got if e["kind"] == "xid"] == list(range(10))
