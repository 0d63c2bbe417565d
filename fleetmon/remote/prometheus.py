"""History through a Prometheus-compatible HTTP API (``/api/v1/query_range``).

With ``[history] prometheus = "http://host:9090"`` in the fleet file, the GPU
detail view's windows and the reports' windows are read here instead of from
the local store, so a fleet scraped by a Prometheus (or Thanos, Mimir,
VictoriaMetrics: the same API) can be inspected from any workstation.

The metrics are the ones the agents' ``/metrics`` serves (dcgm-exporter's
names, :data:`fleetmon.fields.CATALOG` ``Field.prom``); a series belongs to a
GPU by its ``UUID`` label. Devices of other vendors (issue 23) have no
``DCGM_FI_*`` series: each query also reads the vendor-neutral family of the
field (:data:`fleetmon.agent.prom.NEUTRAL_METRICS`, ``fleetmon_gpu_*`` with a
``uuid`` and a ``vendor`` label, in base units, converted back to the
catalog's) with PromQL ``or``, so a GPU's DCGM series win where it has them
and the neutral ones serve the others (and an NVIDIA GPU whose DCGM series
are absent: a scrape config that keeps only ``fleetmon_*``). Each window is read at the step
:func:`step_for` chooses (as :func:`storage.history_window.resolution_for`
picks the store's table: a minute up to 36 h, an hour up to 120 days, a day
beyond), and mapped back to the keys the plots and the rules use:

* gauges: ``<field>_mean`` / ``_min`` / ``_max`` per step
  (``avg_over_time`` / ``min_over_time`` / ``max_over_time``);
* counters and states: the last value of the step (``last_over_time``);
* ``n``: the scrapes in the step; ``lost``: the minutes the GPU was lost
  (``fleetmon_gpu_lost``).

What Prometheus does not hold (a metric nobody scraped; the agent's per-minute
throttle counts, busy minutes and the PCIe link under load, which only the
agent's own minute records carry) is missing (None), never zero: the rules and
plots treat it as "no data". A point is stamped with the start of its step,
as a stored bucket is.

Reads are bounded: each request has a deadline (connect to last byte, not per
read), a window's requests one together (:data:`WINDOW_TIMEOUT_S`), an answer
is read up to 64 MiB and walked in place (:mod:`fleetmon.remote.answer`: at
most :data:`MAX_SERIES` series, points only on the requested step grid inside
the window, :data:`MAX_VALUES` points per window read). What an answer held
that was not kept is counted and logged as a warning; every failure is a
:class:`PrometheusError` with one line that says which Prometheus and why.
"""

from __future__ import annotations

import http.client
import logging
import math
import re
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleetmon.agent.prom import NEUTRAL_METRICS, Neutral
from fleetmon.fields import DEFAULT_VENDOR, FIELDS
from fleetmon.fleet.validate import is_node_name
from fleetmon.os_reasons import OS_REASONS
from fleetmon.i18n import N_, Text
from fleetmon.remote.answer import (MAX_SERIES, MAX_VALUES, Budget, Drops, Grid, PrometheusError, Series, error_text,
                                    parse_answer)
from fleetmon.text import printable
from storage.rows import GpuRow, HistoryWindow, NodeRow

__all__ = [
    "GAUGE_STATS",
    "GpuSeries",
    "MAX_SERIES",
    "MAX_VALUES",
    "PromClient",
    "PrometheusError",
    "detail_window",
    "fleet_gpus",
    "fleet_telemetry",
    "recorded",
    "metric_of",
    "step_for",
]

log = logging.getLogger(__name__)

HOUR_S = 3600
DAY_S = 86400
MAX_POINTS = 11_000
"""Prometheus refuses a range query of more than 11,000 points per series."""

GAUGE_STATS: tuple[tuple[str, str], ...] = (("mean", "avg"), ("min", "min"), ("max", "max"))
"""(key suffix, PromQL aggregation) of a gauge's per-step statistics."""

