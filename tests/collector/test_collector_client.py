"""The collector's client against scripted fake agents and real simulated ones.

A FakeAgent is a tiny http.server on 127.0.0.1 serving valid documents (with
an offset clock, a buffer id, pruned records) or one failure mode: garbage,
truncated bodies, a wrong schema, HTTP errors, a hang, a closed connection.
The real agents come from fleetmon.sim.fleet (the agent's own
sampler, buffer and HTTP server in this process).
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import socket
import struct
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from fleetmon.collector.client import Target, poll_all
from fleetmon.collector.poller import Collector
from fleetmon.sim.fleet import make_node
from fleetmon.fleet import load_fleet
from storage.db import open_database, query

FAILURE_MODES = ("garbage", "truncated_body", "truncated_json", "schema99", "http500", "hang", "close",
                 "wrong_types", "oversize", "reset", "not_http")


class FakeAgent:
    """A scripted agent: valid documents in ``mode="valid"``, else one failure per request.

    Attributes:
        offset_s: the agent clock minus the real clock (timestamps and ``now``).
        minutes, events: the buffered records (dicts with ``seq``).
        first_held: records below this sequence number were pruned.
        buffer_id: sent with every page (None: the field is left out).
        failures: failure modes for the next requests, one consumed per request.
        requests: every path asked, in order.
    """

    def __init__(self, mode: str = "valid", *, offset_s: float = 0.0, gpus: int = 2, minutes: int = 0,
                 buffer_id: str | None = "buffer-A", token: str | None = None) -> None:
        self.mode = mode
        self.offset_s = offset_s
        self.uuids = [f"GPU-fake{id(self) % 100000:05d}-{i}" for i in range(gpus)]
        self.minutes: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.first_held = 1
        self.buffer_id = buffer_id
        self.token = token
        self.failures: list[str] = []
        self.requests: list[str] = []
        self.release = threading.Event()
        self.add_minutes(minutes)
        agent = self

        class Handler(_Handler):
            pass

        Handler.agent = agent
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.1,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def now(self) -> float:
        return time.time() + self.offset_s

    def add_minutes(self, count: int) -> None:
        """Append ``count`` finished minutes per GPU, on the agent's clock, after the last one."""
        start = self.minutes[-1]["ts"] + 60 if self.minutes else (int(self.now()) // 60 - count - 1) * 60
        seq = self.minutes[-1]["seq"] if self.minutes else 0
        for k in range(count):
            for i, uuid in enumerate(self.uuids):
                seq += 1
                self.minutes.append({"seq": seq, "ts": start + 60 * k, "uuid": uuid, "index": i, "n": 1 + seq % 50,
                                     "values": {"temp_c_mean": 40.0 + k, "power_w_mean": 100.0 + seq},
                                     "status": {}, "state": "ok"})

    def add_event(self, kind: str = "xid") -> None:
        seq = self.events[-1]["seq"] + 1 if self.events else 1
        self.events.append({"seq": seq, "ts": self.now(), "kind": kind, "uuid": self.uuids[0], "code": 79,
                            "message": "fell off the bus", "data": {}})

    def document(self, path: str) -> dict[str, Any]:
        now = self.now()
        route, _, query = path.partition("?")
        if route == "/v1/node":
            return {"schema": 1, "now": now,
                    "node": {"hostname": "fake", "agent_version": "0.0-fake", "values": {"driver_version": "550"},
                             "status": {}, "xid_source": "none", "started_at": now - 100},
                    "gpus": [{"uuid": u, "index": i, "name": "Fake GPU", "values": {}, "status": {}, "state": "ok"}
                             for i, u in enumerate(self.uuids)]}
        if route == "/v1/latest":
            return {"schema": 1, "now": now, "sampled_at": now - 1,
                    "samples": [{"ts": now - 1, "uuid": u, "index": i, "values": {"temp_c": 41.0}, "status": {},
                                 "state": "ok"} for i, u in enumerate(self.uuids)]}
        params = dict(p.split("=") for p in query.split("&") if "=" in p)
        after, limit = int(params.get("after", 0)), int(params.get("limit", 1000))
        stream = self.minutes if route == "/v1/minutes" else self.events
        held = [r for r in stream if r["seq"] >= self.first_held]
        page = [r for r in held if r["seq"] > after][:limit]
        first = held[0]["seq"] if held else 0
        last = held[-1]["seq"] if held else 0
        nxt = page[-1]["seq"] if page else after
        doc = {"schema": 1, "now": now, "after": after, "first_seq": first, "last_seq": last, "next": nxt,
               "more": nxt < last, "gap": bool(first and after + 1 < first), "records": page}
        if self.buffer_id is not None:
            doc["buffer_id"] = self.buffer_id
        return doc

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    agent: FakeAgent
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def _send(self, code: int, body: bytes, length: int | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        agent = self.agent
        agent.requests.append(self.path)
        if agent.token and self.headers.get("Authorization") != f"Bearer {agent.token}":
            self._send(401, b'{"schema": 1, "error": "missing or wrong bearer token"}')
            return
        mode = agent.failures.pop(0) if agent.failures else agent.mode
        if mode == "valid":
            self._send(200, json.dumps(agent.document(self.path)).encode())
        elif mode == "garbage":
            self._send(200, random.Random(4).randbytes(3000))
        elif mode == "truncated_body":
            self._send(200, json.dumps(agent.document(self.path)).encode()[:50], length=5000)
            self.close_connection = True
        elif mode == "truncated_json":
            self._send(200, json.dumps(agent.document(self.path)).encode()[:-7])
        elif mode == "schema99":
            self._send(200, b'{"schema": 99}')
        elif mode in ("http500", "http503"):
            self._send(int(mode[4:]), b"internal error")
        elif mode == "hang":
            agent.release.wait(30)
            self.close_connection = True
        elif mode == "close":
            self.close_connection = True
        elif mode == "not_http":
            self.wfile.write(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
            self.wfile.flush()
            self.close_connection = True
        elif mode == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
        elif mode == "wrong_types":
            doc = agent.document(self.path)
            if "node" in doc:
                doc["node"]["hostname"] = 5
            self._send(200, json.dumps(doc).encode())
        elif mode == "oversize":
            self._send(200, b'{"schema": 1, "pad": "', length=10**9)
            self.close_connection = True
        else:
            raise AssertionError(mode)


@pytest.fixture
def agents():
    made: list[Any] = []

    def make(*args: Any, **kwargs: Any) -> FakeAgent:
        agent = FakeAgent(*args, **kwargs)
        made.append(agent)
        return agent

    yield make
    for a in made:
        a.close()


@pytest.fixture
def sim_node():
    nodes: list[Any] = []

    def make(name: str = "real-node", **kwargs: Any) -> Any:
        node = make_node(name, gpus=kwargs.pop("gpus", 2), **kwargs)
        node.serve(0.1)
        nodes.append(node)
        return node

    yield make
    for n in nodes:
        n.close()


def write_fleet(path: Path, nodes: dict[str, str], *, timeout_s: float = 1.0, extra: str = "",
                node_extra: dict[str, str] | None = None) -> Path:
    text = f"[fleet]\ntimeout_s = {timeout_s}\npoll_interval_s = 30\n{extra}\n"
    for name, url in nodes.items():
        text += f'[[node]]\nname = "{name}"\nurl = "{url}"\n{(node_extra or {}).get(name, "")}\n'
    path.write_text(text, encoding="utf-8")
    return path


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def poll(targets: list[Target], **kwargs: Any) -> list[Any]:
    kwargs.setdefault("timeout_s", 1.0)
    return asyncio.run(poll_all(targets, **kwargs))


# ---------------------------------------------------------------------------


EXPECTED_ERRORS = {
    "garbage": "not valid JSON",
    "truncated_body": "truncated answer",
    "truncated_json": "not valid JSON",
    "schema99": "unsupported schema version 99",
    "http500": "HTTP 500",
    "hang": "/v1/node: timed out after",
    "close": "/v1/node: the agent closed the connection without an answer",
    "wrong_types": "field 'hostname' of the wrong type",
    "oversize": "larger than",
    "reset": "",
    "not_http": "/v1/node: not an HTTP answer",
    "refused": "cannot connect",
}


@pytest.mark.integration
def test_bad_agents_are_recorded_per_node_and_the_real_node_lands(tmp_path, agents, sim_node):
    real = sim_node("real-node")
    real.backfill(3)
    nodes = {mode: agents(mode).url for mode in FAILURE_MODES}
    nodes["refused"] = _dead_url()
    nodes["real-node"] = real.url
    fleet = load_fleet(write_fleet(tmp_path / "fleet.toml", nodes, timeout_s=1.0))
    db = open_database(tmp_path / "fleet.db")
    t0 = time.monotonic()
    polls = {p.node: p for p in Collector(fleet, db).run_cycle()}
    elapsed = time.monotonic() - t0
    assert elapsed < 3 * 1.0 + 1.5, f"the cycle took {elapsed:.1f} s with timeout_s = 1"

    assert polls["real-node"].ok, polls["real-node"].error
    rows = {r["name"]: r for r in query(db, "SELECT name, status, last_error FROM nodes")}
    for name, expected in EXPECTED_ERRORS.items():
        assert not polls[name].ok, name
        error = polls[name].error
        assert expected in error and "\n" not in error and len(error) < 300, (name, error)
        assert rows[name]["status"] == "unreachable" and rows[name]["last_error"] == error
        logged = query(db, "SELECT ok, error FROM poll_log WHERE node = ?", (name,))
        assert logged == [{"ok": 0, "error": error}]
        assert query(db, "SELECT count(*) AS n FROM gpus WHERE node = ?", (name,))[0]["n"] == 0
    # The real node's data landed in the same cycle, in full.
    assert rows["real-node"]["status"] == "ok" and rows["real-node"]["last_error"] is None
    stored = query(db, "SELECT count(*) AS n FROM samples s JOIN gpus g ON g.id = s.gpu_id "
                       "WHERE g.node = 'real-node'")[0]["n"]
    assert stored == 3 * 2 == len(real.buffer.minutes_after(0, 1000))
    assert query(db, "SELECT count(*) AS n FROM gpus g JOIN gpu_latest l ON l.gpu_id = g.id "
                     "WHERE g.node = 'real-node' AND l.latest IS NOT NULL")[0]["n"] == 2
    db.close()


@pytest.mark.parametrize("offset_h", [3, -2])
def test_clock_skew_keeps_agent_time_order_and_every_sample(tmp_path, agents, offset_h):
    agent = agents(offset_s=offset_h * 3600, minutes=30)
    agent.add_event("xid")
    fleet = load_fleet(write_fleet(tmp_path / "fleet.toml", {"skewed": agent.url}))
    db = open_database(tmp_path / "fleet.db")
    collector = Collector(fleet, db)
    (p,) = collector.run_cycle()
    assert p.ok, p.error
    agent.add_minutes(5)  # a second cycle continues after the cursor
    collector.run_cycle()

    node = query(db, "SELECT skew_s, minutes_cursor FROM nodes WHERE name = 'skewed'")[0]
    assert node["skew_s"] == pytest.approx(offset_h * 3600, abs=2)
    assert node["minutes_cursor"] == agent.minutes[-1]["seq"]
    for i, uuid in enumerate(agent.uuids):
        sent = [(m["ts"], m["n"]) for m in agent.minutes if m["uuid"] == uuid]
        stored = [(r["ts"], r["n"]) for r in query(
            db, "SELECT s.ts, s.n FROM samples s JOIN gpus g ON g.id = s.gpu_id WHERE g.uuid = ? "
                "ORDER BY s.ts", (uuid,))]
        assert stored == sent  # agent timestamps, nothing dropped, same order
        assert len(stored) == 35
    (event,) = query(db, "SELECT ts FROM events WHERE node = 'skewed'")
    assert event["ts"] == pytest.approx(agent.events[0]["ts"])
    db.close()


def test_transient_failures_are_retried_within_the_poll(agents):
    agent = agents(minutes=2)
    agent.failures = ["http503", "reset", "valid", "close"]
    (p,) = poll([Target("n", agent.url)])
    assert p.ok, p.error
    assert len(p.minutes) == 4
    # /v1/node tried three times (503, reset, answer), /v1/latest twice (closed, answer).
    assert [r.split("?")[0] for r in agent.requests[:5]] == ["/v1/node"] * 3 + ["/v1/latest"] * 2


def test_a_nodes_own_timeout_applies_to_its_requests_alone(tmp_path, agents, sim_node):
    # [[node]] timeout_s: the hanging node with its own 0.3 s fails within its deadline (3 x 0.3 s), the
    # other hanging node keeps the fleet's 1.5 s, and a healthy node polled beside them lands.
    quick, slow = agents("hang"), agents("hang")
    real = sim_node("real-node")
    fleet = load_fleet(write_fleet(tmp_path / "fleet.toml", {"quick": quick.url, "slow": slow.url,
                                                               "real-node": real.url},
                                   timeout_s=1.5, node_extra={"quick": "timeout_s = 0.3"}))
    collector = Collector(fleet, open_database(tmp_path / "fleet.db"))
    t0 = time.monotonic()
    polls = {p.node: p for p in collector.run_cycle()}
    assert polls["real-node"].ok, polls["real-node"].error
    assert "(timeout_s = 0.3)" in polls["quick"].error and polls["quick"].duration_ms < 1200, polls["quick"]
    assert "(timeout_s = 1.5)" in polls["slow"].error and polls["slow"].duration_ms >= 1400, polls["slow"]
    assert time.monotonic() - t0 < 3 * 1.5 + 1.5


def test_a_persistent_server_error_fails_after_two_retries(agents):
    agent = agents("http500")
    t0 = time.monotonic()
    (p,) = poll([Target("n", agent.url)])
    assert not p.ok and "HTTP 500" in p.error
    assert len(agent.requests) == 3
    assert time.monotonic() - t0 < 2.5


def test_unusable_answers_are_not_retried(agents):
    agent = agents("schema99")
    (p,) = poll([Target("n", agent.url)])
    assert not p.ok and len(agent.requests) == 1


def test_pages_are_followed_after_the_cursor(agents, monkeypatch):
    monkeypatch.setattr("fleetmon.collector.client.PAGE_LIMIT", 7)
    agent = agents(minutes=10, gpus=2)  # 20 records, pages of 7
    (p,) = poll([Target("n", agent.url, minutes_cursor=3)])
    assert p.ok and [m.seq for m in p.minutes] == list(range(4, 21))
    assert p.minutes_cursor == 20 and p.buffer_id == "buffer-A" and not p.gap
    assert sum(1 for r in agent.requests if r.startswith("/v1/minutes")) == 3


def test_a_new_agent_buffer_restarts_the_cursors(agents):
    agent = agents(minutes=3, buffer_id="buffer-B")  # seq 1..6 in a buffer we have not seen
    (p,) = poll([Target("n", agent.url, minutes_cursor=500, events_cursor=9, buffer_id="buffer-A")])
    assert p.ok and p.buffer_id == "buffer-B"
    assert [m.seq for m in p.minutes] == [1, 2, 3, 4, 5, 6]
    assert p.minutes_cursor == 6 and p.events_cursor == 0
    # Same buffer id: the cursor holds.
    agent.requests.clear()
    (p,) = poll([Target("n", agent.url, minutes_cursor=4, buffer_id="buffer-B")])
    assert [m.seq for m in p.minutes] == [5, 6]


def test_an_agent_without_buffer_id_whose_numbers_went_back_is_read_from_the_start(agents):
    agent = agents(minutes=2, buffer_id=None)
    (p,) = poll([Target("n", agent.url, minutes_cursor=100)])
    assert p.ok and p.buffer_id is None
    assert [m.seq for m in p.minutes] == [1, 2, 3, 4] and p.minutes_cursor == 4


def test_pruned_records_are_reported_as_a_gap(agents):
    agent = agents(minutes=5)
    agent.first_held = 6
    (p,) = poll([Target("n", agent.url, minutes_cursor=2)])
    assert p.ok and p.gap and p.minutes[0].seq == 6
    (p,) = poll([Target("n", agent.url, minutes_cursor=7)])
    assert p.ok and not p.gap


def test_out_of_order_or_malformed_records_fail_the_whole_poll(agents):
    agent = agents(minutes=3)
    agent.minutes[2]["seq"] = 1
    (p,) = poll([Target("n", agent.url)])
    assert not p.ok and "out of order" in p.error and p.minutes == []
    agent.minutes[2]["seq"] = 3
    agent.minutes[3]["ts"] = "yesterday"
    (p,) = poll([Target("n", agent.url)])
    assert not p.ok and "field 'ts' of the wrong type (str)" in p.error
    agent.minutes[3]["ts"] = 60
    agent.minutes[4]["values"]["power_w_mean"] = {"nested": 1}
    (p,) = poll([Target("n", agent.url)])
    assert not p.ok and "values['power_w_mean']" in p.error


def test_inventory_is_fetched_first_then_only_when_due(tmp_path, agents):
    agent = agents(minutes=1)
    fleet = load_fleet(write_fleet(tmp_path / "fleet.toml", {"n": agent.url}))
    db = open_database(tmp_path / "fleet.db")
    collector = Collector(fleet, db)
    for _ in range(3):
        collector.run_cycle()
    assert sum(1 for r in agent.requests if r == "/v1/node") == 1
    agent.add_event("gpu_lost")  # something changed on the node: inventory again next cycle
    collector.run_cycle()
    collector.run_cycle()
    assert sum(1 for r in agent.requests if r == "/v1/node") == 2
    db.close()


def test_tokens_are_read_per_cycle_and_a_missing_file_is_that_nodes_error(tmp_path, agents):
    secret = "s3cret-token-0123456789"
    guarded = agents(token=secret)
    other = agents()
    token = tmp_path / "token"
    fleet_path = write_fleet(tmp_path / "fleet.toml", {"guarded": guarded.url, "other": other.url},
                             node_extra={"guarded": f'token_file = "{token}"'})
    db = open_database(tmp_path / "fleet.db")
    collector = Collector(load_fleet(fleet_path), db)
    polls = {p.node: p for p in collector.run_cycle()}
    assert not polls["guarded"].ok and polls["guarded"].error.startswith(f"token file {token}: cannot read it")
    assert polls["other"].ok
    assert guarded.requests == []  # nothing sent without the token
    token.write_text("wrong-token-but-long-enough\n")
    token.chmod(0o644)  # the agent's rule, one reader for both: a token others may read is refused
    polls = {p.node: p for p in collector.run_cycle(force=True)}
    assert polls["guarded"].error.startswith(f"token file {token} is readable by group or others")
    assert guarded.requests == []
    token.chmod(0o600)
    polls = {p.node: p for p in collector.run_cycle(force=True)}
    assert "401 unauthorized" in polls["guarded"].error
    token.write_text(secret + "\n")
    polls = {p.node: p for p in collector.run_cycle(force=True)}
    assert polls["guarded"].ok, polls["guarded"].error
    db.close()


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "agent.pem", folder / "agent.key"
    proc = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                           "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                           "-keyout", str(key), "-out", str(cert)], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        pytest.skip(f"openssl cannot make a certificate: {proc.stderr.strip()[:200]}")
    return cert, key


@pytest.mark.parametrize("setting, ok", [
    ("tls_ca = \"{cert}\"", True),
    ("tls_verify = false", True),
    ("", False),
    ("tls_ca = \"{missing}\"", False),
])
def test_https_agents_with_a_ca_bundle_or_without_verification(tmp_path, sim_node, certificate, setting, ok):
    cert, key = certificate
    node = sim_node("tls-node", tls_cert=str(cert), tls_key=str(key))
    assert node.url.startswith("https://")
    extra = setting.format(cert=cert, missing=tmp_path / "missing.pem")
    fleet = load_fleet(write_fleet(tmp_path / "fleet.toml", {"tls-node": node.url}, timeout_s=2, extra=extra))
    db = open_database(tmp_path / "fleet.db")
    (p,) = Collector(fleet, db).run_cycle()
    assert p.ok is ok, p.error
    if not ok and "missing" in setting:
        assert p.error.startswith("TLS CA file") and "cannot load it" in p.error
    elif not ok:
        assert p.error.startswith("TLS: the agent's certificate is not trusted")
    db.close()
