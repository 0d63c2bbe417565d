"""The dcgm-exporter source: the collector polls a real HTTP server on 127.0.0.1 serving fixture scrapes
(../shared/fixtures/C_dcgm_exporter) and stores them like an agent's readings."""

from __future__ import annotations

import asyncio
import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from fleetmon.collector.client import Target, poll_all
from fleetmon.collector.poller import Collector
from fleetmon.fleet import load_fleet
from fleetmon.records import Status
from fleetmon.sources import SourceKind, node_source
from storage.db import open_database
from storage.queries import fleet_latest, gpus, nodes, poll_log

T4 = "datadog_dcgm_fixtures_metrics.txt"
A800 = "cn-blog_dcgm-exporter_8xA800-sxm4_mig_535.129.03_excerpt.prom"


class Exporter:
    """A stand-in dcgm-exporter: serves ``body`` at /metrics (gzip when asked and ``gzip`` is set)."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.gzip = False
        self.status = 200
        self.requests: list[dict[str, str]] = []
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                exporter.requests.append(dict(self.headers))
                if self.path != "/metrics" or exporter.status != 200:
                    self.send_response(404 if exporter.status == 200 else exporter.status)
                    self.send_header("Content-Length", "9")
                    self.end_headers()
                    self.wfile.write(b"not found")
                    return
                body = exporter.body
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                if exporter.gzip and "gzip" in (self.headers.get("Accept-Encoding") or ""):
                    body = gzip.compress(body)
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"dcgm+http://127.0.0.1:{self.port}/metrics"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def exporter(shared_fixtures: Path) -> Iterator[Exporter]:
    e = Exporter((shared_fixtures / "C_dcgm_exporter" / T4).read_bytes())
    yield e
    e.close()


def _poll(url: str, **kw: object) -> list:  # type: ignore[type-arg]
    return asyncio.run(poll_all([Target(name="dcgm1", url=url, **kw)], timeout_s=2.0))  # type: ignore[arg-type]


def test_a_scrape_becomes_the_agents_records(exporter: Exporter) -> None:
    [poll] = _poll(exporter.url)
    assert poll.ok, poll.error
    assert (poll.url, poll.info.hostname, poll.info.values["driver_version"]) == (
        exporter.url, "424773df46e0", "460.106.00")
    assert [g.uuid for g in poll.gpus][0] == "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e"
    assert len(poll.gpus) == len(poll.latest) == len(poll.minutes) == 3
    s = poll.latest[0]
    assert (s.values["temp_c"], s.values["power_w"], s.values["energy_mj"]) == (25, 8.969, 128996013)
    assert abs(s.ts - poll.ts) < 1e-6  # stamped with the poll time: a scrape carries none
    # what the scrape cannot tell is not available, never zero
    assert s.values["pcie_gen"] is None and s.status["pcie_gen"] == Status.UNSUPPORTED
    # no buffer: no cursors, no buffer id, nothing to resume
    assert (poll.minutes_cursor, poll.events_cursor, poll.buffer_id, poll.events) == (None, None, None, [])
    headers = exporter.requests[-1]
    assert "gzip" in headers["Accept-Encoding"] and "Authorization" not in headers


def test_gzip_answers_are_inflated_by_the_clients_reader(exporter: Exporter) -> None:
    exporter.gzip = True
    [poll] = _poll(exporter.url)
    assert poll.ok, poll.error
    assert poll.latest[0].values["temp_c"] == 25


@pytest.mark.parametrize("body, status, reason", [
    (b"this is not prometheus {{{", 200, "dcgm-exporter scrape"),
    (b"# HELP x\n# TYPE x gauge\nx 1\n", 200, "no series names a GPU"),
    (b"", 503, "/metrics: HTTP 503"),
])
def test_an_unusable_answer_fails_the_poll_with_a_reason(exporter: Exporter, body: bytes, status: int,
                                                        reason: str) -> None:
    exporter.body, exporter.status = body, status
    [poll] = _poll(exporter.url)
    assert not poll.ok and reason in (poll.error or ""), poll.error
    assert poll.latest == [] and poll.gpus == []


def test_a_huge_value_is_refused_like_an_agents(exporter: Exporter) -> None:
    exporter.body = (b'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-1",modelName="X",Hostname="h"} 1e300\n')
    [poll] = _poll(exporter.url)
    assert not poll.ok and "temp_c" in (poll.error or ""), poll.error


def test_refused_connection(exporter: Exporter) -> None:
    port = exporter.port
    exporter.close()
    [poll] = _poll(f"dcgm+http://127.0.0.1:{port}/metrics")
    assert not poll.ok and (poll.error or "").startswith("cannot connect"), poll.error


def test_the_collector_stores_a_dcgm_node_and_says_it_has_no_backfill(tmp_path: Path, shared_fixtures: Path) -> None:
    e = Exporter((shared_fixtures / "C_dcgm_exporter" / A800).read_bytes())
    try:
        token = tmp_path / "agents.token"
        token.write_text("s3cret-agent-token\n")
        token.chmod(0o600)
        fleet_file = tmp_path / "fleet.toml"
        fleet_file.write_text(f'[fleet]\ntoken_file = "{token}"\ntimeout_s = 2\n\n'
                              f'[[node]]\nname = "a800"\nurl = "dcgm+http://127.0.0.1:{e.port}"\n')
        fleet = load_fleet(fleet_file)
        assert fleet.nodes[0].url == f"dcgm+http://127.0.0.1:{e.port}/metrics"  # the exporter's default path
        db = open_database(str(tmp_path / "f.db"))
        polls = Collector(fleet, db).collect_once()
        assert [p.ok for p in polls] == [True], polls[0].error
        # the fleet's token is the agents' secret: never sent to an exporter
        assert all("Authorization" not in h for h in e.requests)
        [node] = nodes(db)
        assert (node.status, node.hostname, node.driver_version, node.gpu_count) == (
            "ok", "msxf-hpc-64-35-ai", "535.129.03", 8)
        src = node_source(node.url)
        assert src.kind is SourceKind.DCGM and not src.backfill and "no backfill" in src.note
        cards = gpus(db)
        assert len(cards) == 8 and {g.model for g in cards} == {"NVIDIA A800-SXM4-80GB"}
        latest = sorted(fleet_latest(db), key=lambda r: r.index or 0)
        assert [r.values["temp_c"] for r in latest] == [33, 27, 26, 31, 31, 26, 26, 29]
        assert [r.ok for r in poll_log(db, node="a800")] == [True]
        db.close()
    finally:
        e.close()
