"""Huawei Ascend npu-smi text (../shared/fixtures/F_other_vendors/huawei_ascend) → records, and bad input.

The fixtures hold ``npu-smi info`` tables and ``npu-smi info -m`` mappings only. The ``-t health|ecc|board|temp|
power`` strings below are WRITTEN FROM HUAWEI'S DOCUMENTATION (npu-smi reference pages on hiascend.com: Atlas
200I A2 23.0-26.0 and the Atlas 800 training-server collection example), not captures; values marked
"(ours)" are changed by us to show a fault (the documents only show healthy chips).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fleetmon.records import Status
from fleetmon.sources import SourceError
from fleetmon.sources.npu_smi import FORMATS, MAX_CHIPS, NpuSmiError, SOURCE, detect, parse_npu_smi

ASCEND = "F_other_vendors/huawei_ascend"
INF_OLD = "gpustack_ai-server_atlas-800-inference-server_model-3000_version-1.0.0-1.0.10"
INF_NEW = "gpustack_ai-server_atlas-800-inference-server_model-3000_version-1.0.11-1.0.15"
TRAIN = "gpustack_ai-server_atlas-800-training-server_model-9010_version-24.1.RC2"
A3_NOHEAD = "issue_vllm-ascend-2534_npu-smi-no-version-header_a3_excerpt.txt"

# file: (chips, name, driver version, index per chip, NPU id per chip, chip id per chip, bus id of the first,
#        memory total MiB, memory used MiB per chip, power W per chip (None: "-"), temperature per chip,
#        health per chip); read off the files by hand.
Row = tuple[int, str, str | None, list[int], list[int], list[int], str | None, int | None, list[int | None],
            list[float | None], list[int | None], list[str]]
EXPECTED: dict[str, Row] = {
    f"{INF_OLD}.txt": (
        4, "Ascend 310", "20.2.0", [0, 1, 2, 3], [215] * 4, [0, 1, 2, 3], "0000:da:00.0", 8192, [2703] * 4,
        [12.8] * 4, [56, 57, 57, 55], ["OK"] * 4),
    f"{INF_NEW}.txt": (  # Device column 3-6: the index without -m
        4, "Ascend 310", "21.0.4.B030", [3, 4, 5, 6], [6] * 4, [0, 1, 2, 3], "0000:89:00.0", 8192,
        [2703, 2867, 2867, 2867], [12.8] * 4, [73, 74, 70, 65], ["OK"] * 4),
    f"{TRAIN}.txt": (  # name redacted "xxx" in Huawei's docs; HBM 32768 (the DDR 15137 goes to extra)
        8, "Ascend xxx", "24.1.RC2", list(range(8)), list(range(8)), [0] * 8, "0000:c1:00.0", 32768, [0] * 8,
        [70.5, 71.2, 69.0, 206.9, 70.2, 64.9, 69.4, 203.2], [42, 36, 35, 39, 39, 37, 40, 42],
        ["OK", "OK", "OK", "Warning", "OK", "OK", "OK", "Warning"]),
    "issue_1Panel-9472_npu-smi-24.1.1_910B4_excerpt.txt": (
        2, "Ascend 910B4", "24.1.1", [0, 1], [0, 1], [0, 0], "0000:c1:00.0", 32768, [26838, 29356], [88.2, 87.0],
        [30, 30], ["OK", "OK"]),
    "issue_HAMi-WebUI-47_npu-smi-25.2.0_910B4-1_excerpt.txt": (  # bus id masked by the poster: failed
        2, "Ascend 910B4-1", "25.2.0", [0, 1], [0, 1], [0, 0], None, 65536, [3197, 3197], [91.3, 88.1], [33, 32],
        ["OK", "OK"]),
    A3_NOHEAD: (  # two chips on NPU 0 (Phy-ID 0, 1), NPU 1's first chip; chip 1's power "-"
        3, "Ascend 910", None, [0, 1, 2], [0, 0, 1], [0, 1, 0], "0000:9d:00.0", 65536, [3416, 3195, 3415],
        [178.5, None, 186.3], [36, 36, 36], ["OK"] * 3),
    "issue_vllm-ascend-2658_npu-smi-24.1.rc3.7_a3_excerpt.txt": (
        2, "Ascend 910", "24.1.rc3.7", [0, 1], [0, 0], [0, 1], "0000:9d:00.0", 65536, [3414, 3190], [178.8, None],
        [36, 36], ["OK", "OK"]),
    "issue_vllm-ascend-5588_npu-smi-25.3.rc1_a3_excerpt.txt": (
        2, "Ascend 910", "25.3.rc1", [0, 1], [0, 0], [0, 1], "0000:9d:00.0", 65536, [3180, 2896], [163.6, None],
        [30, 30], ["OK", "OK"]),
}
# npu-smi info -m alone: (chips (MCU rows are none), name, logic ids, NPU ids)
MAPPINGS: dict[str, tuple[int, str, list[int], list[int]]] = {
    f"{INF_OLD}_mapping.txt": (4, "Ascend MiniD", [0, 1, 2, 3], [215] * 4),
    f"{INF_NEW}_mapping.txt": (4, "Ascend MiniD", [0, 1, 2, 3], [6] * 4),  # + an "Mcu" row, logic id "-"
    f"{TRAIN}_mapping.txt": (8, "Ascend 910A", list(range(8)), list(range(8))),
}


def _read(shared: Path, name: str) -> bytes:
    return (shared / ASCEND / name).read_bytes()


def test_every_file_in_the_folder_is_in_a_table(shared_fixtures: Path) -> None:
    present = {p.name for p in (shared_fixtures / ASCEND).iterdir() if p.is_file()}
    assert present == set(EXPECTED) | set(MAPPINGS), sorted(present ^ (set(EXPECTED) | set(MAPPINGS)))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_table_parses_with_its_values(shared_fixtures: Path, name: str) -> None:
    n, model, driver, indexes, npus, chip_ids, bus, total, used, power, temp, health = EXPECTED[name]
    data = _read(shared_fixtures, name)
    assert detect(data.decode())
    c = parse_npu_smi(data)
    assert (c.source, c.vendor) == ("npu-smi", "huawei")
    assert len(c.gpus) == len(c.samples) == len(c.extra) == n
    assert c.info.values["driver_version"] == driver and c.info.values["gpu_count"] == n
    assert [g.name for g in c.gpus] == [model] * n
    assert [g.index for g in c.gpus] == indexes
    assert [x["npu_id"] for x in c.extra] == npus and [x["chip_id"] for x in c.extra] == chip_ids
    assert c.gpus[0].values["pci_bus_id"] == bus
    assert [g.values["memory_total_mib"] for g in c.gpus] == [total] * n
    assert [s.values["mem_used_mib"] for s in c.samples] == used
    assert [s.values["power_w"] for s in c.samples] == power
    assert [s.values["temp_c"] for s in c.samples] == temp
    assert [s.values["util_gpu_pct"] for s in c.samples] == [0] * n
    assert [x["health"] for x in c.extra] == health
    for values, status in [(r.values, r.status) for r in c.gpus] + [(r.values, r.status) for r in c.samples]:
        for key, value in values.items():
            assert (value is None) == (key in status), key
    assert len({g.uuid for g in c.gpus}) == n and all(g.uuid.startswith("NPU-") for g in c.gpus)
    # what npu-smi info cannot tell is unsupported, never zero
    s = c.samples[0]
    for key in ("ecc_unc_vol", "ecc_corr_agg", "sm_clock_mhz", "pcie_gen", "fan_pct", "power_limit_w"):
        assert s.values[key] is None and s.status[key] == Status.UNSUPPORTED.value


def test_the_a3s_second_chip_has_no_power_of_its_own(shared_fixtures: Path) -> None:
    c = parse_npu_smi(_read(shared_fixtures, A3_NOHEAD))
    assert c.samples[1].status["power_w"] == Status.UNSUPPORTED.value
    assert c.gpus[1].values["pci_bus_id"] == "0000:9f:00.0" and c.extra[1]["phy_id"] == 1
    assert c.gpus[0].uuid == "NPU-0000:9d:00.0-0-0" and c.gpus[1].uuid == "NPU-0000:9f:00.0-0-1"
    assert "no npu-smi version line: driver version unknown" in c.notes
    assert c.info.status["driver_version"] == Status.UNSUPPORTED.value


def test_the_training_servers_table_keeps_ddr_hugepages_and_processes(shared_fixtures: Path) -> None:
    c = parse_npu_smi(_read(shared_fixtures, f"{TRAIN}.txt"))
    x = c.extra[3]
    assert (x["ddr_used_mib"], x["ddr_total_mib"], x["hugepages_used"], x["hugepages_total"]) == (3616, 15039, 1232,
                                                                                                  1232)
    assert [p["pid"] for p in x["processes"]] == [37643, 37651, 37659, 37667]
    assert {p["name"] for p in x["processes"]} == {"hlt_host_devmm_"} and x["processes"][0]["memory_mib"] == 686
    assert c.extra[0]["table_name"] == "xxx"


def test_a_masked_bus_id_is_failed_and_the_uuids_stay_apart(shared_fixtures: Path) -> None:
    c = parse_npu_smi(_read(shared_fixtures, "issue_HAMi-WebUI-47_npu-smi-25.2.0_910B4-1_excerpt.txt"))
    assert [g.status["pci_bus_id"] for g in c.gpus] == [Status.FAILED.value] * 2
    assert [g.uuid for g in c.gpus] == ["NPU-0000:xx:00.0-0-0", "NPU-0000:xx:00.0-1-0"]


def test_no_space_before_the_slash(shared_fixtures: Path) -> None:
    c = parse_npu_smi(_read(shared_fixtures, "issue_1Panel-9472_npu-smi-24.1.1_910B4_excerpt.txt"))
    assert "ddr_total_mib" not in c.extra[0]  # "0 / 0": the 910B shows no DDR
    assert c.samples[0].values["mem_used_mib"] == 26838  # "26838/ 32768"


@pytest.mark.parametrize("name", sorted(MAPPINGS))
def test_each_mapping_alone_gives_its_chips_without_readings(shared_fixtures: Path, name: str) -> None:
    n, model, logic, npus = MAPPINGS[name]
    data = _read(shared_fixtures, name)
    assert detect(data.decode())
    c = parse_npu_smi(data)
    assert len(c.gpus) == n and [g.name for g in c.gpus] == [model] * n
    assert [g.index for g in c.gpus] == logic == [x["logic_id"] for x in c.extra]
    assert [x["npu_id"] for x in c.extra] == npus
    assert all(s.values["temp_c"] is None and s.status["temp_c"] == Status.UNSUPPORTED.value for s in c.samples)
    assert any("-m only" in note for note in c.notes)


def test_the_mapping_gives_each_chip_its_logic_id(shared_fixtures: Path) -> None:
    """The 21.0.4 table's Device column says 3-6; `npu-smi info -m` of the same doc says logic ids 0-3."""
    table = _read(shared_fixtures, f"{INF_NEW}.txt") + _read(shared_fixtures, f"{INF_NEW}_mapping.txt")
    c = parse_npu_smi(table)
    assert [g.index for g in c.gpus] == [0, 1, 2, 3]
    assert [(x["logic_id"], x["device_id"], x["chip_name"]) for x in c.extra] == [
        (0, 3, "MiniD"), (1, 4, "MiniD"), (2, 5, "MiniD"), (3, 6, "MiniD")]
    assert [g.name for g in c.gpus] == ["Ascend 310"] * 4  # the table's name wins over the code name


