"""Fixtures of the core's tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fleetmon import i18n


@pytest.fixture
def chinese() -> Iterator[None]:
    """The core's text in zh_CN for one test, English again after it (whatever happens)."""
    i18n.set_language("zh_CN")
    try:
        yield
    finally:
        i18n.set_language("en")
