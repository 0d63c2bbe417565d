"""History for the health engine and reports, and the engine's outputs.

Pure data in and out, no health logic: loaders return decoded dicts (fleetmon
field names and units), writers store what the engine computed.

Outputs kept here:

* ``findings``: one row per finding key (the engine's stable identity of a
  problem, e.g. ``"ecc_unc:GPU-…"``), with its open/resolved life cycle;
* ``derating_daily``: per GPU and UTC day, how far the card performs below
  what it should;
* ``reports``: each report's summary, so the next one can say what changed.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from sqlite_utils import Database

from fleetmon.vocab import Severity
from storage.db import query, rows, transaction
from storage.schema import row_decoder


DERATING_COLUMNS: tuple[str, ...] = ("sm_clock_busy_mhz", "clock_ratio", "power_limit_ratio", "memory_ratio",
                                     "pcie_ratio", "clock_vs_fleet")

GPU_COLUMNS = ("id, uuid, node, idx, pci_bus_id, name, serial, vbios, memory_total_mib, power_default_w, "
               "power_enforced_w, state, first_seen, last_seen, inventory")


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


def load_gpus(db: Database) -> list[dict[str, Any]]:
    """Every GPU ever seen, ordered by node and index.

    Keys: uuid, node, idx, pci_bus_id, name, serial, vbios, memory_total_mib,
    power_default_w, power_enforced_w, state ("ok", "lost", "gone"),
    first_seen, last_seen, inventory (the inventory values dict),
    inventory_status (non-OK inventory reads).
    """
    cols = ", ".join(f"g.{c.strip()}" for c in GPU_COLUMNS.split(",") if c.strip() != "last_seen")
    out = query(db, f"""SELECT {cols}, max(coalesce(g.last_seen, 0), coalesce(l.seen, 0)) AS last_seen
                        FROM gpus g LEFT JOIN gpu_latest l ON l.gpu_id = g.id ORDER BY g.node, g.idx, g.uuid""")
    for r in out:
        if not r["last_seen"]:
            r["last_seen"] = None
    for r in out:
        inv = json.loads(r.pop("inventory") or "{}")
        r.pop("id")
        r["inventory"] = inv.get("values", {})
        r["inventory_status"] = inv.get("status", {})
    return out


def gpu_ids(db: Database) -> dict[str, int]:
    """Every GPU's internal id by UUID (the key of the per-GPU tables)."""
    return {r["uuid"]: int(r["id"]) for r in query(db, "SELECT uuid, id FROM gpus")}


def never_answered(db: Database) -> dict[str, tuple[float, int]]:
    """Nodes that never answered a poll: {node: (first attempt, failed attempts)}."""
    return {r["node"]: (float(r["first"]), int(r["n"])) for r in query(db, """
        SELECT node, min(ts) AS first, count(*) AS n FROM poll_log
        WHERE node IN (SELECT name FROM nodes WHERE last_ok IS NULL) GROUP BY node""")}


def load_nodes(db: Database) -> list[dict[str, Any]]:
    """Every node (as :func:`storage.queries.nodes`)."""
    return query(db, "SELECT * FROM nodes ORDER BY name")


def load_placements(db: Database, uuid: str | None = None) -> list[dict[str, Any]]:
    """Where each GPU sat over time ("card vs slot"), from the inventory change log.

    Returns rows ``{uuid, node, index, pci_bus_id, since, until}`` (``until``
    None while it is still there), oldest first per GPU.
    """
    where = "WHERE kind IN ('enrolled', 'appeared', 'moved', 'disappeared')"
    params: list[Any] = []
    if uuid is not None:
        where += " AND gpu_uuid = ?"
        params.append(uuid)
    out: list[dict[str, Any]] = []
    open_: dict[str, dict[str, Any]] = {}
    for r in query(db, f"SELECT ts, gpu_uuid, kind, new FROM inventory_changes {where} ORDER BY ts, id", params):
        u = r["gpu_uuid"]
        place = json.loads(r["new"]) if r["kind"] != "disappeared" and r["new"] else None
        cur = open_.get(u)
        if cur is not None and place is not None and \
                (cur["node"], cur["index"], cur["pci_bus_id"]) == (place.get("node"), place.get("index"),
                                                                    place.get("pci_bus_id")):
            continue  # "appeared" and "moved" logged together name the same slot
        if cur is not None:
            cur["until"] = r["ts"]
            del open_[u]
        if place is None:
            continue
        row = {"uuid": u, "node": place.get("node"), "index": place.get("index"),
               "pci_bus_id": place.get("pci_bus_id"), "since": r["ts"], "until": None}
        out.append(row)
        open_[u] = row
    return out


