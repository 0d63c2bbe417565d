"""A real Slurm cluster on localhost for the Slurm tests: munged, slurmctld and one slurmd per node.

Debian's packages (``munge``, ``slurmctld``, ``slurmd``, ``slurm-client``; packaging/system-deps.sh
test). Everything lives in one temporary folder: the MUNGE key and socket (named in slurm.conf's
``AuthInfo``, so the system's munged is never used), the generated slurm.conf, the state, spool, pid
and log files. Each node's slurmd runs as ``slurmd -D -N NAME`` with its own port from the node's
``Port=`` (free ports picked at start; Slurm cannot take port 0). The daemons run in the foreground as
our children, so teardown ends exactly them. As root (CI containers); ``SlurmUser=root``.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

MUNGED = "/usr/sbin/munged"
SLURMCTLD = "/usr/sbin/slurmctld"
SLURMD = "/usr/sbin/slurmd"


def available() -> str | None:
    """None when the cluster can start, else why not (for pytest.skip)."""
    missing = [p for p in (MUNGED, SLURMCTLD, SLURMD) if not Path(p).exists()]
    missing += [c for c in ("sinfo", "scontrol") if shutil.which(c) is None]
    if missing:
        return ("Slurm is not installed (munge, slurmctld, slurmd, slurm-client): packaging/system-deps.sh test; "
                f"missing {', '.join(missing)}")
    if os.geteuid() != 0:
        return "the Slurm test cluster runs its daemons as root (slurmd); not root here"
    return None


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


class SlurmCluster:
    """munged + slurmctld + a slurmd per name in ``nodes``; :attr:`conf` is the slurm.conf to use."""

    def __init__(self, root: Path, nodes: tuple[str, ...] = ("gpu-a", "gpu-b", "gpu-c", "gpu-d")) -> None:
        self.root = root
        self.nodes = nodes
        self.conf = root / "slurm.conf"
        self.munge_socket = root / "munge" / "munge.sock"
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        (root / "munge").mkdir(mode=0o700)
        for sub in ("state", "spool", "log"):
            (root / sub).mkdir()
        key = root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        ports = _free_ports(2 + len(nodes))
        self.ctld_port = ports[0]
        lines = [
            "ClusterName=fleetmontest", "SlurmctldHost=localhost", f"SlurmctldPort={ports[0]}",
            f"SlurmdPort={ports[1]}", "SlurmUser=root", "SlurmdUser=root", "AuthType=auth/munge",
            f"AuthInfo=socket={self.munge_socket}", "CredType=cred/munge", f"StateSaveLocation={root / 'state'}",
            f"SlurmdSpoolDir={root / 'spool'}/%n", f"SlurmctldPidFile={root}/slurmctld.pid",
            f"SlurmdPidFile={root}/slurmd-%n.pid", f"SlurmctldLogFile={root / 'log'}/slurmctld.log",
            f"SlurmdLogFile={root / 'log'}/slurmd-%n.log", "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none", "SchedulerType=sched/builtin",
            "SelectType=select/cons_tres", "ReturnToService=2", "SlurmdParameters=config_overrides", "MpiDefault=none",
            "MessageTimeout=5",
        ]
        for name, port in zip(nodes, ports[2:]):
            (root / "spool" / name).mkdir()
            lines.append(f"NodeName={name} NodeHostname=localhost Port={port} CPUs=1 RealMemory=100 State=UNKNOWN")
        lines.append("PartitionName=main Nodes=ALL Default=YES State=UP")
        self.conf.write_text("\n".join(lines) + "\n")

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def _spawn(self, key: str, argv: list[str]) -> None:
        log = open(self.root / "log" / f"{key}.out", "ab")  # noqa: SIM115 - kept open for the child's life
        self.procs[key] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=self.env,
                                           start_new_session=True)
        log.close()

    def start(self, deadline_s: float = 60.0) -> None:
        m = self.root / "munge"
        self._spawn("munged", [MUNGED, "-F", "--force", f"--key-file={m / 'munge.key'}",
                               f"--socket={self.munge_socket}", f"--pid-file={m / 'munged.pid'}",
                               f"--log-file={self.root / 'log' / 'munged.log'}", f"--seed-file={m / 'seed'}"])
        self._wait(lambda: self.munge_socket.exists(), deadline_s, "munged did not create its socket")
        self.start_ctld(deadline_s)
        for name in self.nodes:
            self._spawn(f"slurmd-{name}", [SLURMD, "-D", "-f", str(self.conf), "-N", name])
        self._wait(self._all_idle, deadline_s, "the slurmd's did not register as idle")

    def start_ctld(self, deadline_s: float = 60.0) -> None:
        self._spawn("slurmctld", [SLURMCTLD, "-D", "-f", str(self.conf)])
        self._wait(self._ctld_answers, deadline_s, "slurmctld did not answer")
        if any(k.startswith("slurmd-") for k in self.procs):  # a restart: the nodes register again
            self._wait(self._all_idle, deadline_s, "the slurmd's did not register again as idle")

    def stop_ctld(self) -> None:
        """Stop slurmctld (SIGTERM, then SIGKILL): the controller is down."""
        p = self.procs.pop("slurmctld")
        p.send_signal(signal.SIGCONT)
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)

    def pause_ctld(self, paused: bool) -> None:
        """SIGSTOP (a controller that accepts and never answers) or SIGCONT slurmctld."""
        self.procs["slurmctld"].send_signal(signal.SIGSTOP if paused else signal.SIGCONT)

    def _ctld_answers(self) -> bool:
        try:
            done = subprocess.run(["scontrol", "ping"], env=self.env, capture_output=True, timeout=10, check=False)
        except subprocess.TimeoutExpired:
            return False
        return b"is UP" in done.stdout

    def _all_idle(self) -> bool:
        done = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], env=self.env, capture_output=True, timeout=15,
                              check=False)
        states = dict(line.split() for line in done.stdout.decode().splitlines() if line.strip())
        return all(states.get(n) == "idle" for n in self.nodes)

    def _wait(self, ready: Callable[[], bool], deadline_s: float, what: str) -> None:
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            for key, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{key} exited ({p.returncode}); see {self.root / 'log'}")
            if ready():
                return
            time.sleep(0.1)
        raise RuntimeError(f"{what} within {deadline_s:g} s; see {self.root / 'log'}")

    def show_node(self, name: str) -> str:
        """``scontrol show node NAME --oneliner``: what an operator checks after a drain."""
        return subprocess.run(["scontrol", "show", "node", name, "--oneliner"], env=self.env, capture_output=True,
                              timeout=20, check=True).stdout.decode()

    def scontrol(self, *args: str) -> None:
        done = subprocess.run(["scontrol", *args], env=self.env, capture_output=True, timeout=20, check=False)
        if done.returncode:
            raise RuntimeError(f"scontrol {' '.join(args)}: {done.stderr.decode().strip()}")

    def close(self) -> None:
        ended = [self.procs.pop(key) for key in list(self.procs)[::-1]]
        for p in ended:
            p.send_signal(signal.SIGCONT)
            p.terminate()
        for p in ended:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)


def start_cluster(folder: Callable[[], Path], attempts: int = 3) -> SlurmCluster:
    """A started :class:`SlurmCluster` in a new ``folder()``. Slurm cannot take port 0: the ports are picked free
    and closed again before the daemons bind them, and another test process may take one in between (seen in a
    fresh-clone run: "Unable to bind listen port …: Address already in use"). That case alone is tried again,
    on new ports; any other failure is raised at once."""
    for attempt in range(attempts):
        cluster = SlurmCluster(folder())
        try:
            cluster.start()
            return cluster
        except RuntimeError:
            cluster.close()
            logs = "".join(p.read_text(errors="replace") for p in (cluster.root / "log").glob("*"))
            if "Address already in use" not in logs or attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")
