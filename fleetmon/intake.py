"""Intake: the check of a card new to the fleet, against its spec and its model's fleet.

A patched-together fleet takes in second-hand cards; each one is checked on
arrival before it goes into service. :func:`evaluate` judges one card from its
recorded history (a :class:`~fleetmon.health.fleet.FleetHistory` of the intake
window, the card's Xid events since it was first seen, and the time passed in):
a pure function, like the health rules. :func:`run_intake` is the glue the
`fleetmon intake` command and the app share: it loads the window through
:mod:`fleetmon.assess`, judges the chosen cards and stores each result with the
card (:mod:`storage.intake`). :func:`certificate_html` renders one result as a
printable, self-contained HTML page.

Checks, each PASS / CONDITIONAL / REJECT / UNKNOWN with a one-line reason
(thresholds: the ``intake_*`` rows of ``[thresholds]``, docs/findings.md):

* ``spec``: the model in the spec catalog (or a user spec): the reference of
  the checks below;
* ``memory-size``: reported memory against nominal and the model's fleet;
* ``pcie-capability``: the card's and the slot's maximum link against the spec;
* ``power-limits``: default and enforced power limits against the TDP;
* ``vbios``: against the most common VBIOS of the model's other cards;
* ``memory-history``: lifetime ECC errors, retired and pending pages,
  remapped rows and remap failures (the ``arrival_*`` thresholds);
* ``xid``: Xid events since the card was first seen;
* ``pcie-under-load``: the link negotiated while busy in the window;
* ``load``: SM clock, power limit and link ratios under load in the window,
  against nominal and the model's fleet median.

Missing data is not health: a check without data is UNKNOWN ("not checked").
The overall verdict is REJECT when any check rejects; else CONDITIONAL when any
check is conditional or a *required* check is UNKNOWN; else PASS. Every check
is required except ``vbios`` (a model with no peers has no baseline) and, on a
card without ECC (or with ECC off), ``memory-history`` (nothing to read).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fleetmon import i18n, specs
from fleetmon.errors import KnownError
from fleetmon.health.fleet import EventRecord, FleetHistory, GpuHistory
from fleetmon.health.rules.arrival import arrival_state, memory_faults
from fleetmon.health.rules.derating import daily_ratios, model_usual
from fleetmon.health.series import DAY_S, HOUR_S
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Joined, Moment, Text, localized
from fleetmon.i18n import gettext as _
from fleetmon.xid import catalog as xidcat

__all__ = [
    "CHECKS",
    "Check",
    "IntakeResult",
    "IntakeRun",
    "certificate_html",
    "evaluate",
    "new_cards",
    "overall",
    "parse_window",
    "result_text",
    "results_json",
    "run_intake",
]

PASS, CONDITIONAL, REJECT, UNKNOWN = "PASS", "CONDITIONAL", "REJECT", "UNKNOWN"
STATUSES = (PASS, CONDITIONAL, REJECT, UNKNOWN)
VERDICTS = (PASS, CONDITIONAL, REJECT)

CHECKS: dict[str, str] = {
    "spec": N_("Model and spec"),
    "memory-size": N_("Memory size"),
    "pcie-capability": N_("PCIe capability"),
    "power-limits": N_("Power limits"),
    "vbios": N_("VBIOS"),
    "memory-history": N_("ECC, retired pages, remapped rows"),
    "xid": N_("Xid history"),
    "pcie-under-load": N_("PCIe link under load"),
    "load": N_("Clocks under load"),
}
"""The checks in the order they are shown, with their titles (marked; said with ``_()`` where shown)."""

STATUS_WORDS = {PASS: N_("PASS"), CONDITIONAL: N_("CONDITIONAL"), REJECT: N_("REJECT"), UNKNOWN: N_("NOT CHECKED")}
"""A check's status and a card's verdict as people read them (the JSON keeps the identifiers)."""


def status_word(status: str) -> str:
    """PASS / CONDITIONAL / REJECT / NOT CHECKED in the reader's language."""
    return _(STATUS_WORDS[status]) if status in STATUS_WORDS else status

SCHEMA = 1

_COUNTERS = ("ecc_unc_agg", "ecc_corr_agg", "retired_sbe", "retired_dbe", "remap_corr", "remap_unc")
_STATES = ("retired_pending", "remap_pending", "remap_failure")
_THRESHOLD_PREFIXES = ("intake_", "arrival_", "derate_min_peers", "derate_nominal_frac")


@dataclass(frozen=True)
class Check:
    """One check of an intake: its name (a key of :data:`CHECKS`), status, one-line reason and evidence."""

    name: str
    status: str
    reason: str
    required: bool = True
    evidence: Mapping[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return CHECKS.get(self.name, self.name)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "status": self.status, "reason": self.reason,
                "required": self.required, "evidence": dict(self.evidence)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], made: Any = None) -> Check:
        """``made``: how the reason was made (:func:`fleetmon.i18n.to_data`, kept by :meth:`IntakeResult.stored`)."""
        status = str(d.get("status") or UNKNOWN)
        reason = i18n.from_data(made, str(d.get("reason") or ""))
        return cls(str(d.get("name") or "?"), status if status in STATUSES else UNKNOWN, reason,
                   bool(d.get("required", True)), dict(d.get("evidence") or {}))


