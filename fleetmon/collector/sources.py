"""The collector's sources other than the agent: one HTTP scrape (dcgm-exporter) and a vendor tool over SSH.

:func:`fleetmon.collector.client.poll_node` looks the node's URL up in the source registry
(:data:`fleetmon.sources.SOURCES`) and fetches it by the entry's transport; this module holds what
is particular to the transports other than the agent's, so the client stays one place for HTTP,
limits and checks:

* :attr:`~fleetmon.sources.Transport.HTTP` (``dcgm+http(s)://host:9400/metrics``): the client
  fetches the body with its own session, timeouts, retries, size cap and gzip handling
  (``_Fetcher.get_body``); :func:`parse_body` reads it with the entry's parser.
* :attr:`~fleetmon.sources.Transport.SSH` (``ssh://[user@]host[:port]``): :func:`run_ssh` runs the
  system's OpenSSH client as an argument list (never a local shell; no fleet-file value is ever
  part of a command string)::

      ssh -o BatchMode=yes -o ConnectTimeout=N -o StrictHostKeyChecking=yes
          [-F ssh_config] [-p port] [-l user] -- host <the node's tool's constant command>

  The remote command is the node's ``tool``'s (:func:`fleetmon.sources.ssh_tools.remote_command`:
  ``nvidia-smi -q -x``, a constant ``sh -c`` script for amd-smi, npu-smi, hl-smi and ``auto``).
  BatchMode: no password or passphrase prompt, ever. StrictHostKeyChecking=yes:
  a host key that is not in a known_hosts file is an error ("Host key
  verification failed"), never accepted and never written. The user's own keys,
  agent and ``~/.ssh/config`` apply unless the fleet file names another config
  (``[fleet] ssh_config``, passed as ``-F``). ``--`` ends ssh's options, so even a
  host that got past :func:`~fleetmon.sources.source_of`'s checks could not be
  read as one. The whole command runs within ``DEADLINE_FACTOR × timeout_s``;
  past it ssh's process group is killed (so is what is left of it when ssh
  exits), and no wait is without a deadline. Both pipes are read as they come:
  standard output up to :data:`MAX_SSH_OUTPUT`, standard error's first
  :data:`MAX_STDERR` bytes kept and the rest dropped. A failure's reason is the
  first line of standard error (ssh's, or the remote command's), made printable.

Both give one instantaneous reading per poll and keep no buffer: no backfill,
no cursors; the node's status says so (:func:`fleetmon.sources.node_source`).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import subprocess
from dataclasses import replace

from fleetmon.collector.limits import MAX_BODY_BYTES, MAX_DCGM_SERIES, MAX_GPUS_PER_NODE
from fleetmon.i18n import N_, Text
from fleetmon.records import NodePoll
from fleetmon.sources import ReadLimits, SourceKind, SourceSpec, Transport, read_answer, source_type
from fleetmon.sources.capture import Capture, capture_poll
from fleetmon.sources.ssh_tools import AUTO, MARKER, NVIDIA_COMMAND, RemoteCommand, strip_markers, tool_label
from fleetmon.text import printable

__all__ = ["FetchFailed", "LIMITS", "MAX_SSH_OUTPUT", "REMOTE_COMMAND", "parse_body", "run_ssh",
           "source_poll", "ssh_argv"]

MAX_SSH_OUTPUT = MAX_BODY_BYTES
"""Largest tool output read (an 8-GPU ``nvidia-smi -q -x`` document is ≈ 100 KB, amd-smi static+metric of
8 MI300X ≈ 250 KB)."""
MAX_STDERR = 64 * 1024
"""Standard error kept for the reason (its first line); the rest is read and dropped."""
REMOTE_COMMAND = NVIDIA_COMMAND
"""``tool = "nvidia-smi"``'s command (:mod:`fleetmon.sources.ssh_tools` has every tool's): constant, never
built from the fleet file."""
LIMITS = ReadLimits(max_gpus=MAX_GPUS_PER_NODE, max_series=MAX_DCGM_SERIES)
"""The per-node limits the parsers apply while reading (a dcgm-exporter scrape stops at the first line past one)."""
SSH_PROGRAM = "ssh"
"""The OpenSSH client, found on PATH."""


class FetchFailed(Exception):
    """A source could not be read; the message is the node's one-line reason."""


def ssh_argv(spec: SourceSpec, timeout_s: float, config: str | None = None,
             remote: tuple[str, ...] = REMOTE_COMMAND) -> list[str]:
    """The OpenSSH client's argument list for one poll of ``spec`` (an ``ssh://`` source) running ``remote``
    (a constant of :mod:`fleetmon.sources.ssh_tools`)."""
    if source_type(spec.kind).transport is not Transport.SSH:
        raise ValueError(f"not an ssh source: {spec.url!r}")
    argv = [SSH_PROGRAM, "-o", "BatchMode=yes", "-o", f"ConnectTimeout={max(1, math.ceil(timeout_s))}",
            "-o", "StrictHostKeyChecking=yes"]
    if config:
        argv += ["-F", config]
    if spec.port is not None:
        argv += ["-p", str(spec.port)]
    if spec.user:
        argv += ["-l", spec.user]
    return argv + ["--", spec.host, *remote]


