"""PCIe rules: links below their maximum under load, replay counters growing (rules P1, P2).

Link rules look at busy minutes only (links power down at idle).
"""

from __future__ import annotations

from fleetmon import specs
from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory
from fleetmon.health.rules.helpers import (
    Episode,
    condition_resolve_s,
    effective_thresholds,
    episodes,
    first_known,
    gpu_finding,
    gpu_label,
    known_min,
    last_known,
    slots_of,
)
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text

__all__ = ["check_pcie_link", "check_pcie_replay"]


def check_pcie_link(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """PCIe link below its maximum while busy (rule P2; never at idle).

    Warning after ``pcie_degraded_minutes`` consecutive busy minutes with the
    busy link (``pcie_gen_busy_min`` / ``pcie_width_busy_min``) below the
    maximum the device and slot support (``pcie_max_gen`` /
    ``pcie_max_width``); idle minutes neither count nor break a run. Info
    when the slot or riser caps the link below what the card supports
    (``pcie_max_gen < pcie_gpu_max_gen``): configuration, not failure.
    """
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        max_gen, max_width = gpu.inv("pcie_max_gen"), gpu.inv("pcie_max_width")
        gpu_gen, gpu_width = gpu.inv("pcie_gpu_max_gen"), gpu.inv("pcie_gpu_max_width")
        if (max_gen and gpu_gen and max_gen < gpu_gen) or (max_width and gpu_width and max_width < gpu_width):
            out.append(gpu_finding(
                history, gpu, "pcie-link-degraded", "info", history.since, history.now,
                {"max_gen": max_gen, "max_width": max_width, "gpu_max_gen": gpu_gen,
                 "gpu_max_width": gpu_width},
                N_("The slot, riser or switch caps this link below what the card supports: move the "
                   "card or accept the cap"),
                Text(N_("{gpu}: slot caps the link at Gen{gen} x{width} (card: Gen{card_gen} x{card_width})"),
                     gpu=gpu_label(gpu), gen=max_gen, width=max_width, card_gen=gpu_gen,
                     card_width=gpu_width or max_width), condition_resolve_s(t),
                discriminator="capped", open_now=True,
            ))
        if not max_gen and not max_width:
            continue
        tl = gpu.timeline()
        gens, widths = tl.col("pcie_gen_busy_min"), tl.col("pcie_width_busy_min")
        low_gen, low_width = known_min(gens), known_min(widths)
        if not ((max_gen and low_gen is not None and low_gen < max_gen)
                or (max_width and low_width is not None and low_width < max_width)):
            continue
        ts, dur = tl.ts, tl.dur
        busy, busy_minutes = tl.col("busy_n"), tl.col("busy_minutes")
        runs: list[tuple[int, int, float]] = []  # (first row, last row, busy minutes)
        start = None
        run_minutes = 0.0
        last_row = 0
        worst_gen, worst_width = max_gen, max_width
        for i in range(len(tl)):
            g, w = gens[i], widths[i]
            if not busy[i] or (g is None and w is None):
                continue
            minutes = 1.0 if dur[i] <= 60 else float(busy_minutes[i] if busy_minutes[i] is not None else 60)
            bad = (max_gen and g is not None and g < max_gen) or (max_width and w is not None and w < max_width)
            if bad:
                if start is None:
                    start, run_minutes = i, 0.0
                run_minutes += minutes
                last_row = i
                if g is not None and (worst_gen is None or g < worst_gen):
                    worst_gen = g
                if w is not None and (worst_width is None or w < worst_width):
                    worst_width = w
            elif start is not None:
                runs.append((start, last_row, run_minutes))
                start = None
        if start is not None:
            runs.append((start, last_row, run_minutes))
        eps: list[Episode] = []
        for a, b, minutes in runs:
            if minutes + 1e-9 < t.pcie_degraded_minutes:
                continue
            s, e = float(ts[a]), float(ts[b]) + float(dur[b])
            if eps and s <= eps[-1].end + condition_resolve_s(t):
                eps[-1] = Episode(eps[-1].start, e, eps[-1].amount + minutes, eps[-1].rows + b - a + 1,
                                  float(ts[b]))
            else:
                eps.append(Episode(s, e, minutes, b - a + 1, float(ts[b])))
        if not eps:
            continue
        spec = history.spec_of(gpu)
        ratio = specs.pcie_ratio(worst_gen, worst_width, spec) if worst_gen and worst_width else None
        evidence = {
            "gen": worst_gen, "width": worst_width, "max_gen": max_gen, "max_width": max_width,
            "busy_minutes": int(sum(e.amount for e in eps)), "episodes": len(eps),
            "bandwidth_ratio": round(ratio, 3) if ratio is not None else None,
            "slots": slots_of(gpu, eps),
        }
        out.append(gpu_finding(
            history, gpu, "pcie-link-degraded", "warning", eps[0].start, eps[-1], evidence,
            N_("Reseat the card; check or replace the riser/extender cable; check the slot's BIOS "
               "link settings; run system-side PCIe diagnostics"),
            Text(N_("{gpu}: PCIe link at Gen{gen} x{width} under load (max Gen{max_gen} x{max_width})"),
                 gpu=gpu_label(gpu), gen=worst_gen, width=worst_width, max_gen=max_gen, max_width=max_width),
            condition_resolve_s(t),
            magnitude=float((max_gen or 0) - (worst_gen or 0)) * 100 + float((max_width or 0) - (worst_width or 0)),
        ))
    return out


def check_pcie_replay(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """PCIe replay counter growing (rule P1; replays/min).

    Warning when a row's rate exceeds ``pcie_replay_per_min`` (DCGM's 8 per
    minute); info when the counter grew by ``pcie_replay_info_count`` in the
    window without ever exceeding the rate.
    """
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        tl = gpu.timeline()
        values = tl.col("pcie_replay")
        if not any(tl.col("pcie_replay_delta")) and first_known(values) == last_known(values):
            continue
        delta = gpu.placed_delta("pcie_replay")  # an increase across a move counts where it was counted
        ts, dur = tl.ts, tl.dur
        grown = [(i, d) for i, d in enumerate(delta) if d > 0]
        if not grown:
            continue
        total = sum(d for _, d in grown)
        rates = [(i, d / (float(dur[i]) / 60.0)) for i, d in grown]
        over = [(i, 1.0) for i, r in rates if r > t.pcie_replay_per_min]
        peak = max(r for _, r in rates)
        if over:
            eps = episodes(ts, dur, over, 1.0)
            evidence = {"max_per_min": round(peak, 2), "total": int(total), "minutes_over": len(over),
                        "threshold_per_min": t.pcie_replay_per_min, "slots": slots_of(gpu, eps)}
            out.append(gpu_finding(
                history, gpu, "pcie-replay", "warning", eps[0].start, eps[-1], evidence,
                N_("Reconnect the PCIe card; check the riser/extender; run system-side PCIe "
                   "diagnostics; if the fault is on the board, run the field diagnostic"),
                Text(N_("{gpu}: {rate:.0f} PCIe replays/min (limit {limit:g})"), gpu=gpu_label(gpu), rate=peak,
                     limit=t.pcie_replay_per_min),
                condition_resolve_s(t), magnitude=peak,
            ))
        elif total >= t.pcie_replay_info_count:
            eps = [Episode(float(ts[grown[0][0]]), float(ts[grown[-1][0]]) + float(dur[grown[-1][0]]),
                           total, len(grown), float(ts[grown[-1][0]]))]
            out.append(gpu_finding(
                history, gpu, "pcie-replay", "info", eps[0].start, eps[0].end,
                {"max_per_min": round(peak, 2), "total": int(total), "minutes_over": 0,
                 "slots": slots_of(gpu, eps)},
                N_("The replay counter grows slowly: watch it; check the riser if it keeps growing"),
                Text(N_("{gpu}: {count} PCIe replays in the window"), gpu=gpu_label(gpu), count=int(total)),
                condition_resolve_s(t),
                magnitude=float(total),
            ))
    return out
