"""The window's collector, run as a child process (`fleetmon collect --control stdio`).

Polling a thousand nodes costs seconds of Python CPU per cycle (HTTP, JSON,
validation, the SQLite transaction, the health pass). In the GUI's process
that work holds the interpreter lock and fills its heap, and the event loop
stalled for hundreds of milliseconds per cycle; in a child process it cannot
block the GUI thread at all. The window talks to it through a pipe
(:func:`fleetmon.collector.main.serve_control`): commands down (poll, pause,
resume, stop), one JSON line up per finished cycle, read by Qt's event loop
without blocking. The window reads what the child stored through its own
read-only connection, as it reads a database that `fleetmon collect` writes.

If the child exits on its own (another collector took the database, a
crash), the status bar says so with the last line it wrote to stderr, and
Poll now starts it again.
"""

from __future__ import annotations

import json
import logging
import sys
from collections import deque

from PySide6.QtCore import QObject, QProcess, Signal

log = logging.getLogger("fleetmon.ui")


def collect_command(db_path: str, fleet_path: str, interval_s: float | None) -> list[str]:
    """The child's command line: this interpreter running `fleetmon collect`.

    In the PyInstaller bundle ``sys.executable`` is the app itself, whose entry point
    (packaging/frozen_main.py) drops the ``-m fleetmon`` in front of the arguments.
    """
    cmd = [sys.executable, "-m", "fleetmon", "collect", "--db", db_path, "--fleet", fleet_path, "--control", "stdio"]
    if interval_s is not None:
        cmd += ["--interval", repr(float(interval_s))]
    return cmd


class CollectorProcess(QObject):
    """A `fleetmon collect` child with the in-process collector's controls (poll_now, pause, resume, stop)."""

    cycle_finished = Signal(int, int)  # nodes polled, nodes unreachable
    state_changed = Signal(str)  # a line for the status bar

    def __init__(self, db_path: str, fleet_path: str, interval_s: float | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.command = collect_command(db_path, fleet_path, interval_s)
        self.interval_s = interval_s
        self.state = self.tr("collector: starting")
        self.paused = False
        self.cycles = 0
        self.stderr_tail: deque[str] = deque(maxlen=20)
        self._out = b""
        self._err = b""
        self._stopping = False
        self.process = QProcess(self)
        self.process.setProcessChannelMode(QProcess.ProcessChannelMode.SeparateChannels)
        self.process.readyReadStandardOutput.connect(self._read_events)
        self.process.readyReadStandardError.connect(self._read_stderr)
        self.process.finished.connect(self._finished)
        self.process.errorOccurred.connect(self._error)

    # -- control --------------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self.process.state() != QProcess.ProcessState.NotRunning

    @property
    def pid(self) -> int:
        return int(self.process.processId())

    def start(self) -> None:
        if self.running:
            return
        self._stopping = False
        self.paused = False
        self._set_state(self.tr("collector: starting"))
        self.process.start(self.command[0], self.command[1:])

    def _send(self, command: str) -> None:
        if self.running:
            self.process.write(f"{command}\n".encode())

    def poll_now(self) -> None:
        """Ask for a cycle now; starts the child again if it had exited."""
        if self.running:
            self._send("poll")
        else:
            self.start()

    def pause(self) -> None:
        self.paused = True
        self._send("pause")

    def resume(self) -> None:
        self.paused = False
        self._send("resume")

    def stop(self, timeout_ms: int = 20_000) -> None:
        """Ask the child to finish its cycle and exit; killed if it has not within ``timeout_ms``.

        A killed collector loses nothing: each cycle commits with its cursors and the agents keep
        what was not fetched (tests/integration/test_collector_kill9.py).
        """
        if not self.running:
            return
        self._stopping = True
        self._send("stop")
        self.process.closeWriteChannel()
        if not self.process.waitForFinished(timeout_ms):
            self.process.terminate()
            if not self.process.waitForFinished(5_000):
                self.process.kill()
                self.process.waitForFinished(5_000)

    # -- what the child says ----------------------------------------------------------

    def _set_state(self, state: str) -> None:
        self.state = state
        self.state_changed.emit(state)

    def _read_events(self) -> None:
        self._out += bytes(self.process.readAllStandardOutput().data())
        *lines, self._out = self._out.split(b"\n")
        for line in lines:
            try:
                event = json.loads(line)
            except ValueError:
                log.warning("collector child wrote a line that is not JSON: %r", line[:200])
                continue
            kind = event.get("event") if isinstance(event, dict) else None
            if kind == "ready":
                self.interval_s = float(event.get("interval") or 0) or self.interval_s
                self._set_state(self.tr("collector: child process {pid}, every {interval} s").format(
                    pid=self.pid, interval=f"{self.interval_s:g}"))
            elif kind == "cycle":
                self.cycles += 1
                self.cycle_finished.emit(int(event.get("polled", 0)), int(event.get("unreachable", 0)))
            elif kind == "error":
                log.warning("collector child: %s", event.get("message"))

    def _read_stderr(self) -> None:
        self._err += bytes(self.process.readAllStandardError().data())
        *lines, self._err = self._err.split(b"\n")
        for line in lines:
            text = line.decode("utf-8", "replace").rstrip()
            if text:
                self.stderr_tail.append(text)

    def last_error(self) -> str:
        """The child's last stderr line (its error message when it exited), or ''."""
        return self.stderr_tail[-1] if self.stderr_tail else ""

    def _finished(self, code: int, status: QProcess.ExitStatus) -> None:
        self._read_stderr()
        if self._err:
            self.stderr_tail.append(self._err.decode("utf-8", "replace").rstrip())
            self._err = b""
        if self._stopping:
            self._set_state(self.tr("collector: stopped"))
            return
        reason = self.last_error()
        crashed = status == QProcess.ExitStatus.CrashExit
        if reason:
            state = (self.tr("collector: crashed: {reason} (Poll now restarts it)") if crashed else
                     self.tr("collector: exited with code {code}: {reason} (Poll now restarts it)"))
        else:
            state = (self.tr("collector: crashed (Poll now restarts it)") if crashed else
                     self.tr("collector: exited with code {code} (Poll now restarts it)"))
        self._set_state(state.format(code=code, reason=reason))

    def _error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            self._set_state(self.tr("collector: could not start {program}: {error}").format(
                program=self.command[0], error=self.process.errorString()))
