"""Nominal spec catalog: what a healthy GPU of each known model should report.

The catalog is data, written out here so that nothing is read at run time. Every
row comes from the project's reference table (``gpu-specs.csv`` and section 7
of ``gpu-faults.md`` in the shared reference folder, which is not shipped);
``tests/test_specs.py`` checks the two stay in step whenever that file exists.

Rules for the data:

* A value the reference does not give is ``None`` (for example the H200 base
  clock). Nothing is guessed or copied from a sibling model.
* A model that is not in the catalog is unknown: :func:`lookup` returns
  ``None`` and callers report it as unknown. Near misses (an "RTX 4090 D", an
  "A100-SXM4-40GB", a memory-modded "4090 D 47 GB") are different SKUs and do
  not match.

Field conventions:

* ``memory_gb`` is the marketing size. Boards report binary MiB that match
  ``memory_gb * 1024`` (an 80 GB A100 is 81920 MiB, a 24 GB RTX 3090 is
  24576 MiB); real boards report slightly less (an A100 80 GB shows 81559 MiB),
  so :func:`memory_ratio` of a healthy board is just under 1.0.
* ``ecc``: ``"always"`` means always on and cannot be disabled (A100, A800);
  ``"configurable"`` means ECC hardware whose mode is set with
  ``nvidia-smi -e`` (on by default on data-center cards, off by default on
  workstation cards; the ``source`` note says which where the reference does);
  ``"toggle"`` is the GeForce driver toggle, off by default (RTX 4090);
  ``"none"`` means no ECC (the NVML ECC calls return NOT_SUPPORTED); ``None``
  means the reference does not know (RTX 4090 D).
* ``mem_repair``: ``"row_remap"`` (Ampere and later with ECC; up to 512 rows per
  NVIDIA's GPU memory error management doc), ``"page_retire"`` (Kepler to
  Turing with ECC; at most 64 pages per frame buffer), ``"none"``.
* ``fp32_tflops`` is the non-tensor FP32 peak.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from fleetmon.compat import SLOTS

# Limits from gpu-faults.md section 2 (NVIDIA's dynamic page retirement doc and
# the A100 GPU memory error management doc).
PAGE_RETIRE_LIMIT = 64
ROW_REMAP_LIMIT = 512

ECC_MODES = ("always", "toggle", "configurable", "none")
MEM_REPAIR_MODES = ("row_remap", "page_retire", "none")


@dataclass(frozen=True, **SLOTS)
class GpuSpec:
    """Nominal specs of one GPU model, keyed by the name NVML reports.

    Attributes:
        nvml_name: the name as ``nvmlDeviceGetName`` reports it on current drivers.
        architecture: "Ampere", "Hopper", "Ada Lovelace", ...
        form_factor: "PCIe card", "SXM4", ...
        memory_gb: nominal frame buffer size (marketing GB; see the module doc).
        memory_type: "HBM3", "GDDR6X", ...
        mem_bandwidth_gbs: peak memory bandwidth, GB/s.
        tdp_w: board power (TDP / max board power), W.
        base_clock_mhz: base graphics clock, or None where the reference lacks it.
        boost_clock_mhz: boost graphics clock.
        pcie_gen: PCIe generation the board supports.
        pcie_width: PCIe lanes the board supports.
        ecc: "always", "toggle", "configurable", "none", or None if unknown.
        mem_repair: "row_remap", "page_retire" or "none".
        retired_page_limit: max retired pages (page retirement boards), else None.
        remap_row_limit: max remapped rows (row remapping boards), else None.
        fp32_tflops: non-tensor FP32 peak, TFLOPS.
        source: where the numbers come from, in a few words.
        origin: "catalog" for a row of this catalog, "user" for a fleet file's ``[[spec]]``
            (:mod:`fleetmon.specbook` resolves both; views show "user spec" for the latter).
    """

    nvml_name: str
    architecture: str
    form_factor: str
    memory_gb: int
    memory_type: str
    mem_bandwidth_gbs: int
    tdp_w: int
    base_clock_mhz: int | None
    boost_clock_mhz: int | None
    pcie_gen: int | None
    pcie_width: int | None
    ecc: str | None
    mem_repair: str
    retired_page_limit: int | None
    remap_row_limit: int | None
    fp32_tflops: float | None
    source: str
    origin: str = "catalog"


def _spec(
    nvml_name: str,
    architecture: str,
    form_factor: str,
    memory_gb: int,
    memory_type: str,
    mem_bandwidth_gbs: int,
    tdp_w: int,
    base_clock_mhz: int | None,
    boost_clock_mhz: int | None,
    pcie: tuple[int, int],
    ecc: str | None,
    mem_repair: str,
    fp32_tflops: float | None,
    source: str,
) -> GpuSpec:
    """Build one row; the repair limits follow from ``mem_repair``."""
    return GpuSpec(
        nvml_name=nvml_name,
        architecture=architecture,
        form_factor=form_factor,
        memory_gb=memory_gb,
        memory_type=memory_type,
        mem_bandwidth_gbs=mem_bandwidth_gbs,
        tdp_w=tdp_w,
        base_clock_mhz=base_clock_mhz,
        boost_clock_mhz=boost_clock_mhz,
        pcie_gen=pcie[0],
        pcie_width=pcie[1],
        ecc=ecc,
        mem_repair=mem_repair,
        retired_page_limit=PAGE_RETIRE_LIMIT if mem_repair == "page_retire" else None,
        remap_row_limit=ROW_REMAP_LIMIT if mem_repair == "row_remap" else None,
        fp32_tflops=fp32_tflops,
        source=source,
    )


# Order follows gpu-specs.csv. Columns: name, arch, form factor, GB, memory type,
# GB/s, TDP W, base MHz, boost MHz, (PCIe gen, width), ECC, repair, FP32 TFLOPS, source.
_CATALOG: tuple[GpuSpec, ...] = (
    _spec("NVIDIA GeForce RTX 3090", "Ampere", "PCIe card", 24, "GDDR6X", 936, 350, 1395, 1695,
          (4, 16), "none", "none", 35.58,
          "TechPowerUp-derived (chipversus, holynerdvana); NVIDIA GA102 whitepaper"),
    _spec("Tesla V100-SXM2-32GB", "Volta", "SXM2", 32, "HBM2", 900, 300, 1290, 1530,
          (3, 16), "configurable", "page_retire", 15.7,
          "TechPowerUp-derived (V100 SXM3 32GB mirror); NVIDIA V100 datasheet; TDP recalled; "
          "ECC on by default"),
    _spec("NVIDIA A100-SXM4-80GB", "Ampere", "SXM4", 80, "HBM2e", 2039, 400, 1275, 1410,
          (4, 16), "always", "row_remap", 19.5,
          "NVIDIA A100 datasheet (glennklockwood, alldbin); base clock recalled from TechPowerUp"),
    _spec("NVIDIA A100 80GB PCIe", "Ampere", "PCIe card", 80, "HBM2e", 1935, 300, 1065, 1410,
          (4, 16), "always", "row_remap", 19.5,
          "NVIDIA A100 datasheet; TechPowerUp (recalled, not re-verified)"),
    _spec("NVIDIA H100 80GB HBM3", "Hopper", "SXM5", 80, "HBM3", 3352, 700, 1590, 1980,
          (5, 16), "configurable", "row_remap", 66.9,
          "NVIDIA datasheet (glennklockwood); boost hmc-tech; base recalled from TechPowerUp; "
          "ECC on by default"),
    _spec("NVIDIA H100 PCIe", "Hopper", "PCIe card", 80, "HBM2e", 2039, 350, 1095, 1755,
          (5, 16), "configurable", "row_remap", 51.2,
          "NVIDIA H100 PCIe product brief PB-11133-001; TechPowerUp-derived clocks (cputronic); "
          "ECC on by default"),
    _spec("NVIDIA H200", "Hopper", "SXM5", 141, "HBM3e", 4800, 700, None, 1980,
          (5, 16), "configurable", "row_remap", 66.9,
          "aiwiki, hmc-tech; base clock not in reference; H200 NVL (PCIe) is 600 W; "
          "ECC on by default"),
    _spec("NVIDIA L40S", "Ada Lovelace", "PCIe card", 48, "GDDR6", 864, 350, 1110, 2520,
          (4, 16), "configurable", "row_remap", 91.6,
          "TechPowerUp text (computizer); 350 W and FLOPS from NVIDIA L40/L40S table "
          "(TechPowerUp lists 300 W); ECC on by default"),
    _spec("NVIDIA L4", "Ada Lovelace", "PCIe card (LP single slot)", 24, "GDDR6", 300, 72, 795, 2040,
          (4, 16), "configurable", "row_remap", 30.3,
          "TechPowerUp-derived (fpsbench); NVIDIA Ada whitepaper; ECC on by default"),
    _spec("NVIDIA A10", "Ampere", "PCIe card (single slot)", 24, "GDDR6", 600, 150, 885, 1695,
          (4, 16), "configurable", "row_remap", 31.2,
          "TechPowerUp-derived (sysrqmts); NVIDIA A10 datasheet; ECC on by default"),
    _spec("Tesla T4", "Turing", "PCIe card (LP single slot)", 16, "GDDR6", 320, 70, 585, 1590,
          (3, 16), "configurable", "page_retire", 8.1,
          "TechPowerUp-derived (sysrqmts); ECC on by default"),
    _spec("Tesla P100-PCIE-16GB", "Pascal", "PCIe card", 16, "HBM2", 732, 250, 1190, 1329,
          (3, 16), "configurable", "page_retire", 9.3,
          "TechPowerUp-derived (sysrqmts); FP32 from NVIDIA datasheet (TechPowerUp 9.53); "
          "ECC on by default"),
    _spec("Tesla P40", "Pascal", "PCIe card", 24, "GDDR5", 346, 250, 1303, 1531,
          (3, 16), "configurable", "page_retire", 11.76,
          "TechPowerUp text (redbarnhpc, gpuark); ECC on by default"),
    _spec("NVIDIA GeForce RTX 4090", "Ada Lovelace", "PCIe card", 24, "GDDR6X", 1008, 450, 2235, 2520,
          (4, 16), "toggle", "none", 82.6,
          "spec table (beingknow); Lightning _CUDA_FLOPS; ECC driver toggle, off by default "
          "(notebookcheck); GetRemappedRows succeeds but is not meaningful (gpud)"),
    _spec("NVIDIA GeForce RTX 3080", "Ampere", "PCIe card", 10, "GDDR6X", 760, 320, 1440, 1710,
          (4, 16), "none", "none", 29.8,
          "alldbin; base clock recalled from TechPowerUp (alldbin says 1450); Lightning _CUDA_FLOPS"),
    _spec("NVIDIA GeForce RTX 2080 Ti", "Turing", "PCIe card", 11, "GDDR6", 616, 250, 1350, 1545,
          (3, 16), "none", "none", 13.45,
          "TechPowerUp-derived (topcpu.net); older drivers omit the 'NVIDIA ' prefix"),
    _spec("NVIDIA RTX A6000", "Ampere", "PCIe card", 48, "GDDR6", 768, 300, 1410, 1800,
          (4, 16), "configurable", "row_remap", 38.7,
          "TechPowerUp-derived (sysrqmts); NVIDIA datasheet; ECC off by default"),
    _spec("Quadro RTX 8000", "Turing", "PCIe card", 48, "GDDR6", 672, 295, 1395, 1770,
          (3, 16), "configurable", "page_retire", 16.3,
          "NVIDIA max board power 295 W (TechPowerUp lists 260 W); clocks recalled from "
          "TechPowerUp, not re-verified; ECC off by default"),
    _spec("NVIDIA A40", "Ampere", "PCIe card", 48, "GDDR6", 696, 300, 1305, 1740,
          (4, 16), "configurable", "row_remap", 37.4,
          "NVIDIA A40 datasheet text (ecer.com); hmc-tech; boost 1740 per TechPowerUp "
          "(technical.city says 1755); ECC on by default"),
    _spec("NVIDIA A800-SXM4-80GB", "Ampere", "SXM4", 80, "HBM2e", 2039, 400, 1275, 1410,
          (4, 16), "always", "row_remap", 19.5,
          "hmc-tech; NVIDIA A800 datasheet (recalled): A100 SXM4 80GB with NVLink 400 GB/s; "
          "clocks not re-verified"),
    _spec("NVIDIA H800", "Hopper", "SXM5", 80, "HBM3", 3352, 700, 1590, 1980,
          (5, 16), "configurable", "row_remap", 66.9,
          "philisun (NVLink 400 GB/s); rest as H100 SXM (recalled); TDP and clocks not "
          "re-verified; ECC on by default"),
    _spec("NVIDIA GeForce RTX 4090 D", "Ada Lovelace", "PCIe card", 24, "GDDR6X", 1008, 425, 2280, 2520,
          (4, 16), None, "none", 73.54,
          "TechPowerUp-derived (fpsbench, chipversus); hmc-tech; ECC toggle unverified; "
          "48 GB memory-modded boards report ~47 GB"),
)


_PREFIXES = ("nvidia", "geforce", "tesla")


def _normalise(name: str) -> str:
    """Reduce a reported name to a lookup key.

    Lower case, whitespace collapsed, and any leading "NVIDIA", "GeForce" and
    "Tesla" words dropped (drivers differ in which of these they print). The
    rest of the name must match exactly, so "RTX 4090 D" stays apart from
    "RTX 4090".
    """
    words = name.lower().split()
    while words and words[0] in _PREFIXES:
        words.pop(0)
    return " ".join(words)


_BY_KEY: dict[str, GpuSpec] = {}
for _row in _CATALOG:
    _key = _normalise(_row.nvml_name)
    if _key in _BY_KEY:  # pragma: no cover - guards the table above
        raise ValueError(f"two catalog rows share the lookup key {_key!r}")
    _BY_KEY[_key] = _row
del _row, _key


def lookup(name: str) -> GpuSpec | None:
    """Return the spec for an NVML device name, or None if the model is unknown.

    Matching ignores case, extra whitespace and a leading "NVIDIA ", "GeForce "
    or "Tesla " (so "GeForce RTX 2080 Ti" from an older driver and "NVIDIA
    Tesla T4" both match). Nothing else is fuzzy.
    """
    if not name:
        return None
    return _lookup(name)


@functools.lru_cache(maxsize=1024)  # a health pass asks once per card and rule; a fleet has a few models
def _lookup(name: str) -> GpuSpec | None:
    key = _normalise(name)
    return _BY_KEY.get(key) if key else None


def all_specs() -> tuple[GpuSpec, ...]:
    """Every catalog row, in catalog order."""
    return _CATALOG


@dataclass(frozen=True, **SLOTS)
class MinDriver:
    """The oldest Linux driver that supports an architecture.

    Attributes:
        architecture: as in :attr:`GpuSpec.architecture`.
        version: the driver version ("520.61.05"), compared numerically.
        cuda: the first CUDA toolkit that supports the architecture.
        source: where the pairing comes from.
    """

    architecture: str
    version: str
    cuda: str
    source: str


# The first CUDA toolkit that compiles for an architecture, and the Linux
# driver that toolkit requires (NVIDIA CUDA Toolkit Release Notes, table
# "CUDA Toolkit and Corresponding Driver Versions",
# https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/ ; the compute
# capabilities per toolkit from the CUDA C++ Programming Guide). Ampere is
# taken at CUDA 11.1 / 455.23: GA100 (A100) runs from 11.0 / 450.51.05, but the
# GA10x cards (RTX 30x0, A10, A6000) need 11.1 (sm_86), and one row per
# architecture must not advise a driver a GA10x card cannot use.
MIN_DRIVERS: tuple[MinDriver, ...] = (
    MinDriver("Pascal", "367.48", "8.0 (8.0.44)",
              "CUDA 8.0 adds sm_60/61; its driver >= 367.48 (CUDA release notes, driver table)"),
    MinDriver("Volta", "384.81", "9.0 (9.0.76)",
              "CUDA 9.0 adds sm_70; its driver >= 384.81 (CUDA release notes, driver table)"),
    MinDriver("Turing", "410.48", "10.0 (10.0.130)",
              "CUDA 10.0 adds sm_75; its driver >= 410.48 (CUDA release notes, driver table)"),
    MinDriver("Ampere", "455.23", "11.1 (11.1.0)",
              "CUDA 11.1 adds sm_86 (GA10x; GA100 sm_80 from 11.0 / 450.51.05); its driver >= 455.23 "
              "(CUDA release notes, driver table)"),
    MinDriver("Ada Lovelace", "520.61.05", "11.8 (11.8.0)",
              "CUDA 11.8 adds sm_89; its driver >= 520.61.05 (CUDA release notes, driver table)"),
    MinDriver("Hopper", "520.61.05", "11.8 (11.8.0)",
              "CUDA 11.8 adds sm_90; its driver >= 520.61.05 (CUDA release notes, driver table)"),
)
_MIN_BY_ARCH: dict[str, MinDriver] = {m.architecture: m for m in MIN_DRIVERS}


def version_key(version: str) -> tuple[int, ...]:
    """A driver version as numbers for comparing ("535.161.08" -> (535, 161, 8)); non-digits end it."""
    out: list[int] = []
    for part in str(version).strip().split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def min_driver(gpu_name: str) -> MinDriver | None:
    """The oldest driver that supports the card named ``gpu_name`` (None for a model not in the catalog)."""
    spec = lookup(gpu_name)
    return _MIN_BY_ARCH.get(spec.architecture) if spec is not None else None


def min_drivers_markdown() -> str:
    """The minimum drivers as a Markdown table (the second generated part of docs/spec-catalog.md)."""
    lines = ["| Architecture | Oldest driver | First CUDA | Source |", "|---|---|---|---|"]
    lines += [f"| {m.architecture} | {m.version} | {m.cuda} | {m.source} |" for m in MIN_DRIVERS]
    return "\n".join(lines) + "\n"


# Per-lane, per-direction payload rate after line encoding, GB/s:
# Gen1 2.5 GT/s and Gen2 5 GT/s with 8b/10b; Gen3 8, Gen4 16, Gen5 32 GT/s with
# 128b/130b; Gen6 64 GT/s PAM4 with 256-byte FLITs carrying 242 payload bytes.
# At x16 this gives Gen3 ~15.8, Gen4 ~31.5 and Gen5 ~63 GB/s, the figures in
# gpu-faults.md section 4 (billwoika PCIe doc). Achievable P2P copies run lower
# (~26 GB/s on Gen4, ~50 GB/s on Gen5).
_PCIE_LANE_GBS: dict[int, float] = {
    1: 2.5 * 8 / 10 / 8,
    2: 5.0 * 8 / 10 / 8,
    3: 8.0 * 128 / 130 / 8,
    4: 16.0 * 128 / 130 / 8,
    5: 32.0 * 128 / 130 / 8,
    6: 64.0 * 242 / 256 / 8,
}


def pcie_bandwidth_gbs(gen: int, width: int) -> float:
    """Theoretical PCIe bandwidth per direction in GB/s for a link.

    Raises:
        ValueError: for a generation outside 1..6 or a width below 1.
    """
    if gen not in _PCIE_LANE_GBS:
        raise ValueError(f"unknown PCIe generation {gen!r}")
    if width < 1:
        raise ValueError(f"PCIe width must be at least 1, got {width!r}")
    return _PCIE_LANE_GBS[gen] * width


def _ratio(measured: float | None, nominal: float | None) -> float | None:
    if measured is None or nominal is None or nominal <= 0:
        return None
    return measured / nominal


def clock_ratio(measured_sm_mhz: float | None, spec: GpuSpec | None) -> float | None:
    """Measured SM clock over the nominal boost clock (1.0 = at boost)."""
    return _ratio(measured_sm_mhz, spec.boost_clock_mhz if spec else None)


def power_limit_ratio(enforced_w: float | None, spec: GpuSpec | None) -> float | None:
    """Enforced power limit over the nominal TDP (below 1.0 = capped)."""
    return _ratio(enforced_w, spec.tdp_w if spec else None)


def memory_ratio(total_mib: float | None, spec: GpuSpec | None) -> float | None:
    """Reported total memory over ``memory_gb * 1024`` MiB.

    A healthy board sits just under 1.0 (an A100 80 GB reports 81559 of 81920
    MiB, 0.996). Well above 1.0 points at a memory-modded board.
    """
    return _ratio(total_mib, spec.memory_gb * 1024 if spec else None)


def pcie_ratio(gen: int | None, width: int | None, spec: GpuSpec | None) -> float | None:
    """Bandwidth of the current link over the board's nominal link.

    Returns None if any value is missing or the link is not a valid PCIe link
    (NVML can report generation 0 or width 0 when it cannot tell).
    """
    if gen is None or width is None or spec is None:
        return None
    if spec.pcie_gen is None or spec.pcie_width is None:
        return None
    try:
        measured = pcie_bandwidth_gbs(gen, width)
        nominal = pcie_bandwidth_gbs(spec.pcie_gen, spec.pcie_width)
    except ValueError:
        return None
    return measured / nominal


def _cell(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def catalog_markdown() -> str:
    """The catalog as a Markdown table (the generated part of docs/spec-catalog.md)."""
    header = (
        "| NVML name | Architecture | Form factor | Memory | BW GB/s | TDP W | Base/Boost MHz "
        "| PCIe | ECC | Memory repair | FP32 TFLOPS | Source |"
    )
    lines = [header, "|" + "---|" * 12]
    for s in _CATALOG:
        repair = s.mem_repair
        if s.retired_page_limit is not None:
            repair += f" (max {s.retired_page_limit})"
        elif s.remap_row_limit is not None:
            repair += f" (max {s.remap_row_limit})"
        pcie = "—" if s.pcie_gen is None else f"Gen{s.pcie_gen} x{_cell(s.pcie_width)}"
        cells = [
            s.nvml_name,
            s.architecture,
            s.form_factor,
            f"{s.memory_gb} GB {s.memory_type}",
            _cell(s.mem_bandwidth_gbs),
            _cell(s.tdp_w),
            f"{_cell(s.base_clock_mhz)}/{_cell(s.boost_clock_mhz)}",
            pcie,
            _cell(s.ecc),
            repair,
            _cell(s.fp32_tflops),
            s.source,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(min_drivers_markdown() if sys.argv[1:] == ["--min-drivers"] else catalog_markdown(), end="")
