"""A month of history for the demo fleet, written into a database through storage's normal API.

The demo fleet (:func:`demo_fleet`) is a patched-together cluster of about 24
nodes in groups: GeForce RTX 3090 and 4090 boxes on risers, second-hand V100
and P100 servers, a few A100s and T4s, on two driver versions after a
half-finished upgrade. Its history (:func:`generate_history`) tells stories
that the views and the findings show:

========================  ==========================================  =====================
node (GPU)                story                                       finding kind
========================  ==========================================  =====================
rig-3090-02 (1)           riser degrades the PCIe link over a week    pcie-link-degraded
v100-srv-02 (3)           retired pages accumulate, one pending       retired-pages
rig-3090-05 (0, 1)        weak PSU: power brake, power dropouts,      power-brake, xid
                          then Xid 79 on both GPUs at once
rig-4090-04               still on the old driver (the group's        driver-mismatch
                          outlier after the half-finished upgrade)
rig-4090-03 (0)           throttles thermally every afternoon         thermal-throttle
p100-srv-03               flaps (unreachable polls)                   node-flapping
a100-02 (1)               a remapped row pending                      row-remap
rig-3090-03 (2)           runs at 65 % of its nominal clocks          derating
t4-infer-01 -> t4-infer-03  a card moved (same UUID, new node)          inventory-change
========================  ==========================================  =====================

Each node's cards, serials, PCI addresses and node facts come from the
simulated NVML twin itself (:class:`fleetmon.sim.nvml.SimulatedNvml`, seeded
by the node name and ``seed``), read once through the agent's own session and
sampler, so a live ``fleetmon agent --simulate SCENARIO --node-name NAME``
with the node's :attr:`DemoNode.scenario` reports the same GPUs and continues
the history. The minutes themselves are computed here (whole-hour busy/idle
blocks), which is what makes a month fast: the last day is
stored as real minutes (polled hour by hour), the days before as one
representative minute per GPU and hour turned into hourly/daily rollups by
:func:`storage.bulk.compact_hours` (a store past raw-minute retention looks
the same). Deterministic for ``(nodes, days, seed, now)``.
"""

from __future__ import annotations

import random
import time
import zlib
from dataclasses import dataclass, replace
from typing import Any, Callable

from fleetmon.agent.buffer import Buffer
from fleetmon.agent.nvml import open_nvml
from fleetmon.agent.sampler import Sampler
from fleetmon.records import Event, GpuInventory, GpuMinute, NodeInfo, NodePoll
from fleetmon.sim import stories
from fleetmon.sim.nvml import SimulatedNvml
from fleetmon.sim.scenarios import PROFILES

HOUR = 3600
DAY = 86400
SAMPLES_PER_MINUTE = 12
"""The agent samples every 5 s: ``n`` of a generated minute."""

DEFAULT_SEED = 20240601
NEW_DRIVER = "550.54.15"
OLD_DRIVER = "535.161.08"


@dataclass(frozen=True)
class DemoNode:
    """One node of the demo fleet: its name, group, cards, driver and story (None = healthy)."""

    name: str
    group: str
    model: str  # a key of fleetmon.sim.scenarios.PROFILES
    gpus: int
    driver: str
    story: str | None = None

    def scenario(self, seed: int = DEFAULT_SEED, epoch: float | None = None) -> str:
        """The simulated agent's scenario: the same cards as the history (same seed, same node name).

        With a story, the twin plays it live (:mod:`fleetmon.sim.stories`),
        anchored at ``epoch`` (the Unix time the generated history ends; None:
        the agent's start), so it continues the history without a jump.
        """
        spec = f"{self.model}*{self.gpus};driver={self.driver};seed={seed}"
        if self.story is not None:
            spec += f";story={self.story}"
        if epoch is not None:  # also on healthy nodes: the twin then starts warm, as the history left it
            spec += f";epoch={epoch:.0f}"
        return spec


