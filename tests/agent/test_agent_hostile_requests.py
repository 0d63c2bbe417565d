"""Bad cursors, oversized URLs in the log, and the token before everything (issue 11, item 7).

The agent's real server over a stub state (no simulated NVML needed).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from fleetmon.agent.buffer import Buffer
from fleetmon.agent.server import AgentState, _Server, make_server
from fleetmon.records import NodeInfo

TOKEN = "request-token-0123456789"


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
        server = make_server(state, "127.0.0.1", 0, request_timeout_s=2.0, **kw)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return int(server.server_address[1])

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
    buf.close()


def raw(port: int, data: bytes) -> bytes:
    """Send bytes, read until the server closes (or 3 s pass)."""
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
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


def get(port: int, path: str, auth: str | None = None) -> tuple[int, dict[str, Any]]:
    head = f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    if auth:
        head += f"Authorization: Bearer {auth}\r\n"
    answer = raw(port, head.encode() + b"\r\n")
    status = int(answer.split(b" ", 2)[1])
    body = answer.partition(b"\r\n\r\n")[2]
    return status, json.loads(body) if body else {}


@pytest.mark.parametrize("query", [
    "after=9223372036854775808", "after=99999999999999999999999999999999", f"after={'9' * 5000}",
    "after=-1", "after=-9223372036854775809", "after=abc", "after=1_000", "after=%2B5", "after=%205",
    "after=0x10", "after=%D9%A3", "limit=9223372036854775808", "limit=-5", "limit=0",
])
@pytest.mark.parametrize("path", ["/v1/minutes", "/v1/events"])
def test_bad_cursors_are_400(serve: Any, path: str, query: str) -> None:
    port = serve()
    status, doc = get(port, f"{path}?{query}")
    assert status == 400 and doc["error"], (query, status, doc)


def test_the_largest_cursor_is_served(serve: Any) -> None:
    port = serve()
    status, doc = get(port, "/v1/minutes?after=9223372036854775807&limit=9223372036854775807")
    assert status == 200 and doc["records"] == [] and doc["ahead"] is True


def test_a_huge_url_makes_a_short_log_line(serve: Any, caplog: pytest.LogCaptureFixture) -> None:
    port = serve()
    caplog.set_level(logging.DEBUG, logger="fleetmon")
    status, _ = get(port, "/v1/minutes?after=9223372036854775808&pad=" + "x" * 60000)
    assert status == 400
    status, _ = get(port, "/" + "y" * 60000)
    assert status == 404
    answer = raw(port, b"BAD " + b"z" * 60000 + b"\r\n\r\n")
    assert answer.startswith(b"HTTP/1.") and len(answer) < 2000  # the error does not echo the line
    time.sleep(0.1)
    assert caplog.records
    longest = max(len(r.getMessage()) for r in caplog.records)
    assert longest < 600, f"a log line of {longest} characters"
    assert not any(r.levelno >= logging.ERROR for r in caplog.records)


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "FOO"])
def test_the_token_is_checked_before_the_method(serve: Any, method: str) -> None:
    port = serve(token=TOKEN)
    answer = raw(port, f"{method} /v1/node HTTP/1.1\r\nHost: x\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 401 "), answer[:100]
    answer = raw(port, f"{method} /v1/node HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
    assert answer.split(b" ", 2)[1] in (b"405", b"501"), answer[:100]


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_no_100_continue_without_a_valid_token(serve: Any, method: str) -> None:
    port = serve(token=TOKEN)
    for auth in ("", "Authorization: Bearer wrong-token-000000000\r\n"):
        answer = raw(port, f"{method} /v1/node HTTP/1.1\r\nHost: x\r\n{auth}Expect: 100-continue\r\n"
                           f"Content-Length: 5\r\n\r\n".encode())
        assert b"100 Continue" not in answer and answer.startswith(b"HTTP/1.1 401 "), answer[:100]
