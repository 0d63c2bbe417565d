"""/metrics: the Prometheus text format, dcgm-exporter's names and labels, and promtool's verdict."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import urllib.request

import pytest

from fleetmon.agent.main import start_agent
from fleetmon.agent.prom import INVENTORY_METRICS, SAMPLE_METRICS
from fleetmon.records import Event
from fleetmon.sim.nvml import SimulatedNvml

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
_LABEL_VALUE = r'"(?:[^"\\\n]|\\[\\"n])*"'
_PAIRS = rf"{_LABEL}={_LABEL_VALUE}(?:,{_LABEL}={_LABEL_VALUE})*"
SAMPLE_RE = re.compile(rf"^(?P<name>{_NAME})(?P<labels>\{{(?:{_PAIRS})?,?\}})? (?P<value>\S+)(?: (?P<ts>-?\d+))?$")
LABEL_PAIR_RE = re.compile(rf"({_LABEL})=({_LABEL_VALUE})")
DCGM_LABELS = ["gpu", "UUID", "pci_bus_id", "device", "modelName", "hostname"]  # the current release's order

# Real DCGM fields (dcgmlib/dcgm_fields.h) that the fixtures' exporters happen not to enable.
DCGM_FIELDS_NOT_IN_FIXTURES = {
    "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",  # 164
    "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT",  # 200, 201
    "DCGM_FI_DEV_PCIE_LINK_GEN", "DCGM_FI_DEV_PCIE_LINK_WIDTH",  # 237, 238
    "DCGM_FI_DEV_PCIE_MAX_LINK_GEN", "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH",  # 235, 236
    "DCGM_FI_DEV_ROW_REMAP_PENDING",  # 396
    "DCGM_FI_DEV_SHUTDOWN_TEMP",  # 159
    "DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF", "DCGM_FI_DEV_POWER_MGMT_LIMIT_MIN", "DCGM_FI_DEV_POWER_MGMT_LIMIT_MAX",
    "DCGM_FI_DEV_MAX_SM_CLOCK", "DCGM_FI_DEV_MAX_MEM_CLOCK",  # 161-163, 113, 114
}


def parse_exposition(text: str) -> dict[str, dict]:
    """A strict reader of the text format 0.0.4: families with HELP, TYPE and samples.

    Fails on a sample whose family has no HELP or TYPE before it, on bad
    names, label syntax or values, and on a family split into two runs.
    """
    families: dict[str, dict] = {}
    current = None
    assert text.endswith("\n")
    for n, line in enumerate(text.splitlines(), 1):
        assert line, f"line {n}: empty line"
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            assert re.fullmatch(_NAME, name), f"line {n}: bad name {name!r}"
            assert name not in families, f"line {n}: family {name} appears twice"
            assert help_text.strip(), f"line {n}: empty HELP"
            families[name] = {"help": help_text, "type": None, "samples": []}
            current = name
        elif line.startswith("# TYPE "):
            name, _, mtype = line[7:].partition(" ")
            assert name == current and families[name]["type"] is None, f"line {n}: TYPE without HELP"
            assert not families[name]["samples"], f"line {n}: TYPE after samples"
            assert mtype in ("gauge", "counter", "untyped", "summary", "histogram"), f"line {n}: type {mtype}"
            families[name]["type"] = mtype
        elif line.startswith("#"):
            continue
        else:
            m = SAMPLE_RE.match(line)
            assert m, f"line {n}: not a sample line: {line[:120]}"
            name = m.group("name")
            assert name == current, f"line {n}: sample of {name} outside its family ({current})"
            assert families[name]["type"], f"line {n}: {name} has no TYPE"
            value = float(m.group("value"))  # ValueError fails the test
            labels = dict((k, v[1:-1]) for k, v in LABEL_PAIR_RE.findall(m.group("labels") or ""))
            families[name]["samples"].append((labels, value))
    return families


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """/metrics of a few scenarios, fetched over HTTP."""
    folder = tmp_path_factory.mktemp("prom")
    out = {}
    for scenario in ("healthy-a100", "geforce", "v100-retired", "lost", "old-driver", "healthy-h100", "vgpu-guest"):
        agent = start_agent(SimulatedNvml(scenario), buffer=folder / f"{scenario}.db", loop=False, watch_xid=False, simulate=True,
                            inventory_wait_s=0.5, poll_interval_s=0.05)
        try:
            agent.sampler.record_event(Event(seq=0, ts=0.0, kind="xid", code=79,
                                             uuid=agent.session.inventory(0).uuid))
            with urllib.request.urlopen(agent.url + "/metrics", timeout=5) as resp:
                assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
                out[scenario] = resp.read().decode()
        finally:
            agent.close()
    return out


def test_every_page_parses(pages):
    for scenario, text in pages.items():
        families = parse_exposition(text)
        assert families, scenario
        for name, fam in families.items():
            assert fam["samples"], f"{scenario}: {name} has HELP/TYPE but no sample"
            for labels, value in fam["samples"]:
                assert not math.isnan(value), f"{scenario}: {name} is NaN"


def test_dcgm_names_and_labels(pages):
    families = parse_exposition(pages["healthy-a100"])
    temp = families["DCGM_FI_DEV_GPU_TEMP"]
    assert temp["type"] == "gauge" and len(temp["samples"]) == 8
    labels, value = temp["samples"][0]
    assert list(labels)[:6] == DCGM_LABELS and labels["gpu"] == "0" and labels["device"] == "nvidia0"
    assert "Hostname" not in labels and labels["hostname"]
    assert re.fullmatch(r"[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]", labels["pci_bus_id"]), labels["pci_bus_id"]
    assert labels["UUID"].startswith("GPU-") and labels["modelName"] == "NVIDIA A100-SXM4-80GB"
    assert labels["DCGM_FI_DRIVER_VERSION"] == "535.161.08"
    assert 10 < value < 100
    assert families["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]["type"] == "counter"
    xid_labels, xid = families["DCGM_FI_DEV_XID_ERRORS"]["samples"][0]
    assert xid == 79  # last Xid of GPU 0
    assert xid_labels["err_code"] == "79" and "fallen off the bus" in xid_labels["err_msg"].lower()
    assert families["DCGM_FI_DEV_XID_ERRORS"]["samples"][1][0]["err_code"] == "0"
    assert families["fleetmon_gpu_lost"]["samples"][0][1] == 0
    throttle = families["fleetmon_gpu_clocks_event_active"]["samples"]
    assert {labels["reason"] for labels, _ in throttle} >= {"gpu_idle", "hw_slowdown", "hw_power_brake"}


def test_metric_names_match_dcgm_exporter_fixtures(shared_fixtures, pages):
    folder = shared_fixtures / "C_dcgm_exporter"
    if not folder.is_dir():
        pytest.skip("no dcgm-exporter fixtures")
    known: set[str] = set()
    for path in folder.iterdir():
        if path.suffix in (".csv", ".prom", ".txt"):
            known.update(re.findall(r"\bDCGM_FI_[A-Z0-9_]+", path.read_text(errors="replace")))
    assert "DCGM_FI_DEV_GPU_TEMP" in known
    served = set(parse_exposition(pages["healthy-a100"])) | set(parse_exposition(pages["v100-retired"]))
    declared = {m for m, _, _ in SAMPLE_METRICS.values()} | {m for m, _ in INVENTORY_METRICS.values()}
    for name in declared | served:
        if name.startswith("DCGM_"):
            assert name in known or name in DCGM_FIELDS_NOT_IN_FIXTURES, f"{name} is not a dcgm-exporter name"
        else:
            assert name.startswith("fleetmon_"), name
    # Every value the fixtures' exporters carry and the agent reads uses their name.
    for field_name, metric in {"temp_c": "DCGM_FI_DEV_GPU_TEMP", "mem_temp_c": "DCGM_FI_DEV_MEMORY_TEMP",
                               "power_w": "DCGM_FI_DEV_POWER_USAGE", "sm_clock_mhz": "DCGM_FI_DEV_SM_CLOCK",
                               "mem_clock_mhz": "DCGM_FI_DEV_MEM_CLOCK", "util_gpu_pct": "DCGM_FI_DEV_GPU_UTIL",
                               "util_mem_pct": "DCGM_FI_DEV_MEM_COPY_UTIL", "mem_used_mib": "DCGM_FI_DEV_FB_USED",
                               "mem_free_mib": "DCGM_FI_DEV_FB_FREE", "fan_pct": "DCGM_FI_DEV_FAN_SPEED",
                               "energy_mj": "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                               "pcie_replay": "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "pstate": "DCGM_FI_DEV_PSTATE",
                               "throttle_mask": "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
                               "ecc_corr_vol": "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
                               "ecc_unc_agg": "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
                               "retired_sbe": "DCGM_FI_DEV_RETIRED_SBE",
                               "retired_pending": "DCGM_FI_DEV_RETIRED_PENDING",
                               "remap_corr": "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
                               "remap_unc": "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
                               "remap_failure": "DCGM_FI_DEV_ROW_REMAP_FAILURE"}.items():
        assert metric in known and SAMPLE_METRICS[field_name][0] == metric


def test_unsupported_values_are_absent_not_zero(pages):
    families = parse_exposition(pages["geforce"])
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" not in families
    assert "DCGM_FI_DEV_FAN_SPEED" in families
    ok = families["fleetmon_gpu_reading_ok"]["samples"]
    assert ok and all(v == 1 for _, v in ok) and not any(lbl["field"] == "ecc_unc_vol" for lbl, _ in ok)


def test_lost_gpu_in_metrics(pages):
    families = parse_exposition(pages["lost"])
    lost = {labels["gpu"]: v for labels, v in families["fleetmon_gpu_lost"]["samples"]}
    assert lost == {"0": 0, "1": 0, "2": 1, "3": 0}
    assert {labels["gpu"] for labels, _ in families["DCGM_FI_DEV_GPU_TEMP"]["samples"]} == {"0", "1", "3"}
    failed = {(lbl["gpu"], lbl["field"]) for lbl, v in families["fleetmon_gpu_reading_ok"]["samples"] if v == 0}
    assert ("2", "temp_c") in failed


ALLOWED_LINT = (
    re.compile(r"^\S+ label names should be written in 'snake_case' not 'camelCase'$"),  # modelName
    re.compile(r"^DCGM_\S+ counter metrics should have \"_total\" suffix$"),
    re.compile(r"^DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'$"),
)


def test_promtool_accepts_the_page(pages, tmp_path):
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package: prometheus)")
    for scenario, text in pages.items():
        proc = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True,
                              timeout=60)
        findings = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
        assert proc.returncode in (0, 3), f"{scenario}: promtool failed to parse: {findings[:5]}"
        bad = [f for f in findings if not any(p.match(f) for p in ALLOWED_LINT)]
        assert not bad, f"{scenario}: {bad[:10]}"
        assert any("camelCase" in f for f in findings)  # the check does run


DEFAULT_COUNTERS_NVML_CAN_GIVE = {
    # dcgm-exporter's default counter -> (type, a scenario whose GPUs give it)
    "DCGM_FI_DEV_ENC_UTIL": ("gauge", "geforce"),
    "DCGM_FI_DEV_DEC_UTIL": ("gauge", "healthy-a100"),
    "DCGM_FI_DEV_FB_RESERVED": ("gauge", "healthy-a100"),
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": ("counter", "healthy-a100"),
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS": ("gauge", "vgpu-guest"),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": ("gauge", "healthy-h100"),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": ("gauge", "healthy-h100"),
    "DCGM_FI_PROF_DRAM_ACTIVE": ("gauge", "healthy-h100"),
    "DCGM_FI_PROF_PCIE_TX_BYTES": ("gauge", "healthy-a100"),
    "DCGM_FI_PROF_PCIE_RX_BYTES": ("gauge", "healthy-a100"),
}


def _default_counters(shared_fixtures) -> dict[str, str]:
    """dcgm-exporter's etc/default-counters.csv: enabled field -> Prometheus type."""
    path = shared_fixtures / "C_dcgm_exporter" / "dcgm-exporter_etc_default-counters.csv"
    if not path.is_file():
        pytest.skip("no dcgm-exporter default-counters.csv fixture")
    out = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, mtype, _ = (part.strip() for part in line.split(",", 2))
            out[name] = mtype
    return out


