"""Device signal rules: what a vendor's own tool says about a device beyond the catalog's fields.

They judge each card's *current* fault signals (:mod:`fleetmon.signals`, kept by
storage from the events written on change, ``GpuHistory.signals``), not the window's
events alone: a Warning that began a month ago is still open while the latest signal
says Warning, and resolves only when a later signal says OK (a card whose signals stop
keeps its last state: missing data is not health).

* ``device-health``: the device's health state (Huawei Ascend: npu-smi's Health column
  and ``-t health``): Warning → warning, Alarm and Critical → critical, an unknown state →
  info; the error codes as printed.
* ``ecc-block``: an uncorrectable error in one RAS block of an AMD/Hygon GPU (critical,
  naming the block; an event kind: open until an operator resolves it, and back when the
  block's count grows again).
* ``ecc-deferred``: deferred ECC errors (warning, while the latest reading shows them).
* ``bad-pages-exceeded``: AMD's bad-page threshold exceeded (critical).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory, GpuHistory
from fleetmon.health.rules.helpers import condition_resolve_s, effective_thresholds, event_resolve_s, gpu_finding, gpu_label
from fleetmon.health.thresholds import Thresholds
from fleetmon.i18n import N_, Text, listing

__all__ = ["ASCEND_CODES", "ASCEND_HANDLING", "check_bad_pages", "check_device_health", "check_ecc_blocks",
           "check_ecc_deferred", "code_handling"]

_SEVERITY = {"warning": "warning", "alarm": "critical", "critical": "critical"}
"""A device health state → the finding's severity (any other state but ``ok``: info)."""

_STATE_WORDS = {"warning": "a minor alarm", "alarm": "a major alarm", "critical": "a critical alarm",
                "unknown": "a state the tool could not tell"}
"""What npu-smi's states mean (Huawei's npu-smi reference: Warning, Alarm, Critical)."""


_RESET = {"amd": "amd-smi reset -G -g <gpu>", "hygon": "hy-smi --gpureset -d <dcu>", "intel": "xpu-smi reset -d <id>"}
"""How each vendor's tool resets a device (amd-smi, hy-smi and xpu-smi references), for the advice."""


ASCEND_HANDLING: dict[str, str] = {
    "NotHandleFault": N_("no action: the fault can be ignored"),
    "RestartRequest": N_("re-run the request (inference) or the step (training)"),
    "RestartBusiness": N_("restart the job on the chip"),
    "FreeRestartNPU": N_("reset the chip, then restart the job"),
    "RestartNPU": N_("reset the chip, then restart the job"),
    "SeparateNPU": N_("isolate the chip: take it out of scheduling"),
    "SubHealthFault": N_("the chip is sub-healthy: schedule a check"),
}
"""Huawei's fault-handling levels of Ascend error codes, in words (Huawei Cloud's "NPU error code"
troubleshooting page; the levels its Ascend device plugin acts on)."""

ASCEND_CODES: dict[str, str] = {
    "80E01809": "NotHandleFault", "80E01805": "NotHandleFault", "80E21007": "NotHandleFault",
    "80E01801": "RestartBusiness",
    "80E18008": "RestartNPU", "80E18005": "RestartNPU", "80E18000": "RestartNPU",
    "80E18402": "SeparateNPU", "80E3A201": "SeparateNPU",
}
"""A few Ascend error codes and Huawei's handling level for each (the Ascend device plugin's fault-code
table, Ascend/mind-cluster ``faultCode.json``); any other code is shown as printed, without a meaning."""


def code_handling(codes: list[str]) -> dict[str, str]:
    """The handling level of each code fleetmon knows (``0x`` and case ignored)."""
    out = {}
    for code in codes:
        key = code.upper().removeprefix("0X")
        if key in ASCEND_CODES:
            out[code] = ASCEND_CODES[key]
    return out


def _since(gpu: GpuHistory, key: str, history: FleetHistory) -> float:
    since = gpu.signal_since(key)
    return since if since is not None else history.since


def _vendor(gpu: GpuHistory) -> str | None:
    v = gpu.inv("vendor")
    return str(v) if v else None


