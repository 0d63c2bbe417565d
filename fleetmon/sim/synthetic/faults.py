"""Fault injection of the synthetic history: a card being generated and what each fault does to it.

Part of :mod:`fleetmon.sim.synthetic.generate`; split out by concern.
"""

from __future__ import annotations

from typing import Any

from fleetmon.vocab import GpuState
from fleetmon.records import Status
from fleetmon.health.fleet import Placement
from fleetmon.health.series import HOUR_S, MINUTE_S
from fleetmon.sim.synthetic.model import SimFault, SimModel


# ---------------------------------------------------------------------------
# Faults


class _Card:
    """A card being generated: identity, placements and column dicts."""

    def __init__(self, uuid: str, model: SimModel, serial: str | None) -> None:
        self.uuid = uuid
        self.model = model
        self.serial = serial
        self.placements: list[Placement] = []
        self.minutes: dict[str, list[Any]] = {}
        self.hourly: dict[str, list[Any]] = {}
        self.inventory: dict[str, Any] = {}
        self.state = GpuState.OK
        self.first_seen: float = 0.0
        self.last_seen: float = 0.0
        self.present = True

    def slot_at(self, ts: float) -> Placement:
        found = self.placements[0]
        for p in self.placements:
            if p.ts <= ts:
                found = p
        return found


def _mut(cols: dict[str, list[Any]], key: str) -> list[Any]:
    """The column, copied so it can be written (shared constants stay intact)."""
    values = list(cols.get(key) or [None] * len(cols["ts"]))
    cols[key] = values
    return values


def _rows(card: _Card, fault: SimFault, cols: dict[str, list[Any]], step: int) -> list[int]:
    """Indices of the rows (of ``cols``) the fault applies to on this card."""
    ts = cols["ts"]
    out = []
    for i, t in enumerate(ts):
        if t + step <= fault.onset or (fault.until is not None and t >= fault.until):
            continue
        if fault.bound == "slot":
            place = card.slot_at(t)
            if (place.node, place.index) != (fault.node, fault.gpu):
                continue
        out.append(i)
    return out


_CAPPED_POWER = {"power_w_min": 0.93, "power_w_mean": 0.97, "power_w_max": 0.995}


