"""The simulated pynvml's video-engine, vGPU and GPM (GPU performance monitoring) calls.

:class:`ProfilingCalls` extends :class:`fleetmon.sim.nvml_device.DeviceCalls`
with the calls behind dcgm-exporter's utilisation and profiling counters, with
NVML's semantics: a board without the engine answers NOT_SUPPORTED;
nvmlGpmQueryDeviceSupport answers SUCCESS with ``isSupportedDevice`` 0 on a GPU
without GPM (Ampere and older, GeForce) and nvmlGpmSampleGet then raises
NOT_SUPPORTED; a driver older than R520 lacks the nvmlGpm* functions
(FUNCTION_NOT_FOUND). What each model has is in :mod:`fleetmon.sim.capabilities`.
"""

from __future__ import annotations

import ctypes
import itertools
from typing import Any

from fleetmon.sim import capabilities as _cap
from fleetmon.sim.device import SimGpu
from fleetmon.sim.nvml_constants import (
    NVML_ERROR_FUNCTION_NOT_FOUND, NVML_ERROR_INVALID_ARGUMENT, NVML_ERROR_NOT_SUPPORTED,
    NVML_GPM_METRIC_MAX, NVML_GPM_METRICS_GET_VERSION, NVML_GPM_SUPPORT_VERSION,
    NVML_GRID_LICENSE_FEATURE_CODE_VGPU, NVML_SUCCESS,
)
from fleetmon.sim.nvml_device import DeviceCalls
from fleetmon.sim.nvml_errors import raise_nvml
from fleetmon.sim.nvml_structs import (
    c_nvmlGpmMetricsGet_t, c_nvmlGpmSupport_t, c_nvmlGridLicensableFeatures_v4_t, struct_c_nvmlGpmSample_t,
)

_SAMPLING_PERIOD_US = 167000  # what NVML reports as the encoder/decoder sampling period


class ProfilingCalls(DeviceCalls):
    """Encoder/decoder utilisation, virtualization and vGPU licence, GPM samples and metrics."""

    def __init__(self) -> None:
        super().__init__()
        self._gpm_ids = itertools.count(1)
        # sample id -> (its structure, kept alive; (physical GPU, simulation time) once taken)
        self._gpm_samples: dict[int, tuple[struct_c_nvmlGpmSample_t, tuple[int, float] | None]] = {}

    # ---------------------------------------------------------------------------
    # Video engines
    # ---------------------------------------------------------------------------

    def nvmlDeviceGetEncoderUtilization(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        if not _cap.has_nvenc(gpu):
            raise_nvml(NVML_ERROR_NOT_SUPPORTED)
        return [0, _SAMPLING_PERIOD_US]  # the simulated workloads are compute jobs: no video

    def nvmlDeviceGetDecoderUtilization(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return [0, _SAMPLING_PERIOD_US]

    # ---------------------------------------------------------------------------
    # Virtualization and vGPU licensing
    # ---------------------------------------------------------------------------

    def nvmlDeviceGetVirtualizationMode(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        return _cap.virtualization_mode(gpu)

    def nvmlDeviceGetGridLicensableFeatures_v4(self, handle: Any) -> Any:  # noqa: N802
        gpu, _ = self._resolve(handle)
        feats = c_nvmlGridLicensableFeatures_v4_t()
        if _cap.virtualization_mode(gpu) != 2:
            feats.isGridLicenseSupported = 0
            feats.licensableFeaturesCount = 0
            return feats
        feats.isGridLicenseSupported = 1
        feats.licensableFeaturesCount = 1
        f = feats.gridLicensableFeatures[0]
        licensed = gpu.node.spec.virtualization == "vgpu"
        f.featureCode = NVML_GRID_LICENSE_FEATURE_CODE_VGPU
        f.featureState = 1 if licensed else 0
        f.featureEnabled = 1
        f.productName = "NVIDIA Virtual Compute Server"
        f.licenseInfo = "NVIDIA-vComputeServer-9.0" if licensed else ""
        return feats

    def nvmlDeviceGetGridLicensableFeatures(self, handle: Any) -> Any:  # noqa: N802
        return self.nvmlDeviceGetGridLicensableFeatures_v4(handle)

    # ---------------------------------------------------------------------------
    # GPM
    # ---------------------------------------------------------------------------

    def _gpm_gpu(self, device: Any) -> tuple[SimGpu, float]:
        gpu, t = self._resolve(device)
        if not _cap.gpm_driver(gpu):
            raise_nvml(NVML_ERROR_FUNCTION_NOT_FOUND)
        return gpu, t

    def nvmlGpmQueryDeviceSupport(self, device: Any) -> Any:  # noqa: N802
        gpu, _ = self._gpm_gpu(device)
        support = c_nvmlGpmSupport_t()
        support.version = NVML_GPM_SUPPORT_VERSION
        support.isSupportedDevice = int(_cap.gpm_supported(gpu))
        return support

    def nvmlGpmSampleAlloc(self) -> Any:  # noqa: N802
        with self._lock:
            self._require_init()
            sample = struct_c_nvmlGpmSample_t()
            sample.sim_id = next(self._gpm_ids)
            self._gpm_samples[sample.sim_id] = (sample, None)
        return ctypes.pointer(sample)

    def _gpm_entry(self, sample: Any) -> int:
        try:
            key = int(sample.contents.sim_id)
        except (AttributeError, ValueError, TypeError):  # NULL or not a sample
            raise_nvml(NVML_ERROR_INVALID_ARGUMENT)
        if key not in self._gpm_samples:
            raise_nvml(NVML_ERROR_INVALID_ARGUMENT)
        return key

    def nvmlGpmSampleFree(self, gpmSample: Any) -> Any:  # noqa: N802,N803
        with self._lock:
            self._gpm_samples.pop(self._gpm_entry(gpmSample))
        return None

    def nvmlGpmSampleGet(self, device: Any, gpmSample: Any) -> Any:  # noqa: N802,N803
        gpu, t = self._gpm_gpu(device)
        if not _cap.gpm_supported(gpu):
            raise_nvml(NVML_ERROR_NOT_SUPPORTED)
        with self._lock:
            key = self._gpm_entry(gpmSample)
            self._gpm_samples[key] = (self._gpm_samples[key][0], (gpu.phys, t))
        return gpmSample

    def nvmlGpmMetricsGet(self, metricsGet: Any) -> Any:  # noqa: N802,N803
        if not isinstance(metricsGet, c_nvmlGpmMetricsGet_t):
            raise_nvml(NVML_ERROR_INVALID_ARGUMENT)
        with self._lock:
            node = self._require_init()
            if metricsGet.version != NVML_GPM_METRICS_GET_VERSION or not 0 < metricsGet.numMetrics <= NVML_GPM_METRIC_MAX:
                raise_nvml(NVML_ERROR_INVALID_ARGUMENT)
            first = self._gpm_samples[self._gpm_entry(metricsGet.sample1)][1]
            second = self._gpm_samples[self._gpm_entry(metricsGet.sample2)][1]
            if first is None or second is None or first[0] != second[0] or second[1] < first[1]:
                raise_nvml(NVML_ERROR_INVALID_ARGUMENT)
            gpu = node.gpus[first[0]]
            for i in range(metricsGet.numMetrics):
                m = metricsGet.metrics[i]
                value = _cap.gpm_percent(gpu, first[1], second[1], int(m.metricId))
                m.nvmlReturn = NVML_SUCCESS if value is not None else NVML_ERROR_NOT_SUPPORTED
                m.value = 0.0 if value is None else value
        return metricsGet
