"""Checking an agent's answer on the wire: plain code, one clear line per problem.

Every problem raises :class:`BadAnswer` with a one-line reason in the form
``"<path>[ <record>]: <what> <why>"``, for example::

    /v1/minutes seq 17: field 'ts' 32503680000 is 969,000,000 s ahead of the collector's clock (limit 604800 s)
    /v1/node gpus[3]: values['power_default_w'] of the wrong type (str)
    /v1/node: field 'uuid' is not a GPU UUID ('<script>')
    /v1/latest: 2 records for GPU UUID 'GPU-…'

Decision: a bad value rejects the whole answer, so the node's poll fails and
nothing of it reaches storage; a record is never dropped or altered silently
(the one exception: event messages are cut to MAX_MESSAGE_CHARS). The cursors
then stay where they were: the reason shows on the node's status every cycle
until the agent stops sending the record (fixed, or pruned: then a gap is
reported), and the rest of the fleet is not affected.

Numbers: every number in ``values`` is within ±MAX_ABS_VALUE and finite; known
numeric fields must be JSON numbers (never true/false, never strings), known
text fields strings; identifiers have domain bounds (see
:mod:`fleetmon.collector.limits`). ``null`` stays valid wherever a value may be
unavailable. Unknown keys (a newer agent) pass under the same generic checks,
so the wire stays forward compatible.
"""

from __future__ import annotations

import json
import math
import re
from functools import partial
from operator import is_not
from typing import Any

from fleetmon.collector.limits import (
    MAX_ABS_VALUE, MAX_EVENT_CODE, MAX_EVENT_DATA_CHARS, MAX_FUTURE_S, MAX_GPUS_PER_NODE, MAX_INDEX, MAX_JSON_ITEMS,
    MAX_NAME_CHARS, MAX_SAMPLES_PER_MINUTE, MAX_SEQ, MAX_UUID_CHARS, MAX_UUIDS_PER_POLL, MAX_VALUES_KEYS,
)
from fleetmon.fields import (
    COUNTER_NAMES, EXPORT_ONLY, GAUGE_NAMES, INVENTORY_NUMBERS, INVENTORY_TEXTS, NODE_NUMBERS, NODE_TEXTS, STATE_NAMES,
    THROTTLE_NAMES,
)
from fleetmon.i18n import N_, Text
from fleetmon.records import minute_key, throttle_key


class BadAnswer(Exception):
    """The agent answered something unusable."""


UUID_RE = re.compile(r"(?:(?:GPU|MIG|NPU|unknown-gpu|lost-gpu)-[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._:-]{7})"
                     r"[A-Za-z0-9._:/-]*\Z")
