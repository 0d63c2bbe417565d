"""The collector's window cache: each read through it equals a fresh read of the same window.

Every step feeds the database as the collector does (ingest, then rollup) and compares the
telemetry read through one long-lived :class:`storage.health_input.WindowCache` with a read
that starts from nothing.
"""

from __future__ import annotations

import pytest

from fleetmon import assess
from storage import columns
from storage.db import open_database
from storage.health_input import WindowCache, read_window
from storage.ingest import ingest_polls
from storage.rollup import rollup
from helpers import HOT, T0, Feeder, between, fresh_db, minute, poll  # noqa: F401

HOUR = 3600
DAY = 86400
MINUTES_S = 2 * HOUR


def _plain(tele):
    return {uuid: {k: list(v) for k, v in cols.items()} for uuid, cols in tele.items()}


def _read(db, now, cache=None):
    w = read_window(db, now, now - DAY, minutes_s=MINUTES_S, derating_since=now - DAY, cache=cache)
    return _plain(w.minutes), _plain(w.hourly)


def _same(db, cache, now):
    cached = _read(db, now, cache)
    fresh = _read(db, now)
    assert cached == fresh
    return cached


def test_each_read_through_the_cache_equals_a_fresh_read(tmp_path):
    db = open_database(tmp_path / "fleet.db")
    feeder = Feeder(db, nodes=("n1", "n2", "n3"), gpus=2)
    start = T0 + 10 * HOUR + 600  # 10:10, so the reads below share their hour until "The next hour"
    # n2 is away twice: in what becomes the hourly part, and in the last 20 minutes.
    feeder.feed(start - 4 * HOUR, start - 7 * HOUR // 2)
    feeder.feed(start - 7 * HOUR // 2, start - 3 * HOUR, down=("n2",))
    feeder.feed(start - 3 * HOUR, start - 1200)
    feeder.feed(start - 1200, start, down=("n2",))
    cache = WindowCache()
    minutes, hourly = _same(db, cache, start - 30)
    assert cache.full_reads == 1 and hourly and all(len(c["ts"]) for c in minutes.values())

    # New minutes: appended, nothing read again. A minute row is stored after its minute ends:
    # the minute running at a read (start + 60 at start + 90) comes after it, new, not late.
    feeder.feed(start, start + 60)
    _same(db, cache, start + 90)
    feeder.feed(start + 60, start + 120)
    minutes, _ = _same(db, cache, start + 150)
    assert cache.full_reads == 1 and cache.gpus_reread == 0
    assert max(minutes["GPU-n1-00"]["ts"]) == start + 60

    # A node's buffer backfilled after an outage: minutes before the newest one held, one of them
    # in the hourly part (its rollup changes) -> that node's cards are read again, whole.
    late = [minute("n2", i, int(ts), seq=900 + k, **HOT) for k, ts in enumerate((start - 3.5 * HOUR, start - 600))
            for i in range(2)]
    ingest_polls(db, [poll("n2", start + 155, minutes=late)])
    rollup(db, start + 155)
    _same(db, cache, start + 160)
    assert cache.full_reads == 1 and cache.gpus_reread == 2

    # A card new to the window is read whole; the others go on being appended.
    ingest_polls(db, [poll("n4", start + 165, gpus=1, minutes=[minute("n4", 0, start + 60)])])
    feeder.feed(start + 120, start + 180)
    minutes, _ = _same(db, cache, start + 185)
    assert "GPU-n4-00" in minutes and cache.full_reads == 1 and cache.gpus_reread == 3

    # A write through another connection (a hand import, a second writer) is not noted by
    # ingest here: the next read reads everything.
    other = open_database(tmp_path / "fleet.db")
    ingest_polls(other, [poll("n2", start + 188, minutes=[minute("n2", 1, start - 900, **HOT)])])
    other.close()
    _same(db, cache, start + 190)
    assert cache.full_reads == 2

    # The next hour: the per-minute and hourly parts begin an hour later.
    feeder.feed(start + 180, start + HOUR + 120)
    _same(db, cache, start + HOUR + 90)
    assert cache.full_reads == 3
    db.close()


def test_a_failed_read_leaves_nothing_half_appended(fresh_db, monkeypatch):
    feeder = Feeder(fresh_db, nodes=("n1", "n2"), gpus=2)
    start = T0 + 10 * HOUR + 600  # 10:10, so the reads below share their hour until "The next hour"
    feeder.feed(start - HOUR, start)
    cache = WindowCache()
    _same(fresh_db, cache, start - 30)
    feeder.feed(start, start + 120)
    real = columns.read_columns

    def failing(db, spec, uuid_of, since, until):
        out = real(db, spec, uuid_of, since, until)
        if len(out) > 1:
            raise RuntimeError("disk went away")
        return out

    monkeypatch.setattr(columns, "read_columns", failing)
    with pytest.raises(RuntimeError):
        _read(fresh_db, start + 90, cache)
    monkeypatch.setattr(columns, "read_columns", real)
    _same(fresh_db, cache, start + 90)
    assert cache.full_reads == 2


def test_the_collector_pass_finds_the_same_through_the_cache(fresh_db):
    """A fault that starts and grows between passes is judged the same with and without the cache."""
    feeder = Feeder(fresh_db, nodes=("n1", "n2", "n3"), gpus=2)
    start = T0 + 10 * HOUR + 600  # 10:10, so the reads below share their hour until "The next hour"
    feeder.feed(start - 2 * HOUR, start)
    cache = WindowCache()
    for k in range(6):
        t = start + 300 * k
        feeder.feed(t, t + 300, {("n2", 1): between(start + 300, start + 3000, HOT)})
        with_cache = assess.load_history(fresh_db, t + 290, t + 290 - DAY, minutes_s=MINUTES_S, cache=cache)
        found = sorted(f.key for f in assess.engine.evaluate(with_cache) if f.is_open)
        plain = assess.load_history(fresh_db, t + 290, t + 290 - DAY, minutes_s=MINUTES_S)
        assert found == sorted(f.key for f in assess.engine.evaluate(plain) if f.is_open)
    assert any("thermal-throttle" in key for key in found)
    assert cache.full_reads == 1


def test_stored_derating_days_are_read_again_only_when_they_may_have_changed(tmp_path):
    from storage.findings import save_derating
    from storage.rows import DeratingDay

    path = tmp_path / "fleet.db"
    db = open_database(path)
    feeder = Feeder(db, nodes=("n1",), gpus=2)
    today = T0 + 10 * DAY
    feeder.feed(today - HOUR, today + HOUR)
    uuids = sorted(r[0] for r in db.execute("SELECT uuid FROM gpus"))
    save_derating(db, [DeratingDay(u, today - d * DAY, "n1", clock_ratio=0.9) for u in uuids for d in (1, 2)])

    cache = WindowCache()

    def read(now):
        w = read_window(db, now, now - DAY, minutes_s=MINUTES_S, derating_since=today - 14 * DAY,
                        derating_until=today, cache=cache)
        fresh = read_window(db, now, now - DAY, minutes_s=MINUTES_S, derating_since=today - 14 * DAY,
                            derating_until=today)
        assert w.derating == fresh.derating
        return w.derating

    first = read(today + 600)
    assert sorted((d.gpu_uuid, d.day) for d in first) == sorted((u, today - d * DAY) for u in uuids for d in (1, 2))
    # Today's rows, written by this connection (the collector's pass), are not among them: same rows.
    save_derating(db, [DeratingDay(u, today, "n1", clock_ratio=0.8) for u in uuids])
    assert read(today + 660) is first
    # Another connection rewrites an earlier day: read again.
    other = open_database(path)
    save_derating(other, [DeratingDay(uuids[0], today - DAY, "n1", clock_ratio=0.5)])
    other.close()
    again = read(today + 720)
    assert again is not first
    assert {d.clock_ratio for d in again if d.gpu_uuid == uuids[0] and d.day == today - DAY} == {0.5}
    # This connection rewrites an earlier day (a window longer than today): told to forget, it reads again.
    save_derating(db, [DeratingDay(uuids[1], today - 2 * DAY, "n1", clock_ratio=0.4)])
    cache.forget_derating()
    assert {d.clock_ratio for d in read(today + 780) if d.gpu_uuid == uuids[1] and d.day == today - 2 * DAY} == {0.4}


def test_a_pass_over_more_than_today_makes_the_cache_forget_the_days_it_rewrote(fresh_db):
    feeder = Feeder(fresh_db, nodes=("n1",), gpus=2)
    today = T0 + 10 * DAY
    feeder.feed(today - 2 * HOUR, today + HOUR)
    from fleetmon.health.thresholds import Thresholds

    trend_from = today - Thresholds().derate_trend_days * DAY  # what the pass reads
    cache = WindowCache()
    assess.evaluate_and_store(fresh_db, today + HOUR, cache=cache)
    assert cache.derating(fresh_db, trend_from, today) == ()  # nothing stored before today yet
    # A two-day window writes yesterday's rows through this connection.
    assess.evaluate_and_store(fresh_db, today + HOUR, cache=cache, window_s=2 * DAY)
    assert {d.day for d in cache.derating(fresh_db, trend_from, today)} == {today - DAY}
