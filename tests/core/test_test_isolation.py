"""The suite's own hygiene: what one test leaves in the process (a frozen heap, a signal handler, the
environment) is undone before the next (tests/conftest.py), so no test depends on the order they run in."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

LEAVES_STATE = '''
import gc, os, signal, sys


def _swallow(*args):
    pass


def test_1_changes_the_process():
    gc.freeze()  # what ui.shell.settle_heap does when the first window is built
    gc.disable()
    signal.signal(signal.SIGINT, lambda *a: None)  # what ui.app.run_gui does
    os.environ["FLEETMON_LEFT_BEHIND"] = "1"
    sys.excepthook = _swallow


def test_2_sees_a_clean_process():
    assert gc.get_freeze_count() == 0
    assert gc.isenabled()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert "FLEETMON_LEFT_BEHIND" not in os.environ
    assert sys.excepthook is not _swallow
'''


def test_process_state_a_test_leaves_is_undone_before_the_next(tmp_path):
    """tests/collector/test_collector_poller.py counted 191,574 frozen objects after a UI test built a window."""
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text())
    (tmp_path / "test_order.py").write_text(LEAVES_STATE)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "test_order.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "2 passed" in done.stdout
