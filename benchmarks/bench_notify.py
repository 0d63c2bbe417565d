"""Benchmark: a collection cycle's time with a dead notification destination configured (issue 24).

Serves ``--nodes`` simulated agents (``--gpus`` GPUs each) in this process on
127.0.0.1 and runs the real collector over them with four fleet files that
differ only in their ``[[notify]]`` table: none; a destination that accepts the
connection and never answers (Apprise's read timeout raised to 300 s: the send
hangs for the whole run); one that refuses connections; one that answers 500.
Each round loses one more GPU (so every health pass opens a critical finding
and queues a notification) and times ``run_cycle`` plus a forced health pass
(``maintain(force_health=True)``: where the notifier is fed), and the
notifier's own share of it (:meth:`Notifier.after_health`, the queueing: the
only part on the collector's thread). Medians of ``--runs`` rounds per setup;
on a loaded machine the cycle's figures drift by more than the notifier's share.

Run: ``python benchmarks/bench_notify.py`` (50 nodes × 8 GPUs, 7 rounds).
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _silent_server() -> tuple[int, Any]:
    """A TCP server that accepts and never answers (a hanging destination)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    return int(listener.getsockname()[1]), listener


class _Fail(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def _refused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    from fleetmon.collector.poller import Collector
    from fleetmon.fleet import parse_fleet
    from fleetmon.sim.fleet import make_node
    from storage.db import open_database

    hang_port, hang = _silent_server()
    fail = ThreadingHTTPServer(("127.0.0.1", 0), _Fail)
    threading.Thread(target=fail.serve_forever, daemon=True).start()
    setups = {
        "no [[notify]]": "",
        "hanging destination": f"json://127.0.0.1:{hang_port}/x?rto=300",
        "refused connections": f"json://127.0.0.1:{_refused_port()}/x",
        "answers 500": f"json://127.0.0.1:{fail.server_address[1]}/x",
        "no [[notify]], again": "",  # the baseline once more: the machine's drift over the run
    }
    print(f"{args.nodes} nodes x {args.gpus} GPUs, {args.runs} rounds per setup (cycle + health pass, median)")
    for label, url in setups.items():
        nodes = [make_node(f"n{i:03d}", gpus=args.gpus) for i in range(args.nodes)]
        for node in nodes:
            node.serve(0.1)
            node.backfill(1)
        text = "\n".join(f'[[node]]\nname = "{n.name}"\nurl = "{n.url}"\n' for n in nodes)
        if url:
            text += f'\n[[notify]]\nname = "bench"\nurl = "{url}"\ndigest = false\n'
        with tempfile.TemporaryDirectory() as tmp:
            db = open_database(Path(tmp) / "fleet.db")
            collector = Collector(parse_fleet(text), db)
            queueing: list[float] = []
            if collector.notifier is not None:
                collector.notifier.start()
                feed = collector.notifier.after_health

                def timed(*a: Any, feed: Any = feed) -> int:
                    t0 = time.perf_counter()
                    try:
                        return int(feed(*a))
                    finally:
                        queueing.append(time.perf_counter() - t0)

                collector.notifier.after_health = timed  # type: ignore[method-assign]
            collector.run_cycle(force=True)
            collector.maintain(force_health=True)
            times = []
            for r in range(args.runs):
                node = nodes[r % len(nodes)]
                node.nvml.set_lost(r // len(nodes))
                node.sampler.sample_once()
                t0 = time.perf_counter()
                collector.run_cycle(force=True)
                collector.maintain(force_health=True)
                times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            collector.stop()
            stop_s = time.perf_counter() - t0
            queued = len(db.execute("SELECT 1 FROM notify_outbox").fetchall())
            db.close()
        for node in nodes:
            node.close()
        notifier = (f"; the notifier's share (queueing) median {statistics.median(queueing) * 1000:.1f} ms, "
                    f"max {max(queueing) * 1000:.1f} ms" if queueing else "")
        print(f"  {label:<24} cycle+health median {statistics.median(times):.3f} s  "
              f"(min {min(times):.3f}, max {max(times):.3f}){notifier}; stop {stop_s:.2f} s; outbox rows {queued}")
    hang.close()
    fail.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
