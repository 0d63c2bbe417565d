"""The poll schedule: backoff across cycles, no overlap, coalesced runs, catch-up on backlogs."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest

from fleetmon.collector.poller import MAX_BACKOFF_S, Collector, backoff_cycles
from fleetmon.sim.fleet import make_node
from fleetmon.fleet import load_fleet
from storage.db import open_database, query


@pytest.mark.parametrize("failures, interval_s, skipped", [
    (0, 30, 0), (1, 30, 0), (2, 30, 1), (3, 30, 2), (4, 30, 4), (5, 30, 8),
    (6, 30, 10), (50, 30, 10),  # capped: 10 cycles of 30 s = MAX_BACKOFF_S
    (9, 2, 128), (12, 2, 150),  # a 2 s interval: up to 150 cycles
    (30, 600, 1),  # an interval longer than the cap still sits out one cycle
])
def test_backoff_doubles_from_the_second_failure_up_to_the_cap(failures, interval_s, skipped):
    assert backoff_cycles(failures, interval_s) == skipped
    assert backoff_cycles(failures, interval_s) * interval_s <= max(MAX_BACKOFF_S, interval_s)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _fleet(tmp_path: Any, nodes: dict[str, str], interval_s: int = 30) -> Any:
    text = f"[fleet]\ntimeout_s = 1\npoll_interval_s = {interval_s}\n"
    text += "".join(f'[[node]]\nname = "{n}"\nurl = "{u}"\n' for n, u in nodes.items())
    (tmp_path / "fleet.toml").write_text(text, encoding="utf-8")
    return load_fleet(tmp_path / "fleet.toml")


def test_a_failing_node_is_tried_less_often_recorded_each_try_and_recovers(tmp_path):
    live = make_node("live", gpus=1)
    live.serve(0.1)
    port = _free_port()
    fleet = _fleet(tmp_path, {"live": live.url, "flaky": f"http://127.0.0.1:{port}"})
    db = open_database(tmp_path / "fleet.db")
    collector = Collector(fleet, db)
    tried = []
    revived = None
    try:
        for cycle in range(1, 16):
            if cycle == 12:
                revived = make_node("flaky", gpus=1, port=port)
                revived.serve(0.1)
            polls = {p.node: p for p in collector.run_cycle()}
            assert polls["live"].ok  # the failing node delays nobody
            if "flaky" in polls:
                tried.append(cycle)
                if cycle < 12:
                    assert not polls["flaky"].ok and "cannot connect" in polls["flaky"].error
        # Failures 1, 2 (then sits out 1), 3 (sits out 2), 4 (sits out 4); back at cycle 12 and
        # every cycle after it answered.
        assert tried == [1, 2, 4, 7, 12, 13, 14, 15]
        log = query(db, "SELECT ok, error, ts FROM poll_log WHERE node = 'flaky' ORDER BY id")
        assert [r["ok"] for r in log] == [0, 0, 0, 0, 1, 1, 1, 1]
        assert all(r["error"] and "cannot connect" in r["error"] for r in log[:4])
        assert query(db, "SELECT status, last_error FROM nodes WHERE name = 'flaky'") == [
            {"status": "ok", "last_error": None}]
        assert collector.nodes["flaky"].failures == 0
    finally:
        db.close()
        live.close()
        if revived is not None:
            revived.close()


def test_once_tries_every_node_even_in_backoff(tmp_path):
    fleet = _fleet(tmp_path, {"dead": f"http://127.0.0.1:{_free_port()}"})
    db = open_database(tmp_path / "fleet.db")
    collector = Collector(fleet, db)
    for _ in range(2):
        collector.run_cycle()
    assert collector.nodes["dead"].skip == 1
    assert collector.run_cycle() == []  # sits this one out
    assert [p.node for p in collector.collect_once()] == ["dead"]
    db.close()


class SlowCollector(Collector):
    """Replaces the poll with a sleep and tracks how many cycles run at once."""

    def __init__(self, *args: Any, cycle_s: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cycle_s = cycle_s
        self.running = 0
        self.max_running = 0
        self.starts: list[float] = []
        self._count_lock = threading.Lock()

    def run_cycle(self, *, force: bool = False, only: set[str] | None = None) -> list[Any]:
        with self._count_lock:
            self.running += 1
            self.max_running = max(self.max_running, self.running)
            self.starts.append(time.monotonic())
        time.sleep(self.cycle_s)
        with self._count_lock:
            self.running -= 1
        self.cycles += 1
        return []


def test_cycles_never_overlap_and_missed_runs_do_not_pile_up(tmp_path):
    fleet = _fleet(tmp_path, {"n": "http://127.0.0.1:9"})
    collector = SlowCollector(fleet, None, interval_s=0.2, cycle_s=0.6)
    collector.start()
    time.sleep(2.0)
    collector.stop()
    assert collector.max_running == 1
    assert 2 <= len(collector.starts) <= 4, collector.starts  # not one per 0.2 s interval
    gaps = [b - a for a, b in zip(collector.starts, collector.starts[1:])]
    assert all(g >= 0.6 for g in gaps), gaps  # no burst of catch-up runs after a slow cycle
    assert collector.overruns >= 1


def test_runs_missed_while_paused_coalesce_into_one(tmp_path):
    fleet = _fleet(tmp_path, {"n": "http://127.0.0.1:9"})
    collector = SlowCollector(fleet, None, interval_s=0.2, cycle_s=0.01)
    collector.start()
    time.sleep(0.3)
    collector.pause()
    time.sleep(0.1)
    before = len(collector.starts)
    time.sleep(1.2)  # six intervals missed
    assert len(collector.starts) == before
    resumed = time.monotonic()
    collector.resume()
    time.sleep(0.15)
    after = [t for t in collector.starts if t >= resumed]
    collector.stop()
    assert len(after) == 1, after


def test_a_backlog_is_fetched_in_bounded_cycles_until_caught_up(tmp_path):
    node = make_node("backlogged", gpus=2, sample=False)
    node.backfill(60)  # 120 records
    node.serve(0.1)
    fleet = _fleet(tmp_path, {"backlogged": node.url})
    db = open_database(tmp_path / "fleet.db")
    try:
        sizes: list[int] = []
        collector = Collector(fleet, db, record_budget=50,
                              on_cycle=lambda polls: sizes.append(sum(len(p.minutes) for p in polls)))
        collector.collect_once()
        assert sizes == [50, 50, 20]
        assert not collector.backlog
        stored = query(db, "SELECT count(*) AS n FROM samples")[0]["n"]
        assert stored == 120 == len(node.buffer.minutes_after(0, 1000))
        assert query(db, "SELECT minutes_cursor FROM nodes")[0]["minutes_cursor"] == node.buffer.bounds("minutes")[1]
    finally:
        db.close()
        node.close()


def test_the_scheduled_job_catches_up_before_the_next_interval(tmp_path):
    node = make_node("backlogged", gpus=2, sample=False)
    node.backfill(40)  # 80 records, budget 32 a cycle
    node.serve(0.1)
    fleet = _fleet(tmp_path, {"backlogged": node.url})
    db = open_database(tmp_path / "fleet.db")
    try:
        done = threading.Event()
        sizes: list[int] = []

        def on_cycle(polls: list[Any]) -> None:
            sizes.append(sum(len(p.minutes) for p in polls))
            if sum(sizes) >= 80:
                done.set()

        collector = Collector(fleet, db, interval_s=30, record_budget=32, on_cycle=on_cycle)
        collector.start()
        assert done.wait(10), sizes
        collector.stop()
        assert sizes == [32, 32, 16]  # one scheduled run, two catch-up cycles, no 30 s wait
    finally:
        db.close()
        node.close()


def test_poll_now_runs_a_cycle_before_the_interval(tmp_path):
    fleet = _fleet(tmp_path, {"n": "http://127.0.0.1:9"})
    collector = SlowCollector(fleet, None, interval_s=30, cycle_s=0.01)
    collector.start()
    deadline = time.monotonic() + 5
    # Wait until the first cycle has finished: poll_now skips while one runs.
    while collector.cycles < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # let the scheduler release the job instance after run_cycle returned
    collector.poll_now()
    while len(collector.starts) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    collector.stop()
    assert len(collector.starts) == 2
    assert collector.starts[1] - collector.starts[0] < 2


def test_a_large_window_is_kept_away_from_the_cyclic_collector_and_thawed_hourly(tmp_path, monkeypatch):
    import gc
    import weakref

    from fleetmon.collector import poller

    node = make_node("n1", gpus=2)
    node.serve(0.1)
    fleet = _fleet(tmp_path, {"n1": node.url})
    db = open_database(tmp_path / "fleet.db")
    clock = [1000.0]
    monkeypatch.setattr(poller.time, "monotonic", lambda: clock[0])
    try:
        collector = Collector(fleet, db)
        collector.run_cycle()
        collector.maintain(force_health=True)
        assert collector.last_health is not None and collector._window.gpus_held == 2
        assert gc.get_freeze_count() == 0  # a small window: the plain collector, as before

        collector.freeze_from_gpus = 2
        collector.maintain(force_health=True)
        assert gc.get_freeze_count() > 0 and collector.thaws == 0

        class Box:
            pass

        box = Box()
        box.me = box  # type: ignore[attr-defined]  # garbage with a reference cycle, made between passes
        alive = weakref.ref(box)
        del box
        clock[0] += 600
        collector.maintain(force_health=True)  # frozen with the rest: the collector cannot free it
        gc.collect()
        assert alive() is not None and collector.thaws == 0
        clock[0] += poller.THAW_EVERY_S
        collector.maintain(force_health=True)  # an hour on: thawed and collected, then frozen afresh
        assert alive() is None and collector.thaws == 1 and gc.get_freeze_count() > 0

        collector.freeze_from_gpus = 3  # the fleet below the threshold again: nothing stays frozen
        collector.maintain(force_health=True)
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
        db.close()
        node.close()
