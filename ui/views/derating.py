"""DeratingView: how far cards run below their nominal spec, per model across the fleet and per card over time.

Top: one row per GPU model with the distribution across its cards of each
card's median ratio over the window (min / median / max), so "our 3090s run
at 65 % of nominal" is one glance. Below it, a strip plot of the clock ratio,
one dot per card: hovering a dot names the card and its ratios, clicking it
opens the card (``gpu_requested``). Beside it, the selected card's daily
ratios with the 1.0 line and its model's fleet median per day.

Memory is shown against the model's usual (the median of its cards,
:func:`fleetmon.health.rules.derating.model_usual`, what the derating rule
judges it against), not the marketing size: no board reports that (a T4
reports 94 % of 16 GB, every T4 alike), so against nominal every card of
such a model read as derated. The nominal share stays in the cell's tooltip.

The date axis never spans less than a few days (one day of data would
otherwise get sub-second ticks), points are drawn so a single day is
visible, and the legend sits above the plot, not over the data.

The two plots are built when the view is first shown (or a plot is first
asked for): importing pyqtgraph and numpy and building the plots is a third
of a second the window's launch does not pay for a view the user may never
open. The table is filled from the start.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QShowEvent
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QLabel, QSplitter, QTableView, QVBoxLayout,
                               QWidget)

from fleetmon.health.rules.derating import model_usual
from fleetmon.specbook import CATALOG_BOOK, SpecBook
from storage.rows import DeratingDay, FleetRow, GpuRow
from ui.history_reader import DeratingData, HistoryService
from ui.i18n import QT_TRANSLATE_NOOP
from ui.models.base import Index, RowsTableModel
from ui.widgets.columns import ColumnFitter

if TYPE_CHECKING:  # imported where the plots are built (_Plots.build)
    import pyqtgraph as pg

DAY = 86400
RATIOS: tuple[tuple[str, str, str], ...] = (
    ("clock_ratio", QT_TRANSLATE_NOOP("Derating", "clock under load / boost"), "#1565c0"),
    ("power_limit_ratio", QT_TRANSLATE_NOOP("Derating", "power limit / TDP"), "#c62828"),
    ("memory_ratio", QT_TRANSLATE_NOOP("Derating", "memory / model's usual"), "#2e7d32"),
    ("pcie_ratio", QT_TRANSLATE_NOOP("Derating", "PCIe link / nominal"), "#ef6c00"),
)
WINDOWS: tuple[tuple[str, int], ...] = ((QT_TRANSLATE_NOOP("Derating", "30 days"), 30 * DAY),
                                        (QT_TRANSLATE_NOOP("Derating", "90 days"), 90 * DAY),
                                        (QT_TRANSLATE_NOOP("Derating", "1 year"), 365 * DAY))
MIN_SPAN_S = 4 * DAY
PEER_RATIOS = ("memory_ratio",)
"""Ratios shown against the model's usual (its cards' median) rather than the nominal spec."""
UNKNOWN_MODEL = QT_TRANSLATE_NOOP("Derating", "unknown model")
SELECT_GPU = QT_TRANSLATE_NOOP("Derating", "select a GPU")
READING = QT_TRANSLATE_NOOP("Derating", "reading…")
NO_DAYS_FOR_GPU = QT_TRANSLATE_NOOP("Derating", "no derating days for this GPU in this window")
"""The card plot's reasons: :attr:`DeratingView.reason` keeps them English (tests), the plot shows them translated."""
DERATED_BELOW = 0.9
"""A model median this far below 1.0 (its usual for memory) is tinted as derating (< 0.75: red)."""


