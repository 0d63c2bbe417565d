"""Read queries used by the GUI and reports. Each returns plain, decoded dicts.

Callers never see the storage encoding (:mod:`storage.schema`): gauges come
back as floats in their catalog units, counters and states as ints, under
:mod:`fleetmon.fields` names.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from sqlite_utils import Database

from storage.db import get_meta, query, rows
from storage.rollup import DAY, HOUR
from storage.schema import row_decoder

_TABLE = {"minute": "samples", "hour": "hourly", "day": "daily"}
_STEP = {"minute": 60, "hour": HOUR, "day": DAY}


def fleet_latest(db: Database) -> list[dict[str, Any]]:
    """One row per known GPU with its node and latest reading, ordered by node and index.

    Keys: node, node_status, last_ok, last_error, driver_version, uuid, idx, name,
    state, latest_ts, power_default_w, power_enforced_w, values (dict), status (dict).
    ``state`` is "ok", "lost" or "gone" (no longer in its node's inventory).
    """
    out = query(db, """
        SELECT n.name AS node, n.status AS node_status, n.last_ok, n.last_error, n.driver_version,
               g.uuid, g.idx, g.name, g.state, l.ts AS latest_ts, l.latest, g.power_default_w, g.power_enforced_w
        FROM gpus g JOIN nodes n ON n.name = g.node LEFT JOIN gpu_latest l ON l.gpu_id = g.id
        ORDER BY n.name, g.idx""")
    for r in out:
        latest = json.loads(r.pop("latest") or "{}")
        r["values"] = latest.get("values", {})
        r["status"] = latest.get("status", {})
    return out


def gpu_inventory(db: Database, uuid: str) -> dict[str, Any]:
    """One GPU's stored inventory values (fleetmon.fields.INVENTORY_FIELDS), {} if unknown."""
    rows = query(db, "SELECT inventory FROM gpus WHERE uuid = ?", (uuid,))
    if not rows or not rows[0]["inventory"]:
        return {}
    values: dict[str, Any] = json.loads(rows[0]["inventory"]).get("values", {})
    return values


def nodes(db: Database) -> list[dict[str, Any]]:
    """Every node with its reachability, versions and cursors."""
    return query(db, "SELECT * FROM nodes ORDER BY name")


def pick_resolution(db: Database, since: float, until: float, max_points: int = 2000) -> str:
    """The finest resolution ("minute", "hour", "day") with at most ``max_points`` rows per GPU.

    Minutes qualify only while raw minutes for the whole window are still kept.
    """
    span = max(0.0, until - since)
    if span / 60 <= max_points and since >= float(get_meta(db, "pruned_before", 0)):
        return "minute"
    if span / HOUR <= max_points:
        return "hour"
    return "day"


def gpu_history(db: Database, uuid: str, since: float, until: float, fields: Iterable[str] | None = None,
                max_points: int = 2000, resolution: str | None = None) -> dict[str, Any]:
    """One GPU's history over [since, until), oldest first, at a resolution fit for a chart.

    Args:
        uuid: the GPU.
        since, until: Unix seconds.
        fields: field names (a gauge name brings its _min/_mean/_max; a counter
            its last value and, from rollups, ``<counter>_delta``) or exact keys;
            None for everything.
        max_points: most rows wanted; decides the resolution.
        resolution: force "minute", "hour" or "day".

    Returns:
        ``{"resolution": "minute"|"hour"|"day", "step_s": 60|3600|86400, "rows": [...]}``;
        each row has ``ts`` and the decoded keys (minute rows: GpuMinute value
        keys, ``n``, ``state``, ``status``; rollup rows: ``minutes``, ``n``,
        ``lost``, gauge min/mean/max, counters' last value and ``_delta``,
        states' last value, ``thr_*``/``busy_n`` sample counts).
    """
    res = resolution or pick_resolution(db, since, until, max_points)
    kind = "minute" if res == "minute" else "rollup"
    cols, decode = row_decoder(kind, set(fields) if fields is not None else None)
    # Bucket rows start at their bucket: include the one containing ``since``.
    lo = int(since) if res == "minute" else int(since) // _STEP[res] * _STEP[res]
    found = rows(db, f"""
        SELECT {', '.join(cols)} FROM {_TABLE[res]}
        WHERE gpu_id = (SELECT id FROM gpus WHERE uuid = ?) AND ts >= ? AND ts < ? ORDER BY ts""",
                 (uuid, lo, until))
    return {"resolution": res, "step_s": _STEP[res], "rows": [decode(r) for r in found]}


def counts(db: Database) -> dict[str, int]:
    """Row counts of the main tables (benchmarks and tests; a full scan of ``samples``: not for refresh loops)."""
    return {t: rows(db, f"SELECT count(*) FROM {t}")[0][0] for t in ("nodes", "gpus", "samples", "events", "poll_log")}


def _where(since: float | None, until: float | None, node: str | None, extra: list[str] | None = None,
           ts: str = "ts") -> tuple[str, list[Any]]:
    conds: list[str] = []
    params: list[Any] = []
    if since is not None:
        conds.append(f"{ts} >= ?")
        params.append(since)
    if until is not None:
        conds.append(f"{ts} < ?")
        params.append(until)
    if node is not None:
        conds.append("node = ?")
        params.append(node)
    conds += extra or []
    return ("WHERE " + " AND ".join(conds)) if conds else "", params


def _json_or_text(text: str | None) -> Any:
    if text is None or not text[:1] in ("{", "["):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def inventory_changes(db: Database, since: float | None = None, until: float | None = None,
                      node: str | None = None, uuid: str | None = None) -> list[dict[str, Any]]:
    """Inventory change log entries in [since, until), oldest first.

    Keys: id, ts, gpu_uuid, node, kind, old, new. ``old``/``new`` are dicts
    (``{"node", "index", "pci_bus_id"}`` for appeared/disappeared/moved;
    ``{"default_w", "enforced_w"}`` for power_limit_changed) or plain strings
    (driver, VBIOS, serial).
    """
    extra, params = [], []
    if uuid is not None:
        extra.append("gpu_uuid = ?")
    where, params = _where(since, until, node, extra)
    if uuid is not None:
        params.append(uuid)
    out = query(db, f"SELECT * FROM inventory_changes {where} ORDER BY ts, id", params)
    for r in out:
        r["old"] = _json_or_text(r["old"])
        r["new"] = _json_or_text(r["new"])
    return out


def events(db: Database, since: float | None = None, until: float | None = None, node: str | None = None,
           kinds: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Events (agent: Xid, GPU lost/back/reset…; collector: node_unreachable/node_back), oldest first.

    Keys: id, node, seq (None for collector events), ts, kind, gpu_uuid,
    pci_bus_id, code, message, data (dict).
    """
    kinds = list(kinds) if kinds is not None else None
    extra = [f"kind IN ({', '.join('?' for _ in kinds)})"] if kinds else []
    where, params = _where(since, until, node, extra)
    out = query(db, f"SELECT * FROM events {where} ORDER BY ts, id", params + (kinds or []))
    for r in out:
        r["data"] = json.loads(r["data"]) if r["data"] else {}
    return out


def poll_log(db: Database, node: str | None = None, since: float | None = None,
             until: float | None = None) -> list[dict[str, Any]]:
    """Poll attempts, oldest first. Keys: id, ts, node, ok (bool), error, duration_ms, minutes, events."""
    where, params = _where(since, until, node)
    out = query(db, f"SELECT * FROM poll_log {where} ORDER BY ts, id", params)
    for r in out:
        r["ok"] = bool(r["ok"])
    return out