def test_a_redacted_name_yields_to_the_mappings(shared_fixtures: Path) -> None:
    c = parse_npu_smi(_read(shared_fixtures, f"{TRAIN}.txt") + _read(shared_fixtures, f"{TRAIN}_mapping.txt"))
    assert [g.name for g in c.gpus] == ["Ascend 910A"] * 8
    assert c.info.values["driver_version"] == "24.1.RC2"


# -- npu-smi info -t … : written from Huawei's documentation (see the module docstring) ----------------------

# Layouts and key names as Huawei's pages print them. Ours, to show faults the pages do not: "Warning", the two
# error codes (the pages only show "NA"; space-separated is our guess at several codes) and the error text,
# the non-zero ECC counts. The board block joins the training-server example's keys with the Serial Number
# line of the Atlas 200I A2 page (whose serial it is).
DOC_DETAILS = """\
/usr/local/bin/npu-smi info -i 0 -c 0 -t health
        Health Status                  : Warning
        Error Code                     : 80E01809 80E18008
        Error Information              : HBM multi-bit ECC (ours)

/usr/local/bin/npu-smi info -i 1 -t ecc
        NPU ID                                   : 1
        Chip Count                               : 1

        DDR Single Bit Error Count               : 0
        DDR Double Bit Error Count               : 0
        HBM Single Bit Error Count               : 3
        HBM Double Bit Error Count               : 1
        HBM Single Bit Aggregate Total Err Cnt   : 12
        HBM Double Bit Aggregate Total Err Cnt   : 1
        HBM Single Bit Isolated Pages Count      : 2
        HBM Double Bit Isolated Pages Count      : 1
        Chip ID                                  : 0

/usr/local/bin/npu-smi info -i 0 -t board
        NPU ID                         : 0
        Software Version               : 23.0.5
        Firmware Version               : 7.1.0.7.220
        Compatibility                  : OK
        Serial Number                  : 025VLB10K7000275
        PCIe Bus Info                  : 0000:C1:00.0
        PCI Vendor ID                  : 0x19e5
        PCI Device ID                  : 0xD801
        Subsystem Vendor ID            : 0x0200
        Subsystem Device ID            : 0x0100
        Chip Count                     : 1

/usr/local/bin/npu-smi info -i 0 -c 0 -t board
        NPU ID                         : 0
        Chip ID                        : 0
        Chip Type                      : Ascend
        Chip Name                      : xxx
        Chip Version                   : V1
        VDie ID                        : 42C711D4 20B03704 4A10C8D4 14CC040A D2102003

npu-smi info -t temp -i 1
        NPU ID                         : 1
        Chip Count                     : 1

        Chip ID                        : 0
        Temperature (C)                : 50

        LM75A_TE (C)                   : 41
        TEC_TEMP (C)                   : NA
        Chip Name                      : MCU

npu-smi info -t power -i 1
        NPU ID                         : 1
        Chip Count                     : 1

        Chip ID                        : 0
        NPU Real-time Power(W)         : 9.1

        Power Dissipation(W)           : 16.9
        Chip Name                      : MCU
"""


