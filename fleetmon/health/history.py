"""The health engine's input: a fleet's recorded history as frozen, pure data.

Nothing here reads a database or a clock. The storage layer (or the
synthetic generator in :mod:`fleetmon.sim.history`) builds a
:class:`FleetHistory` and hands it to :func:`fleetmon.health.engine.evaluate`;
``FleetHistory.now`` is the time the rules use.

Per-GPU telemetry is held by column in a :class:`Series` (one list per key),
because the rules scan a few keys over many rows: 512 GPUs x 1,440 minutes
would be 737,280 row dicts, and reading one key out of each costs more than
the rule itself. A Series can be built from row dicts (columns are then
extracted lazily, only for the keys a rule asks for) or straight from columns
(``SELECT`` + ``zip(*rows)``, the fast path).

Minute rows (``GpuHistory.minutes``), one per GPU and minute, keys as the
agent's :class:`fleetmon.records.GpuMinute` and the ``samples`` table:

* ``ts`` (start of the minute, Unix s), ``n`` (samples), ``busy_n``;
* ``<gauge>_min`` / ``_mean`` / ``_max`` for every gauge in
  :data:`fleetmon.fields.GAUGES` (W, °C, MHz, MiB, %);
* the last value of every counter and state by name (``ecc_unc_vol``,
  ``pcie_replay``, ``retired_pending`` ...);
* ``thr_<reason>``: samples in which each throttle reason was active;
* ``pcie_gen_busy_min`` / ``pcie_width_busy_min``: lowest link while busy;
* ``state`` ("ok" / "lost") or ``lost`` (0/1), and ``status``: field name ->
  worst non-OK status of the minute ("unsupported", "failed", "gpu_lost"), as a
  dict or its JSON text.

Hourly rows (``GpuHistory.hourly``, optional, for windows longer than the raw
minutes kept in memory) are what :func:`rollup_hourly` makes from minutes:

* ``ts`` (start of the hour), ``minutes`` (minute rows rolled up), ``n``,
  ``busy_n``, ``busy_minutes`` (minutes with ``busy_n >= n / 2``);
* ``<gauge>_min`` (min), ``_mean`` (sample-weighted mean), ``_max`` (max);
* counters: the last value, and ``<counter>_delta``, the sum of the increases
  (a counter that drops was reset: the new value counts as the increase);
* states: the last value and ``<state>_max``;
* ``thr_<reason>``: sums; ``pcie_gen_busy_min`` / ``pcie_width_busy_min``: min;
* ``sm_clock_busy_mhz``: mean of ``sm_clock_mhz_mean`` over busy minutes with
  no hardware or thermal throttle reason (the derating input) and
  ``sm_clock_busy_minutes``, how many minutes that mean covers;
* ``lost_minutes``: minutes in state "lost"; ``failed_<field>``: minutes in
  which the field's status was "failed" (for ``power_w``, ``temp_c``, ...).

A missing key is always allowed and reads as ``None``; a ``None`` value is
never an alarm (an unsupported reading stays ``None`` with status
"unsupported").
"""

from __future__ import annotations

import json
import math
import operator
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fleetmon.fields import COUNTER_NAMES, GAUGE_NAMES, HW_THROTTLE_REASONS, STATE_NAMES, THROTTLE_NAMES
from fleetmon.records import Status
from fleetmon.vocab import GpuState

__all__ = [
    "EMPTY",
    "EventRecord",
    "FleetHistory",
    "GpuHistory",
    "GroupExpect",
    "InventoryChange",
    "NodeHistory",
    "Outage",
    "Placement",
    "Poll",
    "Series",
    "outages_from_events",
    "outages_from_polls",
    "rollup_hourly",
]

MINUTE_S = 60
HOUR_S = 3600
DAY_S = 86400



# ---------------------------------------------------------------------------
# Series: rows held by column


