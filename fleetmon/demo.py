"""The demo fleet: simulated agents on 127.0.0.1 with their fleet file, in a throw-away folder.

`fleetmon demo` (``fleetmon.cli.demo``) runs a collector and, unless
``--no-gui``, the GUI (``ui.demo``) on it; this core part never starts the UI.

The agents are real `fleetmon agent --simulate …` subprocesses on 127.0.0.1
(free ports). Each is started with a parent-death signal, so none outlives
the demo even if the demo itself is killed. By default each agent first
simulates its last two hours (``--backfill-minutes``), as if the workstation
had been off: the collector backfills that history through the real path, so
plots and findings have something to show from the first minute.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from fleetmon.errors import KnownError
from fleetmon.i18n import N_, Text
from fleetmon.i18n import gettext as _

# (node name, scenario): RTX 3090/4090, V100, A100, H100 and T4; five nodes on driver 535, three on 550.
DEMO_NODES: tuple[tuple[str, str], ...] = (
    ("dgx-a100-01", "demo-dgx-a100"),
    ("rig-4090-02", "demo-rig-4090"),
    ("h100-node-12", "demo-h100"),
    ("rig-3090-01", "demo-geforce-3090"),
    ("v100-legacy-01", "v100*4+retired_pages@0+derate@3;driver=535.161.08"),
    ("t4-infer-01", "t4*4;driver=535.161.08"),
    ("rig-3090-02", "rtx3090*4;driver=550.54.15;persistence=0"),
    ("a100-pcie-03", "a100pcie*2;driver=535.161.08"),
)

DEMO_VENDOR_NODES: tuple[tuple[str, str, str], ...] = (
    ("mi100-srv-01", "demo-amd-mi100", "amd-mi100"),
    ("ascend-srv-01", "demo-ascend-910b", "ascend-910b"),
    ("dcu-k100-01", "demo-hygon-k100", "hygon-k100"),
)
"""(node name, scenario, group): the other vendors' boxes that join the NVIDIA nodes (``fleetmon.sim.vendors``):
an MI100 whose GPU 1 gets an uncorrectable ECC error in its memory block (UMC), an Ascend 910B whose NPU 3's
health turns Warning with an error code, a Hygon K100 DCU running hot. The generated month is NVIDIA's: these
boxes have their backfill (``--backfill``, also with ``--history-days``) and live history only."""

VENDOR_TOOL_BACKFILL_MINUTES = 15
"""At most this much backfill for a vendor box read through a command-line tool's twin (npu-smi, hy-smi): each
simulated sample runs the twin as a subprocess (about 0.2 s each on two busy cores: 2 h at 30 s steps took
~50-60 s), so a longer backfill would hold up the demo's start."""


@dataclass
class AgentProcess:
    name: str
    scenario: str
    proc: subprocess.Popen[bytes]
    port: int
    url: str


