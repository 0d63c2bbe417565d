"""Issue 25: `fleetmon collect`'s lines, the token files' errors, the agent's buffer lock and tool reads, and the
store's refusals of a poll are said in the reader's language; the English is byte for byte as before.

Real parts: `fleetmon --lang zh_CN collect …` / `agent …` as subprocesses with real token files (mode 0644 for
"readable by group or others"), a real agent holding its buffer while a second one starts on it, real tool
processes (run_tool), and bad polls stored by the real ingest into a SQLite file and read back from
``nodes.last_error_texts``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fleetmon import i18n
from fleetmon.agent.polled import ReadError
from fleetmon.agent.tools import TOOLS, ToolReader, _amd_smi_sample, run_tool
from fleetmon.collector.client import Target, poll_all
from fleetmon.collector.lock import WriterLock
from fleetmon.i18n import Text
from fleetmon.records import NodePoll
from fleetmon.sim import tools as twins
from fleetmon.sim.fleet import SimNode, make_node
from fleetmon.tokens import TokenFileError, read_secret_file, read_token_file
from helpers import dead_url
from helpers.cli import REPO, fleetmon
from storage import queries
from storage.boundary import INVENTORY_NUMBERS, INVENTORY_TEXTS
from storage.db import open_database
from storage.ingest import ingest_polls

TOKEN = "s3cret-token-0123456789"


def _said(exc: BaseException) -> tuple[str, str]:
    """(English, Chinese) of an exception's message as the CLI shows it."""
    english = i18n.message_of(exc)
    with i18n.speaking("zh_CN"):
        return english, i18n.message_of(exc)


def _fleet(tmp_path: Path, extra: str = "") -> Path:
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'[fleet]\ntimeout_s = 1\n{extra}[[node]]\nname = "n1"\nurl = "{dead_url()}"\n', encoding="utf-8")
    return fleet


# -- fleetmon collect ---------------------------------------------------------------------------------------------


def test_collect_refuses_a_bad_interval_in_both_languages(tmp_path: Path) -> None:
    fleet, db = _fleet(tmp_path), tmp_path / "f.db"
    en = fleetmon("collect", "--fleet", str(fleet), "--db", str(db), "--interval", "0.1")
    zh = fleetmon("--lang", "zh_CN", "collect", "--fleet", str(fleet), "--db", str(db), "--interval", "0.1")
    assert (en.returncode, zh.returncode) == (1, 1)
    assert en.stderr == "fleetmon collect: --interval must be between 0.5 and 86400 seconds\n"
    assert zh.stderr == "fleetmon collect: --interval 必须在 0.5 到 86400 秒之间\n"


def test_collect_names_the_other_writer_in_both_languages(tmp_path: Path) -> None:
    fleet, db = _fleet(tmp_path), tmp_path / "f.db"
    lock = WriterLock(str(db))
    assert lock.acquire()
    try:
        holder = lock.holder()
        en = fleetmon("collect", "--fleet", str(fleet), "--db", str(db), "--once")
        zh = fleetmon("--lang", "zh_CN", "collect", "--fleet", str(fleet), "--db", str(db), "--once")
    finally:
        lock.release()
    assert (en.returncode, zh.returncode) == (1, 1)
    assert en.stderr == f"fleetmon collect: another collector writes {db} ({holder}); stop it first\n"
    assert zh.stderr == f"fleetmon collect: 另一个采集器正在写入 {db}（{holder}）；请先停止它\n"


def test_collect_once_says_its_summary_and_a_token_files_mode(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o644)
    fleet = _fleet(tmp_path, f'token_file = "{token}"\n')
    en = fleetmon("collect", "--fleet", str(fleet), "--db", str(tmp_path / "en.db"), "--once")
    zh = fleetmon("--lang", "zh_CN", "collect", "--fleet", str(fleet), "--db", str(tmp_path / "zh.db"), "--once")
    assert (en.returncode, zh.returncode) == (0, 0), (en.stderr, zh.stderr)
    assert en.stdout == "polled 1 nodes: 0 ok, 1 unreachable\n"
    assert zh.stdout == "已采集 1 个节点：0 个正常，1 个不可达\n"
    # the log line (logging) stays English on purpose; the node's reason is said in the reader's language
    assert (f"  n1: token file {token} is readable by group or others (mode 0644); run: chmod 600 {token}\n"
            in en.stderr)
    assert f"  n1: 令牌文件 {token} 可被同组用户或其他用户读取（权限 0644）；请执行：chmod 600 {token}\n" in zh.stderr


