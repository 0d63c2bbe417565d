"""One GPU's recorded telemetry as the rules see it: rows held by column.

Nothing here reads a database or a clock. Per-GPU telemetry is held by column
in a :class:`Series` (one list per key), because the rules scan a few keys
over many rows: 512 GPUs x 1,440 minutes would be 737,280 row dicts, and
reading one key out of each costs more than the rule itself. A Series can be
built from row dicts (columns are then extracted lazily, only for the keys a
rule asks for) or straight from columns (``SELECT`` + ``zip(*rows)``, the fast
path).

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

Hourly rows (``GpuHistory.hourly``) are described in
:mod:`fleetmon.health.hourly`, which makes them from minutes.

A missing key is always allowed and reads as ``None``; a ``None`` value is
never an alarm (an unsupported reading stays ``None`` with status
"unsupported").
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
import math
import operator
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from fleetmon.vocab import GpuState

__all__ = ["DAY_S", "EMPTY", "HOUR_S", "MINUTE_S", "Series", "day_of"]

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
        if not set(map(len, self._cols.values())) <= {self._len}:  # checked in C: 8,000 cards a pass
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
        # Rows share their status objects (one per distinct status): judge each distinct one
        # first, and walk the rows only when one of them matches (a GeForce card reports
        # "unsupported" ECC in every row: a walk of every row for every card and rule).
        distinct = dict(zip(map(id, col), col))
        if not any(_status_of(raw, key) == status for raw in distinct.values() if raw):
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


def _status_of(raw: Any, key: str) -> Any:
    """``key``'s entry of one stored status (a dict or its JSON text; None when unreadable)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    return raw.get(key) if isinstance(raw, Mapping) else None


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
            found = [*self._a.col(key), *self._b.col(key)]  # one list, not three
            self._cols[key] = found
        return found

    @property
    def dur(self) -> Sequence[Any]:
        found = self._cols.get("dur")
        if found is None:
            found = [*self._a.dur, *self._b.dur]
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


def day_of(ts: float) -> str:
    """The UTC day of a Unix time, ``YYYY-MM-DD``."""
    return _day_text(math.floor(ts / DAY_S))


def day_start(day: str) -> int:
    """The Unix time a UTC day ``YYYY-MM-DD`` begins (ValueError when it is not a date)."""
    return _day_number(day) * DAY_S


# A health pass names the same few days for every card (8,000 cards: 24,000 conversions a
# pass, 0.2 s through strftime/strptime); the days are remembered, a few hundred at most.
@functools.lru_cache(maxsize=4096)
def _day_text(number: int) -> str:
    return _dt.datetime.fromtimestamp(number * DAY_S, _dt.timezone.utc).strftime("%Y-%m-%d")


@functools.lru_cache(maxsize=4096)
def _day_number(day: str) -> int:
    return int(_dt.datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=_dt.timezone.utc).timestamp()) // DAY_S
