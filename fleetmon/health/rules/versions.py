"""Version rules: driver, CUDA-driver and VBIOS versions that differ from their peers."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence

from typing import Any

from fleetmon import specs
from fleetmon.fields import DEFAULT_VENDOR
from fleetmon.vocab import GpuState
from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory, GpuHistory, GroupExpect, NodeHistory
from fleetmon.health.rules.helpers import (
    condition_resolve_s,
    effective_thresholds,
    gpu_finding,
    gpu_label,
    node_finding,
)
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text

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


def _vendor(node: NodeHistory) -> str:
    """The node's vendor (a node stored before vendors were recorded is NVIDIA's)."""
    return node.vendor or DEFAULT_VENDOR


_RUNTIME_WORD = {"nvidia": "CUDA driver", "amd": "ROCm", "hygon": "DTK/ROCm", "huawei": "CANN",
                 "intel": "SynapseAI", "mthreads": "MUSA"}
"""What a vendor's runtime version is called in a finding."""

Circle = tuple[Any, ...]
"""The nodes one version is judged among: ``(group, vendor[, model])`` or ``("", vendor, model)``."""


def _circle(node: NodeHistory, vendor: str, model: str, attr: str) -> Circle:
    """Who ``node``'s ``attr`` is compared with.

    Driver and runtime: a grouped node with its group's nodes of the same vendor (a group is
    one driver set per vendor by design); an ungrouped one with the ungrouped nodes of the
    same vendor and GPU model (a mixed pool runs one driver set per kind of card). Firmware
    is per model as well inside a group (each model has its own firmware line).
    """
    if node.group:
        return (node.group, vendor, model) if attr == "firmware_version" else (node.group, vendor)
    return ("", vendor, model)


