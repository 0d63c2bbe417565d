"""The SQLite schema, its migrations and the compact sample encoding.

Migrations (sqlite-utils ``Migrations``) are registered in order; ``apply``
runs the pending ones, each in a transaction. A database that records a
migration this build does not know was written by a newer fleetmon and is
refused (see :func:`storage.db.check_schema`).

Compact samples
---------------
Per-minute rows (``samples``) and the hourly/daily rollups store scaled
integers, which SQLite writes as 0-4 byte varints (0 and 1 take no payload
byte at all). For every gauge G the row holds

* ``G_mean``  = round(mean × scale)
* ``G_dmin``  = G_mean − round(min × scale)   (≥ 0, usually 0 or tiny)
* ``G_dmax``  = round(max × scale) − G_mean   (≥ 0)

so a gauge that did not move during the minute costs three header bytes and
one to three payload bytes. Counters and states are integers (energy in whole
joules). ``status`` is NULL when every field read fine, else a 2-bit-per-field
integer over :data:`STATUS_FIELDS` (JSON text for anything outside it).

Callers never see this: :func:`encode_minute` and the ``decode_*`` helpers
translate to and from :mod:`fleetmon.fields` names and units (floats in
°C/W/MHz/MiB/KB/s, ints for counters and states). Resolution: 0.1 °C, 0.1 W,
1 MHz, 1 %, 1 MiB, 1 MB/s (PCIe), 1 J (energy).
"""

from __future__ import annotations

import json
from typing import Any, Callable

from sqlite_utils import Database, Migrations

from fleetmon.fields import CATALOG, FIRST_SCHEMA_STEP, HW_THROTTLE_REASONS, THROTTLE_NAMES, Field
from fleetmon.records import Status
from fleetmon.vocab import GpuState
from storage import (
    schema_acks, schema_claims, schema_error_texts, schema_intake, schema_notify, schema_resolutions, schema_signals,
    schema_signoff, schema_slurm, schema_texts, schema_vendor,
)

MIGRATION_SET = "fleetmon"

# -- layout --------------------------------------------------------------------------

FIRST_RELEASE_GAUGES: tuple[str, ...] = (
    "temp_c", "mem_temp_c", "fan_pct", "power_w", "power_limit_w", "sm_clock_mhz", "mem_clock_mhz",
    "gr_clock_mhz", "util_gpu_pct", "util_mem_pct", "mem_used_mib", "mem_free_mib", "pcie_tx_kbs",
    "pcie_rx_kbs",
)
FIRST_RELEASE_COUNTERS: tuple[str, ...] = (
    "energy_mj", "ecc_corr_vol", "ecc_unc_vol", "ecc_corr_agg", "ecc_unc_agg", "retired_sbe", "retired_dbe",
    "remap_corr", "remap_unc", "pcie_replay",
)
FIRST_RELEASE_STATES: tuple[str, ...] = (
    "pstate", "retired_pending", "remap_pending", "remap_failure", "pcie_gen", "pcie_width", "throttle_mask",
)
FIRST_RELEASE_FIELDS: tuple[str, ...] = FIRST_RELEASE_GAUGES + FIRST_RELEASE_COUNTERS + FIRST_RELEASE_STATES
"""The fields whose columns ``m001_initial`` created (``Stored.since == "m001_initial"``), in
column order. Frozen: a migration is history, so this list never follows the catalog. Also the
start of the status code's bit order."""

STATUS_CODES: dict[str, int] = {Status.UNSUPPORTED: 1, Status.FAILED: 2, Status.GPU_LOST: 3}
_STATUS_NAMES = {v: str(k) for k, v in STATUS_CODES.items()}
_STATUS_CAPACITY = 31
"""Fields the integer status code can hold: 2 bits each in SQLite's signed 64-bit integer."""

EXTRA_INTS: tuple[str, ...] = ("busy_n", "pcie_gen_busy_min", "pcie_width_busy_min")

_Step = Callable[[tuple[Any, ...], dict[str, Any]], None]


