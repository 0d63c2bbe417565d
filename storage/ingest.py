"""Writing polls into the database: one transaction per collector cycle, idempotent.

The cursors (last sequence numbers received from each agent) are written in
the same transaction as the records they cover, so after a crash at any
moment the database holds exactly the records up to its cursors and the next
poll asks the agent for the rest. A record received twice is stored once
(``INSERT OR IGNORE`` on the natural keys: (gpu_id, ts) for minutes, (node,
seq) for agent events).

Besides the records themselves, ingest derives:

* the inventory change log (``inventory_changes``): enrolled (a card of a
  node's first inventory), appeared, disappeared,
  moved, driver_changed, vbios_changed, serial_changed, power_limit_changed,
  by comparing each poll with the stored ``gpus``/``nodes`` rows;
* reachability events (``node_unreachable`` / ``node_back``, seq NULL) when a
  node's status flips between ok and unreachable;
* the rollup "dirty" mark (meta ``rollup_dirty_from``): the oldest minute
  stored since the last rollup, so :func:`storage.rollup.maintain` knows what
  to recompute.

The hot path (minute rows) is plain ``sqlite3.executemany`` of rows encoded by
:func:`storage.schema.encode_minute`; sqlite-utils' ``insert_all`` measured
5-6× slower here.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping

from sqlite_utils import Database

from fleetmon.fields import DEFAULT_VENDOR
from fleetmon.i18n import N_, Text, dumps, kept_as_text, reason_of
from fleetmon.records import GpuInventory, NodePoll
from fleetmon.signals import BASELINE_KIND, EVENT_KINDS as SIGNAL_EVENT_KINDS, fold, merge, signal_events
from fleetmon.vocab import GpuState
from storage.boundary import RefusedPoll, check_poll
from storage.db import transaction
from storage.schema import LAYOUT, Layout

log = logging.getLogger("fleetmon.storage")

_SAMPLE_SQL = LAYOUT.insert_sql()
_EVENT_SQL = """INSERT OR IGNORE INTO events (node, seq, ts, kind, gpu_uuid, pci_bus_id, code, message, data)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"""
_LATEST_SQL = "INSERT OR REPLACE INTO gpu_latest (gpu_id, ts, seen, latest) VALUES (?, ?, ?, ?)"
_POLL_LOG_SQL = ("INSERT OR IGNORE INTO poll_log (ts, node, ok, error, duration_ms, minutes, events, "
                 "error_texts) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
_UNREACHABLE_SQL = """INSERT OR IGNORE INTO events (node, seq, ts, kind, message, message_texts)
                      VALUES (?, NULL, ?, 'node_unreachable', ?, ?)"""
_CHANGE_SQL = "INSERT INTO inventory_changes (ts, gpu_uuid, node, kind, old, new) VALUES (?, ?, ?, ?, ?, ?)"
_DIRTY_SQL = """INSERT INTO meta (key, value) VALUES ('rollup_dirty_from', ?)
                ON CONFLICT (key) DO UPDATE SET value = min(coalesce(value, excluded.value), excluded.value)"""

class LateMinutes:
    """Minute rows written at or before what a reader already holds, by GPU id: what a reader
    that keeps the rows it read must read again (a node's buffer backfilled after an outage, an
    agent whose clock went back).

    ``marks`` holds, per GPU id, the newest minute the reader holds of that GPU: a row at or
    before its mark arrived late. (A minute row's ``ts`` is the minute's start and it is stored
    after the minute ends, so the reader's clock is not the mark: the minute that was running
    when it read comes after, and is new, not late.) A reader registers one with
    :func:`watch_minutes` on the Database it writes through; every later :func:`ingest_polls` on
    that Database notes the GPUs whose rows are at or before their mark (rows of a batch that
    failed may be noted too: reading again costs only time). Writes through other connections
    are not seen here: ``PRAGMA data_version`` tells of them.
    """

    def __init__(self) -> None:
        self.marks: Mapping[int, int] = {}
        self.late: dict[int, int] = {}

    def saw(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """Note the encoded minute rows ``(gpu_id, ts, ...)`` at or before their GPU's mark."""
        marks = self.marks
        if not marks:
            return
        late = self.late
        for r in rows:
            gid, ts = r[0], r[1]
            mark = marks.get(gid)
            if mark is not None and ts <= mark:
                old = late.get(gid)
                if old is None or ts < old:
                    late[gid] = int(ts)

    def take(self, marks: Mapping[int, int] | None = None) -> dict[int, int]:
        """The GPUs noted since the last take; with ``marks``, watch against those from now on."""
        late, self.late = self.late, {}
        if marks is not None:
            self.marks = marks
        return late


def watch_minutes(db: Database, watch: LateMinutes | None) -> None:
    """Have :func:`ingest_polls` on ``db`` note late minute rows in ``watch`` (None: stop)."""
    if watch is None:
        db.__dict__.pop("_fleetmon_minute_watch", None)
    else:
        db.__dict__["_fleetmon_minute_watch"] = watch


@dataclass(frozen=True)
class GpuCap:
    """The most GPUs one node may accumulate: ``gpus`` distinct UUIDs seen on it within ``span_s``
    (the collector's figures are :data:`fleetmon.collector.limits.MAX_GPUS_SEEN_PER_NODE` and
    ``GPUS_SEEN_SPAN_S``; storage imports no collector module, so they are passed in)."""

    gpus: int
    span_s: float


