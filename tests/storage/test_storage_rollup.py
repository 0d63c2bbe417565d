"""Rollups (values, counter resets, idempotence), retention, maintain, resolution choice."""

from __future__ import annotations

from storage.db import get_meta, query
from storage.ingest import ingest_polls
from storage.queries import gpu_history, pick_resolution
from storage.rollup import DAY, HOUR, maintain, prune, rollup
from helpers import T0, fresh_db, minute, minutes_for, poll, uuid_of  # noqa: F401

G0 = uuid_of("n1", 0)


def _ingest(db, minutes, ts=None):
    ingest_polls(db, [poll("n1", ts or (max(m.ts for m in minutes) + 60), gpus=1, minutes=minutes)])


def test_hourly_values_weighted_mean_throttle_and_pcie(fresh_db):
    ms = [
        minute("n1", 0, T0, power_w_min=100.0, power_w_mean=150.0, power_w_max=200.0, thr_hw_slowdown=3,
               busy_n=12, pcie_gen_busy_min=4),
        minute("n1", 0, T0 + 60, power_w_min=300.0, power_w_mean=300.0, power_w_max=310.0, thr_hw_slowdown=1,
               busy_n=6, pcie_gen_busy_min=3),
    ]
    ms[1] = type(ms[1])(**{**ms[1].to_dict(), "n": 4})  # fewer samples: weighs less
    _ingest(fresh_db, ms)
    rollup(fresh_db, T0 + 120)
    rows = gpu_history(fresh_db, G0, T0, T0 + HOUR, resolution="hour").rows
    assert len(rows) == 1
    h = rows[0]
    assert h["minutes"] == 2 and h["n"] == 16
    assert h["power_w_min"] == 100.0 and h["power_w_max"] == 310.0
    assert h["power_w_mean"] == (150.0 * 12 + 300.0 * 4) / 16
    assert h["thr_hw_slowdown"] == 4 and h["busy_n"] == 18 and h["pcie_gen_busy_min"] == 3
    day = gpu_history(fresh_db, G0, T0, T0 + DAY, resolution="day").rows[0]
    assert (day["power_w_min"], day["power_w_mean"], day["power_w_max"]) == (100.0, 187.5, 310.0)


def test_counter_deltas_handle_resets_and_span_buckets(fresh_db):
    # Energy in joules per minute: hour 0 ends at 3000 J, hour 1 starts after a reset.
    energy = [1000, 2000, 3000, 500, 1500]
    ts = [T0 + 3420, T0 + 3480, T0 + 3540, T0 + HOUR, T0 + HOUR + 60]
    ms = [minute("n1", 0, t, energy_mj=e * 1000, ecc_corr_vol=c)
          for t, e, c in zip(ts, energy, [0, 2, 5, 0, 1])]
    _ingest(fresh_db, ms)
    rollup(fresh_db, T0 + 2 * HOUR)
    hours = gpu_history(fresh_db, G0, T0, T0 + 2 * HOUR, resolution="hour").rows
    assert [(h["energy_mj_delta"], h["energy_mj"]) for h in hours] == [(2_000_000, 3_000_000),
                                                                       (1_500_000, 1_500_000)]
    assert [(h["ecc_corr_vol_delta"], h["ecc_corr_vol"]) for h in hours] == [(5, 5), (1, 1)]
    day = gpu_history(fresh_db, G0, T0, T0 + DAY, resolution="day").rows[0]
    assert day["energy_mj_delta"] == 3_500_000 and day["ecc_corr_vol_delta"] == 6 and day["energy_mj"] == 1_500_000


def test_delta_reaches_back_over_a_long_gap(fresh_db):
    _ingest(fresh_db, [minute("n1", 0, T0, energy_mj=1_000_000)])
    rollup(fresh_db, T0 + 60)
    _ingest(fresh_db, [minute("n1", 0, T0 + 5 * HOUR, energy_mj=4_000_000)])  # node was away 5 h
    rollup(fresh_db, T0 + 5 * HOUR + 60)
    hours = gpu_history(fresh_db, G0, T0, T0 + DAY, resolution="hour").rows
    assert [h["energy_mj_delta"] for h in hours] == [0, 3_000_000]


