"""Version rules: driver, CUDA-driver and VBIOS versions that differ from their peers."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from fleetmon.vocab import GpuState
from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory, GpuHistory, NodeHistory
from fleetmon.health.rules.helpers import (
    condition_resolve_s,
    effective_thresholds,
    gpu_finding,
    gpu_label,
    node_finding,
)
from fleetmon.health.thresholds import Thresholds

__all__ = ["check_driver_versions", "check_vbios"]


def _majority(values: Sequence[str]) -> tuple[str | None, Counter[str]]:
    counts = Counter(values)
    if not counts:
        return None, counts
    top = counts.most_common(2)
    if len(top) == 2 and top[0][1] == top[1][1]:
        return None, counts
    return top[0][0], counts


def check_driver_versions(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Driver and CUDA-driver versions that differ from the group (warning).

    Compared with the group's ``expected_driver`` / ``expected_cuda_driver``,
    or with the group's majority when none is set (a tie gives info findings).
    Nodes without a group are compared among themselves.
    """
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    by_group: dict[str, list[NodeHistory]] = defaultdict(list)
    for node in history.nodes:
        by_group[node.group or ""].append(node)
    changed: dict[str, float] = {}
    for c in history.inventory_changes:
        if c.kind == "driver_changed":
            changed[c.node] = c.ts
    for group, nodes in sorted(by_group.items()):
        expect = history.groups.get(group)
        for attr, label, expected_attr in (("driver_version", "driver", "expected_driver"),
                                           ("cuda_driver_version", "cuda", "expected_cuda_driver")):
            versions = [str(getattr(n, attr)) for n in nodes if getattr(n, attr)]
            expected = getattr(expect, expected_attr) if expect else None
            basis = "expected"
            counts: Counter[str] = Counter(versions)
            if expected is None:
                if len(versions) < 2:
                    continue
                expected, counts = _majority(versions)
                basis = "majority"
            for node in nodes:
                version = getattr(node, attr)
                if not version:
                    continue
                version = str(version)
                if expected is not None and version == str(expected):
                    continue
                if expected is None and len(counts) < 2:
                    continue
                severity = "warning" if expected is not None else "info"
                word = "CUDA driver" if label == "cuda" else "driver"
                summary = (f"{node.name}: {word} {version}, group {group or '(none)'} "
                           + (f"expects {expected}" if expected else "has no majority"))
                out.append(node_finding(
                    history, node.name, "driver-mismatch", severity,
                    changed.get(node.name, history.since), history.now,
                    {"field": label, "version": version, "expected": expected, "basis": basis,
                     "group": group or None, "versions": dict(sorted(counts.items()))},
                    f"Install the group's {word} ({expected})" if expected else
                    f"Pick one {word} version for group {group or '(none)'} and set it as "
                    "expected_driver in the fleet file",
                    summary, condition_resolve_s(t), discriminator=label, open_now=True,
                ))
    return out


def check_vbios(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """A card's VBIOS differs from the majority of its model in its group (warning)."""
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    groups: dict[tuple[str, str], list[GpuHistory]] = defaultdict(list)
    for gpu in history.gpus:
        if gpu.state == GpuState.MISSING or not gpu.inv("vbios"):
            continue
        node = history.node(gpu.node)
        groups[((node.group if node else None) or "", gpu.name)].append(gpu)
    for (group, model), cards in sorted(groups.items()):
        expected, counts = _majority([str(g.inv("vbios")) for g in cards])
        if len(counts) < 2:
            continue
        for gpu in cards:
            vbios = str(gpu.inv("vbios"))
            if vbios == expected:
                continue
            severity = "warning" if expected else "info"
            out.append(gpu_finding(
                history, gpu, "vbios-mismatch", severity, history.since, history.now,
                {"vbios": vbios, "expected": expected, "group": group or None,
                 "peers": dict(sorted(counts.items()))},
                f"Flash the VBIOS used by the other {model} cards ({expected}) or record why "
                "this card differs" if expected else
                f"Cards of {model} in group {group or '(none)'} run different VBIOS versions: "
                "pick one", f"{gpu_label(gpu)}: VBIOS {vbios}, peers run {expected or 'a mix'}",
                condition_resolve_s(t), open_now=True,
            ))
    return out
