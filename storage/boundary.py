"""Types checked again where a poll enters the store (issue 11, item 3).

The collector's client validates every answer on the wire
(:mod:`fleetmon.collector.validate`); storage does not trust that it ran: a
poll built by other code (a test, a simulator, an older client) reaches
:func:`storage.ingest.ingest_polls` directly. :func:`check_poll` looks at the
values that become columns or are read back by the health rules as numbers:

* the inventory (``/v1/node`` ``gpus``), the node description and the latest
  samples: a value of the wrong type (a string in a numeric field, a number in
  a text field, a boolean, infinity or NaN) refuses **that node's answer**:
  :class:`RefusedPoll` with a one-line reason, the node's poll is recorded as
  failed with it (like an unreachable agent) and nothing of the answer is
  stored; the rest of the cycle is;
* a minute's values are left to the compact encoder, which stores a value it
  cannot scale as NULL (that value alone is rejected, the minute is kept; see
  :meth:`storage.schema.Layout.encode_values_slow`); one that overflows
  SQLite's 64-bit integers refuses the node's answer at the write.

Storage imports no collector module: the field sets here come from the field catalog (fleetmon.fields).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import fleetmon.fields as fields
from fleetmon.fields import COUNTER_NAMES, GAUGE_NAMES, STATE_NAMES
from fleetmon.i18n import N_, Text
from fleetmon.records import NodePoll

__all__ = ["INVENTORY_NUMBERS", "INVENTORY_TEXTS", "NODE_TEXTS", "RefusedPoll", "check_poll"]

INT64_MAX = 2**63 - 1

INVENTORY_NUMBERS: frozenset[str] = fields.INVENTORY_NUMBERS
"""Inventory values the rules compare as numbers (power cap, PCIe maximum, slowdown temperature…)."""

INVENTORY_TEXTS: frozenset[str] = fields.INVENTORY_TEXTS
"""Inventory values stored or compared as text (VBIOS majority, serial passport, slot)."""

NODE_TEXTS: frozenset[str] = fields.NODE_TEXTS

SAMPLE_NUMBERS: frozenset[str] = frozenset(GAUGE_NAMES + COUNTER_NAMES + STATE_NAMES)


class RefusedPoll(ValueError):
    """A node's answer holds a value the store will not keep; the message is the one-line reason (an
    :class:`fleetmon.i18n.Text`: the record, field and value stay as they are, the words in the reader's language)."""


def _show(v: Any) -> str:
    text = ascii(v)
    return text if len(text) <= 40 else text[:39] + "…"


def _number(where: str, key: str, v: Any) -> None:
    if v is None:
        return
    if isinstance(v, bool):
        raise RefusedPoll(Text(N_("{where}: {key} {value} is not a number (bool)"), where=where, key=key,
                                value=_show(v)))
    if isinstance(v, int):
        if -INT64_MAX <= v <= INT64_MAX:
            return
        raise RefusedPoll(Text(N_("{where}: {key} {value} is outside the 64-bit integer range"), where=where, key=key,
                                value=_show(v)))
    if isinstance(v, float):
        if math.isfinite(v):
            return
        raise RefusedPoll(Text(N_("{where}: {key} {value} is not a finite number"), where=where, key=key,
                                value=_show(v)))
    raise RefusedPoll(Text(N_("{where}: {key} {value} is not a number ({type})"), where=where, key=key, value=_show(v),
                            type=type(v).__name__))


def _text(where: str, key: str, v: Any) -> None:
    if v is not None and not isinstance(v, str):
        raise RefusedPoll(Text(N_("{where}: {key} {value} is not text ({type})"), where=where, key=key, value=_show(v),
                                type=type(v).__name__))


def _values(where: str, values: Any, numbers: Iterable[str], texts: Iterable[str] = ()) -> None:
    if not isinstance(values, Mapping):
        raise RefusedPoll(Text(N_("{where}: values {value} is not an object"), where=where, value=_show(values)))
    for key in numbers:
        _number(where, key, values.get(key))
    for key in texts:
        _text(where, key, values.get(key))


def check_poll(poll: NodePoll) -> None:
    """Refuse a poll whose stored or judged values have the wrong type.

    Raises:
        RefusedPoll: the first problem found, as one line naming the record and the field.
    """
    if not poll.ok:
        return
    _number("poll", "ts", poll.ts)
    _number("poll", "skew_s", poll.skew_s)
    info = poll.info
    if info is not None:
        for key in ("hostname", "agent_version", "xid_source"):
            _text("node", key, getattr(info, key, None))
        _number("node", "started_at", info.started_at)
        _values("node", info.values, tuple(fields.NODE_NUMBERS), NODE_TEXTS)
    for g in poll.gpus:
        if not isinstance(g.uuid, str) or not g.uuid:
            raise RefusedPoll(Text(N_("gpus: uuid {value} is not a GPU UUID"), value=_show(g.uuid)))
        where = f"gpu {_show(g.uuid)}"
        if not isinstance(g.index, int) or isinstance(g.index, bool):
            raise RefusedPoll(Text(N_("{where}: index {value} is not an integer"), where=where, value=_show(g.index)))
        _number(where, "index", g.index)
        _text(where, "name", g.name)
        _text(where, "state", g.state)
        _values(where, g.values, INVENTORY_NUMBERS, INVENTORY_TEXTS)
    for s in poll.latest:
        where = f"latest {_show(s.uuid)}"
        _text(where, "uuid", s.uuid)
        _number(where, "ts", s.ts)
        _values(where, s.values, SAMPLE_NUMBERS.intersection(s.values) if isinstance(s.values, Mapping) else ())
