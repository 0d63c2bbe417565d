"""Intake… on a node or a GPU: the check runs on a worker thread, its result is shown, stored and printable.

:func:`run_job` is the work (a plain function of the database path, testable
without Qt): :func:`fleetmon.intake.run_intake` over the last 24 h on a
read-write connection of its own, so the result is stored with the card (on a
read-only database it is shown, not stored, and the dialog says so).
:class:`IntakeAction` runs it on :class:`ui.inspection_worker.Jobs` (the GUI
never waits on the health engine) and shows :class:`IntakeDialog`: the verdict
and every check of each card as the certificate shows them, with **Save
certificate…**.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QLabel, QMessageBox, QPushButton, QTextBrowser,
                               QVBoxLayout, QWidget)

from fleetmon.health.series import DAY_S
from ui import format as fmt
from ui.inspection_worker import Jobs
from ui.views.save_html import save_html_dialog, write_html

if TYPE_CHECKING:  # imported where used: the window opens without the intake checks and the rules they run
    from fleetmon import intake

__all__ = ["IntakeAction", "IntakeDialog", "IntakeOutcome", "run_job"]


@dataclass(frozen=True)
class IntakeOutcome:
    """What one Intake… found: the run (results, stored or not), for which node and card."""

    node: str
    gpu: str | None
    run: intake.IntakeRun
    stored: bool


def run_job(db_path: str, now: float, node: str, gpu: str | None = None, window_s: float = DAY_S) -> IntakeOutcome:
    """The intake of ``node``'s new cards (or card ``gpu``) over the last ``window_s``, stored when possible."""
    from fleetmon import intake
    from fleetmon.errors import StorageError
    from storage.db import open_database

    try:
        db = open_database(db_path, existing=True)
        writable = True
    except StorageError as exc:
        if "read-only" not in str(exc) and "locked" not in str(exc):
            raise
        db, writable = open_database(db_path, readonly=True), False
    try:
        run = intake.run_intake(db, now, node, gpu, (now - window_s, now), save=writable)
    finally:
        db.close()
    return IntakeOutcome(node, gpu, run, writable and run.saved)


class IntakeDialog(QDialog):
    """The results of one Intake…: a card chooser (several new cards), the certificate, Save certificate…"""

    def __init__(self, outcome: IntakeOutcome, parent: QWidget | None = None, *,
                 ask_save: Callable[[QWidget, str, str], Path | None] | None = None) -> None:
        super().__init__(parent)
        self.outcome = outcome
        self.results = outcome.run.results
        self._ask_save = ask_save
        self.setWindowTitle(self.tr("Intake — {node}").format(node=outcome.node) if outcome.gpu is None else
                            self.tr("Intake — {node} GPU {gpu}").format(node=outcome.node, gpu=outcome.gpu))
        self.resize(860, 680)
        self.note = QLabel(self._note_text())
        self.note.setWordWrap(True)
        self.cards = QComboBox()
        for r in self.results:
            self.cards.addItem(f"GPU {r.index} · {r.model} · {r.uuid} — {fmt.intake_word(r.verdict)}")
        self.cards.setVisible(len(self.results) > 1)
        self.cards.currentIndexChanged.connect(self._show)
        self.browser = QTextBrowser()
        self.browser.setOpenExternalLinks(False)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.save_button = QPushButton(self.tr("Save certificate…"))
        self.save_button.setEnabled(bool(self.results))
        buttons.addButton(self.save_button, QDialogButtonBox.ButtonRole.ActionRole)
        self.save_button.clicked.connect(self.save)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.note)
        layout.addWidget(self.cards)
        layout.addWidget(self.browser, 1)
        layout.addWidget(buttons)
        self._show(0)

    def _note_text(self) -> str:
        run = self.outcome.run
        if not self.results:
            return run.note or self.tr("No card was checked.")
        from fleetmon import intake

        counts = fmt.joined([f"{sum(1 for r in self.results if r.verdict == v)} {fmt.intake_word(v)}"
                             for v in intake.VERDICTS if any(r.verdict == v for r in self.results)])
        stored = (self.tr("stored with the card") if self.outcome.stored else
                  self.tr("not stored: {error}").format(error=run.save_error) if run.save_error else
                  self.tr("not stored (the database is read-only)"))
        if len(self.results) == 1:
            return self.tr("1 card checked: {counts} · {stored}").format(counts=counts, stored=stored)
        return self.tr("{count} cards checked: {counts} · {stored}").format(count=len(self.results), counts=counts,
                                                                            stored=stored)

    @property
    def current(self) -> intake.IntakeResult | None:
        i = self.cards.currentIndex()
        return self.results[i] if 0 <= i < len(self.results) else (self.results[0] if self.results else None)

    def certificate(self) -> str:
        from fleetmon import intake

        r = self.current
        return intake.certificate_html(r) if r is not None else ""

    def _show(self, _: int = 0) -> None:
        self.browser.setHtml(self.certificate() or f"<p>{self.note.text()}</p>")

    def save(self) -> Path | None:
        """Save the shown card's certificate through a file dialog (``ask_save`` in tests)."""
        r = self.current
        if r is None:
            return None
        stem = f"intake-{r.node}-gpu{r.index}"
        if self._ask_save is not None:
            return self._ask_save(self, self.certificate(), stem)
        return save_html_dialog(self, self.certificate(), title=self.tr("Save intake certificate"), stem=stem,
                                now=r.now)

    def save_to(self, path: str | Path) -> Path:
        """Write the shown card's certificate to ``path`` (what the dialog's Save does once a file is chosen)."""
        return write_html(path, self.certificate())


class IntakeAction(QObject):
    """Starts intakes off the GUI thread and shows each result in an :class:`IntakeDialog`.

    ``finished(outcome)`` fires on the GUI thread when a result arrived (the window re-reads the fleet then,
    so the Intake column and the card's history show it); ``failed(message)`` when it could not be made.
    """

    finished = Signal(object)  # IntakeOutcome
    failed = Signal(str)

    def __init__(self, db_path: str, parent: QWidget, *, now: Callable[[], float] = time.time,
                 show_dialogs: bool = True) -> None:
        super().__init__(parent)
        self.db_path = db_path
        self._parent = parent
        self.clock = now
        """The time an intake judges (tests set it)."""
        self.show_dialogs = show_dialogs
        self.jobs = Jobs(self)
        self.dialog: IntakeDialog | None = None

    @property
    def busy(self) -> bool:
        return self.jobs.busy

    def start(self, node: str, gpu: str | None = None) -> None:
        """Check ``node``'s cards new in the last 24 h, or its card ``gpu`` (UUID or index)."""
        now, path = float(self.clock()), self.db_path
        self.jobs.submit(lambda: run_job(path, now, node, gpu), self._done, self._failed)

    def _done(self, outcome: IntakeOutcome) -> None:
        if self.show_dialogs:
            self.dialog = IntakeDialog(outcome, self._parent)
            self.dialog.show()
        self.finished.emit(outcome)

    def _failed(self, message: str) -> None:
        if self.show_dialogs:
            QMessageBox.warning(self._parent, self.tr("Intake"),
                                self.tr("The intake could not be made: {error}").format(error=message))
        self.failed.emit(message)

    def wait(self, msecs: int = 30000) -> bool:
        return self.jobs.wait(msecs)
