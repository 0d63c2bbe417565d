"""The Chinese report page and workbook as LibreOffice renders them (issue 25: "the printable report and the XLSX
render Chinese in LibreOffice").

Real parts: `fleetmon --lang zh_CN report --html` and `export -o FILE.xlsx` on a real database, LibreOffice's
headless converter (packaging/system-deps.sh installs it for the tests) writing PDF, and poppler's `pdftotext` /
`pdffonts` reading the PDF back. A missing CJK font shows as empty boxes: the text would still extract, so the
embedded fonts are checked too (fonts-noto-cjk, installed with the test packages).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import HOT, T0, Feeder, between
from storage.db import open_database

REPO = Path(__file__).resolve().parents[2]
NOW = T0 + 7200
SOFFICE = shutil.which("soffice") or shutil.which("libreoffice")

pytestmark = pytest.mark.skipif(SOFFICE is None or shutil.which("pdftotext") is None,
                                reason="LibreOffice or poppler-utils not installed (packaging/system-deps.sh test)")


def fleetmon(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fleetmon", "--lang", "zh_CN", *args], capture_output=True,
                          text=True, timeout=120, cwd=REPO)


def to_pdf(src: Path, out: Path, *infilter: str) -> Path:
    """LibreOffice's PDF of ``src`` in ``out`` (its own profile folder: a user's running LibreOffice is left alone)."""
    profile = out / "lo-profile"
    proc = subprocess.run([str(SOFFICE), f"-env:UserInstallation=file://{profile}", "--headless", *infilter,
                           "--convert-to", "pdf", "--outdir", str(out), str(src)],
                          capture_output=True, text=True, timeout=180)
    pdf = out / (src.stem + ".pdf")
    assert pdf.exists(), proc.stdout + proc.stderr
    return pdf


def pdf_text(pdf: Path) -> str:
    return subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, timeout=60,
                          check=True).stdout


def cjk_fonts(pdf: Path) -> list[str]:
    listing = subprocess.run(["pdffonts", str(pdf)], capture_output=True, text=True, timeout=60, check=True).stdout
    return [line.split()[0] for line in listing.splitlines()[2:] if "CJK" in line or "Hei" in line or "Song" in line]


def test_the_chinese_report_page_and_workbook_render_in_libreoffice(tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    store = open_database(db)
    Feeder(store, drivers={"n1": "550.54.15", "n2": "550.54.15", "n3": "550.54.15"}).feed(T0, NOW, {
        ("n2", 1): between(T0 + 3600, NOW, HOT),
        ("n3", 0): lambda ts: {"ecc_unc_vol": 2, "ecc_unc_agg": 2} if ts >= T0 + 6000 else {}})
    store.close()
    page, book = tmp_path / "report.html", tmp_path / "inventory.xlsx"
    assert fleetmon("report", "--db", str(db), "--now", str(NOW), "--html", str(page)).returncode == 2
    proc = fleetmon("export", "--db", str(db), "-o", str(book))
    assert proc.returncode == 0, proc.stderr

    # The page as a Writer document: LibreOffice's own HTML view (Writer/Web) leaves the first heading out.
    report = pdf_text(to_pdf(page, tmp_path, "--infilter=HTML (StarWriter)"))
    for words in ("fleetmon 巡检报告", "集群", "未关闭的问题", "不可纠正", "处理建议", "n3 gpu0", "ecc-uncorrectable"):
        assert words in report, words
    sheets = pdf_text(to_pdf(book, tmp_path))
    for words in ("节点", "型号", "n2", "n3"):
        assert words in sheets, words
    # Drawn with a CJK font, not boxes: each PDF embeds one.
    assert cjk_fonts(tmp_path / "report.pdf"), "no CJK font in the report's PDF"
    assert cjk_fonts(tmp_path / "inventory.pdf"), "no CJK font in the workbook's PDF"
    if os.environ.get("FLEETMON_KEEP_PDF"):
        for pdf in ("report.pdf", "inventory.pdf"):
            shutil.copy(tmp_path / pdf, Path(os.environ["FLEETMON_KEEP_PDF"]) / pdf)