class Layout:
    """The stored form of one field catalog: columns, scales, status bits, encoder, decoders, migrations.

    Built from :data:`fleetmon.fields.CATALOG` once (:data:`LAYOUT`, which this module's
    functions use); a test may build one from a copy of the catalog. The first release's
    fields keep the frozen layout of ``m001_initial``; a field whose ``Stored.since`` names a
    later step gets its columns from that step, appended to ``samples``, ``hourly`` and
    ``daily`` (each field's columns together, in catalog order), and the next status bits.

    Raises:
        ValueError: the catalog's first-release fields are not :data:`FIRST_RELEASE_FIELDS`
            (a field cannot join or leave a schema step that has shipped).
    """

    def __init__(self, fields: tuple[Field, ...] = CATALOG) -> None:
        stored = {f.name: f for f in fields if f.stored is not None}
        first = [n for n, f in stored.items() if f.stored is not None and f.stored.since == FIRST_SCHEMA_STEP]
        if sorted(first) != sorted(FIRST_RELEASE_FIELDS):
            raise ValueError("the fields stored since m001_initial are frozen: a new field names a new "
                             f"schema step in Stored.since (differ: {sorted(set(first) ^ set(FIRST_RELEASE_FIELDS))})")
        for names, kind in ((FIRST_RELEASE_GAUGES, "gauge"), (FIRST_RELEASE_COUNTERS, "counter"),
                            (FIRST_RELEASE_STATES, "state")):
            wrong = [n for n in names if stored[n].kind != kind]
            if wrong:
                raise ValueError(f"fields {wrong} were stored as {kind}s by m001_initial")
        steps: dict[str, list[Field]] = {}
        for f in stored.values():
            assert f.stored is not None
            if f.stored.since != FIRST_SCHEMA_STEP:
                steps.setdefault(f.stored.since, []).append(f)
        self.steps: dict[str, tuple[Field, ...]] = {k: tuple(v) for k, v in sorted(steps.items())}
        """Later schema steps and the fields each one adds columns for."""
        later = [f for step in self.steps.values() for f in step]
        self.later: tuple[Field, ...] = tuple(later)
        ordered = [stored[n] for n in FIRST_RELEASE_FIELDS] + later
        self.scale: dict[str, float] = {f.name: f.stored.scale for f in ordered if f.stored is not None}
        self.gauges = tuple(f.name for f in ordered if f.kind == "gauge")
        self.counters = tuple(f.name for f in ordered if f.kind == "counter")
        self.states = tuple(f.name for f in ordered if f.kind == "state")
        self.status_fields: tuple[str, ...] = tuple(f.name for f in ordered)[:_STATUS_CAPACITY]
        """Bit order of the integer status code (2 bits per field); fields past it are stored as JSON."""
        self.status_bit = {name: 2 * i for i, name in enumerate(self.status_fields)}
        self.sample_column_names: list[str] = ["gpu_id", "ts"] + [n for n, _ in self.sample_columns()]
        self.rollup_column_names: list[str] = ["gpu_id", "ts"] + [n for n, _ in self.rollup_columns()]
        self._first_values = len(self.sample_column_names) - 5 - sum(len(_sample_cols(f)) for f in later)
        self._encode_fast = self._build_fast_encoder()
        self._status_memo: dict[tuple[tuple[str, str], ...], int | str | None] = {}
        self.migrations = _build_migrations(self)

    # -- columns -------------------------------------------------------------------

    def sample_columns(self) -> list[tuple[str, str]]:
        """Columns of the per-minute ``samples`` table after (gpu_id, ts), with SQL types."""
        cols = first_release_sample_columns()
        for f in self.later:
            cols += _sample_cols(f)
        return cols

    def rollup_columns(self) -> list[tuple[str, str]]:
        """Columns of ``hourly`` and ``daily`` after (gpu_id, ts) (see :func:`rollup_columns`)."""
        cols = first_release_rollup_columns()
        for f in self.later:
            cols += _rollup_cols(f)
        return cols

    def gauge_scale(self, name: str) -> float:
        return self.scale.get(name, 1)

    def counter_scale(self, name: str) -> float:
        return self.scale.get(name, 1)

    def insert_sql(self) -> str:
        """``INSERT OR IGNORE`` of one :meth:`encode_minute` row into ``samples``."""
        cols = self.sample_column_names
        return f"INSERT OR IGNORE INTO samples ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})"

    # -- encoding ------------------------------------------------------------------

    def _value_keys(self) -> list[tuple[str, str, float]]:
        """(kind, key, scale) of each value column after (gpu_id, ts, n, lost), status left out."""
        out: list[tuple[str, str, float]] = []

        def add(names: tuple[str, ...] | list[str], kind: str) -> None:
            out.extend((kind, n, self.scale.get(n, 1) if kind != "int" else 1) for n in names)

        add(FIRST_RELEASE_GAUGES, "gauge")
        add(FIRST_RELEASE_COUNTERS, "counter")
        add(list(FIRST_RELEASE_STATES) + [f"thr_{r}" for r in THROTTLE_NAMES] + list(EXTRA_INTS), "int")
        for f in self.later:
            add((f.name,), "gauge" if f.kind == "gauge" else "counter" if f.kind == "counter" else "int")
        return out

    def encode_values_slow(self, v: dict[str, Any]) -> tuple[Any, ...]:
        """Value columns of one minute, one value at a time; a malformed value becomes NULL."""

        def num(x: Any, scale: float = 1) -> int | None:
            try:
                return _r(x, scale)
            except (TypeError, ValueError, OverflowError):
                return None

        out: list[Any] = []
        for kind, g, s in self._value_keys():
            if kind != "gauge":
                out.append(num(v.get(g), s))
                continue
            m = num(v.get(f"{g}_mean"), s)
            if m is None:
                out += [None, None, None]
                continue
            lo, hi = num(v.get(f"{g}_min"), s), num(v.get(f"{g}_max"), s)
            out += [m, None if lo is None else m - lo, None if hi is None else hi - m]
        return tuple(out)

    def _build_fast_encoder(self) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
        """Generate a straight-line encoder: one tuple expression, no loops, no name lookups.

        Collector cycles encode tens of thousands of rows; the generated function is
        several times faster than the loop in :meth:`encode_values_slow`, and both
        give the same result for well-formed values (tests check it).
        """
        parts: list[str] = []
        for i, (kind, name, s) in enumerate(self._value_keys()):
            mul = "" if s == 1 else f" * {s!r}"
            if kind != "gauge":
                parts.append(f"None if (x := g({name!r})) is None else round(x{mul})")
                continue
            m = f"m{i}"
            parts += [
                f"({m} := None if (a := g({name + '_mean'!r})) is None else round(a{mul}))",
                f"None if {m} is None or (b := g({name + '_min'!r})) is None else {m} - round(b{mul})",
                f"None if {m} is None or (b := g({name + '_max'!r})) is None else round(b{mul}) - {m}",
            ]
        src = "def encode(v):\n    g = v.get\n    return (\n        " + ",\n        ".join(parts) + ",\n    )\n"
        namespace: dict[str, Any] = {}
        exec(compile(src, "<storage.schema encoder>", "exec"), namespace)  # noqa: S102 - generated from the catalog
        fn: Callable[[dict[str, Any]], tuple[Any, ...]] = namespace["encode"]
        return fn

    def encode_status(self, status: dict[str, str] | None) -> int | str | None:
        """NULL when empty; a 2-bit-per-field integer; JSON text for anything unknown."""
        if not status:
            return None
        code = 0
        for name, st in status.items():
            bit = self.status_bit.get(name)
            val = STATUS_CODES.get(st)
            if bit is None or val is None:
                return json.dumps(status, separators=(",", ":"), sort_keys=True)
            code |= val << bit
        return code

    def decode_status(self, stored: int | str | None) -> dict[str, str]:
        if stored is None:
            return {}
        if isinstance(stored, str):
            out: dict[str, str] = json.loads(stored)
            return out
        out = {}
        for name, bit in self.status_bit.items():
            val = (stored >> bit) & 3
            if val:
                out[name] = _STATUS_NAMES[val]
        return out

    def encode_minute(self, gpu_id: int, ts: int, n: int, state: str, values: dict[str, Any],
                      status: dict[str, str] | None) -> tuple[Any, ...]:
        """One ``samples`` row (in :attr:`sample_column_names` order) from a GpuMinute's parts."""
        try:
            vals = self._encode_fast(values)
        except (TypeError, ValueError, OverflowError):
            vals = self.encode_values_slow(values)
        if status:
            key = tuple(status.items())
            memo = self._status_memo
            code = memo.get(key)
            if code is None:
                code = memo[key] = self.encode_status(status)
                if len(memo) > 4096:
                    memo.clear()
        else:
            code = None
        head = (gpu_id, int(ts), n, 1 if state == GpuState.LOST else 0)
        if not self.later:
            return head + vals + (code,)
        k = self._first_values
        return head + vals[:k] + (code,) + vals[k:]

    # -- decoding ------------------------------------------------------------------

    def row_decoder(self, kind: str, want: set[str] | None = None
                    ) -> tuple[list[str], Callable[[tuple[Any, ...]], dict[str, Any]]]:
        """Columns to select and a function turning such a row into a decoded dict.

        ``kind`` is "minute" (``samples``) or "rollup" (``hourly``/``daily``). The
        dict always has ``ts``; ``want`` limits the other keys to the named fields
        (a gauge name selects its min/mean/max; exact keys work too).
        """
        cols: list[str] = ["ts"]
        steps: list[_Step] = []
        head = ["n", "lost"] if kind == "minute" else ["minutes", "n", "lost"]
        for h in head:
            if _wanted(h, h, want):
                steps.append(_int_decoder(h, 1, len(cols)))
                cols.append(h)
        for g in self.gauges:
            if want is None or g in want or any(f"{g}_{st}" in want for st in ("min", "mean", "max")):
                steps.append(_gauge_decoder(g, self.gauge_scale(g), len(cols)))
                cols += [f"{g}_mean", f"{g}_dmin", f"{g}_dmax"]
        for c in self.counters:
            if _wanted(c, c, want):
                steps.append(_int_decoder(c, self.counter_scale(c), len(cols)))
                cols.append(c)
            if kind != "minute" and _wanted(f"{c}_delta", c, want):
                steps.append(_int_decoder(f"{c}_delta", self.counter_scale(c), len(cols)))
                cols.append(f"{c}_delta")
        for key in list(self.states) + [f"thr_{r}" for r in THROTTLE_NAMES] + list(EXTRA_INTS):
            if _wanted(key, key, want):
                steps.append(_int_decoder(key, 1, len(cols)))
                cols.append(key)
        if kind == "minute" and (want is None or "status" in want):
            si = len(cols)
            cols.append("status")
            decode_st = self.decode_status

            def dec_status(row: tuple[Any, ...], out: dict[str, Any]) -> None:
                out["status"] = decode_st(row[si])
            steps.append(dec_status)

        def decode(row: tuple[Any, ...]) -> dict[str, Any]:
            out: dict[str, Any] = {"ts": row[0]}
            for step in steps:
                step(row, out)
            if kind == "minute" and "lost" in out:
                out["state"] = GpuState.LOST if out.pop("lost") else GpuState.OK
            return out
        return cols, decode


