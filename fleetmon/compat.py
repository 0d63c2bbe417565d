"""What lets the core and the agent run on Python 3.8, the oldest a GPU node may have.

The node agent ships as one file (``fleetmon-agent.pyz``, see packaging/build_agent_pyz.py)
for nodes whose Python is as old as 3.8 (Ubuntu 20.04); every module it holds
keeps to 3.8, which tests/agent/test_py38_syntax.py checks. The two newer
features the code relied on are here, with the same behaviour on every version:

* :class:`StrEnum`: ``enum.StrEnum`` (3.11) for 3.8: a member *is* its string
  (``==``, hashing, ``json.dumps``, SQLite), and ``str()``/``format()``/f-strings
  give its value, not ``Class.NAME``.
* :data:`SLOTS`: ``@dataclass(frozen=True, **SLOTS)`` is ``slots=True`` where
  dataclasses have it (3.10+) and a plain dataclass before.

Core module: standard library only.
"""

from __future__ import annotations

import enum
import sys
from typing import Any, Dict

__all__ = ["SLOTS", "StrEnum"]

SLOTS: Dict[str, Any] = {"slots": True} if sys.version_info >= (3, 10) else {}
"""Keyword arguments of ``dataclass`` for ``__slots__`` where supported (Python 3.10+)."""


class StrEnum(str, enum.Enum):
    """An enum whose members are strings and print as their value (``enum.StrEnum`` before 3.11)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, format_spec: str) -> str:
        return format(str(self.value), format_spec)