LOST_METRIC = "fleetmon_gpu_lost"
COUNT_METRIC = "DCGM_FI_DEV_POWER_USAGE"
"""The metric whose scrapes per step give ``n`` (every GPU that answers has a power reading)."""
IDENTITY_LABELS = ("UUID", "gpu", "modelName", "Hostname", "hostname", "instance", "pci_bus_id", "node",
                   "fleetmon_node", "DCGM_FI_DRIVER_VERSION")
"""Labels a GPU's identity is read from (``Hostname`` until dcgm-exporter 3.3, ``hostname`` after)."""
NEUTRAL_IDENTITY_LABELS = ("UUID", "gpu", "model", "hostname", "instance", "pci_bus_id", "node", "fleetmon_node",
                           "vendor")
"""Labels a GPU's identity is read from on the vendor-neutral ``fleetmon_gpu_*`` families (their ``uuid``
renamed ``UUID``)."""
NEUTRAL_OF: dict[str, Neutral] = {n.field: n for n in NEUTRAL_METRICS}
"""Catalog field → its vendor-neutral family."""
NEUTRAL_COUNT = ("fleetmon_gpu_power_watts", "fleetmon_gpu_temperature_celsius")
"""The neutral metrics whose scrapes per step give ``n`` (power, else temperature: an NPU without a power
reading still answers)."""

MAX_INDEX = 1023
"""Largest GPU index taken from a ``gpu`` label (as the collector's ``limits.MAX_INDEX``)."""

WINDOW_TIMEOUT_S = 60.0
"""All the requests of one window read (the detail view's, a report's) end by then."""

_INDEX = re.compile(r"[0-9]{1,4}")


def step_for(span_s: float) -> tuple[str, int]:
    """(resolution, step in s) for a window of ``span_s``: minute up to 36 h, hour up to 120 days, else day.

    Mirrors :func:`storage.history_window.resolution_for`, so a window looks
    the same from either source.
    """
    if span_s <= 36 * HOUR_S:
        return "minute", 60
    if span_s <= 120 * DAY_S:
        return "hour", HOUR_S
    return "day", DAY_S


def metric_of(field: str) -> str | None:
    """The Prometheus metric of a catalog field (None: not exported)."""
    f = FIELDS.get(field)
    return f.prom.name if f is not None and f.prom is not None else None


