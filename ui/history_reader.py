"""History reads for the GPU detail and derating views, on their own worker thread.

The GUI thread asks through :class:`HistoryService` (plain method calls that
emit queued signals) and gets typed results back as signals. Requests carry
a generation number: when the user clicks through GPUs or ranges faster than
the disk answers, the worker skips requests that a newer one has replaced, so
the view never replays a backlog.

History windows come from the local store, or, when the fleet file names a
``[history] prometheus`` (:func:`set_prometheus`, called at start-up), from
that Prometheus (:mod:`fleetmon.remote.prometheus`); the card's identity,
change log and events still come from the store.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, QThread, Signal, Slot

from storage.rows import DeratingDay, EventRow, GpuRow, HistoryWindow, InventoryChangeRow, NodeRow, PlacementRow


_PROMETHEUS: list[str | None] = [None]


def set_prometheus(url: str | None) -> None:
    """Read the GPU history windows of readers created from now on from this Prometheus (None: the store)."""
    _PROMETHEUS[0] = url or None


def prometheus_url() -> str | None:
    """The Prometheus history windows are read from (None: the local store)."""
    return _PROMETHEUS[0]


def read_window(db: Any, uuid: str, since: float, until: float, prometheus: str | None = None,
                client: Any = None) -> HistoryWindow:
    """One GPU's history window: from ``prometheus`` when given (through ``client``, a
    :class:`~fleetmon.remote.prometheus.PromClient`, when given), else from the store ``db``.

    Raises:
        fleetmon.remote.prometheus.PrometheusError: Prometheus unreachable, the query refused, the answer
            garbled or too large, or no answer before the deadline (one line).
    """
    if prometheus or client is not None:
        from fleetmon.remote.prometheus import PromClient, detail_window as remote_window

        return remote_window(client if client is not None else PromClient(str(prometheus)), uuid, since, until)
    from storage.history_window import detail_window

    return detail_window(db, uuid, since, until)


@dataclass(frozen=True)
class DetailData:
    """One GPU over one window: history, identity, change log, events, derating days."""

    uuid: str
    since: float
    until: float
    window: HistoryWindow
    gpu: GpuRow | None = None
    changes: tuple[InventoryChangeRow, ...] = ()
    placements: tuple[PlacementRow, ...] = ()
    events: tuple[EventRow, ...] = ()
    read_ms: float = 0.0
    power_failed: tuple[tuple[float, int], ...] = ()
    """(hour start, minutes) whose power reading failed, for windows served from rollups."""
    intakes: tuple[Any, ...] = ()
    """The card's intakes (:class:`storage.intake.IntakeRow`), newest first: part of its history."""
    slurm: tuple[Any, ...] = ()
    """Slurm drains and resumes of the card's node (:class:`storage.slurm_actions.SlurmActionRow`), newest first."""
    node: NodeRow | None = None
    """The card's node as last recorded: its vendor's versions (driver, runtime, firmware) and tool."""


@dataclass(frozen=True)
class DeratingData:
    """Every GPU's derating days over a window, with each GPU's model."""

    since: float
    until: float
    days: tuple[DeratingDay, ...] = ()
    models: dict[str, str] = field(default_factory=dict)
    read_ms: float = 0.0


