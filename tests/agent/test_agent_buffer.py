"""The agent's per-minute aggregation and its sequence-numbered buffer."""

from __future__ import annotations

import pytest

from fleetmon.agent.aggregate import MinuteAggregator, is_busy
from fleetmon.agent.buffer import Buffer
from fleetmon.records import Event, GpuMinute, GpuSample


def sample(ts, uuid="GPU-1", **values):
    base = {"util_gpu_pct": 90, "throttle_mask": 0, "power_w": 200.0, "pcie_gen": 4, "pcie_width": 16}
    base.update(values)
    return GpuSample(ts=ts, uuid=uuid, index=0, values=base, status={})


@pytest.mark.parametrize("values, busy", [
    ({"util_gpu_pct": 90, "throttle_mask": 0}, True),
    ({"util_gpu_pct": 90, "throttle_mask": 0x1}, False),   # GpuIdle set
    ({"util_gpu_pct": 10, "throttle_mask": 0}, False),
    ({"util_gpu_pct": None, "throttle_mask": 0}, False),
])
def test_is_busy(values, busy):
    assert is_busy(values) is busy


def test_minute_statistics_and_busy_link():
    agg = MinuteAggregator()
    out = []
    out += agg.add(sample(600.0, power_w=100.0, pcie_gen=4))
    out += agg.add(sample(610.0, power_w=300.0, pcie_gen=1, pcie_width=8))      # busy, degraded
    out += agg.add(sample(620.0, power_w=200.0, util_gpu_pct=0, throttle_mask=0x1, pcie_gen=1,
                          pcie_width=1))                                          # idle: ignored for link
    out += agg.add(sample(630.0, power_w=None, throttle_mask=0x88))              # power brake + hw slowdown
    assert out == []
    (m,) = agg.add(sample(660.0))                                                # next minute closes it
    assert m.ts == 600 and m.n == 4
    v = m.values
    assert (v["power_w_min"], v["power_w_mean"], v["power_w_max"]) == (100.0, 200.0, 300.0)
    assert v["pcie_gen_busy_min"] == 1 and v["pcie_width_busy_min"] == 8
    assert v["thr_gpu_idle"] == 1 and v["thr_hw_power_brake"] == 1 and v["thr_hw_slowdown"] == 1
    assert v["busy_n"] == 3
    assert v["throttle_mask"] == 0x88  # last value


def test_status_keeps_the_worst():
    agg = MinuteAggregator()
    agg.add(GpuSample(ts=0.0, uuid="u", index=0, values={}, status={"power_w": "failed"}))
    agg.add(GpuSample(ts=5.0, uuid="u", index=0, values={}, status={"power_w": "gpu_lost"}, state="lost"))
    agg.add(GpuSample(ts=10.0, uuid="u", index=0, values={}, status={"power_w": "failed"}))
    (m,) = agg.flush()
    assert m.status == {"power_w": "gpu_lost"}


def _minute(ts, uuid="GPU-1"):
    return GpuMinute(seq=0, ts=ts, uuid=uuid, index=0, n=12, values={"power_w_mean": 1.0})


def test_sequence_has_no_gap_and_no_duplicate_across_restarts(tmp_path):
    path = tmp_path / "agent.db"
    buf = Buffer(path)
    first = buf.append_minutes([_minute(60 * i) for i in range(5)])
    assert first == [1, 2, 3, 4, 5]
    got = buf.minutes_after(0, limit=3)
    assert [r["seq"] for r in got] == [1, 2, 3]
    buf.close()
    buf = Buffer(path)  # agent restart
    assert buf.append_minutes([_minute(600)]) == [6]
    rest = buf.minutes_after(3)
    assert [r["seq"] for r in rest] == [4, 5, 6]
    assert rest[-1]["ts"] == 600 and rest[-1]["values"] == {"power_w_mean": 1.0}
    buf.close()


def test_pruned_sequence_numbers_are_never_reused(tmp_path):
    buf = Buffer(tmp_path / "a.db", keep_days=1)
    buf.append_minutes([_minute(0), _minute(60)])
    assert buf.prune(now=3 * 86400) == 2
    assert buf.append_minutes([_minute(3 * 86400)]) == [3]
    assert buf.bounds("minutes") == (3, 3)
    buf.close()


