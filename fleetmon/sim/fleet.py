"""Many simulated agent nodes in one process, for collector tests and benchmarks.

Each node runs the real agent code paths: its own simulated NVML
(:class:`fleetmon.sim.nvml.SimulatedNvml`, one object per node), an ``NvmlSession``, a ``Sampler``, an in-memory
``Buffer`` and an HTTP server from :mod:`fleetmon.agent.server` on its own
127.0.0.1 port. Only the scheduling differs from ``fleetmon agent``: one
thread samples every node at a slow cadence (once at start, then every
``sample_interval_s``), so that a thousand nodes leave the CPU to the
collector being measured.

Command line (used by benchmarks/bench_collector.py)::

    python -m fleetmon.sim.fleet --nodes 125 --gpus 8 --port-file ports.json

writes ``{"pid": …, "nodes": [{"name": …, "port": …, "url": …}, …]}`` to the
port file once every node listens, prints one ``name url`` line per node, and
serves until SIGTERM/SIGINT or end of standard input. With ``--control``,
each line read on standard input is a command: ``minute`` appends one more
finished minute per GPU to every node's buffer (a copy of the node's last
real minute, one minute later) and answers ``ok N`` on standard output, so a
benchmark can give every node the same fresh backlog before a cycle.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fleetmon.agent.buffer import Buffer
from fleetmon.agent.nvml import NvmlSession, open_nvml
from fleetmon.agent.sampler import Sampler
from fleetmon.agent.server import AgentState, make_server
from fleetmon.records import GpuMinute, NodeInfo
from fleetmon.sim.nvml import SimulatedNvml
from fleetmon.stopping import stop_on_signals


class ShiftedClock:
    """time.time() plus an adjustable offset (seconds); the node's sampling clock."""

    def __init__(self, offset_s: float = 0.0) -> None:
        self.offset_s = offset_s

    def __call__(self) -> float:
        return time.time() + self.offset_s


