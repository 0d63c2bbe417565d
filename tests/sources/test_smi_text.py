"""nvidia-smi -q text reports and default tables (../shared/fixtures/A2_nvidia_smi_q_text) → records."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fleetmon.records import Status
from fleetmon.sources import SourceError
from fleetmon.sources.capture import Capture
from fleetmon.sources.smi_text import parse_smi_report, parse_smi_table, parse_smi_text
from fleetmon.sources.smi_xml import parse_smi_xml

TEXT = "A2_nvidia_smi_q_text"

# file: (source, GPUs, first GPU's name, UUID, serial, driver, memory MiB, power limit W,
#        aggregate corrected / uncorrected ECC errors); read off the files by hand.
EXPECTED: dict[str, tuple[str, int, str, str, str | None, str, int | None, float | None, int | None, int | None]] = {
    "gpud_nvidia-smi-query.535.129.03.out.0.valid.a10": (
        "nvidia-smi-text", 1, "NVIDIA A10", "GPU-73d12ef7-f589-f867-4259-c7090ab44736", "1324521052681",
        "535.129.03", 23028, 150.0, 0, 0),
    "gpud_nvidia-smi-query.535.154.05.out.0.valid.4090": (
        "nvidia-smi-text", 8, "NVIDIA GeForce RTX 4090", "GPU-313bbff0-b0a0-fd26-4820-0578bdef3a12", None,
        "535.154.05", 24564, 450.0, None, None),
    "gpud_nvidia-smi-query.535.154.05.out.0.valid.4090-b": (
        "nvidia-smi-text", 8, "NVIDIA GeForce RTX 4090", "GPU-988008fc-0059-17f4-9001-0ab4143e0e63", None,
        "535.154.05", 24564, 450.0, None, None),
    "gpud_nvidia-smi-query.535.161.08.out.0.valid.h100": (
        "nvidia-smi-text", 8, "NVIDIA H100 80GB HBM3", "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa", "1650124031592",
        "535.161.08", 81559, 700.0, 0, 0),
    "gpud_nvidia-smi-query.535.183.01.out.0.invalid.h100": (  # truncated: says 8 GPUs, holds 1 partial
        "nvidia-smi-text", 1, "NVIDIA H100 80GB HBM3", "GPU-566e6f65-c38e-b12f-4824-6944218668b9", "1655022005478",
        "535.183.01", None, None, None, None),
    "gpud_nvidia-smi-query.535.183.01.out.0.valid.h100": (
        "nvidia-smi-text", 8, "NVIDIA H100 80GB HBM3", "GPU-566e6f65-c38e-b12f-4824-6944218668b9", "1655022005478",
        "535.183.01", 81559, 700.0, 0, 0),
    "gpud_nvidia-smi-query.560.35.03.out.0.valid.titanv": (
        "nvidia-smi-text", 1, "NVIDIA TITAN V", "GPU-f4c353ff-b56c-c1de-bcb9-7dad861b589a", "0334517001520",
        "560.35.03", 12288, 250.0, None, None),
    "gpud_nvidia-smi.525.125.06.out.0.valid": (
        "nvidia-smi-table", 1, "NVIDIA GeForce ...", "unknown-gpu-0-0000:01:00.0", None, "525.125.06", 23028, 450.0,
        None, None),
    "gpud_nvidia-smi.550.90.07.out.0.valid": (
        "nvidia-smi-table", 8, "NVIDIA H100 80GB HBM3", "unknown-gpu-0-0000:19:00.0", None, "550.90.07", 81559,
        700.0, None, None),
}


def test_every_file_in_the_folder_is_in_the_table(shared_fixtures: Path) -> None:
    present = {p.name for p in (shared_fixtures / TEXT).iterdir() if p.is_file()}
    assert present <= set(EXPECTED), sorted(present - set(EXPECTED))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_report_parses_with_its_values(shared_fixtures: Path, name: str) -> None:
    path = shared_fixtures / TEXT / name
    if not path.exists():
        pytest.skip(f"{name} is held back")
    source, n, model, uuid, serial, driver, mem, limit, ecc_corr, ecc_unc = EXPECTED[name]
    c = parse_smi_report(path.read_text())
    assert c.source == source and len(c.gpus) == len(c.samples) == n
    g, s = c.gpus[0], c.samples[0]
    assert (g.name, g.uuid, g.values["serial"], c.info.values["driver_version"]) == (model, uuid, serial, driver)
    assert (g.values["memory_total_mib"], g.values["power_enforced_w"]) == (mem, limit)
    assert (s.values["ecc_corr_agg"], s.values["ecc_unc_agg"]) == (ecc_corr, ecc_unc)
    for rec in (g, s):
        for key, value in rec.values.items():
            assert (value is None) == (key in rec.status), key
    assert len({x.uuid for x in c.gpus}) == n


def test_the_text_report_means_what_the_xml_report_means(shared_fixtures: Path) -> None:
    """Same values as the XML parser reads for the same fields (H100, driver 535)."""
    c = parse_smi_text((shared_fixtures / TEXT / "gpud_nvidia-smi-query.535.161.08.out.0.valid.h100").read_text())
    g, s = c.gpus[0], c.samples[0]
    assert (g.values["pci_bus_id"], g.values["pci_device_id"], g.values["architecture"]) == (
        "0000:19:00.0", "0x233010DE", "hopper")
    assert (s.values["pcie_gen"], s.values["pcie_width"], g.values["pcie_max_gen"]) == (5, 16, 5)
    assert s.values["pcie_replay"] == 67 and s.values["power_w"] == 67.74 and s.values["temp_c"] == 29
    assert s.values["throttle_mask"] == 0x8 | 0x80  # HW Slowdown + the HW Power Brake nested under it
    assert (s.values["remap_corr"], s.values["remap_unc"], s.values["remap_failure"]) == (0, 0, 0)
    assert s.status["fan_pct"] == Status.UNSUPPORTED  # "Fan Speed : N/A" on a data-center board
    # "GPU Slowdown T.Limit Temp : -2 C" is an offset from T.Limit, not degrees: not used
    assert g.status["temp_slowdown_c"] == g.status["temp_shutdown_c"] == Status.UNSUPPORTED
    assert s.values["mem_temp_c"] == 39
    assert c.info.values["cuda_driver_version"] == "12.2"


def test_remapped_rows_pending_and_timestamp(shared_fixtures: Path) -> None:
    c = parse_smi_text((shared_fixtures / TEXT / "gpud_nvidia-smi-query.535.129.03.out.0.valid.a10").read_text())
    s = c.samples[0]
    assert (s.values["remap_unc"], s.values["remap_pending"]) == (4, 1)
    assert c.ts is not None and s.ts == c.ts


def test_a_truncated_report(shared_fixtures: Path) -> None:
    c = parse_smi_text((shared_fixtures / TEXT / "gpud_nvidia-smi-query.535.183.01.out.0.invalid.h100").read_text())
    assert c.notes == ["the document says 8 GPUs are attached but describes 1"]
    assert c.samples[0].status["temp_c"] == Status.UNSUPPORTED  # cut before the temperatures


def test_the_default_table(shared_fixtures: Path) -> None:
    c = parse_smi_table((shared_fixtures / TEXT / "gpud_nvidia-smi.525.125.06.out.0.valid").read_text())
    s = c.samples[0]
    assert s.status["fan_pct"] == Status.FAILED  # "ERR!"
    assert (s.values["temp_c"], s.values["pstate"], s.values["power_w"], s.values["mem_used_mib"]) == (38, 5, 49.0,
                                                                                                       2021)
    assert s.values["ecc_unc_vol"] == 0 and s.status["ecc_corr_vol"] == Status.UNSUPPORTED
    assert any("cut short" in n for n in c.notes) and c.ts is None
    wide = parse_smi_table((shared_fixtures / TEXT / "gpud_nvidia-smi.550.90.07.out.0.valid").read_text())
    assert [g.values["pci_bus_id"] for g in wide.gpus][:2] == ["0000:19:00.0", "0000:3b:00.0"]
    assert wide.gpus[0].values["mig_mode_current"] is False and wide.ts is not None


def test_text_and_xml_agree_on_one_gpu() -> None:
    text = """==============NVSMI LOG==============