# -- findings ------------------------------------------------------------------------

def _rank(severity: Any) -> int:
    """Order for "worsened": a :class:`fleetmon.vocab.Severity` by its rank, an integer as itself."""
    if isinstance(severity, (int, float)):
        return int(severity)
    return Severity.parse(severity).rank


def _finding(r: dict[str, Any]) -> dict[str, Any]:
    r = dict(r)
    r["evidence"] = json.loads(r["evidence"]) if r.get("evidence") else None
    return r


def save_findings(db: Database, findings: list[dict[str, Any]], now: float) -> dict[str, list[dict[str, Any]]]:
    """Store the health engine's current findings; return what changed.

    Each finding: ``key`` (stable identity), ``kind``, ``severity`` (a name from
    :class:`fleetmon.vocab.Severity` or an int), optional ``node``, ``gpu_uuid``,
    ``first_seen`` / ``last_seen`` (the onset and the latest evidence, Unix s;
    ``now`` when absent), ``evidence`` (JSON-able), ``action`` (text).

    Upsert by key. An open finding missing from ``findings`` is resolved
    (``resolved_at = now``); a resolved one that comes back reopens (its
    ``first_seen`` restarts at the new onset); a higher severity than stored is
    "worsened".

    Returns:
        ``{"new": [...], "reopened": [...], "resolved": [...], "worsened": [...]}``
        (reopened ones are in "new" too), rows as :func:`open_findings` gives them.
    """
    result: dict[str, list[dict[str, Any]]] = {"new": [], "reopened": [], "resolved": [], "worsened": []}
    by_key = {f["key"]: f for f in findings}
    with transaction(db) as conn:
        cur = conn.execute("SELECT * FROM findings")
        names = [d[0] for d in cur.description]
        stored = {r["key"]: r for r in (dict(zip(names, row)) for row in cur.fetchall())}
        for key, f in by_key.items():
            evidence = json.dumps(f.get("evidence"), separators=(",", ":"), sort_keys=True, default=str) \
                if f.get("evidence") is not None else None
            old = stored.get(key)
            if old is None:
                conn.execute(
                    """INSERT INTO findings (key, kind, severity, node, gpu_uuid, first_seen, last_seen, evidence,
                                             action, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    (key, f["kind"], f.get("severity"), f.get("node"), f.get("gpu_uuid"),
                     f.get("first_seen") or now, f.get("last_seen") or now, evidence, f.get("action"), now))
                result["new"].append(key)
                continue
            reopened = old["resolved_at"] is not None
            conn.execute(
                """UPDATE findings SET kind = ?, severity = ?, node = ?, gpu_uuid = ?, last_seen = ?, evidence = ?,
                       action = ?, updated_at = ?, resolved_at = NULL,
                       first_seen = CASE WHEN ? THEN ? ELSE first_seen END WHERE key = ?""",
                (f["kind"], f.get("severity"), f.get("node"), f.get("gpu_uuid"), f.get("last_seen") or now, evidence,
                 f.get("action"), now, reopened, f.get("first_seen") or now, key))
            if reopened:
                result["new"].append(key)
                result["reopened"].append(key)
            elif _rank(f.get("severity")) > _rank(old["severity"]):
                result["worsened"].append(key)
        gone = [k for k, r in stored.items() if r["resolved_at"] is None and k not in by_key]
        conn.executemany("UPDATE findings SET resolved_at = ?, updated_at = ? WHERE key = ?",
                         [(now, now, k) for k in gone])
        result["resolved"] = gone
        wanted = {k for keys in result.values() for k in keys}
        cur = conn.execute("SELECT * FROM findings")
        names = [d[0] for d in cur.description]
        full = {r["key"]: _finding(r) for r in (dict(zip(names, row)) for row in cur.fetchall())
                if r["key"] in wanted}
    return {what: [full[k] for k in keys] for what, keys in result.items()}


def open_findings(db: Database) -> list[dict[str, Any]]:
    """Findings not resolved, oldest first. ``evidence`` is decoded."""
    return [_finding(r) for r in query(db, "SELECT * FROM findings WHERE resolved_at IS NULL ORDER BY first_seen, id")]


def findings_between(db: Database, since: float, until: float) -> list[dict[str, Any]]:
    """Findings open at any moment of [since, until): opened before ``until``, not resolved before ``since``."""
    return [_finding(r) for r in query(db, """
        SELECT * FROM findings WHERE first_seen < ? AND (resolved_at IS NULL OR resolved_at >= ?)
        ORDER BY first_seen, id""", (until, since))]


# -- derating ------------------------------------------------------------------------

def save_derating(db: Database, rows_in: list[dict[str, Any]]) -> int:
    """Upsert daily derating figures; returns rows written.

    Each row: ``gpu_uuid`` (or ``uuid``), ``day`` (UTC day start, Unix
    seconds), and any of :data:`DERATING_COLUMNS` (missing ones become NULL).
    Rows for unknown GPUs are skipped.
    """
    with transaction(db) as conn:
        ids = {u: i for i, u in conn.execute("SELECT id, uuid FROM gpus")}
        data = []
        for r in rows_in:
            gid = ids.get(r.get("gpu_uuid") or r.get("uuid"))
            if gid is None:
                continue
            data.append((gid, int(r["day"]), *(r.get(c) for c in DERATING_COLUMNS)))
        conn.executemany(
            f"INSERT OR REPLACE INTO derating_daily (gpu_id, day, {', '.join(DERATING_COLUMNS)}) "
            f"VALUES ({', '.join('?' for _ in range(len(DERATING_COLUMNS) + 2))})", data)
    return len(data)


def derating_history(db: Database, uuid: str | None, since: float, until: float) -> list[dict[str, Any]]:
    """Derating rows with ``day`` in [since, until), by GPU then day; ``uuid`` None for every GPU."""
    where = "d.day >= ? AND d.day < ?"
    params: list[Any] = [since, until]
    if uuid is not None:
        where += " AND g.uuid = ?"
        params.append(uuid)
    return query(db, f"""
        SELECT g.uuid AS gpu_uuid, g.node, d.day, {', '.join('d.' + c for c in DERATING_COLUMNS)}
        FROM derating_daily d JOIN gpus g ON g.id = d.gpu_id WHERE {where} ORDER BY g.uuid, d.day""", params)


# -- reports -------------------------------------------------------------------------

def save_report(db: Database, kind: str, ts: float, summary: Any) -> int:
    """Store a report's summary (JSON-able); returns its id."""
    with transaction(db) as conn:
        cur = conn.execute("INSERT INTO reports (ts, kind, summary) VALUES (?, ?, ?)",
                           (ts, kind, json.dumps(summary, separators=(",", ":"), sort_keys=True, default=str)))
        return int(cur.lastrowid or 0)


def last_report(db: Database, kind: str, before: float | None = None) -> dict[str, Any] | None:
    """The newest report of ``kind`` (before ``before`` if given): ``{id, ts, kind, summary}`` or None."""
    sql = "SELECT * FROM reports WHERE kind = ?"
    params: list[Any] = [kind]
    if before is not None:
        sql += " AND ts < ?"
        params.append(before)
    found = query(db, sql + " ORDER BY ts DESC, id DESC LIMIT 1", params)
    if not found:
        return None
    r = found[0]
    r["summary"] = json.loads(r["summary"]) if r["summary"] else None
    return r
