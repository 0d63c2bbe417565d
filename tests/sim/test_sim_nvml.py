"""Tests for the simulated NVML twin (fleetmon.sim.nvml.SimulatedNvml) and its scenario tables."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import inspect
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from fleetmon.sim import nvml as simnvml
from fleetmon.sim import scenarios
from fleetmon.sim.nvml import PYNVML_API, SIM_EXTRAS, SimulatedNvml

nv = SimulatedNvml()  # one simulated node for these tests; configure() reloads it

FAKE_DIR = Path(__file__).resolve().parents[1] / "helpers" / "fakenvml"
BUSY_T = 200.0  # late in the first busy phase of the default workload (busy 0-240 s)
IDLE_T = 330.0  # late in the first idle phase (240-360 s)

NS = nv.NVMLError_NotSupported


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, t: float = 0.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def start(scenario: Any, clock: FakeClock, t: float = 0.0, **kw: Any) -> None:
    clock.t = t
    nv.configure(scenario, clock=clock, start=0.0, **kw)
    nv.nvmlInit()


@pytest.fixture(autouse=True)
def _reset() -> Any:
    yield
    nv.configure("healthy")


# --- errors ---------------------------------------------------------------------

ERROR_CODES = [
    (1, "NVMLError_Uninitialized", "Uninitialized"),
    (2, "NVMLError_InvalidArgument", "Invalid Argument"),
    (3, "NVMLError_NotSupported", "Not Supported"),
    (4, "NVMLError_NoPermission", "Insufficient Permissions"),
    (5, "NVMLError_AlreadyInitialized", "Already Initialized"),
    (6, "NVMLError_NotFound", "Not Found"),
    (7, "NVMLError_InsufficientSize", "Insufficient Size"),
    (8, "NVMLError_InsufficientPower", "Insufficient External Power"),
    (9, "NVMLError_DriverNotLoaded", "Driver Not Loaded"),
    (10, "NVMLError_Timeout", "Timeout"),
    (11, "NVMLError_IrqIssue", "Interrupt Request Issue"),
    (12, "NVMLError_LibraryNotFound", "NVML Shared Library Not Found"),
    (13, "NVMLError_FunctionNotFound", "Function Not Found"),
    (14, "NVMLError_CorruptedInforom", "Corrupted infoROM"),
    (15, "NVMLError_GpuIsLost", "GPU is lost"),
    (16, "NVMLError_ResetRequired", "GPU requires restart"),
    (17, "NVMLError_OperatingSystem", "The operating system has blocked the request."),
    (18, "NVMLError_LibRmVersionMismatch", "RM has detected an NVML/RM version mismatch."),
    (999, "NVMLError_Unknown", "Unknown Error"),
]


@pytest.mark.parametrize(("code", "cls_name", "text"), ERROR_CODES)
def test_nvmlerror_maps_code_to_subclass(code: int, cls_name: str, text: str) -> None:
    cls = getattr(nv, cls_name)
    for err in (nv.NVMLError(code), cls()):
        assert type(err) is cls
        assert isinstance(err, nv.NVMLError)
        assert err.value == code
        assert str(err) == text
    assert nv.nvmlExceptionClass(code) is cls


def test_nvmlerror_unknown_code_stays_base() -> None:
    err = nv.NVMLError(12345)
    assert type(err) is nv.NVMLError and err.value == 12345
    assert "12345" in str(err)


# --- init / shutdown -------------------------------------------------------------------


def test_calls_before_init_raise_uninitialized(clock: FakeClock) -> None:
    nv.configure("healthy", clock=clock, start=0.0)
    for fn in (nv.nvmlDeviceGetCount, nv.nvmlSystemGetDriverVersion, nv.nvmlEventSetCreate, nv.nvmlShutdown):
        with pytest.raises(nv.NVMLError_Uninitialized) as info:
            fn()
        assert isinstance(info.value, nv.NVMLError) and info.value.value == nv.NVML_ERROR_UNINITIALIZED


def test_init_is_reference_counted(clock: FakeClock) -> None:
    start("healthy", clock)
    h = nv.nvmlDeviceGetHandleByIndex(0)
    nv.nvmlInit()
    nv.nvmlShutdown()
    assert nv.nvmlDeviceGetName(h) == "NVIDIA A100 80GB PCIe"
    nv.nvmlShutdown()
    with pytest.raises(nv.NVMLError_Uninitialized):
        nv.nvmlDeviceGetName(h)
    with pytest.raises(nv.NVMLError_Uninitialized):
        nv.nvmlShutdown()


@pytest.mark.parametrize(("scenario", "cls"), [("no-driver", "NVMLError_DriverNotLoaded"),
                                               ("driver-mismatch", "NVMLError_LibRmVersionMismatch")])
def test_init_errors(clock: FakeClock, scenario: str, cls: str) -> None:
    nv.configure(scenario, clock=clock, start=0.0)
    with pytest.raises(getattr(nv, cls)):
        nv.nvmlInit()
    with pytest.raises(nv.NVMLError_Uninitialized):
        nv.nvmlDeviceGetCount()


def test_system_versions(clock: FakeClock) -> None:
    start("healthy-h100", clock)
    assert nv.nvmlSystemGetDriverVersion() == "550.54.15"
    assert nv.nvmlSystemGetCudaDriverVersion() == 12040
    assert nv.nvmlSystemGetCudaDriverVersion_v2() == 12040
    assert nv.nvmlSystemGetNVMLVersion() == "12.550.54.15"


# --- every function on every scenario ---------------------------------------------------

Call = Callable[[Any], Any]
CALLS: dict[str, Call] = {
    "name": nv.nvmlDeviceGetName,
    "uuid": nv.nvmlDeviceGetUUID,
    "serial": nv.nvmlDeviceGetSerial,
    "board_part": nv.nvmlDeviceGetBoardPartNumber,
    "vbios": nv.nvmlDeviceGetVbiosVersion,
    "inforom_image": nv.nvmlDeviceGetInforomImageVersion,
    "inforom_oem": lambda h: nv.nvmlDeviceGetInforomVersion(h, nv.NVML_INFOROM_OEM),
    "inforom_ecc": lambda h: nv.nvmlDeviceGetInforomVersion(h, nv.NVML_INFOROM_ECC),
    "inforom_power": lambda h: nv.nvmlDeviceGetInforomVersion(h, nv.NVML_INFOROM_POWER),
    "pci": nv.nvmlDeviceGetPciInfo,
    "arch": nv.nvmlDeviceGetArchitecture,
    "cc": nv.nvmlDeviceGetCudaComputeCapability,
    "memory": nv.nvmlDeviceGetMemoryInfo,
    "memory_v2": lambda h: nv.nvmlDeviceGetMemoryInfo(h, version=nv.nvmlMemory_v2),
    "power_default": nv.nvmlDeviceGetPowerManagementDefaultLimit,
    "power_limit": nv.nvmlDeviceGetPowerManagementLimit,
    "power_constraints": nv.nvmlDeviceGetPowerManagementLimitConstraints,
    "power_enforced": nv.nvmlDeviceGetEnforcedPowerLimit,
    "max_sm": lambda h: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM),
    "max_mem": lambda h: nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM),
    "clock_gr": lambda h: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_GRAPHICS),
    "clock_sm": lambda h: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
    "clock_mem": lambda h: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM),
    "pcie_max_gen": nv.nvmlDeviceGetMaxPcieLinkGeneration,
    "pcie_max_width": nv.nvmlDeviceGetMaxPcieLinkWidth,
    "pcie_gpu_max_gen": nv.nvmlDeviceGetGpuMaxPcieLinkGeneration,
    "pcie_gen": nv.nvmlDeviceGetCurrPcieLinkGeneration,
    "pcie_width": nv.nvmlDeviceGetCurrPcieLinkWidth,
    "pcie_replay": nv.nvmlDeviceGetPcieReplayCounter,
    "pcie_tx": lambda h: nv.nvmlDeviceGetPcieThroughput(h, nv.NVML_PCIE_UTIL_TX_BYTES),
    "pcie_rx": lambda h: nv.nvmlDeviceGetPcieThroughput(h, nv.NVML_PCIE_UTIL_RX_BYTES),
    "ecc_mode": nv.nvmlDeviceGetEccMode,
    "persistence": nv.nvmlDeviceGetPersistenceMode,
    "mig": nv.nvmlDeviceGetMigMode,
    "temp": lambda h: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
    "temp_shutdown": lambda h: nv.nvmlDeviceGetTemperatureThreshold(h, nv.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN),
    "temp_slowdown": lambda h: nv.nvmlDeviceGetTemperatureThreshold(h, nv.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN),
    "fields": lambda h: nv.nvmlDeviceGetFieldValues(h, [nv.NVML_FI_DEV_MEMORY_TEMP]),
    "num_fans": nv.nvmlDeviceGetNumFans,
    "fan": nv.nvmlDeviceGetFanSpeed,
    "fan_v2": lambda h: nv.nvmlDeviceGetFanSpeed_v2(h, 0),
    "power": nv.nvmlDeviceGetPowerUsage,
    "energy": nv.nvmlDeviceGetTotalEnergyConsumption,
    "util": nv.nvmlDeviceGetUtilizationRates,
    "pstate": nv.nvmlDeviceGetPerformanceState,
    "reasons": nv.nvmlDeviceGetCurrentClocksEventReasons,
    "reasons_old": nv.nvmlDeviceGetCurrentClocksThrottleReasons,
    "ecc_corr_vol": lambda h: nv.nvmlDeviceGetTotalEccErrors(
        h, nv.NVML_MEMORY_ERROR_TYPE_CORRECTED, nv.NVML_VOLATILE_ECC),
    "ecc_unc_agg": lambda h: nv.nvmlDeviceGetTotalEccErrors(
        h, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_AGGREGATE_ECC),
    "retired_sbe": lambda h: nv.nvmlDeviceGetRetiredPages(
        h, nv.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS),
    "retired_dbe": lambda h: nv.nvmlDeviceGetRetiredPages(h, nv.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR),
    "retired_pending": nv.nvmlDeviceGetRetiredPagesPendingStatus,
    "remap": nv.nvmlDeviceGetRemappedRows,
    "minor": nv.nvmlDeviceGetMinorNumber,
    "events": nv.nvmlDeviceGetSupportedEventTypes,
}

TYPES: dict[str, type | tuple[type, ...]] = {
    "name": str, "uuid": str, "serial": str, "board_part": str, "vbios": str, "inforom_image": str,
    "inforom_oem": str, "inforom_ecc": str, "inforom_power": str, "pci": nv.nvmlPciInfo_t, "arch": int,
    "cc": tuple, "memory": nv.c_nvmlMemory_t, "memory_v2": nv.c_nvmlMemory_v2_t, "power_constraints": list,
    "ecc_mode": list, "mig": list, "util": nv.c_nvmlUtilization_t, "retired_sbe": list, "retired_dbe": list,
    "remap": tuple, "fields": object,
}

# Which calls raise NotSupported, by model key (everything else must answer).
_GEFORCE_NS = {"serial", "board_part", "inforom_ecc", "inforom_power", "ecc_mode", "ecc_corr_vol",
               "ecc_unc_agg", "retired_sbe", "retired_dbe", "retired_pending", "remap", "mig"}
_DC_NS = {"inforom_power", "num_fans", "fan", "fan_v2"}
NOT_SUPPORTED: dict[str, set[str]] = {
    "rtx3090": _GEFORCE_NS,
    # ECC can be switched on but is off: counts NotSupported, mode answers; remap answers zeros (gpud).
    "rtx4090": (_GEFORCE_NS - {"ecc_mode", "remap"}),
    "v100": _DC_NS | {"remap", "mig"},
    "t4": _DC_NS | {"remap", "mig"},
    "a100": _DC_NS | {"retired_sbe", "retired_dbe", "retired_pending"},
    "a100pcie": _DC_NS | {"retired_sbe", "retired_dbe", "retired_pending"},
    "h100": _DC_NS | {"retired_sbe", "retired_dbe", "retired_pending"},
    "a10": _DC_NS | {"retired_sbe", "retired_dbe", "retired_pending", "mig"},
}
MEM_TEMP_SUPPORTED = {"v100", "a100", "a100pcie", "h100"}

TABLE_SCENARIOS = [n for n in scenarios.scenario_names()
                   if n not in ("no-driver", "driver-mismatch", "hung", "fault-hung", "lost", "fault-gpu_lost")]


def _expected_error(model: str, call: str, scenario: str, gpu: int, t: float) -> type | None:
    spec = scenarios.resolve(scenario)
    faults = {f.kind for f in spec.faults if f.gpu == gpu and f.active(t)}
    if call == "reasons" and (spec.old_driver or "old_driver" in faults):
        return nv.NVMLError_FunctionNotFound
    if call == "power" and "power_read_fail" in faults:
        return nv.NVMLError_Unknown
    if call in NOT_SUPPORTED[model]:
        return NS
    return None


@pytest.mark.parametrize("scenario", TABLE_SCENARIOS)
@pytest.mark.parametrize("t", [BUSY_T, IDLE_T])
def test_every_call_answers_or_raises_the_right_error(clock: FakeClock, scenario: str, t: float) -> None:
    start(scenario, clock, t)
    spec = nv.node_spec()
    count = nv.nvmlDeviceGetCount()
    assert isinstance(count, int) and count == len(spec.gpus) - sum(
        1 for f in spec.faults if f.kind == "gpu_lost" and f.params["vanish"] and f.active(t))
    for index in range(count):
        h = nv.nvmlDeviceGetHandleByIndex(index)
        assert nv.nvmlDeviceGetHandleByIndex(index) is h
        phys = nv.nvmlDeviceGetMinorNumber(h)
        model = spec.gpus[phys].profile.key
        for call, fn in CALLS.items():
            want = _expected_error(model, call, scenario, phys, t)
            if want is not None:
                with pytest.raises(want) as info:
                    fn(h)
                assert isinstance(info.value, nv.NVMLError)
                assert info.value.value == want().value, (scenario, index, call)
                continue
            value = fn(h)
            assert isinstance(value, TYPES.get(call, int)), (scenario, index, call, value)
        fv = nv.nvmlDeviceGetFieldValues(h, [nv.NVML_FI_DEV_MEMORY_TEMP])[0]
        assert fv.fieldId == nv.NVML_FI_DEV_MEMORY_TEMP
        if model in MEM_TEMP_SUPPORTED:
            assert fv.nvmlReturn == nv.NVML_SUCCESS and fv.valueType == nv.NVML_VALUE_TYPE_UNSIGNED_INT
            assert 20 < fv.value.uiVal < 110
        else:
            assert fv.nvmlReturn == nv.NVML_ERROR_NOT_SUPPORTED


def test_identity_values_are_plausible(clock: FakeClock) -> None:
    start("healthy-a100", clock, BUSY_T)
    uuids = set()
    for i in range(8):
        h = nv.nvmlDeviceGetHandleByIndex(i)
        pci = nv.nvmlDeviceGetPciInfo(h)
        assert isinstance(pci.busId, str) and len(pci.busId) == 16 and pci.busId.startswith("00000000:")
        assert pci.busIdLegacy == pci.busId[4:]
        assert (pci.domain, pci.device) == (0, 0) and pci.busId[9:11] == f"{pci.bus:02X}"
        assert pci.pciDeviceId & 0xFFFF == 0x10DE
        uuid = nv.nvmlDeviceGetUUID(h)
        assert uuid.startswith("GPU-") and len(uuid) == 40
        assert nv.nvmlDeviceGetHandleByUUID(uuid) is h
        assert nv.nvmlDeviceGetIndex(h) == i
        uuids.add(uuid)
        assert nv.nvmlDeviceGetArchitecture(h) == nv.NVML_DEVICE_ARCH_AMPERE
        assert nv.nvmlDeviceGetCudaComputeCapability(h) == (8, 0)
        assert nv.nvmlDeviceGetPowerManagementDefaultLimit(h) == 400_000
        assert nv.nvmlDeviceGetPowerManagementLimitConstraints(h) == [100_000, 400_000]
        assert nv.nvmlDeviceGetMemoryInfo(h).total == 80 * 1024**3
        assert nv.nvmlDeviceGetEccMode(h) == [1, 1]
        assert nv.nvmlDeviceGetMigMode(h) == [0, 0]
    assert len(uuids) == 8
    with pytest.raises(nv.NVMLError_NotFound):
        nv.nvmlDeviceGetHandleByUUID("GPU-00000000-0000-0000-0000-000000000000")
    with pytest.raises(nv.NVMLError_InvalidArgument):
        nv.nvmlDeviceGetHandleByIndex(8)
    with pytest.raises(nv.NVMLError_InvalidArgument):
        nv.nvmlDeviceGetName(object())


# --- lost and hung GPUs --------------------------------------------------------------------


def test_lost_gpu_raises_gpu_is_lost_everywhere(clock: FakeClock) -> None:
    start("lost", clock, BUSY_T)
    assert nv.nvmlDeviceGetCount() == 4
    with pytest.raises(nv.NVMLError_GpuIsLost) as info:
        nv.nvmlDeviceGetHandleByIndex(2)
    assert info.value.value == nv.NVML_ERROR_GPU_IS_LOST and str(info.value) == "GPU is lost"
    assert nv.nvmlDeviceGetName(nv.nvmlDeviceGetHandleByIndex(3)) == "NVIDIA A100-SXM4-80GB"


def test_gpu_falls_off_the_bus_at_onset(clock: FakeClock) -> None:
    start("lost-later", clock, 100.0)
    handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(4)]
    assert nv.nvmlDeviceGetTemperature(handles[3], nv.NVML_TEMPERATURE_GPU) > 0
    clock.t = 121.0
    assert nv.nvmlDeviceGetCount() == 3  # vanished from enumeration
    for call, fn in CALLS.items():
        with pytest.raises(nv.NVMLError_GpuIsLost):
            fn(handles[3])
    assert nv.nvmlDeviceGetName(handles[2]) == "NVIDIA A100-SXM4-80GB"


def test_set_lost_live_keeps_enumeration(clock: FakeClock) -> None:
    start("healthy", clock, 10.0)
    h = nv.nvmlDeviceGetHandleByIndex(1)
    nv.set_lost(1)
    assert nv.nvmlDeviceGetCount() == 2
    with pytest.raises(nv.NVMLError_GpuIsLost):
        nv.nvmlDeviceGetPowerUsage(h)
    with pytest.raises(nv.NVMLError_GpuIsLost):
        nv.nvmlDeviceGetHandleByIndex(1)


def test_hung_gpu_blocks_while_another_answers(clock: FakeClock) -> None:
    start("hung", clock, BUSY_T, hang_s=1.0)
    hung, ok = nv.nvmlDeviceGetHandleByIndex(1), nv.nvmlDeviceGetHandleByIndex(0)
    outcome: dict[str, Any] = {}

    def call() -> None:
        t0 = time.monotonic()
        try:
            nv.nvmlDeviceGetPowerUsage(hung)
        except nv.NVMLError as exc:
            outcome["error"] = exc
        outcome["elapsed"] = time.monotonic() - t0

    worker = threading.Thread(target=call)
    worker.start()
    time.sleep(0.05)
    t0 = time.monotonic()
    assert nv.nvmlDeviceGetPowerUsage(ok) > 0
    assert nv.nvmlDeviceGetCount() == 4
    assert time.monotonic() - t0 < 0.5
    assert worker.is_alive()  # still blocked
    worker.join(5)
    assert isinstance(outcome["error"], nv.NVMLError_Timeout)
    assert outcome["elapsed"] >= 0.95


def test_hung_gpu_can_answer_late(clock: FakeClock) -> None:
    start({"gpus": ["a10"] * 2, "faults": [{"kind": "hung", "gpu": 0, "hang_s": 0.2, "then": "return"}]}, clock)
    t0 = time.monotonic()
    assert nv.nvmlDeviceGetName(nv.nvmlDeviceGetHandleByIndex(0)) == "NVIDIA A10"
    assert time.monotonic() - t0 >= 0.19


# --- events --------------------------------------------------------------------------------


def _event_set(count: int, mask: int = nv.nvmlEventTypeXidCriticalError) -> tuple[Any, list[Any]]:
    es = nv.nvmlEventSetCreate()
    handles = [nv.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    for h in handles:
        nv.nvmlDeviceRegisterEvents(h, mask, es)
    return es, handles


def test_event_wait_times_out_after_waiting(clock: FakeClock) -> None:
    start("healthy", clock)
    es, _ = _event_set(2)
    t0 = time.monotonic()
    with pytest.raises(nv.NVMLError_Timeout) as info:
        nv.nvmlEventSetWait_v2(es, 200)
    assert time.monotonic() - t0 >= 0.19
    assert isinstance(info.value, nv.NVMLError) and info.value.value == nv.NVML_ERROR_TIMEOUT
    nv.nvmlEventSetFree(es)


def test_event_wait_delivers_injected_xid(clock: FakeClock) -> None:
    start("healthy-a100", clock, 5.0)
    es, handles = _event_set(8)
    nv.inject(5, "xid", code=94)
    data = nv.nvmlEventSetWait_v2(es, 1000)
    assert data.device is handles[5]
    assert data.eventType == nv.nvmlEventTypeXidCriticalError and data.eventData == 94
    assert isinstance(data.gpuInstanceId, int) and isinstance(data.computeInstanceId, int)
    with pytest.raises(nv.NVMLError_Timeout):  # delivered once
        nv.nvmlEventSetWait(es, 50)


def test_event_wait_wakes_on_inject_from_another_thread(clock: FakeClock) -> None:
    start("healthy", clock)
    es, handles = _event_set(2)
    timer = threading.Timer(0.1, lambda: nv.inject(1, "xid", code=13))
    timer.start()
    t0 = time.monotonic()
    data = nv.nvmlEventSetWait(es, 3000)
    assert data.eventData == 13 and data.device is handles[1]
    assert time.monotonic() - t0 < 1.0
    timer.join()


def test_scheduled_xid_repeats_and_old_ones_are_not_replayed(clock: FakeClock) -> None:
    start("fault-xid", clock, 30.0)  # Xid 13 on GPU 1 at 0, 60, 120 ... s
    es, handles = _event_set(4)
    with pytest.raises(nv.NVMLError_Timeout):  # the one at 0 s predates the registration
        nv.nvmlEventSetWait_v2(es, 20)
    clock.t = 125.0
    got = [nv.nvmlEventSetWait_v2(es, 20) for _ in range(2)]
    assert [e.eventData for e in got] == [13, 13] and all(e.device is handles[1] for e in got)
    with pytest.raises(nv.NVMLError_Timeout):
        nv.nvmlEventSetWait_v2(es, 20)


def test_gpu_lost_emits_xid_79_then_wait_reports_loss(clock: FakeClock) -> None:
    start("lost-later", clock, 60.0)
    es, handles = _event_set(4)
    clock.t = 121.0
    data = nv.nvmlEventSetWait_v2(es, 500)
    assert data.eventData == 79 and data.device is handles[3]
    with pytest.raises(nv.NVMLError_GpuIsLost):
        nv.nvmlEventSetWait_v2(es, 50)
    with pytest.raises(nv.NVMLError_Timeout):
        nv.nvmlEventSetWait_v2(es, 50)


def test_ecc_events_not_supported_on_geforce(clock: FakeClock) -> None:
    start("geforce", clock)
    h = nv.nvmlDeviceGetHandleByIndex(0)
    assert not nv.nvmlDeviceGetSupportedEventTypes(h) & nv.nvmlEventTypeDoubleBitEccError
    es = nv.nvmlEventSetCreate()
    with pytest.raises(nv.NVMLError_NotSupported):
        nv.nvmlDeviceRegisterEvents(h, nv.nvmlEventTypeDoubleBitEccError | nv.nvmlEventTypeXidCriticalError, es)
    nv.nvmlDeviceRegisterEvents(h, nv.nvmlEventTypeXidCriticalError, es)


def test_ecc_uncorrectable_emits_xid_48_and_dbe_event(clock: FakeClock) -> None:
    start("healthy-a100", clock, 10.0)
    es, handles = _event_set(2, nv.nvmlEventTypeXidCriticalError | nv.nvmlEventTypeDoubleBitEccError)
    nv.inject(0, "ecc_uncorrectable")
    got = {nv.nvmlEventSetWait_v2(es, 200).eventType for _ in range(2)}
    assert got == {nv.nvmlEventTypeXidCriticalError, nv.nvmlEventTypeDoubleBitEccError}


# --- telemetry -------------------------------------------------------------------------------


def _series(scenario: str, seed: int, times: list[float]) -> list[tuple[Any, ...]]:
    clock = FakeClock()
    start(scenario, clock, 0.0, seed=seed)
    out = []
    for t in times:
        clock.t = t
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            out.append((nv.nvmlDeviceGetUUID(h), nv.nvmlDeviceGetPowerUsage(h),
                        nv.nvmlDeviceGetTemperature(h, 0), nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
                        nv.nvmlDeviceGetUtilizationRates(h).gpu, nv.nvmlDeviceGetMemoryInfo(h).used,
                        nv.nvmlDeviceGetTotalEnergyConsumption(h), nv.nvmlDeviceGetCurrentClocksEventReasons(h)))
    return out


def test_telemetry_is_deterministic_for_seed_and_clock() -> None:
    times = [1.0, 33.3, 250.0, 400.5, 1000.0]
    a = _series("mixed", 3, times)
    assert a == _series("mixed", 3, times)
    assert a != _series("mixed", 4, times)


@pytest.mark.parametrize("scenario", ["healthy-a100", "geforce", "healthy-t4", "healthy-h100", "geforce-4090"])
def test_busy_and_idle_look_right(clock: FakeClock, scenario: str) -> None:
    start(scenario, clock, BUSY_T)
    h = nv.nvmlDeviceGetHandleByIndex(0)
    p = scenarios.PROFILES[nv.node_spec().gpus[0].profile.key]
    limit = nv.nvmlDeviceGetEnforcedPowerLimit(h)
    assert nv.is_busy(0)
    assert nv.nvmlDeviceGetUtilizationRates(h).gpu >= 90
    assert 0.7 * limit < nv.nvmlDeviceGetPowerUsage(h) < limit
    assert nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM) >= 0.9 * p.boost_mhz
    assert not nv.nvmlDeviceGetCurrentClocksEventReasons(h) & nv.nvmlClocksEventReasonGpuIdle
    assert nv.nvmlDeviceGetCurrPcieLinkGeneration(h) == nv.nvmlDeviceGetMaxPcieLinkGeneration(h)
    assert nv.nvmlDeviceGetPerformanceState(h) == 0
    busy_temp = nv.nvmlDeviceGetTemperature(h, 0)
    assert busy_temp < p.temp_slowdown_c - 5
    used_busy = nv.nvmlDeviceGetMemoryInfo(h).used
    clock.t = IDLE_T
    assert not nv.is_busy(0)
    assert nv.nvmlDeviceGetUtilizationRates(h).gpu == 0
    assert nv.nvmlDeviceGetPowerUsage(h) < 0.3 * limit
    assert nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM) == p.idle_sm_mhz
    assert nv.nvmlDeviceGetCurrentClocksEventReasons(h) & nv.nvmlClocksEventReasonGpuIdle
    assert nv.nvmlDeviceGetCurrPcieLinkGeneration(h) == 1  # idle downtraining is normal
    assert nv.nvmlDeviceGetTemperature(h, 0) < busy_temp
    assert nv.nvmlDeviceGetMemoryInfo(h).used < used_busy


def test_energy_integrates_power(clock: FakeClock) -> None:
    start("healthy-a100", clock, 0.0)
    h = nv.nvmlDeviceGetHandleByIndex(0)
    e0 = nv.nvmlDeviceGetTotalEnergyConsumption(h)
    clock.t = 240.0
    e1 = nv.nvmlDeviceGetTotalEnergyConsumption(h)
    clock.t = 360.0
    e2 = nv.nvmlDeviceGetTotalEnergyConsumption(h)
    busy_w = (e1 - e0) / 1000 / 240
    idle_w = (e2 - e1) / 1000 / 120
    assert 0.7 * 400 < busy_w < 400
    assert 40 < idle_w < 80
    clock.t = 100.0  # the clock may go backwards in tests; the counter is a function of time
    assert e0 < nv.nvmlDeviceGetTotalEnergyConsumption(h) < e1


def test_pcie_degraded_only_while_busy(clock: FakeClock) -> None:
    start("fault-pcie_degraded", clock, IDLE_T)
    healthy, bad = nv.nvmlDeviceGetHandleByIndex(0), nv.nvmlDeviceGetHandleByIndex(1)
    assert nv.nvmlDeviceGetCurrPcieLinkGeneration(healthy) == nv.nvmlDeviceGetCurrPcieLinkGeneration(bad) == 1
    clock.t = BUSY_T
    assert nv.nvmlDeviceGetCurrPcieLinkGeneration(healthy) == 4
    assert nv.nvmlDeviceGetCurrPcieLinkWidth(healthy) == 16
    assert nv.nvmlDeviceGetCurrPcieLinkGeneration(bad) == 1
    assert nv.nvmlDeviceGetCurrPcieLinkWidth(bad) <= 8
    assert nv.nvmlDeviceGetMaxPcieLinkGeneration(bad) == nv.nvmlDeviceGetGpuMaxPcieLinkGeneration(bad) == 4
    assert nv.nvmlDeviceGetUtilizationRates(bad).gpu >= 90


def test_slot_caps_link_generation(clock: FakeClock) -> None:
    start({"gpus": [{"model": "h100", "slot_gen": 4}]}, clock, BUSY_T)
    h = nv.nvmlDeviceGetHandleByIndex(0)
    assert nv.nvmlDeviceGetGpuMaxPcieLinkGeneration(h) == 5
    assert nv.nvmlDeviceGetMaxPcieLinkGeneration(h) == 4
    assert nv.nvmlDeviceGetCurrPcieLinkGeneration(h) == 4


# --- faults, table-driven ------------------------------------------------------------------

def _reasons(h: Any) -> int:
    return nv.nvmlDeviceGetCurrentClocksThrottleReasons(h)


def _brake_seen(h: Any, clock: FakeClock) -> bool:
    for t in range(100, 200, 5):
        clock.t = float(t)
        r = _reasons(h)
        if r & nv.nvmlClocksEventReasonHwPowerBrakeSlowdown:
            limit = nv.nvmlDeviceGetEnforcedPowerLimit(h)
            assert r & nv.nvmlClocksEventReasonHwSlowdown
            assert nv.nvmlDeviceGetPowerUsage(h) < 0.5 * limit
            assert nv.nvmlDeviceGetUtilizationRates(h).gpu >= 90
            return True
    return False


FAULT_CHECKS: dict[str, Callable[[Any, FakeClock], bool]] = {
    "ecc_uncorrectable": lambda h, c: (
        nv.nvmlDeviceGetTotalEccErrors(h, 1, 0) == nv.nvmlDeviceGetTotalEccErrors(h, 1, 1) == 1
        and nv.nvmlDeviceGetRemappedRows(h)[1] == 1),
    "ecc_correctable_storm": lambda h, c: nv.nvmlDeviceGetTotalEccErrors(h, 0, 0) >= 600 * BUSY_T / 60 - 1,
    "retired_pages": lambda h, c: (
        len(nv.nvmlDeviceGetRetiredPages(h, 0)) + len(nv.nvmlDeviceGetRetiredPages(h, 1)) == 58
        and nv.nvmlDeviceGetRetiredPagesPendingStatus(h) == 1),
    "row_remap_pending": lambda h, c: nv.nvmlDeviceGetRemappedRows(h) == (1, 0, 1, 0),
    "row_remap_failure": lambda h, c: nv.nvmlDeviceGetRemappedRows(h) == (0, 8, 0, 1),
    "xid": lambda h, c: True,  # see the event tests
    "pcie_degraded": lambda h, c: nv.nvmlDeviceGetCurrPcieLinkGeneration(h) == 1,
    "pcie_replays": lambda h, c: nv.nvmlDeviceGetPcieReplayCounter(h) >= 30 * BUSY_T / 60,
    "power_brake": _brake_seen,
    "power_read_fail": lambda h, c: pytest.raises(nv.NVMLError_Unknown, nv.nvmlDeviceGetPowerUsage, h) is not None,
    "power_capped": lambda h, c: (
        nv.nvmlDeviceGetEnforcedPowerLimit(h) < nv.nvmlDeviceGetPowerManagementDefaultLimit(h)
        and _reasons(h) & nv.nvmlClocksEventReasonSwPowerCap
        and nv.nvmlDeviceGetPowerUsage(h) < nv.nvmlDeviceGetEnforcedPowerLimit(h)),
    "thermal": lambda h, c: (
        nv.nvmlDeviceGetTemperature(h, 0) >= nv.nvmlDeviceGetTemperatureThreshold(h, 1) - 1
        and _reasons(h) & (nv.nvmlClocksEventReasonHwThermalSlowdown | nv.nvmlClocksEventReasonSwThermalSlowdown)),
    "fan_stuck": lambda h, c: (nv.nvmlDeviceGetFanSpeed_v2(h, 0) == 0
                               and nv.nvmlDeviceGetTemperature(h, 0) > 85),
    "derate": lambda h, c: (
        abs(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM) / 1410 - 0.62) < 0.02 and _reasons(h) == 0),
    "old_driver": lambda h, c: pytest.raises(nv.NVMLError_FunctionNotFound,
                                             nv.nvmlDeviceGetCurrentClocksEventReasons, h) is not None,
}


@pytest.mark.parametrize("kind", [k for k in scenarios.FAULT_KINDS if k not in ("gpu_lost", "hung")])
def test_fault_scenario_shows_its_signature(clock: FakeClock, kind: str) -> None:
    start(f"fault-{kind}", clock, BUSY_T)
    h = nv.nvmlDeviceGetHandleByIndex(1)
    assert FAULT_CHECKS[kind](h, clock), kind
    healthy = nv.nvmlDeviceGetHandleByIndex(0)
    clock.t = BUSY_T
    assert not _reasons(healthy) & ~nv.nvmlClocksEventReasonSwPowerCap


def test_fault_onset_and_duration(clock: FakeClock) -> None:
    start({"gpus": ["a100"], "faults": [{"kind": "thermal", "gpu": 0, "onset_s": 400, "duration_s": 600}]},
          clock, BUSY_T)
    h = nv.nvmlDeviceGetHandleByIndex(0)
    assert nv.nvmlDeviceGetTemperature(h, 0) < 80
    clock.t = 560.0  # busy again, hot
    assert nv.nvmlDeviceGetTemperature(h, 0) >= 88
    clock.t = 1280.0  # busy, fault over
    assert nv.nvmlDeviceGetTemperature(h, 0) < 80


def test_derate_can_show_sw_power_cap_only(clock: FakeClock) -> None:
    start({"gpus": ["a100"], "faults": [{"kind": "derate", "gpu": 0, "sw_power_cap": True}]}, clock, BUSY_T)
    h = nv.nvmlDeviceGetHandleByIndex(0)
    assert _reasons(h) == nv.nvmlClocksEventReasonSwPowerCap
    assert nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM) < 0.65 * 1410
    assert nv.nvmlDeviceGetPowerUsage(h) < 0.75 * nv.nvmlDeviceGetEnforcedPowerLimit(h)


def test_counters_grow_with_time(clock: FakeClock) -> None:
    start("rtx4090*2+pcie_replays@1:0", clock, 60.0)
    h = nv.nvmlDeviceGetHandleByIndex(1)
    r0 = nv.nvmlDeviceGetPcieReplayCounter(h)
    clock.t = 120.0
    assert nv.nvmlDeviceGetPcieReplayCounter(h) - r0 > 8  # DCGM's per-minute limit
    start("a100*2+ecc_correctable_storm@0:100", clock, 50.0)
    h = nv.nvmlDeviceGetHandleByIndex(0)
    c0 = nv.nvmlDeviceGetTotalEccErrors(h, 0, 0)
    assert c0 == 0
    clock.t = 160.0
    assert nv.nvmlDeviceGetTotalEccErrors(h, 0, 0) == 600
    assert nv.nvmlDeviceGetTotalEccErrors(h, 0, 1) >= 600


def test_old_driver_keeps_the_deprecated_name(clock: FakeClock) -> None:
    start("old-driver", clock, IDLE_T)
    h = nv.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(nv.NVMLError_FunctionNotFound):
        nv.nvmlDeviceGetCurrentClocksEventReasons(h)
    assert nv.nvmlDeviceGetCurrentClocksThrottleReasons(h) & nv.nvmlClocksThrottleReasonGpuIdle


def test_inject_live_fault(clock: FakeClock) -> None:
    start("healthy", clock, BUSY_T)
    h = nv.nvmlDeviceGetHandleByIndex(0)
    assert nv.nvmlDeviceGetEnforcedPowerLimit(h) == 300_000
    nv.inject(0, "power_capped", frac=0.5)
    assert nv.nvmlDeviceGetEnforcedPowerLimit(h) == 150_000
    with pytest.raises(ValueError):
        nv.inject(0, "no_such_fault")
    with pytest.raises(ValueError):
        nv.inject(9, "thermal")


# --- scenario specs -------------------------------------------------------------------------


def test_scenario_table_covers_the_brief() -> None:
    names = set(scenarios.scenario_names())
    assert {"healthy-a100", "geforce", "v100-retired", "a100-remap", "lost", "hung", "mixed"} <= names
    assert {f"fault-{k}" for k in scenarios.FAULT_KINDS} <= names
    assert any(n.startswith("demo-") for n in names)
    for n in names:
        assert isinstance(scenarios.describe(n), str) and scenarios.describe(n)
    assert simnvml.SCENARIOS is scenarios.SCENARIOS
    for model in ("NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 4090", "Tesla V100-SXM2-32GB",
                  "NVIDIA A100-SXM4-80GB", "Tesla T4", "NVIDIA H100 80GB HBM3", "NVIDIA A10"):
        assert scenarios.PROFILES[scenarios.model_key(model)].name == model


def test_composite_spec_with_options(clock: FakeClock) -> None:
    start("rtx4090*4+pcie_degraded@1:0+xid@3:60;driver=550.54.15;hostname=rig7;seed=5", clock)
    spec = nv.node_spec()
    assert (spec.hostname, spec.driver, spec.seed) == ("rig7", "550.54.15", 5)
    assert nv.nvmlDeviceGetCount() == 4
    assert [(f.kind, f.gpu, f.onset_s) for f in spec.faults] == [("pcie_degraded", 1, 0.0), ("xid", 3, 60.0)]
    assert scenarios.resolve("a100*2,t4*2").gpus[2].profile.name == "Tesla T4"


@pytest.mark.parametrize("bad", ["nope", "rtx9999*2", "a100*2+frobnicate@0", "a100*2+thermal@7",
                                 "a100*2+thermal", "a100*2;color=red"])
def test_bad_specs_are_rejected(bad: str) -> None:
    with pytest.raises((KeyError, ValueError)):
        scenarios.resolve(bad)


def test_json_scenario_file(tmp_path: Path, clock: FakeClock) -> None:
    entry = {"description": "from a file", "hostname": "box", "driver": "525.147.05",
             "gpus": ["t4", {"model": "Tesla T4", "workload": {"mode": "idle"}}],
             "faults": [{"kind": "retired_pages", "gpu": 0, "sbe": 3, "dbe": 1}]}
    path = tmp_path / "node.json"
    path.write_text(json.dumps(entry))
    start(str(path), clock, BUSY_T)
    spec = nv.node_spec()
    assert spec.old_driver and spec.hostname == "box"
    h0, h1 = nv.nvmlDeviceGetHandleByIndex(0), nv.nvmlDeviceGetHandleByIndex(1)
    assert len(nv.nvmlDeviceGetRetiredPages(h0, 0)) == 3
    assert nv.nvmlDeviceGetUtilizationRates(h1).gpu == 0  # per-GPU idle workload


def test_phase_helpers() -> None:
    w = {"mode": "cycle", "busy_s": 10, "idle_s": 5, "offset_s": 0}
    assert [scenarios.busy_at(w, t) for t in (0, 9.9, 10, 14.9, 15)] == [True, True, False, False, True]
    assert scenarios.busy_at({"mode": "idle"}, 5) is False
    assert scenarios.cuda_version("535.161.08") == 12020


# --- the shim and conformance with the real pynvml ----------------------------------------------


def test_fakenvml_shim_configures_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEETMON_SIM_SCENARIO", "geforce")
    spec = importlib.util.spec_from_file_location("_fake_pynvml_shim", FAKE_DIR / "pynvml.py")
    assert spec and spec.loader
    shim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shim)
    shim.nvmlInit()
    assert shim.nvmlDeviceGetCount() == 4
    assert shim.NVMLError is nv.NVMLError and shim.NVMLError_GpuIsLost is nv.NVMLError_GpuIsLost
    with pytest.raises(shim.NVMLError_NotSupported):
        shim.nvmlDeviceGetSerial(shim.nvmlDeviceGetHandleByIndex(0))
    assert len((FAKE_DIR / "pynvml.py").read_text().splitlines()) <= 12


def _real_pynvml() -> Any:
    """Load the installed nvidia-ml-py module, never the tests/fakenvml shim."""
    paths = [p for p in sys.path if Path(p or ".").resolve() != FAKE_DIR]
    spec = importlib.machinery.PathFinder.find_spec("pynvml", paths)
    if spec is None or spec.loader is None:
        pytest.skip("the real pynvml (nvidia-ml-py) is not installed")
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get("pynvml")
    sys.modules["pynvml"] = module  # pynvml looks itself up in sys.modules while importing
    try:
        spec.loader.exec_module(module)
    finally:
        if previous is None:
            del sys.modules["pynvml"]
        else:
            sys.modules["pynvml"] = previous
    if hasattr(module, "configure") or Path(module.__file__).resolve().parent == FAKE_DIR:
        pytest.skip("only the shim is importable")
    return module


REQUIRED = """nvmlInit nvmlShutdown nvmlSystemGetDriverVersion nvmlSystemGetNVMLVersion
nvmlSystemGetCudaDriverVersion nvmlSystemGetCudaDriverVersion_v2 nvmlDeviceGetCount
nvmlDeviceGetHandleByIndex nvmlDeviceGetHandleByUUID nvmlDeviceGetName nvmlDeviceGetUUID nvmlDeviceGetSerial
nvmlDeviceGetBoardPartNumber nvmlDeviceGetVbiosVersion nvmlDeviceGetInforomImageVersion
nvmlDeviceGetInforomVersion nvmlDeviceGetPciInfo nvmlDeviceGetArchitecture nvmlDeviceGetCudaComputeCapability
nvmlDeviceGetMemoryInfo nvmlDeviceGetPowerManagementDefaultLimit nvmlDeviceGetPowerManagementLimit
nvmlDeviceGetPowerManagementLimitConstraints nvmlDeviceGetEnforcedPowerLimit nvmlDeviceGetMaxClockInfo
nvmlDeviceGetClockInfo nvmlDeviceGetMaxPcieLinkGeneration nvmlDeviceGetMaxPcieLinkWidth
nvmlDeviceGetGpuMaxPcieLinkGeneration nvmlDeviceGetCurrPcieLinkGeneration nvmlDeviceGetCurrPcieLinkWidth
nvmlDeviceGetPcieReplayCounter nvmlDeviceGetPcieThroughput nvmlDeviceGetEccMode nvmlDeviceGetPersistenceMode
nvmlDeviceGetMigMode nvmlDeviceGetTemperature nvmlDeviceGetTemperatureThreshold nvmlDeviceGetFieldValues
nvmlDeviceGetNumFans nvmlDeviceGetFanSpeed nvmlDeviceGetFanSpeed_v2 nvmlDeviceGetPowerUsage
nvmlDeviceGetTotalEnergyConsumption nvmlDeviceGetUtilizationRates nvmlDeviceGetPerformanceState
nvmlDeviceGetCurrentClocksEventReasons nvmlDeviceGetCurrentClocksThrottleReasons nvmlDeviceGetTotalEccErrors
nvmlDeviceGetRetiredPages nvmlDeviceGetRetiredPagesPendingStatus nvmlDeviceGetRemappedRows
nvmlDeviceGetMinorNumber nvmlEventSetCreate nvmlDeviceRegisterEvents nvmlDeviceGetSupportedEventTypes
nvmlEventSetWait_v2 nvmlEventSetWait nvmlEventSetFree nvmlEventTypeXidCriticalError NVMLError
NVML_FI_DEV_MEMORY_TEMP NVML_INFOROM_OEM NVML_INFOROM_ECC NVML_INFOROM_POWER""".split()


def test_simnvml_defines_everything_the_agent_calls() -> None:
    missing = [n for n in REQUIRED if n not in PYNVML_API]
    assert not missing
    assert not set(PYNVML_API) & set(SIM_EXTRAS)


def test_conformance_with_real_pynvml() -> None:
    real = _real_pynvml()
    absent = [n for n in PYNVML_API if not hasattr(real, n)]
    assert not absent, f"simnvml defines names the real pynvml lacks: {absent}"
    for name in PYNVML_API:
        ours, theirs = getattr(nv, name), getattr(real, name)
        if isinstance(ours, (int, str)) and not isinstance(ours, bool):
            assert ours == theirs, name
        elif inspect.isfunction(ours) or inspect.ismethod(ours):
            assert list(inspect.signature(ours).parameters) == list(inspect.signature(theirs).parameters), name
        elif isinstance(ours, type) and issubclass(ours, nv.NVMLError) and ours is not nv.NVMLError:
            assert ours().value == theirs().value, name
        elif isinstance(ours, type) and hasattr(ours, "_fields_"):
            assert [f[0] for f in ours._fields_] == [f[0] for f in theirs._fields_], name
    assert {"device", "eventType", "eventData", "gpuInstanceId", "computeInstanceId"} == {
        f[0] for f in real.c_nvmlEventData_t._fields_}
    for code, text in nv.NVMLError._errcode_to_string.items():
        if code in real.NVMLError._errcode_to_string:
            assert real.NVMLError._errcode_to_string[code] == text
