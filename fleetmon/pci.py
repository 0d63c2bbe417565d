"""PCI addresses in one spelling: the kernel's ``dddd:bb:dd.f``, lowercase hex.

NVML reports ``00000000:3B:00.0`` (eight-digit domain, upper case), the kernel
log ``PCI:0000:3b:00`` or ``3b:00``; the agent stores, the Xid parser matches and
the health rules compare bus ids only after :func:`normalize_bus_id`.

Core module: standard library only (the agent imports it).
"""

from __future__ import annotations

import re

__all__ = ["normalize_bus_id"]

_HEX = "[0-9A-Fa-f]"
_PCI_FULL_RE = re.compile(
    rf"(?:(?P<domain>{_HEX}{{4,8}}):)?(?P<bus>{_HEX}{{2}}):(?P<device>{_HEX}{{2}})(?:\.(?P<function>[0-7]))?"
)


def normalize_bus_id(address: str) -> str:
    """Return ``address`` as "dddd:bb:dd.f" in lowercase hex.

    Accepts "38:00", "0000:38:00", "00000000:38:00.0" (NVML, nvidia-smi),
    "PCI:0018:01:00" (kernel log). Adds domain 0000 and function .0 when
    missing. Returns the stripped, lowercased input when it is not a PCI
    address (NVML's placeholder text, an empty string).
    """
    text = address.strip()
    if text[:4].upper() == "PCI:":
        text = text[4:]
    m = _PCI_FULL_RE.fullmatch(text)
    if m is None:
        return text.lower()
    domain = int(m.group("domain"), 16) if m.group("domain") else 0
    function = int(m.group("function")) if m.group("function") else 0
    return f"{domain:04x}:{int(m.group('bus'), 16):02x}:{int(m.group('device'), 16):02x}.{function}"
