"""SIGTERM stops the long-running commands even when it lands inside the wait for it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The signal lands while the main thread holds the event's own lock (as it does for an instant
# inside ``event.wait()``): a handler that called ``event.set()`` directly waited on itself forever.
CHILD = """
import os, signal, threading
from fleetmon.stopping import stop_on_signals
stop = threading.Event()
stop_on_signals(stop)
with stop._cond:
    os.kill(os.getpid(), signal.SIGTERM)
    for _ in range(1000):  # bytecodes run: the handler has run by now
        pass
print("stopped" if stop.wait(10) else "not stopped")
"""


def test_a_signal_during_the_wait_still_stops():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=30, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "stopped"


def test_the_old_handler_deadlocks_there():
    """The test above can fail: with ``event.set()`` in the handler the same child never finishes."""
    child = CHILD.replace("stop_on_signals(stop)", "signal.signal(signal.SIGTERM, lambda *a: stop.set())")
    try:
        subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, timeout=3, cwd=REPO)
    except subprocess.TimeoutExpired:
        return
    raise AssertionError("a handler calling event.set() inside the event's lock was expected to hang")
