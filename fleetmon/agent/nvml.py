"""The NVML boundary: the only module that talks to ``pynvml``.

Everything above this module sees plain values plus a :class:`Status` per
field; ``pynvml.NVMLError`` never escapes. Units follow fleetmon.fields
(watts, °C, MiB, MHz, KB/s), not NVML's (mW, bytes …).

The ``pynvml`` module comes from the nvidia-ml-py distribution. Any module with
the same API works: the simulated twin :mod:`fleetmon.agent.simnvml` is passed
in for ``--simulate``, and tests may put a fake ``pynvml`` first on PYTHONPATH.

Facts this follows (NVML docs, nvitop, gpustat): initialise once, cache device
handles (the first lookup costs 170–300 ms; later calls 0.1–0.4 ms each), read
static inventory once.
"""

from __future__ import annotations

import logging
import os
import platform
import socket
import threading
from types import ModuleType
from typing import Any, Callable

from fleetmon import __version__
from fleetmon.errors import NvmlUnavailable
from fleetmon.records import GpuInventory, NodeInfo, Status

log = logging.getLogger("fleetmon.nvml")

_ARCH_NAMES = {
    2: "kepler", 3: "maxwell", 4: "pascal", 5: "volta", 6: "turing", 7: "ampere",
    8: "ada", 9: "hopper", 10: "blackwell",
}
_MIB = 1024 * 1024


def load_pynvml() -> ModuleType:
    """Import the real ``pynvml`` (or whatever is first on sys.path under that name)."""
    try:
        import pynvml  # provided by the nvidia-ml-py distribution
    except ImportError as exc:
        raise NvmlUnavailable(
            "the pynvml module is missing: install nvidia-ml-py (pip install nvidia-ml-py)"
        ) from exc
    return pynvml


def open_nvml(module: ModuleType | None = None) -> "NvmlSession":
    """Initialise NVML once and return a session.

    Args:
        module: a pynvml-compatible module; the real pynvml when None.

    Raises:
        NvmlUnavailable: no library, driver not loaded, library/driver mismatch.
    """
    nv = module if module is not None else load_pynvml()
    try:
        nv.nvmlInit()
    except nv.NVMLError as exc:
        raise NvmlUnavailable(
            f"NVML could not start: {exc}. Is the NVIDIA driver installed and loaded?"
        ) from exc
    except OSError as exc:  # a broken libnvidia-ml.so
        raise NvmlUnavailable(f"NVML could not start: {exc}") from exc
    return NvmlSession(nv)


class _Reader:
    """Collects values and statuses for one record, classifying NVML errors."""

    __slots__ = ("nv", "values", "status", "lost", "_memo")

    def __init__(self, nv: ModuleType, memo: set[tuple[str, str]]) -> None:
        self.nv = nv
        self.values: dict[str, Any] = {}
        self.status: dict[str, str] = {}
        self.lost = False
        self._memo = memo

    def classify(self, exc: Exception) -> Status:
        nv = self.nv
        if isinstance(exc, (getattr(nv, "NVMLError_NotSupported", ()),
                            getattr(nv, "NVMLError_FunctionNotFound", ()))):
            return Status.UNSUPPORTED
        if isinstance(exc, getattr(nv, "NVMLError_GpuIsLost", ())):
            return Status.GPU_LOST
        return Status.FAILED

    def call(self, names: str | tuple[str, ...], fn: Callable[..., Any], *args: Any) -> Any:
        """Call ``fn``; on error mark every field in ``names`` and return None."""
        if isinstance(names, str):
            names = (names,)
        if self.lost:
            for n in names:
                self.values[n] = None
                self.status[n] = Status.GPU_LOST.value
            return None
        try:
            return fn(*args)
        except self.nv.NVMLError as exc:
            status = self.classify(exc)
        except (AttributeError, TypeError) as exc:
            # An older pynvml without this function: treat as not supported.
            log.debug("pynvml call failed: %s", exc)
            status = Status.UNSUPPORTED
        if status is Status.GPU_LOST:
            self.lost = True
        for n in names:
            self.values[n] = None
            self.status[n] = status.value
            key = (n, status.value)
            if status is Status.FAILED and key not in self._memo:
                self._memo.add(key)
                log.info("reading %s failed", n)
        return None

    def set(self, name: str, fn: Callable[..., Any], *args: Any,
            conv: Callable[[Any], Any] | None = None) -> None:
        raw = self.call(name, fn, *args)
        if name in self.status:
            return
        self.values[name] = conv(raw) if conv is not None else raw


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _pair_first(value: Any) -> Any:
    return value[0]