def _pdeathsig() -> None:
    """In the child: get SIGTERM when the parent dies (Linux prctl PR_SET_PDEATHSIG)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)
    except OSError:
        pass


def start_agents(folder: Path, nodes: list[tuple[str, str]], *, interval_s: float = 2.0,
                 timeout_s: float = 30.0, extra_args: list[str] | None = None,
                 node_args: dict[str, list[str]] | None = None) -> list[AgentProcess]:
    """Start one simulated agent subprocess per (name, scenario); wait until all listen.

    ``extra_args`` go to every agent, ``node_args[name]`` after them to that node's (the last of a flag wins).

    Raises:
        KnownError: an agent exited or did not start listening in time (the
            others are stopped).
    """
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    started: list[tuple[str, str, subprocess.Popen[bytes], Path, Path]] = []
    for name, scenario in nodes:
        port_file = folder / f"{name}.port"
        port_file.unlink(missing_ok=True)
        log_file = folder / f"{name}.log"
        cmd = [sys.executable, "-m", "fleetmon", "agent", "--simulate", scenario, "--port", "0",
               "--port-file", str(port_file), "--buffer", str(folder / f"{name}.agent.db"),
               "--node-name", name, "--interval", str(interval_s), *(extra_args or []),
               *(node_args or {}).get(name, [])]
        with open(log_file, "wb") as log:
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    preexec_fn=_pdeathsig if sys.platform.startswith("linux") else None)
        started.append((name, scenario, proc, port_file, log_file))
    agents: list[AgentProcess] = []
    deadline = time.monotonic() + timeout_s
    try:
        for name, scenario, proc, port_file, log_file in started:
            while not port_file.exists():
                if proc.poll() is not None:
                    raise KnownError(Text(N_("simulated agent {name} exited with status {status}: {log}"), name=name,
                                          status=proc.returncode,
                                          log=" ".join(log_file.read_text(errors='replace').split())[-400:]))
                if time.monotonic() > deadline:
                    raise KnownError(Text(N_("simulated agent {name} did not start within {seconds:g} s"), name=name,
                                          seconds=timeout_s))
                time.sleep(0.05)
            port = int(port_file.read_text())
            agents.append(AgentProcess(name, scenario, proc, port, f"http://127.0.0.1:{port}"))
    except BaseException:
        stop_agents([AgentProcess(n, s, p, 0, "") for n, s, p, _, _ in started])
        raise
    return agents


def stop_agents(agents: list[AgentProcess], timeout_s: float = 5.0) -> None:
    """Terminate agents, then kill those that do not exit in time."""
    for a in agents:
        if a.proc.poll() is None:
            a.proc.terminate()
    deadline = time.monotonic() + timeout_s
    for a in agents:
        try:
            a.proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            a.proc.kill()
            a.proc.wait()


def write_fleet(path: Path, agents: list[AgentProcess], *, interval_s: float,
                groups: dict[str, str] | None = None) -> None:
    lines = ["# fleet of simulated agents written by `fleetmon demo`", "[fleet]", 'name = "demo"',
             f"poll_interval_s = {max(2, int(round(interval_s)))}", ""]
    for a in agents:
        lines += ["[[node]]", f'name = "{a.name}"', f'url = "{a.url}"']
        if groups and a.name in groups:
            lines.append(f'group = "{groups[a.name]}"')
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")


def demo_nodes(count: int) -> list[tuple[str, str]]:
    """``count`` (name, scenario) pairs: ``DEMO_NODES`` round-robin, repeats suffixed ``-N``."""
    return [(DEMO_NODES[i % len(DEMO_NODES)][0] + ("" if i < len(DEMO_NODES) else f"-{i}"),
             DEMO_NODES[i % len(DEMO_NODES)][1]) for i in range(count)]


@dataclass
class Demo:
    """A running demo fleet in a temporary folder: its agents, fleet file and database path.

    The database itself is created by whoever collects into it (the GUI's
    collector or the headless one). ``close`` (or leaving the ``with`` block)
    stops the agents and removes the folder unless ``keep``.
    """

    folder: Path
    agents: list[AgentProcess]
    fleet_path: Path
    db_path: Path
    keep: bool = False
    epoch: float | None = None
    """With history: the Unix time the generated history ends and the agents' stories are anchored at."""

    def close(self) -> None:
        stop_agents(self.agents)
        _remove_folder(self.folder, self.keep)

    def __enter__(self) -> Demo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_demo(nodes: int, *, interval_s: float, backfill_minutes: int = 0, keep: bool = False,
               history: bool = False, seed: int | None = None, db_path: Path | None = None,
               vendors: bool = True) -> Demo:
    """Start ``nodes`` simulated agents in a fresh temporary folder and write their fleet file.

    With ``history``, the nodes are the demo fleet of
    :mod:`fleetmon.sim.demo_history` (groups, stories; the same cards as the
    history :func:`prepare_history` writes, for ``seed``) and no backfill is
    simulated. Otherwise each agent first simulates its last
    ``backfill_minutes`` (0 = none). The agents sample every ``interval_s``
    (at most 5 s), the fleet file polls every ``interval_s``. ``db_path``
    (kept afterwards) replaces the temporary folder's database. With
    ``vendors``, the boxes of :data:`DEMO_VENDOR_NODES` (AMD, Ascend, Hygon)
    join the ``nodes`` NVIDIA nodes, in groups of their own, without
    generated history: they backfill ``backfill_minutes`` also with
    ``history`` (at most :data:`VENDOR_TOOL_BACKFILL_MINUTES` for those read
    through a tool's twin).

    Raises:
        KnownError: ``nodes`` is not 1..64, or an agent did not start (then
            nothing is left running and the folder is removed unless ``keep``).
    """
    if not 1 <= nodes <= 64:
        raise KnownError(Text(N_("--nodes must be between 1 and 64")))
    folder = Path(tempfile.mkdtemp(prefix="fleetmon-demo-"))
    groups: dict[str, str] = {}
    epoch: float | None = None
    vendor_backfill = backfill_minutes  # the vendor boxes have no generated history: they backfill in both modes
    if history:
        from fleetmon.sim.demo_history import DEFAULT_SEED, demo_fleet

        epoch = story_epoch(db_path)
        fleet = demo_fleet(nodes)
        specs = [(n.name, n.scenario(DEFAULT_SEED if seed is None else seed, epoch)) for n in fleet]
        groups = {n.name: n.group for n in fleet}
        backfill_minutes = 0
    else:
        specs = demo_nodes(nodes)
    node_args: dict[str, list[str]] = {}
    if vendors:
        from fleetmon.sim.vendors import resolve

        for name, scenario, group in DEMO_VENDOR_NODES:
            specs.append((name, scenario))
            groups[name] = group
            minutes = vendor_backfill if resolve(scenario)["backend"] == "amdsmi" else \
                min(vendor_backfill, VENDOR_TOOL_BACKFILL_MINUTES)  # a tool twin is a subprocess per sample
            if minutes:
                node_args[name] = ["--backfill-minutes", str(minutes), "--backfill-step", "30"]
    try:
        print("fleetmon demo: " + _("starting {count} simulated agents in {folder}").format(count=len(specs), folder=folder),
              file=sys.stderr, flush=True)
        extra = ["--backfill-minutes", str(backfill_minutes), "--backfill-step", "30"] if backfill_minutes else []
        # a backfill of many agents shares the cores: give them time (2 h on 24 agents took > 30 s on two cores)
        agents = start_agents(folder, specs, interval_s=min(interval_s, 5.0), extra_args=extra, node_args=node_args,
                              timeout_s=120.0 if backfill_minutes or node_args else 30.0)
    except BaseException:
        _remove_folder(folder, keep)
        raise
    demo = Demo(folder, agents, folder / "fleet.toml", db_path or folder / "fleet.db", keep, epoch)
    try:
        write_fleet(demo.fleet_path, agents, interval_s=interval_s, groups=groups)
    except BaseException:
        demo.close()
        raise
    return demo


