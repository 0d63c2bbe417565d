"""`fleetmon agent`: sample the node's GPUs and serve them over HTTP.

Runs without root. NVML answers an unprivileged user for everything the agent
reads (the device nodes /dev/nvidia* are world-readable by default, or group
``video``/``render`` on hardened hosts). The kernel log needs read access to
/dev/kmsg (group ``adm`` or ``systemd-journal`` for journald); without it the
agent runs on NVML's Xid events alone and says so in ``xid_source``. See
packaging/fleetmon-agent.service.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import ssl
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from fleetmon.errors import KnownError, NvmlUnavailable
from fleetmon.i18n import N_, Text, localized, message_of
from fleetmon.i18n import gettext as _
from fleetmon.stopping import stop_on_signals
from fleetmon.tokens import read_token_file

DEFAULT_PORT = 9414
DEFAULT_BIND = "127.0.0.1"
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}

log = logging.getLogger("fleetmon.agent")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bind", default=DEFAULT_BIND,
                   help=_("address to listen on (default {bind}; any other address needs --token-file)").format(
                       bind=DEFAULT_BIND))
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=_("TCP port (default {port}; 0 = any free)").format(port=DEFAULT_PORT))
    p.add_argument("--simulate", metavar="SCENARIO",
                   help=_("serve a simulated node instead of the real GPUs (see `fleetmon agent --list-scenarios`)"))
    p.add_argument("--list-scenarios", action="store_true", help=_("list the simulated scenarios and exit"))
    p.add_argument("--backend", default="auto", metavar="NAME",
                   help=_("the device library or tool to read: auto (the first the node has, in the order of "
                        "`--list-backends`), or a backend's name (default auto)"))
    p.add_argument("--list-backends", action="store_true",
                   help=_("list the device backends, what each needs, and whether this node has it; then exit"))
    p.add_argument("--interval", type=float, default=5.0, metavar="SECONDS",
                   help=_("sampling interval (default 5)"))
    p.add_argument("--buffer", metavar="FILE",
                   help=_("local record buffer (default $STATE_DIRECTORY/agent.db or ~/.local/state/fleetmon/agent.db)"))
    p.add_argument("--keep-days", type=float, default=8.0,
                   help=_("keep buffered records this long (default 8, at least 7)"))
    p.add_argument("--max-buffer-mb", type=float, default=256.0,
                   help=_("disk cap of the buffer in MiB (default 256: about 19 days of 8 GPUs)"))
    p.add_argument("--token-file", help=_("file holding the bearer token clients must send (mode 0600)"))
    p.add_argument("--tls-cert", help=_("serve HTTPS with this certificate (PEM)"))
    p.add_argument("--tls-key", help=_("private key for --tls-cert (PEM)"))
    p.add_argument("--http-timeout", type=float, default=10.0, metavar="SECONDS",
                   help=_("drop a client that sends nothing for this long (default 10)"))
    p.add_argument("--collector-address", action="append", default=[], metavar="IP",
                   help=_("the collector's address: under a flood of connections it keeps a reserved slot "
                        "(repeatable; without it the slot goes to requests with a valid token)"))
    p.add_argument("--node-name", help=_("report this host name instead of the real one (simulations; with "
                                       "--simulate it also seeds the simulated cards, so nodes running one "
                                       "scenario hold distinct GPUs: UUIDs, serials, noise)"))
    p.add_argument("--port-file", help=_("write the bound port to this file once listening (for tests and demo)"))
    p.add_argument("--backfill-minutes", type=float, default=0.0, metavar="N",
                   help=_("with --simulate: before serving, simulate the last N minutes through the real sampler "
                        "(a clock fast-forwarded from now - N minutes to now, no sleeping), so the buffer "
                        "already holds N minutes of history; faults with onset 0 are active from its start. "
                        "Then sampling goes on live (default 0: none; at most 10080)"))
    p.add_argument("--backfill-step", type=float, default=15.0, metavar="SECONDS",
                   help=_("simulated sampling interval of --backfill-minutes (default 15; 1 to 60)"))
    p.add_argument("-v", "--verbose", action="store_true", help=_("log more"))


def default_buffer_path() -> Path:
    state = os.environ.get("STATE_DIRECTORY")  # systemd StateDirectory=
    if state:
        return Path(state.split(":")[0]) / "agent.db"
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "fleetmon" / "agent.db"


def _check_args(args: argparse.Namespace) -> str | None:
    """Validate options before anything starts; returns the token (or None)."""
    if not 0.2 <= args.interval <= 3600:  # also refuses nan
        raise KnownError(Text(N_("--interval must be between 0.2 and 3600 seconds")))
    if not args.keep_days >= 7:  # also refuses nan
        raise KnownError(Text(N_("--keep-days must be at least 7")))
    if not args.max_buffer_mb >= 16:  # also refuses nan
        raise KnownError(Text(N_("--max-buffer-mb must be at least 16")))
    if not 0.5 <= args.http_timeout <= 600:
        raise KnownError(Text(N_("--http-timeout must be between 0.5 and 600 seconds")))
    token = None
    if args.token_file:
        token = read_token_file(args.token_file)
    elif args.bind not in _LOOPBACK:
        raise KnownError(Text(N_("refusing to listen on {bind} without authentication: pass --token-file FILE "
                                 "(mode 0600), or bind 127.0.0.1"), bind=args.bind))
    if bool(args.tls_cert) != bool(args.tls_key):
        raise KnownError(Text(N_("--tls-cert and --tls-key go together")))
    backfill = getattr(args, "backfill_minutes", 0.0) or 0.0
    if backfill:
        if not args.simulate:
            raise KnownError(Text(N_("--backfill-minutes works only with --simulate (real GPUs have no past to "
                                     "replay)")))
        if not 0 < backfill <= 10080:
            raise KnownError(Text(N_("--backfill-minutes must be between 0 and 10080 (7 days)")))
        if backfill * 60 > args.keep_days * 86400:
            raise KnownError(Text(N_("--backfill-minutes must fit in --keep-days")))
    if not 1 <= getattr(args, "backfill_step", 15.0) <= 60:
        raise KnownError(Text(N_("--backfill-step must be between 1 and 60 seconds")))
    return token


class BackfillClock:
    """A clock that stands where it is set while backfilling, then follows the wall clock.

    The simulated NVML, the sampler and the Xid events all read it, so a
    backfill produces the same records a live agent would have, only faster.
    """

    def __init__(self, start: float) -> None:
        self.t = float(start)
        self.live = False

    def __call__(self) -> float:
        return time.time() if self.live else self.t


def backfill(agent: RunningAgent, clock: BackfillClock, step_s: float = 15.0,
             until: Callable[[], float] = time.time) -> int:
    """Fast-forward ``clock`` to ``until()`` in steps of ``step_s``, sampling at each; returns the steps.

    Xid events of the simulation are drained at each step through an event set
    registered at the start (the live watcher registers only afterwards), so
    the buffer holds them with their simulated time. Leaves ``clock`` live.
    """
    from fleetmon.agent.xidwatch import xid_event

    events = agent.session.xid_events()
    events.register(timeout_s=None)  # a lost GPU stays unregistered: its Xid came before

    def drain() -> None:
        for notice in events.drain():
            agent.sampler.record_event(xid_event(notice, clock()))

    steps = 0
    try:
        drain()
        while clock.t + step_s < until():
            clock.t += step_s
            drain()
            agent.sampler.sample_once()
            steps += 1
    finally:
        clock.live = True
        drain()
        events.close()
    return steps


class RunningAgent:
    """An agent assembled in this process: session, buffer, sampler, Xid watcher, HTTP server.

    Built by :func:`start_agent`; ``fleetmon agent`` is one of these, and
    tests and the collector's simulations run many in one process.

    Attributes:
        url: base URL of the HTTP server (``http://127.0.0.1:PORT``).
        stop: set it (or call :meth:`close`) to end the sampling loop.
    """

    def __init__(self, *, session: Any, buffer: Any, sampler: Any, watcher: Any, server: Any, state: Any,
                 scheme: str) -> None:
        self.session = session
        self.buffer = buffer
        self.sampler = sampler
        self.watcher = watcher
        self.server = server
        self.state = state
        self.stop = threading.Event()
        host, port = server.server_address[:2]
        self.port = int(port)
        self.url = f"{scheme}://{'[' + host + ']' if ':' in host else host}:{self.port}"
        self._threads: list[threading.Thread] = []
        self._closed = False

    def start_loop(self) -> None:
        """Sample at the interval in a background thread until :meth:`close`."""
        t = threading.Thread(target=self.sampler.run, args=(self.stop,), name="sampler", daemon=True)
        t.start()
        self._threads.append(t)

    def close(self) -> None:
        """Stop sampling and serving; close the buffer and NVML. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()
        for t in self._threads:
            t.join(timeout=5)
        self._threads = []
        self.watcher.close()
        self.buffer.close()
        self.session.close()


def start_agent(module: Any = None, *, buffer: Any, bind: str = DEFAULT_BIND, port: int = 0,
                interval_s: float = 5.0, read_timeout_s: float | None = None,
                clock: Callable[[], float] = time.time, token: str | None = None,
                tls_cert: str | None = None, tls_key: str | None = None, request_timeout_s: float = 10.0,
                node_name: str | None = None, simulate: bool = False, kernel_log: Any = None,
                keep_days: float = 8.0, max_bytes: int = 256 * 1024 * 1024, loop: bool = True,
                watch_xid: bool = True, inventory_wait_s: float = 2.0,
                poll_interval_s: float = 0.5,
                before_serve: Callable[[RunningAgent], Any] | None = None,
                http_limits: Any = None, open_backend: Callable[..., Any] | None = None) -> RunningAgent:
    """Open the device backend and the buffer, take a first sample and start serving.

    Args:
        module: the pynvml API from :func:`fleetmon.agent.nvml.load_nvml` (None: the real pynvml), when
            ``open_backend`` is None.
        open_backend: opens the device backend (:class:`fleetmon.agent.backend.Backend`), called with the
            keywords ``known_inventory`` and ``inventory_wait_s`` (a :attr:`BackendSpec.open` with its other
            arguments bound); None: NVML through ``module``.
        buffer: a Buffer, or a path for one (created with ``keep_days``/``max_bytes``).
        bind, port: where to listen (port 0: any free port).
        interval_s, read_timeout_s, clock: passed to the Sampler.
        token, tls_cert, tls_key, request_timeout_s: passed to make_server.
        node_name: host name to report instead of the real one.
        simulate: the node is simulated (the host's kernel log is not read).
        kernel_log: a KernelLog to read Xids from instead of /dev/kmsg/journald.
        loop: start the sampling thread (False: call ``sampler.sample_once()`` yourself).
        watch_xid: start the Xid watcher threads.
        inventory_wait_s: how long startup waits for the GPUs' inventory.
        poll_interval_s: how often the HTTP server checks for shutdown.
        before_serve: called with the agent after its first sample, before the
            sampling loop, the Xid watcher and the server start (a backfill).
        http_limits: a server.HttpLimits (connection caps, head deadline, the collector's slot).

    Raises:
        NvmlUnavailable: NVML cannot start.
        BufferLocked: another agent holds the buffer file.
        KnownError: the buffer cannot be opened, the address not bound, TLS files not loaded.
    """
    from fleetmon import __version__
    from fleetmon.agent.buffer import Buffer, BufferLocked
    from fleetmon.agent.nvml import open_nvml
    from fleetmon.agent.sampler import Sampler
    from fleetmon.agent.server import AgentState, make_server, serve_in_thread
    from fleetmon.agent.xidwatch import XidWatcher
    from fleetmon.records import Event, NodeInfo

    if not isinstance(buffer, Buffer):
        try:
            buffer = Buffer(buffer, keep_days=keep_days, max_bytes=max_bytes, exclusive=True)
        except BufferLocked:
            raise
        except Exception as exc:
            raise KnownError(Text(N_("cannot open the buffer {path}: {error}"), path=str(buffer),
                                  error=str(exc))) from exc
    try:
        host = node_name or socket.gethostname()
        buffer.claim_node(host)  # another host's buffer goes aside before its inventory is used
        if open_backend is None:
            session = open_nvml(module, known_inventory=buffer.load_inventory(), inventory_wait_s=inventory_wait_s)
        else:
            session = open_backend(known_inventory=buffer.load_inventory(), inventory_wait_s=inventory_wait_s)
        buffer.claim_node(host, [session.inventory(i).uuid for i in session.indices()
                                 if session.inventory(i).values.get("inventory_source") != "previous_run"])
    except BaseException:
        buffer.close()
        raise
    sampler = Sampler(session, buffer, interval_s=interval_s, read_timeout_s=read_timeout_s, clock=clock)
    started = clock()
    watcher = XidWatcher(session, sampler.record_event, simulate=simulate, kernel_log=kernel_log, clock=clock)

    def node() -> NodeInfo:
        info = session.node_info()
        values = dict(info.values)
        hostname = node_name or info.hostname
        values["hostname"] = hostname
        return NodeInfo(hostname=hostname, agent_version=info.agent_version, values=values, status=info.status,
                        xid_source=watcher.source, started_at=started)

    def inventory() -> list[Any]:
        return [session.inventory(i) for i in session.indices()]

    state = AgentState(node=node, inventory=inventory, sampler=sampler, buffer=buffer, started_at=started,
                       extra_health=lambda: {"xid_source": watcher.source, "xid": watcher.status_dict()})
    try:
        server = make_server(state, bind, port, token=token, tls_cert=tls_cert, tls_key=tls_key,
                             request_timeout_s=request_timeout_s, limits=http_limits)
    except (ssl.SSLError, OSError) as exc:
        watcher.close()
        buffer.close()
        session.close()
        if isinstance(exc, ssl.SSLError):
            raise KnownError(Text(N_("cannot load --tls-cert/--tls-key: {error}"), error=str(exc))) from exc
        raise KnownError(Text(N_("cannot listen on {bind}:{port}: {error}"), bind=bind, port=port,
                              error=str(exc.strerror or exc))) from exc
    agent = RunningAgent(session=session, buffer=buffer, sampler=sampler, watcher=watcher, server=server,
                         state=state, scheme="https" if tls_cert else "http")
    buffer.append_event(Event(seq=0, ts=started, kind="agent_start", message=f"fleetmon agent {__version__} started",
                              data={"version": __version__, "buffer_id": buffer.buffer_id,
                                    "gpus": len(session.indices()), "xid_source": watcher.source}))
    sampler.sample_once()  # serve real data from the first request on (hung GPUs do not delay it)
    if before_serve is not None:
        try:
            before_serve(agent)
        except BaseException:
            agent.close()
            raise
    if loop:
        agent.start_loop()
    if watch_xid:
        watcher.start(agent.stop)
    serve_in_thread(server, poll_interval_s=poll_interval_s)
    return agent


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.list_scenarios:
        from fleetmon.sim import scenarios, vendors
        for name in scenarios.scenario_names():
            print(f"{name:24} {scenarios.describe(name)}")
        for name in vendors.scenario_names():
            print(f"{name:24} {vendors.describe(name)}")
        return 0
    if args.list_backends:
        from fleetmon.agent.backend import BACKENDS, backend_names

        backend_names()
        for spec in BACKENDS.values():
            why = spec.probe()
            state = _("available") if why is None else _("not here: {why}").format(why=localized(why))
            print(f"{spec.name:14} {spec.vendor:9} {state}\n{'':25}" + _("needs {what}").format(what=_(spec.needs)))
        return 0
    token = _check_args(args)
    from fleetmon.agent.server import HttpLimits, parse_addresses
    try:
        limits = HttpLimits(collector_addresses=parse_addresses(args.collector_address))
    except ValueError as exc:
        raise KnownError(Text(N_("--collector-address: {error}"), error=str(exc))) from exc
    clock: Callable[[], float] = time.time
    before_serve = None
    if args.simulate:
        if args.backfill_minutes:
            clock = fill = BackfillClock(time.time() - args.backfill_minutes * 60)
            step = args.backfill_step

            def before_serve(agent: RunningAgent) -> None:
                t0 = time.monotonic()
                steps = backfill(agent, fill, step)
                log.info("backfilled %g minutes in %d steps (%.1f s)", args.backfill_minutes, steps,
                         time.monotonic() - t0)

    from fleetmon.agent.backend import choose_backend

    name = args.backend
    if args.simulate and name == "auto":
        from fleetmon.sim import vendors

        # a scenario names its backend only when it is another vendor's (fleetmon.sim.vendors)
        try:
            name = vendors.resolve(args.simulate)["backend"] if vendors.is_vendor_scenario(args.simulate) else "nvml"
        except (KeyError, ValueError) as exc:
            raise KnownError(Text(N_("invalid scenario {name}: {error}"), name=repr(args.simulate),
                                  error=str(exc))) from exc
    spec = choose_backend(name)

    def open_backend(**kw: Any) -> Any:
        try:  # one scenario on many nodes: the node name gives distinct cards per node
            return spec.open(simulate=args.simulate or None, clock=clock, node_name=args.node_name or None, **kw)
        except (KeyError, ValueError, OSError) as exc:
            detail = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc  # str(KeyError) adds quotes
            raise KnownError(Text(N_("unknown or invalid scenario {name}: {error}"), name=repr(args.simulate),
                                  error=str(detail))) from exc

    agent = start_agent(open_backend=open_backend, buffer=Path(args.buffer) if args.buffer else default_buffer_path(),
                        bind=args.bind, port=args.port, interval_s=args.interval, token=token,
                        tls_cert=args.tls_cert, tls_key=args.tls_key, request_timeout_s=args.http_timeout,
                        node_name=args.node_name, simulate=bool(args.simulate), keep_days=args.keep_days,
                        max_bytes=int(args.max_buffer_mb * 1024 * 1024), clock=clock,
                        before_serve=before_serve, http_limits=limits)

    stop_on_signals(agent.stop)
    print("fleetmon agent: " + _("serving {count} device(s) of {node} through {backend} on {url}; Xid source: "
                                 "{source}").format(count=len(agent.session.indices()), node=agent.state.node().hostname,
                                                    backend=spec.name, url=agent.url, source=agent.watcher.source),
          file=sys.stderr, flush=True)
    if args.port_file:
        tmp = Path(args.port_file + ".tmp")
        tmp.write_text(str(agent.port))
        tmp.replace(args.port_file)
    agent.stop.wait()
    agent.close()
    return 0


def main(args: argparse.Namespace) -> int:
    from fleetmon.agent.buffer import BufferLocked
    try:
        return run(args)
    except (NvmlUnavailable, BufferLocked) as exc:  # BackendUnavailable is an NvmlUnavailable
        print(f"fleetmon agent: {message_of(exc)}", file=sys.stderr)
        return 2
