"""Per-minute aggregation of instantaneous GPU samples (pure, no I/O).

For each GPU and wall-clock minute the agent keeps min/mean/max of every gauge,
the last value of every counter and state (the kinds of fleetmon.fields' catalog), for each throttle reason the number
of samples in which it was active, and the lowest PCIe generation/width seen
while the GPU was busy (links power down at idle, so idle samples never count).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fleetmon.fields import CATALOG, THROTTLE_REASONS, Field
from fleetmon.records import GpuMinute, GpuSample, Status, minute_key, throttle_key

BUSY_UTIL_PCT = 50.0
"""A sample counts as busy when GPU utilization is at least this and GpuIdle is clear."""

_IDLE_BIT = 0x1
_STATUS_RANK = {Status.UNSUPPORTED.value: 1, Status.FAILED.value: 2, Status.GPU_LOST.value: 3}


def is_busy(values: dict[str, Any]) -> bool:
    """Whether one sample shows the GPU under load."""
    util = values.get("util_gpu_pct")
    mask = values.get("throttle_mask") or 0
    return util is not None and util >= BUSY_UTIL_PCT and not (int(mask) & _IDLE_BIT)


@dataclass(frozen=True)
class _Names:
    """The catalog's field names by what a minute keeps of them (fleetmon.fields.ROLLUPS)."""

    gauges: tuple[str, ...]  # min/mean/max
    last: tuple[str, ...]  # counters, then states: the last value
    dropped: frozenset[str] = frozenset()  # export-only fields: no value and no status in a minute

    @classmethod
    def of(cls, fields: tuple[Field, ...]) -> "_Names":
        dropped = frozenset(f.name for f in fields if f.stored is None)  # export-only: /metrics and /v1/latest
        fields = tuple(f for f in fields if f.stored is not None)
        return cls(tuple(f.name for f in fields if f.kind == "gauge"),
                   tuple(f.name for f in fields if f.kind == "counter")
                   + tuple(f.name for f in fields if f.kind == "state"), dropped)


_DEFAULT_NAMES = _Names.of(CATALOG)


@dataclass
class _Acc:
    ts: int
    uuid: str
    index: int
    names: _Names = _DEFAULT_NAMES
    n: int = 0
    sums: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    mins: dict[str, float] = field(default_factory=dict)
    maxs: dict[str, float] = field(default_factory=dict)
    last: dict[str, Any] = field(default_factory=dict)
    throttle: dict[str, int] = field(default_factory=dict)
    busy_n: int = 0
    busy_gen: int | None = None
    busy_width: int | None = None
    status: dict[str, str] = field(default_factory=dict)
    state: str = "ok"

    def add(self, s: GpuSample) -> None:
        self.n += 1
        self.state = s.state
        v = s.values
        for g in self.names.gauges:
            x = v.get(g)
            if x is None:
                continue
            x = float(x)
            self.sums[g] = self.sums.get(g, 0.0) + x
            self.counts[g] = self.counts.get(g, 0) + 1
            self.mins[g] = min(self.mins.get(g, x), x)
            self.maxs[g] = max(self.maxs.get(g, x), x)
        for c in self.names.last:
            x = v.get(c)
            if x is not None:
                self.last[c] = x
        mask = v.get("throttle_mask")
        if mask is not None:
            for r in THROTTLE_REASONS:
                if int(mask) & r.bit:
                    self.throttle[r.name] = self.throttle.get(r.name, 0) + 1
        if is_busy(v):
            self.busy_n += 1
            gen, width = v.get("pcie_gen"), v.get("pcie_width")
            if gen is not None:
                self.busy_gen = gen if self.busy_gen is None else min(self.busy_gen, gen)
            if width is not None:
                self.busy_width = width if self.busy_width is None else min(self.busy_width, width)
        for name, st in s.status.items():
            if name not in self.names.dropped and _STATUS_RANK.get(st, 0) > _STATUS_RANK.get(self.status.get(name, ""), 0):
                self.status[name] = st

    def finish(self, seq: int) -> GpuMinute:
        values: dict[str, Any] = {}
        for g in self.names.gauges:
            if g in self.counts:
                values[minute_key(g, "min")] = self.mins[g]
                values[minute_key(g, "mean")] = round(self.sums[g] / self.counts[g], 3)
                values[minute_key(g, "max")] = self.maxs[g]
            else:
                for stat in ("min", "mean", "max"):
                    values[minute_key(g, stat)] = None
        for c in self.names.last:
            values[c] = self.last.get(c)
        for r in THROTTLE_REASONS:
            values[throttle_key(r.name)] = self.throttle.get(r.name, 0)
        values["busy_n"] = self.busy_n
        values["pcie_gen_busy_min"] = self.busy_gen
        values["pcie_width_busy_min"] = self.busy_width
        # A field that read fine at least once this minute keeps its value;
        # keep its worst status anyway so failures stay visible.
        return GpuMinute(seq=seq, ts=self.ts, uuid=self.uuid, index=self.index, n=self.n,
                         values=values, status=dict(self.status), state=self.state)


class MinuteAggregator:
    """Turns a stream of samples into completed per-minute records.

    ``add`` returns the minutes completed by this sample (the sample's minute
    differs from the open one). Sequence numbers are assigned by the buffer;
    records come out with ``seq=0``. ``fields`` is the field catalog whose
    gauges, counters and states a minute keeps.
    """

    def __init__(self, fields: tuple[Field, ...] = CATALOG) -> None:
        self._names = _DEFAULT_NAMES if fields is CATALOG else _Names.of(fields)
        self._open: dict[str, _Acc] = {}

    def add(self, sample: GpuSample) -> list[GpuMinute]:
        minute = int(sample.ts // 60) * 60
        done: list[GpuMinute] = []
        acc = self._open.get(sample.uuid)
        if acc is not None and acc.ts != minute:
            done.append(acc.finish(0))
            acc = None
        if acc is None:
            acc = _Acc(ts=minute, uuid=sample.uuid, index=sample.index, names=self._names)
            self._open[sample.uuid] = acc
        acc.add(sample)
        return done

    def flush(self, before_ts: float | None = None) -> list[GpuMinute]:
        """Complete open minutes (all, or those that ended before ``before_ts``)."""
        done = []
        for uuid, acc in list(self._open.items()):
            if before_ts is None or acc.ts + 60 <= before_ts:
                done.append(acc.finish(0))
                del self._open[uuid]
        return done
