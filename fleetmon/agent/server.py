"""The agent's HTTP API (standard library only): JSON under /v1, and /metrics.

Every response is served from what the sampler already holds; no request
touches NVML, and no endpoint changes GPU state (the agent answers GET and
HEAD only). See docs/agent-api.md for the endpoints with examples.

Hardening (facts measured for this design): ``http.server``'s default listen
backlog of 5 drops connections when many arrive at once, so it is raised; with
an unbuffered write file each keep-alive response costs ~40 ms (Nagle plus
delayed ACK), so responses are written in one buffered flush (``wbufsize``)
with TCP_NODELAY. Slow or vanished clients hit a socket timeout; oversized or
malformed requests get a 4xx from ``http.server`` itself (414 for a request
line over 64 KiB, 431 for a header line over 64 KiB or more than 100 headers),
answered as JSON. Connections beyond ``MAX_CONNECTIONS`` are refused with 503
so a flood of idle clients cannot exhaust threads.
"""

from __future__ import annotations

import hmac
import json
import logging
import socket
import ssl
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

from fleetmon import __version__
from fleetmon.agent.buffer import splice_chunks
from fleetmon.agent.prom import render_metrics
from fleetmon.records import WIRE_SCHEMA

log = logging.getLogger("fleetmon.server")

MAX_PAGE = 5000
DEFAULT_PAGE = 1000
REQUEST_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 512


