"""Tests for the nominal spec catalog (fleetmon.specs)."""

from __future__ import annotations

import csv
import re
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

from fleetmon import specs
from fleetmon.specs import (
    GpuSpec,
    all_specs,
    catalog_markdown,
    clock_ratio,
    lookup,
    memory_ratio,
    pcie_bandwidth_gbs,
    pcie_ratio,
    power_limit_ratio,
)

REPO = Path(__file__).resolve().parents[2]
REFERENCE_CSV = Path(__file__).resolve().parents[3] / "shared" / "reference" / "gpu-specs.csv"
DOC = REPO / "docs" / "spec-catalog.md"

CATALOG_NAMES = [s.nvml_name for s in all_specs()]


# --- lookup -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", CATALOG_NAMES)
def test_lookup_exact_name(name: str) -> None:
    spec = lookup(name)
    assert spec is not None
    assert spec.nvml_name == name


@pytest.mark.parametrize("name", CATALOG_NAMES)
def test_lookup_case_and_whitespace(name: str) -> None:
    mangled = "  " + "   ".join(name.upper().split()) + "\t"
    assert lookup(mangled) == lookup(name)


@pytest.mark.parametrize(
    ("reported", "expected"),
    [
        # older drivers drop the "NVIDIA " prefix
        ("GeForce RTX 2080 Ti", "NVIDIA GeForce RTX 2080 Ti"),
        ("GeForce RTX 3090", "NVIDIA GeForce RTX 3090"),
        ("A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"),
        ("H100 80GB HBM3", "NVIDIA H100 80GB HBM3"),
        # "GeForce" present or absent
        ("NVIDIA RTX 4090", "NVIDIA GeForce RTX 4090"),
        ("RTX 4090 D", "NVIDIA GeForce RTX 4090 D"),
        # "Tesla" present or absent, with or without "NVIDIA"
        ("NVIDIA T4", "Tesla T4"),
        ("T4", "Tesla T4"),
        ("NVIDIA Tesla T4", "Tesla T4"),
        ("NVIDIA Tesla V100-SXM2-32GB", "Tesla V100-SXM2-32GB"),
        ("V100-SXM2-32GB", "Tesla V100-SXM2-32GB"),
        ("NVIDIA P40", "Tesla P40"),
        ("Tesla A10", "NVIDIA A10"),
        # other prefixes are part of the name and stay
        ("NVIDIA Quadro RTX 8000", "Quadro RTX 8000"),
        ("nvidia   geforce   rtx   4090", "NVIDIA GeForce RTX 4090"),
        # the variants issue 22 names, as NVML and nvidia-smi print them across drivers
        ("NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-40GB"),
        ("NVIDIA A100-PCIE-40GB", "NVIDIA A100-PCIE-40GB"),
        ("NVIDIA A100-PCIe-40GB", "NVIDIA A100-PCIE-40GB"),  # as vLLM's config names spell it
        ("Tesla V100-PCIE-16GB", "Tesla V100-PCIE-16GB"),
        ("Tesla V100S-PCIE-32GB", "Tesla V100S-PCIE-32GB"),
        ("NVIDIA H100 NVL", "NVIDIA H100 NVL"),
        ("NVIDIA GB200", "NVIDIA GB200"),
        ("NVIDIA B200", "NVIDIA B200"),
        ("NVIDIA H200 NVL", "NVIDIA H200 NVL"),
        ("NVIDIA RTX 6000 Ada Generation", "NVIDIA RTX 6000 Ada Generation"),
        ("GeForce GTX 1080 Ti", "NVIDIA GeForce GTX 1080 Ti"),
        ("TITAN V", "NVIDIA TITAN V"),
        ("NVIDIA Quadro RTX 6000", "Quadro RTX 6000"),
        ("Tesla P100-PCIE-12GB", "Tesla P100-PCIE-12GB"),
        ("NVIDIA H800 PCIe", "NVIDIA H800 PCIe"),
    ],
)
def test_lookup_aliases(reported: str, expected: str) -> None:
    spec = lookup(reported)
    assert spec is not None
    assert spec.nvml_name == expected


@pytest.mark.parametrize(
    "name",
    [
        "",
        "   ",
        "NVIDIA",
        "NVIDIA GeForce",
        "Graphics Device",
        "NVIDIA A100-SXM4-40",  # no prefix matching
        "NVIDIA A100-SXM4-40GB MIG 1g.5gb",  # a MIG device name is not a board
        "NVIDIA GeForce RTX 5090 D",  # different SKU, not in the catalog
        "NVIDIA GeForce RTX 4090 D 47 GB",  # memory-modded board
        "NVIDIA GeForce RTX 4080 Laptop GPU",
        "NVIDIA GeForce RTX 3060 Laptop GPU",
        "NVIDIA H100",
        "NVIDIA H20 141GB",
        "NVIDIA GB300",
        "RTX 8000",  # "Quadro" is part of the name
        "RTX 6000 Ada",
        "NVIDIA A100",  # no prefix matching
        "NVIDIA RTX 4000",
    ],
)
def test_lookup_unknown_is_none(name: str) -> None:
    assert lookup(name) is None


def test_4090_d_is_not_4090() -> None:
    d = lookup("NVIDIA GeForce RTX 4090 D")
    plain = lookup("NVIDIA GeForce RTX 4090")
    assert d is not None and plain is not None
    assert d != plain
    assert (d.tdp_w, plain.tdp_w) == (425, 450)
    assert (d.base_clock_mhz, plain.base_clock_mhz) == (2280, 2235)


# --- the table itself ---------------------------------------------------------------------