class _Output(asyncio.SubprocessProtocol):
    """What ssh writes, read as it comes: standard output up to a cap, standard error's first bytes.

    A protocol rather than the StreamReaders of ``create_subprocess_exec``: those pause reading
    when their buffer fills (a loop busy elsewhere, a stream nobody reads any more), and a paused
    pipe never reports its end, so ``Process.wait()``, which waits for the pipes too, never returned
    (issue 20). Here both pipes are always read; what is past a cap is dropped, so memory stays
    bounded and the remote side never blocks on a full pipe.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, out_cap: int, err_cap: int) -> None:
        self.out = bytearray()
        self.err = bytearray()
        self.out_cap = out_cap
        self.err_cap = err_cap
        self.exited: asyncio.Future[None] = loop.create_future()
        """Set when the process ended (reaped): its status is the transport's return code."""
        self.overflow: asyncio.Future[None] = loop.create_future()
        """Set when standard output passed ``out_cap``."""
        self.closed: asyncio.Future[None] = loop.create_future()
        """Set when both pipes reached their end (every process holding them is gone)."""
        self._open = {1, 2}

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            if self.overflow.done():
                return
            if len(self.out) + len(data) > self.out_cap:
                self.overflow.set_result(None)
                return
            self.out += data
        elif len(self.err) < self.err_cap:  # the rest of standard error is read and dropped
            self.err += data[: self.err_cap - len(self.err)]

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._open.discard(fd)
        if not self._open and not self.closed.done():
            self.closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


PIPE_GRACE_S = 1.0
"""After ssh exited (and what was left of its process group was killed): how long its pipes may take to end."""
KILL_WAIT_S = 2.0
"""After the kill: how long to wait for the process to be reaped before the poll gives up on it."""


def _first_line(data: bytes) -> str:
    """The first line with words in it (ssh frames its changed-host-key warning in ``@`` lines); when the
    output ends in ssh's verdict ("Host key verification failed."), that is added. Control characters
    (a remote banner's ESC sequences, NUL) are written as visible escapes: the line is stored, logged and
    printed."""
    lines = [x for x in (" ".join(raw.strip("@ \t\r").split()) for raw in data.decode("utf-8", "replace").splitlines())
             if x]
    if not lines:
        return ""
    first = printable(lines[0], 300)
    if len(lines) > 1 and "verification failed" in lines[-1] and lines[-1] not in lines[0]:
        first += f" ({printable(lines[-1], 100)})"
    return first


