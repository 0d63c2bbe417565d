"""History through a real Prometheus: the GPU detail window and `fleetmon report` with ``[history] prometheus``.

Two simulated agents on 127.0.0.1, a real Prometheus scraping them every
second (apt-get install -y prometheus); the workstation's own database is
empty, so whatever the views and the report show came from Prometheus.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from fleetmon import assess
from fleetmon.demo import start_agents, stop_agents
from fleetmon.fleet import load_fleet
from fleetmon.remote.prometheus import PromClient, PrometheusError, detail_window, step_for
from helpers.prometheus import running_prometheus, skip_without_prometheus, free_port
from storage.db import open_database
from ui.history_reader import read_window

pytestmark = [pytest.mark.integration, skip_without_prometheus]

NODES = [("node-a", "healthy-a100"), ("node-b", "healthy-a100")]
REPO = Path(__file__).resolve().parents[2]


def _agent_temps(url: str) -> dict[str, float]:
    """UUID → DCGM_FI_DEV_GPU_TEMP as the agent serves it now."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as resp:
        page = resp.read().decode()
    out = {}
    for line in page.splitlines():
        if line.startswith("DCGM_FI_DEV_GPU_TEMP{"):
            labels, value = line.rsplit(" ", 1)
            uuid = labels.split('UUID="', 1)[1].split('"', 1)[0]
            out[uuid] = float(value)
    return out


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    """(prometheus, agents, fleet path, empty db path) after ~4 s of 1 s scrapes.

    Four scrapes: every test asks for a minute with at least one (a minute's mean, min and max, the report's
    window); waiting for ten was most of the module's time."""
    folder = tmp_path_factory.mktemp("promhist")
    agents = start_agents(folder / "agents", NODES, interval_s=1.0)
    try:
        targets = [a.url.split("//", 1)[1] for a in agents]
        with running_prometheus(folder / "prom", targets, interval_s=1.0) as prom:
            fleet = folder / "fleet.toml"
            fleet.write_text(f'[fleet]\nname = "promhist"\n\n[history]\nprometheus = "{prom.url}"\n\n' + "".join(
                f'[[node]]\nname = "{a.name}"\nurl = "{a.url}"\n\n' for a in agents))
            db_path = folder / "empty.db"
            open_database(db_path).close()
            prom.wait_for_samples('DCGM_FI_DEV_GPU_TEMP{gpu="0"}', 4, timeout_s=40)
            yield prom, agents, fleet, db_path
    finally:
        stop_agents(agents)


def test_fleet_file_names_the_prometheus(scraped):
    prom, _, fleet, _ = scraped
    assert load_fleet(fleet).history_prometheus == prom.url


def test_detail_window_reads_the_agents_temperatures_from_prometheus(scraped):
    prom, agents, _, db_path = scraped
    served = _agent_temps(agents[0].url)
    assert len(served) == 8
    uuid, now_temp = sorted(served.items())[0]
    now = time.time()
    db = open_database(db_path, readonly=True)
    try:
        window = read_window(db, uuid, now - 86400, now + 60, prometheus=prom.url)
        local = read_window(db, uuid, now - 86400, now + 60)
    finally:
        db.close()
    assert local.rows == ()  # the store knows nothing: what follows came from Prometheus
    assert (window.resolution, window.step_s) == ("minute", 60) == step_for(86400)
    assert window.rows, "no points from Prometheus"
    last = window.rows[-1]
    assert last["ts"] % 60 == 0
    # The minute's mean/min/max are those of what Prometheus scraped from the agent. The minute is still
    # filling (scrapes every second): the raw read after it may hold a few newer samples.
    raw = prom.api("query", query=f'DCGM_FI_DEV_GPU_TEMP{{UUID="{uuid}"}}[60s]', time=last["ts"] + 60)["result"]
    values = [float(v) for _, v in raw[0]["values"]]
    stats = [(sum(values[:k]) / k, min(values[:k]), max(values[:k])) for k in range(max(1, len(values) - 5),
                                                                                  len(values) + 1)]
    assert any(last["temp_c_mean"] == pytest.approx(m) and (last["temp_c_min"], last["temp_c_max"]) == (lo, hi)
               for m, lo, hi in stats), (last, values)
    assert last["temp_c_min"] - 3 <= now_temp <= last["temp_c_max"] + 3
    assert last["n"] >= 1 and last["power_w_mean"] > 0 and last["sm_clock_mhz_max"] > 0
    assert last["ecc_unc_agg"] == 0  # a counter Prometheus holds: its last value
    assert "thr_sw_power_cap" not in last  # not in Prometheus: missing, not zero


