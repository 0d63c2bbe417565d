"""packaging/fleetmon-agent.service: systemd accepts every line, and the sandbox is what the docs say."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
UNIT = REPO / "packaging" / "fleetmon-agent.service"


def _service() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    section = ""
    for line in UNIT.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, _, value = line.partition("=")
        out.setdefault(f"{section}.{key}", []).append(value)
    return out


def test_unit_runs_unprivileged_and_sandboxed():
    s = _service()
    assert s["Service.DynamicUser"] == ["yes"] and s["Service.User"] == ["fleetmon"]
    assert s["Service.CapabilityBoundingSet"] == [""] and s["Service.NoNewPrivileges"] == ["yes"]
    for key, value in (("ProtectSystem", "strict"), ("ProtectHome", "yes"), ("PrivateTmp", "yes"),
                       ("DevicePolicy", "closed"), ("StateDirectory", "fleetmon")):
        assert s[f"Service.{key}"] == [value], key
    assert set(s["Service.RestrictAddressFamilies"][0].split()) == {"AF_INET", "AF_INET6", "AF_UNIX"}
    assert "video" in s["Service.SupplementaryGroups"][0].split()
    assert {"char-nvidia* rw", "/dev/nvidiactl rw", "/dev/kmsg r"} <= set(s["Service.DeviceAllow"])
    # A non-loopback bind always comes with a token file from a private credential.
    (exec_start,) = s["Service.ExecStart"]
    assert "--bind 0.0.0.0" in exec_start and "--token-file ${CREDENTIALS_DIRECTORY}/token" in exec_start
    assert s["Service.LoadCredential"] == ["token:/etc/fleetmon/agent.token"]
    assert "User=root" not in UNIT.read_text()


def test_unit_parses_with_systemd_analyze(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    # verify also checks that ExecStart= exists: point it at this interpreter.
    unit = tmp_path / UNIT.name
    unit.write_text(UNIT.read_text().replace("/opt/fleetmon/venv/bin/python3", sys.executable))
    proc = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True, timeout=60)
    findings = [line for line in (proc.stdout + proc.stderr).splitlines() if UNIT.name in line]
    if proc.returncode != 0 and not findings and "System has not been booted" in proc.stderr:
        pytest.skip(f"systemd-analyze cannot run here: {proc.stderr.strip()[:200]}")
    assert proc.returncode == 0, proc.stderr
    assert not findings, findings  # "Unknown key", "Failed to parse …" and the like