def _quote(value: str) -> str:
    """A PromQL string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class _Sockets:
    """The sockets of one request, shut down when its deadline passes (a watchdog thread does it).

    urllib's ``timeout`` bounds each read, not the request: a server that sends a byte every 5 s
    kept one read going for minutes. Shutting the socket down ends any read blocked on it, at once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self.expired = False

    def add(self, sock: socket.socket | None) -> None:
        with self._lock:
            if sock is not None:
                self._socks.append(sock)
            if self.expired:
                self._shut()

    def expire(self) -> None:
        with self._lock:
            self.expired = True
            self._shut()

    def _shut(self) -> None:
        for sock in self._socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _opener(watch: _Sockets) -> urllib.request.OpenerDirector:
    """urllib (proxies from the environment, redirects) whose connections register with ``watch``."""

    class Http(http.client.HTTPConnection):
        def connect(self) -> None:
            super().connect()
            watch.add(self.sock)

    class Https(http.client.HTTPSConnection):
        def connect(self) -> None:
            super().connect()
            watch.add(self.sock)

    class HttpHandler(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(Http, req)

    class HttpsHandler(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(Https, req, context=getattr(self, "_context", None))

    return urllib.request.build_opener(HttpHandler(), HttpsHandler())


class PromClient:
    """A Prometheus HTTP API at ``base_url`` (``http://host:9090``, a path prefix allowed).

    Args:
        timeout_s: each request's deadline, from connecting to the answer's last byte (not per read).
        max_bytes: the largest answer read; a bigger one is an error, not a truncation.
    """

    def __init__(self, base_url: str, *, timeout_s: float = 15.0, max_bytes: int = 64 << 20) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = float(timeout_s)
        self.max_bytes = int(max_bytes)
        self.drops = Drops()
        """What the answers held that was not kept (points outside the window, NaN values, …)."""
        self._closed: list[_Sockets] = []
        self._cancelled = threading.Event()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"PromClient({self.base_url!r})"

    @property
    def where(self) -> str:
        return f"Prometheus {printable(self.base_url, 200)}"

    def cancel(self) -> None:
        """End every request in flight now, and refuse new ones (a window read gave up)."""
        self._cancelled.set()
        with self._lock:
            for watch in self._closed:
                watch.expire()

    def _fetch(self, path: str, params: Mapping[str, str], deadline: float | None = None) -> bytearray:
        """The answer's body, read before the deadline and up to ``max_bytes``."""
        where = self.where
        if self._cancelled.is_set():
            raise PrometheusError(Text(N_("{where}: cancelled"), where=where))
        until = time.monotonic() + self.timeout_s
        if deadline is not None:
            until = min(until, deadline)
        remaining = until - time.monotonic()
        if remaining <= 0:
            raise PrometheusError(Text(N_("{where}: no answer within {seconds:g} s"), where=where,
                                       seconds=self.timeout_s))
        watch = _Sockets()
        with self._lock:
            self._closed.append(watch)
        timer = threading.Timer(remaining, watch.expire)
        timer.daemon = True
        timer.start()
        body = urllib.parse.urlencode(params).encode()
        req = urllib.request.Request(f"{self.base_url}{path}", data=body, method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded",
                                              "Accept": "application/json"})
        raw = bytearray()
        status: int | None = None
        reason = ""
        try:
            try:
                resp = _opener(watch).open(req, timeout=min(remaining, self.timeout_s))
            except urllib.error.HTTPError as exc:
                resp, status, reason = exc, exc.code, str(exc.reason)
            with resp:
                while len(raw) <= self.max_bytes:
                    chunk = resp.read1(min(1 << 16, self.max_bytes + 1 - len(raw)))
                    if not chunk:
                        break
                    raw += chunk
        except (OSError, http.client.HTTPException, ValueError) as exc:
            if watch.expired or isinstance(exc, TimeoutError) or isinstance(getattr(exc, "reason", None),
                                                                              TimeoutError):
                raise self._late() from None
            why = getattr(exc, "reason", None) or exc
            raise PrometheusError(Text(N_("{where}: unreachable: {reason}"), where=where,
                                       reason=_os_reason(why))) from None
        finally:
            timer.cancel()
            with self._lock:
                self._closed.remove(watch)
        if watch.expired:
            raise self._late()
        if status is not None:
            detail = printable(error_text(bytes(raw)) or reason, 300)  # the server's own words, as sent
            raise PrometheusError(Text(N_("{where}: HTTP {status}: {detail}"), where=where, status=status,
                                       detail=detail))
        if len(raw) > self.max_bytes:
            raise PrometheusError(Text(N_("{where}: answer larger than {mib} MiB; choose a shorter window"),
                                       where=where, mib=self.max_bytes >> 20))
        if not raw[:64].lstrip()[:1] == b"{":
            raise PrometheusError(Text(N_("{where}: the answer is not JSON (is this a Prometheus API?)"), where=where))
        return raw  # walked in place: no copy (a copy doubled the peak of eight 64 MiB answers in flight)

    def query_range(self, expr: str, start: float, end: float, step: int, *,
                    want: Callable[[dict[str, str]], bool] | None = None, budget: Budget | None = None,
                    deadline: float | None = None) -> list[Series]:
        """Each series of ``expr`` evaluated at ``start, start+step … end``: only its points on that grid.

        ``want`` keeps the series it accepts (by labels); ``budget`` bounds the points kept.
        """
        raw = self._fetch("/api/v1/query_range", {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}",
                                                  "step": str(int(step))}, deadline)
        return parse_answer(raw, where=self.where, kind="matrix", grid=Grid(start, end, step), want=want,
                            budget=budget or Budget(), drops=self.drops, deadline=self._parse_deadline(deadline),
                            cancelled=self._cancelled.is_set)

    def query(self, expr: str, at: float, *, deadline: float | None = None) -> list[tuple[dict[str, str], float]]:
        """(labels, value) of each series of the instant query ``expr`` at ``at`` (series with a ``UUID``)."""
        raw = self._fetch("/api/v1/query", {"query": expr, "time": f"{at:.3f}"}, deadline)
        found = parse_answer(raw, where=self.where, kind="vector", budget=Budget(), drops=self.drops,
                             deadline=self._parse_deadline(deadline), cancelled=self._cancelled.is_set)
        return [(s.labels, s.vs[0]) for s in found if len(s.vs)]

    def _late(self) -> PrometheusError:
        """The error of a request whose deadline passed, or that was cancelled."""
        if self._cancelled.is_set():
            return PrometheusError(Text(N_("{where}: cancelled"), where=self.where))
        return PrometheusError(Text(N_("{where}: no complete answer within {seconds:g} s"), where=self.where,
                                    seconds=self.timeout_s))

    def _parse_deadline(self, deadline: float | None) -> float:
        own = time.monotonic() + self.timeout_s
        return own if deadline is None else min(own, deadline + 1.0)