class HistoryReader(QObject):
    """Lives on a QThread with its own read-only connection."""

    detail_loaded = Signal(object)  # DetailData
    derating_loaded = Signal(object)  # DeratingData
    failed = Signal(str)

    def __init__(self, db_path: str, prometheus: str | None = None) -> None:
        super().__init__()
        self.db_path = db_path
        self.prometheus = prometheus
        self._db: Any = None
        self._lock = threading.Lock()
        self._latest: dict[str, int] = {}
        self._client: Any = None  # the Prometheus read in flight, for cancel()
        self._cancelled = False

    def mark(self, kind: str, generation: int) -> None:
        """Called from the GUI thread: requests of ``kind`` older than ``generation`` are stale."""
        with self._lock:
            self._latest[kind] = generation

    def _stale(self, kind: str, generation: int) -> bool:
        with self._lock:
            return generation < self._latest.get(kind, 0)

    def _open(self) -> Any:
        from storage.db import open_database

        if self._db is None:
            self._db = open_database(self.db_path, readonly=True)
        return self._db

    @Slot(int, str, float, float)
    def load_detail(self, generation: int, uuid: str, since: float, until: float) -> None:
        from storage.history_window import failed_power_hours, gpu_changes, gpu_events, gpu_record

        if self._stale("detail", generation):
            return
        t0 = time.perf_counter()
        try:
            db = self._open()
            gpu = gpu_record(db, uuid)
            client = None
            if self.prometheus:
                from fleetmon.remote.prometheus import PromClient

                client = PromClient(self.prometheus)
                with self._lock:
                    if self._cancelled:
                        return
                    self._client = client
            try:
                window = read_window(db, uuid, since, until, self.prometheus, client=client)
            finally:
                with self._lock:
                    self._client = None
            changes, places = gpu_changes(db, uuid)
            from storage.intake import intakes

            card_intakes = intakes(db, uuid, limit=20)
            from storage.queries import node as node_row
            from storage.slurm_actions import slurm_actions

            node_name = getattr(gpu, "node", None)
            node = node_row(db, node_name) if node_name else None  # the card's node only, not every node
            node_slurm = slurm_actions(db, node_name, limit=20) if node_name else []
            events = gpu_events(db, gpu, since, until) if gpu is not None else []
            power_failed = failed_power_hours(db, uuid, since, until) if window.resolution != "minute" else []
        except Exception as exc:  # shown by the view; the next request retries
            self._db = None
            if not self._cancelled:
                # One line whatever failed (a bug too): the view shows it in its status line; the core's errors
                # (Prometheus's, storage's: an i18n.Text) in the reader's language.
                from fleetmon.errors import KnownError
                from fleetmon.i18n import message_of

                text = message_of(exc).replace("\n", " ").strip() or type(exc).__name__

                self.failed.emit(text if isinstance(exc, KnownError) else f"{type(exc).__name__}: {text}")
            return
        self.detail_loaded.emit(DetailData(
            uuid=uuid, since=since, until=until, window=window, gpu=gpu, changes=tuple(changes),
            placements=tuple(places), events=tuple(events), read_ms=(time.perf_counter() - t0) * 1000,
            power_failed=tuple(power_failed), intakes=tuple(card_intakes), slurm=tuple(node_slurm), node=node))

    @Slot(int, float, float)
    def load_derating(self, generation: int, since: float, until: float) -> None:
        from storage.history_window import fleet_derating

        if self._stale("derating", generation):
            return
        t0 = time.perf_counter()
        try:
            days, models = fleet_derating(self._open(), since, until)
        except Exception as exc:
            self._db = None
            from fleetmon.i18n import message_of

            self.failed.emit(message_of(exc))  # storage's errors in the reader's language
            return
        self.derating_loaded.emit(DeratingData(since=since, until=until, days=tuple(days), models=models,
                                               read_ms=(time.perf_counter() - t0) * 1000))

    def cancel(self) -> None:
        """Called from the GUI thread when the view goes away: end the Prometheus read in flight now."""
        with self._lock:
            self._cancelled = True
            client = self._client
        if client is not None:
            client.cancel()

    @Slot()
    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


class HistoryService(QObject):
    """Owned by the GUI thread: starts the reader's thread and forwards requests to it."""

    _detail = Signal(int, str, float, float)
    _derating = Signal(int, float, float)

    def __init__(self, db_path: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._generation = 0
        self._thread = QThread(self)
        self._thread.setObjectName("history-reader")
        self.reader = HistoryReader(db_path, prometheus_url())
        self.reader.moveToThread(self._thread)
        self._detail.connect(self.reader.load_detail)
        self._derating.connect(self.reader.load_derating)
        self.detail_loaded = self.reader.detail_loaded
        self.derating_loaded = self.reader.derating_loaded
        self.failed = self.reader.failed
        self._thread.start()

    def _next(self, kind: str) -> int:
        self._generation += 1
        self.reader.mark(kind, self._generation)
        return self._generation

    def request_detail(self, uuid: str, since: float, until: float) -> None:
        self._detail.emit(self._next("detail"), uuid, float(since), float(until))

    def request_derating(self, since: float, until: float) -> None:
        self._derating.emit(self._next("derating"), float(since), float(until))

    def stop(self) -> None:
        """Finish the reader's thread (call before the window goes away); a Prometheus read in flight is
        cancelled, so this returns in about a second, not at the read's deadline."""
        self.reader.cancel()
        if self._thread.isRunning():
            self._thread.quit()
            self._thread.wait(5000)
        self.reader.close()
