"""Fetching one node's agent over HTTP and checking what it sends.

Everything the agent answers is validated with plain code before it becomes
records: a wrong schema version, truncated JSON, garbage, wrong types, an
oversize body or a timeout makes the poll fail with a one-line reason, and
nothing of that poll reaches storage.

What one poll asks (:func:`poll_node`):

* ``/v1/node`` (inventory) when the target asks for it, ``/v1/latest`` always;
* ``/v1/minutes`` and ``/v1/events`` page by page after the stored cursors
  (sequence numbers), within the node's share of the cycle's record budget,
  so after the workstation was off the collector backfills what the agents
  kept, a bounded amount per cycle;
* the agent's ``buffer_id``: when it differs from the one the cursors belong
  to (or the agent's last sequence number is below the cursor), the agent's
  buffer was replaced and the cursors restart from 0;
* ``gap``: the agent had pruned records the collector never received;
* clock skew: agent ``now`` minus the workstation time at the midpoint of the
  request with the shortest round trip. Record timestamps stay the agent's.

Timeouts and retries (per request, within one cycle): connect and read
timeouts of ``timeout_s`` each; a transient failure (connection reset or
closed without an answer, truncated body, HTTP 500/502/503/504/429) is retried
after 0.2 s and again after 0.5 s, but only while the node's poll stays within
its deadline (``3 × timeout_s`` from its first request). A refused
connection, a timeout or an unusable answer is not retried. A node that keeps
failing is polled less often across cycles: see ``fleetmon.collector.poller``.

Hostile answers (issue 11): what the checks refuse, and the reason strings, are
in :mod:`fleetmon.collector.validate`; the limits in :mod:`fleetmon.collector.limits`.
The client asks for ``gzip`` but inflates the body itself (the session's
``auto_decompress`` is off), a bounded chunk at a time, and stops once the
decompressed answer passes ``MAX_BODY_BYTES`` (16 MiB): a gzip bomb costs a
few MB and one read, not gigabytes. Memory per node in flight is bounded by
``MEMORY_PER_NODE_BYTES`` (160 MiB: body, inflater and the parsed document,
whose size ``MAX_JSON_ITEMS`` bounds), plus the checked records the node's
share of the cycle's record budget allows. JSON is decoded on the event loop:
CPython's decoder holds the GIL, so a thread would not let the loop run
(measured); the body cap bounds that pause to ≈ 0.3 s.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import ssl
import time
import zlib
from dataclasses import dataclass
from urllib.parse import urlsplit
from typing import Any, Awaitable, Callable, TypeVar

import aiohttp

from fleetmon.collector.limits import (
    MAX_ABS_VALUE, MAX_BODY_BYTES, MAX_COMPRESSED_CHUNK, MAX_FUTURE_S, MAX_GPUS_PER_NODE, MAX_MESSAGE_CHARS, MAX_SEQ,
)
from fleetmon.collector.validate import (
    INVENTORY_NUMERIC, INVENTORY_TEXT, MINUTE_NUMERIC, NODE_NUMERIC, NODE_TEXT, SAMPLE_NUMERIC, BadAnswer, Spec,
    check_body, check_gpu_count, check_poll_uuids, check_record, check_text, check_unique_uuids, check_values,
    record_where, spec,
)
from fleetmon.collector.sources import FetchFailed, parse_body, run_ssh, source_poll
from fleetmon.i18n import N_, Text, reason_of
from fleetmon.os_reasons import os_reason
from fleetmon.records import (
    WIRE_SCHEMAS_READ, Event, GpuInventory, GpuMinute, GpuSample, NodeInfo, NodePoll, vendor_defaults,
)
from fleetmon.sources import SourceError, SourceKind, SourceSpec, Transport, answer_name, source_of, source_type
from fleetmon.sources.ssh_tools import AUTO, remote_command
from fleetmon.sources.capture import Capture
from fleetmon.text import one_line, printable

__all__ = ["BadAnswer", "CYCLE_RECORD_BUDGET", "MAX_BODY_BYTES", "Target", "make_ssl_context", "poll_all",
           "poll_node"]

PAGE_LIMIT = 2000
"""Records asked for per page (the agent serves at most 5000)."""
MAX_PAGES_PER_POLL = 25
"""Pages of one stream fetched from one node in one cycle."""
CYCLE_RECORD_BUDGET = 40_000
"""Minute records fetched per cycle over the whole fleet (≈ 8 KB of memory each once parsed)."""
MIN_RECORDS_PER_NODE = 32
"""A node's share of the budget never drops below this (a 1,000-node fleet still catches up)."""
RETRY_DELAYS_S = (0.2, 0.5)
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
DEADLINE_FACTOR = 3.0
"""A node's whole poll must finish within DEADLINE_FACTOR × timeout_s."""


