"""npu-smi's and mthreads-gmi's parse errors in the reader's language (issue 25): sizes, encodings, control
characters, cut or garbled table rows and chip records, -t output without a chip list, duplicates; mthreads-gmi's
cut records, GPU counts, nesting and JSON errors. Fed through the real parse entry points (a real npu-smi and
mthreads-gmi capture from ../shared/fixtures, damaged, where a table is needed); the English stays byte for byte
(other tests compare it), the offending text, line numbers, column titles and tool names are inserted as they are."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fleetmon import i18n
from fleetmon.sources.mthreads import parse_mthreads, parse_mthreads_json, parse_mthreads_query, parse_mthreads_table
from fleetmon.sources.npu_smi import MAX_BYTES, parse_npu_smi
from fleetmon.text import printable

from helpers.cli import fleetmon
from helpers.refusals import assert_refused

ASCEND = "F_other_vendors/huawei_ascend"
NPU_TABLE = f"{ASCEND}/issue_vllm-ascend-5588_npu-smi-25.3.rc1_a3_excerpt.txt"  # 2 chips on NPU 0 (Phy-ID 0, 1)
NPU_TWO_CARDS = f"{ASCEND}/issue_1Panel-9472_npu-smi-24.1.1_910B4_excerpt.txt"  # NPU 0 and 1, chip 0 each
MTHREADS_TABLE = "F_other_vendors/moore_threads/issue_vllm-omni-2337_mthreads-gmi-2.3.2_mtt-s5000_excerpt.txt"


@pytest.fixture
def chinese() -> Iterator[None]:
    i18n.set_language("zh_CN")
    yield None
    i18n.set_language("en")


Parse = Callable[[], object]
Case = tuple[str, Parse, str, str]

# -- input that needs no capture --------------------------------------------------------------------------------

_PROCESSES = "| NPU Chip | Process id | Process name | Process memory(MB) |\n| 0 | 1 | python | 2 |\n"
_MAPPING = "NPU ID    Chip ID    Chip Logic ID    Chip Name\n" + "".join(f"{i}    0    {i}    Ascend 910B\n"
                                                                   for i in range(5))
_T_HEALTH = "        Health Status                  : OK\n        Error Code                     : NA\n"


def _deep(levels: int) -> str:
    inner = '"x"'
    for i in range(levels):
        inner = f'{{"t{i}": {inner}}}'
    return '{"Driver Version": "1", "GPU": [' + inner + "]}"


def _unreadable_int() -> str:
    """Python's own reason for a number too long to convert (its wording is Python's, so it is asked here)."""
    try:
        int("1" * 5000)
    except ValueError as exc:
        return printable(str(exc), 120)
    raise AssertionError("int() took 5000 digits")


CASES: list[Case] = [
    ("npu-characters", lambda: parse_npu_smi("x" * (MAX_BYTES + 1)),
     "npu-smi: 8,388,609 characters, more than the 8,388,608 its output may have",
     "npu-smi：8,388,609 个字符，超过其输出允许的 8,388,608 个"),
    ("npu-bytes", lambda: parse_npu_smi(b"x" * (MAX_BYTES + 1)),
     "npu-smi: 8,388,609 bytes, more than the 8,388,608 its output may have",
     "npu-smi：8,388,609 字节，超过其输出允许的 8,388,608 字节"),
    ("npu-surrogates", lambda: parse_npu_smi("| npu-smi \ud800 |\n"),
     "npu-smi: the text holds undecodable bytes (lone surrogates): not npu-smi output",
     "npu-smi：文本中含有无法解码的字节（孤立代理项）：不是 npu-smi 的输出"),
    ("npu-encoding", lambda: parse_npu_smi(b"abc\xb0\xff"),
     "npu-smi: not UTF-8 or UTF-16 with a BOM (bytes b0ff at offset 3)",
     "npu-smi：既不是 UTF-8，也不是带 BOM 的 UTF-16（偏移 3 处的字节为 b0ff）"),
    ("npu-lines", lambda: parse_npu_smi("\n" * 200_001), "npu-smi: more than 200,000 lines",
     "npu-smi：行数多于 200,000"),
    ("npu-nul", lambda: parse_npu_smi("npu-smi\n| a\x00 |\n"),
     "npu-smi: control character \\x00 on line 2 (UTF-16 without a BOM?)",
     "npu-smi：第 2 行有控制字符 \\x00（可能是没有 BOM 的 UTF-16？）"),
    ("npu-control", lambda: parse_npu_smi("npu-smi\x07\n"), "npu-smi: control character \\x07 on line 1",
     "npu-smi：第 1 行有控制字符 \\x07"),
    ("npu-long-line", lambda: parse_npu_smi("| npu-smi " + " " * 5000 + "|\n"),
     "npu-smi: line 1 has 5,011 characters, more than npu-smi writes (4,096)",
     "npu-smi：第 1 行有 5,011 个字符，超过 npu-smi 输出的行长（4,096）"),
    ("npu-t-key-not-a-number", lambda: parse_npu_smi("        NPU ID                         : x1\n" + _T_HEALTH),
     "npu-smi: line 1: NPU ID 'x1' is not a number", "npu-smi：第 1 行：NPU ID 'x1' 不是数字"),
    ("npu-row-before-headers", lambda: parse_npu_smi("| 0 Ascend910 | OK | 163.6 |\n"),
     "npu-smi: line 1: a table row before the table's column headers", "npu-smi：第 1 行：表格行出现在表头之前"),
    ("npu-cells", lambda: parse_npu_smi("| a | b |\n"), "npu-smi: line 1: a table row of 2 cells fits no npu-smi table",
     "npu-smi：第 1 行：表格行有 2 个单元格，不符合任何 npu-smi 表格"),
    ("npu-process-row", lambda: parse_npu_smi(_PROCESSES),
     "npu-smi: line 2: a process row without its NPU and Chip ids", "npu-smi：第 2 行：进程行缺少 NPU ID 和 Chip ID"),
    ("npu-mapping-rows", lambda: parse_npu_smi(_MAPPING, max_chips=1),
     "npu-smi: more than 4 rows in the chip mapping", "npu-smi：芯片映射的行数多于 4"),
    ("npu-mapping-chips", lambda: parse_npu_smi(_MAPPING, max_chips=2), "npu-smi: more than 2 chips in one input",
     "npu-smi：一份输入中的芯片多于 2 个"),
    ("npu-t-alone", lambda: parse_npu_smi(_T_HEALTH),
     "npu-smi: -t output without the `npu-smi info` table or -m mapping: no chip list to give it to "
     "(import them together)",
     "npu-smi：只有 -t 输出，没有 `npu-smi info` 表格或 -m 映射：没有可归属的芯片列表（请一起导入）"),
    ("npu-nothing", lambda: parse_npu_smi("hello\n"),
     "npu-smi: no npu-smi table, chip mapping or -t output found: not npu-smi output",
     "npu-smi：未找到 npu-smi 表格、芯片映射或 -t 输出：不是 npu-smi 的输出"),
    ("mthreads-json-no-object", lambda: parse_mthreads_json("hello\n"),
     "mthreads-gmi JSON: no JSON object in the output", "mthreads-gmi JSON：输出中没有 JSON 对象"),
    ("mthreads-json-invalid", lambda: parse_mthreads_json('{"GPU": ['),
     "mthreads-gmi JSON: not valid JSON (Expecting value at line 1 column 10): a cut or garbled output",
     "mthreads-gmi JSON：不是有效的 JSON（第 1 行第 10 列：Expecting value）：输出被截断或已损坏"),
    ("mthreads-json-recursion", lambda: parse_mthreads_json('{"GPU": ' + "[" * 200_000 + "]" * 200_000 + "}"),
     "mthreads-gmi JSON: nested too deep", "mthreads-gmi JSON：嵌套过深"),
    ("mthreads-json-unreadable", lambda: parse_mthreads_json('{"GPU": [' + "1" * 5000 + "]}"),
     f"mthreads-gmi JSON: unreadable JSON ({_unreadable_int()})",
     f"mthreads-gmi JSON：无法读取的 JSON（{_unreadable_int()}）"),
    ("mthreads-json-top", lambda: parse_mthreads_json('{"Driver Version": "1"}'),
     "mthreads-gmi JSON: the top level is no object with a 'GPU' list",
     "mthreads-gmi JSON：顶层不是带 'GPU' 列表的对象"),
    ("mthreads-json-gpu-list", lambda: parse_mthreads_json('{"GPU": 1}'),
     "mthreads-gmi JSON: 'GPU' is no list of devices", "mthreads-gmi JSON：'GPU' 不是设备列表"),
    ("mthreads-json-count", lambda: parse_mthreads_json('{"GPU": [{}, {}]}', max_gpus=1),
     "mthreads-gmi JSON: 2 GPUs, more than the 1 one output may describe",
     "mthreads-gmi JSON：有 2 块 GPU，超过一份输出允许描述的 1 块"),
    ("mthreads-json-entry", lambda: parse_mthreads_json('{"GPU": [{}, 7]}'),
     "mthreads-gmi JSON: GPU entry 1 is no mapping of titles", "mthreads-gmi JSON：GPU 条目 1 不是“标题：值”的映射"),
    ("mthreads-json-same-device",
     lambda: parse_mthreads_json('{"GPU": [{"GPU UUID": "GPU-x"}, {"GPU UUID": "GPU-x"}]}'),
     "mthreads-gmi JSON: two GPUs name the same device 'GPU-x'", "mthreads-gmi JSON：两块 GPU 指向同一设备 'GPU-x'"),
    ("mthreads-json-levels", lambda: parse_mthreads_json(_deep(9)),
     "mthreads-gmi JSON: nested more than 8 levels deep", "mthreads-gmi JSON：嵌套超过 8 层"),
    ("mthreads-q-count", lambda: parse_mthreads_query("Driver Version : 1\nGPU 0\nGPU 1\n", max_gpus=1),
     "mthreads-gmi -q report: more than 1 GPUs, more than one output may describe",
     "mthreads-gmi -q report：GPU 多于 1 块，超过一份输出允许描述的数量"),
    ("mthreads-q-levels", lambda: parse_mthreads_query(
        "Driver Version : 1\nGPU 0\n" + "".join(" " * i + f"T{i}\n" for i in range(1, 12))),
     "mthreads-gmi -q report: nested more than 8 levels deep", "mthreads-gmi -q report：嵌套超过 8 层"),
]


@pytest.mark.parametrize(("parse", "english", "said"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_document_is_refused_in_the_readers_language(chinese: None, parse: Parse, english: str,
                                                           said: str) -> None:
    assert_refused(parse, english, said)


# -- real captures, damaged -------------------------------------------------------------------------------------
# The npu-smi table (NPU_TABLE), by line: 7 "| 0     Ascend910 | OK | 163.6 …", 8 "| 0     0 | 0000:9D:00.0 | …",
# 9 "+---…", 10 "| 0     Ascend910 | OK | - …", 11 "| 1     1 | 0000:9F:00.0 | …", 12 "+===…".

def _lines(shared: Path, name: str) -> list[str]:
    return (shared / name).read_text(encoding="utf-8").splitlines()


def _changed(shared: Path, line: int, old: str, new: str) -> str:
    """NPU_TABLE with ``old`` replaced by ``new`` on (1-based) ``line``."""
    lines = _lines(shared, NPU_TABLE)
    assert old in lines[line - 1], (old, lines[line - 1])
    lines[line - 1] = lines[line - 1].replace(old, new, 1)
    return "\n".join(lines) + "\n"


def _without(shared: Path, name: str, *lines: int) -> str:
    return "\n".join(ln for n, ln in enumerate(_lines(shared, name), 1) if n not in lines) + "\n"


def _swapped(shared: Path) -> str:
    lines = _lines(shared, NPU_TABLE)
    lines[6], lines[7] = lines[7], lines[6]
    return "\n".join(lines) + "\n"


def _board(serial: str, npu: int) -> str:
    return f"npu-smi info -t board -i {npu}\n        Serial Number                  : {serial}\n\n"


CaptureCase = tuple[str, Callable[[Path], object], str, str]

CAPTURE_CASES: list[CaptureCase] = [
    ("npu-row-cut", lambda s: parse_npu_smi(_changed(s, 7, "/ 0             |", "/ 0")),
     "npu-smi: line 7: the table row is cut short (no closing '|')",
     "npu-smi：第 7 行：表格行被截断（没有结尾的 '|'）"),
    ("npu-record-cut-at-the-end", lambda s: parse_npu_smi("\n".join(_lines(s, NPU_TABLE)[:10])),
     "npu-smi: the chip record on line 10 has one line of two (the input ends): the table is cut short",
     "npu-smi：第 10 行的芯片记录应有两行，只有一行（输入已结束）：表格被截断"),
    ("npu-record-cut-by-a-line", lambda s: parse_npu_smi(_without(s, NPU_TABLE, 11)),
     "npu-smi: the chip record on line 10 has one line of two (line 11 ends the record): the table is cut short",
     "npu-smi：第 10 行的芯片记录应有两行，只有一行（第 11 行结束了该记录）：表格被截断"),
    ("npu-chips", lambda s: parse_npu_smi((s / NPU_TABLE).read_bytes(), max_chips=1),
     "npu-smi: more than 1 chips in one input", "npu-smi：一份输入中的芯片多于 1 个"),
    ("npu-record-out-of-order", lambda s: parse_npu_smi(_swapped(s)),
     "npu-smi: lines 7-8: a chip record's lines out of order (a line is missing)",
     "npu-smi：第 7-8 行：芯片记录的行顺序错乱（缺了一行）"),
    ("npu-record-without-ids", lambda s: parse_npu_smi(_changed(s, 7, "| 0     Ascend910", "|               ")),
     "npu-smi: line 7: a chip record without its NPU or Chip id", "npu-smi：第 7 行：芯片记录缺少 NPU ID 或 Chip ID"),
    ("npu-table-id-not-a-number", lambda s: parse_npu_smi(_changed(s, 11, "| 1     1 ", "| 1     1b")),
     "npu-smi: line 11: the Phy-ID '1b' is not a number", "npu-smi：第 11 行：Phy-ID '1b' 不是数字"),
    ("npu-values-under-the-id-columns", lambda s: parse_npu_smi(_changed(s, 8, "| 0     0   ", "| 0     0  5")),
     "npu-smi: line 8: 3 values under the columns Chip Phy-ID", "npu-smi：第 8 行：列 Chip Phy-ID 下有 3 个值"),
    ("npu-values-under-columns", lambda s: parse_npu_smi(_changed(s, 7, "163.6       30 ", "163.6          ")),
     "npu-smi: line 7: 2 values under 3 columns (Power(W) Temp(C) Hugepages-Usage(page))",
     "npu-smi：第 7 行：3 列（Power(W) Temp(C) Hugepages-Usage(page)）下有 2 个值"),
    ("npu-not-used-total", lambda s: parse_npu_smi(_changed(s, 8, "3180 / 65536", "3180        ")),
     "npu-smi: line 8: HBM-Usage(MB) is '3180', not used / total",
     "npu-smi：第 8 行：HBM-Usage(MB) 为 '3180'，不是“已用 / 总量”"),
    ("npu-a-pair", lambda s: parse_npu_smi(_changed(s, 7, "163.6", "1/2  ")),
     "npu-smi: line 7: Power(W) holds a pair (1/2)", "npu-smi：第 7 行：Power(W) 含有一对值（1/2）"),
    ("npu-same-ids", lambda s: parse_npu_smi(_changed(s, 11, "| 1     1 ", "| 0     1 ")),
     "npu-smi: the same NPU and Chip id twice in one table", "npu-smi：同一表格中同一 NPU ID 和 Chip ID 出现了两次"),
    ("npu-same-identity", lambda s: parse_npu_smi(
        (s / NPU_TWO_CARDS).read_text(encoding="utf-8") + _board("SN-1", 0) + _board("SN-1", 1)),
     "npu-smi: two chips with the same identity (card serial and chip id)",
     "npu-smi：两个芯片的标识相同（卡序列号和芯片 ID）"),
    ("mthreads-record-cut", lambda s: parse_mthreads_table(_without(s, MTHREADS_TABLE, 14)),
     "mthreads-gmi table: GPU 1's record is cut short or garbled (line 14)",
     "mthreads-gmi table：GPU 1 的记录被截断或已损坏（第 14 行）"),
    ("mthreads-table-count", lambda s: parse_mthreads_table((s / MTHREADS_TABLE).read_bytes(), max_gpus=1),
     "mthreads-gmi table: more than 1 GPUs, more than one output may describe",
     "mthreads-gmi table：GPU 多于 1 块，超过一份输出允许描述的数量"),
    ("mthreads-listed-twice", lambda s: parse_mthreads(
        (s / MTHREADS_TABLE).read_text(encoding="utf-8").replace("1    MTT S5000", "0    MTT S5000")),
     "mthreads-gmi table: GPU 0 is listed twice", "mthreads-gmi table：GPU 0 出现了两次"),
]


@pytest.mark.parametrize(("parse", "english", "said"), [c[1:] for c in CAPTURE_CASES],
                         ids=[c[0] for c in CAPTURE_CASES])
def test_a_damaged_capture_is_refused_in_the_readers_language(chinese: None, shared_fixtures: Path,
                                                              parse: Callable[[Path], object], english: str,
                                                              said: str) -> None:
    assert_refused(lambda: parse(shared_fixtures), english, said)


def test_import_smi_says_a_cut_npu_smi_table_in_chinese(shared_fixtures: Path, tmp_path: Path) -> None:
    capture = tmp_path / "npu1.txt"
    capture.write_text(_without(shared_fixtures, NPU_TABLE, 11), encoding="utf-8")
    english_reason = ("npu-smi: the chip record on line 10 has one line of two (line 11 ends the record): "
                      "the table is cut short")
    english = fleetmon("import-smi", str(capture), "--db", str(tmp_path / "en.db"))
    assert english.returncode != 0 and english_reason in english.stderr, english.stderr
    proc = fleetmon("--lang", "zh_CN", "import-smi", str(capture), "--db", str(tmp_path / "zh.db"))
    assert proc.returncode == english.returncode
    assert proc.stderr.strip().splitlines() == [english.stderr.strip().replace(
        english_reason, "npu-smi：第 10 行的芯片记录应有两行，只有一行（第 11 行结束了该记录）：表格被截断").replace(
        f"{capture}: ", f"{capture}：", 1)], (english.stderr, proc.stderr)