@dataclass(frozen=True)
class IntakeResult:
    """The intake of one card: who it is, where it sat, the verdict with its reason, and every check."""

    uuid: str
    node: str
    verdict: str
    reason: str
    checks: tuple[Check, ...]
    now: float
    window_from: float
    window_to: float
    index: int | None = None
    model: str = ""
    serial: str | None = None
    vbios: str | None = None
    pci_bus_id: str | None = None
    board_part_number: str | None = None
    first_seen: float | None = None
    new: bool = False
    """First seen within the intake window (a card new to the fleet), else an intake on request."""
    spec: Mapping[str, Any] | None = None
    """The spec judged against (name, source, TDP, memory, link, boost), None for an unknown model."""
    thresholds: Mapping[str, Any] = field(default_factory=dict)
    """The thresholds the checks used (the intake's and the arrival history's), by name."""

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "uuid": self.uuid, "node": self.node, "index": self.index, "model": self.model,
            "serial": self.serial, "vbios": self.vbios, "pci_bus_id": self.pci_bus_id,
            "board_part_number": self.board_part_number, "first_seen": self.first_seen, "new": self.new,
            "verdict": self.verdict, "reason": self.reason, "now": self.now, "window_from": self.window_from,
            "window_to": self.window_to, "spec": dict(self.spec) if self.spec else None,
            "thresholds": dict(self.thresholds), "checks": [c.to_dict() for c in self.checks],
        }

    def stored(self) -> dict[str, Any]:
        """:meth:`to_dict` (English, as ``--json`` writes it) and ``"texts"``: how the verdict's and the checks'
        reasons were made (:func:`fleetmon.i18n.to_data`), so that a stored result is said again in the reader's
        language (:meth:`from_dict`; docs/i18n.md)."""
        made = (Text, Joined, Moment)
        texts: dict[str, Any] = {"checks": {c.name: i18n.to_data(c.reason) for c in self.checks
                                            if isinstance(c.reason, made)}}
        if isinstance(self.reason, made):
            texts["reason"] = i18n.to_data(self.reason)
        return {**self.to_dict(), "texts": texts}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> IntakeResult:
        """A stored result back (unknown keys ignored, missing ones empty): what the app shows and prints. Its
        reasons are :class:`fleetmon.i18n.Text` where ``"texts"`` (:meth:`stored`) makes them again into the
        English stored, else the English as stored."""
        def num(key: str) -> float:
            v = d.get(key)
            return float(v) if isinstance(v, (int, float)) else 0.0

        verdict = str(d.get("verdict") or CONDITIONAL)
        spec, used = d.get("spec"), d.get("thresholds")
        kept = d.get("texts")
        texts: Mapping[str, Any] = kept if isinstance(kept, Mapping) else {}
        kept_checks = texts.get("checks")
        made_checks: Mapping[str, Any] = kept_checks if isinstance(kept_checks, Mapping) else {}
        return cls(
            uuid=str(d.get("uuid") or ""), node=str(d.get("node") or ""),
            verdict=verdict if verdict in VERDICTS else CONDITIONAL,
            reason=i18n.from_data(texts.get("reason"), str(d.get("reason") or "")),
            checks=tuple(Check.from_dict(c, made_checks.get(str(c.get("name")))) for c in d.get("checks") or ()
                         if isinstance(c, Mapping)),
            now=num("now"), window_from=num("window_from"), window_to=num("window_to"),
            index=d.get("index"), model=str(d.get("model") or ""), serial=d.get("serial"), vbios=d.get("vbios"),
            pci_bus_id=d.get("pci_bus_id"), board_part_number=d.get("board_part_number"),
            first_seen=d.get("first_seen"), new=bool(d.get("new")),
            spec=spec if isinstance(spec, Mapping) else None,
            thresholds=used if isinstance(used, Mapping) else {},
        )


# -- the spec ------------------------------------------------------------------------


def _spec_for(history: FleetHistory, gpu: GpuHistory) -> specs.GpuSpec | None:
    """The spec a card is judged against, as every health rule resolves it: the fleet file's ``[[spec]]``
    matching its name, PCI subsystem id or VBIOS, else the catalog row (by name and reported memory)."""
    return history.spec_of(gpu)


def _spec_summary(spec: specs.GpuSpec) -> dict[str, Any]:
    return {"name": spec.nvml_name, "source": spec.source, "origin": spec.origin,
            "tdp_w": spec.tdp_w, "memory_gb": spec.memory_gb, "memory_type": spec.memory_type,
            "boost_clock_mhz": spec.boost_clock_mhz, "pcie_gen": spec.pcie_gen, "pcie_width": spec.pcie_width,
            "ecc": spec.ecc, "mem_repair": spec.mem_repair}


# -- helpers -----------------------------------------------------------------------


def _pct(v: float) -> str:
    return f"{v:.0%}"


