"""Shared fixtures. Qt runs offscreen unless a display is chosen explicitly."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

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
