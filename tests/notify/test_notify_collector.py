"""The notifier in the collector: simulated agents on 127.0.0.1, a real database, real webhook servers.

A storm of 50 GPUs lost in one poll is one message naming them; a restarted collector resends nothing;
a destination that hangs costs the collection cycles nothing beyond a generous bound, and nothing found
while it hangs is lost; a node nobody polls any more is told once as stale.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleetmon.cli import main
from fleetmon.collector.poller import Collector
from fleetmon.fleet import parse_fleet
from fleetmon.sim.fleet import SimNode, make_node
from helpers.notify_servers import HookServer
from storage.db import open_database
from storage.notify import outbox

CYCLE_BOUND_S = 15.0
"""A cycle with its health pass takes well under a second here; a hanging destination must not add its hang
(the server holds each request for 120 s)."""


@pytest.fixture
def nodes() -> Iterator[list[SimNode]]:
    made = [make_node(f"n{i}", gpus=8) for i in range(7)]
    for node in made:
        node.serve(0.1)
        node.backfill(1)
    yield made
    for node in made:
        node.close()


@pytest.fixture
def one() -> Iterator[list[SimNode]]:
    """One simulated agent with eight GPUs (the tests that need no storm)."""
    node = make_node("n0", gpus=8)
    node.serve(0.1)
    node.backfill(1)
    yield [node]
    node.close()


def _fleet(nodes: list[SimNode], notify: str) -> object:
    lines = [f'[[node]]\nname = "{n.name}"\nurl = "{n.url}"\ngroup = "a100"\n' for n in nodes]
    return parse_fleet("\n".join(lines) + notify)


def _lose(nodes: list[SimNode], count: int, start: int = 0) -> None:
    gpus = [(n, i) for n in nodes for i in range(8)][start:start + count]
    for node, index in gpus:
        node.nvml.set_lost(index)
    for node in nodes:
        node.sampler.sample_once()


def test_a_storm_of_lost_gpus_is_one_message_and_a_restart_resends_nothing(
        nodes: list[SimNode], hook: HookServer, tmp_path: Path) -> None:
    fleet = _fleet(nodes, f'[[notify]]\nname = "ops"\nurl = "json://127.0.0.1:{hook.port}/x"\ndigest = false\n')
    path = tmp_path / "fleet.db"
    db = open_database(path)
    collector = Collector(fleet, db)
    collector.collect_once()
    assert hook.received == []  # a healthy fleet: nothing to tell
    _lose(nodes, 50)
    collector.collect_once()  # one poll sees all 50 gone
    collector.stop()
    db.close()
    (post,) = hook.wait_for(1)
    body = post.json()
    assert body["title"] == "[fleetmon] CRITICAL: 50 events on 7 nodes (50 × gpu-lost)"
    listed = [line for line in body["message"].splitlines() if line.startswith("- ")]
    assert len(listed) == 50
    assert "- n0 gpu0  gpu-lost  critical" in body["message"] and "- n6 gpu1  gpu-lost  critical" in body["message"]
    assert f"Open: fleetmon report --db {path}" in body["message"]

    again = open_database(path)  # a restarted collector: a new process over the same database
    restarted = Collector(fleet, again)
    restarted.collect_once()
    restarted.stop()
    assert len(again.execute("SELECT * FROM notify_outbox").fetchall()) == 50
    again.close()
    time.sleep(0.3)
    assert len(hook.received) == 1


def test_a_hanging_destination_does_not_slow_collection_nor_lose_a_finding(
        one: list[SimNode], hook: HookServer, tmp_path: Path) -> None:
    hook.mode = "hang"
    # rto: Apprise's read timeout, longer than the test: the send hangs for as long as the server holds it.
    fleet = _fleet(one, f'[[notify]]\nname = "ops"\nurl = "json://127.0.0.1:{hook.port}/x?rto=300"\n'
                          'digest = false\n')
    db = open_database(tmp_path / "fleet.db")
    collector = Collector(fleet, db)
    assert collector.notifier is not None
    collector.notifier.start()
    try:
        collector.run_cycle(force=True)
        _lose(one, 2)
        collector.run_cycle(force=True)
        collector.maintain(force_health=True)
        assert hook.wait_hanging()  # the sender is stuck in its first send
        for round_ in range(3):
            _lose(one, 1, start=2 + round_)
            started = time.monotonic()
            collector.run_cycle(force=True)
            collector.maintain(force_health=True)
            assert time.monotonic() - started < CYCLE_BOUND_S
        rows = outbox(db)
        assert sorted(r.state for r in rows) == ["pending"] * 5  # every finding queued, none lost
        assert len(hook.received) == 1
    finally:
        started = time.monotonic()
        collector.stop()
        assert time.monotonic() - started < CYCLE_BOUND_S  # the stop does not wait for the hang either
        db.close()


def test_a_node_nobody_polls_is_told_once_as_stale(one: list[SimNode], hook: HookServer, tmp_path: Path) -> None:
    fleet = _fleet(one, f'[[notify]]\nname = "ops"\nurl = "json://127.0.0.1:{hook.port}/x"\ndigest = false\n')
    db = open_database(tmp_path / "fleet.db")
    collector = Collector(fleet, db)
    collector.collect_once()
    notifier = collector.notifier
    later = time.time() + 3600  # an hour without a poll (the collector stopped polling it)
    notifier.after_health(db, None, later)
    notifier.after_health(db, None, later + 60)
    assert notifier.flush(20)
    collector.stop()
    db.close()
    (post,) = hook.wait_for(1)
    body = post.json()
    assert body["title"] == "[fleetmon] CRITICAL node-stale: n0"
    assert "Evidence: n0: no good poll for 60 min" in body["message"]
    time.sleep(0.3)
    assert len(hook.received) == 1


def test_notify_test_sends_a_sample_and_names_a_failing_destination(
        hook: HookServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = HookServer(mode="fail")
    try:
        fleet = tmp_path / "fleet.toml"
        fleet.write_text('[[node]]\nname = "n1"\nurl = "http://127.0.0.1:9"\n'
                         f'[[notify]]\nname = "ops"\nurl = "json://127.0.0.1:{hook.port}/x"\n'
                         f'[[notify]]\nname = "backup"\nurl = "json://127.0.0.1:{broken.port}/y"\n', encoding="utf-8")
        assert main(["notify", "test", "--fleet", str(fleet), "--to", "OPS"]) == 0
        assert capsys.readouterr().out == "ops: sent\n"
        (post,) = hook.wait_for(1)
        assert post.json()["title"] == "[fleetmon] TEST CRITICAL gpu-lost: node-example gpu3"
        assert main(["notify", "test", "--fleet", str(fleet)]) == 1
        captured = capsys.readouterr()
        assert captured.out == "ops: sent\n"
        assert captured.err.splitlines() == [
            "backup: FAILED: Failed to send JSON POST notification: Internal server error., error=500.",
            "fleetmon notify: 1 of 2 destinations did not take the test message"]
        assert main(["notify", "test", "--fleet", str(fleet), "--to", "pager"]) == 1
        assert capsys.readouterr().err == ("fleetmon notify: no [[notify]] destination called 'pager'; the fleet file "
                                           "has: ops, backup\n")
    finally:
        broken.close()


def test_fleetmon_collect_sends_and_exits_with_a_dead_destination_pending(
        one: list[SimNode], hook: HookServer, tmp_path: Path) -> None:
    """`fleetmon collect` (also how the app runs its collector) notifies; a refusing destination costs it no
    exit status and leaves the event pending for the next run."""
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        refused = s.getsockname()[1]
    node = one[0]
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'[[node]]\nname = "{node.name}"\nurl = "{node.url}"\n'
                     f'[[notify]]\nname = "ops"\nurl = "json://127.0.0.1:{hook.port}/x"\ndigest = false\n'
                     f'[[notify]]\nname = "gone"\nurl = "json://127.0.0.1:{refused}/x"\ndigest = false\n',
                     encoding="utf-8")
    _lose(one, 1)
    db = tmp_path / "fleet.db"
    run = subprocess.run([sys.executable, "-m", "fleetmon", "collect", "--fleet", str(fleet), "--db", str(db),
                          "--once"], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[2])
    assert run.returncode == 0, run.stderr
    assert "notify gone: A Connection error occurred sending JSON notification to 127.0.0.1.; try 1 of 8" in run.stderr
    (post,) = hook.wait_for(1)
    assert post.json()["title"] == "[fleetmon] CRITICAL gpu-lost: n0 gpu0"
    reader = open_database(db, readonly=True)
    states = sorted((r.dest, r.state) for r in outbox(reader))
    reader.close()
    assert states == [("gone", "pending"), ("ops", "sent")]
