"""What the health engine reads: the recorded window, column by column.

The engine (:mod:`fleetmon.health`) judges a window of recorded history and
never touches a file; :func:`read_window` gathers that window here, where the
tables are known, and hands it out as a :class:`RecordedWindow` of typed rows
and plain columns:

* per-minute telemetry for the recent part (from an hour boundary, and at the
  latest from the oldest minute not rolled up yet: an hour whose rollup is
  missing or stale is read per minute), hourly rollups joined with their
  ``hourly_health`` companions for the older part;
* node outages from the collector's ``node_unreachable`` / ``node_back``
  events (one per status flip, cheap over any window) rather than every poll,
  and the first attempts of nodes that never answered;
* events, inventory changes and placements; stored daily derating rows.

Telemetry comes through :func:`storage.columns.read_columns`: the engine scans
a few keys over many rows, and reading only those keys, decoded in SQL, with
rarely changing integers packed per row, takes 2.4 s for 24 h of 512 GPUs,
half the time of a plain ``SELECT *`` of the same rows (one dict per row, as
:func:`load_minutes` gives, took 10 s). The column specs below say which keys
the rules use.

The collector judges the same 24 h every minute or so: its :class:`WindowCache`
keeps the telemetry of one pass and reads only what was stored since, at
8,000 GPUs 0.5 s instead of 3.5 s a pass (benchmarks/bench_health_pass.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlite_utils import Database

from fleetmon.fields import HW_THROTTLE_REASONS
from storage import columns, findings, queries
from storage.db import get_meta, query, rows
from storage.ingest import LateMinutes, watch_minutes
from storage.rows import (DeratingDay, EventRow, GpuColumns, GpuRow, InventoryChangeRow, NodeRow, PlacementRow)
from storage.schema import HEALTH_HOURLY_COLUMN_NAMES, gauge_scale, row_decoder

HOUR_S = 3600

OUTAGE_EVENTS: tuple[str, ...] = ("node_unreachable", "node_back")
"""The collector's status-flip events: the node outages, not node events of their own."""

# -- what the engine reads ----------------------------------------------------------

_GAUGES: tuple[tuple[str, str, str], ...] = (
    # (key, gauge, statistic)
    ("power_limit_w_mean", "power_limit_w", "mean"),
    ("temp_c_mean", "temp_c", "mean"),
    ("temp_c_max", "temp_c", "max"),
    ("power_w_mean", "power_w", "mean"),
    ("power_w_min", "power_w", "min"),
    ("power_w_max", "power_w", "max"),
    ("util_gpu_pct_min", "util_gpu_pct", "min"),
    ("sm_clock_mhz_mean", "sm_clock_mhz", "mean"),
    ("fan_pct_max", "fan_pct", "max"),
)
_COUNTERS = ("ecc_corr_vol", "ecc_corr_agg", "ecc_unc_vol", "ecc_unc_agg", "retired_sbe", "retired_dbe",
             "remap_corr", "remap_unc", "pcie_replay")
_STATES = ("retired_pending", "remap_pending", "remap_failure")
_LINKS = ("pcie_gen_busy_min", "pcie_width_busy_min")


_HW_THROTTLES = tuple("thr_" + r for r in HW_THROTTLE_REASONS)
"""Throttle counts that are zero on a healthy GPU (SwPowerCap is how a busy GPU normally runs)."""
_STICKY = ("n", "lost") + _COUNTERS + _STATES + _LINKS + _HW_THROTTLES
_POWER_LIMIT = (("power_limit_w_mean", "power_limit_w_mean", gauge_scale("power_limit_w")),)

# (The mean temperature is judged on hourly rows only: a minute is judged by its maximum.)
_MINUTES = columns.ColumnSpec(
    table="samples",
    plain=(("ts", "ts"), ("status", "status"), ("busy_n", "busy_n"), ("thr_sw_power_cap", "thr_sw_power_cap"))
    + tuple((key, columns.gauge_sql(g, st)) for key, g, st in _GAUGES if key not in ("power_limit_w_mean", "temp_c_mean")),
    packs=(columns.int_columns(_STICKY) + _POWER_LIMIT,),
)

