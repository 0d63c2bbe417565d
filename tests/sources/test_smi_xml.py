"""nvidia-smi -q -x documents from real GPUs (../shared/fixtures/A_nvidia_smi_xml) → records."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fleetmon.agent.aggregate import MinuteAggregator
from fleetmon.fields import INVENTORY_FIELDS, NODE_FIELDS
from fleetmon.records import GpuSample, Status
from fleetmon.sources import SourceError
from fleetmon.sources.capture import SAMPLE_FIELDS, Capture, minute_of
from fleetmon.sources.smi_xml import parse_smi_xml, parse_timestamp

XML = "A_nvidia_smi_xml"

# file: (GPUs, first GPU's name, UUID, serial, driver, memory MiB, enforced power limit W,
#        aggregate corrected / uncorrected ECC errors). None: the document does not have it
#        (N/A, GeForce without ECC, a trimmed document). Values read off the files by hand.
EXPECTED: dict[str, tuple[int, str, str, str | None, str | None, int | None, float | None, int | None, int | None]] = {
    "k8s-test-infra_hw_qx-a100.xml": (1, "NVIDIA A100-SXM4-40GB", "GPU-00000000-0000-0000-0000-000000000000",
                                      "1650000000001", "570.148.08", 40960, 400.0, 0, 0),
    "k8s-test-infra_hw_qx-b200.xml": (8, "NVIDIA B200", "GPU-00000000-0000-0000-0000-000000000000",
                                      "1650000000001", "580.105.08", 183359, 1000.0, 0, 0),
    "k8s-test-infra_hw_qx-gb200.xml": (4, "NVIDIA GB200", "GPU-00000000-0000-0000-0000-000000000000",
                                       "1650000000001", "580.173.02", 189471, 1200.0, 0, 0),
    "k8s-test-infra_hw_qx-gb300.xml": (4, "NVIDIA GB300", "GPU-00000000-0000-0000-0000-000000000000",
                                       "1650000000001", "580.173.02", 284208, 1400.0, 0, 0),
    "k8s-test-infra_hw_qx-l40s.xml": (1, "NVIDIA L40S", "GPU-00000000-0000-0000-0000-000000000000",
                                      "1650000000001", "595.91.07", 46068, 350.0, 0, 0),
    "k8s-test-infra_hw_qx-t4.xml": (1, "Tesla T4", "GPU-00000000-0000-0000-0000-000000000000",
                                    "1650000000001", "595.91.07", 15360, 70.0, 1, 0),
    "mock_nvml_backed/k8s-test-infra_mock_qx-a100-healthy.xml": (
        2, "NVIDIA A100-SXM4-40GB", "GPU-12345678-1234-1234-1234-123456780000", "1324821083800", "550.163.01",
        40960, 400.0, 0, 0),
    "mock_nvml_backed/k8s-test-infra_mock_qx-gb200-fabric-degraded.xml": (
        2, "NVIDIA GB200", "GPU-b200b200-0000-0000-0000-000000000000", "1562849103700", "580.65.06", 196608,
        1000.0, 0, 0),
    "mock_nvml_backed/k8s-test-infra_mock_qx-gb200-healthy.xml": (
        2, "NVIDIA GB200", "GPU-b200b200-0000-0000-0000-000000000000", "1562849103700", "580.65.06", 196608,
        1000.0, 0, 0),
    "mock_nvml_backed/k8s-test-infra_mock_qx-gb200-throttle-counters.xml": (
        2, "NVIDIA GB200", "GPU-b200b200-0000-0000-0000-000000000000", "1562849103700", "580.65.06", 196608,
        1000.0, 0, 0),
    "netdata_rtx-2080-win.xml": (1, "NVIDIA GeForce RTX 2080", "GPU-fbd55ed4-1eec-4423-0a47-ad594b4333e3", None,
                                 "516.59", 8192, 275.0, None, None),
    "netdata_rtx-3060.xml": (1, "NVIDIA GeForce RTX 3060 Laptop GPU", "GPU-473d8d0f-d462-185c-6b36-6fc23e23e571",
                             None, "515.65.01", 6144, None, None, None),
    "netdata_rtx-4090-driver-535.xml": (1, "NVIDIA GeForce RTX 4090", "GPU-71d1acc2-662d-2166-bf9f-65272d2fc437",
                                        None, "535.86.05", 24564, 450.0, None, None),
    "netdata_rtx-pro-6000-driver-580_excerpt.xml": (1, "NVIDIA RTX PRO 6000 Blackwell",
                                                    "GPU-11111111-2222-3333-4444-555555555555", None, None, None,
                                                    None, None, None),
    "telegraf_3090-v13.xml": (1, "NVIDIA GeForce RTX 3090", "GPU-12345678-aaaa-bbbb-cccc-0123456789ab", None,
                              "590.44.01", 24576, 350.0, None, None),
    "telegraf_a100-sxm4-v12.xml": (1, "NVIDIA A100-SXM4-80GB", "GPU-513536b6-7d19-9063-b049-1e69664bb298",
                                   "1650522003820", "535.54.03", 81920, 500.0, 0, 0),
    "telegraf_a10g.xml": (1, "NVIDIA A10G", "GPU-9a9a6c50-2a47-2f51-a902-b82c3b127e94", "0000000000000",
                          "515.105.01", 23028, 300.0, 0, 0),
    "telegraf_dual_2070-v13.xml": (2, "NVIDIA GeForce RTX 2070", "GPU-12345678-aaaa-bbbb-cccc-0123456789ab", None,
                                   "590.44.01", 8192, 175.0, None, None),
    "telegraf_dual_2080-v13.xml": (2, "NVIDIA GeForce RTX 2080", "GPU-12345678-aaaa-bbbb-cccc-0123456789ab", None,
                                   "590.44.01", 8192, 215.0, None, None),
    "telegraf_gt-1030.xml": (1, "NVIDIA GeForce GT 1030", "GPU-857c6374-f681-cf3a-f99f-9063a87b8ac0", None, "470.74",
                             1998, 30.0, None, None),
    "telegraf_gtx-1660-ti.xml": (1, "Graphics Device", "GPU-304a277d-3545-63b8-3a36-dfde3c992989", None, "418.43",
                                 5912, 130.0, None, None),
    "telegraf_pro-6000-maxq-blackwell-v13.xml": (1, "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
                                                 "GPU-12345678-aaaa-bbbb-cccc-0123456789ab", "0123456789012",
                                                 "590.44.01", 97887, 300.0, None, None),
    "telegraf_quadro-p2000-v12.xml": (1, "Quadro P2000", "GPU-396caaed-39ca-3199-2e68-717cdb786ec6", "0322218049033",
                                      "525.125.06", 5120, 75.0, None, None),
    "telegraf_quadro-p400.xml": (1, "Quadro P400", "GPU-8f750be4-dfbc-23b9-b33f-da729a536494", "0424418054852",
                                 "418.43", 1998, None, None, None),
    "telegraf_rtx-3060-v12.xml": (1, "NVIDIA GeForce RTX 3060", "GPU-d6889ff6-2523-9142-ca3c-1ca3f396a625", None,
                                  "570.124.04", 12288, 170.0, None, None),
    "telegraf_rtx-3080-v12.xml": (1, "NVIDIA GeForce RTX 3080", "GPU-19d6d965-2acc-f646-00f8-4c76979aabb4", None,
                                  "536.40", 10240, 336.0, None, None),
    "telegraf_rtx-3080-v13.xml": (1, "NVIDIA GeForce RTX 3080", "GPU-19d6d965-2acc-f646-00f8-4c76979aabb4",
                                  "REDACTED", "595.58.03", 10240, 320.0, None, None),
    "telegraf_rtx-4000-sff-ada-v13.xml": (1, "NVIDIA RTX 4000 SFF Ada Generation",
                                          "GPU-37037c3f-65c8-ec4d-24a9-420204ad8026", "REDACTED", "595.84", 20475, 70.0,
                                          None, None),
    "telegraf_tesla_p4.xml": (1, "GRID P4-1Q", "GPU-1b1ea7c7-1c4b-ed49-1c72-26c65f2dd207", None, "513.46", 1024, None,
                              None, None),
    "telegraf_tesla_t4_2022.xml": (1, "Tesla T4", "GPU-f6e826dc-c9d7-ac58-6d5d-9048c9e1c124", "1562520014486",
                                   "512.78", 15360, 70.0, 0, 0),
}


def _parse(shared: Path, name: str) -> Capture:
    return parse_smi_xml((shared / XML / name).read_bytes())


def test_every_document_in_the_folder_is_in_the_table(shared_fixtures: Path) -> None:
    present = {str(p.relative_to(shared_fixtures / XML)) for p in (shared_fixtures / XML).rglob("*.xml")}
    assert present <= set(EXPECTED), sorted(present - set(EXPECTED))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_document_parses_with_its_values(shared_fixtures: Path, name: str) -> None:
    path = shared_fixtures / XML / name
    if not path.exists():
        pytest.skip(f"{name} is held back")
    n, model, uuid, serial, driver, mem, limit, ecc_corr, ecc_unc = EXPECTED[name]
    c = parse_smi_xml(path.read_bytes())
    assert len(c.gpus) == len(c.samples) == n
    g, s = c.gpus[0], c.samples[0]
    assert (g.name, g.uuid, g.values["serial"]) == (model, uuid, serial)
    assert c.info.values["driver_version"] == driver
    assert g.values["memory_total_mib"] == mem
    assert g.values["power_enforced_w"] == limit == s.values["power_limit_w"]
    assert (s.values["ecc_corr_agg"], s.values["ecc_unc_agg"]) == (ecc_corr, ecc_unc)
    for key, value in (("serial", serial), ("memory_total_mib", mem), ("power_enforced_w", limit)):
        assert (value is None) == (key in g.status), key  # missing is marked, present is not
    for key in ("ecc_corr_agg", "ecc_unc_agg"):
        assert (s.values[key] is None) == (s.status.get(key) == Status.UNSUPPORTED)
    # every record carries every key, and a value is either there or has a status
    assert set(INVENTORY_FIELDS) <= set(g.values) and set(SAMPLE_FIELDS) <= set(s.values)
    assert set(NODE_FIELDS) <= set(c.info.values)
    for rec in (g, s):
        for key, value in rec.values.items():
            assert (value is None) == (key in rec.status), (key, value, rec.status.get(key))
    assert [x.index for x in c.gpus] == list(range(n))
    assert all(x.state == "ok" for x in c.gpus)


def test_units_and_placeholders(shared_fixtures: Path) -> None:
    c = _parse(shared_fixtures, "telegraf_a100-sxm4-v12.xml")
    g, s = c.gpus[0], c.samples[0]
    assert (s.values["temp_c"], s.values["mem_temp_c"], s.values["power_w"]) == (27, 44, 67.03)
    assert (s.values["sm_clock_mhz"], s.values["mem_clock_mhz"], g.values["max_sm_clock_mhz"]) == (1275, 1593, 1410)
    assert (s.values["mem_used_mib"], s.values["mem_free_mib"], s.values["pcie_tx_kbs"]) == (50, 80999, 4000)
    assert (s.values["pcie_gen"], s.values["pcie_width"], g.values["pcie_max_width"]) == (4, 16, 16)
    assert (g.values["pci_bus_id"], g.values["pci_device_id"]) == ("0000:01:00.0", "0x20B210DE")
    assert (g.values["temp_slowdown_c"], g.values["temp_shutdown_c"], g.values["architecture"]) == (89, 92, "ampere")
    # N/A is unsupported, never zero
    assert s.values["util_gpu_pct"] is None and s.status["util_gpu_pct"] == Status.UNSUPPORTED
    assert s.values["fan_pct"] is None and s.status["fan_pct"] == Status.UNSUPPORTED
    assert s.values["retired_sbe"] is None and s.status["retired_sbe"] == Status.UNSUPPORTED
    # <remapped_rows>N/A</remapped_rows>: the whole block is unsupported
    assert all(s.status[k] == Status.UNSUPPORTED for k in ("remap_corr", "remap_unc", "remap_pending"))
    assert c.notes == ["the document says 4 GPUs are attached but describes 1"]
    assert c.info.values["cuda_driver_version"] == "12.2" and c.info.values["gpu_count"] == 4


def test_mig_devices(shared_fixtures: Path) -> None:
    g = _parse(shared_fixtures, "telegraf_a100-sxm4-v12.xml").gpus[0]
    assert g.values["mig_mode_current"] is True
    assert [m["gpu_instance_id"] for m in g.values["mig_devices"]] == [3, 4, 5, 6]
    assert {m["memory_total_mib"] for m in g.values["mig_devices"]} == {19968}


def test_schema_before_and_after_driver_535(shared_fixtures: Path) -> None:
    old = _parse(shared_fixtures, "telegraf_gtx-1660-ti.xml").samples[0]  # 418: power_readings, throttle reasons
    assert (old.values["power_w"], old.values["power_limit_w"], old.values["throttle_mask"]) == (8.93, 130.0, 0x1)
    new = _parse(shared_fixtures, "k8s-test-infra_hw_qx-b200.xml")  # 580: gpu_power_readings, event reasons
    s = new.samples[0]
    assert (s.values["power_w"], s.values["power_limit_w"], s.values["throttle_mask"]) == (195.68, 1000.0, 0x1)
    assert (s.values["remap_corr"], s.values["remap_pending"], s.values["pcie_gen"]) == (0, 0, 5)
    # Blackwell's thresholds are offsets from T.Limit, not degrees: not used
    assert new.gpus[0].status["temp_slowdown_c"] == Status.UNSUPPORTED
    # the pre-470 ECC layout (single_bit/double_bit totals) on a board without ECC
    p2000 = _parse(shared_fixtures, "telegraf_quadro-p2000-v12.xml").samples[0]
    assert p2000.status["ecc_corr_vol"] == Status.UNSUPPORTED


def test_geforce_without_ecc(shared_fixtures: Path) -> None:
    c = _parse(shared_fixtures, "netdata_rtx-4090-driver-535.xml")
    g, s = c.gpus[0], c.samples[0]
    assert g.values["ecc_mode_current"] is False  # the 4090 reports ECC "Disabled"; no counters
    assert all(s.values[k] is None and s.status[k] == Status.UNSUPPORTED
               for k in ("ecc_corr_vol", "ecc_unc_vol", "ecc_corr_agg", "ecc_unc_agg"))


def test_trimmed_document(shared_fixtures: Path) -> None:
    c = _parse(shared_fixtures, "netdata_rtx-pro-6000-driver-580_excerpt.xml")
    s = c.samples[0]
    assert c.ts is None and c.info.status["driver_version"] == Status.UNSUPPORTED
    assert (s.values["fan_pct"], s.values["temp_c"], s.values["pstate"]) == (40.0, 37, 8)  # padded " 40 % "
    assert s.values["power_w"] == 66.84  # power_draw and average N/A: instant_power_draw
    assert c.info.values["gpu_count"] == 1


def test_timestamp_is_local_time(shared_fixtures: Path) -> None:
    c = _parse(shared_fixtures, "telegraf_a100-sxm4-v12.xml")
    assert c.ts == time.mktime((2023, 8, 4, 11, 44, 30, 0, 0, -1))
    assert all(s.ts == c.ts for s in c.samples)
    assert parse_timestamp("N/A") is None and parse_timestamp("yesterday") is None


LOST = b"""<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
  <timestamp>Mon Aug  7 11:10:06 2023</timestamp>
  <driver_version>535.86.05</driver_version>
  <attached_gpus>2</attached_gpus>
  <gpu id="00000000:3B:00.0">
    <product_name>NVIDIA H100 80GB HBM3</product_name>
    <uuid>GPU-aaaaaaaa-0000-0000-0000-000000000001</uuid>
    <fb_memory_usage><total>81559 MiB</total><used>0 MiB</used><free>81000 MiB</free></fb_memory_usage>
    <temperature><gpu_temp>31 C</gpu_temp></temperature>
  </gpu>
  <gpu id="00000000:5D:00.0">
    <product_name>GPU is lost</product_name>
    <uuid>GPU is lost</uuid>
    <fb_memory_usage>GPU is lost</fb_memory_usage>
    <ecc_errors>GPU is lost</ecc_errors>
    <temperature><gpu_temp>GPU is lost</gpu_temp></temperature>
  </gpu>
