"""fleetmon-agent.pyz runs from a fresh virtual environment that holds only nvidia-ml-py.

The archive is built once per session (packaging/build_agent_pyz.py, as `make
agent-pyz` does); each node environment (``python -m venv`` + ``pip install
nvidia-ml-py``) is made once and kept under the temporary folder, keyed by the
interpreter, so later runs of the suite reuse it. The agent runs with the
checkout out of reach (another folder, no PYTHONPATH): what it imports comes
from the archive or the node environment. It runs under this interpreter and,
where one is installed, under Python 3.8 (the oldest a node may have).
"""

from __future__ import annotations

import glob
import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

import fleetmon
from fleetmon.records import WIRE_SCHEMA
from fleetmon.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
PY38_SKIP = ("no Python 3.8 here: Debian has no python3.8 package (apt-cache policy python3.8: no candidate) and "
             "PyPI no relocatable CPython; set FLEETMON_PY38 or install one with pyenv (pyenv install 3.8)")


def _python38() -> str | None:
    """A Python 3.8 interpreter: $FLEETMON_PY38, python3.8 on PATH, or a pyenv build."""
    candidates = [os.environ.get("FLEETMON_PY38", ""), shutil.which("python3.8") or "", "/usr/bin/python3.8",
                  *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.8*/bin/python3.8")))]
    for exe in filter(None, candidates):
        try:
            out = subprocess.run([exe, "-c", "import sys, venv; print(sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if out.returncode == 0 and out.stdout.strip() == "(3, 8)":
            return exe
    return None


def _builder():
    spec = importlib.util.spec_from_file_location("build_agent_pyz", REPO / "packaging" / "build_agent_pyz.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def agent_pyz(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _builder().build(tmp_path_factory.mktemp("pyz") / "fleetmon-agent.pyz")


def _node_venv(base_python: str) -> Path:
    """A virtual environment with only nvidia-ml-py, made once per interpreter and kept in the temp folder."""
    key = hashlib.sha256(os.path.realpath(base_python).encode()).hexdigest()[:12]
    venv = Path(tempfile.gettempdir()) / f"fleetmon-node-venv-{key}"
    python = venv / "bin" / "python"
    if (venv / ".ready").exists() and python.exists():
        return python
    stage = Path(tempfile.mkdtemp(prefix=venv.name + ".", dir=venv.parent))
    try:
        subprocess.run([base_python, "-m", "venv", str(stage)], check=True, capture_output=True, timeout=300)
        pip = subprocess.run([str(stage / "bin" / "python"), "-m", "pip", "install", "-q",
                              "--disable-pip-version-check", "nvidia-ml-py"],
                             capture_output=True, text=True, timeout=300)
        if pip.returncode != 0:
            pytest.skip(f"cannot install nvidia-ml-py into a fresh venv: {pip.stderr.strip()[-300:]}")
        (stage / ".ready").touch()
        try:
            stage.rename(venv)  # the venv's scripts name the folder they were made in: fix that first
        except OSError:
            pass  # another session made it meanwhile
    except subprocess.CalledProcessError as exc:
        pytest.skip(f"cannot create a venv with {base_python}: {exc.stderr.decode(errors='replace')[-300:]}")
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    if not (venv / ".ready").exists():
        pytest.skip("the node venv could not be set up")
    return python


@pytest.fixture(scope="session", params=["this", "3.8"])
def node_python(request: pytest.FixtureRequest) -> str:
    if request.param == "3.8":
        base = _python38()
        if base is None:
            pytest.skip(PY38_SKIP)
    else:
        base = getattr(sys, "_base_executable", sys.executable)
    return str(_node_venv(base))


def _run(python: str, pyz: Path, *args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    return subprocess.run([python, str(pyz), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=cwd, env=env)


def test_node_venv_holds_only_nvidia_ml_py(node_python):
    out = subprocess.run([node_python, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
                         capture_output=True, text=True, timeout=120, check=True)
    names = {p["name"].lower() for p in json.loads(out.stdout)} - {"pip", "setuptools", "wheel"}
    assert names == {"nvidia-ml-py"}


def test_version_names_the_release_and_the_revision(node_python, agent_pyz, tmp_path):
    proc = _run(node_python, agent_pyz, "--version", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"fleetmon-agent {fleetmon.__version__}")
    if shutil.which("git") and (REPO / ".git").exists():
        assert "(git " in proc.stdout


def test_help_offers_every_flag_of_fleetmon_agent(node_python, agent_pyz, tmp_path):
    proc = _run(node_python, agent_pyz, "--help", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    agent = sub.choices["agent"]  # type: ignore[index]
    flags = {s for a in agent._actions for s in a.option_strings}
    assert flags and all(f in proc.stdout for f in flags), sorted(f for f in flags if f not in proc.stdout)


def test_list_scenarios(node_python, agent_pyz, tmp_path):
    proc = _run(node_python, agent_pyz, "--list-scenarios", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[0] == "healthy" and "no-driver" in proc.stdout


def test_without_a_driver_it_says_so(node_python, agent_pyz, tmp_path):
    # The real pynvml (from the venv) loads; this machine has no NVIDIA driver, so NVML cannot start.
    if Path("/dev/nvidiactl").exists():
        pytest.skip("this machine has an NVIDIA driver")
    proc = _run(node_python, agent_pyz, "--port", "0", "--buffer", str(tmp_path / "b.db"), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr  # as `fleetmon agent`: NVML unavailable
    assert proc.stderr.startswith("fleetmon agent: NVML") and "Traceback" not in proc.stderr, proc.stderr


def test_simulated_node_answers_v1_node(node_python, agent_pyz, tmp_path):
    port_file = tmp_path / "port"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.Popen([node_python, str(agent_pyz), "--simulate", "healthy", "--port", "0",
                             "--port-file", str(port_file), "--buffer", str(tmp_path / "agent.db")],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the agent did not start listening"
            time.sleep(0.1)
        url = f"http://127.0.0.1:{int(port_file.read_text())}/v1/node"
        with urllib.request.urlopen(url, timeout=10) as resp:
            body = json.loads(resp.read())
        assert body["schema"] == WIRE_SCHEMA
        assert body["node"]["agent_version"] == fleetmon.__version__
        assert len(body["gpus"]) == 2
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err


# -- the systemd unit and docs/install-node.md name the same paths

UNIT = REPO / "packaging" / "fleetmon-agent.service"
GUIDE = REPO / "docs" / "install-node.md"


def _unit_service() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    section = ""
    for line in UNIT.read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[]")
        elif line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out.setdefault(f"{section}.{key}", []).append(value)
    return out


def _guide_commands() -> list[str]:
    """The lines of the guide's ```sh blocks (what an operator pastes)."""
    lines, inside = [], False
    for line in GUIDE.read_text().splitlines():
        if line.startswith("```"):
            inside = line.strip() == "```sh"
            continue
        if inside:
            lines.append(line.strip())
    return lines


def test_unit_runs_what_the_guide_installs():
    unit = _unit_service()
    (exec_start,) = unit["Service.ExecStart"]
    python, pyz, *args = exec_start.split()
    commands = _guide_commands()
    venv = str(Path(python).parent.parent)
    assert Path(python).parent.name == "bin" and f"python3 -m venv {venv}" in " ".join(commands)
    assert f"{venv}/bin/pip install nvidia-ml-py" in commands
    assert any(c.startswith("install ") and c.endswith(f" {pyz}") for c in commands), pyz
    assert any(c.startswith("install -d") and c.endswith(f" {Path(pyz).parent}") for c in commands)
    assert "--port 9414" in exec_start and "9414" in GUIDE.read_text().split("## 5. Firewall")[1]
    # The token file the unit requires is the one the guide creates, root's and 0600.
    (token,) = unit["Unit.AssertPathExists"]
    assert unit["Service.LoadCredential"] == [f"token:{token}"]
    assert any(f"> {token}" in c and "umask 077" in c and "secrets.token_urlsafe" in c for c in commands)
    assert any(c.startswith("install -d -m 0700") and c.endswith(f" {Path(token).parent}") for c in commands)
    assert f"install -m 0644 /tmp/{UNIT.name} /etc/systemd/system/{UNIT.name}" in commands
    assert f"journalctl -u {UNIT.stem}" in GUIDE.read_text() and "/v1/node" in GUIDE.read_text()
    # The drop-in for systemd < 247 runs the same command on the token file itself.
    old = [c for c in commands if c.startswith("ExecStart=/")]
    assert old == [f"ExecStart={python} {pyz} " + " ".join(args).replace("${CREDENTIALS_DIRECTORY}/token", token)]


def test_unit_comments_follow_the_guide():
    head = UNIT.read_text().split("[Unit]")[0]
    unit = _unit_service()
    (exec_start,) = unit["Service.ExecStart"]
    python, pyz = exec_start.split()[:2]
    assert "docs/install-node.md" in head and pyz.rpartition("/")[0] in head and str(Path(python).parents[1]) in head
    assert "/usr/local/bin/fleetmon" not in UNIT.read_text()
