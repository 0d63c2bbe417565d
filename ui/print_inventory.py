"""File ▸ Print inventory…: the inventory sheet on paper or as a PDF, legible.

The sheet (:func:`fleetmon.export.read_sheet`, the rows the export writes) is
read off the GUI thread, then drawn page by page through Qt's print dialog,
whose "Print to file (PDF)" makes the PDF:

- landscape, at :data:`FONT_PT` (a readable size; the columns are never
  squeezed below it, except a table too wide even then, which is scaled to
  the page width);
- every page headed by the fleet, the date, its section and "page i of n";
- :data:`fleetmon.export.PRINT_SECTIONS`: first the columns an inspector reads
  across the page width, then the remaining columns in a second section (each
  row named again by node and slot), each section starting on a new page;
- the table's header row at the top of every page.

The pages are drawn with QPainter rather than through a QTextDocument table:
Qt's rich-text table layout took about 25 ms a row (a 1,000-card fleet: half a
minute with the window frozen); measuring the cells and drawing them is
linear and fast, and a progress dialog with Cancel shows the pages drawn.

The print dialog is injectable (``ask_printer``) so that tests print to a PDF
file without a modal window.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication, QMarginsF, QObject, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import (QAction, QColor, QFont, QFontDatabase, QFontMetricsF, QKeySequence, QPageLayout,
                           QPainter, QPen)
from PySide6.QtWidgets import QMessageBox, QProgressDialog, QWidget

from fleetmon import i18n
from fleetmon.export import INVENTORY_SHEET, PRINT_SECTIONS, Column, Sheet, fleet_label, shown, shown_value
from ui import format as fmt
from ui.inspection_worker import Jobs

if TYPE_CHECKING:
    # QtPrintSupport costs about 0.2 s of CPU at import, a fifth of the window's launch: it is imported
    # when the user prints, not when the window opens.
    from PySide6.QtPrintSupport import QPrinter

FONT_PT = 8.0
"""The printed table's font size, points."""
MARGIN_MM = 12.0
HEADER_BG = QColor("#DDE4EE")
RULE = QColor("#C8CDD4")
TINTS = {"critical": "#F4C7C3", "fail": "#F4C7C3", "unreachable": "#F4C7C3", "warning": "#FCE8B2",
         "warn": "#FCE8B2", "stale": "#FCE8B2", "unknown": "#E0E0E0"}
"""Cell backgrounds of a verdict or health word, as the workbook tints them."""

AskPrinter = Callable[[QWidget, "QPrinter"], bool]
"""``ask_printer(parent, printer)``: let the user pick the printer or a PDF file; whether to print."""
ShowError = Callable[[QWidget, str], None]
Progress = Callable[[int, int], bool]
"""``progress(pages drawn, pages)``; False cancels."""

_BY_KEY: dict[str, Column] = {c.key: c for c in INVENTORY_SHEET}


def cell_text(value: Any, kind: str) -> str:
    """A printed cell: unknown numbers and dates as a dash (never 0), dates in UTC, watts without ".0"."""
    if value is None or value == "":
        return fmt.DASH if kind in ("int", "float", "date") else ""
    if kind == "date" and isinstance(value, (int, float)):
        return time.strftime("%Y-%m-%d %H:%M", time.gmtime(float(value)))
    if kind == "float" and isinstance(value, float):
        return f"{value:.0f}" if value.is_integer() else f"{value:.1f}"
    return shown(str(value))


@dataclass
class Table:
    """One section laid out: its columns' widths, header lines and each row's lines per cell."""

    title: str
    columns: list[Column]
    widths: list[float]
    header: list[list[str]]
    rows: list[list[list[str]]]
    tints: list[list[str | None]]
    scale: float = 1.0  # < 1 only when the table is wider than the page at the printed size


@dataclass
class Page:
    """What one printed page shows: its section, the header row, and which of the section's rows."""

    number: int
    table: Table
    rows: range
    header: list[str] = field(default_factory=list)