def story_epoch(db_path: Path | None, now: float | None = None) -> float:
    """The Unix time the demo's history ends and its stories are anchored at (to the minute).

    A kept database's own epoch (stored when its history was generated), so
    the agents continue its stories as they stood; otherwise ``now`` (default
    the clock): the history about to be generated ends where the agents,
    started next, take over.
    """
    if db_path is not None and db_path.exists():
        from fleetmon.sim.demo_history import stored_epoch
        from storage.db import open_database

        db = open_database(db_path)
        try:
            found = stored_epoch(db)
        finally:
            db.close()
        if found is not None:
            return found
    return float(int(time.time() if now is None else now) // 60 * 60)


def prepare_history(db_path: Path, *, nodes: int, days: float, seed: int | None,
                    progress: Callable[[int, int], None] | None = None, now: float | None = None) -> bool:
    """Write the demo fleet's history into ``db_path`` unless it already holds a fleet; True if written.

    The history ends at ``now`` (default the clock; the demo passes its
    :attr:`Demo.epoch`). An existing database with nodes is reused as it is
    (its history then continues from the live agents).
    """
    from fleetmon.sim.demo_history import DEFAULT_SEED, generate_history
    from storage.db import open_database
    from storage.queries import nodes as stored_nodes

    db = open_database(db_path)
    try:
        if stored_nodes(db):
            return False
        now = time.time() if now is None else now
        generate_history(db, nodes=nodes, days=days, seed=DEFAULT_SEED if seed is None else seed,
                         progress=progress, now=now)
        # The long-run derating view reads stored daily ratios: compute them for the generated days.
        from fleetmon.assess import replay_ledger, store_derating_history
        store_derating_history(db, now, now - days * 86400.0)
        # The findings ledger a collector would have kept through the month: the stories' faults are
        # judged from their onset, not forgotten when they leave a window.
        replay_ledger(db, now - days * 86400.0, now)
        return True
    finally:
        db.close()


def text_progress(label: str = N_("generating history")) -> Callable[[int, int], None]:
    """A progress callback drawing one line on stderr when it is a terminal (nothing otherwise)."""
    tty = sys.stderr.isatty()

    def show(done: int, total: int) -> None:
        if not tty:
            return
        width = 30
        filled = width * done // max(total, 1)
        end = "\n" if done >= total else ""
        print(f"\rfleetmon demo: {_(label)} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}",
              end=end, file=sys.stderr, flush=True)

    return show


def _remove_folder(folder: Path, keep: bool) -> None:
    if keep:
        print("fleetmon demo: " + _("kept {folder}").format(folder=folder), file=sys.stderr)
    else:
        shutil.rmtree(folder, ignore_errors=True)
