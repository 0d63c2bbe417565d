"""Pieces of the window's shell: the crash dialog, the tray icon, the colour scheme, a sidebar entry."""

from __future__ import annotations

import gc
import logging
import sys
import time
import traceback
from collections.abc import Callable
from types import TracebackType
from typing import Any

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtGui import QColor, QGuiApplication, QIcon, QPainter, QPalette, QPixmap
from PySide6.QtWidgets import (QApplication, QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QSystemTrayIcon,
                               QVBoxLayout, QWidget)

from ui import format as fmt

log = logging.getLogger("fleetmon.ui")
ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], Any]


class ExceptionDialog(QDialog):
    """An uncaught exception: what happened, the traceback to copy; the app keeps running."""

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("fleetmon: unexpected error"))
        self.resize(720, 420)
        self.text = QPlainTextEdit(text, self)
        self.text.setReadOnly(True)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.copy_button = copy = buttons.addButton(self.tr("Copy traceback"), QDialogButtonBox.ButtonRole.ActionRole)
        copy.clicked.connect(self.copy)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        self.label = QLabel(self.tr("Something went wrong inside fleetmon. The window keeps running; please report "
                                    "this with the traceback below."), self)
        self.label.setWordWrap(True)
        layout.addWidget(self.label)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.text.toPlainText())


def install_excepthook(parent: QWidget | None = None, *, show: Callable[[str], None] | None = None) -> ExceptHook:
    """Show uncaught exceptions in an :class:`ExceptionDialog` instead of ending the app.

    ``show`` replaces the dialog (tests). Returns the previous hook.
    """
    previous = sys.excepthook
    showing = [False]

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt):
            previous(kind, exc, tb)
            return
        text = "".join(traceback.format_exception(kind, exc, tb))
        log.error("uncaught exception:\n%s", text)
        if showing[0]:
            return  # one dialog at a time: an error repeating on every tick must not stack dialogs
        showing[0] = True
        try:
            if show is not None:
                show(text)
            else:
                ExceptionDialog(text, parent).exec()
        finally:
            showing[0] = False

    sys.excepthook = hook
    return previous


_settled = False


def settle_heap() -> None:
    """Once per process, when the first window is built: freeze what start-up left alive.

    Qt, pyqtgraph, numpy and the app's own modules leave some 135,000 objects
    that live as long as the process. Every full garbage collection walked all
    of them while holding the interpreter (0.1–0.3 s on this machine with a
    1,000-node fleet open), and the GUI thread waited. Frozen
    (``gc.freeze``, which costs nothing itself), they are never walked again;
    objects made later (the fleet's snapshots) are collected as before.
    """
    global _settled
    if _settled:
        return
    _settled = True
    gc.freeze()


SWEEP_EVERY_S = 1800.0
_last_sweep = time.monotonic()


def freeze_snapshot() -> None:
    """After a fleet snapshot is applied: freeze it too, so that collections walk only what is newer.

    A snapshot of 8,000 GPUs is some 50,000 objects; every full collection
    (about one per refresh, while the reader builds the next) walked them for
    20–40 ms with the interpreter held. They hold no reference cycles (the
    tree's are broken when it is replaced), so reference counting frees them
    when the next snapshot replaces them, frozen or not. Cycles made
    elsewhere that were alive at a freeze and die later would not be
    collected while frozen: every :data:`SWEEP_EVERY_S` the heap is unfrozen,
    collected once (0.1–0.3 s at 8,000 GPUs) and frozen again, which bounds
    that.
    """
    global _last_sweep
    if time.monotonic() - _last_sweep > SWEEP_EVERY_S:
        _last_sweep = time.monotonic()
        gc.unfreeze()
        gc.collect()
    gc.freeze()


def severity_icon(severity: str, size: int = 32) -> QIcon:
    """A round badge in the colour of a severity or a verdict (green when none)."""
    pix = QPixmap(size, size)
    pix.fill(Qt.GlobalColor.transparent)
    p = QPainter(pix)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    p.setBrush(QColor(fmt.SEVERITY_COLORS.get(severity) or fmt.VERDICT_COLORS.get(severity, fmt.STATUS_COLORS["ok"])))
    p.setPen(Qt.PenStyle.NoPen)
    p.drawEllipse(2, 2, size - 4, size - 4)
    p.end()
    return QIcon(pix)


class Tray:
    """The tray icon (when the desktop has a tray): the fleet's worst verdict (in its severity's colour, the
    verdicts in the tooltip); a message on a new critical finding."""

    def __init__(self, window: QWidget) -> None:
        self.icon: QSystemTrayIcon | None = None
        self._known_critical: set[str] | None = None
        self.notified: list[str] = []
        self.worst = ""
        self.tooltip = "fleetmon"
        if not QSystemTrayIcon.isSystemTrayAvailable():
            return
        self.icon = QSystemTrayIcon(severity_icon(""), window)
        self.icon.setToolTip("fleetmon")
        self.icon.activated.connect(lambda *_: _bring_up(window))
        self.icon.show()

    def update(self, worst: str, critical_keys: set[str], describe: Callable[[str], str], status: str = ""
               ) -> list[str]:
        """Show ``worst`` (a verdict, or a severity) and ``status`` (the verdicts, in words); notify about critical
        findings not seen before (not on the first update).

        Returns the keys notified about.
        """
        new = sorted(critical_keys - self._known_critical) if self._known_critical is not None else []
        self._known_critical = set(critical_keys)
        self.worst = worst
        self.tooltip = QCoreApplication.translate("Tray", "fleetmon: {status}").format(
            status=status or worst or QCoreApplication.translate("Tray", "all clear"))
        if self.icon is not None:
            self.icon.setIcon(severity_icon(worst))
            self.icon.setToolTip(self.tooltip)
            if new:
                self.icon.showMessage(QCoreApplication.translate("Tray", "fleetmon: new critical finding"),
                                      "\n".join(describe(k) for k in new[:5]),
                                      QSystemTrayIcon.MessageIcon.Critical, 10000)
        self.notified += new
        return new


def _bring_up(window: QWidget) -> None:
    window.showNormal()
    window.raise_()
    window.activateWindow()


def follow_color_scheme(app: QApplication) -> None:
    """Light or dark palette following the system (Qt 6.5+ ``styleHints().colorScheme``)."""
    hints = app.styleHints()
    if not hasattr(hints, "colorScheme"):
        return

    def apply(*_: Any) -> None:
        dark = hints.colorScheme() == Qt.ColorScheme.Dark
        app.setPalette(dark_palette() if dark else app.style().standardPalette())

    hints.colorSchemeChanged.connect(apply)
    apply()


def dark_palette() -> QPalette:
    p = QPalette()
    base, alt, text, window = QColor(30, 30, 30), QColor(45, 45, 45), QColor(230, 230, 230), QColor(40, 40, 40)
    for role, color in ((QPalette.ColorRole.Window, window), (QPalette.ColorRole.WindowText, text),
                        (QPalette.ColorRole.Base, base), (QPalette.ColorRole.AlternateBase, alt),
                        (QPalette.ColorRole.Text, text), (QPalette.ColorRole.Button, window),
                        (QPalette.ColorRole.ButtonText, text), (QPalette.ColorRole.ToolTipBase, alt),
                        (QPalette.ColorRole.ToolTipText, text), (QPalette.ColorRole.Highlight, QColor(42, 130, 218)),
                        (QPalette.ColorRole.HighlightedText, QColor(255, 255, 255)),
                        (QPalette.ColorRole.PlaceholderText, QColor(150, 150, 150))):
        p.setColor(role, color)
    return p