@pytest.mark.parametrize(("lang", "line"), [("en", "fleetmon collect: polling 1 nodes every 30 s into {db}"),
                                            ("zh_CN", "fleetmon collect: 每 30 秒采集 1 个节点，写入 {db}")])
def test_collect_says_what_it_polls(tmp_path: Path, lang: str, line: str) -> None:
    fleet, db = _fleet(tmp_path), tmp_path / "f.db"
    proc = subprocess.Popen([sys.executable, "-m", "fleetmon", "--lang", lang, "collect", "--fleet", str(fleet),
                             "--db", str(db), "--interval", "30"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=REPO)
    try:
        lock = Path(str(db) + ".lock")
        deadline = time.monotonic() + 60
        while not (lock.exists() and f"pid={proc.pid}" in lock.read_text()):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the collector did not take the lock"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)  # the line is printed before the collector waits for the stop
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert line.format(db=db) in err.splitlines(), err


# -- token and secret files ---------------------------------------------------------------------------------------


def _file(tmp_path: Path, content: bytes | None, mode: int = 0o600) -> Path:
    path = tmp_path / "token"
    if content is not None:
        path.write_bytes(content)
        path.chmod(mode)
    return path


TOKEN_CASES = [
    (b"short\n", 0o600, "token file {p} holds a token shorter than 16 characters",
     "令牌文件 {p} 中的令牌短于 16 个字符"),
    (b"abcdefgh ijklmnopqrs\n", 0o600, "token file {p} holds whitespace inside the token (one line, one token)",
     "令牌文件 {p} 的令牌中含有空白字符（一行只放一个令牌）"),
    (b"  \n", 0o600, "token file {p} is empty", "令牌文件 {p} 为空"),
    (b"\xff\xfeabcdefghijklmnopqrs", 0o600, "token file {p}: cannot read it (not UTF-8 text)",
     "令牌文件 {p}：无法读取（不是 UTF-8 文本）"),
    (None, 0o600, "token file {p}: cannot read it (No such file or directory)",
     "令牌文件 {p}：无法读取（No such file or directory）"),
    (TOKEN.encode(), 0o640, "token file {p} is readable by group or others (mode 0640); run: chmod 600 {p}",
     "令牌文件 {p} 可被同组用户或其他用户读取（权限 0640）；请执行：chmod 600 {p}"),
]


@pytest.mark.parametrize(("content", "mode", "english", "chinese"), TOKEN_CASES)
def test_each_token_file_error_in_both_languages(tmp_path: Path, content: bytes | None, mode: int, english: str,
                                                 chinese: str) -> None:
    path = _file(tmp_path, content, mode)
    with pytest.raises(TokenFileError) as info:
        read_token_file(path)
    assert _said(info.value) == (english.format(p=path), chinese.format(p=path))


def test_secret_files_are_named_in_the_readers_language(tmp_path: Path) -> None:
    path = _file(tmp_path, b"line one\nline two\n")
    with pytest.raises(TokenFileError) as info:
        read_secret_file(path)
    assert _said(info.value) == (f"secret file {path} holds more than one line (one line, one secret)",
                                 f"密钥文件 {path} 不止一行（一行只放一个密钥）")
    path.chmod(0o644)
    with pytest.raises(TokenFileError) as info:
        read_secret_file(path, i18n.N_("url file"))
    assert _said(info.value) == (
        f"url file {path} is readable by group or others (mode 0644); run: chmod 600 {path}",
        f"URL 文件 {path} 可被同组用户或其他用户读取（权限 0644）；请执行：chmod 600 {path}")


def test_the_agent_refuses_a_token_file_readable_by_others_in_both_languages(tmp_path: Path) -> None:
    path = _file(tmp_path, TOKEN.encode() + b"\n", 0o644)
    args = ("agent", "--simulate", "healthy", "--port", "0", "--buffer", str(tmp_path / "b.db"), "--token-file",
            str(path))
    en, zh = fleetmon(*args), fleetmon("--lang", "zh_CN", *args)
    assert (en.returncode, zh.returncode) == (1, 1)
    assert en.stderr == (f"fleetmon agent: token file {path} is readable by group or others (mode 0644); "
                         f"run: chmod 600 {path}\n")
    assert zh.stderr == f"fleetmon agent: 令牌文件 {path} 可被同组用户或其他用户读取（权限 0644）；请执行：chmod 600 {path}\n"


# -- the agent: its buffer held by another, its tools ---------------------------------------------------------------


@pytest.fixture
def first_agent(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    buffer, port_file = tmp_path / "agent.db", tmp_path / "port"
    proc = subprocess.Popen([sys.executable, "-m", "fleetmon", "agent", "--simulate", "healthy", "--port", "0",
                             "--port-file", str(port_file), "--buffer", str(buffer)], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists():
            assert proc.poll() is None, "the first agent ended"
            assert time.monotonic() < deadline, "the first agent did not start"
            time.sleep(0.05)
        yield proc, buffer
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_a_second_agent_on_the_same_buffer_says_who_holds_it(first_agent: tuple[subprocess.Popen[bytes], Path]
                                                             ) -> None:
    proc, buffer = first_agent
    args = ("agent", "--simulate", "healthy", "--port", "0", "--buffer", str(buffer))
    en, zh = fleetmon(*args), fleetmon("--lang", "zh_CN", *args)
    assert (en.returncode, zh.returncode) == (2, 2)
    assert en.stderr == (f"fleetmon agent: the buffer {buffer} is in use by another agent (PID {proc.pid}); "
                         "stop that one, or give this one its own --buffer\n")
    assert zh.stderr == (f"fleetmon agent: 缓冲区 {buffer} 正被另一个 agent 使用（PID {proc.pid}）；"
                         "请停止那个 agent，或为这个 agent 另指定 --buffer\n")


def test_a_tools_read_errors_in_both_languages() -> None:
    command = f"{Path(sys.executable).name} -c import sys; sys.stdout.write('x' * 100000)"
    with pytest.raises(ReadError) as info:
        run_tool([sys.executable, "-c", "import sys; sys.stdout.write('x' * 100000)"], 30.0, max_bytes=1000)
    assert _said(info.value) == (f"{command} wrote more than 1000 bytes (stopped)",
                                 f"{command} 输出超过 1000 字节（已停止）")
    # closes its output at once, then does not end: the wait for its exit runs out
    code = "import os, time; os.close(1); os.close(2); time.sleep(30)"
    command = f"{Path(sys.executable).name} -c {code}"
    with pytest.raises(ReadError) as info:
        run_tool([sys.executable, "-c", code], 0.5)
    assert _said(info.value) == (f"{command} did not end within 0.5 s (stopped)",
                                 f"{command} 在 0.5 秒内没有结束（已停止）")


def test_amd_smi_list_and_metric_that_disagree_and_a_read_out_of_time(tmp_path: Path) -> None:
    """The amd-smi twin (real processes printing amd-smi's layout): list names two GPUs, metric one."""
    for name, count in (("two", 2), ("one", 1)):
        twins.write_state(tmp_path / f"{name}.json", {"backend": "amd-smi", "model": "mi100", "count": count,
                                                     "seed": 7, "faults": []}, time.time(), "n1")
        twins.install(tmp_path / name, tmp_path / f"{name}.json")

    def run(args: list[str]) -> bytes:
        return run_tool([str(tmp_path / ("two" if args[0] == "list" else "one") / "amd-smi"), *args], 60.0)

    with pytest.raises(ReadError) as info:
        _amd_smi_sample(run)
    assert _said(info.value) == ("amd-smi list names 2 GPUs, metric 1: not used",
                                 "amd-smi list 列出 2 块 GPU，metric 列出 1 块：不采用")
    with pytest.raises(ReadError) as info:
        ToolReader(TOOLS["amd-smi"], str(tmp_path / "two" / "amd-smi")).sample(0.0)
    assert _said(info.value) == ("amd-smi list --json: no time left in this read",
                                 "amd-smi list --json：本次读取已没有剩余时间")


# -- the store's refusal of a node's answer (storage.boundary), kept through nodes.last_error_texts ----------------


@pytest.fixture(scope="module")
def good_poll() -> Iterator[NodePoll]:
    node: SimNode = make_node("n1", gpus=1)
    node.serve(0.1)
    node.backfill(1)
    try:
        (poll,) = asyncio.run(poll_all([Target(name="n1", url=node.url)], timeout_s=5.0))
    finally:
        node.close()
    assert poll.ok, poll.error
    yield poll


NUMBER, TEXT = sorted(INVENTORY_NUMBERS)[0], sorted(INVENTORY_TEXTS)[0]
LONG = "x" * 60
CUT = ascii(LONG)[:39] + "\\u2026"  # _show cuts a value to 40 characters; the store keeps the reason in ASCII
REFUSALS: list[tuple[dict[str, Any], str, str]] = [
    ({"uuid": 7}, "gpus: uuid 7 is not a GPU UUID", "gpus：uuid 7 不是 GPU UUID"),
    ({"index": "0"}, "gpu 'GPU-x1': index '0' is not an integer", "gpu 'GPU-x1'：index '0' 不是整数"),
    ({"index": LONG}, f"gpu 'GPU-x1': index {CUT} is not an integer", f"gpu 'GPU-x1'：index {CUT} 不是整数"),
    ({"values": {NUMBER: True}}, f"gpu 'GPU-x1': {NUMBER} True is not a number (bool)",
     f"gpu 'GPU-x1'：{NUMBER} True 不是数值（bool）"),
    ({"values": {NUMBER: 2**70}}, f"gpu 'GPU-x1': {NUMBER} {2**70} is outside the 64-bit integer range",
     f"gpu 'GPU-x1'：{NUMBER} {2**70} 超出 64 位整数范围"),
    ({"values": {NUMBER: math.inf}}, f"gpu 'GPU-x1': {NUMBER} inf is not a finite number",
     f"gpu 'GPU-x1'：{NUMBER} inf 不是有限数值"),
    ({"values": {NUMBER: "12"}}, f"gpu 'GPU-x1': {NUMBER} '12' is not a number (str)",
     f"gpu 'GPU-x1'：{NUMBER} '12' 不是数值（str）"),
    ({"values": {TEXT: 5}}, f"gpu 'GPU-x1': {TEXT} 5 is not text (int)", f"gpu 'GPU-x1'：{TEXT} 5 不是文本（int）"),
    ({"values": "nope"}, "gpu 'GPU-x1': values 'nope' is not an object", "gpu 'GPU-x1'：values 'nope' 不是对象"),
]


@pytest.mark.parametrize(("change", "english", "chinese"), REFUSALS)
def test_a_refused_poll_is_stored_and_said_in_the_readers_language(good_poll: NodePoll, tmp_path: Path,
                                                                   change: dict[str, Any], english: str,
                                                                   chinese: str) -> None:
    gpu = dataclasses.replace(good_poll.gpus[0], **{"uuid": "GPU-x1", **change})
    bad = dataclasses.replace(good_poll, gpus=[gpu])
    refused: dict[str, str] = {}
    db = open_database(tmp_path / "f.db")
    try:
        ingest_polls(db, [bad], refused=refused)
    finally:
        db.close()
    db = open_database(tmp_path / "f.db", readonly=True)
    try:
        (node,) = queries.nodes(db)
    finally:
        db.close()
    for reason in (refused["n1"], node.last_error):
        assert reason == f"storage refused the answer: {english}" and isinstance(reason, Text), reason
        assert i18n.localized(reason) == f"storage refused the answer: {english}"
        with i18n.speaking("zh_CN"):
            assert i18n.localized(reason) == f"存储拒收了该应答：{chinese}"