class Series:
    """Rows of one GPU, oldest first, held by column.

    ``col(key)`` returns a sequence with one value per row (``None`` where the
    key is missing). ``dur`` is each row's length in seconds: 60 for minutes,
    3600 for hourly rows, mixed for a :meth:`timeline`.

    Instances are treated as immutable: never modify a returned column.
    """

    __slots__ = ("_cols", "_rows", "_len", "_cache", "step_s")

    def __init__(
        self,
        columns: Mapping[str, Sequence[Any]] | None = None,
        rows: Sequence[Mapping[str, Any]] | None = None,
        step_s: int = MINUTE_S,
    ) -> None:
        self.step_s = step_s
        self._rows = rows
        self._cols: dict[str, Sequence[Any]] = dict(columns or {})
        self._cache: dict[str, Any] = {}
        if rows is not None:
            self._len = len(rows)
        elif "ts" in self._cols:
            self._len = len(self._cols["ts"])
        else:
            self._len = 0
        for key, values in self._cols.items():
            if len(values) != self._len:
                raise ValueError(f"column {key!r} has {len(values)} values, ts has {self._len}")

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]], step_s: int = MINUTE_S) -> Series:
        """Rows as dicts (any keys; ``ts`` required), sorted by ``ts``."""
        seq = list(rows)
        if any(r.get("ts") is None for r in seq):
            seq = [r for r in seq if r.get("ts") is not None]
        if any(seq[i]["ts"] > seq[i + 1]["ts"] for i in range(len(seq) - 1)):
            seq.sort(key=lambda r: r["ts"])
        return cls(rows=seq, step_s=step_s)

    @classmethod
    def from_columns(cls, columns: Mapping[str, Sequence[Any]], step_s: int = MINUTE_S) -> Series:
        """Columns as ``{key: values}``; ``ts`` must be present and sorted."""
        if "ts" not in columns:
            raise ValueError("a Series needs a 'ts' column")
        return cls(columns=columns, step_s=step_s)

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def __repr__(self) -> str:
        return f"Series({self._len} rows, step {self.step_s} s)"

    def has(self, key: str) -> bool:
        """Whether any row holds a non-None value for ``key``."""
        return any(v is not None for v in self.col(key))

    def col(self, key: str) -> Sequence[Any]:
        """One value per row for ``key`` (``None`` where missing)."""
        found = self._cols.get(key)
        if found is not None:
            return found
        if self._rows is not None:
            try:  # every row has the key (rows of one query): map in C
                values: Sequence[Any] = list(map(operator.itemgetter(key), self._rows))
            except KeyError:
                values = [r.get(key) for r in self._rows]
        else:
            values = [None] * self._len
        self._cols[key] = values
        return values

    @property
    def ts(self) -> Sequence[Any]:
        return self.col("ts")

    @property
    def dur(self) -> Sequence[Any]:
        """Length of each row in seconds (``dur`` key, else ``step_s``)."""
        cached: Sequence[Any] | None = self._cache.get("dur")
        if cached is not None:
            return cached
        given = self._cols.get("dur")
        if given is None and self._rows is not None:
            given = [r.get("dur") for r in self._rows]
        if given is None:
            values: Sequence[Any] = [self.step_s] * self._len
        else:
            values = [self.step_s if v is None else v for v in given]
        self._cache["dur"] = values
        return values

    def end(self) -> float | None:
        """End of the last row (its ``ts`` + ``dur``), or None when empty."""
        if not self._len:
            return None
        return float(self.ts[-1]) + float(self.dur[-1])

    def delta(self, counter: str) -> list[float]:
        """Increase of a counter within each row (never negative).

        Uses ``<counter>_delta`` where a row has it (hourly rows), else the
        difference from the previous known value; a drop is a reset, so the
        new value counts as the increase. The first known value gives 0.
        """
        cached: list[float] | None = self._cache.get("delta:" + counter)
        if cached is not None:
            return cached
        values = self.col(counter)
        given = self.col(counter + "_delta")
        out = [0.0] * self._len
        prev: float | None = None
        for i in range(self._len):
            d = given[i]
            v = values[i]
            if d is not None:
                out[i] = float(d) if d > 0 else 0.0
            elif v is not None and prev is not None:
                out[i] = float(v - prev) if v >= prev else float(v)
            if v is not None:
                prev = v
        self._cache["delta:" + counter] = out
        return out

    def statuses(self) -> list[dict[str, str] | None]:
        """The ``status`` of each row as a dict (None when empty or missing).

        Rows sharing one status text or dict share the parsed dict: treat it
        as read-only.
        """
        cached: list[dict[str, str] | None] | None = self._cache.get("statuses")
        if cached is not None:
            return cached
        memo: dict[Any, Any] = {}
        out: list[Any] = []
        for raw in self.col("status"):
            if not raw:
                out.append(None)
                continue
            key = raw if isinstance(raw, str) else id(raw)
            if key in memo:
                out.append(memo[key])
                continue
            parsed: Any = raw
            if isinstance(raw, str):
                try:
                    parsed = json.loads(raw)
                except ValueError:
                    parsed = None
            value = parsed if isinstance(parsed, Mapping) and parsed else None
            memo[key] = value
            out.append(value)
        self._cache["statuses"] = out
        return out

    def rows_with_status(self, key: str, status: str) -> list[int]:
        """Indices of the rows whose ``status`` gives ``key`` the value ``status``."""
        col = self.col("status")
        if col.count(None) == len(col):
            return []
        verdict: dict[int, bool] = {}
        out = []
        for i, st in enumerate(self.statuses()):
            if st is None:
                continue
            ident = id(st)
            hit = verdict.get(ident)
            if hit is None:
                hit = st.get(key) == status
                verdict[ident] = hit
            if hit:
                out.append(i)
        return out

    def lost(self) -> list[bool]:
        """Whether the GPU was lost in each row (state, ``lost`` or ``lost_minutes``)."""
        cached: list[bool] | None = self._cache.get("lost")
        if cached is not None:
            return cached
        state = self.col("state")
        flag = self.col("lost")
        minutes = self.col("lost_minutes")
        out = [
            s == GpuState.LOST or bool(f) or bool(m)
            for s, f, m in zip(state, flag, minutes)
        ]
        self._cache["lost"] = out
        return out

    def after(self, ts: float) -> Series:
        """Rows with ``ts`` at or after ``ts`` (a view by slicing)."""
        return self._slice(bisect_left(self.ts, ts, 0, self._len), self._len)

    def before(self, ts: float) -> Series:
        """Rows with ``ts`` before ``ts``."""
        return self._slice(0, bisect_left(self.ts, ts, 0, self._len))

    def _slice(self, start: int, stop: int) -> Series:
        if start == 0 and stop == self._len:
            return self
        return _View(self, start, stop)

    def rows(self) -> Iterator[dict[str, Any]]:
        """The rows as dicts (all keys known to this Series)."""
        if self._rows is not None:
            for r in self._rows:
                yield dict(r)
            return
        keys = list(self._cols)
        for i in range(self._len):
            yield {k: self._cols[k][i] for k in keys}

    @staticmethod
    def chain(first: Series, second: Series) -> Series:
        """Rows of ``first`` then ``second`` (columns concatenated lazily)."""
        if not first:
            return second
        if not second:
            return first
        return _Chain(first, second)


