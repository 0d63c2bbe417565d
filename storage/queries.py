"""Read queries used by the GUI and reports. Each returns plain dicts."""

from __future__ import annotations

import json
from typing import Any

from sqlite_utils import Database

from storage.db import query


def fleet_latest(db: Database) -> list[dict[str, Any]]:
    """One row per known GPU with its node and latest reading, ordered by node and index.

    Keys: node, node_status, last_ok, last_error, driver_version, uuid, idx, name,
    state, latest_ts, power_default_w, power_enforced_w, values (dict), status (dict).
    """
    rows = query(db, """
        SELECT n.name AS node, n.status AS node_status, n.last_ok, n.last_error, n.driver_version,
               g.uuid, g.idx, g.name, g.state, g.latest_ts, g.latest, g.power_default_w, g.power_enforced_w
        FROM gpus g JOIN nodes n ON n.name = g.node
        ORDER BY n.name, g.idx""")
    for r in rows:
        latest = json.loads(r.pop("latest") or "{}")
        r["values"] = latest.get("values", {})
        r["status"] = latest.get("status", {})
    return rows


def nodes(db: Database) -> list[dict[str, Any]]:
    """Every node with its reachability and versions."""
    return query(db, "SELECT * FROM nodes ORDER BY name")


def gpu_history(db: Database, uuid: str, since: int, until: int, columns: list[str] | None = None
                ) -> list[dict[str, Any]]:
    """Per-minute rows of one GPU in [since, until), oldest first."""
    cols = "s.*" if not columns else ", ".join(["s.ts"] + [f"s.{c}" for c in columns])
    return query(db, f"""
        SELECT {cols} FROM samples s JOIN gpus g ON g.id = s.gpu_id
        WHERE g.uuid = ? AND s.ts >= ? AND s.ts < ? ORDER BY s.ts""", (uuid, since, until))


def counts(db: Database) -> dict[str, int]:
    """Row counts of the main tables (for status bars and tests)."""
    return {t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("nodes", "gpus", "samples", "events", "poll_log")}