T = TypeVar("T")
log = logging.getLogger(__name__)

_READERS = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="fleetmon-read")
"""Where the answers of the sources other than the agent (a dcgm-exporter scrape, nvidia-smi's XML) are
parsed and checked: off the event loop, so that a large scrape never holds the other nodes' requests.
The readers are pure Python that gives up the GIL every few milliseconds (unlike the JSON decoder),
bounded by the per-node limits (``parse_body``); two at a time bound their memory together at
2 × MEMORY_PER_NODE_BYTES. Not the loop's default executor: aiohttp resolves host names there."""


class _Transient(Exception):
    """A failure worth one more try (HTTP 5xx/429)."""


@dataclass(frozen=True, slots=True)
class Target:
    """What the poller needs to reach one node, and where its records stand.

    Attributes:
        name, url, group: the node as the fleet file names it.
        token: bearer token to send, or None.
        minutes_cursor, events_cursor: last sequence numbers already stored.
        buffer_id: identity of the agent buffer the cursors belong to (None: unknown).
        inventory: whether to fetch /v1/node (node description and GPU inventory).
        error: a problem found before any request (unreadable token file, bad TLS
            CA): the poll fails with this message and sends nothing.
        ssh_config: for an ``ssh://`` node, the OpenSSH client config file to use
            (``ssh -F``; the fleet file's ``[fleet] ssh_config``), None: the user's own.
        timeout_s: the node's own request timeout (``[[node]] timeout_s``); None: the fleet's.
        tool: for an ``ssh://`` node, the vendor tool it runs (``[[node]] tool``: ``auto`` or a name of
            :data:`fleetmon.sources.ssh_tools.TOOLS`).
    """

    name: str
    url: str
    group: str | None = None
    token: str | None = None
    minutes_cursor: int = 0
    events_cursor: int = 0
    buffer_id: str | None = None
    inventory: bool = True
    error: str | None = None
    ssh_config: str | None = None
    timeout_s: float | None = None
    tool: str = AUTO


def make_ssl_context(tls_ca: str | None, tls_verify: bool) -> ssl.SSLContext | bool:
    """The ``ssl`` argument for https agents: a CA bundle, default verification, or none.

    Raises:
        OSError, ssl.SSLError: the CA file cannot be read or parsed.
    """
    if not tls_verify:
        return False
    if tls_ca:
        return ssl.create_default_context(cafile=tls_ca)
    return True


# ---------------------------------------------------------------------------
# One request


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


