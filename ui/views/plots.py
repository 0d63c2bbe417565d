"""HistoryPlots: one GPU's history as stacked panels on one linked date/time axis.

Design notes (each from a problem seen on the demo):

* every panel keeps :data:`PANEL_MIN_H` pixels; the stack scrolls instead of
  squeezing panels to unreadable strips at the default window size, and the
  mouse wheel scrolls that stack (Ctrl+wheel zooms the time axis, bounded to
  the window; the y axes follow the data and never zoom below zero);
* the x range is the requested window, not the data's extent, so "7 d" shows
  seven days with real dates even when the card has two hours of data;
* a missing bucket is a NaN (gap, ``connect="finite"``), a reading the card
  does not support is said in the panel ("not supported on this GPU"), never
  drawn as zero; an empty panel always says why;
* gauges are a min–max band with the mean line; at ranges served from rollups
  the hours are merged into at most :data:`MAX_BUCKETS` buckets (a month of
  hours drawn one by one is a solid comb), and what a merged bucket hides is
  drawn as episodes: shaded spans (power brake, power dropout, thermal, PCIe
  link downtrained, node unreachable, no data) at least :data:`SPAN_MIN_PX`
  wide, with a labelled row each in the bottom panel, so a few-minute fault
  last week stands out at 30 d;
* the bottom panel has a labelled row for each throttle reason, episode kind
  and Xid that occurred in the window, at every range, and nothing else;
* downsampling (peak) and clip-to-view are set on each PlotItem after its
  curves are added: pyqtgraph drops them when set on a curve beforehand.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QEvent, QLocale, QObject, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QCursor, QFont, QFontMetrics, QPainter
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QPushButton, QScrollArea, QSizePolicy, QToolTip, QVBoxLayout,
                               QWidget)

from fleetmon.fields import THERMAL_THROTTLE_REASONS, THROTTLE_REASONS
from storage.rows import EventRow, HistoryWindow
from ui import i18n as ui_i18n
from ui.i18n import QT_TRANSLATE_NOOP

PANEL_MIN_H = 170
AXIS_W = 96
"""Every panel's left axis is at least this wide, and all as wide as the bottom panel's longest row label, so
the time axes line up."""
RIGHT_W = 40
ROW_H = 24
"""Pixels per row of the bottom (throttle, episodes, Xid) panel: a label never overlaps its neighbour."""
BOTTOM_CHROME_H = 80
"""The bottom panel's title line, time axis and margins."""
MAX_BUCKETS = 200
"""At most this many buckets across a window drawn from rollups (hours merged into 2, 3, 4, 6, 12, 24 h)."""
SPAN_MIN_PX = 4.0
"""An episode span is drawn at least this wide, so a one-hour fault at 30 d is seen."""
_FACTORS = (1, 2, 3, 4, 6, 8, 12, 24, 48)
Array = np.ndarray


@dataclass(frozen=True)
class Series:
    key: str
    label: str
    colour: str
    width: float = 2.0
    unit: str = ""


@dataclass(frozen=True)
class Panel:
    key: str
    title: str
    unit: str
    series: tuple[Series, ...]
    fields: tuple[str, ...]
    """Catalog fields behind the panel (for "not supported")."""
    band: str | None = None
    """A gauge drawn as its min–max band (``<band>_min`` … ``<band>_max``) under the series."""
    episodes: tuple[str, ...] = ()
    """Episode kinds shaded in this panel (see :data:`EPISODES`)."""


PANELS: tuple[Panel, ...] = (
    Panel("temp_c", QT_TRANSLATE_NOOP("HistoryPlots", "Temperature"), "°C",
          (Series("temp_c_mean", QT_TRANSLATE_NOOP("HistoryPlots", "mean"), "#1565c0"),), ("temp_c",), band="temp_c",
          episodes=("thermal",)),
    Panel("power_w", QT_TRANSLATE_NOOP("HistoryPlots", "Power"), "W",
          (Series("power_w_mean", QT_TRANSLATE_NOOP("HistoryPlots", "mean"), "#1565c0"),
           Series("power_limit_w_mean", QT_TRANSLATE_NOOP("HistoryPlots", "enforced limit"), "#c62828", 1.5)),
          ("power_w",), band="power_w", episodes=("power_brake", "power_dropout")),
    Panel("sm_clock_mhz", QT_TRANSLATE_NOOP("HistoryPlots", "SM clock"), "MHz",
          (Series("sm_clock_mhz_mean", QT_TRANSLATE_NOOP("HistoryPlots", "mean"), "#1565c0"),), ("sm_clock_mhz",),
          band="sm_clock_mhz", episodes=("power_brake", "thermal")),
    Panel("ecc", QT_TRANSLATE_NOOP("HistoryPlots", "ECC errors, retired pages, remapped rows"), "count",
          (Series("ecc_corr_agg", QT_TRANSLATE_NOOP("HistoryPlots", "ECC corrected"), "#1565c0"),
           Series("ecc_unc_agg", QT_TRANSLATE_NOOP("HistoryPlots", "ECC uncorrected"), "#c62828"),
           Series("retired_pages", QT_TRANSLATE_NOOP("HistoryPlots", "retired pages"), "#6a1b9a"),
           Series("remapped_rows", QT_TRANSLATE_NOOP("HistoryPlots", "remapped rows"), "#ef6c00")),
          ("ecc_corr_agg", "ecc_unc_agg", "retired_sbe", "retired_dbe", "remap_corr", "remap_unc")),
    Panel("pcie",
          QT_TRANSLATE_NOOP("HistoryPlots", "PCIe link while busy: generation (left axis), width (right axis)"), "",
          (Series("pcie_gen", QT_TRANSLATE_NOOP("HistoryPlots", "generation"), "#2e7d32"),
           Series("pcie_width", QT_TRANSLATE_NOOP("HistoryPlots", "width"), "#1565c0")),
          ("pcie_gen", "pcie_width"), episodes=("link_down",)),
    Panel("pcie_replay", QT_TRANSLATE_NOOP("HistoryPlots", "PCIe replays"), "count",
          (Series("pcie_replay", QT_TRANSLATE_NOOP("HistoryPlots", "replays"), "#c62828"),), ("pcie_replay",)),
)
"""The line panels; the throttle-reason, episode and Xid timeline comes after them."""

WIDTH_SCALE = 4.5 / 16
"""The PCIe width is drawn at ``width * WIDTH_SCALE`` on the generation axis and read on its own right axis
(×16 at 4.5, between the generation levels, so the two lines never coincide)."""


