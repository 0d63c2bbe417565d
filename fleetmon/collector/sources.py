"""The collector's sources other than the agent: dcgm-exporter over HTTP and ``nvidia-smi -q -x`` over SSH.

:func:`fleetmon.collector.client.poll_node` dispatches on the node's URL
(:func:`fleetmon.sources.source_of`); this module holds what is particular to
each source, so the client stays one place for HTTP, limits and checks:

* ``dcgm+http(s)://host:9400/metrics``: the client fetches the scrape with its
  own session, timeouts, retries, size cap and gzip handling
  (``_Fetcher.get_body``); :func:`parse_body` reads it here.
* ``ssh://[user@]host[:port]``: :func:`run_ssh` runs the system's OpenSSH client
  as an argument list (never a shell; no fleet-file value is ever part of a
  command string)::

      ssh -o BatchMode=yes -o ConnectTimeout=N -o StrictHostKeyChecking=yes
          [-F ssh_config] [-p port] [-l user] -- host nvidia-smi -q -x

  BatchMode: no password or passphrase prompt, ever. StrictHostKeyChecking=yes:
  a host key that is not in a known_hosts file is an error ("Host key
  verification failed"), never accepted and never written. The user's own keys,
  agent and ``~/.ssh/config`` apply unless the fleet file names another config
  (``[fleet] ssh_config``, passed as ``-F``). ``--`` ends ssh's options, so even a
  host that got past :func:`~fleetmon.sources.source_of`'s checks could not be
  read as one. The whole command runs within ``DEADLINE_FACTOR × timeout_s``;
  past it the process is killed. Standard output is capped at
  :data:`MAX_SSH_OUTPUT`; a failure's reason is the first line of standard
  error (ssh's, or the remote command's).

Both give one instantaneous reading per poll and keep no buffer: no backfill,
no cursors; the node's status says so (:func:`fleetmon.sources.node_source`).
"""

from __future__ import annotations

import asyncio
import math
import os
import signal
from dataclasses import replace

from fleetmon.collector.limits import MAX_BODY_BYTES, MAX_DCGM_SERIES, MAX_GPUS_PER_NODE
from fleetmon.records import NodePoll
from fleetmon.sources import SourceError, SourceKind, SourceSpec
from fleetmon.sources.capture import Capture, capture_poll

__all__ = ["FetchFailed", "MAX_SSH_OUTPUT", "REMOTE_COMMAND", "parse_body", "run_ssh", "source_poll", "ssh_argv"]

MAX_SSH_OUTPUT = MAX_BODY_BYTES
"""Largest ``nvidia-smi -q -x`` output read (an 8-GPU document is ≈ 100 KB)."""
MAX_STDERR = 64 * 1024
REMOTE_COMMAND = ("nvidia-smi", "-q", "-x")
"""What runs on the node: constant, never built from the fleet file."""
SSH_PROGRAM = "ssh"
"""The OpenSSH client, found on PATH."""


class FetchFailed(Exception):
    """A source could not be read; the message is the node's one-line reason."""


def ssh_argv(spec: SourceSpec, timeout_s: float, config: str | None = None) -> list[str]:
    """The OpenSSH client's argument list for one poll of ``spec`` (an ``ssh://`` source)."""
    if spec.kind is not SourceKind.SSH:
        raise ValueError(f"not an ssh source: {spec.url!r}")
    argv = [SSH_PROGRAM, "-o", "BatchMode=yes", "-o", f"ConnectTimeout={max(1, math.ceil(timeout_s))}",
            "-o", "StrictHostKeyChecking=yes"]
    if config:
        argv += ["-F", config]
    if spec.port is not None:
        argv += ["-p", str(spec.port)]
    if spec.user:
        argv += ["-l", spec.user]
    return argv + ["--", spec.host, *REMOTE_COMMAND]


async def _read_capped(stream: asyncio.StreamReader | None, cap: int) -> tuple[bytes, bool]:
    """(what the stream gave up to ``cap`` bytes, whether it had more)."""
    if stream is None:
        return b"", False
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(64 * 1024):
        size += len(chunk)
        if size > cap:
            return b"".join(chunks), True
        chunks.append(chunk)
    return b"".join(chunks), False


