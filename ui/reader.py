"""Database reads for the window, on a worker thread (the GUI thread never touches SQLite)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from fleetmon.health.findings import worst_order
from storage.rows import DeratingDay, FleetRow, HistoryWindow, StoredFinding


@dataclass(frozen=True)
class GpuDetail:
    """What the GPU detail view shows: the history window, the inventory (reference lines), derating days."""

    window: HistoryWindow
    inventory: dict[str, Any] = field(default_factory=dict)
    derating: tuple[DeratingDay, ...] = ()


class DbReader(QObject):
    """Lives on a QThread; each ``load`` reads the fleet's latest state and emits it."""

    loaded = Signal(list, dict)  # list[FleetRow], {"read_at": float}
    findings_loaded = Signal(list)  # list[StoredFinding]
    history_loaded = Signal(str, object)  # uuid, GpuDetail
    failed = Signal(str)

    def __init__(self, db_path: str) -> None:
        super().__init__()
        self.db_path = db_path
        self._db: Any = None

    def _conn(self) -> Any:
        """This thread's read-only connection, opened on first use (and again after a failure)."""
        from storage.db import open_database

        if self._db is None:
            self._db = open_database(self.db_path, readonly=True)
        return self._db

    @Slot()
    def load(self) -> None:
        from storage.findings import open_findings
        from storage.queries import fleet_latest

        try:
            db = self._conn()
            rows = fleet_latest(db)
            info: dict[str, Any] = {"read_at": time.time()}
            findings = open_findings(db)
        except Exception as exc:  # shown in the status bar; the next tick retries
            self._db = None
            self.failed.emit(str(exc))
            return
        rows, findings = attach_findings(rows, findings)
        self.loaded.emit(rows, info)
        self.findings_loaded.emit(findings)

    @Slot(str, int)
    def load_history(self, uuid: str, window_s: int) -> None:
        """Read one GPU's history over the last ``window_s`` seconds (resolution chosen by storage),
        its inventory (for reference lines) and its per-day derating figures."""
        from storage.findings import derating_history
        from storage.queries import gpu_history, gpu_inventory

        try:
            db = self._conn()
            until = int(time.time()) + 60
            result = GpuDetail(
                window=gpu_history(db, uuid, until - window_s, until),
                inventory=gpu_inventory(db, uuid),
                derating=tuple(derating_history(db, uuid, until - max(window_s, 30 * 86400), until)),
            )
        except Exception as exc:  # shown in the status bar; the next request retries
            self._db = None
            self.failed.emit(str(exc))
            return
        self.history_loaded.emit(uuid, result)

    @Slot()
    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def attach_findings(rows: list[FleetRow], findings: list[StoredFinding]
                    ) -> tuple[list[FleetRow], list[StoredFinding]]:
    """Give each GPU row its open findings as (severity, kind) pairs; node findings apply to every GPU.

    Also fills ``gpu_index`` of the findings from the rows, for display.
    """
    by_gpu: dict[str, list[tuple[str, str, float]]] = {}
    by_node: dict[str, list[tuple[str, str, float]]] = {}
    index_of = {r.uuid: r.index for r in rows}
    shown: list[StoredFinding] = []
    for f in findings:
        triple = (str(f.severity or ""), str(f.kind or ""), float(f.first_seen))
        if f.gpu_uuid:
            by_gpu.setdefault(f.gpu_uuid, []).append(triple)
            if f.gpu_index is None:
                f = replace(f, gpu_index=index_of.get(f.gpu_uuid))
        elif f.node:
            by_node.setdefault(f.node, []).append(triple)
        shown.append(f)

    def worst_first(found: list[tuple[str, str, float]]) -> tuple[tuple[str, str], ...]:
        # The one fixed order (severity, kind priority, onset), so a GPU's health label is stable.
        return tuple((sev, kind) for sev, kind, _ in sorted(found, key=lambda t: worst_order(*t)))

    # Only the rows with findings are copied: most of a healthy fleet's 8,000 rows keep their object.
    return [replace(r, findings=worst_first(by_gpu.get(r.uuid, []) + by_node.get(r.node, [])))
            if r.uuid in by_gpu or r.node in by_node else r for r in rows], shown