Timestamp                                 : Mon Aug  7 11:10:06 2023
Driver Version                            : 535.86.05
CUDA Version                              : 12.2

Attached GPUs                             : 1
GPU 00000000:01:00.0
    Product Name                          : NVIDIA GeForce RTX 4090
    GPU UUID                              : GPU-71d1acc2-662d-2166-bf9f-65272d2fc437
    FB Memory Usage
        Total                             : 24564 MiB
    Remapped Rows                         : N/A
    Temperature
        GPU Current Temp                  : 40 C
"""
    xml = b"""<nvidia_smi_log><timestamp>Mon Aug  7 11:10:06 2023</timestamp>
<driver_version>535.86.05</driver_version><cuda_version>12.2</cuda_version><attached_gpus>1</attached_gpus>
<gpu id="00000000:01:00.0"><product_name>NVIDIA GeForce RTX 4090</product_name>
<uuid>GPU-71d1acc2-662d-2166-bf9f-65272d2fc437</uuid><fb_memory_usage><total>24564 MiB</total></fb_memory_usage>
<remapped_rows>N/A</remapped_rows><temperature><gpu_temp>40 C</gpu_temp></temperature></gpu></nvidia_smi_log>"""
    a, b = parse_smi_text(text), parse_smi_xml(xml)
    assert (a.gpus[0].values, a.gpus[0].status) == (b.gpus[0].values, b.gpus[0].status)
    assert (a.samples[0].values, a.samples[0].status) == (b.samples[0].values, b.samples[0].status)
    assert a.ts == b.ts


def test_not_a_report() -> None:
    with pytest.raises(SourceError):
        parse_smi_report("hello\n")


# -- hostile reports (issue 20, items 1 and 8): bounded time and memory, SourceError with one line or a capture

_HEAD = "==============NVSMI LOG==============\n\nDriver Version : 550.54.15\nAttached GPUs : 1\n"
_GPU = "GPU 00000000:01:00.0\n    Product Name : NVIDIA A100\n    GPU UUID : GPU-1\n"


def _within(seconds: float, fn: Callable[[], object]) -> object:
    """Run ``fn`` in a thread; fail (not hang) when it takes longer than ``seconds`` (a generous deadline)."""
    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(fn).result(timeout=seconds)
    finally:
        pool.shutdown(wait=False)  # a stuck parse is left behind, not waited for


@pytest.mark.parametrize("line", ["a" + " " * 200_000 + "b", "    Product Name" + " " * 200_000 + "x",
                                  "| 0 " + " " * 200_000 + "x |", "\t" * 1_000_000])
def test_long_lines_take_no_quadratic_time(line: str) -> None:
    """One line of 200,000 blanks took minutes in the line and table patterns (15 s for 20,000)."""
    for text in (_HEAD + _GPU + line + "\n", "NVIDIA-SMI 550.54.15 Driver Version: 550.54.15 CUDA Version: 12.4\n"
                 + line + "\n"):
        capture = _within(10, lambda t=text: parse_smi_report(t))  # type: ignore[misc]
        assert isinstance(capture, Capture)


def test_deep_indentation_is_no_recursion_error() -> None:
    """Each line one blank deeper: the old tree walk recursed once per level (RecursionError at ~1,000)."""
    deep = "".join(" " * (4 + i) + f"k{i}\n" for i in range(3000))
    capture = parse_smi_text(_HEAD + _GPU + deep)
    assert [g.uuid for g in capture.gpus] == ["GPU-1"]


@pytest.mark.parametrize("text, message", [
    (_HEAD + "\n" * 600_000, "more than 250000 lines"),
    (_HEAD + "\r" * 600_000, "more than 250000 lines"),
    (_HEAD + "x" * (16 * 1024 * 1024 + 1), "more than the 16777216"),
    (_HEAD + _GPU * 1025, "more than the 1024"),
])
def test_oversize_reports_are_refused_in_one_line(text: str, message: str) -> None:
    with pytest.raises(SourceError, match=message) as err:
        parse_smi_report(text)
    assert "\n" not in str(err.value)


def test_control_characters_pass_through_to_the_checks() -> None:
    """The parser keeps what the document says (the collector's checks and import-smi refuse it)."""
    capture = parse_smi_text(_HEAD + _GPU.replace("NVIDIA A100", "NVIDIA\x1b[31m A100\x07"))
    assert capture.gpus[0].name == "NVIDIA\x1b[31m A100\x07"