@dataclass(frozen=True)
class Episode:
    key: str
    label: str
    colour: tuple[int, int, int]


EPISODES: tuple[Episode, ...] = (
    Episode("power_brake", QT_TRANSLATE_NOOP("HistoryPlots", "power brake"), (198, 40, 40)),
    Episode("power_dropout", QT_TRANSLATE_NOOP("HistoryPlots", "power dropout"), (230, 81, 0)),
    Episode("thermal", QT_TRANSLATE_NOOP("HistoryPlots", "thermal"), (216, 67, 21)),
    Episode("link_down", QT_TRANSLATE_NOOP("HistoryPlots", "PCIe downtrained"), (106, 27, 154)),
    Episode("no_data", QT_TRANSLATE_NOOP("HistoryPlots", "no data"), (96, 125, 139)),
    Episode("unreachable", QT_TRANSLATE_NOOP("HistoryPlots", "node unreachable"), (55, 71, 79)),
)
"""Episodes shaded as spans: throttle-based ones come from the reasons, the rest from their own rows."""
_EPISODE = {e.key: e for e in EPISODES}
_EPISODE_LABELS = {e.label for e in EPISODES}
_COUNT = QT_TRANSLATE_NOOP("HistoryPlots", "count")  # the ECC and replay panels' unit, translated in their title
_OUTAGES = ("no_data", "unreachable")
"""Shaded in every line panel (hatched): the lines break there."""
_THERMAL = THERMAL_THROTTLE_REASONS

_SUMS = {"retired_pages": ("retired_sbe", "retired_dbe"), "remapped_rows": ("remap_corr", "remap_unc")}


def column(window: HistoryWindow, key: str) -> Array:
    """A key over the window as floats; None → NaN; the derived sums are NaN unless a part is known."""
    parts = _SUMS.get(key)
    if parts is not None:
        a, b = column(window, parts[0]), column(window, parts[1])
        both = np.where(np.isnan(a), 0.0, a) + np.where(np.isnan(b), 0.0, b)
        return np.where(np.isnan(a) & np.isnan(b), math.nan, both)
    return np.array(window.column(key), dtype=float)  # numpy turns None into NaN


def columns(window: HistoryWindow, keys: Sequence[str]) -> dict[str, Array]:
    """Several keys at once (one pass over the rows: a GPU switch reads some thirty of them)."""
    plain = [k for k in keys if k not in _SUMS]
    out: dict[str, Array] = {}
    if plain:
        if window.rows:
            matrix = np.array([list(map(r.get, plain)) for r in window.rows], dtype=float)
        else:
            matrix = np.empty((0, len(plain)))
        out = {k: matrix[:, i].copy() for i, k in enumerate(plain)}
    for k in keys:
        if k in _SUMS:
            out[k] = column(window, k)
    return out


def gap_index(ts: Array, step_s: int) -> Array:
    """Positions (for ``np.insert``) where more than 1.5 steps pass between rows: a gap to draw as NaN."""
    if len(ts) < 2:
        return np.empty(0, dtype=int)
    return np.nonzero(np.diff(ts) > 1.5 * step_s)[0] + 1


def with_gaps(ts: Array, values: Array, gaps: Array) -> tuple[Array, Array]:
    """x and y with a NaN point inserted in each gap (the x half-way), so finite-connected curves break there."""
    if not len(gaps):
        return ts, values
    mid = (ts[gaps - 1] + ts[gaps]) / 2
    return np.insert(ts, gaps, mid), np.insert(values, gaps, math.nan)


def with_breaks(ts: Array, values: Array, at: Sequence[float]) -> tuple[Array, Array]:
    """x and y with a NaN point inserted at each time of ``at`` (sorted), so finite-connected curves break there:
    a merged bucket on each side of a two-hour outage must not be joined by a line."""
    if not len(at) or not len(ts):
        return ts, values
    mids = np.asarray(at, dtype=float)
    pos = np.searchsorted(ts, mids)
    return np.insert(ts, pos, mids), np.insert(values, pos, math.nan)


def throttle_active(window: HistoryWindow) -> dict[str, Array]:
    """Per throttle reason, 1.0 where it was active in a row, NaN elsewhere.

    Minute rows carry the NVML bit mask; rollup rows count the minutes each reason was set (``thr_*``).
    """
    out: dict[str, Array] = {}
    for name, count in throttle_counts(window).items():
        out[name] = np.where(count > 0, 1.0, math.nan)
    return out


def throttle_counts(window: HistoryWindow, cols: Mapping[str, Array] | None = None) -> dict[str, Array]:
    """Per throttle reason, the samples (rollups) or minutes (1/0, minute rows) it was set in each row
    (``cols``: the window's columns when already read)."""
    out: dict[str, Array] = {}

    def col(key: str) -> Array:
        return cols[key] if cols is not None and key in cols else column(window, key)
    if window.resolution == "minute":
        mask = col("throttle_mask")
        ok = ~np.isnan(mask)
        m = np.where(ok, mask, 0).astype(np.int64)
        for r in THROTTLE_REASONS:
            out[r.name] = np.where(ok & ((m & r.bit) != 0), 1.0, 0.0)
    else:
        for r in THROTTLE_REASONS:
            out[r.name] = np.nan_to_num(col(f"thr_{r.name}"))
    return out


def unsupported_fields(window: HistoryWindow, latest_status: Mapping[str, str]) -> set[str]:
    """Fields the card reports as unsupported: in the latest reading or in any minute of the window."""
    out = {k for k, v in latest_status.items() if v == "unsupported"}
    if window.resolution == "minute":
        for st in window.column("status"):
            if st:
                out.update(k for k, v in st.items() if v == "unsupported")
    return out


def panel_reason(panel: Panel, has_data: bool, unsupported: set[str], source: str | None = None) -> str | None:
    """Why a panel shows nothing (None when it has data).

    ``source``: the tool another vendor's device is read through ("npu-smi"): a reading it does not give is
    "not reported by npu-smi"; an NVIDIA GPU's is "not supported on this GPU" (NVML's answer).
    """
    if has_data:
        return None
    if panel.fields and all(f in unsupported for f in panel.fields):
        return (QCoreApplication.translate("HistoryPlots", "not reported by {tool}").format(tool=source) if source
                else QCoreApplication.translate("HistoryPlots", "not supported on this GPU"))
    return QCoreApplication.translate("HistoryPlots", "no data in this window")