_FLEET: tuple[DemoNode, ...] = (
    DemoNode("rig-3090-01", "geforce-3090", "rtx3090", 4, NEW_DRIVER),
    DemoNode("rig-3090-02", "geforce-3090", "rtx3090", 4, NEW_DRIVER, "pcie-riser"),
    DemoNode("v100-srv-01", "v100", "v100", 4, OLD_DRIVER),
    DemoNode("v100-srv-02", "v100", "v100", 4, OLD_DRIVER, "retired-pages"),
    DemoNode("rig-4090-01", "geforce-4090", "rtx4090", 4, NEW_DRIVER),
    DemoNode("rig-4090-03", "geforce-4090", "rtx4090", 4, NEW_DRIVER, "thermal-afternoon"),
    DemoNode("a100-01", "a100", "a100", 4, OLD_DRIVER),
    DemoNode("a100-02", "a100", "a100", 4, OLD_DRIVER, "row-remap"),
    DemoNode("rig-3090-05", "geforce-3090", "rtx3090", 4, NEW_DRIVER, "weak-psu"),
    DemoNode("rig-4090-04", "geforce-4090", "rtx4090", 4, OLD_DRIVER, "driver-outlier"),
    DemoNode("p100-srv-01", "p100", "p100", 2, OLD_DRIVER),
    DemoNode("p100-srv-03", "p100", "p100", 2, OLD_DRIVER, "flapping"),
    DemoNode("rig-3090-03", "geforce-3090", "rtx3090", 4, NEW_DRIVER, "derated"),
    DemoNode("t4-infer-01", "t4", "t4", 3, OLD_DRIVER, "moved-from"),
    DemoNode("t4-infer-03", "t4", "t4", 4, OLD_DRIVER, "moved-to"),
    DemoNode("rig-3090-04", "geforce-3090", "rtx3090", 4, NEW_DRIVER),
    DemoNode("v100-srv-03", "v100", "v100", 4, OLD_DRIVER),
    DemoNode("rig-4090-02", "geforce-4090", "rtx4090", 4, NEW_DRIVER),
    DemoNode("a100-03", "a100", "a100", 4, OLD_DRIVER),
    DemoNode("p100-srv-02", "p100", "p100", 2, OLD_DRIVER),
    DemoNode("t4-infer-02", "t4", "t4", 4, OLD_DRIVER),
    DemoNode("rig-3090-06", "geforce-3090", "rtx3090", 4, NEW_DRIVER),
    DemoNode("v100-srv-04", "v100", "v100", 4, OLD_DRIVER),
    DemoNode("rig-4090-05", "geforce-4090", "rtx4090", 4, NEW_DRIVER),
)

FLEET_SIZE = len(_FLEET)

STORIES: dict[str, tuple[str, str, tuple[int, ...]]] = {
    # story -> (finding kind, node, GPU indices it concerns; empty = the node)
    "pcie-riser": ("pcie-link-degraded", "rig-3090-02", (1,)),
    "retired-pages": ("retired-pages", "v100-srv-02", (3,)),
    "weak-psu": ("power-brake", "rig-3090-05", (0, 1)),
    "weak-psu-xid": ("xid", "rig-3090-05", (0, 1)),
    "driver-outlier": ("driver-mismatch", "rig-4090-04", ()),
    "thermal-afternoon": ("thermal-throttle", "rig-4090-03", (0,)),
    "flapping": ("node-flapping", "p100-srv-03", ()),
    "row-remap": ("row-remap", "a100-02", (1,)),
    "derated": ("derating", "rig-3090-03", (2,)),
    "moved": ("inventory-change", "t4-infer-03", (3,)),
}
"""What each story must show in the report (tests/sim/test_demo_history.py checks it)."""


def demo_fleet(count: int = FLEET_SIZE) -> list[DemoNode]:
    """The first ``count`` nodes of the demo fleet; beyond :data:`FLEET_SIZE`, more healthy GeForce boxes.

    A mover without its destination keeps its card (no move).
    """
    nodes = list(_FLEET[:count])
    for i in range(FLEET_SIZE, count):
        nodes.append(DemoNode(f"rig-3090-{i + 1:02d}", "geforce-3090", "rtx3090", 4, NEW_DRIVER))
    names = {n.name for n in nodes}
    if "t4-infer-03" not in names:
        nodes = [replace(n, gpus=4, story=None) if n.story == "moved-from" else n for n in nodes]
    return nodes


_GAUGES = ("util_gpu_pct", "util_mem_pct", "sm_clock_mhz", "gr_clock_mhz", "power_w", "temp_c", "mem_used_mib",
           "mem_free_mib")


@dataclass
class _FixedClock:
    now: float

    def __call__(self) -> float:
        return self.now


