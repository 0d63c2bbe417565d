"""The SQLite schema and its migrations (sqlite-utils ``Migrations``).

Each migration is a function registered in order; ``apply`` runs the pending
ones, each in a transaction. A database that records a migration this build
does not know was written by a newer fleetmon and is refused.
"""

from __future__ import annotations

from sqlite_utils import Database, Migrations

from fleetmon.fields import COUNTER_NAMES, GAUGE_NAMES, STATE_NAMES, THROTTLE_NAMES

MIGRATION_SET = "fleetmon"
migrations = Migrations(MIGRATION_SET)


def sample_columns() -> list[tuple[str, str]]:
    """Columns of the per-minute ``samples`` table after (gpu_id, ts), with SQL types."""
    cols: list[tuple[str, str]] = [("n", "INTEGER"), ("lost", "INTEGER")]
    for g in GAUGE_NAMES:
        for stat in ("min", "mean", "max"):
            cols.append((f"{g}_{stat}", "REAL"))
    for c in COUNTER_NAMES + STATE_NAMES:
        cols.append((c, "INTEGER"))
    for r in THROTTLE_NAMES:
        cols.append((f"thr_{r}", "INTEGER"))
    cols += [("busy_n", "INTEGER"), ("pcie_gen_busy_min", "INTEGER"), ("pcie_width_busy_min", "INTEGER"),
             ("status", "TEXT")]
    return cols


@migrations(name="m001_initial")
def m001_initial(db: Database) -> None:
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
    cols = ",\n".join(f"{name} {typ}" for name, typ in sample_columns())
    db.execute(f"""
        CREATE TABLE samples (
            gpu_id INTEGER NOT NULL,
            ts INTEGER NOT NULL,
            {cols},
            PRIMARY KEY (gpu_id, ts)
        ) WITHOUT ROWID""")
    db.execute("""
        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            node TEXT NOT NULL,
            seq INTEGER NOT NULL,
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
            events INTEGER
        )""")
    db.execute("CREATE INDEX poll_log_node_ts ON poll_log (node, ts)")


def known_migration_names() -> list[str]:
    return [m.name for m in migrations._migrations]
