"""Shared builders for the tests (no tests here): nodes, inventories, minutes, polls, and a Feeder
that fills a database as the collector would. The fake pynvml module lives in ``fakenvml/`` beside
this file."""

from __future__ import annotations

import random
import socket
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest

from fleetmon.fields import COUNTER_NAMES, GAUGE_NAMES, STATE_NAMES, THROTTLE_NAMES
from fleetmon.records import Event, GpuInventory, GpuMinute, GpuSample, NodeInfo, NodePoll
from storage.db import open_database
from storage.ingest import ingest_polls
from storage.rollup import rollup

T0 = 1_700_000_000 // 86400 * 86400  # a UTC midnight


def dead_url() -> str:
    """An http URL on 127.0.0.1 where nothing listens (a port just bound and released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def uuid_of(node: str, index: int) -> str:
    return f"GPU-{node}-{index:02d}"


def inventory(node: str, index: int, **over: Any) -> GpuInventory:
    values = {"index": index, "uuid": uuid_of(node, index), "serial": f"SN-{node}-{index}", "vbios": "92.00.45.00.01",
              "pci_bus_id": f"00000000:{index + 0x10:02X}:00.0", "memory_total_mib": 81920,
              "power_default_w": 400.0, "power_enforced_w": 400.0}
    uuid = over.pop("uuid", values["uuid"])
    values["uuid"] = uuid
    values.update(over)
    return GpuInventory(uuid=uuid, index=index, name="NVIDIA A100-SXM4-80GB", values=values)


def _minute_layout(busy: bool) -> tuple[dict[str, Any], list[tuple[str, str, str, Any]], dict[str, Any]]:
    """What :func:`minute_values` fills in besides the random spread: the gauges' bases and the fixed tail."""
    base = {"temp_c": 70 if busy else 35, "mem_temp_c": 75 if busy else 38, "fan_pct": None,
            "power_w": 320.5 if busy else 61.2, "power_limit_w": 400.0, "sm_clock_mhz": 1410 if busy else 210,
            "mem_clock_mhz": 1593, "gr_clock_mhz": 1410 if busy else 210, "util_gpu_pct": 97 if busy else 0,
            "util_mem_pct": 60 if busy else 0, "mem_used_mib": 70000 if busy else 600,
            "mem_free_mib": 11300 if busy else 80700, "pcie_tx_kbs": 250000 if busy else 0,
            "pcie_rx_kbs": 900000 if busy else 0}
    gauges = [(f"{g}_min", f"{g}_max", f"{g}_mean", base[g]) for g in GAUGE_NAMES]
    idle: dict[str, Any] = {}  # no spread when idle: the gauges are fixed
    for lo, hi, mean, b in gauges:
        if b is None:
            idle[lo] = idle[mean] = idle[hi] = None
            continue
        idle[lo] = round(b, 1) if isinstance(b, float) else int(b)
        idle[hi] = round(b, 1) if isinstance(b, float) else int(b)
        idle[mean] = round((idle[lo] + idle[hi]) / 2, 3)
    tail: dict[str, Any] = {}
    for c in COUNTER_NAMES:
        tail[c] = 0
    tail["energy_mj"] = 0
    for s in STATE_NAMES:
        tail[s] = 0
    tail["pcie_gen"], tail["pcie_width"] = 4, 16
    tail["throttle_mask"] = 0 if busy else 1
    for r in THROTTLE_NAMES:
        tail[f"thr_{r}"] = 0
    tail["thr_gpu_idle"] = 0 if busy else 12
    tail["busy_n"] = 12 if busy else 0
    tail["pcie_gen_busy_min"] = 4 if busy else None
    tail["pcie_width_busy_min"] = 16 if busy else None
    return idle, gauges, tail


_MINUTE_LAYOUT = {busy: _minute_layout(busy) for busy in (True, False)}
"""Built once: a test feeding a week of minutes calls minute_values tens of thousands of times."""


def minute_values(rng: random.Random, busy: bool, energy_mj: int = 10**9) -> dict[str, Any]:
    """A realistic GpuMinute.values dict (every key the agent sends): the busy gauges spread by up to 3 %
    (one ``rng.random()`` per gauge, in GAUGE_NAMES order), the idle ones fixed."""
    idle, gauges, tail = _MINUTE_LAYOUT[busy]
    if busy:
        v: dict[str, Any] = {}
        for lo, hi, mean, b in gauges:
            if b is None:
                v[lo] = v[mean] = v[hi] = None
                continue
            spread = abs(b) * 0.03 * rng.random()
            if isinstance(b, float):
                v[lo], v[hi] = round(b - spread, 1), round(b + spread, 1)
            else:
                v[lo], v[hi] = int(b - spread), int(b + spread)
            v[mean] = round((v[lo] + v[hi]) / 2 + spread * 0.1, 3)
    else:
        v = dict(idle)
    v.update(tail)
    v["energy_mj"] = energy_mj
    return v


def minute(node: str, index: int, ts: int, seq: int = 0, busy: bool = True, seed: int = 0, **values: Any
           ) -> GpuMinute:
    v = minute_values(random.Random(f"{node}/{index}/{ts}/{seed}"), busy)
    status = values.pop("status", {"fan_pct": "unsupported"})
    v.update(values)
    return GpuMinute(seq=seq, ts=ts, uuid=uuid_of(node, index), index=index, n=12, values=v, status=status)