# Every model issue 22 asks for, by the name NVML prints for it.
ISSUE_22_MODELS = [
    "Tesla P4", "Tesla P40", "Tesla P100-PCIE-12GB", "Tesla P100-PCIE-16GB", "Tesla P100-SXM2-16GB",
    "Tesla V100-PCIE-16GB", "Tesla V100-PCIE-32GB", "Tesla V100-SXM2-16GB", "Tesla V100-SXM2-32GB",
    "Tesla V100S-PCIE-32GB", "Tesla T4", "NVIDIA A2", "NVIDIA A10", "NVIDIA A16", "NVIDIA A30",
    "NVIDIA A40", "NVIDIA A100-PCIE-40GB", "NVIDIA A100-SXM4-40GB", "NVIDIA A100 80GB PCIe",
    "NVIDIA A100-SXM4-80GB", "NVIDIA A800 80GB PCIe", "NVIDIA A800-SXM4-80GB", "NVIDIA H100 PCIe",
    "NVIDIA H100 80GB HBM3", "NVIDIA H100 NVL", "NVIDIA H800", "NVIDIA H800 PCIe", "NVIDIA H20",
    "NVIDIA H200", "NVIDIA H200 NVL", "NVIDIA L4", "NVIDIA L20", "NVIDIA L40", "NVIDIA L40S",
    "NVIDIA B200", "NVIDIA GB200", "NVIDIA RTX A2000", "NVIDIA RTX A4000", "NVIDIA RTX A4500",
    "NVIDIA RTX A5000", "NVIDIA RTX A5500", "NVIDIA RTX A6000", "NVIDIA RTX 4000 Ada Generation",
    "NVIDIA RTX 5000 Ada Generation", "NVIDIA RTX 6000 Ada Generation", "Quadro RTX 6000",
    "Quadro RTX 8000", "NVIDIA TITAN V", "NVIDIA TITAN RTX", "NVIDIA GeForce GTX 1080 Ti",
    "NVIDIA GeForce RTX 2080 Ti", "NVIDIA GeForce RTX 3060", "NVIDIA GeForce RTX 3080",
    "NVIDIA GeForce RTX 3080 Ti", "NVIDIA GeForce RTX 3090", "NVIDIA GeForce RTX 3090 Ti",
    "NVIDIA GeForce RTX 4070 Ti", "NVIDIA GeForce RTX 4080", "NVIDIA GeForce RTX 4080 SUPER",
    "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090 D", "NVIDIA GeForce RTX 5080",
    "NVIDIA GeForce RTX 5090",
]


def test_catalog_covers_issue_22_models() -> None:
    missing = [name for name in ISSUE_22_MODELS if name not in CATALOG_NAMES]
    assert not missing


def test_catalog_names_are_unique() -> None:
    keys = [(specs._normalise(s.nvml_name), s.memory_gb) for s in all_specs()]
    assert len(set(keys)) == len(keys), "two rows share a lookup key and a memory size"


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090 D"),
        ("NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB"),
        ("NVIDIA A100-PCIE-40GB", "NVIDIA A100 80GB PCIe"),
        ("Tesla V100-PCIE-16GB", "Tesla V100-PCIE-32GB"),
        ("Tesla V100-PCIE-32GB", "Tesla V100S-PCIE-32GB"),
        ("Tesla P100-PCIE-12GB", "Tesla P100-PCIE-16GB"),
        ("NVIDIA H100 PCIe", "NVIDIA H100 NVL"),
        ("NVIDIA H200", "NVIDIA H200 NVL"),
        ("NVIDIA H800", "NVIDIA H800 PCIe"),
        ("NVIDIA B200", "NVIDIA GB200"),
        ("NVIDIA L40", "NVIDIA L40S"),
        ("NVIDIA RTX 4000 Ada Generation", "NVIDIA RTX 4000 SFF Ada Generation"),
        ("NVIDIA GeForce RTX 4080", "NVIDIA GeForce RTX 4080 SUPER"),
        ("NVIDIA RTX A2000", "NVIDIA RTX A2000 12GB"),
    ],
)
def test_different_skus_never_match_each_other(one: str, other: str) -> None:
    a, b = lookup(one), lookup(other)
    assert a is not None and b is not None
    assert a.nvml_name == one and b.nvml_name == other


ARCHITECTURES = ("Pascal", "Volta", "Turing", "Ampere", "Ada Lovelace", "Hopper", "Blackwell")
# Other vendors' architectures (issue 23), by vendor.
VENDOR_ARCHITECTURES = {
    "nvidia": ARCHITECTURES,
    "amd": ("Vega 20 (GCN 5)", "CDNA", "CDNA 2", "CDNA 3", "RDNA 3"),
    "hygon": ("Hygon DCU (Shensuan-1)", "Hygon DCU (Shensuan-2)"),
    "huawei": ("Da Vinci",),
    "intel": ("Gaudi 2", "Gaudi 3"),
    "mthreads": ("MUSA",),
}
MEMORY_TYPES = ("GDDR5", "GDDR5X", "GDDR6", "GDDR6X", "GDDR7", "HBM2", "HBM2e", "HBM3", "HBM3e")
# "HBM" where the generation is not known (amd-smi itself reports a vram type of "HBM"); "" where the
# memory type is not known at all (the source says so).
OTHER_MEMORY_TYPES = ("HBM", "LPDDR4X", "")
MISSING = re.compile(r"not (found|published|in|verified|documented)")