@dataclass
class _Card:
    inv: GpuInventory
    template: dict[str, Any]
    status: dict[str, str]
    profile_key: str
    phase: int
    energy_mj: int
    thr_keys: list[str]  # the minute's throttle-reason counts
    gauges: set[str]  # the gauges this card reads (set below from the hour's state)


@dataclass
class _NodeModel:
    node: DemoNode
    info: NodeInfo
    cards: list[_Card]
    url: str


def _read_node(node: DemoNode, seed: int, start: int) -> _NodeModel:
    """The node's facts, inventory and one sampled minute per card, from the simulated NVML twin."""
    clock = _FixedClock(float(start + 5))  # not the wall clock: the same seed gives the same cards and readings
    # The healthy twin of the node (same cards): the story's values come from fleetmon.sim.stories per hour.
    nv = SimulatedNvml(replace(node, story=None).scenario(seed), node_name=node.name, clock=clock,
                       start=clock() - 3600)
    session = open_nvml(nv)
    buffer = Buffer(None)
    sampler = Sampler(session, buffer, interval_s=60.0, clock=clock)
    info = session.node_info()
    info = replace(info, hostname=node.name, values={**info.values, "hostname": node.name},
                   xid_source="nvml+kmsg", started_at=float(start))
    inventory = [session.inventory(i) for i in session.indices()]
    sampler.sample_once()
    clock.now += 60
    sampler.sample_once()
    minutes = {m["uuid"]: GpuMinute.from_dict(m) for m in buffer.minutes_after(0, 10_000)}
    session.close()  # its lanes are threads; the history needs nothing more from the twin
    rnd = random.Random(zlib.crc32(f"{seed}:{node.name}".encode()))
    cards = []
    for inv in inventory:
        m = minutes[inv.uuid]
        template = dict(m.values)
        cards.append(_Card(inv, template, dict(m.status), node.model, rnd.randrange(6),
                           int(m.values.get("energy_mj") or 0),
                           [k for k in template if k.startswith("thr_")],
                           {g for g in _GAUGES if template.get(f"{g}_mean") is not None}))
    return _NodeModel(node, info, cards, f"http://{node.name}:9400")


def _hour_values(model: _NodeModel, card: _Card, idx: int, hour_ts: int, end: int, rnd: random.Random
                 ) -> tuple[dict[str, Any], dict[str, str], bool]:
    """One card's values for a whole hour (a minute of it, ``n`` samples): (values, status, busy)."""
    p = PROFILES[card.profile_key]
    story = model.node.story
    h = hour_ts // HOUR
    busy = (h + card.phase) % 6 < 4
    v = dict(card.template)
    n = SAMPLES_PER_MINUTE
    status = dict(card.status)
    thr = dict.fromkeys(card.thr_keys, 0)
    jitter = rnd.uniform(-1.0, 1.0)
    if busy:
        util, sm = 96.0 + jitter, float(round(p.boost_mhz * 0.98))
        power, temp = p.tdp_w * 0.82 + 4 * jitter, p.busy_temp_c + 2 * jitter
        gen, width = p.pcie_gen, p.pcie_width
        mem_used = p.memory_mib * 0.7
        pstate, mask = 0, 0
    else:
        util, sm = 0.0, float(p.idle_sm_mhz)
        power, temp = p.idle_w + jitter, p.idle_temp_c + jitter
        gen, width = 1, p.pcie_width
        mem_used = 250.0
        pstate, mask = p.idle_pstate, 1
        thr["thr_gpu_idle"] = n
    st = stories.card_state(story, idx, hour_ts, end, gen=p.pcie_gen, width=p.pcie_width)
    if st.sm_frac is not None and busy:
        sm = float(round(p.boost_mhz * st.sm_frac))  # 65 % of the nominal boost clock
        power = p.tdp_w * (st.power_frac or 0.65)
    if st.hot and busy:
        temp = p.temp_slowdown_c - stories.THERMAL_UNDER_SLOWDOWN_C + jitter / 2
        sm = float(round(p.boost_mhz * stories.THERMAL_SM_FRAC))
        thr["thr_sw_thermal"] = n
        mask |= 0x20
    if st.link is not None and busy:
        gen, width = st.link
    if st.power_brake and busy:
        thr["thr_hw_power_brake"] = round(n * stories.PSU_BRAKE_DUTY)
        mask |= 0x80
        power *= stories.PSU_BRAKE_POWER_FRAC
    if st.retired is not None:
        v["retired_sbe"], v["retired_dbe"], v["retired_pending"] = st.retired
    if st.remap is not None:
        v["remap_corr"], v["remap_unc"], v["remap_pending"], v["remap_failure"] = st.remap
    if busy:
        thr_busy = n
    else:
        thr_busy = 0
    for g, val in (("util_gpu_pct", util), ("util_mem_pct", util * 0.6), ("sm_clock_mhz", sm), ("gr_clock_mhz", sm),
                   ("power_w", power), ("temp_c", temp), ("mem_used_mib", mem_used),
                   ("mem_free_mib", p.memory_mib - mem_used)):
        if g not in card.gauges:
            continue
        val = round(val, 1)
        spread = 0.0 if g.startswith(("mem_", "sm_", "gr_")) else 1.5
        v[f"{g}_min"], v[f"{g}_mean"], v[f"{g}_max"] = round(val - spread, 1), val, round(val + spread, 1)
    if v.get("mem_temp_c_mean") is not None:
        mt = round(temp + 3, 1)
        v["mem_temp_c_min"], v["mem_temp_c_mean"], v["mem_temp_c_max"] = mt - 1, mt, mt + 1
    if v.get("fan_pct_mean") is not None:
        fan = 75.0 if busy else 30.0
        v["fan_pct_min"], v["fan_pct_mean"], v["fan_pct_max"] = fan, fan, fan
    v.update(thr)
    v.update(pstate=pstate, throttle_mask=mask, pcie_gen=gen, pcie_width=width, busy_n=thr_busy,
             pcie_gen_busy_min=gen if busy else None, pcie_width_busy_min=width if busy else None)
    return v, status, busy