POWER_TOLERANCE_W = 0.5
"""Power limits closer than this are the same limit (NVML reports milliwatts)."""


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True)


def place_text(node: str | None, index: int | None, pci_bus_id: str | None) -> str:
    """The ``old``/``new`` text of appeared/disappeared/moved changes (JSON)."""
    return _dumps({"node": node, "index": index, "pci_bus_id": pci_bus_id})


@dataclass
class _Gpu:
    """What ingest knows about one stored GPU row."""

    id: int
    uuid: str
    node: str | None
    idx: int | None
    pci_bus_id: str | None
    serial: str | None
    vbios: str | None
    power_default_w: float | None
    power_enforced_w: float | None
    state: str | None
    has_inventory: bool


class _Batch:
    """State shared by the polls of one ingest call (one transaction)."""

    def __init__(self, conn: sqlite3.Connection, seen: dict[str, tuple[Any, ...]],
                 gpus: dict[str, _Gpu] | None = None, watch: LateMinutes | None = None) -> None:
        self.conn = conn
        self.watch = watch
        if gpus is None:
            gpus = _load_gpus(conn)
        # The stored GPU rows as of the last committed batch (reread when another connection wrote).
        self.gpus: dict[str, _Gpu] = gpus
        # Nodes that already had cards: on any other node a card's first sighting is the node's
        # first inventory ("enrolled"), not a change of hardware.
        self.known_nodes = {g.node for g in self.gpus.values()}
        # What each GPU's stored inventory was made from, kept on the Database
        # between calls so an unchanged inventory costs a dict comparison, not
        # a JSON dump and an UPDATE (dropped whenever a transaction fails).
        self.seen: dict[str, tuple[Any, ...]] = seen
        self.touched: dict[int, float] = {}
        self.changes: list[tuple[Any, ...]] = []
        self.minute_rows: list[tuple[Any, ...]] = []
        self.latest_rows: list[tuple[Any, ...]] = []
        self.poll_log_rows: list[tuple[Any, ...]] = []
        self.state_rows: list[tuple[str, int]] = []
        self.min_ts: int | None = None
        self.gpu_cap: GpuCap | None = None

    def change(self, ts: float, uuid: str | None, node: str | None, kind: str, old: Any, new: Any) -> None:
        if kind == "appeared" and node not in self.known_nodes:
            kind = "enrolled"
        self.changes.append((ts, uuid, node, kind, None if old is None else str(old),
                             None if new is None else str(new)))

    def gpu_id(self, uuid: str, node: str, ts: float, index: int | None = None) -> int:
        """Id of a GPU, creating a bare row for one seen only in samples (no inventory yet)."""
        g = self.gpus.get(uuid)
        if g is None:
            cur = self.conn.execute(
                "INSERT INTO gpus (uuid, node, idx, first_seen, last_seen, state) VALUES (?, ?, ?, ?, ?, 'ok')",
                (uuid, node, index, ts, ts))
            g = _Gpu(int(cur.lastrowid or 0), uuid, node, index, None, None, None, None, None, "ok", False)
            self.gpus[uuid] = g
            self.change(ts, uuid, node, "appeared", None, place_text(node, index, None))
        return g.id

    def flush(self, layout: Layout) -> None:
        """Write the rows gathered for the current node (inside its savepoint)."""
        conn = self.conn
        if self.poll_log_rows:
            conn.executemany(_POLL_LOG_SQL, self.poll_log_rows)
        if self.minute_rows:
            if self.watch is not None:
                self.watch.saw(self.minute_rows)
            before = conn.total_changes
            conn.executemany(_SAMPLE_SQL if layout is LAYOUT else layout.insert_sql(), self.minute_rows)
            if conn.total_changes != before and self.min_ts is not None:
                conn.execute(_DIRTY_SQL, (self.min_ts,))
        if self.latest_rows:
            conn.executemany(_LATEST_SQL, self.latest_rows)
        if self.state_rows:
            conn.executemany("UPDATE gpus SET state = ? WHERE id = ?", self.state_rows)
        if self.touched:
            conn.executemany("UPDATE gpus SET last_seen = ? WHERE id = ?",
                             [(ts, gid) for gid, ts in self.touched.items()])
        if self.changes:
            conn.executemany(_CHANGE_SQL, self.changes)
        self._clear()

    def _clear(self) -> None:
        self.touched = {}
        self.changes = []
        self.minute_rows = []
        self.latest_rows = []
        self.poll_log_rows = []
        self.state_rows = []
        self.min_ts = None

    def forget(self) -> None:
        """After a rollback to the node's savepoint: drop its rows and reread what it changed in memory."""
        self._clear()
        self.seen.clear()
        self.gpus = _load_gpus(self.conn)


def _load_gpus(conn: sqlite3.Connection) -> dict[str, _Gpu]:
    gpus: dict[str, _Gpu] = {}
    for r in conn.execute("""SELECT id, uuid, node, idx, pci_bus_id, serial, vbios, power_default_w,
                                    power_enforced_w, state, inventory IS NOT NULL FROM gpus"""):
        gpus[r[1]] = _Gpu(*[*r[:10], bool(r[10])])
    return gpus


# One encoder for every latest sample: json.dumps with non-default arguments builds a new encoder per call.
_LATEST_JSON = json.JSONEncoder(separators=(",", ":"), check_circular=False)