@pytest.mark.parametrize("spec", all_specs(), ids=CATALOG_NAMES)
def test_row_is_well_formed(spec: GpuSpec) -> None:
    assert spec.nvml_name == spec.nvml_name.strip() and spec.nvml_name
    assert spec.vendor in specs.VENDORS
    assert spec.architecture in VENDOR_ARCHITECTURES[spec.vendor]
    nvidia = spec.vendor == "nvidia"
    assert spec.memory_type in (MEMORY_TYPES if nvidia else MEMORY_TYPES + OTHER_MEMORY_TYPES)
    if not spec.memory_type:
        assert "memory type not found" in spec.source
    assert spec.form_factor.strip()
    size = re.search(r"(?:^|[\s-])(\d+)GB\b", spec.nvml_name)
    assert size is None or int(size.group(1)) == spec.memory_gb, "the name's size is the row's"
    assert spec.ecc in (*specs.ECC_MODES, None)
    assert spec.mem_repair in specs.MEM_REPAIR_MODES or (not nvidia and spec.mem_repair == "")
    assert spec.source.strip()
    assert spec.memory_gb > 0
    # NVIDIA rows state every derating figure; other vendors' may lack power and bandwidth, and say so
    if nvidia:
        assert spec.tdp_w is not None and spec.mem_bandwidth_gbs is not None
    if spec.tdp_w is None or spec.mem_bandwidth_gbs is None:
        assert MISSING.search(spec.source), spec.source
    assert spec.tdp_w is None or spec.tdp_w > 0
    assert spec.mem_bandwidth_gbs is None or spec.mem_bandwidth_gbs > 0
    assert spec.boost_clock_mhz is None or 300 <= spec.boost_clock_mhz <= 3500
    assert spec.base_clock_mhz is None or 300 <= spec.base_clock_mhz <= 3500
    if spec.base_clock_mhz is not None and spec.boost_clock_mhz is not None:
        assert spec.base_clock_mhz < spec.boost_clock_mhz
    if nvidia or spec.pcie_gen is not None:
        assert spec.pcie_gen in (3, 4, 5, 6)
    if nvidia or spec.pcie_width is not None:
        assert spec.pcie_width in (8, 16)
    if spec.pcie_gen is None or spec.pcie_width is None:
        assert re.search(r"PCIe (link|generation)[^;]* not (found|published)", spec.source), spec.source
    assert spec.fp32_tflops is None or spec.fp32_tflops > 0
    assert spec.tensor_tflops is None or spec.tensor_tflops > 0
    if spec.fp32_tflops is not None and spec.tensor_tflops is not None:
        assert spec.tensor_tflops >= spec.fp32_tflops
    if spec.architecture in ("Pascal", "Vega 20 (GCN 5)"):
        assert spec.tensor_tflops is None, "Pascal and Vega 20 have no tensor (matrix) cores"
    if spec.tensor_tflops is None:
        assert "tensor" in spec.source, "say why the tensor figure is missing"
    # a missing figure is said in the source, never left silent
    if spec.boost_clock_mhz is None or spec.fp32_tflops is None or (nvidia and spec.base_clock_mhz is None):
        assert MISSING.search(spec.source), spec.source
    if spec.base_clock_mhz is None:
        assert re.search(r"base clock[^;]* not (found|published|in)|clocks[^;]* not (found|published)",
                         spec.source), spec.source
    # memory repair follows the vendor and architecture: NVIDIA page retirement up to Turing, row remapping
    # after; AMD's bad-page retirement; Gaudi's row replacement; "" (not documented) said in the source
    if spec.mem_repair == "page_retire":
        assert spec.architecture in ("Pascal", "Volta", "Turing") or spec.vendor == "amd"
    if spec.mem_repair == "row_remap":
        assert nvidia and spec.architecture not in ("Pascal", "Volta", "Turing")
    if spec.mem_repair == "row_replace":
        assert spec.vendor == "intel"
    if spec.mem_repair == "":
        assert "memory repair not documented" in spec.source
    if nvidia and spec.mem_repair == "page_retire":
        assert (spec.retired_page_limit, spec.remap_row_limit) == (64, None)
    elif nvidia and spec.mem_repair == "row_remap":
        assert (spec.retired_page_limit, spec.remap_row_limit) == (None, 512)
    else:  # other vendors publish no per-model limit (AMD's is the host's bad_page_threshold)
        assert (spec.retired_page_limit, spec.remap_row_limit) == (None, None)
    # no memory repair without ECC hardware
    if spec.ecc == "none":
        assert spec.mem_repair == "none"


def test_missing_values_stay_none() -> None:
    h200 = lookup("NVIDIA H200")
    assert h200 is not None
    assert h200.base_clock_mhz is None
    assert h200.boost_clock_mhz == 1980


def test_spec_is_frozen() -> None:
    spec = all_specs()[0]
    with pytest.raises(FrozenInstanceError):
        spec.tdp_w = 1  # type: ignore[misc]


# --- PCIe bandwidth -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gen", "width", "expected"),
    [
        (1, 16, 4.0),
        (2, 16, 8.0),
        (3, 16, 15.75),  # reference: ≈ 15.8
        (4, 16, 31.51),  # reference: ≈ 31.5
        (5, 16, 63.02),  # reference: ≈ 63
        (6, 16, 121.0),
        (3, 1, 0.985),
        (4, 1, 1.969),
        (5, 1, 3.938),
        (6, 1, 7.5625),
        (4, 8, 15.75),
    ],
)
def test_pcie_bandwidth(gen: int, width: int, expected: float) -> None:
    assert pcie_bandwidth_gbs(gen, width) == pytest.approx(expected, abs=0.01)


@pytest.mark.parametrize(("gen", "width"), [(0, 16), (7, 16), (4, 0), (4, -1)])
def test_pcie_bandwidth_rejects_bad_links(gen: int, width: int) -> None:
    with pytest.raises(ValueError):
        pcie_bandwidth_gbs(gen, width)


# --- derating ratios ----------------------------------------------------------------------

A100 = lookup("NVIDIA A100-SXM4-80GB")
RTX3090 = lookup("NVIDIA GeForce RTX 3090")
H100 = lookup("NVIDIA H100 80GB HBM3")
H200 = lookup("NVIDIA H200")


@pytest.mark.parametrize(
    ("measured", "spec", "expected"),
    [
        (1410, A100, 1.0),
        (1100, RTX3090, 0.649),
        (1980, H100, 1.0),
        (990, H200, 0.5),
    ],
)
def test_clock_ratio(measured: float, spec: GpuSpec, expected: float) -> None:
    assert clock_ratio(measured, spec) == pytest.approx(expected, abs=0.001)


@pytest.mark.parametrize(
    ("enforced", "spec", "expected"),
    [(400, A100, 1.0), (300, A100, 0.75), (280, RTX3090, 0.8), (700, H200, 1.0)],
)
def test_power_limit_ratio(enforced: float, spec: GpuSpec, expected: float) -> None:
    assert power_limit_ratio(enforced, spec) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("total_mib", "spec", "expected"),
    [
        (81920, A100, 1.0),
        (81559, A100, 0.9956),  # what a healthy A100 80 GB really reports
        (24576, RTX3090, 1.0),
        (40960, A100, 0.5),
    ],
)
def test_memory_ratio(total_mib: float, spec: GpuSpec, expected: float) -> None:
    assert memory_ratio(total_mib, spec) == pytest.approx(expected, abs=0.0001)