class _Fetcher:
    """Requests of one node poll: headers, retries, deadline, skew samples."""

    def __init__(self, session: aiohttp.ClientSession, target: Target, ssl_ctx: ssl.SSLContext | bool | None,
                 timeout_s: float) -> None:
        self.session = session
        self.target = target
        self.ssl = ssl_ctx if ssl_ctx is not None else True
        self.timeout_s = timeout_s
        # Per request: a node's own timeout_s may differ from the session's (the fleet's).
        self.client_timeout = aiohttp.ClientTimeout(total=None, connect=timeout_s, sock_connect=timeout_s,
                                                    sock_read=timeout_s)
        self.started = time.monotonic()
        self.deadline = self.started + DEADLINE_FACTOR * timeout_s
        self.skew: tuple[float, float] | None = None  # (round trip, skew) of the best request
        self.requests = 0
        self.path = "/v1/node"  # the request in progress, for error messages
        self.headers = {"Accept": "application/json", "Accept-Encoding": "gzip, deflate"}
        if target.token:
            self.headers["Authorization"] = f"Bearer {target.token}"
        self.base = target.url.rstrip("/")

    async def get(self, path: str, *, last: bool = False) -> dict[str, Any]:
        """GET ``path`` and return the checked JSON object, retrying transient failures."""
        self.path = path.split("?")[0]
        return await self._retrying(lambda: self._get_once(path, last=last))

    async def get_body(self, url: str, label: str, accept: str) -> bytes:
        """GET a whole ``url`` (not under the agent's base) and return the body, with the same
        retries, size cap and gzip handling as the agent's requests; ``label`` names it in errors.
        Used by the sources other than the agent (:mod:`fleetmon.collector.sources`)."""
        self.path = label
        headers = {**self.headers, "Accept": accept, "Connection": "close"}

        async def once() -> bytes:
            self.requests += 1
            return await self._body(url, label, headers)

        return await self._retrying(once)

    async def _retrying(self, attempt_once: Callable[[], Awaitable[T]]) -> T:
        attempt = 0
        while True:
            try:
                return await attempt_once()
            except (_Transient, aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError) as exc:
                error: Exception = exc
            except aiohttp.ClientConnectorError:
                raise  # refused / unreachable: the next cycle (with backoff) tries again
            except aiohttp.ClientOSError as exc:  # reset, broken pipe
                error = exc
            if attempt >= len(RETRY_DELAYS_S):
                raise error
            delay = RETRY_DELAYS_S[attempt]
            if time.monotonic() + delay + self.timeout_s > self.deadline:
                raise error
            attempt += 1
            await asyncio.sleep(delay)

    async def _get_once(self, path: str, *, last: bool) -> dict[str, Any]:
        headers = self.headers
        if last:  # free the agent's connection thread now instead of at the end of the cycle
            headers = {**headers, "Connection": "close"}
        self.requests += 1
        sent_wall = time.time()
        sent = time.monotonic()
        body = await self._body(self.base + path, path, headers)
        received = time.monotonic()
        doc = _decode(body, self.path)
        now = doc.get("now")
        # Compared, not math.isfinite(): a huge JSON integer cannot become a float (OverflowError).
        if (type(now) is int or type(now) is float) and -MAX_ABS_VALUE < now < MAX_ABS_VALUE:
            rtt = received - sent
            if self.skew is None or rtt < self.skew[0]:
                self.skew = (rtt, now - (sent_wall + rtt / 2))
        return doc

    async def _body(self, url: str, path: str, headers: dict[str, str]) -> bytes:
        """One GET: the status checked, the body read through :func:`_read_body`."""
        async with self.session.get(url, headers=headers, ssl=self.ssl, allow_redirects=False,
                                    timeout=self.client_timeout) as resp:
            if resp.status == 401:
                raise BadAnswer(Text(N_("{path}: 401 unauthorized: wrong or missing token"), path=path))
            if resp.status != 200:
                text = (await resp.content.read(200)).decode("utf-8", "replace")
                text = " ".join(text.split())[:120]
                msg = (Text(N_("{path}: HTTP {status}: {text}"), path=path, status=resp.status, text=text) if text
                       else Text(N_("{path}: HTTP {status}"), path=path, status=resp.status))
                if resp.status in RETRY_STATUS:
                    raise _Transient(msg)
                raise BadAnswer(msg)
            if resp.content_length is not None and resp.content_length > MAX_BODY_BYTES:
                raise BadAnswer(Text(N_("{path}: answer of {size} bytes is larger than {limit}"), path=path,
                                     size=resp.content_length, limit=MAX_BODY_BYTES))
            return await _read_body(resp, self.path)


def _inflater(resp: aiohttp.ClientResponse, path: str) -> Any:
    """A zlib decompressor for the answer's Content-Encoding, or None for identity."""
    encoding = resp.headers.get("Content-Encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj(zlib.MAX_WBITS)
    raise BadAnswer(Text(N_("{path}: unsupported Content-Encoding {encoding}"), path=path,
                         encoding=repr(encoding[:20])))


def _too_large(path: str, inflated: bool) -> Text:
    return (Text(N_("{path}: answer larger than {limit} bytes after decompression"), path=path,
                 limit=f"{MAX_BODY_BYTES:,}") if inflated
            else Text(N_("{path}: answer larger than {limit} bytes"), path=path, limit=f"{MAX_BODY_BYTES:,}"))


async def _read_body(resp: aiohttp.ClientResponse, path: str) -> bytes:
    """The whole answer, inflated here a bounded chunk at a time, never past MAX_BODY_BYTES.

    Raises:
        BadAnswer: too large (after decompression), not valid gzip, or cut short.
        aiohttp.ClientPayloadError: the connection ended before Content-Length.
    """
    inflater = _inflater(resp, path)
    chunks: list[bytes] = []
    size = 0
    try:
        while chunk := await resp.content.read(MAX_COMPRESSED_CHUNK):
            if inflater is not None:
                # max_length: never more than one byte past the cap, whatever the ratio
                chunk = inflater.decompress(chunk, MAX_BODY_BYTES - size + 1)
                if inflater.unconsumed_tail:
                    raise BadAnswer(_too_large(path, inflated=True))
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise BadAnswer(_too_large(path, inflated=inflater is not None))
            chunks.append(chunk)
        if inflater is not None:
            if not inflater.eof:
                raise BadAnswer(Text(N_("{path}: truncated compressed answer"), path=path))
            chunks.append(inflater.flush())
    except zlib.error as exc:
        raise BadAnswer(Text(N_("{path}: not valid {encoding} data ({reason})"), path=path,
                             encoding=resp.headers.get("Content-Encoding", "")[:20], reason=_first_line(exc))) from None
    return b"".join(chunks)


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)  # NaN and Infinity are not JSON