def ingest_polls(db: Database, polls: Iterable[NodePoll], layout: Layout = LAYOUT,
                 refused: dict[str, str] | None = None, gpu_cap: GpuCap | None = None) -> int:
    """Store a batch of polls in one transaction; returns the number of minute rows offered.

    ``layout`` is the stored form of the field catalog (storage.schema.LAYOUT).

    The agents' polls are written first, then the other sources' (dcgm-exporter, SSH, captures),
    each group in the order given: an agent serves its cards from its own buffer, a scrape or
    a capture cannot prove them, so on a fresh database an agent holds its cards even when a
    scrape listing them comes first in the fleet file (see :func:`_quarantine_claims`).
    ``gpu_cap`` (the collector passes :data:`fleetmon.collector.limits.MAX_GPUS_SEEN_PER_NODE`):
    past it a node's new GPU UUIDs are refused (see :func:`_cap_new_gpus`); None: no cap.

    Each node's answer is written under a savepoint of its own: one that the
    store cannot keep (a wrong type, see :mod:`storage.boundary`; an integer
    outside SQLite's 64-bit range; text that is not valid Unicode; any other
    error of that node's data) is rolled back alone and recorded as a failed
    poll of that node with a one-line reason (``nodes.status`` 'unreachable',
    ``nodes.last_error``, ``poll_log.error``: the path of an agent that did
    not answer), so its cursors stay put and the next poll fetches the same
    records again. The other nodes' records and cursors commit. ``refused``
    (if given) receives node -> reason for each such node; without it the
    reason is logged here (the collector passes a dict and logs it itself).

    Raises:
        StorageError: the database cannot be written (disk full, read-only,
            locked); nothing of the batch is stored and the cursors stay put.
    """
    offered = 0
    seen: dict[str, tuple[Any, ...]] = db.__dict__.setdefault("_fleetmon_inventory_seen", {})
    out = refused if refused is not None else {}
    try:
        with transaction(db) as conn:
            # Another process (`fleetmon import-smi` beside a running collector) may have written
            # since this connection's last batch: its cards are not in the caches, and inserting
            # one again would fail that node's answer on gpus.uuid's UNIQUE. SQLite's data_version
            # changes exactly when another connection committed; read under this write lock.
            version = conn.execute("PRAGMA data_version").fetchone()[0]
            if db.__dict__.get("_fleetmon_data_version") != version:
                seen.clear()
                db.__dict__.pop("_fleetmon_gpus", None)
                db.__dict__["_fleetmon_data_version"] = version
            batch = _Batch(conn, seen, db.__dict__.get("_fleetmon_gpus"), db.__dict__.get("_fleetmon_minute_watch"))
            batch.gpu_cap = gpu_cap
            for poll in sorted(polls, key=lambda p: not proves_cards(p.url)):
                offered += _ingest_isolated(batch, poll, layout, out, log_it=refused is None)
    except BaseException:
        # Nothing of the batch was stored: forget what it changed in the caches.
        seen.clear()
        db.__dict__.pop("_fleetmon_gpus", None)
        raise
    db.__dict__["_fleetmon_gpus"] = batch.gpus
    return offered


_DATABASE_FAULTS = frozenset({
    sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_READONLY,
    sqlite3.SQLITE_INTERRUPT, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_FULL,
    sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PROTOCOL, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_PERM,
    sqlite3.SQLITE_ABORT,
})
"""Primary SQLite result codes that are the database's fault, not one node's data: the whole batch fails."""


def is_node_fault(exc: BaseException) -> bool:
    """Whether ``exc`` (raised while writing one node's answer) is that answer's fault.

    Not a node's fault: an sqlite3 error with a disk, I/O, lock, permission or
    corruption code (the whole batch fails and is retried), and anything that
    is not an ``Exception`` (KeyboardInterrupt, MemoryError).
    """
    if isinstance(exc, MemoryError) or not isinstance(exc, Exception):
        return False
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if code is None:
            low = str(exc).lower()
            return not any(w in low for w in ("full", "disk", "i/o", "locked", "busy", "readonly", "read-only",
                                              "malformed", "not a database", "unable to open"))
        return (int(code) & 0xFF) not in _DATABASE_FAULTS
    return True


def refusal_reason(exc: BaseException) -> str:
    """One short line: why a node's answer was not stored."""
    if isinstance(exc, RefusedPoll):
        what = reason_of(exc)
    else:
        lines = str(exc).strip().splitlines()
        what = f"{type(exc).__name__}: {lines[0] if lines else 'no detail'}"
    # As ASCII (escapes for the rest) cut to 300; a RefusedPoll's Text stays one where its English allows.
    return Text(N_("storage refused the answer: {reason}"),
                reason=kept_as_text(what, ascii(what)[1:-1][:300], lambda v: ascii(v)[1:-1]))