def test_every_default_counter_nvml_can_give_is_served(shared_fixtures, pages):
    counters = _default_counters(shared_fixtures)
    served: dict[str, dict] = {}
    for text in pages.values():
        for name, fam in parse_exposition(text).items():
            served.setdefault(name, fam)
    for name, mtype in counters.items():
        if mtype == "label":
            continue
        assert name in served, f"{name} (a dcgm-exporter default counter) is not served"
        assert served[name]["type"] == mtype, f"{name}: {served[name]['type']} but dcgm-exporter says {mtype}"
    for name, (mtype, scenario) in DEFAULT_COUNTERS_NVML_CAN_GIVE.items():
        fam = parse_exposition(pages[scenario]).get(name)
        assert fam is not None and fam["type"] == mtype, (name, scenario)


def test_profiling_ratios_and_units(pages):
    h100 = parse_exposition(pages["healthy-h100"])
    for name in ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE"):
        values = [v for _, v in h100[name]["samples"]]
        assert len(values) == 8 and all(0.0 <= v <= 1.0 for v in values), (name, values)
    assert max(v for _, v in h100["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"]["samples"]) > 0.3  # busy at the start
    a100 = parse_exposition(pages["healthy-a100"])
    kbs = {lbl["gpu"]: v for lbl, v in a100["DCGM_FI_DEV_PCIE_TX_THROUGHPUT"]["samples"]}
    bps = {lbl["gpu"]: v for lbl, v in a100["DCGM_FI_PROF_PCIE_TX_BYTES"]["samples"]}
    assert bps == {gpu: v * 1024 for gpu, v in kbs.items()}
    reserved = [v for _, v in a100["DCGM_FI_DEV_FB_RESERVED"]["samples"]]
    assert all(0 < v < 2048 for v in reserved)
    assert all(v > 0 for _, v in a100["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"]["samples"])


