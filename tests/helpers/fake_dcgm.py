"""A stand-in dcgm-exporter on 127.0.0.1 serving whatever body a test sets (issue 20's hostile scrapes).

Usage::

    from helpers.fake_dcgm import FakeExporter

    with FakeExporter(b"DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-1\"} +Inf\n") as e:
        e.url  # dcgm+http://127.0.0.1:<port>/metrics
        e.body = other_bytes  # the next answer
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeExporter:
    """Serves ``body`` at /metrics with a Content-Length, ``requests`` counts the answers given."""

    def __init__(self, body: bytes = b"") -> None:
        self.body = body
        self.requests = 0
        exporter = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                exporter.requests += 1
                body = exporter.body
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:  # the collector gave up on this answer: nothing to do
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"dcgm+http://127.0.0.1:{self.port}/metrics"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeExporter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
