"""Issue 25, the text that docs/i18n.md listed as English: the fleet file's validation errors (read back from the
real CLI), `fleetmon slurm`'s action lines and the auto-drain plan, the slot/card attribution before an action,
the ssh:// URL checks, `fleetmon agent`'s backend reasons and `import-smi`'s first parse errors.
The English stays exactly as it was (the other tests compare it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fleetmon import i18n
from fleetmon.health import engine, render
from fleetmon.slurm.actions import AutoDrainPlan, Outcome

from helpers.cli import REPO, fleetmon


BAD_FLEET = """\
[fleet]
poll_interval_s = 1
colour = "red"

[[node]]
name = "n1"
url = "ftp://n1"
tags = [""]

[[node]]
url = "http://n2:9414"
group = "a100"
"""


def test_fleet_file_errors_in_chinese_keep_the_prefix_and_the_identifiers(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(BAD_FLEET, encoding="utf-8")
    english = fleetmon("fleet", "check", str(path)).stderr.splitlines()
    proc = fleetmon("--lang", "zh_CN", "fleet", "check", str(path))
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == len(english) == 5, proc.stderr  # one line per problem, as in English
    assert lines[0] == f"{path}:2: fleet.poll_interval_s: 必须 >= 2 且 <= 3600（实际为 1）"
    assert english[0] == f"{path}:2: fleet.poll_interval_s: must be >= 2 and <= 3600 (got 1)"
    assert lines[1].startswith(f"{path}:3: fleet.colour: 未知的键；应为以下之一：name, poll_interval_s"), lines[1]
    assert lines[2] == (f"{path}:7: node[0].url: 必须以 http:// 或 https:// 开头（实际为 'ftp://n1'）；其他数据源："
                        "dcgm+http(s)://host:9400/metrics（dcgm-exporter）、ssh://[user@]host（nvidia-smi）")
    assert lines[3] == f"{path}:8: node[0].tags[0]: 必须是非空字符串（实际为 ''）"
    assert lines[4] == f"{path}:10: node[1]: 缺少必需的键 'name'"


def test_fleet_file_syntax_error_and_warnings_in_chinese(tmp_path: Path) -> None:
    broken = tmp_path / "broken.toml"
    broken.write_text('[[node]]\nname = "n1\n', encoding="utf-8")
    proc = fleetmon("--lang", "zh_CN", "fleet", "check", str(broken))
    assert proc.returncode == 1 and f"{broken}:2: TOML 语法错误：" in proc.stderr, proc.stderr
    assert "（第 " in proc.stderr and "列）" in proc.stderr
    warned = tmp_path / "warned.toml"
    warned.write_text('[[node]]\nname = "n1"\nurl = "http://n1:9414"\ngroup = "a100"\ntoken_file = "nope"\n',
                      encoding="utf-8")
    proc = fleetmon("--lang", "zh_CN", "fleet", "check", str(warned))
    assert proc.returncode == 0, proc.stderr
    assert f"{warned}:5: node[0].token_file: 文件 '{tmp_path / 'nope'}'（暂时）不存在" in proc.stderr, proc.stderr
    missing = fleetmon("--lang", "zh_CN", "fleet", "check", str(tmp_path / "absent.toml"))
    assert f"{tmp_path / 'absent.toml'}：无法读取集群文件：" in missing.stderr, missing.stderr


def test_slurm_history_lines_in_chinese_read_back_from_the_cli(tmp_path: Path) -> None:
    from storage.db import open_database
    from storage.slurm_actions import begin_action, finish_action

    db_path = tmp_path / "fleetmon.db"
    db = open_database(str(db_path))
    try:
        ts = 1_796_300_000.0
        first = begin_action(db, ts, "n1", "drain", origin="cli", who="ann@ops", reason="Xid 79")
        finish_action(db, first, ts + 1, ok=True)
        second = begin_action(db, ts + 60, "n2", "resume", origin="cli", who="ann@ops")
        finish_action(db, second, ts + 61, ok=False, error="scontrol: Invalid node name")
    finally:
        db.close()
    english = fleetmon("slurm", "history", "--db", str(db_path)).stdout
    assert "UTC drain n1 by ann@ops (cli): ok — Xid 79" in english
    assert "UTC resume n2 by ann@ops (cli): FAILED: scontrol: Invalid node name" in english
    proc = fleetmon("--lang", "zh_CN", "slurm", "history", "--db", str(db_path))
    assert proc.returncode == 0, proc.stderr
    assert "UTC drain n1，操作人 ann@ops（cli）：ok — Xid 79" in proc.stdout, proc.stdout  # the recorded words stay
    assert "UTC resume n2，操作人 ann@ops（cli）：失败：scontrol: Invalid node name" in proc.stdout, proc.stdout


def test_slurm_outcome_and_auto_drain_plan_in_chinese(chinese: None) -> None:
    done = Outcome(1, "n1", "gpu-n1", True, sent_reason="fleetmon: Xid 79")
    failed = Outcome(2, "n2", None, False, error="no 'scontrol' on PATH")
    assert done.line("drain") == "drain n1 (Slurm gpu-n1): done — reason: fleetmon: Xid 79"  # the English stays
    assert i18n.localized(done.line("drain")) == "drain n1 (Slurm gpu-n1)：完成 — 原因：fleetmon: Xid 79"
    assert i18n.localized(failed.line("resume")) == "resume n2 失败：no 'scontrol' on PATH"
    from fleetmon.i18n import N_, Text

    plan = AutoDrainPlan(drain=(("n1", "k1", "Xid 79"),),
                         skipped=(("n2", "gpu-lost", Text(N_("already {state} in Slurm"), state="drained")),),
                         error="timed out", limit=2, drained_by_fleetmon=1)
    assert plan.lines()[0] == "auto-drain: 1 to drain; 1 drained by fleetmon now, at most 2 at once"
    assert [i18n.localized(line) for line in plan.lines(dry_run=False)] == [
        "自动下线：待下线 1 个；当前由 fleetmon 下线 1 个，同时最多 2 个",
        "自动下线：Slurm 不可用：timed out",
        "已下线 n1：Xid 79",
        "跳过 n2（gpu-lost）：在 Slurm 中已是 drained",
    ]
    assert i18n.localized(plan.lines()[2]) == "将下线 n1：Xid 79"


def test_slot_attribution_and_its_action_in_a_chinese_report() -> None:
    from tests.health.test_counter_moves import replay_findings, swapped

    h = swapped(0, lambda i: 30 * i)
    found = replay_findings(h)
    action = found["GPU-b"].action
    assert action.startswith("The fault stays with slot n1:0000:18:00.0 across card swaps: check the slot, "
                             "riser/extender and its power cable, not the card; ")
    again = engine.attribute_slots(list(found.values()), h)  # attributing again replaces the lead
    assert {f.action for f in again} == {f.action for f in found.values()}
    result = engine.report(h, findings=list(found.values()))
    english = render.report_text(result)
    assert action in english
    i18n.set_language("zh_CN")
    try:
        text = render.report_text(result)
        said = i18n.localized(action)
    finally:
        i18n.set_language("en")
    assert said.startswith("换卡后故障仍留在插槽 n1:0000:18:00.0：检查插槽、转接卡/延长线及其供电线，而不是卡；")
    rest = said.split("；", 1)[1]
    assert rest and not rest.isascii(), said  # the action after the lead is said in Chinese too
    assert "The fault" not in text and "换卡后故障仍留在插槽" in text


def test_storage_errors_in_chinese_from_the_cli(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not an SQLite file at all " * 40)
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    english = fleetmon("report", "--db", str(empty)).stderr
    assert english == (f"fleetmon report: database {empty}: not a fleetmon database (no fleetmon schema in it; "
                       "`fleetmon collect` writes one)\n")
    proc = fleetmon("--lang", "zh_CN", "report", "--db", str(empty))
    assert proc.returncode == 1
    assert proc.stderr == (f"fleetmon report: 数据库 {empty}：不是 fleetmon 数据库（其中没有 fleetmon 的表结构；"
                           "`fleetmon collect` 会写入）\n"), proc.stderr
    proc = fleetmon("--lang", "zh_CN", "export", "--db", str(garbage), "-o", str(tmp_path / "out.csv"))
    assert proc.returncode == 1
    assert proc.stderr == f"fleetmon export: 数据库 {garbage}：文件已损坏或不是 fleetmon 数据库（file is not a database）\n"
    assert not (tmp_path / "out.csv").exists()


class _NVMLError(Exception):
    """pynvml's error class: ``str()`` is NVML's own text."""


class _NoDriver:
    """pynvml where the library is there and the driver is not: ``nvmlInit`` raises NVMLError (its documented
    NVML_ERROR_DRIVER_NOT_LOADED)."""

    NVMLError = _NVMLError

    def nvmlInit(self) -> None:  # noqa: N802  (pynvml's name)
        raise _NVMLError("Driver Not Loaded")


def test_nvml_unavailable_in_chinese(chinese: None) -> None:
    from fleetmon.agent.nvml.session import open_nvml
    from fleetmon.errors import NvmlUnavailable

    with pytest.raises(NvmlUnavailable) as caught:
        open_nvml(_NoDriver())
    assert str(caught.value) == "NVML could not start: Driver Not Loaded. Is the NVIDIA driver installed and loaded?"
    assert i18n.message_of(caught.value) == "NVML 无法启动：Driver Not Loaded。NVIDIA 驱动是否已安装并加载？"


def test_the_apps_open_error_says_the_fleet_files_problems_in_chinese(tmp_path: Path, chinese: None) -> None:
    pytest.importorskip("PySide6")
    from ui.app import open_checks

    fleet = tmp_path / "fleet.toml"
    fleet.write_text('[[node]]\nname = "n1"\n', encoding="utf-8")
    shown: list[str] = []
    opened = open_checks(str(tmp_path / "fleet.db"), str(fleet), None, confirm_create=lambda _path: True,
                         error=shown.append)
    assert opened is None and len(shown) == 1
    assert f"{fleet}:1: node[0]: 缺少必需的键 'url'" in shown[0], shown


SSH_FLEET = """\
[[node]]
name = "n1"
url = "ssh://-oProxyCommand=x"