def _num(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _int(v: Any) -> int | None:
    f = _num(v)
    return None if f is None else int(f)


def _last(values: Sequence[Any]) -> Any:
    for v in reversed(values):
        if v is not None:
            return v
    return None


def _link(gen: Any, width: Any) -> str:
    return f"Gen{gen} x{width}" if gen is not None and width is not None else Text(N_("unknown"))


def _bandwidth(gen: int | None, width: int | None) -> float | None:
    if gen is None or width is None:
        return None
    try:
        return specs.pcie_bandwidth_gbs(gen, width)
    except ValueError:
        return None


def _peers(history: FleetHistory, gpu: GpuHistory) -> list[GpuHistory]:
    """The other cards of the same model (the fleet the card is compared with)."""
    return [g for g in history.gpus if g.uuid != gpu.uuid and g.name == gpu.name]


# -- the checks --------------------------------------------------------------------


def _check_spec(gpu: GpuHistory, spec: specs.GpuSpec | None) -> Check:
    if spec is None:
        return Check("spec", UNKNOWN, Text(N_("not checked: {model} is not in the spec catalog; add a [[spec]] to the "
                                              "fleet file (docs/fleet-file.md) to judge it against its nominal spec"),
                                           model=gpu.name or Text(N_("the model"))),
                     evidence={"model": gpu.name})
    origin = spec.origin
    if origin != "catalog":
        said = Text(N_("{model}: user spec ({source})"), model=spec.nvml_name, source=spec.source)
    else:
        said = Text(N_("{model}: catalog spec ({source})"), model=spec.nvml_name, source=spec.source)
    return Check("spec", PASS, said, evidence=_spec_summary(spec))


def _check_memory(history: FleetHistory, gpu: GpuHistory, spec: specs.GpuSpec | None, t: Thresholds) -> Check:
    mib = _num(gpu.inv("memory_total_mib"))
    if mib is None:
        return Check("memory-size", UNKNOWN, Text(N_("not checked: the card did not report its memory size")))
    if spec is None:
        return Check("memory-size", UNKNOWN, Text(N_("not checked: {mib} MiB reported, no spec to compare with"),
                                                  mib=f"{mib:.0f}"),
                     evidence={"memory_total_mib": mib})
    ratio = specs.memory_ratio(mib, spec) or 0.0
    peers = [_num(g.inv("memory_total_mib")) for g in _peers(history, gpu)]
    fleet = model_usual(peers, t.intake_vbios_min_peers)
    ev = {"memory_total_mib": mib, "nominal_mib": spec.memory_gb * 1024, "ratio": round(ratio, 4),
          "fleet_median_mib": fleet}
    said = Text(N_("{mib} MiB reported, {ratio} of the nominal {gb} GB"), mib=f"{mib:.0f}", ratio=_pct(ratio),
                gb=spec.memory_gb)
    if ratio < t.intake_memory_reject_frac:
        return Check("memory-size", REJECT, Text(N_("{said} (below {limit}): a fake or a board with memory disabled"),
                                                 said=said, limit=_pct(t.intake_memory_reject_frac)), evidence=ev)
    if ratio > t.intake_memory_modded_frac:
        return Check("memory-size", CONDITIONAL, Text(N_("{said} (above {limit}): a memory-modded board; declare it "
                                                         "with a [[spec]] in the fleet file"),
                                                      said=said, limit=_pct(t.intake_memory_modded_frac)), evidence=ev)
    if ratio < t.intake_memory_low_frac:
        return Check("memory-size", CONDITIONAL, Text(N_("{said} (below {limit})"), said=said,
                                                      limit=_pct(t.intake_memory_low_frac)), evidence=ev)
    if fleet is not None and mib < (1.0 - t.intake_memory_fleet_frac) * fleet:
        return Check("memory-size", CONDITIONAL, Text(N_("{said}, less than the {model} fleet's {fleet} MiB"),
                                                      said=said, model=gpu.name, fleet=f"{fleet:.0f}"), evidence=ev)
    if fleet is not None:
        return Check("memory-size", PASS, Text(N_("{said}, as the fleet's {fleet} MiB"), said=said, fleet=f"{fleet:.0f}"),
                     evidence=ev)
    return Check("memory-size", PASS, said, evidence=ev)


def _check_pcie_capability(gpu: GpuHistory, spec: specs.GpuSpec | None) -> Check:
    gpu_gen, gpu_width = _int(gpu.inv("pcie_gpu_max_gen")), _int(gpu.inv("pcie_gpu_max_width"))
    max_gen, max_width = _int(gpu.inv("pcie_max_gen")), _int(gpu.inv("pcie_max_width"))
    ev = {"gpu_max": _link(gpu_gen, gpu_width), "link_max": _link(max_gen, max_width),
          "spec": _link(spec.pcie_gen, spec.pcie_width) if spec else None}
    if gpu_gen is None and max_gen is None:
        return Check("pcie-capability", UNKNOWN, Text(N_("not checked: the card did not report its PCIe capability")),
                     evidence=ev)
    if spec is None or spec.pcie_gen is None or spec.pcie_width is None:
        return Check("pcie-capability", UNKNOWN, Text(N_("not checked: {link} reported, no spec link to compare with"),
                                                      link=ev["link_max"]), evidence=ev)
    nominal = _link(spec.pcie_gen, spec.pcie_width)
    # The card's own capability (pcie_gpu_max_*: NVML's GPU maximum, independent of the slot).
    if gpu_gen is not None and (gpu_gen < spec.pcie_gen or (gpu_width is not None and gpu_width < spec.pcie_width)):
        return Check("pcie-capability", REJECT, Text(N_("the card reports {link} capability, the spec says {nominal}: "
                                                        "not the board it claims to be, or a damaged one"),
                                                     link=_link(gpu_gen, gpu_width or spec.pcie_width), nominal=nominal),
                     evidence=ev)
    if max_gen is not None and (max_gen < spec.pcie_gen or (max_width is not None and max_width < spec.pcie_width)):
        return Check("pcie-capability", CONDITIONAL, Text(N_("the link can reach {link} of the spec's {nominal}: the "
                                                             "slot or riser limits it (move the card to a full slot "
                                                             "to use it fully)"), link=ev["link_max"], nominal=nominal),
                     evidence=ev)
    return Check("pcie-capability", PASS, Text(N_("{link} supported, as the spec's {nominal}"), link=ev["link_max"],
                                               nominal=nominal), evidence=ev)


def _check_power(history: FleetHistory, gpu: GpuHistory, spec: specs.GpuSpec | None, t: Thresholds) -> Check:
    default = _num(gpu.inv("power_default_w"))
    tl = gpu.timeline()
    measured = _num(_last(tl.col("power_limit_w_mean"))) if tl else None
    enforced = measured if measured is not None else _num(gpu.inv("power_enforced_w"))
    ev = {"default_w": default, "enforced_w": enforced, "tdp_w": spec.tdp_w if spec else None}
    if default is None and enforced is None:
        return Check("power-limits", UNKNOWN, Text(N_("not checked: the card did not report its power limits")),
                     evidence=ev)
    if spec is None or spec.tdp_w is None:
        return Check("power-limits", UNKNOWN, Text(N_("not checked: no spec TDP to compare the limits with")),
                     evidence=ev)
    tdp = float(spec.tdp_w)
    peers = [_num(g.inv("power_enforced_w")) for g in _peers(history, gpu)]
    fleet = model_usual(peers, t.intake_vbios_min_peers)
    ev["fleet_median_w"] = fleet
    tdp_w = f"{tdp:.0f}"
    if default is None:
        said = Text(N_("default unknown, enforced {enforced} W against the TDP of {tdp} W"), enforced=f"{enforced:.0f}",
                    tdp=tdp_w) if enforced is not None else Text(N_("default unknown against the TDP of {tdp} W"),
                                                                  tdp=tdp_w)
    elif enforced is None:
        said = Text(N_("default {default} W against the TDP of {tdp} W"), default=f"{default:.0f}", tdp=tdp_w)
    else:
        said = Text(N_("default {default} W, enforced {enforced} W against the TDP of {tdp} W"),
                    default=f"{default:.0f}", enforced=f"{enforced:.0f}", tdp=tdp_w)
    if default is not None and default < t.intake_power_default_reject_frac * tdp:
        return Check("power-limits", REJECT, Text(N_("{said}: a default limit of {share} of TDP is set by the VBIOS (a "
                                                     "capped or foreign VBIOS)"), said=said, share=_pct(default / tdp)),
                     evidence=ev)
    if default is not None and default < t.intake_power_default_frac * tdp:
        return Check("power-limits", CONDITIONAL, Text(N_("{said}: the default limit is {share} of TDP (a capped "
                                                          "VBIOS?)"), said=said, share=_pct(default / tdp)), evidence=ev)
    base = default if default is not None else tdp
    if enforced is not None and enforced < t.intake_power_enforced_frac * base:
        return Check("power-limits", CONDITIONAL, Text(N_("{said}: the enforced limit is {share} of the default, "
                                                          "lowered by software (a previous owner's `nvidia-smi -pl`?); "
                                                          "reset it with `nvidia-smi -pl` and check again"),
                                                       said=said, share=_pct(enforced / base)), evidence=ev)
    if fleet:
        return Check("power-limits", PASS, Text(N_("{said}; the fleet's enforced median {fleet} W"), said=said,
                                                fleet=f"{fleet:.0f}"), evidence=ev)
    return Check("power-limits", PASS, said, evidence=ev)


def _check_vbios(history: FleetHistory, gpu: GpuHistory, t: Thresholds) -> Check:
    mine = gpu.inv("vbios")
    others = [str(g.inv("vbios")) for g in _peers(history, gpu) if g.inv("vbios")]
    if not mine:
        return Check("vbios", UNKNOWN, Text(N_("not checked: the card did not report its VBIOS")), required=False)
    if len(others) < t.intake_vbios_min_peers:
        return Check("vbios", UNKNOWN, Text(N_("not checked: {vbios}; fewer than {peers} other {model} cards to take a "
                                               "baseline from"), vbios=mine, peers=t.intake_vbios_min_peers,
                                            model=gpu.name), required=False,
                     evidence={"vbios": mine, "peers": len(others)})
    counts = Counter(others)
    baseline, n = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    ev = {"vbios": mine, "baseline": baseline, "baseline_cards": n, "peers": len(others)}
    if str(mine) == baseline:
        return Check("vbios", PASS, Text(N_("{vbios}, as {count} of {peers} other {model} cards"), vbios=mine, count=n,
                                         peers=len(others), model=gpu.name), required=False, evidence=ev)
    return Check("vbios", CONDITIONAL, Text(N_("{vbios} differs from the fleet's {baseline} ({count} of {peers} other "
                                               "{model} cards): a foreign or modified VBIOS; flash the fleet's version "
                                               "or keep the card apart"), vbios=mine, baseline=baseline, count=n,
                                            peers=len(others), model=gpu.name),
                 required=False, evidence=ev)


def _check_memory_history(gpu: GpuHistory, spec: specs.GpuSpec | None, first_seen: float | None,
                          t: Thresholds) -> Check:
    ecc_off = gpu.inv("ecc_mode_current") is not None and not gpu.inv("ecc_mode_current")
    no_ecc = spec is not None and spec.ecc in ("none",)
    tl = gpu.timeline()
    now_state: dict[str, Any] = {}
    for key in _COUNTERS:
        now_state[key] = _num(_last(tl.col(key))) if tl else None
    for key in _STATES:
        vals = [v for v in (tl.col(key + "_max") if tl else ()) if v is not None] or [
            v for v in (tl.col(key) if tl else ()) if v is not None]
        now_state[key] = _num(vals[-1]) if vals else None
    arrived: dict[str, Any] | None = None
    if tl and first_seen is not None and float(tl.ts[0]) <= first_seen + HOUR_S:
        src = gpu.hourly if gpu.hourly and (not gpu.minutes or float(gpu.hourly.ts[0]) < float(gpu.minutes.ts[0])) \
            else gpu.minutes
        arrived = arrival_state(src) if src else None
    if ecc_off:
        for key in ("remap_corr", "remap_unc", "remap_pending", "remap_failure"):
            now_state[key] = None  # meaningless with ECC off (see the row-remap rule)
    known = [k for k, v in now_state.items() if v is not None]
    required = not (no_ecc or ecc_off)
    ev: dict[str, Any] = {"now": now_state, "at_first_sight": arrived}
    if not known:
        why = (Text(N_("not checked: the card has no ECC")) if no_ecc else
               Text(N_("not checked: ECC is off on this card")) if ecc_off
               else Text(N_("not checked: no ECC, page retirement or row remap readings")))
        return Check("memory-history", UNKNOWN, why, required=required, evidence=ev)
    unc = now_state["ecc_unc_agg"]
    sbe, dbe = now_state["retired_sbe"], now_state["retired_dbe"]
    pages = None if sbe is None and dbe is None else (sbe or 0) + (dbe or 0)
    rows_corr, rows_unc = now_state["remap_corr"], now_state["remap_unc"]
    rows = None if rows_corr is None and rows_unc is None else (rows_corr or 0) + (rows_unc or 0)
    told, conditional, reject = memory_faults(now_state, t)
    if arrived is not None:
        a_pages = (arrived.get("retired_sbe") or 0) + (arrived.get("retired_dbe") or 0)
        if told and (a_pages or arrived.get("ecc_unc_agg") or arrived.get("remap_unc")):
            told.append(Text(N_("at first sight: {pages} retired pages, {unc} uncorrectable"), pages=a_pages,
                             unc=arrived.get("ecc_unc_agg") or 0))
    if reject:
        return Check("memory-history", REJECT, Text(N_("{faults}: past the RMA class; return it to the seller"),
                                                    faults=Joined(told)), required=required, evidence=ev)
    if conditional:
        return Check("memory-history", CONDITIONAL, Text(N_("{faults}: accept only after a burn-in (`dcgmi diag -r 3`, "
                                                            "a day under load) shows no new errors"),
                                                         faults=Joined(told)), required=required, evidence=ev)
    parts: list[str] = []
    if unc is not None:
        parts.append(Text(N_("no lifetime uncorrectable ECC errors")))
    if pages is not None:
        parts.append(Text(N_("{count} retired pages"), count=f"{pages:.0f}"))
    if rows is not None:
        parts.append(Text(N_("{count} remapped rows"), count=f"{rows:.0f}"))
    return Check("memory-history", PASS, Joined(parts) if parts else Text(N_("clean")), required=required,
                 evidence=ev)


def _check_xid(gpu: GpuHistory, xids: Sequence[EventRecord], xid_source: str | None,
               first_seen: float | None) -> Check:
    since = "" if first_seen is None else Text(N_(" since {when}"), when=Moment(first_seen))
    mine = [e for e in xids if e.kind == "xid" and e.code is not None]
    if mine:
        codes = Counter(int(e.code or 0) for e in mine)
        infos = {c: xidcat.lookup(c) for c in codes}
        listed = ", ".join(f"Xid {c} ×{n} ({infos[c].name or infos[c].meaning})" for c, n in sorted(codes.items()))
        ev = {"codes": {str(c): n for c, n in codes.items()}, "first": min(e.ts for e in mine),
              "last": max(e.ts for e in mine)}
        if any(i.severity == "critical" for i in infos.values()):
            return Check("xid", REJECT, Text(N_("{xids}{since}: a critical Xid"), xids=listed, since=since),
                         evidence=ev)
        if any(i.category not in ("application", "secondary") for i in infos.values()):
            return Check("xid", CONDITIONAL, Text(N_("{xids}{since}"), xids=listed, since=since), evidence=ev)
        return Check("xid", PASS, Text(N_("{xids}{since}: application errors only"), xids=listed, since=since),
                     evidence=ev)
    source = (xid_source or "").strip()
    if not source or source.lower().startswith("none"):
        why = source.split(":", 1)[1].strip() if ":" in source else Text(N_("the node does not say it collects them"))
        return Check("xid", UNKNOWN, Text(N_("not checked: Xid events are not collected on {node} ({why})"),
                                          node=gpu.node, why=why),
                     evidence={"xid_source": source or None})
    return Check("xid", PASS, Text(N_("no Xid{since} (source: {source})"), since=since, source=source),
                 evidence={"xid_source": source})


def _busy_link(gpu: GpuHistory) -> tuple[tuple[int, int] | None, int]:
    """The link seen most often while busy (the slowest in each busy minute) and the busy rows behind it."""
    tl = gpu.timeline()
    if not tl:
        return None, 0
    pairs = [(int(g), int(w)) for g, w in zip(tl.col("pcie_gen_busy_min"), tl.col("pcie_width_busy_min"))
             if g is not None and w is not None]
    if not pairs:
        return None, 0
    link, _ = max(Counter(pairs).items(), key=lambda kv: (kv[1], kv[0]))
    return link, len(pairs)


def _busy_minutes(rows: Sequence[Mapping[str, Any]]) -> int:
    return int(sum(r.get("busy_minutes") or 0 for r in rows))


def _check_pcie_load(gpu: GpuHistory, spec: specs.GpuSpec | None, busy: int, t: Thresholds) -> Check:
    link, rows = _busy_link(gpu)
    if link is None or busy < t.intake_min_busy_minutes:
        return Check("pcie-under-load", UNKNOWN, _not_loaded(busy, t), evidence={"busy_minutes": busy})
    gen, width = link
    # What the link should reach here: the spec's link, capped by what the slot and card report.
    gens = [x for x in (spec.pcie_gen if spec else None, _int(gpu.inv("pcie_max_gen"))) if x is not None]
    widths = [x for x in (spec.pcie_width if spec else None, _int(gpu.inv("pcie_max_width"))) if x is not None]
    cap_gen, cap_width = (min(gens) if gens else None), (min(widths) if widths else None)
    got, want = _bandwidth(gen, width), _bandwidth(cap_gen, cap_width)
    ratio_nominal = specs.pcie_ratio(gen, width, spec)
    ev = {"link": _link(gen, width), "expected": _link(cap_gen, cap_width), "busy_minutes": busy,
          "ratio_nominal": None if ratio_nominal is None else round(ratio_nominal, 4)}
    if got is None or want is None:
        return Check("pcie-under-load", UNKNOWN, Text(N_("not checked: {link} under load, nothing to compare it "
                                                         "with"), link=_link(gen, width)), evidence=ev)
    ratio = got / want
    ev["ratio"] = round(ratio, 4)
    said = Text(N_("{link} under load, {share} of the {allowed} the card and slot allow"), link=_link(gen, width),
                share=_pct(ratio), allowed=_link(cap_gen, cap_width))
    if ratio < t.intake_pcie_reject_frac:
        return Check("pcie-under-load", REJECT, Text(N_("{said}: the link trains down under load (reseat the card, "
                                                        "try another slot or riser, and check again before "
                                                        "accepting)"), said=said), evidence=ev)
    if ratio < 0.999:
        return Check("pcie-under-load", CONDITIONAL, Text(N_("{said}: reseat the card or try another slot"),
                                                             said=said), evidence=ev)
    return Check("pcie-under-load", PASS, said, evidence=ev)


def _weighted(rows: Sequence[Mapping[str, Any]], key: str) -> float | None:
    """The busy-minute weighted mean of ``key`` over daily rows (None: no row has it)."""
    pairs = [(float(r[key]), float(r.get("busy_minutes") or 0) or 1.0) for r in rows if r.get(key) is not None]
    if not pairs:
        return None
    total = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / total if total > 0 else None


def _check_load(history: FleetHistory, gpu: GpuHistory, spec: specs.GpuSpec | None,
                rows: Sequence[Mapping[str, Any]], peer_rows: Mapping[str, Sequence[Mapping[str, Any]]],
                busy: int, t: Thresholds) -> Check:
    clock = _weighted(rows, "clock_ratio")
    mhz = _weighted(rows, "sm_clock_busy_mhz")
    power = _weighted(rows, "power_limit_ratio")
    pcie = _weighted(rows, "pcie_ratio")
    peers = [g for g in _peers(history, gpu)]
    fleet_clock = model_usual((_weighted(peer_rows.get(g.uuid, ()), "clock_ratio") for g in peers),
                              t.derate_min_peers)
    fleet_power = model_usual((_weighted(peer_rows.get(g.uuid, ()), "power_limit_ratio") for g in peers),
                              t.derate_min_peers)
    fleet_pcie = model_usual((_weighted(peer_rows.get(g.uuid, ()), "pcie_ratio") for g in peers), t.derate_min_peers)
    ev = {"busy_minutes": busy, "sm_clock_busy_mhz": None if mhz is None else round(mhz, 1),
          "clock_ratio": _r(clock), "clock_fleet_median": _r(fleet_clock),
          "clock_vs_fleet": _r(clock / fleet_clock) if clock is not None and fleet_clock else None,
          "power_limit_ratio": _r(power), "power_fleet_median": _r(fleet_power),
          "pcie_ratio": _r(pcie), "pcie_fleet_median": _r(fleet_pcie)}
    if busy < t.intake_min_busy_minutes or mhz is None:
        return Check("load", UNKNOWN, _not_loaded(busy, t), evidence=ev)
    parts: list[str] = [Text(N_("{busy} busy minutes at {mhz} MHz"), busy=busy, mhz=f"{mhz:.0f}")]
    if clock is not None:
        parts.append(Text(N_("{share} of nominal boost"), share=_pct(clock)))
    if fleet_clock and clock is not None:
        parts.append(Text(N_("{share} of the {model} fleet median"), share=_pct(clock / fleet_clock), model=gpu.name))
    if power is not None:
        parts.append(Text(N_("power limit {share} of TDP (fleet {fleet})"), share=_pct(power), fleet=_pct(fleet_power))
                     if fleet_power else Text(N_("power limit {share} of TDP"), share=_pct(power)))
    if pcie is not None:
        parts.append(Text(N_("link {share} of nominal (fleet {fleet})"), share=_pct(pcie), fleet=_pct(fleet_pcie))
                     if fleet_pcie else Text(N_("link {share} of nominal"), share=_pct(pcie)))
    said = Joined(parts)
    if clock is None:
        return Check("load", UNKNOWN, Text(N_("not checked: {said}; no nominal boost clock to compare with"),
                                           said=said), evidence=ev)
    if fleet_clock:
        vs = clock / fleet_clock
        if vs < 1.0 - t.intake_clock_reject_frac:
            return Check("load", REJECT, Text(N_("{said}: derated (more than {limit} below its peers)"), said=said,
                                              limit=_pct(t.intake_clock_reject_frac)), evidence=ev)
        if vs < 1.0 - t.intake_clock_conditional_frac:
            return Check("load", CONDITIONAL, Text(N_("{said}: below its peers (more than {limit})"), said=said,
                                                   limit=_pct(t.intake_clock_conditional_frac)), evidence=ev)
        return Check("load", PASS, said, evidence=ev)
    if clock < t.derate_nominal_frac:
        return Check("load", REJECT, Text(N_("{said}: derated (below {limit} of nominal boost; fewer than {peers} peers "
                                             "to compare with)"), said=said, limit=_pct(t.derate_nominal_frac),
                                          peers=t.derate_min_peers), evidence=ev)
    return Check("load", PASS, Text(N_("{said} (fewer than {peers} peers: judged against nominal)"), said=said,
                                    peers=t.derate_min_peers), evidence=ev)


def _not_loaded(busy: int, t: Thresholds) -> Text:
    return Text(N_("not checked: {busy} busy minutes in the window (at least {needed} needed): run a load on the "
                   "card within the intake window"), busy=busy, needed=t.intake_min_busy_minutes)


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 4)