def _ingest_isolated(batch: _Batch, poll: NodePoll, layout: Layout, refused: dict[str, str], *,
                     log_it: bool) -> int:
    """One node's answer under a savepoint; a fault of its data costs that answer alone."""
    conn = batch.conn
    conn.execute("SAVEPOINT fleetmon_node")
    try:
        check_poll(poll)
        offered = _ingest_one(batch, poll, layout)
        batch.flush(layout)
    except Exception as exc:
        if not is_node_fault(exc) or not conn.in_transaction:
            raise
        conn.execute("ROLLBACK TO fleetmon_node")
        batch.forget()
        reason = refusal_reason(exc)
        refused[poll.node] = reason
        if log_it:
            log.warning("node %s: %s", poll.node, reason)
        failed = NodePoll(node=poll.node, url=poll.url, ts=poll.ts, ok=False, group=poll.group, error=reason,
                          duration_ms=poll.duration_ms)
        try:
            _ingest_one(batch, failed, layout)
            batch.flush(layout)
        except Exception as again:  # the node's url/group themselves cannot be stored
            if not is_node_fault(again):
                raise
            conn.execute("ROLLBACK TO fleetmon_node")
            batch.forget()
        conn.execute("RELEASE fleetmon_node")
        return 0
    conn.execute("RELEASE fleetmon_node")
    return offered


def _node_row(conn: sqlite3.Connection, node: str) -> tuple[Any, ...]:
    """(status, driver_version, last_ok, buffer_id, notice) of a node, creating its row on first sight."""
    sql = "SELECT status, driver_version, last_ok, buffer_id, notice FROM nodes WHERE name = ?"
    row: tuple[Any, ...] | None = conn.execute(sql, (node,)).fetchone()
    if row is None:
        conn.execute("INSERT INTO nodes (name) VALUES (?)", (node,))
        row = conn.execute(sql, (node,)).fetchone()
    assert row is not None
    return row


def _ingest_one(batch: _Batch, poll: NodePoll, layout: Layout = LAYOUT) -> int:
    conn = batch.conn
    node = poll.node
    old_status, old_driver, last_ok, old_buffer, old_notice = _node_row(conn, node)
    # How the reason was made (m018): an i18n.Text is said again in the reader's language where it is shown.
    error_texts = dumps({"error": poll.error}) if not poll.ok else None
    batch.poll_log_rows.append(
        (poll.ts, node, int(poll.ok), poll.error, round(poll.duration_ms, 3), len(poll.minutes), len(poll.events),
         error_texts))
    if not poll.ok:
        conn.execute("UPDATE nodes SET url = ?, grp = ?, last_attempt = ?, status = 'unreachable', last_error = ?, "
                     "last_error_texts = ? WHERE name = ?", (poll.url, poll.group, poll.ts, poll.error, error_texts,
                                                             node))
        if old_status == "ok":
            message = poll.error or "the agent did not answer"
            conn.execute(_UNREACHABLE_SQL, (node, poll.ts, message, dumps({"message": message})))
        return 0
    if old_status == "unreachable" and last_ok is not None:  # back after a node_unreachable
        conn.execute(_EVENT_SQL, (node, None, poll.ts, "node_back", None, None, None, "the agent answers again", None))
    sets = ("url = ?, grp = ?, last_attempt = ?, status = 'ok', last_ok = ?, last_error = NULL, "
            "last_error_texts = NULL, skew_s = ?")
    params: list[Any] = [poll.url, poll.group, poll.ts, poll.ts, poll.skew_s]
    info = poll.info
    if info is not None:
        v = info.values
        new_driver = v.get("driver_version")
        if old_driver is not None and new_driver is not None and new_driver != old_driver:
            batch.change(poll.ts, None, node, "driver_changed", old_driver, new_driver)
        sets += """, hostname = ?, driver_version = coalesce(?, driver_version), cuda_driver_version = ?,
                   nvml_version = ?, kernel = ?, os_release = ?, agent_version = ?, xid_source = ?, gpu_count = ?,
                   agent_started_at = ?, vendor = ?, runtime_version = ?, firmware_version = ?"""
        params += [info.hostname, new_driver, v.get("cuda_driver_version"), v.get("nvml_version"), v.get("kernel"),
                   v.get("os_release"), info.agent_version, info.xid_source, v.get("gpu_count"), info.started_at,
                   v.get("vendor") or DEFAULT_VENDOR, v.get("runtime_version"), v.get("firmware_version")]
    # The agent's buffer identity changed: its sequence numbers restarted (see _cursor_expr).
    reset = poll.buffer_id is not None and old_buffer is not None and old_buffer != poll.buffer_id
    if poll.buffer_id is not None:
        sets += ", buffer_id = ?"
        params.append(poll.buffer_id)
    if poll.minutes_cursor is not None or poll.events_cursor is not None:
        sets += (f", minutes_cursor = {_cursor_expr('minutes_cursor', reset)}"
                 f", events_cursor = {_cursor_expr('events_cursor', reset)}")
        params += [poll.minutes_cursor, poll.events_cursor]
    poll, taken = _quarantine_claims(batch, poll)
    notice = None
    if batch.gpu_cap is not None:
        poll, notice, refused_n = _cap_new_gpus(batch, poll, batch.gpu_cap)
        if notice is not None:
            sets += ", refused_uuids = refused_uuids + ?"
            params.append(refused_n)
            if notice != old_notice:
                log.warning("node %s: %s", node, notice)
            _report_refused(conn, node, poll.ts, refused_n, notice, batch.gpu_cap, start=old_notice is None)
    sets += ", notice = ?"
    params.append(notice)
    conn.execute(f"UPDATE nodes SET {sets} WHERE name = ?", (*params, node))
    if taken:
        _take_over(batch, poll, taken)
    _inventory(batch, poll)
    for s in poll.latest:
        gid = batch.gpu_id(s.uuid, node, poll.ts, s.index)
        batch.touched.pop(gid, None)
        batch.latest_rows.append((gid, s.ts, poll.ts, _LATEST_JSON.encode({"values": s.values, "status": s.status})))
        g = batch.gpus[s.uuid]
        if g.state != s.state:
            g.state = s.state
            batch.state_rows.append((s.state, gid))
    if reset:
        # The agent's sequence numbers restarted: events of the old buffer will never be sent again,
        # so they give up their (node, seq) identity and the new buffer's numbers can be stored.
        conn.execute("UPDATE events SET seq = NULL WHERE node = ? AND seq IS NOT NULL", (node,))
    rows = batch.minute_rows
    encode_minute = layout.encode_minute
    for m in poll.minutes:
        gid = batch.gpu_id(m.uuid, node, poll.ts, m.index)
        rows.append(encode_minute(gid, m.ts, m.n, m.state, m.values, m.status))
        if batch.min_ts is None or m.ts < batch.min_ts:
            batch.min_ts = int(m.ts)
    if poll.events:
        conn.executemany(_EVENT_SQL, [
            (node, e.seq, e.ts, e.kind, e.uuid, e.pci_bus_id, e.code, e.message, _dumps(e.data) if e.data else None)
            for e in poll.events])
    if poll.signals or any(e.kind in _SIGNAL_EVENT_KINDS for e in poll.events):
        _signals(batch, poll)
    return len(poll.minutes)


