"""Real servers on 127.0.0.1 for the notification tests: a webhook receiver (also an HTTPS proxy) and SMTP.

``HookServer`` is an HTTP server that records every request it gets. It
answers 200, 500, or hangs (``mode``). It is also an HTTP proxy for ``CONNECT``:
Apprise's Slack, Discord, WeCom, DingTalk, Feishu and Lark plugins post to
their vendors' fixed hosts over HTTPS (no option points them elsewhere), and
``requests`` (under Apprise) honours ``HTTPS_PROXY``; the proxy accepts the
tunnel, ends TLS itself with a throw-away certificate (the Apprise URLs say
``verify=no``) and reads the very request the plugin built for the vendor's
host. Nothing reaches the internet: every request ends here.
"""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from fleetmon.vocab import Severity
from storage.db import open_database
from storage.findings import save_findings
from storage.rows import NewFinding


@dataclass
class Received:
    """One request the server got: through a tunnel, ``host`` is the vendor's host the plugin aimed at."""

    method: str
    host: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = 0.0
    """When it came (time.monotonic())."""

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))


@dataclass
class _State:
    mode: str = "ok"
    received: list[Received] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    hanging: int = 0
    cond: threading.Condition = field(default_factory=threading.Condition)


def make_cert(folder: Path) -> tuple[str, str] | None:
    """A self-signed certificate (cert, key) made with the openssl command; None when it is missing."""
    openssl = shutil.which("openssl")
    if openssl is None:
        return None
    key, crt = folder / "key.pem", folder / "cert.pem"
    proc = subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                           "-out", str(crt), "-days", "1", "-subj", "/CN=proxy.test"],
                          capture_output=True, text=True, timeout=60)
    return (str(crt), str(key)) if proc.returncode == 0 else None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    tunnel_host = ""

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_CONNECT(self) -> None:
        if self.server.tls is None:
            self.send_error(405)
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*self.server.tls)
        self.connection = ctx.wrap_socket(self.connection, server_side=True)
        self.rfile = self.connection.makefile("rb", self.rbufsize)
        self.wfile = self.connection.makefile("wb")
        self.tunnel_host = self.path.rsplit(":", 1)[0]
        self.close_connection = False
        while not self.close_connection:
            self.handle_one_request()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        state = self.server.state
        host = self.tunnel_host or (self.headers.get("Host") or "")
        with state.cond:
            state.received.append(Received("POST", host, self.path, dict(self.headers.items()), body,
                                           time.monotonic()))
            state.cond.notify_all()
        if state.mode == "hang":
            with state.cond:
                state.hanging += 1
                state.cond.notify_all()
            state.release.wait(120)
            self.close_connection = True
            return
        code = 500 if state.mode == "fail" else 200
        answer = b'{"errcode":0,"code":0,"StatusCode":0,"ok":true}' if code == 200 else b"Internal Server Error"
        if code == 200 and host == "hooks.slack.com":
            answer = b"ok"  # what Slack's incoming webhooks answer (Apprise checks it)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    do_PUT = do_POST


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State
    tls: tuple[str, str] | None


class HookServer:
    """A recording webhook server on 127.0.0.1 (and HTTPS proxy with ``tls``); ``mode``: ok, fail, hang."""

    def __init__(self, mode: str = "ok", tls: tuple[str, str] | None = None) -> None:
        self.state = _State(mode=mode)
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.state = self.state
        self.server.tls = tls
        self.port = int(self.server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def received(self) -> list[Received]:
        with self.state.cond:
            return list(self.state.received)

    @property
    def mode(self) -> str:
        return self.state.mode

    @mode.setter
    def mode(self, value: str) -> None:
        self.state.mode = value

    def wait_for(self, count: int, timeout: float = 20.0) -> list[Received]:
        """The requests once at least ``count`` came (fewer after ``timeout``)."""
        with self.state.cond:
            self.state.cond.wait_for(lambda: len(self.state.received) >= count, timeout)
            return list(self.state.received)

    def wait_hanging(self, timeout: float = 20.0) -> bool:
        with self.state.cond:
            return self.state.cond.wait_for(lambda: self.state.hanging > 0, timeout)

    def close(self) -> None:
        self.state.release.set()
        self.server.shutdown()
        self.server.server_close()


class SmtpServer:
    """aiosmtpd's SMTP server on 127.0.0.1, keeping every message it receives."""

    def __init__(self) -> None:
        import socket

        from aiosmtpd.controller import Controller

        self.messages: list[Any] = []
        self.cond = threading.Condition()
        outer = self

        class Handler:
            async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
                with outer.cond:
                    outer.messages.append(envelope)
                    outer.cond.notify_all()
                return "250 Message accepted for delivery"

        with socket.socket() as s:  # aiosmtpd needs a port before it starts (it connects to check itself)
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def wait_for(self, count: int, timeout: float = 20.0) -> list[Any]:
        with self.cond:
            self.cond.wait_for(lambda: len(self.messages) >= count, timeout)
            return list(self.messages)

    def close(self) -> None:
        self.controller.stop()


def lost(node: str, uuid: str, at: float = 1_790_000_000.0) -> NewFinding:
    """A gpu-lost finding as the health engine stores it (its summary in the evidence)."""
    return NewFinding(key=f"gpu-lost:gpu:{uuid}", kind="gpu-lost", severity=Severity.CRITICAL, node=node, gpu_uuid=uuid,
                      first_seen=at, last_seen=at,
                      evidence={"summary": f"{node} {uuid}: GPU lost (fell off the bus), Xid 79 at 12:01 UTC",
                                "xid": 79},
                      action="Drain the node and reseat or replace the card")


def store(path: str, findings: list[NewFinding], now: float = 1_790_000_100.0) -> Any:
    """Save ``findings`` as a health pass does; returns what changed (the notifier's input)."""
    db = open_database(path)
    try:
        return save_findings(db, findings, now)
    finally:
        db.close()
