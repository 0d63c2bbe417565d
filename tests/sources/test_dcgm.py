"""dcgm-exporter scrapes (../shared/fixtures/C_dcgm_exporter) → records; the source mapping of node URLs."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetmon.records import Status
from fleetmon.sources import TRAITS, SourceError, SourceKind, source_of
from fleetmon.sources.dcgm import METRIC_FIELDS, parse_counters_csv, parse_dcgm

DCGM = "C_dcgm_exporter"

# scrape file: (hostname, driver, GPUs, first GPU's UUID, name, a few sample values, MIG instance ids of GPU 0)
SCRAPES: dict[str, tuple[str, str | None, int, str, str, dict[str, object], list[int]]] = {
    "cn-blog_dcgm-exporter_8xA800-sxm4_mig_535.129.03_excerpt.prom": (
        "msxf-hpc-64-35-ai", "535.129.03", 8, "GPU-1f027ee8-6e1e-2b8c-0108-3d370e5f0418", "NVIDIA A800-SXM4-80GB",
        {"temp_c": 33, "sm_clock_mhz": 1410}, [3, 5, 6]),
    "datadog_dcgm_fixtures_metrics.txt": (
        "424773df46e0", "460.106.00", 3, "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e", "Tesla T4",
        {"temp_c": 25, "power_w": 8.969, "energy_mj": 128996013, "mem_free_mib": 15109, "pcie_replay": 0}, []),
    "nvidia-docs_dcgm-exporter_a100-mig_excerpt.prom": (
        "ub20-a100-k8s", None, 1, "GPU-34319582-d595-d1c7-d1d2-179bcfa61660", "unknown",
        {"temp_c": 61, "mem_temp_c": 69, "power_w": 409.692, "mem_used_mib": 4845, "energy_mj": 319159391}, [13]),
}
# counters CSV: (rows, first field, last field)
COUNTERS: dict[str, tuple[int, str, str]] = {
    "dcgm-exporter_etc_1.x-compatibility-metrics.csv": (22, "dcgm_sm_clock", "dcgm_fi_prof_pcie_rx_bytes"),
    "dcgm-exporter_etc_dcp-metrics-included.csv": (26, "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_PROF_PCIE_RX_BYTES"),
    "dcgm-exporter_etc_default-counters.csv": (26, "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_PROF_PCIE_RX_BYTES"),
}


def test_every_file_in_the_folder_is_in_a_table(shared_fixtures: Path) -> None:
    present = {p.name for p in (shared_fixtures / DCGM).iterdir() if p.is_file()}
    assert present <= set(SCRAPES) | set(COUNTERS), sorted(present - set(SCRAPES) - set(COUNTERS))


@pytest.mark.parametrize("name", sorted(SCRAPES))
def test_each_scrape_parses_with_its_values(shared_fixtures: Path, name: str) -> None:
    path = shared_fixtures / DCGM / name
    if not path.exists():
        pytest.skip(f"{name} is held back")
    host, driver, n, uuid, model, values, migs = SCRAPES[name]
    c = parse_dcgm(path.read_text())
    assert (c.info.hostname, c.info.values["driver_version"], len(c.gpus)) == (host, driver, n)
    g, s = c.gpus[0], c.samples[0]
    assert (g.uuid, g.name, g.index) == (uuid, model, 0)
    assert {k: s.values[k] for k in values} == values
    assert [m["gpu_instance_id"] for m in g.values.get("mig_devices", [])] == migs
    for rec in (g, s):
        for key, value in rec.values.items():
            assert (value is None) == (key in rec.status), key
    assert len({x.uuid for x in c.gpus}) == n and sorted(x.index for x in c.gpus) == list(range(n))


def test_what_a_scrape_cannot_tell_is_unsupported(shared_fixtures: Path) -> None:
    c = parse_dcgm((shared_fixtures / DCGM / "nvidia-docs_dcgm-exporter_a100-mig_excerpt.prom").read_text())
    g, s = c.gpus[0], c.samples[0]
    for key in ("util_gpu_pct", "ecc_corr_vol", "pcie_gen", "throttle_mask", "fan_pct"):
        assert s.values[key] is None and s.status[key] == Status.UNSUPPORTED, key
    for key in ("serial", "vbios", "board_part_number", "ecc_mode_current", "memory_total_mib"):
        assert g.values[key] is None and g.status[key] == Status.UNSUPPORTED, key


def test_mig_instances_repeat_their_gpu(shared_fixtures: Path) -> None:
    c = parse_dcgm((shared_fixtures / DCGM / "cn-blog_dcgm-exporter_8xA800-sxm4_mig_535.129.03_excerpt.prom")
                   .read_text())
    assert [m["profile"] for m in c.gpus[0].values["mig_devices"]] == ["2g.20gb"] * 3
    assert "mig_devices" not in c.gpus[1].values
    assert [s.values["temp_c"] for s in c.samples] == [33, 27, 26, 31, 31, 26, 26, 29]


def test_concatenated_scrapes_labels_and_label_less_series(shared_fixtures: Path) -> None:
    c = parse_dcgm((shared_fixtures / DCGM / "datadog_dcgm_fixtures_metrics.txt").read_text())
    t4, t4b, a10g = c.gpus
    assert (t4b.uuid, t4b.values["serial"], t4b.values["vbios"]) == (
        "GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5", "1565220008176", "90.04.96.00.02")
    assert (t4b.values["memory_total_mib"], t4b.values["temp_slowdown_c"], t4b.values["power_enforced_w"]) == (
        15109, 93, 70.0)
    s = c.samples[1]
    assert (s.values["pstate"], s.values["throttle_mask"], s.values["power_limit_w"]) == (8, 1, 70.0)
    assert (a10g.uuid, a10g.name, a10g.values["serial"]) == ("GPU-abc", "NVIDIA A10G", "1111111")
    assert c.info.values["cuda_driver_version"] == "12.1"  # DCGM_FI_CUDA_DRIVER_VERSION="12010"
    assert any("without gpu/UUID labels" in n for n in c.notes)
    assert any("index 0 given twice" in n for n in c.notes)


CURRENT = """# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{gpu="1",UUID="GPU-bbbb",pci_bus_id="00000000:1B:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",hostname="node7"} 41
# HELP DCGM_FI_DEV_MEMORY_TEMP
# TYPE DCGM_FI_DEV_MEMORY_TEMP gauge
DCGM_FI_DEV_MEMORY_TEMP{gpu="1",UUID="GPU-bbbb",pci_bus_id="00000000:1B:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",hostname="node7"} 0
# HELP DCGM_FI_DEV_XID_ERRORS Value of the last XID error encountered.
# TYPE DCGM_FI_DEV_XID_ERRORS gauge
DCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="GPU-bbbb",pci_bus_id="00000000:1B:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",hostname="node7",err_code="0",err_msg="No Error"} 0
# HELP DCGM_FI_DEV_ECC_DBE_VOL_TOTAL Total number of double-bit volatile ECC errors.
# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="1",UUID="GPU-bbbb",pci_bus_id="00000000:1B:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",hostname="node7"} 2"""


