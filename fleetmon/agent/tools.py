"""The agent's backends over the vendors' command-line tools: amd-smi, rocm-smi, hy-smi, npu-smi, hl-smi, mthreads-gmi.

One generic implementation (:class:`ToolReader` under :class:`fleetmon.agent.polled.PolledBackend`); each
tool is a :class:`Tool`: its commands and the parser of :mod:`fleetmon.sources` that reads their output
(the same parser ``fleetmon import`` and the SSH source use: no second one).

=============  ===========================================================  =====================================
backend        inventory (at start, then every 10 min)                      sample (every interval)
=============  ===========================================================  =====================================
amd-smi        ``amd-smi static --json`` + ``amd-smi version --json``       ``amd-smi list --json`` + ``metric
                                                                            --json`` (list gives each its bus id)
rocm-smi       ``rocm-smi --showallinfo --json`` (older ROCm)               the same
hy-smi         ``hy-smi --showid --showmeminfo vram --showpower             the same
               --showserial --showuse --showtemp --showproductname
               --showuniqueid --json`` (Hygon DCU)
npu-smi        ``npu-smi info``, ``info -m``, ``info -t board -i N`` per    ``npu-smi info``, and ``info -t health
               NPU (Ascend; each chip a device, ``card_id`` its NPU)        -i N -c C`` of a chip not OK
hl-smi         ``hl-smi -Q <the parser's QUERY_FIELDS> -f csv,noheader``    the same
               (Gaudi; an hl-smi refusing a field: BASIC_FIELDS)
mthreads-gmi   ``mthreads-gmi -q``                                          the same
=============  ===========================================================  =====================================

Every call: an argument list, never a shell; the tool found on PATH once at start; a deadline (the
sampler's read timeout), after which the tool's process group is killed and the round's readings are
``failed`` (the devices are not lost); at most :data:`MAX_OUTPUT` bytes read; a non-zero exit is a failed
read whose reason is the exit status and the first line of stderr (served in /v1/health as
``enumeration_error``), output the parser refuses likewise with the parser's one-line reason.
"""

from __future__ import annotations

import logging
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetmon.agent.backend import Backend, BackendSpec, BackendUnavailable, register
from fleetmon.agent.polled import PolledBackend, ReadError
from fleetmon.i18n import N_, Text, reason_of
from fleetmon.sources import SourceError
from fleetmon.sources.capture import Capture
from fleetmon.text import printable

__all__ = ["MAX_OUTPUT", "TOOLS", "Tool", "ToolReader", "open_tool", "run_tool"]

log = logging.getLogger("fleetmon.agent.tools")

MAX_OUTPUT = 16 * 1024 * 1024
"""More output than this from one call is refused (an 8-GPU ``amd-smi static --json`` is 104 KB)."""
_STDERR_KEEP = 4096


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the tool and whatever it started
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=2.0)
    except subprocess.TimeoutExpired:  # in uninterruptible sleep (a wedged driver): leave it to init
        log.warning("%s (pid %d) does not end after SIGKILL", proc.args, proc.pid)


