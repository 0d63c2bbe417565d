"""The fleet-facing reads and the operator's writes (acknowledgements), on the reader's worker thread.

:class:`FleetReader` is a :class:`ui.reader.DbReader` (so the history loaders
stay where they are) that also reads everything the fleet, versions and
findings views show in one :class:`FleetSnapshot`, and writes
acknowledgements through a short-lived read-write connection of its own.
"""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import Signal, Slot

from ui.reader import DbReader, attach_findings
from ui.snapshot import FleetSnapshot

__all__ = ["FleetReader", "FleetSnapshot", "prepare", "read_snapshot"]


def read_snapshot(db: Any, now: float | None = None, memo: dict[str, Any] | None = None,
                  stale_after_s: float | None = None) -> FleetSnapshot:
    """Read a :class:`FleetSnapshot` from an open database (any thread; the caller's connection).

    ``memo``: the reader's cache of decoded inventories, kept between reads (see storage.queries.gpus).
    The snapshot comes judged (``snap.verdicts``, :func:`ui.verdicts.judge`) at its ``read_at`` with
    ``stale_after_s`` (default: the default ``stale_after_minutes``).
    """
    from ui.verdicts import judge

    from storage.acks import acks
    from storage.findings import open_findings
    from storage.health_input import nodes_as_of
    from storage.intake import latest_intakes
    from storage.queries import fleet_latest, gpus, nodes

    read_at = time.time() if now is None else now
    rows, findings = attach_findings(fleet_latest(db), open_findings(db))
    snap = FleetSnapshot(rows=tuple(rows), nodes={n.name: n for n in nodes_as_of(db, nodes(db), read_at)},
                         gpus={g.uuid: g for g in gpus(db, memo)},
                         findings=tuple(findings), acks=acks(db), read_at=read_at,
                         intakes=latest_intakes(db))
    snap.derived["verdicts"] = judge(snap, stale_after_s)
    return snap


def prepare(snap: FleetSnapshot, params: Any) -> None:
    """What the GUI thread would otherwise compute per refresh: the fleet tree, the summary bar, the versions matrix."""
    from ui.models.fleet_build import TreeParams, build_tree, summary_text
    from ui.models.versions import version_rows

    snap.derived["summary"] = summary_text(snap)
    snap.derived["versions"] = version_rows(snap)
    if isinstance(params, TreeParams):
        from ui.models.fleet_tree import warm

        tree = build_tree(snap, snap.read_at, params)
        warm(tree, snap)
        snap.derived["tree"] = tree


class FleetReader(DbReader):
    """Adds the fleet snapshot and acknowledgement writes to :class:`DbReader` (same thread, same connection)."""

    snapshot_loaded = Signal(object)  # FleetSnapshot
    unchanged = Signal()  # a refresh found nothing new to read (see load_fleet_if_changed)
    ack_saved = Signal(str)  # finding key
    MAX_UNCHANGED_S = 10.0
    """Even with nothing new in the database, a refresh reads again after this long: the ages shown
    ("12 s ago") and what counts as stale move on with the clock."""
    stale_after_s: float | None = None
    """The fleet's ``stale_after_minutes`` in seconds (None: the default), set by the window."""
    tree_params: Any = None
    """The fleet tree's :class:`ui.models.fleet_build.TreeParams`, set from the GUI thread before each load:
    the snapshot then comes with its tree built here, off the GUI thread."""

    _seen: tuple[Any, Any, float] | None = None  # (data version, tree params, when) of the last snapshot

    def __init__(self, db_path: str) -> None:
        super().__init__(db_path)
        self._inventories: dict[str, Any] = {}  # decoded inventories by their stored text, kept between reads

    @Slot()
    def load_fleet_if_changed(self) -> None:
        """The periodic refresh: read only when another connection committed since the last snapshot.

        Reading and preparing 8,000 GPUs costs the reader about a second of Python, in the
        window's process; a 2-s timer beside a 30-s collector would mostly redo it for nothing.
        """
        from storage.queries import data_version

        try:
            version = data_version(self._conn())
        except Exception as exc:
            self._db = None
            self.failed.emit(str(exc))
            return
        seen = self._seen
        if seen is not None and seen[0] == version and seen[1] == self.tree_params \
                and time.time() - seen[2] < self.MAX_UNCHANGED_S:
            self.unchanged.emit()
            return
        self.load_fleet()

    @Slot()
    def load_fleet(self) -> None:
        from storage.queries import data_version

        try:
            db = self._conn()
            version = data_version(db)
            params = self.tree_params
            snap = read_snapshot(db, memo=self._inventories, stale_after_s=self.stale_after_s)
            prepare(snap, params)
        except Exception as exc:  # shown in the status bar; the next tick retries
            self._db = None
            self._seen = None
            self.failed.emit(str(exc))
            return
        self._seen = (version, params, time.time())
        self.snapshot_loaded.emit(snap)
        # The original signals, for anyone listening to the plain reader.
        self.loaded.emit(list(snap.rows), {"read_at": snap.read_at, "verdicts": snap.verdicts})
        self.findings_loaded.emit(list(snap.findings))

    resolved = Signal(str)  # finding key

    @Slot(str, str, str, str)
    def save_resolution(self, key: str, reason: str, note: str, by: str) -> None:
        """Store an operator's resolution of the finding ``key`` (storage.resolutions), then reload."""
        from storage import resolutions
        from storage.db import open_database

        try:
            db = open_database(self.db_path)
            try:
                resolutions.resolve(db, key, reason, note, time.time(), by or None)
            finally:
                db.close()
        except KeyError:
            self.failed.emit(f"cannot resolve {key}: no such finding is stored")
            return
        except Exception as exc:
            self.failed.emit(f"cannot store the resolution: {exc}")
            return
        self.resolved.emit(key)
        self.load_fleet()

    @Slot(str, str, str, float, str)
    def save_ack(self, key: str, severity: str, note: str, until: float, by: str) -> None:
        """Acknowledge (``until`` 0) or snooze the finding ``key``; ``note`` empty and ``until`` < 0 clears it."""
        from storage import acks
        from storage.db import open_database

        try:
            db = open_database(self.db_path)
            try:
                if until < 0:
                    acks.clear_ack(db, key)
                else:
                    acks.acknowledge(db, key, severity or None, note, time.time(), until=until or None,
                                     by=by or None)
            finally:
                db.close()
        except Exception as exc:
            self.failed.emit(f"cannot store the acknowledgement: {exc}")
            return
        self.ack_saved.emit(key)
        self.load_fleet()