</nvidia_smi_log>
"""


def test_a_lost_gpu() -> None:
    c = parse_smi_xml(LOST)
    ok, lost = c.gpus
    assert ok.state == "ok" and c.samples[0].values["temp_c"] == 31
    assert lost.state == "lost" and c.samples[1].state == "lost"
    assert lost.uuid == "lost-gpu-1-0000:5d:00.0" and lost.values["pci_bus_id"] == "0000:5d:00.0"
    assert lost.status["memory_total_mib"] == Status.GPU_LOST
    assert all(v is None for v in c.samples[1].values.values())
    assert set(c.samples[1].status.values()) == {Status.GPU_LOST}


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE nvidia_smi_log [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<nvidia_smi_log><gpu id="0"><product_name>&lol4;</product_name></gpu></nvidia_smi_log>
"""
EXTERNAL = b"""<?xml version="1.0"?>
<!DOCTYPE nvidia_smi_log [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<nvidia_smi_log><gpu id="0"><product_name>&secret;</product_name></gpu></nvidia_smi_log>
"""


@pytest.mark.parametrize("doc", [BILLION_LAUGHS, EXTERNAL], ids=["billion-laughs", "external-entity"])
def test_hostile_xml_is_refused(doc: bytes) -> None:
    with pytest.raises(SourceError, match="refused, the document declares entities or external references"):
        parse_smi_xml(doc)


