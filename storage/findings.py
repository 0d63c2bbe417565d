"""The health engine's outputs: findings with their life cycle, daily derating figures, reports.

Pure data in and out, no health logic: writers store what the engine computed,
readers return typed rows (:mod:`storage.rows`).

* ``findings``: one row per finding key (the engine's stable identity of a
  problem, e.g. ``"ecc_unc:GPU-…"``), with its open/resolved life cycle;
* ``derating_daily``: per GPU and UTC day, how far the card performs below
  what it should;
* ``reports``: each report's summary, so the next one can say what changed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlite_utils import Database

from fleetmon.i18n import Text, from_data, loads
from fleetmon.vocab import Severity
from storage.db import query, transaction
from storage.rows import DERATING_RATIOS, DeratingDay, FindingChanges, NewFinding, ReportRow, StoredFinding

DERATING_COLUMNS: tuple[str, ...] = DERATING_RATIOS


# -- findings ------------------------------------------------------------------------

def _rank(severity: Any) -> int:
    """Order for "worsened": a :class:`fleetmon.vocab.Severity` by its rank, an integer as itself."""
    if isinstance(severity, (int, float)):
        return int(severity)
    return Severity.parse(severity).rank


def _finding(r: dict[str, Any]) -> StoredFinding:
    evidence = json.loads(r["evidence"]) if r.get("evidence") else None
    action = r["action"]
    texts = loads(r.get("texts"))  # m017: how the English text was made ({} for older rows, unreadable data)
    if texts:
        if isinstance(evidence, dict) and isinstance(evidence.get("summary"), str):
            evidence["summary"] = from_data(texts.get("summary"), evidence["summary"])
        if isinstance(action, str):
            action = from_data(texts.get("action"), action)
        lc = evidence.get("lifecycle") if isinstance(evidence, dict) else None
        if isinstance(lc, dict) and isinstance(lc.get("base_summary"), str):  # the rule's own summary, kept by
            lc["base_summary"] = from_data(texts.get("base_summary"), lc["base_summary"])  # the lifecycle
        if isinstance(evidence, dict) and isinstance(evidence.get("error"), str):  # an unreachable node's reason
            evidence["error"] = _error_in(evidence.get("summary"), evidence["error"], 4) or evidence["error"]
        resolved = lc.get("resolved") if isinstance(lc, dict) else None
        if isinstance(resolved, dict) and isinstance(resolved.get("why"), str):  # why the data closed it, with figures
            resolved["why"] = from_data(texts.get("why"), resolved["why"])
    return StoredFinding(
        id=int(r["id"]), key=r["key"], kind=r["kind"], severity=r["severity"], first_seen=r["first_seen"],
        last_seen=r["last_seen"], updated_at=r["updated_at"], node=r["node"], gpu_uuid=r["gpu_uuid"],
        resolved_at=r["resolved_at"], evidence=evidence, action=action)


def _error_in(text: Any, english: str, depth: int) -> Text | None:
    """The :class:`Text` whose English is ``english`` among ``text``'s ``error`` values (nested a few deep): the
    evidence keeps the error as English, the summary made with it keeps how (m017, m018)."""
    if not isinstance(text, Text) or depth <= 0:
        return None
    error = text.args.get("error")
    if isinstance(error, Text) and str(error) == english:
        return error
    for value in text.args.values():
        found = _error_in(value, english, depth - 1)
        if found is not None:
            return found
    return None


def save_findings(db: Database, findings: Sequence[NewFinding], now: float) -> FindingChanges:
    """Store the health engine's current findings; return what changed.

    ``severity`` is a :class:`fleetmon.vocab.Severity` name or an int; ``first_seen``
    / ``last_seen`` default to ``now``; ``evidence`` must be JSON-able.

    Upsert by key. An open finding missing from ``findings`` is resolved
    (``resolved_at = now``); a resolved one that comes back reopens (its
    ``first_seen`` restarts at the new onset); a higher severity than stored is
    "worsened".

    Returns:
        the new, reopened (also in new), resolved and worsened findings as stored now.
    """
    result: dict[str, list[str]] = {"new": [], "reopened": [], "resolved": [], "worsened": []}
    by_key = {f.key: f for f in findings}
    with transaction(db) as conn:
        cur = conn.execute("SELECT * FROM findings")
        names = [d[0] for d in cur.description]
        stored = {r["key"]: r for r in (dict(zip(names, row)) for row in cur.fetchall())}
        for key, f in by_key.items():
            evidence = json.dumps(f.evidence, separators=(",", ":"), sort_keys=True, default=str) \
                if f.evidence is not None else None
            old = stored.get(key)
            if old is None:
                conn.execute(
                    """INSERT INTO findings (key, kind, severity, node, gpu_uuid, first_seen, last_seen, evidence,
                                             action, updated_at, texts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    (key, f.kind, f.severity, f.node, f.gpu_uuid, f.first_seen or now, f.last_seen or now, evidence,
                     f.action, now, f.texts))
                result["new"].append(key)
                continue
            reopened = old["resolved_at"] is not None
            conn.execute(
                """UPDATE findings SET kind = ?, severity = ?, node = ?, gpu_uuid = ?, last_seen = ?, evidence = ?,
                       action = ?, updated_at = ?, resolved_at = NULL, texts = ?,
                       first_seen = CASE WHEN ? THEN ? ELSE first_seen END WHERE key = ?""",
                (f.kind, f.severity, f.node, f.gpu_uuid, f.last_seen or now, evidence, f.action, now, f.texts,
                 reopened, f.first_seen or now, key))
            if reopened:
                result["new"].append(key)
                result["reopened"].append(key)
            elif _rank(f.severity) > _rank(old["severity"]):
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
    return FindingChanges(**{what: tuple(full[k] for k in keys) for what, keys in result.items()})