def _declared(expect: GroupExpect | None, attr: str, vendor: str, vendors_in_group: set[str]) -> str | None:
    """The group's declared version for ``attr`` on a node of ``vendor``.

    The ``[[group]]`` keys ``expected_driver``, ``expected_cuda_driver`` (NVIDIA's runtime),
    ``expected_runtime`` (any vendor's runtime; on NVIDIA nodes when ``expected_cuda_driver``
    is not set) and ``expected_firmware`` hold for every node of a one-vendor group; in a
    group of several vendors, for its NVIDIA nodes only (the first keys' meaning): the others
    are judged by their vendor's majority in the group.
    """
    if expect is None:
        return None
    if len(vendors_in_group) > 1 and vendor != DEFAULT_VENDOR:
        return None
    if attr == "driver_version":
        return expect.expected_driver
    if attr == "runtime_version":
        if vendor == DEFAULT_VENDOR and expect.expected_cuda_driver:
            return expect.expected_cuda_driver
        return expect.expected_runtime
    if attr == "firmware_version":
        return expect.expected_firmware
    return None


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
    """A node whose driver, runtime or firmware differs from its peers': one finding per node (warning).

    Peers (:func:`_circle`): the node's group, of the node's vendor, compared with the group's
    ``expected_driver`` / ``expected_cuda_driver`` (:func:`_declared`), or with the majority
    when none is set; an ungrouped node is compared with the ungrouped nodes of the same
    vendor and GPU model (never with the fleet at large: a mixed pool runs one driver per
    kind of card, and an AMD node is no driver mismatch against NVIDIA nodes). A tie gives
    info findings. The versions are judged in order (driver, then the runtime: CUDA driver,
    ROCm, CANN, ...; then the node's firmware, per model), and only the first that differs
    makes the finding: a different driver implies the runtime it ships. The advice never
    names a driver older than the oldest that supports the node's cards
    (:meth:`fleetmon.specbook.SpecBook.min_driver`: a ``[[spec]]`` naming the architecture
    of a model the catalog lacks counts).
    """
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    changed: dict[str, float] = {}
    for c in history.inventory_changes:
        if c.kind == "driver_changed":
            changed[c.node] = c.ts
    model_of = {n.name: _node_model(history, n) for n in history.nodes}
    vendor_of = {n.name: _vendor(n) for n in history.nodes}
    group_vendors: dict[str, set[str]] = defaultdict(set)
    for n in history.nodes:
        if n.group:
            group_vendors[n.group].add(vendor_of[n.name])
    # Nodes judged together share their peers and baselines: each is computed once per
    # circle, not once per node (a 1,000-node fleet would count a million versions).
    members: dict[Circle, list[NodeHistory]] = defaultdict(list)
    for n in history.nodes:
        for attr in ("driver_version", "firmware_version"):
            members[_circle(n, vendor_of[n.name], model_of[n.name], attr)].append(n)
    baselines: dict[tuple[Circle, str], tuple[str | None, str, Counter[str]]] = {}
    for node in sorted(history.nodes, key=lambda n: n.name):
        vendor, model = vendor_of[node.name], model_of[node.name]
        expect = history.groups.get(node.group or "")
        nvidia = vendor == DEFAULT_VENDOR
        checks: list[tuple[str, str, str]] = [("driver_version", "driver", Text(N_("driver")))]
        if nvidia:
            checks.append(("cuda_driver_version", "cuda", Text(N_("CUDA driver"))))
        else:
            checks.append(("runtime_version", "runtime", _RUNTIME_WORD.get(vendor, "runtime")))
        checks.append(("firmware_version", "firmware", Text(N_("firmware"))))
        for attr, label, word in checks:
            version = getattr(node, attr)
            if not version:
                continue
            version = str(version)
            circle = _circle(node, vendor, model, "firmware_version" if attr == "firmware_version" else attr)
            declared = _declared(expect, "runtime_version" if attr == "cuda_driver_version" else attr, vendor,
                                 group_vendors.get(node.group or "", set()))
            if (circle, attr) not in baselines:
                baselines[(circle, attr)] = _baseline(members[circle], attr, declared)
            expected, basis, counts = baselines[(circle, attr)]
            if basis == "none" or version == expected or (expected is None and len(counts) < 2):
                continue
            severity = "warning" if expected is not None else "info"
            group_word: str
            if node.group:
                several = len(group_vendors.get(node.group, ())) > 1
                group_word = (Text(N_("group {group} ({vendor} nodes)"), group=node.group, vendor=vendor) if several
                              else Text(N_("group {group}"), group=node.group))
                if attr == "firmware_version" and model:
                    group_word = Text(N_("{where}, {model}"), where=group_word, model=model)
            else:
                group_word = (Text(N_("ungrouped {model} nodes"), model=model) if model
                              else Text(N_("ungrouped {vendor} nodes"), vendor=vendor))
            evidence: dict[str, object] = {
                "field": label, "version": version, "expected": expected, "basis": basis,
                "group": node.group or None, "peers": "group" if node.group else "model", "model": model or None,
                "vendor": vendor, "versions": dict(sorted(counts.items()))}
            if label == "driver" and node.cuda_driver_version and nvidia:
                evidence["cuda_version"] = str(node.cuda_driver_version)
            if label == "driver" and node.runtime_version and not nvidia:
                evidence["runtime_version"] = str(node.runtime_version)
            floor = history.book().min_driver(model) if (model and label == "driver") else None
            if floor is not None:
                evidence["min_driver"] = floor.version
            too_old = (floor is not None and expected is not None
                       and specs.version_key(expected) < specs.version_key(floor.version))
            if too_old and floor is not None:
                action = Text(N_("Keep {version}: {expected} is older than the oldest driver for {architecture} "
                                 "cards ({floor}); raise the expected driver of {where} to at least {floor}, or put "
                                 "this node in its own group"), version=version, expected=expected,
                              architecture=floor.architecture, floor=floor.version, where=group_word)
            elif expected is not None:
                action = Text(N_("Install the {word} of {where} ({expected})"), word=word, where=group_word,
                              expected=expected)
            elif label == "driver" and nvidia:
                action = Text(N_("Pick one {word} version for {where} and set it as expected_driver of their group "
                                 "in the fleet file"), word=word, where=group_word)
            else:
                action = Text(N_("Pick one {word} version for {where}"), word=word, where=group_word)
            if expected is None:
                summary = Text(N_("{node}: {word} {version}, no majority among {where}"), node=node.name, word=word,
                               version=version, where=group_word)
            elif basis == "expected":
                summary = Text(N_("{node}: {word} {version}, expected {expected} (declared for {where})"),
                               node=node.name, word=word, version=version, expected=expected, where=group_word)
            else:
                summary = Text(N_("{node}: {word} {version}, expected {expected} (majority of {where})"),
                               node=node.name, word=word, version=version, expected=expected, where=group_word)
            out.append(node_finding(
                history, node.name, "driver-mismatch", severity,
                changed.get(node.name, history.since), history.now, evidence, action,
                summary, condition_resolve_s(t), discriminator=label, open_now=True,
            ))
            break  # one finding per node: a different driver implies the runtime it ships
    return out


