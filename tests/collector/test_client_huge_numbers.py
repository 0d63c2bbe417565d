"""Integers too large for a float fail the one poll, never the cycle (found by tests/integration/test_hostile_fleet.py).

Python's JSON reader gives a 400-digit number as an int; ``math.isfinite`` or
float arithmetic on it raises OverflowError, which escaped the client's poll and
cost the whole fleet its cycle.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from fleetmon.collector.client import Target, poll_all
from fleetmon.collector.validate import BadAnswer, check_fields, spec

HUGE = int("9" * 400)


@pytest.mark.parametrize("v", [HUGE, 10**30, 2**1024])
def test_a_huge_integer_timestamp_is_a_bad_answer(v: int) -> None:
    with pytest.raises(BadAnswer, match=r"^/v1/minutes: field 'ts' out of range \("):
        check_fields({"ts": v}, "/v1/minutes", spec(ts="ts"), time.time() + 7 * 86400)


def test_a_huge_now_fails_only_that_poll() -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            pass

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            body = json.dumps({"schema": 1, "now": "@"}).replace('"@"', "9" * 400).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        (p,) = asyncio.run(poll_all([Target("huge", f"http://127.0.0.1:{server.server_address[1]}")], timeout_s=2))
    finally:
        server.shutdown()
        server.server_close()
    assert not p.ok and p.error and "\n" not in p.error