def run_tool(argv: list[str], timeout_s: float, *, max_bytes: int = MAX_OUTPUT,
             env: dict[str, str] | None = None) -> bytes:
    """Run a tool (an argument list, no shell) and return its standard output.

    Raises:
        ReadError: it cannot start, does not end within ``timeout_s`` (it is killed), writes more than
            ``max_bytes``, or exits non-zero (the status and stderr's first line); one line.
    """
    name = os.path.basename(argv[0])
    shown = " ".join([name, *argv[1:3]])
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, env=env)
    except OSError as exc:
        raise ReadError(Text(N_("{tool}: cannot run: {error}"), tool=name, error=str(exc.strerror or exc))) from exc
    assert proc.stdout is not None and proc.stderr is not None
    deadline = time.monotonic() + timeout_s
    out, err = bytearray(), bytearray()
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        sel.register(proc.stderr, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                _kill(proc)
                raise ReadError(Text(N_("{command} did not answer within {seconds} s (stopped)"), command=shown,
                                     seconds=f"{timeout_s:.1f}"))
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                elif key.fileobj is proc.stdout:
                    out += chunk
                    if len(out) > max_bytes:
                        _kill(proc)
                        raise ReadError(Text(N_("{command} wrote more than {limit} bytes (stopped)"), command=shown,
                                             limit=max_bytes))
                elif len(err) < _STDERR_KEEP:
                    err += chunk
    try:
        rc = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill(proc)
        raise ReadError(Text(N_("{command} did not end within {seconds} s (stopped)"), command=shown,
                             seconds=f"{timeout_s:.1f}")) from None
    finally:
        proc.stdout.close()
        proc.stderr.close()
    if rc != 0:
        lines = [ln.strip() for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
        why = printable(lines[0], 160) if lines else Text(N_("no message"))
        raise ReadError(Text(N_("{command} exited with status {status}: {why}"), command=shown, status=rc, why=why))
    return bytes(out)


Run = Callable[[list[str]], bytes]
"""Runs the tool with these arguments within the read's deadline (raises ReadError)."""


@dataclass(frozen=True)
class Tool:
    """A vendor tool: its executable, vendor, and how an inventory and a sample are read through it."""

    name: str
    vendor: str
    needs: str
    inventory: Callable[[Run], Capture]
    sample: Callable[[Run], Capture]


def _parsed(what: str, parse: Callable[[bytes], Capture], data: bytes) -> Capture:
    try:
        return parse(data)
    except SourceError as exc:
        raise ReadError(Text(N_("{what}: {error}"), what=what, error=reason_of(exc))) from exc


# -- amd-smi ----------------------------------------------------------------------------------------------


def _amd_json(data: bytes) -> Capture:
    from fleetmon.sources.amd import parse_amd_smi_json

    return parse_amd_smi_json(data)


def _amd_smi_inventory(run: Run) -> Capture:
    from fleetmon.sources.amd import combine

    static = _parsed("amd-smi static --json", _amd_json, run(["static", "--json"]))
    try:
        version = _parsed("amd-smi version --json", _amd_json, run(["version", "--json"]))
    except ReadError as exc:  # an older amd-smi: the versions stay unread
        log.info("amd-smi version: %s", exc)
        return static
    return combine(static, version)


def _amd_smi_sample(run: Run) -> Capture:
    from fleetmon.sources.amd import combine

    listed = _parsed("amd-smi list --json", _amd_json, run(["list", "--json"]))
    metric = _parsed("amd-smi metric --json", _amd_json, run(["metric", "--json"]))
    if len(listed.gpus) != len(metric.gpus):
        raise ReadError(Text(N_("amd-smi list names {listed} GPUs, metric {metric}: not used"), listed=len(listed.gpus),
                             metric=len(metric.gpus)))
    return combine(listed, metric)  # one tool, one order: the list's bus ids name the metric's devices


# -- rocm-smi / hy-smi ------------------------------------------------------------------------------------


def _rocm_json(data: bytes) -> Capture:
    from fleetmon.sources.amd import parse_rocm_smi_json

    return parse_rocm_smi_json(data)


ROCM_SMI_ARGS = ["--showallinfo", "--json"]
HY_SMI_ARGS = ["--showid", "--showmeminfo", "vram", "--showpower", "--showserial", "--showuse", "--showtemp",
               "--showproductname", "--showuniqueid", "--json"]
"""hy-smi's query (the one of the Hygon K100 capture in the fixtures)."""


def _rocm_smi(run: Run) -> Capture:
    return _parsed("rocm-smi --showallinfo --json", _rocm_json, run(ROCM_SMI_ARGS))


def _hy_smi(run: Run) -> Capture:
    return _parsed("hy-smi --json", _rocm_json, run(HY_SMI_ARGS))


# -- npu-smi ----------------------------------------------------------------------------------------------


def _npu(data: bytes) -> Capture:
    from fleetmon.sources.npu_smi import parse_npu_smi

    return parse_npu_smi(data)


def _npu_text(parts: list[tuple[list[str], bytes]]) -> bytes:
    """Several npu-smi outputs as one text, each after its command line (how the parser attributes them)."""
    return b"".join(f"npu-smi {' '.join(args)}\n".encode() + out + b"\n" for args, out in parts)


def _npu_smi_inventory(run: Run) -> Capture:
    table = run(["info"])
    parts = [(["info"], table)]
    first = _parsed("npu-smi info", _npu, table)
    try:
        parts.append((["info", "-m"], run(["info", "-m"])))
    except ReadError as exc:  # older npu-smi: no chip mapping; the table's order stands
        log.info("npu-smi info -m: %s", exc)
    for npu in sorted({e["npu_id"] for e in first.extra if isinstance(e.get("npu_id"), int)}):
        args = ["info", "-t", "board", "-i", str(npu)]
        parts.append((args, run(args)))
    return _parsed("npu-smi", _npu, _npu_text(parts))


def _npu_smi_sample(run: Run) -> Capture:
    table = run(["info"])
    capture = _parsed("npu-smi info", _npu, table)
    parts = [(["info"], table)]
    for extra in capture.extra:  # the error codes of a chip whose health is not OK
        if extra.get("health", "OK") != "OK" and isinstance(extra.get("npu_id"), int):
            args = ["info", "-t", "health", "-i", str(extra["npu_id"]), "-c", str(extra.get("chip_id") or 0)]
            parts.append((args, run(args)))
    return capture if len(parts) == 1 else _parsed("npu-smi", _npu, _npu_text(parts))


# -- hl-smi -----------------------------------------------------------------------------------------------


class _HlSmi:
    """hl-smi's query; an hl-smi that refuses a field of the full list gets the basic one from then on."""

    def __init__(self) -> None:
        from fleetmon.sources.hl_smi import QUERY_FIELDS

        self.fields: tuple[str, ...] = QUERY_FIELDS

    def __call__(self, run: Run) -> Capture:
        from fleetmon.sources.hl_smi import BASIC_FIELDS, parse_hl_smi

        try:
            out = run(["-Q", ",".join(self.fields), "-f", "csv,noheader"])
        except ReadError as exc:
            if self.fields == BASIC_FIELDS or "exited with status" not in str(exc):
                raise
            log.info("hl-smi refused the full query (%s); asking for the basic fields", exc)
            self.fields = BASIC_FIELDS
            out = run(["-Q", ",".join(self.fields), "-f", "csv,noheader"])
        fields = self.fields
        return _parsed("hl-smi -Q", lambda data: parse_hl_smi(data, fields=fields), out)


# -- mthreads-gmi -----------------------------------------------------------------------------------------


def _mthreads(run: Run) -> Capture:
    from fleetmon.sources.mthreads import parse_mthreads_query

    return _parsed("mthreads-gmi -q", parse_mthreads_query, run(["-q"]))


def _tools() -> tuple[Tool, ...]:
    hl = _HlSmi()
    return (
        Tool("amd-smi", "amd", N_("AMD's amd-smi tool (ROCm 6+) on PATH"), _amd_smi_inventory, _amd_smi_sample),
        Tool("rocm-smi", "amd", N_("AMD's rocm-smi tool (ROCm 4.3-6.x) on PATH"), _rocm_smi, _rocm_smi),
        Tool("hy-smi", "hygon", N_("Hygon's hy-smi tool (DTK) on PATH"), _hy_smi, _hy_smi),
        Tool("npu-smi", "huawei", N_("Huawei's npu-smi tool (Ascend driver) on PATH"), _npu_smi_inventory,
             _npu_smi_sample),
        Tool("hl-smi", "intel", N_("Intel Gaudi's hl-smi tool (habanalabs driver) on PATH"), hl, hl),
        Tool("mthreads-gmi", "mthreads", N_("Moore Threads' mthreads-gmi tool (MUSA driver) on PATH"), _mthreads,
             _mthreads),
    )


TOOLS: dict[str, Tool] = {t.name: t for t in _tools()}
"""The tools, in the order ``--backend auto`` tries them."""


class ToolReader:
    """A :class:`fleetmon.agent.polled.Reader` running one tool (``path``) with a deadline per read."""

    def __init__(self, tool: Tool, path: str, *, env: dict[str, str] | None = None,
                 clock: Callable[[], float] | None = None, cleanup: Path | None = None) -> None:
        self.tool = tool
        self.cleanup = cleanup  # a simulation's directory of wrapper scripts, removed at close
        self.name = tool.name
        self.vendor = tool.vendor
        self.path = path
        self.env = env
        self.clock = clock  # a simulation's clock, passed to the twin (FLEETMON_SIM_NOW)
        self.calls = 0

    def _runner(self, timeout_s: float) -> Run:
        deadline = time.monotonic() + timeout_s

        def run(args: list[str]) -> bytes:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ReadError(Text(N_("{command}: no time left in this read"),
                                     command=f"{self.name} {' '.join(args[:2])}"))
            env = self.env
            if env is not None and self.clock is not None:
                env = {**env, "FLEETMON_SIM_NOW": repr(self.clock())}
            self.calls += 1
            return run_tool([self.path, *args], left, env=env)

        return run

    def inventory(self, timeout_s: float) -> Capture:
        return self.tool.inventory(self._runner(timeout_s))

    def sample(self, timeout_s: float) -> Capture:
        return self.tool.sample(self._runner(timeout_s))

    def close(self) -> None:
        if self.cleanup is not None:
            shutil.rmtree(self.cleanup, ignore_errors=True)


def open_tool(name: str, *, known_inventory: list[dict[str, Any]] | None = None, inventory_wait_s: float = 2.0,
              simulate: str | None = None, clock: Callable[[], float] | None = None, node_name: str | None = None,
              path: str | None = None, note: str | None = None) -> Backend:
    """Open the backend of tool ``name``: the tool on PATH, or with ``simulate`` its twin (:mod:`fleetmon.sim.tools`).

    Raises:
        BackendUnavailable: the tool is not on PATH, or its first inventory read failed (one line).
    """
    tool = TOOLS[name]
    env, home = None, None
    if simulate is not None:
        path, env, home = _simulated(name, simulate, clock or time.time, node_name)
    path = path or shutil.which(name)
    if path is None:
        raise BackendUnavailable(Text(N_("{tool} is not on PATH ({needs})"), tool=name, needs=Text(tool.needs)))
    reader = ToolReader(tool, path, env=env, clock=(clock or time.time) if simulate is not None else None,
                        cleanup=home)
    try:
        return PolledBackend(reader, inventory_wait_s=max(inventory_wait_s, 10.0), note=note)
    except BaseException:
        reader.close()
        raise


def _simulated(name: str, scenario: str, clock: Callable[[], float],
               node: str | None) -> tuple[str, dict[str, str], Path]:
    """The twin of tool ``name`` for ``scenario``: wrapper scripts in a private temporary directory."""
    from fleetmon.sim import tools as twins
    from fleetmon.sim import vendors

    vendors.resolve(scenario)  # KeyError / ValueError: the agent says "unknown or invalid scenario"
    home = Path(tempfile.mkdtemp(prefix="fleetmon-sim-tools-"))
    state = home / "state.json"
    twins.write_state(state, scenario, clock(), node)
    paths = twins.install(home / "bin", state)
    return str(paths[name]), dict(os.environ), home


def _probe(name: str) -> Callable[[], str | None]:
    def probe() -> str | None:
        return None if shutil.which(name) else Text(N_("{tool} is not on PATH"), tool=name)
    return probe


def _opener(name: str) -> Callable[..., Backend]:
    def open_(**kw: Any) -> Backend:
        return open_tool(name, **kw)
    return open_


for _tool in TOOLS.values():
    register(BackendSpec(_tool.name, _tool.vendor, _tool.needs, _probe(_tool.name), _opener(_tool.name)))
del _tool
