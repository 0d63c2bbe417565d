"""Slurm hostlist expressions: ``gpu[01-03,07],node5`` ↔ a list of host names.

The syntax follows Slurm's ``scontrol show hostnames`` / ``hostlist``:

* Items are separated by commas (or whitespace) *outside* brackets.
* A bracket group holds comma-separated numbers or ``lo-hi`` ranges. Each
  element is zero-padded to the width of its lower bound as written, so
  ``gpu[08-10]`` is ``gpu08 gpu09 gpu10`` and ``gpu[8-10]`` is ``gpu8 gpu9 gpu10``.
* One item may hold several bracket groups; the leftmost varies slowest, so
  ``rack[1-2]-gpu[1-2]`` is ``rack1-gpu1 rack1-gpu2 rack2-gpu1 rack2-gpu2``.
* Whitespace around items, commas, dashes and inside brackets is ignored.

``compress`` goes the other way and always produces an expression whose
expansion is ``sorted(set(hosts), key=sort_key)``. ``compress_lenient`` is its
form for reports: a name no hostlist can hold (a space, a comma, a bracket, a
control character: names from outside are checked where they enter, but a
report never fails for one name) is listed after the expression, quoted.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable

from fleetmon.i18n import N_, Text
from fleetmon.text import printable

__all__ = ["MAX_HOSTS", "compress", "compress_lenient", "expand", "natural_key", "sort_key", "split_writable",
           "writable"]

MAX_HOSTS = 100_000
"""Largest number of hosts one expression may expand to (a guard against typos
such as ``gpu[1-1000000]``)."""

_SEPARATORS = ",\t\n\r "
_LAST_NUMBER = re.compile(r"^(.*?)(\d+)(\D*)$", re.DOTALL)
_FORBIDDEN = re.compile(r"[\[\],\s]")
_NUMBER = re.compile(r"\d+")


def expand(expr: str) -> list[str]:
    """Expand a Slurm hostlist expression into host names, in order.

    Duplicates are kept (as ``scontrol show hostnames`` does); an empty or
    all-whitespace expression gives ``[]``.

    Args:
        expr: for example ``"gpu[01-03,07],node5,rack[1-2]-gpu[1-2]"``.

    Returns:
        The host names, leftmost bracket group varying slowest.

    Raises:
        ValueError: unbalanced or nested brackets, an empty or non-numeric
            range, a reversed range (``[5-1]``), or more than ``MAX_HOSTS``
            hosts in total.
    """
    hosts: list[str] = []
    for item in _split_items(expr):
        parts = _parse_item(item, expr)
        count = 1
        for choices in parts:
            count *= len(choices)
        if len(hosts) + count > MAX_HOSTS:
            raise ValueError(_too_many(expr))
        hosts.extend("".join(combo) for combo in itertools.product(*parts))
    return hosts


def compress(hosts: Iterable[str]) -> str:
    """Compress host names into a Slurm hostlist expression.

    Hosts are grouped by the text before and after their last number; each
    group becomes ``prefix[ranges]suffix`` (or the plain name when the group
    holds one host). Zero-padding is kept: ``gpu09, gpu10`` → ``gpu[09-10]``,
    ``gpu1, gpu01`` → ``gpu[1,01]``. Hosts without digits are kept as-is.
    Duplicates are dropped; the output is deterministic and independent of
    the input order.

    Args:
        hosts: host names; they must not contain brackets, commas or
            whitespace.

    Returns:
        The expression; ``""`` for no hosts.

    Raises:
        ValueError: a host name is empty or contains ``[``, ``]``, ``,`` or
            whitespace.
    """
    groups: dict[tuple[str, str], set[str]] = {}
    plain: set[str] = set()
    for host in hosts:
        if not host or _FORBIDDEN.search(host):
            raise ValueError(Text(N_("cannot put host name {host!r} in a hostlist"), host=host))
        match = _LAST_NUMBER.match(host)
        if match is None:
            plain.add(host)
        else:
            prefix, digits, suffix = match.groups()
            groups.setdefault((prefix, suffix), set()).add(digits)

    items: list[tuple[tuple[object, ...], str]] = []
    for host in plain:
        items.append(((natural_key(host), natural_key(""), 0), host))
    for (prefix, suffix), numbers in groups.items():
        key = (natural_key(prefix), natural_key(suffix), 1)
        ordered = sorted(numbers, key=lambda d: (int(d), d))
        if len(ordered) == 1:
            items.append((key, f"{prefix}{ordered[0]}{suffix}"))
        else:
            items.append((key, f"{prefix}[{','.join(_ranges(ordered))}]{suffix}"))
    items.sort(key=lambda pair: pair[0])
    return ",".join(text for _, text in items)


def writable(host: str) -> bool:
    """Whether ``compress`` can put ``host`` in a hostlist (non-empty; no brackets, commas, whitespace)."""
    return bool(host) and _FORBIDDEN.search(host) is None


def split_writable(hosts: Iterable[str]) -> tuple[list[str], list[str]]:
    """(names a hostlist can hold, the others sorted and without duplicates)."""
    ok: list[str] = []
    bad: set[str] = set()
    for host in hosts:
        if writable(host):
            ok.append(host)
        else:
            bad.add(host)
    return ok, sorted(bad)


def quoted(host: str) -> str:
    """A name outside a hostlist, as reports list it: quoted, control characters escaped, at most 80 characters."""
    return json.dumps(printable(host, 80), ensure_ascii=False)


def compress_lenient(hosts: Iterable[str], separator: str = ",") -> str:
    """``compress`` of the names a hostlist can hold, then each other name :func:`quoted`; never raises.

    ``compress_lenient(["gpu1", "gpu2", "dgx 07"])`` is ``gpu[1-2],"dgx 07"``.
    """
    ok, bad = split_writable(hosts)
    text = compress(ok)
    return separator.join(([text] if text else []) + [quoted(h) for h in bad])


def natural_key(text: str) -> tuple[tuple[object, ...], ...]:
    """Sort key that orders digit runs numerically: ``gpu2`` < ``gpu10``.

    Distinct strings always get distinct keys (``gpu1`` ≠ ``gpu01``).
    """
    parts = re.split(r"(\d+)", text)
    return tuple(
        (int(part), part) if index % 2 else (part,)
        for index, part in enumerate(parts)
    )


def sort_key(host: str) -> tuple[object, ...]:
    """The order in which ``expand(compress(hosts))`` returns hosts.

    Hosts are ordered by the text before their last number (naturally), then
    the text after it, then hosts without a number before numbered ones, then
    the number's value.
    """
    match = _LAST_NUMBER.match(host)
    if match is None:
        return (natural_key(host), natural_key(""), 0, 0, "")
    prefix, digits, suffix = match.groups()
    return (natural_key(prefix), natural_key(suffix), 1, int(digits), digits)


def _ranges(ordered: list[str]) -> list[str]:
    """Merge sorted digit strings into ``lo-hi`` elements that expand back."""
    out: list[str] = []
    index = 0
    while index < len(ordered):
        start = ordered[index]
        width = len(start)
        end = index
        while end + 1 < len(ordered):
            following = ordered[end + 1]
            value = int(ordered[end]) + 1
            if int(following) != value or str(value).zfill(width) != following:
                break
            end += 1
        out.append(start if end == index else f"{start}-{ordered[end]}")
        index = end + 1
    return out


def _split_items(expr: str) -> list[str]:
    """Split at commas/whitespace outside brackets; check bracket balance."""
    items: list[str] = []
    depth = 0
    current: list[str] = []
    for position, char in enumerate(expr):
        if char == "[":
            if depth:
                raise ValueError(Text(N_("hostlist {expr!r}: nested '[' at position {position}"), expr=expr,
                                      position=position))
            depth = 1
        elif char == "]":
            if not depth:
                raise ValueError(Text(N_("hostlist {expr!r}: unbalanced ']' at position {position}"), expr=expr,
                                      position=position))
            depth = 0
        elif char in _SEPARATORS and not depth:
            if current:
                items.append("".join(current))
                current = []
            continue
        current.append(char)
    if depth:
        raise ValueError(Text(N_("hostlist {expr!r}: unbalanced '[' (missing ']')"), expr=expr))
    if current:
        items.append("".join(current))
    return items


def _parse_item(item: str, expr: str) -> list[list[str]]:
    """Turn ``rack[1-2]-gpu[1-2]`` into choices per part: [[rack],[1,2],...]."""
    parts: list[list[str]] = []
    for index, piece in enumerate(re.split(r"\[([^\]]*)\]", item)):
        if index % 2 == 0:
            if piece:
                parts.append([piece])
        else:
            parts.append(_parse_brackets(piece, expr))
    return parts


def _too_many(expr: str) -> Text:
    return Text(N_("hostlist {expr!r} expands to more than {limit} hosts"), expr=expr, limit=MAX_HOSTS)


def _parse_brackets(body: str, expr: str) -> list[str]:
    values: list[str] = []
    for element in body.split(","):
        element = "".join(element.split())
        if not element:
            raise ValueError(Text(N_("hostlist {expr!r}: empty element in [{body}]"), expr=expr, body=body))
        low, dash, high = element.partition("-")
        if not _NUMBER.fullmatch(low) or (dash and not _NUMBER.fullmatch(high)):
            raise ValueError(Text(N_("hostlist {expr!r}: {element!r} is not a number or a lo-hi range"), expr=expr,
                                  element=element))
        if not dash:
            values.append(low)
            continue
        start, stop = int(low), int(high)
        if stop < start:
            raise ValueError(Text(N_("hostlist {expr!r}: reversed range {element!r}"), expr=expr, element=element))
        if stop - start + 1 + len(values) > MAX_HOSTS:
            raise ValueError(_too_many(expr))
        width = len(low)
        values.extend(str(number).zfill(width) for number in range(start, stop + 1))
    return values
