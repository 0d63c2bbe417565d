"""Read queries used by the GUI, the export, the collector and reports; typed rows out (:mod:`storage.rows`).

Callers never see the storage encoding (:mod:`storage.schema`): gauges come
back as floats in their catalog units, counters and states as ints, under
:mod:`fleetmon.fields` names.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from sqlite_utils import Database

from fleetmon.i18n import from_data, loads
from storage.db import get_meta, query, rows
from storage.rollup import DAY, HOUR
from storage.rows import (EventRow, FleetRow, GpuRow, HistoryWindow, InventoryChangeRow, NodeRow, PlacementRow,
                          PollRow)
from storage.schema import row_decoder

_TABLE = {"minute": "samples", "hour": "hourly", "day": "daily"}
_STEP = {"minute": 60, "hour": HOUR, "day": DAY}


def data_version(db: Database) -> int:
    """SQLite's ``PRAGMA data_version`` of this connection: it changes when another connection commits,
    so a reader can tell that nothing new was written since its last read."""
    return int(rows(db, "PRAGMA data_version")[0][0])


def stored_text(english: str | None, stored: object, key: str) -> str | None:
    """A stored English text (a node's reason for a failed poll, m018) as an ``i18n.Text`` again when the column
    beside it (``stored``: :func:`fleetmon.i18n.dumps` JSON) says how it was made, so that it is said in the
    reader's language; else ``english`` as stored (a row from before m018: NULL; data that does not give the
    English stored again). Never raises."""
    if english is None:
        return None
    return from_data(loads(stored).get(key), english)


def fleet_latest(db: Database) -> list[FleetRow]:
    """One row per known GPU with its node and latest reading, ordered by node and index.

    ``state`` is "ok", "lost" or "gone" (no longer in its node's inventory).
    """
    out = []
    for r in query(db, """
        SELECT n.name AS node, n.status AS node_status, n.last_ok, n.last_error, n.last_error_texts, n.driver_version,
               g.uuid, g.idx, g.name, g.state, l.ts AS latest_ts, l.latest, g.power_default_w, g.power_enforced_w,
               coalesce(g.vendor, n.vendor) AS vendor
        FROM gpus g JOIN nodes n ON n.name = g.node LEFT JOIN gpu_latest l ON l.gpu_id = g.id
        ORDER BY n.name, g.idx"""):
        latest = json.loads(r["latest"] or "{}")
        out.append(FleetRow(
            node=r["node"], uuid=r["uuid"], node_status=r["node_status"], last_ok=r["last_ok"],
            last_error=stored_text(r["last_error"], r["last_error_texts"], "error"), driver_version=r["driver_version"],
            index=r["idx"], model=r["name"],
            state=r["state"], latest_ts=r["latest_ts"], power_default_w=r["power_default_w"],
            power_enforced_w=r["power_enforced_w"], values=latest.get("values", {}),
            status=latest.get("status", {}), vendor=r["vendor"]))
    return out


def gpu_inventory(db: Database, uuid: str) -> dict[str, Any]:
    """One GPU's stored inventory values (fleetmon.fields.INVENTORY_FIELDS), {} if unknown."""
    rows = query(db, "SELECT inventory FROM gpus WHERE uuid = ?", (uuid,))
    if not rows or not rows[0]["inventory"]:
        return {}
    values: dict[str, Any] = json.loads(rows[0]["inventory"]).get("values", {})
    return values


def _node(r: dict[str, Any]) -> NodeRow:
    return NodeRow(
        name=r["name"], url=r["url"], group=r["grp"], hostname=r["hostname"], driver_version=r["driver_version"],
        cuda_driver_version=r["cuda_driver_version"], nvml_version=r["nvml_version"], kernel=r["kernel"],
        os_release=r["os_release"], agent_version=r["agent_version"], xid_source=r["xid_source"],
        gpu_count=r["gpu_count"], status=r["status"], last_ok=r["last_ok"], last_attempt=r["last_attempt"],
        last_error=stored_text(r["last_error"], r.get("last_error_texts"), "error"), skew_s=r["skew_s"],
        agent_started_at=r["agent_started_at"],
        minutes_cursor=int(r["minutes_cursor"] or 0), events_cursor=int(r["events_cursor"] or 0),
        buffer_id=r.get("buffer_id"), notice=r.get("notice"), refused_uuids=int(r.get("refused_uuids") or 0),
        vendor=r.get("vendor"), runtime_version=r.get("runtime_version"), firmware_version=r.get("firmware_version"))


def nodes(db: Database) -> list[NodeRow]:
    """Every node with its reachability, versions and cursors, by name."""
    return [_node(r) for r in query(db, "SELECT * FROM nodes ORDER BY name")]


def node(db: Database, name: str) -> NodeRow | None:
    """One node as :func:`nodes` gives it, or None when it is unknown."""
    rows = query(db, "SELECT * FROM nodes WHERE name = ?", (name,))
    return _node(rows[0]) if rows else None


def gpu_vendors(db: Database) -> dict[str, str | None]:
    """Every GPU's stored vendor by UUID (None: stored before issue 23), without decoding inventories."""
    return {r["uuid"]: r["vendor"] for r in query(db, "SELECT uuid, vendor FROM gpus")}


_GPU_COLUMNS = ("uuid", "node", "idx", "pci_bus_id", "name", "serial", "vbios", "memory_total_mib",
                "power_default_w", "power_enforced_w", "state", "first_seen", "inventory", "vendor")


def gpus(db: Database, memo: dict[str, dict[str, Any]] | None = None) -> list[GpuRow]:
    """Every GPU ever seen, ordered by node and index.

    ``last_seen`` is the later of the last inventory and the last sample.
    ``memo`` (stored inventory text → its decoded form), kept by a caller that
    reads the fleet again and again, saves decoding inventories that did not
    change (8,000 JSON documents per read of a large fleet); the decoded
    dicts are shared between reads and must not be modified.
    """
    cols = ", ".join(f"g.{c}" for c in _GPU_COLUMNS)
    out = []
    for r in query(db, f"""SELECT {cols}, max(coalesce(g.last_seen, 0), coalesce(l.seen, 0)) AS last_seen,
                                  s.signals AS signals
                           FROM gpus g LEFT JOIN gpu_latest l ON l.gpu_id = g.id
                           LEFT JOIN gpu_signals s ON s.gpu_id = g.id ORDER BY g.node, g.idx, g.uuid"""):
        text = r["inventory"] or "{}"
        if memo is None:
            inv = json.loads(text)
        else:
            inv = memo.get(text)
            if inv is None:
                if len(memo) > 4 * 65536:  # inventories replaced over time: start afresh
                    memo.clear()
                inv = memo[text] = json.loads(text)
        out.append(GpuRow(
            uuid=r["uuid"], node=r["node"], index=r["idx"], pci_bus_id=r["pci_bus_id"], model=r["name"],
            serial=r["serial"], vbios=r["vbios"], memory_total_mib=r["memory_total_mib"],
            power_default_w=r["power_default_w"], power_enforced_w=r["power_enforced_w"], state=r["state"],
            first_seen=r["first_seen"], last_seen=r["last_seen"] or None,
            inventory=inv.get("values", {}), inventory_status=inv.get("status", {}), vendor=r["vendor"],
            signals=_signals(r["signals"])))
    return out


def _signals(text: str | None) -> dict[str, Any]:
    """A card's stored current signals (``gpu_signals``, m016), {} when none or unreadable."""
    if not text:
        return {}
    try:
        found = json.loads(text)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def placements(db: Database, uuid: str | None = None) -> list[PlacementRow]:
    """Where each GPU sat over time ("card vs slot"), from the inventory change log, oldest first per GPU."""
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
    return [PlacementRow(**r) for r in out]


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
                max_points: int = 2000, resolution: str | None = None) -> HistoryWindow:
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
        the window at resolution "minute", "hour" or "day" (step 60, 3600 or
        86400 s); its rows as :class:`storage.rows.HistoryWindow` describes.
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
    return HistoryWindow(res, _STEP[res], tuple(decode(r) for r in found))


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
                      node: str | None = None, uuid: str | None = None,
                      except_kinds: Iterable[str] = ()) -> list[InventoryChangeRow]:
    """Inventory change log entries in [since, until), oldest first (``old``/``new`` decoded).

    ``except_kinds``: kinds left out (the health engine does not judge ``enrolled``: on a fleet's
    first day that is one entry per card, decoded at every health pass).
    """
    extra: list[str] = []
    skip = list(except_kinds)
    if uuid is not None:
        extra.append("gpu_uuid = ?")
    if skip:
        extra.append(f"kind NOT IN ({', '.join('?' for _ in skip)})")
    where, params = _where(since, until, node, extra)
    if uuid is not None:
        params.append(uuid)
    params.extend(skip)
    return [InventoryChangeRow(id=r["id"], ts=r["ts"], kind=r["kind"], gpu_uuid=r["gpu_uuid"], node=r["node"],
                               old=_json_or_text(r["old"]), new=_json_or_text(r["new"]))
            for r in query(db, f"SELECT * FROM inventory_changes {where} ORDER BY ts, id", params)]


