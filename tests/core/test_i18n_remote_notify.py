"""Issue 25: the Prometheus history source's errors and the notification senders' errors are said in the reader's
language (real HTTP on 127.0.0.1: the fake Prometheus API of tests/helpers, servers that answer badly, a closed
port; the real `fleetmon` command). The English stays exactly as it was (the other tests compare parts of it);
the server's own words (its error text, Apprise's log) stay as sent."""

from __future__ import annotations

import json
import pickle
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fleetmon import i18n
from fleetmon.fleet.notify import NotifySpec
from fleetmon.notify.send import DeliveryError, Destination, destinations
from fleetmon.remote.answer import Budget, PrometheusError
from fleetmon.remote.prometheus import PromClient
from helpers.cli import fleetmon
from helpers.fake_prometheus import FakePrometheus, drip, fake_gpus, fake_prometheus
from storage.db import open_database


@pytest.fixture(autouse=True)
def _english_after() -> Iterator[None]:
    yield
    i18n.set_language("en")


@pytest.fixture(scope="module")
def prom() -> Iterator[FakePrometheus]:
    """One fake Prometheus for the module; each test sets its answer."""
    with fake_prometheus(fake_gpus("node-a", 1)) as server:
        yield server


def _both(exc: BaseException) -> tuple[str, str]:
    """(English, Chinese) of an error as the CLI and the app show it."""
    english = str(exc)
    i18n.set_language("zh_CN")
    try:
        return english, i18n.message_of(exc)
    finally:
        i18n.set_language("en")


def _raw(status: str, body: bytes) -> Callable[[Any], None]:
    def write(wfile: Any) -> None:
        wfile.write(b"HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                    % (status.encode(), len(body)) + body)
    return write


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


MATRIX_FOR_VECTOR = json.dumps({"status": "success", "data": {"resultType": "matrix", "result": []}}).encode()

# (case, answer to /api/v1/query, client options, English after "Prometheus URL: ", Chinese after "Prometheus URL：")
CASES: list[tuple[str, Any, dict[str, Any], str, str]] = [
    ("http-status", _raw("500 Internal Server Error", b'{"status":"error","errorType":"internal","error":"boom"}'),
     {}, "HTTP 500: internal boom", "HTTP 500：internal boom"),
    ("not-json", b"<html>a login page</html>", {},
     "the answer is not JSON (is this a Prometheus API?)", "应答不是 JSON（这是 Prometheus API 吗？）"),
    ("too-large", b"{" + b" " * (2 << 20) + b"}", {"max_bytes": 1 << 20},
     "answer larger than 1 MiB; choose a shorter window", "应答大于 1 MiB；请缩短时间窗口"),
    ("query-failed", b'{"status":"error","errorType":"bad_data","error":"parse error at char 3"}', {},
     "query failed: bad_data parse error at char 3", "查询失败：bad_data parse error at char 3"),
    ("wrong-type", MATRIX_FOR_VECTOR, {}, "expected a vector answer", "应为 vector 类型的应答"),
    ("metric", b'{"status":"success","data":{"resultType":"vector","result":[{"metric":5,"value":[1,"1"]}]}}', {},
     "malformed answer: a series' metric is not an object", "应答格式错误：序列的 metric 不是对象"),
    ("no-value", b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}}', {},
     "malformed answer: a series without value", "应答格式错误：序列缺少 value"),
    ("result", b'{"status":"success","data":{"resultType":"vector","result":7}}', {},
     "malformed answer: result is not an array", "应答格式错误：result 不是数组"),
    ("point", b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1]}]}}', {},
     "malformed answer: a point is not [time, value]", "应答格式错误：数据点不是 [时间, 值]"),
    ("time", b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":["1","1"]}]}}', {},
     "malformed answer: a point's time is not a number", "应答格式错误：数据点的时间不是数字"),
    ("truncated", b'{"status":"success"', {}, "malformed answer: truncated", "应答格式错误：被截断"),
    ("cut-series", b'{"status":"success","data":{"resultType":"vector","result":[', {},
     "malformed answer: a series is not an object", "应答格式错误：序列 不是对象"),
    ("after", b'{"status":"success"} {}', {},
     "malformed answer: text after the answer at byte 21", "应答格式错误：应答在第 21 字节处结束后还有多余内容"),
    ("key", b'{"status":"success",7:1}', {},
     "malformed answer: expected a key at byte 20", "应答格式错误：第 20 字节处应为键"),
    ("comma", b'{"status":"success" "data":1}', {},
     "malformed answer: expected ',' or '}' in the answer at byte 20", "应答格式错误：应答 的第 20 字节处应为 ',' 或 '}'"),
    ("unexpected", b'{"status":"success","warnings":@}', {},
     "malformed answer: unexpected '@' at byte 31", "应答格式错误：第 31 字节处出现意外的 '@'"),
    ("end", b'{"status":"success","warnings":', {},
     "malformed answer: unexpected end at byte 31", "应答格式错误：第 31 字节处意外结束"),
    ("labels", b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"' + b"x" * (70 << 10)
     + b'"},"value":[1,"1"]}]}}', {}, "malformed answer: a series' labels longer than 65536 bytes",
     "应答格式错误：序列的标签 超过 65536 字节"),
    ("data", b'{"status":"success","data":[1]}', {},
     "malformed answer: data is not an object", "应答格式错误：data 不是对象"),
]


