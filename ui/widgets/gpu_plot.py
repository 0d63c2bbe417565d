"""GpuHistoryPlot: stacked pyqtgraph plots of one GPU's history.

Curves are created once and only ``setData`` is called afterwards (pyqtgraph's
scrolling-plot idiom); missing minutes are NaN with ``connect="finite"`` so
they show as gaps; long windows are downsampled by peak.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyqtgraph as pg

from storage.rows import DeratingDay, HistoryWindow

# (key in history rows, title, unit, pen colour, optional reference key in `refs`)
PANELS: tuple[tuple[str, str, str], ...] = (
    ("temp_c", "Temperature", "°C"),
    ("power_w", "Power", "W"),
    ("sm_clock_mhz", "SM clock", "MHz"),
    ("util_gpu_pct", "Utilization", "%"),
)


DERATING_SERIES: tuple[tuple[str, str, str], ...] = (
    ("clock_ratio", "SM clock busy / boost", "#1565c0"),
    ("clock_vs_fleet", "clock / fleet median", "#6a1b9a"),
    ("power_limit_ratio", "power limit / TDP", "#c62828"),
    ("memory_ratio", "memory / nominal", "#2e7d32"),
    ("pcie_ratio", "PCIe / nominal", "#ef6c00"),
)


def _array(values: Sequence[Any]) -> np.ndarray:
    """Values as floats, None as NaN (a gap in a ``connect="finite"`` curve)."""
    out = np.empty(len(values), dtype=float)
    for i, v in enumerate(values):
        out[i] = math.nan if v is None else float(v)
    return out


def _set_curve(curve: pg.PlotDataItem, x: np.ndarray, y: np.ndarray) -> None:
    """``setData`` with NaN gaps, or empty when no point is finite.

    pyqtgraph takes ``nanmin``/``nanmax`` of the data for its bounds; an all-NaN
    series (a reading the card does not support, a day without derating
    figures) would print "All-NaN slice encountered" on the terminal at every
    repaint, so such a curve is cleared instead.
    """
    finite = np.isfinite(x) & np.isfinite(y) if len(x) == len(y) else np.zeros(0, dtype=bool)
    if not finite.any():
        curve.setData([], [])
        return
    curve.setData(x, y, connect="finite")


class GpuHistoryPlot(pg.GraphicsLayoutWidget):
    """Four plots (2×2) sharing a time axis: the per-minute mean, with the maximum in grey."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.setBackground("w")
        self.plots: dict[str, pg.PlotItem] = {}
        self.mean_curves: dict[str, pg.PlotDataItem] = {}
        self.max_curves: dict[str, pg.PlotDataItem] = {}
        self.ref_lines: dict[str, pg.InfiniteLine] = {}
        first: pg.PlotItem | None = None
        for row, (key, title, unit) in enumerate(PANELS):
            plot = self.addPlot(row=row // 2, col=row % 2, axisItems={"bottom": pg.DateAxisItem()})
            plot.setTitle(f"{title} ({unit})", size="9pt")
            plot.showGrid(x=True, y=True, alpha=0.2)
            plot.setDownsampling(auto=True, mode="peak")
            plot.setClipToView(True)
            if first is None:
                first = plot
            else:
                plot.setXLink(first)
            self.max_curves[key] = plot.plot(pen=pg.mkPen("#bbbbbb", width=1), connect="finite", name="max")
            self.mean_curves[key] = plot.plot(pen=pg.mkPen("#1565c0", width=2), connect="finite", name="mean")
            line = pg.InfiniteLine(angle=0, pen=pg.mkPen("#c62828", style=pg.QtCore.Qt.PenStyle.DashLine))
            line.setVisible(False)
            plot.addItem(line)
            self.ref_lines[key] = line
            self.plots[key] = plot

        # Long-run derating: one point per day, ratios against the nominal spec and the model's fleet median.
        self.derating = self.addPlot(row=2, col=0, colspan=2, axisItems={"bottom": pg.DateAxisItem()})
        self.derating.setTitle("Derating per day (ratio to nominal; clock also to the model's fleet median)", size="9pt")
        self.derating.showGrid(x=True, y=True, alpha=0.2)
        self.derating.addLegend(offset=(10, 5), colCount=5)
        self.derating.setYRange(0.0, 1.2)
        self.derating_curves: dict[str, pg.PlotDataItem] = {}
        for key, label, colour in DERATING_SERIES:
            self.derating_curves[key] = self.derating.plot(pen=pg.mkPen(colour, width=2), symbol="o", symbolSize=5,
                                                           symbolBrush=colour, connect="finite", name=label)
        self.derating.addItem(pg.InfiniteLine(angle=0, pos=1.0, pen=pg.mkPen("#888888",
                                                                            style=pg.QtCore.Qt.PenStyle.DotLine)))

    def set_derating(self, days: Sequence[DeratingDay]) -> None:
        """Show stored per-day ratios (the DERATING_SERIES figures of each day)."""
        x = _array([d.day for d in days])
        for key, _, _ in DERATING_SERIES:
            _set_curve(self.derating_curves[key], x, _array([getattr(d, key) for d in days]))

    def set_history(self, window: HistoryWindow, refs: Mapping[str, float | None] | None = None) -> None:
        """Show a window's rows (each: ts plus ``<gauge>_mean`` / ``<gauge>_max``); refs draw dashed limits."""
        x = _array(window.column("ts"))
        for key, _, _ in PANELS:
            _set_curve(self.mean_curves[key], x, _array(window.column(f"{key}_mean")))
            _set_curve(self.max_curves[key], x, _array(window.column(f"{key}_max")))
            ref = (refs or {}).get(key)
            line = self.ref_lines[key]
            line.setVisible(ref is not None)
            if ref is not None:
                line.setValue(ref)
        if np.isfinite(x).any():
            self.plots[PANELS[0][0]].setXRange(float(np.nanmin(x)), float(np.nanmax(x)), padding=0.02)
