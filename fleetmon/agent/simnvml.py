"""A simulated twin of the ``pynvml`` module (PyPI ``nvidia-ml-py``).

Drop-in for the part of the pynvml API the agent uses: same function names,
argument names and order, ``NVML_*`` constants with the real numeric values,
the same ``NVMLError`` class hierarchy (``NVMLError(code)`` builds the
subclass, ``str(e)`` is NVML's text, ``e.value`` the code) and return values
of the same types (str, int, lists, tuples, ctypes structures with the real
field names). It never imports the real pynvml.

What the GPUs report comes from a scenario (:mod:`fleetmon.agent.scenarios`):
GPU models, a busy/idle workload that drives utilization, clocks, power,
temperature, PCIe link and energy deterministically (seeded noise keyed on the
whole simulated second), and fault injections with onset times.

Usage::

    from fleetmon.agent import simnvml as pynvml
    pynvml.configure("fault-power_brake", clock=fake_clock, start=0.0, seed=1)
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(1)
    pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)   # 0x88 while braking
    pynvml.inject(0, "xid", code=79)                    # live, onset = now

Simulation controls (not part of pynvml; listed in :data:`SIM_EXTRAS`):
:func:`configure`, :func:`inject`, :func:`set_lost`, :func:`now_s`,
:func:`is_busy`, :func:`node_spec`, plus ``SCENARIOS``, ``scenario_names``
and ``describe`` from the scenarios module.

Threading: one module lock guards the bookkeeping; it is never held while a
hung GPU sleeps or while an event wait blocks, so other GPUs answer in
parallel threads.
"""

from __future__ import annotations

import ctypes as _ctypes
import hashlib as _hashlib
import math as _math
import threading as _threading
import time as _time
from collections.abc import Callable as _Callable
from dataclasses import dataclass as _dataclass
from dataclasses import replace as _replace
from typing import Any as _Any

from fleetmon.agent import scenarios as _sc
from fleetmon.agent.scenarios import SCENARIOS, describe, scenario_names

# ---------------------------------------------------------------------------
# Constants (values identical to pynvml / nvml.h)
# ---------------------------------------------------------------------------

NVML_FEATURE_DISABLED = 0
NVML_FEATURE_ENABLED = 1

NVML_BRAND_UNKNOWN = 0
NVML_BRAND_QUADRO = 1
NVML_BRAND_TESLA = 2
NVML_BRAND_NVS = 3
NVML_BRAND_GRID = 4
NVML_BRAND_GEFORCE = 5
NVML_BRAND_TITAN = 6
NVML_BRAND_NVIDIA = 14

NVML_TEMPERATURE_THRESHOLD_SHUTDOWN = 0
NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1
NVML_TEMPERATURE_THRESHOLD_MEM_MAX = 2
NVML_TEMPERATURE_THRESHOLD_GPU_MAX = 3
NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MIN = 4
NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_CURR = 5
NVML_TEMPERATURE_THRESHOLD_ACOUSTIC_MAX = 6
NVML_TEMPERATURE_THRESHOLD_GPS_CURR = 7
NVML_TEMPERATURE_THRESHOLD_COUNT = 8

NVML_TEMPERATURE_GPU = 0
NVML_TEMPERATURE_COUNT = 2

NVML_VOLATILE_ECC = 0
NVML_AGGREGATE_ECC = 1
NVML_ECC_COUNTER_TYPE_COUNT = 2

NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_MEMORY_ERROR_TYPE_COUNT = 2

NVML_CLOCK_GRAPHICS = 0
NVML_CLOCK_SM = 1
NVML_CLOCK_MEM = 2
NVML_CLOCK_VIDEO = 3
NVML_CLOCK_COUNT = 4

NVML_PSTATE_0 = 0
NVML_PSTATE_8 = 8
NVML_PSTATE_UNKNOWN = 32

NVML_INFOROM_OEM = 0
NVML_INFOROM_ECC = 1
NVML_INFOROM_POWER = 2
NVML_INFOROM_COUNT = 4

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_ALREADY_INITIALIZED = 5
NVML_ERROR_NOT_FOUND = 6
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_ERROR_INSUFFICIENT_POWER = 8
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_TIMEOUT = 10
NVML_ERROR_IRQ_ISSUE = 11
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_CORRUPTED_INFOROM = 14
NVML_ERROR_GPU_IS_LOST = 15
NVML_ERROR_RESET_REQUIRED = 16
NVML_ERROR_OPERATING_SYSTEM = 17
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18
NVML_ERROR_IN_USE = 19
NVML_ERROR_MEMORY = 20
NVML_ERROR_NO_DATA = 21
NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25
NVML_ERROR_UNKNOWN = 999

NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0
NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1
NVML_PAGE_RETIREMENT_CAUSE_COUNT = 2

NVML_VALUE_TYPE_DOUBLE = 0
NVML_VALUE_TYPE_UNSIGNED_INT = 1
NVML_VALUE_TYPE_UNSIGNED_LONG = 2
NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3
NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4
NVML_VALUE_TYPE_SIGNED_INT = 5
NVML_VALUE_TYPE_UNSIGNED_SHORT = 6
NVML_VALUE_TYPE_COUNT = 7

NVML_PCIE_UTIL_TX_BYTES = 0
NVML_PCIE_UTIL_RX_BYTES = 1
NVML_PCIE_UTIL_COUNT = 2

NVML_DEVICE_ARCH_KEPLER = 2
NVML_DEVICE_ARCH_MAXWELL = 3
NVML_DEVICE_ARCH_PASCAL = 4
NVML_DEVICE_ARCH_VOLTA = 5
NVML_DEVICE_ARCH_TURING = 6
NVML_DEVICE_ARCH_AMPERE = 7
NVML_DEVICE_ARCH_ADA = 8
NVML_DEVICE_ARCH_HOPPER = 9
NVML_DEVICE_ARCH_BLACKWELL = 10
NVML_DEVICE_ARCH_UNKNOWN = 0xFFFFFFFF

NVML_DEVICE_MIG_DISABLE = 0x0
NVML_DEVICE_MIG_ENABLE = 0x1

NVML_DEVICE_INFOROM_VERSION_BUFFER_SIZE = 16
NVML_DEVICE_UUID_BUFFER_SIZE = 80
NVML_DEVICE_UUID_V2_BUFFER_SIZE = 96
NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80
NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE = 80
NVML_DEVICE_NAME_BUFFER_SIZE = 64
NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96
NVML_DEVICE_SERIAL_BUFFER_SIZE = 30
NVML_DEVICE_PART_NUMBER_BUFFER_SIZE = 80
NVML_DEVICE_VBIOS_VERSION_BUFFER_SIZE = 32
NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32
NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16
NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT = "%04X:%02X:%02X.0"
NVML_DEVICE_PCI_BUS_ID_FMT = "%08X:%02X:%02X.0"

NVML_INIT_FLAG_NO_GPUS = 1 << 0
NVML_INIT_FLAG_NO_ATTACH = 1 << 1

NVML_FI_DEV_ECC_CURRENT = 1
NVML_FI_DEV_ECC_PENDING = 2
NVML_FI_DEV_MEMORY_TEMP = 82
NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION = 83
NVML_FI_DEV_PCIE_REPLAY_COUNTER = 94
NVML_FI_DEV_POWER_AVERAGE = 185
NVML_FI_DEV_POWER_INSTANT = 186

NVML_GPU_INSTANCE_ID_ANY = 0xFFFFFFFF
NVML_COMPUTE_INSTANCE_ID_ANY = 0xFFFFFFFF

