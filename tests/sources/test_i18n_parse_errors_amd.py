"""The AMD parsers', the shared tool-text checks' and dcgm-exporter's remaining parse errors in the reader's language
(issue 25): sizes, encodings, nesting, JSON, a GPU entry of the wrong type, a line or row that does not fit, the
counters CSV, the reason a scrape line is not Prometheus text. Fed through the real parse entry points; the English
stays byte for byte (other tests compare it), the offending text, numbers and type names are inserted as they are."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fleetmon import i18n
from fleetmon.sources import SourceError
from fleetmon.sources.amd import (
    MAX_BYTES, combine, parse_amd_smi_csv, parse_amd_smi_json, parse_amd_smi_text, parse_rocm_smi_json,
    parse_rocm_smi_text, parse_rocminfo,
)
from fleetmon.sources.dcgm import parse_counters_csv, parse_dcgm
from fleetmon.sources.hl_smi import parse_hl_smi

from helpers.cli import fleetmon
from helpers.refusals import assert_refused


@pytest.fixture
def chinese() -> Iterator[None]:
    i18n.set_language("zh_CN")
    yield None
    i18n.set_language("en")


_CONCISE = "GPU  Temp   AvgPwr  SCLK    MCLK    Fan  Perf  PwrCap  VRAM%  GPU%\n"
_ROCMINFO_CPU = "HSA Agents\n==========\nAgent 1\n  Name: AMD EPYC 7763\n  Device Type: CPU\n"
_TEMP = 'DCGM_FI_DEV_GPU_TEMP{gpu="0"}'

CASES: list[tuple[str, Callable[[], object], str, str]] = [
    # AMD: amd-smi JSON
    ("amd-json-entry", lambda: parse_amd_smi_json('[{"gpu": 0}, 5]'),
     "amd-smi JSON: GPU entry 1 is a int, not an object", "amd-smi JSON：GPU 条目 1 是 int，不是对象"),
    ("amd-json-layout", lambda: parse_amd_smi_json('{"x": 1}'),
     'amd-smi JSON: neither a list of GPUs nor {"gpu_data": [...]}',
     'amd-smi JSON：既不是 GPU 列表，也不是 {"gpu_data": [...]}'),
    ("amd-json-cut", lambda: parse_amd_smi_json('[\n  {"gpu": 0,\n'),
     "amd-smi JSON: not valid JSON (Expecting property name enclosed in double quotes at line 3 column 1; "
     "truncated?)",
     "amd-smi JSON：不是有效的 JSON（第 3 行第 1 列：Expecting property name enclosed in double quotes；被截断了？）"),
    ("amd-json-deep", lambda: parse_amd_smi_json("[" * 20 + "]" * 20), "amd-smi JSON: nested deeper than 16 levels",
     "amd-smi JSON：嵌套超过 16 层"),
    ("amd-json-devices", lambda: parse_amd_smi_json("[" + ",".join(['{"gpu": 0}'] * 1025) + "]"),
     "amd-smi JSON: 1025 devices in one document, more than the 1024 one may list",
     "amd-smi JSON：一个文档中有 1025 个设备，超过一个文档允许列出的 1024 个"),
    ("amd-utf16", lambda: parse_amd_smi_json(b"\xff\xfe[\x00\x00\xd8"),
     "amd-smi JSON: not valid UTF-16 (unexpected end of data)", "amd-smi JSON：不是有效的 UTF-16（unexpected end of data）"),
    ("amd-nul", lambda: parse_amd_smi_json("[\x00\u0100"),
     "amd-smi JSON: NUL characters in the text (UTF-16 read as something else?)",
     "amd-smi JSON：文本中有 NUL 字符（UTF-16 文本被当作其他编码读取了？）"),
    ("amd-size", lambda: parse_amd_smi_json(b" " * (MAX_BYTES + 1)),
     "amd-smi JSON: 16777217 bytes, more than the 16777216 a document may have",
     "amd-smi JSON：16777217 字节，超过一个文档允许的 16777216 字节"),
    # AMD: amd-smi text and CSV (the line from the document with its runs of spaces folded, as before)
    ("amd-text-line", lambda: parse_amd_smi_text("GPU: 0\n  foo   bar\n"),
     "amd-smi text: line not 'KEY: value': 'foo bar'", "amd-smi text：不是 'KEY: value' 格式的行：'foo bar'"),
    ("amd-text-margin", lambda: parse_amd_smi_text("GPU: 0\nASIC:\n"),
     "amd-smi text: expected 'GPU: <n>' at the left margin, found 'ASIC:'",
     "amd-smi text：行首应为 'GPU: <n>'，实际为 'ASIC:'"),
    ("amd-text-lines", lambda: parse_amd_smi_text("\n" * 250_001), "amd-smi text: more than 250000 lines",
     "amd-smi text：超过 250000 行"),
    ("amd-csv-row", lambda: parse_amd_smi_csv("gpu,gfx_usage,edge\n0,1\n"),
     "amd-smi CSV: row 1 has 2 fields under a header of 3 (truncated?)",
     "amd-smi CSV：第 1 行有 2 个字段，而表头有 3 个（被截断了？）"),
    # AMD: rocm-smi JSON and text, rocminfo, combine
    ("rocm-json-card", lambda: parse_rocm_smi_json('{"card0": "N/A"}'),
     "rocm-smi JSON: card0 is a str, not an object", "rocm-smi JSON：card0 是 str，不是对象"),
    ("rocm-json-none", lambda: parse_rocm_smi_json('{"system": {}}'), "rocm-smi JSON: no 'cardN' entry",
     "rocm-smi JSON：没有 'cardN' 条目"),
    ("rocm-json-list", lambda: parse_rocm_smi_json("[1]"), "rocm-smi JSON: not an object of cardN entries",
     "rocm-smi JSON：不是由 cardN 条目组成的对象"),
    ("rocm-concise-columns", lambda: parse_rocm_smi_text("GPU  Temp  Power\n0  35c  10W\n"),
     "rocm-smi text: concise table with columns 'gpu temp power', not the ROCm 5 layout",
     "rocm-smi text：简明表格的列为 'gpu temp power'，不是 ROCm 5 的格式"),
    ("rocm-concise-row", lambda: parse_rocm_smi_text(_CONCISE + "0    35.0c  10.0W   800Mhz\n"),
     "rocm-smi text: table row '0 35.0c 10.0W 800Mhz' does not fit the header (truncated?)",
     "rocm-smi text：表格行 '0 35.0c 10.0W 800Mhz' 与表头不符（被截断了？）"),
    ("rocm-concise-empty", lambda: parse_rocm_smi_text(_CONCISE + "==========\n"),
     "rocm-smi text: concise table without rows", "rocm-smi text：简明表格没有数据行"),
    ("rocminfo-cpu", lambda: parse_rocminfo(_ROCMINFO_CPU), "rocminfo: no GPU or DCU agent (only CPUs)",
     "rocminfo：没有 GPU 或 DCU 类型的 Agent（只有 CPU）"),
    ("combine-none", lambda: combine(), "combine: no capture", "combine：没有采集结果"),
    # The shared tool-text checks (through hl-smi's parser)
    ("text-encoding", lambda: parse_hl_smi(b"index\n\x80\n"),
     "hl-smi CSV: not UTF-8 text (byte 6 cannot be read); save the output as UTF-8",
     "hl-smi CSV：不是 UTF-8 文本（偏移 6 处的字节无法读取）；请将输出保存为 UTF-8"),
    ("text-control", lambda: parse_hl_smi("index\n\x1b[31m0\n"),
     "hl-smi CSV: a control character (\\x1b) in line 2: not the tool's output",
     "hl-smi CSV：第 2 行有控制字符（\\x1b）：不是该工具的输出"),
    ("text-line-length", lambda: parse_hl_smi("x" * 5000 + "\n"),
     "hl-smi CSV: line 1 has 5000 characters, more than the 4096 a line of the tool's output may have",
     "hl-smi CSV：第 1 行有 5000 个字符，超过工具输出中一行允许的 4096 个字符"),
    ("text-lines", lambda: parse_hl_smi("\n" * 250_001), "hl-smi CSV: more than 250000 lines",
     "hl-smi CSV：超过 250000 行"),
    ("text-size", lambda: parse_hl_smi("x" * (16 * 1024 * 1024 + 1)),
     "hl-smi CSV: 16777217 characters, more than the 16777216 an output may have",
     "hl-smi CSV：16777217 个字符，超过一份输出允许的 16777216 个字符"),
    # dcgm-exporter: the counters CSV and the reason a scrape line is not Prometheus text format
    ("dcgm-counters", lambda: parse_counters_csv("# comment\nDCGM_FI_DEV_GPU_TEMP\n"),
     "dcgm-exporter counters CSV: 'DCGM_FI_DEV_GPU_TEMP': expected name, type, help",
     "dcgm-exporter counters CSV：'DCGM_FI_DEV_GPU_TEMP'：应包含名称、类型和说明"),
    ("dcgm-labels", lambda: parse_dcgm('DCGM_FI_DEV_GPU_TEMP{gpu="0" 1\n'),
     'dcgm-exporter scrape: line 1: not Prometheus text format (malformed labels): DCGM_FI_DEV_GPU_TEMP{gpu="0" 1',
     'dcgm-exporter scrape：第 1 行：不是 Prometheus 文本格式（标签格式错误）：DCGM_FI_DEV_GPU_TEMP{gpu="0" 1'),
    ("dcgm-value", lambda: parse_dcgm(_TEMP + "\n"),
     "dcgm-exporter scrape: line 1: not Prometheus text format (expected a value and an optional timestamp): "
     + _TEMP, "dcgm-exporter scrape：第 1 行：不是 Prometheus 文本格式（应为一个值，外加一个可选的时间戳）：" + _TEMP),
    ("dcgm-number", lambda: parse_dcgm(_TEMP + " hot\n"),
     "dcgm-exporter scrape: line 1: not Prometheus text format (not a number: 'hot'): " + _TEMP + " hot",
     "dcgm-exporter scrape：第 1 行：不是 Prometheus 文本格式（不是数字：'hot'）：" + _TEMP + " hot"),
    ("dcgm-no-name", lambda: parse_dcgm('{gpu="0"} 1\n'),
     'dcgm-exporter scrape: line 1: not Prometheus text format (no metric name): {gpu="0"} 1',
     'dcgm-exporter scrape：第 1 行：不是 Prometheus 文本格式（没有指标名）：{gpu="0"} 1'),
]


@pytest.mark.parametrize(("parse", "english", "said"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_document_is_refused_in_the_readers_language(chinese: None, parse: Callable[[], object], english: str,
                                                           said: str) -> None:
    assert_refused(parse, english, said)


def test_a_reason_cut_to_one_line_stays_english(chinese: None) -> None:
    """A line whose quoted form passes the 200 characters an AMD reason may have (80 for a scrape line's) is cut as
    before: the cut English is said as it is (a translation of the whole would say more than the English does)."""
    tags = "\U000e0001" * 60  # repr writes each as \U000e0001: 600 characters
    with pytest.raises(SourceError) as caught:
        parse_amd_smi_text("GPU: 0\n  " + tags + "\n")
    english = str(caught.value)
    assert english.startswith("amd-smi text: line not 'KEY: value': '\\U000e0001") and english.endswith("…")
    assert len(english) == len("amd-smi text: ") + 200
    assert i18n.message_of(caught.value) == english
    with pytest.raises(SourceError) as caught:
        parse_dcgm(_TEMP + " " + tags + "\n")
    english = str(caught.value)
    assert english.startswith("dcgm-exporter scrape: line 1: not Prometheus text format (not a number: '\\U000e0001")
    assert i18n.message_of(caught.value).startswith("dcgm-exporter scrape：第 1 行：不是 Prometheus 文本格式（not a number: '")


def test_import_says_a_bad_amd_capture_in_chinese(tmp_path: Path) -> None:
    capture = tmp_path / "n1.json"
    capture.write_text('{"card0": "N/A"}\n')
    english = fleetmon("import", str(capture), "--db", str(tmp_path / "en.db"))
    assert english.returncode != 0 and "rocm-smi JSON: card0 is a str, not an object" in english.stderr
    proc = fleetmon("--lang", "zh_CN", "import", str(capture), "--db", str(tmp_path / "zh.db"))
    assert proc.returncode == english.returncode
    assert proc.stderr.strip().splitlines() == [english.stderr.strip().replace(
        "rocm-smi JSON: card0 is a str, not an object", "rocm-smi JSON：card0 是 str，不是对象").replace(
        f"{capture}: ", f"{capture}：", 1)], (english.stderr, proc.stderr)
