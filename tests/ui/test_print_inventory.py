"""File ▸ Print inventory… (issue 21, item 9): printed to a PDF file with QPrinter, the way the print dialog's
"Print to file" does. Landscape, a readable font, the inspector's columns first and the rest in a second
section, the header row on every page, a title with the fleet and the date."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtGui import QPageLayout, QPageSize
from PySide6.QtPrintSupport import QPrinter

from fleetmon.export import INVENTORY_SHEET, PRINT_SECTIONS, read_sheet
from helpers import T0, inventory, poll, uuid_of
from storage.db import open_database
from storage.findings import save_findings
from storage.ingest import ingest_polls
from storage.rows import NewFinding
from ui.print_inventory import FONT_PT, paint_inventory, setup_printer

pytestmark = pytest.mark.gui


@pytest.fixture
def db89(tmp_path: Path) -> Path:
    """89 GPUs (11 nodes of 8, one of 1) with real-length UUIDs, a card's two findings and a node's mismatch."""
    path = tmp_path / "fleet.db"
    db = open_database(path)

    def inv(node: str, i: int):
        return inventory(node, i, uuid=f"GPU-{abs(hash((node, i))) % 10**8:08x}-1a2b-3c4d-5e6f-0123456789ab")

    polls = [poll(f"gpu{n:02d}", T0, inv=[inv(f"gpu{n:02d}", i) for i in range(8)]) for n in range(1, 12)]
    polls.append(poll("odd1", T0, gpus=1))
    ingest_polls(db, polls)
    bad = inv("gpu01", 3).uuid
    save_findings(db, [
        NewFinding(key="k1", kind="ecc-uncorrectable", severity="critical", node="gpu01", gpu_uuid=bad),
        NewFinding(key="k3", kind="pcie-replay", severity="warning", node="gpu01", gpu_uuid=bad),
        NewFinding(key="k2", kind="driver-mismatch", severity="warning", node="gpu02"),
    ], now=T0 + 60)
    db.close()
    return path


def _sheet(path: Path):
    db = open_database(path, readonly=True)
    try:
        return read_sheet(db, now=T0 + 60)
    finally:
        db.close()


def _pdf_pages(path: Path) -> list[tuple[float, float]]:
    """The (width, height) of each page of a PDF Qt wrote (its page dictionaries are not compressed)."""
    data = path.read_bytes()
    boxes = re.findall(rb"/Type\s*/Page\b[^s].*?/MediaBox\s*\[\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*\]",
                       data, re.S)
    return [(float(x1) - float(x0), float(y1) - float(y0)) for x0, y0, x1, y1 in boxes]


def _pdf(printer: QPrinter, path: Path) -> None:
    printer.setOutputFormat(QPrinter.OutputFormat.PdfFormat)
    printer.setOutputFileName(str(path))


def test_every_column_is_printed_in_a_section() -> None:
    keys = [k for _, section in PRINT_SECTIONS for k in section]
    assert {c.key for c in INVENTORY_SHEET} <= set(keys)
    first = PRINT_SECTIONS[0][1]
    assert {"node", "gpu_index", "model", "serial", "verdict", "open_findings", "findings"} <= set(first)
    assert all(section[:1] == ("node",) for _, section in PRINT_SECTIONS)  # each row names its card


@pytest.mark.parametrize("paper", [QPageSize.PageSizeId.A4, QPageSize.PageSizeId.Letter])
def test_the_sheet_prints_legibly_to_pdf(qapp, db89: Path, tmp_path: Path, paper) -> None:
    sheet = _sheet(db89)
    assert len(sheet.gpus) == 89
    out = tmp_path / "inventory.pdf"
    printer = QPrinter(QPrinter.PrinterMode.HighResolution)
    setup_printer(printer)
    printer.setPageSize(QPageSize(paper))
    _pdf(printer, out)
    pages = paint_inventory(printer, sheet, fleet="lab cluster", now=T0 + 60)

    sizes = _pdf_pages(out)
    assert len(sizes) == len(pages) > 2  # not 89 rows squeezed onto one page
    assert all(w > h for w, h in sizes)  # landscape
    # At the printed size (never shrunk to fit), every section as wide as the page at most.
    page_w = printer.pageLayout().paintRectPixels(printer.resolution()).width()
    for p in pages:
        assert p.table.scale == 1.0 and sum(p.table.widths) <= page_w
    assert FONT_PT >= 7
    # Both sections, each from its first row to its last, the header row on every page.
    for title, keys in PRINT_SECTIONS:
        mine = [p for p in pages if p.table.title == title]
        assert mine and [i for p in mine for i in p.rows] == list(range(89))
        assert all(p.header == [c.header for c in INVENTORY_SHEET if c.key in keys] or
                   p.header[:2] == ["Node", "Group" if "group" in keys else "Slot"] for p in mine)
        assert all(p.header[0] == "Node" for p in mine)
    assert [p.number for p in pages] == list(range(1, len(pages) + 1))
    # The node-level finding counts in Open findings (it showed 0 while Findings listed it).
    first = pages[0].table
    heads = [c.header for c in first.columns]
    row = next(r for r in first.rows if r[0] == ["gpu02"] and r[heads.index("Slot")] == ["0"])
    assert row[heads.index("Open findings")] == ["1"]
    assert row[heads.index("Findings")] == ["warning: driver-mismatch (node)"]
    worst = next(r for r in first.rows if r[0] == ["gpu01"] and r[heads.index("Slot")] == ["3"])
    assert worst[heads.index("Findings")] == ["critical: ecc-uncorrectable", "warning: pcie-replay"]


def test_a_cancelled_print_stops(qapp, db89: Path, tmp_path: Path) -> None:
    printer = QPrinter(QPrinter.PrinterMode.HighResolution)
    setup_printer(printer)
    _pdf(printer, tmp_path / "c.pdf")
    drawn = paint_inventory(printer, _sheet(db89), fleet="x", now=T0, progress=lambda done, total: done < 1)
    assert len(drawn) == 1


def test_the_file_menu_prints_the_inventory(qtbot, db89: Path, tmp_path: Path) -> None:
    from ui.main_window import MainWindow

    w = MainWindow(str(db89), refresh_s=60, settings=QSettings(str(tmp_path / "w.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    out = tmp_path / "menu.pdf"
    asked = []

    def ask(parent, printer):
        asked.append(printer.pageLayout().orientation())
        _pdf(printer, out)
        return True

    w.inventory_print.ask_printer = ask
    w.inventory_print.clock = lambda: T0 + 60
    action = next(a for a in w.file_menu.actions() if a.text() == "&Print inventory…")
    with qtbot.waitSignal(w.inventory_print.printed, timeout=30000) as sig:
        action.trigger()
    assert asked == [QPageLayout.Orientation.Landscape] and sig.args == [str(out)]
    assert len(_pdf_pages(out)) > 2 and action.isEnabled()
    w.inventory_print.jobs.wait()
    w.close()


def test_the_fleet_files_name_titles_the_sheet(tmp_path: Path) -> None:
    from fleetmon.export import fleet_label
    from ui.app import fleet_name

    fleet = tmp_path / "fleet.toml"
    fleet.write_text('[fleet]\nname = "lab cluster"\n\n[[node]]\nname = "gpu01"\nurl = "http://127.0.0.1:1"\n')
    assert fleet_name(str(fleet)) == "lab cluster"
    assert fleet_label(tmp_path / "f.db", fleet_name(str(fleet))) == "lab cluster"
    assert fleet_name(None) is None and fleet_label(tmp_path / "f.db", None) == "f.db"
    fleet.write_text("[[node]\n")
    assert fleet_name(str(fleet)) is None


@pytest.mark.parametrize("lang", ["zh_CN", "en"])
def test_the_printed_verdict_and_health_words_follow_the_language(qapp, db89: Path, tmp_path: Path, lang) -> None:
    """The cells people read say the verdict and health words as the workbook does (通过 / 不通过 …); the tints
    still read the stored English words, and English prints as before."""
    from ui import i18n as ui_i18n
    from fleetmon.export import shown_value
    from ui.print_inventory import TINTS, cell_text

    assert ui_i18n.install(lang) == lang
    try:
        printer = QPrinter(QPrinter.PrinterMode.HighResolution)
        setup_printer(printer)
        _pdf(printer, tmp_path / "inventory.pdf")
        pages = paint_inventory(printer, _sheet(db89), fleet="lab", now=T0 + 60)
        intake = cell_text(shown_value("intake_text", "REJECT 2026-12-03"), "text")
    finally:
        ui_i18n.install("en")
    first = pages[0].table
    keys = [c.key for c in first.columns]
    worst = next(r for r, t in zip(first.rows, first.tints) if r[0] == ["gpu01"] and r[keys.index("gpu_index")] == ["3"])
    ok = next(r for r in first.rows if r[0] == ["gpu05"])
    cols = [k for k in ("verdict", "health") if k in keys]
    assert cols
    zh = lang == "zh_CN"
    assert intake == ("拒收 2026-12-03" if zh else "REJECT 2026-12-03")  # the Intake column, as the certificate
    words = {"verdict": ["通过"] if zh else ["pass"], "health": ["正常"] if zh else ["ok"]}
    for k in cols:
        assert ok[keys.index(k)] == words[k]
    assert worst[keys.index(cols[0])][0] in (("不通过", "严重") if zh else ("fail", "critical"))
    tint = next(t for r, t in zip(first.rows, first.tints) if r is worst)
    assert tint[keys.index(cols[0])] == TINTS["fail"]
