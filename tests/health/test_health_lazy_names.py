"""``fleetmon.health``'s public names load on first use (PEP 562): importing a submodule such as
``fleetmon.health.verdict`` (the desktop app does, at launch) no longer loads the engine and every rule."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest


def test_the_health_packages_names_load_on_first_use() -> None:
    """``fleetmon.health``'s public names resolve lazily (PEP 562), each the submodule's own object."""
    import fleetmon.health as health

    for name in health.__all__:
        value = getattr(health, name)
        assert value is getattr(importlib.import_module(health._LAZY[name]), name), name
    with pytest.raises(AttributeError):
        getattr(health, "no_such_name")
    from fleetmon.health import Thresholds, evaluate  # noqa: F401 - the from-import form works too


def test_a_submodule_alone_does_not_load_the_engine() -> None:
    code = ("import sys, fleetmon.health.verdict, fleetmon.health.findings; "
            "print(sorted(m for m in ('fleetmon.health.engine', 'fleetmon.health.rules') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