[[node]]
name = "n2"
url = "ssh://bob's@n2"

[[node]]
name = "n3"
url = "ssh://n3/path"
"""


def test_ssh_url_checks_in_chinese_from_the_cli(tmp_path: Path) -> None:
    """The checks `fleetmon.sources` makes of an ssh:// URL, as `fleet check` prints them: the URL stays."""
    path = tmp_path / "fleet.toml"
    path.write_text(SSH_FLEET, encoding="utf-8")
    english = fleetmon("fleet", "check", str(path)).stderr.splitlines()
    assert english == [f"{path}:3: node[0].url: 'ssh://-oProxyCommand=x': not a plain host name or address after "
                       "ssh://",
                       f"{path}:7: node[1].url: \"ssh://bob's@n2\": the ssh user name may hold only letters, digits, "
                       "'.', '-' and '_'",
                       f"{path}:11: node[2].url: 'ssh://n3/path': an ssh URL is ssh://[user@]host[:port] and nothing "
                       "more"]
    proc = fleetmon("--lang", "zh_CN", "fleet", "check", str(path))
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"{path}:3: node[0].url: 'ssh://-oProxyCommand=x'：ssh:// 后面不是单纯的主机名或地址",
        f"{path}:7: node[1].url: \"ssh://bob's@n2\"：ssh 用户名只能包含字母、数字、'.'、'-' 和 '_'",
        f"{path}:11: node[2].url: 'ssh://n3/path'：ssh URL 只能是 ssh://[user@]host[:port]，不能有其他内容"]