@dataclass(frozen=True)
class ModelSummary:
    """One GPU model: per ratio, the (min, median, max) over its cards' own medians; the cards' clock medians."""

    model: str
    cards: int
    days: int
    stats: Mapping[str, tuple[float, float, float] | None]
    clock_by_card: tuple[float, ...]
    clock_cards: tuple[tuple[str, float], ...] = ()
    """(uuid, clock median) per card, in the order of ``clock_by_card``: the strip plot's dots."""
    nominal: Mapping[str, tuple[float, float, float] | None] = field(default_factory=dict)
    """The :data:`PEER_RATIOS` against the nominal spec, as ``stats`` has them against the model's usual."""
    usual: Mapping[str, float] = field(default_factory=dict)
    """The model's usual value (its cards' median, against nominal) of each of the :data:`PEER_RATIOS`."""


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
        by_model[models.get(d.gpu_uuid, UNKNOWN_MODEL)].append(d)
    out = []
    for model, ds in by_model.items():
        stats: dict[str, tuple[float, float, float] | None] = {}
        nominal: dict[str, tuple[float, float, float] | None] = {}
        usual: dict[str, float] = {}
        clock_cards: list[tuple[str, float]] = []
        for key, _, _ in RATIOS:
            per_card = card_medians(ds, key)
            meds = sorted(per_card.values())
            stats[key] = (meds[0], statistics.median(meds), meds[-1]) if meds else None
            if key == "clock_ratio":
                clock_cards = sorted(per_card.items(), key=lambda kv: (kv[1], kv[0]))
            if key in PEER_RATIOS:
                nominal[key] = stats[key]
                u = model_usual(meds)
                if u is not None:
                    usual[key] = u
                    stats[key] = (meds[0] / u, statistics.median(meds) / u, meds[-1] / u)
        out.append(ModelSummary(model, len({d.gpu_uuid for d in ds}), len({d.day for d in ds}), stats,
                                tuple(v for _, v in clock_cards), tuple(clock_cards), nominal, usual))
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
    for prefix in ("NVIDIA ", "GeForce ", "Tesla ", "Quadro ", "AMD Instinct ", "AMD Radeon ", "Intel "):
        name = name.replace(prefix, "")
    return name.split("-")[0].strip() or model


def pct(v: float | None) -> str:
    return "—" if v is None else f"{v * 100:.0f} %"


