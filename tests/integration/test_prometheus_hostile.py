"""Prometheus history against a hostile Prometheus (issue 20, items 3, 5 and 6): a fake API on 127.0.0.1.

Each test failed before the fix it guards: a point at t = 1e18 hung `fleetmon report` and the collector's
health pass (the derating day loop walked a day at a time towards it); malformed answers ended in
AttributeError/TypeError/IndexError/ValueError/RecursionError/OverflowError tracebacks; a server that drips
a byte every second was read for as long as it dripped (the timeout was per read); a 60 MiB answer ended in
MemoryError; a node label that no hostlist can hold failed the whole report.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from fleetmon.remote.answer import MAX_SERIES, PrometheusError
from fleetmon.remote.prometheus import PromClient, detail_window, fleet_gpus, recorded
from helpers.fake_prometheus import FakePrometheus, drip, fake_gpus, fake_prometheus
from storage.db import open_database

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
MiB = 1 << 20

PEAK_RSS_LIMIT_MIB = 1536
"""Generous test limit for `fleetmon report` against 60 MiB answers; docs/prometheus-history.md states the
bound (eight answers of at most 64 MiB in flight, walked in place, plus 16 bytes per kept point)."""


_SERVER: list[FakePrometheus] = []


@pytest.fixture(scope="module", autouse=True)
def _one_server() -> Iterator[None]:
    """One fake Prometheus for the whole module; each test gives it its GPUs and answers (:func:`serving`).

    Stopping a server waits for ``serve_forever``'s half-second poll: with a server per test, that wait was
    nearly all of each malformed-answer case's half second."""
    with fake_prometheus([]) as prom:
        _SERVER.append(prom)
        try:
            yield
        finally:
            _SERVER.clear()


@contextmanager
def serving(gpus: list[dict[str, str]], answer: Any = None) -> Iterator[FakePrometheus]:
    """The module's fake Prometheus holding ``gpus`` and answering with ``answer`` until the block ends."""
    prom = _SERVER[0]
    prom.gpus, prom.answer = gpus, answer
    try:
        yield prom
    finally:
        prom.gpus, prom.answer = [], None


def _fleet(tmp_path: Path, url: str) -> tuple[Path, Path]:
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'[history]\nprometheus = "{url}"\n\n[[node]]\nname = "node-a"\nurl = "http://127.0.0.1:9/"\n')
    db = tmp_path / "fleetmon.db"
    open_database(db).close()
    return fleet, db


def _report(fleet: Path, db: Path, *extra: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fleetmon", "report", "--db", str(db), "--fleet", str(fleet),
                           "--since", "1h", *extra], capture_output=True, text=True, timeout=timeout, cwd=REPO)


def _future(path: str, params: dict[str, str], normal: dict[str, Any]) -> None:
    """Every range answer gains a point at t = 1e18 (year 31.7 billion) and one far in the past."""
    if path.endswith("query_range"):
        for series in normal["data"]["result"]:
            series["values"] += [[1e18, "70"], [-1e18, "70"], [float(params["start"]) + 0.5, "1"]]
    return None


# -- item 3: a point far in the future ----------------------------------------------------------------


def test_report_with_a_point_at_1e18_finishes_with_the_rest_of_the_data(tmp_path):
    gpus = fake_gpus("node-a", 2)
    with serving(gpus, _future) as prom:
        fleet, db = _fleet(tmp_path, prom.url)
        t0 = time.monotonic()
        out = _report(fleet, db, "--json", timeout=60)
        took = time.monotonic() - t0
    assert out.returncode in (0, 1, 2), out.stderr
    report = json.dumps(json.loads(out.stdout))
    assert "node-a" in report and "A100" in report
    assert "outside the window" in out.stderr  # dropped, counted and said
    print(f"report with a 1e18 point: {took:.1f} s")