class _Chain(Series):
    """Two Series back to back; columns are concatenated on first use."""

    __slots__ = ("_a", "_b")

    def __init__(self, a: Series, b: Series) -> None:
        super().__init__(step_s=min(a.step_s, b.step_s))
        self._a, self._b = a, b
        self._len = len(a) + len(b)

    def col(self, key: str) -> Sequence[Any]:
        found = self._cols.get(key)
        if found is None:
            found = list(self._a.col(key)) + list(self._b.col(key))
            self._cols[key] = found
        return found

    @property
    def dur(self) -> Sequence[Any]:
        found = self._cols.get("dur")
        if found is None:
            found = list(self._a.dur) + list(self._b.dur)
            self._cols["dur"] = found
        return found

    def statuses(self) -> list[dict[str, str] | None]:
        cached = self._cache.get("statuses")
        if cached is None:
            cached = self._a.statuses() + self._b.statuses()
            self._cache["statuses"] = cached
        return cached

    def rows(self) -> Iterator[dict[str, Any]]:
        yield from self._a.rows()
        yield from self._b.rows()


class _View(Series):
    """Rows ``start:stop`` of another Series; columns are sliced on first use."""

    __slots__ = ("_parent", "_start", "_stop")

    def __init__(self, parent: Series, start: int, stop: int) -> None:
        super().__init__(step_s=parent.step_s)
        self._parent, self._start, self._stop = parent, start, stop
        self._len = stop - start

    def col(self, key: str) -> Sequence[Any]:
        found = self._cols.get(key)
        if found is None:
            found = self._parent.col(key)[self._start:self._stop]
            self._cols[key] = found
        return found

    @property
    def dur(self) -> Sequence[Any]:
        found = self._cols.get("dur")
        if found is None:
            found = self._parent.dur[self._start:self._stop]
            self._cols["dur"] = found
        return found

    def statuses(self) -> list[dict[str, str] | None]:
        return self._parent.statuses()[self._start:self._stop]

    def rows(self) -> Iterator[dict[str, Any]]:
        for i, row in enumerate(self._parent.rows()):
            if self._start <= i < self._stop:
                yield row


EMPTY = Series(columns={"ts": []})
"""A Series with no rows."""