@pytest.mark.parametrize("doc, message", [(b"<nvidia_smi_log><gpu>", "not well-formed"),
                                          (b"<html></html>", "not <nvidia_smi_log>")])
def test_not_a_document(doc: bytes, message: str) -> None:
    with pytest.raises(SourceError, match=message):
        parse_smi_xml(doc)


def test_a_capture_minute_is_the_agents_minute_of_one_sample(shared_fixtures: Path) -> None:
    """sources.capture.minute_of must agree with the agent's aggregation (it cannot import it)."""
    for name in ("telegraf_a100-sxm4-v12.xml", "k8s-test-infra_hw_qx-b200.xml", "telegraf_gtx-1660-ti.xml"):
        for s in _parse(shared_fixtures, name).samples:
            busy = GpuSample(ts=s.ts, uuid=s.uuid, index=s.index, values={**s.values, "util_gpu_pct": 90,
                                                                            "throttle_mask": 0x4}, status=s.status)
            for sample in (s, busy):
                agg = MinuteAggregator()
                agg.add(sample)
                (expected,) = agg.flush()
                assert minute_of(sample) == expected


# -- hostile documents (issue 20, item 1): every one ends in SourceError with one line, never another exception

_GPU = b"<gpu id=\"00000000:01:00.0\"><uuid>GPU-1</uuid>%s</gpu>"


