"""The window's refreshes: the timer reads only when the database changed; loads never queue up."""

from __future__ import annotations

import time

import pytest

from helpers import inventory, poll
from storage.db import open_database
from storage.ingest import ingest_polls


@pytest.fixture
def quiet_window(qtbot, window):
    """The window with no load in flight or folded (its first show asks for one too)."""
    idle(qtbot, window)
    return window


def idle(qtbot, w) -> None:
    """No load in flight, none folded."""
    qtbot.waitUntil(lambda: w._loading_since is None and w._load_again is None, timeout=20000)


def test_a_timer_refresh_reads_only_after_another_connection_commits(qtbot, quiet_window, fleet_db):
    window = quiet_window
    snapshots: list[object] = []
    window.reader.snapshot_loaded.connect(snapshots.append)
    with qtbot.waitSignal(window.reader.unchanged, timeout=10000):
        window.request_refresh()
    idle(qtbot, window)  # the window heard the answer
    assert snapshots == []  # nothing new: nothing read

    db = open_database(fleet_db)
    ingest_polls(db, [poll("n9", time.time(), gpus=1)])  # another connection commits a new node
    db.close()
    with qtbot.waitSignal(window.snapshot_shown, timeout=10000):
        window.request_refresh()
    assert "n9" in window.snapshot.nodes

    window.reader.MAX_UNCHANGED_S = 0.0  # the clock moved on: read again even without a commit
    with qtbot.waitSignal(window.snapshot_shown, timeout=10000):
        window.request_refresh()
    with qtbot.waitSignal(window.snapshot_shown, timeout=10000):
        window.request_load()  # an explicit load (F5, after a poll) always reads


def test_loads_asked_while_one_runs_fold_into_one_more(qtbot, quiet_window):
    window = quiet_window
    snapshots: list[object] = []
    window.reader.snapshot_loaded.connect(snapshots.append)
    for _ in range(20):  # a burst: timer ticks, polls and F5 while the reader is busy
        window.request_load()
        window.request_refresh()
    qtbot.waitUntil(lambda: len(snapshots) >= 2, timeout=20000)
    idle(qtbot, window)
    qtbot.wait(300)
    assert len(snapshots) == 2  # the one in flight, then one for everything asked meanwhile
    assert window._load_again is None


def test_inventories_decoded_once_are_reused_until_they_change(fleet_db):
    from storage.queries import gpus

    db = open_database(fleet_db, readonly=True)
    memo: dict = {}
    first = {g.uuid: g for g in gpus(db, memo)}
    again = {g.uuid: g for g in gpus(db, memo)}
    assert first.keys() == again.keys() and len(memo) >= 1
    assert all(again[u].inventory is first[u].inventory for u in first)  # the same decoded dict, not decoded again
    assert [g.inventory for g in gpus(db)] == [g.inventory for g in first.values()]  # as decoded without a memo
    db.close()
    rw = open_database(fleet_db)
    ingest_polls(rw, [poll("n1", time.time(), inv=[inventory("n1", i, vbios="99.99.99.99.99") for i in range(2)])])
    rw.close()
    db = open_database(fleet_db, readonly=True)
    changed = {g.uuid: g for g in gpus(db, memo)}
    db.close()
    n1 = [u for u in changed if u.startswith("GPU-n1")]
    assert n1 and all(changed[u].inventory.get("vbios") == "99.99.99.99.99" for u in n1)


def test_frozen_snapshots_and_the_periodic_sweep_that_bounds_what_freezing_keeps(monkeypatch):
    """Freezing keeps the collector off applied snapshots; the sweep still frees cycles frozen while alive."""
    import gc
    import weakref

    from ui import shell

    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a  # a reference cycle, alive while frozen
    gone = weakref.ref(a)
    monkeypatch.setattr(shell, "_last_sweep", __import__("time").monotonic())
    shell.freeze_snapshot()
    assert gc.get_freeze_count() > 0
    del a, b
    gc.collect()
    assert gone() is not None  # frozen: not collected (what the sweep is for)
    monkeypatch.setattr(shell, "SWEEP_EVERY_S", 0.0)
    shell.freeze_snapshot()  # the sweep: unfreeze, collect, freeze again
    assert gone() is None and gc.get_freeze_count() > 0


def test_a_replaced_snapshot_is_freed_without_the_garbage_collector(qtbot, quiet_window):
    """Snapshots are frozen once applied (ui.shell.freeze_snapshot), so anything that keeps an old one in a
    reference cycle keeps it until the 30-minute sweep: 50,000 objects a refresh at 8,000 GPUs."""
    import gc
    import weakref

    window = quiet_window
    old = weakref.ref(window.snapshot)
    gc.disable()
    try:
        for _ in range(2):
            with qtbot.waitSignal(window.snapshot_shown, timeout=10000):
                window.request_load()
        idle(qtbot, window)
        qtbot.wait(50)
        assert old() is None
    finally:
        gc.enable()
