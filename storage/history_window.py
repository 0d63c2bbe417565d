"""Reads behind the GPU detail and derating views: a window at the resolution its span calls for.

The detail view offers fixed ranges (24 h / 7 d / 30 d / 90 d / 1 y) and a
custom one. Each is served from the table that holds it at a chart's density:
raw minutes for a day (1,440 points), hourly rollups for a week to a quarter
(168 to 2,160 points), daily rollups for a year. Only the keys the plots draw
are decoded (a 90-day hourly window of every column costs several times more).
"""

from __future__ import annotations

import json

from collections.abc import Iterable
from typing import Any

from sqlite_utils import Database

from fleetmon.fields import THROTTLE_NAMES
from storage.db import get_meta, query
from storage.findings import derating_history
from storage.queries import events as _events
from storage.queries import gpu_history, inventory_changes, placements
from storage.rollup import DAY, HOUR
from storage.rows import DeratingDay, EventRow, GpuRow, HistoryWindow, InventoryChangeRow, PlacementRow

RANGES: tuple[tuple[str, int], ...] = (
    ("24 h", DAY), ("7 d", 7 * DAY), ("30 d", 30 * DAY), ("90 d", 90 * DAY), ("1 y", 365 * DAY),
)
"""The detail view's ranges: label and span in seconds."""

DETAIL_FIELDS: tuple[str, ...] = (
    "n", "temp_c", "power_w", "power_limit_w", "sm_clock_mhz", "util_gpu_pct",
    "ecc_corr_agg", "ecc_unc_agg", "retired_sbe", "retired_dbe", "remap_corr", "remap_unc",
    "pcie_gen", "pcie_width", "pcie_replay", "throttle_mask", "status",
    *(f"thr_{r}" for r in THROTTLE_NAMES), "busy_n", "pcie_gen_busy_min", "pcie_width_busy_min",
)
"""What the detail plots draw (gauges bring min/mean/max; rollup counters their ``_delta`` too; the busy
sample count and the lowest link while busy show a downtrained link)."""


def resolution_for(span_s: float) -> str:
    """The stored resolution for a window of ``span_s`` seconds: minute up to 36 h, hour up to 120 days, else day."""
    if span_s <= 36 * HOUR:
        return "minute"
    if span_s <= 120 * DAY:
        return "hour"
    return "day"


def detail_window(db: Database, uuid: str, since: float, until: float,
                  fields: Iterable[str] = DETAIL_FIELDS) -> HistoryWindow:
    """One GPU's history over [since, until) at :func:`resolution_for` its span.

    Minutes are used only while raw minutes for the whole window are still kept
    (retention prunes them); otherwise the hourly rollups serve the window.
    """
    res = resolution_for(until - since)
    if res == "minute" and since < float(get_meta(db, "pruned_before", 0)):
        res = "hour"
    return gpu_history(db, uuid, since, until, fields=list(fields), resolution=res)


def gpu_record(db: Database, uuid: str) -> GpuRow | None:
    """The stored card (identity, placement, inventory), or None if unknown (one row, not the fleet's)."""
    found = query(db, """SELECT g.uuid, g.node, g.idx, g.pci_bus_id, g.name, g.serial, g.vbios, g.memory_total_mib,
                                g.power_default_w, g.power_enforced_w, g.state, g.first_seen, g.inventory,
                                max(coalesce(g.last_seen, 0), coalesce(l.seen, 0)) AS last_seen
                         FROM gpus g LEFT JOIN gpu_latest l ON l.gpu_id = g.id WHERE g.uuid = ?""", (uuid,))
    if not found:
        return None
    r = found[0]
    inv = json.loads(r["inventory"] or "{}")
    return GpuRow(uuid=r["uuid"], node=r["node"], index=r["idx"], pci_bus_id=r["pci_bus_id"], model=r["name"],
                  serial=r["serial"], vbios=r["vbios"], memory_total_mib=r["memory_total_mib"],
                  power_default_w=r["power_default_w"], power_enforced_w=r["power_enforced_w"], state=r["state"],
                  first_seen=r["first_seen"], last_seen=r["last_seen"] or None, inventory=inv.get("values", {}),
                  inventory_status=inv.get("status", {}))


def failed_power_hours(db: Database, uuid: str, since: float, until: float) -> list[tuple[float, int]]:
    """Hours in [since, until) (the one containing ``since`` included) in which the card's power reading
    failed: (hour start, failed minutes), oldest first, from ``hourly_health``.

    A rollup's power mean skips the failed minutes, so a few-minute power dropout last week is seen only here.
    """
    lo = int(since) // HOUR * HOUR
    found = query(db, """SELECT h.ts, h.failed_power_w FROM hourly_health h
                         WHERE h.gpu_id = (SELECT id FROM gpus WHERE uuid = ?) AND h.ts >= ? AND h.ts < ?
                               AND h.failed_power_w > 0 ORDER BY h.ts""", (uuid, lo, until))
    return [(float(r["ts"]), int(r["failed_power_w"])) for r in found]


def gpu_changes(db: Database, uuid: str) -> tuple[list[InventoryChangeRow], list[PlacementRow]]:
    """The card's inventory change log (moves, driver/VBIOS/serial/power-limit changes) and its placements."""
    return inventory_changes(db, uuid=uuid), placements(db, uuid)


def gpu_events(db: Database, gpu: GpuRow, since: float, until: float) -> list[EventRow]:
    """Events of the card in [since, until): its own, and its node's events that name no GPU.

    Xids the agent could not attribute to a card carry neither a UUID nor a
    PCI bus id; they are shown on every card of the node rather than dropped.
    """
    if gpu.node is None:
        return []
    out = []
    for e in _events(db, since, until, node=gpu.node):
        if e.gpu_uuid == gpu.uuid or (e.gpu_uuid is None and e.pci_bus_id in (None, gpu.pci_bus_id)):
            out.append(e)
    return out


def fleet_derating(db: Database, since: float, until: float) -> tuple[list[DeratingDay], dict[str, str]]:
    """Every GPU's derating days in [since, until) and each GPU's model name (uuid → model)."""
    days = derating_history(db, None, since, until)
    models = {r["uuid"]: r["name"] or "unknown model" for r in query(db, "SELECT uuid, name FROM gpus")}
    return days, models


def newest_data_ts(db: Database) -> float | None:
    """The newest stored sample time of any GPU (benchmark and archived databases end in the past)."""
    found = query(db, "SELECT max(ts) AS ts FROM gpu_latest")
    ts: Any = found[0]["ts"] if found else None
    return None if ts is None else float(ts)
