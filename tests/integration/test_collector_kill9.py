"""kill -9 of `fleetmon collect` at random moments loses nothing the agents hold.

Real processes and files: two simulated `fleetmon agent` subprocesses whose
buffer files were pre-filled with a backlog, and `python -m fleetmon collect`
(the scheduled mode, not --once) killed with SIGKILL at seeded random moments
(before the first commit, while fetching, while ingesting, between cycles).
After every kill the database passes PRAGMA integrity_check and holds exactly
the agent records up to its stored cursors: no hole, nothing beyond. More
backlog is added to the agents between runs, so each run has work to be
killed in. A final --once run then backfills everything.
"""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fleetmon.agent.buffer import Buffer
from fleetmon.demo import start_agents, stop_agents, write_fleet
from fleetmon.records import Event, GpuMinute
from storage.schema import sample_columns

pytestmark = pytest.mark.integration

NODES = [("kill-a", "a100*2"), ("kill-b", "t4*2")]
FIRST_BACKLOG = 3000  # minute records per agent before the first run
MORE_PER_ROUND = 4000
REPO = Path(__file__).resolve().parents[2]


def _values() -> dict[str, float | int]:
    """A full minute record, as heavy to store as a real one."""
    out: dict[str, float | int] = {}
    for name, typ in sample_columns():
        if name in ("n", "lost", "status"):
            continue
        out[name] = 1.5 if typ == "REAL" else 1
    return out


class Backlog:
    """Appends minute records and events to an agent's buffer file (also while the agent runs)."""

    def __init__(self, path: Path, node: str, gpus: int) -> None:
        self.path = path
        self.uuids = [f"GPU-{node}-{i}" for i in range(gpus)]
        self.next_ts = (int(time.time()) // 60) * 60 - 4 * 86400  # within the agent's 8-day retention
        self.values = _values()

    def add(self, records: int) -> None:
        buf = Buffer(self.path)
        minutes = []
        while len(minutes) < records:
            for i, uuid in enumerate(self.uuids):
                minutes.append(GpuMinute(seq=0, ts=self.next_ts, uuid=uuid, index=i, n=12, values=self.values))
            self.next_ts += 60
        buf.append_minutes(minutes)
        buf.append_event(Event(seq=0, ts=time.time(), kind="xid", uuid=self.uuids[0], code=13, message="test"))
        buf.close()


def agent_rows(path: Path, upto: int | None = None) -> tuple[set[tuple[str, int]], int, int]:
    """(uuid, ts) of the buffered minutes with seq ≤ upto; number of events ≤ upto_events is separate."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        rows = conn.execute("SELECT seq, ts, uuid FROM minutes").fetchall()
        max_seq = max((r[0] for r in rows), default=0)
        events = conn.execute("SELECT max(seq) FROM events").fetchone()[0] or 0
    finally:
        conn.close()
    keep = {(uuid, ts) for seq, ts, uuid in rows if upto is None or seq <= upto}
    return keep, max_seq, events


def _stat(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except FileNotFoundError:
        return (0, 0)
    return (st.st_size, st.st_mtime_ns)


def check_database(db_path: Path, folder: Path) -> dict[str, int]:
    """Integrity, and for each node: stored rows == agent rows up to the cursor. Returns cursors."""
    conn = sqlite3.connect(db_path, timeout=10)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        cursors = {name: (m, e) for name, m, e in
                   conn.execute("SELECT name, minutes_cursor, events_cursor FROM nodes")}
        out = {}
        for name, _ in NODES:
            m_cursor, e_cursor = cursors.get(name, (0, 0))
            expected, _, _ = agent_rows(folder / f"{name}.agent.db", m_cursor)
            stored = set(conn.execute("SELECT g.uuid, s.ts FROM samples s JOIN gpus g ON g.id = s.gpu_id "
                                      "WHERE g.node = ?", (name,)).fetchall())
            assert stored == expected, (f"{name}: {len(stored)} rows stored, {len(expected)} held by the agent "
                                        f"up to cursor {m_cursor}")
            seqs = [s for (s,) in conn.execute("SELECT seq FROM events WHERE node = ? ORDER BY seq", (name,))]
            assert seqs == list(range(1, e_cursor + 1)), f"{name}: events {seqs[:5]}… vs cursor {e_cursor}"
            out[name] = m_cursor
        return out
    finally:
        conn.close()


def test_kill_9_at_random_moments_loses_nothing_and_the_next_run_backfills(tmp_path):
    folder = tmp_path / "agents"
    folder.mkdir()
    backlogs = {name: Backlog(folder / f"{name}.agent.db", name, 2) for name, _ in NODES}
    for b in backlogs.values():
        b.add(FIRST_BACKLOG)
    agents = start_agents(folder, NODES, interval_s=0.5)
    try:
        fleet = tmp_path / "fleet.toml"
        write_fleet(fleet, agents, interval_s=2)
        db = tmp_path / "fleet.db"
        env = dict(os.environ, PYTHONPATH=str(REPO))
        rng = random.Random(9)
        # The first kill lands during start-up (imports, database creation); the others at a
        # random moment of the first cycles: fetching, ingesting, between cycles.
        # Two kills wait for the ingest transaction to start writing the WAL (its pages spill
        # long before the commit of a backlog this size).
        # One kill comes late enough for cycles to have committed.
        moments = [("start", 0.35), ("polling", rng.uniform(0.0, 1.2)), ("ingest", 0.0), ("polling", 3.0),
                   ("ingest", 0.0), ("polling", rng.uniform(0.0, 1.2))]
        progress = []
        for round_no, (anchor, moment) in enumerate(moments):
            if round_no:
                for b in backlogs.values():
                    b.add(MORE_PER_ROUND)
            log = tmp_path / f"collect{round_no}.log"
            with open(log, "wb") as out:
                proc = subprocess.Popen([sys.executable, "-m", "fleetmon", "collect", "--fleet", str(fleet),
                                         "--db", str(db), "--interval", "0.5", "-v"],
                                        stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO)
                if anchor in ("polling", "ingest"):  # wait for the banner: the first cycle starts with it
                    deadline = time.monotonic() + 30
                    while b"fleetmon collect: polling" not in log.read_bytes():
                        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                        time.sleep(0.02)
                if anchor == "ingest":
                    wal = Path(str(db) + "-wal")
                    before = _stat(wal)
                    while _stat(wal) == before:
                        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                        time.sleep(0.002)
                time.sleep(moment)
                assert proc.poll() is None, log.read_text()
                proc.kill()
                proc.wait(10)
            cycles = log.read_text(errors="replace").count(" minutes, ")
            cursors = check_database(db, folder) if db.exists() else {}
            progress.append((anchor, round(moment, 2), cycles, cursors))
        print("\nkilled after (s), cycles committed before the kill, cursors:", *progress, sep="\n  ")
        assert any(p[3] and any(p[3].values()) for p in progress), "no run ever committed: kills too early"

        held = {name: agent_rows(folder / f"{name}.agent.db") for name, _ in NODES}
        proc = subprocess.run([sys.executable, "-m", "fleetmon", "collect", "--fleet", str(fleet), "--db", str(db),
                               "--once"], capture_output=True, text=True, env=env, cwd=REPO, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert "polled 2 nodes: 2 ok, 0 unreachable" in proc.stdout
        cursors = check_database(db, folder)
        for name, (rows, max_seq, _) in held.items():
            assert cursors[name] >= max_seq, f"{name}: backfilled to {cursors[name]} of {max_seq}"
            assert len(rows) >= FIRST_BACKLOG + (len(moments) - 1) * MORE_PER_ROUND
    finally:
        stop_agents(agents)
