"""Issue 23, item 1: the agent's backends behind one declared interface, chosen at start."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fleetmon.agent.backend import BACKENDS, BackendUnavailable, backend_names, choose_backend
from fleetmon.agent.nvml import NvmlSession


def test_the_registry_lists_nvml_and_refuses_an_unknown_name():
    assert backend_names()[:2] == ["auto", "nvml"]
    assert choose_backend("nvml") is BACKENDS["nvml"] and BACKENDS["nvml"].vendor == "nvidia"
    with pytest.raises(BackendUnavailable, match=r"unknown backend 'cuda'; known: auto, nvml, hy-smi, amdsmi, amd-smi, "):
        choose_backend("cuda")


def test_the_nvml_backend_opens_a_simulated_node_through_the_interface():
    backend = choose_backend("nvml").open(simulate="healthy-a100", node_name="b1", inventory_wait_s=5.0)
    try:
        assert isinstance(backend, NvmlSession) and (backend.name, backend.vendor) == ("nvml", "nvidia")
        assert len(backend.indices()) == 8
        inv = backend.inventory(0)
        assert inv.values["vendor"] == "nvidia" and inv.status["card_id"] == "unsupported"
        node = backend.node_info()
        assert node.values["vendor"] == "nvidia" and node.values["runtime_version"] == node.values[
            "cuda_driver_version"]
        fut = backend.submit_read(0, 5.0)
        assert fut is not None
        values, status, lost, _ms, _calls = fut.result(10)
        assert not lost and values["temp_c"] is not None
    finally:
        backend.close()


def test_agent_list_backends_says_what_each_needs_and_whether_the_node_has_it():
    out = subprocess.run([sys.executable, "-m", "fleetmon", "agent", "--list-backends"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0].split()
    assert first[:2] == ["nvml", "nvidia"]
    assert "needs the NVIDIA driver (libnvidia-ml.so)" in out.stdout
    listed = [line.split()[0] for line in out.stdout.splitlines() if not line.startswith(" ")]
    assert listed == ["nvml", "hy-smi", "amdsmi", "amd-smi", "rocm-smi", "npu-smi", "hl-smi", "mthreads-gmi"]
    assert "npu-smi is not on PATH" in out.stdout


def test_agent_with_an_unknown_backend_exits_with_one_line():
    out = subprocess.run([sys.executable, "-m", "fleetmon", "agent", "--backend", "nope", "--buffer", "/nonexistent/x"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "fleetmon agent: unknown backend 'nope'; known: auto, nvml, hy-smi, amdsmi, amd-smi, rocm-smi, npu-smi, "
        "hl-smi, mthreads-gmi"]
