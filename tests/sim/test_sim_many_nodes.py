"""Many simulated nodes in one process: each SimulatedNvml is its own machine."""

from __future__ import annotations

import pytest

from fleetmon.sim.nvml import PYNVML_API, SimulatedNvml


def test_two_nodes_in_one_process_are_independent() -> None:
    a = SimulatedNvml("a100*2", "node-a")
    b = SimulatedNvml("a100*2", "node-b")
    a.nvmlInit()
    with pytest.raises(b.NVMLError_Uninitialized):  # b's NVML is not a's
        b.nvmlDeviceGetCount()
    b.nvmlInit()
    ha, hb = a.nvmlDeviceGetHandleByIndex(0), b.nvmlDeviceGetHandleByIndex(0)
    assert a.nvmlDeviceGetUUID(ha) != b.nvmlDeviceGetUUID(hb)  # the node name gives distinct cards
    with pytest.raises(a.NVMLError_InvalidArgument):  # a handle belongs to its own node
        a.nvmlDeviceGetUUID(hb)
    a.set_lost(1)
    with pytest.raises(a.NVMLError_GpuIsLost):
        a.nvmlDeviceGetHandleByIndex(1)
    assert b.nvmlDeviceGetName(b.nvmlDeviceGetHandleByIndex(1)) == "NVIDIA A100-SXM4-80GB"


def test_the_same_node_name_gives_the_same_cards() -> None:
    one, two = SimulatedNvml("healthy", "n1"), SimulatedNvml("healthy", "n1")
    one.nvmlInit()
    two.nvmlInit()
    assert one.nvmlDeviceGetUUID(one.nvmlDeviceGetHandleByIndex(0)) == \
        two.nvmlDeviceGetUUID(two.nvmlDeviceGetHandleByIndex(0))


def test_error_classes_are_shared_like_the_module() -> None:
    a, b = SimulatedNvml(), SimulatedNvml()
    assert a.NVMLError is b.NVMLError and a.NVMLError_NotSupported is b.NVMLError_NotSupported
    assert type(a.NVMLError(a.NVML_ERROR_NOT_SUPPORTED)) is a.NVMLError_NotSupported


def test_namespace_is_the_module_api_bound_to_one_node() -> None:
    nv = SimulatedNvml("geforce")
    names = nv.namespace()
    assert set(names["__all__"]) == set(PYNVML_API)
    names["nvmlInit"]()
    assert nv.nvmlDeviceGetCount() == 4  # the namespace's functions act on this object
    names["configure"]("healthy")
    with pytest.raises(nv.NVMLError_Uninitialized):  # configure reloads the machine, uninitialised
        nv.nvmlDeviceGetCount()
