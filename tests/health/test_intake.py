"""Intake (issue 22 item 3): a card new to the fleet judged against its spec and its model's fleet.

Simulated cards with one defect each get the right verdict and reason; a healthy card passes; a card
without data never passes.
"""

from __future__ import annotations

from typing import Any

import pytest

from fleetmon import intake
from fleetmon.errors import KnownError
from fleetmon.health.fleet import EventRecord
from fleetmon.health.thresholds import Thresholds

from tests.health.test_health_rules import NOW, card, fleet, minutes

ARRIVED = NOW - 6 * 3600  # first sight six hours ago, within the 24 h intake window
WINDOW_FROM = NOW - 86400
SOURCE = "nvml+kmsg"


def peers(n: int = 3, **inventory: Any) -> list[Any]:
    """Healthy A100s on another node (the model's fleet), seen for a month."""
    return [card(minutes(360), uuid=f"GPU-p{i}", node="n2", index=i, inventory=inventory or None) for i in range(n)]


def newcomer(rows: list[dict[str, Any]] | None = None, **kw: Any) -> Any:
    return card(rows if rows is not None else minutes(360), first_seen=ARRIVED, **kw)


def judge(gpu: Any, *others: Any, xids: tuple[EventRecord, ...] = (), source: str | None = SOURCE,
          thresholds: Thresholds | None = None) -> intake.IntakeResult:
    h = fleet(gpu, *(others or peers()), thresholds=thresholds or Thresholds())
    return intake.evaluate(h, gpu.uuid, xids=xids, xid_source=source, window_from=WINDOW_FROM)


def status(r: intake.IntakeResult, name: str) -> str:
    c = r.check(name)
    assert c is not None
    return c.status


def test_a_healthy_card_passes_every_check() -> None:
    r = judge(newcomer())
    assert r.verdict == "PASS", r.reason
    assert [c.status for c in r.checks] == ["PASS"] * len(intake.CHECKS)
    assert [c.name for c in r.checks] == list(intake.CHECKS)
    assert r.new and r.first_seen == ARRIVED and r.model == "NVIDIA A100-SXM4-80GB"
    assert "360 busy minutes at 1395 MHz" in r.check("load").reason  # type: ignore[union-attr]


def test_memory_size_off_by_half_is_rejected() -> None:
    r = judge(newcomer(inventory={"memory_total_mib": 40960}))
    assert r.verdict == "REJECT"
    c = r.check("memory-size")
    assert c is not None and c.status == "REJECT"
    assert c.reason.startswith("40960 MiB reported, 50% of the nominal 80 GB (below 85%)")
    assert "Memory size" in r.reason


def test_more_memory_than_nominal_is_a_modded_board() -> None:
    r = judge(newcomer(inventory={"memory_total_mib": 98304}))
    assert (r.verdict, status(r, "memory-size")) == ("CONDITIONAL", "CONDITIONAL")
    assert "memory-modded" in r.check("memory-size").reason  # type: ignore[union-attr]


def test_a_lowered_power_limit_is_conditional() -> None:
    rows = minutes(360, power_limit_w_mean=250.0)
    r = judge(newcomer(rows, inventory={"power_enforced_w": 250.0}))
    assert r.verdict == "CONDITIONAL"
    c = r.check("power-limits")
    assert c is not None and c.status == "CONDITIONAL"
    assert "enforced 250 W" in c.reason and "62% of the default" in c.reason and "nvidia-smi -pl" in c.reason


def test_a_default_limit_capped_by_the_vbios_is_rejected() -> None:
    r = judge(newcomer(minutes(360, power_limit_w_mean=250.0),
                       inventory={"power_default_w": 250.0, "power_enforced_w": 250.0}))
    assert (r.verdict, status(r, "power-limits")) == ("REJECT", "REJECT")
    assert "capped or foreign VBIOS" in r.check("power-limits").reason  # type: ignore[union-attr]


def test_a_vbios_outlier_is_conditional() -> None:
    r = judge(newcomer(inventory={"vbios": "92.00.19.00.99"}))
    assert r.verdict == "CONDITIONAL"
    c = r.check("vbios")
    assert c is not None and c.status == "CONDITIONAL"
    assert c.reason.startswith("92.00.19.00.99 differs from the fleet's 92.00.45.00.06 (3 of 3 other")


def test_the_vbios_baseline_needs_peers_and_is_not_required() -> None:
    r = judge(newcomer(inventory={"vbios": "92.00.19.00.99"}), *peers(1))
    c = r.check("vbios")
    assert c is not None and (c.status, c.required) == ("UNKNOWN", False)
    assert r.verdict == "PASS", r.reason  # an optional check not made does not hold the card back
    assert "not required: VBIOS" in r.reason


