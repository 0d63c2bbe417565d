"""A real OpenSSH server on 127.0.0.1 for the ssh source's tests, with a fake ``nvidia-smi`` on its PATH.

Everything lives in one temporary folder: the server's host key and config, the
client's key, ``known_hosts`` and ``ssh_config`` (passed as ``ssh -F``), so the
user's ``~/.ssh`` is never read or written. The server runs as the current user
(root in CI containers: then ``/run/sshd``, its privilege-separation folder, is
created). ``nvidia-smi`` prints ``document``; writing ``sleep`` or ``fail`` to
:attr:`SshServer.mode` makes it hang or fail like a node without a driver; ``big`` prints 17 MB.

``nodes`` (name → a folder of fake tools) makes the one server several nodes: each name gets a
port of its own whose sessions have as their PATH that folder and a folder of links to /usr/bin's and
/bin's programs less the GPU vendors' tools (:data:`VENDOR_TOOLS`), so a real vendor tool on the
test machine is never found (``Match LocalPort`` + ``SetEnv``); one sshd plays an AMD, an Ascend and
a Gaudi node at once (:meth:`SshServer.url_for`).
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"
VENDOR_TOOLS = frozenset({"nvidia-smi", "amd-smi", "rocm-smi", "hy-smi", "npu-smi", "hl-smi", "mthreads-gmi",
                          "xpu-smi"})
"""Programs the ``nodes``' sessions never find on the test machine (only their own fakes)."""


def available() -> str | None:
    """None when the test can run, else why not (for pytest.skip)."""
    if not Path(SSHD).exists() or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        return "OpenSSH (openssh-server, openssh-client) is not installed: packaging/system-deps.sh test"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True,
                   stdout=subprocess.DEVNULL)


class SshServer:
    """sshd on 127.0.0.1:``port`` accepting ``client_key``; :attr:`ssh_config` trusts its host key."""

    def __init__(self, root: Path, document: Path, nodes: dict[str, Path] | None = None) -> None:
        self.root = root
        self.user = getpass.getuser()
        self.port = _free_port()
        self.ports = {name: _free_port() for name in (nodes or {})}
        basics = root / "basics"
        basics.mkdir()
        for folder in (Path("/usr/bin"), Path("/bin")):
            for program in sorted(folder.iterdir()) if folder.is_dir() else ():
                link = basics / program.name
                if program.name not in VENDOR_TOOLS and not link.exists() and not link.is_symlink():
                    link.symlink_to(program)
        bin_dir = root / "bin"
        bin_dir.mkdir()
        self.mode = root / "mode"
        self.mode.write_text("ok")
        fake = bin_dir / "nvidia-smi"
        fake.write_text(
            "#!/bin/sh\n"
            f'mode=$(cat "{self.mode}")\n'
            'case "$mode" in\n'
            "  sleep) exec sleep 8 ;;\n"
            "  big) exec head -c 17000000 /dev/zero ;;\n"
            "  fail) echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\"; "
            "exit 9 ;;\n"
            "esac\n"
            '[ "$*" = "-q -x" ] || { echo "fake nvidia-smi: unexpected arguments: $*" >&2; exit 2; }\n'
            f'exec cat "{document}"\n')
        fake.chmod(0o755)
        self.host_key = root / "host_ed25519"
        self.client_key = root / "id_ed25519"
        _keygen(self.host_key)
        _keygen(self.client_key)
        (root / "authorized_keys").write_text((root / "id_ed25519.pub").read_text())
        self.known_hosts = root / "known_hosts"
        host_pub = (root / "host_ed25519.pub").read_text().split()
        self.known_hosts.write_text("".join(f"[127.0.0.1]:{port} {host_pub[0]} {host_pub[1]}\n"
                                            for port in (self.port, *self.ports.values())))
        self.ssh_config = self.client_config("ssh_config", self.known_hosts)
        sshd_config = root / "sshd_config"
        sshd_config.write_text("\n".join([
            "ListenAddress 127.0.0.1",
            f"AuthorizedKeysFile {root / 'authorized_keys'}",
            "StrictModes no",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "PermitRootLogin prohibit-password",
            f"PidFile {root / 'sshd.pid'}",
            f"SetEnv PATH={bin_dir}:/usr/bin:/bin",
            "LogLevel ERROR",
        ] + [line for name, port in self.ports.items()
             for line in (f"Match LocalPort {port}", f"  SetEnv PATH={(nodes or {})[name]}:{basics}")]) + "\n")
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        ports = [arg for port in (self.port, *self.ports.values()) for arg in ("-p", str(port))]
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(sshd_config), *ports,
                                      "-h", str(self.host_key)],
                                     stdout=subprocess.DEVNULL, stderr=open(root / "sshd.log", "wb"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd exited: {(root / 'sshd.log').read_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("sshd did not start listening")

    def client_config(self, name: str, known_hosts: Path) -> Path:
        """An ``ssh -F`` file: this server's client key, ``known_hosts`` as the only host key list."""
        path = self.root / name
        path.write_text("\n".join([
            "Host *",
            f"  IdentityFile {self.client_key}",
            "  IdentitiesOnly yes",
            f"  UserKnownHostsFile {known_hosts}",
            "  GlobalKnownHostsFile /dev/null",
            "  PasswordAuthentication no",
            "  LogLevel ERROR",
        ]) + "\n")
        return path

    @property
    def url(self) -> str:
        return f"ssh://{self.user}@127.0.0.1:{self.port}"

    def url_for(self, node: str) -> str:
        """The URL of one of ``nodes``: its own port."""
        return f"ssh://{self.user}@127.0.0.1:{self.ports[node]}"

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
