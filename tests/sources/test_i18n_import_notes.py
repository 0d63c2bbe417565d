"""The capture parsers' notes in the reader's language (issue 25): each note is an ``i18n.Text`` that IS the
English line it was before (other tests compare it, byte for byte) and says itself in Chinese where
``fleetmon import`` / ``import-smi`` prints it ("注意：…"). Fed through the real parse entry points: real captures
from ../shared/fixtures (skipped when absent) and small hand-made inputs; the values (counts, column titles, host
names, line numbers, the tools' own words) are inserted as they are."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fleetmon import i18n
from fleetmon.sources import SourceError, formats
from fleetmon.sources.amd import combine, parse_amd_smi_json, parse_rocm_smi_json
from fleetmon.sources.capture import Capture
from fleetmon.sources.dcgm import parse_dcgm
from fleetmon.sources.hl_smi import parse_hl_smi
from fleetmon.sources.mthreads import parse_mthreads_json, parse_mthreads_query
from fleetmon.sources.npu_smi import parse_npu_smi
from fleetmon.sources.smi_xml import parse_smi_xml
from fleetmon.sources.xpu_smi import parse_xpu_smi

from helpers.cli import fleetmon

AMD = "F_other_vendors/amd"
HYGON = "F_other_vendors/hygon"
ASCEND = "F_other_vendors/huawei_ascend"
INTEL = "F_other_vendors/intel"
NPU_TABLE = f"{ASCEND}/issue_vllm-ascend-5588_npu-smi-25.3.rc1_a3_excerpt.txt"  # NPU 0, chips 0 and 1 (Phy-ID)
XPU_DUMP = f"{INTEL}/issue_xpumanager-76_xpu-smi-dump_arc-a770_excerpt.csv"  # 4 devices, time of day only


@pytest.fixture
def chinese() -> Iterator[None]:
    i18n.set_language("zh_CN")
    yield None
    i18n.set_language("en")


def _said(capture: Capture, english: str) -> str:
    """The note that reads ``english`` (exactly), said in the current language."""
    notes = [n for n in capture.notes if n == english]
    assert notes, (english, capture.notes)
    assert isinstance(notes[0], i18n.Text), f"a plain str note: {english!r}"
    return i18n.localized(notes[0])


# -- small hand-made inputs -------------------------------------------------------------------------------------

_HL_SMI = "index, name, driver_version, fan.speed [%]\n0, HL-325L, 1.22.1, 5 %\n1, HL-325L, 1.21.0, 6 %\n"
_DCGM = "".join(f'DCGM_FI_DEV_GPU_TEMP{{gpu="{i}",UUID="GPU-{i}",Hostname="node{i}"}} 40\n' for i in range(7))
_DCGM_TWICE = 'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a"} 40\nDCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-b"} 41\n'
_MTHREADS_JSON = 'mtml warning\n{"Driver Version": "1", "Attached GPUs": "2", "GPU": [{"GPU UUID": "GPU-x"}]}'
_XML = ('<nvidia_smi_log><attached_gpus>2</attached_gpus><gpu id="00000000:01:00.0"><uuid>GPU-1</uuid></gpu>'
        "</nvidia_smi_log>")

Case = tuple[str, Callable[[], Capture], str, str]

CASES: list[Case] = [
    ("hl-smi-unmapped", lambda: parse_hl_smi(_HL_SMI), "fields not mapped (kept in extra): fan.speed",
     "未映射的字段（保存在 extra 中）：fan.speed"),
    ("hl-smi-drivers", lambda: parse_hl_smi(_HL_SMI), "the devices report different driver versions: 1.21.0, 1.22.1",
     "各设备上报的驱动版本不一致：1.21.0, 1.22.1"),
    ("hl-smi-no-uuid", lambda: parse_hl_smi(_HL_SMI),
     "no uuid field: the devices are named by their serial, else by a placeholder",
     "没有 uuid 字段：设备以序列号命名，没有序列号的用占位名"),
    ("dcgm-orphans", lambda: parse_dcgm(_DCGM + 'DCGM_FI_DEV_GPU_TEMP{Hostname="x"} 40\n'),
     "1 series without gpu/UUID labels belong to no GPU and were left out",
     "1 条序列没有 gpu/UUID 标签，不属于任何 GPU，已略去"),
    ("dcgm-many-hosts", lambda: parse_dcgm(_DCGM),
     "series from 7 host names: node0, node1, node2, node3, node4 and 2 more",
     "序列来自 7 个主机名：node0, node1, node2, node3, node4，另有 2 个"),
    ("dcgm-hosts", lambda: parse_dcgm(_DCGM.replace("node6", "node0").replace("node5", "node1")
                                      .replace("node4", "node2").replace("node3", "node0")),
     "series from 3 host names: node0, node1, node2", "序列来自 3 个主机名：node0, node1, node2"),
    ("dcgm-index-twice", lambda: parse_dcgm(_DCGM_TWICE), "GPU GPU-b: index 0 given twice, stored as 1",
     "GPU GPU-b：序号 0 重复出现，按 1 保存"),
    ("mthreads-banner", lambda: parse_mthreads_json(_MTHREADS_JSON), "text before the JSON skipped: mtml warning",
     "已跳过 JSON 之前的文本：mtml warning"),
    ("mthreads-attached", lambda: parse_mthreads_json(_MTHREADS_JSON),
     "the output says 2 GPUs are attached but describes 1", "输出称连接了 2 块 GPU，但描述了 1 块"),
    ("mthreads-cut", lambda: parse_mthreads_query("Driver Version : 1\nAttached GPUs : 0\nPower : 2"),
     "the report ends without a line break: its last line is not read (Power : 2)",
     "报告末尾没有换行符：不读取其最后一行（Power : 2）"),
    ("mthreads-no-gpu", lambda: parse_mthreads_query("Driver Version : 1\nAttached GPUs : 0\n"),
     "the report lists no GPU", "报告中没有列出 GPU"),
    ("nvidia-smi-xml-attached", lambda: parse_smi_xml(_XML), "the document says 2 GPUs are attached but describes 1",
     "文档称连接了 2 块 GPU，但描述了 1 块"),
]


@pytest.mark.parametrize(("parse", "english", "said"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_note_is_said_in_the_readers_language(chinese: None, parse: Callable[[], Capture], english: str,
                                                said: str) -> None:
    assert _said(parse(), english) == said


_XPU_HEADER = "Timestamp, DeviceId, GPU Utilization (%)\n"


@pytest.mark.parametrize(("data", "english", "said"), [
    (_XPU_HEADER, "xpu-smi dump: the dump has a header but no rows", "xpu-smi dump：转储有表头但没有数据行"),
    (_XPU_HEADER + "14:15:20.490, 0, 5.5\n14:15:20.490, 1, 7",
     "xpu-smi dump: the last line is cut short (no line break after it, and its last value '7' is shaped unlike the "
     "line before's)", "xpu-smi dump：最后一行被截断（其后没有换行，且它的最后一个值 '7' 的形式与上一行的不同）"),
], ids=["no-rows", "cut"])
def test_xpu_smis_last_two_parse_errors_are_said_in_the_readers_language(chinese: None, data: str, english: str,
                                                                          said: str) -> None:
    """(Found with the notes: two of xpu-smi's refusals were still plain English.)"""
    with pytest.raises(SourceError) as caught:
        parse_xpu_smi(data)
    assert str(caught.value) == english
    assert i18n.message_of(caught.value) == said


# -- real captures (../shared/fixtures), some of them changed ----------------------------------------------------

def _read(shared: Path, name: str) -> bytes:
    return (shared / name).read_bytes()


def _parsed(shared: Path, name: str) -> Capture:
    data = _read(shared, name)
    detected = formats.detect(data)
    assert detected is not None, name
    return detected.parse(data)


_MAPPING = ("NPU ID    Chip ID    Chip Logic ID    Chip Name\n0    0    0    Ascend910\n0    1    1    Ascend910\n"
            "5    0    2    Ascend910\n")  # 5/0 is not in NPU_TABLE
_HEALTH_7 = ("npu-smi info -t health -i 7 -c 0\n        Health Status                  : OK\n"
             "        Error Code                     : NA\n")
_LOOSE = "\n        Health Status                  : Critical\n        Error Code                     : 1\n"


def _npu_changed(shared: Path) -> Capture:
    text = _read(shared, NPU_TABLE).decode().replace("| OK            | 163.6", "| Degraded      | 163.6")
    return parse_npu_smi(text + _MAPPING + _HEALTH_7)


def _npu_loose(shared: Path) -> Capture:
    return parse_npu_smi(_read(shared, NPU_TABLE).decode() + _HEALTH_7.replace("-i 7", "-i 0") + _LOOSE)


def _amd_combined(shared: Path) -> Capture:
    """``amd-smi version`` and ``amd-smi xgmi`` of one node, merged as the SSH source merges them."""
    return combine(parse_amd_smi_json(_read(shared, f"{AMD}/virtualclient_xgmi-8xMI300X.json")),
                   parse_amd_smi_json(_read(shared, f"{AMD}/dell-ai_amd_smi_version_root.json")))


FixtureCase = tuple[str, Callable[[Path], Capture], str, str]

FIXTURE_CASES: list[FixtureCase] = [
    ("amd-smi-version", lambda s: _parsed(s, f"{AMD}/dell-ai_amd_smi_version_root.json"),
     "amd-smi version: not a device listing; ROCm 7.2.1, amd-smi 26.2.2+e1a6bc5663, amdsmi library 26.2.2",
     "amd-smi version：不是设备列表；ROCm 7.2.1，amd-smi 26.2.2+e1a6bc5663，amdsmi 库 26.2.2"),
    ("amd-smi-version-unreadable", lambda s: _parsed(s, f"{AMD}/dell-ai_amd_smi_version_non_root.json"),
     "amdgpu version unreadable: AMDSMI_STATUS_FILE_ERROR - Error opening file",
     "无法读取 amdgpu 版本：AMDSMI_STATUS_FILE_ERROR - Error opening file"),
    ("amd-smi-text-cut", lambda s: _parsed(s, f"{AMD}/virtualclient_metrics_8xMI300X.txt"),
     "the last line has no line end (the output was cut?): it is not used",
     "最后一行没有换行符（输出被截断？）：不予采用"),
    ("amd-combined-xgmi", _amd_combined,
     "amd-smi xgmi: link matrix of 8 GPUs (in each device's extra['xgmi']); no readings",
     "amd-smi xgmi：8 块 GPU 的链路矩阵（见各设备的 extra['xgmi']）；没有读数"),
    ("rocm-smi-processes", lambda s: parse_rocm_smi_json(_read(s, f"{AMD}/telegraf_mi100_rocm571.json")),
     "rocm-smi lists 1 process(es); not stored", "rocm-smi 列出了 1 个进程；未保存"),
    ("rocm-smi-concise", lambda s: _parsed(s, f"{AMD}/issue_wandb-5449_rocm-smi-concise_8xMI250X-GCD_excerpt.txt"),
     "rocm-smi concise table: no unique id, serial or bus id; devices are numbered as listed",
     "rocm-smi 简明表格：没有唯一 ID、序列号或总线地址；设备按列出的顺序编号"),
    ("rocminfo-altered", lambda s: _parsed(s, f"{HYGON}/gpustack_hygon-gpu-24.04.3-rocminfo.txt"),
     "agent 0: a number disagrees with its hex form (Cacheline Size: 6(0x40)): the text was altered; its plain "
     "numbers are not used",
     "Agent 0：某个数值与其十六进制形式不一致（Cacheline Size: 6(0x40)）：文本被改动过，其中的十进制数值不予采用"),
    ("rocminfo", lambda s: _parsed(s, f"{AMD}/gpustack_amd-gpu-6.2.4-rocminfo.txt"),
     "rocminfo: identity only (no temperature, power, use or error counts)",
     "rocminfo：只有设备标识（没有温度、功耗、利用率或错误计数）"),
    ("hl-smi-no-header", lambda s: _parsed(s, f"{INTEL}/all-smi_hl-smi_2xHL-325L_excerpt.csv"),
     "no header: the columns read as index,uuid,name,driver_version,memory.total,memory.used,memory.free,"
     "power.draw,power.max,temperature.aip,utilization.aip",
     "没有表头：各列按 index,uuid,name,driver_version,memory.total,memory.used,memory.free,"
     "power.draw,power.max,temperature.aip,utilization.aip 读取"),
    ("mthreads-table", lambda s: _parsed(s, "F_other_vendors/moore_threads/"
                                            "issue_vllm-omni-2337_mthreads-gmi-2.3.2_mtt-s5000_excerpt.txt"),
     "mthreads-gmi's table gives no UUID or serial: the GPUs have placeholder UUIDs",
     "mthreads-gmi 的表格没有给出 UUID 或序列号：这些 GPU 使用占位 UUID"),
    ("npu-phy-id", lambda s: _parsed(s, NPU_TABLE), "device index from the table's Phy-ID column",
     "设备序号取自表格的 Phy-ID 列"),
    ("npu-order", lambda s: _parsed(s, f"{ASCEND}/issue_1Panel-9472_npu-smi-24.1.1_910B4_excerpt.txt"),
     "device index from the table's order", "设备序号按表格中的顺序编排"),
    ("npu-no-version", lambda s: _parsed(s, f"{ASCEND}/issue_vllm-ascend-2534_npu-smi-no-version-header_a3_"
                                            "excerpt.txt"),
     "no npu-smi version line: driver version unknown", "没有 npu-smi 版本行：驱动版本未知"),
    ("npu-mapping-only", lambda s: _parsed(s, f"{ASCEND}/gpustack_ai-server_atlas-800-training-server_model-9010_"
                                              "version-24.1.RC2_mapping.txt"),
     "npu-smi info -m only: chip names and ids, no readings (import `npu-smi info` with it)",
     "只有 npu-smi info -m：只有芯片名称和 ID，没有读数（请与 `npu-smi info` 一起导入）"),
    ("npu-skipped", lambda s: _parsed(s, f"{ASCEND}/gpustack_ai-server_atlas-800-training-server_model-9010_"
                                         "version-24.1.RC2.txt"),
     "1 line(s) that are no npu-smi output skipped", "已跳过 1 行非 npu-smi 输出"),
    ("npu-logic-ids", _npu_changed, "device index from the chip logic ids of npu-smi info -m",
     "设备序号取自 npu-smi info -m 的芯片逻辑 ID"),
    ("npu-unmatched", _npu_changed, "1 chip(s) of npu-smi info -m are not in the table (NPU/chip 5/0)",
     "npu-smi info -m 中有 1 个芯片不在表格中（NPU/芯片 5/0）"),
    ("npu-t-unlisted", _npu_changed, "npu-smi -t output for NPU 7 chip 0, which the table does not list: not used",
     "NPU 7 芯片 0 的 npu-smi -t 输出：表格中没有该芯片，不予采用"),
    ("npu-health", _npu_changed,
     "health state(s) Degraded are none of OK, Warning, Alarm, Critical, UNKNOWN: kept as printed",
     "健康状态 Degraded 不属于 OK, Warning, Alarm, Critical, UNKNOWN 中的任何一种：按原样保存"),
    ("npu-loose", _npu_loose, "line 17: npu-smi -t output that names no NPU: not used",
     "第 17 行：npu-smi -t 输出未指明 NPU：不予采用"),
    ("nvidia-smi-table", lambda s: _parsed(s, "A2_nvidia_smi_q_text/gpud_nvidia-smi.525.125.06.out.0.valid"),
     "the nvidia-smi table gives no UUID: the GPUs have placeholder UUIDs",
     "nvidia-smi 表格没有给出 UUID：这些 GPU 使用占位 UUID"),
    ("nvidia-smi-table-names", lambda s: _parsed(s, "A2_nvidia_smi_q_text/gpud_nvidia-smi.525.125.06.out.0.valid"),
     "1 GPU name(s) cut short by the table ('...')", "1 个 GPU 名称被表格截短（'...'）"),
    ("xpu-smi-rows", lambda s: _parsed(s, f"{INTEL}/issue_xpumanager-98_xpu-smi-dump_6xMax1550_excerpt.csv"),
     "13 rows for 6 device(s) from 08:08:16.817 to 08:08:18.817; each device's sample is its last row",
     "13 行，共 6 个设备，时间从 08:08:16.817 到 08:08:18.817；每个设备取其最后一行作为采样"),
    ("xpu-smi-time-of-day", lambda s: _parsed(s, XPU_DUMP),
     "the dump gives the time of day only (no --date): the capture time is unknown",
     "转储只给出当天的时间（未加 --date）：采集时间未知"),
    ("xpu-smi-columns", lambda s: _parsed(s, XPU_DUMP), "columns kept in extra under their titles: 3D Engine (%)",
     "以下列按原标题保存在 extra 中：3D Engine (%)"),
    ("xpu-smi-placeholders", lambda s: _parsed(s, XPU_DUMP),
     "xpu-smi dump names no model, serial, UUID or bus id: the devices have placeholder UUIDs",
     "xpu-smi dump 没有给出型号、序列号、UUID 或总线地址：这些设备使用占位 UUID"),
]


@pytest.mark.parametrize(("parse", "english", "said"), [c[1:] for c in FIXTURE_CASES],
                         ids=[c[0] for c in FIXTURE_CASES])
def test_a_real_captures_note_is_said_in_the_readers_language(chinese: None, shared_fixtures: Path,
                                                              parse: Callable[[Path], Capture], english: str,
                                                              said: str) -> None:
    assert _said(parse(shared_fixtures), english) == said


_TOOL_VERSION = re.compile(r"(npu-smi|mthreads-gmi) \S+")
"""The one note that stays as it is: the tool's name and version (nothing to translate)."""


def test_every_note_of_every_real_capture_is_translated(chinese: None, shared_fixtures: Path) -> None:
    seen = 0
    for path in sorted((shared_fixtures / "F_other_vendors").rglob("*")) + sorted(
            (shared_fixtures / "A2_nvidia_smi_q_text").glob("*")):
        data = path.read_bytes() if path.is_file() else b""
        detected = formats.detect(data) if data else None
        if detected is None:
            continue
        for note in detected.parse(data).notes:
            seen += 1
            if _TOOL_VERSION.fullmatch(note):
                continue
            assert isinstance(note, i18n.Text) and i18n.localized(note) != note, (path.name, note)
    assert seen > 40


# -- the CLI --------------------------------------------------------------------------------------------------

_IDENTIFIERS = re.compile(r"fleetmon import-smi: |xpu-smi dump|--date|extra|3D Engine \(%\)|UUID")


def test_import_smi_says_the_notes_in_chinese(shared_fixtures: Path, tmp_path: Path) -> None:
    capture = tmp_path / "node1.csv"
    capture.write_bytes(_read(shared_fixtures, XPU_DUMP))
    english = fleetmon("import-smi", str(capture), "--db", str(tmp_path / "en.db"))
    assert english.returncode == 0, english.stderr
    assert english.stderr.splitlines()[1] == ("fleetmon import-smi: note: the dump gives the time of day only "
                                              "(no --date): the capture time is unknown")
    proc = fleetmon("--lang", "zh_CN", "import-smi", str(capture), "--db", str(tmp_path / "zh.db"))
    assert proc.returncode == 0, proc.stderr
    notes = proc.stderr.splitlines()
    assert len(notes) == len(english.stderr.splitlines()) == 4, proc.stderr
    assert notes[1] == "fleetmon import-smi: 注意：转储只给出当天的时间（未加 --date）：采集时间未知"
    for line in notes:
        assert line.startswith("fleetmon import-smi: 注意："), line
        assert not re.search(r"[A-Za-z]", _IDENTIFIERS.sub("", line)), line  # Chinese apart from the identifiers
