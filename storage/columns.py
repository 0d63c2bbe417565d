"""Column reads of per-GPU tables for analyses that scan a few keys over many rows.

``storage.health_input.load_minutes`` decodes every column of every GPU-minute into
one dict (24 h of 512 GPUs: 737,280 dicts, about 10 s). An analysis that reads
a handful of keys asks :func:`read_columns` instead with a :class:`ColumnSpec`:
only those values, decoded in SQL (:func:`gauge_sql` knows the compact
encoding of :mod:`storage.schema`), with rarely changing integers packed per
row and parsed once per run of equal values. It returns ``{uuid: {key: column}}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from storage.db import rows
from storage.schema import decode_status, gauge_scale


def gauge_sql(gauge: str, stat: str, prefix: str = "") -> str:
    """A decoded gauge statistic (see storage.schema's compact encoding)."""
    s = gauge_scale(gauge)
    m = f"{prefix}{gauge}_mean"
    raw = {"mean": m, "min": f"({m} - {prefix}{gauge}_dmin)", "max": f"({m} + {prefix}{gauge}_dmax)"}[stat]
    return raw if s == 1 else f"{raw} / {float(s)!r}"


@dataclass(frozen=True)
class ColumnSpec:
    """What one SELECT over a per-GPU table reads, and how it comes back.

    ``plain`` columns come one value per row. ``packs`` are groups of small
    integer columns that rarely change from one row to the next (counters,
    states, throttle counts): SQLite writes each group as one text
    (``printf``, NULL as ''), and the reader parses each run of equal texts
    once. Fetching a value costs far more in Python than parsing a run, so a
    pack of 15 columns costs about as much as two plain ones.
    """

    table: str
    plain: tuple[tuple[str, str], ...]
    packs: tuple[tuple[tuple[str, str, float], ...], ...] = ()

    def sql(self, ids: Sequence[int]) -> str:
        exprs = [expr for _, expr in self.plain]
        for pack in self.packs:
            exprs.append(f"printf('{','.join('%s' for _ in pack)}', {', '.join(e for _, e, _ in pack)})")
        return (f"SELECT gpu_id, {', '.join(exprs)} FROM {self.table} "
                f"WHERE gpu_id IN ({', '.join(str(int(i)) for i in ids)}) AND ts >= ? AND ts <= ? "
                f"ORDER BY gpu_id, ts")


def int_columns(names: Iterable[str]) -> tuple[tuple[str, str, float], ...]:
    return tuple((n, n, 1.0) for n in names)




def _runs(values: Sequence[Any]) -> list[tuple[Any, int]]:
    """Runs of equal consecutive values: [(value, length), ...]."""
    return [(k, len(list(g))) for k, g in groupby(values)]


def _unpack(values: Sequence[str], pack: Sequence[tuple[str, str, float]], out: dict[str, Sequence[Any]]) -> None:
    """The columns of one GPU's packed texts, each run of equal texts parsed once."""
    runs = _runs(values)
    parsed: list[list[float | None]] = [[int(x) if x else None for x in text.split(",")] for text, _ in runs]
    for j, (_, _, scale) in enumerate(pack):
        if scale != 1:
            for row in parsed:
                value = row[j]
                if value is not None:
                    row[j] = value / scale
    n = len(values)
    for j, (key, _, _) in enumerate(pack):
        if len(runs) == 1:
            out[key] = [parsed[0][j]] * n
            continue
        col: list[Any] = []
        for row, (_, count) in zip(parsed, runs):
            col += [row[j]] * count
        out[key] = col


def _statuses(values: Sequence[Any], memo: dict[Any, Any]) -> list[Any]:
    """Stored status codes as dicts (shared per distinct code; None when all fields read fine)."""
    out: list[Any] = []
    for raw, count in _runs(values):
        if raw is None:
            st = None
        elif raw in memo:
            st = memo[raw]
        else:
            try:
                st = memo[raw] = decode_status(raw) or None
            except ValueError:
                st = memo[raw] = None
        out += [st] * count
    return out


def read_columns(db: Any, spec: ColumnSpec, uuid_of: Mapping[int, str], since: float, until: float,
                  ) -> dict[str, dict[str, Sequence[Any]]]:
    """{uuid: {key: column}} for the GPUs in ``uuid_of``, rows with since <= ts <= until."""
    if not uuid_of or until < since:
        return {}
    found = rows(db, spec.sql(sorted(uuid_of)), (int(since), int(until)))
    if not found:
        return {}
    columns = list(zip(*found))
    del found
    plain_keys = [k for k, _ in spec.plain]
    first_pack = 1 + len(plain_keys)
    memo: dict[Any, Any] = {}
    out: dict[str, dict[str, Sequence[Any]]] = {}
    a = 0
    for gid, count in _runs(columns[0]):
        b = a + count
        cols: dict[str, Sequence[Any]] = {}
        for j, key in enumerate(plain_keys):
            cols[key] = columns[1 + j][a:b]
        for j, pack in enumerate(spec.packs):
            _unpack(columns[first_pack + j][a:b], pack, cols)
        if "status" in cols:
            cols["status"] = _statuses(cols["status"], memo)
        out[uuid_of[gid]] = cols
        a = b
    return out