def _gauge_cols(g: str) -> list[tuple[str, str]]:
    return [(f"{g}_mean", "INTEGER"), (f"{g}_dmin", "INTEGER"), (f"{g}_dmax", "INTEGER")]


def _sample_cols(f: Field) -> list[tuple[str, str]]:
    """A later field's columns in ``samples``."""
    return _gauge_cols(f.name) if f.kind == "gauge" else [(f.name, "INTEGER")]


def _rollup_cols(f: Field) -> list[tuple[str, str]]:
    """A later field's columns in ``hourly`` and ``daily``."""
    if f.kind == "gauge":
        return _gauge_cols(f.name)
    if f.kind == "counter":
        return [(f.name, "INTEGER"), (f"{f.name}_delta", "INTEGER")]
    return [(f.name, "INTEGER")]


def first_release_sample_columns() -> list[tuple[str, str]]:
    """The ``samples`` columns ``m001_initial`` creates after (gpu_id, ts). Frozen."""
    cols: list[tuple[str, str]] = [("n", "INTEGER"), ("lost", "INTEGER")]
    for g in FIRST_RELEASE_GAUGES:
        cols += _gauge_cols(g)
    cols += [(c, "INTEGER") for c in FIRST_RELEASE_COUNTERS + FIRST_RELEASE_STATES]
    cols += [(f"thr_{r}", "INTEGER") for r in THROTTLE_NAMES]
    cols += [(x, "INTEGER") for x in EXTRA_INTS]
    cols.append(("status", ""))  # INTEGER code or JSON TEXT
    return cols


