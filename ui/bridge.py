"""Bridge: turns collector callbacks (worker threads) into Qt signals (GUI thread)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal


class Bridge(QObject):
    """Emitting from any thread is safe: receivers on the GUI thread get queued calls."""

    cycle_finished = Signal(int, int)  # nodes polled, nodes unreachable

    def on_cycle(self, polls: list[Any]) -> None:
        bad = sum(1 for p in polls if not p.ok)
        self.cycle_finished.emit(len(polls), bad)