@pytest.mark.parametrize("cols,verdict,said", [
    ({"retired_sbe": 3, "retired_dbe": 1}, "CONDITIONAL", "4 retired pages"),
    ({"retired_sbe": 10, "retired_dbe": 6}, "REJECT", "16 retired pages"),
    ({"retired_pending": 1}, "CONDITIONAL", "a page retirement pending"),
    ({"remap_failure": 1}, "REJECT", "a row remap failure"),
    ({"remap_pending": 1}, "CONDITIONAL", "a row remap pending"),
    ({"ecc_unc_agg": 7}, "REJECT", "7 lifetime uncorrectable ECC errors"),
], ids=["some-pages", "many-pages", "pending", "remap-failure", "remap-pending", "uncorrectable"])
def test_a_card_that_arrived_with_retired_pages(cols: dict[str, Any], verdict: str, said: str) -> None:
    r = judge(newcomer(minutes(360, **cols)))
    c = r.check("memory-history")
    assert c is not None and c.status == verdict and said in c.reason
    assert r.verdict == verdict


def test_arrival_thresholds_decide_the_memory_history() -> None:
    t = Thresholds.from_overrides({"arrival_retired_pages_warning": 5, "arrival_retired_pages_critical": 8})
    r = judge(newcomer(minutes(360, retired_sbe=3, retired_dbe=1)), thresholds=t)
    assert status(r, "memory-history") == "PASS"
    assert r.thresholds["arrival_retired_pages_warning"] == 5


def test_a_link_stuck_at_gen1_x8_under_load_is_rejected() -> None:
    rows = minutes(360, pcie_gen=1, pcie_width=8, pcie_gen_busy_min=1, pcie_width_busy_min=8)
    r = judge(newcomer(rows))
    assert r.verdict == "REJECT"
    c = r.check("pcie-under-load")
    assert c is not None and c.status == "REJECT"
    assert c.reason.startswith("Gen1 x8 under load, 6% of the Gen4 x16 the card and slot allow")
    assert status(r, "pcie-capability") == "PASS"  # the card can do Gen4 x16: it is the link under load


def test_a_slot_that_limits_the_link_is_conditional_and_judged_against_the_slot() -> None:
    rows = minutes(360, pcie_gen=3, pcie_width=16, pcie_gen_busy_min=3, pcie_width_busy_min=16)
    r = judge(newcomer(rows, inventory={"pcie_max_gen": 3}))
    assert (status(r, "pcie-capability"), status(r, "pcie-under-load")) == ("CONDITIONAL", "PASS")
    assert "slot or riser" in r.check("pcie-capability").reason  # type: ignore[union-attr]


def test_a_card_that_reports_less_pcie_than_its_spec_is_rejected() -> None:
    r = judge(newcomer(inventory={"pcie_gpu_max_gen": 3}))
    assert status(r, "pcie-capability") == "REJECT"


def test_a_derated_clock_under_load_is_rejected() -> None:
    r = judge(newcomer(minutes(360, sm_clock_mhz_mean=900)))
    c = r.check("load")
    assert c is not None and c.status == "REJECT"
    assert "65% of the NVIDIA A100-SXM4-80GB fleet median" in c.reason and "derated" in c.reason


def test_xids_since_first_seen() -> None:
    xid = EventRecord(ts=ARRIVED + 60, node="n1", kind="xid", gpu_uuid="GPU-a", code=79)
    r = judge(newcomer(), xids=(xid,))
    assert (r.verdict, status(r, "xid")) == ("REJECT", "REJECT")
    assert "Xid 79" in r.check("xid").reason  # type: ignore[union-attr]
    other = EventRecord(ts=ARRIVED + 60, node="n2", kind="xid", gpu_uuid="GPU-p0", code=79)
    assert status(judge(newcomer(), xids=(other,)), "xid") == "PASS"  # another card's Xid is not this one's
    app = EventRecord(ts=ARRIVED + 60, node="n1", kind="xid", gpu_uuid="GPU-a", code=13)
    assert status(judge(newcomer(), xids=(app,)), "xid") == "PASS"


def test_xids_not_collected_are_not_checked() -> None:
    r = judge(newcomer(), source="none: /dev/kmsg unreadable")
    c = r.check("xid")
    assert c is not None and c.status == "UNKNOWN" and "/dev/kmsg unreadable" in c.reason
    assert r.verdict == "CONDITIONAL" and "not checked: Xid history" in r.reason


def test_an_idle_card_is_not_checked_under_load() -> None:
    r = judge(newcomer(minutes(360, busy=False)))
    assert status(r, "load") == "UNKNOWN" and status(r, "pcie-under-load") == "UNKNOWN"
    assert r.verdict == "CONDITIONAL"
    assert "not checked: PCIe link under load, Clocks under load" in r.reason


def test_a_card_without_data_never_passes() -> None:
    bare = card([], first_seen=ARRIVED, inventory={k: None for k in (
        "pcie_max_gen", "pcie_max_width", "pcie_gpu_max_gen", "pcie_gpu_max_width", "power_default_w",
        "power_enforced_w", "memory_total_mib", "vbios", "ecc_mode_current")})
    r = judge(bare, source=None)
    assert r.verdict != "PASS"
    assert all(c.status == "UNKNOWN" for c in r.checks if c.name != "spec")
    assert r.reason.startswith("not checked: ")