# Hourly rows are few and their sums change every hour: only what a healthy GPU keeps
# constant is packed. The minimum power and utilization are read per minute only.
_HOURLY = columns.ColumnSpec(
    table="hourly",
    plain=(("ts", "ts"), ("busy_n", "busy_n"), ("thr_sw_power_cap", "thr_sw_power_cap"))
    + tuple((key, columns.gauge_sql(g, st)) for key, g, st in _GAUGES
            if key not in ("power_limit_w_mean", "power_w_min", "util_gpu_pct_min")),
    packs=(
        columns.int_columns(_STICKY) + _POWER_LIMIT,
        columns.int_columns(tuple(f"{c}_delta" for c in _COUNTERS)),
    ),
)

_HOURLY_HEALTH = columns.ColumnSpec(table="hourly_health", plain=(("ts", "ts"),) + tuple(
    (k, k) for k in HEALTH_HOURLY_COLUMN_NAMES))


def _join_health(hourly: dict[str, dict[str, Sequence[Any]]], health: Mapping[str, Mapping[str, Sequence[Any]]]
                 ) -> None:
    """Add the ``hourly_health`` keys to each GPU's hourly columns (None for hours without a row)."""
    for uuid, cols in hourly.items():
        cols["lost_minutes"] = cols["lost"]
        extra = health.get(uuid)
        ts = cols["ts"]
        if extra is not None and list(extra["ts"]) == list(ts):
            for k in HEALTH_HOURLY_COLUMN_NAMES:
                cols[k] = extra[k]
            continue
        at = {t: i for i, t in enumerate(extra["ts"])} if extra is not None else {}
        for k in HEALTH_HOURLY_COLUMN_NAMES:
            src = extra[k] if extra is not None else ()
            cols[k] = [src[at[t]] if t in at else None for t in ts]


# -- the window -----------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedWindow:
    """The recorded window [since, now] as storage holds it, for the health engine.

    Attributes:
        nodes: every node (groups as the collector recorded them).
        gpus: every card seen in the window (a card gone before it started is
            history, not a finding).
        minutes, hourly: per GPU UUID, the telemetry columns (keys as the
            rules name them; hourly ones include the ``hourly_health`` keys
            and ``lost_minutes``); only for the GPUs of the nodes asked for.
        placements: per GPU UUID, where it sat, oldest first.
        outage_events: per node, its status-flip events (all of them: an
            outage that began before the window is still an outage).
        never_answered: nodes that never answered a poll: (first attempt,
            failed attempts).
        events: node events of the window (not the status flips).
        inventory_changes: inventory changes of the window (not the ``enrolled`` entries).
        derating: stored daily derating rows from ``derating_since`` on.
    """

    nodes: tuple[NodeRow, ...] = ()
    gpus: tuple[GpuRow, ...] = ()
    minutes: Mapping[str, GpuColumns] = field(default_factory=dict)
    hourly: Mapping[str, GpuColumns] = field(default_factory=dict)
    placements: Mapping[str, tuple[PlacementRow, ...]] = field(default_factory=dict)
    outage_events: Mapping[str, tuple[EventRow, ...]] = field(default_factory=dict)
    never_answered: Mapping[str, tuple[float, int]] = field(default_factory=dict)
    events: tuple[EventRow, ...] = ()
    inventory_changes: tuple[InventoryChangeRow, ...] = ()
    derating: tuple[DeratingDay, ...] = ()