class AgentState:
    """What the server reads: a facade over the session, sampler and buffer.

    Args:
        node: returns the node's NodeInfo (called per request; keep it cheap).
        inventory: returns the GpuInventory list.
        sampler: has ``snapshot()`` and ``health_dict()`` (and optionally ``last_xid``).
        buffer: the record buffer.
        started_at: agent start time (Unix seconds).
        extra_health: returns more keys for /v1/health.
    """

    def __init__(self, *, node: Callable[[], Any], inventory: Callable[[], list[Any]],
                 sampler: Any, buffer: Any, started_at: float, extra_health: Callable[[], dict[str, Any]]
                 | None = None) -> None:
        self.node = node
        self.inventory = inventory
        self.sampler = sampler
        self.buffer = buffer
        self.started_at = started_at
        self.extra_health = extra_health or (lambda: {})

    @property
    def buffer_id(self) -> str | None:
        return getattr(self.buffer, "buffer_id", None)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # listen backlog (http.server's default is 5)
    allow_reuse_address = True

    state: AgentState
    token: bytes | None
    request_timeout_s: float = REQUEST_TIMEOUT_S
    tls: ssl.SSLContext | None = None
    max_connections: int = MAX_CONNECTIONS

    def server_activate(self) -> None:
        self._active = 0
        self._active_lock = threading.Lock()
        super().server_activate()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._active_lock:
            full = self._active >= self.max_connections
            if not full:
                self._active += 1
        if full:
            try:
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                b"Connection: close\r\nRetry-After: 1\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            if self.tls is not None:
                # Handshake in the connection's thread, bounded by the request timeout,
                # so a client that never completes it holds only its own thread.
                request.settimeout(self.request_timeout_s)
                try:
                    request = self.tls.wrap_socket(request, server_side=True)
                except (OSError, ssl.SSLError) as exc:
                    log.debug("TLS handshake with %s failed: %s", client_address, exc)
                    self.shutdown_request(request)
                    return
            super().process_request_thread(request, client_address)
        finally:
            with self._active_lock:
                self._active -= 1

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("connection from %s ended with an error", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = f"fleetmon-agent/{__version__}"
    sys_version = ""
    wbufsize = -1  # buffered: one write per response (see module docstring)
    disable_nagle_algorithm = True

    def setup(self) -> None:
        self.timeout = self.server.request_timeout_s
        super().setup()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("%s " + format, self.address_string(), *args)

    # -- plumbing ---------------------------------------------------------------

    def _send(self, code: int, body: bytes | list[bytes], ctype: str, extra: dict[str, str] | None = None) -> None:
        chunks = body if isinstance(body, list) else [body]
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(sum(len(c) for c in chunks)))
        self.send_header("Cache-Control", "no-store")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            for chunk in chunks:
                self.wfile.write(chunk)

    def _json(self, code: int, obj: Any) -> None:
        body = json.dumps(obj, separators=(",", ":"), allow_nan=False, default=str).encode()
        self._send(code, body, "application/json")

    def _error(self, code: int, message: str, extra: dict[str, str] | None = None) -> None:
        body = json.dumps({"schema": WIRE_SCHEMA, "error": message}).encode()
        self._send(code, body, "application/json", extra)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own errors (400, 414, 431, 501 …) as JSON; the connection closes."""
        self.close_connection = True
        if getattr(self, "request_version", "") == "HTTP/0.9":
            self.request_version = "HTTP/1.0"  # http.server would otherwise omit the status line
        try:
            short = HTTPStatus(code).phrase
        except ValueError:
            short = ""
        text = message or short or "error"
        try:
            self._error(code, text)
        except OSError:
            pass

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if self.request_version == "HTTP/0.9":  # "GET /path" without a version: no headers to answer with
            self.send_error(400, "HTTP/0.9 requests are not supported")
            return False
        return True

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
        if self.headers.get("Content-Length", "0").strip() not in ("", "0") or self.headers.get(
                "Transfer-Encoding"):
            self.close_connection = True  # a body we will not read would spoil the next request
        try:
            self._dispatch()
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            self.close_connection = True
        except Exception:  # never kill the server thread silently
            log.exception("request %s failed", self.path)
            self.close_connection = True
            try:
                self._error(500, "internal error")
            except OSError:
                pass

    def do_HEAD(self) -> None:  # noqa: N802
        self.do_GET()

    def _not_allowed(self) -> None:
        self.close_connection = True  # the request body, if any, is not read
        self._error(405, "method not allowed: the agent is read-only", {"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _not_allowed  # noqa: N815

    def _dispatch(self) -> None:
        if not self._authorized():
            self._error(401, "missing or wrong bearer token", {"WWW-Authenticate": 'Bearer realm="fleetmon"'})
            return
        url = urlsplit(self.path)
        try:
            query = {k: v[-1] for k, v in parse_qs(url.query, strict_parsing=False,
                                                    max_num_fields=20).items()}
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
            self._error(404, f"unknown path {url.path[:200]!r}; see /")
            return
        handler(query)

    # -- endpoints --------------------------------------------------------------

    def _index(self, query: dict[str, str]) -> None:
        self._json(200, {"schema": WIRE_SCHEMA, "agent": "fleetmon", "version": __version__,
                         "endpoints": ["/v1/node", "/v1/latest", "/v1/minutes?after=SEQ&limit=N",
                                       "/v1/events?after=SEQ&limit=N", "/v1/health", "/metrics"]})

    def _node(self, query: dict[str, str]) -> None:
        st = self.server.state
        self._json(200, {"schema": WIRE_SCHEMA, "now": time.time(), "buffer_id": st.buffer_id,
                         "node": st.node().to_dict(), "gpus": [g.to_dict() for g in st.inventory()]})

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
        rows = buf.raw_after(table, after, limit)
        first, last = buf.bounds(table)
        nxt = rows[-1][0] if rows else max(after, last)
        head = {
            "schema": WIRE_SCHEMA, "now": time.time(), "buffer_id": self.server.state.buffer_id,
            "after": after, "first_seq": first, "last_seq": last, "next": nxt, "more": nxt < last,
            # A cursor below what is still held means records were pruned in between.
            "gap": bool(first and after + 1 < first),
            # A cursor beyond the last number ever given: another buffer (see buffer_id).
            "ahead": after > last,
            "count": len(rows),
        }
        chunks = [(json.dumps(head, separators=(",", ":"))[:-1] + ',"records":').encode()]
        chunks += splice_chunks(rows)
        del rows
        chunks.append(b"}")
        self._send(200, chunks, "application/json")

    def _minutes(self, query: dict[str, str]) -> None:
        self._page(query, "minutes")

    def _events(self, query: dict[str, str]) -> None:
        self._page(query, "events")

    def _health(self, query: dict[str, str]) -> None:
        st = self.server.state
        health = st.sampler.health_dict()
        now = time.time()
        last = health.get("last_sample_at")
        buf = st.buffer
        body = {
            "schema": WIRE_SCHEMA, "now": now, "version": __version__,
            "uptime_s": round(now - st.started_at, 3),
            "sample_lag_s": None if last is None else round(now - last, 3),
            "buffer": {"buffer_id": st.buffer_id, "bytes": buf.size_bytes(), "max_bytes": buf.max_bytes,
                       "keep_days": buf.keep_days, "days_at_cap": buf.days_capacity(len(health.get("gpus", []))),
                       "minutes": buf.bounds("minutes"), "events": buf.bounds("events")},
            "sampler": health,
        }
        body.update(st.extra_health())
        self._json(200, body)

    def _metrics(self, query: dict[str, str]) -> None:
        st = self.server.state
        samples, at = st.sampler.snapshot()
        now = time.time()
        health = st.sampler.health_dict()
        text = render_metrics(st.node(), st.inventory(), samples, {
            "uptime_seconds": round(now - st.started_at, 3),
            "sample_lag_seconds": None if at is None else round(now - at, 3),
            "buffer_bytes": st.buffer.size_bytes(),
            "cycle_seconds": health.get("last_cycle_s"),
            "gpus": health.get("gpus", []),
        }, last_xid=getattr(st.sampler, "last_xid", None), fields=getattr(st.sampler, "fields", None))
        self._send(200, text.encode(), "text/plain; version=0.0.4; charset=utf-8")


def make_server(state: AgentState, bind: str, port: int, *, token: str | None = None,
                tls_cert: str | None = None, tls_key: str | None = None,
                request_timeout_s: float = REQUEST_TIMEOUT_S,
                max_connections: int = MAX_CONNECTIONS) -> _Server:
    """Create (not start) the HTTP server. Port 0 picks a free port.

    Args:
        state: what the endpoints serve.
        bind: address to listen on ("::" style addresses select IPv6).
        token: bearer token every request must carry (None: no auth).
        tls_cert, tls_key: PEM files; serve HTTPS (TLS 1.2+) when given.
        request_timeout_s: idle/slow clients are dropped after this long.
        max_connections: connections served at once; more get 503.

    Raises:
        OSError: the address cannot be bound.
        ssl.SSLError: the certificate or key cannot be loaded.
    """
    family = socket.AF_INET6 if ":" in bind else socket.AF_INET
    ctx = None
    if tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(tls_cert, tls_key)

    class Server(_Server):
        address_family = family

    server = Server((bind, port), _Handler)
    server.state = state
    server.token = token.encode() if token else None
    server.request_timeout_s = request_timeout_s
    server.max_connections = max_connections
    server.tls = ctx
    return server


def serve_in_thread(server: _Server, poll_interval_s: float = 0.5) -> threading.Thread:
    """Run ``server.serve_forever`` on a daemon thread and return it.

    ``poll_interval_s`` bounds how long ``server.shutdown()`` waits.
    """
    t = threading.Thread(target=server.serve_forever, args=(poll_interval_s,), name="http", daemon=True)
    t.start()
    return t