def _os_reason(why: object) -> str:
    """Why a connection failed, one printable line: ``[Errno 111] Connection refused`` with the OS's usual
    words said in the reader's language; other reasons (a name that does not resolve, TLS) as they are."""
    text = printable(str(why), 200)
    if isinstance(why, OSError) and why.errno in OS_REASONS and text == f"[Errno {why.errno}] {why.strerror}" \
            and why.strerror == OS_REASONS[why.errno]:
        # no words of its own (not in the catalog): the frame of the OS's reason, which is said in the language
        return Text("[Errno {number}] {reason}", number=why.errno, reason=OS_REASONS[why.errno])
    return text


# -- which query gives which key ---------------------------------------------------------------


@dataclass(frozen=True)
class _Key:
    key: str
    expr: str  # with {sel} for the label selector and {w} for the step's range
    scale: float = 1.0
    integer: bool = False


def _neutral(metric: str, agg: str, over: str, extra: Sequence[tuple[str, str]] = (), scale: float = 1.0) -> str:
    """``agg by (UUID)`` of a vendor-neutral family, its ``uuid`` label renamed ``UUID``, in the catalog's unit.

    ``{usel}`` stands for the GPU's matcher (``,uuid="…"``, or nothing for the whole fleet). ``vendor!=""``
    keeps the series a non-NVIDIA device's ``fleetmon_gpu_lost`` has from NVIDIA's (which carry ``UUID``).
    """
    matchers = 'vendor!=""' + "".join(f",{k}={_quote(v)}" for k, v in extra) + "{usel}"
    inner = f'label_replace({over}({metric}{{{matchers}}}[{{w}}]), "UUID", "$1", "uuid", "(.+)")'
    out = f"{agg} by (UUID) ({inner})"
    return out if scale == 1.0 else f"({out}) / {scale!r}"