def bucket_factor(span_s: float, step_s: int) -> int:
    """How many rows of ``step_s`` to merge so that ``span_s`` holds at most :data:`MAX_BUCKETS` buckets."""
    need = span_s / step_s / MAX_BUCKETS
    return next((f for f in _FACTORS if f >= need), _FACTORS[-1])


def _reduce(values: Array, starts: Array, how: str, weights: Array) -> Array:
    """One value per bucket (``starts``: first row of each) of rows ordered by time; NaN-aware."""
    if how == "min":
        return np.fmin.reduceat(values, starts)
    if how == "max":
        return np.fmax.reduceat(values, starts)
    if how == "sum":
        return np.add.reduceat(np.nan_to_num(values), starts)
    ok = np.isfinite(values)
    if how == "mean":
        w = np.where(ok, weights, 0.0)
        total = np.add.reduceat(w, starts)
        s = np.add.reduceat(np.where(ok, values, 0.0) * w, starts)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(total > 0, s / np.where(total > 0, total, 1.0), math.nan)
    # "last": the bucket's last known value (counters and states)
    idx = np.where(ok, np.arange(len(values)), -1)
    ends = np.append(starts[1:], len(values))
    last = np.maximum.reduceat(idx, starts)
    return np.where((last >= starts) & (last < ends), values[np.clip(last, 0, None)], math.nan)


def _how(key: str) -> str:
    if key.endswith("_min") or key.endswith("_busy_min"):
        return "min"
    if key.endswith("_max"):
        return "max"
    if key.endswith("_mean"):
        return "mean"
    if key.startswith("thr_") or key in ("n", "busy_n", "minutes", "failed_power_w", "lost"):
        return "sum"
    return "last"


@dataclass
class Drawn:
    """What the plots show of a window: one row per (possibly merged) bucket, oldest first."""

    ts: Array
    step_s: float
    resolution: str
    cols: dict[str, Array] = field(default_factory=dict)
    throttle: dict[str, Array] = field(default_factory=dict)
    episodes: dict[str, list[tuple[float, float]]] = field(default_factory=dict)


_DRAW_KEYS = ("n", "busy_n", "pcie_gen_busy_min", "pcie_width_busy_min",
              *(f"{p.band}_{m}" for p in PANELS if p.band for m in ("min", "max")),
              *(s.key for p in PANELS for s in p.series))


def runs(ts: Array, flag: Array, width: float) -> list[tuple[float, float]]:
    """Spans [start, end) of consecutive flagged buckets of ``width`` seconds starting at ``ts``."""
    idx = np.flatnonzero(flag)
    if not len(idx):
        return []
    starts = ts[idx]
    breaks = np.flatnonzero(np.diff(starts) > 1.5 * width) + 1
    out = []
    for group in np.split(np.arange(len(idx)), breaks):
        out.append((float(starts[group[0]]), float(starts[group[-1]] + width)))
    return out


def outages(events: Sequence[EventRow], until: float, since: float | None = None) -> list[tuple[float, float]]:
    """Spans the node was unreachable: each ``node_unreachable`` to the next ``node_back`` (or ``until``); a
    first ``node_back`` with none before it in the window ends an outage that began before ``since``."""
    out: list[tuple[float, float]] = []
    down: float | None = None
    first = True
    for e in sorted((e for e in events if e.kind in ("node_unreachable", "node_back")), key=lambda e: e.ts):
        if e.kind == "node_unreachable" and down is None:
            down = float(e.ts)
        elif e.kind == "node_back" and down is not None:
            out.append((down, float(e.ts)))
            down = None
        elif e.kind == "node_back" and first and since is not None:
            out.append((float(since), float(e.ts)))
        first = False
    if down is not None:
        out.append((down, float(until)))
    return out


def prepare(window: HistoryWindow, since: float, until: float, events: Sequence[EventRow] = (),
            power_failed: Sequence[tuple[float, int]] = (), link_max: tuple[int, int] | None = None) -> Drawn:
    """The window as drawn: columns per bucket (rollup hours merged to at most :data:`MAX_BUCKETS`), the
    throttle sample counts per bucket and the episodes as spans.

    ``power_failed``: (hour start, minutes) whose power reading failed (``hourly_health``; a rollup's mean
    hides a few failed minutes); ``link_max``: the card's (generation, width), below which a busy link is
    downtrained.
    """
    minute = window.resolution == "minute"
    thr_keys = ["throttle_mask"] if minute else [f"thr_{r.name}" for r in THROTTLE_REASONS]
    cols = columns(window, ["ts", *_DRAW_KEYS, *thr_keys])
    ts = cols.pop("ts")
    thr = throttle_counts(window, cols)
    failed = np.zeros(len(ts))
    if minute:
        failed = np.array([1.0 if (st or {}).get("power_w") == "failed" else 0.0 for st in window.column("status")])
    elif power_failed and len(ts):
        hours = {int(t): m for t, m in power_failed}
        width = window.step_s
        for i, t in enumerate(ts):
            failed[i] = sum(m for h, m in hours.items() if t <= h < t + width) if width > 3600 else hours.get(int(t), 0)
    # A rollup whose power mean is missing although the card was sampled failed for the whole bucket.
    failed = np.where((failed == 0) & np.isnan(cols["power_w_mean"]) & (np.nan_to_num(cols["n"]) > 0)
                      & (window.resolution != "minute"), 1.0, failed)
    cols["failed_power_w"] = failed
    raw_gaps = gap_index(ts, window.step_s)
    no_data = [(float(ts[g - 1] + window.step_s), float(ts[g])) for g in raw_gaps]
    step = float(window.step_s)
    if not minute and len(ts):
        factor = bucket_factor(until - since, window.step_s)
        if factor > 1:
            width = window.step_s * factor
            bucket = ts // width * width
            starts = np.flatnonzero(np.r_[True, np.diff(bucket) != 0])
            weights = np.nan_to_num(cols["n"], nan=1.0)
            cols = {k: _reduce(v, starts, _how(k), weights) for k, v in cols.items()}
            thr = {k: _reduce(v, starts, "sum", weights) for k, v in thr.items()}
            ts = bucket[starts]
            step = float(width)
    drawn = Drawn(ts=ts, step_s=step, resolution=window.resolution, cols=cols, throttle=thr)
    ep: dict[str, list[tuple[float, float]]] = {}
    ep["power_brake"] = runs(ts, thr["hw_power_brake"] > 0, step)
    ep["thermal"] = runs(ts, sum((thr[r] for r in _THERMAL), np.zeros(len(ts))) > 0, step)
    ep["power_dropout"] = runs(ts, cols["failed_power_w"] > 0, step)
    if link_max is not None and len(ts):
        if minute:  # a minute's link while it was busy (idle links drop to Gen1 to save power)
            busy = np.nan_to_num(cols["busy_n"]) > 0
            gen, width_ = cols["pcie_gen"], cols["pcie_width"]
        else:
            busy = np.isfinite(cols["pcie_gen_busy_min"])
            gen, width_ = cols["pcie_gen_busy_min"], cols["pcie_width_busy_min"]
        with np.errstate(invalid="ignore"):
            down = busy & ((np.nan_to_num(gen, nan=99) < link_max[0]) | (np.nan_to_num(width_, nan=99) < link_max[1]))
        ep["link_down"] = runs(ts, down, step)
    else:
        ep["link_down"] = []
    ep["no_data"] = no_data
    ep["unreachable"] = outages(events, until, since)
    drawn.episodes = ep
    # The link drawn is the lowest while busy: an idle link drops to Gen1 to save power, which drawn drew a comb
    # of false drops. Stores without the busy columns (none finite) keep the plain reading.
    for key in ("pcie_gen", "pcie_width"):
        best = cols[f"{key}_busy_min"]
        if np.isfinite(best).any():
            cols[key] = best
    return drawn