def first_release_rollup_columns() -> list[tuple[str, str]]:
    """The ``hourly``/``daily`` columns ``m002_rollups`` creates after (gpu_id, ts). Frozen."""
    cols: list[tuple[str, str]] = [("minutes", "INTEGER"), ("n", "INTEGER"), ("lost", "INTEGER")]
    for g in FIRST_RELEASE_GAUGES:
        cols += _gauge_cols(g)
    for c in FIRST_RELEASE_COUNTERS:
        cols += [(c, "INTEGER"), (f"{c}_delta", "INTEGER")]
    cols += [(s, "INTEGER") for s in FIRST_RELEASE_STATES]
    cols += [(f"thr_{r}", "INTEGER") for r in THROTTLE_NAMES]
    cols += [(x, "INTEGER") for x in EXTRA_INTS]
    return cols


def _r(x: Any, scale: float) -> int | None:
    return None if x is None else round(x * scale) if scale != 1 else round(x)


def _gauge_decoder(name: str, s: float, i: int) -> _Step:
    kmin, kmean, kmax = f"{name}_min", f"{name}_mean", f"{name}_max"

    def dec(row: tuple[Any, ...], out: dict[str, Any]) -> None:
        m = row[i]
        if m is None:
            out[kmin] = out[kmean] = out[kmax] = None
            return
        lo, hi = row[i + 1], row[i + 2]
        out[kmean] = m / s
        out[kmin] = None if lo is None else (m - lo) / s
        out[kmax] = None if hi is None else (m + hi) / s
    return dec


