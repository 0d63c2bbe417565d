"""DeratingView: how far cards run below their nominal spec, per model across the fleet and per card over time.

Top: one row per GPU model with the distribution across its cards of each
card's median ratio over the window (min / median / max, and a strip plot of
the clock ratio), so "our 3090s run at 65 % of nominal" is one glance.
Bottom: the selected card's daily ratios with the 1.0 line and its model's
fleet median per day. The date axis never spans less than a few days (one day
of data would otherwise get sub-second ticks), points are drawn so a single
day is visible, and the legend sits above the plot, not over the data.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QHeaderView, QLabel, QSplitter, QTableView, QVBoxLayout,
                               QWidget)

from storage.rows import DeratingDay, FleetRow
from ui.history_reader import DeratingData, HistoryService
from ui.models.base import Index, RowsTableModel

DAY = 86400
RATIOS: tuple[tuple[str, str, str], ...] = (
    ("clock_ratio", "clock under load / boost", "#1565c0"),
    ("power_limit_ratio", "power limit / TDP", "#c62828"),
    ("memory_ratio", "memory / nominal", "#2e7d32"),
    ("pcie_ratio", "PCIe link / nominal", "#ef6c00"),
)
WINDOWS: tuple[tuple[str, int], ...] = (("30 days", 30 * DAY), ("90 days", 90 * DAY), ("1 year", 365 * DAY))
MIN_SPAN_S = 4 * DAY


@dataclass(frozen=True)
class ModelSummary:
    """One GPU model: per ratio, the (min, median, max) over its cards' own medians; the cards' clock medians."""

    model: str
    cards: int
    days: int
    stats: Mapping[str, tuple[float, float, float] | None]
    clock_by_card: tuple[float, ...]


def card_medians(days: Sequence[DeratingDay], key: str) -> dict[str, float]:
    """Each card's median of one ratio over its days (cards without the figure left out)."""
    by: dict[str, list[float]] = defaultdict(list)
    for d in days:
        v = getattr(d, key)
        if v is not None:
            by[d.gpu_uuid].append(float(v))
    return {u: statistics.median(vs) for u, vs in by.items()}


def summarize(days: Sequence[DeratingDay], models: Mapping[str, str]) -> list[ModelSummary]:
    """Per model, worst clock median first."""
    by_model: dict[str, list[DeratingDay]] = defaultdict(list)
    for d in days:
        by_model[models.get(d.gpu_uuid, "unknown model")].append(d)
    out = []
    for model, ds in by_model.items():
        stats: dict[str, tuple[float, float, float] | None] = {}
        clock: tuple[float, ...] = ()
        for key, _, _ in RATIOS:
            meds = sorted(card_medians(ds, key).values())
            stats[key] = (meds[0], statistics.median(meds), meds[-1]) if meds else None
            if key == "clock_ratio":
                clock = tuple(meds)
        out.append(ModelSummary(model, len({d.gpu_uuid for d in ds}), len({d.day for d in ds}), stats, clock))
    out.sort(key=lambda s: (s.stats["clock_ratio"] or (9.0, 9.0, 9.0))[1])
    return out


def fleet_median_by_day(days: Sequence[DeratingDay], models: Mapping[str, str], model: str, key: str
                        ) -> tuple[list[int], list[float]]:
    """The median of ``key`` across the model's cards, per day."""
    per: dict[int, list[float]] = defaultdict(list)
    for d in days:
        v = getattr(d, key)
        if v is not None and models.get(d.gpu_uuid) == model:
            per[d.day].append(float(v))
    xs = sorted(per)
    return xs, [statistics.median(per[x]) for x in xs]


def short_model(model: str) -> str:
    """A model name short enough for the strip plot's axis: "NVIDIA A100-SXM4-80GB" → "A100", "Tesla T4" → "T4"."""
    name = model
    for prefix in ("NVIDIA ", "GeForce ", "Tesla ", "Quadro "):
        name = name.replace(prefix, "")
    return name.split("-")[0].strip() or model


def pct(v: float | None) -> str:
    return "—" if v is None else f"{v * 100:.0f} %"