def _first_line(data: bytes) -> str:
    """The first line with words in it (ssh frames its changed-host-key warning in ``@`` lines); when the
    output ends in ssh's verdict ("Host key verification failed."), that is added."""
    lines = [x for x in (" ".join(raw.strip("@ \t\r").split()) for raw in data.decode("utf-8", "replace").splitlines())
             if x]
    if not lines:
        return ""
    first = lines[0][:300]
    if len(lines) > 1 and "verification failed" in lines[-1] and lines[-1] not in first:
        first += f" ({lines[-1][:100]})"
    return first


async def run_ssh(spec: SourceSpec, timeout_s: float, deadline_s: float, config: str | None = None) -> bytes:
    """Run ``nvidia-smi -q -x`` on the node through OpenSSH; its standard output.

    Raises:
        FetchFailed: ssh missing, a timeout (the process is killed), an oversize
            answer, or a non-zero exit (the reason: standard error's first line).
    """
    argv = ssh_argv(spec, timeout_s, config)
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True)
    except FileNotFoundError:
        raise FetchFailed("ssh: the OpenSSH client (ssh) is not installed on this workstation") from None
    except OSError as exc:
        raise FetchFailed(f"ssh: cannot start it ({exc.strerror or exc})") from None
    errors = asyncio.ensure_future(_read_capped(proc.stderr, MAX_STDERR))
    try:
        async with asyncio.timeout(deadline_s):
            out, too_big = await _read_capped(proc.stdout, MAX_SSH_OUTPUT)
            if too_big:  # stop it now: it would block on a pipe nobody reads until the deadline
                raise FetchFailed(f"ssh: nvidia-smi's output is larger than {MAX_SSH_OUTPUT:,} bytes")
            err, _ = await errors
            rc = await proc.wait()
    except TimeoutError:
        raise FetchFailed(f"ssh: no answer within {deadline_s:g} s (the ssh command was killed)") from None
    finally:
        if proc.returncode is None:
            _kill(proc)
            await proc.wait()
        if not errors.done():
            errors.cancel()
    if rc != 0:
        reason = _first_line(err) or _first_line(out) or "no message"
        what = "ssh" if rc == 255 else f"nvidia-smi exited with status {rc}"
        raise FetchFailed(f"{what}: {reason}")
    return out


def _kill(proc: asyncio.subprocess.Process) -> None:
    """Kill ssh and anything it started (a ProxyCommand from the user's config): its own session."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass


def parse_body(kind: SourceKind, body: bytes) -> Capture:
    """The capture in one source's answer.

    A dcgm-exporter scrape is read within the per-node limits (:data:`MAX_GPUS_PER_NODE`
    GPUs, :data:`MAX_DCGM_SERIES` series): the reading stops at the first line past one.
    CPU-bound: :func:`fleetmon.collector.client.poll_node` runs it off the event loop.

    Raises:
        SourceError: not a document of the kind, or past a limit (the parsers' messages).
    """
    if kind is SourceKind.DCGM:
        from fleetmon.sources.dcgm import parse_dcgm

        return parse_dcgm(body, max_gpus=MAX_GPUS_PER_NODE, max_series=MAX_DCGM_SERIES)
    if kind is SourceKind.SSH:
        from fleetmon.sources.smi_xml import parse_smi_xml

        if not body.strip():
            raise SourceError("nvidia-smi printed nothing")
        return parse_smi_xml(body)
    raise SourceError(f"{kind.value}: not a polled source")


def source_poll(capture: Capture, name: str, url: str, group: str | None, now: float,
                duration_ms: float) -> NodePoll:
    """The NodePoll of one reading: every sample stamped with the poll time, stored as a one-sample minute.

    The samples take the collector's clock (a dcgm-exporter scrape carries no time; an
    nvidia-smi timestamp has no time zone). No cursors, no buffer id: nothing to resume.
    """
    poll = capture_poll(capture.with_time(now), name, url, now, group=group)
    return replace(poll, duration_ms=duration_ms)