def _int_decoder(key: str, s: float, i: int) -> _Step:
    if s == 1:
        def dec(row: tuple[Any, ...], out: dict[str, Any]) -> None:
            out[key] = row[i]
    else:
        def dec(row: tuple[Any, ...], out: dict[str, Any]) -> None:
            x = row[i]
            out[key] = None if x is None else round(x / s)
    return dec


def _wanted(key: str, base: str, want: set[str] | None) -> bool:
    return want is None or key in want or base in want


# -- migrations ----------------------------------------------------------------------

_HAND_STEPS: list[tuple[str, Callable[[Database], None]]] = []
"""The hand-written schema steps, in order; :func:`_build_migrations` adds the catalog's field steps."""


def _step(name: str) -> Callable[[Callable[[Database], None]], Callable[[Database], None]]:
    def inner(fn: Callable[[Database], None]) -> Callable[[Database], None]:
        _HAND_STEPS.append((name, fn))
        return fn
    return inner


def _field_step(fields: tuple[Field, ...]) -> Callable[[Database], None]:
    """A schema step that adds the columns of fields new to the catalog."""

    def add_columns(db: Database) -> None:
        for f in fields:
            for table, cols in (("samples", _sample_cols(f)), ("hourly", _rollup_cols(f)), ("daily", _rollup_cols(f))):
                for name, typ in cols:
                    db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {typ}")
    return add_columns


def _build_migrations(layout: Layout) -> Migrations:
    """The hand-written steps and the layout's field steps, registered in name order."""
    steps = dict(_HAND_STEPS)
    for name, fields in layout.steps.items():
        if name <= "m002_rollups":
            raise ValueError(f"field step {name} must sort after m002_rollups (it adds rollup columns)")
        if name in steps:
            raise ValueError(f"schema step {name} is hand-written; a field step needs a name of its own")
        steps[name] = _field_step(fields)
    out = Migrations(MIGRATION_SET)
    for name in sorted(steps):
        out(name=name)(steps[name])
    return out