def _decode(body: bytes, path: str) -> dict[str, Any]:
    check_body(body, path)
    try:
        doc = _DECODER.decode(body.decode("utf-8"))
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        if not body.strip():
            raise BadAnswer(Text(N_("{path}: not valid JSON (empty answer)"), path=path)) from exc
        raise BadAnswer(Text(N_("{path}: not valid JSON ({error}: {reason})"), path=path,
                             error=exc.__class__.__name__, reason=str(exc)[:80])) from exc
    except RecursionError:
        raise BadAnswer(Text(N_("{path}: not valid JSON (nested too deeply)"), path=path)) from None
    if not isinstance(doc, dict):
        raise BadAnswer(Text(N_("{path}: expected a JSON object, got {type}"), path=path, type=type(doc).__name__))
    schema = doc.get("schema")
    if schema not in WIRE_SCHEMAS_READ or isinstance(schema, bool):
        raise BadAnswer(Text(N_("{path}: unsupported schema version {schema} (this collector reads {versions})"),
                             path=path, schema=repr(schema)[:20],
                             versions=", ".join(map(str, sorted(WIRE_SCHEMAS_READ)))))
    check_text(doc, body, path)
    return doc


# ---------------------------------------------------------------------------
# Validation: plain code, one clear line per problem


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _need(doc: dict[str, Any], key: str, typ: type, where: str) -> Any:
    value = doc.get(key)
    if not isinstance(value, typ):
        raise BadAnswer(Text(N_("{where}: field {key} missing or of the wrong type"), where=where, key=repr(key)))
    return value


_NODE_SPEC = spec(hostname="str", agent_version="str", values="dict?", status="dict?", xid_source="str?",
                  started_at="ts?")
_INVENTORY_SPEC = spec(uuid="uuid", index="index", name="str", values="dict?", status="dict?", state="str?")
_SAMPLE_SPEC = spec(ts="ts", uuid="uuid", index="index", values="dict?", status="dict?", state="str?")
_MINUTE_SPEC = spec(seq="seq", ts="tsint", uuid="uuid", index="index", n="n", values="dict?", status="dict?",
                    state="str?")
_EVENT_SPEC = spec(seq="seq", ts="ts", kind="str", uuid="uuid?", pci_bus_id="str?", code="code?",
                   message="msg?", data="dict?")
_STREAM_VALUES = {"/v1/minutes": MINUTE_NUMERIC}


def _ts_max() -> float:
    """Latest record timestamp accepted now (the collector's clock + MAX_FUTURE_S)."""
    return time.time() + MAX_FUTURE_S


def parse_node(doc: dict[str, Any]) -> tuple[NodeInfo, list[GpuInventory]]:
    """Node description and GPU inventory from a /v1/node answer."""
    node = _need(doc, "node", dict, "/v1/node")
    gpus = _need(doc, "gpus", list, "/v1/node")
    ts_max = _ts_max()
    check_record(node, "/v1/node", _NODE_SPEC, ts_max, NODE_NUMERIC, NODE_TEXT)
    check_gpu_count(len(gpus), "/v1/node")
    for i, g in enumerate(gpus):
        check_record(g, f"/v1/node gpus[{i}]", _INVENTORY_SPEC, ts_max, INVENTORY_NUMERIC, INVENTORY_TEXT)
    check_unique_uuids([g["uuid"] for g in gpus], "/v1/node")
    return vendor_defaults(NodeInfo.from_dict(node), [GpuInventory.from_dict(g) for g in gpus])