def test_current_release_labels_and_no_trailing_newline() -> None:
    c = parse_dcgm(CURRENT)
    g, s = c.gpus[0], c.samples[0]
    assert (c.info.hostname, g.index, g.values["pci_bus_id"]) == ("node7", 1, "0000:1b:00.0")
    assert (s.values["temp_c"], s.values["ecc_unc_vol"]) == (41, 2)
    assert s.values["mem_temp_c"] is None and s.status["mem_temp_c"] == Status.UNSUPPORTED  # DCGM's 0: no sensor


@pytest.mark.parametrize("text", ["", "# HELP only a comment\n", "DCGM_FI_DEV_GPU_TEMP 41\n", "{{{ not prometheus"])
def test_nothing_usable(text: str) -> None:
    with pytest.raises(SourceError):
        parse_dcgm(text)


@pytest.mark.parametrize("name", sorted(COUNTERS))
def test_counters_csv(shared_fixtures: Path, name: str) -> None:
    rows = parse_counters_csv((shared_fixtures / DCGM / name).read_text())
    n, first, last = COUNTERS[name]
    assert (len(rows), rows[0].name, rows[-1].name) == (n, first, last)
    assert all(r.name == r.name.strip() and r.type in ("gauge", "counter", "label") for r in rows)


def test_the_default_counters_fleetmon_reads(shared_fixtures: Path) -> None:
    rows = parse_counters_csv((shared_fixtures / DCGM / "dcgm-exporter_etc_default-counters.csv").read_text())
    mapped = {r.name for r in rows} & set(METRIC_FIELDS)
    assert {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED",
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"} <= mapped


@pytest.mark.parametrize("url, kind, fetch, host, port, user", [
    ("http://gpu01:9100", SourceKind.AGENT, "http://gpu01:9100", "gpu01", 9100, None),
    ("https://gpu01", SourceKind.AGENT, "https://gpu01", "gpu01", None, None),
    ("dcgm+http://gpu01:9400/metrics", SourceKind.DCGM, "http://gpu01:9400/metrics", "gpu01", 9400, None),
    ("ssh://ops@gpu01.example:2222", SourceKind.SSH, "ssh://ops@gpu01.example:2222", "gpu01.example", 2222, "ops"),
    ("ssh://gpu01", SourceKind.SSH, "ssh://gpu01", "gpu01", None, None),
    ("file:///captures/node7.xml", SourceKind.CAPTURE, "/captures/node7.xml", "", None, None),
])
def test_source_of(url: str, kind: SourceKind, fetch: str, host: str, port: int | None, user: str | None) -> None:
    spec = source_of(url)
    assert (spec.kind, spec.url, spec.host, spec.port, spec.user) == (kind, fetch, host, port, user)


@pytest.mark.parametrize("url", ["ssh://-oProxyCommand=x", "ssh://a;b@host", "ssh://host/path", "ssh://u:pw@host",
                                 "ssh://$(id)", "gopher://x", "ssh://host:notaport"])
def test_source_of_refuses(url: str) -> None:
    with pytest.raises(SourceError):
        source_of(url)


def test_sources_without_a_buffer_say_they_have_no_backfill() -> None:
    assert TRAITS[SourceKind.AGENT].backfill
    for kind in (SourceKind.DCGM, SourceKind.SSH, SourceKind.CAPTURE):
        assert not TRAITS[kind].backfill and "no backfill" in TRAITS[kind].status_note or kind == SourceKind.CAPTURE