def _rollup_table(db: Database, name: str) -> None:
    cols = ",\n".join(f"{c} {t}" for c, t in first_release_rollup_columns())
    db.execute(f"""
        CREATE TABLE {name} (
            gpu_id INTEGER NOT NULL,
            ts INTEGER NOT NULL,
            {cols},
            PRIMARY KEY (gpu_id, ts)
        ) WITHOUT ROWID""")


@_step("m001_initial")
def m001_initial(db: Database) -> None:
    """Nodes, GPUs, compact per-minute samples, events, poll log, inventory changes, meta."""
    db.execute("""
        CREATE TABLE nodes (
            name TEXT PRIMARY KEY,
            url TEXT,
            grp TEXT,
            hostname TEXT,
            driver_version TEXT,
            cuda_driver_version TEXT,
            nvml_version TEXT,
            kernel TEXT,
            os_release TEXT,
            agent_version TEXT,
            xid_source TEXT,
            gpu_count INTEGER,
            status TEXT,
            last_ok REAL,
            last_attempt REAL,
            last_error TEXT,
            skew_s REAL,
            agent_started_at REAL,
            minutes_cursor INTEGER NOT NULL DEFAULT 0,
            events_cursor INTEGER NOT NULL DEFAULT 0
        )""")
    db.execute("""
        CREATE TABLE gpus (
            id INTEGER PRIMARY KEY,
            uuid TEXT NOT NULL UNIQUE,
            node TEXT,
            idx INTEGER,
            pci_bus_id TEXT,
            name TEXT,
            serial TEXT,
            vbios TEXT,
            memory_total_mib INTEGER,
            power_default_w REAL,
            power_enforced_w REAL,
            state TEXT,
            first_seen REAL,
            last_seen REAL,
            inventory TEXT,
            latest TEXT,
            latest_ts REAL
        )""")
    db.execute("CREATE INDEX gpus_node ON gpus (node, idx)")
    cols = ",\n".join(f"{name} {typ}".rstrip() for name, typ in first_release_sample_columns())
    db.execute(f"""
        CREATE TABLE samples (
            gpu_id INTEGER NOT NULL,
            ts INTEGER NOT NULL,
            {cols},
            PRIMARY KEY (gpu_id, ts)
        ) WITHOUT ROWID""")
    # seq is NULL for events the collector generates itself (node_unreachable,
    # node_back); NULLs never collide in a UNIQUE index, agent events still do.
    db.execute("""
        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            node TEXT NOT NULL,
            seq INTEGER,
            ts REAL NOT NULL,
            kind TEXT NOT NULL,
            gpu_uuid TEXT,
            pci_bus_id TEXT,
            code INTEGER,
            message TEXT,
            data TEXT,
            UNIQUE (node, seq)
        )""")
    db.execute("CREATE INDEX events_ts ON events (ts)")
    db.execute("""
        CREATE TABLE poll_log (
            id INTEGER PRIMARY KEY,
            ts REAL NOT NULL,
            node TEXT NOT NULL,
            ok INTEGER NOT NULL,
            error TEXT,
            duration_ms REAL,
            minutes INTEGER,
            events INTEGER,
            UNIQUE (node, ts)
        )""")
    db.execute("""
        CREATE TABLE inventory_changes (
            id INTEGER PRIMARY KEY,
            ts REAL NOT NULL,
            gpu_uuid TEXT,
            node TEXT,
            kind TEXT NOT NULL,
            old TEXT,
            new TEXT
        )""")
    db.execute("CREATE INDEX inventory_changes_ts ON inventory_changes (ts)")
    db.execute("CREATE INDEX inventory_changes_gpu ON inventory_changes (gpu_uuid, ts)")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value)")


@_step("m002_rollups")
def m002_rollups(db: Database) -> None:
    """Hourly and daily rollups, kept for years."""
    _rollup_table(db, "hourly")
    _rollup_table(db, "daily")