class ModelSummaryModel(RowsTableModel[ModelSummary]):
    # Two header lines: the long one-line labels pushed the PCIe column out of sight even at 1920 px.
    COLUMNS = ("Model", "Cards", "Days", *(f"{label}\nmin · median · max" for _, label, _ in RATIOS))

    def set_rows(self, rows: list[ModelSummary]) -> None:
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        s = self._rows[index.row()]
        c = index.column()
        stat = s.stats.get(RATIOS[c - 3][0]) if c >= 3 else None
        if role == Qt.ItemDataRole.DisplayRole:
            if c == 0:
                return s.model
            if c == 1:
                return str(s.cards)
            if c == 2:
                return str(s.days)
            return "—" if stat is None else f"{pct(stat[0])} · {pct(stat[1])} · {pct(stat[2])}"
        if role == Qt.ItemDataRole.BackgroundRole and stat is not None and stat[1] < 0.9:
            return QBrush(QColor("#ffcdd2" if stat[1] < 0.75 else "#ffe0b2"))
        if role == Qt.ItemDataRole.TextAlignmentRole and c >= 1:
            return int(Qt.AlignmentFlag.AlignCenter)
        return None


class DeratingView(QWidget):
    """The fleet summary per model and the selected card's daily ratios."""

    def __init__(self, service: HistoryService, parent: QWidget | None = None, *, now: Any = time.time) -> None:
        super().__init__(parent)
        self._now = now
        self.service = service
        service.derating_loaded.connect(self._on_loaded)
        self.data: DeratingData | None = None
        self.row: FleetRow | None = None
        self.window_box = QComboBox()
        for label, seconds in WINDOWS:
            self.window_box.addItem(label, seconds)
        self.window_box.setCurrentIndex(1)
        self.window_box.currentIndexChanged.connect(lambda _: self.refresh())
        self.info = QLabel("reading…")
        top = QHBoxLayout()
        top.addWidget(QLabel("<b>Derating</b>: daily ratio to the nominal spec (1.0 = as specified)"), 1)
        top.addWidget(self.info)
        top.addWidget(QLabel("Window:"))
        top.addWidget(self.window_box)

        self.model = ModelSummaryModel(self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.strip = pg.PlotWidget(background="w")
        self.strip.setTitle("Clock under load / boost, one dot per card (bar: model median)", size="9pt")
        self.strip.showGrid(y=True, alpha=0.2)
        self.strip.setMinimumWidth(280)
        self.strip.setMenuEnabled(False)
        self.strip_reason = QLabel("")
        upper = QSplitter(Qt.Orientation.Horizontal)
        upper.addWidget(self.table)
        upper.addWidget(self.strip)
        upper.setSizes([700, 400])

        self.legend = QLabel(" ".join(f"<span style='color:{c}'>━━</span> {label} &nbsp;"
                                      for _, label, c in RATIOS)
                             + "<span style='color:#6a1b9a'>┅┅</span> model's fleet median (clock) &nbsp;"
                               "<span style='color:#888'>┄┄</span> 1.0 = nominal")
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.card_title = QLabel("Select a GPU in the fleet table to see its daily ratios.")
        self.card = pg.PlotWidget(background="w", axisItems={"bottom": pg.DateAxisItem()})
        self.card.showGrid(x=True, y=True, alpha=0.2)
        self.card.setMenuEnabled(False)
        self.card.setLimits(minXRange=MIN_SPAN_S)
        self.card.setYRange(0.0, 1.2)
        self.card.addItem(pg.InfiniteLine(angle=0, pos=1.0, pen=pg.mkPen("#888888", style=Qt.PenStyle.DashLine)))
        self.curves: dict[str, pg.PlotDataItem] = {}
        for key, label, colour in RATIOS:
            self.curves[key] = self.card.plot(pen=pg.mkPen(colour, width=2), symbol="o", symbolSize=6,
                                              symbolBrush=colour, symbolPen=None, connect="finite", name=label)
        self.median_curve = self.card.plot(pen=pg.mkPen("#6a1b9a", width=2, style=Qt.PenStyle.DotLine),
                                           connect="finite")
        self.card_reason = pg.TextItem("select a GPU", color="#546e7a", anchor=(0.5, 0.5))
        self.card_reason.setParentItem(self.card.getPlotItem().vb)
        self.card.getPlotItem().vb.sigResized.connect(
            lambda vb: self.card_reason.setPos(vb.width() / 2, vb.height() / 2))
        lower = QWidget()
        lay = QVBoxLayout(lower)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.card_title)
        lay.addWidget(self.legend)
        lay.addWidget(self.card, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(upper)
        split.addWidget(lower)
        split.setSizes([260, 340])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(split, 1)
        self.reason: str | None = "select a GPU"
        self.refresh()

    def refresh(self) -> None:
        until = float(int(self._now()) + DAY)
        self.info.setText("reading…")
        self.service.request_derating(until - float(self.window_box.currentData()), until)

    def show_gpu(self, row: FleetRow) -> None:
        self.row = row
        self._draw_card()

    def _on_loaded(self, data: DeratingData) -> None:
        self.data = data
        summary = summarize(data.days, data.models)
        self.model.set_rows(summary)
        self.info.setText(f"{len(data.days)} GPU-days, {len(summary)} models · read {data.read_ms:.0f} ms")
        self._draw_strip(summary)
        self._draw_card()

    def _draw_strip(self, summary: Sequence[ModelSummary]) -> None:
        self.strip.clear()
        ticks = []
        for i, s in enumerate(summary):
            ticks.append((i, short_model(s.model)))
            if not s.clock_by_card:
                continue
            ys = np.array([v for v in s.clock_by_card if math.isfinite(v)])
            if not len(ys):
                continue
            xs = i + np.linspace(-0.25, 0.25, len(ys)) if len(ys) > 1 else np.array([float(i)])
            self.strip.plot(xs, ys, pen=None, symbol="o", symbolSize=5, symbolBrush=(21, 101, 192, 150),
                            symbolPen=None)
            med = float(np.median(ys))
            self.strip.plot([i - 0.35, i + 0.35], [med, med], pen=pg.mkPen("#c62828", width=3))
        self.strip.addItem(pg.InfiniteLine(angle=0, pos=1.0, pen=pg.mkPen("#888888", style=Qt.PenStyle.DashLine)))
        axis = self.strip.getAxis("bottom")
        axis.setTicks([ticks])
        self.strip.setXRange(-0.6, max(len(summary), 1) - 0.4, padding=0)
        self.strip.setYRange(0.0, 1.2)
        if not summary:
            self.strip.setTitle("no derating days in this window", size="9pt")

    def _say(self, reason: str | None) -> None:
        self.reason = reason
        self.card_reason.setText(reason or "")
        self.card_reason.setVisible(reason is not None)

    def _draw_card(self) -> None:
        if self.row is None:
            self._say("select a GPU")
            return
        self.card_title.setText(f"<b>{self.row.node} GPU {self.row.index}</b> — {self.row.model}")
        if self.data is None:
            self._say("reading…")
            return
        mine = [d for d in self.data.days if d.gpu_uuid == self.row.uuid]
        x = np.array([float(d.day) for d in mine])
        for key, _, _ in RATIOS:
            y = np.array([np.nan if getattr(d, key) is None else float(getattr(d, key)) for d in mine])
            if np.isfinite(y).any():
                self.curves[key].setData(x, y, connect="finite")
            else:  # pyqtgraph's symbol bounds warn "All-NaN slice" on a curve with no finite point
                self.curves[key].setData([], [])
        model = self.data.models.get(self.row.uuid, self.row.model or "")
        mx, my = fleet_median_by_day(self.data.days, self.data.models, model, "clock_ratio")
        self.median_curve.setData(np.array(mx, dtype=float), np.array(my, dtype=float), connect="finite")
        if not mine:
            self._say("no derating days for this GPU in this window")
            until = self.data.until
            self.card.setXRange(until - MIN_SPAN_S, until, padding=0)
            return
        self._say(None)
        lo, hi = float(x.min()), float(x.max()) + DAY
        if hi - lo < MIN_SPAN_S:
            mid = (lo + hi) / 2
            lo, hi = mid - MIN_SPAN_S / 2, mid + MIN_SPAN_S / 2
        self.card.setXRange(lo, hi, padding=0.02)
        ys = [float(getattr(d, k)) for d in mine for k, _, _ in RATIOS
              if getattr(d, k) is not None and math.isfinite(float(getattr(d, k)))]
        self.card.setYRange(min([0.5] + ys) - 0.05, max([1.1] + ys) + 0.05, padding=0)

    def point_counts(self) -> dict[str, int]:
        return {k: int(np.isfinite(c.getData()[1]).sum()) if c.getData()[1] is not None else 0
                for k, c in self.curves.items()}
