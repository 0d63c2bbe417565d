"""GUI benchmark: launch, GPU detail switches, range changes, event-loop stalls while polling, memory.

Usage:
    python benchmarks/bench_gui.py                      # 512 GPUs × 90 days, 1,000 simulated nodes polled
    python benchmarks/bench_gui.py --gpus 64 --days 14 --nodes 50 --poll-seconds 10   # a quick run

Runs offscreen (QT_QPA_PLATFORM=offscreen unless set). The database is the one
``benchmarks/bench_storage.py`` builds (same generator, same cache under
``--cache``; built on first use). Every figure is the median of ``--runs``
runs and printed beside its target:

* launch: a fresh process from its first line to the window shown with the
  fleet table populated (imports, database open, first read, first paint),
  from cached bytecode as an installed app starts (one unmeasured launch
  first writes the cache, even where PYTHONDONTWRITEBYTECODE is set);
* detail switch: selecting another GPU with the 90-day range chosen, until
  its plots are drawn and painted;
* range change: 24 h → 7 d → 30 d → 90 d → 1 y on one GPU, each until painted;
* stalls: the window collecting from ``--nodes`` simulated nodes (real agent
  code, processes of ``fleetmon.sim.fleet`` as in bench_collector.py) on a
  fresh database, its collector a child process as in `fleetmon gui --fleet`;
  a 10 ms QTimer records the longest gap of the event loop. Each run is a
  fresh process with one window, as the app runs (the simulated nodes are
  started once and shared); Baseline in the
  same run (interleaved runs): the collector in a thread of the window's
  process, as the app ran it before;
* memory: the app's RSS with the fleet table and a 90-day detail open.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

T_PROCESS = time.perf_counter()
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

TARGETS = {"launch_s": 1.5, "switch_ms": 150.0, "range_ms": 150.0, "stall_ms": 50.0}


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def bench_db(args: argparse.Namespace) -> Path:
    """The cached bench_storage database for these parameters (built if missing)."""
    import bench_storage as bs

    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / f"fleet-g{args.gpus}-d{args.days}-r{args.raw_days}-{bs.schema_key()}.db"
    if not (path.exists() and path.with_suffix(".json").exists()):
        print(f"building the benchmark database {path} (once) …", flush=True)
        fleet = bs.Fleet(args.gpus, bs.NOW - args.days * bs.DAY, args.days * 1440, seed=42)
        bs.build_db(path, fleet, args.days, args.raw_days, lambda s: print(s, flush=True))
    return path


def bench_settings(folder: Path) -> Any:
    """Window settings of the benchmark's own (default layout, the Fleet view first), never the user's.

    With the user's settings the measured view is whichever one was last open
    (e.g. Inspection, whose 1,000-node report is another workload), and
    closing the window would overwrite them.
    """
    from PySide6.QtCore import QSettings

    return QSettings(str(folder / "fleetmon-bench.ini"), QSettings.Format.IniFormat)


def child_launch(db: str) -> None:
    """One launch in this fresh process: print seconds from the process start to a populated, painted window."""
    from PySide6.QtWidgets import QApplication

    from ui.main_window import MainWindow

    app = QApplication(sys.argv[:1])
    window = MainWindow(db, refresh_s=600, settings=bench_settings(Path(tempfile.mkdtemp(prefix="fleetmon-bench-"))))
    done: list[float] = []

    def shown(n: int) -> None:
        app.processEvents()
        window.repaint()
        done.append(time.perf_counter())
        app.quit()
    window.rows_shown.connect(shown)
    window.show()
    app.exec()
    rows = window.model.rowCount()
    window.close()
    print(json.dumps({"launch_s": done[0] - T_PROCESS, "rows": rows}))


def _wait(app: Any, predicate: Any, timeout_s: float = 30.0) -> None:
    deadline = time.perf_counter() + timeout_s
    while not predicate():
        app.processEvents()
        if time.perf_counter() > deadline:
            raise SystemExit("timed out waiting for the window")
        time.sleep(0.0005)


def in_process(db: Path, runs: int, now: float) -> dict[str, Any]:
    """Detail switches, range changes and memory in one window on the benchmark database."""
    from PySide6.QtWidgets import QApplication

    from ui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    window = MainWindow(str(db), refresh_s=600, settings=bench_settings(Path(tempfile.mkdtemp(prefix="fleetmon-bench-"))))
    window.detail._now = lambda: now  # the benchmark fleet's data end at its fixed NOW
    window.show()
    shown: list[tuple[str, int]] = []
    window.history_shown.connect(lambda u, n: shown.append((u, n)))
    window.request_load()
    _wait(app, lambda: window.model.rowCount() > 0)
    n_rows = window.model.rowCount()

    def until_shown(action: Any) -> tuple[float, int]:
        before = len(shown)
        t0 = time.perf_counter()
        action()
        _wait(app, lambda: len(shown) > before)
        window.detail.repaint()
        app.processEvents()
        return (time.perf_counter() - t0) * 1000, shown[-1][1]

    window.detail.range_buttons.button(3).setChecked(True)  # 90 d
    until_shown(lambda: window.select_gpu(0))  # warm-up
    switch = []
    for i in range(runs):
        row = (i * 7919 + 13) % n_rows
        switch.append(until_shown(lambda r=row: window.select_gpu(r)))
    ranges: dict[int, list[float]] = {}
    for _ in range(runs):
        for idx in (0, 1, 2, 3, 4):
            ms, _points = until_shown(lambda i=idx: window.detail.set_range(i))
            ranges.setdefault(idx, []).append(ms)
    window.detail.set_range(3)
    _wait(app, lambda: window.detail.last is not None and 80 * 86400 < window.detail.last.until
          - window.detail.last.since < 100 * 86400)
    app.processEvents()
    mem = rss_mib()
    counts = window.detail.plot.point_counts()
    window.close()
    return {"rows": n_rows, "switch": switch, "ranges": ranges, "rss_mib": mem, "counts": counts}


def child_stall(spec: str) -> None:
    """One stall run in this fresh process (one window per process, as the app runs); prints its JSON."""
    from fleetmon.sim.fleet import raise_fd_limit

    args = json.loads(Path(spec).read_text())
    raise_fd_limit(len(args["nodes"]) * 2 + 256)
    print(json.dumps(stalls(args["nodes"], args["seconds"], args["interval"], in_process=args["in_process"])))


def stall_run(nodes: list[dict[str, Any]], seconds: float, interval: float, in_process: bool) -> dict[str, Any]:
    spec = Path(tempfile.mkdtemp(prefix="fleetmon-bench-stall-")) / "spec.json"
    spec.write_text(json.dumps({"nodes": nodes, "seconds": seconds, "interval": interval, "in_process": in_process}))
    out = subprocess.run([sys.executable, __file__, "--child-stall", str(spec)], capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"stall run failed: {out.stderr[-2000:]}")
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def stalls(nodes: list[dict[str, Any]], seconds: float, interval: float, *, in_process: bool = False
           ) -> dict[str, Any]:
    """The window collecting from simulated nodes; the longest event-loop gap seen by a 10 ms timer.

    The collector runs as `fleetmon gui --fleet` runs it: a child process
    (ui.collector_process). ``in_process`` runs it in a thread of the window's
    process instead, the design before (the baseline of the same run).
    """
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from fleetmon.collector.poller import Collector
    from fleetmon.fleet import load_fleet
    from storage.db import open_database
    from ui.bridge import Bridge
    from ui.collector_process import CollectorProcess
    from ui.main_window import MainWindow

    folder = Path(tempfile.mkdtemp(prefix="fleetmon-bench-gui-"))
    if True:
        fleet_file = folder / "fleet.toml"
        fleet_file.write_text("[fleet]\nname = \"bench\"\ntimeout_s = 10\nconcurrency = 64\n\n" + "".join(
            f'[[node]]\nname = "{n["name"]}"\nurl = "{n["url"]}"\n\n' for n in nodes), encoding="utf-8")
        db_path = folder / "gui.db"
        open_database(db_path).close()
        app = QApplication.instance() or QApplication(sys.argv[:1])
        cycles: list[int] = []
        collector: Any
        if in_process:
            collector = Collector(load_fleet(fleet_file), open_database(db_path), interval_s=interval)
            bridge = Bridge()
            collector.listeners.append(bridge.on_cycle)
            cycle_signal = bridge.cycle_finished
        else:
            collector = CollectorProcess(str(db_path), str(fleet_file), interval)
            cycle_signal = collector.cycle_finished
        window = MainWindow(str(db_path), refresh_s=2.0, settings=bench_settings(folder), collector=collector)
        cycle_signal.connect(window.on_cycle_finished)
        cycle_signal.connect(lambda polled, bad: cycles.append(polled))
        window.show()
        gaps: list[float] = []
        last = [time.perf_counter()]

        def tick() -> None:
            t = time.perf_counter()
            gaps.append((t - last[0]) * 1000)
            last[0] = t
        timer = QTimer()
        timer.setInterval(10)
        timer.timeout.connect(tick)
        timer.start()
        collector.start()
        settle = time.perf_counter() + 2.0  # the window's first show and layout are not polling
        while time.perf_counter() < settle:
            app.processEvents()
            time.sleep(0.001)
        gaps.clear()
        last[0] = time.perf_counter()
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            app.processEvents()
            time.sleep(0.001)
        timer.stop()
        collector.stop()
        if in_process:
            collector.db.close()
        rows = window.model.rowCount()
        window.close()
        window.deleteLater()
        app.processEvents()
    worst = max(gaps) - 10 if gaps else float("nan")
    return {"max_stall_ms": worst, "p99_ms": statistics.quantiles(gaps, n=100)[98] - 10 if len(gaps) > 100 else
            float("nan"), "cycles": len(cycles), "rows": rows, "ticks": len(gaps)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpus", type=int, default=512)
    ap.add_argument("--days", type=int, default=90)
    ap.add_argument("--raw-days", type=int, default=30)
    ap.add_argument("--runs", type=int, default=5, help="runs per figure (quote medians of 3 or more)")
    ap.add_argument("--nodes", type=int, default=1000, help="simulated nodes polled in the stall test (0: skip)")
    ap.add_argument("--procs", type=int, default=8, help="simulated-fleet processes")
    ap.add_argument("--node-gpus", type=int, default=8)
    ap.add_argument("--poll-seconds", type=float, default=30.0)
    ap.add_argument("--interval", type=float, default=5.0, help="collector interval in the stall test")
    ap.add_argument("--no-stall-baseline", dest="stall_baseline", action="store_false",
                    help="skip the baseline stall runs with the collector in the window's process")
    ap.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "fleetmon-bench"))
    ap.add_argument("--child-launch", metavar="DB", help=argparse.SUPPRESS)
    ap.add_argument("--child-stall", metavar="SPEC", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_launch:
        child_launch(args.child_launch)
        return 0
    if args.child_stall:
        child_stall(args.child_stall)
        return 0
    import bench_storage as bs

    args.raw_days = min(args.raw_days, args.days)
    runs = max(1, args.runs)
    db = bench_db(args)
    say = lambda s: print(s, flush=True)  # noqa: E731
    say(f"fleetmon GUI benchmark: {args.gpus} GPUs × {args.days} days ({db.name}), medians of {runs} runs, "
        f"{os.cpu_count()} CPUs, QT_QPA_PLATFORM={os.environ['QT_QPA_PLATFORM']}")
    if runs < 3:
        say("  (fewer than 3 runs: a check that the benchmark runs, not a measurement to quote)")

    # Launch as an installed app launches: from cached bytecode. PYTHONDONTWRITEBYTECODE (set on some
    # machines) would make every child compile the app's ~100 modules again (+0.3-0.5 s here); the first,
    # unmeasured launch writes the cache (__pycache__, git-ignored) and its figure is printed apart.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def launch() -> dict[str, Any]:
        out = subprocess.run([sys.executable, __file__, "--child-launch", str(db)], capture_output=True, text=True,
                             timeout=300, env=env)
        if out.returncode != 0:
            raise SystemExit(f"launch run failed: {out.stderr[-2000:]}")
        return dict(json.loads(out.stdout.strip().splitlines()[-1]))

    first = launch()
    launches = [launch() for _ in range(runs)]
    res = in_process(db, runs, float(bs.NOW))

    def line(label: str, value: float, unit: str, target: float | None, note: str = "") -> None:
        verdict = "" if target is None else ("ok" if value <= target else "MISSED") + f" (target ≤ {target:g} {unit})"
        say(f"  {label:<52} {value:>9.1f} {unit:<4} {verdict:<28} {note}")

    say("")
    line("launch → window shown, fleet table populated", statistics.median(x["launch_s"] for x in launches), "s",
         TARGETS["launch_s"], f"{launches[0]['rows']} GPUs; runs " + ", ".join(f"{x['launch_s']:.2f}" for x in launches)
         + f"; first launch (writes the bytecode cache) {first['launch_s']:.2f}")
    sw = [ms for ms, _ in res["switch"]]
    line("switch GPU detail, 90-day range", statistics.median(sw), "ms", TARGETS["switch_ms"],
         f"{res['switch'][0][1]} hourly points; runs " + ", ".join(f"{x:.0f}" for x in sw))
    for idx, label in enumerate(("24 h", "7 d", "30 d", "90 d", "1 y")):
        line(f"change range → {label}", statistics.median(res["ranges"][idx]), "ms", TARGETS["range_ms"])
    line("RSS with the fleet and a 90-day detail open", res["rss_mib"], "MiB", None,
         f"points drawn per panel: {res['counts']}")
    if args.nodes:
        from bench_collector import SimProcs
        from fleetmon.sim.fleet import raise_fd_limit

        modes = [False] + ([True] if args.stall_baseline else [])
        say(f"  polling {args.nodes} simulated nodes × {args.node_gpus} GPUs, {args.poll_seconds:g} s per run, "
            f"{runs} runs (collector in a child process every {args.interval:g} s, window refresh every 2 s)"
            + ("; baseline, interleaved: the collector in a thread of the window's process" if args.stall_baseline
               else "") + " …")
        raise_fd_limit(args.nodes * 2 + 256)
        sims = SimProcs(Path(tempfile.mkdtemp(prefix="fleetmon-bench-gui-sims-")), args.nodes, args.procs,
                        args.node_gpus, 4)
        found: dict[bool, list[dict[str, Any]]] = {m: [] for m in modes}
        try:
            for _ in range(runs):
                for mode in modes:  # interleaved, so that a noisy moment hits both
                    found[mode].append(stall_run(sims.nodes, args.poll_seconds, args.interval, mode))
        finally:
            sims.stop()
        for mode in modes:
            st = found[mode]
            label = ("longest stall, collector in the window's thread (before)" if mode
                     else "longest GUI event-loop stall while polling")
            line(label, statistics.median(x["max_stall_ms"] for x in st), "ms", None if mode else TARGETS["stall_ms"],
                 f"runs " + ", ".join(f"{x['max_stall_ms']:.0f}" for x in st)
                 + f"; p99 {statistics.median(x['p99_ms'] for x in st):.1f} ms; "
                 f"{statistics.median(x['cycles'] for x in st):.0f} cycles, {st[0]['rows']} GPU rows")
        if args.stall_baseline:
            ratio = (statistics.median(x["max_stall_ms"] for x in found[False])
                     / statistics.median(x["max_stall_ms"] for x in found[True]))
            say(f"  ratio child process / in-process collector: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