async def run_ssh(spec: SourceSpec, timeout_s: float, deadline_s: float, config: str | None = None,
                  command: RemoteCommand | None = None) -> bytes:
    """Run the node's tool (``command``; None: ``nvidia-smi -q -x``) through OpenSSH; its standard output.

    Every wait has a deadline: the command gets ``deadline_s`` to exit; then its pipes get
    :data:`PIPE_GRACE_S` to end. Whatever happens (a timeout, an oversize answer, a cancelled poll,
    ssh's exit), ssh's process group is killed, so nothing it started outlives the poll, and the
    pipes are closed on this side.

    Raises:
        FetchFailed: ssh missing, a timeout (the process is killed), an oversize
            answer, output held open after ssh exited, or a non-zero exit (the
            reason: standard error's first line).
    """
    command = command or RemoteCommand("nvidia-smi", REMOTE_COMMAND)
    argv = ssh_argv(spec, timeout_s, config, command.argv)
    loop = asyncio.get_running_loop()
    start = asyncio.ensure_future(loop.subprocess_exec(
        lambda: _Output(loop, MAX_SSH_OUTPUT, MAX_STDERR), *argv, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True))
    try:
        transport, out = await asyncio.shield(start)
    except asyncio.CancelledError:
        # The poll was cancelled while ssh started. asyncio's own clean-up of a cancelled start kills ssh
        # alone, not what it started already: let the start finish (a loop turn or two), stop its group.
        with contextlib.suppress(Exception):
            transport, out = await start
            _kill(transport.get_pid())
            try:
                await asyncio.wait([out.exited], timeout=KILL_WAIT_S)
            finally:
                transport.close()
        raise
    except FileNotFoundError:
        raise FetchFailed(Text(N_("ssh: the OpenSSH client (ssh) is not installed on this workstation"))) from None
    except OSError as exc:
        raise FetchFailed(Text(N_("ssh: cannot start it ({reason})"), reason=exc.strerror or str(exc))) from None
    pid = transport.get_pid()
    try:
        try:
            async with asyncio.timeout(deadline_s):
                await asyncio.wait([out.exited, out.overflow], return_when=asyncio.FIRST_COMPLETED)
                if out.overflow.done():  # stop it now, not at the deadline
                    raise FetchFailed(_too_large(command, bytes(out.out[:256])))
        except TimeoutError:
            raise FetchFailed(Text(N_("ssh: no answer within {seconds} s (the ssh command was killed)"),
                                   seconds=f"{deadline_s:g}")) from None
        # ssh exited: anything still running in its session (a background child, a ProxyCommand) goes,
        # and with it the last writers of the pipes. One that left the session is out of reach: its
        # pipes are closed on this side after a short grace, and the poll fails.
        _kill(pid)
        try:
            async with asyncio.timeout(PIPE_GRACE_S):
                await out.closed
        except TimeoutError:
            raise FetchFailed(Text(N_("ssh: exited, but a process it started kept its output open "
                                      "(not read past {seconds} s)"), seconds=f"{PIPE_GRACE_S:g}")) from None
        if out.overflow.done():
            raise FetchFailed(_too_large(command, bytes(out.out[:256])))
    finally:
        try:
            if not out.exited.done():
                _kill(pid)
                # Bounded: SIGKILL ends it at once unless the kernel holds it (a hung mount); then the
                # child watcher reaps it later, and the poll does not wait for that. Waited for before
                # close(): close() polls a running child itself and could reap it under the child
                # watcher's nose ("Unknown child process pid …" in the log).
                await asyncio.wait([out.exited], timeout=KILL_WAIT_S)
        finally:
            transport.close()  # closes the pipes on this side (and kills ssh itself, were it still there)
    rc = transport.get_returncode()
    err, data = bytes(out.err), bytes(out.out)
    if rc != 0:
        raise FetchFailed(_failure(command, rc, data, err))
    return data


def _failure(command: RemoteCommand, rc: int | None, data: bytes, err: bytes) -> str:
    """The one-line reason of a non-zero exit: ssh's own (255), no tool on the node (auto's 127), a tool that
    is not on the node's PATH (127), or the tool's status and the first line it wrote."""
    reason = _first_line(err) or _first_line(strip_markers(data)) or Text(N_("no message"))
    if rc == 255:
        return Text(N_("ssh: {reason}"), reason=reason)
    label = tool_label(command.tool, data[:256])
    if command.tool == AUTO and data.startswith(f"{MARKER} none".encode()):
        return Text(N_("no vendor tool on the node: {reason}"), reason=reason)
    if rc == 127:
        return Text(N_("{tool} is not on the node's login PATH (status 127): {reason}"), tool=label, reason=reason)
    return Text(N_("{tool} exited with status {status}: {reason}"), tool=label, status=rc, reason=reason)


def _too_large(command: RemoteCommand, head: bytes) -> Text:
    """The reason for a tool whose output passed :data:`MAX_SSH_OUTPUT`."""
    return Text(N_("ssh: {tool}'s output is larger than {limit} bytes"), tool=tool_label(command.tool, head),
                limit=f"{MAX_SSH_OUTPUT:,}")


def _kill(pid: int | None) -> None:
    """Kill ssh and anything it started in its own session (a ProxyCommand, a background child): its
    process group, which ``start_new_session`` made ``pid``'s."""
    if pid is None:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def parse_body(kind: SourceKind, body: bytes, tool: str = AUTO) -> Capture:
    """The capture in one source's answer, read by the kind's registry entry (:data:`fleetmon.sources.SOURCES`).

    A dcgm-exporter scrape is read within the per-node limits (:data:`MAX_GPUS_PER_NODE`
    GPUs, :data:`MAX_DCGM_SERIES` series): the reading stops at the first line past one.
    An ssh answer is the node's ``tool``'s output (``auto``: the tool its first line names;
    ``nvidia-smi -q -x`` when it names none). CPU-bound: :func:`fleetmon.collector.client.poll_node`
    runs it off the event loop.

    Raises:
        SourceError: not a document of the kind, or past a limit (the parsers' messages), or a kind
            that is not polled.
    """
    return read_answer(kind, body, tool, LIMITS)


def source_poll(capture: Capture, name: str, url: str, group: str | None, now: float,
                duration_ms: float) -> NodePoll:
    """The NodePoll of one reading: every sample stamped with the poll time, stored as a one-sample minute.

    The samples take the collector's clock (a dcgm-exporter scrape carries no time; an
    nvidia-smi timestamp has no time zone). No cursors, no buffer id: nothing to resume.
    """
    poll = capture_poll(capture.with_time(now), name, url, now, group=group)
    return replace(poll, duration_ms=duration_ms)
