"""Kernel-log source for the agent: /dev/kmsg, else journald, else none.

``open_kernel_log()`` returns a ``KernelLog`` whose ``poll()`` hands back new
complete lines without blocking. The lines are in formats that
``fleetmon.xid.XidParser`` understands:

- kmsg records become dmesg-style ``[ 1843.308145] NVRM: Xid ...`` lines;
- journald lines come from ``journalctl -k -f -o short-iso`` as printed
  (``2025-01-21T02:21:33+0000 host kernel: NVRM: Xid ...``);
- ``KernelLog.from_file(path)`` follows a regular file like ``tail -F``.

Memory is bounded: journald lines beyond ``max_lines`` waiting in the queue
are dropped, and kmsg records the kernel overwrote before we read them are
counted; both show in ``dropped``.
"""

from __future__ import annotations

import collections
import errno
import os
import re
import shutil
import subprocess
import threading
from typing import BinaryIO, Protocol

__all__ = ["DEFAULT_MAX_LINES", "KernelLog", "open_kernel_log"]

DEFAULT_MAX_LINES = 10000
_KMSG_READ_BYTES = 16384  # one record per read(); records are at most a few KiB
_FILE_READ_BYTES = 1 << 20
_MAX_PARTIAL_CHARS = 65536
_JOURNALCTL_ARGS = ("-k", "-f", "-o", "short-iso", "--since", "now", "--no-pager", "-q")
_JOURNALCTL_START_WAIT_S = 0.3
_KMSG_RECORD_RE = re.compile(r"(?P<prio>\d+),(?P<seq>\d+),(?P<usec>\d+),[^;]*;(?P<msg>.*)", re.S)
_ESCAPE_RE = re.compile(r"\\x([0-9a-fA-F]{2})")


class _Source(Protocol):
    @property
    def status(self) -> str: ...

    @property
    def dropped(self) -> int: ...

    def read_lines(self, max_lines: int) -> list[str]: ...

    def close(self) -> None: ...


class KernelLog:
    """A readable kernel log, or the reason there is none.

    Attributes:
        status: "kmsg", "journald", "file:PATH", or "none: why".
        dropped: lines lost because we fell behind (kernel overwrote kmsg
            records, journald queue full).
    """

    def __init__(
        self, source: _Source | None, reason: str = "", max_lines: int = DEFAULT_MAX_LINES
    ) -> None:
        self._source = source
        self._reason = reason
        self._max_lines = max_lines

    @property
    def status(self) -> str:
        if self._source is None:
            return f"none: {self._reason}" if self._reason else "none"
        return self._source.status

    @property
    def dropped(self) -> int:
        return 0 if self._source is None else self._source.dropped

    def poll(self) -> list[str]:
        """Return the new complete lines (without newlines); never blocks."""
        if self._source is None:
            return []
        return self._source.read_lines(self._max_lines)

    def close(self) -> None:
        """Release the file, descriptor or subprocess; safe to call twice."""
        if self._source is not None:
            self._source.close()

    def __enter__(self) -> KernelLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    def none(cls, reason: str) -> KernelLog:
        """A log that yields nothing; ``status`` is "none: reason"."""
        return cls(None, reason)

    @classmethod
    def from_file(
        cls, path: str, from_start: bool = False, max_lines: int = DEFAULT_MAX_LINES
    ) -> KernelLog:
        """Follow a regular file like ``tail -F`` (also survives rotation/truncation).

        Args:
            path: file to follow; it may not exist yet.
            from_start: read the existing content first instead of only new lines.
            max_lines: most lines one ``poll()`` returns; the rest wait in the file.
        """
        return cls(_FileSource(path, from_start), max_lines=max_lines)

    @classmethod
    def from_kmsg(cls, path: str = "/dev/kmsg", max_lines: int = DEFAULT_MAX_LINES) -> KernelLog:
        """Read new records from /dev/kmsg; raises OSError if it cannot be read."""
        return cls(_KmsgSource(path), max_lines=max_lines)

    @classmethod
    def from_command(
        cls, argv: list[str], status: str = "journald", max_lines: int = DEFAULT_MAX_LINES
    ) -> KernelLog:
        """Read the stdout lines of a long-running command on a reader thread.

        Raises OSError if it cannot start or exits at once with an error.
        """
        return cls(_CommandSource(argv, status, max_lines), max_lines=max_lines)


