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

Slow clients (see :class:`HttpLimits`): a socket timeout bounds each read,
so a client dripping one byte every few seconds would never be cut; the whole
request line and headers must therefore arrive within a deadline. One client
address holds at most ``max_per_address`` connections, and a few slots are
kept for the collector: when the rest are taken, a connection is served there
only if it comes from a configured collector address or, without one, if its
head arrives quickly and carries a valid token. A reserved slot serves one
request; one that waits for its head is given up to a newcomer. The token is
checked before anything else is answered (no 405, no ``100 Continue`` to a
stranger), and logged URLs are cut to ``MAX_LOGGED`` characters.
"""

from __future__ import annotations

import hmac
import io
import ipaddress
import json
import logging
import re
import socket
import ssl
import threading
import time
from dataclasses import dataclass, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Callable, Iterable
from urllib.parse import parse_qs, urlsplit

from fleetmon import __version__
from fleetmon.agent.buffer import splice_chunks
from fleetmon.agent.prom import render_metrics
from fleetmon.records import WIRE_SCHEMA

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

log = logging.getLogger("fleetmon.server")

MAX_PAGE = 5000
DEFAULT_PAGE = 1000
REQUEST_TIMEOUT_S = 10.0
MAX_CONNECTIONS = 512
MAX_PER_ADDRESS = 256
"""Connections one client address may hold (half the total, so one box cannot take them all)."""
RESERVED_CONNECTIONS = 8
"""Of MAX_CONNECTIONS, kept for the collector (at most a quarter of a smaller total)."""
RESERVED_HEAD_S = 2.0
"""A connection in a reserved slot must send its request (and finish TLS) within this long."""
EVICT_AFTER_S = 0.5
"""A reserved slot still waiting for its request after this long is given to a newcomer."""
MAX_SEQ = 2**63 - 1
"""The largest cursor: SQLite's largest integer."""
MAX_LOGGED = 200
"""Logged URLs and request lines are cut to this many characters."""
_DIGITS = re.compile(r"[0-9]{1,19}")


