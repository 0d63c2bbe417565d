"""Reading one record: the per-field reader loop over the catalog, and the hand-written readers.

A :class:`_Reader` collects the values and statuses of one record and
classifies NVML errors into fleetmon.records.Status: a value; ``unsupported``
(NOT_SUPPORTED, FUNCTION_NOT_FOUND, or a function this pynvml lacks: permanent,
never an alarm); ``failed`` (any other error, or not answered in time);
``gpu_lost`` (GPU_IS_LOST). Units follow fleetmon.fields (watts, °C, MiB, MHz,
KB/s), not NVML's (mW, bytes …).

The simple fields are read by one loop over the field catalog
(:func:`read_fields`, one NVML call each, as :class:`fleetmon.fields.NvmlCall`
declares); only calls that return several values, or reads with fallbacks,
are hand-written (:data:`_READERS`, named by ``Field.reader``).
"""

from __future__ import annotations

import ctypes
import logging
import time
from typing import Any, Callable

from fleetmon.agent.nvml.load import PynvmlApi
from fleetmon.fields import CATALOG, KINDS, Field, NvmlCall
from fleetmon.pci import normalize_bus_id
from fleetmon.records import Status

log = logging.getLogger("fleetmon.nvml")

_ARCH_NAMES = {
    2: "kepler", 3: "maxwell", 4: "pascal", 5: "volta", 6: "turing", 7: "ampere",
    8: "ada", 9: "hopper", 10: "blackwell",
}
_MIB = 1024 * 1024
_OK = Status.OK.value
_UNSUPPORTED = Status.UNSUPPORTED.value
_FAILED = Status.FAILED.value
_LOST = Status.GPU_LOST.value

UNSUPPORTED_MEMO_S = 3600.0
"""How long a NOT_SUPPORTED answer is remembered before the call is tried again."""

SAMPLE_FIELDS: tuple[str, ...] = tuple(f.name for kind in KINDS for f in CATALOG if f.kind == kind)
"""Every telemetry field :meth:`NvmlSession.read_sample` returns (fleetmon.fields names),
for the default catalog (a session built with another one has its own ``sample_fields``).

Besides these, a sample's values carry ``fan_speeds_pct`` (one value per fan,
or None) so that one stuck fan of several is visible, not averaged away.
"""


# ---------------------------------------------------------------------------
# Reading one record: error classification, deadlines, unsupported memo
# ---------------------------------------------------------------------------


class _Reader:
    """Collects values and statuses for one record, classifying NVML errors.

    Calls go by pynvml function name so that a pynvml without that function
    reads as unsupported instead of raising AttributeError. After the
    deadline no further call is made: the remaining fields read ``failed``.
    """

    __slots__ = ("nv", "values", "status", "lost", "calls", "deadline", "timed_out", "_memo", "_unsupported")

    def __init__(self, nv: PynvmlApi, memo: set[tuple[str, str]], *, deadline: float | None = None,
                 unsupported: dict[str, float] | None = None) -> None:
        self.nv = nv
        self.values: dict[str, Any] = {}
        self.status: dict[str, str] = {}
        self.lost = False
        self.calls = 0
        self.deadline = deadline
        self.timed_out = False
        self._memo = memo
        self._unsupported = unsupported

    def classify(self, exc: BaseException) -> Status:
        """NVMLError → Status (NOT_SUPPORTED/FUNCTION_NOT_FOUND, GPU_IS_LOST, anything else)."""
        nv = self.nv
        if isinstance(exc, (getattr(nv, "NVMLError_NotSupported", ()),
                            getattr(nv, "NVMLError_FunctionNotFound", ()))):
            return Status.UNSUPPORTED
        if isinstance(exc, getattr(nv, "NVMLError_GpuIsLost", ())):
            return Status.GPU_LOST
        return Status.FAILED

    def mark(self, names: tuple[str, ...], status: str) -> None:
        for n in names:
            self.values[n] = None
            self.status[n] = status

    def call(self, names: str | tuple[str, ...], fn_name: str, *args: Any) -> Any:
        """Call ``pynvml.<fn_name>(*args)``; on error mark every field in ``names`` and return None."""
        if isinstance(names, str):
            names = (names,)
        if self.lost:
            self.mark(names, _LOST)
            return None
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.timed_out = True
            self.mark(names, _FAILED)
            return None
        memo_key = names[0]
        if self._unsupported is not None:
            since = self._unsupported.get(memo_key)
            if since is not None and time.monotonic() - since < UNSUPPORTED_MEMO_S:
                self.mark(names, _UNSUPPORTED)
                return None
        fn = getattr(self.nv, fn_name, None)
        if fn is None:  # an older pynvml without this function
            self.mark(names, _UNSUPPORTED)
            return None
        self.calls += 1
        try:
            return fn(*args)
        except self.nv.NVMLError as exc:
            status = self.classify(exc)
        except (TypeError, ValueError, OSError) as exc:  # binding and driver disagree
            status = Status.FAILED
            key = (fn_name, "binding")
            if key not in self._memo:
                self._memo.add(key)
                log.warning("%s raised %s: %s", fn_name, type(exc).__name__, exc)
        if status is Status.GPU_LOST:
            self.lost = True
        elif status is Status.UNSUPPORTED and self._unsupported is not None:
            self._unsupported[memo_key] = time.monotonic()
        self.mark(names, status.value)
        key = (names[0], status.value)
        if status is Status.FAILED and key not in self._memo:
            self._memo.add(key)
            log.info("reading %s failed", names[0])
        return None

    def set(self, name: str, fn_name: str, *args: Any, conv: Callable[[Any], Any] | None = None) -> None:
        """Read one field: ``values[name] = conv(pynvml.<fn_name>(*args))``."""
        raw = self.call(name, fn_name, *args)
        if name in self.status:
            return
        try:
            self.values[name] = conv(raw) if conv is not None else raw
        except (TypeError, ValueError, AttributeError, IndexError) as exc:
            log.debug("cannot convert %s=%r: %s", name, raw, exc)
            self.mark((name,), _FAILED)


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _mw(value: Any) -> float:
    return round(float(value) / 1000.0, 3)


