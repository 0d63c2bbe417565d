"""An unknown scenario names the command that lists them, not an internal function (issue 10, item 2)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fleetmon.sim import scenarios


def test_unknown_scenario_points_at_list_scenarios() -> None:
    with pytest.raises(KeyError) as info:
        scenarios.resolve("no-such-scenario")
    message = str(info.value.args[0])
    assert "--list-scenarios" in message and "scenario_names" not in message


def test_agent_cli_says_how_to_list_scenarios() -> None:
    proc = subprocess.run([sys.executable, "-m", "fleetmon", "agent", "--simulate", "no-such-scenario",
                           "--port", "0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "fleetmon agent --list-scenarios" in proc.stderr and "scenario_names" not in proc.stderr
    assert "\"unknown scenario" not in proc.stderr  # no quoted KeyError text