def test_the_t_outputs_go_to_their_chips(shared_fixtures: Path) -> None:
    table = _read(shared_fixtures, "issue_1Panel-9472_npu-smi-24.1.1_910B4_excerpt.txt").decode()
    c = parse_npu_smi(table + "\n" + DOC_DETAILS)
    g0, g1 = c.gpus
    s0, s1 = c.samples
    x0, x1 = c.extra
    # health: the -t answer (Warning, two codes) is more than the table's column (OK)
    assert (x0["health"], x0["error_codes"], x0["error_info"]) == ("Warning", ["80E01809", "80E18008"],
                                                                   "HBM multi-bit ECC (ours)")
    assert x1["health"] == "OK" and "error_codes" not in x1
    # board: the card serial makes the uuid; PCI ids as the catalog writes them; firmware in extra
    assert (g0.uuid, g0.values["serial"]) == ("NPU-025VLB10K7000275-0", "025VLB10K7000275")
    assert (g0.values["pci_device_id"], g0.values["pci_subsystem_id"]) == ("0xD80119E5", "0x01000200")
    assert (x0["firmware_version"], x0["software_version"], x0["die_id"]) == (
        "7.1.0.7.220", "23.0.5", "42C711D4 20B03704 4A10C8D4 14CC040A D2102003")
    assert g1.uuid == "NPU-0000:c2:00.0-1-0" and g1.values["serial"] is None
    # ecc: HBM + DDR into the catalog's counters, every counter by name in extra
    assert (s1.values["ecc_corr_vol"], s1.values["ecc_unc_vol"], s1.values["ecc_corr_agg"],
            s1.values["ecc_unc_agg"], s1.values["retired_sbe"], s1.values["retired_dbe"]) == (3, 1, 12, 1, 2, 1)
    assert x1["ecc"]["HBM Double Bit Aggregate Total Err Cnt"] == 1
    assert s0.values["ecc_unc_vol"] is None and s0.status["ecc_unc_vol"] == Status.UNSUPPORTED.value
    # temp / power: the table's own reading stays (same moment as the rest); the MCU's card power in extra
    assert (s1.values["temp_c"], s1.values["power_w"]) == (30, 87.0)
    assert x1["temperatures"] == {"Temperature (C)": 50.0} and x1["card_power_w"] == 16.9