class ModelSummaryModel(RowsTableModel[ModelSummary]):
    # Two header lines: the long one-line labels pushed the PCIe column out of sight even at 1920 px.
    COLUMNS = ("Model", "Cards", "Days", *(f"{label}\nmin · median · max" for _, label, _ in RATIOS))
    spec_book: SpecBook = CATALOG_BOOK
    """Where the nominal figures come from: a model with a fleet file's ``[[spec]]`` reads "(user spec)"."""

    def set_rows(self, rows: list[ModelSummary]) -> None:
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()

    def _spec_word(self, model: str) -> str:
        """" (user spec)" for a model a name-only [[spec]] covers, " (some cards: user spec)" for one whose
        [[spec]] tables match only some boards (by subsystem id or VBIOS), "" for the catalog's."""
        user = self.spec_book.user_specs_for(model)
        if not user:
            return ""
        return (QCoreApplication.translate("Derating", " (user spec)") if any(u.specificity == 0 for u in user)
                else QCoreApplication.translate("Derating", " (some cards: user spec)"))

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        s = self._rows[index.row()]
        c = index.column()
        stat = s.stats.get(RATIOS[c - 3][0]) if c >= 3 else None
        if role == Qt.ItemDataRole.DisplayRole:
            if c == 0:
                model = QCoreApplication.translate("Derating", UNKNOWN_MODEL) if s.model == UNKNOWN_MODEL else s.model
                return model + self._spec_word(s.model)
            if c == 1:
                return str(s.cards)
            if c == 2:
                return str(s.days)
            return "—" if stat is None else f"{pct(stat[0])} · {pct(stat[1])} · {pct(stat[2])}"
        if role == Qt.ItemDataRole.BackgroundRole and stat is not None and stat[1] < DERATED_BELOW:
            return QBrush(QColor("#ffcdd2" if stat[1] < 0.75 else "#ffe0b2"))
        if role == Qt.ItemDataRole.TextAlignmentRole and c >= 1:
            return int(Qt.AlignmentFlag.AlignCenter)
        if role == Qt.ItemDataRole.ToolTipRole and c == 0 and self.spec_book.has_user_specs(s.model):
            sources = "; ".join(
                QCoreApplication.translate("Derating", "{source} for {match}").format(
                    source=u.spec.source, match=u.match_text()) if u.match_text() else
                QCoreApplication.translate("Derating", "{source} for every card").format(source=u.spec.source)
                for u in self.spec_book.user_specs_for(s.model))
            return QCoreApplication.translate("Derating", "{model}: nominal figures from the fleet file's [[spec]] "
                                              "tables: {sources}").format(model=s.model, sources=sources)
        if role == Qt.ItemDataRole.ToolTipRole and c >= 3:
            key, label, _ = RATIOS[c - 3]
            text = QCoreApplication.translate(
                "Derating", "{model}, {cards} cards: {ratio}, min · median · max of the cards' medians").format(
                model=s.model, cards=s.cards, ratio=QCoreApplication.translate("Derating", label))
            nom = s.nominal.get(key)
            if key in s.usual and nom is not None:
                text += "\n" + QCoreApplication.translate(
                    "Derating", "against nominal: {min} · {median} · {max} (the model's usual is {usual} of "
                    "nominal: what its boards report)").format(min=pct(nom[0]), median=pct(nom[1]), max=pct(nom[2]),
                                                               usual=pct(s.usual[key]))
            return text
        return None

    def headerData(self, section: int, orientation: Qt.Orientation,  # noqa: N802 - Qt API
                   role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal and section >= 3:
            return QCoreApplication.translate("Derating", "{ratio}\nmin · median · max").format(
                ratio=QCoreApplication.translate("Derating", RATIOS[section - 3][1]))
        if role == Qt.ItemDataRole.ToolTipRole and orientation == Qt.Orientation.Horizontal and section >= 3:
            key = RATIOS[section - 3][0]
            return (QCoreApplication.translate(
                "Derating", "Each card's reported memory against the median of its model's cards (100 % = as its "
                "peers; the nominal share is in the cell's tooltip)") if key in PEER_RATIOS else
                QCoreApplication.translate(
                    "Derating", "Each card's median daily ratio to the nominal spec (100 % = as specified)"))
        return super().headerData(section, orientation, role)


@dataclass
class _Plots:
    """The view's two pyqtgraph plots and their items (built by :meth:`DeratingView._ensure_plots`)."""

    strip: pg.PlotWidget
    card: pg.PlotWidget
    curves: dict[str, pg.PlotDataItem]
    median_curve: pg.PlotDataItem
    card_reason: pg.TextItem

    @classmethod
    def build(cls) -> _Plots:
        import pyqtgraph as pg

        strip = pg.PlotWidget(background="w")
        strip.setTitle(QCoreApplication.translate("Derating", "Clock / boost per card (bar: the model's median)"),
                       size="9pt")
        strip.setToolTip(QCoreApplication.translate(
            "Derating", "One dot per card: its median clock under load against the boost clock. Hover a dot to "
            "name the card, click it to open it."))
        strip.showGrid(y=True, alpha=0.2)
        strip.setMinimumWidth(260)
        strip.setMenuEnabled(False)
        from ui.views.plots import LocalDateAxis

        card = pg.PlotWidget(background="w", axisItems={"bottom": LocalDateAxis()})
        card.showGrid(x=True, y=True, alpha=0.2)
        card.setMenuEnabled(False)
        card.setLimits(minXRange=MIN_SPAN_S)
        card.setYRange(0.0, 1.2)
        card.addItem(pg.InfiniteLine(angle=0, pos=1.0, pen=pg.mkPen("#888888", style=Qt.PenStyle.DashLine)))
        curves: dict[str, pg.PlotDataItem] = {}
        for key, label, colour in RATIOS:
            curves[key] = card.plot(pen=pg.mkPen(colour, width=2), symbol="o", symbolSize=6,
                                    symbolBrush=colour, symbolPen=None, connect="finite",
                                    name=QCoreApplication.translate("Derating", label))
        median_curve = card.plot(pen=pg.mkPen("#6a1b9a", width=2, style=Qt.PenStyle.DotLine), connect="finite")
        card_reason = pg.TextItem(QCoreApplication.translate("Derating", SELECT_GPU), color="#546e7a",
                                  anchor=(0.5, 0.5))
        card_reason.setParentItem(card.getPlotItem().vb)
        card.getPlotItem().vb.sigResized.connect(lambda vb: card_reason.setPos(vb.width() / 2, vb.height() / 2))
        return cls(strip, card, curves, median_curve, card_reason)


class DeratingView(QWidget):
    """The fleet summary per model, a dot per card (hover names it, a click emits ``gpu_requested``) and the
    selected card's daily ratios. ``card_lookup`` (uuid → the card's :class:`storage.rows.GpuRow`, the main
    window's snapshot) names the cards; without it a dot reads the node of its days and a short UUID."""

    gpu_requested = Signal(str)  # a card's UUID: a dot was clicked

    def __init__(self, service: HistoryService, parent: QWidget | None = None, *, now: Any = time.time) -> None:
        super().__init__(parent)
        self._now = now
        self.service = service
        service.derating_loaded.connect(self._on_loaded)
        self.data: DeratingData | None = None
        self.row: FleetRow | None = None
        self.card_lookup: Callable[[str], GpuRow | None] = lambda uuid: None
        self.summary: list[ModelSummary] = []
        self.dots: list[pg.ScatterPlotItem] = []
        self._strip_labels: list[str] = []  # the models under the strip plot (_fit_strip_labels)
        self._card_ratios: dict[str, dict[str, float]] = {}  # uuid → ratio key → the card's median
        self._card_node: dict[str, str] = {}
        self.window_box = QComboBox()
        for label, seconds in WINDOWS:
            self.window_box.addItem(QCoreApplication.translate("Derating", label), seconds)
        self.window_box.setCurrentIndex(1)
        self.window_box.currentIndexChanged.connect(lambda _: self.refresh())
        self.info = QLabel(QCoreApplication.translate("Derating", READING))
        top = QHBoxLayout()
        self.title = QLabel(self.tr("<b>Derating</b>: daily ratio to the nominal spec (1.0 = as specified)"))
        self.title.setToolTip(self.tr("Memory is compared with the model's usual (its cards' median): no board "
                                      "reports its marketing size."))
        top.addWidget(self.title, 1)
        top.addWidget(self.info)
        top.addWidget(QLabel(self.tr("Window:")))
        top.addWidget(self.window_box)

        self.model = ModelSummaryModel(self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setWordWrap(False)
        self.table.verticalHeader().setDefaultSectionSize(self.table.fontMetrics().height() + 8)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setVerticalScrollMode(QTableView.ScrollMode.ScrollPerPixel)
        self.fitter = ColumnFitter(self.table, flexible=(0,), minimum={0: 150})  # the model name elides last
        self._plots: _Plots | None = None  # built when first shown or asked for: see _ensure_plots
        self.strip_reason = QLabel("")

        # Each key whole on its line (a wrapped legend cut "1.0 = nominal" after "1.0").
        keys = [(c, QCoreApplication.translate("Derating", label)) for _, label, c in RATIOS]
        keys += [("#6a1b9a", self.tr("model's fleet median (clock)")), ("#888", self.tr("1.0 = nominal"))]
        marks = ["━━"] * len(RATIOS) + ["┅┅", "┄┄"]
        self.legend = QLabel(" ".join(f"<span style='white-space:nowrap'><span style='color:{c}'>{mark}</span> "
                                      f"{text}</span> &nbsp;" for (c, text), mark in zip(keys, marks)))
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.card_title = QLabel(self.tr("Click a dot (or a GPU in the fleet view) to see its daily ratios."))
        self.legend.setWordWrap(True)
        card_box = QWidget()
        lay = QVBoxLayout(card_box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.card_title)
        lay.addWidget(self.legend)
        self._card_layout = lay  # the card plot goes under the legend (_ensure_plots)
        # The table across the view's width (every column readable at 1240 px), the dots and the card below.
        lower = QSplitter(Qt.Orientation.Horizontal)
        lower.addWidget(card_box)  # the strip plot goes before it (_ensure_plots)
        self._lower = lower
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(lower)
        split.setSizes([250, 410])  # a model per row: the demo's six fit at 1024×640
        self.splitter = split
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(split, 1)
        self.reason: str | None = SELECT_GPU
        self.refresh()

    # -- the plots, built on first use ---------------------------------------------------

    def _ensure_plots(self) -> _Plots:
        """The plots, built (and drawn from what the view holds) the first time the view shows or one is used."""
        if self._plots is None:
            plots = self._plots = _Plots.build()
            self._lower.insertWidget(0, plots.strip)
            plots.strip.getViewBox().sigResized.connect(self._fit_strip_labels)
            self._card_layout.addWidget(plots.card, 1)
            plots.card.show()  # a widget added to a shown one stays hidden until shown (the splitter shows the strip)
            self._lower.setSizes([380, 720])
            if self.data is not None:
                self._draw_strip(self.summary)
            self._draw_card()
        return self._plots

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt API
        self._ensure_plots()
        super().showEvent(event)

    @property
    def strip(self) -> pg.PlotWidget:
        """The strip plot: a dot per card."""
        return self._ensure_plots().strip

    @property
    def card(self) -> pg.PlotWidget:
        """The selected card's daily ratios."""
        return self._ensure_plots().card

    @property
    def curves(self) -> dict[str, pg.PlotDataItem]:
        return self._ensure_plots().curves

    @property
    def median_curve(self) -> pg.PlotDataItem:
        return self._ensure_plots().median_curve

    @property
    def card_reason(self) -> pg.TextItem:
        return self._ensure_plots().card_reason

    def refresh(self) -> None:
        until = float(int(self._now()) + DAY)
        self.info.setText(QCoreApplication.translate("Derating", READING))
        self.service.request_derating(until - float(self.window_box.currentData()), until)

    def show_gpu(self, row: FleetRow) -> None:
        self.row = row
        self._draw_card()

    def _on_loaded(self, data: DeratingData) -> None:
        self.data = data
        summary = summarize(data.days, data.models)
        self.summary = summary
        self.model.set_rows(summary)
        self._card_ratios = {}
        for key, _, _ in RATIOS:
            for uuid, v in card_medians(data.days, key).items():
                self._card_ratios.setdefault(uuid, {})[key] = v
        self._card_node = {d.gpu_uuid: d.node for d in data.days if d.node}  # sorted by day: the latest wins
        days = (self.tr("1 GPU-day") if len(data.days) == 1 else self.tr("{count} GPU-days").format(
            count=len(data.days)))
        models = self.tr("1 model") if len(summary) == 1 else self.tr("{count} models").format(count=len(summary))
        self.info.setText(self.tr("{days}, {models} · read {ms} ms").format(days=days, models=models,
                                                                           ms=f"{data.read_ms:.0f}"))
        if self._plots is not None:  # else drawn when they are built
            self._draw_strip(summary)
        self._draw_card()

    # -- the dots ---------------------------------------------------------------------------

    def card_name(self, uuid: str) -> str:
        """"rig-3090-03 GPU 2 · NVIDIA GeForce RTX 3090" (the snapshot's placement, else the days' node)."""
        g = self.card_lookup(uuid)
        model = (g.model if g is not None else None) or (self.data.models.get(uuid) if self.data else None) or ""
        node = (g.node if g is not None else None) or self._card_node.get(uuid) or "?"
        where = f"{node} GPU {g.index}" if g is not None and g.index is not None else f"{node} {uuid[:16]}"
        return f"{where} · {model}" if model else where

    def card_tip(self, x: float = 0.0, y: float = 0.0, data: Any = None) -> str:
        """A dot's tooltip: the card and its ratios (pyqtgraph's ``tip`` callback)."""
        uuid = str(data or "")
        model = self.data.models.get(uuid, "") if self.data else ""
        usual = next((s.usual for s in self.summary if s.model == model), {})
        lines = [self.card_name(uuid)]
        mine = self._card_ratios.get(uuid, {})
        for key, label, _ in RATIOS:
            v = mine.get(key)
            if v is None:
                continue
            if key in usual:
                lines.append(self.tr("{ratio}: {value} ({nominal} of nominal)").format(
                    ratio=QCoreApplication.translate("Derating", label), value=pct(v / usual[key]), nominal=pct(v)))
            else:
                lines.append(self.tr("{ratio}: {value}").format(ratio=QCoreApplication.translate("Derating", label),
                                                               value=pct(v)))
        lines.append(self.tr("click to open this card"))
        return "\n".join(lines)

    def _on_dot_clicked(self, item: Any, points: Any, ev: Any = None) -> None:
        if points is not None and len(points):
            self.gpu_requested.emit(str(points[0].data()))

    def dot_position(self, uuid: str) -> tuple[float, float] | None:
        """Where a card's dot is in the strip plot's coordinates (tests hover and click it there)."""
        for item in self.dots:
            for p in item.points():
                if p.data() == uuid:
                    return float(p.pos().x()), float(p.pos().y())
        return None

    def _draw_strip(self, summary: Sequence[ModelSummary]) -> None:
        import numpy as np
        import pyqtgraph as pg

        self.strip.clear()
        self.dots = []
        ticks = []
        for i, s in enumerate(summary):
            ticks.append((i, short_model(s.model)))
            cards = [(u, v) for u, v in s.clock_cards if math.isfinite(v)]
            if not cards:
                continue
            ys = np.array([v for _, v in cards])
            xs = i + np.linspace(-0.25, 0.25, len(ys)) if len(ys) > 1 else np.array([float(i)])
            dots = pg.ScatterPlotItem(x=xs, y=ys, data=[u for u, _ in cards], size=7, pen=None,
                                      brush=pg.mkBrush(21, 101, 192, 150), hoverable=True, hoverSize=11,
                                      hoverBrush=pg.mkBrush("#0d47a1"), tip=self.card_tip)
            dots.sigClicked.connect(self._on_dot_clicked)
            self.strip.addItem(dots)
            self.dots.append(dots)
            med = float(np.median(ys))
            self.strip.plot([i - 0.35, i + 0.35], [med, med], pen=pg.mkPen("#c62828", width=3))
        self.strip.addItem(pg.InfiniteLine(angle=0, pos=1.0, pen=pg.mkPen("#888888", style=Qt.PenStyle.DashLine)))
        self._strip_labels = [label for _, label in ticks]
        self._fit_strip_labels()  # the ticks and the x range
        self.strip.setYRange(0.0, 1.2)
        if not summary:
            self.strip.setTitle(self.tr("no derating days in this window"), size="9pt")

    def _fit_strip_labels(self, *_args: object) -> None:
        """The models under the strip plot, every other one a line lower when side by side they would overlap
        (nine models at the default window size), with room for the second line and for the outer names: each
        model stays named, none is drawn over another or left out at an edge (pyqtgraph drops a label that
        would reach past the axis)."""
        from PySide6.QtGui import QFontMetrics

        labels = self._strip_labels
        axis = self.strip.getAxis("bottom")
        n = max(len(labels), 1)
        width = max(self.strip.getViewBox().width(), 1.0)
        metrics = QFontMetrics(axis.style.get("tickFont") or self.strip.font())
        widths = [metrics.horizontalAdvance(label) + 6 for label in labels]
        crowded = any(w > width / (n + 0.2) for w in widths)
        axis.setTicks([[(i, f"\n{label}" if crowded and i % 2 else label) for i, label in enumerate(labels)]])
        axis.setHeight(int(metrics.height() * 2.2 + 14) if crowded else None)
        # Half the widest outer name beyond the first and last model, in slots (0.6 to 2): the margin m with
        # m slots = outer px, a slot being width / (n - 1 + 2m) px.
        outer = max([widths[0], widths[-1]] if widths else [0]) / 2
        margin = 2.0 if width <= 2 * outer else min(max(0.6, outer * (n - 1) / (width - 2 * outer)), 2.0)
        self.strip.setXRange(-margin, n - 1 + margin, padding=0)

    def _say(self, reason: str | None) -> None:
        self.reason = reason
        if self._plots is not None:  # else set when they are built
            self._plots.card_reason.setText(QCoreApplication.translate("Derating", reason) if reason else "")
            self._plots.card_reason.setVisible(reason is not None)

    @property
    def spec_book(self) -> SpecBook:
        """The fleet file's ``[[spec]]`` tables over the catalog (the main window sets it)."""
        return self.model.spec_book

    @spec_book.setter
    def spec_book(self, book: SpecBook) -> None:
        self.model.beginResetModel()
        self.model.spec_book = book
        self.model.endResetModel()

    def _spec_note(self, row: FleetRow) -> str:
        """" · user spec (fleet.toml:12)" when the card is judged against a fleet file's [[spec]], else ""."""
        g = self.card_lookup(row.uuid)
        spec = (self.spec_book.for_inventory(row.model, g.inventory, g.vbios) if g is not None
                else self.spec_book.lookup(row.model))
        if spec is None or spec.origin != "user":
            return ""
        return self.tr(" · nominal from user spec ({source})").format(source=spec.source.removeprefix('user spec, '))

    def _draw_card(self) -> None:
        if self.row is None:
            self._say(SELECT_GPU)
            return
        self.card_title.setText(self.tr("<b>{node} GPU {index}</b> — {model}").format(
            node=self.row.node, index=self.row.index, model=self.row.model) + self._spec_note(self.row))
        if self.data is None:
            self._say(READING)
            return
        mine = [d for d in self.data.days if d.gpu_uuid == self.row.uuid]
        self._say(None if mine else NO_DAYS_FOR_GPU)
        if self._plots is None:  # drawn when they are built
            return
        import numpy as np

        x = np.array([float(d.day) for d in mine])
        model = self.data.models.get(self.row.uuid, self.row.model or "")
        usual = next((s.usual for s in self.summary if s.model == model), {})
        for key, _, _ in RATIOS:
            base = usual.get(key, 1.0)  # memory against the model's usual, the rest against nominal
            y = np.array([np.nan if getattr(d, key) is None else float(getattr(d, key)) / base for d in mine])
            if np.isfinite(y).any():
                self.curves[key].setData(x, y, connect="finite")
            else:  # pyqtgraph's symbol bounds warn "All-NaN slice" on a curve with no finite point
                self.curves[key].setData([], [])
        mx, my = fleet_median_by_day(self.data.days, self.data.models, model, "clock_ratio")
        self.median_curve.setData(np.array(mx, dtype=float), np.array(my, dtype=float), connect="finite")
        if not mine:
            until = self.data.until
            self.card.setXRange(until - MIN_SPAN_S, until, padding=0)
            return
        lo, hi = float(x.min()), float(x.max()) + DAY
        if hi - lo < MIN_SPAN_S:
            mid = (lo + hi) / 2
            lo, hi = mid - MIN_SPAN_S / 2, mid + MIN_SPAN_S / 2
        self.card.setXRange(lo, hi, padding=0.02)
        ys = [float(getattr(d, k)) / usual.get(k, 1.0) for d in mine for k, _, _ in RATIOS
              if getattr(d, k) is not None and math.isfinite(float(getattr(d, k)))]
        self.card.setYRange(min([0.5] + ys) - 0.05, max([1.1] + ys) + 0.05, padding=0)

    def point_counts(self) -> dict[str, int]:
        import numpy as np

        return {k: int(np.isfinite(c.getData()[1]).sum()) if c.getData()[1] is not None else 0
                for k, c in self.curves.items()}
