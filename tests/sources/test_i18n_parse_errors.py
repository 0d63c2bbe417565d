"""The sources' deeper parse errors in the reader's language (issue 25): nvidia-smi XML's size and nesting limits,
the SSH answer's framing, dcgm-exporter's bad lines and values, hl-smi's and xpu-smi's bad rows. Fed through the real parse entry points; the English
stays byte for byte (other tests compare it), the offending text, line numbers, tags and tool names are inserted as
they are."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fleetmon import i18n
from fleetmon.sources.dcgm import parse_dcgm
from fleetmon.sources.hl_smi import parse_hl_smi
from fleetmon.sources.smi_xml import parse_smi_xml
from fleetmon.sources.ssh_tools import read_output
from fleetmon.sources.xpu_smi import parse_xpu_smi

from helpers.cli import fleetmon
from helpers.refusals import assert_refused


@pytest.fixture
def chinese() -> Iterator[None]:
    i18n.set_language("zh_CN")
    yield None
    i18n.set_language("en")


_DEEP = b"<nvidia_smi_log>" + b"<a>" * 40 + b"</a>" * 40 + b"</nvidia_smi_log>"
_ENTITY = b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "boom">]><nvidia_smi_log>&e;</nvidia_smi_log>'
_ATTRS = b"<nvidia_smi_log><gpu " + b" ".join(b'a%d="1"' % i for i in range(20)) + b"/></nvidia_smi_log>"
_TEXT = b"<nvidia_smi_log><x>" + b"y" * 70_000 + b"</x></nvidia_smi_log>"
_ENCODING = b'<?xml version="1.0" encoding="x-bogus"?><nvidia_smi_log/>'
_XPU = "Timestamp, DeviceId, GPU Power (W)\n"
_GPU = 'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-1"} '

CASES: list[tuple[str, Callable[[], object], str, str]] = [
    ("xml-deep", lambda: parse_smi_xml(_DEEP), "nvidia-smi XML: nested more than 32 elements deep",
     "nvidia-smi XML：元素嵌套超过 32 层"),
    ("xml-entity", lambda: parse_smi_xml(_ENTITY),
     "nvidia-smi XML: refused, the document declares entities or external references (EntitiesForbidden); "
     "nvidia-smi never writes those",
     "nvidia-smi XML：已拒绝，文档声明了实体或外部引用（EntitiesForbidden）；nvidia-smi 从不输出这些"),
    ("xml-attributes", lambda: parse_smi_xml(_ATTRS),
     "nvidia-smi XML: <gpu> has more than 16 attributes or one longer than 1024 characters",
     "nvidia-smi XML：<gpu> 的属性多于 16 个，或有一个属性长于 1024 个字符"),
    ("xml-text", lambda: parse_smi_xml(_TEXT), "nvidia-smi XML: <x> holds more than 65536 characters of text",
     "nvidia-smi XML：<x> 含有的文本多于 65536 个字符"),
    ("xml-encoding", lambda: parse_smi_xml(_ENCODING), "nvidia-smi XML: unknown character encoding (unknown encoding: x-bogus)",
     "nvidia-smi XML：未知的字符编码（unknown encoding: x-bogus）"),
    ("xml-gpus", lambda: parse_smi_xml(b"<nvidia_smi_log>" + b"<gpu/>" * 3 + b"</nvidia_smi_log>", 2),
     "nvidia-smi-xml: 3 GPUs in one document, more than the 2 one may describe",
     "nvidia-smi-xml：一个文档中有 3 块 GPU，超过一个文档允许描述的 2 块"),
    ("ssh-nothing", lambda: read_output(b"\n \n", "nvidia-smi"), "nvidia-smi printed nothing",
     "nvidia-smi 没有输出任何内容"),
    ("ssh-no-tool", lambda: read_output(b"fleetmon-ssh-tool: none\n", "auto"),
     "no vendor tool on the node: none of nvidia-smi, hy-smi, amd-smi, rocm-smi, npu-smi, hl-smi, mthreads-gmi "
     "is on its login PATH",
     "节点上没有厂商工具：nvidia-smi, hy-smi, amd-smi, rocm-smi, npu-smi, hl-smi, mthreads-gmi 都不在它的登录 PATH 中"),
    ("ssh-unknown-tool", lambda: read_output(b"fleetmon-ssh-tool: rm -rf\n", "auto"),
     "the node named an unknown tool 'rm -rf'", "节点给出了未知的工具 'rm -rf'"),
    ("ssh-other-tool", lambda: read_output(b"fleetmon-ssh-tool: hl-smi\nx\n", "npu-smi"),
     "the node ran hl-smi, the fleet file names npu-smi", "节点运行的是 hl-smi，fleet 文件指定的是 npu-smi"),
    ("dcgm-syntax", lambda: parse_dcgm("# HELP x\n" + _GPU + "1_000\n"),
     "dcgm-exporter scrape: line 2: not Prometheus text format (not a number: '1_000'): " + _GPU + "1_000",
     "dcgm-exporter scrape：第 2 行：不是 Prometheus 文本格式（不是数字：'1_000'）：" + _GPU + "1_000"),
    ("dcgm-nan", lambda: parse_dcgm(_GPU + "NaN\n"),
     "dcgm-exporter scrape: DCGM_FI_DEV_GPU_TEMP of GPU GPU-1 is NaN, not a reading",
     "dcgm-exporter scrape：GPU GPU-1 的 DCGM_FI_DEV_GPU_TEMP 为 NaN，不是有效读数"),
    ("dcgm-no-gpu", lambda: parse_dcgm("up 1\n"),
     "dcgm-exporter scrape: no series names a GPU (no 'gpu' or 'UUID' label)",
     "dcgm-exporter scrape：没有任何序列指明 GPU（没有 'gpu' 或 'UUID' 标签）"),
    ("dcgm-series", lambda: parse_dcgm(_GPU + "1\n" + _GPU + "2\n", max_series=1),
     "dcgm-exporter scrape: more than 1 series (the most read from one node)",
     "dcgm-exporter scrape：序列多于 1 条（每个节点最多读取的数量）"),
    ("dcgm-long-line", lambda: parse_dcgm("#" + "x" * 70_000 + "\n"),
     "dcgm-exporter scrape: line 1 is longer than 65,536 characters", "dcgm-exporter scrape：第 1 行长于 65,536 个字符"),
    ("dcgm-gpus", lambda: parse_dcgm('DCGM_FI_DEV_GPU_TEMP{gpu="0"} 1\nDCGM_FI_DEV_GPU_TEMP{gpu="1"} 1\n', max_gpus=1),
     "dcgm-exporter scrape: more than 1 GPUs (the most one node may have)",
     "dcgm-exporter scrape：GPU 多于 1 块（一个节点最多允许的数量）"),
    ("hl-smi-empty", lambda: parse_hl_smi("\n"), "hl-smi CSV: empty output (no device rows)",
     "hl-smi CSV：输出为空（没有设备行）"),
    ("hl-smi-cut", lambda: parse_hl_smi("index, name\n0, HL-225\n1\n"),
     "hl-smi CSV: line 3 has 1 values where the field list has 2: a cut or garbled table",
     "hl-smi CSV：第 3 行有 1 个值，而字段列表有 2 个：表格被截断或已损坏"),
    ("xpu-smi-device", lambda: parse_xpu_smi(_XPU + "08:08:16.817, zero, 281.13\n"),
     "xpu-smi dump: line 2: the device id 'zero' is no number", "xpu-smi dump：第 2 行：设备 ID 'zero' 不是数字"),
    ("xpu-smi-tile", lambda: parse_xpu_smi("Timestamp, DeviceId, TileId, GPU Power (W)\n"),
     "xpu-smi dump: a per-tile dump (TileId column); dump the devices without -t",
     "xpu-smi dump：这是按 tile 的转储（有 TileId 列）；请不带 -t 转储各设备"),
    ("xpu-smi-stamp", lambda: parse_xpu_smi(_XPU + "yesterday, 0, 281.13\n"),
     "xpu-smi dump: line 2: the timestamp 'yesterday' is neither a time of day nor an ISO date-time",
     "xpu-smi dump：第 2 行：时间戳 'yesterday' 既不是一天中的时刻，也不是 ISO 日期时间"),
]


@pytest.mark.parametrize(("parse", "english", "said"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_bad_document_is_refused_in_the_readers_language(chinese: None, parse: Callable[[], object], english: str,
                                                           said: str) -> None:
    assert_refused(parse, english, said)


def test_import_smi_says_the_nesting_limit_in_chinese(tmp_path: Path) -> None:
    capture = tmp_path / "n1.xml"
    capture.write_bytes(b'<?xml version="1.0"?>\n' + _DEEP)
    english = fleetmon("import-smi", str(capture), "--db", str(tmp_path / "en.db"))
    assert english.returncode != 0 and "nvidia-smi XML: nested more than 32 elements deep" in english.stderr
    proc = fleetmon("--lang", "zh_CN", "import-smi", str(capture), "--db", str(tmp_path / "zh.db"))
    assert proc.returncode == english.returncode
    assert proc.stderr.strip().splitlines() == [english.stderr.strip().replace(
        "nvidia-smi XML: nested more than 32 elements deep", "nvidia-smi XML：元素嵌套超过 32 层").replace(
        f"{capture}: ", f"{capture}：", 1)], (english.stderr, proc.stderr)