@pytest.mark.parametrize(("case", "answer", "options", "english", "chinese"), CASES, ids=[c[0] for c in CASES])
def test_prometheus_errors_keep_their_english_and_are_said_in_chinese(
        prom: FakePrometheus, case: str, answer: Any, options: dict[str, Any], english: str, chinese: str) -> None:
    prom.answer = lambda path, params, normal: answer
    try:
        with pytest.raises(PrometheusError) as caught:
            PromClient(prom.url, timeout_s=20, **options).query("up", time.time())
    finally:
        prom.answer = None
    assert _both(caught.value) == (f"Prometheus {prom.url}: {english}", f"Prometheus {prom.url}：{chinese}")


def test_a_prometheus_that_is_down_or_late_or_given_up_on(prom: FakePrometheus) -> None:
    down = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(PrometheusError) as caught:
        PromClient(down).query("up", time.time())
    assert _both(caught.value) == (f"Prometheus {down}: unreachable: [Errno 111] Connection refused",
                                   f"Prometheus {down}：无法连接：[Errno 111] 连接被拒绝")

    prom.answer = lambda path, params, normal: drip(0.3)
    try:
        with pytest.raises(PrometheusError) as caught:
            PromClient(prom.url, timeout_s=1).query("up", time.time())
    finally:
        prom.answer = None
    assert _both(caught.value) == (f"Prometheus {prom.url}: no complete answer within 1 s",
                                   f"Prometheus {prom.url}：1 秒内未收到完整应答")

    with pytest.raises(PrometheusError) as caught:
        PromClient(prom.url, timeout_s=2.5).query("up", time.time(), deadline=time.monotonic() - 1)
    assert _both(caught.value) == (f"Prometheus {prom.url}: no answer within 2.5 s",
                                   f"Prometheus {prom.url}：2.5 秒内无应答")

    client = PromClient(prom.url)
    client.cancel()
    with pytest.raises(PrometheusError) as caught:
        client.query("up", time.time())
    assert _both(caught.value) == (f"Prometheus {prom.url}: cancelled", f"Prometheus {prom.url}：已取消")


def test_a_window_read_over_its_points_budget(prom: FakePrometheus) -> None:
    now = float(int(time.time()) // 60 * 60)
    with pytest.raises(PrometheusError) as caught:
        PromClient(prom.url).query_range('DCGM_FI_DEV_GPU_TEMP{UUID!=""}', now - 3600, now, 60, budget=Budget(10))
    assert _both(caught.value) == (
        f"Prometheus {prom.url}: more than 10 points for this window; choose a shorter window or fewer nodes",
        f"Prometheus {prom.url}：该时间窗口的数据点超过 10 个；请缩短时间窗口或减少节点")


def _report_setup(tmp_path: Path, url: str) -> tuple[Path, Path]:
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'[history]\nprometheus = "{url}"\n\n[[node]]\nname = "node-a"\nurl = "http://127.0.0.1:9/"\n')
    db = tmp_path / "fleetmon.db"
    open_database(db).close()
    return fleet, db


def test_fleetmon_report_says_a_malformed_prometheus_answer_in_the_reader_language(
        prom: FakePrometheus, tmp_path: Path) -> None:
    def spoil(path: str, params: dict[str, str], normal: dict[str, Any]) -> bytes | None:
        if path.endswith("query_range"):
            return b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"UUID":"x"},"values":5}]}}'
        return None

    fleet, db = _report_setup(tmp_path, prom.url)
    prom.answer = spoil
    try:
        english = fleetmon("report", "--db", str(db), "--fleet", str(fleet), "--since", "1h")
        chinese = fleetmon("--lang", "zh_CN", "report", "--db", str(db), "--fleet", str(fleet), "--since", "1h")
    finally:
        prom.answer = None
    assert english.returncode == chinese.returncode == 1
    assert english.stderr == (f"fleetmon report: Prometheus {prom.url}: malformed answer: a series' values is not an "
                              "array\n")
    assert chinese.stderr == f"fleetmon report: Prometheus {prom.url}：应答格式错误：序列的取值 不是数组\n"


