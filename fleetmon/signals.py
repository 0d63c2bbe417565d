"""Device fault signals, vendor-neutral: what a device's own tool says about its health beyond the catalog.

The parsers (and the agent's backends, through ``Backend.extra``) keep each vendor's
readings that have no catalog field in a per-device ``extra`` mapping, by the names each
parser's docstring lists. :func:`device_signals` turns such a mapping into the few
*signals* the health rules judge, the same for every vendor:

``health``
    ``{"state", "text", "codes", "info"}``: the device's own health verdict. ``state`` is
    ``ok``, ``warning``, ``alarm``, ``critical`` or ``unknown``; ``text`` as the tool printed
    it; ``codes`` its error codes (strings, as printed); ``info`` the tool's error text.
    Huawei Ascend (npu-smi's Health column, ``-t health``'s Health Status / Error Code /
    Error Information). npu-smi's states: OK (normal), Warning (minor alarm), Alarm (major
    alarm), Critical (critical alarm) — the words of Huawei's npu-smi reference.
``ecc_blocks``
    ``{block: {"correctable", "uncorrectable", "deferred"}}``: AMD's RAS counts per IP block
    (UMC, SDMA, GFX, MMHUB, XGMI_WAFL, …; amd-smi ``metric --ecc-blocks``), kept by the
    driver since it loaded; cache ECC counts kept apart (AMD ``ecc_cache_*``, Intel xpu-smi's
    cache error columns) are the block ``CACHE``.
``ecc_deferred``
    AMD's total deferred errors (detected, poisoned, not yet consumed).
``compatibility``
    ``OK`` or ``NOK``: Huawei Ascend's ``npu-smi info -t board`` Compatibility (whether the
    installed driver and the card's firmware match).
``bad_pages_exceeded``
    AMD's ``bad_page_threshold_exceeded``: the driver retired more pages than its threshold
    (with ``bad_page_threshold``, the threshold, where the tool gives it: evidence, no event).

Beside them, facts the rules need as evidence and that make no event: ``bad_page_threshold``
(AMD) and ``temp_sensor`` (``junction`` or ``edge``: which sensor ``temp_c`` is on AMD and Hygon
GPUs; the temperature rule's defaults for a card without limits depend on it).

A reading the tool did not give is absent, never zero. A value of the wrong type is
dropped (the parsers already refuse most; the agent's backends are read the same way).

Events on change (:func:`signal_events`): a capture polled every 30 s, or the agent's
sampler every 5 s, reports the same signals again and again; an event is written only
when a signal changes (and, at first sight, only when it is not the healthy value), so
a Warning that lasts a week is one ``device_health`` event, and the later ``OK`` is
another. :func:`fold` applies such events to the stored current signals, so the agent
path (events in its buffer) and the capture path (signals in each poll) keep the same
current state, which the rules judge. The agent also writes one ``device_signals`` event
per device when it first reads its signals (:func:`baseline_event`): the healthy values and
the facts without events reach the store that way.

Stdlib only, Python 3.8 syntax: the agent (and its single-file build) imports it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "EVENT_KINDS",
    "HEALTH_STATES",
    "BASELINE_KIND",
    "SIGNAL_KEYS",
    "baseline_event",
    "changed_at",
    "current",
    "device_signals",
    "fold",
    "health_state",
    "merge",
    "signal_events",
    "stored",
]

HEALTH_STATES: tuple[str, ...] = ("ok", "warning", "alarm", "critical", "unknown")
"""The normalised device health states, from good to bad (``unknown``: the tool could not tell)."""

_HEALTH_WORDS = {"ok": "ok", "normal": "ok", "healthy": "ok", "warning": "warning", "warn": "warning",
                 "alarm": "alarm", "major": "alarm", "critical": "critical", "error": "critical"}

SIGNAL_KEYS: tuple[str, ...] = ("health", "ecc_blocks", "ecc_deferred", "bad_pages_exceeded", "compatibility")
"""The signals :func:`device_signals` can return."""

EVENT_KINDS: dict[str, str] = {"health": "device_health", "ecc_blocks": "ecc_block",
                               "ecc_deferred": "ecc_deferred", "bad_pages_exceeded": "bad_pages",
                               "compatibility": "version_compat"}
"""Signal → the kind of the event written when it changes."""

BASELINE_KIND = "device_signals"
"""The agent's event with all of a device's signals at its first sight (see :func:`baseline_event`)."""

_SIGNAL_OF = {kind: key for key, kind in EVENT_KINDS.items()}
_MAX_CODES = 32
_MAX_TEXT = 200
_MAX_BLOCKS = 64
_ECC_COUNTS = ("correctable", "uncorrectable", "deferred")


def _count(v: Any) -> int | None:
    """A count: a non-negative whole number (a float that is one, as xpu-smi's columns read, counts too)."""
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        return None
    return int(v)


def _clean(text: Any, limit: int = _MAX_TEXT) -> str | None:
    if not isinstance(text, str):
        return None
    out = "".join(ch if ch.isprintable() else " " for ch in text).strip()
    return out[:limit] or None


def health_state(text: str) -> str:
    """The normalised state of a tool's health word (``Warning`` → ``warning``; anything else: ``unknown``)."""
    return _HEALTH_WORDS.get(text.strip().lower(), "unknown")


def device_signals(extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """The signals in one device's vendor readings (``Capture.extra[i]`` or ``Backend.extra(i)``); {} when none."""
    if not isinstance(extra, Mapping):
        return {}
    out: dict[str, Any] = {}
    text = _clean(extra.get("health"), 40)
    if text is not None:
        codes_raw = extra.get("error_codes")
        codes = [c for c in (_clean(x, 40) for x in codes_raw[:_MAX_CODES]) if c] if isinstance(
            codes_raw, list) else []
        health: dict[str, Any] = {"state": health_state(text), "text": text, "codes": codes}
        info = _clean(extra.get("error_info"))
        if info is not None:
            health["info"] = info
        out["health"] = health
    blocks = extra.get("ecc_blocks")
    per: dict[str, dict[str, int]] = {}
    if isinstance(blocks, Mapping):
        for name, counts in list(blocks.items())[:_MAX_BLOCKS]:
            block = _clean(name, 40)
            if block is None or not isinstance(counts, Mapping):
                continue
            got = {k: n for k in _ECC_COUNTS if (n := _count(counts.get(k))) is not None}
            if got:
                per[block.upper()] = got
    # Cache ECC counts kept apart from the blocks: AMD's ecc_cache_* (amd-smi metric's ecc), Intel's
    # xpu-smi "Cache Errors Correctable / Uncorrectable" columns. They are the CACHE block.
    if "CACHE" not in per:
        cache = {k: n for k, names in (("correctable", ("ecc_cache_corr", "cache_errors_corr")),
                                       ("uncorrectable", ("ecc_cache_unc", "cache_errors_unc")))
                 for name in names if (n := _count(extra.get(name))) is not None}
        if cache:
            per["CACHE"] = cache
    if per:
        out["ecc_blocks"] = dict(sorted(per.items()))
    deferred = _count(extra.get("ecc_deferred"))
    if deferred is not None:
        out["ecc_deferred"] = deferred
    compat = _clean(extra.get("compatibility"), 8)
    if compat is not None and compat.upper() in ("OK", "NOK"):  # npu-smi -t board: driver and firmware match
        out["compatibility"] = compat.upper()
    sensor = extra.get("temp_sensor")
    if sensor in ("junction", "edge"):  # which sensor temp_c is (AMD, Hygon): the temperature rule's defaults
        out["temp_sensor"] = sensor
    exceeded = extra.get("bad_page_threshold_exceeded")
    if isinstance(exceeded, bool):
        out["bad_pages_exceeded"] = exceeded
        threshold = _count(extra.get("bad_page_threshold"))
        if threshold is not None:  # evidence for the rule; no event of its own
            out["bad_page_threshold"] = threshold
    return out


def _healthy(key: str, value: Any) -> bool:
    """Whether a signal's value at first sight needs no event (the healthy value)."""
    if key == "health":
        return isinstance(value, Mapping) and value.get("state") == "ok" and not value.get("codes")
    if key == "ecc_blocks":
        return isinstance(value, Mapping) and not any(
            c.get("uncorrectable") or c.get("deferred") for c in value.values() if isinstance(c, Mapping))
    if key == "ecc_deferred":
        return bool(value == 0)
    if key == "compatibility":
        return bool(value == "OK")
    return value is False


def _health_message(h: Mapping[str, Any], before: Mapping[str, Any] | None) -> str:
    msg = f"health {h.get('text') or h.get('state')}"
    codes = h.get("codes") or []
    if codes:
        msg += f", error code{'s' if len(codes) > 1 else ''} {', '.join(str(c) for c in codes)}"
    if h.get("info"):
        msg += f": {h['info']}"
    if before is not None:
        msg += f" (was {before.get('text') or before.get('state')})"
    return msg


def signal_events(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """The events a change of a device's signals makes: ``(kind, message, data)`` each.

    ``before``: the device's previous signals (None or {} at first sight). A signal absent
    from ``after`` (the tool did not say this time) makes no event and is not "healthy":
    only a reading changes the state. ``data`` holds ``signal`` (the signal's key),
    ``value`` (its new value, what :func:`fold` stores) and, where there was one, ``previous``.
    """
    prev = before or {}
    out: list[tuple[str, str, dict[str, Any]]] = []
    for key in SIGNAL_KEYS:
        if key not in after:
            continue
        new, old = after[key], prev.get(key)
        if old == new or (old is None and _healthy(key, new)):
            continue
        kind = EVENT_KINDS[key]
        base: dict[str, Any] = {"signal": key, "value": new}
        if old is not None:
            base["previous"] = old
        if key == "health":
            h_old = {k: v for k, v in old.items() if k != "info"} if isinstance(old, Mapping) else None
            h_new = {k: v for k, v in new.items() if k != "info"}
            if h_old == h_new:  # only the error text changed: no new state
                continue
            out.append((kind, _health_message(new, old if isinstance(old, Mapping) else None), base))
        elif key == "ecc_blocks":
            old_blocks = old if isinstance(old, Mapping) else {}
            for block, counts in new.items():
                was = old_blocks.get(block) or {}
                # Correctable counts tick on; an event is written when an uncorrectable or deferred one moves.
                if all(counts.get(k, 0) == was.get(k, 0) for k in ("uncorrectable", "deferred")):
                    continue
                words = ", ".join(f"{counts[k]} {k}" for k in _ECC_COUNTS if k in counts)
                out.append((kind, f"ECC block {block}: {words}",
                            {**base, "block": block, "counts": dict(counts), "was": dict(was)}))
        elif key == "ecc_deferred":
            out.append((kind, f"{new} deferred ECC error(s)" + ("" if old is None else f" (was {old})"), base))
        elif key == "compatibility":
            out.append((kind, "driver and firmware do not match (npu-smi Compatibility NOK)" if new == "NOK"
                        else "driver and firmware match again (Compatibility OK)", base))
        else:
            out.append((kind, "bad-page threshold exceeded: the driver retired more pages than its threshold"
                        if new else "bad-page threshold no longer exceeded", base))
    return out


def baseline_event(signals: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """The event an agent writes with all of a device's signals when it first reads them.

    Events on change say nothing of a healthy device or of the facts without events
    (``temp_sensor``, ``bad_page_threshold``); a capture's poll carries them all, an agent's
    buffer only its events. One such event per device and agent start gives the store the
    same current signals on both paths (:func:`fold` takes it whole).
    """
    words = []
    health = signals.get("health")
    if isinstance(health, Mapping):
        words.append(f"health {health.get('text') or health.get('state')}")
    if "temp_sensor" in signals:
        words.append(f"temperature from the {signals['temp_sensor']} sensor")
    if "ecc_blocks" in signals:
        words.append(f"ECC per block ({len(signals['ecc_blocks'])} blocks)")
    for key in ("ecc_deferred", "bad_pages_exceeded"):
        if key in signals:
            words.append(f"{key} {signals[key]}")
    return BASELINE_KIND, "vendor signals: " + ", ".join(words or sorted(signals)), {
        "signal": "*", "value": dict(signals)}


def fold(current: Mapping[str, Any] | None, kind: str, data: Mapping[str, Any], ts: float) -> dict[str, Any] | None:
    """The stored current signals after one signal event (None: not a signal event, nothing to change).

    ``current``/result: ``{"values": {signal: value}, "since": {signal: ts of its last change}, "ts": ts}``.
    """
    if kind == BASELINE_KIND:
        value = data.get("signal") == "*" and data.get("value")
        return merge(current, value, ts) if isinstance(value, Mapping) else None
    key = _SIGNAL_OF.get(kind)
    if key is None or not isinstance(data, Mapping) or data.get("signal") != key or "value" not in data:
        return None
    values = dict(current.get("values") or {}) if isinstance(current, Mapping) else {}
    since = dict(current.get("since") or {}) if isinstance(current, Mapping) else {}
    if values.get(key) != data["value"]:
        since[key] = ts
    values[key] = data["value"]
    return {"values": values, "since": since, "ts": ts}


def merge(current: Mapping[str, Any] | None, signals: Mapping[str, Any], ts: float) -> dict[str, Any]:
    """The stored current signals after a capture read ``signals`` (signals it did not read are kept)."""
    values = dict(current.get("values") or {}) if isinstance(current, Mapping) else {}
    since = dict(current.get("since") or {}) if isinstance(current, Mapping) else {}
    for key, value in signals.items():
        if values.get(key) != value or key not in since:
            since[key] = ts
        values[key] = value
    return {"values": values, "since": since, "ts": ts}


def stored(raw: Any) -> Mapping[str, Any]:
    """Stored current signals (a mapping or its JSON text) as a mapping; {} when none or unreadable."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    return raw if isinstance(raw, Mapping) else {}


def as_of(state: Mapping[str, Any], now: float) -> Mapping[str, Any]:
    """Stored current signals as they stood at ``now``: a signal whose value began after ``now`` is left out.

    Storage keeps each card's current signals only (with when each last changed), so a report judged as of
    an earlier time must not see a state that began later (an ECC block error of today in a report of last
    week). The value it replaced is not kept: such a signal is unknown at ``now``, never taken as healthy
    evidence (the rules find nothing in an absent signal, and resolve only on a signal saying OK).
    """
    values = state.get("values")
    since = state.get("since")
    if not isinstance(values, Mapping) or not isinstance(since, Mapping):
        return state
    kept = {k: v for k, v in values.items()
            if not (isinstance(since.get(k), (int, float)) and not isinstance(since.get(k), bool)
                    and float(since[k]) > now)}
    if len(kept) == len(values):
        return state
    return {**state, "values": kept, "since": {k: t for k, t in since.items() if k in kept}}


def current(state: Mapping[str, Any], key: str) -> Any:
    """The signal ``key`` of stored current signals, None when there is none."""
    values = state.get("values")
    return values.get(key) if isinstance(values, Mapping) else None


def changed_at(state: Mapping[str, Any], key: str) -> float | None:
    """When the signal ``key`` of stored current signals last changed (None when unknown)."""
    since = state.get("since")
    ts = since.get(key) if isinstance(since, Mapping) else None
    return float(ts) if isinstance(ts, (int, float)) and not isinstance(ts, bool) else None
