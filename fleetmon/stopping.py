"""SIGTERM/SIGINT as a clean stop for the long-running commands (collector, agent, simulated fleet, demo)."""

from __future__ import annotations

import signal
import threading
from typing import Any


def stop_on_signals(event: threading.Event, signums: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT)) -> None:
    """Set ``event`` when one of ``signums`` arrives (call from the main thread).

    The handler does not call ``event.set()`` itself: it runs on the main
    thread, which may hold the event's non-reentrant lock inside
    ``event.wait()`` at the moment the signal lands, and would then wait on
    itself forever (a collector that ignored SIGTERM). A short thread sets it
    instead; the main thread is never blocked by the handler.
    """
    def _handler(signum: int, frame: Any) -> None:
        threading.Thread(target=event.set, name="stop-signal", daemon=True).start()

    for signum in signums:
        signal.signal(signum, _handler)
