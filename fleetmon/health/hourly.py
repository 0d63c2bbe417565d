"""Hourly rows: what :func:`rollup_hourly` makes from minute rows.

Hourly rows (``GpuHistory.hourly``, optional, for windows longer than the raw
minutes kept in memory) have these keys:

* ``ts`` (start of the hour), ``minutes`` (minute rows rolled up), ``n``,
  ``busy_n``, ``busy_minutes`` (minutes with ``busy_n >= n / 2``);
* ``<gauge>_min`` (min), ``_mean`` (sample-weighted mean), ``_max`` (max);
* counters: the last value, and ``<counter>_delta``, the sum of the increases
  (a counter that drops was reset: the new value counts as the increase);
* states: the last value and ``<state>_max``;
* ``thr_<reason>``: sums; ``pcie_gen_busy_min`` / ``pcie_width_busy_min``: min;
* ``sm_clock_busy_mhz``: mean of ``sm_clock_mhz_mean`` over busy minutes with
  no hardware or thermal throttle reason (the derating input) and
  ``sm_clock_busy_minutes``, how many minutes that mean covers;
* ``lost_minutes``: minutes in state "lost"; ``failed_<field>``: minutes in
  which the field's status was "failed" (for ``power_w``, ``temp_c``, ...).

Minute rows are described in :mod:`fleetmon.health.series`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fleetmon.records import Status
from fleetmon.fields import COUNTER_NAMES, GAUGE_NAMES, HW_THROTTLE_REASONS, STATE_NAMES, THROTTLE_NAMES
from fleetmon.health.series import HOUR_S, Series

__all__ = ["busy_clean_clock", "rollup_hourly"]


def rollup_hourly(minutes: Series) -> Series:
    """Roll minute rows up into hourly rows (the keys in the module doc).

    Pure reference implementation for the storage layer and the tests.
    """
    if not minutes:
        return Series(columns={"ts": []}, step_s=HOUR_S)
    ts = minutes.ts
    groups: list[tuple[int, int, int]] = []  # (hour, start, stop)
    start = 0
    hour = int(ts[0]) // HOUR_S * HOUR_S
    for i in range(1, len(ts)):
        h = int(ts[i]) // HOUR_S * HOUR_S
        if h != hour:
            groups.append((hour, start, i))
            hour, start = h, i
    groups.append((hour, start, len(ts)))

    n = minutes.col("n")
    busy = minutes.col("busy_n")
    cols: dict[str, list[Any]] = {"ts": [g[0] for g in groups]}
    cols["minutes"] = [g[2] - g[1] for g in groups]
    cols["n"] = [sum(x or 0 for x in n[a:b]) for _, a, b in groups]
    cols["busy_n"] = [sum(x or 0 for x in busy[a:b]) for _, a, b in groups]
    cols["busy_minutes"] = [
        sum(1 for i in range(a, b) if (busy[i] or 0) * 2 >= (n[i] or 0) and (busy[i] or 0) > 0)
        for _, a, b in groups
    ]
    for g in GAUGE_NAMES:
        lo, mean, hi = minutes.col(g + "_min"), minutes.col(g + "_mean"), minutes.col(g + "_max")
        cols[g + "_min"] = [_agg(min, lo[a:b]) for _, a, b in groups]
        cols[g + "_max"] = [_agg(max, hi[a:b]) for _, a, b in groups]
        out = []
        for _, a, b in groups:
            num = den = 0.0
            for i in range(a, b):
                if mean[i] is not None:
                    w = n[i] or 1
                    num += mean[i] * w
                    den += w
            out.append(round(num / den, 3) if den else None)
        cols[g + "_mean"] = out
    for c in COUNTER_NAMES:
        values = minutes.col(c)
        deltas = minutes.delta(c)
        cols[c] = [_last(values[a:b]) for _, a, b in groups]
        cols[c + "_delta"] = [
            sum(deltas[a:b]) if any(v is not None for v in values[a:b]) else None
            for _, a, b in groups
        ]
    for s in STATE_NAMES:
        values = minutes.col(s)
        cols[s] = [_last(values[a:b]) for _, a, b in groups]
        cols[s + "_max"] = [_agg(max, values[a:b]) for _, a, b in groups]
    for r in THROTTLE_NAMES:
        values = minutes.col("thr_" + r)
        cols["thr_" + r] = [sum(x or 0 for x in values[a:b]) for _, a, b in groups]
    for k in ("pcie_gen_busy_min", "pcie_width_busy_min"):
        values = minutes.col(k)
        cols[k] = [_agg(min, values[a:b]) for _, a, b in groups]
    clean = busy_clean_clock(minutes)
    sm_busy, sm_n = [], []
    for _, a, b in groups:
        vals = [v for v in clean[a:b] if v is not None]
        sm_busy.append(round(sum(vals) / len(vals), 1) if vals else None)
        sm_n.append(len(vals))
    cols["sm_clock_busy_mhz"] = sm_busy
    cols["sm_clock_busy_minutes"] = sm_n
    lost = minutes.lost()
    cols["lost_minutes"] = [sum(1 for i in range(a, b) if lost[i]) for _, a, b in groups]
    statuses = minutes.statuses()
    failed_fields = sorted({k for s in statuses if s for k, v in s.items() if v == Status.FAILED})
    for f in failed_fields:
        cols["failed_" + f] = [
            sum(1 for st in statuses[a:b] if st is not None and st.get(f) == Status.FAILED)
            for _, a, b in groups
        ]
    return Series(columns=cols, step_s=HOUR_S)


def busy_clean_clock(series: Series) -> list[float | None]:
    """Per row: the SM clock (MHz) while busy and not throttled, else None.

    A minute counts when at least 80 % of its samples were busy and no
    hardware or thermal throttle reason was active (software power capping
    is allowed: it is how a healthy GPU runs at full load). Hourly rows give
    ``sm_clock_busy_mhz``.
    """
    n = series.col("n")
    busy = series.col("busy_n")
    sm = series.col("sm_clock_mhz_mean")
    hourly = series.col("sm_clock_busy_mhz")
    out: list[float | None] = [
        s if (s is not None and b and nn and b >= 0.8 * nn) else None
        for s, b, nn in zip(sm, busy, n)
    ]
    for key in HW_THROTTLE_REASONS:
        values = series.col("thr_" + key)
        if any(values):
            out = [None if v else o for o, v in zip(out, values)]
    if hourly.count(None) != len(hourly):
        out = [float(h) if h is not None else o for o, h in zip(out, hourly)]
    return out


def _agg(fn: Any, values: Sequence[Any]) -> Any:
    known = [v for v in values if v is not None]
    return fn(known) if known else None


def _last(values: Sequence[Any]) -> Any:
    for v in reversed(values):
        if v is not None:
            return v
    return None
