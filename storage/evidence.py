"""Reads behind a card's RMA and return evidence (``fleetmon evidence``, :mod:`fleetmon.evidence`).

The archive gathers everything the store knows of one card; most of it comes
through the general queries (:mod:`storage.queries`, :mod:`storage.acks`,
:mod:`storage.resolutions`). What only the evidence needs is here: finding a
card by UUID or serial, the findings of one card and of its nodes, and the
UUID claim conflicts that name it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlite_utils import Database

from storage.db import get_meta, query
from storage.findings import _finding
from storage.queries import gpu_history
from storage.rows import HistoryWindow, StoredFinding

__all__ = ["CardMatch", "ClaimConflictRow", "card_findings", "claim_conflicts", "episode_window", "find_cards",
           "node_findings"]


@dataclass(frozen=True)
class CardMatch:
    """A card a ``--gpu`` argument names: its UUID, serial, model and where it sits (or last sat)."""

    uuid: str
    serial: str | None
    model: str | None
    node: str | None
    index: int | None


@dataclass(frozen=True)
class ClaimConflictRow:
    """A node that reported the card while another node held it (``gpu_claim_conflicts``)."""

    node: str
    holder: str
    first_seen: float
    last_seen: float
    dropped: int


def find_cards(db: Database, ident: str) -> list[CardMatch]:
    """The cards ``ident`` names: the one with that UUID, else every card with that serial (case-insensitive,
    surrounding blanks ignored). Empty when none does; several when a serial is shared (a fake, a mistake)."""
    text = ident.strip()
    cols = "uuid, serial, name, node, idx"
    found = query(db, f"SELECT {cols} FROM gpus WHERE uuid = ? ORDER BY node, idx", (text,))
    if not found:
        found = query(db, f"SELECT {cols} FROM gpus WHERE upper(uuid) = upper(?) ORDER BY node, idx", (text,))
    if not found and text:
        found = query(db, f"SELECT {cols} FROM gpus WHERE upper(trim(serial)) = upper(?) ORDER BY node, idx",
                      (text,))
    return [CardMatch(uuid=r["uuid"], serial=r["serial"], model=r["name"], node=r["node"], index=r["idx"])
            for r in found]


def card_findings(db: Database, uuid: str) -> list[StoredFinding]:
    """Every stored finding of the card (open and resolved), oldest first; ``evidence`` decoded."""
    return [_finding(r) for r in query(db, "SELECT * FROM findings WHERE gpu_uuid = ? ORDER BY first_seen, id",
                                       (uuid,))]


def node_findings(db: Database, node: str, since: float, until: float | None) -> list[StoredFinding]:
    """Findings of ``node`` that name no card and were open at some moment of [since, until) (None: to now):
    a flapping node, a driver mismatch, Xids on several cards at once, while the card sat there."""
    sql = "SELECT * FROM findings WHERE node = ? AND gpu_uuid IS NULL AND (resolved_at IS NULL OR resolved_at >= ?)"
    params: list[Any] = [node, since]
    if until is not None:
        sql += " AND first_seen < ?"
        params.append(until)
    return [_finding(r) for r in query(db, sql + " ORDER BY first_seen, id", params)]


def claim_conflicts(db: Database, uuid: str) -> list[ClaimConflictRow]:
    """Nodes that claimed the card's UUID while another held it, oldest first (a cloned or faked UUID)."""
    return [ClaimConflictRow(node=r["node"], holder=r["holder"], first_seen=float(r["first_seen"]),
                             last_seen=float(r["last_seen"]), dropped=int(r["dropped"] or 0))
            for r in query(db, "SELECT * FROM gpu_claim_conflicts WHERE gpu_uuid = ? ORDER BY first_seen", (uuid,))]


def episode_window(db: Database, uuid: str, since: float, until: float, fields: list[str]) -> HistoryWindow:
    """The card's raw minutes over [since, until) while retention still keeps them all, else its hourly rollups."""
    if since >= float(get_meta(db, "pruned_before", 0) or 0):
        window = gpu_history(db, uuid, since, until, fields=fields, resolution="minute")
        if window.rows:
            return window
    return gpu_history(db, uuid, since, until, fields=fields, resolution="hour")
