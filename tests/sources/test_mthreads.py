"""Moore Threads mthreads-gmi (../shared/fixtures/F_other_vendors/moore_threads) → records; hostile and broken input.

The fixture is the default table. The ``-q`` report and ``-q --json`` forms are tested with strings
WRITTEN BY US from the documented key names (mthreads-gmi's JSON titles as third-party collectors
read them: "Driver Version", "GPU", "GPU UUID", "MTBios Version", "FB Memory Usage" …); no public
capture of those forms was found. Values are made up.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

import pytest

from fleetmon.records import Status
from fleetmon.sources import SourceError
from fleetmon.sources.hl_smi import FORMATS as HL_FORMATS
from fleetmon.sources.mthreads import (
    FORMATS, JSON_SOURCE, QUERY_SOURCE, SOURCE, parse_mthreads, parse_mthreads_json, parse_mthreads_query,
    parse_mthreads_table,
)
from fleetmon.sources.xpu_smi import FORMATS as XPU_FORMATS

FOLDER = "F_other_vendors/moore_threads"
S5000 = "issue_vllm-omni-2337_mthreads-gmi-2.3.2_mtt-s5000_excerpt.txt"


def _fixture(shared_fixtures: Path) -> bytes:
    path = shared_fixtures / FOLDER / S5000
    if not path.exists():
        pytest.skip(f"{S5000} is not present")
    return path.read_bytes()


def test_every_file_of_the_folder_is_tested(shared_fixtures: Path) -> None:
    folder = shared_fixtures / FOLDER
    if not folder.is_dir():
        pytest.skip("no moore_threads fixtures")
    assert {p.name for p in folder.iterdir() if p.is_file()} <= {S5000}


def test_the_s5000_table_parses_with_its_values(shared_fixtures: Path) -> None:
    c = parse_mthreads(_fixture(shared_fixtures))
    assert (c.source, c.vendor) == (SOURCE, "mthreads")
    assert c.ts == datetime(2026, 3, 31, 13, 39, 52).timestamp()
    assert c.info.values["driver_version"] == "3.3.5-server"
    assert c.info.values["gpu_count"] == 2
    assert [g.name for g in c.gpus] == ["MTT S5000", "MTT S5000"]
    assert [g.values["pci_bus_id"] for g in c.gpus] == ["0000:2a:00.0", "0000:3a:00.0"]
    assert [g.uuid for g in c.gpus] == ["unknown-gpu-0-0000:2a:00.0", "unknown-gpu-1-0000:3a:00.0"]
    assert [g.values["memory_total_mib"] for g in c.gpus] == [81920, 81920]
    assert [g.values["pcie_max_width"] for g in c.gpus] == [16, 16]
    assert [s.values["mem_used_mib"] for s in c.samples] == [66641, 64889]
    assert [s.values["temp_c"] for s in c.samples] == [52.0, 51.0]
    assert [s.values["util_gpu_pct"] for s in c.samples] == [0, 0]
    assert [(s.values["pstate"], s.values["pcie_width"]) for s in c.samples] == [(0, 16), (0, 16)]
    assert c.extra[0] == {"tool_version": "2.3.2", "device_type": "Physical", "mpc_capable": "YES",
                          "ecc_mode": "On-die, EDC"}
    # the table has no power, serial or ECC counts: unsupported, never zero
    for field in ("power_w", "ecc_unc_vol", "mem_free_mib", "sm_clock_mhz"):
        assert c.samples[0].values[field] is None and c.samples[0].status[field] == Status.UNSUPPORTED
    assert c.gpus[0].values["serial"] is None
    assert any("placeholder" in n for n in c.notes)


DOC_JSON = {
    "Timestamp": "Thu Apr  2 09:15:04 2026",
    "Driver Version": "3.3.5-server",
    "Attached GPUs": "2",
    "GPU": [
        {"Index": "0", "Product Name": "MTT S4000", "Product Brand": "MTT",
         "GPU UUID": "0d6a4c21-7f3e-4b5a-9c8d-112233445566", "Serial Number": "MTSN0000000001",
         "MTBios Version": "3.4.8",
         "PCI": {"Bus ID": "00000000:12:00.0", "Vendor ID": "0x1ED5", "Device ID": "0x0327",
                 "GPU Link Info": {"PCIe Generation": {"Max": "5", "Current": "4"},
                                   "Link Width": {"Max": "16x", "Current": "8x"}}},
         "FB Memory Spec": {"Type": "GDDR6", "Bus Width": "384bits"},
         "FB Memory Usage": {"Total": "49152MiB", "Used": "1024MiB", "Free": "48128MiB"},
         "Utilization": {"Gpu": "37%", "Memory": "12%"},
         "Temperature": {"GPU Current Temp": "61C"},
         "Power Readings": {"Power Draw ": "212.50W", "Current Power Limit": "450.00W"},
         "Clocks": {"Graphics": "1750MHz", "Memory": "N/A"}},
        {"Index": "1", "Product Name": "MTT S4000", "GPU UUID": "5e11aa07-0000-4000-8000-0000000000b2",
         "Serial Number": "MTSN0000000002", "MTBios Version": "3.4.8",
         "FB Memory Usage": {"Total": "49152MiB", "Used": "0MiB", "Free": "49152MiB"},
         "Utilization": {"Gpu": "0%"}, "Temperature": {"GPU Current Temp": "38C"},
         "Power Readings": {"Power Draw": "N/A"}},
    ],
}

DOC_QUERY = """\
Timestamp                                 : Thu Apr  2 09:15:04 2026
Driver Version                            : 3.3.5-server
Attached GPUs                             : 2
GPU 00000000:12:00.0
    Index                                 : 0
    Product Name                          : MTT S4000
    Product Brand                         : MTT
    GPU UUID                              : 0d6a4c21-7f3e-4b5a-9c8d-112233445566
    Serial Number                         : MTSN0000000001
    MTBios Version                        : 3.4.8
    PCI
        Bus ID                            : 00000000:12:00.0
        Vendor ID                         : 0x1ED5
        Device ID                         : 0x0327
        GPU Link Info
            PCIe Generation
                Max                       : 5
                Current                   : 4
            Link Width
                Max                       : 16x
                Current                   : 8x
    FB Memory Spec
        Type                              : GDDR6
        Bus Width                         : 384bits
    FB Memory Usage
        Total                             : 49152MiB
        Used                              : 1024MiB
        Free                              : 48128MiB
    Utilization
        Gpu                               : 37%
        Memory                            : 12%
    Temperature
        GPU Current Temp                  : 61C
    Power Readings
        Power Draw                        : 212.50W
        Current Power Limit               : 450.00W
    Clocks
        Graphics                          : 1750MHz
        Memory                            : N/A