def parse_latest(doc: dict[str, Any]) -> list[GpuSample]:
    """The latest samples from a /v1/latest answer."""
    samples = _need(doc, "samples", list, "/v1/latest")
    check_gpu_count(len(samples), "/v1/latest")
    ts_max = _ts_max()
    for s in samples:
        check_record(s, "/v1/latest", _SAMPLE_SPEC, ts_max, SAMPLE_NUMERIC)
    check_unique_uuids([s["uuid"] for s in samples], "/v1/latest")
    return [GpuSample(ts=s["ts"], uuid=s["uuid"], index=s["index"], values=s.get("values") or {},
                      status=s.get("status") or {}, state=s.get("state") or "ok") for s in samples]


# Checked records become dataclasses directly: from_dict looks up the fields of
# the class for every record, a quarter of a steady cycle's parsing time.

def _minute(r: dict[str, Any]) -> GpuMinute:
    return GpuMinute(seq=r["seq"], ts=r["ts"], uuid=r["uuid"], index=r["index"], n=r["n"],
                     values=r.get("values") or {}, status=r.get("status") or {}, state=r.get("state") or "ok")


def _event(r: dict[str, Any]) -> Event:
    message = r.get("message") or ""
    if len(message) > MAX_MESSAGE_CHARS:  # cut, not rejected: the event is worth keeping
        message = message[:MAX_MESSAGE_CHARS - 1] + "…"
    return Event(seq=r["seq"], ts=r["ts"], kind=r["kind"], uuid=r.get("uuid"), pci_bus_id=r.get("pci_bus_id"),
                 code=r.get("code"), message=message, data=r.get("data") or {})


@dataclass(slots=True)
class _Stream:
    """What one stream (minutes or events) of one node gave in this poll."""

    records: list[dict[str, Any]]
    cursor: int
    gap: bool
    more: bool
    buffer_id: str | None


def _page_header(doc: dict[str, Any], path: str) -> tuple[int | None, int | None, str | None]:
    first, last, bid = doc.get("first_seq"), doc.get("last_seq"), doc.get("buffer_id")
    if first is not None and not _is_int(first) or last is not None and not _is_int(last):
        raise BadAnswer(Text(N_("{path}: first_seq/last_seq of the wrong type"), path=path))
    if first is not None and not 0 <= first <= MAX_SEQ or last is not None and not 0 <= last <= MAX_SEQ:
        raise BadAnswer(Text(N_("{path}: first_seq/last_seq out of range (allowed 0..{limit})"), path=path,
                             limit=MAX_SEQ))
    if bid is not None and not isinstance(bid, str):
        raise BadAnswer(Text(N_("{path}: buffer_id of the wrong type"), path=path))
    return first, last, bid


async def _stream(fetch: _Fetcher, path: str, after: int, known_buffer: str | None, budget: int,
                  fields: Spec, last_request: bool) -> _Stream:
    """Fetch the records of ``path`` after ``after``, page by page, within ``budget`` records."""
    out: list[dict[str, Any]] = []
    cursor = after
    gap = False
    more = False
    buffer_id: str | None = None
    restarted = False
    pages = 0
    while True:
        limit = max(1, min(PAGE_LIMIT, budget - len(out)))
        doc = await fetch.get(f"{path}?after={cursor}&limit={limit}", last=last_request)
        pages += 1
        first, last_seq, bid = _page_header(doc, path)
        if buffer_id is None:
            buffer_id = bid
        elif bid != buffer_id:
            raise BadAnswer(Text(N_("{path}: the agent's buffer changed during the poll"), path=path))
        if not out and not restarted and cursor > 0 and (
                known_buffer is not None and bid is not None and bid != known_buffer
                or last_seq is not None and last_seq < cursor):
            # A new buffer (agent reinstalled, buffer file lost): its numbers start over.
            restarted = True
            cursor = 0
            continue
        if not out and (doc.get("gap") is True or first is not None and first > cursor + 1):
            gap = True
        records = _need(doc, "records", list, path)
        prev = cursor
        ts_max = _ts_max()
        numeric = _STREAM_VALUES.get(path, frozenset())
        for r in records:
            check_record(r, record_where(path, r), fields, ts_max, numeric, keys=path != "/v1/minutes")
            if r["seq"] <= prev:
                raise BadAnswer(Text(N_("{path}: sequence numbers out of order"), path=path))
            prev = r["seq"]
        out.extend(records)
        cursor = prev
        more = bool(doc.get("more")) and bool(records)
        if not more:
            break
        if len(out) >= budget or pages >= MAX_PAGES_PER_POLL or time.monotonic() - fetch.started > fetch.timeout_s:
            break  # the rest next cycle
    return _Stream(out, cursor, gap, more, buffer_id)