# -- the verdict -------------------------------------------------------------------


def stored_reason(result: Mapping[str, Any]) -> str:
    """A stored result's verdict reason in the current language: made again from its checks (their reasons
    kept by :meth:`IntakeResult.stored`) when that gives the English stored, else as stored. Never raises."""
    english = str(result.get("reason") or "")
    if not isinstance(result.get("texts"), Mapping) or i18n.current_language() == "en":
        return english
    try:
        back = IntakeResult.from_dict(result)
        kept = result["texts"].get("checks")
        if not isinstance(kept, Mapping) or not all(isinstance(c.reason, (Text, Joined, Moment))
                                                    for c in back.checks if c.name in kept):
            return english  # a check's reason could not be made again: all of it as stored, not half
        with i18n.speaking("en"):
            again = overall(back.checks)[1]
        return overall(back.checks)[1] if again == english else english
    except (ValueError, TypeError, KeyError, AttributeError, IndexError):
        return english


def overall(checks: Sequence[Check]) -> tuple[str, str]:
    """(verdict, reason): REJECT if any check rejects; CONDITIONAL if any is conditional or a required check
    is UNKNOWN (missing data is not health); else PASS."""
    # Said in the current language (the checks' reasons localized): evaluate() stores it in English; the
    # terminal text and the certificate say it again in the reader's language.
    sep = _("; ")
    rejected = [c for c in checks if c.status == REJECT]
    if rejected:
        return REJECT, sep.join(_("{check}: {reason}").format(check=_(c.title), reason=localized(c.reason))
                                for c in rejected)
    conditional = [c for c in checks if c.status == CONDITIONAL]
    unknown = [c for c in checks if c.status == UNKNOWN and c.required]
    if conditional or unknown:
        parts = [_("{check}: {reason}").format(check=_(c.title), reason=localized(c.reason)) for c in conditional]
        if unknown:
            parts.append(_("not checked: {checks}").format(checks=localized(Joined([Text(c.title) for c in unknown]))))
        return CONDITIONAL, sep.join(parts)
    skipped = [Text(c.title) for c in checks if c.status == UNKNOWN]
    if skipped:
        return PASS, _("every check passed (not checked, not required: {checks})").format(
            checks=localized(Joined(skipped)))
    return PASS, _("every check passed")


