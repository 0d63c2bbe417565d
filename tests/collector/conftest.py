"""Fixtures shared by the collector tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fleetmon.sim.fleet import SimNode, make_node


@pytest.fixture
def healthy() -> Iterator[SimNode]:
    """A simulated agent with two GPUs and one finished minute, served on 127.0.0.1."""
    node = make_node("healthy", gpus=2)
    node.serve(0.1)
    node.backfill(1)
    yield node
    node.close()