def test_t_outputs_fill_what_the_mapping_alone_lacks(shared_fixtures: Path) -> None:
    mapping = _read(shared_fixtures, f"{TRAIN}_mapping.txt").decode()
    details = ("npu-smi info -t temp -i 3 -c 0\n        Temperature (C)                : 61\n\n"
               "npu-smi info -t power -i 3 -c 0\nNPU Real-time Power(W)         : NA\n")
    c = parse_npu_smi(mapping + details)
    s = c.samples[3]
    assert s.values["temp_c"] == 61 and s.values["power_w"] is None
    assert s.status["power_w"] == Status.UNSUPPORTED.value  # "NA": unsupported, never 0


def test_a_block_after_a_chips_answer_is_not_that_chips(shared_fixtures: Path) -> None:
    """`-i 0 -c 0` prints one block: a block after it without a command or ids goes to no chip."""
    table = _read(shared_fixtures, "issue_1Panel-9472_npu-smi-24.1.1_910B4_excerpt.txt").decode()
    details = ("npu-smi info -t health -i 1 -c 0\n        Health Status                  : OK\n"
               "        Error Code                     : NA\n\n"
               "        Health Status                  : Critical\n        Error Code                     : 1\n")
    c = parse_npu_smi(table + details)
    assert [x["health"] for x in c.extra] == ["OK", "OK"] and c.extra[1]["error_codes"] == []
    assert any("names no NPU: not used" in n for n in c.notes)