def _power_dropout(values: dict[str, Any], status: dict[str, str]) -> None:
    for k in ("power_w_min", "power_w_mean", "power_w_max"):
        values[k] = None
    status["power_w"] = "failed"


def _poll(model: _NodeModel, ts: float, minutes: list[GpuMinute], cards: list[_Card],
          events: list[Event], info: NodeInfo) -> NodePoll:
    return NodePoll(node=model.node.name, url=model.url, ts=ts, ok=True, group=model.node.group,
                    duration_ms=12.0, info=info, gpus=[c.inv for c in cards], minutes=minutes, events=events,
                    skew_s=0.0)


def generate_history(db: Any, *, nodes: int = FLEET_SIZE, days: float = 30, seed: int = DEFAULT_SEED,
                     now: float | None = None, minute_hours: float = 24,
                     progress: Callable[[int, int], None] | None = None) -> list[DemoNode]:
    """Write ``days`` of history of the first ``nodes`` demo nodes, ending at ``now``; returns the nodes.

    The last ``minute_hours`` (whole hours, the report's minute window) are
    real minutes; earlier hours are hourly rollups only. ``progress(done,
    total)`` is called after each stored day (or part of one).
    """
    from storage.bulk import compact_hours
    from storage.ingest import ingest_polls
    from storage.rollup import rollup

    now = time.time() if now is None else float(now)
    end = int(now) // 60 * 60
    start = (end - int(days * DAY)) // HOUR * HOUR
    minute_start = max(start, (end - int(minute_hours * HOUR)) // HOUR * HOUR)
    fleet = demo_fleet(nodes)
    models = [_read_node(n, seed, start) for n in fleet]
    for m in models:
        m.info = replace(m.info, started_at=float(start))
    by_name = {m.node.name: m for m in models}
    moved: _Card | None = None
    move_ts = max(end - 12 * DAY, start + (end - start) // 2)
    if "t4-infer-01" in by_name and "t4-infer-03" in by_name and by_name["t4-infer-01"].node.story == "moved-from":
        dst = by_name["t4-infer-03"]
        moved = dst.cards[3]
    cuts = sorted({start, minute_start, end} | {d * DAY for d in range(start // DAY + 1, end // DAY + 1)})
    segments = [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]
    total = len(segments)
    rnd = random.Random(seed)
    xid_ts = int(stories.xid_time("weak-psu", end) or 0)
    for i, (d0, d1) in enumerate(segments):
        polls: list[NodePoll] = []
        raw = d0 >= minute_start
        for m in models:
            cards = list(m.cards)
            name = m.node.name
            if moved is not None and name == "t4-infer-01" and d0 < move_ts:
                cards.append(replace(moved, inv=replace(moved.inv, index=3)))
            if moved is not None and name == "t4-infer-03" and d0 < move_ts:
                cards = cards[:3]
            polls += _node_day(m, cards, d0, d1, end, raw, rnd, xid_ts)
        polls.sort(key=lambda p: (p.ts, p.node))
        ingest_polls(db, polls)
        if not raw and d1 == minute_start:
            compact_hours(db, start, minute_start, now=now)
        if progress is not None:
            progress(i + 1, total)
    rollup(db, now=now)
    from storage.bulk import mark_generated_until

    mark_generated_until(db, end)  # the stories' epoch: where live agents take over, now or when reopened
    return fleet


def stored_epoch(db: Any) -> float | None:
    """The epoch of the history :func:`generate_history` wrote into ``db`` (None: none recorded)."""
    from storage.bulk import generated_until

    return generated_until(db)


def _node_day(m: _NodeModel, cards: list[_Card], d0: int, d1: int, end: int, raw: bool, rnd: random.Random,
              xid_ts: int) -> list[NodePoll]:
    """One node's polls of one day: per hour (raw minutes) or one poll of representative hour minutes."""
    polls: list[NodePoll] = []
    story = m.node.story
    day_minutes: list[GpuMinute] = []
    events: list[Event] = []
    for h0 in range(d0 // HOUR * HOUR, d1, HOUR):
        hour_minutes: list[GpuMinute] = []
        hour_events: list[Event] = []
        for idx, card in enumerate(cards):
            v, status, busy = _hour_values(m, card, card.inv.index, h0, end, rnd)
            uuid, index = card.inv.uuid, card.inv.index
            watts = v.get("power_w_mean") or 0.0
            if raw:
                for t in range(max(h0, d0), min(h0 + HOUR, d1), 60):
                    card.energy_mj += int(watts * 60_000)
                    vv = dict(v)
                    vv["energy_mj"] = card.energy_mj
                    st = status
                    if busy and stories.card_state(story, index, t, end).power_dropout:
                        st = dict(status)
                        _power_dropout(vv, st)
                    hour_minutes.append(GpuMinute(0, t, uuid, index, SAMPLES_PER_MINUTE, vv, st))
            else:
                card.energy_mj += int(watts * HOUR * 1000)
                v["energy_mj"] = card.energy_mj
                n = SAMPLES_PER_MINUTE * 60
                for k in card.thr_keys:
                    v[k] = int(v[k] or 0) * 60
                v["busy_n"] = int(v["busy_n"] or 0) * 60
                if (story == "weak-psu" and index in stories.WEAK_PSU_GPUS and busy and h0 // HOUR % 17 == 0
                        and end - h0 < stories.PSU_FROM_S):  # an hourly row of the PSU story: one in 17 drops
                    status = dict(status)
                    _power_dropout(v, status)
                hour_minutes.append(GpuMinute(0, h0, uuid, index, n, v, status))
            if story == "weak-psu" and index in stories.WEAK_PSU_GPUS and h0 <= xid_ts < h0 + HOUR:
                hour_events.append(Event(seq=None, ts=float(xid_ts), kind="xid", uuid=uuid,  # type: ignore[arg-type]
                                         pci_bus_id=card.inv.values.get("pci_bus_id"), code=79,
                                         message="GPU has fallen off the bus.", data={"source": "kmsg"}))
        if raw:
            poll_ts = float(min(h0 + HOUR, end))
            if story == "flapping" and end - h0 <= 12 * HOUR and h0 + 15 * 60 < poll_ts:
                # a few minutes unreachable every hour: flaps, each too short to be an outage of its own
                polls.append(NodePoll(node=m.node.name, url=m.url, ts=float(h0 + 10 * 60), ok=False,
                                      group=m.node.group, error="timed out after 10 s", duration_ms=10000.0))
                polls.append(_poll(m, float(h0 + 13 * 60), [], cards, [], m.info))
            polls.append(_poll(m, poll_ts, hour_minutes, cards, hour_events, m.info))
        else:
            day_minutes += hour_minutes
            events += hour_events
    if not raw:
        polls.append(_poll(m, float(d1), day_minutes, cards, events, m.info))
    return polls