def rollup_hourly(minutes: Series) -> Series:
    """Roll minute rows up into hourly rows (the schema in the module doc).

    Pure reference implementation for the storage layer and the tests.
    """
    if not minutes:
        return Series(columns={"ts": []}, step_s=HOUR_S)
    ts = minutes.ts
    groups: list[tuple[int, int, int]] = []  # (hour, start, stop)
    start = 0
    hour = int(ts[0]) // HOUR_S * HOUR_S
    for i in range(1, len(ts)):
        h = int(ts[i]) // HOUR_S * HOUR_S
        if h != hour:
            groups.append((hour, start, i))
            hour, start = h, i
    groups.append((hour, start, len(ts)))

    n = minutes.col("n")
    busy = minutes.col("busy_n")
    cols: dict[str, list[Any]] = {"ts": [g[0] for g in groups]}
    cols["minutes"] = [g[2] - g[1] for g in groups]
    cols["n"] = [sum(x or 0 for x in n[a:b]) for _, a, b in groups]
    cols["busy_n"] = [sum(x or 0 for x in busy[a:b]) for _, a, b in groups]
    cols["busy_minutes"] = [
        sum(1 for i in range(a, b) if (busy[i] or 0) * 2 >= (n[i] or 0) and (busy[i] or 0) > 0)
        for _, a, b in groups
    ]
    for g in GAUGE_NAMES:
        lo, mean, hi = minutes.col(g + "_min"), minutes.col(g + "_mean"), minutes.col(g + "_max")
        cols[g + "_min"] = [_agg(min, lo[a:b]) for _, a, b in groups]
        cols[g + "_max"] = [_agg(max, hi[a:b]) for _, a, b in groups]
        out = []
        for _, a, b in groups:
            num = den = 0.0
            for i in range(a, b):
                if mean[i] is not None:
                    w = n[i] or 1
                    num += mean[i] * w
                    den += w
            out.append(round(num / den, 3) if den else None)
        cols[g + "_mean"] = out
    for c in COUNTER_NAMES:
        values = minutes.col(c)
        deltas = minutes.delta(c)
        cols[c] = [_last(values[a:b]) for _, a, b in groups]
        cols[c + "_delta"] = [
            sum(deltas[a:b]) if any(v is not None for v in values[a:b]) else None
            for _, a, b in groups
        ]
    for s in STATE_NAMES:
        values = minutes.col(s)
        cols[s] = [_last(values[a:b]) for _, a, b in groups]
        cols[s + "_max"] = [_agg(max, values[a:b]) for _, a, b in groups]
    for r in THROTTLE_NAMES:
        values = minutes.col("thr_" + r)
        cols["thr_" + r] = [sum(x or 0 for x in values[a:b]) for _, a, b in groups]
    for k in ("pcie_gen_busy_min", "pcie_width_busy_min"):
        values = minutes.col(k)
        cols[k] = [_agg(min, values[a:b]) for _, a, b in groups]
    clean = busy_clean_clock(minutes)
    sm_busy, sm_n = [], []
    for _, a, b in groups:
        vals = [v for v in clean[a:b] if v is not None]
        sm_busy.append(round(sum(vals) / len(vals), 1) if vals else None)
        sm_n.append(len(vals))
    cols["sm_clock_busy_mhz"] = sm_busy
    cols["sm_clock_busy_minutes"] = sm_n
    lost = minutes.lost()
    cols["lost_minutes"] = [sum(1 for i in range(a, b) if lost[i]) for _, a, b in groups]
    statuses = minutes.statuses()
    failed_fields = sorted({k for s in statuses if s for k, v in s.items() if v == Status.FAILED})
    for f in failed_fields:
        cols["failed_" + f] = [
            sum(1 for st in statuses[a:b] if st is not None and st.get(f) == Status.FAILED)
            for _, a, b in groups
        ]
    return Series(columns=cols, step_s=HOUR_S)


def busy_clean_clock(series: Series) -> list[float | None]:
    """Per row: the SM clock (MHz) while busy and not throttled, else None.

    A minute counts when at least 80 % of its samples were busy and no
    hardware or thermal throttle reason was active (software power capping
    is allowed: it is how a healthy GPU runs at full load). Hourly rows give
    ``sm_clock_busy_mhz``.
    """
    n = series.col("n")
    busy = series.col("busy_n")
    sm = series.col("sm_clock_mhz_mean")
    hourly = series.col("sm_clock_busy_mhz")
    out: list[float | None] = [
        s if (s is not None and b and nn and b >= 0.8 * nn) else None
        for s, b, nn in zip(sm, busy, n)
    ]
    for key in HW_THROTTLE_REASONS:
        values = series.col("thr_" + key)
        if any(values):
            out = [None if v else o for o, v in zip(out, values)]
    if hourly.count(None) != len(hourly):
        out = [float(h) if h is not None else o for o, h in zip(out, hourly)]
    return out


def _agg(fn: Any, values: Sequence[Any]) -> Any:
    known = [v for v in values if v is not None]
    return fn(known) if known else None


def _last(values: Sequence[Any]) -> Any:
    for v in reversed(values):
        if v is not None:
            return v
    return None


# ---------------------------------------------------------------------------
# Records


@dataclass(frozen=True, slots=True)
class Poll:
    """One poll of a node's agent: ``ts`` (Unix s), ``ok``, ``error`` (one line)."""

    ts: float
    ok: bool
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Outage:
    """A stretch of failed polls: from the first failed poll to the first good one.

    ``end`` is None while the outage lasts. ``failed`` is the number of failed
    polls in it.
    """

    start: float
    end: float | None
    error: str | None = None
    failed: int = 1

    def duration_s(self, now: float) -> float:
        return (self.end if self.end is not None else now) - self.start


