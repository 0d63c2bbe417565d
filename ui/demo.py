"""`fleetmon demo`'s window: the desktop app, collecting, on a running demo fleet (``fleetmon.demo``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ui.app import run_gui

if TYPE_CHECKING:
    from fleetmon.demo import Demo


def run_demo(demo: Demo, *, interval_s: float, max_seconds: float = 0.0) -> int:
    """Open the window on ``demo``'s database with a collector for its fleet; returns the app's exit code.

    ``max_seconds`` closes the window after that long (0 = when the user closes it).
    """
    gui_args = argparse.Namespace(db=str(demo.db_path), fleet=str(demo.fleet_path), interval=interval_s, refresh=1.0)
    return run_gui(gui_args, max_seconds=max_seconds, confirm_create=lambda path: True)  # the demo's own database