@dataclass
class SimNode:
    """One simulated node: simulated NVML, session, sampler, buffer and HTTP server."""

    name: str
    nvml: SimulatedNvml
    session: NvmlSession
    sampler: Sampler
    buffer: Buffer
    server: Any
    clock: ShiftedClock
    info: NodeInfo
    tls: bool = False
    thread: threading.Thread | None = None
    last_minutes: dict[str, GpuMinute] = field(default_factory=dict)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.port}"

    def serve(self, poll_interval_s: float = 1.0) -> None:
        """Serve HTTP in a daemon thread (a long select timeout: idle servers cost nothing)."""
        self.thread = threading.Thread(target=self.server.serve_forever, args=(poll_interval_s,),
                                       name=f"http-{self.name}", daemon=True)
        self.thread.start()

    def backfill(self, minutes: int) -> int:
        """Add ``minutes`` finished minutes per GPU ending before the current one; returns records added.

        The first minute comes from real samples through the real aggregator
        (two samples a minute apart on the node's clock); the rest are copies
        of it, one minute apart, so that a large backlog costs no NVML time.
        """
        if minutes <= 0:
            return 0
        now = time.time()
        # End two days back: live sampling and add_minute() then never reuse a
        # (GPU, minute) of the backlog, and the agent's 8-day pruning keeps it all.
        start = (int(now) // 60) * 60 - 2 * 86400 - minutes * 60
        self.sampler.aggregator = type(self.sampler.aggregator)()  # drop a live, unfinished minute
        held = self.buffer.bounds("minutes")[1]
        self.clock.offset_s = start + 5 - now
        self.sampler.sample_once()
        self.clock.offset_s = start + 65 - now
        self.sampler.sample_once()  # closes minute `start`: 1 record per GPU in the buffer
        self.clock.offset_s = 0.0
        first = [GpuMinute.from_dict(r) for r in self.buffer.minutes_after(held, 10_000)]
        for m in first:
            self.last_minutes[m.uuid] = m
        copies = [replace(m, ts=m.ts + 60 * k) for k in range(1, minutes) for m in first]
        self.buffer.append_minutes(copies)
        for m in copies:
            self.last_minutes[m.uuid] = m
        # The aggregator holds the second sample's minute; drop it so the live
        # sampling does not emit a minute out of order with the copies.
        self.sampler.aggregator = type(self.sampler.aggregator)()
        return len(first) + len(copies)

    def add_minute(self) -> int:
        """Append one more finished minute per GPU (a copy of the last one, 60 s later)."""
        if not self.last_minutes:
            self.backfill(1)
            return len(self.last_minutes)
        nxt = [replace(m, ts=m.ts + 60) for m in self.last_minutes.values()]
        self.buffer.append_minutes(nxt)
        for m in nxt:
            self.last_minutes[m.uuid] = m
        return len(nxt)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.sampler.close()
        self.buffer.close()
        self.session.close()


def make_node(name: str, *, gpus: int = 8, model: str = "a100", seed: int = 0,
              clock_offset_s: float = 0.0, sample: bool = True, port: int = 0,
              tls_cert: str | None = None, tls_key: str | None = None, token: str | None = None) -> SimNode:
    """Build one simulated node (not yet serving); ``sample`` takes its first sample now.

    ``clock_offset_s`` shifts the sampling clock (sample and minute
    timestamps); the server's ``now`` stays the process clock.
    """
    clock = ShiftedClock(clock_offset_s)
    nv = SimulatedNvml(f"{model}*{gpus};hostname={name};seed={seed}", clock=clock,
                       start=clock() - 9 * 86400)  # simulation time stays positive during a backfill
    session = open_nvml(nv)
    buffer = Buffer(None)
    sampler = Sampler(session, buffer, interval_s=60.0, clock=clock)
    started = time.time()
    info = session.node_info()
    info = replace(info, hostname=name, xid_source="none: simulated fleet host", started_at=started)

    def inventory() -> list[Any]:
        return [session.inventory(i) for i in session.indices()]

    state = AgentState(node=lambda: info, inventory=inventory, sampler=sampler, buffer=buffer,
                       started_at=started)
    server = make_server(state, "127.0.0.1", port, token=token, tls_cert=tls_cert, tls_key=tls_key)
    node = SimNode(name=name, nvml=nv, session=session, sampler=sampler, buffer=buffer, server=server,
                   clock=clock, info=info, tls=bool(tls_cert))
    if sample:
        sampler.sample_once()
    return node


class SimFleet:
    """A set of simulated nodes served from this process."""

    def __init__(self, nodes: list[SimNode]) -> None:
        self.nodes = nodes
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        self._lock = threading.Lock()

    @classmethod
    def start(cls, count: int, *, gpus: int = 8, prefix: str = "sim", model: str = "a100",
              backfill_minutes: int = 0, sample_interval_s: float = 60.0, seed: int = 0) -> SimFleet:
        """Create, backfill and serve ``count`` nodes named ``{prefix}-{i:04d}``."""
        raise_fd_limit(count * 4 + 64)
        threading.stack_size(512 * 1024)  # a thousand idle threads: keep their stacks small
        nodes = []
        for i in range(count):
            node = make_node(f"{prefix}-{i:04d}", gpus=gpus, model=model, seed=seed + i,
                             sample=backfill_minutes <= 0)
            node.backfill(backfill_minutes)
            if backfill_minutes > 0:
                node.sampler.sample_once()  # a live latest sample (the current, unfinished minute)
            nodes.append(node)
        fleet = cls(nodes)
        for node in nodes:
            node.serve()
        if sample_interval_s > 0:
            fleet._sampler = threading.Thread(target=fleet._sample_loop, args=(sample_interval_s,),
                                              name="sim-sampler", daemon=True)
            fleet._sampler.start()
        return fleet

    def _sample_loop(self, interval_s: float) -> None:
        # Spread the nodes over the interval rather than sampling all at once.
        gap = interval_s / max(1, len(self.nodes))
        while not self._stop.wait(gap if self.nodes else interval_s):
            for node in self.nodes:
                if self._stop.wait(gap):
                    return
                with self._lock:
                    try:
                        node.sampler.sample_once()
                    except Exception as exc:  # keep the other nodes sampling
                        print(f"sim.fleet: sampling {node.name} failed: {exc}", file=sys.stderr)

    def add_minute(self) -> int:
        """Every node gets one more finished minute per GPU; returns records added."""
        with self._lock:
            return sum(node.add_minute() for node in self.nodes)

    def describe(self) -> list[dict[str, Any]]:
        return [{"name": n.name, "port": n.port, "url": n.url, "gpus": len(n.session.indices())}
                for n in self.nodes]

    def stop(self) -> None:
        """Stop sampling and serving (the servers shut down in parallel: each waits up to its select timeout)."""
        self._stop.set()
        if self._sampler is not None:
            self._sampler.join(timeout=5)
        closers = [threading.Thread(target=node.close, daemon=True) for node in self.nodes]
        for t in closers:
            t.start()
        for t in closers:
            t.join(timeout=10)


def raise_fd_limit(wanted: int) -> int:
    """Raise the soft open-files limit towards ``wanted`` (up to the hard limit); returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        return target
    return soft


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fleetmon.sim.fleet",
                                description="Serve many simulated fleetmon agents on 127.0.0.1 from one process.")
    p.add_argument("--nodes", type=int, default=125, help="number of simulated nodes (default 125)")
    p.add_argument("--gpus", type=int, default=8, help="GPUs per node (default 8)")
    p.add_argument("--model", default="a100", help="GPU model key of the scenarios (default a100)")
    p.add_argument("--prefix", default="sim", help="node name prefix (default sim): names are PREFIX-0000 …")
    p.add_argument("--seed", type=int, default=0, help="seed of the first node (UUIDs, noise)")
    p.add_argument("--backfill-minutes", type=int, default=0, metavar="N",
                   help="pre-fill each node's buffer with N finished minutes per GPU")
    p.add_argument("--sample-interval", type=float, default=60.0, metavar="SECONDS",
                   help="sample every node this often after the first sample (0 = never; default 60)")
    p.add_argument("--port-file", required=True, help="write the nodes and their ports here (JSON) once listening")
    p.add_argument("--control", action="store_true",
                   help="read commands on standard input ('minute'); answer 'ok N' on standard output")
    args = p.parse_args(argv)
    if not 1 <= args.nodes <= 5000 or not 1 <= args.gpus <= 64 or not 0 <= args.backfill_minutes <= 7200:
        p.error("--nodes must be 1..5000, --gpus 1..64 and --backfill-minutes 0..7200")
    t0 = time.monotonic()
    fleet = SimFleet.start(args.nodes, gpus=args.gpus, prefix=args.prefix, model=args.model,
                           backfill_minutes=args.backfill_minutes, sample_interval_s=args.sample_interval,
                           seed=args.seed)
    done = threading.Event()

    stop_on_signals(done)
    described = fleet.describe()
    doc = {"pid": os.getpid(), "startup_s": round(time.monotonic() - t0, 3), "nodes": described}
    tmp = Path(args.port_file + ".tmp")
    tmp.write_text(json.dumps(doc), encoding="utf-8")
    tmp.replace(args.port_file)
    if not args.control:
        for n in described:
            print(n["name"], n["url"], flush=True)
    else:
        def _commands() -> None:
            for line in sys.stdin:
                if line.strip() == "minute":
                    added = fleet.add_minute()
                    print(f"ok {added}", flush=True)
                elif line.strip():
                    print(f"error unknown command {line.strip()!r}", flush=True)
            done.set()  # stdin closed: the parent is gone

        threading.Thread(target=_commands, name="control", daemon=True).start()
    done.wait()
    fleet.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