def test_collector_health_pass_with_a_point_at_1e18_finishes(tmp_path):
    """The collector's health pass (``assess.evaluate_and_store``, what the poller calls every minute)."""
    gpus = fake_gpus("node-a", 2)
    with serving(gpus, _future) as prom:
        fleet, db = _fleet(tmp_path, prom.url)
        code = textwrap.dedent(f"""
            import time
            from fleetmon import assess
            from fleetmon.fleet import load_fleet
            from storage.db import open_database
            db = open_database({str(db)!r})
            out = assess.evaluate_and_store(db, time.time(), fleet=load_fleet({str(fleet)!r}))
            print("derating_rows", out["derating_rows"])
        """)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert "derating_rows" in done.stdout


def test_derating_day_loop_is_bounded_by_the_window():
    from fleetmon.health.rules.derating import _day_bounds

    now = 1_750_000_000.0
    ts = [now - 7200, now - 60, 1e18]
    t0 = time.monotonic()
    days = _day_bounds(ts, now - 86400, now)
    assert time.monotonic() - t0 < 1.0
    assert days == [(int(now // 86400), 0, 2)] or [d[0] for d in days] == [int((now - 7200) // 86400),
                                                                           int(now // 86400)]
    assert all(hi <= 2 for _, _, hi in days)  # the 1e18 row is outside the window


# -- item 5: malformed answers end in the one-line error ------------------------------------------------


def _spoil(kind: str, body: bytes, only: str = "") -> Any:
    """An answer function replacing the range answers (``kind`` "range"), the instant ones, or both.

    ``only``: just the answers to queries holding this text (the others honest)."""
    def answer(path: str, params: dict[str, str], normal: dict[str, Any]) -> bytes | None:
        if kind == "both" or (kind == "range") == path.endswith("query_range"):
            if only in params.get("query", ""):
                return body
        return None
    return answer


MALFORMED = {
    "result-of-strings": b'{"status":"success","data":{"resultType":"matrix","result":["x"]}}',
    "values-a-number": b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"UUID":"GPU-1"},'
                       b'"values":5}]}}',
    "point-of-one": b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"UUID":"GPU-1"},'
                    b'"values":[[1]]}]}}',
    "metric-a-list": b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":[1],"values":[]}]}}',
    "data-a-list": b'{"status":"success","data":[]}',
    "deeply-nested": b'{"status":"success","data":' + b"[" * 200_000 + b"]" * 200_000 + b"}",
    "nested-in-labels": b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":'
                        + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b',"values":[]}]}}',
    "truncated": b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"UUID":"GPU-1"},'
                 b'"values":[[1700000000,"1"',
    "not-json": b"<html>502 Bad Gateway</html>",
    "trailing-text": b'{"status":"success","data":{"resultType":"matrix","result":[]}} and more',
    "status-error": b'{"status":"error","errorType":"bad_data","error":"\\u001b[31mred\\nline"}',
    "vector-for-range": b'{"status":"success","data":{"resultType":"vector","result":[]}}',
    "too-many-series": b'{"status":"success","data":{"resultType":"matrix","result":['
                       + b",".join([b'{"metric":{},"values":[]}'] * (MAX_SERIES + 1)) + b"]}}",
    "huge-skipped-part": b'{"status":"success","warnings":[' + b"[]," * 600_000 + b'[]],"data":{}}',
}


HEAVY = {"too-many-series", "huge-skipped-part"}
"""Malformed answers found out only at the end of a long walk (20,001 series; a 1.8 MB part skipped): the
window's eight queries in flight walked eight of them at once, sharing one core, 4-6 s a case. These serve
it to one query (the mean temperature, in the first eight) among honest answers: the same walk, whose
failure cancels the other queries."""


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_range_answer_is_one_line(name):
    spoiled = _spoil("range", MALFORMED[name], only="avg_over_time(DCGM_FI_DEV_GPU_TEMP" if name in HEAVY else "")
    with serving(fake_gpus("node-a", 1), spoiled) as prom:
        with pytest.raises(PrometheusError) as err:
            detail_window(PromClient(prom.url), "GPU-1", time.time() - 3600, time.time())
    text = str(err.value)
    assert text.startswith(f"Prometheus {prom.url}: ") and "\n" not in text and "\x1b" not in text, text


@pytest.mark.parametrize("body", [
    b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{"UUID":"GPU-1"},"value":[1]}]}}',
    b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{"UUID":"GPU-1"},"value":5}]}}',
    b'{"status":"success","data":{"resultType":"vector","result":[7]}}',
    b'{"status":"success","data":{"resultType":"matrix","result":[]}}',
], ids=["value-of-one", "value-a-number", "result-of-numbers", "matrix-for-instant"])
def test_malformed_instant_answer_is_one_line(body):
    with serving(fake_gpus("node-a", 1), _spoil("instant", body)) as prom:
        with pytest.raises(PrometheusError) as err:
            fleet_gpus(PromClient(prom.url), time.time() - 3600, time.time(), {})
    assert "\n" not in str(err.value)


