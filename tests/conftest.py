"""Shared fixtures. Qt runs offscreen unless a display is chosen explicitly."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Qt's settings (and anything else that follows XDG) of this run and its subprocesses go to a folder of
# the run's own, never the user's ~/.config; the UI tests narrow it to one folder per test.
_CONFIG_HOME = os.environ["XDG_CONFIG_HOME"] = tempfile.mkdtemp(prefix="fleetmon-tests-config-")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(_CONFIG_HOME, ignore_errors=True)

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture
def shared_fixtures() -> Path:
    """../shared/fixtures (real data from public projects); skips when absent."""
    path = SHARED / "fixtures"
    if not path.is_dir():
        pytest.skip("../shared/fixtures is not present")
    return path


@pytest.fixture
def python() -> str:
    return sys.executable


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--quality-report", metavar="FILE", default=None,
                     help="write the health engine's recall and false-alarm table to FILE ('-': the terminal)")

