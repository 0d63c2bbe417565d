"""The evidence archive's plots (:mod:`fleetmon.evidence`): PNG images drawn with QPainter on a QImage.

Why QPainter and not pyqtgraph: these images are drawn off the GUI thread (the app's
*Export evidence…* runs on a worker thread) and without a window (``fleetmon evidence``
under ``QT_QPA_PLATFORM=offscreen``). Qt documents painting on a QImage as safe on any
thread; pyqtgraph's plots are QGraphicsItems of a scene, which belong to the GUI thread.
A plot here is a few line charts over one time axis, which QPainter draws directly.

:func:`render_plots` is the :data:`fleetmon.evidence.PlotRenderer`; it needs a
QGuiApplication for fonts and makes an offscreen one when none exists (the CLI).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping, Sequence

from PySide6.QtCore import QBuffer, QByteArray, QCoreApplication, QIODevice, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QGuiApplication, QImage, QPainter, QPainterPath, QPen

from fleetmon.evidence import PlotPanel, PlotSpec

WIDTH = 1100
PANEL_H = 170
TOP = 44
LEFT = 70
RIGHT = 20
GAP = 30
BOTTOM = 34
COLORS = ("#1565c0", "#2e7d32", "#c62828", "#6a1b9a", "#ef6c00")

_app: QGuiApplication | None = None


def ensure_app() -> None:
    """A QGuiApplication for fonts: the running one, else an offscreen one made here (the CLI has no window)."""
    global _app
    if QGuiApplication.instance() is not None:
        return
    before = os.environ.get("QT_QPA_PLATFORM")
    os.environ["QT_QPA_PLATFORM"] = "offscreen"  # never a window, whatever display there is
    try:
        _app = QGuiApplication(["fleetmon-evidence"])
    finally:
        if before is None:
            os.environ.pop("QT_QPA_PLATFORM", None)
        else:
            os.environ["QT_QPA_PLATFORM"] = before


def render_plots(specs: Sequence[PlotSpec]) -> Mapping[str, bytes]:
    """PNG bytes of each spec, by its name."""
    ensure_app()
    return {s.name: render_png(s) for s in specs}


def _nice_step(span: float, count: int) -> float:
    raw = span / max(count, 1)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return float(m * mag)
    return float(10 * mag)


def _time_label(ts: float, span: float) -> str:
    fmt = "%Y-%m-%d" if span > 4 * 86400 else "%m-%d %H:%M"
    return time.strftime(fmt, time.gmtime(ts))


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 or v == int(v) else f"{v:.2f}".rstrip("0").rstrip(".")


def render_png(spec: PlotSpec) -> bytes:
    """One spec drawn as a PNG (a title, then one chart per panel over the spec's time span)."""
    height = TOP + len(spec.panels) * (PANEL_H + GAP) + BOTTOM - GAP
    img = QImage(WIDTH, height, QImage.Format.Format_RGB32)
    img.fill(QColor("white"))
    p = QPainter(img)
    try:
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)  # crisp lines: a small palette, a small PNG
        font = QFont()
        font.setPixelSize(12)
        p.setFont(font)
        bold = QFont(font)
        bold.setPixelSize(14)
        bold.setBold(True)
        p.setFont(bold)
        p.setPen(QColor("#222"))
        room = WIDTH - LEFT - RIGHT
        title = p.fontMetrics().elidedText(spec.title, Qt.TextElideMode.ElideRight, room)
        p.drawText(QRectF(LEFT, 8, room, 24), Qt.AlignmentFlag.AlignLeft, title)
        p.setFont(font)
        lo, hi = spec.since, max(spec.until, spec.since + 60)
        for i, panel in enumerate(spec.panels):
            top = TOP + i * (PANEL_H + GAP)
            _panel(p, spec, panel, QRectF(LEFT, top, WIDTH - LEFT - RIGHT, PANEL_H), lo, hi,
                   axis=i == len(spec.panels) - 1)
    finally:
        p.end()
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    img.save(buf, "PNG")  # type: ignore[call-overload]  # the stub says bytes; the binding wants str
    buf.close()
    return bytes(data.data())