def _wrap(text: str, width: float, fm: QFontMetricsF) -> list[str]:
    """``text`` broken at spaces into lines of at most ``width`` (a word longer than that stands alone)."""
    lines: list[str] = []
    for para in text.split("\n"):
        line = ""
        for word in para.split(" "):
            trial = f"{line} {word}" if line else word
            if line and fm.horizontalAdvance(trial) > width:
                lines.append(line)
                line = word
            else:
                line = trial
        lines.append(line)
    return lines or [""]


def layout_table(title: str, keys: Sequence[str], rows: Sequence[Mapping[str, Any]], fm: QFontMetricsF,
                 bold: QFontMetricsF, page_width: float, pad: float) -> Table:
    """Measure a section: each column as wide as its widest cell (its header may wrap at spaces), the wrapped
    column (Findings) taking what is left of the page; a table wider than the page even so gets a scale."""
    columns = [_BY_KEY[k] for k in keys]
    # The cells in the reader's language as the workbook writes them (verdict and health words, advice, a
    # stored finding's summary); the tints below read the stored English values.
    texts = [[cell_text(shown_value(c.key, r.get(c.key)), c.kind) for c in columns] for r in rows]
    widths: list[float] = []
    for i, c in enumerate(columns):
        # The header as printed (the core's catalog translates it; a Chinese one breaks nowhere: no spaces).
        words = max((bold.horizontalAdvance(w) for w in i18n._(c.header).split(" ")), default=0.0)
        if c.kind == "wrap":
            # Findings list one finding a line; each line as it is, up to the page's width.
            cells = max((fm.horizontalAdvance(part) for t in texts for part in t[i].split("; ")), default=0.0)
        else:
            cells = max((fm.horizontalAdvance(t[i]) for t in texts), default=0.0)
        widths.append(max(words, cells) + 2 * pad)
    fixed = sum(w for w, c in zip(widths, columns) if c.kind != "wrap")
    wrap = [i for i, c in enumerate(columns) if c.kind == "wrap"]
    if wrap:
        room = max(page_width - fixed, 0.0) / len(wrap)
        minimum = fm.horizontalAdvance("x" * 24) + 2 * pad
        for i in wrap:
            widths[i] = min(widths[i], max(room, minimum))
    total = sum(widths)
    scale = min(1.0, page_width / total) if total else 1.0
    header = [_wrap(i18n._(c.header), w - 2 * pad, bold) for c, w in zip(columns, widths)]
    lines = [[_wrap(t.replace("; ", "\n"), w - 2 * pad, fm) if c.kind == "wrap" else [t]
              for t, c, w in zip(row, columns, widths)] for row in texts]
    tints = [[TINTS.get(str(r.get(c.key))) if c.key in ("verdict", "health") else None for c in columns]
             for r in rows]
    return Table(title, columns, widths, header, lines, tints, scale)


def paginate(tables: Sequence[Table], page_height: float, line: float, pad: float, top: float) -> list[Page]:
    """Split each table into pages: the header row on every page, a row never split, each table on new pages."""
    pages: list[Page] = []
    for t in tables:
        head = max(len(h) for h in t.header) * line + 2 * pad
        room = page_height / t.scale - top - head
        start, used = 0, 0.0
        for i, cells in enumerate(t.rows):
            h = max(len(c) for c in cells) * line + 2 * pad
            if used + h > room and i > start:
                pages.append(Page(len(pages) + 1, t, range(start, i), [c.header for c in t.columns]))
                start, used = i, 0.0
            used += h
        pages.append(Page(len(pages) + 1, t, range(start, len(t.rows)), [c.header for c in t.columns]))
    return pages


def paint_inventory(printer: QPrinter, sheet: Sheet, *, fleet: str, now: float,
                    progress: Progress | None = None) -> list[Page]:
    """Draw ``sheet`` on ``printer`` (set up by the caller, e.g. :func:`setup_printer`); the pages drawn
    (fewer when ``progress`` cancelled: the printer is then aborted)."""
    painter = QPainter()
    if not painter.begin(printer):
        raise OSError(QCoreApplication.translate("InventoryPrint", "cannot print to {printer}").format(
            printer=printer.outputFileName() or printer.printerName()))
    try:
        return _paint(painter, printer, sheet, fleet=fleet, now=now, progress=progress)
    finally:
        painter.end()