def read_inventory(r: _Reader, h: Any) -> None:
    """Read the static facts of one GPU (``nvidia-smi -q`` header part) into ``r``."""
    nv = r.nv
    r.values["vendor"] = "nvidia"
    # NVIDIA has no device firmware beside the VBIOS and InfoROM, and one GPU per card.
    r.mark(("firmware_version", "card_id"), _UNSUPPORTED)
    r.set("name", "nvmlDeviceGetName", h, conv=_text)
    r.set("uuid", "nvmlDeviceGetUUID", h, conv=_text)
    r.set("serial", "nvmlDeviceGetSerial", h, conv=_text)
    r.set("board_part_number", "nvmlDeviceGetBoardPartNumber", h, conv=_text)
    r.set("vbios", "nvmlDeviceGetVbiosVersion", h, conv=_text)
    r.set("inforom_image", "nvmlDeviceGetInforomImageVersion", h, conv=_text)
    for key, const, default in (("inforom_oem", "NVML_INFOROM_OEM", 0), ("inforom_ecc", "NVML_INFOROM_ECC", 1),
                                ("inforom_power", "NVML_INFOROM_POWER", 2)):
        r.set(key, "nvmlDeviceGetInforomVersion", h, getattr(nv, const, default), conv=_text)
    pci = r.call(("pci_bus_id", "pci_device_id", "pci_subsystem_id"), "nvmlDeviceGetPciInfo", h)
    if pci is not None:
        r.values["pci_bus_id"] = normalize_bus_id(_text(pci.busId))
        r.values["pci_device_id"] = f"0x{int(pci.pciDeviceId):08X}"
        r.values["pci_subsystem_id"] = f"0x{int(pci.pciSubSystemId):08X}"
    r.set("architecture", "nvmlDeviceGetArchitecture", h, conv=lambda a: _ARCH_NAMES.get(int(a), f"arch{a}"))
    r.set("compute_capability", "nvmlDeviceGetCudaComputeCapability", h, conv=lambda cc: f"{cc[0]}.{cc[1]}")
    r.set("memory_total_mib", "nvmlDeviceGetMemoryInfo", h, conv=lambda m: int(m.total) // _MIB)
    r.set("power_default_w", "nvmlDeviceGetPowerManagementDefaultLimit", h, conv=_mw)
    cons = r.call(("power_min_w", "power_max_w"), "nvmlDeviceGetPowerManagementLimitConstraints", h)
    if cons is not None:
        r.values["power_min_w"] = _mw(cons[0])
        r.values["power_max_w"] = _mw(cons[1])
    r.set("power_enforced_w", "nvmlDeviceGetEnforcedPowerLimit", h, conv=_mw)
    r.set("max_sm_clock_mhz", "nvmlDeviceGetMaxClockInfo", h, getattr(nv, "NVML_CLOCK_SM", 1), conv=int)
    r.set("max_mem_clock_mhz", "nvmlDeviceGetMaxClockInfo", h, getattr(nv, "NVML_CLOCK_MEM", 2), conv=int)
    r.set("pcie_max_gen", "nvmlDeviceGetMaxPcieLinkGeneration", h, conv=int)
    r.set("pcie_max_width", "nvmlDeviceGetMaxPcieLinkWidth", h, conv=int)
    r.set("pcie_gpu_max_gen", "nvmlDeviceGetGpuMaxPcieLinkGeneration", h, conv=int)
    # NVML has a GPU-side maximum for the generation only; the width maximum it
    # reports (nvmlDeviceGetMaxPcieLinkWidth) is the link's, in pcie_max_width.
    r.mark(("pcie_gpu_max_width",), _UNSUPPORTED)
    ecc = r.call(("ecc_mode_current", "ecc_mode_pending"), "nvmlDeviceGetEccMode", h)
    if ecc is not None:
        r.values["ecc_mode_current"] = bool(ecc[0])
        r.values["ecc_mode_pending"] = bool(ecc[1])
    r.set("persistence_mode", "nvmlDeviceGetPersistenceMode", h, conv=bool)
    mig = r.call(("mig_mode_current", "mig_mode_pending"), "nvmlDeviceGetMigMode", h)
    if mig is not None:
        r.values["mig_mode_current"] = bool(mig[0])
        r.values["mig_mode_pending"] = bool(mig[1])
    r.set("temp_slowdown_c", "nvmlDeviceGetTemperatureThreshold", h,
          getattr(nv, "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN", 1), conv=int)
    r.set("temp_shutdown_c", "nvmlDeviceGetTemperatureThreshold", h,
          getattr(nv, "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN", 0), conv=int)


def read_fields(r: _Reader, h: Any, fields: tuple[Field, ...]) -> None:
    """Read every telemetry field of ``fields`` into ``r``: the slow calls last, each reader once."""
    slow: list[Field] = []
    done: set[str] = set()
    for f in fields:
        if f.nvml is None:
            if f.reader not in done:  # one call of a reader gives all of its fields
                done.add(f.reader)
                _READERS[f.reader](r, h)
        elif f.nvml.slow:
            slow.append(f)
        else:
            _read_simple(r, h, f.name, f.nvml)
    for f in slow:
        assert f.nvml is not None
        _read_simple(r, h, f.name, f.nvml)


# ---------------------------------------------------------------------------
# The hand-written readers
# ---------------------------------------------------------------------------


def _read_utilization(r: _Reader, h: Any) -> None:
    util = r.call(("util_gpu_pct", "util_mem_pct"), "nvmlDeviceGetUtilizationRates", h)
    if util is not None:
        r.values["util_gpu_pct"] = int(util.gpu)
        r.values["util_mem_pct"] = int(util.memory)


def _read_memory(r: _Reader, h: Any) -> None:
    mem = r.call(("mem_used_mib", "mem_free_mib"), "nvmlDeviceGetMemoryInfo", h)
    if mem is not None:
        r.values["mem_used_mib"] = int(mem.used) // _MIB
        r.values["mem_free_mib"] = int(mem.free) // _MIB


def _read_remapped_rows(r: _Reader, h: Any) -> None:
    rows = r.call(("remap_corr", "remap_unc", "remap_pending", "remap_failure"), "nvmlDeviceGetRemappedRows", h)
    if rows is not None:
        r.values["remap_corr"] = int(rows[0])
        r.values["remap_unc"] = int(rows[1])
        r.values["remap_pending"] = int(bool(rows[2]))
        r.values["remap_failure"] = int(bool(rows[3]))


def _read_mem_temp(r: _Reader, h: Any) -> None:
    nv = r.nv
    field_id = getattr(nv, "NVML_FI_DEV_MEMORY_TEMP", None)
    if field_id is None:
        r.mark(("mem_temp_c",), _UNSUPPORTED)
        return
    res = r.call("mem_temp_c", "nvmlDeviceGetFieldValues", h, [field_id])
    if res is None:
        return
    try:
        fv = res[0]
    except (IndexError, TypeError):
        r.mark(("mem_temp_c",), _FAILED)
        return
    ret = getattr(fv, "nvmlReturn", 0)
    if ret != 0:
        if ret == getattr(nv, "NVML_ERROR_NOT_SUPPORTED", 3):
            st = _UNSUPPORTED
            if r._unsupported is not None:
                r._unsupported.setdefault("mem_temp_c", time.monotonic())
        elif ret == getattr(nv, "NVML_ERROR_GPU_IS_LOST", 15):
            st = _LOST
            r.lost = True
        else:
            st = _FAILED
        r.mark(("mem_temp_c",), st)
        return
    value = _field_value(fv)
    # dcgm-exporter fixtures show boards that report 0 for memory temperature.
    if value is None or value <= 0:
        r.mark(("mem_temp_c",), _UNSUPPORTED)
    else:
        r.values["mem_temp_c"] = value


def _read_fans(r: _Reader, h: Any) -> None:
    n = r.call("fan_pct", "nvmlDeviceGetNumFans", h)
    r.values["fan_speeds_pct"] = None
    if n is None:
        return
    if int(n) == 0:
        r.mark(("fan_pct",), _UNSUPPORTED)
        return
    speeds = []
    for i in range(int(n)):
        s = r.call("fan_pct", "nvmlDeviceGetFanSpeed_v2", h, i)
        if s is None:
            r.values["fan_speeds_pct"] = None
            return
        speeds.append(int(s))
    r.values["fan_pct"] = round(sum(speeds) / len(speeds), 1)
    r.values["fan_speeds_pct"] = speeds


def _read_throttle(r: _Reader, h: Any) -> None:
    """Clocks-event reasons: the 535+ name first, then the older throttle name."""
    value = r.call("throttle_mask", "nvmlDeviceGetCurrentClocksEventReasons", h)
    if value is not None:
        r.values["throttle_mask"] = int(value)
        return
    if r.status.get("throttle_mask") != _UNSUPPORTED:
        return
    del r.status["throttle_mask"]
    if r._unsupported is not None:
        r._unsupported.pop("throttle_mask", None)  # the memo key is shared by both names
    r.set("throttle_mask", "nvmlDeviceGetCurrentClocksThrottleReasons", h, conv=int)


def _field_value(fv: Any) -> float | None:
    """Extract the number of an nvmlFieldValue_t by its valueType."""
    vt: object = getattr(fv, "valueType", None)
    v = fv.value
    names: dict[object, str] = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
    attr = names.get(vt, "uiVal")
    try:
        return float(getattr(v, attr))
    except (AttributeError, TypeError, ValueError):
        return None


def _field_result(r: _Reader, name: str, fv: Any) -> float | None:
    """The number of one nvmlFieldValue_t, or None with ``name`` marked by its ``nvmlReturn``."""
    nv = r.nv
    ret = getattr(fv, "nvmlReturn", 0)
    if ret == 0:
        value = _field_value(fv)
        if value is None:
            r.mark((name,), _FAILED)
        return value
    if ret == getattr(nv, "NVML_ERROR_NOT_SUPPORTED", 3):
        _mark_unsupported(r, (name,))
    elif ret == getattr(nv, "NVML_ERROR_GPU_IS_LOST", 15):
        r.lost = True
        r.mark((name,), _LOST)
    else:
        r.mark((name,), _FAILED)
    return None


def _mark_unsupported(r: _Reader, names: tuple[str, ...]) -> None:
    """Mark ``names`` unsupported and remember it (the memo is keyed by the first name)."""
    r.mark(names, _UNSUPPORTED)
    if r._unsupported is not None:
        r._unsupported.setdefault(names[0], time.monotonic())


def _read_memory_reserved(r: _Reader, h: Any) -> None:
    """Reserved frame buffer: ``reserved`` of nvmlDeviceGetMemoryInfo_v2 (driver 510+)."""
    version = getattr(r.nv, "nvmlMemory_v2", None)
    if version is None:  # a pynvml without the v2 structure
        r.mark(("mem_reserved_mib",), _UNSUPPORTED)
        return
    mem = r.call("mem_reserved_mib", "nvmlDeviceGetMemoryInfo", h, version)
    if mem is not None:
        r.values["mem_reserved_mib"] = int(mem.reserved) // _MIB


def _read_nvlink(r: _Reader, h: Any) -> None:
    """NVLink traffic in KiB, TX + RX over every link: the sum of NVML's cumulative KiB counters.

    NVML_FI_DEV_NVLINK_LINK_COUNT first (NOT_SUPPORTED or 0: a board without
    NVLink, left out), then NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX/RX per link
    (``scopeId`` = link): data and protocol overhead, like DCGM's per-link
    bandwidth counters.
    """
    nv = r.nv
    ids = [getattr(nv, n, None) for n in ("NVML_FI_DEV_NVLINK_LINK_COUNT", "NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_TX",
                                          "NVML_FI_DEV_NVLINK_THROUGHPUT_RAW_RX")]
    if None in ids:
        r.mark(("nvlink_kib",), _UNSUPPORTED)
        return
    count_id, tx_id, rx_id = ids
    res = r.call("nvlink_kib", "nvmlDeviceGetFieldValues", h, [count_id])
    if res is None:
        return
    links = _field_result(r, "nvlink_kib", res[0])
    if links is None:
        return
    if links <= 0:
        _mark_unsupported(r, ("nvlink_kib",))
        return
    res = r.call("nvlink_kib", "nvmlDeviceGetFieldValues", h,
                 [(fid, link) for link in range(int(links)) for fid in (tx_id, rx_id)])
    if res is None:
        return
    total = 0.0
    for fv in res:
        value = _field_result(r, "nvlink_kib", fv)
        if value is None:
            return
        total += value
    r.values["nvlink_kib"] = int(total)


def _read_vgpu_license(r: _Reader, h: Any) -> None:
    """vGPU licence state, only on a GPU NVML reports in vGPU guest mode (else unsupported).

    1 when a licensable feature is licensed (``featureState``), else 0: what
    DCGM_FI_DEV_VGPU_LICENSE_STATUS tells inside a vGPU VM. Bare metal and
    passthrough GPUs have no licence to report and get no series.
    """
    nv = r.nv
    mode = r.call("vgpu_license", "nvmlDeviceGetVirtualizationMode", h)
    if mode is None:
        return
    if int(mode) != getattr(nv, "NVML_GPU_VIRTUALIZATION_MODE_VGPU", 2):
        _mark_unsupported(r, ("vgpu_license",))
        return
    feats = r.call("vgpu_license", "nvmlDeviceGetGridLicensableFeatures", h)
    if feats is None:
        return
    if not int(feats.isGridLicenseSupported):
        _mark_unsupported(r, ("vgpu_license",))
        return
    n = int(feats.licensableFeaturesCount)
    r.values["vgpu_license"] = int(any(int(f.featureState) for f in list(feats.gridLicensableFeatures)[:n]))


_GPM_FIELDS = ("gr_engine_active", "tensor_active", "dram_active")
_GPM_METRICS = (("NVML_GPM_METRIC_GRAPHICS_UTIL", 1), ("NVML_GPM_METRIC_ANY_TENSOR_UTIL", 5),
                ("NVML_GPM_METRIC_DRAM_BW_UTIL", 10))
"""GPM metrics (percent) behind DCGM's profiling ratios, in the order of _GPM_FIELDS."""
_GPM_FIRST_WAIT_S = 0.05
"""The first read of a GPU has no earlier GPM sample: it takes two this far apart."""
_GPM_PREVIOUS: dict[Any, Any] = {}
"""(pynvml module, device) -> the GPM sample of the previous read: each read's metrics cover
the time since the previous read. One lane reads a GPU, so a key is never used concurrently."""


def _gpm_key(nv: Any, h: Any) -> Any:
    try:
        return id(nv), ctypes.cast(h, ctypes.c_void_p).value
    except (TypeError, ctypes.ArgumentError):
        return id(nv), ("id", id(h))


def _gpm_free(nv: Any, sample: Any) -> None:
    try:
        nv.nvmlGpmSampleFree(sample)
    except nv.NVMLError:
        pass


def _gpm_sample(r: _Reader, h: Any) -> Any:
    """A new GPM sample of ``h``, or None (fields marked)."""
    sample = r.call(_GPM_FIELDS, "nvmlGpmSampleAlloc")
    if sample is None:
        return None
    if r.call(_GPM_FIELDS, "nvmlGpmSampleGet", h, sample) is None:
        _gpm_free(r.nv, sample)
        return None
    return sample


def _read_gpm(r: _Reader, h: Any) -> None:
    """DCGM's profiling ratios from NVML's GPM metrics (Hopper and later), 0.0-1.0.

    nvmlGpmQueryDeviceSupport says whether the GPU has GPM; one that has not
    (Ampere and older, GeForce) reads unsupported, so those series are absent.
    """
    nv = r.nv
    support = r.call(_GPM_FIELDS, "nvmlGpmQueryDeviceSupport", h)
    if support is None:
        return
    key = _gpm_key(nv, h)
    if not int(getattr(support, "isSupportedDevice", 0)) or not hasattr(nv, "c_nvmlGpmMetricsGet_t"):
        _mark_unsupported(r, _GPM_FIELDS)
        return
    previous = _GPM_PREVIOUS.pop(key, None)
    if previous is None:
        previous = _gpm_sample(r, h)
        if previous is None:
            return
        time.sleep(_GPM_FIRST_WAIT_S)
    current = _gpm_sample(r, h)
    if current is None:
        _gpm_free(nv, previous)
        return
    mg = nv.c_nvmlGpmMetricsGet_t()
    mg.version = getattr(nv, "NVML_GPM_METRICS_GET_VERSION", 1)
    mg.numMetrics = len(_GPM_METRICS)
    mg.sample1 = previous
    mg.sample2 = current
    for i, (const, default) in enumerate(_GPM_METRICS):
        mg.metrics[i].metricId = getattr(nv, const, default)
    res = r.call(_GPM_FIELDS, "nvmlGpmMetricsGet", mg)
    _gpm_free(nv, previous)
    _GPM_PREVIOUS[key] = current
    if res is None:
        return
    for i, name in enumerate(_GPM_FIELDS):
        metric = res.metrics[i]
        if int(metric.nvmlReturn) != 0:
            if int(metric.nvmlReturn) == getattr(nv, "NVML_ERROR_NOT_SUPPORTED", 3):
                r.mark((name,), _UNSUPPORTED)
            else:
                r.mark((name,), _FAILED)
            continue
        r.values[name] = round(min(max(float(metric.value), 0.0), 100.0) / 100.0, 4)


_READERS: dict[str, Callable[[_Reader, Any], None]] = {
    "_read_mem_temp": _read_mem_temp,
    "_read_fans": _read_fans,
    "_read_utilization": _read_utilization,
    "_read_memory": _read_memory,
    "_read_throttle": _read_throttle,
    "_read_remapped_rows": _read_remapped_rows,
    "_read_memory_reserved": _read_memory_reserved,
    "_read_nvlink": _read_nvlink,
    "_read_vgpu_license": _read_vgpu_license,
    "_read_gpm": _read_gpm,
}
"""The hand-written readers the catalog names (``Field.reader``): calls that give several
fields, or reads with fallbacks. Every other field is read by :func:`_read_simple`."""

_CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "int": int,
    "milli": lambda v: _mw(v),
    "count": len,
    "flag": lambda v: int(bool(v)),
    "first": lambda v: int(v[0]),
}
"""fleetmon.fields.CONVERSIONS, implemented."""


def _read_simple(r: _Reader, h: Any, name: str, call: NvmlCall) -> None:
    """Read one field the catalog describes as one NVML call (constants resolved on this pynvml)."""
    args = [getattr(r.nv, const, default) for const, default in call.args]
    r.set(name, call.fn, h, *args, conv=_CONVERSIONS[call.conv])


def check_readers(fields: tuple[Field, ...]) -> tuple[Field, ...]:
    """The catalog, after checking that this module can read every field of it.

    Raises:
        ValueError: a field names a reader or a conversion this module lacks.
    """
    for f in fields:
        if f.nvml is None and f.reader not in _READERS:
            raise ValueError(f"field {f.name}: fleetmon.agent.nvml has no reader {f.reader!r}")
        if f.nvml is not None and f.nvml.conv not in _CONVERSIONS:
            raise ValueError(f"field {f.name}: fleetmon.agent.nvml has no conversion {f.nvml.conv!r}")
    return fields


def sample_field_names(fields: tuple[Field, ...]) -> tuple[str, ...]:
    """The field names of a sample, grouped by kind (gauges, counters, states) in catalog order."""
    return tuple(f.name for kind in KINDS for f in fields if f.kind == kind)



check_readers(CATALOG)