# ---------------------------------------------------------------------------
# One node


async def poll_node(session: aiohttp.ClientSession, target: Target, *,
                    ssl_ctx: ssl.SSLContext | bool | None = None, timeout_s: float = 5.0,
                    record_budget: int = MAX_PAGES_PER_POLL * PAGE_LIMIT,
                    backlog: set[str] | None = None, stats: dict[str, int] | None = None) -> NodePoll:
    """Poll one agent: inventory (if asked), latest samples, and buffered records after the cursors.

    Never raises for anything the agent or the network does: such failures
    come back as ``NodePoll(ok=False, error=…)``. ``backlog`` (if given)
    receives the node's name when it holds more records than this poll took.
    """
    now = time.time()
    t0 = time.monotonic()
    if target.error:
        return _failed(target, now, t0, target.error)
    try:
        source = source_of(target.url)
    except SourceError as exc:
        return _failed(target, now, t0, reason_of(exc))
    fetch = _Fetcher(session, target, ssl_ctx, timeout_s)
    try:
        if source_type(source.kind).transport is not Transport.AGENT:
            return await _poll_source(fetch, target, source, now, t0, timeout_s)
        return await _poll(fetch, target, now, t0, timeout_s, record_budget, backlog)
    except Exception as exc:  # a node's failure, of whatever kind, is that node's alone (issue 20)
        return _unexpected(target, now, t0, exc, fetch.path)
    finally:
        if stats is not None:
            stats["requests"] = stats.get("requests", 0) + fetch.requests


async def _poll_source(fetch: _Fetcher, target: Target, source: SourceSpec, now: float, t0: float,
                       timeout_s: float) -> NodePoll:
    """Poll a source that is not the agent (:mod:`fleetmon.collector.sources`): one reading by the registry
    entry's transport and parser, then the agent's checks."""
    deadline_s = DEADLINE_FACTOR * timeout_s
    kind = source_type(source.kind)
    try:
        if kind.transport is Transport.HTTP:
            async with asyncio.timeout(deadline_s):
                body = await fetch.get_body(source.url, urlsplit(source.url).path or "/", kind.accept)
        elif kind.transport is Transport.SSH:
            command = remote_command(target.tool)
            fetch.path = "ssh"
            body = await run_ssh(source, timeout_s, deadline_s, target.ssh_config, command)
        else:
            return _failed(target, now, t0, kind.not_polled or Text(N_("{kind}: not polled"), kind=source.kind.value))
        where = answer_name(source.kind, target.tool, body[:256])
        fetch.path = where
        capture = await asyncio.get_running_loop().run_in_executor(_READERS, _read_capture, source.kind, body,
                                                                   where, target.tool)
    except FetchFailed as exc:
        return _failed(target, now, t0, reason_of(exc))
    except SourceError as exc:
        return _failed(target, now, t0, reason_of(exc))
    except _HTTP_FAILURES as exc:
        return _failed(target, now, t0, _failure_text(exc, fetch, t0, timeout_s))
    if not capture.gpus:
        return _failed(target, now, t0, Text(N_("{kind}: the answer describes no GPU"), kind=source.kind.value))
    return source_poll(capture, target.name, target.url, target.group, now, (time.monotonic() - t0) * 1000)


def _read_capture(kind: SourceKind, body: bytes, where: str, tool: str = AUTO) -> Capture:
    """Parse and check one source's answer (in a :data:`_READERS` thread)."""
    capture = parse_body(kind, body, tool)
    _check_capture(capture, where)
    return capture