def outages_from_polls(polls: Iterable[Poll | Mapping[str, Any] | Sequence[Any]]) -> tuple[Outage, ...]:
    """Turn a node's polls (any order) into its outages, oldest first."""
    items = sorted((_poll(p) for p in polls), key=lambda p: p.ts)
    out: list[Outage] = []
    start: float | None = None
    error: str | None = None
    failed = 0
    for p in items:
        if not p.ok:
            if start is None:
                start, error, failed = p.ts, p.error, 0
            failed += 1
        elif start is not None:
            out.append(Outage(start, p.ts, error, failed))
            start = None
    if start is not None:
        out.append(Outage(start, None, error, failed))
    return tuple(out)


def outages_from_events(events: Iterable[EventRecord | Mapping[str, Any]]) -> tuple[Outage, ...]:
    """Outages from the storage layer's ``node_unreachable`` / ``node_back`` events.

    Cheaper than raw polls over long windows: one event per status flip.
    Events of other kinds are ignored; the order does not matter.
    """
    items: list[tuple[float, str, str | None]] = []
    for e in events:
        kind = e.kind if isinstance(e, EventRecord) else str(e.get("kind"))
        if kind not in ("node_unreachable", "node_back"):
            continue
        ts = e.ts if isinstance(e, EventRecord) else float(e["ts"])
        message = e.message if isinstance(e, EventRecord) else str(e.get("message") or "")
        items.append((ts, kind, message or None))
    items.sort(key=lambda x: x[0])
    out: list[Outage] = []
    start: float | None = None
    error: str | None = None
    for at, what, text in items:
        if what == "node_unreachable" and start is None:
            start, error = at, text
        elif what == "node_back" and start is not None:
            out.append(Outage(start, at, error, 1))
            start = None
    if start is not None:
        out.append(Outage(start, None, error, 1))
    return tuple(out)


