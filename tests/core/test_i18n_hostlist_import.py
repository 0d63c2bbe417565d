"""Issue 25: the hostlist's and the fleet importers' errors, preflight's `--nodes`, the report's [thresholds] and
baseline errors, nvidia-smi table / text limits and "not a polled source" said in the reader's language, through
the real CLI (`fleet import`, `preflight` on a real SQLite file, `import-smi`) and the functions that raise them.
The English stays exactly as it was, byte for byte."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from fleetmon import assess, hostlist, i18n, sources
from fleetmon.errors import KnownError
from fleetmon.fleet import importers
from fleetmon.sources import SourceError, smi_text
from storage.db import open_database

from helpers.cli import fleetmon

TABLE_HEAD = "| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4 |"


@pytest.fixture
def zh() -> Iterator[None]:
    i18n.set_language("zh_CN")
    try:
        yield
    finally:
        i18n.set_language("en")


def _both(*args: str) -> tuple[str, str]:
    """stderr of the real command in English and in Chinese; each exits 1 with one line."""
    en, zh = fleetmon(*args), fleetmon("--lang", "zh_CN", *args)
    assert en.returncode == zh.returncode == 1, (en.stderr, zh.stderr)
    assert en.stderr.count("\n") == zh.stderr.count("\n") == 1, (en.stderr, zh.stderr)
    return en.stderr.rstrip("\n"), zh.stderr.rstrip("\n")


# -- fleet import: the host list, Ansible and scontrol importers -----------------------------------------------

IMPORTS = [
    ("hosts", "gpu[05-01]\n",
     "line 1: hostlist 'gpu[05-01]': reversed range '05-01'",
     "第 1 行：hostlist 'gpu[05-01]'：范围 '05-01' 起止颠倒"),
    ("hosts", "# rack 1\ngpu1:70000\n",
     "line 2: port 70000 is out of range",
     "第 2 行：端口 70000 超出范围"),
    ("hosts", "gpu1\ngpu[1-2\n",
     "line 2: hostlist 'gpu[1-2': unbalanced '[' (missing ']')",
     "第 2 行：hostlist 'gpu[1-2'：'[' 不配对（缺少 ']'）"),
    ("ansible", "[gpus]\ngpu[1:9:0]\n",
     "line 2: host range 'gpu[1:9:0]': step must be positive",
     "第 2 行：主机范围 'gpu[1:9:0]'：步长必须为正数"),
    ("ansible", "[gpus]\ngpu[9:1]\n",
     "line 2: host range 'gpu[9:1]': empty (start after end?)",
     "第 2 行：主机范围 'gpu[9:1]'：展开为空（起始值大于结束值？）"),
    ("scontrol", "hello\n",
     "no NodeName= records found (is this `scontrol show nodes` output?)",
     "未找到 NodeName= 记录（这是 `scontrol show nodes` 的输出吗？）"),
]


@pytest.mark.parametrize(("fmt", "text", "english", "chinese"), IMPORTS, ids=[c[2][:30] for c in IMPORTS])
def test_fleet_import_errors(tmp_path: Path, fmt: str, text: str, english: str, chinese: str) -> None:
    path = tmp_path / "h.txt"
    path.write_text(text, encoding="utf-8")
    en, zh = _both("fleet", "import", "--format", fmt, str(path))
    assert en == f"error: {path}: {english}"
    assert zh == f"错误：{path}：{chinese}"


def test_fleet_import_unknown_ansible_group_lists_the_groups_as_the_language_does(tmp_path: Path) -> None:
    path = tmp_path / "inv.ini"
    path.write_text("[a]\nx1\n[b]\nx2\n[c]\nx3\n", encoding="utf-8")
    en, zh = _both("fleet", "import", "--format", "ansible", "--group", "nope", str(path))
    assert en == f"error: {path}: no group 'nope' in the inventory (groups: a, b, c)"
    assert zh == f"错误：{path}：清单中没有分组 'nope'（现有分组：a、b、c）"


# -- preflight --nodes on a real database ---------------------------------------------------------------------

def test_preflight_nodes_hostlist_error(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    open_database(db).close()
    en, zh = _both("preflight", "--db", str(db), "--nodes", "gpu[05-01]")
    assert en == "fleetmon preflight: --nodes: hostlist 'gpu[05-01]': reversed range '05-01'"
    assert zh == "fleetmon preflight: --nodes：hostlist 'gpu[05-01]'：范围 '05-01' 起止颠倒"


# -- import-smi: a table nvidia-smi cannot have written -------------------------------------------------------

def test_import_smi_table_without_a_readable_header(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    path = tmp_path / "n1.txt"
    # The header is there, on a line longer than any nvidia-smi writes: such lines are skipped, so no header.
    path.write_text(f"+---+\n{TABLE_HEAD}{' ' * 5000}\n+---+\n", encoding="utf-8")
    en, zh = _both("import-smi", "--db", str(db), str(path))
    assert en == (f"fleetmon import-smi: {path}: nvidia-smi table: no 'NVIDIA-SMI … Driver Version: … "
                  "CUDA Version: …' header")
    assert zh == (f"fleetmon import-smi: {path}：nvidia-smi 表格：没有 'NVIDIA-SMI … Driver Version: … "
                  "CUDA Version: …' 表头")


def test_import_smi_table_of_too_many_lines(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    path = tmp_path / "n1.txt"
    path.write_text(TABLE_HEAD + "\n" + "|\n" * smi_text.MAX_LINES, encoding="utf-8")
    en, zh = _both("import-smi", "--db", str(db), str(path))
    assert en == f"fleetmon import-smi: {path}: nvidia-smi table: more than {smi_text.MAX_LINES} lines"
    assert zh == f"fleetmon import-smi: {path}：nvidia-smi 表格：超过 {smi_text.MAX_LINES} 行"


# -- the functions themselves: every error a Text, the English as before ------------------------------------

HOSTLISTS = [
    ("n[1[2]]", "hostlist 'n[1[2]]': nested '[' at position 3", "hostlist 'n[1[2]]'：位置 3 处有嵌套的 '['"),
    ("n]", "hostlist 'n]': unbalanced ']' at position 1", "hostlist 'n]'：位置 1 处的 ']' 不配对"),
    ("n[1,,2]", "hostlist 'n[1,,2]': empty element in [1,,2]", "hostlist 'n[1,,2]'：[1,,2] 中有空元素"),
    ("n[a-3]", "hostlist 'n[a-3]': 'a-3' is not a number or a lo-hi range",
     "hostlist 'n[a-3]'：'a-3' 既不是数字，也不是 lo-hi 范围"),
    ("n[1-200000]", "hostlist 'n[1-200000]' expands to more than 100000 hosts",
     "hostlist 'n[1-200000]' 展开后超过 100000 台主机"),
    ("a[1-60000],b[1-60000]", "hostlist 'a[1-60000],b[1-60000]' expands to more than 100000 hosts",
     "hostlist 'a[1-60000],b[1-60000]' 展开后超过 100000 台主机"),
]


@pytest.mark.parametrize(("expr", "english", "chinese"), HOSTLISTS, ids=[c[0] for c in HOSTLISTS])
def test_hostlist_errors(zh: None, expr: str, english: str, chinese: str) -> None:
    with pytest.raises(ValueError) as caught:
        hostlist.expand(expr)
    assert str(caught.value) == english
    assert i18n.message_of(caught.value) == chinese


def test_compress_refuses_a_name_in_chinese(zh: None) -> None:
    with pytest.raises(ValueError) as caught:
        hostlist.compress(["gpu1", "dgx 07"])
    assert str(caught.value) == "cannot put host name 'dgx 07' in a hostlist"
    assert i18n.message_of(caught.value) == "主机名 'dgx 07' 无法写入 hostlist"


ANSIBLE = [
    ("[g]\nn[1]\n", "line 2: host range 'n[1]': expected [start:end] or [start:end:step]",
     "第 2 行：主机范围 'n[1]'：应为 [start:end] 或 [start:end:step]"),
    ("[g]\nn[a:3]\n", "line 2: host range 'n[a:3]': bad range [a:3]", "第 2 行：主机范围 'n[a:3]'：范围 [a:3] 无效"),
    ("[g]\nn[1:200000]\n", "line 2: host range 'n[1:200000]' expands to more than 100000 hosts",
     "第 2 行：主机范围 'n[1:200000]' 展开后超过 100000 台主机"),
    ("[g]\nn1 fleetmon_port=http\n", "host n1: fleetmon_port 'http' is not a port number",
     "主机 n1：fleetmon_port 'http' 不是有效的端口号"),
    # Python's own message (shlex) stays as Python says it; the frame is translated.
    ("[g]\nn1 x='open\n", "line 2: No closing quotation", "第 2 行：No closing quotation"),
]


@pytest.mark.parametrize(("text", "english", "chinese"), ANSIBLE, ids=[c[1][:40] for c in ANSIBLE])
def test_ansible_errors(zh: None, text: str, english: str, chinese: str) -> None:
    with pytest.raises(ValueError) as caught:
        importers.import_ansible_ini(text)
    assert str(caught.value) == english
    assert i18n.message_of(caught.value) == chinese


def test_report_thresholds_and_baseline_errors(zh: None, tmp_path: Path) -> None:
    bad = {"no_such_threshold": 1}
    for fleet, english, chinese in (
            (SimpleNamespace(path="/etc/fleet.toml", thresholds=bad), "/etc/fleet.toml: [thresholds]: ",
             "/etc/fleet.toml：[thresholds]："),
            (SimpleNamespace(path=None, thresholds=bad), "the fleet file: [thresholds]: ", "fleet 文件：[thresholds]：")):
        with pytest.raises(KnownError) as caught:
            assess._thresholds(fleet)
        assert str(caught.value) == english + "unknown threshold 'no_such_threshold'"
        assert i18n.message_of(caught.value).startswith(chinese)
    db = open_database(tmp_path / "fleet.db")
    try:
        with pytest.raises(ValueError) as raised:
            assess.run_report(db, 1_800_000_000.0, 86400.0, None, save=False, baseline="yesterday")
    finally:
        db.close()
    assert str(raised.value) == "baseline 'yesterday': expected 'report' or 'signoff'"
    assert i18n.message_of(raised.value) == "基线 'yesterday'：应为 'report' 或 'signoff'"


def test_nvidia_smi_text_size_and_a_source_that_is_not_polled(zh: None) -> None:
    big = TABLE_HEAD + "\n" + "x" * smi_text.MAX_TEXT_BYTES
    for parse, name in ((smi_text.parse_smi_table, "table"), (smi_text.parse_smi_text, "text")):
        with pytest.raises(SourceError) as caught:
            parse(big)
        assert str(caught.value) == (f"nvidia-smi {name}: {len(big)} characters, more than the "
                                     f"{smi_text.MAX_TEXT_BYTES} a report may have")
        said = {"table": "表格", "text": "文本"}[name]
        assert i18n.message_of(caught.value) == (f"nvidia-smi {said}：{len(big)} 个字符，超过一份报告允许的 "
                                                 f"{smi_text.MAX_TEXT_BYTES} 个字符")
    with pytest.raises(SourceError) as caught:
        sources.answer_name(sources.SourceKind.CAPTURE, "", b"")
    assert str(caught.value) == "capture: not a polled source"
    assert i18n.message_of(caught.value) == "capture：不是轮询的数据源"
