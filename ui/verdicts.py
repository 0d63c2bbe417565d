"""The verdict of every node and GPU of one snapshot, judged once on the reader thread for every surface.

The fleet tree, the All GPUs table, the summary bar, the Findings counts and
the tray all read one :class:`Verdicts` (``FleetSnapshot.verdicts``), judged by
:mod:`fleetmon.health.verdict` as the report judges (``engine.node_verdicts``):

* a node's reach is :func:`fleetmon.health.verdict.reach_of` of its stored
  row (newest good poll, newest attempt, an open outage: status
  "unreachable") at the snapshot's ``read_at``;
* a node's verdict is :func:`fleetmon.health.verdict.combine` of the open
  findings of the node and its GPUs with that reach;
* a GPU's verdict combines its own open findings and its node's with the
  node's reach, or, while its node answers, its own reach: "stale" when its
  newest sample is older than the stale limit, "unknown" when it has none.

No Qt here, no database: plain Python over the snapshot's rows (8,000 GPUs in
a few milliseconds; a GPU without findings costs one comparison).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fleetmon.health import verdict as V
from fleetmon.health.thresholds import Thresholds
from fleetmon.vocab import GpuState, Severity

__all__ = ["STALE_AFTER_S", "VERDICT_SEVERITY", "Verdicts", "judge", "severity_word"]

STALE_AFTER_S: float = Thresholds().stale_after_minutes * 60.0
"""The default stale limit (``stale_after_minutes``); a fleet file's ``[thresholds]`` may set another."""

VERDICT_SEVERITY: dict[str, str] = {"fail": Severity.CRITICAL, "unreachable": Severity.CRITICAL,
                                    "stale": Severity.WARNING, "warn": Severity.WARNING}
"""The severity a verdict reads as where the GUI tints or ranks by severity ("unknown" and "pass": none)."""


def severity_word(verdict: str) -> str:
    """The old health words of a verdict: "critical", "warning" or "" (pass, unknown)."""
    return str(VERDICT_SEVERITY.get(verdict, ""))


@dataclass(frozen=True)
class Verdicts:
    """Verdicts of one snapshot at ``now`` (see the module doc)."""

    now: float = 0.0
    stale_after_s: float = STALE_AFTER_S
    nodes: Mapping[str, str] = field(default_factory=dict)
    """node → verdict (every node in the snapshot's nodes or rows)."""
    gpus: Mapping[str, str] = field(default_factory=dict)
    """GPU uuid → verdict."""
    gpu_status: Mapping[str, str] = field(default_factory=dict)
    """GPU uuid → status word: "ok", "lost", "unreachable", "stale" or "unknown" (the Status column)."""
    node_status: Mapping[str, str] = field(default_factory=dict)
    """node → status word: "unreachable" while its latest poll fails (even if it was never reached:
    its verdict is then "unknown"), else its reach, else "ok"."""
    reach: Mapping[str, str] = field(default_factory=dict)
    """node → "unreachable", "stale" or "unknown" for the nodes that do not answer now (absent: it answers)."""
    data_at: Mapping[str, float] = field(default_factory=dict)
    """node or GPU uuid → the time of its newest data, for the nodes and GPUs that read "stale"."""

    def node(self, name: str) -> str:
        return self.nodes.get(name, "unknown")

    def gpu(self, uuid: str) -> str:
        return self.gpus.get(uuid, "unknown")

    def age(self, key: str) -> float | None:
        """Seconds since the newest data of a stale node or GPU (None: not stale)."""
        ts = self.data_at.get(key)
        return None if ts is None else max(0.0, self.now - ts)

    def counts(self) -> dict[str, int]:
        """Nodes per verdict, in :data:`fleetmon.health.verdict.VERDICTS` order (zeros included)."""
        out = dict.fromkeys(V.VERDICTS, 0)
        for v in self.nodes.values():
            out[v] = out.get(v, 0) + 1
        return out

    def worst(self) -> str:
        """The worst node verdict ("pass" for no node)."""
        return V.worst_verdict(self.nodes.values())


def _pairs(found: Iterable[Any]) -> list[tuple[str, str]]:
    return [(str(f[0]), str(f[1])) for f in found]


def judge(snap: Any, stale_after_s: float | None = None, now: float | None = None) -> Verdicts:
    """The :class:`Verdicts` of ``snap`` (a :class:`ui.snapshot.FleetSnapshot`) at ``now`` (its ``read_at``)."""
    limit = STALE_AFTER_S if stale_after_s is None else float(stale_after_s)
    now = float(snap.read_at if now is None else now)
    reach: dict[str, str] = {}
    node_status: dict[str, str] = {}
    data_at: dict[str, float] = {}
    node_rows = snap.nodes
    seen: set[str] = set()
    for name, n in node_rows.items():
        seen.add(name)
        down = n.status == "unreachable"
        r = V.reach_of(last_ok=n.last_ok, last_attempt=n.last_attempt, outage_open=down, now=now, stale_after_s=limit)
        node_status[name] = "unreachable" if down else (r or "ok")
        if r is not None:
            reach[name] = r
            if r == "stale" and n.last_ok is not None:
                data_at[name] = float(n.last_ok)
    for row in snap.rows:  # a GPU row whose node has no stored row (should not happen): judged from the row
        if row.node not in seen:
            seen.add(row.node)
            down = row.node_status == "unreachable"
            r = V.reach_of(last_ok=row.last_ok, outage_open=down, now=now, stale_after_s=limit)
            node_status[row.node] = "unreachable" if down else (r or "ok")
            if r is not None:
                reach[row.node] = r
                if r == "stale" and row.last_ok is not None:
                    data_at[row.node] = float(row.last_ok)
    by_node: dict[str, list[tuple[str, str]]] = {}
    for f in snap.findings:
        if f.node:
            by_node.setdefault(f.node, []).append((str(f.severity or ""), str(f.kind or "")))
    nodes = {name: V.combine(by_node.get(name, ()), reach.get(name)) for name in seen}
    gpus: dict[str, str] = {}
    status: dict[str, str] = {}
    old = now - limit
    for row in snap.rows:
        node_reach = reach.get(row.node)
        own: str | None = node_reach
        if own is None:
            ts = row.latest_ts
            if ts is None:
                own = "unknown"
            elif ts < old:
                own = "stale"
                data_at[row.uuid] = float(ts)
        elif own == "stale" and row.node in data_at:
            data_at[row.uuid] = data_at[row.node]
        st = node_status.get(row.node, "ok")
        if st != "ok":
            status[row.uuid] = st
        elif row.state == GpuState.LOST:
            status[row.uuid] = "lost"
        else:
            status[row.uuid] = own or "ok"
        gpus[row.uuid] = V.combine(_pairs(row.findings), own) if row.findings else (own or "pass")
    return Verdicts(now, limit, nodes, gpus, status, node_status, reach, data_at)