def test_detail_window_steps_follow_the_span(scraped):
    prom, agents, _, _ = scraped
    uuid = sorted(_agent_temps(agents[1].url))[0]
    now = time.time()
    client = PromClient(prom.url)
    week = detail_window(client, uuid, now - 7 * 86400, now + 60)
    year = detail_window(client, uuid, now - 365 * 86400, now + 60)
    # The scrapes' own times say which hours and days hold data: one of each, or two when the test ran
    # across an hour's (a day's) turn. A sample scraped after ``now`` may add the bucket of ``now + 60``.
    raw = prom.api("query", query=f'DCGM_FI_DEV_GPU_TEMP{{UUID="{uuid}"}}[1d]', time=now)["result"]
    scraped_at = [float(t) for t, _ in raw[0]["values"]]
    for view, step in ((week, 3600), (year, 86400)):
        held = {int(t) // step * step for t in scraped_at}
        assert (view.resolution, view.step_s) == (("hour", 3600) if step == 3600 else ("day", 86400))
        got = [row["ts"] for row in view.rows]
        assert got == sorted(got) and held <= set(got) <= held | {int(now + 60) // step * step}, (got, held)
        assert all(row["temp_c_max"] > 0 for row in view.rows)


def test_unreachable_prometheus_is_one_line():
    client = PromClient(f"http://127.0.0.1:{free_port()}", timeout_s=2)
    with pytest.raises(PrometheusError) as err:
        detail_window(client, "GPU-x", 0, 3600)
    assert "unreachable" in str(err.value) and "\n" not in str(err.value)


def test_bad_query_is_one_line(scraped):
    prom = scraped[0]
    with pytest.raises(PrometheusError) as err:
        PromClient(prom.url).query_range("sum(", 0, 60, 60)
    assert "HTTP 400" in str(err.value) and "\n" not in str(err.value)


def test_report_window_comes_from_prometheus(scraped):
    prom, agents, fleet_path, db_path = scraped
    fleet = load_fleet(fleet_path)
    now = time.time()
    db = open_database(db_path, readonly=True)
    try:
        history = assess.load_history(db, now, now - 3600, fleet=fleet, minutes_s=3600)
    finally:
        db.close()
    assert sorted(n.name for n in history.nodes) == ["node-a", "node-b"]  # instance → the fleet file's names
    assert len(history.gpus) == 16
    served = _agent_temps(agents[0].url)
    by_uuid = {g.uuid: g for g in history.gpus}
    for uuid, temp in served.items():
        minutes = by_uuid[uuid].minutes
        assert minutes is not None and len(minutes) >= 1
        hottest = [v for v in minutes.col("temp_c_max") if v is not None]
        assert hottest and abs(hottest[-1] - temp) <= 3


def test_fleetmon_report_reads_history_from_prometheus(scraped, tmp_path):
    _, _, fleet_path, db_path = scraped
    out = subprocess.run([sys.executable, "-m", "fleetmon", "report", "--db", str(db_path), "--fleet",
                          str(fleet_path), "--since", "1h", "--json"], capture_output=True, text=True, timeout=60,
                         cwd=REPO)
    assert out.returncode in (0, 1, 2), out.stderr
    report = json.loads(out.stdout)
    text = json.dumps(report)
    assert "node-a" in text and "node-b" in text, text[:2000]
    assert "A100" in text


def test_fleetmon_report_says_when_prometheus_is_unreachable(tmp_path, scraped):
    _, agents, _, db_path = scraped
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'[history]\nprometheus = "http://127.0.0.1:{free_port()}"\n\n'
                     f'[[node]]\nname = "node-a"\nurl = "{agents[0].url}"\n')
    out = subprocess.run([sys.executable, "-m", "fleetmon", "report", "--db", str(db_path), "--fleet", str(fleet)],
                         capture_output=True, text=True, timeout=60, cwd=REPO)
    assert out.returncode != 0
    assert "unreachable" in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


@pytest.mark.gui
def test_gpu_detail_view_draws_history_from_prometheus(qtbot, scraped):
    from storage.rows import FleetRow
    from ui.history_reader import prometheus_url, set_prometheus
    from ui.views.gpu_detail import GpuDetailView

    prom, agents, _, db_path = scraped
    uuid = sorted(_agent_temps(agents[0].url))[0]
    set_prometheus(prom.url)
    try:
        view = GpuDetailView(str(db_path))
    finally:
        set_prometheus(None)
    assert prometheus_url() is None and view.service.reader.prometheus == prom.url
    qtbot.addWidget(view)
    view.resize(1240, 420)
    try:
        with qtbot.waitSignal(view.history_shown, timeout=20000) as blocker:
            view.show_gpu(FleetRow(node="node-a", uuid=uuid, index=0, model="NVIDIA A100-SXM4-80GB"))
        assert blocker.args[0] == uuid and blocker.args[1] >= 1
        assert view.plot.point_counts()["temp_c"] > 0 and view.plot.reasons["temp_c"] is None
        assert "minute resolution" in view.status.text()
    finally:
        view.service.stop()


@pytest.mark.gui
def test_gpu_detail_view_says_when_prometheus_is_unreachable(qtbot, scraped):
    from storage.rows import FleetRow
    from ui.history_reader import set_prometheus
    from ui.views.gpu_detail import GpuDetailView

    set_prometheus(f"http://127.0.0.1:{free_port()}")
    try:
        view = GpuDetailView(str(scraped[3]))
    finally:
        set_prometheus(None)
    qtbot.addWidget(view)
    try:
        view.show_gpu(FleetRow(node="node-a", uuid="GPU-none", index=0, model="NVIDIA A100-SXM4-80GB"))
        qtbot.waitUntil(lambda: view.status.text().startswith("cannot read the history:"), timeout=20000)
        assert view.status.text().startswith("cannot read the history: Prometheus http://127.0.0.1:")
        assert "unreachable" in view.status.text()
    finally:
        view.service.stop()