def _keys_for(fields: Iterable[str], step: int) -> list[_Key]:
    """The queries behind ``fields`` (field names; ``n`` and ``lost`` for the counts): each field's DCGM
    metric ``or`` its vendor-neutral family (``{sel}``: the DCGM selector, ``{usel}``: the neutral one)."""
    out: list[_Key] = []
    for name in fields:
        if name == "n":
            out.append(_Key("n", " or ".join([f"sum by (UUID) (count_over_time({COUNT_METRIC}{{sel}}[{{w}}]))"] + [
                _neutral(m, "sum", "count_over_time") for m in NEUTRAL_COUNT]), integer=True))
            continue
        if name == "lost":
            out.append(_Key("lost", f"max by (UUID) (avg_over_time({LOST_METRIC}{{sel}}[{{w}}])) or "
                            + _neutral(LOST_METRIC, "max", "avg_over_time"), scale=step / 60, integer=True))
            continue
        f = FIELDS.get(name)
        metric = metric_of(name)
        if f is None or metric is None:
            continue  # not in Prometheus (thr_* counts, status): missing
        n = NEUTRAL_OF.get(name)
        if f.kind == "gauge":
            for suffix, agg in GAUGE_STATS:
                expr = f"{agg} by (UUID) ({agg}_over_time({metric}{{sel}}[{{w}}]))"
                if n is not None:
                    expr += " or " + _neutral(n.metric, agg, f"{agg}_over_time", n.labels, n.scale)
                out.append(_Key(f"{name}_{suffix}", expr))
        else:
            expr = f"max by (UUID) (last_over_time({metric}{{sel}}[{{w}}]))"
            if n is not None:
                expr += " or " + _neutral(n.metric, "max", "last_over_time", n.labels, n.scale)
            out.append(_Key(name, expr, integer=True))
    return out


def _run(client: PromClient, keys: Sequence[_Key], selector: str, grid: Grid,
         want: Callable[[dict[str, str]], bool] | None = None, uuid: str | None = None
         ) -> dict[str, dict[str, dict[int, Any]]]:
    """uuid → key → {grid index: value} for every key (queries in parallel, a few at a time).

    All the queries share one deadline (:data:`WINDOW_TIMEOUT_S`) and one points budget
    (:data:`MAX_VALUES`); the first failure cancels the others' requests, and the worker threads are
    daemons, so a process that gives up on a read (a window closed) never waits for them.
    """
    step = int(grid.step)
    deadline = time.monotonic() + max(client.timeout_s, WINDOW_TIMEOUT_S)
    budget = Budget()
    pending = list(keys)
    results: list[tuple[_Key, list[Series]]] = []
    failures: list[PrometheusError] = []
    lock = threading.Lock()
    done = threading.Event()
    running = [0]

    def worker() -> None:
        try:
            while True:
                with lock:
                    if failures or not pending:
                        return
                    k = pending.pop(0)
                expr = k.expr.replace("{sel}", selector).replace("{w}", f"{step}s").replace(
                    "{usel}", "" if uuid is None else ",uuid=" + _quote(uuid))
                try:
                    found = client.query_range(expr, grid.start, grid.end, step, want=want, budget=budget,
                                               deadline=deadline)
                except PrometheusError as exc:
                    with lock:
                        failures.append(exc)
                    client.cancel()
                    return
                except Exception as exc:  # noqa: BLE001 - a bug must not hang the read: say it, one line
                    with lock:
                        failures.append(PrometheusError(Text(N_("{where}: cannot read the answer ({error}: {reason})"),
                                                             where=client.where, error=type(exc).__name__,
                                                             reason=printable(str(exc), 200))))
                    client.cancel()
                    return
                with lock:
                    results.append((k, found))
        finally:
            with lock:
                running[0] -= 1
                if running[0] == 0:
                    done.set()

    workers = min(8, max(1, len(keys)))
    running[0] = workers
    for i in range(workers):
        threading.Thread(target=worker, name=f"prometheus-{i}", daemon=True).start()
    if not done.wait(max(0.0, deadline - time.monotonic()) + 2.0):
        client.cancel()
        raise PrometheusError(Text(N_("{where}: no complete answer within {seconds:g} s"), where=client.where,
                                   seconds=WINDOW_TIMEOUT_S))
    if failures:
        raise failures[0]

    out: dict[str, dict[str, dict[int, Any]]] = {}
    for k, series in results:
        for one in series:
            uuid = one.labels["UUID"]
            col = out.setdefault(uuid, {}).setdefault(k.key, {})
            for t, v in zip(one.ts, one.vs):
                at = grid.index(t)
                if at is None:
                    continue
                v *= k.scale
                col[at] = int(round(v)) if k.integer else v
    note = client.drops.note()
    if note:
        log.warning("%s: left out %s", client.where, note)
    return out


