"""/metrics for a mixed fleet (issue 23): dcgm-exporter's names for NVIDIA devices only, the vendor-neutral
``fleetmon_gpu_*`` families with a ``vendor`` label for every device, the node's info with vendor and runtime."""

from __future__ import annotations

import shutil
import subprocess
import urllib.request

import pytest

from fleetmon.agent.main import start_agent
from fleetmon.agent.prom import MIB, NEUTRAL_INVENTORY, NEUTRAL_METRICS, render_metrics
from fleetmon.fields import CATALOG, INVENTORY_FIELDS
from fleetmon.records import GpuInventory, GpuSample, NodeInfo
from fleetmon.sim.nvml import SimulatedNvml
from fleetmon.vendors import RUNTIME_NAMES, VENDOR_NAMES
from tests.agent.test_prometheus import parse_exposition

ALLOWED_LINT = ("label names should be written in 'snake_case' not 'camelCase'",)  # dcgm-exporter's modelName


@pytest.fixture(scope="module")
def nvidia_page(tmp_path_factory):
    """/metrics of a simulated NVIDIA agent, over HTTP."""
    folder = tmp_path_factory.mktemp("promv")
    agent = start_agent(SimulatedNvml("healthy-a100"), buffer=folder / "a.db", loop=False, watch_xid=False,
                        simulate=True, inventory_wait_s=0.5, poll_interval_s=0.05)
    try:
        with urllib.request.urlopen(agent.url + "/metrics", timeout=5) as resp:
            return resp.read().decode()
    finally:
        agent.close()


def ascend_records() -> tuple[NodeInfo, list[GpuInventory], list[GpuSample]]:
    """A Huawei Ascend node as a backend reports one (records built directly: npu-smi gives no memory
    temperature, fan, clocks or PCIe link; chip 1 reads no power)."""
    unsupported = {f.name: "unsupported" for f in CATALOG}
    info = NodeInfo(hostname="npu1", agent_version="npu-smi (fleetmon 1)", xid_source="none: npu-smi",
                    values={"hostname": "npu1", "driver_version": "24.1.rc2", "vendor": "huawei",
                            "runtime_version": "8.0.RC2", "firmware_version": "7.3.0.1.231", "gpu_count": 2})
    gpus, samples = [], []
    for i in range(2):
        uuid = f"NPU-{i}"
        gpus.append(GpuInventory(uuid=uuid, index=i, name="Ascend 910B4", values={
            "index": i, "uuid": uuid, "name": "Ascend 910B4", "vendor": "huawei", "memory_total_mib": 32768,
            "pci_bus_id": f"0000:c{i}:00.0", "card_id": "0"}))
        values = {"temp_c": 40.0 + i, "util_gpu_pct": 25.0, "mem_used_mib": 2048, "ecc_unc_vol": 3 * i,
                  "ecc_corr_vol": 0, "power_w": 93.5 if i == 0 else None}
        status = {k: v for k, v in unsupported.items() if values.get(k) is None}
        samples.append(GpuSample(ts=1000.0, uuid=uuid, index=i, values=values, status=status))
    return info, gpus, samples


def _samples(families, name):
    return families[name]["samples"] if name in families else []


def test_the_neutral_table_names_catalog_fields_in_base_units():
    names = {f.name for f in CATALOG}
    for n in NEUTRAL_METRICS:
        assert n.field in names, n
        assert n.metric.startswith("fleetmon_gpu_") and n.metric == n.metric.lower()
        assert n.metric.endswith("_total") == (n.type == "counter"), n  # Prometheus naming: counters end _total
        assert not any(u in n.metric for u in ("_mib", "_mhz", "_pct", "_mj")), n  # base units only
    assert {n.field for n in NEUTRAL_INVENTORY} <= set(INVENTORY_FIELDS)
    assert set(RUNTIME_NAMES) == set(VENDOR_NAMES)


def test_an_nvidia_device_keeps_dcgm_names_and_gets_the_neutral_ones(nvidia_page):
    fam = parse_exposition(nvidia_page)
    temp = {lab["UUID"]: v for lab, v in _samples(fam, "DCGM_FI_DEV_GPU_TEMP")}
    assert len(temp) == 8
    neutral = {lab["uuid"]: (lab, v) for lab, v in _samples(fam, "fleetmon_gpu_temperature_celsius")}
    assert set(neutral) == set(temp)
    for uuid, (lab, v) in neutral.items():
        assert lab["vendor"] == "nvidia" and lab["model"] == "NVIDIA A100-SXM4-80GB" and v == temp[uuid]
    used = {lab["UUID"]: v for lab, v in _samples(fam, "DCGM_FI_DEV_FB_USED")}
    assert {lab["uuid"]: v for lab, v in _samples(fam, "fleetmon_gpu_memory_used_bytes")} == {
        u: v * MIB for u, v in used.items()}
    util = {lab["UUID"]: v for lab, v in _samples(fam, "DCGM_FI_DEV_GPU_UTIL")}
    assert {lab["uuid"]: v for lab, v in _samples(fam, "fleetmon_gpu_utilization_ratio")} == pytest.approx(
        {u: v / 100 for u, v in util.items()})
    ecc = _samples(fam, "fleetmon_gpu_ecc_errors_total")
    assert fam["fleetmon_gpu_ecc_errors_total"]["type"] == "counter"
    assert {(lab["type"], lab["scope"]) for lab, _ in ecc} == {
        ("corrected", "volatile"), ("uncorrected", "volatile"), ("corrected", "aggregate"), ("uncorrected", "aggregate")}
    (info, _), = _samples(fam, "fleetmon_agent_info")
    assert info["vendor"] == "nvidia" and info["runtime"] == "CUDA" and info["runtime_version"] == info[
        "cuda_driver_version"] != ""