def test_agent_backend_reasons_in_chinese_from_the_cli(tmp_path: Path) -> None:
    """`fleetmon agent`'s one line when a named backend is unavailable, when none is found (pynvml hidden, no tool
    on PATH: every backend's reason) and for an unknown name; backend and tool names stay."""
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {"PATH": str(empty)}
    proc = fleetmon("--lang", "zh_CN", "agent", "--backend", "hl-smi", "--buffer", str(tmp_path / "b1"), env=env)
    assert proc.returncode == 2
    assert proc.stderr == ("fleetmon agent: hl-smi 不在 PATH 上（需要：Intel Gaudi 的 hl-smi 工具（habanalabs 驱动）在 "
                           "PATH 上）\n"), proc.stderr
    english = fleetmon("agent", "--backend", "hl-smi", "--buffer", str(tmp_path / "b1"), env=env).stderr
    assert english == "fleetmon agent: hl-smi is not on PATH (Intel Gaudi's hl-smi tool (habanalabs driver) on PATH)\n"
    hide = ("import runpy, sys; sys.modules['pynvml'] = None; sys.argv = ['fleetmon', *sys.argv[1:]]; "
            "runpy.run_module('fleetmon', run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", hide, "--lang", "zh_CN", "agent", "--buffer", str(tmp_path / "b2")],
                          capture_output=True, text=True, timeout=120, cwd=REPO, env={**os.environ, **env})
    assert proc.returncode == 2
    assert proc.stderr.startswith("fleetmon agent: 本节点上没有找到可用的设备后端（nvml：未安装 nvidia-ml-py 包（pynvml）；"
                                  "hy-smi：hy-smi 不在 PATH 上；"), proc.stderr
    assert "mthreads-gmi：mthreads-gmi 不在 PATH 上）" in proc.stderr and "not" not in proc.stderr
    proc = fleetmon("--lang", "zh_CN", "agent", "--backend", "nope", "--buffer", str(tmp_path / "b3"))
    assert proc.stderr.startswith("fleetmon agent: 未知的后端 'nope'；可用的有：auto, nvml, "), proc.stderr