def check_device_health(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """A device whose own health state is not OK (Warning: warning; Alarm, Critical: critical; unknown: info)."""
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        h = gpu.signal("health")
        if not isinstance(h, Mapping):
            continue
        state = str(h.get("state") or "unknown")
        raw_codes = h.get("codes")
        codes = [str(c) for c in raw_codes] if isinstance(raw_codes, list) else []
        if state == "ok":
            continue
        severity = _SEVERITY.get(state, "info")
        text = str(h.get("text") or state)
        since = _since(gpu, "health", history)
        evidence: dict[str, Any] = {"state": state, "text": text, "codes": codes, "since": since,
                                    "meaning": _STATE_WORDS.get(state), "vendor": _vendor(gpu)}
        if h.get("info"):
            evidence["info"] = str(h["info"])
        handling = code_handling(codes)
        if handling:
            evidence["handling"] = handling
        # The device's own state and codes stay as the tool printed them (identifiers people search for).
        if not codes:
            summary = Text(N_("{gpu}: health {state}"), gpu=gpu_label(gpu), state=text)
        else:
            summary = Text(N_("{gpu}: health {state}, error codes {codes}") if len(codes) > 1 else
                           N_("{gpu}: health {state}, error code {codes}"), gpu=gpu_label(gpu), state=text,
                           codes=", ".join(codes))
        if severity == "critical":
            action: str = N_("Move work off this device and check it with the vendor's tool (npu-smi info -t health "
                             "-i <NPU> -c <chip>); give the error codes to the vendor's support")
        elif severity == "warning":
            action = N_("Check the device's alarm with the vendor's tool (npu-smi info -t health -i <NPU> "
                        "-c <chip>) and look its error codes up in the vendor's fault list")
        else:
            action = N_("The device's tool could not tell its health: check the tool and the driver")
        if handling:
            levels = [Text(N_("{code}: {handling}"), code=code, handling=Text(ASCEND_HANDLING[level])
                           if level in ASCEND_HANDLING else level) for code, level in handling.items()]
            action = Text(N_("{action}; Huawei's handling: {levels}"), action=Text(action),
                          levels=listing(levels, semicolons=True))
        out.append(gpu_finding(
            history, gpu, "device-health", severity, since, history.now, evidence, action,
            summary, condition_resolve_s(t), open_now=True,
        ))
    return out


def _block_events(history: FleetHistory, uuid: str) -> dict[str, list[float]]:
    """Per block, the times of the window's ``ecc_block`` events of the card that raised its uncorrectable count."""
    out: dict[str, list[float]] = {}
    for e in history.events:
        if e.kind != "ecc_block" or e.gpu_uuid != uuid:
            continue
        block = e.data.get("block")
        counts, was = e.data.get("counts"), e.data.get("was")
        if not isinstance(block, str) or not isinstance(counts, Mapping):
            continue
        before = was.get("uncorrectable", 0) if isinstance(was, Mapping) else 0
        now = counts.get("uncorrectable", 0)
        if isinstance(now, int) and isinstance(before, int) and now > before:
            out.setdefault(block, []).append(e.ts)
    return out


def _blocks(gpu: GpuHistory) -> dict[str, Mapping[str, Any]]:
    blocks = gpu.signal("ecc_blocks")
    if not isinstance(blocks, Mapping):
        return {}
    return {str(b): c for b, c in blocks.items() if isinstance(c, Mapping)}


def _n(counts: Mapping[str, Any], key: str) -> int:
    v = counts.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def check_ecc_blocks(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """An uncorrectable ECC error in one RAS block (AMD, Hygon): critical, one finding per block.

    ``first_seen``/``last_seen`` are the window's events that raised the block's count (else
    when the card's blocks last changed): a count that stays is no new evidence, so an
    operator's resolution holds until the count grows again.
    """
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        blocks = _blocks(gpu)
        bad = {b: c for b, c in blocks.items() if _n(c, "uncorrectable") > 0}
        if not bad:
            continue
        raised = _block_events(history, gpu.uuid)
        since = _since(gpu, "ecc_blocks", history)
        with_errors = {b: dict(c) for b, c in blocks.items()
                       if _n(c, "uncorrectable") or _n(c, "deferred") or _n(c, "correctable")}
        for block, counts in sorted(bad.items()):
            times = raised.get(block) or [since]
            out.append(gpu_finding(
                history, gpu, "ecc-block", "critical", min(times), max(times),
                {"block": block, "uncorrectable": _n(counts, "uncorrectable"),
                 "correctable": counts.get("correctable"), "deferred": counts.get("deferred"),
                 "blocks": with_errors, "since": since, "vendor": _vendor(gpu)},
                Text(N_("Drain the card and reset it ({reset}); an uncorrectable error in {block} that comes back "
                        "means replacing the card: keep the counts for the RMA"),
                     reset=_RESET.get(_vendor(gpu) or "") or Text(N_("with the vendor tool")), block=block),
                Text(N_("{gpu}: {count} uncorrectable ECC error(s) in block {block}"), gpu=gpu_label(gpu),
                     count=_n(counts, "uncorrectable"), block=block),
                event_resolve_s(t), discriminator=block, open_now=True,
            ))
    return out


def check_ecc_deferred(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """Deferred ECC errors (AMD, Hygon): warning while the latest reading shows any."""
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        total = gpu.signal("ecc_deferred")
        blocks = {b: _n(c, "deferred") for b, c in _blocks(gpu).items() if _n(c, "deferred") > 0}
        count = total if isinstance(total, int) and not isinstance(total, bool) else sum(blocks.values())
        if count <= 0 and not blocks:
            continue
        key = "ecc_deferred" if isinstance(total, int) else "ecc_blocks"
        since = _since(gpu, key, history)
        out.append(gpu_finding(
            history, gpu, "ecc-deferred", "warning", since, history.now,
            {"deferred": count, "blocks": blocks, "since": since, "vendor": _vendor(gpu)},
            N_("Reset the card when it is idle (the driver clears deferred errors) and watch whether they come "
               "back: deferred errors that return point at failing memory"),
            Text(N_("{gpu}: {count} deferred ECC error(s) in {blocks}"), gpu=gpu_label(gpu), count=count,
                 blocks=", ".join(sorted(blocks))) if blocks
            else Text(N_("{gpu}: {count} deferred ECC error(s)"), gpu=gpu_label(gpu), count=count),
            condition_resolve_s(t), open_now=True,
        ))
    return out


def check_bad_pages(history: FleetHistory, thresholds: Thresholds | None = None) -> list[Finding]:
    """AMD's bad-page threshold exceeded: critical while the latest reading says so."""
    t = effective_thresholds(history, thresholds)
    out: list[Finding] = []
    for gpu in history.gpus:
        if gpu.signal("bad_pages_exceeded") is not True:
            continue
        since = _since(gpu, "bad_pages_exceeded", history)
        out.append(gpu_finding(
            history, gpu, "bad-pages-exceeded", "critical", since, history.now,
            {"threshold": gpu.signal("bad_page_threshold"), "since": since, "vendor": _vendor(gpu)},
            N_("Replace the card: the driver retired more pages than its bad-page threshold "
               "(amdgpu's bad_page_threshold); keep the RAS counts for the RMA"),
            Text(N_("{gpu}: bad-page threshold exceeded"), gpu=gpu_label(gpu)), condition_resolve_s(t), open_now=True,
        ))
    return out