def open_kernel_log(
    kmsg_path: str = "/dev/kmsg",
    journalctl: str | None = "journalctl",
    max_lines: int = DEFAULT_MAX_LINES,
) -> KernelLog:
    """Open the best kernel log this process can read.

    Tries ``kmsg_path`` (non-blocking, starting at the end), then
    ``journalctl -k -f -o short-iso --since now``; otherwise returns a log whose
    status names every reason, e.g.
    "none: /dev/kmsg: Permission denied; journalctl: not found".

    Args:
        kmsg_path: the kmsg device (injectable for tests).
        journalctl: journalctl executable name or path; None skips journald.
        max_lines: bound on lines returned per poll and queued for journald.
    """
    reasons: list[str] = []
    try:
        return KernelLog.from_kmsg(kmsg_path, max_lines=max_lines)
    except OSError as e:
        reasons.append(f"{kmsg_path}: {e.strerror or e}")
    if journalctl is not None:
        exe = shutil.which(journalctl)
        if exe is None:
            reasons.append(f"{journalctl}: not found")
        else:
            try:
                return KernelLog.from_command([exe, *_JOURNALCTL_ARGS], max_lines=max_lines)
            except OSError as e:
                reasons.append(f"{journalctl}: {e.strerror or e}")
    return KernelLog.none("; ".join(reasons))


# --------------------------------------------------------------------------
# /dev/kmsg
# --------------------------------------------------------------------------


def kmsg_record_to_lines(record: str) -> list[str]:
    """Turn one /dev/kmsg record into dmesg-style lines.

    "6,1234,5678901,-;NVRM: Xid ...\\n SUBSYSTEM=pci" -> ["[    5.678901] NVRM: Xid ..."].
    Dictionary lines (leading space) are dropped; an escaped newline (\\x0a)
    splits the message, and the later parts carry no timestamp, as in dmesg.
    Returns [] for text that is not a record.
    """
    m = _KMSG_RECORD_RE.match(record)
    if m is None:
        return []
    message = m.group("msg").split("\n", 1)[0]
    message = _ESCAPE_RE.sub(lambda e: chr(int(e.group(1), 16)), message)
    usec = int(m.group("usec"))
    parts = message.split("\n")
    stamp = f"[{usec // 1_000_000:5d}.{usec % 1_000_000:06d}] "
    return [stamp + parts[0], *parts[1:]]


class _KmsgSource:
    def __init__(self, path: str) -> None:
        self.status = "kmsg"
        self.dropped = 0
        self._last_seq: int | None = None
        self._fd: int | None = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            os.lseek(self._fd, 0, os.SEEK_END)
            self._pending = self._read_some(1)  # fails here, not later, if reads are denied
        except OSError:
            os.close(self._fd)
            self._fd = None
            raise

    def read_lines(self, max_lines: int) -> list[str]:
        if self._fd is None:
            return []
        lines, self._pending = self._pending, []
        try:
            lines.extend(self._read_some(max_lines - len(lines)))
        except OSError as e:
            self.status = f"none: kmsg read failed: {e.strerror or e}"
            self.close()
        return lines

    def _read_some(self, max_lines: int) -> list[str]:
        lines: list[str] = []
        assert self._fd is not None
        while len(lines) < max_lines:
            try:
                data = os.read(self._fd, _KMSG_READ_BYTES)
            except BlockingIOError:
                break
            except OSError as e:
                if e.errno == errno.EPIPE:
                    # The kernel overwrote records we had not read; the next read
                    # returns the oldest one left and the seq gap counts the loss.
                    continue
                if e.errno == errno.EINTR:
                    continue
                raise
            if not data:
                break
            record = data.decode("utf-8", errors="replace")
            m = _KMSG_RECORD_RE.match(record)
            if m is not None:
                seq = int(m.group("seq"))
                if self._last_seq is not None and seq > self._last_seq + 1:
                    self.dropped += seq - self._last_seq - 1
                self._last_seq = seq
            lines.extend(kmsg_record_to_lines(record))
        return lines

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


# --------------------------------------------------------------------------
# journalctl (or any line-printing command)
# --------------------------------------------------------------------------