@_step("m003_health")
def m003_health(db: Database) -> None:
    """Outputs of the health engine: findings, daily derating figures, reports."""
    db.execute("""
        CREATE TABLE findings (
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            severity,
            node TEXT,
            gpu_uuid TEXT,
            first_seen REAL NOT NULL,
            last_seen REAL NOT NULL,
            resolved_at REAL,
            evidence TEXT,
            action TEXT,
            updated_at REAL NOT NULL
        )""")
    db.execute("CREATE INDEX findings_open ON findings (resolved_at)")
    db.execute("""
        CREATE TABLE derating_daily (
            gpu_id INTEGER NOT NULL,
            day INTEGER NOT NULL,
            sm_clock_busy_mhz REAL,
            clock_ratio REAL,
            power_limit_ratio REAL,
            memory_ratio REAL,
            pcie_ratio REAL,
            clock_vs_fleet REAL,
            PRIMARY KEY (gpu_id, day)
        ) WITHOUT ROWID""")
    db.execute("""
        CREATE TABLE reports (
            id INTEGER PRIMARY KEY,
            ts REAL NOT NULL,
            kind TEXT NOT NULL,
            summary TEXT
        )""")
    db.execute("CREATE INDEX reports_kind_ts ON reports (kind, ts)")


@_step("m004_buffer_id")
def m004_buffer_id(db: Database) -> None:
    """The identity of each agent's record buffer: a new one means its sequence numbers restarted."""
    db.execute("ALTER TABLE nodes ADD COLUMN buffer_id TEXT")


HEALTH_HOURLY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("busy_minutes", "INTEGER"),
    ("sm_clock_busy_mhz", "INTEGER"),
    ("sm_clock_busy_minutes", "INTEGER"),
    ("failed_power_w", "INTEGER"),
    ("retired_pending_max", "INTEGER"),
    ("remap_pending_max", "INTEGER"),
    ("remap_failure_max", "INTEGER"),
)
"""Columns of ``hourly_health`` after (gpu_id, ts): per GPU and UTC hour, what the health
engine needs from an hour that the plain rollup cannot give once the raw minutes are gone.

``busy_minutes``: minutes with ``busy_n >= n / 2`` (and some busy sample);
``sm_clock_busy_mhz``: mean SM clock (MHz, rounded) over the busy minutes (``busy_n >= 0.8 n``)
with no hardware or thermal throttle reason (hw_slowdown, hw_thermal, sw_thermal,
hw_power_brake), the derating input, and ``sm_clock_busy_minutes`` how many minutes that is;
``failed_power_w``: minutes whose power reading failed (status "failed", not unsupported);
``<state>_max``: the highest value of the state in the hour (a pending retirement or remap
that cleared within the hour still shows). Keys as in
:func:`fleetmon.health.hourly.rollup_hourly`."""

HEALTH_HOURLY_COLUMN_NAMES: list[str] = [name for name, _ in HEALTH_HOURLY_COLUMNS]

CLEAN_CLOCK_THROTTLES: tuple[str, ...] = HW_THROTTLE_REASONS
"""Throttle reasons that disqualify a minute's SM clock from the derating mean (the hardware ones)."""


def status_failed_sql(field: str, column: str = "status") -> str:
    """SQL expression: 1 when the stored ``status`` gives ``field`` the status "failed", else 0."""
    bit = _STATUS_BIT[field]
    code = STATUS_CODES[Status.FAILED]
    return (f"(CASE WHEN typeof({column}) = 'integer' THEN (({column} >> {bit}) & 3) = {code} "
            f"WHEN typeof({column}) = 'text' AND json_valid({column}) "
            f"THEN coalesce(json_extract({column}, '$.{field}') = '{Status.FAILED}', 0) ELSE 0 END)")