"""Device id syntax: NVIDIA's ``GPU-``/``MIG-`` forms (hex and dashes; MIG's older
``MIG-GPU-…/gi/ci``), the agent's placeholders ``unknown-gpu-N-WHERE`` /
``lost-gpu-N-WHERE``, the Ascend parser's ``NPU-…``, and other vendors' own unique ids
(a Gaudi's ``01P4-HL3090A0-18-U4V193-22-07-00``, an AMD card's hex serial): letters,
digits, ``.``, ``_``, ``:``, ``-``, at least 8 of them before any ``/``. Letters beyond hex are
allowed (simulated and test fleets name their GPUs); empty, whitespace, NUL, markup and
non-ASCII never match."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")

SAMPLE_NUMERIC: frozenset[str] = frozenset(GAUGE_NAMES + COUNTER_NAMES + STATE_NAMES
                                           + tuple(f.name for f in EXPORT_ONLY))  # live samples carry those too
MINUTE_NUMERIC: frozenset[str] = frozenset(
    [minute_key(g, s) for g in GAUGE_NAMES for s in ("min", "mean", "max")] + list(COUNTER_NAMES)
    + list(STATE_NAMES) + [throttle_key(r) for r in THROTTLE_NAMES]
    + ["busy_n", "pcie_gen_busy_min", "pcie_width_busy_min"])
INVENTORY_NUMERIC: frozenset[str] = INVENTORY_NUMBERS  # the field catalog (fleetmon.fields.INVENTORY_CATALOG)
INVENTORY_TEXT: frozenset[str] = INVENTORY_TEXTS
NODE_NUMERIC: frozenset[str] = NODE_NUMBERS
NODE_TEXT: frozenset[str] = NODE_TEXTS
_NONE: frozenset[str] = frozenset()
_NUMBER_TYPES = frozenset({int, float, type(None)})
_not_none = partial(is_not, None)


def _show(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:39] + "…"


# ---------------------------------------------------------------------------
# The whole document


def check_body(body: bytes, path: str) -> None:
    """Before decoding: the parsed document stays bounded (see MAX_JSON_ITEMS)."""
    items = body.count(b",") + body.count(b":")
    if items > MAX_JSON_ITEMS:
        raise BadAnswer(Text(N_("{path}: answer of more than {limit} JSON items ({count})"), path=path,
                             limit=f"{MAX_JSON_ITEMS:,}", count=f"{items:,}"))


def check_text(doc: Any, body: bytes, path: str) -> None:
    """Every string can be stored as UTF-8: no lone surrogate (``"\\ud800"``) anywhere, keys included.

    Only a ``\\uD8xx``–``\\uDFxx`` escape can make one, so the document is
    checked (in C) only when the text holds such an escape; a valid pair
    (an escaped emoji) passes.
    """
    if not _SURROGATE_ESCAPE.search(body):
        return
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise BadAnswer(Text(N_("{path}: text that is not valid Unicode (a lone surrogate) at {where}"), path=path,
                             where=_find_surrogate(doc))) from None


def _find_surrogate(doc: Any) -> str:
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        where, v = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if not _encodable(k):
                    return f"{where}[{_show(k)}] (a key)"
                stack.append((f"{where}[{k!r}]", x))
        elif isinstance(v, list):
            stack.extend((f"{where}[{i}]", x) for i, x in enumerate(v))
        elif isinstance(v, str) and not _encodable(v):
            return where or "the top level"
    return "an unknown place"


def _encodable(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# ---------------------------------------------------------------------------
# One record

_KINDS = frozenset({"seq", "index", "n", "code", "ts", "tsint", "str", "uuid", "msg", "dict"})
_INT_BOUNDS: dict[str, tuple[int, int]] = {
    "seq": (0, MAX_SEQ), "index": (0, MAX_INDEX), "n": (0, MAX_SAMPLES_PER_MINUTE), "code": (0, MAX_EVENT_CODE),
}
Spec = tuple[tuple[str, str, bool], ...]


def spec(**fields: str) -> Spec:
    """Compile ``key="seq" | "index" | "n" | "code" | "ts" | "tsint" | "str" | "uuid" | "msg" | "dict"``.

    A ``?`` suffix: the field may be missing or null. ``ts`` is a number,
    ``tsint`` an integer, both within 0 .. the collector's clock + MAX_FUTURE_S;
    ``str`` is a short string (MAX_NAME_CHARS, no control characters); ``msg``
    any string (cut later); ``uuid`` matches :data:`UUID_RE`.
    """
    out = []
    for key, kind in fields.items():
        base = kind.rstrip("?")
        assert base in _KINDS, kind
        out.append((key, base, kind.endswith("?")))
    return tuple(out)


def _wrong(where: str, key: str, rec: dict[str, Any], v: Any) -> BadAnswer:
    if key not in rec:
        return BadAnswer(Text(N_("{where}: field {key} missing"), where=where, key=repr(key)))
    return BadAnswer(Text(N_("{where}: field {key} of the wrong type ({type})"), where=where, key=repr(key),
                          type=type(v).__name__))


def check_fields(rec: Any, where: str, fields: Spec, ts_max: float) -> None:
    """Check one record object against ``fields`` (types, then bounds).

    ``type(v) is int`` rather than isinstance: a JSON true is never an int here.
    """
    if type(rec) is not dict:
        raise BadAnswer(Text(N_("{where}: a record is not an object"), where=where))
    for key, kind, optional in fields:
        v: Any = rec.get(key)  # a JSON value: the type(v) tests below narrow it (mypy cannot see through t)
        if v is None and optional:
            continue
        t = type(v)
        if kind in _INT_BOUNDS:
            if t is not int:
                raise _wrong(where, key, rec, v)
            lo, hi = _INT_BOUNDS[kind]
            if not lo <= v <= hi:
                raise BadAnswer(Text(N_("{where}: field {key} out of range ({value}; allowed {low}..{high})"),
                                     where=where, key=repr(key), value=_show(v), low=lo, high=hi))
        elif kind == "ts" or kind == "tsint":
            if t is not int and (t is not float or kind == "tsint"):
                raise _wrong(where, key, rec, v)
            if not 0 <= v <= ts_max:
                if v != v or v in (math.inf, -math.inf):
                    raise BadAnswer(Text(N_("{where}: field {key} is not a finite number"), where=where, key=repr(key)))
                if v < 0:
                    raise BadAnswer(Text(N_("{where}: field {key} is negative ({value})"), where=where, key=repr(key),
                                         value=_show(v)))
                if v > MAX_ABS_VALUE:  # an integer too large for float arithmetic (OverflowError)
                    raise BadAnswer(Text(N_("{where}: field {key} out of range ({value}; limit {limit})"), where=where,
                                         key=repr(key), value=_show(v), limit=f"{MAX_ABS_VALUE:g}"))
                ahead = v - (ts_max - MAX_FUTURE_S)
                raise BadAnswer(Text(N_("{where}: field {key} {value} is {ahead} s ahead of the collector's clock "
                                        "(limit {limit} s)"), where=where, key=repr(key), value=_show(v),
                                     ahead=f"{ahead:,.0f}", limit=f"{MAX_FUTURE_S:g}"))
        elif kind == "dict":
            if t is not dict:
                raise _wrong(where, key, rec, v)
        else:
            if t is not str:
                raise _wrong(where, key, rec, v)
            if kind == "uuid":
                if len(v) > MAX_UUID_CHARS:
                    raise BadAnswer(Text(N_("{where}: field {key} longer than {limit} characters ({count})"),
                                         where=where, key=repr(key), limit=MAX_UUID_CHARS, count=f"{len(v):,}"))
                if not UUID_RE.match(v):
                    raise BadAnswer(Text(N_("{where}: field {key} is not a GPU UUID ({value})"), where=where,
                                         key=repr(key), value=_show(v)))
            elif kind == "str":
                if len(v) > MAX_NAME_CHARS or _CONTROL.search(v):  # the label is made only for a failure
                    _check_short(v, where, Text(N_("field {key}"), key=repr(key)))


def _check_short(v: str, where: str, what: str) -> None:
    if len(v) > MAX_NAME_CHARS:
        raise BadAnswer(Text(N_("{where}: {what} longer than {limit} characters ({count})"), where=where, what=what,
                             limit=MAX_NAME_CHARS, count=f"{len(v):,}"))
    if _CONTROL.search(v):
        raise BadAnswer(Text(N_("{where}: {what} holds control characters ({value})"), where=where, what=what,
                             value=_show(v)))


def _bad_number(where: str, what: str, v: float) -> BadAnswer:
    if v != v or v in (math.inf, -math.inf):
        return BadAnswer(Text(N_("{where}: {what} is not a finite number"), where=where, what=what))
    return BadAnswer(Text(N_("{where}: {what} out of range ({value}; limit ±{limit})"), where=where, what=what,
                          value=_show(v), limit=f"{MAX_ABS_VALUE:g}"))


def check_values(d: dict[str, Any], where: str, key: str, numeric: frozenset[str] = _NONE,
                 texts: frozenset[str] = _NONE, keys: bool = True) -> None:
    """``values``: scalars or lists of scalars; ``numeric`` keys numbers, ``texts`` keys strings (or null).

    ``keys=False`` skips the key length check (minutes: storage keeps only the
    catalog's keys of a minute, and the check is a tenth of a minute's cost).
    """
    if len(d) > MAX_VALUES_KEYS:
        raise BadAnswer(Text(N_("{where}: {key} with more than {limit} keys ({count})"), where=where, key=key,
                             limit=MAX_VALUES_KEYS, count=f"{len(d):,}"))
    if keys and d and max(map(len, d)) > MAX_NAME_CHARS:
        raise BadAnswer(Text(N_("{where}: {key} key longer than {limit} characters"), where=where, key=key,
                             limit=MAX_NAME_CHARS))
    lim = MAX_ABS_VALUE
    vals = d.values()
    if not texts and _NUMBER_TYPES.issuperset(map(type, vals)):
        # The common case (every minute): numbers and nulls only, checked in C.
        nums = tuple(filter(_not_none, vals))
        if not nums or -lim < min(nums) and max(nums) < lim:
            return
    for k, v in d.items():
        t = type(v)
        if t is float or t is int:
            if not -lim < v < lim:
                raise _bad_number(where, f"{key}[{k!r}]", v)
            if k in texts:
                raise _wrong_type(where, f"{key}[{k!r}]", t.__name__)
        elif v is None:
            continue
        elif t is str:
            if k in numeric:
                raise _wrong_type(where, f"{key}[{k!r}]", "str")
            _check_short(v, where, f"{key}[{k!r}]")
        elif t is bool:
            if k in numeric or k in texts:
                raise _wrong_type(where, f"{key}[{k!r}]", "bool")
        elif t is list and k not in numeric and k not in texts and len(v) <= MAX_VALUES_KEYS:
            for x in v:
                tx = type(x)
                if tx is float or tx is int:
                    if not -lim < x < lim:
                        raise _bad_number(where, f"{key}[{k!r}]", x)
                elif tx is str:
                    _check_short(x, where, f"{key}[{k!r}]")
                elif x is not None and tx is not bool:
                    raise BadAnswer(Text(N_("{where}: {what} of the wrong type (list of {type})"), where=where,
                                         what=f"{key}[{k!r}]", type=tx.__name__))
        else:
            raise _wrong_type(where, f"{key}[{k!r}]", t.__name__)


def _wrong_type(where: str, what: str, type_name: str) -> BadAnswer:
    return BadAnswer(Text(N_("{where}: {what} of the wrong type ({type})"), where=where, what=what, type=type_name))


def check_status(d: dict[str, Any], where: str) -> None:
    """``status``: field name -> short status string (or null)."""
    if len(d) > MAX_VALUES_KEYS:
        raise BadAnswer(Text(N_("{where}: {key} with more than {limit} keys ({count})"), where=where, key="status",
                             limit=MAX_VALUES_KEYS, count=f"{len(d):,}"))
    if d and max(map(len, d)) > MAX_NAME_CHARS:
        raise BadAnswer(Text(N_("{where}: {key} key longer than {limit} characters"), where=where, key="status",
                             limit=MAX_NAME_CHARS))
    for k, v in d.items():
        if type(v) is str:
            if len(v) > MAX_NAME_CHARS:
                raise BadAnswer(Text(N_("{where}: {what} longer than {limit} characters"), where=where,
                                     what=f"status[{k!r}]", limit=MAX_NAME_CHARS))
        elif v is not None:
            raise _wrong_type(where, f"status[{k!r}]", type(v).__name__)


def check_event_data(d: dict[str, Any], where: str) -> None:
    """``data`` of an event: any JSON, finite, at most MAX_EVENT_DATA_CHARS as compact JSON."""
    if not d:
        return
    try:
        size = len(json.dumps(d, separators=(",", ":"), allow_nan=False))
    except ValueError:
        raise BadAnswer(Text(N_("{where}: field 'data' holds a number that is not finite"), where=where)) from None
    if size > MAX_EVENT_DATA_CHARS:
        raise BadAnswer(Text(N_("{where}: field 'data' larger than {limit} characters ({size})"), where=where,
                             limit=f"{MAX_EVENT_DATA_CHARS:,}", size=f"{size:,}"))


def check_record(rec: Any, where: str, fields: Spec, ts_max: float, numeric: frozenset[str] = _NONE,
                 texts: frozenset[str] = _NONE, keys: bool = True) -> None:
    """A record: its fields, then ``values`` and ``status`` (and an event's ``data``)."""
    check_fields(rec, where, fields, ts_max)
    values = rec.get("values")
    if values:
        check_values(values, where, "values", numeric, texts, keys)
    status = rec.get("status")
    if status:
        check_status(status, where)
    data = rec.get("data")
    if data:
        check_event_data(data, where)


def check_gpu_count(count: int, path: str) -> None:
    """One answer's GPUs: at most MAX_GPUS_PER_NODE (checked before the records themselves)."""
    if count > MAX_GPUS_PER_NODE:
        raise BadAnswer(Text(N_("{path}: {count} GPUs, more than {limit} per node"), path=path, count=f"{count:,}",
                             limit=MAX_GPUS_PER_NODE))


def check_unique_uuids(uuids: list[str], path: str) -> None:
    """No GPU UUID twice in one answer (two cards must never collapse into one)."""
    if len(set(uuids)) != len(uuids):
        seen: set[str] = set()
        for u in uuids:
            if u in seen:
                raise BadAnswer(Text(N_("{path}: 2 records for GPU UUID {uuid}"), path=path, uuid=repr(u)))
            seen.add(u)


def check_poll_uuids(uuids: set[str], path: str) -> None:
    """Distinct GPU UUIDs among one poll's buffered records (MAX_UUIDS_PER_POLL)."""
    if len(uuids) > MAX_UUIDS_PER_POLL:
        raise BadAnswer(Text(N_("{path}: records for {count} GPUs, more than {limit} in one poll"), path=path,
                             count=f"{len(uuids):,}", limit=MAX_UUIDS_PER_POLL))


def record_where(path: str, rec: Any) -> str:
    """``/v1/minutes seq 17`` when the record has a usable seq, else the path."""
    if type(rec) is dict:
        seq = rec.get("seq")
        if type(seq) is int and 0 <= seq <= MAX_SEQ:
            return f"{path} seq {seq}"
    return path
