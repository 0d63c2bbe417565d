"""Every health threshold in one place, with its default, unit and source.

Sources cite the rules of ``shared/reference/gpu-faults.md`` section 8 (X =
Xid, M = memory, P = PCIe, T = throttle, W = power, D = derating, I =
inventory) and the section that explains them; "fleetmon" marks a choice made
here where no published number exists.

Override any of them in the fleet file::

    [thresholds]
    pcie_replay_per_min = 16
    temperature_margin_c = 3

``Thresholds.from_overrides`` checks names (an unknown name is an error that
suggests the closest known ones), types and ranges. ``describe()`` renders
the table that ``docs/findings.md`` embeds (a test keeps the two equal).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from fleetmon.i18n import N_, Text, listing

__all__ = ["ALIASES", "Thresholds", "describe"]


_NOT_ABOVE = N_("{low} must not exceed {high} ({low_value} > {high_value})")

# A threshold's range with its unit, one whole template per unit (a unit word alone would meet other senses
# in the catalog: "min" is also "minimum"); docs/thresholds.md and `rows()` keep the units as written.
_RANGES = {
    "%": N_("{low:g}..{high:g} %"),
    "GPUs": N_("{low:g}..{high:g} GPUs"),
    "bursts": N_("{low:g}..{high:g} bursts"),
    "days": N_("{low:g}..{high:g} days"),
    "errors": N_("{low:g}..{high:g} errors"),
    "errors/min": N_("{low:g}..{high:g} errors/min"),
    "fraction": N_("{low:g}..{high:g} fraction"),
    "h": N_("{low:g}..{high:g} h"),
    "min": N_("{low:g}..{high:g} min"),
    "nodes": N_("{low:g}..{high:g} nodes"),
    "outages": N_("{low:g}..{high:g} outages"),
    "pages": N_("{low:g}..{high:g} pages"),
    "ratio/week": N_("{low:g}..{high:g} ratio/week"),
    "replays": N_("{low:g}..{high:g} replays"),
    "replays/min": N_("{low:g}..{high:g} replays/min"),
    "resets": N_("{low:g}..{high:g} resets"),
    "rows": N_("{low:g}..{high:g} rows"),
    "s": N_("{low:g}..{high:g} s"),
    "°C": N_("{low:g}..{high:g} °C"),
}


def _t(default: float, unit: str, lo: float, hi: float, help: str, source: str) -> Any:
    return field(default=default, metadata={
        "unit": unit, "min": lo, "max": hi, "help": help, "source": source,
        "integer": isinstance(default, int),
    })


@dataclass(frozen=True, slots=True)
class Thresholds:
    """All thresholds of the health rules (see the module doc for overrides)."""

    # -- lifecycle ----------------------------------------------------------
    resolve_after_minutes: int = _t(
        30, "min", 1, 10080,
        "Evidence this recent makes a finding current; an older one is judged by its kind's lifecycle "
        "(a state whose newer data no longer shows it is resolved).",
        "fleetmon")
    event_resolve_hours: int = _t(
        24, "h", 1, 720,
        "Information findings (inventory changes) are shown this long after the last occurrence "
        "(point events wait for an operator: see the lifecycle).", "fleetmon")
    quiet_hours: int = _t(
        48, "h", 1, 2160,
        "A recurring condition (thermal, power brake, PCIe replays or downtraining, flapping, derating) "
        "resolves only after this long without a recurrence, backed by data (see the two below).",
        "fleetmon (two daily cycles: a fault of every afternoon is never quiet)")
    quiet_data_frac: float = _t(
        0.75, "fraction", 0.1, 1.0,
        "Share of the quiet or clean period's hours that must hold data of the GPU (node): missing data "
        "is not health.", "fleetmon")
    quiet_busy_minutes: int = _t(
        60, "min", 0, 100000,
        "Busy minutes the quiet or clean period needs for a load-dependent kind (a card that idled "
        "since its throttle proved nothing).", "fleetmon")
    event_clean_hours: int = _t(
        168, "h", 1, 8760,
        "A point event whose kind allows it (a non-critical Xid, a power dropout) resolves after this "
        "long clean, with data and load; critical point events wait for an operator.", "fleetmon")
    stale_after_minutes: int = _t(
        10, "min", 1, 10080,
        "A node whose newest good poll is older than this (about a few poll intervals at the default "
        "30 s) is stale, never pass.", "fleetmon")
    # -- Xid ----------------------------------------------------------------
    xid_burst_gap_s: int = _t(
        180, "s", 1, 86400,
        "Xids on one node belong to one burst until this much silence.",
        "X2: NVIDIA Fleet Intelligence, >3 min of silence (§1.1)")
    xid_recurrence_resets: int = _t(
        2, "resets", 1, 100,
        "A hardware or driver Xid that recurs after this many GPU resets or driver reloads is "
        "escalated to critical (hardware inspection).",
        "X3: gpud DefaultRebootThreshold = 2 (§1.3)")
    xid_app_repeat_bursts: int = _t(
        3, "bursts", 1, 1000,
        "Application Xids (13, 31, 43, 68, 69) are info until they recur in this many bursts "
        "on one GPU; then warning.", "X4 (count chosen by fleetmon)")
    xid_multi_gpu: int = _t(
        2, "GPUs", 2, 64,
        "Xid 79/62 or a power Xid on this many GPUs of one node in one burst: suspect the PSU "
        "or power rail (critical).", "W3: NVIDIA staff on Xid 79; Meta RSC (§1.3)")
    xid_driver_regression_nodes: int = _t(
        3, "nodes", 2, 10000,
        "GSP Xids (119/120) on this many nodes with one driver version point at a driver "
        "regression.", "X5 (N chosen by fleetmon)")
    # -- memory -------------------------------------------------------------
    ecc_uncorrected_critical: int = _t(
        1, "errors", 1, 1000000,
        "New uncorrectable ECC errors (volatile or aggregate) in the window that make a "
        "critical finding.", "M1: DCGM, any volatile DBE is FAIL (§2.2)")
    ecc_corrected_per_min: float = _t(
        10.0, "errors/min", 0.01, 1e9,
        "Corrected ECC errors per minute, averaged over the window below, for a correctable "
        "storm.", "M4: no official threshold; DCGM's SBE placeholder is 10 (§2.2)")
    ecc_corrected_window_minutes: int = _t(
        10, "min", 1, 1440, "Window for the corrected-error rate.", "M4 (fleetmon)")
    ecc_trend_days: int = _t(
        3, "days", 2, 90,
        "Corrected errors that rise day over day for this many days are a trend (info).",
        "M4: rising correctable slope (fleetmon)")
    retired_pages_warning: int = _t(
        48, "pages", 1, 64,
        "Retired pages (SBE + DBE) near the limit of 64 per frame buffer: warning.",
        "M2 (75 % of NVIDIA's 64-page limit, fleetmon)")
    retired_pages_critical: int = _t(
        60, "pages", 1, 64,
        "Retired pages (SBE + DBE) for a critical finding (RMA class).",
        "M2: DCGM_LIMIT_MAX_RETIRED_PAGES 60 (63 in newer DCGM) (§2.2)")
    retired_dbe_soft_limit: int = _t(
        15, "pages", 1, 64,
        "DBE-retired pages above this, with more than one new in 7 days: critical.",
        "M2: DCGM_LIMIT_MAX_RETIRED_PAGES_SOFT_LIMIT (§2.2)")
    # -- arrival (a card's history at first sight) ---------------------------
    arrival_unc_ecc_critical: int = _t(
        5, "errors", 1, 1000000,
        "Lifetime (aggregate) uncorrectable ECC errors a card reports at first sight for a "
        "critical arrival-history finding (any fewer: warning).",
        "M5: practitioner, more than 4 aggregate uncorrectable errors is an RMA reason (§2.3)")
    arrival_retired_pages_warning: int = _t(
        1, "pages", 1, 64,
        "Retired pages (SBE + DBE) a card reports at first sight for an arrival-history warning.",
        "M2: any retirement means past DBEs or repeated SBEs (§2.2; fleetmon)")
    arrival_retired_pages_critical: int = _t(
        16, "pages", 1, 64,
        "Retired pages (SBE + DBE) at first sight for a critical arrival-history finding "
        "(a quarter of the 64-page budget spent before the card arrived).",
        "M2: DCGM soft limit of 15 DBE pages (§2.2; fleetmon)")
    arrival_remapped_rows_warning: int = _t(
        1, "rows", 1, 100000,
        "Remapped rows (correctable + uncorrectable) a card reports at first sight for an "
        "arrival-history warning.", "M3/M4: remaps accumulating are an early warning (§2.3; fleetmon)")
    arrival_remapped_rows_critical: int = _t(
        8, "rows", 1, 100000,
        "Rows remapped for uncorrectable errors at first sight for a critical arrival-history "
        "finding (a bank fails its next remap after eight).",
        "M3: remap failure after 8 uncorrectable rows in a bank (§2.3; fleetmon)")
    # -- PCIe ---------------------------------------------------------------
    pcie_degraded_minutes: int = _t(
        3, "min", 1, 1440,
        "Consecutive busy minutes with the link below its maximum generation or width.",
        "P2: only under load, >= 3 consecutive samples (§4)")
    pcie_replay_per_min: float = _t(
        8.0, "replays/min", 0.01, 1e9,
        "PCIe replays per minute above which the link is flagged (warning).",
        "P1: DCGM_LIMIT_MAX_PCIREPLAY_RATE = 8 (§4)")
    pcie_replay_info_count: int = _t(
        10, "replays", 1, 1000000000,
        "Replays in the window, below the rate limit, reported as a growing counter (info).",
        "P1: sustained growth (fleetmon)")
    # -- throttling and power -----------------------------------------------
    hw_slowdown_window_minutes: int = _t(
        10, "min", 1, 1440, "Window of the hardware-slowdown and power-brake rule.",
        "T1: gpud 10-minute evaluation window (§3)")
    hw_slowdown_fraction: float = _t(
        0.6, "fraction", 0.01, 1.0,
        "Share of the window's active minutes with HW slowdown or power brake.",
        "T1: gpud 0.6 events per minute (§3)")
    hw_slowdown_min_minutes: int = _t(
        3, "min", 1, 1440, "Fewest minutes with HW slowdown or power brake in the window.",
        "T1 (fleetmon)")
    power_drop_frac: float = _t(
        0.5, "fraction", 0.01, 1.0,
        "Within a minute, power falling below this share of its peak while utilization stays "
        "high is a power drop.", "§5 unstable PSU signature (heuristic, fleetmon)")
    power_drop_util_pct: float = _t(
        90.0, "%", 1.0, 100.0,
        "Lowest GPU utilization during the minute for a power drop to count.", "§5 (fleetmon)")
    power_drop_minutes: int = _t(
        3, "min", 1, 1440, "Minutes with a power drop within 10 minutes.", "§5 (fleetmon)")
    power_unreadable_minutes: int = _t(
        3, "min", 1, 1440,
        "Minutes in which the power reading failed (not unsupported) within 10 minutes.",
        "W2: DCGM POWER_UNREADABLE (§3)")
    power_cap_warning_frac: float = _t(
        0.9, "fraction", 0.01, 1.0,
        "Enforced power limit below this share of the default limit: warning (below the "
        "default at all: info).", "W1 (§5)")
    platform_cap_power_frac: float = _t(
        0.7, "fraction", 0.01, 1.0,
        "SwPowerCap active while drawing less than this share of the enforced limit, with no "
        "hardware reason: a platform/BMC cap.", "T4: Dell iDRAC case (§3)")
    platform_cap_minutes: int = _t(
        5, "min", 1, 1440, "Busy minutes with the platform-cap signature within 10 minutes.",
        "T4 (fleetmon)")
    # -- thermal ------------------------------------------------------------
    thermal_minutes: int = _t(
        3, "min", 1, 1440,
        "Minutes with thermal slowdown (HW or SW) within 10 minutes.",
        "T3: DCGM warns when thermal violation time grows (§3)")
    temperature_margin_c: float = _t(
        5.0, "°C", 0.0, 50.0,
        "Warn when the GPU runs within this many degrees of its slowdown temperature.",
        "§3 thermal margin (fleetmon)")
    temperature_warning_c: float = _t(
        85.0, "°C", 30.0, 130.0,
        "Warning temperature for GPUs whose slowdown temperature is unknown.", "fleetmon")
    temperature_critical_c: float = _t(
        95.0, "°C", 30.0, 130.0,
        "Critical temperature for GPUs whose shutdown temperature is unknown (else shutdown "
        "minus the margin).", "fleetmon")
    temperature_junction_warning_c: float = _t(
        95.0, "°C", 30.0, 130.0,
        "Warning temperature for GPUs whose temperature is their junction (hotspot) sensor and that report "
        "no slowdown temperature (AMD, Hygon: rocm-smi, hy-smi).",
        "amd-smi static of 8x MI300X (../shared fixtures): hotspot slowdown 100 °C, less the 5 °C margin")
    temperature_junction_critical_c: float = _t(
        105.0, "°C", 30.0, 130.0,
        "Critical temperature for GPUs whose temperature is their junction (hotspot) sensor and that report "
        "no shutdown temperature.",
        "amd-smi static of 8x MI300X (../shared fixtures): hotspot shutdown 110 °C, less the 5 °C margin")
    temperature_minutes: int = _t(
        3, "min", 1, 1440, "Minutes above the temperature limit within 10 minutes.", "fleetmon")
    fan_stopped_temp_c: float = _t(
        65.0, "°C", 20.0, 130.0,
        "A fan reading 0 % while the GPU is at least this hot is a stopped fan (zero-RPM "
        "modes stop fans only when cool).", "§6.7 fan failures (fleetmon)")
    fan_stopped_minutes: int = _t(
        3, "min", 1, 1440, "Minutes with a stopped fan within 10 minutes.", "fleetmon")
    # -- nodes and inventory ------------------------------------------------
    unreachable_minutes: int = _t(
        5, "min", 1, 10080, "No good poll of a node for this long: node-unreachable.",
        "fleetmon")
    flap_window_hours: int = _t(
        6, "h", 1, 720, "Window in which outages are counted for flapping.", "fleetmon")
    flap_count: int = _t(
        3, "outages", 2, 1000,
        "Outages that ended (node lost and back) within the window: node-flapping.",
        "L1 lemon-node signals (fleetmon)")
    flap_min_outage_s: int = _t(
        60, "s", 1, 86400, "Shorter outages (a slow poll or two) do not count as flaps.", "fleetmon")
    gpu_missing_minutes: int = _t(
        5, "min", 1, 10080,
        "A card not enumerated for this long while its node answers: gpu-missing.", "fleetmon")
    # -- derating -----------------------------------------------------------
    derate_fleet_frac: float = _t(
        0.10, "fraction", 0.01, 0.9,
        "A ratio this far below its model's fleet median is derated.",
        "D1: > 10 % below the fleet median of the same model (§8)")
    derate_nominal_frac: float = _t(
        0.75, "fraction", 0.01, 1.0,
        "Without enough peers, a busy SM clock below this share of nominal boost is derated.",
        "D1 (fleetmon)")
    derate_min_peers: int = _t(
        3, "GPUs", 2, 100000, "GPUs of one model needed for a fleet median.", "fleetmon")
    derate_minutes: int = _t(
        5, "min", 1, 1440,
        "Busy minutes with a derated SM clock within 10 minutes (the timely check).",
        "D1 + timeliness (fleetmon)")
    derate_min_busy_minutes: int = _t(
        30, "min", 1, 1440, "Busy minutes a day needs for its clock ratio to count.", "fleetmon")
    derate_trend_days: int = _t(
        28, "days", 7, 3650, "Days of daily ratios the trend is fitted over.", "fleetmon")
    derate_trend_min_days: int = _t(
        14, "days", 3, 3650, "Fewest days with a ratio for a trend.", "fleetmon")
    derate_trend_per_week: float = _t(
        0.02, "ratio/week", 0.001, 1.0,
        "A clock ratio falling faster than this per week (fitted) is a derating trend.",
        "fleetmon")

    # -- intake (`fleetmon intake`: a card new to the fleet against its spec and its model's fleet) ---------
    intake_memory_reject_frac: float = _t(
        0.85, "fraction", 0.1, 1.0,
        "Intake: reported memory below this share of the nominal size is REJECT (a fake or a board with "
        "memory disabled; healthy boards report 93-100 %).", "I: memory size against the spec (fleetmon)")
    intake_memory_low_frac: float = _t(
        0.92, "fraction", 0.1, 1.0,
        "Intake: reported memory below this share of nominal (above the reject line) is CONDITIONAL.",
        "fleetmon (a T4 reports 15360 of 16384 MiB, 94 %)")
    intake_memory_modded_frac: float = _t(
        1.02, "fraction", 1.0, 10.0,
        "Intake: reported memory above this share of nominal is CONDITIONAL (a memory-modded board: "
        "declare it with a user spec).", "fleetmon")
    intake_memory_fleet_frac: float = _t(
        0.02, "fraction", 0.0, 0.5,
        "Intake: reported memory this far below the same model's fleet median is CONDITIONAL.",
        "D1 style fleet comparison (fleetmon)")
    intake_power_default_reject_frac: float = _t(
        0.80, "fraction", 0.1, 1.0,
        "Intake: a default power limit below this share of the TDP is REJECT (a capped VBIOS).",
        "W: power limits (fleetmon)")
    intake_power_default_frac: float = _t(
        0.95, "fraction", 0.1, 1.0,
        "Intake: a default power limit below this share of the TDP (above the reject line) is CONDITIONAL.",
        "fleetmon")
    intake_power_enforced_frac: float = _t(
        0.95, "fraction", 0.1, 1.0,
        "Intake: an enforced power limit below this share of the default limit is CONDITIONAL (lowered by "
        "software, e.g. a previous owner's `nvidia-smi -pl`).", "fleetmon")
    intake_pcie_reject_frac: float = _t(
        0.5, "fraction", 0.01, 1.0,
        "Intake: a link under load with less than this share of the bandwidth the card and slot allow is "
        "REJECT (below it and above this: CONDITIONAL).", "P: link downtraining (fleetmon)")
    intake_vbios_min_peers: int = _t(
        2, "GPUs", 1, 100000,
        "Intake: other cards of the model needed for a VBIOS baseline (the most common VBIOS among them).",
        "I: VBIOS consistency (fleetmon)")
    intake_min_busy_minutes: int = _t(
        30, "min", 1, 100000,
        "Intake: busy minutes in the intake window needed for the checks under load (fewer: not checked).",
        "fleetmon")
    intake_clock_conditional_frac: float = _t(
        0.05, "fraction", 0.0, 0.9,
        "Intake: a busy SM clock this far below the model's fleet median is CONDITIONAL.", "D1 (fleetmon)")
    intake_clock_reject_frac: float = _t(
        0.10, "fraction", 0.0, 0.9,
        "Intake: a busy SM clock this far below the model's fleet median is REJECT (without enough peers: "
        "below `derate_nominal_frac` of nominal boost).", "D1: > 10 % below the fleet median (§8)")

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, Any] | None = None) -> Thresholds:
        """Defaults with ``overrides`` applied (the fleet file's ``[thresholds]``).

        Raises:
            ValueError: an unknown name (with close matches), a value that is
                not a number, not an integer where one is needed, or out of
                range. All problems are reported together.
        """
        if not overrides:
            return cls()
        specs = {f.name: f for f in fields(cls)}
        changes: dict[str, Any] = {}
        problems: list[str] = []
        for raw_name, value in overrides.items():
            name = ALIASES.get(raw_name, raw_name)
            spec = specs.get(name)
            if spec is None:
                close = difflib.get_close_matches(raw_name, list(specs) + list(ALIASES), n=3, cutoff=0.6)
                problems.append(Text(N_("unknown threshold {name!r}; did you mean {close}?"), name=raw_name,
                                     close=", ".join(close)) if close else
                                Text(N_("unknown threshold {name!r}"), name=raw_name))
                continue
            meta = spec.metadata
            if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
                problems.append(Text(N_("{name}: expected a number, got {value!r}"), name=raw_name, value=value))
                continue
            if meta["integer"]:
                if float(value) != int(value):
                    problems.append(Text(N_("{name}: expected a whole number, got {value!r}"), name=raw_name,
                                         value=value))
                    continue
                value = int(value)
            else:
                value = float(value)
            if not meta["min"] <= value <= meta["max"]:
                template = _RANGES.get(meta["unit"], "{low:g}..{high:g} " + meta["unit"])
                problems.append(Text(N_("{name}: {value!r} is out of range {range}"), name=raw_name, value=value,
                                     range=Text(template, low=meta["min"], high=meta["max"])))
                continue
            changes[name] = value
        if problems:
            raise ValueError(listing(problems, semicolons=True))
        result = replace(cls(), **changes)
        if result.retired_pages_warning > result.retired_pages_critical:
            raise ValueError(Text(_NOT_ABOVE, low="retired_pages_warning", high="retired_pages_critical",
                                  low_value=result.retired_pages_warning, high_value=result.retired_pages_critical))
        for low, high in (("arrival_retired_pages_warning", "arrival_retired_pages_critical"),
                          ("intake_memory_reject_frac", "intake_memory_low_frac"),
                          ("intake_power_default_reject_frac", "intake_power_default_frac"),
                          ("intake_clock_conditional_frac", "intake_clock_reject_frac")):
            if getattr(result, low) > getattr(result, high):
                raise ValueError(Text(_NOT_ABOVE, low=low, high=high, low_value=getattr(result, low),
                                      high_value=getattr(result, high)))
        return result

    def to_dict(self) -> dict[str, float]:
        """Every threshold by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def overrides(self) -> dict[str, float]:
        """Only the thresholds that differ from the defaults."""
        default = Thresholds()
        return {k: v for k, v in self.to_dict().items() if getattr(default, k) != v}


ALIASES: dict[str, str] = {
    "temperature_warning": "temperature_warning_c",
    "temperature_critical": "temperature_critical_c",
}
"""Older names accepted in the fleet file (docs/fleet-file.md's example)."""


def rows() -> list[dict[str, Any]]:
    """One dict per threshold: name, default, unit, help, source, min, max."""
    out = []
    for f in fields(Thresholds):
        meta = f.metadata
        out.append({
            "name": f.name, "default": f.default, "unit": meta["unit"], "help": meta["help"],
            "source": meta["source"], "min": meta["min"], "max": meta["max"],
        })
    return out


def describe() -> str:
    """The thresholds as a Markdown table (embedded in docs/findings.md)."""
    lines = [
        "| Name | Default | Unit | Meaning | Source |",
        "|---|---|---|---|---|",
    ]
    for r in rows():
        default = r["default"]
        shown = f"{default:g}" if isinstance(default, float) else str(default)
        lines.append(f"| `{r['name']}` | {shown} | {r['unit']} | {r['help']} | {r['source']} |")
    return "\n".join(lines) + "\n"
