"""Slow and greedy clients must not lock the collector out of the agent (issue 11, item 5).

The server is the agent's real one (make_server) over a stub state, so these
tests need no simulated NVML. Every client connects to 127.0.0.1; distinct
client addresses come from binding the client socket to 127.0.0.2, .3, ...
(all of 127/8 is loopback on Linux).
"""

from __future__ import annotations

import select
import socket
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from fleetmon.agent.buffer import Buffer
from fleetmon.agent.server import AgentState, _Server, make_server
from fleetmon.records import NodeInfo

TOKEN = "collector-token-0123456789"
AUTH = f"Authorization: Bearer {TOKEN}\r\n".encode()


class _Sampler:
    def snapshot(self) -> tuple[list[Any], float | None]:
        return [], None

    def health_dict(self) -> dict[str, Any]:
        return {"gpus": []}


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Any]:
    servers: list[_Server] = []
    buf = Buffer(tmp_path / "stub.db")
    state = AgentState(node=lambda: NodeInfo(hostname="stub", agent_version="0"), inventory=lambda: [],
                       sampler=_Sampler(), buffer=buf, started_at=time.time())

    def start(**kw: Any) -> int:
        server = make_server(state, "127.0.0.1", 0, **kw)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return int(server.server_address[1])

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
    buf.close()


def connect(port: int, source: str = "127.0.0.1") -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))


def ask(port: int, auth: bool = True, source: str = "127.0.0.1") -> int:
    """One GET /v1/health on a new connection; the status code (0: closed without an answer).

    Read to the server's close ("Connection: close"), not just the status line: the server counts the
    connection out as it closes it, so the next ask does not race this one's slot."""
    with connect(port, source) as s:
        s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n" + (AUTH if auth else b"") + b"Connection: close\r\n\r\n")
        data = b""
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        except (ConnectionResetError, socket.timeout):
            pass
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0


def closed_by_server(s: socket.socket) -> bool:
    readable, _, _ = select.select([s], [], [], 0)
    if not readable:
        return False
    try:
        return s.recv(4096) == b""
    except ConnectionResetError:
        return True


def test_a_client_dripping_bytes_is_cut_at_the_head_deadline(serve: Any) -> None:
    # One byte every 0.25 s is within the 0.6 s read timeout, so only a deadline on the whole head cuts it.
    port = serve(request_timeout_s=0.6)
    s = connect(port)
    t0 = time.monotonic()
    try:
        for byte in b"GET /v1/health HTTP/1.1\r\nX-Slow: " + b"z" * 200:
            if closed_by_server(s):
                break
            try:
                s.send(bytes([byte]))
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(0.25)
            assert time.monotonic() - t0 < 3.0, "the dripping client was never cut"
        elapsed = time.monotonic() - t0
    finally:
        s.close()
    assert 0.5 <= elapsed < 2.0
    assert ask(port) == 200


def test_a_flood_of_slow_clients_leaves_the_collector_a_slot(serve: Any) -> None:
    # The whole table (12 connections: 9 general, 3 kept for the collector) is taken by clients that
    # send half a request head and wait; the collector, identified by its token, is still served.
    port = serve(token=TOKEN, request_timeout_s=5.0, max_connections=12)
    flood = [connect(port) for _ in range(12)]
    try:
        for s in flood:
            s.sendall(b"GET /v1/health HTTP/1.1\r\n")
        time.sleep(0.7)  # the reserved slots' waiters are now old enough to give way
        for _ in range(3):
            assert ask(port, auth=True) == 200
        assert ask(port, auth=False) == 503  # a stranger gets no reserved slot
        assert ask(port, auth=True) == 200
    finally:
        for s in flood:
            s.close()


def test_one_address_holds_at_most_its_share(serve: Any) -> None:
    from fleetmon.agent.server import HttpLimits

    port = serve(request_timeout_s=5.0, limits=HttpLimits(max_per_address=3, reserved=0))
    greedy = [connect(port, "127.0.0.2") for _ in range(3)]
    try:
        time.sleep(0.1)
        assert ask(port, auth=False, source="127.0.0.2") == 503
        assert ask(port, auth=False, source="127.0.0.3") == 200  # another address is served
        greedy.pop().close()
        time.sleep(0.2)
        assert ask(port, auth=False, source="127.0.0.2") == 200
    finally:
        for s in greedy:
            s.close()


def test_a_configured_collector_address_is_served_under_a_flood(serve: Any) -> None:
    from fleetmon.agent.server import HttpLimits, parse_addresses

    limits = HttpLimits(max_connections=8, max_per_address=8, reserved=2,
                        collector_addresses=parse_addresses(["127.0.0.9"]))
    port = serve(token=TOKEN, request_timeout_s=5.0, limits=limits)
    flood = [connect(port, f"127.0.0.{2 + i % 4}") for i in range(10)]
    try:
        time.sleep(0.2)
        assert ask(port, auth=True, source="127.0.0.2") == 503  # a token alone is not enough here
        assert ask(port, auth=True, source="127.0.0.9") == 200
        assert ask(port, auth=False, source="127.0.0.9") == 401  # the address still needs the token
    finally:
        for s in flood:
            s.close()


def test_real_defaults_one_address_cannot_take_every_slot(serve: Any) -> None:
    # At the shipped limits: 256 connections per address, 512 in all, 8 kept for the collector.
    port = serve(token=TOKEN)
    greedy = [connect(port, "127.0.0.2") for _ in range(256)]
    try:
        for s in greedy:
            s.sendall(b"GET /v1/health HTTP/1.1\r\n")
        time.sleep(0.3)
        assert ask(port, auth=False, source="127.0.0.2") == 503
        assert ask(port, auth=True, source="127.0.0.2") == 200  # the collector behind the same address
        assert ask(port, auth=True, source="127.0.0.3") == 200
        assert ask(port, auth=False, source="127.0.0.3") == 401
    finally:
        for s in greedy:
            s.close()
