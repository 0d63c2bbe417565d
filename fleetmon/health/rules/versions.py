"""Version rules: driver, CUDA-driver and VBIOS versions that differ from their peers."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from fleetmon import specs
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


def _node_model(history: FleetHistory, node: NodeHistory) -> str:
    """The model most of the node's present cards are ("" without cards; ties: the first by name)."""
    models = Counter(g.name for g in history.gpus_on(node.name) if g.state != GpuState.MISSING and g.name)
    if not models:
        return ""
    return sorted(models.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def _peers(history: FleetHistory, node: NodeHistory, model_of: dict[str, str]) -> tuple[list[NodeHistory], str]:
    """The nodes ``node`` is judged with, and how they were chosen ("group" or "model").

    A grouped node is judged with its group (a group is one driver set by
    design); an ungrouped one with the ungrouped nodes whose cards are the
    same model (a mixed pool runs one driver set per kind of card).
    """
    if node.group:
        return [n for n in history.nodes if n.group == node.group], "group"
    model = model_of[node.name]
    return [n for n in history.nodes if not n.group and model_of[n.name] == model], "model"


def _baseline(peers: Sequence[NodeHistory], attr: str, declared: str | None) -> tuple[str | None, str, Counter[str]]:
    """``(expected, basis, counts)``: the declared version, else the peers' majority (None on a tie)."""
    versions = [str(getattr(n, attr)) for n in peers if getattr(n, attr)]
    counts: Counter[str] = Counter(versions)
    if declared is not None:
        return str(declared), "expected", counts
    if len(versions) < 2:
        return None, "none", counts
    expected, counts = _majority(versions)
    return expected, "majority", counts


def check_driver_versions(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """A node whose driver (or CUDA driver) differs from its peers: one finding per node (warning).

    Peers: the node's group, compared with its ``expected_driver`` /
    ``expected_cuda_driver``, or with the group's majority when none is set;
    an ungrouped node is compared with the ungrouped nodes of the same GPU
    model (never with the fleet at large: a mixed pool runs one driver per
    kind of card). A tie gives info findings. A different driver implies a
    different CUDA driver, so the CUDA version is only judged on its own when
    the driver matches. The advice never names a driver older than the
    oldest that supports the node's cards (:meth:`fleetmon.specbook.SpecBook.min_driver`: a ``[[spec]]``
    naming the architecture of a model the catalog lacks counts).
    """
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    changed: dict[str, float] = {}
    for c in history.inventory_changes:
        if c.kind == "driver_changed":
            changed[c.node] = c.ts
    model_of = {n.name: _node_model(history, n) for n in history.nodes}
    # Nodes judged together share their peers and baselines: each is computed once per
    # group (or model), not once per node (a 1,000-node fleet would count a million versions).
    peers_of: dict[tuple[bool, str], tuple[list[NodeHistory], str]] = {}
    baselines: dict[tuple[bool, str, str], tuple[str | None, str, Counter[str]]] = {}
    for node in sorted(history.nodes, key=lambda n: n.name):
        circle = (True, node.group) if node.group else (False, model_of[node.name])
        if circle not in peers_of:
            peers_of[circle] = _peers(history, node, model_of)
        peers, chosen_by = peers_of[circle]
        expect = history.groups.get(node.group or "")
        model = model_of[node.name]
        group_word = f"group {node.group}" if node.group else (
            f"ungrouped {model} nodes" if model else "ungrouped nodes")
        for attr, label, expected_attr in (("driver_version", "driver", "expected_driver"),
                                           ("cuda_driver_version", "cuda", "expected_cuda_driver")):
            version = getattr(node, attr)
            if not version:
                continue
            version = str(version)
            if (*circle, attr) not in baselines:
                baselines[(*circle, attr)] = _baseline(peers, attr, getattr(expect, expected_attr) if expect else None)
            expected, basis, counts = baselines[(*circle, attr)]
            if basis == "none" or version == expected or (expected is None and len(counts) < 2):
                continue
            severity = "warning" if expected is not None else "info"
            word = "CUDA driver" if label == "cuda" else "driver"
            evidence: dict[str, object] = {
                "field": label, "version": version, "expected": expected, "basis": basis,
                "group": node.group or None, "peers": chosen_by, "model": model or None,
                "versions": dict(sorted(counts.items()))}
            if label == "driver" and node.cuda_driver_version:
                evidence["cuda_version"] = str(node.cuda_driver_version)
            floor = history.book().min_driver(model) if (model and label == "driver") else None
            if floor is not None:
                evidence["min_driver"] = floor.version
            too_old = (floor is not None and expected is not None
                       and specs.version_key(expected) < specs.version_key(floor.version))
            if too_old and floor is not None:
                action = (f"Keep {version}: {expected} is older than the oldest driver for {floor.architecture} "
                          f"cards ({floor.version}); raise the expected driver of {group_word} to at least "
                          f"{floor.version}, or put this node in its own group")
            elif expected is not None:
                action = f"Install the {word} of {group_word} ({expected})"
            else:
                action = (f"Pick one {word} version for {group_word} and set it as expected_driver of "
                          "their group in the fleet file")
            if expected is None:
                summary = f"{node.name}: {word} {version}, no majority among {group_word}"
            else:
                how = "declared for" if basis == "expected" else "majority of"
                summary = f"{node.name}: {word} {version}, expected {expected} ({how} {group_word})"
            out.append(node_finding(
                history, node.name, "driver-mismatch", severity,
                changed.get(node.name, history.since), history.now, evidence, action,
                summary, condition_resolve_s(t), discriminator=label, open_now=True,
            ))
            break  # one finding per node: a different driver implies the CUDA version it ships
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