_SIGNAL_EVENT_KINDS = frozenset(SIGNAL_EVENT_KINDS.values()) | {BASELINE_KIND}
MAX_SIGNALS_CHARS = 16_384
"""A device's signals larger than this as JSON are not stored (a tool gone wrong, not a device)."""
_SIGNALS_SQL = "INSERT OR REPLACE INTO gpu_signals (gpu_id, ts, signals) VALUES (?, ?, ?)"


def _stored_signals(conn: sqlite3.Connection, gid: int) -> dict[str, Any] | None:
    row = conn.execute("SELECT signals FROM gpu_signals WHERE gpu_id = ?", (gid,)).fetchone()
    if row is None or not row[0]:
        return None
    try:
        found = json.loads(row[0])
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


def _signals(batch: _Batch, poll: NodePoll) -> None:
    """Device fault signals: events on change and the current signals (``gpu_signals``, m016).

    A capture's poll carries each device's signals (``poll.signals``): compared with the
    stored ones, a change is written as events (``device_health``, ``ecc_block``, ...; no
    sequence number: the source has no buffer) and the stored signals updated. An agent's
    poll carries the events its sampler wrote on change: they update the stored signals
    the same way (:func:`fleetmon.signals.fold`), so both paths keep one current state.
    Only cards this poll stored are touched (not refused or quarantined ones).
    """
    conn = batch.conn
    node = poll.node
    index_of: dict[str, int | None] = {s.uuid: s.index for s in poll.latest}
    index_of.update({g.uuid: g.index for g in poll.gpus})
    pci_of = {g.uuid: g.values.get("pci_bus_id") for g in poll.gpus}
    for uuid, new in poll.signals.items():
        if uuid not in index_of or not isinstance(new, Mapping) or not new:
            continue
        try:
            size = len(_dumps(new))
        except (TypeError, ValueError):  # not JSON: no signals of a parser (device_signals makes plain JSON)
            log.warning("node %s: signals of %s are not JSON; skipped", node, uuid)
            continue
        if size > MAX_SIGNALS_CHARS:
            log.warning("node %s: signals of %s are too large to store; skipped", node, uuid)
            continue
        gid = batch.gpu_id(uuid, node, poll.ts, index_of[uuid])
        current = _stored_signals(conn, gid)
        if current is not None and float(current.get("ts") or 0) > poll.ts:
            continue  # an older capture imported late: its signals are history, not the current state
        before = current.get("values") if current else None
        for kind, message, data in signal_events(before, new):
            conn.execute(_EVENT_SQL, (node, None, poll.ts, kind, uuid, pci_of.get(uuid), None, message,
                                      _dumps(data)))
        merged = merge(current, new, poll.ts)
        if current is None or merged["values"] != before:
            conn.execute(_SIGNALS_SQL, (gid, poll.ts, _dumps(merged)))
        else:
            conn.execute("UPDATE gpu_signals SET signals = ? WHERE gpu_id = ?", (_dumps(merged), gid))
    for e in poll.events:
        if e.kind not in _SIGNAL_EVENT_KINDS or not e.uuid or e.uuid not in batch.gpus:
            continue
        gid = batch.gpus[e.uuid].id
        current = _stored_signals(conn, gid)
        if current is not None and float(current.get("ts") or 0) > e.ts:
            continue  # an older event sent again: the stored state is newer
        folded = fold(current, e.kind, e.data, e.ts)
        if folded is not None and len(_dumps(folded)) <= MAX_SIGNALS_CHARS:
            conn.execute(_SIGNALS_SQL, (gid, e.ts, _dumps(folded)))


CLAIM_WINDOW_S = 300.0
"""A card is "currently present" on its node when that node answered, and the card was seen there,
within this many seconds of another node's poll claiming its UUID."""

CLAIM_REPORT_EVERY_S = 600.0
"""While a claim conflict lasts, a ``uuid_conflict`` event is written when it starts and then at most
this often (the health rule keeps its finding open for twice this after the last one)."""