def _poll(p: Poll | Mapping[str, Any] | Sequence[Any]) -> Poll:
    if isinstance(p, Poll):
        return p
    if isinstance(p, Mapping):
        return Poll(float(p["ts"]), bool(p.get("ok")), p.get("error"))
    ts, ok, *rest = p
    return Poll(float(ts), bool(ok), rest[0] if rest else None)


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a card sat from ``ts`` on: node and PCI bus id (the slot)."""

    ts: float
    node: str
    pci_bus_id: str | None = None
    index: int | None = None

    @property
    def slot(self) -> str:
        return f"{self.node}:{self.pci_bus_id or '?'}"


@dataclass(frozen=True, slots=True)
class GroupExpect:
    """What a group of nodes should have (from the fleet file's ``[[group]]``)."""

    name: str
    expected_driver: str | None = None
    expected_cuda_driver: str | None = None
    expected_gpus: int | None = None
    expected_model: str | None = None


@dataclass(frozen=True, slots=True)
class EventRecord:
    """Something that happened on a node: an Xid, a GPU lost or back, a reset.

    ``kind``: "xid", "gpu_lost", "gpu_back", "gpu_appeared", "agent_start",
    "energy_reset" (driver reload or GPU reset), "gpu_reset", "xid_source".
    """

    ts: float
    node: str
    kind: str
    gpu_uuid: str | None = None
    pci_bus_id: str | None = None
    code: int | None = None
    message: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> EventRecord:
        data = row.get("data") or {}
        if isinstance(data, str):
            try:
                data = json.loads(data)
            except ValueError:
                data = {}
        code = row.get("code")
        return cls(
            ts=float(row["ts"]),
            node=str(row.get("node") or ""),
            kind=str(row.get("kind") or ""),
            gpu_uuid=row.get("gpu_uuid") or row.get("uuid"),
            pci_bus_id=row.get("pci_bus_id"),
            code=int(code) if code is not None else None,
            message=str(row.get("message") or ""),
            data=dict(data) if isinstance(data, Mapping) else {},
        )


@dataclass(frozen=True, slots=True)
class InventoryChange:
    """A change in what a node holds, as the storage layer recorded it.

    ``kind``: "gpu_added" (storage: "appeared"), "gpu_removed"
    ("disappeared"), "gpu_moved" ("moved"), "driver_changed",
    "vbios_changed", "serial_changed", "power_limit_changed" or any other
    short word; ``before``/``after`` (storage: ``old``/``new``) are the old
    and new values.
    """

    ts: float
    node: str
    kind: str
    gpu_uuid: str | None = None
    before: Any = None
    after: Any = None
    detail: str = ""

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> InventoryChange:
        return cls(
            ts=float(row["ts"]),
            node=str(row.get("node") or ""),
            kind=str(row.get("kind") or "changed"),
            gpu_uuid=row.get("gpu_uuid") or row.get("uuid"),
            before=row.get("before", row.get("old")),
            after=row.get("after", row.get("new")),
            detail=str(row.get("detail") or ""),
        )


@dataclass(frozen=True)
class NodeHistory:
    """One node: group, versions and reachability.

    Attributes:
        name: the node's name in the fleet file.
        group: its group, or None.
        driver_version, cuda_driver_version: as the agent last reported them.
        expected_gpus: overrides the group's ``expected_gpus`` when set.
        gpu_count: GPUs the agent last enumerated (None if unknown).
        polls: recent polls, oldest first (may be empty).
        outages: failed-poll stretches in the window (derived from ``polls``
            when not given).
        last_ok: time of the last good poll; last_attempt: of the last poll.
        first_seen: when the node was first polled successfully, if known.
    """

    name: str
    group: str | None = None
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    expected_gpus: int | None = None
    gpu_count: int | None = None
    polls: tuple[Poll, ...] = ()
    outages: tuple[Outage, ...] = ()
    last_ok: float | None = None
    last_attempt: float | None = None
    last_error: str | None = None
    first_seen: float | None = None

    @classmethod
    def from_row(
        cls, row: Mapping[str, Any], polls: Iterable[Any] = (), outages: Iterable[Outage] | None = None
    ) -> NodeHistory:
        """Build from a ``nodes`` table row (``grp`` or ``group``) and its polls."""
        poll_list = tuple(sorted((_poll(p) for p in polls), key=lambda p: p.ts))
        found = tuple(outages) if outages is not None else outages_from_polls(poll_list)
        last_ok = row.get("last_ok")
        if last_ok is None and poll_list:
            oks = [p.ts for p in poll_list if p.ok]
            last_ok = oks[-1] if oks else None
        last_attempt = row.get("last_attempt")
        if last_attempt is None and poll_list:
            last_attempt = poll_list[-1].ts
        cuda = row.get("cuda_driver_version")
        return cls(
            name=str(row["name"]),
            group=row.get("group", row.get("grp")),
            driver_version=row.get("driver_version"),
            cuda_driver_version=None if cuda is None else str(cuda),
            expected_gpus=row.get("expected_gpus"),
            gpu_count=row.get("gpu_count"),
            polls=poll_list,
            outages=found,
            last_ok=last_ok,
            last_attempt=last_attempt,
            last_error=row.get("last_error"),
            first_seen=row.get("first_seen"),
        )


@dataclass(frozen=True)
class GpuHistory:
    """One card, keyed by UUID; its history follows it across nodes and slots.

    Attributes:
        uuid: NVML UUID.
        name: model as NVML reports it ("NVIDIA A100-SXM4-80GB").
        node, index, pci_bus_id: where the card is now (or was last seen).
        serial: board serial, where the card has one (data-center boards).
        inventory: static facts (keys of ``fleetmon.fields.INVENTORY_FIELDS``:
            vbios, power_default_w, power_enforced_w, memory_total_mib,
            pcie_max_gen, pcie_max_width, pcie_gpu_max_gen, temp_slowdown_c,
            ecc_mode_current, ...). Missing keys are fine.
        state: a :class:`fleetmon.vocab.GpuState`: OK, LOST (fell off the
            bus) or MISSING (no longer enumerated on its node; the storage
            layer's "gone" is read as MISSING by ``GpuState.for_rules``).
        first_seen, last_seen: Unix s.
        minutes: per-minute rows (recent, e.g. the last 24 h).
        hourly: hourly rows (older than the minutes; optional).
        placements: where the card sat, oldest first (each from its ``ts``).
    """

    uuid: str
    name: str = ""
    node: str = ""
    index: int | None = None
    pci_bus_id: str | None = None
    serial: str | None = None
    inventory: Mapping[str, Any] = field(default_factory=dict)
    state: str = GpuState.OK
    first_seen: float | None = None
    last_seen: float | None = None
    minutes: Series = EMPTY
    hourly: Series = EMPTY
    placements: tuple[Placement, ...] = ()
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_row(
        cls,
        row: Mapping[str, Any],
        minutes: Iterable[Mapping[str, Any]] | Series | None = None,
        hourly: Iterable[Mapping[str, Any]] | Series | None = None,
        placements: Iterable[Placement | Mapping[str, Any] | Sequence[Any]] = (),
    ) -> GpuHistory:
        """Build from a ``gpus`` table row plus its rows (dicts or a Series).

        ``inventory`` may be a dict, the storage layer's JSON text
        (``{"values": {...}, "status": {...}}``) or absent; the row's own
        columns (vbios, memory_total_mib, power_default_w, ...) fill gaps.
        """
        inventory = _inventory(row)
        index = row.get("index", row.get("idx"))
        if isinstance(minutes, Series):
            mins = minutes
        else:
            mins = Series.from_rows(minutes or (), MINUTE_S) if minutes is not None else EMPTY
        if isinstance(hourly, Series):
            hrs = hourly
        else:
            hrs = Series.from_rows(hourly or (), HOUR_S) if hourly is not None else EMPTY
        places = tuple(sorted((_placement(p) for p in placements), key=lambda p: p.ts))
        node = str(row.get("node") or "")
        pci = row.get("pci_bus_id") or inventory.get("pci_bus_id")
        if not places and node:
            places = (Placement(float(row.get("first_seen") or 0.0), node, pci, index),)
        return cls(
            uuid=str(row["uuid"]),
            name=str(row.get("name") or inventory.get("name") or ""),
            node=node,
            index=None if index is None else int(index),
            pci_bus_id=pci,
            serial=row.get("serial") or inventory.get("serial") or None,
            inventory=inventory,
            state=GpuState.for_rules(row.get("state")),
            first_seen=row.get("first_seen"),
            last_seen=row.get("last_seen"),
            minutes=mins,
            hourly=hrs,
            placements=places,
        )

    @property
    def card_id(self) -> str:
        """The card's identity: its serial where it has one, else its UUID."""
        return f"serial:{self.serial}" if self.serial else self.uuid

    def timeline(self) -> Series:
        """Hourly rows older than the first minute row, then the minutes."""
        cached = self._cache.get("timeline")
        if cached is None:
            if self.minutes and self.hourly:
                cached = Series.chain(self.hourly.before(float(self.minutes.ts[0])), self.minutes)
            else:
                cached = self.minutes or self.hourly
            self._cache["timeline"] = cached
        return cached

    def placement_at(self, ts: float) -> Placement:
        """Where the card sat at ``ts`` (its current place when unknown)."""
        found: Placement | None = None
        for p in self.placements:
            if p.ts <= ts:
                found = p
            else:
                break
        if found is None:
            found = self.placements[0] if self.placements else Placement(
                0.0, self.node, self.pci_bus_id, self.index)
        return found

    def inv(self, key: str) -> Any:
        """One inventory value, or None."""
        return self.inventory.get(key)


def _inventory(row: Mapping[str, Any]) -> dict[str, Any]:
    raw = row.get("inventory")
    inventory: dict[str, Any] = {}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            raw = None
    if isinstance(raw, Mapping):
        values = raw.get("values")
        inventory.update(values if isinstance(values, Mapping) else raw)
    for key in ("vbios", "memory_total_mib", "power_default_w", "power_enforced_w", "serial",
                "pci_bus_id", "name", "pcie_max_gen", "pcie_max_width", "pcie_gpu_max_gen",
                "temp_slowdown_c", "temp_shutdown_c", "ecc_mode_current"):
        if inventory.get(key) is None and row.get(key) is not None:
            inventory[key] = row[key]
    return inventory


def _placement(p: Placement | Mapping[str, Any] | Sequence[Any]) -> Placement:
    if isinstance(p, Placement):
        return p
    if isinstance(p, Mapping):
        idx = p.get("index", p.get("idx"))
        ts = p.get("ts", p.get("since"))
        return Placement(float(ts or 0.0), str(p["node"]), p.get("pci_bus_id"),
                         None if idx is None else int(idx))
    ts, node, *rest = p
    return Placement(float(ts), str(node), rest[0] if rest else None,
                     rest[1] if len(rest) > 1 else None)


@dataclass(frozen=True)
class FleetHistory:
    """Everything the rules look at, for one evaluation at ``now``.

    Attributes:
        now: the evaluation time (Unix s); rules never read a clock.
        since: start of the window under review (Unix s).
        nodes: every node in scope.
        gpus: every card seen in the window, keyed by UUID (one entry per card
            even when it moved between nodes).
        events: node events in the window, oldest first.
        inventory_changes: recorded inventory changes in the window.
        groups: group name -> expectations.
        thresholds: a :class:`fleetmon.health.thresholds.Thresholds` (defaults
            when None).
        daily: stored per-GPU per-day derating rows from earlier evaluations
            (the dicts :func:`fleetmon.health.derating.daily_ratios` returns),
            for the week-long trend.
    """

    now: float
    since: float
    nodes: tuple[NodeHistory, ...] = ()
    gpus: tuple[GpuHistory, ...] = ()
    events: tuple[EventRecord, ...] = ()
    inventory_changes: tuple[InventoryChange, ...] = ()
    groups: Mapping[str, GroupExpect] = field(default_factory=dict)
    thresholds: Any = None
    daily: tuple[Mapping[str, Any], ...] = ()
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_rows(
        cls,
        now: float,
        since: float,
        nodes: Iterable[Mapping[str, Any]] = (),
        gpus: Iterable[Mapping[str, Any]] = (),
        minutes: Mapping[str, Iterable[Mapping[str, Any]] | Series] | None = None,
        hourly: Mapping[str, Iterable[Mapping[str, Any]] | Series] | None = None,
        polls: Mapping[str, Iterable[Any]] | None = None,
        placements: Mapping[str, Iterable[Any]] | None = None,
        events: Iterable[Mapping[str, Any]] = (),
        inventory_changes: Iterable[Mapping[str, Any]] = (),
        groups: Mapping[str, Mapping[str, Any] | GroupExpect] | Iterable[Any] | None = None,
        thresholds: Any = None,
        daily: Iterable[Mapping[str, Any]] = (),
    ) -> FleetHistory:
        """Assemble a history from plain rows, as the storage layer returns them.

        ``minutes``, ``hourly`` and ``placements`` are keyed by GPU UUID,
        ``polls`` by node name. Groups may be dicts, ``GroupExpect`` or
        ``fleetmon.fleetfile.Group`` objects. ``thresholds`` may be a
        Thresholds or a dict of overrides (the fleet file's ``[thresholds]``).
        """
        from fleetmon.health.thresholds import Thresholds

        minutes = minutes or {}
        hourly = hourly or {}
        polls = polls or {}
        placements = placements or {}
        node_list = tuple(
            NodeHistory.from_row(row, polls.get(str(row["name"]), ())) for row in nodes
        )
        gpu_list = tuple(
            GpuHistory.from_row(
                row, minutes.get(str(row["uuid"])), hourly.get(str(row["uuid"])),
                placements.get(str(row["uuid"]), ()),
            )
            for row in gpus
        )
        event_list = tuple(sorted((EventRecord.from_dict(e) for e in events), key=lambda e: e.ts))
        change_list = tuple(
            sorted((InventoryChange.from_dict(c) for c in inventory_changes), key=lambda c: c.ts)
        )
        if thresholds is None or isinstance(thresholds, Mapping):
            thresholds = Thresholds.from_overrides(thresholds or {})
        return cls(
            now=float(now),
            since=float(since),
            nodes=node_list,
            gpus=gpu_list,
            events=event_list,
            inventory_changes=change_list,
            groups=_groups(groups),
            thresholds=thresholds,
            daily=tuple(daily),
        )

    def node(self, name: str) -> NodeHistory | None:
        """The node called ``name``, or None."""
        return self.node_map().get(name)

    def node_map(self) -> dict[str, NodeHistory]:
        cached = self._cache.get("node_map")
        if cached is None:
            cached = {n.name: n for n in self.nodes}
            self._cache["node_map"] = cached
        return cached

    def gpu(self, uuid: str) -> GpuHistory | None:
        return self.gpu_map().get(uuid)

    def gpu_map(self) -> dict[str, GpuHistory]:
        cached = self._cache.get("gpu_map")
        if cached is None:
            cached = {g.uuid: g for g in self.gpus}
            self._cache["gpu_map"] = cached
        return cached

    def gpus_on(self, node: str) -> list[GpuHistory]:
        """Cards whose current node is ``node``, by index."""
        cached = self._cache.get("gpus_on")
        if cached is None:
            cached = {}
            for g in self.gpus:
                cached.setdefault(g.node, []).append(g)
            for cards in cached.values():
                cards.sort(key=lambda g: (g.index if g.index is not None else 1 << 30, g.uuid))
            self._cache["gpus_on"] = cached
        return list(cached.get(node, ()))

    def expected_gpus(self, node: NodeHistory) -> int | None:
        """GPUs the node should have: its own override, else its group's."""
        if node.expected_gpus is not None:
            return node.expected_gpus
        group = self.groups.get(node.group or "")
        return group.expected_gpus if group else None

    def with_thresholds(self, thresholds: Any) -> FleetHistory:
        """A copy evaluated with other thresholds."""
        from dataclasses import replace

        return replace(self, thresholds=thresholds, _cache={})


def _groups(groups: Any) -> dict[str, GroupExpect]:
    if not groups:
        return {}
    items = groups.values() if isinstance(groups, Mapping) else groups
    out: dict[str, GroupExpect] = {}
    for g in items:
        if isinstance(g, GroupExpect):
            out[g.name] = g
            continue
        get = g.get if isinstance(g, Mapping) else (lambda k, d=None, _g=g: getattr(_g, k, d))
        name = str(get("name"))
        out[name] = GroupExpect(
            name=name,
            expected_driver=get("expected_driver"),
            expected_cuda_driver=get("expected_cuda_driver"),
            expected_gpus=get("expected_gpus"),
            expected_model=get("expected_model"),
        )
    return out


def day_of(ts: float) -> str:
    """The UTC day of a Unix time, ``YYYY-MM-DD``."""
    import datetime as _dt

    return _dt.datetime.fromtimestamp(math.floor(ts / DAY_S) * DAY_S, _dt.timezone.utc).strftime("%Y-%m-%d")
