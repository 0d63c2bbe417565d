"""`fleetmon agent`: sample the node's GPUs and serve them over HTTP."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path
from typing import Any

from fleetmon.errors import KnownError, NvmlUnavailable

DEFAULT_PORT = 9414
DEFAULT_BIND = "127.0.0.1"
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}

log = logging.getLogger("fleetmon.agent")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bind", default=DEFAULT_BIND,
                   help=f"address to listen on (default {DEFAULT_BIND}; any other address needs --token-file)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT}; 0 = any free)")
    p.add_argument("--simulate", metavar="SCENARIO",
                   help="serve a simulated node instead of the real GPUs (see `fleetmon agent --list-scenarios`)")
    p.add_argument("--list-scenarios", action="store_true", help="list the simulated scenarios and exit")
    p.add_argument("--interval", type=float, default=5.0, metavar="SECONDS",
                   help="sampling interval (default 5)")
    p.add_argument("--buffer", metavar="FILE",
                   help="local record buffer (default $STATE_DIRECTORY or ~/.local/state/fleetmon/agent.db)")
    p.add_argument("--keep-days", type=float, default=8.0, help="keep buffered records this long (default 8)")
    p.add_argument("--max-buffer-mb", type=float, default=256.0, help="disk cap of the buffer (default 256 MB)")
    p.add_argument("--token-file", help="file holding the bearer token clients must send (mode 0600)")
    p.add_argument("--tls-cert", help="serve HTTPS with this certificate (PEM)")
    p.add_argument("--tls-key", help="private key for --tls-cert (PEM)")
    p.add_argument("--node-name", help="report this host name instead of the real one (simulations)")
    p.add_argument("--port-file", help="write the bound port to this file once listening (for tests and demo)")
    p.add_argument("-v", "--verbose", action="store_true", help="log more")


def read_token_file(path: str) -> str:
    """Read a bearer token; refuse a file readable by group or others."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise KnownError(f"cannot read token file {path}: {exc.strerror}") from exc
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KnownError(f"token file {path} is readable by group or others (mode {stat.S_IMODE(st.st_mode):04o});"
                         f" run: chmod 600 {path}")
    token = Path(path).read_text(encoding="utf-8").strip()
    if len(token) < 16:
        raise KnownError(f"token file {path} holds a token shorter than 16 characters")
    return token


def default_buffer_path() -> Path:
    state = os.environ.get("STATE_DIRECTORY")  # systemd StateDirectory=
    if state:
        return Path(state.split(":")[0]) / "agent.db"
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "fleetmon" / "agent.db"


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.list_scenarios:
        from fleetmon.agent import simnvml
        for name in simnvml.scenario_names():
            print(f"{name:24} {simnvml.describe(name)}")
        return 0
    if args.interval < 0.2 or args.interval > 3600:
        raise KnownError("--interval must be between 0.2 and 3600 seconds")
    token = None
    if args.token_file:
        token = read_token_file(args.token_file)
    elif args.bind not in _LOOPBACK:
        raise KnownError(f"refusing to listen on {args.bind} without authentication: "
                         "pass --token-file FILE (mode 0600), or bind 127.0.0.1")
    if bool(args.tls_cert) != bool(args.tls_key):
        raise KnownError("--tls-cert and --tls-key go together")

    from fleetmon.agent.buffer import Buffer
    from fleetmon.agent.nvml import open_nvml
    from fleetmon.agent.sampler import Sampler
    from fleetmon.agent.server import AgentState, make_server, serve_in_thread

    module: Any = None
    if args.simulate:
        from fleetmon.agent import simnvml
        try:
            simnvml.configure(args.simulate)
        except (KeyError, ValueError, OSError) as exc:
            raise KnownError(f"unknown or invalid scenario {args.simulate!r}: {exc}") from exc
        module = simnvml
    session = open_nvml(module)
    buffer_path = Path(args.buffer) if args.buffer else default_buffer_path()
    try:
        buffer = Buffer(buffer_path, keep_days=args.keep_days, max_bytes=int(args.max_buffer_mb * 1024 * 1024))
    except Exception as exc:
        raise KnownError(f"cannot open the buffer {buffer_path}: {exc}") from exc
    sampler = Sampler(session, buffer, interval_s=args.interval)
    started = time.time()
    node = session.node_info()
    if args.node_name:
        node = type(node)(**{**node.to_dict(), "hostname": args.node_name})

    from fleetmon.agent.xidwatch import XidWatcher
    watcher = XidWatcher(session, sampler.record_event, simulate=bool(args.simulate))
    node = type(node)(**{**node.to_dict(), "xid_source": watcher.source, "started_at": started})

    def inventory() -> list[Any]:
        return [session.inventory(i) for i in session.indices()]

    state = AgentState(node=lambda: node, inventory=inventory, sampler=sampler, buffer=buffer,
                       started_at=started, extra_health=lambda: {"xid_source": watcher.source})
    try:
        server = make_server(state, args.bind, args.port, token=token, tls_cert=args.tls_cert,
                             tls_key=args.tls_key)
    except OSError as exc:
        raise KnownError(f"cannot listen on {args.bind}:{args.port}: {exc.strerror or exc}") from exc
    port = server.server_address[1]
    stop = threading.Event()

    def _stop(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    sampler.sample_once()  # serve real data from the first request on
    sampler_thread = threading.Thread(target=sampler.run, args=(stop,), name="sampler", daemon=True)
    sampler_thread.start()
    watcher.start(stop)
    serve_in_thread(server)
    scheme = "https" if args.tls_cert else "http"
    print(f"fleetmon agent: serving {len(session.indices())} GPU(s) of {node.hostname} on "
          f"{scheme}://{args.bind}:{port}", file=sys.stderr, flush=True)
    if args.port_file:
        tmp = Path(args.port_file + ".tmp")
        tmp.write_text(str(port))
        tmp.replace(args.port_file)
    stop.wait()
    server.shutdown()
    sampler_thread.join(timeout=5)
    buffer.close()
    session.close()
    return 0


def main(args: argparse.Namespace) -> int:
    try:
        return run(args)
    except NvmlUnavailable as exc:
        print(f"fleetmon agent: {exc}", file=sys.stderr)
        return 2