def evaluate(history: FleetHistory, uuid: str, *, xids: Iterable[EventRecord] = (), xid_source: str | None = None,
             window_from: float | None = None, thresholds: Thresholds | None = None) -> IntakeResult:
    """The intake of card ``uuid`` from the recorded window ``history`` (``history.now`` is the time judged).

    Args:
        history: the intake window (``since`` .. ``now``), the whole fleet in it (the model's peers).
        uuid: the card.
        xids: the card's Xid events since it was first seen (events of other cards are ignored).
        xid_source: its node's ``xid_source`` ("nvml+kmsg"; "none: why" when not collected).
        window_from: start of the intake window (default ``history.since``).
        thresholds: default: the history's.

    Raises:
        KeyError: no such card in ``history``.
    """
    gpu = history.gpu(uuid)
    if gpu is None:
        raise KeyError(uuid)
    t = thresholds or history.thresholds or Thresholds()
    start = float(history.since if window_from is None else window_from)
    spec = _spec_for(history, gpu)
    first_seen = _num(gpu.first_seen)
    all_rows = [r for r in daily_ratios(history, t)]
    rows = [r for r in all_rows if r["uuid"] == uuid]
    peer_rows: dict[str, list[Mapping[str, Any]]] = {}
    for r in all_rows:
        peer_rows.setdefault(str(r["uuid"]), []).append(r)
    busy = _busy_minutes(rows)
    card_xids = [e for e in xids if e.gpu_uuid == uuid or (
        e.gpu_uuid is None and e.node == gpu.node and e.pci_bus_id and e.pci_bus_id == gpu.pci_bus_id)]
    checks = (
        _check_spec(gpu, spec),
        _check_memory(history, gpu, spec, t),
        _check_pcie_capability(gpu, spec),
        _check_power(history, gpu, spec, t),
        _check_vbios(history, gpu, t),
        _check_memory_history(gpu, spec, first_seen, t),
        _check_xid(gpu, card_xids, xid_source, first_seen),
        _check_pcie_load(gpu, spec, busy, t),
        _check_load(history, gpu, spec, rows, peer_rows, busy, t),
    )
    with i18n.speaking("en"):  # stored with the card in English (a script reads it); shown localized
        verdict, reason = overall(checks)
    used = {k: v for k, v in t.to_dict().items() if k.startswith(_THRESHOLD_PREFIXES)}
    return IntakeResult(
        uuid=uuid, node=gpu.node, verdict=verdict, reason=reason, checks=checks, now=float(history.now),
        window_from=start, window_to=float(history.now), index=gpu.index, model=gpu.name, serial=gpu.serial,
        vbios=gpu.inv("vbios"), pci_bus_id=gpu.pci_bus_id, board_part_number=gpu.inv("board_part_number"),
        first_seen=first_seen, new=first_seen is not None and start <= first_seen <= float(history.now),
        spec=_spec_summary(spec) if spec else None, thresholds=used)


