"""Findings: what the health rules report, and the stable vocabulary of kinds.

A :class:`Finding` names one problem on one node (and one GPU where it is a
GPU's problem), with a severity, when it was first and last seen, the evidence
(values, window, samples) and what to do. Kinds are a closed, documented
vocabulary (:data:`KINDS`, rendered in docs/findings.md); a kind is never
renamed, new kinds may be added.

Identity: ``key`` is stable across evaluations so that reports can tell new,
resolved and worsening findings apart. A GPU finding is keyed by the card
(``kind|gpu:<uuid>|<discriminator>``) so that it follows the card when it
moves; a node finding by the node (``kind|node:<name>|<discriminator>``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from fleetmon.vocab import Severity, severity_rank

__all__ = [
    "KINDS",
    "KIND_PRIORITY",
    "SEVERITIES",
    "STATES",
    "Finding",
    "finding_key",
    "kind_priority",
    "kind_priority_markdown",
    "kinds_markdown",
    "worst_order",
]

SEVERITIES: tuple[str, ...] = tuple(Severity.most_severe_first())
"""Most severe first (the members of :class:`fleetmon.vocab.Severity`, which says what each means)."""

STATES: tuple[str, ...] = ("open", "resolved")
"""open: the evidence is recent; resolved: it stopped recurring (kept, not deleted)."""


@dataclass(frozen=True, slots=True)
class KindInfo:
    """One finding kind: its scope (gpu or node), meaning and usual severities."""

    name: str
    scope: str  # "gpu" or "node"
    severities: str  # e.g. "critical", "warning / critical"
    meaning: str
    evidence: str


KINDS: dict[str, KindInfo] = {k.name: k for k in (
    KindInfo("driver-mismatch", "node", "warning (info when the group has no majority)",
             "The node's NVIDIA driver (or, with the same driver, its CUDA driver) differs from its "
             "group's expected version, or from the group's majority when none is set; an ungrouped "
             "node is compared with the ungrouped nodes of the same GPU model. One finding per node; "
             "the advice never names a driver older than the oldest that supports the card.",
             "field (driver/cuda), version, expected, basis (expected/majority), group, peers "
             "(group/model), model, cuda_version, min_driver"),
    KindInfo("vbios-mismatch", "gpu", "warning (info without a majority)",
             "A card's VBIOS differs from the majority of cards of the same model in its group; "
             "likewise a card's firmware (an Ascend NPU's, discriminator firmware), and a card whose "
             "own tool says its driver and firmware do not match (npu-smi Compatibility NOK, "
             "discriminator compatibility).",
             "vbios (or field firmware, firmware), expected, model, group, peers"),
    KindInfo("ecc-uncorrectable", "gpu", "critical",
             "New uncorrectable (double-bit) ECC errors, or volatile ones not yet cleared by a reset.",
             "new, volatile, aggregate, first_increase_ts"),
    KindInfo("ecc-correctable-storm", "gpu", "warning (info for a slow daily rise)",
             "Corrected ECC errors at a high rate (early warning of memory degradation), or "
             "rising day over day.", "rate_per_min, window_min, total, per_day"),
    KindInfo("retired-pages", "gpu", "warning / critical",
             "Retired pages near NVIDIA's limit of 64 (pre-Ampere), or a retirement pending "
             "that needs a GPU reset.", "sbe, dbe, total, pending, limit"),
    KindInfo("row-remap", "gpu", "warning / critical",
             "A row remap is pending (reset needed) or failed (no spare rows: replacement).",
             "pending, failure, correctable_rows, uncorrectable_rows"),
    KindInfo("arrival-history", "gpu", "warning / critical",
             "A card whose first sight lies in the window arrived with a past: lifetime uncorrectable "
             "ECC errors, retired pages, a pending retirement, remapped rows or a remap failure "
             "(the intake check for second-hand cards).",
             "ecc_unc_agg, ecc_corr_agg, retired_sbe, retired_dbe, retired_pending, "
             "remap_correctable_rows, remap_uncorrectable_rows, remap_failure, first_sight"),
    KindInfo("xid", "gpu", "info / warning / critical",
             "NVIDIA Xid events by code, grouped into bursts, classified (hardware, driver, "
             "application ...) and escalated when they recur after resets or hit several GPUs "
             "of one node at once.",
             "code, name, category, count, bursts, resets_between, multi_gpu, attributed"),
    KindInfo("gpu-lost", "gpu", "critical",
             "The GPU fell off the bus or stopped answering (GPU_IS_LOST).",
             "lost_minutes, events"),
    KindInfo("gpu-missing", "gpu / node", "critical",
             "A card no longer enumerated on its node, or fewer GPUs than expected.",
             "last_seen, expected, reported"),
    KindInfo("pcie-link-degraded", "gpu", "warning (info for a static slot cap)",
             "The PCIe link trained below its maximum generation or width while the GPU was busy "
             "(never judged at idle, where links power down).",
             "gen, width, max_gen, max_width, busy_minutes, slots, attribution"),
    KindInfo("pcie-replay", "gpu", "warning (info for slow growth)",
             "The PCIe replay counter grows: link-level retransmissions (riser, slot, cable).",
             "max_per_min, total, minutes_over, slots, attribution"),
    KindInfo("power-brake", "gpu", "warning",
             "Hardware power-brake or hardware slowdown with the GPU not hot: PSU, board power "
             "or BMC.", "minutes, window_min, fraction, max_temp_c"),
    KindInfo("power-instability", "gpu", "warning",
             "Power draw drops sharply within a minute while utilization stays high.",
             "minutes, min_w, max_w, util_min_pct"),
    KindInfo("power-unreadable", "gpu", "warning",
             "The power reading fails (an unsupported reading is never flagged).",
             "minutes"),
    KindInfo("power-capped", "gpu", "info / warning",
             "The enforced power limit is below the default, or a platform/BMC cap holds the GPU "
             "far below its limit.", "enforced_w, default_w, ratio, minutes"),
    KindInfo("thermal-throttle", "gpu", "warning",
             "Hardware or software thermal slowdown time.",
             "minutes, reasons, max_temp_c"),
    KindInfo("temperature-high", "gpu", "warning / critical",
             "The GPU runs near its slowdown (warning) or shutdown (critical) temperature.",
             "max_temp_c, limit_c, slowdown_c, minutes"),
    KindInfo("fan-stopped", "gpu", "warning",
             "A fan reads 0 % while the GPU is hot.", "minutes, max_temp_c"),
    KindInfo("derating", "gpu / node", "info / warning",
             "Measured behaviour below the model's fleet median or nominal spec (SM clock while "
             "busy, power limit, memory, PCIe bandwidth), or a ratio falling over weeks; a model "
             "with no spec (neither the catalog nor a fleet file's `[[spec]]`) is reported as unknown (info).",
             "metric, value, ratio, fleet_median, vs_fleet, nominal, spec_origin, slope_per_week"),
    KindInfo("node-unreachable", "node", "critical",
             "The node's agent has not answered for a while.",
             "since, minutes, error, failed_polls"),
    KindInfo("node-flapping", "node", "warning",
             "The node was repeatedly lost and back.", "outages, window_h"),
    KindInfo("inventory-change", "gpu / node", "info",
             "A card was added, removed or moved, or a version changed.",
             "change, before, after"),
    KindInfo("data-unjudgeable", "gpu / node", "warning",
             "Some checks could not judge this GPU's (or node's) stored data: a value of the wrong type "
             "(an old database) made a rule fail; the rest of the fleet was judged.",
             "rules, errors, suspect_values"),
    KindInfo("uuid-conflict", "node", "critical",
             "The node reports GPU UUIDs that another node reports at the same time; the cards stay with "
             "that node and this node's records of them are not stored.",
             "holder, uuids, gpus, dropped_records"),
    KindInfo("gpus-refused", "node", "warning",
             "The store refuses the node's new GPU UUIDs: the node was seen with the most distinct GPUs one node "
             "may have within 24 h (128), as a scrape that invents UUIDs would be. Its known cards are still "
             "stored; the count of refused UUIDs is kept in nodes.refused_uuids.",
             "refused, cap, span_h, notice"),
    KindInfo("device-health", "gpu", "warning / critical (info for an unknown state)",
             "The device's own tool reports it unhealthy (Huawei Ascend npu-smi: Warning → warning, "
             "Alarm or Critical → critical, UNKNOWN → info), with its error codes (unknown codes shown "
             "as printed). Open while the latest signal says so; resolves when a later one says OK.",
             "state, text, codes, info, since, vendor"),
    KindInfo("ecc-block", "gpu", "critical",
             "Uncorrectable ECC errors in one RAS block of an AMD (or Hygon) GPU (UMC, SDMA, GFX, ...), "
             "or in its cache (block CACHE: AMD's cache ECC, Intel xpu-smi's cache errors), named; the "
             "counts are the driver's since it loaded.",
             "block, uncorrectable, correctable, deferred, blocks (every block with errors), since"),
    KindInfo("ecc-deferred", "gpu", "warning",
             "Deferred ECC errors on an AMD (or Hygon) GPU: detected and poisoned, not yet consumed "
             "(a reset clears them; a growing count is failing memory).",
             "deferred, blocks (blocks with deferred errors), since"),
    KindInfo("bad-pages-exceeded", "gpu", "critical",
             "The AMD driver retired more memory pages than its bad-page threshold "
             "(amd-smi's bad_page_threshold_exceeded): the card should be replaced.",
             "threshold, since"),
)}


KIND_PRIORITY: tuple[str, ...] = (
    "node-unreachable", "uuid-conflict", "gpu-lost", "gpu-missing", "ecc-uncorrectable", "ecc-block",
    "bad-pages-exceeded", "device-health", "row-remap", "retired-pages", "ecc-deferred",
    "arrival-history", "xid", "power-brake", "power-instability", "temperature-high", "fan-stopped", "thermal-throttle",
    "pcie-link-degraded", "pcie-replay", "ecc-correctable-storm", "node-flapping", "power-unreadable",
    "power-capped", "derating", "driver-mismatch", "vbios-mismatch", "gpus-refused", "inventory-change",
    "data-unjudgeable",
)
"""Which of two findings of the same severity leads (a GPU's health label, the
report's order): the one that can stop a job soonest and is least ambiguous
first. Every kind of :data:`KINDS` is listed once (checked at import)."""

if sorted(KIND_PRIORITY) != sorted(KINDS):  # pragma: no cover - guards the two tables
    raise ValueError("KIND_PRIORITY must list every kind of KINDS once")
_PRIORITY = {k: i for i, k in enumerate(KIND_PRIORITY)}


def kind_priority(kind: str) -> int:
    """Position of ``kind`` in :data:`KIND_PRIORITY` (0 leads; an unknown kind comes last)."""
    return _PRIORITY.get(kind, len(KIND_PRIORITY))


def worst_order(severity: str, kind: str, first_seen: float | None = None) -> tuple[int, int, float, str]:
    """Sort key, worst first: severity, then :data:`KIND_PRIORITY`, then the earlier onset.

    The one order for "the worst finding of a GPU or node" (the report, the
    GUI's health column), so the same faults always give the same label.
    """
    onset = float("inf") if first_seen is None else float(first_seen)
    try:
        rank = severity_rank(severity)
    except ValueError:  # a severity this build does not know (a newer database): after the known ones
        rank = 0
    return (-rank, kind_priority(kind), onset, kind)


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem, as a rule reports it.

    Attributes:
        kind: one of :data:`KINDS`.
        severity: a :class:`fleetmon.vocab.Severity` (text is parsed into one).
        node: the node (where the card sat when last seen with the problem).
        gpu_uuid: the card, or None for a node finding.
        first_seen, last_seen: Unix s; the onset and the latest evidence.
        evidence: values, window and samples behind the finding (JSON-safe).
        action: what to do, in words.
        summary: one line for humans.
        key: stable identity (see the module doc).
        state: "open" or "resolved".
        gpu_index: the card's index on the node, for display.
        magnitude: a number that grows as the problem worsens (errors,
            minutes, deficit); compared by :func:`engine.diff_findings`.
    """

    kind: str
    severity: str
    node: str
    gpu_uuid: str | None
    first_seen: float
    last_seen: float
    evidence: Mapping[str, Any] = field(default_factory=dict)
    action: str = ""
    summary: str = ""
    key: str = ""
    state: str = "open"
    gpu_index: int | None = None
    magnitude: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown finding kind {self.kind!r}")
        object.__setattr__(self, "severity", Severity.parse(self.severity))  # VocabularyError: a ValueError
        if self.state not in STATES:
            raise ValueError(f"unknown state {self.state!r}")
        if not self.key:
            object.__setattr__(self, "key", finding_key(self.kind, self.node, self.gpu_uuid))

    @property
    def is_open(self) -> bool:
        return self.state == "open"

    @property
    def rank(self) -> int:
        return Severity.parse(self.severity).rank

    def where(self) -> str:
        """``node`` or ``node gpuN`` for display."""
        if self.gpu_uuid is None:
            return self.node
        return f"{self.node} gpu{self.gpu_index}" if self.gpu_index is not None else (
            f"{self.node} {self.gpu_uuid}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict (the ``findings`` entries of the report JSON)."""
        out = asdict(self)
        out["evidence"] = dict(self.evidence)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Finding:
        """Inverse of :meth:`to_dict`; unknown keys are ignored."""
        known = set(cls.__dataclass_fields__)
        args = {k: v for k, v in data.items() if k in known}
        args["evidence"] = dict(args.get("evidence") or {})
        return cls(**args)


def finding_key(kind: str, node: str, gpu_uuid: str | None, discriminator: str = "") -> str:
    """The stable identity of a finding."""
    where = f"gpu:{gpu_uuid}" if gpu_uuid else f"node:{node}"
    return f"{kind}|{where}|{discriminator}"


def kinds_markdown() -> str:
    """The kinds as a Markdown table (embedded in docs/findings.md)."""
    lines = ["| Kind | Scope | Severity | Meaning | Evidence fields |", "|---|---|---|---|---|"]
    for k in KINDS.values():
        lines.append(f"| `{k.name}` | {k.scope} | {k.severities} | {k.meaning} | {k.evidence} |")
    return "\n".join(lines) + "\n"


def kind_priority_markdown() -> str:
    """:data:`KIND_PRIORITY` as a numbered Markdown list (embedded in docs/findings.md)."""
    return "".join(f"{i}. `{k}`\n" for i, k in enumerate(KIND_PRIORITY, 1))