_CLAIM_SQL = """SELECT n.status, n.last_ok, max(coalesce(g.last_seen, 0), coalesce(l.seen, 0)), n.url
                FROM gpus g JOIN nodes n ON n.name = g.node LEFT JOIN gpu_latest l ON l.gpu_id = g.id
                WHERE g.id = ?"""
_CLAIM_UPSERT_SQL = """
    INSERT INTO gpu_claim_conflicts (node, gpu_uuid, holder, first_seen, last_seen, reported_at, dropped)
    VALUES (?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (node, gpu_uuid) DO UPDATE SET holder = excluded.holder, last_seen = excluded.last_seen,
        first_seen = CASE WHEN last_seen < excluded.last_seen - ? THEN excluded.first_seen ELSE first_seen END,
        reported_at = excluded.reported_at, dropped = dropped + excluded.dropped"""


def proves_cards(url: str | None) -> bool:
    """Whether a node with this URL serves its cards from its own agent buffer (an agent).

    A dcgm-exporter scrape, an nvidia-smi reading over SSH and an imported capture cannot prove
    that the cards they list are theirs: they never displace an agent that serves a card
    (see :func:`_quarantine_claims`). The URL's scheme says which: ``http(s)://`` (or no URL) is an
    agent, as :func:`fleetmon.sources.node_source` reads it; storage imports no sources module
    (tests/core/test_architecture.py), tests/storage/test_store_hostile_claims.py checks the two agree.
    """
    if not url:
        return True
    scheme = url.strip().split(":", 1)[0].lower() if ":" in url else ""
    return scheme in ("http", "https") or scheme not in ("dcgm+http", "dcgm+https", "ssh", "file")


def _quarantine_claims(batch: _Batch, poll: NodePoll) -> tuple[NodePoll, dict[str, str]]:
    """Drop the records of GPUs that another node reports at the same time; store the conflict.

    A node that reports a GPU UUID already held by another node, while that
    node answers and still reports the card (both within
    :data:`CLAIM_WINDOW_S`), does not take the card over: the card's row
    (its passport: node, slot, serial, history) stays with the holder, the
    claimant's inventory entry, latest sample and minutes of that UUID are not
    stored (``gpu_claim_conflicts.dropped`` counts them), and a
    ``uuid_conflict`` event of the claimant names the holder (the
    ``uuid-conflict`` finding). A real move (the card disappeared from its
    node, or that node stopped answering) is recorded as a move, as before.

    One exception (issue 20, item 4): a source that cannot prove the card (a
    dcgm-exporter scrape, nvidia-smi over SSH, an imported capture; see
    :func:`proves_cards`) never keeps a card from an agent. When an agent
    claims a card that such a node holds, the agent takes it (returned as
    ``{uuid: former holder}`` for :func:`_take_over`) and the former holder
    becomes the quarantined claimant: the conflict and its event are its own,
    and its later records of the card are dropped as above. Between two
    agents, or two nodes of other sources, the holder keeps the card.

    Returns the poll without the quarantined records, and the cards taken over.
    """
    node, ts = poll.node, poll.ts
    agent = proves_cards(poll.url)
    holders: dict[str, str] = {}
    taken: dict[str, str] = {}
    claimed = {g.uuid for g in poll.gpus} | {s.uuid for s in poll.latest} | {m.uuid for m in poll.minutes}
    for uuid in claimed:
        g = batch.gpus.get(uuid)
        if g is None or g.node is None or g.node == node or g.state == GpuState.GONE:
            continue
        row = batch.conn.execute(_CLAIM_SQL, (g.id,)).fetchone()
        if row is None:
            continue
        status, last_ok, seen, holder_url = row
        if status == "ok" and last_ok is not None and last_ok >= ts - CLAIM_WINDOW_S and seen >= ts - CLAIM_WINDOW_S:
            if agent and not proves_cards(holder_url):
                taken[uuid] = g.node
            else:
                holders[uuid] = g.node
    by_former: dict[str, list[str]] = {}
    for uuid, former in sorted(taken.items()):
        by_former.setdefault(former, []).append(uuid)
    for former, uuids in sorted(by_former.items()):
        _report_conflict(batch.conn, former, node, ts, {u: 0 for u in uuids})
    if not holders:
        return poll, taken
    by_holder: dict[str, list[str]] = {}
    for uuid, holder in sorted(holders.items()):
        by_holder.setdefault(holder, []).append(uuid)
    for holder, uuids in sorted(by_holder.items()):
        dropped = {u: sum(1 for r in poll.gpus if r.uuid == u) + sum(1 for s in poll.latest if s.uuid == u)
                   + sum(1 for m in poll.minutes if m.uuid == u) for u in uuids}
        _report_conflict(batch.conn, node, holder, ts, dropped)
    keep = holders.keys()
    return replace(poll, gpus=[g for g in poll.gpus if g.uuid not in keep],
                   latest=[s for s in poll.latest if s.uuid not in keep],
                   minutes=[m for m in poll.minutes if m.uuid not in keep]), taken