def new_cards(history: FleetHistory, node: str, window_from: float) -> list[GpuHistory]:
    """The cards on ``node`` first seen within [window_from, now]: the cards new to the fleet."""
    out = []
    for g in history.gpus_on(node):
        seen = _num(g.first_seen)
        if seen is not None and window_from <= seen <= history.now:
            out.append(g)
    return sorted(out, key=lambda g: (g.index if g.index is not None else 1 << 30, g.uuid))


# -- the window ----------------------------------------------------------------------

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": HOUR_S, "d": DAY_S, "w": 7 * DAY_S}


def _time(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        value = _dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise KnownError(Text(N_("--window: {text} is not a time (Unix seconds or ISO 8601 UTC)"),
                              text=repr(text))) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.timezone.utc)
    return value.timestamp()


def parse_window(text: str, now: float) -> tuple[float, float]:
    """(from, to) of ``--window``: a duration back from ``now`` ("24h", "7d") or ``FROM..TO`` (each Unix
    seconds or ISO 8601 UTC; an empty TO is ``now``).

    Raises:
        KnownError: anything else, an empty or inverted window, or one that ends after ``now``.
    """
    if ".." in text:
        a, _, b = text.partition("..")
        lo = _time(a)
        hi = _time(b) if b.strip() else now
    else:
        m = _DURATION.match(text)
        if not m:
            raise KnownError(Text(N_("--window {text}: expected a duration such as 24h or 7d, or FROM..TO"),
                                  text=repr(text)))
        lo, hi = now - float(m.group(1)) * _UNIT_S[m.group(2).lower()], now
    if not lo < hi:
        raise KnownError(Text(N_("--window {text}: the window is empty (it must start before it ends)"),
                              text=repr(text)))
    if hi > now + 60:
        raise KnownError(Text(N_("--window {text}: it ends after now"), text=repr(text)))
    if hi - lo > 366 * DAY_S:
        raise KnownError(Text(N_("--window {text}: at most a year"), text=repr(text)))
    return lo, hi


