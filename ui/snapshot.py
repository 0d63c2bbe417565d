"""One read of the fleet for the window (:class:`FleetSnapshot`): what the reader thread hands the views.

Its own module so that the models that take a snapshot need not import the reader (no import circle).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from storage.acks import AckRow
from storage.intake import IntakeRow
from storage.rows import FleetRow, GpuRow, NodeRow, StoredFinding
from ui.verdicts import Verdicts, judge


@dataclass(frozen=True)
class FleetSnapshot:
    """One read of the fleet: GPUs (findings attached), nodes, cards' inventory, open findings, acks, intakes."""

    rows: tuple[FleetRow, ...] = ()
    nodes: Mapping[str, NodeRow] = field(default_factory=dict)
    gpus: Mapping[str, GpuRow] = field(default_factory=dict)
    findings: tuple[StoredFinding, ...] = ()
    acks: Mapping[str, AckRow] = field(default_factory=dict)
    read_at: float = 0.0
    intakes: Mapping[str, IntakeRow] = field(default_factory=dict)
    """Each card's newest intake (verdict and time; ``fleetmon intake``), by UUID."""
    derived: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Built on the reader thread for the GUI (``verdicts``: :class:`ui.verdicts.Verdicts`, ``tree``: the
    fleet tree, ``summary``: the summary bar, ``versions``: the versions matrix' rows)."""

    @property
    def verdicts(self) -> Verdicts:
        """Every node's and GPU's verdict at ``read_at``: judged once, on the reader thread by
        :func:`ui.fleet_reader.read_snapshot` (a snapshot built otherwise is judged here, once, with the
        default stale limit)."""
        v = self.derived.get("verdicts")
        if not isinstance(v, Verdicts):
            v = self.derived["verdicts"] = judge(self)
        return v

    def group_of(self, node: str | None) -> str:
        n = self.nodes.get(node or "")
        return (n.group if n is not None else None) or ""

    def acked(self, f: StoredFinding) -> AckRow | None:
        """The acknowledgement that still covers ``f`` (None: none, expired or the finding worsened)."""
        a = self.acks.get(f.key)
        return a if a is not None and a.covers(f.severity, self.read_at) else None

    @property
    def last_poll(self) -> float | None:
        return max((n.last_attempt for n in self.nodes.values() if n.last_attempt), default=None)