def save_ledger(db: Database, open_: Sequence[NewFinding], resolved: Sequence[NewFinding], now: float
                ) -> FindingChanges:
    """Store one health pass as the lifecycle judged it; return what changed.

    Unlike :func:`save_findings`, nothing is resolved for being absent: the
    health engine's lifecycle (:mod:`fleetmon.health.lifecycle`) decides, and
    a key in neither list is left as it is. ``open_`` findings are upserted
    open (one that was resolved reopens; ``first_seen`` is stored as given:
    the lifecycle's true onset); ``resolved`` ones that are stored and open
    are resolved at ``now``, with their evidence (saying why); a resolved
    finding never stored is not added.
    """
    result: dict[str, list[str]] = {"new": [], "reopened": [], "resolved": [], "worsened": []}

    def text(f: NewFinding) -> str | None:
        return json.dumps(f.evidence, separators=(",", ":"), sort_keys=True, default=str) \
            if f.evidence is not None else None

    with transaction(db) as conn:
        cur = conn.execute("SELECT key, severity, resolved_at FROM findings")
        stored = {k: (sev, res) for k, sev, res in cur.fetchall()}
        for f in open_:
            old = stored.get(f.key)
            if old is None:
                conn.execute(
                    """INSERT INTO findings (key, kind, severity, node, gpu_uuid, first_seen, last_seen, evidence,
                                             action, updated_at, texts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                    (f.key, f.kind, f.severity, f.node, f.gpu_uuid, f.first_seen or now, f.last_seen or now,
                     text(f), f.action, now, f.texts))
                result["new"].append(f.key)
                continue
            conn.execute(
                """UPDATE findings SET kind = ?, severity = ?, node = ?, gpu_uuid = ?, first_seen = ?, last_seen = ?,
                       evidence = ?, action = ?, updated_at = ?, resolved_at = NULL, texts = ? WHERE key = ?""",
                (f.kind, f.severity, f.node, f.gpu_uuid, f.first_seen or now, f.last_seen or now, text(f), f.action,
                 now, f.texts, f.key))
            if old[1] is not None:
                result["new"].append(f.key)
                result["reopened"].append(f.key)
            elif _rank(f.severity) > _rank(old[0]):
                result["worsened"].append(f.key)
        for f in resolved:
            old = stored.get(f.key)
            if old is None or old[1] is not None:
                continue
            conn.execute("""UPDATE findings SET resolved_at = ?, updated_at = ?, last_seen = ?, evidence = ?, texts = ?
                            WHERE key = ?""", (now, now, f.last_seen or now, text(f), f.texts, f.key))
            result["resolved"].append(f.key)
        wanted = {k for keys in result.values() for k in keys}
        full: dict[str, StoredFinding] = {}
        if wanted:
            cur = conn.execute("SELECT * FROM findings")
            names = [d[0] for d in cur.description]
            full = {r["key"]: _finding(r) for r in (dict(zip(names, row)) for row in cur.fetchall())
                    if r["key"] in wanted}
    return FindingChanges(**{what: tuple(full[k] for k in keys) for what, keys in result.items()})


def ledger_rows(db: Database, until: float, resolved_since: float) -> list[StoredFinding]:
    """Findings begun by ``until`` that are open, or were resolved at or after ``resolved_since``."""
    return [_finding(r) for r in query(db, """
        SELECT * FROM findings WHERE first_seen <= ? AND (resolved_at IS NULL OR resolved_at >= ?)
        ORDER BY first_seen, id""", (until, resolved_since))]


def all_findings(db: Database, until: float | None = None) -> list[StoredFinding]:
    """Every stored finding (open and resolved) that began before ``until``, oldest first."""
    if until is None:
        return [_finding(r) for r in query(db, "SELECT * FROM findings ORDER BY first_seen, id")]
    return [_finding(r) for r in query(db, "SELECT * FROM findings WHERE first_seen <= ? ORDER BY first_seen, id",
                                       (until,))]


def open_findings(db: Database) -> list[StoredFinding]:
    """Findings not resolved, oldest first. ``evidence`` is decoded."""
    return [_finding(r) for r in query(db, "SELECT * FROM findings WHERE resolved_at IS NULL ORDER BY first_seen, id")]


def findings_between(db: Database, since: float, until: float) -> list[StoredFinding]:
    """Findings open at any moment of [since, until): opened before ``until``, not resolved before ``since``."""
    return [_finding(r) for r in query(db, """
        SELECT * FROM findings WHERE first_seen < ? AND (resolved_at IS NULL OR resolved_at >= ?)
        ORDER BY first_seen, id""", (until, since))]


# -- derating ------------------------------------------------------------------------

def save_derating(db: Database, days: Sequence[DeratingDay]) -> int:
    """Upsert daily derating figures (None figures are stored as NULL); returns rows written.

    Rows for unknown GPUs are skipped.
    """
    with transaction(db) as conn:
        ids = {u: i for i, u in conn.execute("SELECT id, uuid FROM gpus")}
        data = []
        for d in days:
            gid = ids.get(d.gpu_uuid)
            if gid is None:
                continue
            data.append((gid, int(d.day), *(getattr(d, c) for c in DERATING_COLUMNS)))
        conn.executemany(
            f"INSERT OR REPLACE INTO derating_daily (gpu_id, day, {', '.join(DERATING_COLUMNS)}) "
            f"VALUES ({', '.join('?' for _ in range(len(DERATING_COLUMNS) + 2))})", data)
    return len(data)


def derating_history(db: Database, uuid: str | None, since: float, until: float) -> list[DeratingDay]:
    """Derating rows with ``day`` in [since, until), by GPU then day; ``uuid`` None for every GPU."""
    where = "d.day >= ? AND d.day < ?"
    params: list[Any] = [since, until]
    if uuid is not None:
        where += " AND g.uuid = ?"
        params.append(uuid)
    return [DeratingDay(**r) for r in query(db, f"""
        SELECT g.uuid AS gpu_uuid, g.node, d.day, {', '.join('d.' + c for c in DERATING_COLUMNS)}
        FROM derating_daily d JOIN gpus g ON g.id = d.gpu_id WHERE {where} ORDER BY g.uuid, d.day""", params)]


# -- reports -------------------------------------------------------------------------

def save_report(db: Database, kind: str, ts: float, summary: Any) -> int:
    """Store a report's summary (JSON-able); returns its id."""
    with transaction(db) as conn:
        cur = conn.execute("INSERT INTO reports (ts, kind, summary) VALUES (?, ?, ?)",
                           (ts, kind, json.dumps(summary, separators=(",", ":"), sort_keys=True, default=str)))
        return int(cur.lastrowid or 0)


def last_report(db: Database, kind: str, before: float | None = None) -> ReportRow | None:
    """The newest report of ``kind`` (before ``before`` if given), or None."""
    sql = "SELECT * FROM reports WHERE kind = ?"
    params: list[Any] = [kind]
    if before is not None:
        sql += " AND ts < ?"
        params.append(before)
    found = query(db, sql + " ORDER BY ts DESC, id DESC LIMIT 1", params)
    if not found:
        return None
    r = found[0]
    return ReportRow(id=int(r["id"]), ts=r["ts"], kind=r["kind"],
                     summary=json.loads(r["summary"]) if r["summary"] else None)
