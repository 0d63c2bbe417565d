"""One writer per database: an advisory lock file beside it (``FILE.lock``).

The holder writes its pid, host and command into the lock file, so a second
collector (or the GUI) can say which process holds the database.
"""

from __future__ import annotations

import fcntl
import os
import socket
import sys
from pathlib import Path

from fleetmon.i18n import N_, Text


class WriterLock:
    """An exclusive, non-blocking flock on ``<db>.lock``; released on close or process exit."""

    def __init__(self, db_path: str | os.PathLike[str]) -> None:
        self.path = Path(str(db_path) + ".lock")
        self._fh: int | None = None

    def acquire(self) -> bool:
        """Take the lock; False if another process holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.write(fd, f"pid={os.getpid()} host={socket.gethostname()} cmd={' '.join(sys.argv)[:300]}\n".encode())
        self._fh = fd
        return True

    def holder(self) -> str:
        """Who holds the lock, as written in the lock file."""
        try:
            return self.path.read_text(encoding="utf-8", errors="replace").strip() or Text(N_("another process"))
        except OSError:
            return Text(N_("another process"))

    def release(self) -> None:
        if self._fh is not None:
            try:
                fcntl.flock(self._fh, fcntl.LOCK_UN)
            finally:
                os.close(self._fh)
                self._fh = None