def test_recompute_is_idempotent_and_late_minutes_refresh_their_hour(fresh_db):
    _ingest(fresh_db, minutes_for("n1", 1, T0, 180))
    rollup(fresh_db, T0 + 3 * HOUR)
    first = query(fresh_db, "SELECT * FROM hourly ORDER BY gpu_id, ts")
    first_days = query(fresh_db, "SELECT * FROM daily")
    assert len(first) == 3 and get_meta(fresh_db, "rollup_dirty_from") is None
    assert rollup(fresh_db, T0 + 3 * HOUR) == {"from": None, "hours": 0, "days": 0}  # nothing dirty
    rollup(fresh_db, T0 + 3 * HOUR, since=0)  # full recompute
    assert query(fresh_db, "SELECT * FROM hourly ORDER BY gpu_id, ts") == first
    assert query(fresh_db, "SELECT * FROM daily") == first_days
    # A minute that arrives late (here: removed, then sent again, changed) refreshes its hour.
    fresh_db.execute("DELETE FROM samples WHERE ts = ?", (T0 + 60,))
    _ingest(fresh_db, [minute("n1", 0, T0 + 60, power_w_max=999.0)], ts=T0 + 3 * HOUR + 30)
    assert get_meta(fresh_db, "rollup_dirty_from") == T0 + 60
    rollup(fresh_db, T0 + 3 * HOUR + 60)
    h0 = gpu_history(fresh_db, G0, T0, T0 + HOUR, resolution="hour").rows[0]
    assert h0["power_w_max"] == 999.0


def test_prune_waits_for_rollup_and_keeps_rollups(fresh_db):
    now = T0 + 40 * DAY
    _ingest(fresh_db, minutes_for("n1", 1, T0, 120), ts=now)
    assert prune(fresh_db, now, raw_days=30) == 0  # not rolled up yet
    assert fresh_db.execute("SELECT count(*) FROM samples").fetchone()[0] == 120
    rollup(fresh_db, now)
    assert prune(fresh_db, now, raw_days=30) == 120
    assert fresh_db.execute("SELECT count(*) FROM samples").fetchone()[0] == 0
    assert fresh_db.execute("SELECT count(*) FROM hourly").fetchone()[0] == 2
    # Pruned windows are served from rollups even when short.
    assert pick_resolution(fresh_db, T0, T0 + HOUR) == "hour"
    h = gpu_history(fresh_db, G0, T0, T0 + 2 * HOUR)
    assert h.resolution == "hour" and len(h.rows) == 2
    # A rollup after pruning never rebuilds pruned hours from what is left.
    rollup(fresh_db, now, since=0)
    assert fresh_db.execute("SELECT sum(minutes) FROM hourly").fetchone()[0] == 120


def test_maintain_is_cheap_when_nothing_is_due(fresh_db):
    now = T0 + 10 * HOUR + 120
    _ingest(fresh_db, minutes_for("n1", 1, T0 + 10 * HOUR, 2), ts=now)
    first = maintain(fresh_db, now)
    assert first["rollup"]["hours"] == 1 and first["pruned"] == 0
    assert maintain(fresh_db, now + 30) == {"rollup": None, "pruned": None}
    # Another minute of the open hour: refreshed only after PARTIAL_EVERY_S.
    _ingest(fresh_db, [minute("n1", 0, T0 + 10 * HOUR + 120)], ts=now + 60)
    assert maintain(fresh_db, now + 60)["rollup"] is None
    assert maintain(fresh_db, now + 400)["rollup"]["hours"] == 1
    # A minute from a finished hour is rolled up at once.
    _ingest(fresh_db, [minute("n1", 0, T0 + 11 * HOUR - 60)], ts=now + 3600)
    assert maintain(fresh_db, T0 + 11 * HOUR + 10)["rollup"] is not None


def test_resolution_choice():
    class Empty:  # pick_resolution only reads the pruned horizon
        def execute(self, *a):
            class C:
                def fetchone(self):
                    return None
            return C()
    db = Empty()
    assert pick_resolution(db, T0, T0 + DAY) == "minute"
    assert pick_resolution(db, T0, T0 + 30 * DAY) == "hour"
    assert pick_resolution(db, T0, T0 + 90 * DAY) == "day"
    assert pick_resolution(db, T0, T0 + 90 * DAY, max_points=2200) == "hour"
    assert pick_resolution(db, T0, T0 + 365 * DAY) == "day"


def test_gpu_history_field_selection(fresh_db):
    _ingest(fresh_db, minutes_for("n1", 1, T0, 5))
    h = gpu_history(fresh_db, G0, T0, T0 + 300, fields=["temp_c", "busy_n"])
    assert h.resolution == "minute" and h.step_s == 60
    assert set(h.rows[0]) == {"ts", "temp_c_min", "temp_c_mean", "temp_c_max", "busy_n"}
    assert gpu_history(fresh_db, "GPU-nope", T0, T0 + 300).rows == ()
