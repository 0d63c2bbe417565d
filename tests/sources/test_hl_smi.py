"""Intel Gaudi hl-smi CSV (../shared/fixtures/F_other_vendors/intel) → records; hostile and broken input."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fleetmon.records import Status
from fleetmon.sources import SourceError
from fleetmon.sources.hl_smi import (
    ALL_SMI_FIELDS, FORMATS, QUERY_COMMAND, QUERY_FIELDS, SOURCE, detect_hl_smi, parse_hl_smi,
)
from fleetmon.sources.mthreads import FORMATS as MT_FORMATS
from fleetmon.sources.xpu_smi import FORMATS as XPU_FORMATS

GAUDI3 = "F_other_vendors/intel/all-smi_hl-smi_2xHL-325L_excerpt.csv"


def _fixture(shared_fixtures: Path) -> bytes:
    path = shared_fixtures / GAUDI3
    if not path.exists():
        pytest.skip(f"{GAUDI3} is not present")
    return path.read_bytes()


def test_the_gaudi3_capture_parses_with_its_values(shared_fixtures: Path) -> None:
    data = _fixture(shared_fixtures)
    assert detect_hl_smi(data.decode())
    c = parse_hl_smi(data)
    assert (c.source, c.vendor, c.ts) == (SOURCE, "intel", None)
    assert c.info.values["driver_version"] == "1.22.1-97ec1a4"
    assert c.info.values["gpu_count"] == 2
    assert [g.uuid for g in c.gpus] == ["01P4-HL3090A0-18-U4V193-22-07-00", "01P4-HL3090A0-18-U4V298-03-04-04"]
    assert [g.name for g in c.gpus] == ["HL-325L", "HL-325L"]
    assert [g.index for g in c.gpus] == [0, 1]
    for g in c.gpus:
        assert g.values["memory_total_mib"] == 131072
        assert g.values["power_enforced_w"] == 850.0
        # hl-smi's -Q gives no serial or bus id in this layout: not available, never made up
        assert g.values["serial"] is None and g.status["serial"] == Status.UNSUPPORTED
        assert g.values["pci_bus_id"] is None
    s0, s1 = c.samples
    assert (s0.values["power_w"], s0.values["temp_c"], s0.values["util_gpu_pct"]) == (226.0, 36, 0)
    assert (s1.values["power_w"], s1.values["temp_c"], s1.values["util_gpu_pct"]) == (230.0, 39, 0)
    assert (s0.values["mem_used_mib"], s0.values["mem_free_mib"], s0.values["power_limit_w"]) == (672, 130400, 850.0)
    # what hl-smi's query cannot tell stays unsupported (a value never becomes 0)
    for field in ("mem_temp_c", "ecc_unc_vol", "pcie_gen", "throttle_mask", "energy_mj"):
        assert s0.values[field] is None and s0.status[field] == Status.UNSUPPORTED
    assert c.extra == [{}, {}]
    assert any("no header" in n for n in c.notes)


def test_the_capture_with_the_field_list_given_reads_the_same(shared_fixtures: Path) -> None:
    data = _fixture(shared_fixtures)
    given = parse_hl_smi(data, fields=ALL_SMI_FIELDS)
    guessed = parse_hl_smi(data)
    assert [s.values for s in given.samples] == [s.values for s in guessed.samples]


# Written from the hl-smi documentation's -Q field list (fleetmon's own query, with the header, as the
# SSH source runs it); the values are made up, in hl-smi's formats (units in values, "N/A", "Gen5", "x16").
_HEADER = ", ".join(f"{f} [MiB]" if f.startswith("memory.") else f"{f} [W]" if f.startswith("power.") else f
                    for f in QUERY_FIELDS)
_ROW0 = ("0, 01P4-HL3090A0-18-U4V193-22-07-00, AN00000001, HL-325L, 0000:19:00.0, 2, 1.22.1-97ec1a4, "
         "131072 MiB, 1024 MiB, 130048 MiB, 612 W, 850 W, 71 C, 88 %, 3, 0, 17, 1, Enabled, Enabled, "
         "1600 MHz, 1600 MHz, Gen5, Gen5, x16, x16, 0, 12")
_ROW1 = ("1, 01P4-HL3090A0-18-U4V298-03-04-04, AN00000002, HL-325L, 0000:1a:00.0, 3, 1.22.1-97ec1a4, "
         "131072 MiB, N/A, N/A, N/A, 850 W, N/A, N/A, N/A, N/A, N/A, N/A, N/A, N/A, N/A, N/A, N/A, N/A, "
         "N/A, N/A, N/A, N/A")
FULL = f"{_HEADER}\n{_ROW0}\n{_ROW1}\n"


def test_the_query_command_asks_for_the_documented_fields_with_a_header() -> None:
    assert QUERY_COMMAND[:2] == ("hl-smi", "-Q") and QUERY_COMMAND[-2:] == ("-f", "csv")
    assert QUERY_COMMAND[2].split(",") == list(QUERY_FIELDS)


def test_fleetmons_query_maps_every_field() -> None:
    assert detect_hl_smi(FULL)
    c = parse_hl_smi(FULL)
    g, s, x = c.gpus[0], c.samples[0], c.extra[0]
    assert g.uuid == "01P4-HL3090A0-18-U4V193-22-07-00" and g.values["serial"] == "AN00000001"
    assert g.values["pci_bus_id"] == "0000:19:00.0"
    assert (g.values["ecc_mode_current"], g.values["ecc_mode_pending"]) == (True, True)
    assert (g.values["max_sm_clock_mhz"], g.values["pcie_max_gen"], g.values["pcie_max_width"]) == (1600, 5, 16)
    assert (s.values["ecc_corr_vol"], s.values["ecc_unc_vol"]) == (3, 0)
    assert (s.values["ecc_corr_agg"], s.values["ecc_unc_agg"]) == (17, 1)
    assert (s.values["sm_clock_mhz"], s.values["pcie_gen"], s.values["pcie_width"]) == (1600, 5, 16)
    assert (s.values["power_w"], s.values["temp_c"], s.values["util_gpu_pct"]) == (612.0, 71, 88)
    assert x == {"module_id": "2", "violation_power": 0.0, "violation_thermal": 12.0}
    # the second device answers N/A: every such reading is unsupported, none is zero
    s1 = c.samples[1]
    for field in ("power_w", "temp_c", "util_gpu_pct", "ecc_unc_agg", "mem_used_mib", "pcie_gen"):
        assert s1.values[field] is None and s1.status[field] == Status.UNSUPPORTED
    assert c.extra[1] == {"module_id": "3"}
    assert not c.notes


def test_nounits_and_a_header_with_units() -> None:
    text = ("index, uuid, name, bus_id, memory.total [MiB], power.draw [W], temperature.aip [C]\n"
            "0, U-0, HL-225, 0000:3b:00.0, 98304, 96.5, 31\n")
    c = parse_hl_smi(text)
    assert c.gpus[0].values["memory_total_mib"] == 98304
    assert (c.samples[0].values["power_w"], c.samples[0].values["temp_c"]) == (96.5, 31)


def test_without_uuid_the_serial_or_a_placeholder_names_the_device() -> None:
    c = parse_hl_smi("index, serial, name, bus_id\n0, AN7, HL-225, 0000:3b:00.0\n")
    assert c.gpus[0].uuid == "AN7"
    c = parse_hl_smi("index, name, bus_id\n0, HL-225, 0000:3b:00.0\n")
    assert c.gpus[0].uuid == "unknown-gpu-0-0000:3b:00.0"


def test_utf16_with_a_bom_reads_like_utf8(shared_fixtures: Path) -> None:
    data = _fixture(shared_fixtures)
    plain = parse_hl_smi(data)
    for encoded in (b"\xff\xfe" + data.decode().encode("utf-16-le"), b"\xef\xbb\xbf" + data):
        again = parse_hl_smi(encoded)
        assert [s.values for s in again.samples] == [s.values for s in plain.samples]
        assert [g.uuid for g in again.gpus] == [g.uuid for g in plain.gpus]


@pytest.mark.parametrize(("text", "says"), [
    ("", "empty"),
    (_HEADER + "\n" + _ROW0[:80] + "\n", "a cut or garbled table"),  # truncated row
    ("0, 01P4, HL-325L, 1.22.1, 131072 MiB\n", "no header"),  # no header, no known layout
    ("hl-smi: some banner before the table\n" + _ROW0 + "\n", "no header"),  # a banner
    ("0, U, HL-325L\x1b[31m, 1.22.1, 131072 MiB\n", "control character"),
    ("index, uuid\n0, U\n0, U\n", "same device"),
    ("index, index\n0, 0\n", "named twice"),
    ("index, uuid\nzero, U\n", "no index"),
])
def test_bad_input_is_one_line_error(text: str, says: str) -> None:
    with pytest.raises(SourceError) as exc:
        parse_hl_smi(text)
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_bytes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(SourceError, match="not UTF-8"):
        parse_hl_smi(b"index, name\n0, HL-225 \xb0\n")


def test_a_header_that_contradicts_the_given_fields_is_refused() -> None:
    with pytest.raises(SourceError, match="other fields"):
        parse_hl_smi("index, name\n0, HL-225\n", fields=("index", "uuid"))


def test_wrong_types_are_failed_readings_not_values() -> None:
    c = parse_hl_smi("index, uuid, name, power.draw, temperature.aip, memory.total\n"
                     "0, U-0, HL-225, lots W, 1e400 C, -5 GiB-ish\n")
    s, g = c.samples[0], c.gpus[0]
    assert s.values["power_w"] is None and s.status["power_w"] == Status.FAILED
    assert s.values["temp_c"] is None and s.status["temp_c"] == Status.FAILED
    assert g.values["memory_total_mib"] is None and g.status["memory_total_mib"] == Status.FAILED


def test_ten_thousand_devices_are_refused_fast() -> None:
    rows = "\n".join(f"{i}, U-{i}, HL-325L, 1.22.1, 131072 MiB, 1 MiB, 1 MiB, 1 W, 850 W, 30 C, 0 %"
                     for i in range(10_000))
    start = time.perf_counter()
    with pytest.raises(SourceError, match="more than the 1024"):
        parse_hl_smi(rows)
    assert time.perf_counter() - start < 2.0  # bounded work, not a timed benchmark
    assert len(parse_hl_smi(rows, max_gpus=10_000).gpus) == 10_000


def test_formats_names_and_detection_keep_to_their_own_format(shared_fixtures: Path) -> None:
    data = _fixture(shared_fixtures).decode()
    assert set(FORMATS) == {"hl-smi-csv"}
    detect, parse = FORMATS["hl-smi-csv"]
    assert detect(data) and parse(data).source == SOURCE
    for other_detect, _ in (*XPU_FORMATS.values(), *MT_FORMATS.values()):
        assert not other_detect(data)
    assert not detect("Timestamp, DeviceId, GPU Power (W)\n08:08:16.817, 0, 281.13\n")
    assert not detect("index, name, pci.bus_id, temperature.gpu\n0, NVIDIA A100, 0000:01:00.0, 40\n")


def test_the_capture_passes_the_collectors_checks(shared_fixtures: Path) -> None:
    """Every value is one the collector takes (ranges, types, text), Gaudi's own UUIDs included."""
    from fleetmon.collector.client import _check_capture

    _check_capture(parse_hl_smi(_fixture(shared_fixtures)), "gaudi")
    _check_capture(parse_hl_smi(FULL), "gaudi")


def test_a_last_line_cut_inside_its_last_value_is_refused() -> None:
    good = ("0, U-0, HL-325L, 1.22.1, 131072 MiB, 672 MiB, 130400 MiB, 226 W, 850 W, 36 C, 100 %\n"
            "1, U-1, HL-325L, 1.22.1, 131072 MiB, 672 MiB, 130400 MiB, 230 W, 850 W, 39 C, 100 %")
    assert parse_hl_smi(good).samples[1].values["util_gpu_pct"] == 100  # no final line break is fine
    with pytest.raises(SourceError, match="the last line is cut short"):
        parse_hl_smi(good[:-3])  # "100 %" cut to "10": the right column count, a wrong value
    assert parse_hl_smi(good[:-3] + "\n").samples[1].values["util_gpu_pct"] == 10  # a complete line says 10


def test_a_header_without_aip_fields_is_detected_by_the_gaudi_name() -> None:
    assert detect_hl_smi("index, name, bus_id\n0, HL-225, 0000:3b:00.0\n")
    assert not detect_hl_smi("index, name, bus_id\n0, Tesla T4, 0000:3b:00.0\n")
