"""The PyInstaller recipe (packaging/fleetmon.spec, `make app`) builds a one-folder app that starts.

Opt-in (a build takes minutes): FLEETMON_PACKAGING_TESTS=1. Builds into tmp_path, not dist/;
installs PyInstaller into the test's environment first when it is missing.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fleetmon import __version__

REPO = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.packaging,
    pytest.mark.skipif(os.environ.get("FLEETMON_PACKAGING_TESTS") != "1",
                       reason="builds the PyInstaller app (minutes): set FLEETMON_PACKAGING_TESTS=1"),
]


def test_built_app_starts_and_prints_its_version(tmp_path: Path) -> None:
    if importlib.util.find_spec("PyInstaller") is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "pyinstaller"], check=True, timeout=600)
    build = subprocess.run(
        [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN",
         "--distpath", str(tmp_path / "dist"), "--workpath", str(tmp_path / "build"),
         str(REPO / "packaging" / "fleetmon.spec")],
        capture_output=True, text=True, timeout=1800, cwd=tmp_path)
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    app = tmp_path / "dist" / "fleetmon" / "fleetmon"
    env = dict(os.environ, XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"),
               QT_QPA_PLATFORM="offscreen", COLUMNS="1000")  # argparse wraps at the hyphens of tmp_path
    env.pop("PYTHONPATH", None)
    version = subprocess.run([str(app), "--version"], capture_output=True, text=True, timeout=120, env=env)
    assert version.returncode == 0 and version.stdout.strip() == f"fleetmon {__version__}", version
    helped = subprocess.run([str(app), "gui", "--help"], capture_output=True, text=True, timeout=120, env=env)
    assert helped.returncode == 0 and str(tmp_path / "data" / "fleetmon" / "fleet.db") in helped.stdout, helped
    # The bundled GUI (Qt, offscreen) opens the default database, created quietly, and closes on SIGTERM.
    gui = subprocess.Popen([str(app), "gui"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    db = tmp_path / "data" / "fleetmon" / "fleet.db"
    try:
        deadline = time.monotonic() + 60
        while not db.exists() and gui.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(10)  # the database exists before the window and its SIGTERM handler do
        assert gui.poll() is None, gui.communicate()[0]
        assert db.is_file()
    finally:
        gui.send_signal(signal.SIGTERM)
        out = gui.communicate(timeout=30)[0]
    assert gui.returncode == 0, out