nvmlEventTypeSingleBitEccError = 0x0000000000000001
nvmlEventTypeDoubleBitEccError = 0x0000000000000002
nvmlEventTypePState = 0x0000000000000004
nvmlEventTypeXidCriticalError = 0x0000000000000008
nvmlEventTypeClock = 0x0000000000000010
nvmlEventTypePowerSourceChange = 0x0000000000000080
nvmlEventMigConfigChange = 0x0000000000000100
nvmlEventTypeSingleBitEccErrorStorm = 0x0000000000000200
nvmlEventTypeDramRetirementEvent = 0x0000000000000400
nvmlEventTypeDramRetirementFailure = 0x0000000000000800
nvmlEventTypeNone = 0x0000000000000000

nvmlClocksEventReasonGpuIdle = 0x0000000000000001
nvmlClocksEventReasonApplicationsClocksSetting = 0x0000000000000002
nvmlClocksEventReasonSwPowerCap = 0x0000000000000004
nvmlClocksEventReasonHwSlowdown = 0x0000000000000008
nvmlClocksEventReasonSyncBoost = 0x0000000000000010
nvmlClocksEventReasonSwThermalSlowdown = 0x0000000000000020
nvmlClocksEventReasonHwThermalSlowdown = 0x0000000000000040
nvmlClocksEventReasonHwPowerBrakeSlowdown = 0x0000000000000080
nvmlClocksEventReasonDisplayClockSetting = 0x0000000000000100
nvmlClocksEventReasonNone = 0x0000000000000000

nvmlClocksThrottleReasonGpuIdle = 0x0000000000000001
nvmlClocksThrottleReasonApplicationsClocksSetting = 0x0000000000000002
nvmlClocksThrottleReasonSwPowerCap = 0x0000000000000004
nvmlClocksThrottleReasonHwSlowdown = 0x0000000000000008
nvmlClocksThrottleReasonSyncBoost = 0x0000000000000010
nvmlClocksThrottleReasonSwThermalSlowdown = 0x0000000000000020
nvmlClocksThrottleReasonHwThermalSlowdown = 0x0000000000000040
nvmlClocksThrottleReasonHwPowerBrakeSlowdown = 0x0000000000000080
nvmlClocksThrottleReasonDisplayClockSetting = 0x0000000000000100
nvmlClocksThrottleReasonNone = 0x0000000000000000

nvmlMemory_v2 = 0x02000028

_ARCH = {"Volta": NVML_DEVICE_ARCH_VOLTA, "Turing": NVML_DEVICE_ARCH_TURING,
         "Ampere": NVML_DEVICE_ARCH_AMPERE, "Ada": NVML_DEVICE_ARCH_ADA,
         "Hopper": NVML_DEVICE_ARCH_HOPPER}

# ---------------------------------------------------------------------------
# Errors (same construction as pynvml: NVMLError(code) returns the subclass)
# ---------------------------------------------------------------------------


class NVMLError(Exception):
    """Base NVML error; ``NVMLError(code)`` is an instance of the code's subclass."""

    _valClassMapping: dict[int, type] = {}
    _errcode_to_string = {
        NVML_ERROR_UNINITIALIZED: "Uninitialized",
        NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
        NVML_ERROR_NOT_SUPPORTED: "Not Supported",
        NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
        NVML_ERROR_ALREADY_INITIALIZED: "Already Initialized",
        NVML_ERROR_NOT_FOUND: "Not Found",
        NVML_ERROR_INSUFFICIENT_SIZE: "Insufficient Size",
        NVML_ERROR_INSUFFICIENT_POWER: "Insufficient External Power",
        NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
        NVML_ERROR_TIMEOUT: "Timeout",
        NVML_ERROR_IRQ_ISSUE: "Interrupt Request Issue",
        NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
        NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
        NVML_ERROR_CORRUPTED_INFOROM: "Corrupted infoROM",
        NVML_ERROR_GPU_IS_LOST: "GPU is lost",
        NVML_ERROR_RESET_REQUIRED: "GPU requires restart",
        NVML_ERROR_OPERATING_SYSTEM: "The operating system has blocked the request.",
        NVML_ERROR_LIB_RM_VERSION_MISMATCH: "RM has detected an NVML/RM version mismatch.",
        NVML_ERROR_IN_USE: "In use by another client",
        NVML_ERROR_MEMORY: "Insufficient Memory",
        NVML_ERROR_NO_DATA: "No data",
        NVML_ERROR_UNKNOWN: "Unknown Error",
    }

    def __new__(typ, value: int) -> NVMLError:  # type: ignore[misc]  # noqa: N804 - pynvml's signature
        if typ == NVMLError:
            typ = NVMLError._valClassMapping.get(value, typ)
        obj = Exception.__new__(typ)
        obj.value = value
        return obj

    def __str__(self) -> str:
        return NVMLError._errcode_to_string.get(self.value, "NVML Error with code %d" % self.value)

    def __eq__(self, other: object) -> bool:
        return self.value == getattr(other, "value", None)

    __hash__ = None  # type: ignore[assignment]  # pynvml defines __eq__ only


def _make_error_class(class_name: str, code: int) -> type:
    def new(typ: type, *args: _Any) -> NVMLError:  # mirrors pynvml
        return NVMLError.__new__(typ, code)

    cls = type(class_name, (NVMLError,), {"__new__": new, "__module__": __name__})
    NVMLError._valClassMapping[code] = cls
    return cls


NVMLError_Uninitialized = _make_error_class("NVMLError_Uninitialized", NVML_ERROR_UNINITIALIZED)
NVMLError_InvalidArgument = _make_error_class("NVMLError_InvalidArgument", NVML_ERROR_INVALID_ARGUMENT)
NVMLError_NotSupported = _make_error_class("NVMLError_NotSupported", NVML_ERROR_NOT_SUPPORTED)
NVMLError_NoPermission = _make_error_class("NVMLError_NoPermission", NVML_ERROR_NO_PERMISSION)
NVMLError_AlreadyInitialized = _make_error_class("NVMLError_AlreadyInitialized", NVML_ERROR_ALREADY_INITIALIZED)
NVMLError_NotFound = _make_error_class("NVMLError_NotFound", NVML_ERROR_NOT_FOUND)
NVMLError_InsufficientSize = _make_error_class("NVMLError_InsufficientSize", NVML_ERROR_INSUFFICIENT_SIZE)
NVMLError_InsufficientPower = _make_error_class("NVMLError_InsufficientPower", NVML_ERROR_INSUFFICIENT_POWER)
NVMLError_DriverNotLoaded = _make_error_class("NVMLError_DriverNotLoaded", NVML_ERROR_DRIVER_NOT_LOADED)
NVMLError_Timeout = _make_error_class("NVMLError_Timeout", NVML_ERROR_TIMEOUT)
NVMLError_IrqIssue = _make_error_class("NVMLError_IrqIssue", NVML_ERROR_IRQ_ISSUE)
NVMLError_LibraryNotFound = _make_error_class("NVMLError_LibraryNotFound", NVML_ERROR_LIBRARY_NOT_FOUND)
NVMLError_FunctionNotFound = _make_error_class("NVMLError_FunctionNotFound", NVML_ERROR_FUNCTION_NOT_FOUND)
NVMLError_CorruptedInforom = _make_error_class("NVMLError_CorruptedInforom", NVML_ERROR_CORRUPTED_INFOROM)
NVMLError_GpuIsLost = _make_error_class("NVMLError_GpuIsLost", NVML_ERROR_GPU_IS_LOST)
NVMLError_ResetRequired = _make_error_class("NVMLError_ResetRequired", NVML_ERROR_RESET_REQUIRED)
NVMLError_OperatingSystem = _make_error_class("NVMLError_OperatingSystem", NVML_ERROR_OPERATING_SYSTEM)
NVMLError_LibRmVersionMismatch = _make_error_class("NVMLError_LibRmVersionMismatch",
                                                   NVML_ERROR_LIB_RM_VERSION_MISMATCH)
