"""Reading a Prometheus HTTP API answer without trusting it (bounded memory, no exception but one).

An answer is read as bytes (at most the client's cap) and walked here in
place: only the parts fleetmon uses become Python objects (each series'
labels, and its points as two ``array('d')`` of 8 bytes per number), so
memory is the answer's bytes plus 16 bytes per kept point, whatever the
answer holds. ``json.loads`` of the whole answer built a tree of 7 to 20
times its size (a 60 MiB answer: MemoryError at 11.5 GB), and a deeply
nested one raised RecursionError. The standard library has no streaming JSON
reader and ``ijson`` would be a new dependency for one function, so this is a
small hand-written walker over the JSON grammar: structure by hand, strings
and numbers by regular expressions, and only small values (labels, a status,
an odd point) through :func:`json.loads`.

Points are kept only where they can be: a range answer's times on the
requested grid (``start + k·step`` within ``[start, end]``), values finite
and within ``MAX_ABS_VALUE``. Others are dropped and counted (:class:`Drops`);
a series without a usable ``UUID`` label is dropped the same way. Anything
that is not a Prometheus answer at all (``result: ["x"]``, ``values: 5``,
``value: [1]``, truncated or nested text, more than ``MAX_SERIES`` series,
more points than the read's budget) is one :class:`PrometheusError` line.
"""

from __future__ import annotations

import json
import math
import re
import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn

from fleetmon.errors import KnownError
from fleetmon.i18n import N_, Text
from fleetmon.text import printable

__all__ = ["Budget", "Drops", "MAX_ABS_VALUE", "MAX_LABEL_CHARS", "MAX_SERIES", "MAX_VALUES", "PrometheusError",
           "Series", "parse_answer"]

MAX_SERIES = 20_000
"""Series in one answer (a query per GPU: a fleet of 2,500 eight-GPU nodes)."""

MAX_VALUES = 10_000_000
"""Points kept by one window read, all its queries together (80 MB of arrays); more is an error that asks
for a shorter window or fewer nodes."""

MAX_ABS_VALUE = 1e15
"""Largest magnitude of a value kept (as the collector's ``limits.MAX_ABS_VALUE``): ``1e308`` is no reading,
and sums of it overflow."""

MAX_LABEL_CHARS = 256
"""Longest label value kept (as the collector's ``limits.MAX_NAME_CHARS``); a series with a longer ``UUID``
is dropped, other long labels are left out."""

MAX_LABELS_BYTES = 64 << 10
"""Largest ``metric`` object of one series (its labels), as text."""

MAX_SKIPPED = 1 << 20
"""Largest part of an answer walked over unread (``warnings``, a key of a later Prometheus)."""

MAX_POINTS_SLACK = 16
"""Points a series may hold beyond one per step (a duplicate or two)."""

_SMALL = 4096
"""Largest odd point (``[t, "v"]`` in an unusual spelling) or status value read through ``json.loads``."""


class PrometheusError(KnownError):
    """Prometheus cannot be reached, or refused or garbled the query (one line)."""


@dataclass
class Drops:
    """Points and series an answer held that were not kept, by reason (reported, never silent)."""

    outside: int = 0
    """points outside the requested range or off its step grid (a point in the year 33 million)"""
    not_a_number: int = 0
    """values that are NaN, infinite or not numbers (Prometheus's staleness markers among them)"""
    out_of_range: int = 0
    """values beyond ±MAX_ABS_VALUE"""
    series: int = 0
    """series without a usable ``UUID`` label, or of a GPU not asked for"""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, other: Drops) -> None:
        with self._lock:
            self.outside += other.outside
            self.not_a_number += other.not_a_number
            self.out_of_range += other.out_of_range
            self.series += other.series

    def note(self) -> str:
        """``"12 points outside the window, 3 not numbers"``; "" when nothing was dropped."""
        parts = [f"{n} {what}" for n, what in ((self.outside, "points outside the window or off its step"),
                                                (self.not_a_number, "values not numbers"),
                                                (self.out_of_range, f"values beyond ±{MAX_ABS_VALUE:g}"),
                                                (self.series, "series without a usable UUID label"))
                 if n]
        return ", ".join(parts)


class Budget:
    """The points one window read may keep (shared by its queries, thread-safe)."""

    def __init__(self, limit: int = MAX_VALUES) -> None:
        self.limit = int(limit)
        self.used = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> bool:
        with self._lock:
            self.used += n
            return self.used <= self.limit


@dataclass(frozen=True)
class Series:
    """One series of an answer: its labels and its kept points (times and values, in the answer's order)."""

    labels: dict[str, str]
    ts: array[float]
    vs: array[float]

    def points(self) -> list[tuple[float, float]]:
        return list(zip(self.ts, self.vs))


