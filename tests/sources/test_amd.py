"""AMD and Hygon DCU tool outputs (../shared/fixtures/F_other_vendors/amd, .../hygon) → records.

Every fixture file is parsed through the format :data:`fleetmon.sources.amd.FORMATS` detects for it, and its
values are checked against what the file says (read off by hand). Bad input (truncated JSON and tables,
UTF-16 with and without a BOM, a banner before the JSON, 10,000 devices, control characters, wrong types)
ends in one SourceError line or in a failed reading, never in a wrong value.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from fleetmon.records import Status
from fleetmon.sources import SourceError
from fleetmon.sources import amd
from fleetmon.sources.amd import (
    FORMATS, MAX_DEVICES, combine, parse_amd_smi_csv, parse_amd_smi_json, parse_amd_smi_text, parse_rocm_smi_json,
    parse_rocm_smi_text, parse_rocminfo,
)
from fleetmon.sources.capture import Capture, capture_poll

AMD = "F_other_vendors/amd"
HYGON = "F_other_vendors/hygon"


def _load(shared: Path, name: str) -> tuple[str, Capture]:
    """(detected format, capture) of one fixture file: exactly one format must claim it."""
    data = (shared / name).read_bytes()
    text = amd.decode(data)
    found = [fmt for fmt, (detect, _) in FORMATS.items() if detect(text)]
    assert len(found) == 1, (name, found)
    return found[0], FORMATS[found[0]][1](data)


def _inv(c: Capture, i: int = 0) -> dict[str, Any]:
    return c.gpus[i].values


def _smp(c: Capture, i: int = 0) -> dict[str, Any]:
    return c.samples[i].values


def _status(c: Capture, key: str, i: int = 0) -> str | None:
    return c.gpus[i].status.get(key) or c.samples[i].status.get(key)


# file: (format, source, vendor, devices, first device's name, uuid, serial, bus id, memory MiB, driver)
EXPECTED: dict[str, tuple[str, str, str, int, str | None, str, str | None, str | None, int | None, str | None]] = {
    f"{AMD}/dell-ai_amd_smi_static_json_root.json": (
        "amd-smi-json", "amd-smi-json", "amd", 8, "AMD Instinct MI300X", "GPU-28246ce5673b4aa0", "692409006566",
        "0000:1b:00.0", 196592, "6.16.13"),
    f"{AMD}/dell-ai_amd_smi_static_json_non_root.txt": (  # banner, then every ASIC field N/A
        "amd-smi-json", "amd-smi-json", "amd", 8, "AMD Instinct MI300X OAM", "unknown-gpu-0-0000:1b:00.0",
        "692409006566", "0000:1b:00.0", None, None),
    f"{AMD}/dell-ai_amd_smi_version_root.json": (
        "amd-smi-json", "amd-smi-json", "amd", 0, None, "", None, None, None, "6.16.13"),
    f"{AMD}/dell-ai_amd_smi_version_non_root.json": (
        "amd-smi-json", "amd-smi-json", "amd", 0, None, "", None, None, None, None),
    f"{AMD}/virtualclient_xgmi-8xMI300X.json": (
        "amd-smi-json", "amd-smi-json", "amd", 8, None, "unknown-gpu-0-0000:0c:00.0", None, "0000:0c:00.0", None,
        None),
    f"{AMD}/virtualclient_metrics_8xMI300X.txt": (
        "amd-smi-text", "amd-smi-text", "amd", 8, None, "unknown-gpu-0-capture", None, None, 196048, None),
    f"{AMD}/issue_rocm-systems-2987_amd-smi-static_mi350x_excerpt.txt": (
        "amd-smi-text", "amd-smi-text", "amd", 1, "AMD Instinct MI350X", "unknown-gpu-0-0000:05:00.0", None,
        "0000:05:00.0", None, "6.18.3"),
    f"{AMD}/virtualclient_metric-csv_windows_utf16le.txt": (
        "amd-smi-csv", "amd-smi-csv", "amd", 1, None, "unknown-gpu-0-capture", None, None, 14928, None),
    f"{AMD}/telegraf_mi100_rocm571.json": (
        "rocm-smi-json", "rocm-smi-json", "amd", 6, "Arcturus GL-XL [Instinct MI100]", "unknown-gpu-0-0000:1e:00.0",
        None, "0000:1e:00.0", 32752, "6.2.4"),
    f"{AMD}/telegraf_mi100_rocm602.json": (
        "rocm-smi-json", "rocm-smi-json", "amd", 4, "Arcturus GL-XL [Instinct MI100]", "GPU-79ccd55167a2124a", None,
        "0000:83:00.0", 32752, "6.3.6"),
    f"{AMD}/telegraf_rx6700xt_rocm430.json": (  # "Card series": "0x1002" is an id, not a name
        "rocm-smi-json", "rocm-smi-json", "amd", 1, None, "unknown-gpu-0-0000:07:00.0", None, "0000:07:00.0", 12272,
        "6.3.6"),
    f"{AMD}/telegraf_rx6700xt_rocm571.json": (
        "rocm-smi-json", "rocm-smi-json", "amd", 1, "Navi 22 [Radeon RX 6700/6700 XT / 6800M]",
        "unknown-gpu-0-0000:07:00.0", None, "0000:07:00.0", 12272, "6.3.6"),
    f"{AMD}/telegraf_rx6700xt_rocm602.json": (
        "rocm-smi-json", "rocm-smi-json", "amd", 1, "Navi 22 [Radeon RX 6700/6700 XT / 6800M]",
        "unknown-gpu-0-0000:07:00.0", None, "0000:07:00.0", 12272, "6.3.6"),
    f"{AMD}/telegraf_rx6700xt_rocm612.json": (
        "rocm-smi-json", "rocm-smi-json", "amd", 1, "Navi 22 [Radeon RX 6700/6700 XT / 6800M]",
        "unknown-gpu-0-0000:07:00.0", None, "0000:07:00.0", 12272, "6.3.6"),
    f"{AMD}/telegraf_vega-10-XT.json": (
        "rocm-smi-json", "rocm-smi-json", "amd", 1, None, "GPU-02150e7d042a1124", None, "0000:04:00.0", 16368,
        "5.9.25"),
    f"{AMD}/gpustack_amd-gpu-6.2.4-rocm-smi.json": (
        "rocm-smi-json", "rocm-smi-json", "amd", 1, "Navi 32 [Radeon RX 7700 XT / 7800 XT]", "GPU-5c88007d760374f3",
        None, None, 16368, None),
    f"{AMD}/gpustack_amd-gpu-6.2.4-rocminfo.txt": (
        "rocminfo", "rocminfo", "amd", 1, "AMD Radeon RX 7800 XT", "GPU-5c88007d760374f3", None, None, 16368, "6.2.4"),
    f"{AMD}/issue_wandb-5449_rocm-smi-concise_8xMI250X-GCD_excerpt.txt": (
        "rocm-smi-text", "rocm-smi-concise", "amd", 8, None, "unknown-gpu-0-capture", None, None, None, None),
    f"{HYGON}/issue_gpustack-2032_hy-smi-json_k100-ai_first-2-cards_DERIVED.json": (
        "hy-smi-json", "hy-smi-json", "hygon", 2, "K100_AI", "GPU-7137d9b2a08a4841", "TRCW280005090201", None, 65520,
        None),
    f"{HYGON}/issue_gpustack-3257_rocm-smi-json_k100-ai_first-card_DERIVED.json": (
        "hy-smi-json", "hy-smi-json", "hygon", 1, "K100_AI", "GPU-7137d9debef24861", "TRCW340025090301", None, 65520,
        None),
    f"{HYGON}/issue_HAMi-dcu-vgpu-device-plugin-4_hy-smi-showproductname_empty-card-series.txt": (
        "hy-smi-text", "hy-smi-text", "hygon", 1, None, "unknown-gpu-0-capture", None, None, None, None),
    f"{HYGON}/gpustack_hygon-gpu-24.04.3-rocminfo.txt": (
        "rocminfo", "rocminfo", "hygon", 1, "K1xx_AI", "GPU-7100fa8866904061", None, None, 65520, None),
}


def test_every_fixture_file_is_listed(shared_fixtures: Path) -> None:
    files = {str(p.relative_to(shared_fixtures)) for d in (AMD, HYGON) for p in (shared_fixtures / d).iterdir()}
    assert files == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_parses_with_its_values(shared_fixtures: Path, name: str) -> None:
    fmt, source, vendor, count, gpu_name, uuid, serial, bus, memory, driver = EXPECTED[name]
    found, c = _load(shared_fixtures, name)
    assert (found, c.source, c.vendor, len(c.gpus), len(c.samples)) == (fmt, source, vendor, count, count)
    assert len(c.extra) == count
    assert c.info.values["driver_version"] == driver
    assert c.info.values["gpu_count"] == count
    if count:
        assert _inv(c)["name"] == gpu_name
        assert c.gpus[0].name == (gpu_name or "unknown")
        assert c.gpus[0].uuid == uuid == c.samples[0].uuid
        assert _inv(c)["serial"] == serial
        assert _inv(c)["pci_bus_id"] == bus
        assert _inv(c)["memory_total_mib"] == memory
        assert len({g.uuid for g in c.gpus}) == count
    # every value is a value or None with a status; nothing is zero for lack of a reading
    for rec in [*c.gpus, *c.samples]:
        for key, value in rec.values.items():
            if value is None:
                assert rec.status.get(key) in ("unsupported", "failed"), (key, rec.status.get(key))
    capture_poll(c, "node", "file:///x", 1.0)  # the records the store takes


def test_amd_smi_static_mi300x_identity_limits_and_ras(shared_fixtures: Path) -> None:
    _, c = _load(shared_fixtures, f"{AMD}/dell-ai_amd_smi_static_json_root.json")
    g = _inv(c)
    assert g["pci_device_id"] == "0x74A11002" and g["pci_subsystem_id"] == "0x74A11002"
    assert g["architecture"] == "cdna3" and g["vbios"] == "00159017" and g["board_part_number"] == "102-G30211-0C"
    assert (g["power_enforced_w"], g["power_max_w"], g["power_min_w"]) == (750.0, 750.0, 0.0)
    assert (g["pcie_max_gen"], g["pcie_max_width"]) == (5, 16)
    assert (g["temp_slowdown_c"], g["temp_shutdown_c"]) == (100.0, 110.0)  # hotspot: edge is N/A on MI300X
    assert g["ecc_mode_current"] is True
    x = c.extra[0]
    assert (x["gfx_target"], x["compute_units"], x["oam_id"]) == ("gfx942", 304, 1)
    assert (x["temp_mem_slowdown_c"], x["temp_mem_shutdown_c"]) == (105.0, 115.0)
    assert x["bad_page_threshold"] == 128 and x["bad_page_threshold_exceeded"] is False
    assert x["ecc_block_state"]["UMC"] == "ENABLED" and x["ecc_block_state"]["SEM"] == "DISABLED"
    assert x["ras_schema"] == {"parity": False, "single_bit": False, "double_bit": False, "poison": True}
    assert [g.values["serial"] for g in c.gpus][-1] == "692409005963"
    assert [g.uuid for g in c.gpus][3] == "GPU-002f6a94e6c0d368"
    assert _smp(c)["temp_c"] is None and _status(c, "temp_c") == "unsupported"  # static: no live reading


def test_amd_smi_static_non_root_reads_na_as_unsupported(shared_fixtures: Path) -> None:
    _, c = _load(shared_fixtures, f"{AMD}/dell-ai_amd_smi_static_json_non_root.txt")
    assert _status(c, "pci_device_id") == "unsupported" and _status(c, "uuid") is None  # placeholder uuid
    assert c.info.status["driver_version"] == "unsupported"
    assert "bad_page_threshold" not in c.extra[0]  # "N/A": absent, not 0


def test_amd_smi_version_is_no_device_listing(shared_fixtures: Path) -> None:
    _, root = _load(shared_fixtures, f"{AMD}/dell-ai_amd_smi_version_root.json")
    assert root.gpus == [] and root.info.values["driver_version"] == "6.16.13"
    assert "not a device listing" in root.notes[0] and "ROCm 7.2.1" in root.notes[0]
    _, user = _load(shared_fixtures, f"{AMD}/dell-ai_amd_smi_version_non_root.json")
    assert user.info.values["driver_version"] is None and user.info.status["driver_version"] == "failed"


def test_amd_smi_metric_text_8x_mi300x(shared_fixtures: Path) -> None:
    _, c = _load(shared_fixtures, f"{AMD}/virtualclient_metrics_8xMI300X.txt")
    s = _smp(c)
    assert (s["power_w"], s["temp_c"], s["mem_temp_c"], s["util_gpu_pct"]) == (137.0, 38.0, 31.0, 0.0)
    assert (s["sm_clock_mhz"], s["mem_clock_mhz"], s["pcie_gen"], s["pcie_width"], s["pcie_replay"]) == (
        245, 900, 5, 16, 0)
    assert (s["mem_used_mib"], s["mem_free_mib"], s["throttle_mask"]) == (282, 195766, 0)
    assert _status(c, "ecc_corr_vol") == "unsupported"  # no ECC block in this capture
    x = c.extra[0]
    assert x["temp_sensor"] == "junction" and "temp_edge_c" not in x  # EDGE: N/A
    assert x["gfx_clocks_mhz"] == [245, 132, 131, 131, 132, 132, 132, 132]
    assert (x["pcie_l0_recovery"], x["throttle_status"]) == (1, "UNTHROTTLED")
    assert [s.values["power_w"] for s in c.samples] == [137.0, 137.0, 138.0, 135.0, 140.0, 138.0, 135.0, 139.0]
    assert [s.values["temp_c"] for s in c.samples] == [38.0, 39.0, 38.0, 36.0, 37.0, 38.0, 36.0, 37.0]
    assert _inv(c)["max_sm_clock_mhz"] == 2100
    assert c.notes == [amd._CUT_NOTE]  # the file ends without a line end (FREE_GTT, unused)


def test_amd_smi_static_text_mi350x(shared_fixtures: Path) -> None:
    _, c = _load(shared_fixtures, f"{AMD}/issue_rocm-systems-2987_amd-smi-static_mi350x_excerpt.txt")
    g = _inv(c)
    assert (g["pci_device_id"], g["architecture"], g["vbios"], g["pcie_max_gen"]) == ("0x75A01002", "cdna4",
                                                                                      "00154951", 5)
    assert g["serial"] is None and g["uuid"].startswith("unknown-gpu-")  # "<redacted>" is no value
    assert c.info.values["kernel"] == "5.15.0-164-generic"
    assert c.extra[0]["compute_units"] == 128 and c.extra[0]["ras_schema"]["poison"] is True


def test_amd_smi_xgmi_link_matrix(shared_fixtures: Path) -> None:
    _, c = _load(shared_fixtures, f"{AMD}/virtualclient_xgmi-8xMI300X.json")
    x = c.extra[1]["xgmi"]
    assert (x["bit_rate_gbps"], x["max_bandwidth_gbps"], x["link_type"]) == (32.0, 512.0, "XGMI")
    assert x["links"]["0000:0c:00.0"] == {"read_kb": 0.0, "write_kb": 0.0}
    assert "0000:22:00.0" not in x["links"]  # the self-link is "N/A"
    assert len(x["links"]) == 7 and "link matrix" in c.notes[0]


def test_amd_smi_csv_windows_utf16(shared_fixtures: Path) -> None:
    _, c = _load(shared_fixtures, f"{AMD}/virtualclient_metric-csv_windows_utf16le.txt")
    s = _smp(c)
    assert (s["util_gpu_pct"], s["mem_used_mib"], s["mem_free_mib"]) == (98.0, 363, 14565)
    assert s["sm_clock_mhz"] is None and _status(c, "sm_clock_mhz") == "unsupported"
    assert c.extra[0] == {"mem_usage_pct": 1.0}


ROCM_SMI = {  # file: (edge, junction, memory, power W, cap W, gfx MHz, PCIe gen, width, VRAM used MiB)
    "telegraf_mi100_rocm571.json": (31.0, 34.0, 30.0, 39.0, 290.0, 300, 3, 16, 6),
    "telegraf_mi100_rocm602.json": (53.0, 55.0, 53.0, 36.0, 290.0, 300, 4, 16, 6),
    "telegraf_rx6700xt_rocm430.json": (45.0, 47.0, 46.0, 6.0, 211.0, 500, 4, 16, 1547),
    "telegraf_rx6700xt_rocm571.json": (45.0, 47.0, 46.0, 6.0, 211.0, 500, 4, 16, 1492),
    "telegraf_rx6700xt_rocm602.json": (45.0, 47.0, 46.0, None, 211.0, 500, 4, 16, 1499),  # "N/A (Secondary die)"
    "telegraf_rx6700xt_rocm612.json": (45.0, 47.0, 46.0, 6.0, 211.0, 0, 4, 16, 1499),  # sclk "(0Mhz)"
    "telegraf_vega-10-XT.json": (39.0, 40.0, 92.0, 15.0, 170.0, 1269, 3, 16, 16),
    "gpustack_amd-gpu-6.2.4-rocm-smi.json": (45.0, 51.0, 54.0, 53.0, None, None, None, None, 11077),
}


@pytest.mark.parametrize("name", sorted(ROCM_SMI))
def test_rocm_smi_json_across_versions(shared_fixtures: Path, name: str) -> None:
    edge, junction, mem, power, cap, sclk, gen, width, used = ROCM_SMI[name]
    _, c = _load(shared_fixtures, f"{AMD}/{name}")
    s, x = _smp(c), c.extra[0]
    assert (x["temp_edge_c"], x["temp_junction_c"], s["temp_c"], s["mem_temp_c"]) == (edge, junction, junction, mem)
    assert (s["power_w"], s["power_limit_w"], s["sm_clock_mhz"]) == (power, cap, sclk)
    assert (s["pcie_gen"], s["pcie_width"], s["mem_used_mib"]) == (gen, width, used)
    assert s["pcie_replay"] == (None if gen is None else 0)
    if power is None:
        assert _status(c, "power_w") == "unsupported"


def test_rocm_smi_json_details(shared_fixtures: Path) -> None:
    _, mi100 = _load(shared_fixtures, f"{AMD}/telegraf_mi100_rocm571.json")
    assert _inv(mi100)["serial"] is None and _status(mi100, "serial") == "unsupported"  # "0" is no serial
    assert _inv(mi100)["pci_device_id"] == "0x738C1002" and mi100.extra[1]["vram_vendor"] == "hynix"
    assert [g.values["pci_bus_id"] for g in mi100.gpus][-1] == "0000:49:00.0"
    assert mi100.extra[0]["firmware"]["TA XGMI"] == "32.00.00.15"
    _, vega = _load(shared_fixtures, f"{AMD}/telegraf_vega-10-XT.json")
    assert (_smp(vega)["fan_pct"], vega.extra[0]["fan_rpm"]) == (13.0, 682)
    _, navi = _load(shared_fixtures, f"{AMD}/telegraf_rx6700xt_rocm612.json")
    assert (_inv(navi)["architecture"], navi.extra[0]["vram_allocated_pct"]) == ("rdna2", 12.0)
    assert _smp(navi)["util_mem_pct"] == 0.0  # "GPU Memory Read/Write Activity (%)", not the allocation
    _, rx7800 = _load(shared_fixtures, f"{AMD}/gpustack_amd-gpu-6.2.4-rocm-smi.json")
    assert _smp(rx7800)["util_gpu_pct"] == 100.0 and _inv(rx7800)["architecture"] is None  # "gfx11001"


def test_rocm_smi_concise_mi250x_gcds(shared_fixtures: Path) -> None:
    _, c = _load(shared_fixtures, f"{AMD}/issue_wandb-5449_rocm-smi-concise_8xMI250X-GCD_excerpt.txt")
    assert [s.values["temp_c"] for s in c.samples] == [47.0, 46.0, 46.0, 46.0, 47.0, 46.0, 45.0, 39.0]
    assert [s.values["power_w"] for s in c.samples] == [91.0, None, 97.0, None, 89.0, None, 95.0, None]
    assert [s.values["power_limit_w"] for s in c.samples] == [560.0, None, 560.0, None, 560.0, None, 560.0, None]
    assert [bool(x.get("secondary_die")) for x in c.extra] == [False, True] * 4
    assert all(s.status["power_limit_w"] == "unsupported" for s in c.samples[1::2])  # "0.0W" is no cap
    assert all(s.values["fan_pct"] is None for s in c.samples)  # "0%": MI250X has no fan
    assert (_smp(c)["sm_clock_mhz"], _smp(c)["mem_clock_mhz"], c.extra[0]["temp_sensor"]) == (800, 1600, "edge")


def test_rocminfo_agents(shared_fixtures: Path) -> None:
    _, c = _load(shared_fixtures, f"{AMD}/gpustack_amd-gpu-6.2.4-rocminfo.txt")
    g = _inv(c)
    assert (g["architecture"], g["pci_device_id"], g["max_sm_clock_mhz"]) == ("rdna3", "0x747E1002", 2254)
    assert (c.extra[0]["gfx_target"], c.extra[0]["compute_units"], c.extra[0]["bdfid"]) == ("gfx1101", 60, 768)
    assert all(v is None for v in _smp(c).values())  # identity only
    _, h = _load(shared_fixtures, f"{HYGON}/gpustack_hygon-gpu-24.04.3-rocminfo.txt")
    # the file's numbers are cut upstream ("12(0x80)"): its plain numbers are not trusted
    assert _inv(h)["max_sm_clock_mhz"] is None and _status(h, "max_sm_clock_mhz") == "failed"
    assert "compute_units" not in h.extra[0] and h.extra[0]["device_id"] == "0x6210"
    assert _inv(h)["pci_device_id"] is None and any("altered" in n for n in h.notes)


def test_hygon_hy_smi_json(shared_fixtures: Path) -> None:
    _, c = _load(shared_fixtures, f"{HYGON}/issue_gpustack-2032_hy-smi-json_k100-ai_first-2-cards_DERIVED.json")
    s, x = _smp(c, 1), c.extra[1]
    assert (s["power_w"], s["temp_c"], s["mem_temp_c"], s["util_gpu_pct"]) == (76.0, 36.0, 40.0, 0.0)
    assert (s["mem_used_mib"], s["mem_free_mib"], x["temp_edge_c"], x["temp_core_c"]) == (2, 65518, 38.0, 36.0)
    assert _inv(c, 1)["serial"] == "TRCW340004110601" and x["device_id"] == "0x6210"
    assert _inv(c)["pci_device_id"] is None  # Hygon's PCI vendor id is not in the document
    _, r = _load(shared_fixtures, f"{HYGON}/issue_gpustack-3257_rocm-smi-json_k100-ai_first-card_DERIVED.json")
    assert r.extra[0]["card_vendor"] == "Chengdu C-3000 IC Design Co., Ltd."  # Hygon by its keys, not this
    assert (_smp(r)["power_w"], _smp(r)["temp_c"]) == (78.0, 46.0)


def test_hygon_showproductname_empty_card_series(shared_fixtures: Path) -> None:
    _, c = _load(shared_fixtures,
                 f"{HYGON}/issue_HAMi-dcu-vgpu-device-plugin-4_hy-smi-showproductname_empty-card-series.txt")
    assert _inv(c)["name"] is None and _status(c, "name") == "unsupported"
    assert c.extra[0]["card_vendor"] == "Chengdu Haiguang IC Design Co., Ltd."


# --- merging documents of one node ---------------------------------------------------------------------------

METRIC = {"gpu": 0,
          "usage": {"gfx_activity": {"value": 87, "unit": "%"}, "umc_activity": {"value": 41, "unit": "%"}},
          "power": {"socket_power": {"value": 612, "unit": "W"}, "throttle_status": "THROTTLED"},
          "clock": {"gfx_0": {"clk": {"value": 2100, "unit": "MHz"}, "max_clk": {"value": 2100, "unit": "MHz"}},
                    "mem_0": {"clk": {"value": 1300, "unit": "MHz"}}},
          "temperature": {"edge": "N/A", "hotspot": {"value": 83, "unit": "C"}, "mem": {"value": 71, "unit": "C"}},
          "pcie": {"width": 16, "speed": {"value": 32, "unit": "GT/s"}, "replay_count": 3,
                   "l0_to_recovery_count": 2, "nak_sent_count": 0, "nak_received_count": 1},
          "ecc": {"total_correctable_count": 12, "total_uncorrectable_count": 1, "total_deferred_count": 4,
                  "cache_correctable_count": 0, "cache_uncorrectable_count": "N/A"},
          "ecc_blocks": {"UMC": {"correctable_count": 12, "uncorrectable_count": 1, "deferred_count": 4},
                         "GFX": {"correctable_count": 0, "uncorrectable_count": 0, "deferred_count": 0},
                         "SDMA": "N/A"},
          "fan": {"speed": "N/A", "max": "N/A", "rpm": "N/A", "usage": "N/A"},
          "energy": {"total_energy_consumption": {"value": 123456789.5, "unit": "uJ"}},
          "throttle": {"accumulation_counter": 4872059, "ppt_violation_activity": {"value": 12, "unit": "%"},
                       "ppt_violation_status": "ACTIVE", "hbm_thermal_violation_activity": {"value": 0, "unit": "%"},
                       "hbm_thermal_violation_status": "NOT ACTIVE", "prochot_violation_activity": "N/A",
                       "gfx_clk_below_host_limit_power_violation_activity": [{"value": 1, "unit": "%"}]},
          "mem_usage": {"total_vram": {"value": 196592, "unit": "MB"}, "used_vram": {"value": 1024, "unit": "MB"},
                        "free_vram": {"value": 195568, "unit": "MB"}}}
"""One GPU of ``amd-smi metric --json`` as amd-smi 6.x/7.x print it (the layout of ROCm's
device-metrics-exporter test tool and amd-smi's documentation; no capture of it is in the fixtures)."""


@pytest.mark.parametrize("layout", ["list", "gpu_data"])
def test_amd_smi_metric_json_both_layouts(layout: str) -> None:
    doc: Any = [METRIC] if layout == "list" else {"gpu_data": [METRIC]}
    text = json.dumps(doc)
    assert [f for f, (d, _) in FORMATS.items() if d(text)] == ["amd-smi-json"]
    c = parse_amd_smi_json(text)
    s, x = _smp(c), c.extra[0]
    assert (s["util_gpu_pct"], s["util_mem_pct"], s["power_w"], s["temp_c"], s["mem_temp_c"]) == (
        87.0, 41.0, 612.0, 83.0, 71.0)
    assert (s["ecc_corr_vol"], s["ecc_unc_vol"], s["pcie_replay"], s["pcie_gen"]) == (12, 1, 3, 5)
    assert (s["mem_used_mib"], s["mem_free_mib"], s["energy_mj"]) == (1024, 195568, pytest.approx(123456.79, abs=0.001))
    assert s["throttle_mask"] is None and x["throttle_status"] == "THROTTLED"  # no NVIDIA reason bits to give
    assert s["fan_pct"] is None and _status(c, "fan_pct") == "unsupported"
    assert x["ecc_blocks"] == {"UMC": {"correctable": 12, "uncorrectable": 1, "deferred": 4},
                               "GFX": {"correctable": 0, "uncorrectable": 0, "deferred": 0}}
    assert (x["ecc_deferred"], x["ecc_cache_corr"], "ecc_cache_unc" in x) == (4, 0, False)
    assert (x["pcie_l0_recovery"], x["pcie_nak_received"]) == (2, 1)
    assert x["throttle_violation_pct"] == {"ppt": 12.0, "hbm_thermal": 0.0}  # N/A and per-XCC lists: absent
    assert x["throttle_violation_active"] == {"ppt": True, "hbm_thermal": False}


def test_combine_static_metric_version_and_xgmi(shared_fixtures: Path) -> None:
    static = parse_amd_smi_json((shared_fixtures / AMD / "dell-ai_amd_smi_static_json_root.json").read_bytes())
    version = parse_amd_smi_json((shared_fixtures / AMD / "dell-ai_amd_smi_version_root.json").read_bytes())
    metric = parse_amd_smi_json(json.dumps({"gpu_data": [METRIC, {**METRIC, "gpu": 1}]}))
    xgmi = parse_amd_smi_json(json.dumps([{"gpu": 0, "bdf": "0000:3d:00.0", "link_metrics": {
        "link_type": "XGMI", "links": [{"gpu": 1, "bdf": "0000:1b:00.0", "read": {"value": 5, "unit": "KB"},
                                        "write": "N/A"}]}}]))
    c = combine(static, metric, version, xgmi)
    assert len(c.gpus) == 8 and c.info.values["driver_version"] == "6.16.13"
    assert c.gpus[0].uuid == "GPU-28246ce5673b4aa0" == c.samples[0].uuid  # metric's placeholder yields
    assert (_smp(c)["power_w"], _smp(c)["power_limit_w"], _inv(c)["memory_total_mib"]) == (612.0, 750.0, 196592)
    assert _smp(c, 1)["ecc_unc_vol"] == 1 and _smp(c, 2)["ecc_unc_vol"] is None
    assert c.extra[1]["xgmi"]["links"] == {"0000:1b:00.0": {"read_kb": 5.0}}  # matched by bus id
    assert c.extra[0]["compute_units"] == 304 and c.extra[0]["ecc_blocks"]["UMC"]["uncorrectable"] == 1
    with pytest.raises(SourceError, match="different vendors"):
        combine(static, parse_rocm_smi_json(json.dumps({"card0": {"HCU use (%)": "1"}})))


def test_combine_rocminfo_and_rocm_smi(shared_fixtures: Path) -> None:
    info = parse_rocminfo((shared_fixtures / AMD / "gpustack_amd-gpu-6.2.4-rocminfo.txt").read_bytes())
    smi = parse_rocm_smi_json((shared_fixtures / AMD / "gpustack_amd-gpu-6.2.4-rocm-smi.json").read_bytes())
    c = combine(info, smi)
    assert len(c.gpus) == 1 and c.gpus[0].uuid == "GPU-5c88007d760374f3" and c.gpus[0].name == "AMD Radeon RX 7800 XT"
    assert (_smp(c)["power_w"], _inv(c)["architecture"], c.info.values["driver_version"]) == (53.0, "rdna3", "6.2.4")


# --- bad input ------------------------------------------------------------------------------------------------


def _one_line_error(parse: Any, data: bytes | str, match: str) -> None:
    with pytest.raises(SourceError, match=match) as err:
        parse(data)
    assert "\n" not in str(err.value) and len(str(err.value)) < 300


def test_truncated_json_is_an_error(shared_fixtures: Path) -> None:
    for name, parse in (("dell-ai_amd_smi_static_json_root.json", parse_amd_smi_json),
                        ("telegraf_mi100_rocm571.json", parse_rocm_smi_json)):
        data = (shared_fixtures / AMD / name).read_bytes()
        for cut in (len(data) // 3, len(data) - 2):
            _one_line_error(parse, data[:cut], "not valid JSON")


def test_truncated_tables_are_errors_or_drop_the_cut_line(shared_fixtures: Path) -> None:
    concise = (shared_fixtures / AMD / "issue_wandb-5449_rocm-smi-concise_8xMI250X-GCD_excerpt.txt").read_text()
    cut = concise[: concise.index("2    46.0c") + 20] + "\n"  # a row cut mid-way, then a line end
    _one_line_error(parse_rocm_smi_text, cut, "does not fit the header")
    cut = concise[: concise.index("\n2    46.0c") + 30]  # a row cut mid-way, no line end
    c = parse_rocm_smi_text(cut)
    assert len(c.gpus) == 2 and amd._CUT_NOTE in c.notes  # the cut row is not read
    csv_text = "gpu,gfx_usage,fb_total,fb_used\r\n0,98,14928,363\r\n1,97,149"
    c = parse_amd_smi_csv(csv_text)
    assert len(c.gpus) == 1 and amd._CUT_NOTE in c.notes
    _one_line_error(parse_amd_smi_csv, "gpu,gfx_usage,fb_total,fb_used\n0,98,14928\n", "3 fields under a header of 4")
    text = "GPU: 0\n    POWER:\n        SOCKET_POWER: 13"  # "137 W" cut to "13"
    c = parse_amd_smi_text(text)
    assert _smp(c)["power_w"] is None


def test_utf16_with_and_without_bom(shared_fixtures: Path) -> None:
    raw = (shared_fixtures / AMD / "telegraf_mi100_rocm602.json").read_text()
    for data in (raw.encode("utf-16"), b"\xef\xbb\xbf" + raw.encode(), raw.encode("utf-16-le"),
                 raw.encode("utf-16").decode("latin-1")):
        c = parse_rocm_smi_json(data)
        assert c.gpus[0].uuid == "GPU-79ccd55167a2124a" and _smp(c)["power_w"] == 36.0
    _one_line_error(parse_rocm_smi_json, b"\xff\xfe" + raw.encode("utf-16-le")[:-1], "not valid UTF-16")


def test_banner_before_json(shared_fixtures: Path) -> None:
    raw = (shared_fixtures / AMD / "telegraf_vega-10-XT.json").read_text()
    banner = "WARNING: AMD GPU device(s) is/are in a low-power state. Check power control/runtime_status\n\n"
    c = parse_rocm_smi_json(banner + raw)
    assert [f for f, (d, _) in FORMATS.items() if d(banner + raw)] == ["rocm-smi-json"]
    assert _smp(c)["temp_c"] == 40.0
    _one_line_error(parse_rocm_smi_json, "WARNING: no GPU found\n", "no JSON")
    assert parse_amd_smi_json("Permission needed {to read}\n[WARNING] low power\n{\"gpu_data\": []}\n").gpus == []
    _one_line_error(parse_amd_smi_json, "[WARNING] low power\n{\"gpu_data\": [\n", "not valid JSON")


@pytest.mark.parametrize("kind", ["amd-smi-json", "rocm-smi-json", "amd-smi-text", "concise", "csv", "rocminfo",
                                  "smi-text"])
def test_ten_thousand_devices_refused_fast(kind: str) -> None:
    n = 10_000
    docs: dict[str, tuple[Any, str]] = {
        "amd-smi-json": (parse_amd_smi_json, json.dumps({"gpu_data": [{"gpu": i} for i in range(n)]})),
        "rocm-smi-json": (parse_rocm_smi_json, json.dumps({f"card{i}": {"GPU use (%)": "1"} for i in range(n)})),
        "amd-smi-text": (parse_amd_smi_text, "".join(f"GPU: {i}\n    USAGE:\n        GFX_ACTIVITY: 1 %\n"
                                                     for i in range(n))),
        "concise": (parse_rocm_smi_text, "GPU  Temp   AvgPwr  SCLK    MCLK     Fan  Perf  PwrCap  VRAM%  GPU%\n" + "".join(
            f"{i}    47.0c  91.0W   800Mhz  1600Mhz  0%   auto  560.0W    0%   0%\n" for i in range(n))),
        "csv": (parse_amd_smi_csv, "gpu,gfx_usage\n" + "".join(f"{i},1\n" for i in range(n))),
        "rocminfo": (parse_rocminfo, "HSA Agents\n" + "".join(f"Agent {i}\n  Device Type: GPU\n" for i in range(n))),
        "smi-text": (parse_rocm_smi_text, "".join(f"GPU[{i}]\t\t: GPU use (%): 1\n" for i in range(n))),
    }
    parse, data = docs[kind]
    start = time.monotonic()
    _one_line_error(parse, data, f"more than the {MAX_DEVICES}")
    assert time.monotonic() - start < 2.0


def test_size_and_depth_bounds() -> None:
    _one_line_error(parse_amd_smi_json, "[" * 100 + "]" * 100, "nested deeper")
    _one_line_error(parse_amd_smi_json, "[" * 100_000, "nested deeper|not valid JSON")
    _one_line_error(parse_rocm_smi_json, b" " * (amd.MAX_BYTES + 1), "more than")
    _one_line_error(parse_rocm_smi_json, '{"card0": {"GPU use (%)": ' + "9" * 5000 + "}}", "not usable JSON")


def test_control_characters_are_failed_readings_not_values() -> None:
    doc = {"card0": {"Card Series": "MI100\u001b[2J", "Serial Number": "ab\u0007", "GPU use (%)": "5\u0000",
                     "Unique ID": "0x79ccd55167a2124a", "VBIOS version": "113\n-D34", "Card SKU": "D34\u202e01"}}
    c = parse_rocm_smi_json(json.dumps(doc))
    assert (_inv(c)["name"], _inv(c)["serial"], _smp(c)["util_gpu_pct"], _inv(c)["vbios"]) == (None,) * 4
    assert {_status(c, k) for k in ("name", "serial", "util_gpu_pct", "vbios")} == {"failed"}
    assert "sku" not in c.extra[0]
    _one_line_error(parse_rocm_smi_json, '{"card0": {"Card Series": "MI\x01"}}', "not valid JSON")  # raw control
    c = parse_amd_smi_text("GPU: 0\n    ASIC:\n        MARKET_NAME: AMD\x1b]0;pwned\x07\n")
    assert _inv(c)["name"] is None and _status(c, "name") == "failed"


def test_wrong_types_are_failed_readings_or_errors() -> None:
    doc = {"card0": {"Temperature (Sensor edge) (C)": [45], "Average Graphics Package Power (W)": True,
                     "VRAM Total Memory (B)": {"x": 1}, "GPU use (%)": 250, "PCI Bus": 7,
                     "Max Graphics Package Power (W)": -5, "Serial Number": 12345}}
    c = parse_rocm_smi_json(json.dumps(doc))
    for key in ("temp_c", "power_w", "memory_total_mib", "util_gpu_pct", "pci_bus_id"):
        assert _smp(c).get(key, _inv(c).get(key)) is None and _status(c, key) == "failed", key
    assert _status(c, "power_limit_w") == "unsupported" and _inv(c)["serial"] == "12345"
    _one_line_error(parse_rocm_smi_json, '{"card0": [1, 2]}', "not an object")
    _one_line_error(parse_rocm_smi_json, "[1, 2]", "not an object of cardN")
    _one_line_error(parse_amd_smi_json, '{"gpu_data": [1]}', "not an object")
    _one_line_error(parse_amd_smi_json, '{"gpus": []}', "neither a list")
    c = parse_amd_smi_json(json.dumps([{"gpu": 0, "power": {"socket_power": {"value": "x", "unit": "W"}},
                                        "temperature": {"hotspot": {"value": 1e400, "unit": "C"}}}]).replace(
        "Infinity", "1e400"))
    assert _status(c, "power_w") == "failed" and _status(c, "temp_c") == "failed"


def test_not_the_format() -> None:
    _one_line_error(parse_rocminfo, "ROCk module is loaded\nnothing\n", "not rocminfo output")
    _one_line_error(parse_rocminfo, "HSA Agents\nAgent 1\n  Device Type: CPU\n", "no GPU or DCU agent")
    _one_line_error(parse_amd_smi_text, "hello\n", "no 'GPU: <n>' block")
    _one_line_error(parse_rocm_smi_text, "nothing here\n", "no 'GPU\\[n\\]")
    _one_line_error(parse_amd_smi_csv, "a,b\n1,2\n", "no header")
    _one_line_error(parse_rocm_smi_json, '{"system": {"Driver version": "6.3.6"}}', "no 'cardN' entry")
    _one_line_error(parse_rocm_smi_text, "GPU  Temp (DieEdge)  AvgPwr\n0 1 2\n", "not the ROCm 5 layout")
    assert Status.FAILED.value == "failed"


def test_amd_smi_static_rocm6_list_layout_and_cpx_partitions() -> None:
    """``amd-smi static --json`` of ROCm 6 (bare list, ``vbios``, ``limit.max_power``), one MI300X in CPX mode:
    its partitions share the unique id, so each gets its partition's suffix."""
    def part(i: int) -> dict[str, Any]:
        return {"gpu": i, "asic": {"market_name": "AMD Instinct MI300X", "vendor_id": "0x1002", "device_id": "0x74a1",
                                   "asic_serial": "0x28246CE5673B4AA0", "target_graphics_version": "gfx942"},
                "bus": {"bdf": f"0000:1b:00.{i}", "max_pcie_speed": "32 GT/s", "max_pcie_width": 16},
                "vbios": {"version": "022.040.003.043.000001", "part_number": "113-M3000100-102"},
                "limit": {"max_power": {"value": 750, "unit": "W"}, "socket_power": {"value": 700, "unit": "W"},
                          "slowdown_edge_temperature": "N/A", "slowdown_hotspot_temperature": {"value": 100, "unit": "C"}},
                "partition": {"compute_partition": "CPX", "memory_partition": "NPS1", "partition_id": i},
                "vram": {"size": {"value": 24576, "unit": "MB"}}}
    c = parse_amd_smi_json(json.dumps([part(i) for i in range(8)]))
    assert [g.uuid for g in c.gpus] == [f"GPU-28246ce5673b4aa0-p{i}" for i in range(8)]
    assert (_inv(c)["vbios"], _inv(c)["power_enforced_w"], _inv(c)["power_max_w"]) == ("022.040.003.043.000001",
                                                                                       700.0, 750.0)
    assert (_inv(c, 7)["memory_total_mib"], _inv(c)["temp_slowdown_c"], _inv(c)["pcie_max_gen"]) == (24576, 100.0, 5)
    assert c.extra[3]["partition"] == {"compute": "CPX", "memory": "NPS1", "id": "3"}


def test_every_capture_passes_the_collector_and_store_checks(shared_fixtures: Path, tmp_path: Path) -> None:
    """What ``fleetmon import`` will do with these captures: the collector's capture checks (ranges, text,
    unique UUIDs), the store's boundary, then ingest, as ``import-smi`` does for nvidia-smi captures."""
    from fleetmon.collector.client import _check_capture
    from storage.boundary import check_poll
    from storage.db import open_database
    from storage.ingest import ingest_polls

    polls = []
    now = time.time() - 60
    for i, name in enumerate(sorted(EXPECTED)):
        c = _load(shared_fixtures, name)[1].with_time(now)
        if not c.gpus:
            continue
        _check_capture(c, name)
        poll = capture_poll(c, f"amd-{i}", f"file:///amd-{i}", now)
        check_poll(poll)
        polls.append(poll)
    # the same card in several files (root and user static, rocminfo and rocm-smi) is held by the first node
    first: dict[str, str] = {}
    for poll in polls:
        for m in poll.minutes:
            first.setdefault(m.uuid, poll.node)
    db = open_database(tmp_path / "fleet.db")
    try:
        assert ingest_polls(db, polls) == len(first)
    finally:
        db.close()


def test_hostile_names_stay_out_of_extra() -> None:
    doc = [{"gpu": 0, "ecc_blocks": {"UMC\u001b[2J": {"correctable_count": 1}, "GFX": {"correctable_count": 2}},
            "ras": {"ecc_block_state": {"X" * 100: "ENABLED", "UMC": "ENABLED"}}}]
    c = parse_amd_smi_json(json.dumps(doc))
    assert c.extra[0]["ecc_blocks"] == {"GFX": {"correctable": 2}}
    assert c.extra[0]["ecc_block_state"] == {"UMC": "ENABLED"}


def test_rocm_smi_gpu_lines_text() -> None:
    """``rocm-smi --showproductname --showuniqueid --showtemp`` in text (AMD spells ``GPU[n]`` and tabs)."""
    text = ("\n============================ ROCm System Management Interface ============================\n"
            "GPU[0]\t\t: Card Series: \t\tArcturus GL-XL [Instinct MI100]\n"
            "GPU[0]\t\t: Card Vendor: \t\tAdvanced Micro Devices, Inc. [AMD/ATI]\n"
            "GPU[0]\t\t: Unique ID: 0x79ccd55167a2124a\n"
            "GPU[0]\t\t: Temperature (Sensor junction) (C): 55.0\n"
            "GPU[1]\t\t: Card Series: \t\tArcturus GL-XL [Instinct MI100]\n"
            "GPU[1]\t\t: Temperature (Sensor junction) (C): N/A\n"
            "================================== End of ROCm SMI Log ===================================\n")
    assert [f for f, (d, _) in FORMATS.items() if d(text)] == ["rocm-smi-text"]
    c = parse_rocm_smi_text(text)
    assert (c.source, c.vendor, len(c.gpus), c.gpus[0].uuid) == ("rocm-smi-text", "amd", 2, "GPU-79ccd55167a2124a")
    assert (_inv(c)["name"], _smp(c)["temp_c"], _smp(c, 1)["temp_c"]) == ("Arcturus GL-XL [Instinct MI100]", 55.0, None)