def _doc(inner: bytes = b"", head: bytes = b"") -> bytes:
    return head + b"<nvidia_smi_log>" + inner + b"</nvidia_smi_log>"


HOSTILE: dict[str, tuple[bytes, str]] = {
    "unknown-encoding": (_doc(head=b'<?xml version="1.0" encoding="x-bogus"?>'), "unknown character encoding"),
    "multibyte-encoding": (_doc(head=b'<?xml version="1.0" encoding="shift_jis"?>'), "encoding"),
    "wrong-encoding": (_doc(head=b'<?xml version="1.0" encoding="utf-16"?>'), "not well-formed"),
    "deep": (_doc(b"<a>" * 5000 + b"</a>" * 5000), "nested more than 32"),
    "tags": (_doc(b"<a/>" * 16_000_000), "more than 200000 tags"),  # refused before it is parsed
    "elements": (_doc(b"<a/>" * 150_000), "more than 100000 elements"),
    "long-attribute": (_doc(b'<gpu id="' + b"x" * 100_000 + b'"/>'), "attributes"),
    "many-attributes": (_doc(b"<gpu " + b" ".join(b'a%d="1"' % i for i in range(100)) + b"/>"), "attributes"),
    "long-text": (_doc(_GPU % (b"<product_name>" + b"x" * 100_000 + b"</product_name>")), "characters of text"),
    "gpus": (_doc((_GPU % b"") * 1025), "more than the 1024"),
    "control-root": (b"<nvidia_smi_log\xc2\x9b/>", "not well-formed"),
    "namespaced": (b'<x:nvidia_smi_log xmlns:x="u"/>', "not <nvidia_smi_log>"),
    "empty": (b"", "not well-formed"),
    "nul": (b"<nvidia_smi_log>\x00</nvidia_smi_log>", "not well-formed"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_documents_end_in_one_line_source_error(name: str) -> None:
    doc, message = HOSTILE[name]
    with pytest.raises(SourceError, match=message) as err:
        parse_smi_xml(doc)
    assert "\n" not in str(err.value) and len(str(err.value)) < 400
    assert "\x1b" not in str(err.value) and "\x9b" not in str(err.value)


def test_a_str_document_is_read_as_utf8() -> None:
    with pytest.raises(SourceError, match="unknown character encoding"):
        parse_smi_xml('<?xml version="1.0" encoding="x-bogus"?><nvidia_smi_log/>')
    with pytest.raises(SourceError, match="not well-formed"):
        parse_smi_xml("<nvidia_smi_log>\ud800</nvidia_smi_log>")  # a lone surrogate
    assert parse_smi_xml("<nvidia_smi_log><gpu><uuid>GPU-é</uuid></gpu></nvidia_smi_log>").gpus[0].uuid == "GPU-é"


@pytest.mark.parametrize("text", ["inf C", "1e400 C", "9" * 400 + " C", "9" * 5000 + " C", "NaN C", "-inf C",
                                  "1" * 16 + " C", "1." + "1" * 16 + " C", "  " * 5000 + "1" + " " * 5000 + "!"])
def test_a_value_that_is_no_number_is_a_failed_reading_not_an_error(text: str) -> None:
    """A number past 15 digits (a 400-digit integer is infinity to float()) or inf/NaN is a failed reading
    of that field: never zero, never infinity, never an exception."""
    big = text.replace(" C", "").encode() if text.endswith(" C") else text.encode()
    doc = _doc(_GPU % (b"<temperature><gpu_temp>" + text.encode() + b"</gpu_temp></temperature>"
                       b"<fb_memory_usage><total>" + big + b" MiB</total></fb_memory_usage>"
                       b"<gpu_power_readings><power_draw>" + big + b" W</power_draw></gpu_power_readings>"
                       b"<performance_state>P" + big + b"</performance_state>"
                       b"<pci><pci_device_id>0x" + b"F" * 40 + b"</pci_device_id></pci>"
                       b"<fan_speed>" + big + b" %</fan_speed>"))
    c = parse_smi_xml(doc + b" " * 10)
    s, g = c.samples[0], c.gpus[0]
    for key in ("temp_c", "power_w", "pstate", "fan_pct"):
        assert s.values[key] is None and s.status[key] == Status.FAILED, key
    for key in ("memory_total_mib", "pci_device_id"):
        assert g.values[key] is None and g.status[key] == Status.FAILED, key


def test_an_absurd_attached_gpus_is_a_note_not_a_count() -> None:
    c = parse_smi_xml(_doc(b"<attached_gpus>" + b"9" * 5000 + b"</attached_gpus>" + _GPU % b""))
    assert c.info.values["gpu_count"] == 1