def _span(since: float, until: float, step: int) -> tuple[float, float]:
    """Evaluation times for [since, until): each point covers the step before it (the bucket that starts one
    step earlier, the store's buckets), the last one the bucket holding ``until``; at most MAX_POINTS."""
    start = float(int(since) // step * step + step)
    end = float(max(start, -(-math.ceil(until) // step) * step))
    if (end - start) / step >= MAX_POINTS:
        start = end - (MAX_POINTS - 1) * step
    return start, end


DETAIL_DEFAULT = ("n", "temp_c", "power_w", "power_limit_w", "sm_clock_mhz", "util_gpu_pct",
                  "ecc_corr_agg", "ecc_unc_agg", "retired_sbe", "retired_dbe", "remap_corr", "remap_unc",
                  "pcie_gen", "pcie_width", "pcie_replay", "throttle_mask")


def detail_window(client: PromClient, uuid: str, since: float, until: float,
                  fields: Iterable[str] = DETAIL_DEFAULT) -> HistoryWindow:
    """One GPU's history over [since, until) from Prometheus, as the store's :class:`HistoryWindow`.

    Raises:
        PrometheusError: unreachable, refused or garbled.
    """
    res, step = step_for(until - since)
    grid = Grid(*_span(since, until, step), step)
    found = _run(client, _keys_for(fields, step), "{UUID=" + _quote(uuid) + "}", grid,
                 want=lambda labels: labels.get("UUID") == uuid, uuid=uuid).get(uuid, {})
    rows = []
    for i in sorted({i for col in found.values() for i in col}):
        row: dict[str, Any] = {"ts": int(grid.start) + i * step - step}
        for key, col in found.items():
            row[key] = col.get(i)
        if res != "minute":
            row["minutes"] = step // 60
        rows.append(row)
    return HistoryWindow(res, step, tuple(rows))


# -- the fleet for the reports -------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuSeries:
    """What Prometheus knows of one GPU: where it sits (from its labels) and its scrapes' times."""

    uuid: str
    node: str
    index: int | None
    model: str | None
    pci_bus_id: str | None
    driver_version: str | None
    last_seen: float
    vendor: str = DEFAULT_VENDOR
    """The ``vendor`` label of its neutral series (a GPU with DCGM series: NVIDIA's)."""


def node_name(labels: Mapping[str, str], by_address: Mapping[str, str]) -> tuple[str, str | None]:
    """The fleet's name of the node a series came from, and the label passed over (None: none).

    A ``node``/``fleetmon_node`` label set by relabelling wins; else the
    scrape target (``instance``) matched with the fleet file's node URLs;
    else the host name the agent reported; else the target itself (its host
    part). A label the fleet file would refuse as a node name (a space, a
    comma, a bracket, a control character: it could not be put in a hostlist
    or printed) is passed over for the next; when none is acceptable the node
    is named ``unnamed-<8 hex digits>`` from the first label, so two such nodes
    stay apart.
    """
    instance = labels.get("instance", "")
    candidates = [labels.get("fleetmon_node", ""), labels.get("node", ""), by_address.get(instance, ""),
                  labels.get("hostname", ""), labels.get("Hostname", ""), instance, instance.rpartition(":")[0]]
    refused: str | None = None
    for name in candidates:
        if not name:
            continue
        if is_node_name(name):
            return name, refused
        if refused is None:
            refused = name
    if refused is None:
        return "unknown", None
    import hashlib

    return "unnamed-" + hashlib.sha256(refused.encode("utf-8", "surrogatepass")).hexdigest()[:8], refused


def _index(text: str) -> int | None:
    """A ``gpu`` label as an index: ASCII digits, at most :data:`MAX_INDEX` ("²" and 5,000 digits are none)."""
    if not _INDEX.fullmatch(text):
        return None
    value = int(text)
    return value if value <= MAX_INDEX else None


def fleet_gpus(client: PromClient, since: float, now: float, by_address: Mapping[str, str],
               deadline: float | None = None) -> list[GpuSeries]:
    """Every GPU with a sample in [since, now], its identity from its labels.

    ``last_seen`` is ``now`` here; :func:`recorded` sets it from the telemetry.
    Node labels the fleet file would refuse are passed over, with a warning (see :func:`node_name`).
    """
    window = max(60, int(now - since))
    keep = ", ".join(IDENTITY_LABELS)
    neutral = ", ".join(NEUTRAL_IDENTITY_LABELS)
    expr = " or ".join([f"group by ({keep}) (last_over_time({m}[{window}s]))"
                        for m in (metric_of("temp_c"), COUNT_METRIC)]
                       + [f'group by ({neutral}) (label_replace(last_over_time({m}{{vendor!=""}}[{window}s]), '
                          f'"UUID", "$1", "uuid", "(.+)"))' for m in NEUTRAL_COUNT])
    seen: dict[str, dict[str, str]] = {}
    # A GPU with DCGM series is named by them (they carry the driver); the neutral ones (with a vendor
    # label) name the others.
    for labels, _ in sorted(client.query(expr, now, deadline=deadline), key=lambda lv: "vendor" in lv[0]):
        uuid = labels.get("UUID")
        if uuid and uuid not in seen:
            seen[uuid] = labels
    out = []
    refused: dict[str, str] = {}
    for uuid, labels in seen.items():
        node, passed_over = node_name(labels, by_address)
        if passed_over is not None:
            refused.setdefault(passed_over, node)
        out.append(GpuSeries(uuid=uuid, node=node, index=_index(labels.get("gpu", "")),
                             model=labels.get("modelName") or labels.get("model") or None,
                             pci_bus_id=labels.get("pci_bus_id") or None,
                             driver_version=labels.get("DCGM_FI_DRIVER_VERSION") or None, last_seen=now,
                             vendor=printable(labels.get("vendor") or DEFAULT_VENDOR, 40)))
    if refused:
        bad, named = next(iter(refused.items()))
        log.warning("%s: %d node label(s) no fleet file accepts as a node name, e.g. %s (named %s instead)",
                    client.where, len(refused), printable(repr(bad), 80), named)
    return out


def gpu_rows(found: Iterable[GpuSeries]) -> list[GpuRow]:
    """The GPUs as the store's rows (identity only: no inventory in Prometheus beyond the labels)."""
    return [GpuRow(uuid=g.uuid, node=g.node, index=g.index, pci_bus_id=g.pci_bus_id, model=g.model, state="ok",
                   last_seen=g.last_seen, vendor=g.vendor) for g in found]


def node_rows(found: Iterable[GpuSeries]) -> list[NodeRow]:
    """The nodes the GPUs sit on, as answering when their newest scrape was (Prometheus keeps no poll log)."""
    nodes: dict[str, NodeRow] = {}
    for g in found:
        seen = nodes.get(g.node)
        if seen is None or (seen.last_ok or 0) < g.last_seen:
            nodes[g.node] = NodeRow(name=g.node, driver_version=g.driver_version, status="ok", last_ok=g.last_seen,
                                    last_attempt=g.last_seen, gpu_count=None, vendor=g.vendor)
    return list(nodes.values())


REPORT_MINUTE_FIELDS = ("n", "lost", "temp_c", "power_w", "power_limit_w", "util_gpu_pct", "sm_clock_mhz", "fan_pct",
                        "ecc_corr_vol", "ecc_corr_agg", "ecc_unc_vol", "ecc_unc_agg", "retired_sbe", "retired_dbe",
                        "remap_corr", "remap_unc", "pcie_replay", "retired_pending", "remap_pending",
                        "remap_failure")
"""What the rules read that Prometheus holds (see :mod:`storage.health_input`'s column specs)."""


def fleet_telemetry(client: PromClient, since: float, now: float, step: int, uuids: Iterable[str] | None = None,
                    fields: Iterable[str] = REPORT_MINUTE_FIELDS) -> dict[str, dict[str, list[Any]]]:
    """Every GPU's columns over [since, now] at ``step`` (60: the rules' minutes; 3600: their hours).

    Columns are keyed as :func:`storage.health_input.read_window` keys them
    (``ts`` ascending, gauges as ``<field>_mean/_min/_max``, counters and
    states by name); keys Prometheus lacks are absent (None to the rules).
    Only the GPUs of ``uuids`` are kept (all when None).
    """
    grid = Grid(*_span(since, now + 1, step), step)
    wanted = set(uuids) if uuids is not None else None
    want = None if wanted is None else (lambda labels: labels.get("UUID") in wanted)
    found = _run(client, _keys_for(fields, step), "", grid, want=want)  # {usel}: "" (every GPU)
    out: dict[str, dict[str, list[Any]]] = {}
    for uuid, cols in found.items():
        index = sorted({i for col in cols.values() for i in col})
        table: dict[str, list[Any]] = {"ts": [int(grid.start) + i * step - step for i in index]}
        for key, col in cols.items():
            table[key] = [col.get(i) for i in index]
        out[uuid] = table
    return out


@dataclass(frozen=True)
class Recorded:
    """The telemetry part of a report's window, from Prometheus (the store's shapes)."""

    gpus: tuple[GpuRow, ...]
    nodes: tuple[NodeRow, ...]
    minutes: Mapping[str, Mapping[str, Sequence[Any]]]
    hourly: Mapping[str, Mapping[str, Sequence[Any]]]


def recorded(client: PromClient, now: float, since: float, *, minutes_s: float, by_address: Mapping[str, str],
             nodes: Iterable[str] | None = None) -> Recorded:
    """GPUs, nodes and telemetry of [since, now] as :func:`storage.health_input.read_window` splits them.

    The last ``minutes_s`` (from an hour boundary) at a minute's step, the part
    before at an hour's; ``nodes`` limits the telemetry (not the listing).

    Raises:
        PrometheusError: unreachable, refused or garbled.
    """
    since = min(since, now)
    found = fleet_gpus(client, since, now, by_address)
    scope = set(nodes) if nodes is not None else None
    uuids = [g.uuid for g in found if scope is None or g.node in scope]
    start = max(since, now - max(0.0, minutes_s))
    m_start = float(int(start) // HOUR_S * HOUR_S) if start > since else since
    minutes = fleet_telemetry(client, m_start, now, 60, uuids) if uuids else {}
    hourly: dict[str, dict[str, list[Any]]] = {}
    if m_start > since and uuids:
        hourly = fleet_telemetry(client, since, m_start - 1, HOUR_S, uuids)
        for cols in hourly.values():
            cols["lost_minutes"] = cols.get("lost", [None] * len(cols["ts"]))
    last: dict[str, float] = {}
    for table, step in ((hourly, HOUR_S), (minutes, 60)):
        for uuid, cols in table.items():
            if cols["ts"]:
                last[uuid] = min(now, float(cols["ts"][-1] + step))
    found = [GpuSeries(g.uuid, g.node, g.index, g.model, g.pci_bus_id, g.driver_version, last.get(g.uuid, since),
                       g.vendor) for g in found]
    return Recorded(gpus=tuple(gpu_rows(found)), nodes=tuple(node_rows(found)), minutes=minutes, hourly=hourly)