def test_what_a_gpu_cannot_give_has_no_series(pages):
    a100 = parse_exposition(pages["healthy-a100"])
    for name in ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",  # no GPM before Hopper
                 "DCGM_FI_DEV_ENC_UTIL",  # the A100 has no NVENC
                 "DCGM_FI_DEV_VGPU_LICENSE_STATUS"):  # bare metal: no vGPU licence
        assert name not in a100, name
    geforce = parse_exposition(pages["geforce"])
    assert "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL" not in geforce and "DCGM_FI_PROF_DRAM_ACTIVE" not in geforce
    assert "DCGM_FI_PROF_DRAM_ACTIVE" not in parse_exposition(pages["old-driver"])  # V100, driver 525
    ok = {lbl["field"] for lbl, _ in a100["fleetmon_gpu_reading_ok"]["samples"]}
    assert "tensor_active" not in ok and "enc_util_pct" not in ok
    vgpu = parse_exposition(pages["vgpu-guest"])
    assert {v for _, v in vgpu["DCGM_FI_DEV_VGPU_LICENSE_STATUS"]["samples"]} == {1}


def test_nominal_specs_for_the_recording_rules(pages):
    a100 = parse_exposition(pages["healthy-a100"])
    boost = a100["fleetmon_gpu_nominal_boost_mhz"]["samples"]
    assert len(boost) == 8 and {v for _, v in boost} == {1410}
    assert {v for _, v in a100["fleetmon_gpu_nominal_tdp_watts"]["samples"]} == {400}
    nominal = {v for _, v in a100["fleetmon_gpu_nominal_pcie_bandwidth_bytes_per_second"]["samples"]}
    assert len(nominal) == 1 and 31e9 < nominal.pop() < 32e9  # Gen4 x16
    link = a100["fleetmon_gpu_pcie_link_bandwidth_bytes_per_second"]["samples"]
    assert len(link) == 8 and all(v > 0 for _, v in link)