GPU 00000000:13:00.0
    Index                                 : 1
    Product Name                          : MTT S4000
    GPU UUID                              : 5e11aa07-0000-4000-8000-0000000000b2
    Serial Number                         : MTSN0000000002
    MTBios Version                        : 3.4.8
    FB Memory Usage
        Total                             : 49152MiB
        Used                              : 0MiB
        Free                              : 49152MiB
    Utilization
        Gpu                               : 0%
    Temperature
        GPU Current Temp                  : 38C
    Power Readings
        Power Draw                        : N/A
"""


def _check_doc_capture(source: str, text: str) -> None:
    c = parse_mthreads(text)
    assert (c.source, c.vendor) == (source, "mthreads")
    assert c.ts == datetime(2026, 4, 2, 9, 15, 4).timestamp()
    assert (c.info.values["driver_version"], c.info.values["gpu_count"]) == ("3.3.5-server", 2)
    g, s = c.gpus[0], c.samples[0]
    assert (g.uuid, g.name, g.index) == ("0d6a4c21-7f3e-4b5a-9c8d-112233445566", "MTT S4000", 0)
    assert (g.values["serial"], g.values["vbios"], g.values["pci_bus_id"]) == (
        "MTSN0000000001", "3.4.8", "0000:12:00.0")
    assert g.values["pci_device_id"] == "0x03271ED5"
    assert (g.values["memory_total_mib"], g.values["power_enforced_w"]) == (49152, 450.0)
    assert (g.values["pcie_max_gen"], g.values["pcie_max_width"]) == (5, 16)
    assert (s.values["pcie_gen"], s.values["pcie_width"]) == (4, 8)
    assert (s.values["power_w"], s.values["power_limit_w"], s.values["temp_c"]) == (212.5, 450.0, 61.0)
    assert (s.values["util_gpu_pct"], s.values["util_mem_pct"]) == (37, 12)
    assert (s.values["mem_used_mib"], s.values["mem_free_mib"]) == (1024, 48128)
    assert (s.values["gr_clock_mhz"], s.values["sm_clock_mhz"]) == (1750, 1750)
    assert s.values["mem_clock_mhz"] is None and s.status["mem_clock_mhz"] == Status.UNSUPPORTED
    assert c.extra[0] == {"product_brand": "MTT", "memory_type": "GDDR6", "memory_bus_width": "384bits"}
    s1 = c.samples[1]
    assert (c.gpus[1].uuid, s1.values["temp_c"], s1.values["util_gpu_pct"]) == (
        "5e11aa07-0000-4000-8000-0000000000b2", 38.0, 0)
    assert s1.values["power_w"] is None and s1.status["power_w"] == Status.UNSUPPORTED
    assert s1.values["util_mem_pct"] is None and s1.status["util_mem_pct"] == Status.UNSUPPORTED


def test_the_json_form_written_from_the_docs() -> None:
    _check_doc_capture(JSON_SOURCE, json.dumps(DOC_JSON, indent=4))


def test_the_query_report_written_from_the_docs() -> None:
    _check_doc_capture(QUERY_SOURCE, DOC_QUERY)


def test_a_banner_before_the_json_is_skipped_with_a_note() -> None:
    c = parse_mthreads_json("WARNING: mtml library is newer than the driver\n" + json.dumps(DOC_JSON))
    assert c.gpus[0].uuid == "0d6a4c21-7f3e-4b5a-9c8d-112233445566"
    assert any("text before the JSON skipped" in n for n in c.notes)


def test_utf16_with_a_bom_reads_like_utf8(shared_fixtures: Path) -> None:
    data = _fixture(shared_fixtures)
    plain = parse_mthreads(data)
    again = parse_mthreads(b"\xff\xfe" + data.decode().encode("utf-16-le"))
    assert [s.values for s in again.samples] == [s.values for s in plain.samples]
    doc = json.dumps(DOC_JSON)
    assert parse_mthreads(b"\xfe\xff" + doc.encode("utf-16-be")).gpus[1].uuid == DOC_JSON["GPU"][1]["GPU UUID"]


def test_wrong_types_in_the_json_are_failed_readings_or_errors() -> None:
    doc = json.loads(json.dumps(DOC_JSON))
    gpu = doc["GPU"][0]
    gpu["FB Memory Usage"]["Total"] = ["49152MiB"]
    gpu["Temperature"]["GPU Current Temp"] = True
    gpu["Power Readings"]["Power Draw "] = 212.5  # a number instead of text: still a reading
    gpu["PCI"]["Device ID"] = "0xZZ"
    c = parse_mthreads_json(json.dumps(doc))
    g, s = c.gpus[0], c.samples[0]
    assert g.values["memory_total_mib"] is None and g.status["memory_total_mib"] == Status.FAILED
    assert s.values["temp_c"] is None and s.status["temp_c"] == Status.FAILED
    assert g.values["pci_device_id"] is None and g.status["pci_device_id"] == Status.FAILED
    assert s.values["power_w"] == 212.5
    for bad, says in (({"GPU": {"0": {}}}, "no list"), ({"GPU": ["MTT"]}, "no mapping"), ([1, 2], "no JSON object")):
        with pytest.raises(SourceError, match=says):
            parse_mthreads_json(json.dumps(bad))


_TABLE_HEAD = """\
Tue Mar 31 13:39:52 2026
---------------------------------------------------------------------
    mthreads-gmi:2.3.2           Driver Version:3.3.5-server