@_step("m005_hourly_health")
def m005_hourly_health(db: Database) -> None:
    """Per GPU-hour inputs of the health engine beside the rollups (busy clock, failed power reads).

    Hours rolled up before this step have no row: readers treat the keys as unknown (None).
    """
    cols = ",\n".join(f"{c} {t}" for c, t in HEALTH_HOURLY_COLUMNS)
    db.execute(f"""
        CREATE TABLE hourly_health (
            gpu_id INTEGER NOT NULL,
            ts INTEGER NOT NULL,
            {cols},
            PRIMARY KEY (gpu_id, ts)
        ) WITHOUT ROWID""")


@_step("m006_gpu_latest")
def m006_gpu_latest(db: Database) -> None:
    """Each GPU's latest sample in a narrow table of its own.

    Every poll replaces every GPU's latest sample; in the wide ``gpus`` row
    (with its inventory JSON) that rewrote the whole row each time.
    """
    db.execute("""
        CREATE TABLE gpu_latest (
            gpu_id INTEGER PRIMARY KEY,
            ts REAL,
            seen REAL,
            latest TEXT
        )""")
    db.execute("""INSERT INTO gpu_latest (gpu_id, ts, seen, latest)
                  SELECT id, latest_ts, last_seen, latest FROM gpus WHERE latest IS NOT NULL""")
    db.execute("UPDATE gpus SET latest = NULL, latest_ts = NULL")


# Later hand-written steps keep their SQL in modules of their own.
_step("m007_gpu_claims")(schema_claims.m007_gpu_claims)
_step("m008_finding_acks")(schema_acks.m008_finding_acks)
_step("m009_signoffs")(schema_signoff.m009_signoffs)
_step("m010_finding_resolutions")(schema_resolutions.m010_finding_resolutions)
_step("m011_node_gpu_cap")(schema_claims.m011_node_gpu_cap)
_step("m012_intakes")(schema_intake.m012_intakes)
_step("m013_vendor")(schema_vendor.m013_vendor)
_step("m014_slurm_actions")(schema_slurm.m014_slurm_actions)
_step("m015_notify_outbox")(schema_notify.m015_notify_outbox)
_step("m016_gpu_signals")(schema_signals.m016_gpu_signals)
_step("m017_finding_texts")(schema_texts.m017_finding_texts)
_step("m018_node_error_texts")(schema_error_texts.m018_node_error_texts)


# -- the default layout -----------------------------------------------------------------

LAYOUT = Layout()
"""The stored form of :data:`fleetmon.fields.CATALOG`; the module-level names below are its parts."""
migrations: Migrations = LAYOUT.migrations
SAMPLE_COLUMNS: list[str] = LAYOUT.sample_column_names
ROLLUP_COLUMNS: list[str] = LAYOUT.rollup_column_names
STATUS_FIELDS: tuple[str, ...] = LAYOUT.status_fields
"""Bit order of the integer status code (2 bits per field). Frozen: append only."""
_STATUS_BIT = LAYOUT.status_bit
GAUGE_SCALE: dict[str, float] = {g: LAYOUT.gauge_scale(g) for g in LAYOUT.gauges}
"""Stored integer = round(value × scale) (``Stored.scale`` in the catalog)."""
COUNTER_SCALE: dict[str, float] = {c: LAYOUT.counter_scale(c) for c in LAYOUT.counters
                                   if LAYOUT.counter_scale(c) != 1}
"""Counters stored coarser than their unit (energy: whole joules)."""
sample_columns = LAYOUT.sample_columns
rollup_columns = LAYOUT.rollup_columns
gauge_scale = LAYOUT.gauge_scale
counter_scale = LAYOUT.counter_scale
encode_status = LAYOUT.encode_status
decode_status = LAYOUT.decode_status
encode_minute = LAYOUT.encode_minute
row_decoder = LAYOUT.row_decoder
_encode_values_slow = LAYOUT.encode_values_slow
_encode_values_fast = LAYOUT._encode_fast


def metric_value_columns(kind: str = "minute") -> list[str]:
    """Every stored column except the key (gpu_id, ts): what the benchmark counts as values."""
    return (SAMPLE_COLUMNS if kind == "minute" else ROLLUP_COLUMNS)[2:]


def known_migration_names() -> list[str]:
    return [m.name for m in migrations._migrations]