def _pair_second(value: Any) -> Any:
    return value[1]


class NvmlSession:
    """An initialised NVML with cached handles and static inventory.

    Thread safety: reads of different GPUs may run in parallel threads (NVML
    is thread-safe); :meth:`refresh_devices` must not race with reads.
    """

    def __init__(self, nv: ModuleType) -> None:
        self.nv = nv
        self._memo: set[tuple[str, str]] = set()
        self._handles: dict[int, Any] = {}
        self._inventory: dict[int, GpuInventory] = {}
        self._lock = threading.Lock()
        self.device_count = 0
        self.refresh_devices()

    # -- node and inventory -------------------------------------------------

    def node_info(self) -> NodeInfo:
        """Node-level facts (nvidia-smi header: driver, CUDA version)."""
        nv = self.nv
        r = _Reader(nv, self._memo)
        r.set("driver_version", nv.nvmlSystemGetDriverVersion, conv=_text)
        r.set("nvml_version", nv.nvmlSystemGetNVMLVersion, conv=_text)
        cuda = r.call("cuda_driver_version", nv.nvmlSystemGetCudaDriverVersion)
        if cuda is not None:
            r.values["cuda_driver_version"] = f"{cuda // 1000}.{(cuda % 1000) // 10}"
        r.values["kernel"] = platform.release()
        r.values["os_release"] = _os_release()
        r.values["gpu_count"] = self.device_count
        return NodeInfo(
            hostname=socket.gethostname(),
            agent_version=__version__,
            values=r.values,
            status=r.status,
        )

    def refresh_devices(self) -> None:
        """(Re-)enumerate GPUs; keeps cached handles and inventory of known ones."""
        nv = self.nv
        try:
            count = nv.nvmlDeviceGetCount()
        except nv.NVMLError as exc:
            log.warning("nvmlDeviceGetCount failed: %s", exc)
            return
        with self._lock:
            self.device_count = count
            for index in range(count):
                if index in self._handles:
                    continue
                try:
                    self._handles[index] = nv.nvmlDeviceGetHandleByIndex(index)
                except nv.NVMLError as exc:
                    log.warning("GPU %d: no handle: %s", index, exc)
                    continue
                self._inventory[index] = self._read_inventory(index, self._handles[index])

    def indices(self) -> list[int]:
        """Indices of GPUs this session knows (lost ones included)."""
        return sorted(self._inventory)

    def inventory(self, index: int) -> GpuInventory:
        return self._inventory[index]

    def forget(self, index: int) -> None:
        """Drop a GPU's cached handle so the next refresh re-reads it."""
        with self._lock:
            self._handles.pop(index, None)
            self._inventory.pop(index, None)

    def _read_inventory(self, index: int, h: Any) -> GpuInventory:
        nv = self.nv
        r = _Reader(nv, self._memo)
        r.values["index"] = index
        r.set("name", nv.nvmlDeviceGetName, h, conv=_text)
        r.set("uuid", nv.nvmlDeviceGetUUID, h, conv=_text)
        r.set("serial", nv.nvmlDeviceGetSerial, h, conv=_text)
        r.set("board_part_number", nv.nvmlDeviceGetBoardPartNumber, h, conv=_text)
        r.set("vbios", nv.nvmlDeviceGetVbiosVersion, h, conv=_text)
        r.set("inforom_image", nv.nvmlDeviceGetInforomImageVersion, h, conv=_text)
        for key, const in (("inforom_oem", "NVML_INFOROM_OEM"), ("inforom_ecc", "NVML_INFOROM_ECC"),
                           ("inforom_power", "NVML_INFOROM_POWER")):
            r.set(key, nv.nvmlDeviceGetInforomVersion, h, getattr(nv, const, 0), conv=_text)
        pci = r.call(("pci_bus_id", "pci_device_id", "pci_subsystem_id"), nv.nvmlDeviceGetPciInfo, h)
        if pci is not None:
            r.values["pci_bus_id"] = _normalize_bus_id(_text(pci.busId))
            r.values["pci_device_id"] = f"0x{pci.pciDeviceId:08X}"
            r.values["pci_subsystem_id"] = f"0x{pci.pciSubSystemId:08X}"
        r.set("architecture", nv.nvmlDeviceGetArchitecture, h,
              conv=lambda a: _ARCH_NAMES.get(int(a), f"arch{a}"))
        r.set("compute_capability", nv.nvmlDeviceGetCudaComputeCapability, h,
              conv=lambda cc: f"{cc[0]}.{cc[1]}")
        r.set("memory_total_mib", nv.nvmlDeviceGetMemoryInfo, h, conv=lambda m: m.total // _MIB)
        r.set("power_default_w", nv.nvmlDeviceGetPowerManagementDefaultLimit, h, conv=_mw)
        cons = r.call(("power_min_w", "power_max_w"), nv.nvmlDeviceGetPowerManagementLimitConstraints, h)
        if cons is not None:
            r.values["power_min_w"] = _mw(cons[0])
            r.values["power_max_w"] = _mw(cons[1])
        r.set("power_enforced_w", nv.nvmlDeviceGetEnforcedPowerLimit, h, conv=_mw)
        r.set("max_sm_clock_mhz", nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_SM)
        r.set("max_mem_clock_mhz", nv.nvmlDeviceGetMaxClockInfo, h, nv.NVML_CLOCK_MEM)
        r.set("pcie_max_gen", nv.nvmlDeviceGetMaxPcieLinkGeneration, h)
        r.set("pcie_max_width", nv.nvmlDeviceGetMaxPcieLinkWidth, h)
        r.set("pcie_gpu_max_gen", nv.nvmlDeviceGetGpuMaxPcieLinkGeneration, h)
        ecc = r.call(("ecc_mode_current", "ecc_mode_pending"), nv.nvmlDeviceGetEccMode, h)
        if ecc is not None:
            r.values["ecc_mode_current"] = bool(ecc[0])
            r.values["ecc_mode_pending"] = bool(ecc[1])
        r.set("persistence_mode", nv.nvmlDeviceGetPersistenceMode, h, conv=bool)
        mig = r.call(("mig_mode_current", "mig_mode_pending"), nv.nvmlDeviceGetMigMode, h)
        if mig is not None:
            r.values["mig_mode_current"] = bool(mig[0])
            r.values["mig_mode_pending"] = bool(mig[1])
        r.set("temp_slowdown_c", nv.nvmlDeviceGetTemperatureThreshold, h,
              nv.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)
        r.set("temp_shutdown_c", nv.nvmlDeviceGetTemperatureThreshold, h,
              nv.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN)
        uuid = r.values.get("uuid") or f"unknown-gpu-{index}"
        name = r.values.get("name") or "unknown"
        return GpuInventory(uuid=uuid, index=index, name=name, values=r.values, status=r.status,
                            state="lost" if r.lost else "ok")

    # -- telemetry ------------------------------------------------------------

    def read_sample(self, index: int) -> tuple[dict[str, Any], dict[str, str], bool]:
        """Read every telemetry field of one GPU.

        Returns:
            (values, status, lost): values by fleetmon.fields name; statuses of
            the fields that did not read OK; whether the GPU is lost.
        """
        nv = self.nv
        r = _Reader(nv, self._memo)
        h = self._handles.get(index)
        if h is None:
            r.lost = True
            for name in _SAMPLE_FIELDS:
                r.values[name] = None
                r.status[name] = Status.GPU_LOST.value
            return r.values, r.status, True
        r.set("temp_c", nv.nvmlDeviceGetTemperature, h, nv.NVML_TEMPERATURE_GPU)
        self._read_mem_temp(r, h)
        self._read_fans(r, h)
        r.set("power_w", nv.nvmlDeviceGetPowerUsage, h, conv=_mw)
        r.set("power_limit_w", nv.nvmlDeviceGetEnforcedPowerLimit, h, conv=_mw)
        r.set("energy_mj", nv.nvmlDeviceGetTotalEnergyConsumption, h, conv=int)
        r.set("sm_clock_mhz", nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_SM)
        r.set("mem_clock_mhz", nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_MEM)
        r.set("gr_clock_mhz", nv.nvmlDeviceGetClockInfo, h, nv.NVML_CLOCK_GRAPHICS)
        util = r.call(("util_gpu_pct", "util_mem_pct"), nv.nvmlDeviceGetUtilizationRates, h)
        if util is not None:
            r.values["util_gpu_pct"] = util.gpu
            r.values["util_mem_pct"] = util.memory
        mem = r.call(("mem_used_mib", "mem_free_mib"), nv.nvmlDeviceGetMemoryInfo, h)
        if mem is not None:
            r.values["mem_used_mib"] = mem.used // _MIB
            r.values["mem_free_mib"] = mem.free // _MIB
        r.set("pstate", nv.nvmlDeviceGetPerformanceState, h, conv=int)
        self._read_throttle(r, h)
        for key, etype, counter in (
            ("ecc_corr_vol", "NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_VOLATILE_ECC"),
            ("ecc_unc_vol", "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_VOLATILE_ECC"),
            ("ecc_corr_agg", "NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_AGGREGATE_ECC"),
            ("ecc_unc_agg", "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_AGGREGATE_ECC"),
        ):
            r.set(key, nv.nvmlDeviceGetTotalEccErrors, h, getattr(nv, etype), getattr(nv, counter), conv=int)
        r.set("retired_sbe", nv.nvmlDeviceGetRetiredPages, h,
              nv.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, conv=len)
        r.set("retired_dbe", nv.nvmlDeviceGetRetiredPages, h,
              nv.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, conv=len)
        r.set("retired_pending", nv.nvmlDeviceGetRetiredPagesPendingStatus, h, conv=int)
        rows = r.call(("remap_corr", "remap_unc", "remap_pending", "remap_failure"),
                      nv.nvmlDeviceGetRemappedRows, h)
        if rows is not None:
            r.values["remap_corr"] = int(rows[0])
            r.values["remap_unc"] = int(rows[1])
            r.values["remap_pending"] = int(bool(rows[2]))
            r.values["remap_failure"] = int(bool(rows[3]))
        r.set("pcie_gen", nv.nvmlDeviceGetCurrPcieLinkGeneration, h)
        r.set("pcie_width", nv.nvmlDeviceGetCurrPcieLinkWidth, h)
        r.set("pcie_replay", nv.nvmlDeviceGetPcieReplayCounter, h, conv=int)
        r.set("pcie_tx_kbs", nv.nvmlDeviceGetPcieThroughput, h, nv.NVML_PCIE_UTIL_TX_BYTES)
        r.set("pcie_rx_kbs", nv.nvmlDeviceGetPcieThroughput, h, nv.NVML_PCIE_UTIL_RX_BYTES)
        return r.values, r.status, r.lost

    def _read_mem_temp(self, r: _Reader, h: Any) -> None:
        nv = self.nv
        field_id = getattr(nv, "NVML_FI_DEV_MEMORY_TEMP", None)
        if field_id is None:
            r.values["mem_temp_c"] = None
            r.status["mem_temp_c"] = Status.UNSUPPORTED.value
            return
        res = r.call("mem_temp_c", nv.nvmlDeviceGetFieldValues, h, [field_id])
        if res is None:
            return
        fv = res[0]
        ret = getattr(fv, "nvmlReturn", 0)
        if ret != 0:
            r.values["mem_temp_c"] = None
            r.status["mem_temp_c"] = (
                Status.UNSUPPORTED.value if ret == getattr(nv, "NVML_ERROR_NOT_SUPPORTED", 3)
                else Status.GPU_LOST.value if ret == getattr(nv, "NVML_ERROR_GPU_IS_LOST", 15)
                else Status.FAILED.value
            )
            return
        value = _field_value(fv)
        # dcgm-exporter fixtures show boards that report 0 for memory temperature.
        if value is None or value <= 0:
            r.values["mem_temp_c"] = None
            r.status["mem_temp_c"] = Status.UNSUPPORTED.value
        else:
            r.values["mem_temp_c"] = value

    def _read_fans(self, r: _Reader, h: Any) -> None:
        nv = self.nv
        n = r.call("fan_pct", nv.nvmlDeviceGetNumFans, h)
        if n is None:
            return
        if n == 0:
            r.values["fan_pct"] = None
            r.status["fan_pct"] = Status.UNSUPPORTED.value
            return
        speeds = []
        for i in range(n):
            s = r.call("fan_pct", nv.nvmlDeviceGetFanSpeed_v2, h, i)
            if s is None:
                return
            speeds.append(s)
        r.values["fan_pct"] = sum(speeds) / len(speeds)

    def _read_throttle(self, r: _Reader, h: Any) -> None:
        nv = self.nv
        fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
        if fn is not None:
            value = r.call("throttle_mask", fn, h)
            if value is not None:
                r.values["throttle_mask"] = int(value)
                return
            if r.status.get("throttle_mask") != Status.UNSUPPORTED.value:
                return
            del r.status["throttle_mask"]
        # Drivers before 535 only have the old name.
        r.set("throttle_mask", nv.nvmlDeviceGetCurrentClocksThrottleReasons, h, conv=int)

    def close(self) -> None:
        try:
            self.nv.nvmlShutdown()
        except self.nv.NVMLError:
            pass


_SAMPLE_FIELDS = (
    "temp_c", "mem_temp_c", "fan_pct", "power_w", "power_limit_w", "energy_mj", "sm_clock_mhz",
    "mem_clock_mhz", "gr_clock_mhz", "util_gpu_pct", "util_mem_pct", "mem_used_mib",
    "mem_free_mib", "pstate", "throttle_mask", "ecc_corr_vol", "ecc_unc_vol", "ecc_corr_agg",
    "ecc_unc_agg", "retired_sbe", "retired_dbe", "retired_pending", "remap_corr", "remap_unc",
    "remap_pending", "remap_failure", "pcie_gen", "pcie_width", "pcie_replay", "pcie_tx_kbs",
    "pcie_rx_kbs",
)
SAMPLE_FIELDS = _SAMPLE_FIELDS


def _mw(value: Any) -> float:
    return round(float(value) / 1000.0, 3)


def _field_value(fv: Any) -> float | None:
    """Extract the number of an nvmlFieldValue_t by its valueType."""
    vt = getattr(fv, "valueType", None)
    v = fv.value
    names = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
    attr = names.get(vt, "uiVal")
    try:
        return float(getattr(v, attr))
    except (AttributeError, TypeError, ValueError):
        return None


def _normalize_bus_id(bus_id: str) -> str:
    """NVML gives "00000000:3B:00.0"; use the kernel's "0000:3b:00.0"."""
    bus_id = bus_id.strip().lower()
    if ":" in bus_id:
        domain, rest = bus_id.split(":", 1)
        if len(domain) > 4:
            domain = domain[-4:]
        return f"{domain}:{rest}"
    return bus_id


def _os_release() -> str:
    try:
        with open("/etc/os-release", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return f"{platform.system()} {platform.release()}".strip() or os.name