def _panel(p: QPainter, spec: PlotSpec, panel: PlotPanel, r: QRectF, lo: float, hi: float, axis: bool) -> None:
    def x_of(ts: float) -> float:
        return r.left() + (ts - lo) / (hi - lo) * r.width()

    values = [v for s in panel.series for _, v in s.points if v is not None and math.isfinite(v)]
    p.setPen(QColor("#222"))
    p.drawText(QRectF(r.left(), r.top() - 18, r.width(), 16), Qt.AlignmentFlag.AlignLeft,
               f"{panel.title} ({panel.unit})")
    for a, b in spec.shade:
        xa, xb = max(r.left(), x_of(a)), min(r.right(), x_of(b))
        if xb >= xa:
            p.fillRect(QRectF(xa, r.top(), max(xb - xa, 2.0), r.height()), QColor(255, 224, 178))
    p.setPen(QPen(QColor("#999"), 1))
    p.drawRect(r)
    # time ticks: six labels on the last panel, grid lines on every panel
    span = hi - lo
    for k in range(7):
        ts = lo + span * k / 6
        x = x_of(ts)
        p.setPen(QPen(QColor("#eee"), 1))
        p.drawLine(QPointF(x, r.top() + 1), QPointF(x, r.bottom() - 1))
        if axis:
            p.setPen(QColor("#444"))
            box = QRectF(x - 120 if k == 6 else (x if k == 0 else x - 60), r.bottom() + 4, 120, 16)
            align = (Qt.AlignmentFlag.AlignRight if k == 6 else
                     Qt.AlignmentFlag.AlignLeft if k == 0 else Qt.AlignmentFlag.AlignHCenter)
            p.drawText(box, align, _time_label(ts, span))
    if not values:
        p.setPen(QColor("#777"))
        p.drawText(r, Qt.AlignmentFlag.AlignCenter,
                   QCoreApplication.translate("EvidencePlots", "no data (not supported or not recorded)"))
        return
    vmin, vmax = min(values), max(values)
    if vmax - vmin < 1e-9:
        vmin, vmax = vmin - 1, vmax + 1
    pad = (vmax - vmin) * 0.08
    vmin, vmax = vmin - pad, vmax + pad
    if min(values) >= 0 > vmin:
        vmin = 0.0

    def y_of(v: float) -> float:
        return r.bottom() - (v - vmin) / (vmax - vmin) * r.height()

    step = _nice_step(vmax - vmin, 4)
    tick = math.ceil(vmin / step) * step
    while tick <= vmax:
        y = y_of(tick)
        p.setPen(QPen(QColor("#eee"), 1))
        p.drawLine(QPointF(r.left() + 1, y), QPointF(r.right() - 1, y))
        p.setPen(QColor("#444"))
        p.drawText(QRectF(0, y - 8, LEFT - 6, 16), Qt.AlignmentFlag.AlignRight, _fmt(tick))
        tick += step
    legend_x = r.right() - 8
    for n, s in enumerate(panel.series):
        color = QColor(COLORS[n % len(COLORS)])
        pen = QPen(color, 1.4)
        p.setPen(pen)
        path = QPainterPath()
        drawing = False
        for ts, v in s.points:
            if v is None or not math.isfinite(v) or ts < lo or ts > hi:
                drawing = False  # a gap stays a gap: no line through missing readings
                continue
            pt = QPointF(x_of(ts), y_of(v))
            if drawing:
                path.lineTo(pt)
            else:
                path.moveTo(pt)
                path.lineTo(pt + QPointF(0.5, 0))
                drawing = True
        p.drawPath(path)
    for n, s in reversed(list(enumerate(panel.series))):  # right to left: the first series reads first
        color = QColor(COLORS[n % len(COLORS)])
        w = p.fontMetrics().horizontalAdvance(s.label) + 22
        legend_x -= w
        p.fillRect(QRectF(legend_x - 2, r.top() + 2, w, 16), QColor(255, 255, 255, 230))
        p.fillRect(QRectF(legend_x, r.top() + 8, 12, 3), color)
        p.setPen(QColor("#333"))
        p.drawText(QRectF(legend_x + 15, r.top() + 2, w, 16), Qt.AlignmentFlag.AlignLeft, s.label)
    for ts, label in spec.marks:
        if lo <= ts <= hi:
            x = x_of(ts)
            p.setPen(QPen(QColor("#b71c1c"), 1, Qt.PenStyle.DashLine))
            p.drawLine(QPointF(x, r.top()), QPointF(x, r.bottom()))
            p.setPen(QColor("#b71c1c"))
            p.drawText(QRectF(x + 3, r.bottom() - 18, 140, 16), Qt.AlignmentFlag.AlignLeft, label[:30])
