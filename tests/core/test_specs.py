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
        "NVIDIA A100-SXM4-40GB",  # different SKU, not in the catalog
        "NVIDIA A100-PCIe-40GB",
        "NVIDIA GeForce RTX 5090",
        "NVIDIA GeForce RTX 4090 D 47 GB",  # memory-modded board
        "NVIDIA GeForce RTX 4080",
        "NVIDIA H100 NVL",
        "NVIDIA H20",
        "NVIDIA A800 80GB PCIe",
        "NVIDIA H800 PCIe",
        "Tesla V100-SXM2-16GB",
        "Quadro RTX 6000",
        "RTX 8000",  # "Quadro" is part of the name
        "NVIDIA A10G",
        "NVIDIA A100",  # no prefix matching
        "NVIDIA H200 NVL",
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


def test_catalog_has_22_unique_models() -> None:
    assert len(CATALOG_NAMES) == 22
    assert len(set(CATALOG_NAMES)) == 22


@pytest.mark.parametrize("spec", all_specs(), ids=CATALOG_NAMES)
def test_row_is_well_formed(spec: GpuSpec) -> None:
    assert spec.ecc in (*specs.ECC_MODES, None)
    assert spec.mem_repair in specs.MEM_REPAIR_MODES
    assert spec.source.strip()
    assert spec.memory_gb > 0 and spec.tdp_w > 0 and spec.mem_bandwidth_gbs > 0
    if spec.base_clock_mhz is not None and spec.boost_clock_mhz is not None:
        assert spec.base_clock_mhz < spec.boost_clock_mhz
    if spec.mem_repair == "page_retire":
        assert (spec.retired_page_limit, spec.remap_row_limit) == (64, None)
    elif spec.mem_repair == "row_remap":
        assert (spec.retired_page_limit, spec.remap_row_limit) == (None, 512)
    else:
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
    assert set(rows) == set(CATALOG_NAMES)
    for spec in all_specs():
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