def poll(node: str, ts: float, gpus: int = 2, minutes: list[GpuMinute] | None = None, ok: bool = True,
         events: list[Event] | None = None, inv: list[GpuInventory] | None = None, driver: str = "550.54.15",
         minutes_cursor: int | None = None, events_cursor: int | None = None) -> NodePoll:
    if not ok:
        return NodePoll(node=node, url=f"http://{node}:9400", ts=ts, ok=False, error="connect: refused")
    inv = inv if inv is not None else [inventory(node, i) for i in range(gpus)]
    latest = [GpuSample(ts=ts, uuid=g.uuid, index=g.index, values={"temp_c": 40, "power_w": 70.5}) for g in inv]
    return NodePoll(node=node, url=f"http://{node}:9400", ts=ts, ok=True, info=NodeInfo(
        hostname=node, agent_version="0.1", values={"driver_version": driver, "gpu_count": len(inv)}),
        gpus=inv, latest=latest, minutes=minutes or [], events=events or [],
        minutes_cursor=minutes_cursor, events_cursor=events_cursor)


def minutes_for(node: str, gpus: int, start: int, count: int, seq0: int = 1, busy: bool = True
                ) -> list[GpuMinute]:
    out = []
    seq = seq0
    for k in range(count):
        for i in range(gpus):
            out.append(minute(node, i, start + 60 * k, seq=seq, busy=busy))
            seq += 1
    return out


@pytest.fixture
def fresh_db(tmp_path):
    db = open_database(tmp_path / "fleet.db")
    yield db
    db.close()


NODES = ("n1", "n2", "n3")
HOT = {"thr_hw_thermal": 12}


class Feeder:
    """Feeds a database as the collector would: each node's minutes, then one poll per node."""

    def __init__(self, db: Any, nodes: Iterable[str] = NODES, gpus: int = 2,
                 drivers: Mapping[str, str] | None = None) -> None:
        self.db = db
        self.nodes = list(nodes)
        self.gpus = gpus
        self.drivers = dict(drivers or {})
        self.seq = {n: 0 for n in self.nodes}

    def feed(self, t_from: int, t_to: int, faults: Mapping[tuple[str, int], Callable[[int], Mapping[str, Any]]]
             | None = None, *, down: Iterable[str] = ()) -> None:
        """Minutes [t_from, t_to) of every node; ``faults[(node, gpu)](ts)`` overrides values."""
        faults = faults or {}
        polls = []
        for node in self.nodes:
            if node in down:
                polls.append(poll(node, t_to, ok=False))
                continue
            mins = []
            for ts in range(t_from, t_to, 60):
                for i in range(self.gpus):
                    self.seq[node] += 1
                    extra = dict(faults[(node, i)](ts)) if (node, i) in faults else {}
                    mins.append(minute(node, i, ts, seq=self.seq[node], busy=True, **extra))
            polls.append(poll(node, t_to, gpus=self.gpus, minutes=mins, minutes_cursor=self.seq[node],
                              driver=self.drivers.get(node, "550.54.15")))
        ingest_polls(self.db, polls)
        rollup(self.db, t_to)


def between(a: int, b: int, values: Mapping[str, Any]) -> Callable[[int], Mapping[str, Any]]:
    """Override ``values`` for minutes in [a, b)."""
    return lambda ts: values if a <= ts < b else {}


VERDICT_NODES = {"ok1": "pass", "old1": "stale", "bad1": "fail", "warn1": "warn"}
"""What :func:`verdict_fleet` builds, node → its verdict (issue 19)."""


def verdict_fleet(db: Any, now: float) -> None:
    """Four nodes of two GPUs, one per verdict at ``now``: ok1 polled 30 s before (pass); old1 polled 6 h
    before, no findings (stale); bad1 polled 6 h before with an open critical ecc-uncorrectable on GPU 0 in
    the ledger (fail: silence is not evidence); warn1 polled 30 s before with an open warning Xid on GPU 1
    (warn)."""
    from storage.findings import save_ledger
    from storage.rows import NewFinding

    ingest_polls(db, [poll("old1", now - 6 * 3600), poll("bad1", now - 6 * 3600)])
    ingest_polls(db, [poll("ok1", now - 30), poll("warn1", now - 30)])
    save_ledger(db, [
        NewFinding(key=f"ecc-uncorrectable|gpu:{uuid_of('bad1', 0)}|", kind="ecc-uncorrectable", severity="critical",
                   node="bad1", gpu_uuid=uuid_of("bad1", 0), first_seen=now - 7 * 3600, last_seen=now - 6.5 * 3600,
                   evidence={"new": 2, "volatile": 2, "aggregate": 2}, action="Drain the node"),
        NewFinding(key=f"xid|gpu:{uuid_of('warn1', 1)}|31", kind="xid", severity="warning", node="warn1",
                   gpu_uuid=uuid_of("warn1", 1), first_seen=now - 3600, last_seen=now - 1800,
                   evidence={"code": 31, "count": 1}, action="Check the job"),
    ], [], now - 60)
