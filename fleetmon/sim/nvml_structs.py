"""Return types of the simulated pynvml: ctypes structures with pynvml's layout and field names."""

from __future__ import annotations

import ctypes
from typing import Any

from fleetmon.sim.nvml_constants import (
    NVML_COMPUTE_INSTANCE_ID_ANY, NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE, NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE,
    NVML_GPM_METRIC_MAX, NVML_GPU_INSTANCE_ID_ANY, NVML_GRID_LICENSE_BUFFER_SIZE, NVML_GRID_LICENSE_FEATURE_MAX_COUNT,
)



class _PrintableStructure(ctypes.Structure):
    """ctypes Structure whose char-array fields read back as str, like pynvml's."""

    _fmt_: dict[str, str] = {}

    def __str__(self) -> str:
        parts = []
        for name, *_ in self._fields_:
            fmt = self._fmt_.get(name, self._fmt_.get("<default>", "%s"))
            parts.append(("%s: " + fmt) % (name, getattr(self, name)))
        return self.__class__.__name__ + "(" + ", ".join(parts) + ")"

    def __getattribute__(self, name: str) -> Any:
        res = super().__getattribute__(name)
        if isinstance(res, bytes):
            return res.decode()
        return res

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, str):
            value = value.encode()
        super().__setattr__(name, value)


class c_nvmlMemory_t(_PrintableStructure):  # noqa: N801
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]
    _fmt_ = {"<default>": "%d B"}


class c_nvmlMemory_v2_t(_PrintableStructure):  # noqa: N801
    _fields_ = [("version", ctypes.c_uint), ("total", ctypes.c_ulonglong), ("reserved", ctypes.c_ulonglong),
                ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]
    _fmt_ = {"<default>": "%d B"}


class c_nvmlUtilization_t(_PrintableStructure):  # noqa: N801
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]
    _fmt_ = {"<default>": "%d %%"}


class nvmlPciInfo_t(_PrintableStructure):  # noqa: N801
    _fields_ = [
        ("busIdLegacy", ctypes.c_char * NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE),
        ("domain", ctypes.c_uint),
        ("bus", ctypes.c_uint),
        ("device", ctypes.c_uint),
        ("pciDeviceId", ctypes.c_uint),
        ("pciSubSystemId", ctypes.c_uint),
        ("busId", ctypes.c_char * NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE),
    ]
    _fmt_ = {"domain": "0x%08X", "bus": "0x%02X", "device": "0x%02X",
             "pciDeviceId": "0x%08X", "pciSubSystemId": "0x%08X"}


class c_nvmlValue_t(ctypes.Union):  # noqa: N801
    _fields_ = [("dVal", ctypes.c_double), ("uiVal", ctypes.c_uint), ("ulVal", ctypes.c_ulong),
                ("ullVal", ctypes.c_ulonglong), ("sllVal", ctypes.c_longlong), ("siVal", ctypes.c_int),
                ("usVal", ctypes.c_ushort)]


class c_nvmlFieldValue_t(_PrintableStructure):  # noqa: N801
    _fields_ = [("fieldId", ctypes.c_uint32), ("scopeId", ctypes.c_uint32), ("timestamp", ctypes.c_int64),
                ("latencyUsec", ctypes.c_int64), ("valueType", ctypes.c_uint), ("nvmlReturn", ctypes.c_uint),
                ("value", c_nvmlValue_t)]


class c_nvmlEventData_t:  # noqa: N801
    """An event from nvmlEventSetWait: same attribute names as pynvml's structure.

    Unlike the ctypes original, ``device`` is the simulated handle object itself,
    so it compares ``is``/``==`` equal to the handle nvmlDeviceGetHandleByIndex gave.
    """

    __slots__ = ("device", "eventType", "eventData", "gpuInstanceId", "computeInstanceId")

    def __init__(self, device: Any, eventType: int, eventData: int,  # noqa: N803
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


class c_nvmlGridLicenseExpiry_t(_PrintableStructure):  # noqa: N801
    _fields_ = [("year", ctypes.c_uint32), ("month", ctypes.c_uint16), ("day", ctypes.c_uint16),
                ("hour", ctypes.c_uint16), ("min", ctypes.c_uint16), ("sec", ctypes.c_uint16),
                ("status", ctypes.c_uint8)]


class c_nvmlGridLicensableFeature_v4_t(_PrintableStructure):  # noqa: N801
    _fields_ = [("featureCode", ctypes.c_uint), ("featureState", ctypes.c_uint),
                ("licenseInfo", ctypes.c_char * NVML_GRID_LICENSE_BUFFER_SIZE),
                ("productName", ctypes.c_char * NVML_GRID_LICENSE_BUFFER_SIZE),
                ("featureEnabled", ctypes.c_uint), ("licenseExpiry", c_nvmlGridLicenseExpiry_t)]


class c_nvmlGridLicensableFeatures_v4_t(_PrintableStructure):  # noqa: N801
    _fields_ = [("isGridLicenseSupported", ctypes.c_int), ("licensableFeaturesCount", ctypes.c_uint),
                ("gridLicensableFeatures", c_nvmlGridLicensableFeature_v4_t * NVML_GRID_LICENSE_FEATURE_MAX_COUNT)]


class struct_c_nvmlGpmSample_t(ctypes.Structure):  # noqa: N801
    """Opaque in pynvml; the twin keeps the id of its bookkeeping entry in it."""

    _fields_ = [("sim_id", ctypes.c_uint64)]


c_nvmlGpmSample_t = ctypes.POINTER(struct_c_nvmlGpmSample_t)


class c_metricInfo_t(ctypes.Structure):  # noqa: N801
    _fields_ = [("shortName", ctypes.c_char_p), ("longName", ctypes.c_char_p), ("unit", ctypes.c_char_p)]


class c_nvmlGpmMetric_t(_PrintableStructure):  # noqa: N801
    _fields_ = [("metricId", ctypes.c_uint), ("nvmlReturn", ctypes.c_uint), ("value", ctypes.c_double),
                ("metricInfo", c_metricInfo_t)]


class c_nvmlGpmMetricsGet_t(_PrintableStructure):  # noqa: N801
    _fields_ = [("version", ctypes.c_uint), ("numMetrics", ctypes.c_uint), ("sample1", c_nvmlGpmSample_t),
                ("sample2", c_nvmlGpmSample_t), ("metrics", c_nvmlGpmMetric_t * NVML_GPM_METRIC_MAX)]


class c_nvmlGpmSupport_t(_PrintableStructure):  # noqa: N801
    _fields_ = [("version", ctypes.c_uint), ("isSupportedDevice", ctypes.c_uint)]