@dataclass(frozen=True)
class Grid:
    """The times a range answer may hold: ``start + k·step`` for ``start ≤ t ≤ end``."""

    start: float
    end: float
    step: float

    def index(self, t: float) -> int | None:
        if not self.start <= t <= self.end:
            return None
        k = round((t - self.start) / self.step)
        return k if abs(self.start + k * self.step - t) < 1e-3 else None


_WS = re.compile(rb"[ \t\n\r]*")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_LITERAL = re.compile(rb"true|false|null")
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
# The usual spelling of a point, read without json.loads: [1700000000.123,"42.5"]
_PAIR = re.compile(rb'\[[ \t\n\r]*(-?[0-9]{1,20}(?:\.[0-9]{1,20})?(?:[eE][-+]?[0-9]{1,3})?)[ \t\n\r]*,'
                   rb'[ \t\n\r]*"([^"\\]{0,40})"[ \t\n\r]*\]')
_CHECK_EVERY = 1 << 15

# What a malformed answer's line names (a JSON key of the answer, "status", "result", stays as it is).
_TRUNCATED = Text(N_("truncated"))
_UNREAD = Text(N_("a part fleetmon does not read"))
_A_POINT = Text(N_("a point"))


class _Walker:
    """A cursor over one answer's bytes; every failure is :meth:`fail`."""

    def __init__(self, buf: bytes | bytearray, where: str, deadline: float, cancelled: Callable[[], bool] | None) -> None:
        self.buf = buf
        self.where = where
        self.deadline = deadline
        self.cancelled = cancelled
        self.steps = 0

    def fail(self, why: str) -> NoReturn:
        raise PrometheusError(Text(N_("{where}: malformed answer: {why}"), where=self.where, why=why))

    def tick(self, n: int = 1) -> None:
        self.steps += n
        if self.steps >= _CHECK_EVERY:
            self.steps = 0
            if time.monotonic() > self.deadline:
                raise PrometheusError(Text(N_("{where}: the answer could not be read before the deadline"),
                                           where=self.where))
            if self.cancelled is not None and self.cancelled():
                raise PrometheusError(Text(N_("{where}: cancelled"), where=self.where))

    def ws(self, pos: int) -> int:
        m = _WS.match(self.buf, pos)
        return m.end() if m else pos

    def at(self, pos: int) -> int:
        """The byte at ``pos`` (-1 past the end)."""
        return self.buf[pos] if pos < len(self.buf) else -1

    def expect(self, pos: int, char: bytes, what: str) -> int:
        pos = self.ws(pos)
        if self.buf[pos:pos + 1] != char:
            self.fail(Text(N_("expected {what} at byte {pos}"), what=what, pos=pos) if pos < len(self.buf)
                      else _TRUNCATED)
        return pos + 1

    def skip(self, pos: int, limit: int = MAX_SKIPPED, what: str = _UNREAD) -> int:
        """The end of the value at ``pos``, without building it (depth counted, no recursion).

        A value longer than ``limit`` bytes is an error: nothing a Prometheus answer holds beside its
        series (``warnings``, ``infos``) is that long, and the walk stays short.
        """
        pos = self.ws(pos)
        c = self.at(pos)
        if c in (ord("{"), ord("[")):
            depth = 0
            for m in _TOKEN.finditer(self.buf, pos, min(len(self.buf), pos + limit + 1)):
                self.tick()
                t = m.group()[0]
                if t in (ord("{"), ord("[")):
                    depth += 1
                elif t in (ord("}"), ord("]")):
                    depth -= 1
                    if depth == 0:
                        return m.end()
            if pos + limit < len(self.buf):
                self.fail(Text(N_("{what} longer than {limit} bytes"), what=what, limit=limit))
            self.fail(_TRUNCATED)
        for pattern in (_STRING, _NUMBER, _LITERAL):
            scalar = pattern.match(self.buf, pos)
            if scalar:
                if scalar.end() - pos > limit:
                    self.fail(Text(N_("{what} longer than {limit} bytes"), what=what, limit=limit))
                return scalar.end()
        if c < 0:
            self.fail(Text(N_("unexpected end at byte {pos}"), pos=pos))
        self.fail(Text(N_("unexpected {char} at byte {pos}"), char=repr(chr(c)), pos=pos))

    def small(self, pos: int, limit: int, what: str) -> tuple[Any, int]:
        """The value at ``pos`` as Python (at most ``limit`` bytes of text)."""
        pos = self.ws(pos)
        end = self.skip(pos, limit, what)
        try:
            return json.loads(bytes(self.buf[pos:end])), end
        except (ValueError, RecursionError):
            self.fail(Text(N_("{what} is not JSON"), what=what))

    def key(self, pos: int) -> tuple[str, int]:
        pos = self.ws(pos)
        m = _STRING.match(self.buf, pos)
        if not m:
            self.fail(Text(N_("expected a key at byte {pos}"), pos=pos) if pos < len(self.buf) else _TRUNCATED)
        raw = bytes(m.group())
        if len(raw) > 256:
            return "", m.end()  # no key fleetmon reads is that long
        try:
            text = json.loads(raw) if b"\\" in raw else raw[1:-1].decode("utf-8")
        except ValueError:
            self.fail(Text(N_("a key is not text")))
        return str(text), m.end()

    def members(self, pos: int, on: Callable[[str, int], int], what: str) -> int:
        """Walk the object at ``pos``: ``on(key, position of its value)`` returns the value's end."""
        pos = self.ws(pos)
        if self.at(pos) != ord("{"):
            self.fail(Text(N_("{what} is not an object"), what=what))
        pos = self.ws(pos + 1)
        if self.at(pos) == ord("}"):
            return pos + 1
        while True:
            name, pos = self.key(pos)
            pos = self.expect(pos, b":", "':'")  # a character, as it is: no word to translate
            pos = self.ws(on(name, self.ws(pos)))
            c = self.at(pos)
            if c == ord("}"):
                return pos + 1
            if c != ord(","):
                self.fail(Text(N_("expected ',' or '}}' in {what} at byte {pos}"), what=what, pos=pos) if c >= 0
                          else _TRUNCATED)
            pos += 1

    def items(self, pos: int, on: Callable[[int], int], what: str) -> int:
        """Walk the array at ``pos``: ``on(position of an item)`` returns the item's end."""
        pos = self.ws(pos)
        if self.at(pos) != ord("["):
            self.fail(Text(N_("{what} is not an array"), what=what))
        pos = self.ws(pos + 1)
        if self.at(pos) == ord("]"):
            return pos + 1
        while True:
            pos = self.ws(on(self.ws(pos)))
            c = self.at(pos)
            if c == ord("]"):
                return pos + 1
            if c != ord(","):
                self.fail(Text(N_("expected ',' or ']' in {what} at byte {pos}"), what=what, pos=pos) if c >= 0
                          else _TRUNCATED)
            pos += 1


