"""Save a view's HTML report through a file dialog (the inspection and the pre-run review share it)."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget


def write_html(path: str | Path, html: str) -> Path:
    """Write ``html`` to ``path`` (UTF-8) and return the path."""
    out = Path(path)
    out.write_text(html, encoding="utf-8")
    return out


def save_html_dialog(parent: QWidget, html: str, *, title: str, stem: str, now: float) -> Path | None:
    """Ask where to save (suggesting ``STEM-YYYYmmdd-HHMM.html`` for ``now``); a write error is a message box."""
    name = f"{stem}-{time.strftime('%Y%m%d-%H%M', time.gmtime(now))}.html"
    path, _ = QFileDialog.getSaveFileName(parent, title, name,
                                          QCoreApplication.translate("SaveHtml", "HTML (*.html *.htm)"))
    if not path:
        return None
    try:
        return write_html(path, html)
    except OSError as exc:
        QMessageBox.warning(parent, title, QCoreApplication.translate("SaveHtml", "Cannot write {path}: {error}")
                            .format(path=path, error=exc.strerror or exc))
        return None