def _apply(card: _Card, fault: SimFault) -> None:
    m = card.model
    p = fault.params
    for cols, step in ((card.minutes, MINUTE_S), (card.hourly, HOUR_S)):
        if not cols or not cols.get("ts"):
            continue
        rows = _rows(card, fault, cols, step)
        if not rows:
            continue
        kind = fault.kind
        busy = cols["busy_n"]
        n = cols["n"]
        if kind in ("ecc-uncorrectable", "ecc-correctable-storm", "pcie-replay"):
            keys = {"ecc-uncorrectable": ("ecc_unc_vol", "ecc_unc_agg"),
                    "ecc-correctable-storm": ("ecc_corr_vol", "ecc_corr_agg"),
                    "pcie-replay": ("pcie_replay",)}[kind]
            per_row = {"ecc-uncorrectable": 0.0,
                       "ecc-correctable-storm": float(p.get("per_min", 600)) * step / 60,
                       "pcie-replay": float(p.get("per_min", 30)) * step / 60}[kind]
            start = float(p.get("count", 1)) if kind == "ecc-uncorrectable" else 0.0
            for key in keys:
                col = _mut(cols, key)
                delta = _mut(cols, key + "_delta") if step > 60 else None
                added = 0.0
                for k, i in enumerate(rows):
                    inc = (start if k == 0 else 0.0) + per_row
                    added += inc
                    col[i] = int((col[i] or 0) + added)
                    if delta is not None:
                        delta[i] = int(inc)
                last = rows[-1]
                for i in range(last + 1, len(col)):
                    col[i] = int((col[i] or 0) + added)
        elif kind == "retired-pages":
            sbe, dbe, pend = _mut(cols, "retired_sbe"), _mut(cols, "retired_dbe"), _mut(cols, "retired_pending")
            for i in rows:
                sbe[i], dbe[i], pend[i] = int(p.get("sbe", 50)), int(p.get("dbe", 8)), 1
            if step > 60:
                _mut(cols, "retired_pending_max")
                for i in rows:
                    cols["retired_pending_max"][i] = 1
        elif kind == "row-remap":
            if p.get("failure"):
                fail, unc = _mut(cols, "remap_failure"), _mut(cols, "remap_unc")
                for i in rows:
                    fail[i], unc[i] = 1, 8
            else:
                pend, corr = _mut(cols, "remap_pending"), _mut(cols, "remap_corr")
                for i in rows:
                    pend[i], corr[i] = 1, 1
        elif kind == "gpu-lost":
            lost_col = _mut(cols, "state" if step == 60 else "lost_minutes")
            status = _mut(cols, "status")
            for key in list(cols):
                if key.endswith(("_min", "_mean", "_max")) and not key.startswith("pcie_"):
                    col = _mut(cols, key)
                    for i in rows:
                        col[i] = None
            for i in rows:
                lost_col[i] = GpuState.LOST if step == 60 else 60
                status[i] = {"power_w": Status.GPU_LOST, "temp_c": Status.GPU_LOST}
                busy[i] = 0
            if fault.until is None:
                card.state = GpuState.LOST
        elif kind == "pcie-link-degraded":
            gen_b, width_b = _mut(cols, "pcie_gen_busy_min"), _mut(cols, "pcie_width_busy_min")
            gen = _mut(cols, "pcie_gen")
            for i in rows:
                if busy[i]:
                    gen_b[i] = int(p.get("gen", 1))
                    width_b[i] = int(p.get("width", 8))
                    gen[i] = int(p.get("gen", 1))
        elif kind in ("power-brake", "power-instability"):
            pmin, pmean = _mut(cols, "power_w_min"), _mut(cols, "power_w_mean")
            for i in rows:
                if not busy[i] or pmin[i] is None:
                    continue
                pmin[i] = round(m.power_w * 0.3, 1)
                pmean[i] = round(pmean[i] * 0.8, 1)
            if kind == "power-brake":
                brake, slow = _mut(cols, "thr_hw_power_brake"), _mut(cols, "thr_hw_slowdown")
                sm = _mut(cols, "sm_clock_mhz_mean")
                for i in rows:
                    if busy[i]:
                        brake[i] = slow[i] = max(1, (busy[i] or 0) // 2)
                        if sm[i] is not None:
                            sm[i] = round(sm[i] * 0.7)
                if step > 60 and "sm_clock_busy_mhz" in cols:
                    _mut(cols, "sm_clock_busy_mhz")
        elif kind == "power-unreadable":
            status = _mut(cols, "status") if step == 60 else _mut(cols, "failed_power_w")
            keys = ("power_w_min", "power_w_mean", "power_w_max")
            for key in keys:
                col = _mut(cols, key)
                for i in rows:
                    col[i] = None
            for i in rows:
                if step == 60:
                    base = status[i] or {}
                    status[i] = {**base, "power_w": Status.FAILED}
                else:
                    status[i] = 60
        elif kind == "power-capped":
            frac = float(p.get("frac", 0.6))
            limit = round(m.power_w * frac)
            for key in ("power_limit_w_min", "power_limit_w_mean", "power_limit_w_max"):
                col = _mut(cols, key)
                for i in rows:
                    col[i] = float(limit)
            pw = {k: _mut(cols, k) for k in ("power_w_min", "power_w_mean", "power_w_max")}
            cap, sm = _mut(cols, "thr_sw_power_cap"), _mut(cols, "sm_clock_mhz_mean")
            for i in rows:
                if busy[i]:
                    for key, col in pw.items():
                        if col[i] is not None:
                            col[i] = round(limit * _CAPPED_POWER[key], 1)
                    cap[i] = busy[i]
                    if sm[i] is not None:
                        sm[i] = round(sm[i] * 0.85)
            card.inventory["power_enforced_w"] = float(limit)
        elif kind in ("thermal-throttle", "temperature-high", "fan-stopped"):
            target = m.slowdown_c + 1.5 if kind == "thermal-throttle" else m.slowdown_c - 3.0
            tmin, tmean, tmax = _mut(cols, "temp_c_min"), _mut(cols, "temp_c_mean"), _mut(cols, "temp_c_max")
            for i in rows:
                if busy[i]:
                    tmin[i], tmean[i], tmax[i] = target - 1, target, target + 0.5
                elif kind == "fan-stopped" and tmean[i] is not None:
                    tmin[i], tmean[i], tmax[i] = tmin[i] + 15, tmean[i] + 15, tmax[i] + 15
            if kind == "thermal-throttle":
                hw, sw, slow = _mut(cols, "thr_hw_thermal"), _mut(cols, "thr_sw_thermal"), _mut(cols, "thr_hw_slowdown")
                for i in rows:
                    if busy[i]:
                        hw[i] = sw[i] = slow[i] = busy[i]
            if kind == "fan-stopped":
                for key in ("fan_pct_min", "fan_pct_mean", "fan_pct_max"):
                    col = _mut(cols, key)
                    for i in rows:
                        col[i] = 0
        elif kind == "derating":
            frac = float(p.get("frac", 0.62))
            sm_keys = ["sm_clock_mhz_min", "sm_clock_mhz_mean", "sm_clock_mhz_max"]
            if step > 60:
                sm_keys.append("sm_clock_busy_mhz")
            for key in sm_keys:
                col = _mut(cols, key)
                for i in rows:
                    if busy[i] and col[i] is not None:
                        col[i] = round(col[i] * frac)
            pmean = _mut(cols, "power_w_mean")
            swcap = _mut(cols, "thr_sw_power_cap")
            for i in rows:
                if busy[i] and pmean[i] is not None:
                    pmean[i] = round(pmean[i] * 0.7, 1)
                    swcap[i] = 0
        elif kind == "gpu-missing":
            pass  # handled by truncation in generate()
        _ = n