def events(db: Database, since: float | None = None, until: float | None = None, node: str | None = None,
           kinds: Iterable[str] | None = None) -> list[EventRow]:
    """Events (agent: Xid, GPU lost/back/reset…; collector: node_unreachable/node_back), oldest first."""
    wanted = list(kinds) if kinds is not None else None
    extra = [f"kind IN ({', '.join('?' for _ in wanted)})"] if wanted else []
    where, params = _where(since, until, node, extra)
    return [EventRow(id=r["id"], node=r["node"], ts=r["ts"], kind=r["kind"], seq=r["seq"], gpu_uuid=r["gpu_uuid"],
                     pci_bus_id=r["pci_bus_id"], code=r["code"],
                     message=stored_text(r["message"], r.get("message_texts"), "message"),
                     data=json.loads(r["data"]) if r["data"] else {})
            for r in query(db, f"SELECT * FROM events {where} ORDER BY ts, id", params + (wanted or []))]


def poll_log(db: Database, node: str | None = None, since: float | None = None,
             until: float | None = None) -> list[PollRow]:
    """Poll attempts, oldest first."""
    where, params = _where(since, until, node)
    return [PollRow(id=r["id"], ts=r["ts"], node=r["node"], ok=bool(r["ok"]),
                    error=stored_text(r["error"], r.get("error_texts"), "error"),
                    duration_ms=r["duration_ms"], minutes=r["minutes"], events=r["events"])
            for r in query(db, f"SELECT * FROM poll_log {where} ORDER BY ts, id", params)]
