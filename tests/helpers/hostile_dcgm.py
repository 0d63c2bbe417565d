"""A dcgm-exporter stand-in on 127.0.0.1 for the hostile-source tests (issue 20): a real HTTP server whose
scrape is a fixed body or made afresh per request, and a builder of dcgm-exporter scrapes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def dcgm_scrape(uuids: list[str], model: str = "Evil GPU", host: str = "evil") -> bytes:
    """A dcgm-exporter scrape (current label names) of ``uuids``: temperature, power and memory per GPU."""
    lines = []
    for metric, value in (("DCGM_FI_DEV_GPU_TEMP", "41"), ("DCGM_FI_DEV_POWER_USAGE", "71.5"),
                          ("DCGM_FI_DEV_FB_USED", "600")):
        lines += [f"# HELP {metric} {metric}", f"# TYPE {metric} gauge"]
        for i, u in enumerate(uuids):
            lines.append(f'{metric}{{gpu="{i}",UUID="{u}",pci_bus_id="00000000:{0x10 + i:02X}:00.0",'
                         f'device="nvidia{i}",modelName="{model}",Hostname="{host}"}} {value}')
    return ("\n".join(lines) + "\n").encode()


class Exporter:
    """A dcgm-exporter stand-in on 127.0.0.1: serves ``body()`` at any path (a fresh body per scrape)."""

    def __init__(self, body: bytes | Callable[[], bytes]) -> None:
        self.body = body
        self.scrapes = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                outer.scrapes += 1
                data = outer.body() if callable(outer.body) else outer.body
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, args=(0.1,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"dcgm+http://127.0.0.1:{self.server.server_address[1]}/metrics"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