class _CommandSource:
    def __init__(self, argv: list[str], status: str, max_lines: int) -> None:
        self._status = status
        self.dropped = 0
        self._max_lines = max_lines
        self._lock = threading.Lock()
        self._queue: collections.deque[str] = collections.deque()
        self._stderr: collections.deque[str] = collections.deque(maxlen=3)
        self._proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=True,
        )
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._threads = [
            threading.Thread(target=self._read_stdout, name="kernlog-stdout", daemon=True),
            threading.Thread(target=self._read_stderr, name="kernlog-stderr", daemon=True),
        ]
        for t in self._threads:
            t.start()
        try:
            rc = self._proc.wait(timeout=_JOURNALCTL_START_WAIT_S)
        except subprocess.TimeoutExpired:
            return
        if rc != 0:
            self.close()
            detail = self._stderr[-1] if self._stderr else f"exited with status {rc}"
            raise OSError(errno.EIO, detail)

    @property
    def status(self) -> str:
        rc = self._proc.poll()
        if rc is None:
            return self._status
        detail = f": {self._stderr[-1]}" if self._stderr else ""
        return f"none: {self._status} exited with status {rc}{detail}"

    def _read_stdout(self) -> None:
        assert self._proc.stdout is not None
        for raw in self._proc.stdout:
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")[:_MAX_PARTIAL_CHARS]
            with self._lock:
                if len(self._queue) >= self._max_lines:
                    self.dropped += 1
                else:
                    self._queue.append(line)

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        for raw in self._proc.stderr:
            text = raw.decode("utf-8", errors="replace").strip()
            if text:
                self._stderr.append(text)

    def read_lines(self, max_lines: int) -> list[str]:
        with self._lock:
            n = min(max_lines, len(self._queue))
            return [self._queue.popleft() for _ in range(n)]

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=2.0)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        for t in self._threads:
            t.join(timeout=1.0)
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream is not None:
                stream.close()


# --------------------------------------------------------------------------
# Regular file (tests, /var/log/kern.log)
# --------------------------------------------------------------------------


class _FileSource:
    def __init__(self, path: str, from_start: bool) -> None:
        self._path = path
        self.dropped = 0
        self._fh: BinaryIO | None = None
        self._inode: tuple[int, int] | None = None
        self._partial = b""
        self._error = ""
        self._open(at_end=not from_start)

    @property
    def status(self) -> str:
        if self._fh is None:
            return f"none: {self._path}: {self._error}"
        return f"file:{self._path}"

    def _open(self, at_end: bool) -> None:
        try:
            fh = open(self._path, "rb")  # noqa: SIM115 (kept open while following)
        except OSError as e:
            self._error = e.strerror or str(e)
            return
        st = os.fstat(fh.fileno())
        if at_end:
            fh.seek(0, os.SEEK_END)
        self._fh = fh
        self._inode = (st.st_dev, st.st_ino)
        self._partial = b""
        self._error = ""

    def _rotated(self) -> bool:
        """True when the path now names another file, or the file shrank."""
        assert self._fh is not None
        try:
            st = os.stat(self._path)
        except OSError:
            return False  # keep reading the old file until a new one appears
        if (st.st_dev, st.st_ino) != self._inode:
            return True
        return st.st_size < self._fh.tell()

    def read_lines(self, max_lines: int) -> list[str]:
        if self._fh is None:
            self._open(at_end=False)  # appeared after we started: read it all
            if self._fh is None:
                return []
        lines = self._drain(max_lines)
        if len(lines) < max_lines and self._rotated():
            self._fh.close()
            self._fh = None
            self._open(at_end=False)
            if self._fh is not None:
                lines.extend(self._drain(max_lines - len(lines)))
        return lines

    def _drain(self, max_lines: int) -> list[str]:
        assert self._fh is not None
        lines: list[str] = []
        while len(lines) < max_lines:
            chunk = self._fh.read(_FILE_READ_BYTES)
            if not chunk:
                break
            data = self._partial + chunk
            parts = data.split(b"\n")
            self._partial = parts.pop()
            take = parts[: max_lines - len(lines)]
            lines.extend(p.decode("utf-8", errors="replace").rstrip("\r") for p in take)
            if len(take) < len(parts):
                # leave the rest in the file for the next poll
                unread = sum(len(p) + 1 for p in parts[len(take):]) + len(self._partial)
                self._fh.seek(-unread, os.SEEK_CUR)
                self._partial = b""
                break
            if len(self._partial) > _MAX_PARTIAL_CHARS:  # an endless line: keep its start
                self._partial = self._partial[:_MAX_PARTIAL_CHARS]
        return lines

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
