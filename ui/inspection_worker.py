"""Report work for the inspection and pre-run views, off the GUI thread.

The health engine reads a day (or weeks) of history and judges it: seconds on a
large fleet. :class:`Jobs` runs such work on a thread pool of its own (one job
at a time, so a sign-off never races the inspection it closes) and hands the
result back as a queued signal on the GUI thread. The job functions below are
plain functions of a database path (each opens and closes its own
connection), testable without Qt.
"""

from __future__ import annotations

import time
from html import escape
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from fleetmon.i18n import message_of
from storage.signoffs import SignoffRow

if TYPE_CHECKING:  # imported by the jobs: the window opens without the health engine (its launch figure)
    from fleetmon import assess


@dataclass(frozen=True)
class Inspection:
    """One daily inspection: the report run, its HTML, the sign-off it was compared with, recent sign-offs."""

    run: assess.ReportRun
    html: str
    baseline: SignoffRow | None
    history: tuple[SignoffRow, ...] = ()

    @property
    def result(self) -> Any:
        return self.run.result


@dataclass(frozen=True)
class Review:
    """One pre-run review: the preflight run and its HTML."""

    run: assess.PreflightRun
    html: str

    @property
    def result(self) -> Any:
        return self.run.result


def baseline_html(html: str, baseline: SignoffRow | None) -> str:
    """The report's HTML with its "what changed" heading naming the sign-off it compares with."""
    if baseline is None:
        return html.replace("<h2>Changes since the previous report</h2>", "<h2>Changes since the last sign-off</h2>"
                            ).replace("No previous report to compare with.",
                                      "No sign-off yet: nothing to compare with. Sign off to set the baseline.")
    when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(baseline.ts))
    note = f" ({escape(baseline.note)})" if baseline.note else ""
    return html.replace("<h2>Changes since the previous report</h2>",
                        f"<h2>Changes since the sign-off by {escape(baseline.name)} at {when} UTC{note}</h2>")


def inspect(db_path: str, now: float, group: str | None = None, fleet: Any = None) -> Inspection:
    """The daily inspection over the window back to the last sign-off (at least 24 h), compared with it.

    Read-only: the report is not stored (the window's baseline is the sign-off, not the last report).
    ``fleet``: the app's fleet file (its groups, thresholds and ``[[spec]]`` tables, as the collector's
    health pass uses them), or None.
    """
    from fleetmon import assess
    from fleetmon.health import render, render_html
    from storage.db import open_database
    from storage.signoffs import signoffs

    db = open_database(db_path, readonly=True)
    try:
        since_s = assess.inspection_window(db, now, group)
        run = assess.run_report(db, now, since_s, group, fleet, save=False, baseline="signoff")
        history = tuple(signoffs(db, assess.report_scope(group), limit=20))
    finally:
        db.close()
    return Inspection(run, baseline_html(render_html.report_html(run.result), run.signoff), run.signoff, history)


def sign_off(db_path: str, name: str, note: str, now: float, result: Any, checked: Iterable[str] = ()
             ) -> SignoffRow:
    """Store the sign-off of the inspection ``result`` (a short-lived read-write connection of its own)."""
    from fleetmon import assess
    from storage.db import open_database
    from storage.signoffs import save_signoff

    db = open_database(db_path)
    try:
        return save_signoff(db, name, now, note=note, scope=assess.report_scope(result.group),
                            summary=assess.signoff_summary(result, checked))
    finally:
        db.close()


def review(db_path: str, now: float, nodes: str | Sequence[str], days: float, fleet: Any = None) -> Review:
    """The pre-run review (:func:`fleetmon.assess.run_preflight`) of ``nodes`` over the last ``days``
    (``fleet``: the app's fleet file, as for :func:`inspect`)."""
    from fleetmon import assess
    from fleetmon.health import render, render_html
    from storage.db import open_database

    db = open_database(db_path, readonly=True)
    try:
        run = assess.run_preflight(db, now, nodes, days, fleet)
    finally:
        db.close()
    return Review(run, render_html.preflight_html(run.result))


class _Signals(QObject):
    done = Signal(object)
    failed = Signal(str)


class _Job(QRunnable):
    def __init__(self, fn: Callable[[], Any]) -> None:
        super().__init__()
        self.setAutoDelete(False)  # Python keeps it (Jobs._live) until its result has been delivered
        self.fn = fn
        self.signals = _Signals()

    def run(self) -> None:
        try:
            out = self.fn()
        except Exception as exc:  # noqa: BLE001 - shown in the view; the view stays usable
            # The core's errors (storage's, an i18n.Text) in the reader's language; others as they are.
            self.signals.failed.emit(message_of(exc) or type(exc).__name__)
        else:
            self.signals.done.emit(out)


class Jobs(QObject):
    """Runs database work on a pool thread, one job at a time; results arrive on the GUI thread.

    ``done`` and ``failed`` of each job are connected to the given slots (methods
    of QObjects living on the GUI thread, so delivery is queued there). The pool
    is a child of this object: destroying it waits for a running job.
    """

    busy_changed = Signal(bool)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(1)
        self.pool.setObjectName("report-jobs")
        self._live: dict[int, _Job] = {}

    def submit(self, fn: Callable[[], Any], done: Callable[[Any], None], failed: Callable[[str], None]) -> None:
        job = _Job(fn)
        # Bookkeeping first (connections are served in order): the view's slot already sees the job done.
        job.signals.done.connect(self._finished)
        job.signals.failed.connect(self._finished)
        job.signals.done.connect(done)
        job.signals.failed.connect(failed)
        self._live[id(job.signals)] = job
        self.busy_changed.emit(True)
        self.pool.start(job)

    def _finished(self, _: Any = None) -> None:
        self._live.pop(id(self.sender()), None)
        if not self._live:
            self.busy_changed.emit(False)

    @property
    def busy(self) -> bool:
        return bool(self._live)

    def wait(self, msecs: int = 30000) -> bool:
        """Wait for the running and queued jobs (tests, shutdown); whether they all finished."""
        return self.pool.waitForDone(msecs)
