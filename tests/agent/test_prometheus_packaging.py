"""packaging/prometheus/: the scrape configuration and recording rules pass promtool; the fleet's file_sd targets."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from fleetmon.cli.fleet import prometheus_targets
from fleetmon.fleet import load_fleet
from fleetmon.fleet.model import NodeSpec

REPO = Path(__file__).resolve().parents[2]
PACKAGING = REPO / "packaging" / "prometheus"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool is not installed (apt-get install -y prometheus)")

FLEET = """\
[[group]]
name = "hgx"

[[node]]
name = "gpu-01"
url = "http://10.0.0.1"
group = "hgx"

[[node]]
name = "gpu-02"
url = "https://gpu-02.example:9500"
"""


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=60)


@needs_promtool
def test_promtool_accepts_the_scrape_configuration(tmp_path):
    for name in ("prometheus.yml", "fleetmon-rules.yml"):
        shutil.copy(PACKAGING / name, tmp_path / name)
    (tmp_path / "fleetmon-targets.json").write_text("[]")
    proc = _promtool("check", "config", "prometheus.yml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 rule files found" in proc.stdout + proc.stderr


@needs_promtool
def test_promtool_accepts_the_recording_rules():
    proc = _promtool("check", "rules", "fleetmon-rules.yml", cwd=PACKAGING)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (PACKAGING / "fleetmon-rules.yml").read_text()
    for ratio in ("clock_ratio", "clock_vs_fleet", "power_limit_ratio", "memory_ratio", "pcie_ratio"):
        assert f"record: fleetmon:gpu_{ratio}" in text, ratio  # one rule per derating ratio


def test_targets_carry_the_node_names(tmp_path):
    (tmp_path / "fleet.toml").write_text(FLEET)
    groups, skipped = prometheus_targets(load_fleet(tmp_path / "fleet.toml"))
    assert not skipped
    assert groups == [
        {"targets": ["10.0.0.1:9414"], "labels": {"node": "gpu-01", "fleetmon_group": "hgx"}},
        {"targets": ["gpu-02.example:9500"], "labels": {"node": "gpu-02", "__scheme__": "https"}},
    ]


def test_other_sources_in_the_fleet_file():
    """A dcgm-exporter node is scraped at its own path; an SSH node has nothing to scrape."""
    fleet = SimpleNamespace(nodes=(NodeSpec("dcgm-07", "dcgm+http://10.0.0.7:9400/metrics"),
                                   NodeSpec("dcgm-08", "dcgm+https://[fd00::8]:9401/dcgm"),
                                   NodeSpec("rented-3", "ssh://ops@rented-3")))
    groups, skipped = prometheus_targets(fleet)
    assert groups == [
        {"targets": ["10.0.0.7:9400"], "labels": {"node": "dcgm-07"}},
        {"targets": ["[fd00::8]:9401"], "labels": {"node": "dcgm-08", "__scheme__": "https",
                                                   "__metrics_path__": "/dcgm"}},
    ]
    assert len(skipped) == 1 and skipped[0].startswith("rented-3: ssh://")


def test_prometheus_targets_command_writes_file_sd_json(tmp_path):
    (tmp_path / "fleet.toml").write_text(FLEET)
    out = tmp_path / "targets.json"
    proc = subprocess.run([sys.executable, "-m", "fleetmon", "fleet", "prometheus-targets",
                           str(tmp_path / "fleet.toml"), "-o", str(out)], cwd=REPO, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert [g["labels"]["node"] for g in json.loads(out.read_text())] == ["gpu-01", "gpu-02"]
    proc = subprocess.run([sys.executable, "-m", "fleetmon", "fleet", "prometheus-targets",
                           str(tmp_path / "fleet.toml")], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and json.loads(proc.stdout) == json.loads(out.read_text())