def test_t_output_alone_is_refused_in_one_line() -> None:
    with pytest.raises(NpuSmiError, match="no chip list") as err:
        parse_npu_smi("        Health Status                  : OK\n        Error Code                     : NA\n")
    assert "\n" not in str(err.value)


def test_the_format_entry() -> None:
    detect_fn, parse = FORMATS[SOURCE]
    assert detect_fn is detect and parse is parse_npu_smi


def test_no_other_tools_output_is_taken_for_npu_smi(shared_fixtures: Path) -> None:
    """Auto-detection: no other fixture (nvidia-smi, dcgm, AMD, Hygon, Intel, Moore Threads) looks like npu-smi."""
    others = [p for p in sorted(shared_fixtures.rglob("*")) if p.is_file() and "huawei_ascend" not in p.parts]
    assert len(others) > 40
    for p in others:
        assert not detect(p.read_bytes().decode("utf-8", "replace")), p.name
    for p in sorted((shared_fixtures / "A2_nvidia_smi_q_text").iterdir())[:3]:
        with pytest.raises(SourceError):
            parse_npu_smi(p.read_bytes())


# -- bad input: a one-line error, never a wrong value --------------------------------------------------------

def _table(shared: Path) -> str:
    return _read(shared, "issue_vllm-ascend-5588_npu-smi-25.3.rc1_a3_excerpt.txt").decode()


def _refused(data: bytes | str, match: str) -> str:
    with pytest.raises(NpuSmiError, match=match) as err:
        parse_npu_smi(data)
    assert "\n" not in str(err.value) and isinstance(err.value, SourceError)
    return str(err.value)


def test_a_table_cut_inside_a_row_or_a_record(shared_fixtures: Path) -> None:
    lines = _table(shared_fixtures).splitlines()
    chip1_second = next(i for i, ln in enumerate(lines) if "0000:9F:00.0" in ln)
    _refused("\n".join(lines[:chip1_second] + [lines[chip1_second][:40]]), "cut short")
    _refused("\n".join(lines[:chip1_second]), "one line of two")
    _refused("\n".join(lines[:chip1_second]) + "\n+----+\n", "one line of two")
    head_only = "\n".join(lines[:5])
    _refused(head_only, "not npu-smi output")


def test_utf16_with_a_bom_reads_the_same(shared_fixtures: Path) -> None:
    text = _table(shared_fixtures)
    plain = parse_npu_smi(text)
    for data in (b"\xff\xfe" + text.replace("\n", "\r\n").encode("utf-16-le"),
                 b"\xfe\xff" + text.encode("utf-16-be"), b"\xef\xbb\xbf" + text.encode()):
        c = parse_npu_smi(data)
        assert [(g.uuid, s.values["power_w"], s.values["mem_used_mib"]) for g, s in zip(c.gpus, c.samples)] == [
            (g.uuid, s.values["power_w"], s.values["mem_used_mib"]) for g, s in zip(plain.gpus, plain.samples)]


def test_wrong_encodings(shared_fixtures: Path) -> None:
    text = _table(shared_fixtures)
    _refused(text.encode("utf-16-le"), "control character")  # no BOM: NULs
    _refused(text.encode("latin-1") + b"\xb0\xff", "not UTF-8")
    _refused(b"\xff\xfe" + b"\x00\xd8", "not UTF-8 or UTF-16")  # a lone surrogate