@pytest.mark.parametrize(
    ("gen", "width", "spec", "expected"),
    [
        (4, 16, A100, 1.0),
        (3, 16, A100, 0.5),
        (4, 8, A100, 0.5),
        (5, 16, H100, 1.0),
        (4, 16, H100, 0.5),  # a Gen5 board behind a Gen4 switch
        (1, 16, RTX3090, 0.25 / (16 * 128 / 130 / 8)),  # idle downtraining looks like this
    ],
)
def test_pcie_ratio(gen: int, width: int, spec: GpuSpec, expected: float) -> None:
    assert pcie_ratio(gen, width, spec) == pytest.approx(expected)


def test_ratios_none_when_input_missing() -> None:
    assert clock_ratio(None, A100) is None
    assert clock_ratio(1410, None) is None
    assert power_limit_ratio(None, A100) is None
    assert power_limit_ratio(400, None) is None
    assert memory_ratio(None, A100) is None
    assert memory_ratio(81920, None) is None
    assert pcie_ratio(None, 16, A100) is None
    assert pcie_ratio(4, None, A100) is None
    assert pcie_ratio(4, 16, None) is None


def test_ratios_none_when_spec_value_missing() -> None:
    assert H200 is not None
    no_boost = GpuSpec(**{**_asdict(H200), "boost_clock_mhz": None})
    no_pcie = GpuSpec(**{**_asdict(H200), "pcie_gen": None})
    assert clock_ratio(1980, no_boost) is None
    assert pcie_ratio(5, 16, no_pcie) is None


def test_pcie_ratio_none_for_invalid_link() -> None:
    # NVML can report 0 when it cannot tell; that is missing, not a 0 % link
    assert pcie_ratio(0, 16, A100) is None
    assert pcie_ratio(4, 0, A100) is None


def _asdict(spec: GpuSpec) -> dict[str, object]:
    return {name: getattr(spec, name) for name in GpuSpec.__dataclass_fields__}


# --- consistency with the reference and the docs -----------------------------------------


def _leading_number(text: str) -> float | None:
    match = re.match(r"\s*(\d+(?:\.\d+)?)", text)
    return float(match.group(1)) if match else None


@pytest.mark.skipif(not REFERENCE_CSV.exists(), reason="shared reference table not present")
def test_catalog_matches_reference_csv() -> None:
    with REFERENCE_CSV.open(newline="", encoding="utf-8") as f:
        rows = {row["nvml_name"]: row for row in csv.DictReader(f)}
    # the CSV holds the first 22 rows; rows added later carry their own sources
    assert set(rows) <= set(CATALOG_NAMES)
    assert CATALOG_NAMES[: len(rows)] == list(rows), "the CSV's rows lead the catalog, in its order"
    for spec in (s for s in all_specs()[: len(rows)] if s.nvml_name in rows):  # not the memory variants
        row = rows[spec.nvml_name]
        checks = {
            "tdp_w": ("tdp_w", spec.tdp_w),
            "boost_clock_mhz": ("boost_clock_mhz", spec.boost_clock_mhz),
            "base_clock_mhz": ("base_clock_mhz", spec.base_clock_mhz),
            "memory_gb_nominal": ("memory_gb", spec.memory_gb),
            "mem_bandwidth_gbs": ("mem_bandwidth_gbs", spec.mem_bandwidth_gbs),
            "pcie_gen": ("pcie_gen", spec.pcie_gen),
            "pcie_width": ("pcie_width", spec.pcie_width),
            "fp32_tflops": ("fp32_tflops", spec.fp32_tflops),
            "fp16_bf16_tensor_dense_tflops_fp32acc": ("tensor_tflops", spec.tensor_tflops),
        }
        for column, (attr, ours) in checks.items():
            theirs = _leading_number(row[column])
            assert ours == theirs, f"{spec.nvml_name}: {attr} {ours!r} != CSV {column} {row[column]!r}"
        assert spec.architecture == row["architecture"]
        assert spec.memory_type == row["memory_type"]
        assert spec.form_factor == row["form_factor"]


def test_docs_table_is_generated() -> None:
    text = DOC.read_text(encoding="utf-8")
    begin = "<!-- BEGIN GENERATED: python -m fleetmon.specs -->\n"
    end = "<!-- END GENERATED -->"
    assert begin in text and end in text
    generated = text.split(begin, 1)[1].split(end, 1)[0]
    assert generated == catalog_markdown(), (
        "docs/spec-catalog.md is stale: paste the output of `python -m fleetmon.specs` "
        "between the GENERATED markers"
    )


def test_catalog_markdown_lists_every_model() -> None:
    table = catalog_markdown()
    assert len(table.splitlines()) == 2 + len(CATALOG_NAMES)
    for name in CATALOG_NAMES:
        assert f"| {name} |" in table
    assert "| —/1980 |" in table  # H200 base clock shown as missing
    assert "| Tensor TFLOPS |" in table.splitlines()[0]
    assert "| 19.5 | 312 |" in table  # A100: FP32, then dense tensor


# --- the boxes issue 22 names get derating ratios -------------------------------------------


@pytest.mark.parametrize(
    ("name", "sm_mhz", "limit_w", "total_mib", "gen", "width"),
    [
        # readings from the k8s-test-infra captures in ../shared/fixtures
        ("NVIDIA A100-SXM4-40GB", 1410, 400.0, 40960, 4, 16),
        ("NVIDIA GB200", 2062, 1200.0, 189471, 5, 16),
        ("NVIDIA B200", 1965, 1000.0, 183359, 5, 16),
    ],
)
def test_issue_22_boxes_get_ratios(
    name: str, sm_mhz: int, limit_w: float, total_mib: int, gen: int, width: int
) -> None:
    spec = lookup(name)
    assert spec is not None
    assert clock_ratio(sm_mhz, spec) == pytest.approx(1.0)
    assert power_limit_ratio(limit_w, spec) == pytest.approx(1.0)
    ratio = memory_ratio(total_mib, spec)
    assert ratio is not None and 0.98 < ratio <= 1.0
    assert pcie_ratio(gen, width, spec) == pytest.approx(1.0)


