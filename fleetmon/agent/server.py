"""The agent's HTTP API (standard library only): JSON under /v1, and /metrics.

Every response is served from what the sampler already holds; no request
touches NVML. See docs/agent-api.md for the endpoints with examples.

Hardening (facts measured for this design): ``http.server``'s default listen
backlog of 5 drops connections when many arrive at once, so it is raised; with
an unbuffered write file each keep-alive response costs ~40 ms (Nagle plus
delayed ACK), so responses are written in one buffered flush with TCP_NODELAY.
Slow or vanished clients hit a socket timeout; oversized or malformed requests
get a 4xx from ``http.server`` itself.
"""

from __future__ import annotations

import hmac
import json
import logging
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

from fleetmon import __version__
from fleetmon.agent.prom import render_metrics
from fleetmon.records import WIRE_SCHEMA

log = logging.getLogger("fleetmon.server")

MAX_PAGE = 5000
DEFAULT_PAGE = 1000
REQUEST_TIMEOUT_S = 10.0


class AgentState:
    """What the server reads: a facade over the session, sampler and buffer."""

    def __init__(self, *, node: Callable[[], Any], inventory: Callable[[], list[Any]],
                 sampler: Any, buffer: Any, started_at: float, extra_health: Callable[[], dict[str, Any]]
                 | None = None) -> None:
        self.node = node
        self.inventory = inventory
        self.sampler = sampler
        self.buffer = buffer
        self.started_at = started_at
        self.extra_health = extra_health or (lambda: {})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    allow_reuse_address = True

    state: AgentState
    token: bytes | None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = f"fleetmon-agent/{__version__}"
    sys_version = ""
    timeout = REQUEST_TIMEOUT_S
    wbufsize = -1  # buffered: one write per response (see module docstring)
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("%s " + format, self.address_string(), *args)

    # -- plumbing ---------------------------------------------------------------

    def _send(self, code: int, body: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, code: int, obj: Any) -> None:
        body = json.dumps(obj, separators=(",", ":"), allow_nan=False, default=str).encode()
        self._send(code, body, "application/json")

    def _error(self, code: int, message: str, extra: dict[str, str] | None = None) -> None:
        body = json.dumps({"schema": WIRE_SCHEMA, "error": message}).encode()
        self._send(code, body, "application/json", extra)

    def _authorized(self) -> bool:
        token = self.server.token
        if token is None:
            return True
        header = self.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(given.strip().encode("utf-8", "replace"), token)

    # -- dispatch ---------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        try:
            self._dispatch()
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            self.close_connection = True
        except Exception:  # never kill the server thread silently
            log.exception("request %s failed", self.path)
            try:
                self._error(500, "internal error")
            except OSError:
                self.close_connection = True

    def do_HEAD(self) -> None:  # noqa: N802
        self.do_GET()

    def _not_allowed(self) -> None:
        self._error(405, "method not allowed: the agent is read-only", {"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = _not_allowed  # noqa: N815

    def _dispatch(self) -> None:
        if not self._authorized():
            self._error(401, "missing or wrong bearer token", {"WWW-Authenticate": 'Bearer realm="fleetmon"'})
            return
        url = urlsplit(self.path)
        try:
            query = {k: v[-1] for k, v in parse_qs(url.query, strict_parsing=False).items()}
        except ValueError:
            self._error(400, "malformed query string")
            return
        routes: dict[str, Callable[[dict[str, str]], None]] = {
            "/v1/node": self._node,
            "/v1/latest": self._latest,
            "/v1/minutes": self._minutes,
            "/v1/samples": self._minutes,
            "/v1/events": self._events,
            "/v1/health": self._health,
            "/metrics": self._metrics,
            "/": self._index,
        }
        handler = routes.get(url.path.rstrip("/") or "/")
        if handler is None:
            self._error(404, f"unknown path {url.path!r}; see /")
            return
        handler(query)

    # -- endpoints --------------------------------------------------------------

    def _index(self, query: dict[str, str]) -> None:
        self._json(200, {"schema": WIRE_SCHEMA, "agent": "fleetmon", "version": __version__,
                         "endpoints": ["/v1/node", "/v1/latest", "/v1/minutes?after=SEQ&limit=N",
                                       "/v1/events?after=SEQ&limit=N", "/v1/health", "/metrics"]})

    def _node(self, query: dict[str, str]) -> None:
        st = self.server.state
        self._json(200, {"schema": WIRE_SCHEMA, "now": time.time(), "node": st.node().to_dict(),
                         "gpus": [g.to_dict() for g in st.inventory()]})

    def _latest(self, query: dict[str, str]) -> None:
        st = self.server.state
        samples, at = st.sampler.snapshot()
        self._json(200, {"schema": WIRE_SCHEMA, "now": time.time(), "sampled_at": at,
                         "samples": [s.to_dict() for s in samples]})

    def _page_args(self, query: dict[str, str]) -> tuple[int, int] | None:
        try:
            after = int(query.get("after", "0"))
            limit = int(query.get("limit", str(DEFAULT_PAGE)))
        except ValueError:
            self._error(400, "after and limit must be integers")
            return None
        if after < 0 or limit < 1:
            self._error(400, "after must be >= 0 and limit >= 1")
            return None
        return after, min(limit, MAX_PAGE)

    def _page(self, query: dict[str, str], table: str) -> None:
        args = self._page_args(query)
        if args is None:
            return
        after, limit = args
        buf = self.server.state.buffer
        records = buf.minutes_after(after, limit) if table == "minutes" else buf.events_after(after, limit)
        first, last = buf.bounds(table)
        nxt = records[-1]["seq"] if records else max(after, 0)
        self._json(200, {
            "schema": WIRE_SCHEMA, "now": time.time(), "after": after, "first_seq": first,
            "last_seq": last, "next": nxt, "more": nxt < last,
            # A cursor below what is still held means records were pruned in between.
            "gap": bool(first and after + 1 < first),
            "records": records,
        })

    def _minutes(self, query: dict[str, str]) -> None:
        self._page(query, "minutes")

    def _events(self, query: dict[str, str]) -> None:
        self._page(query, "events")

    def _health(self, query: dict[str, str]) -> None:
        st = self.server.state
        health = st.sampler.health_dict()
        now = time.time()
        last = health.get("last_sample_at")
        body = {
            "schema": WIRE_SCHEMA, "now": now, "version": __version__,
            "uptime_s": round(now - st.started_at, 3),
            "sample_lag_s": None if last is None else round(now - last, 3),
            "buffer": {"bytes": st.buffer.size_bytes(), "minutes": st.buffer.bounds("minutes"),
                       "events": st.buffer.bounds("events")},
            "sampler": health,
        }
        body.update(st.extra_health())
        self._json(200, body)

    def _metrics(self, query: dict[str, str]) -> None:
        st = self.server.state
        samples, at = st.sampler.snapshot()
        now = time.time()
        text = render_metrics(st.node(), st.inventory(), samples, {
            "uptime_seconds": round(now - st.started_at, 3),
            "sample_lag_seconds": None if at is None else round(now - at, 3),
            "buffer_bytes": st.buffer.size_bytes(),
        })
        self._send(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")


def make_server(state: AgentState, bind: str, port: int, *, token: str | None = None,
                tls_cert: str | None = None, tls_key: str | None = None) -> _Server:
    """Create (not start) the HTTP server. Port 0 picks a free port."""
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET

    class Server(_Server):
        address_family = family

    server = Server((bind, port), _Handler)
    server.state = state
    server.token = token.encode() if token else None
    if tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(tls_cert, tls_key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    return server


def serve_in_thread(server: _Server) -> threading.Thread:
    t = threading.Thread(target=server.serve_forever, name="http", daemon=True)
    t.start()
    return t