def test_events_have_their_own_sequence(tmp_path):
    buf = Buffer(tmp_path / "a.db")
    buf.append_minutes([_minute(0)])
    assert buf.append_event(Event(seq=0, ts=1.0, kind="xid", code=79, message="fell off")) == 1
    (e,) = buf.events_after(0)
    assert e["seq"] == 1 and e["code"] == 79 and e["kind"] == "xid"
    buf.close()


def test_disk_cap_prunes_oldest_first(tmp_path):
    buf = Buffer(tmp_path / "a.db", max_bytes=200_000)
    big = {f"k{i}": float(i) for i in range(40)}
    for chunk in range(20):
        buf.append_minutes([GpuMinute(seq=0, ts=60 * (chunk * 100 + i), uuid="u", index=0, n=1, values=big)
                            for i in range(100)])
    buf.prune(now=60 * 2000)
    first, last = buf.bounds("minutes")
    assert last == 2000 and first > 1
    assert buf.size_bytes() <= 200_000
    buf.close()


def test_buffer_id_is_created_once_and_kept(tmp_path):
    buf = Buffer(tmp_path / "id.db")
    first = buf.buffer_id
    assert len(first) == 32 and int(first, 16) >= 0
    buf.close()
    buf = Buffer(tmp_path / "id.db")
    assert buf.buffer_id == first
    buf.close()
    assert Buffer(tmp_path / "other.db").buffer_id != first


def test_inventory_is_remembered(tmp_path):
    buf = Buffer(tmp_path / "inv.db")
    assert buf.load_inventory() == []
    rows = [{"uuid": "GPU-1", "index": 0, "name": "A100", "values": {"pci_bus_id": "0000:07:00.0"}}]
    buf.save_inventory(rows)
    buf.close()
    buf = Buffer(tmp_path / "inv.db")
    assert buf.load_inventory() == rows
    buf.set_meta("inventory", "{not json")
    assert buf.load_inventory() == []
    buf.close()


def test_bounds_after_everything_was_pruned(tmp_path):
    buf = Buffer(tmp_path / "b.db", keep_days=7)
    assert buf.bounds("minutes") == (0, 0)
    buf.append_minutes([_minute(60 * i) for i in range(4)])
    buf.prune(now=30 * 86400)
    assert buf.count("minutes") == 0
    assert buf.bounds("minutes") == (5, 4)  # nothing held; the next record will be 5
    assert buf.append_minutes([_minute(30 * 86400)]) == [5]
    buf.close()


def test_splice_records_is_the_same_json(tmp_path):
    import json

    from fleetmon.agent.buffer import splice_records

    buf = Buffer(tmp_path / "s.db")
    buf.append_minutes([_minute(60 * i) for i in range(3)])
    buf.append_event(Event(seq=0, ts=1.5, kind="xid", code=79, message='quote " and \\ backslash'))
    for table, parsed in (("minutes", buf.minutes_after(0)), ("events", buf.events_after(0))):
        assert json.loads(splice_records(buf.raw_after(table, 0))) == parsed
    assert splice_records([]) == "[]" and json.loads(splice_records([(7, "{}")])) == [{"seq": 7}]
    buf.close()


def test_seven_days_of_eight_gpus_fit_the_default_cap(tmp_path):
    from fleetmon.agent.buffer import DEFAULT_MAX_BYTES, MIN_KEEP_DAYS
    from fleetmon.fields import GAUGE_NAMES, THROTTLE_NAMES

    buf = Buffer(tmp_path / "cap.db")
    values = {f"{g}_{s}": 123.456 for g in GAUGE_NAMES for s in ("min", "mean", "max")}
    values.update({f"thr_{r}": 12 for r in THROTTLE_NAMES})
    values.update({"energy_mj": 12345678901, "busy_n": 12, "pcie_gen_busy_min": 4, "pcie_width_busy_min": 16})
    status = {"fan_pct": "unsupported", "retired_sbe": "unsupported", "retired_dbe": "unsupported"}
    uuid = "GPU-636e8b67-e803-65e7-8e2a-2f5e18f31cc9"
    buf.append_minutes([GpuMinute(seq=0, ts=60 * i, uuid=uuid, index=0, n=12, values=values, status=status)
                        for i in range(2000)])
    per_record = buf.size_bytes() / 2000
    week = per_record * 8 * 1440 * MIN_KEEP_DAYS
    assert week < DEFAULT_MAX_BYTES, f"7 days of 8 GPUs need {week / 2**20:.0f} MiB"
    assert buf.days_capacity(8) > MIN_KEEP_DAYS
    buf.close()
