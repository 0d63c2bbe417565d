"""Storage benchmark: ingest rate, bytes on disk, query latency on a fleet-sized database.

Usage:
    python benchmarks/bench_storage.py                 # 512 GPUs × 90 days (first run builds a cached DB)
    python benchmarks/bench_storage.py --quick         # 64 GPUs × 14 days, under a minute
    python benchmarks/bench_storage.py --gpus 4 --days 2 --raw-days 1 --ingest-minutes 5

Every figure is the median of ``--runs`` runs (at least 3) and is printed beside
a baseline measured in the same run (or, for bytes, Prometheus TSDB's published
≈1.3 bytes per sample). Data come from a fixed seed: 8 GPUs per node, jobs
that keep a node busy for hours then idle, values that vary every minute.

The query database holds raw minutes for the last ``--raw-days`` only and
hourly/daily rollups for all ``--days``: the steady state under the default
30-day raw retention. It is cached under ``--cache`` keyed by the parameters
and the schema, so reruns skip the build.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fleetmon.fields import COUNTER_NAMES, GAUGE_NAMES, STATE_NAMES, THROTTLE_NAMES  # noqa: E402
from fleetmon.records import GpuInventory, GpuMinute, GpuSample, NodeInfo, NodePoll  # noqa: E402
from storage.db import open_database  # noqa: E402
from storage.ingest import _SAMPLE_SQL, ingest_polls  # noqa: E402
from storage.queries import fleet_latest, gpu_history  # noqa: E402
from storage.rollup import DAY, HOUR, maintain, rollup  # noqa: E402
from storage.schema import (ROLLUP_COLUMNS, SAMPLE_COLUMNS, STATUS_FIELDS, encode_minute, encode_status,  # noqa: E402
                            gauge_scale, known_migration_names, metric_value_columns)

PROMETHEUS_BYTES_PER_SAMPLE = 1.3  # Prometheus TSDB docs, "Operational aspects": 1-2 bytes, ≈1.3 typical
GPUS_PER_NODE = 8
GENERATOR_VERSION = 3
NOW = 1_767_225_600  # 2026-01-01T00:00:00Z: fixed so cached databases stay valid


# -- synthetic fleet -----------------------------------------------------------------

class Fleet:
    """A deterministic fleet: per node a busy/idle timeline, per GPU its offsets."""

    def __init__(self, gpus: int, start: int, minutes: int, seed: int = 42) -> None:
        self.gpus = gpus
        self.nodes = (gpus + GPUS_PER_NODE - 1) // GPUS_PER_NODE
        self.start = start
        self.minutes = minutes
        rng = np.random.default_rng(seed)
        self.rng = rng
        busy = np.zeros((self.nodes, minutes), dtype=bool)
        for n in range(self.nodes):
            t, on = 0, bool(rng.random() < 0.7)
            while t < minutes:
                length = int(rng.exponential(360 if on else 120)) + 5  # jobs ~6 h, gaps ~2 h
                busy[n, t:t + length] = on
                t += length
                on = not on
        self.busy = busy
        self.fans = np.array([(g // GPUS_PER_NODE) % 8 == 7 for g in range(gpus)])  # one node in 8: PCIe cards
        self.power_busy = rng.uniform(260, 390, gpus)
        self.temp_off = rng.normal(0, 3, gpus)
        self.mem_job = rng.uniform(30000, 78000, self.nodes)
        self.energy0 = rng.integers(10**9, 10**11, gpus).astype(np.int64)  # mJ at the start

    def node_of(self, g: int) -> str:
        return f"node-{g // GPUS_PER_NODE:04d}"

    def uuid_of(self, g: int) -> str:
        return f"GPU-{hashlib.md5(str(g).encode()).hexdigest()[:8]}-bench-{g:05d}"

    def inventory(self, g: int) -> GpuInventory:
        return GpuInventory(uuid=self.uuid_of(g), index=g % GPUS_PER_NODE, name="NVIDIA A100-SXM4-80GB", values={
            "index": g % GPUS_PER_NODE, "uuid": self.uuid_of(g), "serial": f"1650{g:08d}", "vbios": "92.00.45.00.06",
            "pci_bus_id": f"00000000:{0x10 + g % GPUS_PER_NODE:02X}:00.0", "memory_total_mib": 81920,
            "power_default_w": 400.0, "power_enforced_w": 400.0, "board_part_number": "692-2G506-0210-002",
            "architecture": "ampere", "compute_capability": "8.0", "pcie_max_gen": 4, "pcie_max_width": 16})

    def minute_columns(self, m0: int, m1: int) -> dict[str, np.ndarray]:
        """Encoded ``samples`` columns for minutes [m0, m1) of every GPU, shape (gpus, m1-m0)."""
        rng = self.rng
        g, k = self.gpus, m1 - m0
        node_idx = np.arange(g) // GPUS_PER_NODE
        busy = self.busy[node_idx, m0:m1]
        b = busy.astype(np.float64)
        noise = lambda scale: rng.normal(0, scale, (g, k))  # noqa: E731
        spread = lambda lo, hi: rng.uniform(lo, hi, (g, k)) * b  # noqa: E731
        cols: dict[str, np.ndarray] = {}

        def gauge(name: str, mean: np.ndarray, dlo: np.ndarray, dhi: np.ndarray, present: Any = True) -> None:
            s = gauge_scale(name)
            mean_e = np.rint(mean * s).astype(np.int64)
            lo_e = np.rint((mean - dlo) * s).astype(np.int64)
            hi_e = np.rint((mean + dhi) * s).astype(np.int64)
            cols[f"{name}_mean"], cols[f"{name}_dmin"], cols[f"{name}_dmax"] = mean_e, mean_e - lo_e, hi_e - mean_e
            if present is not True:
                for c in ("mean", "dmin", "dmax"):
                    cols[f"{name}_{c}"] = np.where(present, cols[f"{name}_{c}"], -1)  # -1 → NULL below

        power = np.where(busy, self.power_busy[:, None] + noise(15), 58 + noise(1.5))
        gauge("power_w", power, spread(5, 60) + 0.4, spread(5, 40) + 0.4)
        gauge("power_limit_w", np.full((g, k), 400.0), np.zeros((g, k)), np.zeros((g, k)))
        temp = np.where(busy, 62 + power / 40, 33) + self.temp_off[:, None] + noise(0.7)
        gauge("temp_c", temp, np.round(spread(0, 3)), np.round(spread(0, 3)))
        gauge("mem_temp_c", temp + 6 + noise(0.3), np.round(spread(0, 2)), np.round(spread(0, 2)))
        fan = np.where(busy, 55 + noise(4), 30)
        gauge("fan_pct", fan, np.round(spread(0, 3)), np.round(spread(0, 3)), present=self.fans[:, None])
        sm = np.where(busy, np.minimum(1410, 1500 - np.abs(noise(60))), 210)
        gauge("sm_clock_mhz", np.round(sm), np.round(spread(0, 120)), np.round(spread(0, 30)))
        gauge("gr_clock_mhz", np.round(sm), np.round(spread(0, 120)), np.round(spread(0, 30)))
        gauge("mem_clock_mhz", np.full((g, k), 1593.0), np.zeros((g, k)), np.zeros((g, k)))
        util = np.where(busy, np.clip(93 + noise(5), 0, 100), 0)
        gauge("util_gpu_pct", util, np.round(spread(0, 20)), np.minimum(100 - util, np.round(spread(0, 8))))
        mutil = np.where(busy, np.clip(45 + noise(10), 0, 100), 0)
        gauge("util_mem_pct", mutil, np.round(spread(0, 15)), np.round(spread(0, 15)))
        used = np.where(busy, self.mem_job[node_idx][:, None] + np.round(noise(200)), 4)
        gauge("mem_used_mib", used, np.round(spread(0, 500)), np.round(spread(0, 200)))
        gauge("mem_free_mib", 81920 - 513 - used, np.round(spread(0, 200)), np.round(spread(0, 500)))
        for name in ("pcie_tx_kbs", "pcie_rx_kbs"):
            level = np.where(busy, np.abs(rng.normal(400_000, 300_000, (g, k))), np.abs(noise(20)))
            gauge(name, level, spread(0, 1) * level, spread(0, 1) * level)
        # Counters: energy integrates power; the rest stay put, rarely bump.
        mj = self.energy0[:, None] + np.cumsum(power * 60_000, axis=1).astype(np.int64) + \
            np.int64(m0) * 60 * 150_000
        cols["energy_mj"] = np.rint(mj / 1000).astype(np.int64)  # stored in J
        for c in COUNTER_NAMES[1:]:
            cols[c] = np.zeros((g, k), dtype=np.int64)
        cols["ecc_corr_agg"] = (np.arange(g) % 50 == 0)[:, None] * (2 + m0 // 10000) + np.zeros((g, k), np.int64)
        cols["ecc_corr_vol"] = cols["ecc_corr_agg"]
        cols["pstate"] = np.zeros((g, k), dtype=np.int64)
        for s in ("retired_pending", "remap_pending", "remap_failure"):
            cols[s] = np.zeros((g, k), dtype=np.int64)
        cols["pcie_gen"] = np.where(busy, 4, 1)
        cols["pcie_width"] = np.full((g, k), 16)
        capped = busy & (rng.random((g, k)) < 0.05)
        cols["throttle_mask"] = np.where(busy, np.where(capped, 4, 0), 1)
        for r in THROTTLE_NAMES:
            cols[f"thr_{r}"] = np.zeros((g, k), dtype=np.int64)
        cols["thr_gpu_idle"] = np.where(busy, 0, 12)
        cols["thr_sw_power_cap"] = np.where(capped, rng.integers(1, 13, (g, k)), 0)
        cols["busy_n"] = np.where(busy, 12, 0)
        cols["pcie_gen_busy_min"] = np.where(busy, 4, -1)
        cols["pcie_width_busy_min"] = np.where(busy, 16, -1)
        cols["n"] = np.full((g, k), 12)
        cols["lost"] = np.zeros((g, k), dtype=np.int64)
        return cols

    def status_code(self, g: int) -> int | None:
        st = encode_status({"fan_pct": "unsupported"} if not self.fans[g] else {})
        return st if isinstance(st, int) or st is None else None

    def minute_rows(self, m0: int, m1: int, gpu_ids: list[int]) -> list[tuple[Any, ...]]:
        """Encoded rows for minutes [m0, m1), time-major (as a collector inserts them)."""
        cols = self.minute_columns(m0, m1)
        k = m1 - m0
        ts = (self.start + 60 * np.arange(m0, m1))[None, :].repeat(self.gpus, 0)
        gid = np.array(gpu_ids)[:, None].repeat(k, 1)
        status = np.array([self.status_code(g) or 0 for g in range(self.gpus)])[:, None].repeat(k, 1)
        seqs: list[list[Any]] = []
        nullable = {c for c in cols if c.startswith(("fan_pct", "pcie_gen_busy", "pcie_width_busy"))}
        for c in SAMPLE_COLUMNS:
            if c == "gpu_id":
                a = gid
            elif c == "ts":
                a = ts
            elif c == "status":
                a = status
            else:
                a = cols[c]
            flat = a.T.ravel().tolist()  # time-major
            if c in nullable or c == "status":
                flat = [None if (x == -1 or (c == "status" and x == 0)) else x for x in flat]
            seqs.append(flat)
        return list(zip(*seqs))

    def minute_records(self, m: int, minute_seq: int) -> list[list[GpuMinute]]:
        """GpuMinute records of minute ``m``, grouped by node (for the ingest benchmark)."""
        cols = self.minute_columns(m, m + 1)
        by_node: list[list[GpuMinute]] = [[] for _ in range(self.nodes)]
        for g in range(self.gpus):
            v: dict[str, Any] = {}
            for name in GAUGE_NAMES:
                s = gauge_scale(name)
                mean = int(cols[f"{name}_mean"][g, 0])
                if name == "fan_pct" and not self.fans[g]:
                    v[f"{name}_min"] = v[f"{name}_mean"] = v[f"{name}_max"] = None
                    continue
                v[f"{name}_mean"] = mean / s + 0.0004
                v[f"{name}_min"] = (mean - int(cols[f"{name}_dmin"][g, 0])) / s
                v[f"{name}_max"] = (mean + int(cols[f"{name}_dmax"][g, 0])) / s
            v["energy_mj"] = int(cols["energy_mj"][g, 0]) * 1000 + 123
            for c in list(COUNTER_NAMES[1:]) + list(STATE_NAMES) + [f"thr_{r}" for r in THROTTLE_NAMES] + \
                    ["busy_n", "pcie_gen_busy_min", "pcie_width_busy_min"]:
                x = int(cols[c][g, 0])
                v[c] = None if x == -1 else x
            status = {} if self.fans[g] else {"fan_pct": "unsupported"}
            by_node[g // GPUS_PER_NODE].append(GpuMinute(
                seq=minute_seq + g, ts=self.start + 60 * m, uuid=self.uuid_of(g), index=g % GPUS_PER_NODE, n=12,
                values=v, status=status))
        return by_node

    def polls(self, ts: float, minutes_by_node: list[list[GpuMinute]] | None = None,
              cursor: int | None = None) -> list[NodePoll]:
        """One poll per node: inventory, latest samples, the given minutes."""
        out = []
        for n in range(self.nodes):
            gs = range(n * GPUS_PER_NODE, min(self.gpus, (n + 1) * GPUS_PER_NODE))
            latest = [GpuSample(ts=ts, uuid=self.uuid_of(g), index=g % GPUS_PER_NODE, values={
                "temp_c": 41 + g % 7, "mem_temp_c": 47, "power_w": 61.25, "power_limit_w": 400.0, "energy_mj": 10**10,
                "sm_clock_mhz": 210, "mem_clock_mhz": 1593, "gr_clock_mhz": 210, "util_gpu_pct": 0,
                "util_mem_pct": 0, "mem_used_mib": 4, "mem_free_mib": 81403, "pstate": 0, "pcie_gen": 1,
                "pcie_width": 16, "throttle_mask": 1, "ecc_corr_vol": 0, "ecc_unc_vol": 0, "ecc_corr_agg": 0,
                "ecc_unc_agg": 0, "retired_sbe": 0, "retired_dbe": 0, "retired_pending": 0, "remap_corr": 0,
                "remap_unc": 0, "remap_pending": 0, "remap_failure": 0, "pcie_replay": 0, "fan_pct": None,
                "pcie_tx_kbs": 30, "pcie_rx_kbs": 12}, status={"fan_pct": "unsupported"}) for g in gs]
            out.append(NodePoll(
                node=f"node-{n:04d}", url=f"http://node-{n:04d}:9400", ts=ts, ok=True, duration_ms=12.5,
                info=NodeInfo(hostname=f"node-{n:04d}", agent_version="0.1.0",
                              values={"driver_version": "550.54.15", "gpu_count": len(gs)}),
                gpus=[self.inventory(g) for g in gs], latest=latest,
                minutes=(minutes_by_node[n] if minutes_by_node else []),
                minutes_cursor=cursor, events_cursor=None))
        return out

    def hourly_rows(self, h0: int, h1: int, gpu_ids: list[int]) -> list[tuple[Any, ...]]:
        """Hourly rollup rows for hours [h0, h1) straight from the model (older than the raw window)."""
        g = self.gpus
        node_idx = np.arange(g) // GPUS_PER_NODE
        out = []
        for h in range(h0, h1):
            f = self.busy[node_idx, h * 60:(h + 1) * 60].mean(axis=1)
            row: dict[str, np.ndarray] = {"minutes": np.full(g, 60), "n": np.full(g, 720), "lost": np.zeros(g, int)}
            for name, idle, busy_v, dlo, dhi in (
                    ("temp_c", 33, 70, 4, 6), ("mem_temp_c", 39, 76, 3, 5), ("power_w", 58, 330, 60, 80),
                    ("power_limit_w", 400, 400, 0, 0), ("sm_clock_mhz", 210, 1400, 200, 60),
                    ("gr_clock_mhz", 210, 1400, 200, 60), ("mem_clock_mhz", 1593, 1593, 0, 0),
                    ("util_gpu_pct", 0, 93, 40, 7), ("util_mem_pct", 0, 45, 30, 25),
                    ("mem_used_mib", 4, 55000, 3000, 800), ("mem_free_mib", 81403, 26000, 800, 3000),
                    ("pcie_tx_kbs", 20, 400_000, 380_000, 900_000), ("pcie_rx_kbs", 20, 400_000, 380_000, 900_000),
                    ("fan_pct", 30, 55, 5, 5)):
                s = gauge_scale(name)
                mean = idle + f * (busy_v - idle)
                row[f"{name}_mean"] = np.rint(mean * s).astype(np.int64)
                row[f"{name}_dmin"] = np.rint(np.where(f > 0, dlo, 0) * s).astype(np.int64)
                row[f"{name}_dmax"] = np.rint(np.where(f > 0, dhi, 0) * s).astype(np.int64)
                if name == "fan_pct":
                    for c in ("mean", "dmin", "dmax"):
                        row[f"fan_pct_{c}"] = np.where(self.fans, row[f"fan_pct_{c}"], -1)
            row["energy_mj"] = np.rint((self.energy0 + h * 3600 * 150_000) / 1000).astype(np.int64)
            row["energy_mj_delta"] = np.rint((58 + f * 272) * 3600).astype(np.int64)
            for c in COUNTER_NAMES[1:]:
                row[c] = np.zeros(g, np.int64)
                row[f"{c}_delta"] = np.zeros(g, np.int64)
            for s_ in STATE_NAMES:
                row[s_] = np.zeros(g, np.int64)
            row["pcie_gen"], row["pcie_width"] = np.where(f > 0.5, 4, 1), np.full(g, 16)
            row["throttle_mask"] = np.where(f > 0.5, 0, 1)
            for r in THROTTLE_NAMES:
                row[f"thr_{r}"] = np.zeros(g, np.int64)
            row["thr_gpu_idle"] = np.rint((1 - f) * 720).astype(np.int64)
            row["busy_n"] = np.rint(f * 720).astype(np.int64)
            row["pcie_gen_busy_min"] = np.where(f > 0, 4, -1)
            row["pcie_width_busy_min"] = np.where(f > 0, 16, -1)
            seqs = []
            for c in ROLLUP_COLUMNS:
                if c == "gpu_id":
                    seqs.append(gpu_ids)
                elif c == "ts":
                    seqs.append([self.start + h * HOUR] * g)
                else:
                    seqs.append([None if x == -1 else x for x in row[c].tolist()])
            out += list(zip(*seqs))
        return out


# -- helpers ---------------------------------------------------------------------------

def median_ms(fn: Callable[[int], Any], runs: int) -> tuple[float, Any]:
    times, result = [], None
    for i in range(runs):
        t0 = time.perf_counter()
        result = fn(i)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times), result


def checkpoint(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def schema_key() -> str:
    text = json.dumps([SAMPLE_COLUMNS, ROLLUP_COLUMNS, known_migration_names(), STATUS_FIELDS, GENERATOR_VERSION])
    return hashlib.sha1(text.encode()).hexdigest()[:10]


# -- 1. ingest -------------------------------------------------------------------------

def bench_ingest(fleet: Fleet, minutes: int, runs: int, tmp: Path) -> dict[str, Any]:
    """Steady state: one cycle per minute, every node polled, one minute per GPU."""
    cycles = [fleet.minute_records(m, 1 + m * fleet.gpus) for m in range(minutes)]
    rows = minutes * fleet.gpus
    encoded: list[list[tuple[Any, ...]]] = []
    for m, by_node in enumerate(cycles):
        encoded.append([encode_minute(1 + g, mm.ts, mm.n, mm.state, mm.values, mm.status)
                        for g, mm in enumerate(x for node in by_node for x in node)])

    def ours(i: int) -> float:
        path = tmp / f"ours-{i}.db"
        db = open_database(path)
        ingest_polls(db, fleet.polls(fleet.start - 60))  # inventory known, as in steady state
        t0 = time.perf_counter()
        for m, by_node in enumerate(cycles):
            ingest_polls(db, fleet.polls(fleet.start + 60 * m + 30, by_node, cursor=m + 1))
        dt = time.perf_counter() - t0
        db.close()
        return dt

    def ours_bulk(i: int) -> float:
        path = tmp / f"bulk-{i}.db"
        db = open_database(path)
        ingest_polls(db, fleet.polls(fleet.start - 60))
        merged = [[mm for cyc in cycles for mm in cyc[n]] for n in range(fleet.nodes)]
        t0 = time.perf_counter()
        ingest_polls(db, fleet.polls(fleet.start + 60 * minutes, merged, cursor=minutes))
        dt = time.perf_counter() - t0
        db.close()
        return dt

    keys = [f"{g}_{st}" for g in GAUGE_NAMES for st in ("mean", "min", "max")] + list(COUNTER_NAMES) + \
        list(STATE_NAMES) + [f"thr_{r}" for r in THROTTLE_NAMES] + ["busy_n", "pcie_gen_busy_min",
                                                                   "pcie_width_busy_min"]
    ids = {ing_uuid: k + 1 for k, ing_uuid in enumerate(fleet.uuid_of(g) for g in range(fleet.gpus))}

    def from_records(by_node: list[list[GpuMinute]]) -> list[tuple[Any, ...]]:
        """The least a plain-sqlite3 writer does: one tuple per record, values as they come."""
        return [(ids[m.uuid], m.ts, m.n, 0, *[m.values.get(k) for k in keys],
                 json.dumps(m.status) if m.status else None) for node in by_node for m in node]

    def plain(i: int, per_cycle: bool = True, records: bool = False) -> float:
        path = tmp / f"plain-{i}-{per_cycle}-{records}.db"
        open_database(path).close()
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA synchronous=NORMAL")
        t0 = time.perf_counter()
        if per_cycle:
            for m, batch in enumerate(encoded):
                conn.execute("BEGIN")
                conn.executemany(_SAMPLE_SQL, from_records(cycles[m]) if records else batch)
                conn.execute("COMMIT")
        else:
            conn.execute("BEGIN")
            if records:
                conn.executemany(_SAMPLE_SQL, [r for c in cycles for r in from_records(c)])
            else:
                conn.executemany(_SAMPLE_SQL, [r for b in encoded for r in b])
            conn.execute("COMMIT")
        dt = time.perf_counter() - t0
        conn.close()
        return dt

    def encode_only(i: int) -> float:
        t0 = time.perf_counter()
        for by_node in cycles:
            for node in by_node:
                for mm in node:
                    encode_minute(1, mm.ts, mm.n, mm.state, mm.values, mm.status)
        return time.perf_counter() - t0

    out = {"rows": rows, "cycles": minutes}
    for name, fn in (("ours_cycle", ours), ("plain_cycle", plain), ("ours_bulk", ours_bulk),
                     ("plain_bulk", lambda i: plain(i, per_cycle=False)), ("encode", encode_only),
                     ("records_cycle", lambda i: plain(i, records=True)),
                     ("records_bulk", lambda i: plain(i, per_cycle=False, records=True))):
        out[name] = rows / statistics.median(fn(i) for i in range(runs))
    for f in tmp.glob("*.db*"):
        f.unlink()
    return out


# -- 2. bytes --------------------------------------------------------------------------

def count_values(conn: sqlite3.Connection, table: str, cols: list[str]) -> tuple[int, int]:
    sql = f"SELECT count(*), {' + '.join(f'count({c})' for c in cols)} FROM {table}"
    rows, values = conn.execute(sql).fetchone()
    return rows, values


def table_bytes(conn: sqlite3.Connection, table: str) -> int:
    return conn.execute("SELECT sum(pgsize) FROM dbstat WHERE name = ?", (table,)).fetchone()[0] or 0


def bench_bytes_baseline(fleet: Fleet, minutes: int, tmp: Path) -> dict[str, float]:
    """The same minutes in compact form and in the previous REAL-column layout (one value per column)."""
    path = tmp / "layout.db"
    conn = sqlite3.connect(path, isolation_level=None)
    names = [c for c in SAMPLE_COLUMNS[2:] if c != "status"]
    real_cols = ["n", "lost"] + [f"{g}_{s}" for g in GAUGE_NAMES for s in ("min", "mean", "max")] + names[44:]
    conn.execute(f"CREATE TABLE compact ({', '.join(SAMPLE_COLUMNS)}, PRIMARY KEY (gpu_id, ts)) WITHOUT ROWID")
    conn.execute(f"CREATE TABLE naive (gpu_id INTEGER, ts INTEGER, {', '.join(c + ' REAL' for c in real_cols)}, "
                 "status TEXT, PRIMARY KEY (gpu_id, ts)) WITHOUT ROWID")
    ids = list(range(1, fleet.gpus + 1))
    for m0 in range(0, minutes, 60):
        rows = fleet.minute_rows(m0, min(minutes, m0 + 60), ids)
        conn.execute("BEGIN")
        conn.executemany(f"INSERT INTO compact VALUES ({', '.join('?' for _ in SAMPLE_COLUMNS)})", rows)
        naive = []
        for r in rows:
            vals = list(r[2:-1])
            gauges = []
            for i, gname in enumerate(GAUGE_NAMES):
                s = gauge_scale(gname)
                m, lo, hi = vals[2 + 3 * i: 5 + 3 * i]
                gauges += [None, None, None] if m is None else [(m - lo) / s, m / s + 0.0004, (m + hi) / s]
            naive.append((r[0], r[1], float(vals[0]), float(vals[1]), *gauges,
                          *[None if x is None else float(x) for x in vals[44:]],
                          None if r[-1] is None else json.dumps({"fan_pct": "unsupported"})))
        conn.executemany(f"INSERT INTO naive VALUES ({', '.join('?' for _ in range(len(real_cols) + 3))})", naive)
        conn.execute("COMMIT")
    out = {}
    for t, cols in (("compact", metric_value_columns()), ("naive", real_cols + ["status"])):
        rows_n, values = count_values(conn, t, cols)
        b = table_bytes(conn, t)
        out[t] = b / values
        out[t + "_record"] = b / rows_n
    conn.close()
    path.unlink()
    return out


# -- 3. the fleet-sized database ---------------------------------------------------------

def build_db(path: Path, fleet: Fleet, days: int, raw_days: int, log: Callable[[str], None]) -> dict[str, Any]:
    t_start = time.perf_counter()
    tmp = path.with_suffix(".building")
    for f in (tmp, Path(str(tmp) + "-wal"), Path(str(tmp) + "-shm")):
        if f.exists():
            f.unlink()
    db = open_database(tmp)
    ingest_polls(db, fleet.polls(NOW - 30))
    ids = [r[0] for r in db.execute("SELECT id FROM gpus ORDER BY id")]
    conn = db.conn
    raw_start_min = (days - raw_days) * 1440
    hours_old = raw_start_min // 60
    log(f"  building: hourly rollups for the {days - raw_days} days before the raw window …")
    for h0 in range(0, hours_old, 24):
        conn.execute("BEGIN")
        conn.executemany(f"INSERT INTO hourly ({', '.join(ROLLUP_COLUMNS)}) VALUES "
                         f"({', '.join('?' for _ in ROLLUP_COLUMNS)})",
                         fleet.hourly_rows(h0, min(hours_old, h0 + 24), ids))
        conn.execute("COMMIT")
    raw_minutes = raw_days * 1440
    log(f"  building: {fleet.gpus * raw_minutes:,} raw minutes ({raw_days} days), inserted time-major …")
    for m0 in range(raw_start_min, raw_start_min + raw_minutes, 60):
        conn.execute("BEGIN")
        conn.executemany(_SAMPLE_SQL, fleet.minute_rows(m0, m0 + 60, ids))
        conn.execute("COMMIT")
        if (m0 - raw_start_min) % (1440 * 5) == 0:
            log(f"    day {(m0 - raw_start_min) // 1440 + 1}/{raw_days}  {time.perf_counter() - t_start:.0f} s")
    raw_start = fleet.start + raw_start_min * 60
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('pruned_before', ?)", (raw_start,))
    log("  building: rolling up the raw window and every day …")
    t0 = time.perf_counter()
    rollup(db, NOW, since=0)
    rollup_s = time.perf_counter() - t0
    # One day of poll log, a few events.
    conn.execute("BEGIN")
    conn.executemany("INSERT OR IGNORE INTO poll_log (ts, node, ok, duration_ms, minutes, events) "
                     "VALUES (?, ?, 1, 12.5, 16, 0)",
                     [(NOW - DAY + 30 * k, f"node-{n:04d}", ) for k in range(2880) for n in range(fleet.nodes)])
    conn.executemany("INSERT INTO events (node, seq, ts, kind, code, message) VALUES (?, ?, ?, 'xid', 79, 'x')",
                     [(f"node-{n:04d}", k, NOW - k * 3600) for n in range(0, fleet.nodes, 7) for k in range(1, 6)])
    conn.execute("COMMIT")
    conn.execute("ANALYZE")
    db.close()
    checkpoint(tmp)
    stats: dict[str, Any] = {"build_s": time.perf_counter() - t_start, "rollup_s": rollup_s}
    conn = sqlite3.connect(tmp)
    stats["raw_rows"], stats["raw_values"] = count_values(conn, "samples", metric_value_columns())
    stats["raw_bytes"] = table_bytes(conn, "samples")
    stats["hourly_rows"], stats["hourly_values"] = count_values(conn, "hourly", metric_value_columns("rollup"))
    stats["hourly_bytes"] = table_bytes(conn, "hourly")
    stats["daily_rows"] = conn.execute("SELECT count(*) FROM daily").fetchone()[0]
    conn.close()
    stats["file_bytes"] = tmp.stat().st_size
    os.replace(tmp, path)
    path.with_suffix(".json").write_text(json.dumps(stats))
    return stats


def bench_queries(path: Path, fleet: Fleet, days: int, raw_days: int, runs: int) -> dict[str, float]:
    out: dict[str, float] = {}
    picks = [fleet.uuid_of((i * 7919) % fleet.gpus) for i in range(runs)]
    since90 = NOW - days * DAY

    def opened(i: int, readonly: bool = False) -> None:
        open_database(path, readonly=readonly).close()

    out["open_rw"], _ = median_ms(opened, runs)
    out["open_ro"], _ = median_ms(lambda i: opened(i, True), runs)
    db = open_database(path, readonly=True)
    out["fleet_latest"], rows = median_ms(lambda i: fleet_latest(db), runs)
    out["fleet_latest_rows"] = len(rows)
    for key, kw in (("hist_default", {}), ("hist_hourly", {"max_points": days * 24 + 24})):
        ms, res = median_ms(lambda i: gpu_history(db, picks[i], since90, NOW, **kw), runs)
        out[key] = ms
        out[key + "_rows"] = len(res.rows)
        out[key + "_res"] = res.resolution  # type: ignore[assignment]
    ms, res = median_ms(lambda i: gpu_history(db, picks[i], NOW - DAY, NOW), runs)
    out["hist_day"], out["hist_day_rows"] = ms, len(res.rows)

    def raw_read(i: int) -> int:
        return len(db.execute("SELECT * FROM samples WHERE gpu_id = (SELECT id FROM gpus WHERE uuid = ?) "
                              "AND ts >= ? ORDER BY ts", (picks[i], NOW - raw_days * DAY)).fetchall())
    out["raw_read"], out["raw_read_rows"] = median_ms(raw_read, runs)
    db.close()
    # The collector's per-cycle maintenance: nothing due, and rolling up the
    # last hour of the whole fleet (recomputing buckets is idempotent, so the
    # cached database is left as it was).
    db = open_database(path)
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('rollup_at', ?), ('prune_at', ?)", (NOW, NOW))
    out["maintain_idle"], _ = median_ms(lambda i: maintain(db, NOW + 1), runs)
    out["rollup_hour"], _ = median_ms(lambda i: rollup(db, NOW, since=NOW - HOUR), runs)
    db.close()
    return out


# -- main ------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpus", type=int, default=512)
    ap.add_argument("--days", type=int, default=90)
    ap.add_argument("--raw-days", type=int, default=30, help="raw minutes kept (retention); rollups cover --days")
    ap.add_argument("--ingest-minutes", type=int, default=30, help="collector cycles in the ingest benchmark")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="64 GPUs × 14 days (7 raw), for a run under a minute")
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "fleetmon-bench"))
    ap.add_argument("--no-cache", action="store_true", help="rebuild the database even if cached")
    args = ap.parse_args(argv)
    if args.quick:
        args.gpus, args.days, args.raw_days, args.ingest_minutes = 64, 14, 7, 30
    args.runs = max(3, args.runs)
    args.raw_days = min(args.raw_days, args.days)
    say = lambda s: print(s, flush=True)  # noqa: E731

    say(f"fleetmon storage benchmark: {args.gpus} GPUs ({(args.gpus + 7) // 8} nodes) × {args.days} days, "
        f"raw minutes for the last {args.raw_days} days, medians of {args.runs} runs; "
        f"SQLite {sqlite3.sqlite_version}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    tmp = Path(tempfile.mkdtemp(prefix="fleetmon-bench-"))
    try:
        ing_fleet = Fleet(min(args.gpus, 512), NOW - DAY, 1440, seed=7)
        ing = bench_ingest(ing_fleet, args.ingest_minutes, args.runs, tmp)
        layout = bench_bytes_baseline(Fleet(min(args.gpus, 64), NOW - DAY, 1440, seed=8), min(1440, 60 * 6), tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"fleet-g{args.gpus}-d{args.days}-r{args.raw_days}-{schema_key()}.db"
    fleet = Fleet(args.gpus, NOW - args.days * DAY, args.days * 1440, seed=42)
    if path.exists() and path.with_suffix(".json").exists() and not args.no_cache:
        stats = json.loads(path.with_suffix(".json").read_text())
        say(f"query database: {path} (cached; built in {stats['build_s']:.0f} s)")
    else:
        say(f"query database: building {path} …")
        stats = build_db(path, fleet, args.days, args.raw_days, say)
        say(f"  built in {stats['build_s']:.0f} s (full rollup of the raw window: {stats['rollup_s']:.1f} s)")
    q = bench_queries(path, fleet, args.days, args.raw_days, args.runs)

    def line(label: str, value: str, baseline: str, verdict: str = "") -> None:
        say(f"  {label:<46} {value:>16}   {baseline:<44} {verdict}")

    def check(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    say("")
    say("1. Ingest (minute rows/s; one transaction per collector cycle; cycle = every node's poll)")
    say(f"   {ing['cycles']} cycles × {ing_fleet.gpus} GPUs = {ing['rows']:,} rows. Baselines, same table, same "
        "commits: 'plain' = sqlite3 executemany of tuples built from the")
    say("   same GpuMinute records (values as they come, no encoding); 'ceiling' = executemany of tuples "
        "encoded before the clock starts")
    r1 = ing["ours_cycle"] / ing["records_cycle"]
    r2 = ing["ours_bulk"] / ing["records_bulk"]
    line("ingest_polls, catch-up (all minutes, 1 cycle)", f"{ing['ours_bulk']:,.0f}/s",
         f"plain {ing['records_bulk']:,.0f}/s  ratio {r2:.0%}", check(r2 >= 0.5) + " (target ≥ 50 %)")
    line("", "", f"ceiling {ing['plain_bulk']:,.0f}/s  ratio {ing['ours_bulk'] / ing['plain_bulk']:.0%}")
    line("ingest_polls, steady state (1 min/GPU/cycle)", f"{ing['ours_cycle']:,.0f}/s",
         f"plain {ing['records_cycle']:,.0f}/s  ratio {r1:.0%}", check(r1 >= 0.5) + " (target ≥ 50 %)")
    line("", "", f"ceiling {ing['plain_cycle']:,.0f}/s  ratio {ing['ours_cycle'] / ing['plain_cycle']:.0%}")
    say("   (steady state: ingest_polls also stores each GPU's latest sample, checks its inventory and logs "
        "the poll; the baselines insert minute rows only)")
    line("  of which encoding alone", f"{ing['encode']:,.0f}/s", "")
    say("")
    say("2. Bytes on disk. Metric value = every non-NULL stored column except the key (gpu_id, ts): "
        f"{len(metric_value_columns())} columns incl. n, lost, status")
    say("   bytes = SQLite pages of the table (dbstat) after a checkpoint, rows inserted time-major as the "
        "collector does")
    per_value = stats["raw_bytes"] / stats["raw_values"]
    line("samples: bytes per metric value", f"{per_value:.2f} B",
         f"Prometheus TSDB ≈{PROMETHEUS_BYTES_PER_SAMPLE} B/sample (published)",
         check(per_value <= 4) + " (target ≤ 4 B)")
    line("samples: bytes per GPU-minute record", f"{stats['raw_bytes'] / stats['raw_rows']:.0f} B",
         f"{stats['raw_values'] / stats['raw_rows']:.1f} values per record")
    line("same minutes, small sample: compact", f"{layout['compact']:.2f} B/value",
         f"previous REAL layout {layout['naive']:.2f} B/value ({layout['naive_record']:.0f} B/record)")
    line("hourly rollup: bytes per row", f"{stats['hourly_bytes'] / stats['hourly_rows']:.0f} B",
         f"{stats['hourly_bytes'] / stats['hourly_values']:.2f} B/value")
    gpu_day = stats["file_bytes"] / (args.gpus * args.days)
    line("whole file after checkpoint", f"{stats['file_bytes'] / 2**20:,.0f} MiB",
         f"{gpu_day / 1024:.1f} KiB per GPU-day over {args.days} days")
    say("")
    say(f"3. Queries on {args.gpus} GPUs × {args.days} days ({stats['raw_rows']:,} raw minutes, "
        f"{stats['hourly_rows']:,} hourly, {stats['daily_rows']:,} daily rows); each run another GPU")
    line(f"one GPU's {args.days}-day history (default max_points)", f"{q['hist_default']:.1f} ms",
         f"{q['hist_default_rows']} {q['hist_default_res']} rows; raw {args.raw_days} d: "
         f"{q['raw_read']:.0f} ms / {q['raw_read_rows']:,} rows",
         check(q["hist_default"] <= 100) + " (target ≤ 100 ms)")
    line(f"one GPU's {args.days}-day history, hourly", f"{q['hist_hourly']:.1f} ms",
         f"{q['hist_hourly_rows']} {q['hist_hourly_res']} rows", check(q["hist_hourly"] <= 100))
    line("one GPU's last day (minutes)", f"{q['hist_day']:.1f} ms", f"{q['hist_day_rows']} minute rows")
    line("fleet latest state (fleet_latest)", f"{q['fleet_latest']:.1f} ms", f"{q['fleet_latest_rows']} GPUs",
         check(q["fleet_latest"] <= 200) + " (target ≤ 200 ms)")
    line("open database (read-write, migrations checked)", f"{q['open_rw']:.1f} ms", "",
         check(q["open_rw"] <= 1000) + " (target ≤ 1 s)")
    line("open database (read-only, as the GUI)", f"{q['open_ro']:.1f} ms", "", check(q["open_ro"] <= 1000))
    line("maintain() when nothing is due", f"{q['maintain_idle']:.2f} ms", "every collector cycle")
    line("rollup of the fleet's last hour (+ its day)", f"{q['rollup_hour']:.0f} ms",
         f"whole raw window at build: {stats['rollup_s']:.0f} s")
    say("")
    say("Raw minutes exist only for the retention window: older history comes from the hourly/daily rollups "
        "(the steady state with the default 30-day retention).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