def test_tensor_tflops_sits_after_fp32() -> None:
    fields = list(GpuSpec.__dataclass_fields__)
    assert fields.index("tensor_tflops") == fields.index("fp32_tflops") + 1
    a100 = lookup("NVIDIA A100-SXM4-40GB")
    p40 = lookup("Tesla P40")
    assert a100 is not None and a100.tensor_tflops == 312
    assert p40 is not None and p40.tensor_tflops is None  # no tensor cores: None, never 0


# --- every GPU name in ../shared/fixtures -------------------------------------------------

# Where a name sits in each kind of capture: nvidia-smi -q -x, nvidia-smi -q, nvidia-smi -L,
# dcgm-exporter labels, and the NVML mock profiles (YAML). The CSV captures are read by header.
_NAME_PATTERNS = (
    re.compile(r"<product_name>([^<]*)</product_name>"),
    re.compile(r"^\s*Product Name\s*:\s*(.+?)\s*$", re.MULTILINE),
    re.compile(r"^GPU \d+: (.+?) \(UUID:", re.MULTILINE),
    re.compile(r'\b(?:modelName|DEV_NAME)="([^"]*)"'),
    re.compile(r'^\s*name:\s*"([^"]+)"', re.MULTILINE),
)

# Names in the fixtures that deliberately have no catalog row, with the reason.
FIXTURE_NAMES_UNKNOWN = {
    "Graphics Device": "a driver too old to name the board (a GTX 1660 Ti): nothing to match",
    "GRID P4-1Q": "a vGPU profile (a 1 GB slice of a Tesla P4), not a board",
    "NVIDIA GeForce RTX 3060 Laptop GPU": "a laptop GPU: clocks and power depend on the notebook",
    "NVIDIA GeForce GT 1030": "a display card, not one fleets train on",
    # boards PROVENANCE.md lists among the fixtures held back for acceptance testing
    "NVIDIA GeForce GTX 1070 Ti": "a Pascal GeForce outside issue 22's list (no tensor cores)",
    "NVIDIA GeForce GTX 1660 Ti": "a Turing GeForce without tensor cores, outside issue 22's list",
    "Quadro P2000": "a Pascal display card, not one fleets train on",
    "Quadro P400": "a Pascal display card, not one fleets train on",
    "NVIDIA GB300": "Blackwell Ultra, newer than issue 22's list; no verified figures",
    "NVIDIA GB300 NVL": "Blackwell Ultra (mock NVML profile name), newer than issue 22's list",
    "NVIDIA RTX PRO 6000 Blackwell": "newer than issue 22's list; no verified figures",
    "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition": "newer than issue 22's list",
}