def test_a_banner_before_the_table_is_skipped(shared_fixtures: Path) -> None:
    banner = "\x1b[37mascend module is loaded\x1b[0m\nWelcome to the cluster, last login: today\n"
    c = parse_npu_smi(banner + _table(shared_fixtures))
    assert len(c.gpus) == 2 and c.samples[0].values["power_w"] == 163.6
    assert any("skipped" in n for n in c.notes)


def test_control_characters_are_refused(shared_fixtures: Path) -> None:
    text = _table(shared_fixtures)
    for bad in ("\x00", "\x07", "\x1b]0;title\x07", "\x7f"):
        _refused(text.replace("163.6", "163" + bad + ".6"), "control character")


def test_ten_thousand_chips_are_refused_fast(shared_fixtures: Path) -> None:
    lines = _table(shared_fixtures).splitlines()
    head, record = lines[:6], lines[6:9]
    body = head + [ln.replace("| 0     Ascend910", f"| {i:<5} Ascend910") for i in range(10_000) for ln in record]
    started = time.monotonic()
    _refused("\n".join(body), f"more than {MAX_CHIPS} chips")
    with pytest.raises(NpuSmiError, match="more than 64 chips"):
        parse_npu_smi("\n".join(head + [ln.replace("| 0     Ascend910", f"| {i:<5} Ascend910")
                                        for i in range(100) for ln in record]), max_chips=64)
    assert time.monotonic() - started < 3


def test_huge_input_and_lines_are_refused() -> None:
    _refused(b"x" * (8 * 1024 * 1024 + 1), "bytes, more than")
    _refused("| npu-smi " + " " * 5000 + "|\n", "characters, more than npu-smi writes")
    _refused("\n" * 200_001, "lines")


def test_values_of_the_wrong_kind(shared_fixtures: Path) -> None:
    text = _table(shared_fixtures)
    _refused(text.replace("| 0     Ascend910", "| zero  Ascend910", 1), "NPU id 'zero' is not a number")
    _refused(text.replace("3180 / 65536", "3180 65536  "), "values under 3 columns")
    _refused(text.replace("0    / 0             |", "zero                |", 1), "not used / total")
    _refused(text.replace("| OK            | 163.6", "| OK     | X | 163.6"), "fits no npu-smi table")
    lines = text.splitlines()
    _refused("\n".join(lines[:7] + lines[9:]), "out of order")  # chip 0's second line and the border gone
    # a value that is no number is a failed reading of that field, the rest of the chip stands
    c = parse_npu_smi(text.replace("163.6", "1e400"))
    assert c.samples[0].values["power_w"] is None and c.samples[0].status["power_w"] == Status.FAILED.value
    assert c.samples[0].values["temp_c"] == 30
    c = parse_npu_smi(text.replace("163.6      ", "NA         "))
    assert c.samples[0].status["power_w"] == Status.UNSUPPORTED.value


def test_an_unknown_health_state_or_column_is_kept_as_printed(shared_fixtures: Path) -> None:
    text = _table(shared_fixtures).replace("| OK            | 163.6", "| Degraded      | 163.6")
    c = parse_npu_smi(text)
    assert c.extra[0]["health"] == "Degraded" and any("Degraded" in n for n in c.notes)
    wider = _table(shared_fixtures).replace("HBM-Usage(MB)       ", "HBM-Usage(MB) Util%").replace(
        " / 65536 ", " / 65536  7 ")
    c = parse_npu_smi(wider)
    assert c.extra[0]["other_columns"] == {"Util%": "7"} and c.samples[0].values["mem_used_mib"] == 3180


def test_undecodable_text_is_refused() -> None:
    _refused("| npu-smi 25.3.rc1  Version: 25.3.rc1 |\udcff\n", "lone surrogates")
    _refused(b"\xff\xfe|\x00 \x00n", "not UTF-8 or UTF-16")  # UTF-16 cut inside a character


def test_rows_without_the_header(shared_fixtures: Path) -> None:
    lines = _table(shared_fixtures).splitlines()
    _refused("\n".join(lines[:1] + lines[6:]), "before the table's column headers")
    _refused("", "not npu-smi output")
