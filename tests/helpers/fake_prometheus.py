"""A fake Prometheus HTTP API on 127.0.0.1 for hostile-answer tests (the only fake of issue 20's Prometheus side).

It answers ``/api/v1/query`` (the report's GPU listing) and ``/api/v1/query_range`` (every window) as a
Prometheus holding ``gpus`` would, at the grid the request asks for, and lets a test replace or spoil
any answer: ``server.answer = fn(path, params, normal) -> bytes | Callable[[wfile], None]`` where
``normal`` is the honest answer (a dict). Usage::

    with fake_prometheus(gpus=fake_gpus("node-a", 2)) as prom:
        prom.url   # http://127.0.0.1:<port>
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[[str, dict[str, str], dict[str, Any]], "bytes | Callable[[Any], None] | None"]


def fake_gpus(node: str, count: int, model: str = "NVIDIA A100-SXM4-80GB") -> list[dict[str, str]]:
    """Labels of ``count`` GPUs on ``node`` as dcgm-exporter writes them."""
    return [{"UUID": f"GPU-{node}-{i:04d}-0000-0000-000000000000", "gpu": str(i), "modelName": model,
             "node": node, "instance": f"{node}:9414", "pci_bus_id": f"00000000:{i + 7:02X}:00.0",
             "DCGM_FI_DRIVER_VERSION": "550.54.15", "Hostname": node} for i in range(count)]


def value_for(expr: str) -> float:
    """A plausible value for a query (by the metric it names)."""
    table = {"count_over_time": 60.0, "fleetmon_gpu_lost": 0.0, "GPU_TEMP": 45.0, "POWER_USAGE": 250.0,
             "POWER_MGMT_LIMIT": 400.0, "GPU_UTIL": 90.0, "SM_CLOCK": 1410.0, "FAN": 30.0}
    for key, value in table.items():
        if key in expr:
            return value
    return 0.0


def honest(path: str, params: dict[str, str], gpus: list[dict[str, str]]) -> dict[str, Any]:
    """The answer a Prometheus holding ``gpus`` gives (every GPU, every grid point)."""
    if path.endswith("/query"):
        at = float(params.get("time", time.time()))
        return {"status": "success", "data": {"resultType": "vector", "result": [
            {"metric": dict(g), "value": [at, "1"]} for g in gpus]}}
    start, end, step = float(params["start"]), float(params["end"]), float(params["step"])
    expr = params.get("query", "")
    times = []
    t = start
    while t <= end and len(times) < 11_000:
        times.append(t)
        t += step
    value = value_for(expr)
    return {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"UUID": g["UUID"]}, "values": [[ts, f"{value:g}"] for ts in times]}
        for g in gpus if "UUID=" not in expr or f'"{g["UUID"]}"' in expr]}}


@dataclass
class FakePrometheus:
    url: str
    gpus: list[dict[str, str]]
    answer: Answer | None = None
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)


@contextmanager
def fake_prometheus(gpus: list[dict[str, str]], answer: Answer | None = None) -> Iterator[FakePrometheus]:
    """Serve the fake API on a free port of 127.0.0.1 in a daemon thread; stopped on exit."""
    state = FakePrometheus("", gpus, answer)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _params(self) -> dict[str, str]:
            url = urllib.parse.urlsplit(self.path)
            params = dict(urllib.parse.parse_qsl(url.query))
            if self.command == "POST":
                size = int(self.headers.get("Content-Length") or 0)
                params.update(urllib.parse.parse_qsl(self.rfile.read(size).decode()))
            return params

        def _serve(self) -> None:
            path = urllib.parse.urlsplit(self.path).path
            params = self._params()
            state.requests.append((path, params))
            if path.endswith("query_range") and not {"start", "end", "step"} <= set(params):
                self.send_error(400, "incomplete request")  # a client that gave up mid-request
                return
            normal = honest(path, params, state.gpus)
            body: Any = None
            if state.answer is not None:
                body = state.answer(path, params, normal)
            if body is None:
                body = json.dumps(normal).encode()
            try:
                if callable(body):
                    body(self.wfile)
                    self.close_connection = True
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                self.close_connection = True

        do_GET = _serve
        do_POST = _serve

    class Server(ThreadingHTTPServer):
        request_queue_size = 128  # the detail window asks 8 queries at once; the default 5 dropped connects (1 s retries)

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # a client that gave up (a deadline, a cancel) breaks the pipe: expected here

    server = Server(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="fake-prometheus", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def drip(every_s: float, total: int = 10_000) -> Callable[[Any], None]:
    """An answer that sends its headers, then one byte every ``every_s`` (a server that never finishes)."""
    def write(wfile: Any) -> None:
        wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % total)
        wfile.flush()
        for _ in range(total):
            time.sleep(every_s)
            wfile.write(b" ")
            wfile.flush()
    return write