def _paint(painter: QPainter, printer: QPrinter, sheet: Sheet, *, fleet: str, now: float,
           progress: Progress | None) -> list[Page]:
    font = QFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.GeneralFont))
    font.setPointSizeF(FONT_PT)
    bold = QFont(font)
    bold.setBold(True)
    title_font = QFont(font)
    title_font.setPointSizeF(FONT_PT + 2)
    title_font.setBold(True)
    fm, fmb, fmt_title = QFontMetricsF(font, printer), QFontMetricsF(bold, printer), QFontMetricsF(title_font, printer)
    area = printer.pageLayout().paintRectPixels(printer.resolution())
    width, height = float(area.width()), float(area.height())
    line = fm.lineSpacing()
    pad = line * 0.2
    top = fmt_title.lineSpacing() + line * 0.8  # the page's heading, then the table
    tables = [layout_table(title, keys, sheet.gpus, fm, fmb, width, pad) for title, keys in PRINT_SECTIONS]
    pages = paginate(tables, height, line, pad, top)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(now))
    count = (QCoreApplication.translate("InventoryPrint", "1 GPU") if len(sheet.gpus) == 1 else
             QCoreApplication.translate("InventoryPrint", "{count} GPUs").format(count=len(sheet.gpus)))
    heading = QCoreApplication.translate("InventoryPrint", "GPU inventory — {fleet}").format(fleet=fleet)
    for n, page in enumerate(pages):
        if progress is not None and progress(n, len(pages)) is False:
            printer.abort()
            return pages[:n]
        if n:
            printer.newPage()
        t = page.table
        painter.save()
        painter.scale(t.scale, t.scale)
        w = width / t.scale
        painter.setFont(title_font)
        painter.setPen(Qt.GlobalColor.black)
        painter.drawText(QRectF(0, 0, w, fmt_title.lineSpacing()), Qt.AlignmentFlag.AlignLeft, heading)
        painter.setFont(font)
        painter.drawText(QRectF(0, 0, w, fmt_title.lineSpacing()), Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignBottom,
                         " · ".join((when, count, i18n._(t.title),
                                     QCoreApplication.translate("InventoryPrint", "page {page} of {pages}")
                                     .format(page=page.number, pages=len(pages)))))
        y = top
        y = _row(painter, t, t.header, [None] * len(t.columns), y, line, pad, bold, header=True)
        for i in page.rows:
            y = _row(painter, t, t.rows[i], t.tints[i], y, line, pad, font)
        painter.restore()
    if progress is not None:
        progress(len(pages), len(pages))
    return pages


def _row(painter: QPainter, t: Table, cells: Sequence[Sequence[str]], tints: Sequence[str | None], y: float,
         line: float, pad: float, font: QFont, *, header: bool = False) -> float:
    h = max(len(c) for c in cells) * line + 2 * pad
    total = sum(t.widths)
    if header:
        painter.fillRect(QRectF(0, y, total, h), HEADER_BG)
    painter.setFont(font)
    x = 0.0
    for c, (col, w, lines, tint) in enumerate(zip(t.columns, t.widths, cells, tints)):
        if tint:
            painter.fillRect(QRectF(x, y, w, h), QColor(tint))
        right = col.kind in ("int", "float") and not header
        align = (Qt.AlignmentFlag.AlignRight if right else Qt.AlignmentFlag.AlignLeft) | Qt.AlignmentFlag.AlignTop
        for k, text in enumerate(lines):
            painter.drawText(QRectF(x + pad, y + pad + k * line, w - 2 * pad, line), align, text)
        x += w
    painter.setPen(QPen(RULE, 0))
    painter.drawLine(QPointF(0, y + h), QPointF(total, y + h))
    painter.setPen(Qt.GlobalColor.black)
    return y + h