---------------------------------------------------------------------
"""
_RECORD = """\
{i}    MTT S5000            |00000000:{i:02x}:00.0    |0%    66641MiB(81920MiB)
     Physical      P0     |16x(16x)            |52C   YES
                                               |      On-die, EDC
+-------------------------------------------------------------------+
"""


@pytest.mark.parametrize(("parse", "text", "says"), [
    (parse_mthreads_table, _TABLE_HEAD + _RECORD.format(i=0).split("\n")[0] + "\n", "cut short"),
    (parse_mthreads_table, _RECORD.format(i=0), "no 'mthreads-gmi:"),
    (parse_mthreads_table, _TABLE_HEAD + _RECORD.format(i=0) * 2, "listed twice"),
    (parse_mthreads_table, _TABLE_HEAD.replace("2026", "2026\x1b[0m"), "control character"),
    (parse_mthreads_json, json.dumps(DOC_JSON)[:300], "not valid JSON"),
    (parse_mthreads_json, "no json here", "no JSON object"),
    (parse_mthreads_json, "{" + '"a":' * 0 + '"GPU": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested"),
    (parse_mthreads_json, '{"GPU": [], "n": ' + "9" * 5000 + "}", "unreadable JSON"),
    (parse_mthreads_query, "Product Name : MTT S80\n", "no 'Driver Version"),
])
def test_bad_input_is_one_line_error(parse: object, text: str, says: str) -> None:
    assert callable(parse)
    with pytest.raises(SourceError) as exc:
        parse(text)
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_ten_thousand_gpus_are_refused_fast() -> None:
    table = _TABLE_HEAD + "".join(_RECORD.format(i=i) for i in range(10_000))
    doc = json.dumps({"Driver Version": "3.3.5", "GPU": [{"Index": str(i)} for i in range(10_000)]})
    query = "Driver Version : 3.3.5\n" + "".join(f"GPU {i}\n    Index : {i}\n" for i in range(10_000))
    start = time.perf_counter()
    for parse, text in ((parse_mthreads_table, table), (parse_mthreads_json, doc), (parse_mthreads_query, query)):
        with pytest.raises(SourceError, match="more than"):
            parse(text)
    assert time.perf_counter() - start < 3.0


def test_a_long_line_of_blanks_costs_linear_time() -> None:
    line = "0" + " " * 4000 + "|" + " " * 40 + "|" + " " * 40
    start = time.perf_counter()
    c = parse_mthreads_table(_TABLE_HEAD + (line + "\n") * 200)
    assert c.gpus == [] and time.perf_counter() - start < 2.0


def test_formats_names_and_detection_keep_to_their_own_format(shared_fixtures: Path) -> None:
    assert set(FORMATS) == {"mthreads-gmi", "mthreads-gmi-q", "mthreads-gmi-json"}
    texts = {"mthreads-gmi": _fixture(shared_fixtures).decode(), "mthreads-gmi-q": DOC_QUERY,
             "mthreads-gmi-json": json.dumps(DOC_JSON)}
    sources = {"mthreads-gmi": SOURCE, "mthreads-gmi-q": QUERY_SOURCE, "mthreads-gmi-json": JSON_SOURCE}
    for name, text in texts.items():
        for other, (detect, parse) in FORMATS.items():
            assert detect(text) == (other == name), (name, other)
        assert FORMATS[name][1](text).source == sources[name]
        for detect, _ in (*HL_FORMATS.values(), *XPU_FORMATS.values()):
            assert not detect(text)


def test_the_captures_pass_the_collectors_checks() -> None:
    """The table's placeholder UUIDs and mthreads-gmi's own UUIDs (no ``GPU-`` prefix) pass the collector."""
    from fleetmon.collector.client import _check_capture

    _check_capture(parse_mthreads(DOC_QUERY), "query")
    _check_capture(parse_mthreads(json.dumps(DOC_JSON)), "json")


def test_the_table_capture_passes_the_collectors_checks(shared_fixtures: Path) -> None:
    from fleetmon.collector.client import _check_capture

    _check_capture(parse_mthreads(_fixture(shared_fixtures)), "table")


def test_a_report_cut_inside_its_last_line_does_not_read_that_line() -> None:
    cut = DOC_QUERY.rstrip("\n").replace("Power Draw                        : N/A", "Power Draw : 21")
    assert cut.endswith(": 21")
    c = parse_mthreads_query(cut)
    assert c.samples[1].values["power_w"] is None and c.samples[1].status["power_w"] == Status.UNSUPPORTED
    assert any("without a line break" in n for n in c.notes)
    assert parse_mthreads_query(cut + "\n").samples[1].values["power_w"] == 21.0  # a whole line is read