def _check_capture(capture: Capture, where: str) -> None:
    """A source's reading passes the same checks as an agent's answer (sizes, ranges, text), on its wire form."""
    ts_max = _ts_max()

    def wire(rec: Any) -> dict[str, Any]:  # as JSON would carry it: enums as their strings
        return json.loads(json.dumps(rec.to_dict()))  # type: ignore[no-any-return]

    check_record(wire(capture.info), where, _NODE_SPEC, ts_max, NODE_NUMERIC, NODE_TEXT)
    check_gpu_count(len(capture.gpus), where)
    for g in capture.gpus:
        rec = wire(g)
        # MIG instances (the parsers' only nested value): a short list of flat records, checked one by one.
        migs = (rec.get("values") or {}).pop("mig_devices", None) or []
        if not isinstance(migs, list) or len(migs) > MAX_GPUS_PER_NODE:
            raise BadAnswer(Text(N_("{where}: mig_devices of the wrong type or too many"), where=where))
        for m in migs:
            if not isinstance(m, dict):
                raise BadAnswer(Text(N_("{where}: mig_devices entry of the wrong type"), where=where))
            check_values(m, where, "mig_devices")
        check_record(rec, where, _INVENTORY_SPEC, ts_max, INVENTORY_NUMERIC, INVENTORY_TEXT)
    for s in capture.samples:
        check_record(wire(s), where, _SAMPLE_SPEC, ts_max, SAMPLE_NUMERIC)
    check_unique_uuids([g.uuid for g in capture.gpus], where)


async def _poll(fetch: _Fetcher, target: Target, now: float, t0: float, timeout_s: float, record_budget: int,
                backlog: set[str] | None) -> NodePoll:
    try:
        async with asyncio.timeout(DEADLINE_FACTOR * timeout_s):
            info: NodeInfo | None = None
            gpus: list[GpuInventory] = []
            if target.inventory:
                info, gpus = parse_node(await fetch.get("/v1/node"))
            latest = parse_latest(await fetch.get("/v1/latest"))
            minutes = await _stream(fetch, "/v1/minutes", target.minutes_cursor, target.buffer_id,
                                    max(1, record_budget), _MINUTE_SPEC, last_request=False)
            events = await _stream(fetch, "/v1/events", target.events_cursor, target.buffer_id,
                                   PAGE_LIMIT * 2, _EVENT_SPEC, last_request=True)
    except _HTTP_FAILURES as exc:
        return _failed(target, now, t0, _failure_text(exc, fetch, t0, timeout_s))
    try:
        check_poll_uuids({r["uuid"] for r in minutes.records} | {r["uuid"] for r in events.records if r.get("uuid")},
                         "/v1/minutes and /v1/events")
    except BadAnswer as exc:
        return _failed(target, now, t0, reason_of(exc))
    ids = {b for b in (minutes.buffer_id, events.buffer_id) if b is not None}
    if len(ids) > 1:
        return _failed(target, now, t0, Text(N_("the agent's buffer changed during the poll")))
    if backlog is not None and (minutes.more or events.more):
        backlog.add(target.name)
    return NodePoll(
        node=target.name, url=target.url, group=target.group, ts=now, ok=True,
        duration_ms=(time.monotonic() - t0) * 1000, info=info, gpus=gpus, latest=latest,
        minutes=[_minute(r) for r in minutes.records],
        events=[_event(r) for r in events.records],
        minutes_cursor=minutes.cursor, events_cursor=events.cursor,
        skew_s=None if fetch.skew is None else round(fetch.skew[1], 3),
        gap=minutes.gap or events.gap, buffer_id=ids.pop() if ids else None,
    )


_HTTP_FAILURES = (BadAnswer, _Transient, aiohttp.ClientError, OSError, ValueError, UnicodeError)
"""What a poll over HTTP may raise for something the node or the network did (TimeoutError is an OSError)."""


def _failure_text(exc: BaseException, fetch: _Fetcher, t0: float, timeout_s: float) -> str:
    """The node's one-line reason for a failed HTTP poll (an :class:`~fleetmon.i18n.Text`: said in the reader's
    language where it is shown; the English is stored as before)."""
    path = fetch.path
    if isinstance(exc, (BadAnswer, _Transient)):
        return reason_of(exc)
    if isinstance(exc, TimeoutError):
        return Text(N_("{path}: {reason}"), path=path, reason=_timeout_text(t0, timeout_s))
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return Text(N_("TLS: the agent's certificate is not trusted: {reason}"),
                    reason=_first_line(exc.certificate_error))
    if isinstance(exc, aiohttp.ClientConnectorError):
        return Text(N_("cannot connect: {reason}"), reason=_os_reason(exc))
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return Text(N_("{path}: the agent closed the connection without an answer"), path=path)
    if isinstance(exc, aiohttp.ClientPayloadError):
        return Text(N_("{path}: truncated answer ({reason})"), path=path, reason=_first_line(exc))
    if isinstance(exc, aiohttp.ClientResponseError):  # not HTTP at all (another service on the port)
        return Text(N_("{path}: not an HTTP answer (is another service on this port?)"), path=path)
    if isinstance(exc, aiohttp.ClientError):
        return Text(N_("{path}: {error}: {reason}"), path=path, error=exc.__class__.__name__,
                    reason=_first_line(exc))
    return Text(N_("{error}: {reason}"), error=exc.__class__.__name__, reason=_first_line(exc))


