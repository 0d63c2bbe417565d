"""The wheel holds the three import packages and their data files, and installs into a fresh venv.

Built from a copy of the sources (nothing is written into the worktree) with pip's build
isolation (setuptools>=77 from the index or pip's cache), installed with --no-deps into a new
virtual environment (made without pip: this pip installs into it with ``--python``, which spares
bootstrapping a pip into it, about half the test's time): `fleetmon --version` and `--help` then
run on the standard library alone, as on a GPU node, and the workstation commands say which extra
they need.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fleetmon import __version__

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("fleetmon", "storage", "ui")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for pkg in PACKAGES:
        shutil.copytree(REPO / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("wheel")
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    (found,) = out.glob("fleetmon-*.whl")
    return found


def _sources(pkg: str) -> set[str]:
    return {p.relative_to(REPO).as_posix() for p in (REPO / pkg).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def test_wheel_holds_every_module_and_data_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for pkg in PACKAGES:
        missing = _sources(pkg) - names
        assert not missing, sorted(missing)
    assert "ui/icons/io.github.fleetmon.Fleetmon.svg" in names
    assert wheel.name.startswith(f"fleetmon-{__version__}-")
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert "fleetmon = fleetmon.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_installed_wheel_runs_in_a_fresh_venv(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(XDG_DATA_HOME=str(tmp_path / "data"), XDG_CONFIG_HOME=str(tmp_path / "config"), COLUMNS="1000")
    fleetmon = str(venv / "bin" / "fleetmon")

    def run(*words: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([fleetmon, *words], capture_output=True, text=True, timeout=120, env=env,
                              cwd=tmp_path)

    version = run("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"fleetmon {__version__}", version
    helped = run("--help")
    assert helped.returncode == 0 and "gui" in helped.stdout and "collect" in helped.stdout, helped
    gui_help = run("gui", "--help")
    assert str(tmp_path / "data" / "fleetmon" / "fleet.db") in gui_help.stdout, gui_help
    # No Qt in this venv: a clear message, not a traceback.
    gui = run("gui")
    assert gui.returncode == 1 and "pipx install 'fleetmon[app]'" in gui.stderr, gui
