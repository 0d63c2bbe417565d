"""HistoryPlots: one GPU's history as stacked panels on one linked date/time axis.

Design notes (each from a problem seen on the demo):

* every panel keeps :data:`PANEL_MIN_H` pixels; the stack scrolls instead of
  squeezing panels to unreadable strips at the default window size;
* the x range is the requested window, not the data's extent, so "7 d" shows
  seven days with real dates even when the card has two hours of data;
* a missing bucket is a NaN (gap, ``connect="finite"``), a reading the card
  does not support is said in the panel ("not supported on this GPU"), never
  drawn as zero; an empty panel always says why;
* downsampling (peak) and clip-to-view are set on each PlotItem after its
  curves are added: pyqtgraph drops them when set on a curve beforehand.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QLabel, QScrollArea, QSizePolicy, QVBoxLayout, QWidget

from fleetmon.fields import THROTTLE_REASONS
from storage.rows import EventRow, HistoryWindow

PANEL_MIN_H = 170
THROTTLE_MIN_H = 230
AXIS_W = 64
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


PANELS: tuple[Panel, ...] = (
    Panel("temp_c", "Temperature", "°C", (Series("temp_c_max", "max", "#b0b0b0", 1), Series("temp_c_mean", "mean",
                                                                                          "#1565c0")),
          ("temp_c",)),
    Panel("power_w", "Power", "W", (Series("power_w_max", "max", "#b0b0b0", 1), Series("power_w_mean", "mean", "#1565c0"),
                                    Series("power_limit_w_mean", "enforced limit", "#c62828", 1.5)),
          ("power_w",)),
    Panel("sm_clock_mhz", "SM clock", "MHz", (Series("sm_clock_mhz_max", "max", "#b0b0b0", 1),
                                              Series("sm_clock_mhz_mean", "mean", "#1565c0")), ("sm_clock_mhz",)),
    Panel("ecc", "ECC errors, retired pages, remapped rows", "count",
          (Series("ecc_corr_agg", "ECC corrected", "#1565c0"), Series("ecc_unc_agg", "ECC uncorrected", "#c62828"),
           Series("retired_pages", "retired pages", "#6a1b9a"), Series("remapped_rows", "remapped rows", "#ef6c00")),
          ("ecc_corr_agg", "ecc_unc_agg", "retired_sbe", "retired_dbe", "remap_corr", "remap_unc")),
    Panel("pcie", "PCIe link (gen, width) and replays", "", (Series("pcie_gen", "gen", "#2e7d32"),
                                                            Series("pcie_width", "width", "#1565c0"),
                                                            Series("pcie_replay", "replays", "#c62828")),
          ("pcie_gen", "pcie_width", "pcie_replay")),
)
"""The line panels; the throttle-reason timeline (with Xid markers) comes after them."""

_SUMS = {"retired_pages": ("retired_sbe", "retired_dbe"), "remapped_rows": ("remap_corr", "remap_unc")}


def column(window: HistoryWindow, key: str) -> Array:
    """A key over the window as floats; None → NaN; the derived sums are NaN unless a part is known."""
    parts = _SUMS.get(key)
    if parts is not None:
        a, b = column(window, parts[0]), column(window, parts[1])
        both = np.where(np.isnan(a), 0.0, a) + np.where(np.isnan(b), 0.0, b)
        return np.where(np.isnan(a) & np.isnan(b), math.nan, both)
    return np.array([math.nan if v is None else float(v) for v in window.column(key)], dtype=float)


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


def throttle_active(window: HistoryWindow) -> dict[str, Array]:
    """Per throttle reason, 1.0 where it was active in a row, NaN elsewhere.

    Minute rows carry the NVML bit mask; rollup rows count the minutes each reason was set (``thr_*``).
    """
    out: dict[str, Array] = {}
    if window.resolution == "minute":
        mask = column(window, "throttle_mask")
        ok = ~np.isnan(mask)
        m = np.where(ok, mask, 0).astype(np.int64)
        for r in THROTTLE_REASONS:
            out[r.name] = np.where(ok & ((m & r.bit) != 0), 1.0, math.nan)
    else:
        for r in THROTTLE_REASONS:
            c = column(window, f"thr_{r.name}")
            out[r.name] = np.where(np.nan_to_num(c) > 0, 1.0, math.nan)
    return out


def unsupported_fields(window: HistoryWindow, latest_status: Mapping[str, str]) -> set[str]:
    """Fields the card reports as unsupported: in the latest reading or in any minute of the window."""
    out = {k for k, v in latest_status.items() if v == "unsupported"}
    if window.resolution == "minute":
        for st in window.column("status"):
            if st:
                out.update(k for k, v in st.items() if v == "unsupported")
    return out


def panel_reason(panel: Panel, has_data: bool, unsupported: set[str]) -> str | None:
    """Why a panel shows nothing (None when it has data)."""
    if has_data:
        return None
    if panel.fields and all(f in unsupported for f in panel.fields):
        return "not supported on this GPU"
    return "no data in this window"


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


class HistoryPlots(QWidget):
    """The panels in a scroll area, with a crosshair readout above them."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.readout = QLabel("Move the mouse over a plot to read its values.")
        self.readout.setTextFormat(Qt.TextFormat.PlainText)
        self.readout.setStyleSheet("color: #37474f;")
        self.readout.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setBackground("w")
        self.graphics.setMinimumHeight(PANEL_MIN_H * len(PANELS) + THROTTLE_MIN_H)
        self.graphics.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.MinimumExpanding)
        self.scroll_area = _VerticalScroll()
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setWidget(self.graphics)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.readout)
        layout.addWidget(self.scroll_area, 1)

        self.plots: dict[str, pg.PlotItem] = {}
        self.curves: dict[str, dict[str, pg.PlotDataItem]] = {}
        self.mean_curves: dict[str, pg.PlotDataItem] = {}
        self.ref_lines: dict[str, pg.InfiniteLine] = {}
        self.reasons: dict[str, str | None] = {}
        self._reason_items: dict[str, pg.TextItem] = {}
        self._event_lines: list[tuple[pg.PlotItem, pg.InfiniteLine]] = []
        self._x: Array = np.empty(0)
        self._values: dict[str, Array] = {}
        first: pg.PlotItem | None = None
        for row, panel in enumerate(PANELS):
            # The legend lives in the title line: a legend box inside the view sits over the data.
            keys = " ".join(f"<span style='color:{s.colour}'>━</span> {s.label}" for s in panel.series)
            plot = self._add_plot(row, f"<b>{panel.title}</b>" + (f" ({panel.unit})" if panel.unit else "")
                                  + f" &nbsp; <span style='color:#546e7a'>{keys}</span>")
            self.curves[panel.key] = {}
            for s in panel.series:
                self.curves[panel.key][s.key] = plot.plot(pen=pg.mkPen(s.colour, width=s.width), connect="finite",
                                                          name=s.label)
            curves = self.curves[panel.key]
            self.mean_curves[panel.key] = curves.get(f"{panel.key}_mean", curves[panel.series[0].key])
            if first is None:
                first = plot
            else:
                plot.setXLink(first)
        for key, colour in (("temp_c", "#c62828"), ("power_w", "#6d4c41"), ("sm_clock_mhz", "#6d4c41")):
            line = pg.InfiniteLine(angle=0, movable=False, label="", pen=pg.mkPen(colour, width=1,
                                                                                 style=Qt.PenStyle.DashLine),
                                   labelOpts={"position": 0.01, "color": colour, "anchors": [(0, 0), (0, 0)]})
            line.setVisible(False)
            self.plots[key].addItem(line, ignoreBounds=False)
            self.ref_lines[key] = line

        thr = self._add_plot(len(PANELS), "Throttle reasons and Xid events")
        thr.setXLink(first)
        names = [r.name for r in THROTTLE_REASONS]
        thr.getAxis("left").setTicks([[(i, n) for i, n in enumerate(names)] + [(-1, "Xid")]])
        thr.getAxis("left").setWidth(AXIS_W + 40)
        thr.setYRange(-1.6, len(names) - 0.4, padding=0)
        thr.setMouseEnabled(y=False)
        thr.showGrid(x=True, y=False)
        self.throttle_curves: dict[str, pg.PlotDataItem] = {}
        for i, r in enumerate(THROTTLE_REASONS):
            colour = "#c62828" if r.hardware else "#78909c"
            self.throttle_curves[r.name] = thr.plot(pen=pg.mkPen(colour, width=7), connect="finite")
        self.xid_markers = pg.PlotDataItem(pen=None, symbol="t", symbolSize=11, symbolBrush="#c62828",
                                           symbolPen="#7f0000")
        thr.addItem(self.xid_markers)
        self.graphics.ci.layout.setRowMinimumHeight(len(PANELS), THROTTLE_MIN_H)
        for plot in self.plots.values():
            plot.setDownsampling(auto=True, mode="peak")
            plot.setClipToView(True)
        self.throttle = thr
        self._events: list[EventRow] = []
        self._crosshair = _Crosshair(list(self.plots.values()), self.readout, self._describe)
        self._proxy = pg.SignalProxy(self.graphics.scene().sigMouseMoved, rateLimit=30,
                                     slot=lambda ev: self._crosshair.moved(ev[0]))

    def _add_plot(self, row: int, title: str) -> pg.PlotItem:
        plot = self.graphics.addPlot(row=row, col=0, axisItems={"bottom": pg.DateAxisItem()})
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
        plot.setMenuEnabled(False)
        self.graphics.ci.layout.setRowMinimumHeight(row, PANEL_MIN_H)
        key = PANELS[row].key if row < len(PANELS) else "throttle"
        text = pg.TextItem("", color="#546e7a", anchor=(0.5, 0.5))
        text.setParentItem(plot.vb)
        plot.vb.sigResized.connect(lambda vb, t=text: t.setPos(vb.width() / 2, vb.height() / 2))
        self._reason_items[key] = text
        self.plots[key] = plot
        return plot

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
        for panel in PANELS:
            for curve in self.curves[panel.key].values():
                curve.setData([], [])
            self._say(panel.key, reason)
        for curve in self.throttle_curves.values():
            curve.setData([], [])
        self.xid_markers.setData([], [])
        self._say("throttle", reason)
        for line in self.ref_lines.values():
            line.setVisible(False)

    def set_refs(self, refs: Mapping[str, tuple[float, str] | None]) -> None:
        """Dashed horizontal limits: ``{"temp_c": (90, "slowdown 90 °C"), ...}``; None hides one."""
        for key, line in self.ref_lines.items():
            ref = refs.get(key)
            line.setVisible(ref is not None)
            if ref is not None:
                line.setValue(ref[0])
                line.label.setFormat(ref[1])

    def set_history(self, window: HistoryWindow, since: float, until: float,
                    events: Sequence[EventRow] = (), latest_status: Mapping[str, str] | None = None) -> None:
        """Draw a window; the x range is [since, until] whatever the data cover."""
        ts = column(window, "ts")
        gaps = gap_index(ts, window.step_s)
        unsupported = unsupported_fields(window, latest_status or {})
        self._values = {}
        x = ts
        for panel in PANELS:
            has_data = False
            for s in panel.series:
                y = column(window, s.key)
                self._values[s.key] = y
                x, yg = with_gaps(ts, y, gaps)
                self.curves[panel.key][s.key].setData(x, yg, connect="finite")
                has_data = has_data or bool(np.isfinite(y).any())
            self._say(panel.key, panel_reason(panel, has_data, unsupported))
        self._x = ts
        active = throttle_active(window)
        any_thr = False
        for i, r in enumerate(THROTTLE_REASONS):
            y = active[r.name] * i
            xs, yg = with_gaps(ts, y, gaps)
            self.throttle_curves[r.name].setData(xs, yg, connect="finite")
            any_thr = any_thr or bool(np.isfinite(y).any())
        xids = [e for e in events if e.kind == "xid"]
        self.xid_markers.setData([float(e.ts) for e in xids], [-1.0] * len(xids))
        self.xid_markers.setToolTip("\n".join(_event_text(e) for e in xids[-20:]) if xids else "")
        self._events = list(events)
        self._mark_events(xids)
        if not len(ts):
            self._say("throttle", "no data in this window")
        elif not any_thr and not xids:
            self._say("throttle", "no throttling and no Xid in this window")
        else:
            self._say("throttle", None)
        self.plots[PANELS[0].key].setXRange(since, until, padding=0.01)
        for panel in PANELS:
            self.plots[panel.key].enableAutoRange(axis="y")

    def _mark_events(self, xids: Sequence[EventRow]) -> None:
        """A faint vertical line at each Xid in every line panel (at most 200: beyond that, the markers row)."""
        for plot, line in self._event_lines:
            plot.removeItem(line)
        self._event_lines = []
        if len(xids) > 200:
            return
        for e in xids:
            for panel in PANELS:
                line = pg.InfiniteLine(pos=e.ts, angle=90, movable=False,
                                       pen=pg.mkPen(200, 40, 40, 90, width=1, style=Qt.PenStyle.DotLine))
                self.plots[panel.key].addItem(line, ignoreBounds=True)
                self._event_lines.append((self.plots[panel.key], line))

    def point_counts(self) -> dict[str, int]:
        """Finite points per panel (tests and the benchmark check the plots hold data)."""
        return {p.key: int(sum(np.isfinite(self._values.get(s.key, np.empty(0))).sum() for s in p.series))
                for p in PANELS}

    def _describe(self, x: float) -> str:
        stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(x))
        if not len(self._x):
            return stamp
        i = int(np.clip(np.searchsorted(self._x, x), 0, len(self._x) - 1))
        if i > 0 and abs(self._x[i - 1] - x) < abs(self._x[i] - x):
            i -= 1
        parts = [time.strftime("%Y-%m-%d %H:%M", time.localtime(float(self._x[i])))]
        for panel in PANELS:
            for s in panel.series:
                v = self._values.get(s.key)
                if v is not None and i < len(v) and math.isfinite(v[i]) and s.label != "max":
                    name = panel.title.split()[0] if s.label == "mean" else s.label
                    parts.append(f"{name} {v[i]:.0f}{(' ' + panel.unit) if panel.unit in ('°C', 'W', 'MHz') else ''}")
        near = [e for e in self._events if e.kind == "xid" and abs(e.ts - x) < max(60.0, (self._x[-1] - self._x[0])
                                                                                    / 200 if len(self._x) > 1 else 60)]
        if near:
            parts.append(_event_text(near[0]))
        return " · ".join(parts)


def _event_text(e: EventRow) -> str:
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.ts))
    return f"{when} Xid {e.code}" + (f": {e.message}" if e.message else "")
