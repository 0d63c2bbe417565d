"""Delivery off the poll loop: retries with backoff, dead letters, quiet hours, rate limits, no resend after a
restart, the daily digest; against a real webhook server on 127.0.0.1 and a real database file."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fleetmon.cli import main
from fleetmon.fleet import parse_fleet
from fleetmon.notify import Notifier
from helpers.notify_servers import HookServer, lost, store
from storage.db import open_database
from storage.findings import open_findings
from storage.notify import dead_letters, outbox

NOW = 1_790_000_100.0  # 2026-09-21 14:15 UTC
DAY = NOW - (14 * 3600 + 15 * 60)  # its midnight, UTC
NODE = '[[node]]\nname = "node7"\nurl = "http://127.0.0.1:9"\ngroup = "a100"\n'


def _until(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def _notifier(db_path: str, url: str, extra: str = "", **kw: Any) -> Notifier:
    fleet = parse_fleet(NODE + f'[[notify]]\nname = "ops"\nurl = "{url}"\ndigest = false\n{extra}\n')
    notifier = Notifier(fleet, db_path, scan_s=0.2, **kw)
    notifier.start()
    return notifier


def _queue(notifier: Notifier, db_path: str, changes: Any, now: float = NOW) -> int:
    db = open_database(db_path)
    try:
        return notifier.after_health(db, changes, now)
    finally:
        db.close()


def _rows(db_path: str, **kw: Any) -> list[Any]:
    db = open_database(db_path, readonly=True)
    try:
        return outbox(db, **kw)
    finally:
        db.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_500_is_retried_with_backoff_then_dead_lettered_and_the_finding_kept(
        hook: HookServer, db_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    hook.mode = "fail"
    notifier = _notifier(db_path, f"json://127.0.0.1:{hook.port}/x", retry_s=0.3, max_attempts=3)
    try:
        assert _queue(notifier, db_path, store(db_path, [lost("node7", "GPU-1")])) == 1
        dead = _until(lambda: _rows(db_path, state="dead"))
    finally:
        notifier.stop()
    (row,) = dead
    assert row.attempts == 3
    assert row.last_error.startswith("notify ops: ") and "500" in row.last_error and "\n" not in row.last_error
    posts = hook.received
    assert len(posts) == 3
    # Backoff: 0.3 s, then 0.6 s (lower bounds only).
    gaps = [b - a for a, b in zip(_times(posts), _times(posts)[1:])]
    assert gaps[0] >= 0.25 and gaps[1] >= 0.55, gaps
    db = open_database(db_path, readonly=True)
    assert [f.key for f in open_findings(db)] == ["gpu-lost:gpu:GPU-1"]  # the finding is kept, open
    assert [r.event_key for r in dead_letters(db)] == [row.event_key]
    db.close()
    assert main(["notify", "dead", "--db", db_path]) == 0
    out = capsys.readouterr().out
    assert "ops  finding:gpu-lost:gpu:GPU-1:new:" in out and "after 3 tries: notify ops:" in out


def _times(posts: list[Any]) -> list[float]:
    return [p.at for p in posts]


def test_a_refused_connection_is_a_clear_one_line_error_and_a_dead_letter(db_path: str) -> None:
    notifier = _notifier(db_path, f"json://127.0.0.1:{_free_port()}/x", retry_s=0.1, max_attempts=2)
    try:
        _queue(notifier, db_path, store(db_path, [lost("node7", "GPU-1")]))
        (row,) = _until(lambda: _rows(db_path, state="dead"))
    finally:
        notifier.stop()
    assert row.last_error == "notify ops: A Connection error occurred sending JSON notification to 127.0.0.1."


def test_a_destination_back_after_failures_gets_the_event_once(hook: HookServer, db_path: str) -> None:
    hook.mode = "fail"
    notifier = _notifier(db_path, f"json://127.0.0.1:{hook.port}/x", retry_s=0.3, max_attempts=10)
    try:
        _queue(notifier, db_path, store(db_path, [lost("node7", "GPU-1")]))
        hook.wait_for(1)
        hook.mode = "ok"
        (row,) = _until(lambda: _rows(db_path, state="sent"))
    finally:
        notifier.stop()
    assert row.attempts == 2 and row.last_error is None
    assert len(hook.received) == 2  # one refused, one taken


def test_a_restart_resends_nothing_delivered_and_sends_what_was_pending(hook: HookServer, db_path: str) -> None:
    first = _notifier(db_path, f"json://127.0.0.1:{hook.port}/x", retry_s=60)
    changes = store(db_path, [lost("node7", "GPU-1")])
    try:
        _queue(first, db_path, changes)
        assert _until(lambda: _rows(db_path, state="sent"))
        hook.mode = "fail"
        _queue(first, db_path, store(db_path, [lost("node7", "GPU-1"), lost("node7", "GPU-2")]))
        assert _until(lambda: len(hook.received) == 2)
    finally:
        first.stop()
    assert [r.state for r in _rows(db_path)] == ["pending", "sent"]

    hook.mode = "ok"
    second = _notifier(db_path, f"json://127.0.0.1:{hook.port}/x")  # a new process: nothing in memory
    try:
        _queue(second, db_path, changes)  # the same pass again: already delivered
        assert second.flush(20)
        assert _until(lambda: all(r.state == "sent" for r in _rows(db_path)))
        assert second.flush(5)
    finally:
        second.stop()
    posts = hook.received
    assert len(posts) == 3  # GPU-1 once; GPU-2 refused once, then delivered by the new run
    assert "GPU-1" in posts[0].json()["title"] and all("GPU-2" in p.json()["title"] for p in posts[1:])


def test_quiet_hours_hold_all_but_critical(hook: HookServer, db_path: str) -> None:
    clock = [DAY + 3 * 3600 + 5 * 60]  # 03:05 UTC
    notifier = _notifier(db_path, f"json://127.0.0.1:{hook.port}/x",
                         'min_severity = "warning"\nquiet_hours = "22:00-07:00"\ntimezone = "UTC"',
                         clock=lambda: clock[0])
    warn = lost("node7", "GPU-9")
    warn = type(warn)(**{**warn.__dict__, "key": "thermal:gpu:GPU-9", "kind": "thermal-throttle",
                         "severity": "warning"})
    try:
        _queue(notifier, db_path, store(db_path, [warn, lost("node7", "GPU-1")], clock[0]), clock[0])
        (post,) = hook.wait_for(1)
        assert "CRITICAL gpu-lost" in post.json()["title"]
        assert notifier.flush(10)
        assert len(hook.received) == 1
        assert [r.severity for r in _rows(db_path, state="pending")] == ["warning"]  # held, not lost
        clock[0] += 4 * 3600  # 07:05: the quiet hours are over
        notifier.senders["ops"].wake()
        posts = hook.wait_for(2)
    finally:
        notifier.stop()
    assert "WARNING thermal-throttle" in posts[1].json()["title"]


def test_past_the_rate_limit_events_wait_and_go_folded(hook: HookServer, db_path: str) -> None:
    notifier = _notifier(db_path, f"json://127.0.0.1:{hook.port}/x", "max_per_hour = 2")
    found: list[Any] = []
    try:
        for n in range(4):
            found.append(lost("node7", f"GPU-{n}"))
            _queue(notifier, db_path, store(db_path, found), NOW + n)
            assert notifier.flush(10)
        assert len(hook.received) == 2
        assert len(_rows(db_path, state="pending")) == 2  # waiting for a slot, not dropped
        notifier.senders["ops"].sent_at.clear()  # as if the hour had passed
        notifier.senders["ops"].wake()
        posts = hook.wait_for(3)
    finally:
        notifier.stop()
    assert len(posts) == 3
    assert "2 events on 1 node (2 × gpu-lost)" in posts[2].json()["title"]
    assert "GPU-2" in posts[2].json()["message"] and "GPU-3" in posts[2].json()["message"]


def test_the_daily_digest_is_the_inspection_once_a_day(hook: HookServer, db_path: str) -> None:
    fleet = parse_fleet(NODE + f'[[notify]]\nname = "ops"\nurl = "json://127.0.0.1:{hook.port}/x"\n'
                               'digest_at = "09:00"\ntimezone = "UTC"\n')
    notifier = Notifier(fleet, db_path, scan_s=0.2)
    notifier.start()
    try:
        _queue(notifier, db_path, None, DAY + 8 * 3600 + 59 * 60)  # 08:59 UTC: not yet
        assert notifier.flush(10) and hook.received == []
        _queue(notifier, db_path, None)  # 14:15
        (post,) = hook.wait_for(1)
        _queue(notifier, db_path, None, NOW + 3600)  # the same day: not again
        assert notifier.flush(20)
    finally:
        notifier.stop()
    assert len(hook.received) == 1
    body = post.json()
    assert body["title"].startswith("[fleetmon] daily inspection: ")
    assert "fleetmon report" in body["message"] and f"Open: fleetmon report --db {db_path}" in body["message"]
    assert [r.event_key for r in _rows(db_path)] == ["digest:2026-09-21"]


def test_more_than_three_events_due_together_are_one_message(hook: HookServer, db_path: str) -> None:
    notifier = _notifier(db_path, f"json://127.0.0.1:{hook.port}/x")
    try:
        _queue(notifier, db_path, store(db_path, [lost("node7", "GPU-1")]))  # one: a message of its own
        assert notifier.flush(10)
        _queue(notifier, db_path, store(db_path, [lost("node7", f"GPU-{n}") for n in range(1, 6)]), NOW + 60)
        assert notifier.flush(10)
    finally:
        notifier.stop()
    first, folded = hook.received
    assert first.json()["title"] == "[fleetmon] CRITICAL gpu-lost: node7 GPU-1"
    assert folded.json()["title"] == "[fleetmon] CRITICAL: 4 events on 1 node (4 × gpu-lost)"
    assert [line.split()[2] for line in folded.json()["message"].splitlines() if line.startswith("- ")] == [
        "GPU-2", "GPU-3", "GPU-4", "GPU-5"]


def test_a_finding_worsening_to_critical_and_an_unreachable_node_are_told(hook: HookServer, db_path: str) -> None:
    notifier = _notifier(db_path, f"json://127.0.0.1:{hook.port}/x")  # the default floor: critical
    base = lost("node7", "GPU-1")
    ecc = type(base)(**{**base.__dict__, "key": "ecc:gpu:GPU-1", "kind": "ecc-correctable-storm",
                        "severity": "warning", "evidence": {"summary": "node7 GPU-1: 900 corrected ECC errors"}})
    down = type(base)(**{**base.__dict__, "key": "node-unreachable:node:node7", "kind": "node-unreachable",
                         "gpu_uuid": None, "evidence": {"summary": "node7: unreachable for 6 min (timeout)"},
                         "action": "Check that the node is up"})
    try:
        _queue(notifier, db_path, store(db_path, [ecc]))  # a warning: under the floor
        assert notifier.flush(10) and hook.received == []
        worse = type(ecc)(**{**ecc.__dict__, "severity": "critical"})
        _queue(notifier, db_path, store(db_path, [worse], NOW + 60), NOW + 60)
        _queue(notifier, db_path, store(db_path, [worse, down], NOW + 120), NOW + 120)
        _queue(notifier, db_path, store(db_path, [worse, down], NOW + 180), NOW + 180)  # nothing new
        assert notifier.flush(10)
    finally:
        notifier.stop()
    first, second = (p.json() for p in hook.received)
    assert first["title"] == "[fleetmon] CRITICAL ecc-correctable-storm: node7 GPU-1"
    assert "ecc-correctable-storm, critical (worsened to critical)" in first["message"]
    assert second["title"] == "[fleetmon] CRITICAL node-unreachable: node7"
    assert "Node: node7   GPU: -" in second["message"]
    assert "Evidence: node7: unreachable for 6 min (timeout)" in second["message"]
