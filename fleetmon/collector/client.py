"""Fetching one node's agent over HTTP and checking what it sends.

Everything the agent answers is validated with plain code before it becomes
records: a wrong schema version, truncated JSON, garbage or a timeout makes
the poll fail with a one-line reason, and nothing of it reaches storage.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from dataclasses import dataclass
from typing import Any

import aiohttp

from fleetmon.records import WIRE_SCHEMA, Event, GpuInventory, GpuMinute, GpuSample, NodeInfo, NodePoll

MAX_PAGES_PER_POLL = 50
PAGE_LIMIT = 2000
MAX_BODY_BYTES = 64 * 1024 * 1024


class BadAnswer(Exception):
    """The agent answered something unusable."""


@dataclass(frozen=True, slots=True)
class Target:
    """What the poller needs to reach one node."""

    name: str
    url: str
    group: str | None = None
    token: str | None = None
    minutes_cursor: int = 0
    events_cursor: int = 0


async def _get(session: aiohttp.ClientSession, target: Target, path: str,
               ssl_ctx: ssl.SSLContext | bool | None) -> dict[str, Any]:
    headers = {"Accept": "application/json"}
    if target.token:
        headers["Authorization"] = f"Bearer {target.token}"
    url = target.url.rstrip("/") + path
    async with session.get(url, headers=headers, ssl=ssl_ctx if ssl_ctx is not None else True) as resp:
        if resp.status == 401:
            raise BadAnswer("401 unauthorized: wrong or missing token")
        if resp.status != 200:
            text = (await resp.content.read(300)).decode("utf-8", "replace")
            raise BadAnswer(f"HTTP {resp.status} from {path}: {text.strip()[:200]}")
        body = await resp.content.read(MAX_BODY_BYTES + 1)
    if len(body) > MAX_BODY_BYTES:
        raise BadAnswer(f"{path}: answer larger than {MAX_BODY_BYTES} bytes")
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadAnswer(f"{path}: not valid JSON ({exc.__class__.__name__}: {str(exc)[:80]})") from exc
    if not isinstance(doc, dict):
        raise BadAnswer(f"{path}: expected a JSON object")
    schema = doc.get("schema")
    if schema != WIRE_SCHEMA:
        raise BadAnswer(f"{path}: unsupported schema version {schema!r} (this collector speaks {WIRE_SCHEMA})")
    return doc


def _need(doc: dict[str, Any], key: str, typ: type | tuple[type, ...], where: str) -> Any:
    value = doc.get(key)
    if not isinstance(value, typ):
        raise BadAnswer(f"{where}: field {key!r} missing or of the wrong type")
    return value


def parse_node(doc: dict[str, Any]) -> tuple[NodeInfo, list[GpuInventory]]:
    node = _need(doc, "node", dict, "/v1/node")
    gpus = _need(doc, "gpus", list, "/v1/node")
    try:
        info = NodeInfo.from_dict(node)
        inv = []
        for g in gpus:
            item = GpuInventory.from_dict(g)
            if not isinstance(item.uuid, str) or not isinstance(item.index, int):
                raise BadAnswer("/v1/node: a GPU without uuid or index")
            inv.append(item)
    except TypeError as exc:
        raise BadAnswer(f"/v1/node: malformed record ({exc})") from exc
    if not isinstance(info.hostname, str) or not isinstance(info.values, dict):
        raise BadAnswer("/v1/node: malformed node record")
    return info, inv


def parse_latest(doc: dict[str, Any]) -> list[GpuSample]:
    samples = _need(doc, "samples", list, "/v1/latest")
    out = []
    try:
        for s in samples:
            item = GpuSample.from_dict(s)
            if not isinstance(item.uuid, str) or not isinstance(item.values, dict):
                raise BadAnswer("/v1/latest: malformed sample")
            out.append(item)
    except TypeError as exc:
        raise BadAnswer(f"/v1/latest: malformed sample ({exc})") from exc
    return out


def _parse_page(doc: dict[str, Any], path: str, after: int) -> tuple[list[dict[str, Any]], int, bool, bool]:
    records = _need(doc, "records", list, path)
    last = -1
    for r in records:
        if not isinstance(r, dict) or not isinstance(r.get("seq"), int):
            raise BadAnswer(f"{path}: a record without a sequence number")
        if r["seq"] <= max(after, last):
            raise BadAnswer(f"{path}: sequence numbers out of order")
        last = r["seq"]
    nxt = doc.get("next")
    more = bool(doc.get("more"))
    gap = bool(doc.get("gap"))
    if not isinstance(nxt, int):
        raise BadAnswer(f"{path}: field 'next' missing")
    return records, nxt, more, gap


async def _pages(session: aiohttp.ClientSession, target: Target, path: str, after: int,
                 ssl_ctx: ssl.SSLContext | bool | None) -> tuple[list[dict[str, Any]], int, bool]:
    out: list[dict[str, Any]] = []
    gap = False
    cursor = after
    for _ in range(MAX_PAGES_PER_POLL):
        doc = await _get(session, target, f"{path}?after={cursor}&limit={PAGE_LIMIT}", ssl_ctx)
        records, nxt, more, page_gap = _parse_page(doc, path, cursor)
        gap = gap or page_gap
        out.extend(records)
        cursor = max(cursor, nxt)
        if not more or not records:
            break
    return out, cursor, gap


async def poll_node(session: aiohttp.ClientSession, target: Target, *,
                    ssl_ctx: ssl.SSLContext | bool | None = None) -> NodePoll:
    """Poll one agent: node, latest samples, and buffered minutes/events after the cursors."""
    t0 = time.monotonic()
    now = time.time()
    try:
        doc = await _get(session, target, "/v1/node", ssl_ctx)
        t_mid = (now + time.time()) / 2
        info, gpus = parse_node(doc)
        skew = doc.get("now") - t_mid if isinstance(doc.get("now"), (int, float)) else None
        latest = parse_latest(await _get(session, target, "/v1/latest", ssl_ctx))
        minutes_raw, m_cursor, gap1 = await _pages(session, target, "/v1/minutes", target.minutes_cursor, ssl_ctx)
        events_raw, e_cursor, gap2 = await _pages(session, target, "/v1/events", target.events_cursor, ssl_ctx)
        try:
            minutes = [GpuMinute.from_dict(r) for r in minutes_raw]
            events = [Event.from_dict(r) for r in events_raw]
        except TypeError as exc:
            raise BadAnswer(f"malformed record ({exc})") from exc
        for m in minutes:
            if not isinstance(m.ts, int) or not isinstance(m.uuid, str) or not isinstance(m.values, dict):
                raise BadAnswer("/v1/minutes: malformed minute record")
    except BadAnswer as exc:
        return _failed(target, now, t0, str(exc))
    except asyncio.TimeoutError:
        return _failed(target, now, t0, "timed out")
    except aiohttp.ClientConnectorError as exc:
        return _failed(target, now, t0, f"cannot connect: {exc.os_error.strerror if exc.os_error else exc}")
    except aiohttp.ClientPayloadError as exc:
        return _failed(target, now, t0, f"truncated answer: {exc}")
    except aiohttp.ClientError as exc:
        return _failed(target, now, t0, f"{exc.__class__.__name__}: {exc}")
    except (OSError, ValueError) as exc:
        return _failed(target, now, t0, f"{exc.__class__.__name__}: {exc}")
    return NodePoll(node=target.name, url=target.url, group=target.group, ts=now, ok=True,
                    duration_ms=(time.monotonic() - t0) * 1000, info=info, gpus=gpus, latest=latest,
                    minutes=minutes, events=events, minutes_cursor=m_cursor, events_cursor=e_cursor,
                    skew_s=None if skew is None else round(skew, 3), gap=gap1 or gap2)


def _failed(target: Target, now: float, t0: float, error: str) -> NodePoll:
    return NodePoll(node=target.name, url=target.url, group=target.group, ts=now, ok=False,
                    error=error[:500], duration_ms=(time.monotonic() - t0) * 1000)


async def poll_all(targets: list[Target], *, concurrency: int = 64, timeout_s: float = 5.0,
                   ssl_ctx: ssl.SSLContext | bool | None = None) -> list[NodePoll]:
    """Poll every target concurrently (at most ``concurrency`` at once)."""
    timeout = aiohttp.ClientTimeout(total=timeout_s * 4, connect=timeout_s, sock_read=timeout_s)
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=0, force_close=False)
    sem = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        async def one(t: Target) -> NodePoll:
            async with sem:
                try:
                    return await asyncio.wait_for(poll_node(session, t, ssl_ctx=ssl_ctx), timeout_s * 6)
                except asyncio.TimeoutError:
                    return _failed(t, time.time(), time.monotonic(), "timed out")
        return list(await asyncio.gather(*(one(t) for t in targets)))