class SpanItem(pg.GraphicsObject):  # type: ignore[misc]  # pyqtgraph is untyped
    """Shaded x spans over the whole height of a plot's view, each at least :data:`SPAN_MIN_PX` wide.

    One item paints every span of a kind (a month of power brakes is a hundred spans; a LinearRegionItem each
    would slow every GPU switch)."""

    def __init__(self, colour: tuple[int, int, int], alpha: int = 60, hatched: bool = False) -> None:
        super().__init__()
        self.spans: list[tuple[float, float]] = []
        c = QColor(*colour, alpha)
        self._brush = QBrush(c, Qt.BrushStyle.BDiagPattern) if hatched else QBrush(c)
        self.setZValue(-10)

    def set_spans(self, spans: Sequence[tuple[float, float]]) -> None:
        self.prepareGeometryChange()
        self.spans = list(spans)
        self.update()

    def viewRangeChanged(self) -> None:  # noqa: N802 - pyqtgraph API
        self.prepareGeometryChange()
        super().viewRangeChanged()

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt API
        vr = self.viewRect()
        if vr is None or not self.spans:
            return QRectF()
        return QRectF(vr.left(), vr.top(), vr.width(), vr.height())

    def paint(self, p: QPainter, *args: Any) -> None:
        vr = self.viewRect()
        if vr is None or not self.spans:
            return
        px = self.pixelWidth() or 0.0
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(self._brush)
        for a, b in self.spans:
            if b < vr.left() or a > vr.right():
                continue
            w = max(b - a, SPAN_MIN_PX * px)
            p.drawRect(QRectF((a + b) / 2 - w / 2, vr.top(), w, vr.height()))


_DATE_FORMATS = (QT_TRANSLATE_NOOP("DateAxis", "%a %d"), QT_TRANSLATE_NOOP("DateAxis", "%b"))
"""pyqtgraph's date-axis formats that name a weekday or a month (the rest are numbers)."""


class LocalDateAxis(pg.DateAxisItem):  # type: ignore[misc]  # pyqtgraph is untyped
    """pyqtgraph's date axis (local time), with weekday and month names in the window's language.

    pyqtgraph formats them with ``strftime`` in the C locale ("Thu 03", "Dec") whatever the window's language;
    in English this is pyqtgraph's own axis unchanged."""

    def tickStrings(self, values: Sequence[float], scale: float, spacing: float) -> list[str]:  # noqa: N802
        spec = next((t for t in self.zoomLevel.tickSpecs if t.spacing == spacing), None)
        lang = ui_i18n.current()
        if spec is None or spec.format not in _DATE_FORMATS or lang == "en" or self.utcOffset is not None:
            return list(super().tickStrings(values, scale, spacing))
        locale = QLocale(lang)
        form = QCoreApplication.translate("DateAxis", spec.format)  # "%d日 %a": the day first in Chinese
        out = []
        for v in values:
            try:
                d = datetime.fromtimestamp(float(v))
            except (OverflowError, ValueError, OSError):
                out.append("")
                continue
            names = form.replace("%a", locale.dayName(d.isoweekday(), QLocale.FormatType.ShortFormat)).replace(
                "%b", locale.monthName(d.month, QLocale.FormatType.ShortFormat))
            out.append(d.strftime(names))
        return out


class TimeViewBox(pg.ViewBox):  # type: ignore[misc]  # pyqtgraph is untyped
    """A ViewBox that zooms the time axis on Ctrl+wheel only and resets on a double-click.

    The plain wheel is left to the scroll area (see :class:`_WheelScrolls`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reset: Callable[[], None] | None = None

    def wheelEvent(self, ev: Any, axis: Any = None) -> None:  # noqa: N802 - pyqtgraph API
        if ev.modifiers() & Qt.KeyboardModifier.ControlModifier:
            super().wheelEvent(ev, axis=0)
        else:
            ev.ignore()

    def mouseDoubleClickEvent(self, ev: Any) -> None:  # noqa: N802 - Qt API
        if self.reset is not None:
            self.reset()
        ev.accept()


class _WheelScrolls(QObject):
    """Sends a wheel turned over the plots to the scroll area (the stack scrolls); Ctrl+wheel goes on to the
    plot under the cursor, which zooms its time axis.

    pyqtgraph zooms on every wheel event over a view or an axis; a filter on the graphics view's viewport is
    the one place that sees them all before it does."""

    def __init__(self, target: QScrollArea) -> None:
        super().__init__(target)
        self.target = target

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.Wheel:
            if event.modifiers() & Qt.KeyboardModifier.ControlModifier:  # type: ignore[attr-defined]
                return False
            bar = self.target.verticalScrollBar()
            from PySide6.QtCore import QCoreApplication

            QCoreApplication.sendEvent(bar, event)
            return True
        return False


class _Crosshair:
    """Vertical lines in every panel and a readout of the values under the cursor."""

    def __init__(self, plots: Sequence[pg.PlotItem], readout: QLabel, describe: Callable[[float], str]) -> None:
        self.lines = []
        for p in plots:
            line = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#607d8b", width=1))
            line.setVisible(False)
            p.addItem(line, ignoreBounds=True)
            self.lines.append(line)
        self.plots = list(plots)
        self.readout = readout
        self.describe = describe

    def moved(self, pos: QPointF) -> None:
        for p in self.plots:
            if p.sceneBoundingRect().contains(pos):
                x = float(p.vb.mapSceneToView(pos).x())
                for line in self.lines:
                    line.setPos(x)
                    line.setVisible(True)
                self.readout.setText(self.describe(x))
                return

    def reset(self, hint: str) -> None:
        """The plots changed: their old readout and lines go."""
        for line in self.lines:
            line.setVisible(False)
        self.readout.setText(hint)


class _VerticalScroll(QScrollArea):
    """Scrolls vertically only: the panels always take the viewport's width.

    The panels' title lines (with their legends) give the plot layout a minimum
    width above the pane's at the default window size; the scroll area then
    clipped the right end of the time axis, where the newest data are, and a
    24-hour window of a two-hour demo showed empty plots.
    """

    def __init__(self) -> None:
        super().__init__()
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

    def resizeEvent(self, event: Any) -> None:  # noqa: N802 - Qt API
        super().resizeEvent(event)
        w = self.widget()
        if w is not None:
            w.setFixedWidth(self.viewport().width())


HINT = QT_TRANSLATE_NOOP("HistoryPlots", "Move the mouse over a plot to read its values · wheel scrolls · "
                                         "Ctrl+wheel or right-drag zooms time, drag pans · double-click resets")
"""The readout's text until the mouse is over a plot (translated where shown: :func:`hint`)."""