def test_odd_labels_and_values_are_left_out_not_raised():
    """A ``gpu`` label of "²" or 5,000 digits is no index; 1e308, NaN, "abc" and off-grid points are dropped."""
    gpus = fake_gpus("node-a", 3)
    gpus[0]["gpu"] = "²"
    gpus[1]["gpu"] = "9" * 5000
    gpus[2]["modelName"] = "x" * 5000

    def answer(path: str, params: dict[str, str], normal: dict[str, Any]) -> None:
        if path.endswith("query_range"):
            for series in normal["data"]["result"]:
                series["values"][0][1] = "1e308"
                series["values"][1][1] = "NaN"
                series["values"][2][1] = "abc"
                series["values"][3][0] += 7  # off the step grid
        return None

    now = time.time()
    with serving(gpus, answer) as prom:
        client = PromClient(prom.url)
        found = recorded(client, now, now - 3600, minutes_s=3600, by_address={})
    assert sorted(g.index for g in found.gpus if g.index is not None) == [2]
    assert {g.uuid for g in found.gpus} == {g["UUID"] for g in gpus}
    minutes = found.minutes[gpus[0]["UUID"]]
    assert all(v is None or abs(v) < 1e15 for v in minutes["temp_c_max"])
    assert client.drops.out_of_range and client.drops.not_a_number and client.drops.outside


def test_report_says_a_malformed_answer_in_one_line(tmp_path):
    with serving(fake_gpus("node-a", 1), _spoil("range", MALFORMED["values-a-number"])) as prom:
        fleet, db = _fleet(tmp_path, prom.url)
        out = _report(fleet, db, timeout=60)
    assert out.returncode == 1
    assert "malformed answer" in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_a_server_that_drips_fails_at_the_deadline():
    """A byte every half second: each read succeeds within the 1 s timeout, so a per-read timeout never fires;
    the request's deadline does."""
    with serving(fake_gpus("node-a", 1), lambda p, q, n: drip(0.5)) as prom:
        t0 = time.monotonic()
        with pytest.raises(PrometheusError) as err:
            detail_window(PromClient(prom.url, timeout_s=1), "GPU-1", time.time() - 3600, time.time())
        took = time.monotonic() - t0
    assert "no complete answer within 1 s" in str(err.value)
    assert took < 10, took