def _labels(value: Any, walker: _Walker) -> dict[str, str]:
    if not isinstance(value, dict):
        walker.fail(Text(N_("a series' metric is not an object")))
    out: dict[str, str] = {}
    for k, v in value.items():
        if isinstance(v, str) and len(v) <= MAX_LABEL_CHARS and len(k) <= MAX_LABEL_CHARS:
            out[k] = v
    return out


def _float(text: Any) -> float | None:
    """A point's value as Prometheus writes it (a string; a number tolerated); None: not a number."""
    if isinstance(text, bool) or not isinstance(text, (str, bytes, int, float)):
        return None
    try:
        return float(text)
    except (ValueError, OverflowError):
        return None


def parse_answer(raw: bytes | bytearray, *, where: str, kind: str, grid: Grid | None = None,
                 want: Callable[[dict[str, str]], bool] | None = None, budget: Budget | None = None,
                 drops: Drops | None = None, deadline: float = math.inf,
                 cancelled: Callable[[], bool] | None = None) -> list[Series]:
    """The series of a Prometheus answer (``kind``: ``"matrix"`` for query_range, ``"vector"`` for query).

    Args:
        grid: a range answer's times; points elsewhere are dropped.
        want: which series to keep, by labels (others are dropped and counted).
        budget: the read's points; exceeding it is an error.
        drops: counts what was not kept.
        deadline: ``time.monotonic()`` by which the walk must end.
        cancelled: polled now and then; True ends the walk (the reader gave up).

    Raises:
        PrometheusError: not a Prometheus answer, a failed query, too many series or points.
    """
    w = _Walker(raw, where, deadline, cancelled)
    mine = Drops()
    found: list[Series] = []
    status: list[Any] = [None]
    result_type: list[Any] = [None]
    error: list[str] = []
    seen_series = [0]

    # Prometheus answers one point per step at most; a series with more is not a Prometheus answer (and
    # walking 60 MiB of off-grid points of one series took seconds).
    most = MAX_POINTS_SLACK + (int((grid.end - grid.start) // grid.step) + 1 if grid is not None else 1)

    def point(pos: int, ts: array[float], vs: array[float]) -> int:
        w.tick()
        m = _PAIR.match(raw, pos)
        if m is not None:
            t_raw: Any = m.group(1)
            v_raw: Any = m.group(2)
            end = m.end()
        else:
            pair, end = w.small(pos, _SMALL, _A_POINT)
            if not isinstance(pair, list) or len(pair) != 2:
                w.fail(Text(N_("a point is not [time, value]")))
            t_raw, v_raw = pair
            if isinstance(t_raw, (bool, str)) or not isinstance(t_raw, (int, float)):
                w.fail(Text(N_("a point's time is not a number")))
        t = _float(t_raw)
        if t is None or not math.isfinite(t):
            mine.outside += 1
            return end
        if grid is not None and grid.index(t) is None:
            mine.outside += 1
            return end
        v = _float(v_raw)
        if v is None or not math.isfinite(v):
            mine.not_a_number += 1
        elif abs(v) > MAX_ABS_VALUE:
            mine.out_of_range += 1
        else:
            ts.append(t)
            vs.append(v)
        return end

    def series(pos: int) -> int:
        seen_series[0] += 1
        if seen_series[0] > MAX_SERIES:
            w.fail(Text(N_("more than {limit} series; choose fewer nodes or a shorter window"), limit=MAX_SERIES))
        labels: dict[str, str] = {}
        ts: array[float] = array("d")
        vs: array[float] = array("d")
        shape = [False]

        def member(name: str, at: int) -> int:
            nonlocal labels
            if name == "metric":
                value, end = w.small(at, MAX_LABELS_BYTES, Text(N_("a series' labels")))
                labels = _labels(value, w)
                return end
            if name == "values" and kind == "matrix":
                shape[0] = True
                count = [0]

                def counted(p: int) -> int:
                    count[0] += 1
                    if count[0] > most:
                        w.fail(Text(N_("a series with more than {most} points for {steps} steps"), most=most,
                                    steps=most - MAX_POINTS_SLACK))
                    return point(p, ts, vs)
                return w.items(at, counted, Text(N_("a series' values")))
            if name == "value" and kind == "vector":
                shape[0] = True
                return point(at, ts, vs)
            return w.skip(at)

        end = w.members(pos, member, Text(N_("a series")))
        if not shape[0]:  # values, value: the answer's keys, as they are
            w.fail(Text(N_("a series without {key}"), key="values" if kind == "matrix" else "value"))
        uuid = labels.get("UUID", "")
        if not uuid or (want is not None and not want(labels)):
            mine.series += 1
            return end
        if budget is not None and not budget.take(len(ts)):
            raise PrometheusError(Text(N_("{where}: more than {limit:,} points for this window; "
                                          "choose a shorter window or fewer nodes"), where=where, limit=budget.limit))
        found.append(Series(labels, ts, vs))
        return end

    def data(pos: int) -> int:
        def member(name: str, at: int) -> int:
            if name == "resultType":
                result_type[0], end = w.small(at, 64, "resultType")
                return end
            if name == "result":
                return w.items(at, series, "result")
            return w.skip(at)
        return w.members(pos, member, "data")

    def top(name: str, at: int) -> int:
        if name == "status":
            status[0], end = w.small(at, 64, "status")
            return end
        if name == "data":
            if w.at(w.ws(at)) == ord("n"):  # "data": null (an error answer)
                return w.skip(at)
            return data(at)
        if name in ("error", "errorType"):
            end = w.skip(at)
            if end - at <= _SMALL:
                try:
                    text = json.loads(bytes(raw[at:end]))
                except (ValueError, RecursionError):
                    text = None
                if isinstance(text, str):
                    error.append(text)
            return end
        return w.skip(at)

    try:
        end = w.ws(w.members(0, top, Text(N_("the answer"))))
    except RecursionError:  # not reached by the walker itself; json.loads of a small part guards its own
        w.fail(Text(N_("nested too deeply")))
    if end != len(raw):
        w.fail(Text(N_("text after the answer at byte {pos}"), pos=end))
    if status[0] != "success":
        detail = printable(" ".join(error).replace("\n", " "), 300) or printable(f"status {status[0]!r}", 80)
        raise PrometheusError(Text(N_("{where}: query failed: {detail}"), where=where, detail=detail))
    if result_type[0] != kind:  # matrix, vector: Prometheus's resultType, as it is
        raise PrometheusError(Text(N_("{where}: expected a {kind} answer"), where=where, kind=kind))
    if drops is not None:
        drops.add(mine)
    return found


def error_text(raw: bytes | bytearray) -> str:
    """The ``errorType`` and ``error`` of a failed answer, one line (at most 300 characters); "" when none."""
    if len(raw) > 1 << 20:
        return ""
    try:
        doc = json.loads(bytes(raw))
    except (ValueError, RecursionError):
        return ""
    if isinstance(doc, dict):
        return " ".join(str(doc.get(k)) for k in ("errorType", "error") if isinstance(doc.get(k), str)
                        ).replace("\n", " ")[:300]
    return ""