def test_an_unknown_model_is_not_checked_against_a_spec() -> None:
    r = judge(newcomer(name="NVIDIA Imaginary X1"))
    assert status(r, "spec") == "UNKNOWN" and "[[spec]]" in r.check("spec").reason  # type: ignore[union-attr]
    assert r.verdict == "CONDITIONAL"


def test_cards_new_to_the_fleet_are_those_first_seen_in_the_window() -> None:
    h = fleet(newcomer(), card(uuid="GPU-old", index=1))
    assert [g.uuid for g in intake.new_cards(h, "n1", WINDOW_FROM)] == ["GPU-a"]


def test_a_stored_result_reads_back_whole() -> None:
    r = judge(newcomer(inventory={"memory_total_mib": 40960}))
    back = intake.IntakeResult.from_dict(r.to_dict())
    assert back == r


def test_the_certificate_is_one_self_contained_page_with_every_check() -> None:
    r = judge(newcomer(inventory={"vbios": "92.00.19.00.99<script>"}))
    page = intake.certificate_html(r)
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert not any(s in page for s in ("http://", "https://", "<link", "src="))
    for c in r.checks:
        assert c.title in page
    assert "CONDITIONAL" in page and "intake_memory_reject_frac" in page


@pytest.mark.parametrize("text,span", [("24h", (NOW - 86400, NOW)), ("90m", (NOW - 5400, NOW)),
                                       (f"{NOW - 7200}..{NOW - 3600}", (NOW - 7200, NOW - 3600)),
                                       ("2025-06-15T10:00:00Z..", (1749981600, NOW))])
def test_window_specs(text: str, span: tuple[float, float]) -> None:
    assert intake.parse_window(text, NOW) == span


@pytest.mark.parametrize("text", ["", "yesterday", "5..3", f"{NOW}..{NOW + 7200}", "0s"])
def test_bad_window_specs_are_one_line_errors(text: str) -> None:
    with pytest.raises(KnownError, match="--window"):
        intake.parse_window(text, NOW)


def test_a_board_with_a_user_spec_is_judged_against_it() -> None:
    # A 96 GB board of an 80 GB model, declared in the fleet file by its VBIOS: not a modded surprise, and the
    # certificate says which spec it was judged against. The same card without the [[spec]] is CONDITIONAL.
    from fleetmon.fleet import parse_fleet

    book = parse_fleet('[[node]]\nname = "n1"\nurl = "http://127.0.0.1:9401"\n\n'
                       '[[spec]]\nname = "NVIDIA A100-SXM4-80GB"\nmatch_vbios = "92.00.99.00.01"\nmemory_gb = 96\n'
                       ).spec_book()
    gpu = newcomer(inventory={"memory_total_mib": 98304, "vbios": "92.00.99.00.01"})
    h = fleet(gpu, *peers(), thresholds=Thresholds(), spec_book=book)
    r = intake.evaluate(h, gpu.uuid, xids=(), xid_source=SOURCE, window_from=WINDOW_FROM)
    assert status(r, "memory-size") == "PASS", r.check("memory-size")
    assert "user spec" in r.check("spec").reason  # type: ignore[union-attr]
    assert status(judge(newcomer(inventory={"memory_total_mib": 98304, "vbios": "92.00.99.00.01"})),
                  "memory-size") == "CONDITIONAL"


def test_other_vendors_are_judged_against_their_catalog_rows() -> None:
    # issue 23: an MI300X as the dell-ai amd-smi capture and ROCm's issue report it (196592 MiB, 750 W cap)
    mi300x = newcomer(minutes(360, power_limit_w_mean=750.0), name="AMD Instinct MI300X",
                      inventory={"memory_total_mib": 196592, "power_default_w": 750.0, "power_enforced_w": 750.0})
    r = judge(mi300x)
    assert (status(r, "spec"), status(r, "memory-size"), status(r, "power-limits")) == ("PASS", "PASS", "PASS")
    assert "AMD Instinct MI300X" in r.check("spec").reason  # type: ignore[union-attr]
    # a K100_AI (65520 MiB as hy-smi reports it) has no published TDP: its power limits are not checked, not
    # judged against a guess; its memory still is
    k100 = newcomer(minutes(360, power_limit_w_mean=300.0), name="K100_AI",
                    inventory={"memory_total_mib": 65520, "power_default_w": 300.0, "power_enforced_w": 300.0})
    r = judge(k100)
    assert (status(r, "spec"), status(r, "memory-size"), status(r, "power-limits")) == ("PASS", "PASS", "UNKNOWN")
    power = r.check("power-limits")
    assert power is not None and power.reason == "not checked: no spec TDP to compare the limits with"