# -- the glue: load, judge, store ------------------------------------------------------


@dataclass(frozen=True)
class IntakeRun:
    """What :func:`run_intake` did: the results, whether they were stored, and a note for the user."""

    results: tuple[IntakeResult, ...]
    saved: bool
    note: str = ""
    save_error: str | None = None


def _pick(history: FleetHistory, node: str, gpu: str | None, window_from: float) -> tuple[list[GpuHistory], str]:
    if history.node(node) is None and not history.gpus_on(node):
        known = sorted(n.name for n in history.nodes)
        names = (", ".join(known[:20]) + (" …" if len(known) > 20 else "")) if known else Text(N_("(none)"))
        raise KnownError(Text(N_("unknown node {node}; known nodes: {names}"), node=repr(node), names=names))
    if gpu is None:
        cards = new_cards(history, node, window_from)
        if not cards:
            return [], Text(N_("no card of {node} was first seen in the window (since {when}); name one with --gpu "
                               "INDEX|UUID to check it anyway"), node=node, when=Moment(window_from))
        return cards, ""
    on_node = history.gpus_on(node)
    found = [g for g in on_node if g.uuid == gpu or (g.index is not None and str(g.index) == gpu.strip())]
    if not found:
        other = history.gpu(gpu)
        if other is not None:
            raise KnownError(Text(N_("--gpu {gpu}: that card is on {other}, not {node}"), gpu=gpu, other=other.node,
                                  node=node))
        listed = ", ".join(f"{g.index}" for g in on_node if g.index is not None)
        raise KnownError(Text(N_("--gpu {gpu}: no such card on {node} (indices: {listed}; or give a UUID)"), gpu=gpu,
                              node=node, listed=listed or Text(N_("none"))))
    return found[:1], ""


def run_intake(db: Any, now: float, node: str, gpu: str | None = None, window: tuple[float, float] | None = None,
               fleet: Any = None, *, save: bool = True) -> IntakeRun:
    """Check the cards of ``node`` new to the fleet in ``window`` (or card ``gpu``: index or UUID) and store
    each result with the card (``save``).

    Raises:
        KnownError: unknown node or card, invalid thresholds.
        StorageError: the database cannot be read.
    """
    from fleetmon import assess
    from fleetmon.errors import StorageError
    from storage import queries
    from storage.intake import save_intake

    lo, hi = window if window is not None else (now - DAY_S, now)
    # Telemetry only of the nodes that hold a card of a model the node has (the fleet the cards are compared
    # with): a 1,000-node fleet of mixed models is not read whole for one node's intake.
    stored = queries.gpus(db)
    models = {g.model for g in stored if g.node == node}
    nodes = sorted({g.node for g in stored if g.model in models and g.node} | {node})
    history = assess.load_history(db, hi, lo, nodes=nodes, fleet=fleet, minutes_s=min(hi - lo, DAY_S))
    cards, note = _pick(history, node, gpu, lo)
    sources = {n.name: n.xid_source for n in queries.nodes(db)}
    # The fleet's Xid events are read once, from the earliest of the cards' own starts, not once per card;
    # each card gets those since its own start, as before (evaluate keeps the card's among them).
    starts = {c.uuid: min(_num(c.first_seen) or lo, lo) for c in cards}
    xids = [EventRecord.from_dict(_plain_event(e)) for e in
            queries.events(db, since=min(starts.values(), default=lo), until=now, kinds=["xid"])]
    results = [evaluate(history, card.uuid, xids=[e for e in xids if e.ts >= starts[card.uuid]],
                        xid_source=sources.get(card.node), window_from=lo) for card in cards]
    error = None
    saved = False
    if save and results:
        try:
            for r in results:
                save_intake(db, now, r.uuid, r.verdict, node=r.node, window=(r.window_from, r.window_to),
                            result=r.stored())
            saved = True
        except StorageError as exc:  # the result stands; only its record is missing
            error = str(exc)
    return IntakeRun(tuple(results), saved, note, error)


def _plain_event(e: Any) -> dict[str, Any]:
    return {"ts": e.ts, "node": e.node, "kind": e.kind, "gpu_uuid": e.gpu_uuid, "pci_bus_id": e.pci_bus_id,
            "code": e.code, "message": e.message or "", "data": dict(e.data or {})}


# -- rendering -----------------------------------------------------------------------


def _when(ts: float | None) -> str:
    """A moment for people, in the reader's locale ("2026-12-03 15:30 UTC"; zh_CN "2026年12月3日 15:30 UTC")."""
    if ts is None:
        return "—"
    return f"{i18n.when(float(ts))} UTC"


def _where(r: IntakeResult) -> str:
    return f"{r.node} gpu{r.index}" if r.index is not None else r.node