def _report_conflict(conn: sqlite3.Connection, node: str, holder: str, ts: float, dropped: dict[str, int]) -> None:
    """Store ``node``'s claim of the cards ``holder`` keeps (``dropped``: uuid -> records not stored) and, when
    due, the claimant's ``uuid_conflict`` event."""
    uuids = sorted(dropped)
    marks = ", ".join("?" for _ in uuids)
    last = conn.execute(f"""SELECT max(reported_at), min(last_seen) FROM gpu_claim_conflicts
                            WHERE node = ? AND holder = ? AND gpu_uuid IN ({marks})""",
                        (node, holder, *uuids)).fetchone()
    due = last is None or last[0] is None or ts - last[0] >= CLAIM_REPORT_EVERY_S or (
        last[1] is not None and last[1] < ts - CLAIM_WINDOW_S)
    reported = ts if due else float(last[0])
    conn.executemany(_CLAIM_UPSERT_SQL, [(node, u, holder, ts, ts, reported, dropped[u], CLAIM_WINDOW_S)
                                         for u in uuids])
    if due:
        conn.execute(_EVENT_SQL, (
            node, None, ts, "uuid_conflict", uuids[0], None, None,
            f"node {node} reports GPU UUIDs already seen on node {holder} at the same time",
            _dumps({"holder": holder, "uuids": uuids, "dropped": sum(dropped.values()),
                    "repeat_s": CLAIM_REPORT_EVERY_S})))


def _take_over(batch: _Batch, poll: NodePoll, taken: dict[str, str]) -> None:
    """An agent takes cards from a node that cannot prove them (see :func:`_quarantine_claims`).

    The card's passport moves to the agent's node (a ``moved`` change, as any move). The
    card's minute rows from the first minute the agent serves of it in this poll on (its
    oldest minute here, else its latest sample's minute) are deleted: the agent's buffer
    holds every minute from there on, and a row the other source wrote there would keep the
    agent's minute out (minutes are stored once per GPU and minute). Older rows stay.
    """
    conn, node = batch.conn, poll.node
    inventoried = {g.uuid for g in poll.gpus}
    for uuid in sorted(taken):
        g = batch.gpus[uuid]
        starts: list[float] = [m.ts for m in poll.minutes if m.uuid == uuid]
        if not starts:
            starts = [s.ts for s in poll.latest if s.uuid == uuid] or [poll.ts]
        cut = int(min(starts)) // 60 * 60
        if conn.execute("DELETE FROM samples WHERE gpu_id = ? AND ts >= ?", (g.id, cut)).rowcount:
            conn.execute(_DIRTY_SQL, (cut,))
        if uuid in inventoried:
            continue  # _upsert_gpu moves the passport with the agent's inventory
        index = next((s.index for s in poll.latest if s.uuid == uuid),
                     next((m.index for m in poll.minutes if m.uuid == uuid), g.idx))
        batch.change(poll.ts, uuid, node, "moved", place_text(g.node, g.idx, g.pci_bus_id),
                     place_text(node, index, g.pci_bus_id))
        conn.execute("UPDATE gpus SET node = ?, idx = ? WHERE id = ?", (node, index, g.id))
        g.node, g.idx = node, index
        batch.seen.pop(uuid, None)


def _report_refused(conn: sqlite3.Connection, node: str, ts: float, refused: int, notice: str, cap: GpuCap,
                    *, start: bool) -> None:
    """The node's ``gpus_refused`` event (the health engine's gpus-refused finding): when the refusing starts
    and then at most every :data:`CLAIM_REPORT_EVERY_S` while it lasts."""
    if not start:
        if conn.execute("SELECT 1 FROM events WHERE ts > ? AND node = ? AND kind = 'gpus_refused' LIMIT 1",
                        (ts - CLAIM_REPORT_EVERY_S, node)).fetchone() is not None:  # events_ts bounds the scan
            return
    conn.execute(_EVENT_SQL, (node, None, ts, "gpus_refused", None, None, None, notice,
                              _dumps({"refused": refused, "cap": cap.gpus, "span_s": cap.span_s,
                                      "repeat_s": CLAIM_REPORT_EVERY_S})))


def _cap_new_gpus(batch: _Batch, poll: NodePoll, cap: GpuCap) -> tuple[NodePoll, str | None, int]:
    """Refuse the GPU UUIDs new to a node past :class:`GpuCap` (issue 20, item 9).

    A node may have been seen with at most ``cap.gpus`` distinct GPUs within ``cap.span_s``
    (cards on the node seen that recently, plus the new ones of this poll). Past that, the new
    UUIDs of the poll (in the order it lists them, the first ones kept while there is room) are
    refused: their inventory entry, latest sample and minutes are not stored; the node's
    known cards, its other records and the poll itself are. Returns the poll, the one-line
    notice for ``nodes.notice`` (None when nothing was refused) and the number refused.
    """
    node = poll.node
    new: dict[str, None] = {}
    for u in (*(g.uuid for g in poll.gpus), *(s.uuid for s in poll.latest), *(m.uuid for m in poll.minutes)):
        g = batch.gpus.get(u)
        if g is None or g.node != node:
            new[u] = None
    if not new:
        return poll, None, 0
    known = batch.conn.execute(
        """SELECT count(*) FROM gpus g LEFT JOIN gpu_latest l ON l.gpu_id = g.id
           WHERE g.node = ? AND max(coalesce(g.last_seen, 0), coalesce(l.seen, 0)) >= ?""",
        (node, poll.ts - cap.span_s)).fetchone()[0]
    room = max(0, cap.gpus - int(known))
    if len(new) <= room:
        return poll, None, 0
    refused = set(list(new)[room:])
    notice = (f"{len(refused)} new GPU UUID{'s' if len(refused) != 1 else ''} refused: the node was seen with "
              f"{int(known) + room} distinct GPUs within {cap.span_s / 3600:g} h, the most one node may have "
              f"({cap.gpus}); its known cards are still stored")
    return replace(poll, gpus=[g for g in poll.gpus if g.uuid not in refused],
                   latest=[s for s in poll.latest if s.uuid not in refused],
                   minutes=[m for m in poll.minutes if m.uuid not in refused]), notice, len(refused)