NVMLError_InUse = _make_error_class("NVMLError_InUse", NVML_ERROR_IN_USE)
NVMLError_Memory = _make_error_class("NVMLError_Memory", NVML_ERROR_MEMORY)
NVMLError_NoData = _make_error_class("NVMLError_NoData", NVML_ERROR_NO_DATA)
NVMLError_ArgumentVersionMismatch = _make_error_class("NVMLError_ArgumentVersionMismatch",
                                                      NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
NVMLError_Unknown = _make_error_class("NVMLError_Unknown", NVML_ERROR_UNKNOWN)


def nvmlExceptionClass(nvmlErrorCode: _Any) -> _Any:  # noqa: N802,N803 - pynvml name
    """The NVMLError subclass for an NVML_ERROR_* code; ValueError if unknown."""
    if nvmlErrorCode not in NVMLError._valClassMapping:
        raise ValueError("nvmlErrorCode %s is not valid" % nvmlErrorCode)
    return NVMLError._valClassMapping[nvmlErrorCode]


def nvmlErrorString(result: _Any) -> _Any:  # noqa: N802
    """NVML's text for an error code (str)."""
    if result == NVML_SUCCESS:
        return "Success"
    return NVMLError._errcode_to_string.get(result, "Unknown Error")


# ---------------------------------------------------------------------------
# Return structures (same ctypes layout and field names as pynvml)
# ---------------------------------------------------------------------------


class _PrintableStructure(_ctypes.Structure):
    """ctypes Structure whose char-array fields read back as str, like pynvml's."""

    _fmt_: dict[str, str] = {}

    def __str__(self) -> str:
        parts = []
        for name, *_ in self._fields_:
            fmt = self._fmt_.get(name, self._fmt_.get("<default>", "%s"))
            parts.append(("%s: " + fmt) % (name, getattr(self, name)))
        return self.__class__.__name__ + "(" + ", ".join(parts) + ")"

    def __getattribute__(self, name: str) -> _Any:
        res = super().__getattribute__(name)
        if isinstance(res, bytes):
            return res.decode()
        return res

    def __setattr__(self, name: str, value: _Any) -> None:
        if isinstance(value, str):
            value = value.encode()
        super().__setattr__(name, value)


class c_nvmlMemory_t(_PrintableStructure):  # noqa: N801
    _fields_ = [("total", _ctypes.c_ulonglong), ("free", _ctypes.c_ulonglong), ("used", _ctypes.c_ulonglong)]
    _fmt_ = {"<default>": "%d B"}


class c_nvmlMemory_v2_t(_PrintableStructure):  # noqa: N801
    _fields_ = [("version", _ctypes.c_uint), ("total", _ctypes.c_ulonglong), ("reserved", _ctypes.c_ulonglong),
                ("free", _ctypes.c_ulonglong), ("used", _ctypes.c_ulonglong)]
    _fmt_ = {"<default>": "%d B"}


class c_nvmlUtilization_t(_PrintableStructure):  # noqa: N801
    _fields_ = [("gpu", _ctypes.c_uint), ("memory", _ctypes.c_uint)]
    _fmt_ = {"<default>": "%d %%"}


class nvmlPciInfo_t(_PrintableStructure):  # noqa: N801
    _fields_ = [
        ("busIdLegacy", _ctypes.c_char * NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE),
        ("domain", _ctypes.c_uint),
        ("bus", _ctypes.c_uint),
        ("device", _ctypes.c_uint),
        ("pciDeviceId", _ctypes.c_uint),
        ("pciSubSystemId", _ctypes.c_uint),
        ("busId", _ctypes.c_char * NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE),
    ]
    _fmt_ = {"domain": "0x%08X", "bus": "0x%02X", "device": "0x%02X",
             "pciDeviceId": "0x%08X", "pciSubSystemId": "0x%08X"}


class c_nvmlValue_t(_ctypes.Union):  # noqa: N801
    _fields_ = [("dVal", _ctypes.c_double), ("uiVal", _ctypes.c_uint), ("ulVal", _ctypes.c_ulong),
                ("ullVal", _ctypes.c_ulonglong), ("sllVal", _ctypes.c_longlong), ("siVal", _ctypes.c_int),
                ("usVal", _ctypes.c_ushort)]


class c_nvmlFieldValue_t(_PrintableStructure):  # noqa: N801
    _fields_ = [("fieldId", _ctypes.c_uint32), ("scopeId", _ctypes.c_uint32), ("timestamp", _ctypes.c_int64),
                ("latencyUsec", _ctypes.c_int64), ("valueType", _ctypes.c_uint), ("nvmlReturn", _ctypes.c_uint),
                ("value", c_nvmlValue_t)]


class c_nvmlEventData_t:  # noqa: N801
    """An event from nvmlEventSetWait: same attribute names as pynvml's structure.

    Unlike the ctypes original, ``device`` is the simulated handle object itself,
    so it compares ``is``/``==`` equal to the handle nvmlDeviceGetHandleByIndex gave.
    """

    __slots__ = ("device", "eventType", "eventData", "gpuInstanceId", "computeInstanceId")

    def __init__(self, device: _Any, eventType: int, eventData: int,  # noqa: N803
                 gpuInstanceId: int = NVML_GPU_INSTANCE_ID_ANY,  # noqa: N803
                 computeInstanceId: int = NVML_COMPUTE_INSTANCE_ID_ANY) -> None:  # noqa: N803
        self.device = device
        self.eventType = eventType
        self.eventData = eventData
        self.gpuInstanceId = gpuInstanceId
        self.computeInstanceId = computeInstanceId

    def __repr__(self) -> str:
        return (f"c_nvmlEventData_t(device: {self.device!r}, eventType: 0x{self.eventType:08X}, "
                f"eventData: {self.eventData}, gpuInstanceId: {self.gpuInstanceId}, "
                f"computeInstanceId: {self.computeInstanceId})")


class _SimDevice:
    """Opaque device handle (the real one is a ctypes pointer)."""

    __slots__ = ("_gpu", "_node")

    def __init__(self, gpu: _Gpu, node: _Node) -> None:
        self._gpu = gpu
        self._node = node

    def __repr__(self) -> str:
        return f"<simnvml device {self._gpu.phys} {self._gpu.uuid}>"


class _SimEventSet:
    """Opaque event set: registrations and per-source delivery cursors."""

    def __init__(self, node: _Node) -> None:
        self.node = node
        self.freed = False
        self.registrations: dict[int, tuple[int, float]] = {}  # phys -> (mask, since_s)
        self.next_k: dict[tuple[int, int], int] = {}  # event source id -> next occurrence
        self.lost_reported: set[int] = set()

    def __repr__(self) -> str:
        return f"<simnvml event set {sorted(self.registrations)}>"


# ---------------------------------------------------------------------------
# Simulation state
# ---------------------------------------------------------------------------

_TAU_S = 25.0  # thermal time constant of the temperature model
_ENERGY_STEP_S = 10.0  # energy integrates sampled power on this grid
_DC_BUSES = (0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD)
_PCIE_LANE_GBS = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938}

_lock = _threading.RLock()
_cond = _threading.Condition(_lock)
_node: _Node | None = None
_init_count = 0


def _noise(seed: int, phys: int, key: str, tick: int) -> float:
    """Deterministic uniform [0, 1) for (seed, gpu, key, tick); stable across processes."""
    digest = _hashlib.blake2b(f"{seed}|{phys}|{key}|{tick}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") / 2.0**64


@_dataclass
class _Sample:
    busy: bool
    util_gpu: int
    util_mem: int
    sm_mhz: int
    mem_mhz: int
    power_w: float
    temp_c: float
    fan_pct: int
    reasons: int
    pstate: int
    pcie_gen: int
    pcie_width: int
    tx_kbs: int
    rx_kbs: int
    used_bytes: int