def setup_printer(printer: QPrinter) -> None:
    """Landscape with 12 mm margins (the paper size stays the printer's or the locale's)."""
    printer.setPageOrientation(QPageLayout.Orientation.Landscape)
    printer.setPageMargins(QMarginsF(MARGIN_MM, MARGIN_MM, MARGIN_MM, MARGIN_MM), QPageLayout.Unit.Millimeter)


def ask_print_dialog(parent: QWidget, printer: QPrinter) -> bool:
    from PySide6.QtPrintSupport import QPrintDialog

    dialog = QPrintDialog(printer, parent)
    dialog.setWindowTitle(QCoreApplication.translate("InventoryPrint", "Print the inventory"))
    return dialog.exec() == QPrintDialog.DialogCode.Accepted


def show_error_box(parent: QWidget, message: str) -> None:
    QMessageBox.warning(parent, QCoreApplication.translate("InventoryPrint", "Print inventory"), message)


def _read(db_path: str, now: float, stale_after_s: float | None) -> Sheet:
    from fleetmon.export import read_sheet
    from storage.db import open_database

    db = open_database(db_path, readonly=True)
    try:
        return read_sheet(db, now=now, stale_after_s=stale_after_s)
    finally:
        db.close()


class InventoryPrint(QObject):
    """The File menu's Print inventory…: read the sheet off the GUI thread, ask for a printer, print."""

    printed = Signal(str)  # the printer's name, or the PDF file
    failed = Signal(str)

    def __init__(self, db_path: str, parent: QWidget, *, ask_printer: AskPrinter = ask_print_dialog,
                 show_error: ShowError = show_error_box, clock: Callable[[], float] = time.time) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self.window = parent
        self.ask_printer = ask_printer
        self.show_error = show_error
        self.clock = clock
        self.stale_after_s: float | None = None  # the fleet's stale limit (None: the default), set by the app
        self.fleet_name: str | None = None  # the fleet file's name (None: the database's file name)
        self.jobs = Jobs(self)
        self.action = QAction(QCoreApplication.translate("InventoryPrint", "&Print inventory…"), parent)
        self.action.setShortcut(QKeySequence.StandardKey.Print)
        self.action.setStatusTip(QCoreApplication.translate(
            "InventoryPrint", "Print the inventory sheet, or save it as PDF (landscape, by section)"))
        self.action.triggered.connect(self.start)

    def start(self) -> None:
        self.action.setEnabled(False)
        path, now, stale = self.db_path, self.clock(), self.stale_after_s
        self.jobs.submit(lambda: (_read(path, now, stale), now), self._on_sheet, self._on_failed)

    def _on_sheet(self, result: tuple[Sheet, float]) -> None:
        sheet, now = result
        self.action.setEnabled(True)
        from PySide6.QtPrintSupport import QPrinter

        printer = QPrinter(QPrinter.PrinterMode.HighResolution)
        setup_printer(printer)
        printer.setDocName(self.tr("GPU inventory {date}").format(date=time.strftime('%Y-%m-%d', time.gmtime(now))))
        if not self.ask_printer(self.window, printer):
            return
        dlg = QProgressDialog(self.tr("Printing the inventory…"), self.tr("Cancel"), 0, 1, self.window)
        dlg.setWindowTitle(self.tr("Print inventory"))
        dlg.setWindowModality(Qt.WindowModality.WindowModal)  # setValue lets the window repaint
        dlg.setMinimumDuration(500)

        cancelled = []

        def progress(done: int, total: int) -> bool:
            dlg.setMaximum(max(total, 1))
            dlg.setValue(done)
            if dlg.wasCanceled():
                cancelled.append(True)
            return not cancelled

        try:
            paint_inventory(printer, sheet, fleet=fleet_label(self.db_path, self.fleet_name), now=now,
                            progress=progress)
        except OSError as exc:
            self._on_failed(str(exc))
            return
        finally:
            dlg.hide()
            dlg.deleteLater()
        if not cancelled:
            self.printed.emit(printer.outputFileName() or printer.printerName())

    def _on_failed(self, message: str) -> None:
        self.action.setEnabled(True)
        self.show_error(self.window, self.tr("Cannot print the inventory: {error}").format(error=message))
        self.failed.emit(message)
