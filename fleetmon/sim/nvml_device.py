"""The simulated pynvml's per-device device calls: identity, memory, power, clocks, thermal, fields, PCIe, ECC.

:class:`DeviceCalls` is the half of :class:`fleetmon.sim.nvml.SimulatedNvml` that
reads a GPU; it owns the per-instance lock and the handle resolution (init,
validity, lost GPUs, hangs) that every device call goes through.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from fleetmon.sim.capabilities import nvlink_kib, nvlink_links
from fleetmon.sim.device import Sample, SimDevice, SimGpu, SimNode
from fleetmon.sim.nvml_constants import (
    ARCHITECTURES, NVML_CLOCK_GRAPHICS, NVML_DEVICE_PCI_BUS_ID_FMT, NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT,
    NVML_INFOROM_ECC, NVML_INFOROM_OEM, NVML_INFOROM_POWER, NVML_CLOCK_MEM, NVML_CLOCK_SM, NVML_CLOCK_VIDEO,
    NVML_DEVICE_ARCH_UNKNOWN, NVML_DEVICE_MIG_DISABLE, NVML_ERROR_ARGUMENT_VERSION_MISMATCH,
    NVML_ERROR_FUNCTION_NOT_FOUND, NVML_ERROR_GPU_IS_LOST, NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_NOT_SUPPORTED,
    NVML_ERROR_TIMEOUT, NVML_ERROR_UNINITIALIZED, NVML_ERROR_UNKNOWN, NVML_FI_DEV_ECC_CURRENT,
    NVML_FI_DEV_ECC_PENDING, NVML_FI_DEV_MEMORY_TEMP, NVML_FI_DEV_NVLINK_LINK_COUNT,
    NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_RX,
    NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX, NVML_FI_DEV_PCIE_REPLAY_COUNTER, NVML_FI_DEV_POWER_AVERAGE,
    NVML_FI_DEV_POWER_INSTANT, NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR,
    NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, NVML_PCIE_UTIL_RX_BYTES, NVML_PCIE_UTIL_TX_BYTES,
    NVML_SUCCESS, NVML_TEMPERATURE_GPU, NVML_TEMPERATURE_THRESHOLD_COUNT, NVML_TEMPERATURE_THRESHOLD_GPU_MAX,
    NVML_TEMPERATURE_THRESHOLD_MEM_MAX, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN,
    NVML_VALUE_TYPE_UNSIGNED_INT, NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, nvmlMemory_v2,
)
from fleetmon.sim.nvml_errors import raise_nvml
from fleetmon.sim.nvml_structs import (
    c_nvmlFieldValue_t, c_nvmlMemory_t, c_nvmlMemory_v2_t, c_nvmlUtilization_t, nvmlPciInfo_t,
)


class DeviceCalls:
    """Calls on one device handle, with pynvml's names, arguments and return types.

    Threading: ``_lock`` guards the bookkeeping; it is never held while a hung
    GPU sleeps, so other GPUs answer in parallel threads.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._node: SimNode | None = None
        self._init_count = 0

    def _require_init(self) -> SimNode:
        """The node, if NVML is initialised (NVMLError_Uninitialized otherwise)."""
        if self._init_count <= 0 or self._node is None:
            raise_nvml(NVML_ERROR_UNINITIALIZED)
        assert self._node is not None
        return self._node

    def _resolve(self, handle: Any) -> tuple[SimGpu, float]:
        """Resolve a handle: checks init, validity, loss and hangs; returns (gpu, now)."""
        with self._lock:
            node = self._require_init()
            if not isinstance(handle, SimDevice) or handle._node is not node:
                raise_nvml(NVML_ERROR_INVALID_ARGUMENT)
            gpu = handle._gpu
            t = node.now()
            if gpu.lost(t):
                raise_nvml(NVML_ERROR_GPU_IS_LOST)
            hang = gpu.faults(t).get("hung")
            hang_s = node.hang_override
        if hang is not None:
            time.sleep(float(hang.params["hang_s"] if hang_s is None else hang_s))  # no lock held
            if hang.params.get("then", "timeout") == "timeout":
                raise_nvml(NVML_ERROR_TIMEOUT)
            with self._lock:
                t = node.now()
        return gpu, t

    # ---------------------------------------------------------------------------
    # Identity
    # ---------------------------------------------------------------------------

    def nvmlDeviceGetIndex(self, handle: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(handle)
        with self._lock:
            return gpu.node.visible(t).index(gpu)

    def nvmlDeviceGetMinorNumber(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return gpu.phys

    def nvmlDeviceGetName(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return gpu.p.name

    def nvmlDeviceGetBrand(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return gpu.p.brand

    def nvmlDeviceGetUUID(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return gpu.uuid

    def nvmlDeviceGetSerial(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        if not gpu.p.datacenter:
            raise_nvml(NVML_ERROR_NOT_SUPPORTED)
        return gpu.serial

    def nvmlDeviceGetBoardPartNumber(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        if not gpu.p.board_part:
            raise_nvml(NVML_ERROR_NOT_SUPPORTED)
        return gpu.p.board_part

    def nvmlDeviceGetVbiosVersion(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return gpu.p.vbios

    def nvmlDeviceGetInforomImageVersion(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return gpu.p.inforom_image

    def nvmlDeviceGetInforomVersion(self, handle: Any, infoRomObject: Any) -> Any:  # noqa: N802,N803
        gpu, _ = self._resolve(handle)
        if infoRomObject == NVML_INFOROM_OEM:
            return gpu.p.inforom_oem
        if infoRomObject == NVML_INFOROM_ECC and gpu.p.inforom_ecc:
            return gpu.p.inforom_ecc
        if infoRomObject in (NVML_INFOROM_ECC, NVML_INFOROM_POWER, 3):
            raise_nvml(NVML_ERROR_NOT_SUPPORTED)
        raise_nvml(NVML_ERROR_INVALID_ARGUMENT)

    def nvmlDeviceGetPciInfo_v3(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        info = nvmlPciInfo_t()
        info.busIdLegacy = NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT % (0, gpu.bus, 0)
        info.busId = NVML_DEVICE_PCI_BUS_ID_FMT % (0, gpu.bus, 0)
        info.domain = 0
        info.bus = gpu.bus
        info.device = 0
        info.pciDeviceId = gpu.p.pci_device_id
        info.pciSubSystemId = gpu.p.pci_subsystem_id
        return info

    def nvmlDeviceGetPciInfo(self, handle: Any) -> Any:  # noqa: N802
        return self.nvmlDeviceGetPciInfo_v3(handle)

    def nvmlDeviceGetArchitecture(self, device: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(device)
        return ARCHITECTURES.get(gpu.p.arch, NVML_DEVICE_ARCH_UNKNOWN)

    def nvmlDeviceGetCudaComputeCapability(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return tuple(gpu.p.compute_capability)

    def nvmlDeviceGetPersistenceMode(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return gpu.node.spec.persistence

    def nvmlDeviceGetMigMode(self, device: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(device)
        if not gpu.p.mig:
            raise_nvml(NVML_ERROR_NOT_SUPPORTED)
        return [NVML_DEVICE_MIG_DISABLE, NVML_DEVICE_MIG_DISABLE]

    # ---------------------------------------------------------------------------
    # Memory, power, clocks
    # ---------------------------------------------------------------------------

    def nvmlDeviceGetMemoryInfo(self, handle: Any, version: Any = None) -> Any:  # noqa: N802
        gpu, t = self._resolve(handle)
        total = gpu.p.memory_mib * 1024 * 1024
        reserved = int(total * 0.0075) // (1024 * 1024) * 1024 * 1024
        used = gpu.sample(t).used_bytes
        if not version:
            mem = c_nvmlMemory_t()
            mem.total, mem.used = total, used + reserved
            mem.free = total - mem.used
            return mem
        if version != nvmlMemory_v2:
            raise_nvml(NVML_ERROR_ARGUMENT_VERSION_MISMATCH)
        mem2 = c_nvmlMemory_v2_t()
        mem2.version, mem2.total, mem2.reserved, mem2.used = version, total, reserved, used
        mem2.free = total - reserved - used
        return mem2

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return int(gpu.p.tdp_w * 1000)

    def nvmlDeviceGetPowerManagementLimit(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return int(gpu.p.tdp_w * 1000)

    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return [int(gpu.p.power_min_w * 1000), int(gpu.p.power_max_w * 1000)]

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(handle)
        return int(gpu.enforced_limit_w(t) * 1000)

    def nvmlDeviceGetPowerUsage(self, handle: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(handle)
        if "power_read_fail" in gpu.faults(t):
            raise_nvml(NVML_ERROR_UNKNOWN)
        return int(gpu.sample(t).power_w * 1000)

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(handle)
        with self._lock:
            return gpu.energy_mj(t)

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, type: Any) -> Any:  # noqa: N802,A002
        gpu, _ = self._resolve(handle)
        if type in (NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM):
            return gpu.p.max_sm_mhz
        if type == NVML_CLOCK_MEM:
            return gpu.p.max_mem_mhz
        if type == NVML_CLOCK_VIDEO:
            return int(gpu.p.max_sm_mhz * 0.9)
        raise_nvml(NVML_ERROR_INVALID_ARGUMENT)

    def nvmlDeviceGetClockInfo(self, handle: Any, type: Any) -> Any:  # noqa: N802,A002
        gpu, t = self._resolve(handle)
        s = gpu.sample(t)
        if type in (NVML_CLOCK_GRAPHICS, NVML_CLOCK_SM):
            return s.sm_mhz
        if type == NVML_CLOCK_MEM:
            return s.mem_mhz
        if type == NVML_CLOCK_VIDEO:
            return int(s.sm_mhz * 0.9)
        raise_nvml(NVML_ERROR_INVALID_ARGUMENT)

    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(handle)
        s = gpu.sample(t)
        util = c_nvmlUtilization_t()
        util.gpu, util.memory = s.util_gpu, s.util_mem
        return util

    def nvmlDeviceGetPerformanceState(self, handle: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(handle)
        return gpu.sample(t).pstate

    def nvmlDeviceGetSupportedClocksEventReasons(self, handle: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(handle)
        if gpu.old_driver(t):
            raise_nvml(NVML_ERROR_FUNCTION_NOT_FOUND)
        return 0x1FF

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(handle)
        if gpu.old_driver(t):
            raise_nvml(NVML_ERROR_FUNCTION_NOT_FOUND)
        return gpu.sample(t).reasons

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(handle)
        return gpu.sample(t).reasons

    # ---------------------------------------------------------------------------
    # Thermal and fans
    # ---------------------------------------------------------------------------

    def nvmlDeviceGetTemperature(self, handle: Any, sensor: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(handle)
        if sensor != NVML_TEMPERATURE_GPU:
            raise_nvml(NVML_ERROR_INVALID_ARGUMENT)
        return int(round(gpu.sample(t).temp_c))

    def nvmlDeviceGetTemperatureThreshold(self, handle: Any, threshold: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        p = gpu.p
        values = {NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: p.temp_shutdown_c,
                  NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: p.temp_slowdown_c,
                  NVML_TEMPERATURE_THRESHOLD_GPU_MAX: p.temp_gpu_max_c,
                  NVML_TEMPERATURE_THRESHOLD_MEM_MAX: p.temp_mem_max_c}
        if not 0 <= threshold < NVML_TEMPERATURE_THRESHOLD_COUNT:
            raise_nvml(NVML_ERROR_INVALID_ARGUMENT)
        value = values.get(threshold)
        if value is None:
            raise_nvml(NVML_ERROR_NOT_SUPPORTED)
        return value

    def nvmlDeviceGetNumFans(self, device: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(device)
        if not gpu.p.num_fans:
            raise_nvml(NVML_ERROR_NOT_SUPPORTED)
        return gpu.p.num_fans

    def nvmlDeviceGetFanSpeed(self, handle: Any) -> Any:  # noqa: N802
        return self.nvmlDeviceGetFanSpeed_v2(handle, 0)

    def nvmlDeviceGetFanSpeed_v2(self, handle: Any, fan: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(handle)
        if not gpu.p.num_fans:
            raise_nvml(NVML_ERROR_NOT_SUPPORTED)
        if not 0 <= fan < gpu.p.num_fans:
            raise_nvml(NVML_ERROR_INVALID_ARGUMENT)
        return gpu.sample(t).fan_pct

    def nvmlDeviceGetFieldValues(self, handle: Any, fieldIds: Any) -> Any:  # noqa: N802,N803
        """Field values; unsupported fields come back with ``nvmlReturn`` != 0, not raised."""
        gpu, t = self._resolve(handle)
        values = (c_nvmlFieldValue_t * len(fieldIds))()
        now_us = int(float(gpu.node.clock()) * 1e6)
        sample: Sample | None = None
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
                with self._lock:
                    value = gpu.energy_mj(t)
                vtype = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
            elif fid_ == NVML_FI_DEV_PCIE_REPLAY_COUNTER:
                value = gpu.replays(t)
            elif fid_ in (NVML_FI_DEV_ECC_CURRENT, NVML_FI_DEV_ECC_PENDING):
                if gpu.p.ecc == "none":
                    ret = NVML_ERROR_NOT_SUPPORTED
                else:
                    value = int(gpu.ecc_enabled)
            elif fid_ == NVML_FI_DEV_NVLINK_LINK_COUNT:
                links = nvlink_links(gpu)
                if links:
                    value = links
                else:
                    ret = NVML_ERROR_NOT_SUPPORTED
            elif fid_ in (NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX, NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_RX,
                          NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX):
                if not nvlink_links(gpu):
                    ret = NVML_ERROR_NOT_SUPPORTED
                elif not 0 <= fv.scopeId < nvlink_links(gpu):
                    ret = NVML_ERROR_INVALID_ARGUMENT
                else:
                    rx = fid_ in (NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_RX, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX)
                    raw = fid_ in (NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX, NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_RX)
                    kib = nvlink_kib(gpu, t, fv.scopeId, rx)
                    value = kib if raw else int(kib * 0.94)  # data without the protocol overhead
                    vtype = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
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

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return gpu.link_max()[0]

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return gpu.link_max()[1]

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return gpu.p.pcie_gen

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(handle)
        return gpu.sample(t).pcie_gen

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(handle)
        return gpu.sample(t).pcie_width

    def nvmlDeviceGetPcieReplayCounter(self, handle: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(handle)
        return gpu.replays(t)

    def nvmlDeviceGetPcieThroughput(self, device: Any, counter: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(device)
        s = gpu.sample(t)
        if counter == NVML_PCIE_UTIL_TX_BYTES:
            return s.tx_kbs
        if counter == NVML_PCIE_UTIL_RX_BYTES:
            return s.rx_kbs
        raise_nvml(NVML_ERROR_INVALID_ARGUMENT)

    # ---------------------------------------------------------------------------
    # ECC, page retirement, row remapping
    # ---------------------------------------------------------------------------

    def nvmlDeviceGetEccMode(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        if gpu.p.ecc == "none":
            raise_nvml(NVML_ERROR_NOT_SUPPORTED)
        mode = int(gpu.ecc_enabled)
        return [mode, mode]

    def nvmlDeviceGetTotalEccErrors(self, handle: Any, errorType: Any, counterType: Any) -> Any:  # noqa: N802,N803
        gpu, t = self._resolve(handle)
        if not gpu.ecc_enabled:
            raise_nvml(NVML_ERROR_NOT_SUPPORTED)
        key = (errorType, counterType)
        counts = gpu.ecc_counts(t)
        if key not in counts:
            raise_nvml(NVML_ERROR_INVALID_ARGUMENT)
        return counts[key]

    def nvmlDeviceGetRetiredPages(self, device: Any, sourceFilter: Any) -> Any:  # noqa: N802,N803
        gpu, t = self._resolve(device)
        if gpu.p.repair != "retire" or not gpu.ecc_enabled:
            raise_nvml(NVML_ERROR_NOT_SUPPORTED)
        sbe, dbe, _ = gpu.retired_pages(t)
        if sourceFilter == NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS:
            return list(sbe)
        if sourceFilter == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR:
            return list(dbe)
        raise_nvml(NVML_ERROR_INVALID_ARGUMENT)

    def nvmlDeviceGetRetiredPages_v2(self, device: Any, sourceFilter: Any) -> Any:  # noqa: N802,N803
        pages = self.nvmlDeviceGetRetiredPages(device, sourceFilter)
        stamp = int(device._gpu.node.start)
        return [{"address": a, "timestamp": stamp} for a in pages]

    def nvmlDeviceGetRetiredPagesPendingStatus(self, device: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(device)
        if gpu.p.repair != "retire" or not gpu.ecc_enabled:
            raise_nvml(NVML_ERROR_NOT_SUPPORTED)
        return int(gpu.retired_pages(t)[2])

    def nvmlDeviceGetRemappedRows(self, device: Any) -> Any:  # noqa: N802
        gpu, t = self._resolve(device)
        if gpu.p.repair == "quirk":  # gpud: the RTX 4090 answers SUCCESS with zeros
            return (0, 0, 0, 0)
        if gpu.p.repair != "remap" or not gpu.ecc_enabled:
            raise_nvml(NVML_ERROR_NOT_SUPPORTED)
        return gpu.remapped_rows(t)