def test_another_vendors_device_gets_only_fleetmon_series():
    info, gpus, samples = ascend_records()
    text = render_metrics(info, gpus, samples, {})
    fam = parse_exposition(text)
    assert not [name for name in fam if name.startswith("DCGM_")]  # nothing pretends to be DCGM
    assert "DCGM_FI_DRIVER_VERSION" not in text and 'device="nvidia' not in text
    temp = _samples(fam, "fleetmon_gpu_temperature_celsius")
    assert [(lab["uuid"], lab["vendor"], lab["model"], v) for lab, v in temp] == [
        ("NPU-0", "huawei", "Ascend 910B4", 40), ("NPU-1", "huawei", "Ascend 910B4", 41)]
    # Chip 1 reads no power: no series (never a zero); what npu-smi never gives has no family at all.
    assert [(lab["uuid"], v) for lab, v in _samples(fam, "fleetmon_gpu_power_watts")] == [("NPU-0", 93.5)]
    for absent in ("fleetmon_gpu_memory_temperature_celsius", "fleetmon_gpu_fan_speed_ratio",
                   "fleetmon_gpu_clock_hertz", "fleetmon_gpu_pcie_link_width"):
        assert absent not in fam
    ecc = {(lab["uuid"], lab["type"]): v for lab, v in _samples(fam, "fleetmon_gpu_ecc_errors_total")}
    assert ecc == {("NPU-0", "corrected"): 0, ("NPU-0", "uncorrected"): 0, ("NPU-1", "corrected"): 0,
                   ("NPU-1", "uncorrected"): 3}
    assert [v for _, v in _samples(fam, "fleetmon_gpu_memory_total_bytes")] == [32768 * MIB] * 2
    assert [v for _, v in _samples(fam, "fleetmon_gpu_utilization_ratio")] == [0.25, 0.25]
    lost = _samples(fam, "fleetmon_gpu_lost")
    assert [(lab["device"], lab["vendor"], v) for lab, v in lost] == [("huawei0", "huawei", 0), ("huawei1", "huawei", 0)]
    (node, _), = _samples(fam, "fleetmon_agent_info")
    assert (node["vendor"], node["runtime"], node["runtime_version"], node["firmware_version"]) == (
        "huawei", "CANN", "8.0.RC2", "7.3.0.1.231")


def test_a_captured_amd_node_renders_vendor_series(shared_fixtures):
    """A real rocm-smi capture (MI100 ×4) through the import's parser and poll: AMD's series, no DCGM ones."""
    from fleetmon.sources import formats
    from fleetmon.sources.capture import capture_poll

    path = shared_fixtures / "F_other_vendors" / "amd" / "telegraf_mi100_rocm602.json"
    if not path.is_file():
        pytest.skip("no rocm-smi fixture")
    poll = capture_poll(formats.parse(path.read_bytes()), "mi100", "file:///mi100.json", 1000.0)
    fam = parse_exposition(render_metrics(poll.info, list(poll.gpus), list(poll.latest), {}))
    assert not [name for name in fam if name.startswith("DCGM_")]
    temp = _samples(fam, "fleetmon_gpu_temperature_celsius")
    assert [(lab["gpu"], lab["vendor"], v) for lab, v in temp] == [("0", "amd", 55), ("1", "amd", 58),
                                                                   ("2", "amd", 57), ("3", "amd", 53)]
    assert [v for _, v in _samples(fam, "fleetmon_gpu_memory_temperature_celsius")] == [53, 54, 55, 50]
    assert _samples(fam, "fleetmon_gpu_power_limit_watts")[0][1] == 290


def test_promtool_accepts_both_pages(nvidia_page):
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package: prometheus)")
    info, gpus, samples = ascend_records()
    for name, text in (("nvidia", nvidia_page), ("ascend", render_metrics(info, gpus, samples, {}))):
        proc = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
        findings = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
        assert proc.returncode in (0, 3), f"{name}: {findings[:5]}"
        # The neutral families pass the lint: only dcgm-exporter's own names are flagged.
        bad = [f for f in findings if f.startswith("fleetmon_gpu_") and not any(a in f for a in ALLOWED_LINT)]
        assert not bad, f"{name}: {bad[:10]}"
        if name == "ascend":
            assert not findings, findings  # no DCGM name, no camelCase label: nothing to lint