def _timeout_text(t0: float, timeout_s: float) -> Text:
    return Text(N_("timed out after {seconds} s (timeout_s = {timeout})"), seconds=f"{time.monotonic() - t0:.1f}",
                timeout=f"{timeout_s:g}")


def _os_reason(exc: aiohttp.ClientConnectorError) -> str:
    """Why a connection failed: the OS's words for its error number (the C library's English; said in the reader's
    language for the usual ones, :data:`fleetmon.os_reasons.OS_REASONS`), with the address; else the error's first line."""
    os_error = exc.os_error
    if os_error.errno:
        return Text(N_("{reason} ({host}:{port})"), reason=os_reason(os_error.errno),
                    host=exc.host, port=exc.port)
    return _first_line(os_error)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else exc.__class__.__name__


def _failed(target: Target, now: float, t0: float, error: str) -> NodePoll:
    return NodePoll(node=target.name, url=target.url, group=target.group, ts=now, ok=False,
                    error=one_line(error, 500), duration_ms=(time.monotonic() - t0) * 1000)


def _unexpected(target: Target, now: float, t0: float, exc: Exception, where: str) -> NodePoll:
    """The failed poll of a node whose answer raised what no check expected (a parser's bug, a value no
    check foresaw): its one-line reason; the traceback only in the debug log."""
    log.debug("node %s: unexpected error", printable(target.name, 100), exc_info=exc)
    return _failed(target, now, t0, Text(N_("{where}: the answer could not be read ({error}: {reason})"),
                                         where=where, error=exc.__class__.__name__, reason=_first_line(exc)))


# ---------------------------------------------------------------------------
# The fleet


async def poll_all(targets: list[Target], *, concurrency: int = 64, timeout_s: float = 5.0,
                   ssl_ctx: ssl.SSLContext | bool | None = None, record_budget: int = CYCLE_RECORD_BUDGET,
                   backlog: set[str] | None = None, stats: dict[str, int] | None = None) -> list[NodePoll]:
    """Poll every target concurrently (at most ``concurrency`` at once); results in target order.

    ``record_budget`` bounds the minute records fetched over the whole fleet
    in this call (each node gets an equal share, at least
    :data:`MIN_RECORDS_PER_NODE`); nodes left with more are added to ``backlog``.
    ``stats`` (if given) accumulates ``requests`` (HTTP requests sent).
    """
    if not targets:
        return []
    timeout = aiohttp.ClientTimeout(total=None, connect=timeout_s, sock_connect=timeout_s, sock_read=timeout_s)
    # The semaphore is the cap; the connector itself is unlimited so that a
    # node's keep-alive connection is never queued behind another node's.
    connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, ttl_dns_cache=300)
    sem = asyncio.Semaphore(max(1, concurrency))
    share = min(MAX_PAGES_PER_POLL * PAGE_LIMIT, max(MIN_RECORDS_PER_NODE, record_budget // len(targets)))
    # auto_decompress off: _read_body inflates with a cap (a gzip bomb must not fill memory).
    async with aiohttp.ClientSession(timeout=timeout, connector=connector, raise_for_status=False,
                                     auto_decompress=False) as session:
        async def one(t: Target) -> NodePoll:
            async with sem:
                try:
                    return await poll_node(session, t, ssl_ctx=ssl_ctx,
                                           timeout_s=t.timeout_s if t.timeout_s is not None else timeout_s,
                                           record_budget=share, backlog=backlog, stats=stats)
                except Exception as exc:  # poll_node keeps its own; nothing of one node may stop the gather
                    return _unexpected(t, time.time(), time.monotonic(), exc, "poll")

        return list(await asyncio.gather(*(one(t) for t in targets)))