def _cursor_expr(column: str, reset: bool) -> str:
    """New value of a cursor column given ``?`` (None keeps the stored cursor).

    The cursors are written in the same statement (and transaction) as the
    node's other columns. They only move forward (``max``), so an old poll
    re-ingested cannot move them back. When the agent's buffer was recreated
    (a new ``buffer_id``), sequences restart at 1: that case sets them outright.
    """
    if reset:
        return f"coalesce(?, {column})"
    return f"max({column}, coalesce(?, {column}))"


def _differs(old: float | None, new: float | None) -> bool:
    return old is not None and new is not None and abs(float(old) - float(new)) >= POWER_TOLERANCE_W


def _inventory(batch: _Batch, poll: NodePoll) -> None:
    """Upsert the polled GPUs and log what changed since the stored rows."""
    conn, node, ts = batch.conn, poll.node, poll.ts
    seen: set[str] = set()
    for g in poll.gpus:
        seen.add(g.uuid)
        _upsert_gpu(batch, node, g, ts)
    if not poll.gpus:
        return  # an empty inventory is no evidence that every GPU left
    for old in list(batch.gpus.values()):
        if old.node == node and old.uuid not in seen and old.state != GpuState.GONE:
            batch.change(ts, old.uuid, node, "disappeared", place_text(old.node, old.idx, old.pci_bus_id), None)
            conn.execute("UPDATE gpus SET state = ? WHERE id = ?", (GpuState.GONE.value, old.id))
            old.state = GpuState.GONE


def _upsert_gpu(batch: _Batch, node: str, g: GpuInventory, ts: float) -> None:
    v = g.values
    pci = v.get("pci_bus_id")
    serial, vbios = v.get("serial"), v.get("vbios")
    p_default, p_enforced = v.get("power_default_w"), v.get("power_enforced_w")
    old = batch.gpus.get(g.uuid)
    place = (node, g.index, pci)
    if old is not None and old.has_inventory and batch.seen.get(g.uuid) == (place, g.state, v, g.status) \
            and old.state == g.state:
        batch.touched[old.id] = ts  # unchanged: last_seen only (or via the latest-sample update)
        return
    conn = batch.conn
    if old is None:
        cur = conn.execute(
            "INSERT INTO gpus (uuid, node, idx, first_seen, last_seen, state) VALUES (?, ?, ?, ?, ?, ?)",
            (g.uuid, node, g.index, ts, ts, g.state))
        old = _Gpu(int(cur.lastrowid or 0), g.uuid, node, g.index, pci, serial, vbios, p_default, p_enforced,
                   g.state, False)
        batch.gpus[g.uuid] = old
        batch.change(ts, g.uuid, node, "appeared", None, place_text(node, g.index, pci))
    else:
        if old.state == GpuState.GONE:
            batch.change(ts, g.uuid, node, "appeared", None, place_text(node, g.index, pci))
        # A row made from samples alone knows only its node; compare what is known.
        known = (old.node, old.idx, old.pci_bus_id) if old.has_inventory else (old.node,)
        if known != (node, g.index, pci)[:len(known)]:
            batch.change(ts, g.uuid, node, "moved", place_text(old.node, old.idx, old.pci_bus_id),
                         place_text(node, g.index, pci))
        for kind, before, after in (("vbios_changed", old.vbios, vbios), ("serial_changed", old.serial, serial)):
            if before is not None and after is not None and before != after:
                batch.change(ts, g.uuid, node, kind, before, after)
        if _differs(old.power_enforced_w, p_enforced) or _differs(old.power_default_w, p_default):
            batch.change(ts, g.uuid, node, "power_limit_changed",
                         _dumps({"default_w": old.power_default_w, "enforced_w": old.power_enforced_w}),
                         _dumps({"default_w": p_default, "enforced_w": p_enforced}))
    conn.execute(
        """UPDATE gpus SET node = ?, idx = ?, pci_bus_id = ?, name = ?, serial = ?, vbios = ?,
               memory_total_mib = ?, power_default_w = ?, power_enforced_w = ?, state = ?, last_seen = ?,
               inventory = ?, vendor = ? WHERE id = ?""",
        (node, g.index, pci, g.name, serial, vbios, v.get("memory_total_mib"), p_default, p_enforced, g.state, ts,
         _dumps({"values": v, "status": g.status}), v.get("vendor") or DEFAULT_VENDOR, old.id),
    )
    old.node, old.idx, old.pci_bus_id = node, g.index, pci
    old.serial, old.vbios, old.power_default_w, old.power_enforced_w = serial, vbios, p_default, p_enforced
    old.state, old.has_inventory = g.state, True
    batch.seen[g.uuid] = (place, g.state, dict(v), dict(g.status))
