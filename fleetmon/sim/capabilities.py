"""What each simulated GPU model has besides its profile: video engines, NVLink, GPM, vGPU.

Pure functions of a :class:`fleetmon.sim.device.SimGpu` (its profile, node and
time), kept apart from the scenario tables so that those stay one row per
model. The facts follow the boards: the A100 and H100 have no NVENC (NVDEC
only); the SXM boards have NVLink (V100 SXM2 6 links, A100 SXM4 12, H100 SXM5
18), PCIe cards and GeForce boards have none here; GPM (NVML's GPU performance
monitoring, nvmlGpm*) exists on Hopper and later data-center GPUs with a
driver of R520 or later.
"""

from __future__ import annotations

from fleetmon.sim import scenarios as _sc
from fleetmon.sim.device import SimGpu, noise

_NO_NVENC = frozenset({"a100", "a100pcie", "h100"})
_NVLINKS = {"v100": 6, "a100": 12, "h100": 18}
_NVLINK_LINK_GBS = {"v100": 25.0, "a100": 25.0, "h100": 25.0}  # per link and direction, GB/s
_GPM_ARCHS = frozenset({"Hopper", "Blackwell"})
_GPM_MIN_DRIVER = 520


def has_nvenc(gpu: SimGpu) -> bool:
    """Whether the board has a video encoder (nvmlDeviceGetEncoderUtilization answers)."""
    return gpu.p.key not in _NO_NVENC


def nvlink_links(gpu: SimGpu) -> int:
    """NVLink links of the board (0: none; NVML_FI_DEV_NVLINK_LINK_COUNT is NOT_SUPPORTED)."""
    return _NVLINKS.get(gpu.p.key, 0)


def gpm_supported(gpu: SimGpu) -> bool:
    """Whether nvmlGpmQueryDeviceSupport reports the GPU as supported."""
    return gpu.p.arch in _GPM_ARCHS and gpu.p.datacenter


def gpm_driver(gpu: SimGpu) -> bool:
    """Whether the driver has the nvmlGpm* functions (R520+; older ones: FUNCTION_NOT_FOUND)."""
    return _sc.driver_major(gpu.node.spec.driver) >= _GPM_MIN_DRIVER


def virtualization_mode(gpu: SimGpu) -> int:
    """NVML_GPU_VIRTUALIZATION_MODE_* of the node."""
    return {"none": 0, "passthrough": 1, "vgpu": 2, "vgpu-unlicensed": 2}[gpu.node.spec.virtualization]


def nvlink_kib(gpu: SimGpu, t: float, link: int, rx: bool) -> int:
    """Cumulative NVLink traffic of one link and direction in KiB (data and protocol).

    Monotonic: a base plus the link's rate times the workload's busy share, so
    rate() over it gives a steady figure of a few GB/s per link.
    """
    seed = gpu.node.spec.seed
    share = _busy_share(gpu.workload)
    rate_kib_s = _NVLINK_LINK_GBS.get(gpu.p.key, 25.0) * 1e6 / 1.024 * (0.1 + 0.3 * noise(seed, gpu.phys, f"nvl{link}{rx}", 0))
    base = int(1e9 * noise(seed, gpu.phys, f"nvlbase{link}{rx}", 0))
    return base + int(max(0.0, t) * rate_kib_s * share)


def _busy_share(workload: dict[str, object]) -> float:
    mode = workload.get("mode", "cycle")
    if mode == "busy":
        return 1.0
    if mode == "idle":
        return 0.0
    busy = float(workload.get("busy_s", 240.0))  # type: ignore[arg-type]
    idle = float(workload.get("idle_s", 120.0))  # type: ignore[arg-type]
    return busy / (busy + idle) if busy + idle > 0 else 0.0


def gpm_percent(gpu: SimGpu, t1: float, t2: float, metric: int) -> float | None:
    """A GPM metric (percent) over [t1, t2], from the workload at the interval's end; None: unknown metric."""
    s = gpu.sample(t2)
    u = noise(gpu.node.spec.seed, gpu.phys, f"gpm{metric}", int(t2))
    if metric == 1:  # GRAPHICS_UTIL
        return float(min(100, s.util_gpu))
    if metric == 2:  # SM_UTIL
        return float(s.util_gpu) * (0.85 + 0.1 * u)
    if metric == 5:  # ANY_TENSOR_UTIL
        return float(s.util_gpu) * (0.55 + 0.3 * u) if s.busy else 0.0
    if metric == 10:  # DRAM_BW_UTIL
        return min(100.0, float(s.util_mem) * (1.0 + 0.2 * u))
    return None
