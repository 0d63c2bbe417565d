"""NVML's error semantics for the simulated pynvml: the same ``NVMLError`` hierarchy as the real one.

``NVMLError(code)`` builds the code's subclass, ``str(e)`` is NVML's text and
``e.value`` the code, so the agent's classification (``NotSupported`` is
permanent, ``GpuIsLost`` is a lost GPU, …) sees what it would see on a real
node. One hierarchy is shared by every :class:`fleetmon.sim.nvml.SimulatedNvml`.
"""

from __future__ import annotations

from typing import Any, NoReturn

from fleetmon.sim.nvml_constants import (
    NVML_ERROR_ALREADY_INITIALIZED, NVML_ERROR_ARGUMENT_VERSION_MISMATCH, NVML_ERROR_CORRUPTED_INFOROM,
    NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_FUNCTION_NOT_FOUND, NVML_ERROR_GPU_IS_LOST, NVML_ERROR_IN_USE,
    NVML_ERROR_INSUFFICIENT_POWER, NVML_ERROR_INSUFFICIENT_SIZE, NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_IRQ_ISSUE,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH, NVML_ERROR_LIBRARY_NOT_FOUND, NVML_ERROR_MEMORY, NVML_ERROR_NO_DATA,
    NVML_ERROR_NO_PERMISSION, NVML_ERROR_NOT_FOUND, NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_OPERATING_SYSTEM,
    NVML_ERROR_RESET_REQUIRED, NVML_ERROR_TIMEOUT, NVML_ERROR_UNINITIALIZED, NVML_ERROR_UNKNOWN, NVML_SUCCESS,
)

# ---------------------------------------------------------------------------

class NVMLError(Exception):
    """Base NVML error; ``NVMLError(code)`` is an instance of the code's subclass."""

    value: int  # the NVML return code, set by __new__ as pynvml does
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

    def __new__(typ, value: int) -> NVMLError:  # noqa: N804 - pynvml's signature
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
    def new(typ: type, *args: Any) -> NVMLError:  # mirrors pynvml
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


def nvmlExceptionClass(nvmlErrorCode: Any) -> Any:  # noqa: N802,N803 - pynvml name
    """The NVMLError subclass for an NVML_ERROR_* code; ValueError if unknown."""
    if nvmlErrorCode not in NVMLError._valClassMapping:
        raise ValueError("nvmlErrorCode %s is not valid" % nvmlErrorCode)
    return NVMLError._valClassMapping[nvmlErrorCode]


def nvmlErrorString(result: Any) -> Any:  # noqa: N802
    """NVML's text for an error code (str)."""
    if result == NVML_SUCCESS:
        return "Success"
    return NVMLError._errcode_to_string.get(result, "Unknown Error")


def raise_nvml(code: int) -> NoReturn:
    """Raise the NVMLError subclass of ``code``, as the real library does for a failed call."""
    raise NVMLError(code)


ERROR_CLASSES: dict[str, type] = {cls.__name__: cls for cls in NVMLError._valClassMapping.values()}
"""Every NVMLError_* subclass by name."""