def hint() -> str:
    return QCoreApplication.translate("HistoryPlots", HINT)


class HistoryPlots(QWidget):
    """The panels in a scroll area, with a crosshair readout and a zoom reset above them."""

    event_clicked = Signal(str)
    """An Xid marker was clicked: its text (time, code, name, the kernel-log message)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.readout = QLabel(hint())
        self.readout.setTextFormat(Qt.TextFormat.PlainText)
        self.readout.setStyleSheet("color: #37474f;")
        self.readout.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.reset_button = QPushButton(self.tr("Reset zoom"))
        self.reset_button.setToolTip(self.tr("Show the whole range again (or double-click a plot)"))
        self.reset_button.setEnabled(False)
        self.reset_button.clicked.connect(self.reset_zoom)
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setBackground("w")
        self.graphics.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.MinimumExpanding)
        self.scroll_area = _VerticalScroll()
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setWidget(self.graphics)
        self._wheel = _WheelScrolls(self.scroll_area)
        self.graphics.viewport().installEventFilter(self._wheel)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        top = QHBoxLayout()
        top.addWidget(self.readout, 1)
        top.addWidget(self.reset_button)
        layout.addLayout(top)
        layout.addWidget(self.scroll_area, 1)

        self.plots: dict[str, pg.PlotItem] = {}
        self.curves: dict[str, dict[str, pg.PlotDataItem]] = {}
        self.bands: dict[str, pg.BarGraphItem] = {}
        self.band_data: dict[str, tuple[Array, Array, Array]] = {}
        """Per banded panel, the bars drawn: (bucket start, min, max)."""
        self.mean_curves: dict[str, pg.PlotDataItem] = {}
        self.ref_lines: dict[str, pg.InfiniteLine] = {}
        self.reasons: dict[str, str | None] = {}
        self.spans: dict[str, dict[str, SpanItem]] = {}
        self._legends: dict[str, str] = {}
        self._reason_items: dict[str, pg.TextItem] = {}
        self._event_lines: list[tuple[pg.PlotItem, pg.InfiniteLine]] = []
        self._xid_labels: list[pg.TextItem] = []
        self._x: Array = np.empty(0)
        self._values: dict[str, Array] = {}
        self.drawn: Drawn | None = None
        self.span_x: tuple[float, float] = (0.0, 0.0)
        first: pg.PlotItem | None = None
        for row, panel in enumerate(PANELS):
            plot = self._add_plot(row, "")
            self.curves[panel.key] = {}
            if panel.band is not None:
                # One bar per bucket from its min to its max: pyqtgraph draws them in one call
                # (a FillBetweenItem of two curves rebuilt its path on each change: 8 ms per band per switch).
                band = pg.BarGraphItem(x0=[], x1=[], y0=[], y1=[], pen=pg.mkPen(None),
                                       brush=pg.mkBrush(144, 164, 174, 110))
                plot.addItem(band)
                self.bands[panel.key] = band
            for s in panel.series:
                self.curves[panel.key][s.key] = plot.plot(pen=pg.mkPen(s.colour, width=s.width), connect="finite",
                                                          name=s.label)
            self.spans[panel.key] = {}
            for kind in (*panel.episodes, *_OUTAGES):
                ep = _EPISODE[kind]
                item = SpanItem(ep.colour, alpha=70 if kind in _OUTAGES else 55, hatched=kind in _OUTAGES)
                plot.addItem(item, ignoreBounds=True)
                self.spans[panel.key][kind] = item
            curves = self.curves[panel.key]
            self.mean_curves[panel.key] = curves.get(f"{panel.key}_mean", curves[panel.series[0].key])
            self._set_title(panel.key)
            if first is None:
                first = plot
            else:
                plot.setXLink(first)
        pcie = self.plots["pcie"]
        pcie.showAxis("right")
        pcie.getAxis("right").setWidth(RIGHT_W)
        pcie.getAxis("right").setGrid(False)
        pcie.getAxis("right").setPen(pg.mkPen("#1565c0"))
        pcie.getAxis("right").setTextPen(pg.mkPen("#1565c0"))
        pcie.getAxis("left").setTextPen(pg.mkPen("#2e7d32"))
        pcie.getAxis("left").setTicks([[(g, f"Gen{g}") for g in range(1, 6)]])
        pcie.getAxis("right").setTicks([[(w * WIDTH_SCALE, f"×{w}") for w in (1, 4, 8, 16)]])
        pcie.getAxis("right").setStyle(showValues=True, tickLength=-5)
        for key, colour in (("temp_c", "#c62828"), ("power_w", "#6d4c41"), ("sm_clock_mhz", "#6d4c41")):
            # The limit's name is in the panel's title line, not on the line: a label inside the view sat
            # under the data ("nominal boost" under a 3090's clocks).
            line = pg.InfiniteLine(angle=0, movable=False, pen=pg.mkPen(colour, width=1, style=Qt.PenStyle.DashLine))
            line.setVisible(False)
            self.plots[key].addItem(line, ignoreBounds=False)
            self.ref_lines[key] = line

        thr = self._add_plot(len(PANELS), self.tr("<b>Throttle reasons, episodes and Xid events</b>"))
        thr.setXLink(first)
        thr.showGrid(x=True, y=False)
        # pyqtgraph drops tick labels once they fill more than 60-80 % of the axis (that dropped hw_power_brake);
        # the rows are ROW_H apart, so every label fits: draw them all.
        thr.getAxis("left").setStyle(textFillLimits=[(0, 0.98)])
        self.throttle_curves: dict[str, pg.PlotDataItem] = {}
        for r in THROTTLE_REASONS:
            colour = "#c62828" if r.hardware else "#78909c"
            self.throttle_curves[r.name] = thr.plot(pen=pg.mkPen(colour, width=8), connect="pairs")
        self.episode_curves: dict[str, pg.PlotDataItem] = {}
        for e in EPISODES:
            self.episode_curves[e.key] = thr.plot(pen=pg.mkPen(QColor(*e.colour), width=8), connect="pairs")
        self.xid_markers = pg.ScatterPlotItem(pen=pg.mkPen("#7f0000", width=1.5), symbol="t", size=16,
                                              brush=pg.mkBrush("#e53935"), hoverable=True,
                                              hoverBrush=pg.mkBrush("#ff8a80"), tip=self._xid_tip)
        self.xid_markers.sigClicked.connect(self._on_xid_clicked)
        thr.addItem(self.xid_markers)
        self.throttle = thr
        self.rows: list[str] = []
        self._left_w = AXIS_W
        self._set_rows(["Xid"])
        for plot in self.plots.values():
            # Per PlotDataItem: PlotItem.setDownsampling also calls it on the band's PlotCurveItems and the Xid
            # ScatterPlotItem, which have no such method.
            for item in plot.listDataItems():
                if isinstance(item, pg.PlotDataItem):
                    item.setDownsampling(auto=True, method="peak")
                    item.setClipToView(True)
        self._events: list[EventRow] = []
        self._crosshair = _Crosshair(list(self.plots.values()), self.readout, self._describe)
        self._proxy = pg.SignalProxy(self.graphics.scene().sigMouseMoved, rateLimit=30,
                                     slot=lambda ev: self._crosshair.moved(ev[0]))
        first.sigXRangeChanged.connect(self._on_x_range)  # type: ignore[union-attr]

    def _add_plot(self, row: int, title: str) -> pg.PlotItem:
        vb = TimeViewBox()
        vb.reset = self.reset_zoom
        plot = self.graphics.addPlot(row=row, col=0, viewBox=vb, axisItems={"bottom": LocalDateAxis()})
        plot.setTitle(title, size="9pt", justify="left")
        # A long title line (the ECC panel's legend) must not widen the layout past the view: that clipped the
        # right end of every panel's time axis, the newest data, at the default window size.
        label = plot.titleLabel
        fit = label.updateMin  # LabelItem.setText makes the text's width the minimum each time

        def no_min_width() -> None:
            fit()
            label.setMinimumWidth(0)
        label.updateMin = no_min_width
        no_min_width()
        plot.showGrid(x=True, y=True, alpha=0.2)
        plot.getAxis("left").setWidth(AXIS_W)
        # Every panel keeps the PCIe panel's right-axis width (an empty column but there) so the time axes line
        # up; a hidden axis costs no painting.
        plot.layout.setColumnFixedWidth(2, RIGHT_W)
        plot.getAxis("right").setGrid(False)  # showGrid grids the right axis too
        plot.setMenuEnabled(False)
        # Time only: the y axes follow the data (a wheel over them once showed power down to -500 W).
        plot.setMouseEnabled(x=True, y=False)
        plot.hideButtons()
        self.graphics.ci.layout.setRowMinimumHeight(row, PANEL_MIN_H)
        key = PANELS[row].key if row < len(PANELS) else "throttle"
        text = pg.TextItem("", color="#546e7a", anchor=(0.5, 0.5))
        text.setParentItem(plot.vb)
        plot.vb.sigResized.connect(lambda vb, t=text: t.setPos(vb.width() / 2, vb.height() / 2))
        self._reason_items[key] = text
        self.plots[key] = plot
        return plot

    def _set_title(self, key: str, extra: str = "") -> None:
        panel = next(p for p in PANELS if p.key == key)
        keys = []
        if panel.band is not None:
            keys.append("<span style='color:#90a4ae'>█</span> " + self.tr("min–max"))
        keys += [f"<span style='color:{s.colour}'>━</span> {self.tr(s.label)}" for s in panel.series]
        for kind in panel.episodes:
            c = _EPISODE[kind].colour
            keys.append(f"<span style='color:rgb({c[0]},{c[1]},{c[2]})'>▮</span> {self.tr(_EPISODE[kind].label)}")
        if extra:
            keys.append(extra)
        unit = self.tr(panel.unit) if panel.unit == "count" else panel.unit
        title = f"<b>{self.tr(panel.title)}</b>" + (f" ({unit})" if unit else "") \
            + f" &nbsp; <span style='color:#546e7a'>{' '.join(keys)}</span>"
        if self._legends.get(key) == title:
            return  # a title change relays the whole stack out: only when it differs
        self._legends[key] = title
        self.plots[key].setTitle(title, size="9pt", justify="left")

    def _set_rows(self, rows: Sequence[str]) -> None:
        """The bottom panel's rows, top to bottom (the last, Xid, at y 0): labels and a height that fits them."""
        if list(rows) == self.rows:
            return  # the same rows: no relayout (a GPU switch must stay fast)
        self.rows = list(rows)
        n = len(self.rows)
        # A row's name stays its identifier (row_y); an episode's label is shown translated, a throttle reason's
        # NVML name and "Xid" as they are.
        shown = [self.tr(label) if label in _EPISODE_LABELS else label for label in self.rows]
        self._fit_left_axes(shown)
        ticks = [(float(n - 1 - i), label) for i, label in enumerate(shown)]
        self.throttle.getAxis("left").setTicks([ticks])
        self.throttle.setLimits(yMin=None, yMax=None)  # the old limits would clamp the new range
        self.throttle.setYRange(-0.7, n - 0.3, padding=0)
        self.throttle.setLimits(yMin=-0.7, yMax=n - 0.3)
        h = max(PANEL_MIN_H, BOTTOM_CHROME_H + ROW_H * n)
        layout = self.graphics.ci.layout
        layout.setRowMinimumHeight(len(PANELS), h)
        # The whole stack's height: rows, spacing and margins (without them the Xid row and the time axis were
        # cut off, even scrolled to the bottom).
        _, top, _, bottom = layout.getContentsMargins()
        total = PANEL_MIN_H * len(PANELS) + h + layout.verticalSpacing() * len(PANELS) + top + bottom + 8
        self.graphics.setMinimumHeight(int(total))

    def _fit_left_axes(self, labels: Sequence[str]) -> None:
        """Widen every panel's left axis to the longest row label: pyqtgraph silently drops a tick label wider
        than its axis (that dropped hw_power_brake), and the panels' time axes must stay aligned."""
        axis = self.throttle.getAxis("left")
        font = axis.style.get("tickFont") or QFont()
        fm = QFontMetrics(font)
        need = max((fm.horizontalAdvance(t) for t in labels), default=0) + 24
        width = max(AXIS_W, need)
        if width != self._left_w:
            self._left_w = width
            for plot in self.plots.values():
                plot.getAxis("left").setWidth(width)

    def row_y(self, label: str) -> float:
        return float(len(self.rows) - 1 - self.rows.index(label))

    def _say(self, key: str, reason: str | None) -> None:
        self.reasons[key] = reason
        item = self._reason_items[key]
        item.setText(reason or "")
        item.setVisible(reason is not None)
        vb = self.plots[key].vb
        item.setPos(vb.width() / 2, vb.height() / 2)

    def clear(self, reason: str) -> None:
        """No data to show (no GPU selected, or a read failed): every panel says ``reason``."""
        self._x = np.empty(0)
        self._values = {}
        self.drawn = None
        self._crosshair.reset(hint())
        for panel in PANELS:
            for curve in self.curves[panel.key].values():
                curve.setData([], [])
            if panel.key in self.bands:
                self._set_band(panel.key, np.empty(0), np.empty(0), np.empty(0), 60.0)
            for item in self.spans[panel.key].values():
                item.set_spans([])
            self._say(panel.key, reason)
        for curve in (*self.throttle_curves.values(), *self.episode_curves.values()):
            curve.setData([], [])
        self.xid_markers.setData([], [])
        self._mark_events([])
        self._say("throttle", reason)
        for line in self.ref_lines.values():
            line.setVisible(False)

    def set_refs(self, refs: Mapping[str, tuple[float, str] | None]) -> None:
        """Dashed horizontal limits: ``{"temp_c": (90, "slowdown 90 °C"), ...}``; None hides one.

        The limit is named in its panel's title line (dashed key), never on the line inside the view."""
        for key, line in self.ref_lines.items():
            ref = refs.get(key)
            line.setVisible(ref is not None)
            colour = line.pen.color().name()
            self._set_title(key, "" if ref is None else f"<span style='color:{colour}'>╌</span> {ref[1]}")
            if ref is not None:
                line.setValue(ref[0])

    def set_history(self, window: HistoryWindow, since: float, until: float,
                    events: Sequence[EventRow] = (), latest_status: Mapping[str, str] | None = None,
                    *, power_failed: Sequence[tuple[float, int]] = (),
                    link_max: tuple[int, int] | None = None, source: str | None = None) -> None:
        """Draw a window; the x range is [since, until] whatever the data cover (zoom is reset).

        ``source``: the tool another vendor's device is read through, named where it reports nothing
        (:func:`panel_reason`)."""
        self._crosshair.reset(hint())
        drawn = prepare(window, since, until, events, power_failed, link_max)
        self.drawn = drawn
        ts = drawn.ts
        # Lines break in every stretch without data (found in the rows before hours were merged).
        breaks = [(a + b) / 2 for a, b in drawn.episodes["no_data"]]
        unsupported = unsupported_fields(window, latest_status or {})
        self._values = {}
        for panel in PANELS:
            has_data = False
            for s in panel.series:
                y = drawn.cols[s.key]
                self._values[s.key] = y
                shown = y * WIDTH_SCALE if s.key == "pcie_width" else y
                x, yg = with_breaks(ts, shown, breaks)
                self.curves[panel.key][s.key].setData(x, yg, connect="finite")
                has_data = has_data or bool(np.isfinite(y).any())
            if panel.band is not None:
                mean = drawn.cols[f"{panel.band}_mean"]
                lo, hi = drawn.cols[f"{panel.band}_min"], drawn.cols[f"{panel.band}_max"]
                self._values[f"{panel.band}_min"], self._values[f"{panel.band}_max"] = lo, hi
                self._set_band(panel.key, ts, np.where(np.isfinite(lo), lo, mean), np.where(np.isfinite(hi), hi, mean),
                               drawn.step_s)
            for kind, item in self.spans[panel.key].items():
                item.set_spans(drawn.episodes.get(kind, []))
            self._say(panel.key, panel_reason(panel, has_data, unsupported, source))
        self._x = ts
        # The bottom panel: a row for each reason and episode that occurred, then Xid.
        xids = [e for e in events if e.kind == "xid"]
        reasons = [r for r in THROTTLE_REASONS if (drawn.throttle[r.name] > 0).any()]
        kinds = [e for e in EPISODES if e.key not in ("power_brake", "thermal") and drawn.episodes.get(e.key)]
        self._set_rows([r.name for r in reasons] + [e.label for e in kinds] + ["Xid"])
        for r in THROTTLE_REASONS:
            spans = runs(ts, drawn.throttle[r.name] > 0, drawn.step_s) if r in reasons else []
            self.throttle_curves[r.name].setData(*self._bars(spans, r.name if r in reasons else None),
                                                 connect="pairs")
        for e in EPISODES:
            spans = drawn.episodes.get(e.key, []) if e in kinds else []
            self.episode_curves[e.key].setData(*self._bars(spans, e.label if e in kinds else None), connect="pairs")
        y_xid = self.row_y("Xid")
        self.xid_markers.setData([float(e.ts) for e in xids], [y_xid] * len(xids), data=xids)
        self._events = list(events)
        self._mark_events(xids)
        if not len(ts):
            self._say("throttle", self.tr("no data in this window"))
        elif not reasons and not kinds and not xids and source and "throttle_mask" in unsupported:
            # Another vendor's tool gives no throttle reasons and no Xid: not "none happened".
            self._say("throttle", self.tr("throttle reasons and Xid events: not reported by {tool}").format(
                tool=source))
        elif not reasons and not kinds and not xids:
            self._say("throttle", self.tr("no throttling, no episode and no Xid in this window"))
        else:
            self._say("throttle", None)
        first = min(since, float(ts[0])) if len(ts) else since
        self.span_x = (first, float(until))
        for key, plot in self.plots.items():
            plot.setLimits(xMin=first, xMax=until, maxXRange=until - first, minXRange=min(600.0, until - first),
                           **({} if key == "throttle" else {"yMin": 0}))
        self.reset_zoom()

    def _set_band(self, key: str, ts: Array, lo: Array, hi: Array, step: float) -> None:
        """Bars over each bucket (centred on its point of the mean line) from its min to its max."""
        ok = np.isfinite(lo) & np.isfinite(hi)
        ts, lo, hi = ts[ok], lo[ok], hi[ok]
        self.band_data[key] = (ts, lo, hi)
        self.bands[key].setOpts(x0=ts - step / 2, x1=ts + step / 2, y0=lo, y1=hi)

    def _bars(self, spans: Sequence[tuple[float, float]], row: str | None) -> tuple[Array, Array]:
        """x, y pairs (``connect="pairs"``) drawing each span as a bar on ``row``."""
        if row is None or not spans:
            return np.empty(0), np.empty(0)
        x = np.array([v for a, b in spans for v in (a, b)], dtype=float)
        return x, np.full(len(x), self.row_y(row))

    def reset_readout(self) -> None:
        """The plots are about to change: the crosshair and its readout go."""
        self._crosshair.reset(hint())

    def reset_zoom(self) -> None:
        """Back to the whole window (the reset button, a double-click, a new GPU or range)."""
        since, until = self.span_x
        if until > since:
            self.plots[PANELS[0].key].setXRange(since, until, padding=0)
        for panel in PANELS:
            self.plots[panel.key].enableAutoRange(axis="y")
        self.plots["pcie"].disableAutoRange(axis="y")
        self.plots["pcie"].setYRange(0, 5.4, padding=0)
        self.reset_button.setEnabled(False)

    def zoomed(self) -> bool:
        lo, hi = self.plots[PANELS[0].key].vb.viewRange()[0]
        since, until = self.span_x
        return until > since and (hi - lo) < (until - since) * 0.98

    def _on_x_range(self, *args: Any) -> None:
        self.reset_button.setEnabled(self.zoomed())

    def _mark_events(self, xids: Sequence[EventRow]) -> None:
        """A red line at each Xid in every line panel and its code above its marker (lines: at most 200)."""
        for plot, line in self._event_lines:
            plot.removeItem(line)
        for text in self._xid_labels:
            self.throttle.removeItem(text)
        self._event_lines = []
        self._xid_labels = []
        if len(xids) > 200:
            return
        y = self.row_y("Xid") if "Xid" in self.rows else 0.0
        for e in xids:
            for panel in PANELS:
                line = pg.InfiniteLine(pos=e.ts, angle=90, movable=False, pen=pg.mkPen(211, 47, 47, 170, width=1.5))
                self.plots[panel.key].addItem(line, ignoreBounds=True)
                self._event_lines.append((self.plots[panel.key], line))
        for e in xids[:60]:
            text = pg.TextItem(f"Xid {e.code}", color="#b71c1c", anchor=(1.15, 0.55))  # left of it: never clipped
            text.setPos(float(e.ts), y)
            self.throttle.addItem(text, ignoreBounds=True)
            self._xid_labels.append(text)

    def _xid_tip(self, x: float, y: float, data: Any) -> str:
        return _event_text(data) if isinstance(data, EventRow) else ""

    def _on_xid_clicked(self, item: Any, points: Any, ev: Any = None) -> None:
        texts = [_event_text(p.data()) for p in points if isinstance(p.data(), EventRow)]
        if not texts:
            return
        text = "\n".join(texts)
        self.readout.setText(" · ".join(texts))
        QToolTip.showText(QCursor.pos(), text)
        self.event_clicked.emit(text)

    def point_counts(self) -> dict[str, int]:
        """Finite points per panel (tests and the benchmark check the plots hold data)."""
        return {p.key: int(sum(np.isfinite(self._values.get(s.key, np.empty(0))).sum() for s in p.series))
                for p in PANELS}

    def _describe(self, x: float) -> str:
        stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(x))
        if not len(self._x) or self.drawn is None:
            return stamp
        i = int(np.clip(np.searchsorted(self._x, x, side="right") - 1, 0, len(self._x) - 1))
        step = self.drawn.step_s
        t0 = float(self._x[i])
        head = time.strftime("%Y-%m-%d %H:%M", time.localtime(t0))
        if step > 60:
            head += "–" + time.strftime("%H:%M" if step < 86400 else "%m-%d %H:%M", time.localtime(t0 + step))
        parts = [head]
        if not (t0 <= x < t0 + step * 1.5):
            parts.append(self.tr("no data"))
        else:
            for panel in PANELS:
                for s in panel.series:
                    v = self._values.get(s.key)
                    if v is None or i >= len(v) or not math.isfinite(v[i]):
                        continue
                    # the mean is named by its panel ("Temperature", "Power", "SM"), another series by itself
                    name = self.tr(panel.title.split()[0] if s.label == "mean" else s.label)
                    unit = (' ' + panel.unit) if panel.unit in ('°C', 'W', 'MHz') else ''
                    text = self.tr("{name} {value}{unit}").format(name=name, value=f"{v[i]:.0f}", unit=unit)
                    if panel.band is not None and s.label == "mean":
                        lo, hi = self._values.get(f"{panel.band}_min"), self._values.get(f"{panel.band}_max")
                        if lo is not None and hi is not None and math.isfinite(lo[i]) and math.isfinite(hi[i]):
                            text += f" ({lo[i]:.0f}–{hi[i]:.0f})"
                    parts.append(text)
            active = [r.name for r in THROTTLE_REASONS if self.drawn.throttle[r.name][i] > 0]
            if active:
                parts.append(self.tr("throttle {reasons}").format(reasons=", ".join(active)))
        for e in EPISODES:
            if e.key in ("power_brake", "thermal"):
                continue
            if any(a <= x < b for a, b in self.drawn.episodes.get(e.key, [])):
                parts.append(self.tr(e.label))
        tol = max(60.0, (self._x[-1] - self._x[0]) / 200 if len(self._x) > 1 else 60)
        near = [e for e in self._events if e.kind == "xid" and abs(e.ts - x) < tol]
        if near:
            parts.append(_event_text(near[0]))
        return " · ".join(parts)


def _event_text(e: EventRow) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.ts))
    name = ""
    if e.code is not None:
        try:
            from fleetmon import xid as xidmod

            info = xidmod.lookup(int(e.code))
            name = f" ({info.name})" if info.name and info.name not in (e.message or "") else ""
        except Exception:  # an unknown code still shows with its message
            name = ""
    return f"{when} Xid {e.code}{name}" + (f": {e.message}" if e.message else "")