def test_capture_parse_errors_in_chinese_from_the_cli(tmp_path: Path) -> None:
    """The first parse error `fleetmon import-smi` prints for a file that is not a capture, a foreign XML
    document, a broken one and a wrong --format: the file, format names and the parser's own words stay."""
    text, xml, broken = tmp_path / "notes.txt", tmp_path / "other.xml", tmp_path / "cut.xml"
    text.write_text("hello world\n", encoding="utf-8")
    xml.write_text("<foo/>\n", encoding="utf-8")
    broken.write_text('<?xml version="1.0"?>\n<nvidia_smi_log><gpu>', encoding="utf-8")
    db = str(tmp_path / "f.db")

    def said(*args: str) -> str:
        proc = fleetmon("--lang", "zh_CN", "import-smi", "--db", db, *args)
        assert proc.returncode == 1, proc.stderr
        return proc.stderr

    assert english_line(fleetmon("import-smi", "--db", db, str(xml)).stderr) == (
        f"fleetmon import-smi: {xml}: nvidia-smi XML: the root element is <foo>, not <nvidia_smi_log>")
    first = said(str(text))
    assert first.startswith(f"fleetmon import-smi: {text}：不是 fleetmon 能读取的采集文件（已尝试 nvidia-smi-xml, "), first
    assert first.endswith("）：nvidia-smi 文本：没有 '==NVSMI LOG==' 标题或 'Driver Version' 行\n"), first
    assert said(str(xml)) == f"fleetmon import-smi: {xml}：nvidia-smi XML：根元素是 <foo>，而不是 <nvidia_smi_log>\n"
    assert said(str(broken)).startswith(f"fleetmon import-smi: {broken}：nvidia-smi XML：格式不正确（")
    assert said("--format", "nope", str(text)).startswith("fleetmon import-smi: --format：未知的采集格式 'nope'；可用的有："
                                                           "nvidia-smi-xml, ")


def english_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize(("fmt", "said"), [
    ("amd-smi-json", "amd-smi JSON：文本中没有 JSON 对象或列表"),
    ("amd-smi-text", "amd-smi text：没有 'GPU: <n>' 块"),
    ("amd-smi-csv", "amd-smi CSV：没有以 'gpu,' 开头的表头"),
    ("rocminfo", "rocminfo：没有 'HSA Agents' 段：不是 rocminfo 的输出"),
    ("rocm-smi-text", "rocm-smi text：没有 'GPU[n] : key: value' 行，也没有简明表格"),
    ("xpu-smi-csv", "xpu-smi dump：没有 'Timestamp, DeviceId, …' 表头：不是 xpu-smi dump 的输出"),
    ("mthreads-gmi", "mthreads-gmi table：没有 'mthreads-gmi:… Driver Version:…' 行：不是 mthreads-gmi 的表格"),
    ("mthreads-gmi-q", "mthreads-gmi -q report：没有 'Driver Version :' 行：不是 mthreads-gmi 的 -q 报告"),
])
def test_other_vendors_first_parse_error_in_chinese(chinese: None, fmt: str, said: str) -> None:
    """The error a file that is not the named vendor format meets first (`import-smi --format`)."""
    from fleetmon.sources import SourceError, formats

    with pytest.raises(SourceError) as caught:
        formats.by_name(fmt).parse(b"hello\n")
    assert i18n.message_of(caught.value) == said
    assert "：" not in str(caught.value) and ": " in str(caught.value)  # English as before (other tests compare it)


def test_a_vendor_parse_error_in_chinese_from_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_text("hello\n", encoding="utf-8")
    proc = fleetmon("--lang", "zh_CN", "import-smi", "--db", str(tmp_path / "f.db"), "--format", "rocminfo", str(path))
    assert proc.returncode == 1
    assert proc.stderr == f"fleetmon import-smi: {path}：rocminfo：没有 'HSA Agents' 段：不是 rocminfo 的输出\n"


def test_agent_list_backends_in_chinese_and_english() -> None:
    english = fleetmon("agent", "--list-backends", env={"FLEETMON_LANG": "en"})
    chinese = fleetmon("--lang", "zh_CN", "agent", "--list-backends")
    assert english.returncode == chinese.returncode == 0, english.stderr + chinese.stderr
    assert "needs the NVIDIA driver (libnvidia-ml.so) and the nvidia-ml-py package" in english.stdout
    assert "需要 NVIDIA 驱动（libnvidia-ml.so）和 nvidia-ml-py 包" in chinese.stdout
    # backend names and vendors stay; each line's state is said in the language
    names = [line.split()[0] for line in english.stdout.splitlines() if line and not line.startswith(" ")]
    assert names == [line.split()[0] for line in chinese.stdout.splitlines() if line and not line.startswith(" ")]
    assert "nvml" in names and "npu-smi" in names
    assert ("本机不可用：" in chinese.stdout or "可用" in chinese.stdout) and "not here" not in chinese.stdout
