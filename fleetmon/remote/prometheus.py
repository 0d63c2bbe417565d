"""History through a Prometheus-compatible HTTP API (``/api/v1/query_range``).

With ``[history] prometheus = "http://host:9090"`` in the fleet file, the GPU
detail view's windows and the reports' windows are read here instead of from
the local store, so a fleet scraped by a Prometheus (or Thanos, Mimir,
VictoriaMetrics: the same API) can be inspected from any workstation.

The metrics are the ones the agents' ``/metrics`` serves (dcgm-exporter's
names, :data:`fleetmon.fields.CATALOG` ``Field.prom``); a series belongs to a
GPU by its ``UUID`` label. Each window is read at the step
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

Network reads are bounded (a timeout per request, a cap on the answer's size)
and every failure is a :class:`PrometheusError` with one line that says which
Prometheus and why.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from fleetmon.errors import KnownError
from fleetmon.fields import FIELDS
from storage.rows import GpuRow, HistoryWindow, NodeRow

__all__ = [
    "GAUGE_STATS",
    "GpuSeries",
    "PromClient",
    "PrometheusError",
    "detail_window",
    "fleet_gpus",
    "fleet_telemetry",
    "recorded",
    "metric_of",
    "step_for",
]

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


class PrometheusError(KnownError):
    """Prometheus cannot be reached, or refused or garbled the query (one line)."""


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


class PromClient:
    """A Prometheus HTTP API at ``base_url`` (``http://host:9090``, a path prefix allowed).

    Args:
        timeout_s: per request (connect and read).
        max_bytes: the largest answer read; a bigger one is an error, not a truncation.
    """

    def __init__(self, base_url: str, *, timeout_s: float = 15.0, max_bytes: int = 64 << 20) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = float(timeout_s)
        self.max_bytes = int(max_bytes)

    def __repr__(self) -> str:
        return f"PromClient({self.base_url!r})"

    def _get(self, path: str, params: Mapping[str, str]) -> Any:
        url = f"{self.base_url}{path}"
        body = urllib.parse.urlencode(params).encode()
        req = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded",
                                              "Accept": "application/json"})
        where = f"Prometheus {self.base_url}"
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:  # noqa: S310 (http(s) only)
                raw = resp.read(self.max_bytes + 1)
        except urllib.error.HTTPError as exc:
            raw = exc.read(self.max_bytes + 1) if exc.fp is not None else b""
            detail = _error_text(raw) or exc.reason
            raise PrometheusError(f"{where}: HTTP {exc.code}: {detail}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise PrometheusError(f"{where}: unreachable: {reason}") from None
        if len(raw) > self.max_bytes:
            raise PrometheusError(f"{where}: answer larger than {self.max_bytes >> 20} MiB; choose a shorter window")
        try:
            doc = json.loads(raw)
        except ValueError:
            raise PrometheusError(f"{where}: the answer is not JSON (is this a Prometheus API?)") from None
        if not isinstance(doc, dict) or doc.get("status") != "success":
            raise PrometheusError(f"{where}: query failed: {_error_text(raw) or 'no status'}")
        return doc.get("data")

    def query_range(self, expr: str, start: float, end: float, step: int
                    ) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
        """(labels, [(t, value)]) of each series of ``expr`` evaluated at ``start, start+step … end``."""
        data = self._get("/api/v1/query_range", {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}",
                                                 "step": str(int(step))})
        return _matrix(data, self.base_url)

    def query(self, expr: str, at: float) -> list[tuple[dict[str, str], float]]:
        """(labels, value) of each series of the instant query ``expr`` at ``at``."""
        data = self._get("/api/v1/query", {"query": expr, "time": f"{at:.3f}"})
        if not isinstance(data, dict) or data.get("resultType") != "vector":
            raise PrometheusError(f"Prometheus {self.base_url}: expected a vector answer")
        out = []
        for item in data.get("result") or []:
            labels, value = _labels(item), _number((item.get("value") or [None, None])[1])
            if value is not None:
                out.append((labels, value))
        return out


def _error_text(raw: bytes) -> str:
    try:
        doc = json.loads(raw)
    except ValueError:
        return ""
    if isinstance(doc, dict):
        return " ".join(str(doc.get(k)) for k in ("errorType", "error") if doc.get(k)).replace("\n", " ")[:300]
    return ""


def _labels(item: Any) -> dict[str, str]:
    metric = item.get("metric") if isinstance(item, dict) else None
    return {str(k): str(v) for k, v in metric.items()} if isinstance(metric, dict) else {}


def _number(text: Any) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def _matrix(data: Any, where: str) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        raise PrometheusError(f"Prometheus {where}: expected a matrix answer")
    out = []
    for item in data.get("result") or []:
        points = []
        for pair in item.get("values") or [] if isinstance(item, dict) else []:
            if isinstance(pair, list) and len(pair) == 2:
                t, v = _number(pair[0]), _number(pair[1])
                if t is not None and v is not None:
                    points.append((t, v))
        out.append((_labels(item), points))
    return out


# -- which query gives which key ---------------------------------------------------------------


@dataclass(frozen=True)
class _Key:
    key: str
    expr: str  # with {sel} for the label selector and {w} for the step's range
    scale: float = 1.0
    integer: bool = False


def _keys_for(fields: Iterable[str], step: int) -> list[_Key]:
    """The queries behind ``fields`` (field names; ``n`` and ``lost`` for the counts)."""
    out: list[_Key] = []
    for name in fields:
        if name == "n":
            out.append(_Key("n", f"sum by (UUID) (count_over_time({COUNT_METRIC}{{sel}}[{{w}}]))", integer=True))
            continue
        if name == "lost":
            out.append(_Key("lost", f"max by (UUID) (avg_over_time({LOST_METRIC}{{sel}}[{{w}}]))",
                            scale=step / 60, integer=True))
            continue
        f = FIELDS.get(name)
        metric = metric_of(name)
        if f is None or metric is None:
            continue  # not in Prometheus (thr_* counts, status): missing
        if f.kind == "gauge":
            for suffix, agg in GAUGE_STATS:
                out.append(_Key(f"{name}_{suffix}", f"{agg} by (UUID) ({agg}_over_time({metric}{{sel}}[{{w}}]))"))
        else:
            out.append(_Key(name, f"max by (UUID) (last_over_time({metric}{{sel}}[{{w}}]))", integer=True))
    return out


def _run(client: PromClient, keys: Sequence[_Key], selector: str, start: float, end: float, step: int
         ) -> dict[str, dict[str, dict[float, Any]]]:
    """uuid → key → {point time: value} for every key (queries in parallel, a few at a time)."""
    def one(k: _Key) -> tuple[_Key, list[tuple[dict[str, str], list[tuple[float, float]]]]]:
        expr = k.expr.replace("{sel}", selector).replace("{w}", f"{step}s")
        return k, client.query_range(expr, start, end, step)

    out: dict[str, dict[str, dict[float, Any]]] = {}
    with ThreadPoolExecutor(max_workers=min(8, max(1, len(keys)))) as pool:
        for k, series in pool.map(one, keys):
            for labels, points in series:
                uuid = labels.get("UUID")
                if not uuid:
                    continue
                col = out.setdefault(uuid, {}).setdefault(k.key, {})
                for t, v in points:
                    v *= k.scale
                    col[t] = int(round(v)) if k.integer else v
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
    start, end = _span(since, until, step)
    found = _run(client, _keys_for(fields, step), "{UUID=" + _quote(uuid) + "}", start, end, step).get(uuid, {})
    times = sorted({t for col in found.values() for t in col})
    rows = []
    for t in times:
        row: dict[str, Any] = {"ts": int(t) - step}
        for key, col in found.items():
            row[key] = col.get(t)
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


def node_name(labels: Mapping[str, str], by_address: Mapping[str, str]) -> str:
    """The fleet's name of the node a series came from.

    A ``node``/``fleetmon_node`` label set by relabelling wins; else the
    scrape target (``instance``) matched with the fleet file's node URLs;
    else the host name the agent reported; else the target itself.
    """
    for key in ("fleetmon_node", "node"):
        if labels.get(key):
            return labels[key]
    instance = labels.get("instance", "")
    if instance in by_address:
        return by_address[instance]
    return labels.get("hostname") or labels.get("Hostname") or instance or "unknown"


def fleet_gpus(client: PromClient, since: float, now: float, by_address: Mapping[str, str]) -> list[GpuSeries]:
    """Every GPU with a sample in [since, now], its identity from its labels.

    ``last_seen`` is ``now`` here; :func:`recorded` sets it from the telemetry.
    """
    window = max(60, int(now - since))
    keep = ", ".join(IDENTITY_LABELS)
    expr = " or ".join(f"group by ({keep}) (last_over_time({m}[{window}s]))"
                       for m in (metric_of("temp_c"), COUNT_METRIC))
    seen: dict[str, dict[str, str]] = {}
    for labels, _ in client.query(expr, now):
        uuid = labels.get("UUID")
        if uuid and uuid not in seen:
            seen[uuid] = labels
    out = []
    for uuid, labels in seen.items():
        index = labels.get("gpu", "")
        out.append(GpuSeries(uuid=uuid, node=node_name(labels, by_address),
                             index=int(index) if index.isdigit() else None, model=labels.get("modelName") or None,
                             pci_bus_id=labels.get("pci_bus_id") or None,
                             driver_version=labels.get("DCGM_FI_DRIVER_VERSION") or None, last_seen=now))
    return out


def gpu_rows(found: Iterable[GpuSeries]) -> list[GpuRow]:
    """The GPUs as the store's rows (identity only: no inventory in Prometheus beyond the labels)."""
    return [GpuRow(uuid=g.uuid, node=g.node, index=g.index, pci_bus_id=g.pci_bus_id, model=g.model, state="ok",
                   last_seen=g.last_seen) for g in found]


def node_rows(found: Iterable[GpuSeries]) -> list[NodeRow]:
    """The nodes the GPUs sit on, as answering when their newest scrape was (Prometheus keeps no poll log)."""
    nodes: dict[str, NodeRow] = {}
    for g in found:
        seen = nodes.get(g.node)
        if seen is None or (seen.last_ok or 0) < g.last_seen:
            nodes[g.node] = NodeRow(name=g.node, driver_version=g.driver_version, status="ok", last_ok=g.last_seen,
                                    last_attempt=g.last_seen, gpu_count=None)
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
    """
    start, end = _span(since, now + 1, step)
    wanted = set(uuids) if uuids is not None else None
    found = _run(client, _keys_for(fields, step), "", start, end, step)
    out: dict[str, dict[str, list[Any]]] = {}
    for uuid, cols in found.items():
        if wanted is not None and uuid not in wanted:
            continue
        times = sorted({t for col in cols.values() for t in col})
        table: dict[str, list[Any]] = {"ts": [int(t) - step for t in times]}
        for key, col in cols.items():
            table[key] = [col.get(t) for t in times]
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
    found = [GpuSeries(g.uuid, g.node, g.index, g.model, g.pci_bus_id, g.driver_version, last.get(g.uuid, since))
             for g in found]
    return Recorded(gpus=tuple(gpu_rows(found)), nodes=tuple(node_rows(found)), minutes=minutes, hourly=hourly)
