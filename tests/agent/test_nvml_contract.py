"""Contract of the NVML boundary, run against each implementation of pynvml.

The simulated twin (``fleetmon.sim.nvml.SimulatedNvml``, scenario by scenario) always;
the real pynvml under the ``nvml`` marker, skipped where NVML cannot start
(no driver, no GPU). Whatever the implementation, ``open_nvml`` works, every
telemetry field is a value of the right type or a status in {unsupported,
failed, gpu_lost}, and every inventory field is there.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest

from fleetmon.agent.nvml import SAMPLE_FIELDS, NvmlSession, load_pynvml, open_nvml
from fleetmon.errors import NvmlUnavailable
from fleetmon.fields import INVENTORY_FIELDS, NODE_FIELDS
from fleetmon.sim.nvml import SimulatedNvml

NOT_A_VALUE = {"unsupported", "failed", "gpu_lost"}
FLOAT_FIELDS = {"mem_temp_c", "fan_pct", "power_w", "power_limit_w",
                "gr_engine_active", "tensor_active", "dram_active"}  # numbers (GPM ratios 0-1); everything else an int
INVENTORY_TYPES: dict[str, type | tuple[type, ...]] = {
    **{k: str for k in ("uuid", "name", "serial", "board_part_number", "vbios", "inforom_image", "inforom_oem",
                        "inforom_ecc", "inforom_power", "pci_bus_id", "pci_device_id", "pci_subsystem_id",
                        "architecture", "compute_capability", "vendor", "firmware_version", "card_id")},
    **{k: int for k in ("index", "memory_total_mib", "max_sm_clock_mhz", "max_mem_clock_mhz", "pcie_max_gen",
                        "pcie_max_width", "pcie_gpu_max_gen", "pcie_gpu_max_width", "temp_slowdown_c",
                        "temp_shutdown_c")},
    **{k: (int, float) for k in ("power_default_w", "power_min_w", "power_max_w", "power_enforced_w")},
    **{k: bool for k in ("ecc_mode_current", "ecc_mode_pending", "persistence_mode", "mig_mode_current",
                         "mig_mode_pending")},
}
SIM_SCENARIOS = ["healthy", "healthy-a100", "geforce", "geforce-4090", "v100-retired", "a100-remap", "lost",
                 "old-driver", "healthy-h100", "healthy-t4", "fault-power_read_fail", "fault-ecc_uncorrectable"]


def _real_session() -> NvmlSession:
    try:
        module = load_pynvml()
        return open_nvml(module)
    except NvmlUnavailable as exc:
        pytest.skip(f"real NVML cannot start here: {exc}")


@pytest.fixture(params=[pytest.param(s, id=f"sim-{s}") for s in SIM_SCENARIOS]
                + [pytest.param("real", id="real-pynvml", marks=pytest.mark.nvml)])
def session(request):
    if request.param == "real":
        s = _real_session()
    else:
        s = open_nvml(SimulatedNvml(request.param), inventory_wait_s=2.0)
    yield s
    s.close()


def check_value(field: str, value: object) -> None:
    assert not isinstance(value, bool), f"{field}: bool where a number belongs"
    if field in FLOAT_FIELDS:
        assert isinstance(value, (int, float)), f"{field}: {value!r}"
    else:
        assert isinstance(value, int), f"{field}: {value!r} is not an int"


def test_node_info(session):
    info = session.node_info()
    for key in NODE_FIELDS:
        assert key in info.values, key
        assert info.values[key] is not None or info.status.get(key) in NOT_A_VALUE
    assert re.fullmatch(r"\d+\.\d+(\.\d+)?", info.values["driver_version"] or "0.0")
    assert info.values["gpu_count"] >= 1


def test_inventory_has_every_field(session):
    assert session.indices()
    for index in session.indices():
        inv = session.inventory(index)
        assert inv.index == index and inv.state in ("ok", "lost")
        for key in INVENTORY_FIELDS:
            assert key in inv.values, f"GPU {index}: {key} missing"
            value = inv.values[key]
            if value is None:
                assert inv.status.get(key) in NOT_A_VALUE, f"GPU {index}: {key} is None without a status"
            else:
                assert key not in inv.status
                assert isinstance(value, INVENTORY_TYPES[key]), f"GPU {index}: {key}={value!r}"
        assert inv.status.get("pcie_gpu_max_width") == "unsupported"  # NVML has no such call


def test_read_sample_returns_every_field(session):
    for index in session.indices():
        values, status, lost = session.read_sample(index, timeout_s=5.0)
        assert isinstance(lost, bool)
        for field in SAMPLE_FIELDS:
            assert field in values, f"GPU {index}: {field} missing"
            if values[field] is None:
                assert status.get(field) in NOT_A_VALUE, f"GPU {index}: {field} is None with {status.get(field)}"
            else:
                assert field not in status, f"GPU {index}: {field} has a value and a status"
                check_value(field, values[field])
        if lost:
            assert {status[f] for f in SAMPLE_FIELDS} == {"gpu_lost"}
        assert set(status.values()) <= NOT_A_VALUE


def test_bounded_read_of_a_hung_gpu():
    s = open_nvml(SimulatedNvml("hung", hang_s=1.5), inventory_wait_s=0.2, call_timeout_s=0.3)
    try:
        assert s.inventory(1).status["name"] == "failed" and s.inventory(1).state == "ok"
        assert s.inventory(0).status.get("name") is None
        assert s.submit_read(1, 0.3) is None  # still inside the inventory read
        fut = s.submit_read(0, 0.3)
        values, status, lost, ms, calls = fut.result(timeout=2)
        assert values["temp_c"] is not None and ms < 300 and calls > 10
    finally:
        s.close()


# ---------------------------------------------------------------------------
# The twin against the real binding's definitions (the real module imports without a driver)
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_pynvml() -> ModuleType:
    try:
        return load_pynvml()
    except NvmlUnavailable:
        pytest.skip("nvidia-ml-py is not installed")


def _names_used_by_the_boundary() -> tuple[set[str], set[str]]:
    root = Path(__file__).resolve().parents[2] / "fleetmon"
    # The boundary's own calls, and the simple fields' calls the field catalog declares for it.
    boundary = sorted((root / "agent" / "nvml").glob("*.py"))  # the package's modules
    src = "".join(p.read_text() for p in boundary) + (root / "fields.py").read_text()
    functions = set(re.findall(r'"(nvml(?:Device|System)\w+)"', src)) | {"nvmlInit", "nvmlShutdown"}
    constants = set(re.findall(r'"(NVML_\w+)"', src))
    return functions, constants


simnvml = SimulatedNvml()  # the twin's pynvml names, for the checks below


def test_twin_has_what_the_boundary_calls(real_pynvml):
    functions, constants = _names_used_by_the_boundary()
    assert len(functions) > 30 and len(constants) > 10
    for name in sorted(functions):
        assert callable(getattr(real_pynvml, name, None)), f"real pynvml lacks {name}"
        assert callable(getattr(simnvml, name, None)), f"simnvml lacks {name}"
    for name in sorted(constants):
        assert getattr(simnvml, name) == getattr(real_pynvml, name), name


def test_twin_error_classes_match(real_pynvml):
    for name in ("NVMLError_NotSupported", "NVMLError_FunctionNotFound", "NVMLError_GpuIsLost",
                 "NVMLError_Timeout", "NVMLError_Unknown", "NVMLError_NoPermission", "NVMLError_DriverNotLoaded",
                 "NVMLError_LibRmVersionMismatch", "NVMLError_Uninitialized", "NVMLError_InvalidArgument"):
        real_cls, sim_cls = getattr(real_pynvml, name), getattr(simnvml, name)
        real_err, sim_err = real_cls(), sim_cls()
        assert real_err.value == sim_err.value, name
        assert str(real_err) == str(sim_err), name
        # NVMLError(code) builds the subclass, as the agent's classification relies on.
        assert type(real_pynvml.NVMLError(real_err.value)).__name__ == name
        assert type(simnvml.NVMLError(sim_err.value)).__name__ == name
        assert isinstance(sim_err, simnvml.NVMLError)
    for name, value in vars(real_pynvml).items():
        if name.startswith("NVML_ERROR_") and hasattr(simnvml, name):
            assert getattr(simnvml, name) == value, name