def minute_start(db: Database, now: float, since: float, minutes_s: float) -> float:
    """Where the per-minute part of [since, now] begins (hourly rollups before it).

    At most ``minutes_s`` before ``now``, on an hour boundary (hourly rows cover
    whole hours), and at the latest at the oldest minute not rolled up yet.
    """
    start = max(since, now - max(0.0, minutes_s))
    dirty = get_meta(db, "rollup_dirty_from")
    if dirty is not None:
        start = min(start, float(dirty))
    return float(int(start) // HOUR_S * HOUR_S) if start > since else since


STILL_THERE_S = 600.0
"""A card seen this close to its node's newest good poll was there when the node went silent."""


def nodes_as_of(db: Database, node_rows: Iterable[NodeRow], now: float) -> tuple[NodeRow, ...]:
    """The nodes as they stood at ``now``: nothing polled after it counts.

    A node row holds the newest poll. A report as of a past time must not read
    a later good poll as news of then (a node with no data then read "pass"):
    a node polled after ``now`` takes its newest good poll and newest attempt at
    or before ``now`` from the poll log, and, where the log was pruned, its
    newest stored minute or hour at or before ``now`` as its last good poll.
    With none, it has no good poll then (``last_ok`` None: "unknown").
    """
    out = []
    for n in node_rows:
        if (n.last_ok is None or n.last_ok <= now) and (n.last_attempt is None or n.last_attempt <= now):
            out.append(n)
            continue
        last = rows(db, "SELECT ts, ok, error, error_texts FROM poll_log WHERE node = ? AND ts <= ? "
                        "ORDER BY ts DESC LIMIT 1", [n.name, now])
        good = rows(db, "SELECT ts FROM poll_log WHERE node = ? AND ts <= ? AND ok = 1 ORDER BY ts DESC LIMIT 1",
                    [n.name, now])
        last_ok = float(good[0][0]) if good else _newest_data(db, n.name, now)
        status: str | None
        if last:
            ts, ok, error, error_texts = last[0]
            attempt: float | None = float(ts)
            status = "ok" if ok else "unreachable"
            last_error = None if ok else queries.stored_text(error, error_texts, "error")
        else:
            attempt, status, last_error = last_ok, ("ok" if last_ok is not None else None), None
        out.append(replace(n, last_ok=last_ok, last_attempt=attempt, status=status, last_error=last_error))
    return tuple(out)


def _newest_data(db: Database, node: str, now: float) -> float | None:
    """The newest stored minute (else hourly bucket) of ``node``'s cards at or before ``now``, None when none."""
    ids = [r[0] for r in rows(db, "SELECT id FROM gpus WHERE node = ?", [node])]
    for table in ("samples", "hourly"):
        newest = [found[0][0] for i in ids   # one index seek per card (primary key gpu_id, ts)
                  if (found := rows(db, f"SELECT ts FROM {table} WHERE gpu_id = ? AND ts <= ? ORDER BY ts DESC LIMIT 1",
                                    [i, now]))]
        if newest:
            return float(max(newest))
    return None


def read_window(db: Database, now: float, since: float, *, nodes: Iterable[str] | None = None,
                minutes_s: float, derating_since: float, derating_until: float | None = None,
                cache: WindowCache | None = None) -> RecordedWindow:
    """The recorded window [since, now] (see :class:`RecordedWindow`).

    Args:
        nodes: read telemetry only for these nodes (default: all). Every node
            and card is still listed.
        minutes_s: how much of the recent window is read per minute.
        derating_since: the first day of stored derating rows to read.
        derating_until: the day they end before (default: after ``now``). The collector's
            pass recomputes today's and stores them: it reads the days before today, and
            through ``cache`` only when they may have changed.
        cache: the telemetry of the last read, kept for the next (see
            :class:`WindowCache`; only without ``nodes``). Its columns are
            its own: a window read through it is valid until its next read.

    Raises:
        StorageError: the database cannot be read.
    """
    now = float(now)
    since = min(float(since), now)
    m_start = minute_start(db, now, since, minutes_s)
    hour_start = int(since) // HOUR_S * HOUR_S
    scope = set(nodes) if nodes is not None else None

    memo = cache.inventories if cache is not None else None
    node_rows = nodes_as_of(db, queries.nodes(db), now)
    # A card seen in the window, or at its node's newest good poll: the cards of a node nobody has
    # heard from since stay listed (the node went silent, the card did not leave). A card its node
    # stopped reporting before the window is gone.
    last_ok = {n.name: n.last_ok for n in node_rows if n.last_ok is not None}
    gpu_rows = tuple(g for g in queries.gpus(db, memo) if g.last_seen is None or g.last_seen >= since
                     or g.last_seen >= last_ok.get(g.node or "", float("inf")) - STILL_THERE_S)
    id_of = gpu_ids(db)
    wanted = {id_of[g.uuid]: g.uuid for g in gpu_rows   # gpu id -> uuid, telemetry read for these
              if g.uuid in id_of and (scope is None or g.node in scope)}
    wanted_uuids = set(wanted.values())
    if cache is not None and scope is None:
        minutes, hourly = cache.read(db, wanted, since, m_start, hour_start, now)
    else:
        minutes, hourly = _telemetry(db, wanted, since, m_start, hour_start, now)

    placed: dict[str, list[PlacementRow]] = {}
    for p in queries.placements(db):
        if p.uuid in wanted_uuids:
            placed.setdefault(p.uuid, []).append(p)
    flips: dict[str, list[EventRow]] = {}
    for e in queries.events(db, until=now + 1, kinds=OUTAGE_EVENTS):
        flips.setdefault(e.node, []).append(e)
    return RecordedWindow(
        nodes=node_rows,
        gpus=gpu_rows,
        minutes=minutes,
        hourly=hourly,
        placements={u: tuple(ps) for u, ps in placed.items()},
        outage_events={n: tuple(es) for n, es in flips.items()},
        never_answered=never_answered(db),
        events=tuple(e for e in queries.events(db, since=since, until=now + 1) if e.kind not in OUTAGE_EVENTS),
        inventory_changes=tuple(queries.inventory_changes(db, since=since, until=now + 1, except_kinds=("enrolled",))),
        derating=(cache.derating(db, derating_since, derating_until)
                  if cache is not None and derating_until is not None and derating_until <= now
                  else tuple(findings.derating_history(db, None, derating_since,
                                                       now + 1 if derating_until is None else derating_until))),
    )


Telemetry = dict[str, dict[str, Sequence[Any]]]


def _telemetry(db: Database, wanted: Mapping[int, str], since: float, m_start: float, hour_start: float,
               now: float) -> tuple[Telemetry, Telemetry]:
    """Per-minute columns of [m_start, now] and hourly ones of [hour_start, m_start), by UUID."""
    minutes = columns.read_columns(db, _MINUTES, wanted, m_start, now) if m_start <= now else {}
    hourly: Telemetry = {}
    if m_start > since:
        hourly = columns.read_columns(db, _HOURLY, wanted, hour_start, m_start - 1)
        _join_health(hourly, columns.read_columns(db, _HOURLY_HEALTH, wanted, hour_start, m_start - 1))
    return minutes, hourly


class WindowCache:
    """The telemetry of the last :func:`read_window`, so the next one reads only what is new.

    The collector judges the last 24 h every minute or so, and its window moves
    by a minute or two between passes: reading all of it again was most of each
    pass (5 s of 8 s at 8,000 GPUs). Kept here: per GPU, the per-minute columns
    read so far and the hourly part before them. The next read fetches each
    GPU's minutes after the newest one it holds (its mark: a minute row is
    stored after its minute ends, so the minute that was running at the last
    read comes now) and appends them, and reads again, whole, only what may
    have changed underneath:

    * every GPU, when the per-minute part or the hourly part begins at another
      hour (about once an hour) or when another connection has committed since
      (``PRAGMA data_version``: a hand import, a second writer; the store's own
      writes through this connection do not change it);
    * a GPU whose minute rows were written at or before its mark through
      this connection (a node's buffer backfilled after an
      outage, an agent clock that went back), as :class:`storage.ingest.LateMinutes`
      notes them: their rollups change too;
    * a GPU it did not read last time.

    One cache serves one Database object, read and written by one thread.
    """

    def __init__(self) -> None:
        self._key: tuple[float, float] | None = None
        self._until: int | None = None
        self._version: int | None = None
        self._seen: set[int] = set()
        self._marks: dict[int, int] = {}
        self._minutes: dict[str, dict[str, list[Any]]] = {}
        self._hourly: Telemetry = {}
        self._watch = LateMinutes()
        self.inventories: dict[str, dict[str, Any]] = {}
        """Stored inventory text -> its decoded form (:func:`storage.queries.gpus`'s memo)."""
        self._derating: tuple[tuple[float, float, int], tuple[DeratingDay, ...]] | None = None
        self.full_reads = 0
        """Reads that fetched the whole window (the first one included)."""
        self.gpus_reread = 0
        """GPUs read whole again since the cache was made (late rows, GPUs new to the window)."""

    def read(self, db: Database, wanted: Mapping[int, str], since: float, m_start: float, hour_start: float,
             now: float) -> tuple[Telemetry, Telemetry]:
        """The telemetry of the window, as :func:`_telemetry` reads it.

        Raises:
            StorageError: the database cannot be read (the next read reads everything).
        """
        try:
            return self._update(db, wanted, since, m_start, hour_start, now)
        except BaseException:
            self._key = None  # half-appended columns are never read again
            self._minutes, self._hourly = {}, {}
            raise

    def derating(self, db: Database, since: float, until: float) -> tuple[DeratingDay, ...]:
        """Stored derating rows of the days [since, until), read again only when they may have changed.

        Days before today change only through other connections (a bulk history written by
        ``fleetmon.assess.store_derating_history``, a second writer): ``PRAGMA data_version``
        tells. The collector's own pass writes today's rows only. At a 14-day trend window and
        8,000 cards that is 100,000 rows a pass not read again.
        """
        key = (float(since), float(until), queries.data_version(db))
        if self._derating is None or self._derating[0] != key:
            self._derating = (key, tuple(findings.derating_history(db, None, since, until)))
        return self._derating[1]

    @property
    def gpus_held(self) -> int:
        """How many cards the last read held."""
        return len(self._seen)

    def forget_derating(self) -> None:
        """Read the stored derating rows again next time (this connection rewrote earlier days)."""
        self._derating = None

    def _update(self, db: Database, wanted: Mapping[int, str], since: float, m_start: float, hour_start: float,
              now: float) -> tuple[Telemetry, Telemetry]:
        until = int(now)
        watch_minutes(db, self._watch)
        late = self._watch.take()
        key = (float(m_start), float(hour_start))
        version = queries.data_version(db)
        if (self._key != key or self._version != version or self._until is None or until < self._until):
            minutes, hourly = _telemetry(db, wanted, since, m_start, hour_start, now)
            self._minutes = {u: _lists(c) for u, c in minutes.items()}
            self._hourly = hourly
            self.full_reads += 1
        else:
            again = {gid: uuid for gid, uuid in wanted.items() if gid in late or gid not in self._seen}
            # The others: what each GPU stored after the newest minute held of it (GPUs at the
            # same mark, nearly all of them, in one query).
            after: dict[int, dict[int, str]] = {}
            for gid, uuid in wanted.items():
                if gid not in again:
                    after.setdefault(self._marks.get(gid, int(m_start) - 1), {})[gid] = uuid
            for mark, ids in after.items():
                if mark < until:
                    for uuid, cols in columns.read_columns(db, _MINUTES, ids, mark + 1, until).items():
                        self._append(uuid, cols)
            if again:
                self.gpus_reread += len(again)
                minutes, hourly = _telemetry(db, again, since, m_start, hour_start, now)
                for uuid in again.values():
                    self._minutes.pop(uuid, None)
                    self._hourly.pop(uuid, None)
                self._minutes.update((u, _lists(c)) for u, c in minutes.items())
                self._hourly.update(hourly)
            gone = set(self._minutes).union(self._hourly).difference(wanted.values())
            for uuid in gone:
                self._minutes.pop(uuid, None)
                self._hourly.pop(uuid, None)
        # Each GPU's mark: its newest minute held (before the per-minute part when none): a row
        # stored later at or before it is late and makes the GPU read again, whole.
        first = int(m_start) - 1
        marks: dict[int, int] = {}
        for gid, uuid in wanted.items():
            held = self._minutes.get(uuid)
            marks[gid] = int(held["ts"][-1]) if held and held["ts"] else first
        self._marks = marks
        self._watch.take(marks)
        self._key, self._until, self._version, self._seen = key, until, version, set(wanted)
        out: Telemetry = {u: dict(c) for u, c in self._minutes.items()}
        return out, dict(self._hourly)

    def _append(self, uuid: str, cols: Mapping[str, Sequence[Any]]) -> None:
        mine = self._minutes.get(uuid)
        if mine is None:
            self._minutes[uuid] = _lists(cols)
            return
        for k, values in cols.items():
            mine[k].extend(values)


def _lists(cols: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
    return {k: list(v) for k, v in cols.items()}


def gpu_ids(db: Database) -> dict[str, int]:
    """Every GPU's internal id by UUID (the key of the per-GPU tables)."""
    return {r["uuid"]: int(r["id"]) for r in query(db, "SELECT uuid, id FROM gpus")}


def never_answered(db: Database) -> dict[str, tuple[float, int]]:
    """Nodes that never answered a poll: {node: (first attempt, failed attempts)}."""
    return {r["node"]: (float(r["first"]), int(r["n"])) for r in query(db, """
        SELECT node, min(ts) AS first, count(*) AS n FROM poll_log
        WHERE node IN (SELECT name FROM nodes WHERE last_ok IS NULL) GROUP BY node""")}


# -- whole rows, one dict per GPU-minute or bucket (tests and tools; slow for the engine) ---------


def _gpu_filter(nodes: Iterable[str] | None) -> tuple[str, list[Any]]:
    if nodes is None:
        return "SELECT id FROM gpus", []
    names = list(nodes)
    return f"SELECT id FROM gpus WHERE node IN ({', '.join('?' for _ in names)})", names


def _load(db: Database, table: str, kind: str, since: float, until: float, nodes: Iterable[str] | None,
          fields: Iterable[str] | None) -> dict[str, list[dict[str, Any]]]:
    cols, decode = row_decoder(kind, set(fields) if fields is not None else None)
    ids, params = _gpu_filter(nodes)
    uuid_of = {r[0]: r[1] for r in rows(db, "SELECT id, uuid FROM gpus")}
    out: dict[str, list[dict[str, Any]]] = {}
    found = rows(db, f"""SELECT gpu_id, {', '.join(cols)} FROM {table}
                         WHERE gpu_id IN ({ids}) AND ts >= ? AND ts < ? ORDER BY gpu_id, ts""",
                 params + [int(since), until])
    for r in found:
        out.setdefault(uuid_of[r[0]], []).append(decode(r[1:]))
    return out


def load_minutes(db: Database, since: float, until: float, nodes: Iterable[str] | None = None,
                 fields: Iterable[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Raw minutes in [since, until) by GPU UUID, oldest first.

    Each row: ``ts``, ``n``, ``state`` ("ok"/"lost"), ``status`` (field →
    status), and the GpuMinute value keys (``<gauge>_min/_mean/_max``, counters,
    states, ``thr_<reason>``, ``busy_n``, ``pcie_gen_busy_min``,
    ``pcie_width_busy_min``). Minutes older than the raw retention are gone:
    use :func:`load_hourly` for long windows.
    """
    return _load(db, "samples", "minute", since, until, nodes, fields)


def load_hourly(db: Database, since: float, until: float, nodes: Iterable[str] | None = None,
                fields: Iterable[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Hourly rollups in [since, until) by GPU UUID (keys as in :func:`storage.queries.gpu_history`)."""
    return _load(db, "hourly", "rollup", since, until, nodes, fields)


def load_daily(db: Database, since: float, until: float, nodes: Iterable[str] | None = None,
               fields: Iterable[str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Daily rollups in [since, until) by GPU UUID."""
    return _load(db, "daily", "rollup", since, until, nodes, fields)


def coverage(db: Database, uuids: Iterable[str], after: float, until: float
             ) -> dict[str, tuple[float, float, float | None]]:
    """How much data each card sent in (``after``, ``until``]: {uuid: (hours with data, busy minutes, newest)}.

    Counted from the hourly rollups (hours starting after ``after``) and the
    per-minute table for what the rollups do not hold yet; ``newest`` is the
    end of the newest stored minute or hour (at most ``until``). A card
    without any data there is left out. What the health lifecycle needs to
    tell a quiet period backed by data from a silent one.
    """
    ids = {i: u for u, i in gpu_ids(db).items() if u in set(uuids)}
    if not ids:
        return {}
    marks = ",".join("?" for _ in ids)
    first_hour = (int(after) // HOUR_S + 1) * HOUR_S
    out: dict[str, tuple[float, float, float | None]] = {}
    for r in query(db, f"""
            SELECT h.gpu_id AS gid, count(*) AS hours, sum(coalesce(hh.busy_minutes, 0)) AS busy,
                   max(h.ts) AS last
            FROM hourly h LEFT JOIN hourly_health hh ON hh.gpu_id = h.gpu_id AND hh.ts = h.ts
            WHERE h.gpu_id IN ({marks}) AND h.ts >= ? AND h.ts < ?
            GROUP BY h.gpu_id""", (*ids, first_hour, until)):
        out[ids[int(r["gid"])]] = (float(r["hours"]), float(r["busy"] or 0.0), min(float(r["last"]) + HOUR_S, until))
    for r in query(db, f"""
            SELECT gpu_id AS gid, count(DISTINCT ts / {HOUR_S}) AS hours,
                   sum(CASE WHEN n > 0 AND busy_n * 2 >= n AND busy_n > 0 THEN 1 ELSE 0 END) AS busy,
                   max(ts) AS last
            FROM samples WHERE gpu_id IN ({marks}) AND ts > ? AND ts < ? AND ts >= ?
            GROUP BY gpu_id""", (*ids, after, until, _rolled_until(db, ids, first_hour))):
        uuid = ids[int(r["gid"])]
        h, b, t = out.get(uuid, (0.0, 0.0, None))
        last = min(float(r["last"]) + 60.0, until)
        out[uuid] = (h + float(r["hours"]), b + float(r["busy"] or 0.0), last if t is None else max(t, last))
    return out


def _rolled_until(db: Database, ids: Mapping[int, str], first_hour: float) -> float:
    """The end of the newest rolled-up hour of these cards (minutes before it are counted in the rollups)."""
    marks = ",".join("?" for _ in ids)
    found = query(db, f"SELECT max(ts) AS last FROM hourly WHERE gpu_id IN ({marks})", tuple(ids))
    last = found[0]["last"] if found else None
    return max(first_hour, float(last) + HOUR_S) if last is not None else first_hour