def test_report_memory_against_60_mib_answers(tmp_path):
    """Every range answer 60 MiB (under the 64 MiB cap): one series of 3 million points off the grid."""
    cache: dict[str, bytes] = {}

    def answer(path: str, params: dict[str, str], normal: dict[str, Any]) -> bytes | None:
        if not path.endswith("query_range"):
            return None
        if "body" not in cache:
            head = (b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"UUID":"%s"},"values":['
                    % normal["data"]["result"][0]["metric"]["UUID"].encode())
            pair = b'[%d.5,"1"],' % int(float(params["start"]))
            cache["body"] = head + pair * ((60 * MiB - len(head)) // len(pair)) + b'[1,"1"]]}]}}'
        return cache["body"]

    with serving(fake_gpus("node-a", 2), answer) as prom:
        fleet, db = _fleet(tmp_path, prom.url)
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "fleetmon", "report", "--db", str(db), "--fleet", str(fleet),
                                 "--since", "1h"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        err = proc.stderr.read().decode() if proc.stderr else ""
        _, status, usage = os.wait4(proc.pid, 0)
        took = time.monotonic() - t0
    peak_mib = usage.ru_maxrss // 1024
    print(f"fleetmon report against 60 MiB answers: peak RSS {peak_mib} MiB, {took:.1f} s: {err.strip()}")
    assert os.waitstatus_to_exitcode(status) == 1
    assert "malformed answer" in err and len(err.strip().splitlines()) == 1, err
    assert peak_mib < PEAK_RSS_LIMIT_MIB


# -- item 6: node names no hostlist can hold ---------------------------------------------------------------


def test_node_labels_no_fleet_file_accepts_do_not_fail_the_report(tmp_path):
    gpus = fake_gpus("node-a", 2)
    for name in ("dgx 07", "a,b", "gpu[1]", "evil\x1b[2Jnode"):
        gpus += fake_gpus(name, 1)
        gpus[-1]["instance"] = gpus[-1]["Hostname"] = name
    with serving(gpus) as prom:
        fleet, db = _fleet(tmp_path, prom.url)
        out = _report(fleet, db, timeout=60)
    assert out.returncode in (0, 1, 2), out.stderr
    assert "cannot put host name" not in out.stderr + out.stdout
    assert "node-a" in out.stdout and "unnamed-" in out.stdout
    assert "\x1b" not in out.stdout + out.stderr
    assert "no fleet file accepts as a node name" in out.stderr


# -- item 5: the GUI's detail view ------------------------------------------------------------------------


@pytest.mark.gui
def test_gpu_detail_view_says_when_the_answer_is_malformed(qtbot, tmp_path):
    from storage.rows import FleetRow
    from ui.history_reader import set_prometheus
    from ui.views.gpu_detail import GpuDetailView

    db = tmp_path / "fleetmon.db"
    open_database(db).close()
    with serving(fake_gpus("node-a", 1), _spoil("range", MALFORMED["deeply-nested"])) as prom:
        set_prometheus(prom.url)
        try:
            view = GpuDetailView(str(db))
        finally:
            set_prometheus(None)
        qtbot.addWidget(view)
        try:
            view.show_gpu(FleetRow(node="node-a", uuid="GPU-1", index=0, model="NVIDIA A100-SXM4-80GB"))
            qtbot.waitUntil(lambda: view.status.text().startswith("cannot read the history:"), timeout=20000)
            assert "malformed answer" in view.status.text() and "\n" not in view.status.text()
        finally:
            view.service.stop()


GUI_SCRIPT = """
import sys, time
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from storage.rows import FleetRow
from ui.history_reader import set_prometheus
from ui.views.gpu_detail import GpuDetailView

app = QApplication([])
set_prometheus(sys.argv[2])
view = GpuDetailView(sys.argv[1])
view.show()
view.show_gpu(FleetRow(node="node-a", uuid="GPU-1", index=0, model="NVIDIA A100-SXM4-80GB"))
QTimer.singleShot(1500, view.close)
QTimer.singleShot(1600, app.quit)
app.exec()
t0 = time.monotonic()
view.shutdown()
print(f"shutdown {time.monotonic() - t0:.1f} s", flush=True)
"""


@pytest.mark.gui
def test_gui_process_exits_after_its_window_closes_while_prometheus_drips(tmp_path):
    """The detail view's read is in flight (a server dripping a byte every 0.5 s) when the window closes."""
    db = tmp_path / "fleetmon.db"
    open_database(db).close()
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    with serving(fake_gpus("node-a", 1), lambda p, q, n: drip(0.5)) as prom:
        t0 = time.monotonic()
        done = subprocess.run([sys.executable, "-c", GUI_SCRIPT, str(db), prom.url], capture_output=True, text=True,
                              timeout=60, cwd=REPO, env=env)
        took = time.monotonic() - t0
    assert done.returncode == 0, done.stderr[-2000:]
    assert "shutdown" in done.stdout
    assert took < 15, (took, done.stdout)