def _fixture_names(root: Path) -> dict[str, list[str]]:
    """Every GPU name in the fixtures, with the files it appears in (other vendors skipped)."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if not path.is_file() or rel.parts[0].startswith("F_") or path.suffix == ".md":
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        names = [m.group(1).strip() for pattern in _NAME_PATTERNS for m in pattern.finditer(text)]
        if path.suffix == ".csv":
            rows = list(csv.reader(text.splitlines(), skipinitialspace=True))
            if rows and "name" in rows[0]:
                col = rows[0].index("name")
                names += [row[col].strip() for row in rows[1:] if len(row) > col]
        for name in names:
            if name:
                found.setdefault(name, []).append(str(rel))
    return found


def test_every_fixture_name_matches_or_is_known_unknown(shared_fixtures: Path) -> None:
    found = _fixture_names(shared_fixtures)
    assert len(found) >= 20, "the name patterns stopped finding the fixtures' names"
    # compared as lookup compares names, so "GeForce GTX 1070 Ti" from an older driver counts too
    unknown = {specs._normalise(n) for n in FIXTURE_NAMES_UNKNOWN}
    unexplained = {n: files[0] for n, files in found.items()
                   if lookup(n) is None and specs._normalise(n) not in unknown}
    assert not unexplained, f"fixture names with no catalog row and no stated reason: {unexplained}"
    wrongly_unknown = [n for n in FIXTURE_NAMES_UNKNOWN if lookup(n) is not None]
    assert not wrongly_unknown, f"listed as unknown but matched: {wrongly_unknown}"
    # the boxes issue 22 names are among them and match
    for name in ("NVIDIA A100-SXM4-40GB", "NVIDIA GB200", "NVIDIA T4", "Tesla T4", "NVIDIA B200"):
        assert name in found and lookup(name) is not None


def test_fixture_names_keep_their_memory_size(shared_fixtures: Path) -> None:
    # a name that matches picks the row of its own memory size, never a sibling's
    for name in _fixture_names(shared_fixtures):
        spec = lookup(name)
        size = re.search(r"(?:^|[\s-])(\d+)GB\b", name)
        if spec is not None and size:
            assert spec.memory_gb == int(size.group(1)), name


@pytest.mark.parametrize(("name", "driver"), [
    ("NVIDIA B200", "570.26"),
    ("NVIDIA GB200", "570.26"),
    ("NVIDIA GeForce RTX 5090", "570.26"),
    ("Tesla P4", "367.48"),
    ("NVIDIA TITAN V", "384.81"),
    ("NVIDIA TITAN RTX", "410.48"),
])
def test_every_architecture_has_a_minimum_driver(name: str, driver: str) -> None:
    nvidia = {s.architecture for s in all_specs() if s.vendor == "nvidia"}
    assert nvidia <= {m.architecture for m in specs.MIN_DRIVERS}
    floor = specs.min_driver(name)
    assert floor is not None and floor.version == driver


@pytest.mark.parametrize(("name", "memory_mib", "gb"), [
    ("NVIDIA GeForce RTX 3080", 10240, 10),
    ("NVIDIA GeForce RTX 3080", 12288, 12),
    ("NVIDIA GeForce RTX 3080", None, 10),   # without memory: the first row of the name
    ("NVIDIA GeForce RTX 3080", 20480, 12),  # a 20 GB mod: the nearest stock board, so its ratio shows the mod
    ("NVIDIA GeForce RTX 3060", 8192, 8),
    ("NVIDIA GeForce RTX 3060", 12288, 12),
    ("NVIDIA GeForce RTX 4090", 49140, 24),  # one row of the name: the name decides (a 48 GB mod stays a mod)
])
def test_boards_of_one_name_are_told_apart_by_their_memory(name: str, memory_mib: int | None, gb: int) -> None:
    spec = lookup(name, memory_mib)
    assert spec is not None and spec.memory_gb == gb
    if memory_mib is not None and gb in (8, 10, 12) and memory_mib <= gb * 1024:
        assert 0.9 < specs.memory_ratio(memory_mib, spec) <= 1.0  # not a "memory-modded" false alarm


# --- other vendors (issue 23) ---------------------------------------------------------------

# Every model issue 23 asks for, by the name its vendor's tool prints (npu-smi's without "Ascend").
ISSUE_23_MODELS = [
    "AMD Instinct MI50", "AMD Instinct MI60", "AMD Instinct MI100", "AMD Instinct MI210", "AMD Instinct MI250",
    "AMD Instinct MI250X", "AMD Instinct MI300X", "AMD Instinct MI308X", "AMD Radeon PRO W7900",
    "AMD Radeon RX 7900 XTX", "K100", "K100_AI", "910A", "910B1", "910B2", "910B3", "910B4", "310P3",
    "HL-225", "HL-325L", "MTT S4000",
]
# Models issue 23 names that have no row, with the reason (a [[spec]] in the fleet file can declare them).
ISSUE_23_NOT_IN_CATALOG = {
    "Z100": "Hygon's older DCU: no figures found (PaddlePaddle's docs and Hygon's hcu-dcgm compatibility matrix "
            "only name Z100 and Z100L), not even its memory size, and a row needs one",
}
OTHER_VENDORS = ("amd", "hygon", "huawei", "intel", "mthreads")


@pytest.mark.parametrize("name", ISSUE_23_MODELS)
def test_catalog_covers_issue_23_models(name: str) -> None:
    spec = lookup(name)
    assert spec is not None and spec.vendor in OTHER_VENDORS
    assert spec.origin == "catalog" and specs.min_driver(name) is None


@pytest.mark.parametrize("name", ISSUE_23_NOT_IN_CATALOG)
def test_issue_23_models_without_a_row_are_unknown(name: str) -> None:
    assert lookup(name) is None


def test_vendor_is_the_last_field_and_defaults_to_nvidia() -> None:
    fields = list(GpuSpec.__dataclass_fields__)
    assert fields[-2:] == ["origin", "vendor"]
    assert GpuSpec.__dataclass_fields__["vendor"].default == "nvidia"
    assert specs.VENDORS[0] == "nvidia" and set(OTHER_VENDORS) < set(specs.VENDORS)
    by_vendor = {v: [s for s in all_specs() if s.vendor == v] for v in specs.VENDORS}
    assert all(by_vendor[v] for v in specs.VENDORS), "every vendor has rows"
    assert all(s.nvml_name.startswith(("NVIDIA", "Tesla", "Quadro")) for s in by_vendor["nvidia"])


def _old_normalise(name: str) -> str:
    """The lookup key before issue 23 (NVIDIA's prefixes only), to show NVIDIA keys did not move."""
    words = name.lower().split()
    while words and words[0] in ("nvidia", "geforce", "tesla"):
        words.pop(0)
    return " ".join(words)


def test_nvidia_keys_are_unchanged_and_vendors_never_share_a_key() -> None:
    rows = all_specs()
    for s in rows:
        if s.vendor == "nvidia":
            assert specs._normalise(s.nvml_name) == _old_normalise(s.nvml_name), s.nvml_name
    vendor_of: dict[str, set[str]] = {}
    for s in rows:
        vendor_of.setdefault(specs._normalise(s.nvml_name), set()).add(s.vendor)
    assert all(len(v) == 1 for v in vendor_of.values()), {k: v for k, v in vendor_of.items() if len(v) > 1}
    # every alias points at a row of the catalog, and is not itself a row's key
    for alias, key in specs._ALIASES.items():
        assert key in vendor_of and alias not in vendor_of, alias


@pytest.mark.parametrize(
    ("reported", "expected"),
    [
        # amd-smi market_name / product_name, rocminfo Marketing Name, rocm-smi Card series
        ("AMD Instinct MI300X", "AMD Instinct MI300X"),
        ("AMD Instinct MI300X OAM", "AMD Instinct MI300X"),
        ("Instinct MI300X", "AMD Instinct MI300X"),
        ("MI300X", "AMD Instinct MI300X"),
        ("Arcturus GL-XL [Instinct MI100]", "AMD Instinct MI100"),
        ("AMD Instinct MI100", "AMD Instinct MI100"),
        ("AMD Radeon Instinct MI50", "AMD Instinct MI50"),  # the Vega 20 parts' older brand
        ("AMD Radeon (TM) Pro  W7900", "AMD Radeon PRO W7900"),  # as a tool printed it (see the module doc)
        ("Radeon RX 7900 XTX", "AMD Radeon RX 7900 XTX"),
        # hy-smi / Hygon rocm-smi Card Series, and the spellings docs use
        ("K100_AI", "K100_AI"), ("K100-AI", "K100_AI"), ("Hygon K100 AI", "K100_AI"), ("K100", "K100"),
        # npu-smi Name, CANN's SoC name, npu-smi -m chip name
        ("910B4", "Ascend 910B4"), ("Ascend910B4", "Ascend 910B4"), ("Ascend 910B4", "Ascend 910B4"),
        ("910B4-1", "Ascend 910B4-1"), ("Ascend910B1", "Ascend 910B1"), ("910B2", "Ascend 910B2"),
        ("910B3", "Ascend 910B3"), ("Ascend 910A", "Ascend 910A"), ("910A", "Ascend 910A"),
        ("310P3", "Ascend 310P3"), ("Ascend310P3", "Ascend 310P3"), ("Huawei Ascend 910B3", "Ascend 910B3"),
        # hl-smi name, mthreads-gmi Name
        ("HL-325L", "HL-325L"), ("HL-225", "HL-225"), ("MTT S5000", "MTT S5000"), ("MTT S4000", "MTT S4000"),
    ],
)
def test_other_vendor_aliases(reported: str, expected: str) -> None:
    spec = lookup(reported)
    assert spec is not None and spec.nvml_name == expected


@pytest.mark.parametrize(
    "name",
    [
        "AMD Instinct MI60 / MI50",  # amdgpu.ids: one marketing name for two SKUs
        "AMD Instinct MI250X / MI250",  # likewise (0x740C)
        "910B",  # which of B1-B4?
        "Ascend910",  # each die of an A3 NPU
        "Ascend 910",
        "MI300",
        "AMD Instinct MI300A",  # the APU, not the MI300X
        "AMD Instinct MI325X",
        "Radeon RX 7900 XT",  # not the XTX
        "AMD Radeon PRO W7800",
        "K100_AI_2",
        "310P",  # not the name npu-smi prints
        "HL-325",
        "HL-338",  # the Gaudi 3 PCIe card: another power class
        "HL-288",  # the Gaudi 2 PCIe card
        "MTT S3000",
        "Z100",
        "AMD",
        "Ascend",
        "Huawei Ascend",
    ],
)
def test_other_vendor_near_misses_are_unknown(name: str) -> None:
    assert lookup(name) is None


@pytest.mark.parametrize(("one", "other"), [
    ("AMD Instinct MI250", "AMD Instinct MI250X"),
    ("AMD Instinct MI50", "AMD Instinct MI60"),
    ("K100", "K100_AI"),
    ("910B4", "910B4-1"),
    ("910B1", "910B2"),
    ("HL-225", "HL-325L"),
    ("MTT S4000", "MTT S5000"),
])
def test_other_vendor_skus_never_match_each_other(one: str, other: str) -> None:
    a, b = lookup(one), lookup(other)
    assert a is not None and b is not None and a != b


@pytest.mark.parametrize(("name", "memory_mib", "gb"), [
    ("AMD Instinct MI50", 16368, 16),
    ("AMD Instinct MI50", 32752, 32),
    ("AMD Instinct MI50", None, 16),
    ("310P3", 21527, 24),  # an Atlas 300I Pro chip
    ("310P3", 44280, 48),  # one chip of an Atlas 300I Duo
])
def test_other_vendor_memory_variants(name: str, memory_mib: int | None, gb: int) -> None:
    spec = lookup(name, memory_mib)
    assert spec is not None and spec.memory_gb == gb


@pytest.mark.parametrize(
    ("name", "total_mib", "limit_w", "gen", "width"),
    [
        # readings in ../shared/fixtures/F_other_vendors and the issues their sources cite
        ("AMD Instinct MI300X", 196592, 750.0, 5, 16),  # dell-ai amd-smi static; PwrCap in legacy-rocm-build#5231
        ("AMD Instinct MI250X", 65536, 560.0, 4, 16),  # wandb#5449 concise table: PwrCap 560 W
        ("AMD Instinct MI100", 32752, 300.0, 4, 16),
        ("HL-325L", 131072, 850.0, 5, 16),  # all-smi hl-smi capture: memory.total, power.max
    ],
)
def test_other_vendor_boxes_get_ratios(name: str, total_mib: int, limit_w: float, gen: int, width: int) -> None:
    spec = lookup(name)
    assert spec is not None
    ratio = memory_ratio(total_mib, spec)
    assert ratio is not None and 0.98 < ratio <= 1.0
    assert power_limit_ratio(limit_w, spec) == pytest.approx(1.0)
    assert pcie_ratio(gen, width, spec) == pytest.approx(1.0)


@pytest.mark.parametrize(("name", "total_mib"), [
    ("K100_AI", 65520),  # gpustack#2032 hy-smi, gpustack#3257 rocm-smi
    ("910B4", 32768),  # 1Panel#9472 npu-smi HBM total
    ("910B4-1", 65536),  # HAMi-WebUI#47
    ("MTT S5000", 81920),  # vllm-omni#2337 mthreads-gmi
])
def test_other_vendor_memory_ratios_without_power(name: str, total_mib: int) -> None:
    # no published power figure: the memory ratio works, the power ratio is unknown, never a guess
    spec = lookup(name)
    assert spec is not None
    ratio = memory_ratio(total_mib, spec)
    assert ratio is not None and 0.99 < ratio <= 1.0
    if spec.tdp_w is None:
        assert power_limit_ratio(300.0, spec) is None


def test_other_vendors_have_no_nvidia_limits_or_drivers() -> None:
    for s in all_specs():
        if s.vendor != "nvidia":
            assert (s.retired_page_limit, s.remap_row_limit) == (None, None), s.nvml_name
            assert specs.min_driver(s.nvml_name) is None and specs.min_driver_of(s) is None
    mi300x = lookup("AMD Instinct MI300X")
    assert mi300x is not None and mi300x.mem_repair == "page_retire" and mi300x.retired_page_limit is None
    gaudi3 = lookup("HL-325L")
    assert gaudi3 is not None and gaudi3.mem_repair == "row_replace"
    assert specs.repair_limits("page_retire") == (64, None)
    assert specs.repair_limits("row_remap", "nvidia") == (None, 512)
    assert specs.repair_limits("page_retire", "amd") == (None, None)


def test_catalog_markdown_has_a_vendor_column() -> None:
    lines = catalog_markdown().splitlines()
    assert lines[0].startswith("| Name | Vendor | Architecture |")
    assert "| AMD Instinct MI300X | amd | CDNA 3 |" in catalog_markdown()
    assert "| HL-325L | intel | Gaudi 3 |" in catalog_markdown()
    assert "| NVIDIA H200 | nvidia | Hopper |" in catalog_markdown()


# Where a name sits in each kind of other-vendor capture, by vendor folder: amd-smi JSON and text,
# rocm-smi / hy-smi JSON and text, rocminfo; npu-smi tables and `npu-smi info -m`; hl-smi CSV (column 3);
# mthreads-gmi's first record line.
_OTHER_NAME_PATTERNS: dict[str, tuple[re.Pattern[str], ...]] = {
    "amd": (
        re.compile(r'"(?:market_name|product_name|Card [sS]eries|Device Name)":\s*"([^"]*)"'),
        re.compile(r"^\s*MARKET_NAME:\s*(.+?)\s*$", re.MULTILINE),
        re.compile(r"^\s*Marketing Name:\s*(.+?)\s*$", re.MULTILINE),
    ),
    "huawei_ascend": (
        re.compile(r"^\|\s*\d+\s+([^\s|]+)\s*\|\s*[A-Za-z]+\s*\|", re.MULTILINE),
        re.compile(r"^\d+\s+\d+\s+(?:\d+|-)\s+(.+?)\s*$", re.MULTILINE),
    ),
    "intel": (re.compile(r"^\d+,\s*[^,]+,\s*([^,]+?)\s*,", re.MULTILINE),),
    "moore_threads": (re.compile(r"^\d+\s+(.+?)\s*\|", re.MULTILINE),),
}
_OTHER_NAME_PATTERNS["hygon"] = _OTHER_NAME_PATTERNS["amd"] + (
    re.compile(r"^(?:GPU|DCU)\[\d+\]\s*:\s*Card Series:[ \t]*(\S[^\n]*?)\s*$", re.MULTILINE),
)

# Names in the other vendors' fixtures that deliberately have no catalog row, with the reason.
OTHER_FIXTURE_NAMES_UNKNOWN = {
    "AMD Instinct MI350X": "CDNA 4, newer than issue 23's list; no verified figures",
    "N/A": "amd-smi without render-group access prints N/A for every field (dell-ai non-root capture)",
    "0x1002": "ROCm 4.3's rocm-smi prints the raw vendor id as the Card series (telegraf rx6700xt_rocm430)",
    "Navi 22 [Radeon RX 6700/6700 XT / 6800M]": "a PCI-database name for several SKUs, outside issue 23's list",
    "Navi 32 [Radeon RX 7700 XT / 7800 XT]": "a PCI-database name for several SKUs, outside issue 23's list",
    "AMD Radeon RX 7800 XT": "a consumer card outside issue 23's list",
    "Intel(R) Core(TM) i5-14600KF": "a CPU agent in rocminfo",
    "Hygon C86 7390 32-core Processor": "a CPU agent in rocminfo",
    "K1xx_AI": "redacted upstream (gpustack's Hygon rocminfo): the model cannot be told",
    "310": "Ascend 310 (Atlas 300, model 3000), an older inference chip outside issue 23's list (the 310P is in it)",
    "MiniD": "npu-smi -m's chip name of the Ascend 310, outside issue 23's list",
    "Mcu": "the card's management MCU in npu-smi -m, not an accelerator",
    "xxx": "redacted in Huawei's docs (the Atlas 800 9010 example; its -m mapping names the chips 'Ascend 910A')",
    "Ascend910": "npu-smi's name for each die of an Atlas A3 NPU (910C class): not one SKU, outside issue 23's list",
}


def _other_vendor_names(root: Path) -> dict[str, list[str]]:
    """Every device name in the other vendors' fixtures, with the files it appears in."""
    found: dict[str, list[str]] = {}
    for folder, patterns in _OTHER_NAME_PATTERNS.items():
        for path in sorted((root / "F_other_vendors" / folder).glob("*")):
            if not path.is_file():
                continue
            raw = path.read_bytes()
            text = raw.decode("utf-16") if raw.startswith((b"\xff\xfe", b"\xfe\xff")) else raw.decode(
                "utf-8", errors="replace")
            for pattern in patterns:
                for m in pattern.finditer(text):
                    name = m.group(1).strip()
                    if name and not name.lower().startswith(("npu id", "id ")):
                        found.setdefault(name, []).append(path.name)
    return found


def test_every_other_vendor_fixture_name_matches_or_is_known_unknown(shared_fixtures: Path) -> None:
    if not (shared_fixtures / "F_other_vendors").is_dir():
        pytest.skip("../shared/fixtures/F_other_vendors is not present")
    found = _other_vendor_names(shared_fixtures)
    assert len(found) >= 15, "the name patterns stopped finding the fixtures' names"
    unknown = {specs._normalise(n) for n in OTHER_FIXTURE_NAMES_UNKNOWN}
    unexplained = {n: files[0] for n, files in found.items()
                   if lookup(n) is None and specs._normalise(n) not in unknown}
    assert not unexplained, f"fixture names with no catalog row and no stated reason: {unexplained}"
    wrongly_unknown = [n for n in OTHER_FIXTURE_NAMES_UNKNOWN if lookup(n) is not None]
    assert not wrongly_unknown, f"listed as unknown but matched: {wrongly_unknown}"
    not_seen = [n for n in OTHER_FIXTURE_NAMES_UNKNOWN if n not in found]
    assert not not_seen, f"listed as unknown but not in the fixtures: {not_seen}"
    # the names the tools really print, and the row each matches
    expected = {
        "AMD Instinct MI300X": "AMD Instinct MI300X",  # amd-smi market_name
        "AMD Instinct MI300X OAM": "AMD Instinct MI300X",  # amd-smi product_name
        "Arcturus GL-XL [Instinct MI100]": "AMD Instinct MI100",  # rocm-smi Card series
        "K100_AI": "K100_AI",  # hy-smi and rocm-smi Card Series
        "Ascend 910A": "Ascend 910A",  # npu-smi -m Chip Name
        "910B4": "Ascend 910B4",  # npu-smi Name
        "910B4-1": "Ascend 910B4-1",
        "HL-325L": "HL-325L",  # hl-smi name
        "MTT S5000": "MTT S5000",  # mthreads-gmi Name
    }
    for name, row in expected.items():
        spec = lookup(name)
        assert name in found and spec is not None and spec.nvml_name == row, name