def check_vbios(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """A card's VBIOS (or firmware) differs from the majority of its model in its group (warning).

    The model is the card's name, so cards of two vendors are never peers. Besides the VBIOS,
    the card's ``firmware_version`` (an Ascend NPU's firmware, ``npu-smi info -t board``) is
    compared the same way (``discriminator`` ``firmware``: a second finding of the card), and a
    card whose own tool says its driver and firmware do not match (npu-smi ``-t board``'s
    Compatibility NOK, the ``compatibility`` signal) is one too (``discriminator`` ``compatibility``).
    """
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    for key, word, discriminator in (("vbios", "VBIOS", ""), ("firmware_version", Text(N_("firmware")), "firmware")):
        groups: dict[tuple[str, str], list[GpuHistory]] = defaultdict(list)
        for gpu in history.gpus:
            if gpu.state == GpuState.MISSING or not gpu.inv(key):
                continue
            node = history.node(gpu.node)
            groups[((node.group if node else None) or "", gpu.name)].append(gpu)
        for (group, model), cards in sorted(groups.items()):
            expected, counts = _majority([str(g.inv(key)) for g in cards])
            if len(counts) < 2:
                continue
            for gpu in cards:
                version = str(gpu.inv(key))
                if version == expected:
                    continue
                severity = "warning" if expected else "info"
                evidence: dict[str, Any] = {"vbios": version} if key == "vbios" else {"field": "firmware",
                                                                                      "firmware": version}
                evidence.update({"expected": expected, "group": group or None, "peers": dict(sorted(counts.items()))})
                out.append(gpu_finding(
                    history, gpu, "vbios-mismatch", severity, history.since, history.now, evidence,
                    Text(N_("Flash the {word} used by the other {model} cards ({expected}) or record why this card "
                            "differs"), word=word, model=model, expected=expected) if expected else
                    Text(N_("Cards of {model} in group {group} run different {word} versions: pick one"), model=model,
                         group=group or Text(N_("(none)")), word=word),
                    Text(N_("{gpu}: {word} {version}, peers run {expected}"), gpu=gpu_label(gpu), word=word,
                         version=version, expected=expected or Text(N_("a mix"))),
                    condition_resolve_s(t), discriminator=discriminator, open_now=True,
                ))
    for gpu in history.gpus:  # the tool's own verdict on the driver and the card's firmware (npu-smi)
        if gpu.signal("compatibility") != "NOK":
            continue
        node = history.node(gpu.node)
        since = gpu.signal_since("compatibility") or history.since
        out.append(gpu_finding(
            history, gpu, "vbios-mismatch", "warning", since, history.now,
            {"field": "compatibility", "compatibility": "NOK", "firmware": gpu.inv("firmware_version"),
             "driver": node.driver_version if node else None, "since": since},
            N_("Install the firmware that goes with the node's driver (Huawei's version mapping), or the driver "
               "that goes with the firmware"),
            Text(N_("{gpu}: driver and firmware do not match (npu-smi Compatibility NOK)"), gpu=gpu_label(gpu)), condition_resolve_s(t), discriminator="compatibility", open_now=True,
        ))
    return out