def result_text(results: Sequence[IntakeResult], note: str = "") -> str:
    """Plain text for the terminal: per card the verdict, its reason and every check."""
    from fleetmon.health.wording import cols, ljust  # terminal columns: a CJK character takes two

    out: list[str] = []
    if note:
        out.append(localized(note))
    for r in results:
        out.append(f"{_where(r)}  {r.model}  {r.uuid}" + (
            "  " + _("serial {serial}").format(serial=r.serial) if r.serial else ""))
        window = _("{start} .. {end}").format(start=_when(r.window_from), end=_when(r.window_to))
        if r.new:
            head = _("  intake: {verdict}  (new to the fleet; window {window})")
        else:
            head = _("  intake: {verdict}  (on request; window {window})")
        out.append(head.format(verdict=status_word(r.verdict), window=window))
        out.append(f"  {_reason(r)}")
        titles = [_(c.title) for c in r.checks]
        width = max(cols(t) for t in titles) if r.checks else 10
        shown_w = max(11, *(cols(status_word(s)) for s in STATUSES))
        for c, title in zip(r.checks, titles):
            out.append(f"    {ljust(status_word(c.status), shown_w)}  {ljust(title, width)}  {localized(c.reason)}")
        out.append("")
    return "\n".join(out) + ("\n" if out and out[-1] != "" else "")


def results_json(results: Sequence[IntakeResult], note: str = "") -> str:
    """The results as JSON (schema 1): ``{"schema", "note", "intakes": [IntakeResult.to_dict, ...]}``."""
    return json.dumps({"schema": SCHEMA, "note": note or None, "intakes": [r.to_dict() for r in results]},
                      indent=2, default=str) + "\n"


def _reason(r: IntakeResult) -> str:
    """The verdict's reason in the reader's language (made again from the checks; English: as stored)."""
    if i18n.current_language() == "en" or not r.checks:
        return r.reason
    return overall(r.checks)[1]


def exit_status(results: Sequence[IntakeResult]) -> int:
    """2 when a card was rejected (so a script can stop), else 0; 1 is left for errors."""
    return 2 if any(r.verdict == REJECT for r in results) else 0


_BADGE = {PASS: "pass", CONDITIONAL: "warn", REJECT: "fail", UNKNOWN: "info"}


def _badge(status: str) -> str:
    from fleetmon.health.render import esc as _e  # the report's escaping (control characters shown, HTML escaped)

    word = status_word(status)
    return f'<span class="b {_BADGE.get(status, "info")}">{_e(word)}</span>'


def certificate_html(r: IntakeResult) -> str:
    """The intake certificate: one self-contained, printable HTML page (inline CSS, every value escaped), in the
    reader's language (labels, verdicts, the checks' titles and reasons; identifiers as they are)."""
    from fleetmon import __version__
    from fleetmon.health.render import CSS as _CSS, esc as _e  # one look for every printable page of fleetmon

    spec = r.spec or {}
    if spec:
        template = (_("{name} (user spec): TDP {tdp} W · {memory} GB {memory_type} · boost {boost} MHz · PCIe "
                      "Gen{gen} x{width} — {source}") if spec.get("origin", "catalog") != "catalog" else
                    _("{name} (catalog): TDP {tdp} W · {memory} GB {memory_type} · boost {boost} MHz · PCIe "
                      "Gen{gen} x{width} — {source}"))
        nominal = template.format(name=spec.get("name"), tdp=spec.get("tdp_w"), memory=spec.get("memory_gb"),
                                  memory_type=spec.get("memory_type"), boost=spec.get("boost_clock_mhz") or "—",
                                  gen=spec.get("pcie_gen"), width=spec.get("pcie_width"), source=spec.get("source"))
    else:
        nominal = _("not in the spec catalog")
    first = (_("{when} (new to the fleet)") if r.new else _("{when} (intake on request)")).format(
        when=_when(r.first_seen))
    ident = [
        (_("Model"), r.model), (_("Serial"), r.serial or "—"), ("UUID", r.uuid), ("VBIOS", r.vbios or "—"),
        (_("Board part number"), r.board_part_number or "—"), (_("Where"), f"{_where(r)} · {r.pci_bus_id or '—'}"),
        (_("First seen"), first), (_("Nominal spec"), nominal),
    ]
    title = _("Intake certificate — {card}").format(card=_where(r))
    card_h, checks_h, thresholds_h = _("Card"), _("Checks"), _("Thresholds")
    heads = (_("Check"), _("Result"), _("Reason"))
    body = [
        f"<h1>{_e(title)}</h1>",
        '<p class="meta">' + _e(_("{model} · {uuid} · judged {now} over {start} .. {end}").format(
            model=r.model, uuid=r.uuid, now=_when(r.now), start=_when(r.window_from), end=_when(r.window_to))) + "</p>",
        '<p style="font-size:1.3em">' + _e(_("Verdict:")) + f" {_badge(r.verdict)}</p>",
        f"<p>{_e(_reason(r))}</p>",
        f"<h2>{_e(card_h)}</h2>",
        '<table><tbody>' + "".join(f'<tr><th class="nw">{_e(k)}</th><td class="tok">{_e(v)}</td></tr>'
                                   for k, v in ident) + "</tbody></table>",
        f"<h2>{_e(checks_h)}</h2>",
        "<table><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in heads) + "</tr></thead><tbody>",
    ]
    for c in r.checks:
        req = "" if c.required else ' <span class="small">' + _e(_("(not required)")) + "</span>"
        body.append(f'<tr><td class="nw">{_e(_(c.title))}{req}</td><td class="nw">{_badge(c.status)}</td>'
                    f"<td>{_e(localized(c.reason))}</td></tr>")
    body.append("</tbody></table>")
    body.append('<p class="small">' + _e(_("Rule: REJECT when any check rejects; CONDITIONAL when any check is "
                                            "conditional or a required check could not be made (missing data is not "
                                            "health); otherwise PASS.")) + "</p>")
    if r.thresholds:
        body.append(f"<h2>{_e(thresholds_h)}</h2>")
        body.append('<p class="small">' + " · ".join(f"<code>{_e(k)}</code> = {_e(v)}"
                                                   for k, v in sorted(r.thresholds.items())) + "</p>")
    body.append('<p class="small">' + _e(_("fleetmon {version} · override thresholds in the fleet file's "
                                            "[thresholds] (docs/findings.md) · signature: ____________________").format(
        version=__version__)) + "</p>")
    from fleetmon.health.render_html import page

    return page(_("Intake certificate {card} {uuid}").format(card=_where(r), uuid=r.uuid), body, _CSS)