@pytest.mark.gui
def test_the_gpu_detail_reader_says_the_prometheus_error_in_the_reader_language(
        prom: FakePrometheus, tmp_path: Path, qtbot: Any) -> None:
    pytest.importorskip("PySide6")
    from ui.history_reader import HistoryReader

    db = tmp_path / "fleetmon.db"
    open_database(db).close()
    said: list[str] = []
    reader = HistoryReader(str(db), prometheus=prom.url)
    reader.failed.connect(said.append)
    prom.answer = lambda path, params, normal: b"<html>not an API</html>"
    try:
        i18n.set_language("zh_CN")
        reader.load_detail(1, "GPU-1", time.time() - 3600, time.time())
        i18n.set_language("en")
        reader.load_detail(2, "GPU-1", time.time() - 3600, time.time())
    finally:
        prom.answer = None
        reader.close()
    assert said == [f"Prometheus {prom.url}：应答不是 JSON（这是 Prometheus API 吗？）",
                    f"Prometheus {prom.url}: the answer is not JSON (is this a Prometheus API?)"]


# -- notifications ------------------------------------------------------------------------------------


def test_notify_test_names_each_failing_destination_in_the_reader_language(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.toml"
    port = _closed_port()
    fleet.write_text('[[node]]\nname = "n1"\nurl = "http://127.0.0.1:9"\n'
                     '[[notify]]\nname = "ops"\nurl = "plain://nothing"\n'
                     f'[[notify]]\nname = "hook"\nurl = "json://127.0.0.1:{port}/x"\n', encoding="utf-8")
    english = fleetmon("notify", "test", "--fleet", str(fleet))
    chinese = fleetmon("--lang", "zh_CN", "notify", "test", "--fleet", str(fleet))
    assert english.returncode == chinese.returncode == 1
    refused = "Apprise does not accept the plain:// URL: Unparseable URL <url>; see https://appriseit.com/"
    apprise = "A Connection error occurred sending JSON notification to 127.0.0.1."  # Apprise's own words
    assert english.stderr.splitlines() == [
        f"ops: FAILED: {refused}", f"hook: FAILED: {apprise}",
        "fleetmon notify: 2 of 2 destinations did not take the test message"]
    assert chinese.stderr.splitlines() == [
        "ops：失败：Apprise 不接受该 plain:// URL：Unparseable URL <url>；参见 https://appriseit.com/",
        f"hook：失败：{apprise}", "fleetmon notify: 2 个通知目标中有 2 个未收到测试消息"]


def test_a_destination_that_cannot_be_set_up_in_both_languages(tmp_path: Path) -> None:
    with pytest.raises(DeliveryError) as caught:
        Destination(NotifySpec("ops", ""))  # Apprise refuses it without a word of its own
    assert _both(caught.value) == ("notify ops: Apprise does not accept the :// URL; see https://appriseit.com/",
                                   "通知 ops：Apprise 不接受该 :// URL；参见 https://appriseit.com/")
    again = pickle.loads(pickle.dumps(caught.value))
    assert (str(again), again.name) == (str(caught.value), "ops")

    empty = tmp_path / "secret"
    empty.write_text("")
    empty.chmod(0o600)
    with pytest.raises(DeliveryError) as caught:
        Destination(NotifySpec("pager", "slack://{secret}/#ops", secret_file=str(empty)))
    # the frame is translated, and the token file's own line (fleetmon/tokens.py) inside it
    assert _both(caught.value) == (f"notify pager: secret file {empty} is empty",
                                   f"通知 pager：密钥文件 {empty} 为空")

    ready, errors = destinations([NotifySpec("ops", "plain://nothing"), NotifySpec("pager", "")])
    assert ready == [] and errors == [
        "notify ops: Apprise does not accept the plain:// URL: Unparseable URL <url>; see https://appriseit.com/",
        "notify pager: Apprise does not accept the :// URL; see https://appriseit.com/"]
    i18n.set_language("zh_CN")
    assert [i18n.localized(e) for e in errors] == [
        "通知 ops：Apprise 不接受该 plain:// URL：Unparseable URL <url>；参见 https://appriseit.com/",
        "通知 pager：Apprise 不接受该 :// URL；参见 https://appriseit.com/"]
