"""Live simulated agents continue the demo's generated stories without a jump (issue 19).

The history is generated into a real SQLite file ending at the epoch E; the live
nodes are the simulated NVML twin with the scenarios the demo gives its agents,
sampled through the agent's own session, sampler and buffer on a clock that
starts at E (an agent started where the history ends). The last generated minute
of each card is compared with its first live minutes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from fleetmon.agent.buffer import Buffer
from fleetmon.agent.nvml import open_nvml
from fleetmon.agent.sampler import Sampler
from fleetmon.records import GpuMinute
from fleetmon.sim import stories
from fleetmon.sim.demo_history import DEFAULT_SEED, FLEET_SIZE, demo_fleet, generate_history, stored_epoch
from fleetmon.sim.nvml import SimulatedNvml
from fleetmon.sim.scenarios import PROFILES
from storage.db import open_database
from storage.queries import gpus as stored_gpus
from storage.queries import nodes as stored_nodes

DAY = 86400
EPOCH = float(1_780_000_000 // DAY * DAY + 15 * 3600)  # 15:00 UTC: the 4090's hot afternoon hours
COUNTERS = ("ecc_corr_agg", "ecc_unc_agg", "ecc_corr_vol", "ecc_unc_vol", "pcie_replay", "retired_sbe",
            "retired_dbe", "retired_pending", "remap_corr", "remap_unc", "remap_pending", "remap_failure")


@dataclass
class _Clock:
    now: float

    def __call__(self) -> float:
        return self.now


@dataclass
class Live:
    driver: str
    inventory: dict[int, str]  # index -> uuid
    minutes: dict[tuple[int, float], GpuMinute]  # (index, minute ts) -> minute


def live_node(name: str, scenario: str, start: float, minutes: int = 2) -> Live:
    """The node as a live agent started at ``start`` sees it: ``minutes`` whole minutes sampled every 5 s."""
    clock = _Clock(start)
    nv = SimulatedNvml(scenario, node_name=name, clock=clock, start=start)
    session = open_nvml(nv)
    buffer = Buffer(None)
    sampler = Sampler(session, buffer, interval_s=5.0, clock=clock)
    try:
        info = session.node_info()
        inventory = {i: session.inventory(i).uuid for i in session.indices()}
        for k in range(1, minutes * 12 + 2):
            clock.now = start + 5 * k
            sampler.sample_once()
        recs = [GpuMinute.from_dict(r) for r in buffer.minutes_after(0, 100_000)]
    finally:
        sampler.close()
        buffer.close()
        session.close()
    by_uuid = {u: i for i, u in inventory.items()}
    return Live(str(info.values.get("driver_version")),
                inventory, {(by_uuid[m.uuid], m.ts): m for m in recs})


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("continuity") / "demo.db"
    db = open_database(path)
    try:
        generate_history(db, nodes=FLEET_SIZE, days=1, now=EPOCH, minute_hours=2)
        cols = [r[1] for r in db.conn.execute("PRAGMA table_info(samples)")]
        rows = db.conn.execute("SELECT g.node, g.idx, s.* FROM samples s JOIN gpus g ON g.id = s.gpu_id "
                               "ORDER BY s.ts").fetchall()
        history: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for r in rows:
            history.setdefault((r[0], r[1]), []).append(dict(zip(cols, r[2:])))
        inventory = {(g.node, g.index): g.uuid for g in stored_gpus(db)}
        drivers = {n.name: n.driver_version for n in stored_nodes(db)}
        epoch = stored_epoch(db)
    finally:
        db.close()
    live = {n.name: live_node(n.name, n.scenario(DEFAULT_SEED, EPOCH), EPOCH) for n in demo_fleet(FLEET_SIZE)}
    return {"path": path, "history": history, "inventory": inventory, "drivers": drivers, "live": live,
            "epoch": epoch}


def _last(demo: dict[str, Any], node: str, idx: int, busy: bool = False) -> dict[str, Any]:
    rows = [r for r in demo["history"][(node, idx)] if not busy or (r["busy_n"] or 0) > 0]
    return rows[-1]


def _first_live(demo: dict[str, Any], node: str, idx: int, k: int = 0) -> GpuMinute:
    minutes = sorted((ts, m) for (i, ts), m in demo["live"][node].minutes.items() if i == idx)
    return minutes[k][1]


def test_history_ends_where_the_live_agents_start(demo):
    assert demo["epoch"] == EPOCH  # stored with the history: a reopened database keeps its epoch
    last = max(r["ts"] for rows in demo["history"].values() for r in rows)
    assert last == EPOCH - 60  # the last generated minute covers [E - 60 s, E)
    first = min(ts for live in demo["live"].values() for (_, ts) in live.minutes)
    assert first == EPOCH  # the first live minute starts at E: no gap, no overlap


def test_every_counter_continues_on_every_card(demo):
    jumps = []
    for (node, idx), rows in demo["history"].items():
        if node == "t4-infer-01" and idx == 3:
            continue  # the moved card: it left this node; checked at its new place
        last = rows[-1]
        live = _first_live(demo, node, idx).values
        for key in COUNTERS:
            if last.get(key) != live.get(key):
                jumps.append((node, idx, key, last.get(key), live.get(key)))
    assert not jumps


def test_v100_retired_pages_continue(demo):
    last = _last(demo, "v100-srv-02", 3)
    live = _first_live(demo, "v100-srv-02", 3).values
    hist_total = last["retired_sbe"] + last["retired_dbe"]
    live_total = live["retired_sbe"] + live["retired_dbe"]
    assert hist_total == live_total == stories.RETIRED_SBE_AT_EPOCH + stories.RETIRED_DBE  # 16, not 58
    assert last["retired_pending"] == live["retired_pending"] == 1
    assert live_total < 48  # one finding (pending), not a second one for a count near the limit
    # the story's own growth: one page per RETIRED_SBE_EVERY_S, never a jump within a day of polling
    day_later = stories.retired_pages(EPOCH + DAY, EPOCH)
    assert day_later[0] + day_later[1] - live_total <= 1


def test_row_remap_stays_pending(demo):
    last = _last(demo, "a100-02", 1)
    live = _first_live(demo, "a100-02", 1).values
    assert (last["remap_corr"], last["remap_pending"]) == (live["remap_corr"], live["remap_pending"]) == (1, 1)
    assert stories.card_state("row-remap", 1, EPOCH + 30 * DAY, EPOCH).remap == (1, 0, 1, 0)


def test_derated_card_keeps_its_clock_ratio_while_busy(demo):
    boost = PROFILES["rtx3090"].boost_mhz
    hist = _last(demo, "rig-3090-03", 2, busy=True)["sm_clock_mhz_mean"] / boost
    live_min = _first_live(demo, "rig-3090-03", 2)
    assert live_min.values["busy_n"] == live_min.n  # the live twin starts busy
    live = live_min.values["sm_clock_mhz_mean"] / boost
    assert hist == pytest.approx(stories.DERATE_FRAC, abs=0.01)
    assert live == pytest.approx(hist, abs=0.02)
    healthy = _first_live(demo, "rig-3090-03", 1).values["sm_clock_mhz_mean"] / boost
    assert healthy > 1.0  # its neighbours run at full boost


def test_riser_link_stays_degraded_under_load(demo):
    last = _last(demo, "rig-3090-02", 1, busy=True)
    live = _first_live(demo, "rig-3090-02", 1).values
    assert (last["pcie_gen_busy_min"], last["pcie_width_busy_min"]) == (1, 8)
    assert (live["pcie_gen_busy_min"], live["pcie_width_busy_min"]) == (1, 8)
    assert _first_live(demo, "rig-3090-02", 0).values["pcie_gen_busy_min"] == 4


def test_4090_throttles_in_the_afternoon(demo):
    p = PROFILES["rtx4090"]
    last = _last(demo, "rig-4090-03", 0, busy=True)
    assert 13 <= int(last["ts"]) % DAY // 3600 < 17 and last["thr_sw_thermal"] > 0
    live = _first_live(demo, "rig-4090-03", 0).values  # the twin continues warm, not from a cold start
    assert live["thr_sw_thermal"] > 0
    assert live["temp_c_mean"] == pytest.approx(last["temp_c_mean"] / 10, abs=1.5)  # stored in 0.1 °C
    assert p.temp_slowdown_c - 3 <= live["temp_c_mean"] < p.temp_slowdown_c
    assert _first_live(demo, "rig-4090-03", 1).values["thr_sw_thermal"] == 0
    healthy = _first_live(demo, "rig-4090-03", 1).values["temp_c_mean"]
    assert healthy == pytest.approx(p.busy_temp_c, abs=2)  # a busy neighbour at its normal temperature
    # ...and not at night (the live twin follows the UTC clock)
    night = live_node("rig-4090-03", demo_fleet()[5].scenario(DEFAULT_SEED, EPOCH), EPOCH + 9 * 3600)
    assert all(m.values["thr_sw_thermal"] == 0 for (i, _), m in night.minutes.items() if i == 0)


def test_weak_psu_brakes_live_as_the_story_says(demo):
    assert stories.card_state("weak-psu", 0, EPOCH, EPOCH).power_brake  # 15:00: an hour of braking
    def braked(idx: int) -> int:  # brake samples in the two live minutes (a third of the 5 s windows)
        return sum(m.values["thr_hw_power_brake"] for (i, _), m in demo["live"]["rig-3090-05"].minutes.items()
                   if i == idx)

    assert all(braked(idx) > 0 for idx in stories.WEAK_PSU_GPUS)
    assert braked(2) == 0


def test_driver_outlier_and_moved_card_stay_as_they_ended(demo):
    for name, live in demo["live"].items():
        assert live.driver == demo["drivers"][name], name
        stored = {idx: uuid for (node, idx), uuid in demo["inventory"].items() if node == name}
        assert live.inventory == stored, name  # the moved card is on t4-infer-03, not back on t4-infer-01
    assert demo["drivers"]["rig-4090-04"] != demo["drivers"]["rig-4090-01"]
    assert len(demo["live"]["t4-infer-01"].inventory) == 3 and len(demo["live"]["t4-infer-03"].inventory) == 4


def test_reopened_database_continues_from_its_own_epoch(demo, monkeypatch):
    """`fleetmon demo --db FILE` on a kept file: the agents take the stored epoch, not a new one."""
    from fleetmon.demo import story_epoch

    later = EPOCH + 4 * 60
    monkeypatch.setattr("time.time", lambda: later)
    assert story_epoch(demo["path"]) == EPOCH
    assert story_epoch(demo["path"].with_name("fresh.db")) == later  # a new database: its history ends now
    # agents started four minutes later still see the stories as the history left them
    v100 = live_node("v100-srv-02", demo_fleet()[3].scenario(DEFAULT_SEED, EPOCH), later, minutes=1)
    derated = live_node("rig-3090-03", demo_fleet()[12].scenario(DEFAULT_SEED, EPOCH), later, minutes=1)
    last = _last(demo, "v100-srv-02", 3)
    first = min((ts, m) for (i, ts), m in v100.minutes.items() if i == 3)[1].values
    assert [first[k] for k in ("retired_sbe", "retired_dbe", "retired_pending")] == \
        [last[k] for k in ("retired_sbe", "retired_dbe", "retired_pending")]
    sm = min((ts, m) for (i, ts), m in derated.minutes.items() if i == 2)[1].values["sm_clock_mhz_mean"]
    assert sm / PROFILES["rtx3090"].boost_mhz == pytest.approx(stories.DERATE_FRAC, abs=0.02)