@dataclass(frozen=True)
class HttpLimits:
    """Who may hold the agent's connections, and how long a request may take to arrive.

    Attributes:
        head_deadline_s: the request line and headers must be complete this long
            after the server starts waiting for them (None: the request timeout).
        max_connections: connections at once, reserved ones included; more get 503.
        max_per_address: connections one client address may hold (the collector's exempt).
        reserved: slots kept for the collector (at most a quarter of ``max_connections``).
        reserved_head_s: how long a connection in a reserved slot may take to send its request.
        collector_addresses: the collector's IP addresses; when given, only they get reserved
            slots, otherwise any request with a valid token (any fast request without a token).
    """

    head_deadline_s: float | None = None
    max_connections: int = MAX_CONNECTIONS
    max_per_address: int = MAX_PER_ADDRESS
    reserved: int = RESERVED_CONNECTIONS
    reserved_head_s: float = RESERVED_HEAD_S
    collector_addresses: frozenset[str] = frozenset()

    @property
    def reserved_slots(self) -> int:
        return max(0, min(self.reserved, self.max_connections // 4))


def parse_addresses(texts: Iterable[str]) -> frozenset[str]:
    """IP addresses in their canonical form (what ``client_address`` holds).

    Raises:
        ValueError: one is not an IP address.
    """
    out: set[str] = set()
    for text in texts:
        try:
            out.add(_host(str(ipaddress.ip_address(text.strip().strip("[]")))))
        except ValueError:
            raise ValueError(f"{text[:MAX_LOGGED]!r} is not an IP address") from None
    return frozenset(out)


def _host(address: str) -> str:
    """A client's address for counting: IPv4-mapped IPv6 addresses as IPv4."""
    return address[7:] if address.startswith("::ffff:") and "." in address else address


def _short(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_LOGGED:
        return value[:MAX_LOGGED] + f"… ({len(value)} characters)"
    return value


class _Slot:
    """One admitted connection, as the server counts it."""

    __slots__ = ("key", "host", "reserved", "started", "sock", "waiting", "released")

    def __init__(self, key: Any, host: str, reserved: bool, sock: socket.socket) -> None:
        self.key = key
        self.host = host
        self.reserved = reserved
        self.started = time.monotonic()
        self.sock = sock
        self.waiting = True  # for its (first) request's head: a reserved slot may be given away
        self.released = False


class _DeadlineReader(io.RawIOBase):
    """The connection's reads, each bounded by what is left of the request head's deadline."""

    def __init__(self, sock: socket.socket, handler: _Handler) -> None:
        super().__init__()
        self._sock = sock
        self._handler = handler

    def readable(self) -> bool:
        return True

    def readinto(self, b: WriteableBuffer) -> int:
        deadline = self._handler.head_deadline
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request head did not arrive in time")
            self._sock.settimeout(min(left, self._handler.server.request_timeout_s))
        return self._sock.recv_into(b)


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
    limits: HttpLimits = HttpLimits()

    @property
    def max_connections(self) -> int:
        return self.limits.max_connections

    @property
    def head_deadline_s(self) -> float:
        return self.request_timeout_s if self.limits.head_deadline_s is None else self.limits.head_deadline_s

    def server_activate(self) -> None:
        self._active = 0
        self._active_lock = threading.Lock()
        self._per_address: dict[str, int] = {}
        self._slots: dict[Any, _Slot] = {}
        super().server_activate()

    def _admit(self, request: socket.socket, client_address: Any) -> _Slot | None:
        """Count a new connection in, or None when it must be refused (see the module docstring)."""
        lim = self.limits
        host = _host(str(client_address[0])) if client_address else ""
        collector = host in lim.collector_addresses
        reserved = lim.reserved_slots
        now = time.monotonic()
        with self._active_lock:
            in_reserve = sum(1 for s in self._slots.values() if s.reserved)
            general = self._active - in_reserve < lim.max_connections - reserved and (
                collector or self._per_address.get(host, 0) < lim.max_per_address)
            if not general:
                if lim.collector_addresses and not collector:
                    return None
                if in_reserve >= reserved:
                    # Give the slot of the longest wait for a request head to the newcomer.
                    waiting = [s for s in self._slots.values() if s.reserved and s.waiting
                               and now - s.started >= EVICT_AFTER_S]
                    if not waiting:
                        return None
                    oldest = min(waiting, key=lambda s: s.started)
                    self._release(oldest)
                    try:
                        # its thread sees the end and exits (the plain socket's shutdown, also under TLS)
                        socket.socket.shutdown(oldest.sock, socket.SHUT_RDWR)
                    except OSError:
                        pass
            slot = _Slot(client_address, host, not general, request)
            self._slots[client_address] = slot
            self._active += 1
            self._per_address[host] = self._per_address.get(host, 0) + 1
        return slot

    def _release(self, slot: _Slot) -> None:
        """Count a connection out (once); the caller holds ``_active_lock``."""
        if slot.released:
            return
        slot.released = True
        self._active -= 1
        left = self._per_address.get(slot.host, 1) - 1
        if left > 0:
            self._per_address[slot.host] = left
        else:
            self._per_address.pop(slot.host, None)
        if self._slots.get(slot.key) is slot:
            del self._slots[slot.key]

    def slot_of(self, client_address: Any) -> _Slot | None:
        with self._active_lock:
            return self._slots.get(client_address)

    def head_done(self, slot: _Slot | None) -> None:
        if slot is not None:
            with self._active_lock:
                slot.waiting = False

    def process_request(self, request: Any, client_address: Any) -> None:
        if self._admit(request, client_address) is None:
            try:
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n"
                                b"Connection: close\r\nRetry-After: 1\r\n\r\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        slot = self.slot_of(client_address)
        try:
            if self.tls is not None:
                # Handshake in the connection's thread, within the request head's deadline,
                # so a client that never completes it holds only its own thread.
                limit = self.head_deadline_s
                if slot is not None and slot.reserved:
                    limit = min(limit, self.limits.reserved_head_s)
                try:
                    request = self.tls.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
                    if slot is not None:
                        slot.sock = request
                    request.settimeout(min(self.request_timeout_s, limit))
                    request.do_handshake()  # one deadline for the whole handshake
                except (OSError, ssl.SSLError) as exc:
                    log.debug("TLS handshake with %s failed: %s", client_address, exc)
                    self.shutdown_request(request)
                    return
            super().process_request_thread(request, client_address)
        finally:
            if slot is not None:
                with self._active_lock:
                    self._release(slot)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("connection from %s ended with an error", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"
    server_version = f"fleetmon-agent/{__version__}"
    sys_version = ""
    wbufsize = -1  # buffered: one write per response (see module docstring)
    disable_nagle_algorithm = True

    head_deadline: float | None = None
    slot: _Slot | None = None
    _first: bool = True

    def setup(self) -> None:
        # typeshed marks StreamRequestHandler.timeout a ClassVar, but setup() reads it through self:
        # a per-instance value is how a server's own timeout reaches its handlers.
        self.timeout = self.server.request_timeout_s  # type: ignore[misc]
        super().setup()
        self.slot = self.server.slot_of(self.client_address)
        self._first = True
        # Reads through the head's deadline (see _DeadlineReader), not the plain socket file.
        self.rfile.close()
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, self))

    def handle_one_request(self) -> None:
        limit = self.server.head_deadline_s
        start = time.monotonic()
        if self.slot is not None:
            if self.slot.reserved:
                limit = min(limit, self.server.limits.reserved_head_s)
            if self._first:
                start = self.slot.started  # the TLS handshake counts against the first head
        self._first = False
        self.head_deadline = start + limit
        super().handle_one_request()

    def _head_read(self) -> None:
        """The head is in: plain socket timeouts again (writes, the next request's wait)."""
        self.head_deadline = None
        try:
            self.connection.settimeout(self.server.request_timeout_s)
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("%s " + format, self.address_string(), *(_short(a) for a in args))

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
        text = _short(message or short or "error")
        try:
            self._error(code, text)
        except OSError:
            pass

    def parse_request(self) -> bool:
        ok = super().parse_request()
        self._head_read()
        if not ok:
            return False
        if self.request_version == "HTTP/0.9":  # "GET /path" without a version: no headers to answer with
            self.send_error(400, "HTTP/0.9 requests are not supported")
            return False
        # The token before anything else: a stranger learns no more than 401 (or 503 in a reserved slot).
        if not self._authorized():
            self.close_connection = True
            if self.slot is not None and self.slot.reserved and self.slot.host not in \
                    self.server.limits.collector_addresses:
                self._error(503, "the agent is busy; reserved for the collector", {"Retry-After": "1"})
            else:
                self._error(401, "missing or wrong bearer token", {"WWW-Authenticate": 'Bearer realm="fleetmon"'})
            return False
        self.server.head_done(self.slot)
        if self.slot is not None and self.slot.reserved:
            self.close_connection = True  # a reserved slot serves one request
        return True

    def handle_expect_100(self) -> bool:
        """Never ``100 Continue``: the agent reads no request body (and the token is not checked yet)."""
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
            log.exception("request %s failed", _short(self.path))
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
        after_text = query.get("after", "0")
        limit_text = query.get("limit", str(DEFAULT_PAGE))
        if after_text.startswith("-") or limit_text.startswith("-"):
            self._error(400, "after must be >= 0 and limit >= 1")
            return None
        if not (_DIGITS.fullmatch(after_text) and _DIGITS.fullmatch(limit_text)):
            self._error(400, f"after and limit must be integers from 0 to {MAX_SEQ}")
            return None
        after, limit = int(after_text), int(limit_text)
        if after > MAX_SEQ or limit > MAX_SEQ:
            self._error(400, f"after and limit must be integers from 0 to {MAX_SEQ}")
            return None
        if limit < 1:
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
                max_connections: int | None = None, limits: HttpLimits | None = None) -> _Server:
    """Create (not start) the HTTP server. Port 0 picks a free port.

    Args:
        state: what the endpoints serve.
        bind: address to listen on ("::" style addresses select IPv6).
        token: bearer token every request must carry (None: no auth).
        tls_cert, tls_key: PEM files; serve HTTPS (TLS 1.2+) when given.
        request_timeout_s: idle/slow clients are dropped after this long (each read, and the
            whole request head unless ``limits`` sets another deadline).
        max_connections: connections served at once; more get 503 (overrides ``limits``).
        limits: connection caps, the head's deadline and the collector's reserved slots.

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
    limits = limits or HttpLimits()
    if max_connections is not None:
        limits = replace(limits, max_connections=max_connections)
    server.limits = limits
    server.tls = ctx
    return server


def serve_in_thread(server: _Server, poll_interval_s: float = 0.5) -> threading.Thread:
    """Run ``server.serve_forever`` on a daemon thread and return it.

    ``poll_interval_s`` bounds how long ``server.shutdown()`` waits.
    """
    t = threading.Thread(target=server.serve_forever, args=(poll_interval_s,), name="http", daemon=True)
    t.start()
    return t
