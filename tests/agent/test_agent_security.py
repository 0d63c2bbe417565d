"""The agent's HTTP surface under hostile or careless clients: auth, TLS, bad requests, slow clients, load."""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from fleetmon.records import WIRE_SCHEMA
from fleetmon.agent.main import RunningAgent, read_token_file, start_agent
from fleetmon.errors import KnownError
from fleetmon.sim.nvml import SimulatedNvml

TOKEN = "s3cret-token-0123456789abcdef"


@pytest.fixture
def make_agent(tmp_path):
    agents: list[RunningAgent] = []

    def make(**kw: Any) -> RunningAgent:
        nvml = SimulatedNvml(kw.pop("scenario", "healthy"))
        kw.setdefault("request_timeout_s", 0.5)
        agent = start_agent(nvml, buffer=tmp_path / f"a{len(agents)}.db", loop=False, watch_xid=False,
                            simulate=True, inventory_wait_s=0.5, poll_interval_s=0.05, **kw)
        agents.append(agent)
        return agent

    yield make
    for a in agents:
        a.close()


@pytest.fixture
def agent(make_agent):
    return make_agent()


def request(agent: RunningAgent, path: str, *, method: str = "GET", headers: dict[str, str] | None = None,
            context: ssl.SSLContext | None = None) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(agent.url + path, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5, context=context) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def raw(agent: RunningAgent, data: bytes, *, timeout: float = 5.0) -> bytes:
    """Send raw bytes, return everything the server answers until it closes."""
    with socket.create_connection(("127.0.0.1", agent.port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except (ConnectionResetError, socket.timeout):
            pass
        return b"".join(chunks)


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def still_serves(agent: RunningAgent) -> None:
    code, _, body = request(agent, "/v1/health")
    assert code == 200 and json.loads(body)["schema"] == WIRE_SCHEMA


# ---------------------------------------------------------------------------
# Authentication
# ---------------------------------------------------------------------------


def test_bearer_token_is_required(make_agent):
    agent = make_agent(token=TOKEN)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Bearer {TOKEN}x"},
                    {"Authorization": f"Bearer {TOKEN[:-1]}"}, {"Authorization": f"Basic {TOKEN}"},
                    {"Authorization": TOKEN}):
        for path in ("/v1/node", "/v1/minutes?after=0", "/metrics", "/nope"):
            code, hdrs, body = request(agent, path, headers=headers)
            assert code == 401, (headers, path)
            assert hdrs.get("WWW-Authenticate", "").startswith("Bearer")
            assert json.loads(body)["error"]
    for path in ("/v1/node", "/v1/latest", "/v1/minutes?after=0", "/v1/events", "/v1/health", "/metrics"):
        code, _, _ = request(agent, path, headers={"Authorization": f"Bearer {TOKEN}"})
        assert code == 200, path


def test_token_file_must_be_private(tmp_path):
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n")
    for mode in (0o644, 0o640, 0o604, 0o660):
        path.chmod(mode)
        with pytest.raises(KnownError, match="readable by group or others"):
            read_token_file(str(path))
    path.chmod(0o600)
    assert read_token_file(str(path)) == TOKEN
    path.write_text("short")
    with pytest.raises(KnownError, match="shorter than 16"):
        read_token_file(str(path))
    with pytest.raises(KnownError, match="cannot read"):
        read_token_file(str(tmp_path / "missing"))


@pytest.mark.parametrize("bind", ["0.0.0.0", "::", "192.0.2.10"])
def test_public_bind_without_token_is_refused(bind, tmp_path, capsys):
    from fleetmon.cli import main

    assert main(["agent", "--simulate", "healthy", "--bind", bind, "--port", "0",
                 "--buffer", str(tmp_path / "b.db")]) == 1
    err = capsys.readouterr().err
    assert f"refusing to listen on {bind} without authentication" in err
    assert not (tmp_path / "b.db").exists(), "refused before opening anything"


# ---------------------------------------------------------------------------
# TLS
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cert(tmp_path_factory):
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is not installed")
    folder = tmp_path_factory.mktemp("tls")
    key, crt = folder / "key.pem", folder / "cert.pem"
    proc = subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                           "-out", str(crt), "-days", "1", "-subj", "/CN=localhost",
                           "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        pytest.skip(f"openssl could not make a certificate: {proc.stderr.strip()[:200]}")
    key.chmod(0o600)
    return str(crt), str(key)


def test_tls_with_verification(make_agent, cert):
    crt, key = cert
    agent = make_agent(tls_cert=crt, tls_key=key, token=TOKEN)
    assert agent.url.startswith("https://")
    ctx = ssl.create_default_context(cafile=crt)
    code, _, body = request(agent, "/v1/node", headers={"Authorization": f"Bearer {TOKEN}"}, context=ctx)
    assert code == 200 and json.loads(body)["node"]["values"]["gpu_count"] == 2
    # An unverified certificate is refused by a verifying client.
    with pytest.raises(urllib.error.URLError):
        request(agent, "/v1/node", context=ssl.create_default_context())
    # Plain HTTP to the TLS port gets no answer, and the server keeps serving.
    answer = raw(agent, b"GET /v1/node HTTP/1.1\r\nHost: x\r\n\r\n", timeout=3)
    assert not answer.startswith(b"HTTP/1.1 200")
    # A client that connects and never starts the handshake holds only its own connection.
    idle = socket.create_connection(("127.0.0.1", agent.port))
    try:
        code, _, _ = request(agent, "/v1/health", headers={"Authorization": f"Bearer {TOKEN}"}, context=ctx)
        assert code == 200
    finally:
        idle.close()


def test_bad_tls_files_are_a_clear_error(make_agent, tmp_path):
    bogus = tmp_path / "bogus.pem"
    bogus.write_text("not a certificate")
    with pytest.raises(KnownError, match="tls"):
        make_agent(tls_cert=str(bogus), tls_key=str(bogus))


# ---------------------------------------------------------------------------
# Malformed requests
# ---------------------------------------------------------------------------


def test_unknown_path_is_404_json(agent):
    code, hdrs, body = request(agent, "/v2/everything")
    assert code == 404 and hdrs["Content-Type"] == "application/json" and "unknown path" in json.loads(body)["error"]


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_nothing_changes_state(agent, method):
    code, hdrs, body = request(agent, "/v1/node", method=method)
    assert code == 405 and "GET" in hdrs["Allow"] and "read-only" in json.loads(body)["error"]
    still_serves(agent)


@pytest.mark.parametrize("query", ["after=abc", "after=-1", "limit=0", "limit=x", "after=1e3",
                                   "&".join(f"k{i}=1" for i in range(50))])
def test_malformed_query_is_400(agent, query):
    code, _, body = request(agent, f"/v1/minutes?{query}")
    assert code == 400 and json.loads(body)["error"]


def test_head_has_no_body(agent):
    answer = raw(agent, b"HEAD /v1/node HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    head, _, body = answer.partition(b"\r\n\r\n")
    assert status_of(head) == 200 and body == b""


@pytest.mark.parametrize("data, codes", [
    (b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n", {414}),
    (b"GET /v1/node HTTP/1.1\r\nX-Big: " + b"b" * 100_000 + b"\r\n\r\n", {431, 400}),
    (b"GET /v1/node HTTP/1.1\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(200)) + b"\r\n", {431}),
    (b"GARBAGE\r\n\r\n", {400}),
    (b"GET /v1/node HTTP/9.9\r\n\r\n", {505, 400}),
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", {400}),
])
def test_malformed_requests_get_4xx(agent, data, codes):
    answer = raw(agent, data)
    assert status_of(answer) in codes, answer[:200]
    assert b"Traceback" not in answer
    still_serves(agent)


# ---------------------------------------------------------------------------
# Slow, vanished and many clients
# ---------------------------------------------------------------------------


def test_idle_client_is_dropped_and_blocks_nobody(agent):
    idle = socket.create_connection(("127.0.0.1", agent.port))
    try:
        t0 = time.monotonic()
        still_serves(agent)
        assert time.monotonic() - t0 < 0.4
        idle.settimeout(5)
        assert idle.recv(1024) == b""  # closed by the server after request_timeout_s (0.5 s)
        assert time.monotonic() - t0 < 3
    finally:
        idle.close()


def test_half_request_then_vanish(agent):
    for _ in range(5):
        s = socket.create_connection(("127.0.0.1", agent.port))
        s.sendall(b"GET /v1/no")
        s.close()
    s = socket.create_connection(("127.0.0.1", agent.port))
    s.sendall(b"GET /v1/node HTTP/1.1\r\nHost: x\r\n")  # headers never finished
    s.close()
    still_serves(agent)


def test_slow_sender_times_out(agent):
    s = socket.create_connection(("127.0.0.1", agent.port))
    try:
        s.sendall(b"GET /v1/node HTTP/1.1\r\n")
        time.sleep(0.8)  # longer than request_timeout_s
        s.settimeout(3)
        try:
            data = s.recv(1024)
        except ConnectionResetError:
            data = b""
        assert data == b"" or status_of(data) in (400, 408)
    finally:
        s.close()
    still_serves(agent)


def test_200_concurrent_connections_are_all_answered(agent):
    n = 200
    barrier = threading.Barrier(n)
    codes: list[int] = []
    lock = threading.Lock()

    def one() -> None:
        barrier.wait()
        conn = http.client.HTTPConnection("127.0.0.1", agent.port, timeout=20)
        try:
            conn.request("GET", "/v1/latest")
            resp = conn.getresponse()
            resp.read()
            code = resp.status
        except OSError as exc:
            code = -1
            print("failed:", exc)
        finally:
            conn.close()
        with lock:
            codes.append(code)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert codes.count(200) == n, {c: codes.count(c) for c in set(codes)}


def test_connection_cap_answers_503(make_agent):
    from fleetmon.agent.server import make_server

    agent = make_agent(request_timeout_s=5)
    small = make_server(agent.state, "127.0.0.1", 0, max_connections=3)
    t = threading.Thread(target=small.serve_forever, args=(0.05,), daemon=True)
    t.start()
    port = small.server_address[1]
    idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    try:
        time.sleep(0.2)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /v1/node HTTP/1.1\r\nHost: x\r\n\r\n")
            assert s.recv(1024).startswith(b"HTTP/1.1 503")
    finally:
        for s in idle:
            s.close()
        small.shutdown()
        small.server_close()


def test_keep_alive_is_fast(agent):
    conn = http.client.HTTPConnection("127.0.0.1", agent.port, timeout=5)
    conn.request("GET", "/v1/health")
    conn.getresponse().read()  # warm up
    t0 = time.perf_counter()
    for _ in range(50):
        conn.request("GET", "/v1/latest")
        resp = conn.getresponse()
        assert resp.status == 200
        resp.read()
    elapsed = time.perf_counter() - t0
    conn.close()
    assert elapsed < 0.5, f"50 keep-alive requests took {elapsed:.3f} s"


def test_a_request_with_a_body_closes_the_connection(agent):
    answer = raw(agent, b"GET /v1/node HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
                        b"GET /v1/node HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.count(b"HTTP/1.1 ") == 1 and status_of(answer) == 200

