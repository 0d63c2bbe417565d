"""Issue 20, item 9 (store part): the GPUs a node may accumulate are capped, and the node says so.

A scrape that invented 64 new UUIDs on every poll added 1,922 GPU rows and 3,778 inventory changes
in 60 s. Past :data:`~fleetmon.collector.limits.MAX_GPUS_SEEN_PER_NODE` distinct GPUs seen on a node
within ``GPUS_SEEN_SPAN_S``, the node's new UUIDs are refused (counted in ``nodes.refused_uuids``,
``nodes.notice`` says why in one line); its known cards keep being stored.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.hostile_dcgm import Exporter, dcgm_scrape

from fleetmon.collector.limits import GPUS_SEEN_SPAN_S, MAX_GPUS_PER_NODE, MAX_GPUS_SEEN_PER_NODE
from fleetmon.collector.poller import Collector
from fleetmon.fleet import load_fleet
from storage.db import open_database, query
from storage.ingest import GpuCap, ingest_polls
from storage.queries import nodes
from helpers import T0, fresh_db, inventory, poll  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
CYCLES = 12
STABLE = ["GPU-stable-0000", "GPU-stable-0001"]


def _count(db, sql: str, *args: object) -> int:
    return int(query(db, sql, args)[0]["n"])


def test_a_scrape_inventing_new_uuids_on_every_poll_is_capped(tmp_path: Path) -> None:
    fresh = itertools.count()
    per_scrape = MAX_GPUS_PER_NODE - len(STABLE)  # a full answer: two real cards and 62 invented ones

    def body() -> bytes:
        return dcgm_scrape(STABLE + [f"GPU-invented-{next(fresh):08d}" for _ in range(per_scrape)], "NVIDIA A10G", "x")

    exporter = Exporter(body)
    try:
        fleet_file = tmp_path / "fleet.toml"
        fleet_file.write_text(f'[fleet]\nname = "cap"\ntimeout_s = 5\n\n[[node]]\nname = "inventor-01"\n'
                              f'url = "{exporter.url}"\n', encoding="utf-8")
        db = open_database(str(tmp_path / "fleet.db"))
        collector = Collector(load_fleet(fleet_file), db)
        rows_after: list[int] = []
        for _ in range(CYCLES):
            (p,) = collector.run_cycle(force=True)
            assert p.ok, p.error  # the poll itself is stored
            rows_after.append(_count(db, "SELECT count(*) AS n FROM gpus"))
            # The node's real cards are stored in every cycle (their latest sample is this poll's).
            assert query(db, """SELECT g.uuid, l.seen FROM gpus g JOIN gpu_latest l ON l.gpu_id = g.id
                                WHERE g.uuid IN (?, ?) ORDER BY g.uuid""", STABLE) == [
                {"uuid": u, "seen": p.ts} for u in STABLE]
        changes = _count(db, "SELECT count(*) AS n FROM inventory_changes")
        stable = _count(db, """SELECT count(*) AS n FROM samples s JOIN gpus g ON g.id = s.gpu_id
                               WHERE g.uuid IN (?, ?) AND g.state = 'ok'""", *STABLE)
        (node,) = nodes(db)
        db.close()
    finally:
        exporter.close()
    assert exporter.scrapes == CYCLES
    # Bounded: the rows stop growing at the cap, and so do the inventory changes (about 2 per row).
    assert rows_after[-1] == MAX_GPUS_SEEN_PER_NODE and rows_after[-4:] == [MAX_GPUS_SEEN_PER_NODE] * 4, rows_after
    assert changes <= 2 * MAX_GPUS_SEEN_PER_NODE
    assert stable >= len(STABLE)  # one-sample minutes: one row per card and minute
    # The node says why, in one line, and counts what it refused.
    assert node.status == "ok" and node.last_error is None
    assert node.notice is not None and "\n" not in node.notice
    assert node.notice.startswith(f"{per_scrape} new GPU UUIDs refused: the node was seen with "
                                  f"{MAX_GPUS_SEEN_PER_NODE} distinct GPUs within {GPUS_SEEN_SPAN_S / 3600:g} h")
    assert node.refused_uuids == CYCLES * per_scrape - (MAX_GPUS_SEEN_PER_NODE - len(STABLE))
    # ... and every surface says so through the one verdict: the report names it (a gpus-refused warning).
    report = subprocess.run([sys.executable, "-m", "fleetmon", "report", "--db", str(tmp_path / "fleet.db"),
                             "--json"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert report.returncode in (1, 2), report.stderr
    (found,) = [f for f in json.loads(report.stdout)["findings"] if f["kind"] == "gpus-refused"]
    assert found["node"] == "inventor-01" and found["severity"] == "warning" and found["state"] == "open", found
    assert f"seen with {MAX_GPUS_SEEN_PER_NODE} distinct GPUs within 24 h" in found["summary"], found


def _polls(node: str, ts: float, uuids: list[str]) -> object:
    return poll(node, ts, inv=[inventory(node, i, uuid=u) for i, u in enumerate(uuids)])


def test_the_cap_counts_cards_seen_within_the_span_and_the_notice_clears(fresh_db) -> None:
    db, cap = fresh_db, GpuCap(4, 3600.0)
    ingest_polls(db, [_polls("n1", T0, ["A", "B", "C"]), _polls("n2", T0, ["X", "Y", "Z"])], gpu_cap=cap)
    ingest_polls(db, [_polls("n1", T0 + 30, ["A", "D", "E", "F"])], gpu_cap=cap)  # room for one: D
    assert sorted(r["uuid"] for r in query(db, "SELECT uuid FROM gpus WHERE node = 'n1'")) == ["A", "B", "C", "D"]
    row = query(db, "SELECT notice, refused_uuids, status FROM nodes WHERE name = 'n1'")[0]
    assert row["status"] == "ok" and row["refused_uuids"] == 2
    assert row["notice"] == ("2 new GPU UUIDs refused: the node was seen with 4 distinct GPUs within 1 h, "
                             "the most one node may have (4); its known cards are still stored")
    # The other node is not touched; a poll of known cards only clears the notice.
    assert query(db, "SELECT notice, refused_uuids FROM nodes WHERE name = 'n2'") == [
        {"notice": None, "refused_uuids": 0}]
    ingest_polls(db, [_polls("n1", T0 + 60, ["A", "D"])], gpu_cap=cap)
    assert query(db, "SELECT notice, refused_uuids FROM nodes WHERE name = 'n1'") == [
        {"notice": None, "refused_uuids": 2}]
    # Cards not seen on the node within the span no longer count: a later swap fits.
    t = T0 + 60 + cap.span_s + 1
    ingest_polls(db, [_polls("n1", t, ["A", "D", "G", "H"])], gpu_cap=cap)
    assert sorted(r["uuid"] for r in query(db, "SELECT uuid FROM gpus WHERE node = 'n1'")) == [
        "A", "B", "C", "D", "G", "H"]
    # Without a cap (storage's default) nothing is refused.
    ingest_polls(db, [_polls("n3", T0, [f"N{i}" for i in range(10)])])
    assert len(query(db, "SELECT uuid FROM gpus WHERE node = 'n3'")) == 10


@pytest.mark.parametrize("cap", [0, 1])
def test_a_cap_of_zero_or_one_keeps_known_cards(fresh_db, cap: int) -> None:
    db = fresh_db
    ingest_polls(db, [_polls("n1", T0, ["A"])])
    ingest_polls(db, [_polls("n1", T0 + 30, ["A", "B"])], gpu_cap=GpuCap(cap, 3600.0))
    assert [r["uuid"] for r in query(db, "SELECT uuid FROM gpus WHERE node = 'n1' AND state = 'ok'")] == ["A"]
    assert query(db, "SELECT refused_uuids FROM nodes")[0]["refused_uuids"] == 1
