"""Intel xpu-smi dump CSV (../shared/fixtures/F_other_vendors/intel) → records; hostile and broken input."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

import pytest

from fleetmon.records import Status
from fleetmon.sources import SourceError
from fleetmon.sources.hl_smi import FORMATS as HL_FORMATS
from fleetmon.sources.mthreads import FORMATS as MT_FORMATS
from fleetmon.sources.xpu_smi import FORMATS, SOURCE, detect_xpu_smi, parse_xpu_smi

INTEL = "F_other_vendors/intel"
MAX1550 = "issue_xpumanager-98_xpu-smi-dump_6xMax1550_excerpt.csv"
ARC = "issue_xpumanager-76_xpu-smi-dump_arc-a770_excerpt.csv"
DATED = "issue_xpumanager-79_xpu-smi-dump-date_excerpt.csv"
HL_SMI = "all-smi_hl-smi_2xHL-325L_excerpt.csv"  # tests/sources/test_hl_smi.py


def _read(shared_fixtures: Path, name: str) -> bytes:
    path = shared_fixtures / INTEL / name
    if not path.exists():
        pytest.skip(f"{name} is not present")
    return path.read_bytes()


def test_every_file_of_the_intel_folder_is_tested(shared_fixtures: Path) -> None:
    folder = shared_fixtures / INTEL
    if not folder.is_dir():
        pytest.skip("no intel fixtures")
    assert {p.name for p in folder.iterdir() if p.is_file()} <= {MAX1550, ARC, DATED, HL_SMI}


def test_six_max1550_each_from_its_last_row(shared_fixtures: Path) -> None:
    data = _read(shared_fixtures, MAX1550)
    assert detect_xpu_smi(data.decode())
    c = parse_xpu_smi(data)
    assert (c.source, c.vendor, c.ts) == (SOURCE, "intel", None)  # time of day only: no capture time
    assert c.info.values["gpu_count"] == 6
    assert [g.index for g in c.gpus] == [0, 1, 2, 3, 4, 5]
    assert [g.uuid for g in c.gpus] == [f"unknown-gpu-{i}-xpu-smi" for i in range(6)]
    s0 = c.samples[0]  # device 0's third row, 08:08:18.817
    assert (s0.values["power_w"], s0.values["sm_clock_mhz"], s0.values["temp_c"], s0.values["mem_temp_c"]) == (
        409.54, 1600, 40.5, 34.5)
    assert c.extra[0] == {"mem_used_pct": 20.41, "rows": 3, "sample_time": "08:08:18.817"}
    s5 = c.samples[5]  # device 5's second row, 08:08:17.818
    assert (s5.values["power_w"], s5.values["temp_c"], s5.values["mem_temp_c"]) == (284.77, 41.0, 37.0)
    assert c.extra[5]["mem_used_pct"] == 0.51 and c.extra[5]["rows"] == 2
    # utilisation is N/A on every row: unsupported, never 0; nor does a dump know names or memory totals
    for s in c.samples:
        assert s.values["util_gpu_pct"] is None and s.status["util_gpu_pct"] == Status.UNSUPPORTED
    for g in c.gpus:
        assert g.name == "unknown" and g.values["memory_total_mib"] is None and g.values["pci_bus_id"] is None
    assert "13 rows for 6 device(s) from 08:08:16.817 to 08:08:18.817" in c.notes[0]


def test_arc_a770_memory_used_and_the_3d_engine(shared_fixtures: Path) -> None:
    c = parse_xpu_smi(_read(shared_fixtures, ARC))
    assert [g.index for g in c.gpus] == [0, 1, 2, 3]
    assert [s.values["mem_used_mib"] for s in c.samples] == [17, 17, 49, 17]
    assert [x["mem_used_pct"] for x in c.extra] == [0.1, 0.1, 0.3, 0.1]
    # "3D Engine (%)" is N/A: absent from extra, not zero
    assert all("3D Engine (%)" not in x for x in c.extra)
    for s in c.samples:
        assert s.values["util_gpu_pct"] is None and s.status["util_gpu_pct"] == Status.UNSUPPORTED
        assert s.values["power_w"] is None  # not dumped: unsupported
    assert any("3D Engine (%)" in n for n in c.notes)


def test_the_date_variant_gives_the_capture_time(shared_fixtures: Path) -> None:
    c = parse_xpu_smi(_read(shared_fixtures, DATED))
    assert c.ts == pytest.approx(datetime(2024, 5, 6, 5, 47, 55, 671000).timestamp())
    assert c.samples[0].ts == c.ts
    s = c.samples[0]
    assert (s.values["power_w"], s.values["temp_c"], s.values["util_gpu_pct"], s.values["sm_clock_mhz"]) == (
        43.09, 24.0, 0, 0)
    assert c.extra[0]["rows"] == 3


# Written from xpu-smi's documented metric titles (xpumanager's dump help); values made up.
DOC = ("Timestamp, DeviceId, GPU Memory Bandwidth Utilization (%), GPU Memory Errors Correctable, "
       "GPU Memory Errors Uncorrectable, Throttle reason, GPU Energy Consumed (J), Compute Engine 0 (%)\n"
       "06:14:46.000,    0, 41.00, 2, 0, Not Throttled, 1234.50, 97.00\n")


def test_documented_columns_map_to_fields_and_extra() -> None:
    c = parse_xpu_smi(DOC)
    s = c.samples[0]
    assert (s.values["util_mem_pct"], s.values["ecc_corr_vol"], s.values["ecc_unc_vol"]) == (41, 2, 0)
    assert c.extra[0] == {"throttle_reason": "Not Throttled", "energy_j": 1234.5, "Compute Engine 0 (%)": 97.0,
                          "rows": 1, "sample_time": "06:14:46.000"}


def test_utf16_with_a_bom_reads_like_utf8(shared_fixtures: Path) -> None:
    data = _read(shared_fixtures, MAX1550)
    plain = parse_xpu_smi(data)
    again = parse_xpu_smi(b"\xff\xfe" + data.decode().encode("utf-16-le"))
    assert [s.values for s in again.samples] == [s.values for s in plain.samples]


_HEAD = "Timestamp, DeviceId, GPU Power (W)\n"


@pytest.mark.parametrize(("text", "says"), [
    ("", "no 'Timestamp, DeviceId"),
    ("xpu-smi: banner\n" + _HEAD + "08:08:16.817, 0, 281.13\n", "no 'Timestamp, DeviceId"),
    (_HEAD, "no rows"),
    (_HEAD + "08:08:16.817, 0, 281.13\n08:08:17.817, 0\n", "a cut or garbled dump"),
    (_HEAD + "08:08:16.817, zero, 281.13\n", "no number"),
    (_HEAD + "yesterday, 0, 281.13\n", "neither a time of day"),
    (_HEAD + "08:08:16.817, 0, 281.13\x07\n", "control character"),
    ("Timestamp, DeviceId, TileId, GPU Power (W)\n08:08:16.817, 0, 0, 281.13\n", "per-tile"),
    ("Timestamp, DeviceId, GPU Power (W), GPU Power (W)\n08:08:16.817, 0, 1, 2\n", "given twice"),
])
def test_bad_input_is_one_line_error(text: str, says: str) -> None:
    with pytest.raises(SourceError) as exc:
        parse_xpu_smi(text)
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_wrong_types_are_failed_readings_not_values() -> None:
    c = parse_xpu_smi(_HEAD + "08:08:16.817, 0, hot\n")
    assert c.samples[0].values["power_w"] is None and c.samples[0].status["power_w"] == Status.FAILED


def test_ten_thousand_devices_are_refused_fast() -> None:
    text = _HEAD + "".join(f"08:08:16.817, {i}, 281.13\n" for i in range(10_000))
    start = time.perf_counter()
    with pytest.raises(SourceError, match="more than 1024 devices"):
        parse_xpu_smi(text)
    assert time.perf_counter() - start < 2.0


def test_formats_names_and_detection_keep_to_their_own_format(shared_fixtures: Path) -> None:
    assert set(FORMATS) == {"xpu-smi-csv"}
    detect, parse = FORMATS["xpu-smi-csv"]
    for name in (MAX1550, ARC, DATED):
        text = _read(shared_fixtures, name).decode()
        assert detect(text) and parse(text).source == SOURCE
        for other_detect, _ in (*HL_FORMATS.values(), *MT_FORMATS.values()):
            assert not other_detect(text)


def test_the_captures_pass_the_collectors_checks(shared_fixtures: Path) -> None:
    from fleetmon.collector.client import _check_capture

    for name in (MAX1550, ARC, DATED):
        _check_capture(parse_xpu_smi(_read(shared_fixtures, name)), name)
    _check_capture(parse_xpu_smi(DOC), "doc")


def test_a_last_line_cut_inside_its_last_value_is_refused(shared_fixtures: Path) -> None:
    text = _read(shared_fixtures, MAX1550).decode().rstrip("\n")
    assert text.endswith("20.41")
    with pytest.raises(SourceError, match="the last line is cut short"):
        parse_xpu_smi(text[:-1])  # "20.41" cut to "20.4"
    assert parse_xpu_smi(text).extra[0]["mem_used_pct"] == 20.41  # whole, only the line break missing