class _Gpu:
    """One simulated GPU: static identity plus time-dependent behaviour."""

    def __init__(self, node: _Node, phys: int, spec: _sc.GpuSpec) -> None:
        self.node = node
        self.phys = phys
        self.spec = spec
        self.p = spec.profile
        seed = node.spec.seed
        h = _hashlib.blake2b(f"{node.spec.hostname}|{seed}|{phys}|{self.p.key}".encode(), digest_size=16).hexdigest()
        self.uuid = f"GPU-{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
        self.serial = str(1320000000000 + int(h[:10], 16) % 9999999999)
        n = len(node.spec.gpus)
        self.bus = _DC_BUSES[phys] if n == 8 and phys < 8 else (0x01 + 0x20 * phys) % 0x100 or 0x01
        self.workload = spec.workload or node.spec.workload
        self.handle = _SimDevice(self, node)
        self.energy_cache: tuple[int, float] = (0, 0.0)  # (grid steps integrated, mJ)
        self.energy_base_mj = int(self.p.idle_w * 3 * 86400 * 1000 * (0.5 + _noise(seed, phys, "ebase", 0)))
        self.ecc_enabled = self.p.ecc == "on" or (self.p.ecc == "toggle" and bool(spec.ecc_enabled))

    # -- faults ---------------------------------------------------------------
    def faults(self, t: float) -> dict[str, _sc.FaultSpec]:
        """Active faults by kind at time t (the latest one of a kind wins)."""
        out: dict[str, _sc.FaultSpec] = {}
        for f in self.node.faults:
            if f.gpu == self.phys and f.active(t):
                out[f.kind] = f
        return out

    def started(self, kind: str, t: float) -> list[_sc.FaultSpec]:
        """Faults of ``kind`` on this GPU whose onset has passed (duration ignored: counts persist)."""
        return [f for f in self.node.faults if f.gpu == self.phys and f.kind == kind and f.onset_s <= t]

    def lost(self, t: float) -> _sc.FaultSpec | None:
        return self.faults(t).get("gpu_lost")

    def vanished(self, t: float) -> bool:
        f = self.lost(t)
        return f is not None and bool(f.params.get("vanish"))

    # -- power and limits ------------------------------------------------------
    def enforced_limit_w(self, t: float) -> float:
        capped = self.faults(t).get("power_capped")
        if capped is not None:
            return round(self.p.tdp_w * float(capped.params["frac"]))
        return self.p.tdp_w

    def old_driver(self, t: float) -> bool:
        return self.node.spec.old_driver or "old_driver" in self.faults(t)

    def link_max(self) -> tuple[int, int]:
        gen = min(self.p.pcie_gen, self.spec.slot_gen or self.p.pcie_gen)
        width = min(self.p.pcie_width, self.spec.slot_width or self.p.pcie_width)
        return gen, width

    # -- telemetry -------------------------------------------------------------
    def sample(self, t: float) -> _Sample:
        """Everything time-dependent at simulation time t (seconds since start)."""
        p, seed = self.p, self.node.spec.seed
        tick = int(_math.floor(t))

        def u(key: str, at: int = tick) -> float:
            return _noise(seed, self.phys, key, at)

        phase = _sc.phase_at(self.workload, t)
        busy = phase.busy
        f = self.faults(t)
        limit = self.enforced_limit_w(t)

        # Temperature: first-order approach to the phase's target.
        idle_target, busy_target = p.idle_temp_c, p.busy_temp_c
        if "thermal" in f or "fan_stuck" in f:
            over = float(f["thermal"].params["over_c"]) if "thermal" in f else 1.0
            busy_target = p.temp_slowdown_c + over + 0.5
            idle_target = p.idle_temp_c + 15.0
        target = busy_target if busy else idle_target
        previous = idle_target if (busy or phase.first) else busy_target
        temp = target + (previous - target) * _math.exp(-phase.elapsed_s / _TAU_S)
        temp += (u("temp") - 0.5) * 1.0

        reasons = 0
        if busy:
            util = min(100, 92 + int(9 * u("util")))
            util_mem = 35 + int(30 * u("umem"))
            sm = p.boost_mhz * (0.97 + 0.03 * u("sm"))
            if not p.datacenter:  # GeForce boost runs above the nominal boost clock
                sm = p.boost_mhz * (1.02 + 0.06 * u("sm"))
            sm = min(sm, p.max_sm_mhz)
            power = limit * (0.80 + 0.14 * u("plevel", phase.index)) * (0.98 + 0.04 * u("pw"))
            if power > 0.9 * limit and u("swcap") < 0.3:
                reasons |= nvmlClocksEventReasonSwPowerCap
                sm *= 0.97
            if "power_capped" in f:
                reasons |= nvmlClocksEventReasonSwPowerCap
                sm *= 0.85
                power = limit * (0.95 + 0.04 * u("pw"))
            if "derate" in f:
                reasons &= ~nvmlClocksEventReasonSwPowerCap
                if f["derate"].params.get("sw_power_cap"):
                    reasons |= nvmlClocksEventReasonSwPowerCap
                sm = p.boost_mhz * float(f["derate"].params["frac"]) * (0.99 + 0.02 * u("sm"))
                power = limit * (0.62 + 0.06 * u("pw"))
            mem_mhz = p.max_mem_mhz
            pstate = 0
            job = 0.55 + 0.4 * u("job", phase.index)
            used = int(p.memory_mib * job) * 1024 * 1024
        else:
            util, util_mem = 0, 0
            sm, mem_mhz = p.idle_sm_mhz, p.idle_mem_mhz
            power = p.idle_w * (0.95 + 0.1 * u("pw"))
            reasons = nvmlClocksEventReasonGpuIdle
            pstate = p.idle_pstate
            used = 4 * 1024 * 1024

        # Thermal slowdown follows temperature, busy or not.
        if temp >= p.temp_slowdown_c:
            reasons |= nvmlClocksEventReasonHwThermalSlowdown | nvmlClocksEventReasonHwSlowdown
            reasons |= nvmlClocksEventReasonSwThermalSlowdown
            if busy:
                sm *= 0.5
                power *= 0.6
        elif temp >= p.temp_slowdown_c - 3:
            reasons |= nvmlClocksEventReasonSwThermalSlowdown
            if busy:
                sm *= 0.8
                power *= 0.85

        brake = f.get("power_brake")
        if busy and brake is not None:
            window = int(t // float(brake.params["window_s"]))
            if u("brake", window) < float(brake.params["duty"]):
                reasons |= nvmlClocksEventReasonHwPowerBrakeSlowdown | nvmlClocksEventReasonHwSlowdown
                sm = min(sm, p.boost_mhz * 0.45)
                power = limit * float(brake.params["power_frac"]) * (0.95 + 0.1 * u("pw"))

        power = min(power, limit * 0.995)

        fan = 0
        if p.num_fans:
            fan = int(max(30.0, min(100.0, 30.0 + (temp - 35.0) * 1.6)))
            if "fan_stuck" in f:
                fan = 0

        gen_max, width_max = self.link_max()
        gen, width = (gen_max, width_max) if busy else (1, width_max)
        degraded = f.get("pcie_degraded")
        if degraded is not None:
            gen = min(gen, int(degraded.params["gen"]))
            width = min(width, int(degraded.params["width"]))
        link_kbs = _PCIE_LANE_GBS.get(gen, 1.0) * width * 1e6
        if busy:
            tx = int(link_kbs * (0.05 + 0.25 * u("tx")))
            rx = int(link_kbs * (0.05 + 0.25 * u("rx")))
        else:
            tx, rx = 200 + int(800 * u("tx")), 200 + int(800 * u("rx"))

        return _Sample(busy, util, util_mem, int(sm), int(mem_mhz), power, temp, fan, reasons, pstate,
                       gen, width, tx, rx, used)

    def energy_mj(self, t: float) -> int:
        """Energy since driver load: sampled power integrated on a 10 s grid (mJ)."""
        steps = int(max(0.0, t) // _ENERGY_STEP_S)
        done, acc = self.energy_cache
        if steps < done:
            done, acc = 0, 0.0
        if steps - done > 2000:  # a long jump: extrapolate with the power at the target
            acc += self.sample(steps * _ENERGY_STEP_S).power_w * (steps - done) * _ENERGY_STEP_S
            done = steps
        while done < steps:
            acc += self.sample(done * _ENERGY_STEP_S).power_w * _ENERGY_STEP_S
            done += 1
        self.energy_cache = (done, acc)
        partial = self.sample(steps * _ENERGY_STEP_S).power_w * (max(0.0, t) - steps * _ENERGY_STEP_S)
        return self.energy_base_mj + int((acc + partial) * 1000)

    # -- memory errors -----------------------------------------------------------
    def ecc_counts(self, t: float) -> dict[tuple[int, int], int]:
        """(error type, counter type) -> count."""
        seed = self.node.spec.seed
        corr_agg = int(12 * _noise(seed, self.phys, "ecc_base", 0))
        corr_vol = unc_vol = unc_agg = 0
        for f in self.started("ecc_correctable_storm", t):
            end = t if f.duration_s is None else min(t, f.onset_s + f.duration_s)
            n = int(float(f.params["per_min"]) * (end - f.onset_s) / 60.0)
            corr_vol += n
            corr_agg += n
        for f in self.started("ecc_uncorrectable", t):
            n = self._steps(f, t) * int(f.params["count"])
            unc_vol += n
            unc_agg += n
        return {
            (NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC): corr_vol,
            (NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC): corr_agg,
            (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC): unc_vol,
            (NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC): unc_agg,
        }

    @staticmethod
    def _steps(f: _sc.FaultSpec, t: float) -> int:
        """Occurrences of a stepping fault by time t (1 + one per repeat_s)."""
        repeat = f.params.get("repeat_s")
        if not repeat:
            return 1
        end = t if f.duration_s is None else min(t, f.onset_s + f.duration_s)
        return 1 + int((end - f.onset_s) // float(repeat))

    def retired_pages(self, t: float) -> tuple[list[int], list[int], bool]:
        """(sbe page addresses, dbe page addresses, pending)."""
        sbe = dbe = 0
        pending = False
        for f in self.started("retired_pages", t):
            sbe += int(f.params["sbe"])
            dbe += int(f.params["dbe"])
            pending = pending or bool(f.params["pending"])
        for f in self.started("ecc_uncorrectable", t):
            dbe += self._steps(f, t)
            pending = True
        seed = self.node.spec.seed

        def addr(kind: str, i: int) -> int:
            return 0x100000 + int(_noise(seed, self.phys, kind, i) * 0x3FFFFF) * 0x10 + i

        return [addr("sbe", i) for i in range(sbe)], [addr("dbe", i) for i in range(dbe)], pending

    def remapped_rows(self, t: float) -> tuple[int, int, int, int]:
        corr = unc = pending = failure = 0
        for f in self.started("row_remap_pending", t):
            corr += int(f.params["corr"])
            unc += int(f.params["unc"])
            pending = 1
        for f in self.started("row_remap_failure", t):
            corr += int(f.params["corr"])
            unc += int(f.params["unc"])
            failure = 1
        for f in self.started("ecc_uncorrectable", t):
            unc += self._steps(f, t)
            pending = 1
        return corr, unc, pending, failure

    def replays(self, t: float) -> int:
        n = int(3 * _noise(self.node.spec.seed, self.phys, "replay_base", 0))
        for f in self.started("pcie_replays", t):
            end = t if f.duration_s is None else min(t, f.onset_s + f.duration_s)
            n += int(float(f.params["per_min"]) * (end - f.onset_s) / 60.0)
        return n

    # -- events ----------------------------------------------------------------
    def event_sources(self) -> list[tuple[tuple[int, int], int, int, float, float | None, int | None]]:
        """(source id, event type, data, first time, repeat_s, count) for this GPU's faults."""
        out = []
        for i, f in enumerate(self.node.faults):
            if f.gpu != self.phys:
                continue
            if f.kind == "xid":
                out.append(((i, 0), nvmlEventTypeXidCriticalError, int(f.params["code"]), f.onset_s,
                             f.params.get("repeat_s"), f.params.get("count")))
                continue
            code = f.params.get("xid")
            repeat = f.params.get("repeat_s") if f.kind == "ecc_uncorrectable" else None
            count: int | None = 1 if not repeat else None
            if code:
                out.append(((i, 0), nvmlEventTypeXidCriticalError, int(code), f.onset_s, repeat, count))
            if f.kind == "ecc_uncorrectable":
                out.append(((i, 1), nvmlEventTypeDoubleBitEccError, 0, f.onset_s, repeat, count))
        return out


class _Node:
    def __init__(self, spec: _sc.NodeSpec, clock: _Callable[[], float], start: float) -> None:
        self.spec = spec
        self.clock = clock
        self.start = start
        self.faults: list[_sc.FaultSpec] = list(spec.faults)
        self.gpus = [_Gpu(self, i, g) for i, g in enumerate(spec.gpus)]
        self.hang_override: float | None = None

    def now(self) -> float:
        return float(self.clock()) - self.start

    def visible(self, t: float) -> list[_Gpu]:
        return [g for g in self.gpus if not g.vanished(t)]


def _raise(code: int) -> _Any:
    raise NVMLError(code)


def _require_init() -> _Node:
    if _init_count <= 0 or _node is None:
        _raise(NVML_ERROR_UNINITIALIZED)
    return _node  # type: ignore[return-value]


def _gpu(handle: _Any) -> tuple[_Gpu, float]:
    """Resolve a handle: checks init, validity, loss and hangs; returns (gpu, now)."""
    with _lock:
        node = _require_init()
        if not isinstance(handle, _SimDevice) or handle._node is not node:
            _raise(NVML_ERROR_INVALID_ARGUMENT)
        gpu = handle._gpu
        t = node.now()
        if gpu.lost(t):
            _raise(NVML_ERROR_GPU_IS_LOST)
        hang = gpu.faults(t).get("hung")
        hang_s = node.hang_override
    if hang is not None:
        _time.sleep(float(hang.params["hang_s"] if hang_s is None else hang_s))  # no lock held
        if hang.params.get("then", "timeout") == "timeout":
            _raise(NVML_ERROR_TIMEOUT)
        with _lock:
            t = node.now()
    return gpu, t


# ---------------------------------------------------------------------------
# Simulation controls (not in pynvml)
# ---------------------------------------------------------------------------


def configure(scenario: str | dict[str, _Any] = "healthy", *, clock: _Callable[[], float] = _time.time,
              start: float | None = None, seed: int | None = None, hang_s: float | None = None) -> _sc.NodeSpec:
    """Load a scenario; resets the simulated machine (NVML becomes uninitialized).

    Args:
        scenario: a name from SCENARIOS, a composite spec
            (``"rtx4090*4+pcie_degraded@1:0"``), a JSON file path or a dict.
        clock: returns the current time in seconds (inject a fake for tests).
        start: clock value at which the simulation time is 0 (default: now).
        seed: overrides the scenario's seed (telemetry noise, UUIDs).
        hang_s: overrides every hung fault's blocking time (seconds).

    Returns:
        The resolved NodeSpec.

    Raises:
        KeyError, ValueError, OSError: unknown or malformed scenario.
    """
    global _node, _init_count
    spec = _sc.resolve(scenario)
    if seed is not None:
        spec = _replace(spec, seed=int(seed))
    with _cond:
        _node = _Node(spec, clock, float(clock()) if start is None else float(start))
        _node.hang_override = hang_s
        _init_count = 0
        _cond.notify_all()
    return spec


def _current() -> _Node:
    with _lock:
        if _node is None:
            configure()
        return _node  # type: ignore[return-value]


def inject(gpu_index: int, fault: str, onset: float | None = None, duration_s: float | None = None,
           **params: _Any) -> _sc.FaultSpec:
    """Add a fault to the live simulation.

    Args:
        gpu_index: physical GPU index (as configured; not shifted by vanished GPUs).
        fault: a kind from scenarios.FAULT_KINDS.
        onset: simulation time in seconds (default: now).
        duration_s: how long it lasts (default: forever).
        **params: the kind's parameters (e.g. ``code=79`` for "xid").
    """
    node = _current()
    if not 0 <= gpu_index < len(node.gpus):
        raise ValueError(f"no GPU {gpu_index}; the node has {len(node.gpus)}")
    with _cond:
        spec = _sc.fault_spec(fault, gpu_index, node.now() if onset is None else onset, duration_s, **params)
        node.faults.append(spec)
        _cond.notify_all()
    return spec


def set_lost(index: int, *, vanish: bool = False) -> _sc.FaultSpec:
    """Make physical GPU ``index`` fall off the bus now (Xid 79); ``vanish`` drops it from enumeration."""
    return inject(index, "gpu_lost", vanish=vanish)


def now_s() -> float:
    """Current simulation time in seconds since start."""
    return _current().now()


def is_busy(index: int, t: float | None = None) -> bool:
    """Whether physical GPU ``index``'s workload is busy at ``t`` (default now)."""
    node = _current()
    gpu = node.gpus[index]
    return _sc.busy_at(gpu.workload, node.now() if t is None else t)


def node_spec() -> _sc.NodeSpec:
    """The resolved scenario currently loaded."""
    return _current().spec


# ---------------------------------------------------------------------------
# Library and system
# ---------------------------------------------------------------------------


def nvmlInitWithFlags(flags: _Any) -> _Any:  # noqa: N802
    global _init_count
    node = _current()
    with _lock:
        if node.spec.init_error:
            _raise(_sc.INIT_ERRORS[node.spec.init_error])
        _init_count += 1
    return None


def nvmlInit() -> _Any:  # noqa: N802
    nvmlInitWithFlags(0)
    return None


def nvmlShutdown() -> _Any:  # noqa: N802
    global _init_count
    with _cond:
        _require_init()
        _init_count -= 1
        _cond.notify_all()
    return None


def nvmlSystemGetDriverVersion() -> _Any:  # noqa: N802
    return _require_init().spec.driver


def nvmlSystemGetNVMLVersion() -> _Any:  # noqa: N802
    node = _require_init()
    return f"{_sc.cuda_version(node.spec.driver) // 1000}.{node.spec.driver}"


def nvmlSystemGetCudaDriverVersion() -> _Any:  # noqa: N802
    return _sc.cuda_version(_require_init().spec.driver)


def nvmlSystemGetCudaDriverVersion_v2() -> _Any:  # noqa: N802
    return _sc.cuda_version(_require_init().spec.driver)


# ---------------------------------------------------------------------------
# Enumeration and identity
# ---------------------------------------------------------------------------


def nvmlDeviceGetCount() -> _Any:  # noqa: N802
    with _lock:
        node = _require_init()
        return len(node.visible(node.now()))


def nvmlDeviceGetHandleByIndex(index: _Any) -> _Any:  # noqa: N802
    with _lock:
        node = _require_init()
        t = node.now()
        visible = node.visible(t)
        if not isinstance(index, int) or not 0 <= index < len(visible):
            _raise(NVML_ERROR_INVALID_ARGUMENT)
        gpu = visible[index]
        lost = gpu.lost(t)
        if lost is not None and lost.params.get("handle_error", True):
            _raise(NVML_ERROR_GPU_IS_LOST)
        return gpu.handle


def nvmlDeviceGetHandleByUUID(uuid: _Any) -> _Any:  # noqa: N802
    if isinstance(uuid, bytes):
        uuid = uuid.decode()
    with _lock:
        node = _require_init()
        t = node.now()
        for gpu in node.visible(t):
            if gpu.uuid == uuid:
                if gpu.lost(t) is not None:
                    _raise(NVML_ERROR_GPU_IS_LOST)
                return gpu.handle
        _raise(NVML_ERROR_NOT_FOUND)


def nvmlDeviceGetHandleByPciBusId(pciBusId: _Any) -> _Any:  # noqa: N802,N803
    if isinstance(pciBusId, bytes):
        pciBusId = pciBusId.decode()
    with _lock:
        node = _require_init()
        t = node.now()
        want = pciBusId.strip().upper()
        for gpu in node.visible(t):
            if want in (NVML_DEVICE_PCI_BUS_ID_FMT % (0, gpu.bus, 0), NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT % (0, gpu.bus, 0)):
                if gpu.lost(t) is not None:
                    _raise(NVML_ERROR_GPU_IS_LOST)
                return gpu.handle
        _raise(NVML_ERROR_NOT_FOUND)


def nvmlDeviceGetIndex(handle: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(handle)
    with _lock:
        return gpu.node.visible(t).index(gpu)


def nvmlDeviceGetMinorNumber(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    return gpu.phys


def nvmlDeviceGetName(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    return gpu.p.name


def nvmlDeviceGetBrand(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    return gpu.p.brand


def nvmlDeviceGetUUID(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    return gpu.uuid


def nvmlDeviceGetSerial(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    if not gpu.p.datacenter:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    return gpu.serial


def nvmlDeviceGetBoardPartNumber(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    if not gpu.p.board_part:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    return gpu.p.board_part


def nvmlDeviceGetVbiosVersion(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    return gpu.p.vbios


def nvmlDeviceGetInforomImageVersion(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    return gpu.p.inforom_image


def nvmlDeviceGetInforomVersion(handle: _Any, infoRomObject: _Any) -> _Any:  # noqa: N802,N803
    gpu, _ = _gpu(handle)
    if infoRomObject == NVML_INFOROM_OEM:
        return gpu.p.inforom_oem
    if infoRomObject == NVML_INFOROM_ECC and gpu.p.inforom_ecc:
        return gpu.p.inforom_ecc
    if infoRomObject in (NVML_INFOROM_ECC, NVML_INFOROM_POWER, 3):
        _raise(NVML_ERROR_NOT_SUPPORTED)
    _raise(NVML_ERROR_INVALID_ARGUMENT)


def nvmlDeviceGetPciInfo_v3(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    info = nvmlPciInfo_t()
    info.busIdLegacy = NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT % (0, gpu.bus, 0)
    info.busId = NVML_DEVICE_PCI_BUS_ID_FMT % (0, gpu.bus, 0)
    info.domain = 0
    info.bus = gpu.bus
    info.device = 0
    info.pciDeviceId = gpu.p.pci_device_id
    info.pciSubSystemId = gpu.p.pci_subsystem_id
    return info


def nvmlDeviceGetPciInfo(handle: _Any) -> _Any:  # noqa: N802
    return nvmlDeviceGetPciInfo_v3(handle)


def nvmlDeviceGetArchitecture(device: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(device)
    return _ARCH.get(gpu.p.arch, NVML_DEVICE_ARCH_UNKNOWN)


def nvmlDeviceGetCudaComputeCapability(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    return tuple(gpu.p.compute_capability)


def nvmlDeviceGetPersistenceMode(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    return gpu.node.spec.persistence


def nvmlDeviceGetMigMode(device: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(device)
    if not gpu.p.mig:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    return [NVML_DEVICE_MIG_DISABLE, NVML_DEVICE_MIG_DISABLE]


# ---------------------------------------------------------------------------
# Memory, power, clocks
# ---------------------------------------------------------------------------


def nvmlDeviceGetMemoryInfo(handle: _Any, version: _Any = None) -> _Any:  # noqa: N802
    gpu, t = _gpu(handle)
    total = gpu.p.memory_mib * 1024 * 1024
    reserved = int(total * 0.0075) // (1024 * 1024) * 1024 * 1024
    used = gpu.sample(t).used_bytes
    if not version:
        mem = c_nvmlMemory_t()
        mem.total, mem.used = total, used + reserved
        mem.free = total - mem.used
        return mem
    if version != nvmlMemory_v2:
        _raise(NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
    mem2 = c_nvmlMemory_v2_t()
    mem2.version, mem2.total, mem2.reserved, mem2.used = version, total, reserved, used
    mem2.free = total - reserved - used
    return mem2


def nvmlDeviceGetPowerManagementDefaultLimit(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    return int(gpu.p.tdp_w * 1000)


def nvmlDeviceGetPowerManagementLimit(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    return int(gpu.p.tdp_w * 1000)


def nvmlDeviceGetPowerManagementLimitConstraints(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    return [int(gpu.p.power_min_w * 1000), int(gpu.p.power_max_w * 1000)]


def nvmlDeviceGetEnforcedPowerLimit(handle: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(handle)
    return int(gpu.enforced_limit_w(t) * 1000)


def nvmlDeviceGetPowerUsage(handle: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(handle)
    if "power_read_fail" in gpu.faults(t):
        _raise(NVML_ERROR_UNKNOWN)
    return int(gpu.sample(t).power_w * 1000)


def nvmlDeviceGetTotalEnergyConsumption(handle: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(handle)
    with _lock:
        return gpu.energy_mj(t)


def nvmlDeviceGetMaxClockInfo(handle: _Any, type: _Any) -> _Any:  # noqa: N802,A002
    gpu, _ = _gpu(handle)
    if type in (NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM):
        return gpu.p.max_sm_mhz
    if type == NVML_CLOCK_MEM:
        return gpu.p.max_mem_mhz
    if type == NVML_CLOCK_VIDEO:
        return int(gpu.p.max_sm_mhz * 0.9)
    _raise(NVML_ERROR_INVALID_ARGUMENT)


def nvmlDeviceGetClockInfo(handle: _Any, type: _Any) -> _Any:  # noqa: N802,A002
    gpu, t = _gpu(handle)
    s = gpu.sample(t)
    if type in (NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM):
        return s.sm_mhz
    if type == NVML_CLOCK_MEM:
        return s.mem_mhz
    if type == NVML_CLOCK_VIDEO:
        return int(s.sm_mhz * 0.9)
    _raise(NVML_ERROR_INVALID_ARGUMENT)


def nvmlDeviceGetUtilizationRates(handle: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(handle)
    s = gpu.sample(t)
    util = c_nvmlUtilization_t()
    util.gpu, util.memory = s.util_gpu, s.util_mem
    return util


def nvmlDeviceGetPerformanceState(handle: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(handle)
    return gpu.sample(t).pstate


def nvmlDeviceGetSupportedClocksEventReasons(handle: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(handle)
    if gpu.old_driver(t):
        _raise(NVML_ERROR_FUNCTION_NOT_FOUND)
    return 0x1FF


def nvmlDeviceGetCurrentClocksEventReasons(handle: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(handle)
    if gpu.old_driver(t):
        _raise(NVML_ERROR_FUNCTION_NOT_FOUND)
    return gpu.sample(t).reasons


def nvmlDeviceGetCurrentClocksThrottleReasons(handle: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(handle)
    return gpu.sample(t).reasons


# ---------------------------------------------------------------------------
# Thermal and fans
# ---------------------------------------------------------------------------


def nvmlDeviceGetTemperature(handle: _Any, sensor: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(handle)
    if sensor != NVML_TEMPERATURE_GPU:
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    return int(round(gpu.sample(t).temp_c))


def nvmlDeviceGetTemperatureThreshold(handle: _Any, threshold: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    p = gpu.p
    values = {NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: p.temp_shutdown_c,
              NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: p.temp_slowdown_c,
              NVML_TEMPERATURE_THRESHOLD_GPU_MAX: p.temp_gpu_max_c,
              NVML_TEMPERATURE_THRESHOLD_MEM_MAX: p.temp_mem_max_c}
    if not 0 <= threshold < NVML_TEMPERATURE_THRESHOLD_COUNT:
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    value = values.get(threshold)
    if value is None:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    return value


def nvmlDeviceGetNumFans(device: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(device)
    if not gpu.p.num_fans:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    return gpu.p.num_fans


def nvmlDeviceGetFanSpeed(handle: _Any) -> _Any:  # noqa: N802
    return nvmlDeviceGetFanSpeed_v2(handle, 0)


def nvmlDeviceGetFanSpeed_v2(handle: _Any, fan: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(handle)
    if not gpu.p.num_fans:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    if not 0 <= fan < gpu.p.num_fans:
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    return gpu.sample(t).fan_pct


def nvmlDeviceGetFieldValues(handle: _Any, fieldIds: _Any) -> _Any:  # noqa: N802,N803
    """Field values; unsupported fields come back with ``nvmlReturn`` != 0, not raised."""
    gpu, t = _gpu(handle)
    values = (c_nvmlFieldValue_t * len(fieldIds))()
    now_us = int(float(gpu.node.clock()) * 1e6)
    sample: _Sample | None = None
    for i, fid in enumerate(fieldIds):
        fv = values[i]
        try:
            fv.fieldId, fv.scopeId = fid
        except TypeError:
            fv.fieldId = fid
        fv.timestamp = now_us
        fv.latencyUsec = 0
        value: float | int | None = None
        ret = NVML_SUCCESS
        vtype = NVML_VALUE_TYPE_UNSIGNED_INT
        if sample is None:
            sample = gpu.sample(t)
        fid_ = fv.fieldId
        if fid_ == NVML_FI_DEV_MEMORY_TEMP:
            if gpu.p.hbm:
                value = int(round(sample.temp_c + 3 + 2 * sample.util_gpu / 100))
            else:
                ret = NVML_ERROR_NOT_SUPPORTED
        elif fid_ in (NVML_FI_DEV_POWER_INSTANT, NVML_FI_DEV_POWER_AVERAGE):
            if "power_read_fail" in gpu.faults(t):
                ret = NVML_ERROR_UNKNOWN
            else:
                value = int(sample.power_w * 1000)
        elif fid_ == NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION:
            with _lock:
                value = gpu.energy_mj(t)
            vtype = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
        elif fid_ == NVML_FI_DEV_PCIE_REPLAY_COUNTER:
            value = gpu.replays(t)
        elif fid_ in (NVML_FI_DEV_ECC_CURRENT, NVML_FI_DEV_ECC_PENDING):
            if gpu.p.ecc == "none":
                ret = NVML_ERROR_NOT_SUPPORTED
            else:
                value = int(gpu.ecc_enabled)
        else:
            ret = NVML_ERROR_NOT_SUPPORTED
        fv.nvmlReturn = ret
        fv.valueType = vtype
        if value is not None:
            if vtype == NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
                fv.value.ullVal = int(value)
            else:
                fv.value.uiVal = int(value)
    return values


# ---------------------------------------------------------------------------
# PCIe
# ---------------------------------------------------------------------------


def nvmlDeviceGetMaxPcieLinkGeneration(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    return gpu.link_max()[0]


def nvmlDeviceGetMaxPcieLinkWidth(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    return gpu.link_max()[1]


def nvmlDeviceGetGpuMaxPcieLinkGeneration(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    return gpu.p.pcie_gen


def nvmlDeviceGetCurrPcieLinkGeneration(handle: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(handle)
    return gpu.sample(t).pcie_gen


def nvmlDeviceGetCurrPcieLinkWidth(handle: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(handle)
    return gpu.sample(t).pcie_width


def nvmlDeviceGetPcieReplayCounter(handle: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(handle)
    return gpu.replays(t)


def nvmlDeviceGetPcieThroughput(device: _Any, counter: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(device)
    s = gpu.sample(t)
    if counter == NVML_PCIE_UTIL_TX_BYTES:
        return s.tx_kbs
    if counter == NVML_PCIE_UTIL_RX_BYTES:
        return s.rx_kbs
    _raise(NVML_ERROR_INVALID_ARGUMENT)


# ---------------------------------------------------------------------------
# ECC, page retirement, row remapping
# ---------------------------------------------------------------------------


def nvmlDeviceGetEccMode(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    if gpu.p.ecc == "none":
        _raise(NVML_ERROR_NOT_SUPPORTED)
    mode = int(gpu.ecc_enabled)
    return [mode, mode]


def nvmlDeviceGetTotalEccErrors(handle: _Any, errorType: _Any, counterType: _Any) -> _Any:  # noqa: N802,N803
    gpu, t = _gpu(handle)
    if not gpu.ecc_enabled:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    key = (errorType, counterType)
    counts = gpu.ecc_counts(t)
    if key not in counts:
        _raise(NVML_ERROR_INVALID_ARGUMENT)
    return counts[key]


def nvmlDeviceGetRetiredPages(device: _Any, sourceFilter: _Any) -> _Any:  # noqa: N802,N803
    gpu, t = _gpu(device)
    if gpu.p.repair != "retire" or not gpu.ecc_enabled:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    sbe, dbe, _ = gpu.retired_pages(t)
    if sourceFilter == NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS:
        return list(sbe)
    if sourceFilter == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR:
        return list(dbe)
    _raise(NVML_ERROR_INVALID_ARGUMENT)


def nvmlDeviceGetRetiredPages_v2(device: _Any, sourceFilter: _Any) -> _Any:  # noqa: N802,N803
    pages = nvmlDeviceGetRetiredPages(device, sourceFilter)
    stamp = int(device._gpu.node.start)
    return [{"address": a, "timestamp": stamp} for a in pages]


def nvmlDeviceGetRetiredPagesPendingStatus(device: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(device)
    if gpu.p.repair != "retire" or not gpu.ecc_enabled:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    return int(gpu.retired_pages(t)[2])


def nvmlDeviceGetRemappedRows(device: _Any) -> _Any:  # noqa: N802
    gpu, t = _gpu(device)
    if gpu.p.repair == "quirk":  # gpud: the RTX 4090 answers SUCCESS with zeros
        return (0, 0, 0, 0)
    if gpu.p.repair != "remap" or not gpu.ecc_enabled:
        _raise(NVML_ERROR_NOT_SUPPORTED)
    return gpu.remapped_rows(t)


# ---------------------------------------------------------------------------
# Events
# ---------------------------------------------------------------------------


def nvmlEventSetCreate() -> _Any:  # noqa: N802
    with _lock:
        return _SimEventSet(_require_init())


def nvmlDeviceGetSupportedEventTypes(handle: _Any) -> _Any:  # noqa: N802
    gpu, _ = _gpu(handle)
    return _supported_events(gpu)


def _supported_events(gpu: _Gpu) -> int:
    mask = nvmlEventTypePState | nvmlEventTypeXidCriticalError | nvmlEventTypeClock
    if gpu.ecc_enabled:
        mask |= nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError
    return mask


def nvmlDeviceRegisterEvents(handle: _Any, eventTypes: _Any, eventSet: _Any) -> _Any:  # noqa: N802,N803
    gpu, t = _gpu(handle)
    with _lock:
        if not isinstance(eventSet, _SimEventSet) or eventSet.freed or eventSet.node is not gpu.node:
            _raise(NVML_ERROR_INVALID_ARGUMENT)
        if eventTypes & ~_supported_events(gpu):
            _raise(NVML_ERROR_NOT_SUPPORTED)
        old_mask, since = eventSet.registrations.get(gpu.phys, (0, t))
        eventSet.registrations[gpu.phys] = (old_mask | int(eventTypes), since)
    return None


def _next_event(es: _SimEventSet, node: _Node, t: float) -> c_nvmlEventData_t | None:
    """The earliest due, undelivered event for the set (advances its cursor)."""
    best: tuple[float, _Gpu, tuple[int, int], int, int, int] | None = None
    for phys, (mask, since) in es.registrations.items():
        gpu = node.gpus[phys]
        for sid, etype, data, first, repeat, count in gpu.event_sources():
            if not etype & mask:
                continue
            k = es.next_k.get(sid)
            if k is None:
                k = 0 if first >= since or not repeat else int(_math.ceil((since - first) / float(repeat)))
                if first < since and not repeat:
                    k = 1  # a one-off from before registration is never delivered
            if count is not None and k >= count:
                continue
            at = first + k * float(repeat or 0.0)
            if at > t:
                continue
            if best is None or at < best[0]:
                best = (at, gpu, sid, k, etype, data)
    if best is None:
        return None
    _, gpu, sid, k, etype, data = best
    es.next_k[sid] = k + 1
    return c_nvmlEventData_t(gpu.handle, etype, data)


def nvmlEventSetWait_v2(eventSet: _Any, timeoutms: _Any) -> _Any:  # noqa: N802,N803
    """Wait up to ``timeoutms`` ms for an event; NVMLError_Timeout when none arrives."""
    deadline = _time.monotonic() + max(0, int(timeoutms)) / 1000.0
    with _cond:
        while True:
            node = _require_init()
            if not isinstance(eventSet, _SimEventSet) or eventSet.freed or eventSet.node is not node:
                _raise(NVML_ERROR_INVALID_ARGUMENT)
            t = node.now()
            event = _next_event(eventSet, node, t)
            if event is not None:
                return event
            for phys in eventSet.registrations:
                lost = node.gpus[phys].lost(t)
                if lost is not None and lost.params.get("wait_error", True) and phys not in eventSet.lost_reported:
                    eventSet.lost_reported.add(phys)
                    _raise(NVML_ERROR_GPU_IS_LOST)
            remaining = deadline - _time.monotonic()
            if remaining <= 0:
                _raise(NVML_ERROR_TIMEOUT)
            _cond.wait(min(remaining, 0.05))  # re-check: a fake clock may have moved on


def nvmlEventSetWait(eventSet: _Any, timeoutms: _Any) -> _Any:  # noqa: N802,N803
    return nvmlEventSetWait_v2(eventSet, timeoutms)


def nvmlEventSetFree(eventSet: _Any) -> _Any:  # noqa: N802,N803
    with _cond:
        _require_init()
        if not isinstance(eventSet, _SimEventSet) or eventSet.freed:
            _raise(NVML_ERROR_INVALID_ARGUMENT)
        eventSet.freed = True
        _cond.notify_all()
    return None


# ---------------------------------------------------------------------------

SIM_EXTRAS: tuple[str, ...] = (
    "configure", "inject", "set_lost", "now_s", "is_busy", "node_spec",
    "SCENARIOS", "scenario_names", "describe", "SIM_EXTRAS",
)

__all__ = sorted(
    name for name in list(globals())
    if name.startswith(("nvml", "NVML", "c_nvml")) and name not in SIM_EXTRAS
)
