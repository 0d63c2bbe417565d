"""Slurm in the app: each node's state beside its verdict, *Drain…* / *Resume…* with a confirmation.

:class:`SlurmStates` reads Slurm (``sinfo``, :mod:`fleetmon.slurm.client`) on a plain worker thread and
keeps the answer for ``TTL_S``; Slurm not installed or not answering reads "Slurm unavailable", never a
state. :class:`SlurmAction` asks for confirmation (the node, its Slurm name, the reason), then drains or
resumes on a worker thread with its own database connection (:func:`fleetmon.slurm.actions.do_action`:
recorded before Slurm is asked, finished with its answer) and reports the outcome in the status bar, or
in a warning box when it failed. The context menus of the fleet tree (a node, a GPU's node) and of the
Findings table (a finding's node) carry the actions; the pre-run review's *Drain the no-go nodes* uses
:meth:`SlurmAction.request` too. Dialogs are injectable for tests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QMessageBox, QWidget

from fleetmon.i18n import Text, localized, message_of
from fleetmon.slurm import SlurmError, SlurmView, slurm_name_of
from fleetmon.text import printable
from ui import format as fmt
from ui.i18n import QT_TRANSLATE_NOOP

Confirm = Callable[[QWidget, str, str], bool]
ShowError = Callable[[QWidget, str], None]
Target = tuple[str, str, "str | None"]  # (fleet node, reason, finding key)

TTL_S = 30.0
"""How long a read of Slurm's state is shown before it is read again."""


def wanted(fleet_file: Any) -> bool:
    """Whether the app offers Slurm at all: the fleet file has a ``[slurm]`` table (an empty one will do), so a
    site without Slurm sees no Slurm column or menu entries, whatever is installed on the workstation."""
    return getattr(fleet_file, "slurm", None) is not None


def action_title(action: str) -> str:
    """The confirmation's title: "Drain in Slurm", "Resume in Slurm"."""
    if action == "drain":
        return QCoreApplication.translate("SlurmAction", "Drain in Slurm")
    if action == "resume":
        return QCoreApplication.translate("SlurmAction", "Resume in Slurm")
    return f"{action.capitalize()} in Slurm"


def action_button(action: str) -> str:
    """The confirmation's Yes button: "Drain", "Resume"."""
    if action == "drain":
        return QCoreApplication.translate("SlurmAction", "Drain")
    if action == "resume":
        return QCoreApplication.translate("SlurmAction", "Resume")
    return action.capitalize()


def confirm_dialog(parent: QWidget | None, title: str, text: str) -> QMessageBox:
    """The confirmation box (Yes named after the action, Cancel the default), not yet shown."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text,
                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel, parent)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    # The button says the action (the title is the action's, see action_title).
    button = next((action_button(a) for a in ("drain", "resume") if title == action_title(a)),
                  title.rstrip("?").split(" ")[0])
    box.button(QMessageBox.StandardButton.Yes).setText(button)
    return box


def confirm_box(parent: QWidget, title: str, text: str) -> bool:
    return confirm_dialog(parent, title, text).exec() == QMessageBox.StandardButton.Yes


def show_error_box(parent: QWidget, message: str) -> None:
    QMessageBox.warning(parent, "Slurm", message)


def outcome_line(action: str, o: Any) -> str:
    """:meth:`fleetmon.slurm.actions.Outcome.line` in the window's language (the same words in English)."""
    node = printable(o.node, 80)
    target = (QCoreApplication.translate("SlurmAction", "{node} (Slurm {slurm_name})").format(
        node=node, slurm_name=o.slurm_name) if o.slurm_name and o.slurm_name != o.node else node)
    if action not in ("drain", "resume"):
        return str(o.line(action))
    state = "failed" if not o.ok else "reason" if o.sent_reason else "done"
    return QCoreApplication.translate("SlurmAction", _OUTCOMES[(action, state)]).format(
        target=target, error=localized(o.error) if isinstance(o.error, Text) else o.error, reason=o.sent_reason)


# Whole sentences per action and result (a translation may reorder each; the action word is not translated alone).
_OUTCOMES = {
    ("drain", "failed"): QT_TRANSLATE_NOOP("SlurmAction", "drain {target} failed: {error}"),
    ("drain", "reason"): QT_TRANSLATE_NOOP("SlurmAction", "drain {target}: done — reason: {reason}"),
    ("drain", "done"): QT_TRANSLATE_NOOP("SlurmAction", "drain {target}: done"),
    ("resume", "failed"): QT_TRANSLATE_NOOP("SlurmAction", "resume {target} failed: {error}"),
    ("resume", "reason"): QT_TRANSLATE_NOOP("SlurmAction", "resume {target}: done — reason: {reason}"),
    ("resume", "done"): QT_TRANSLATE_NOOP("SlurmAction", "resume {target}: done"),
}


class _Signals(QObject):
    view = Signal(object)  # SlurmView
    done = Signal(str, object)  # action, list[Outcome]


class SlurmStates(QObject):
    """Slurm's view of the fleet, read off the GUI thread, cached for ``TTL_S``. ``changed`` on each read."""

    changed = Signal(object)  # SlurmView

    def __init__(self, fleet_file: Any, parent: QObject | None = None, *, client: Any = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(parent)
        from fleetmon.slurm.actions import client_for

        self.fleet_file = fleet_file
        self.client = client or client_for(fleet_file)
        self.clock = clock
        self.view: SlurmView | None = None
        self._read_at: float | None = None
        self._thread: threading.Thread | None = None
        self._signals = _Signals()
        self._signals.view.connect(self._got)

    def refresh(self, force: bool = False) -> None:
        """Read Slurm again when the last read is older than ``TTL_S`` (or ``force``); one read at a time."""
        if self._thread is not None and self._thread.is_alive():
            return
        if not force and self._read_at is not None and self.clock() - self._read_at < TTL_S:
            return
        client, emit = self.client, self._signals.view.emit
        self._thread = threading.Thread(target=lambda: emit(client.view(time.time())), name="slurm-state",
                                        daemon=True)
        self._thread.start()

    def wait(self, timeout_s: float = 30.0) -> None:
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _got(self, view: SlurmView) -> None:
        self.view = view
        self._read_at = self.clock()
        self.changed.emit(view)

    def text(self, node: str) -> str | None:
        """``node``'s state in words (None: not read yet): ``idle``, ``drain (reason; who when)``, ``Slurm
        unavailable``, ``unknown to Slurm``."""
        if self.view is None:
            return None
        if not self.view.ok:
            return QCoreApplication.translate("SlurmStates", "Slurm unavailable")
        try:
            state = self.view.nodes.get(slurm_name_of(self.fleet_file, node))
        except SlurmError:
            state = None
        return QCoreApplication.translate("SlurmStates", "unknown to Slurm") if state is None else state.label()

    def tooltip(self) -> str:
        if self.view is None:
            return self.tr("Slurm: not read yet")
        return (self.tr("Slurm: {error}").format(error=localized(self.view.error)) if not self.view.ok
                else self.tr("Slurm: as sinfo reported it"))


class SlurmAction(QObject):
    """Drain / resume nodes from the app: confirmation, then the request on a worker thread, recorded.

    Signals: ``finished(action, outcomes)`` once Slurm answered (every outcome, failed ones too).
    """

    finished = Signal(str, object)

    def __init__(self, db_path: str, window: QWidget, fleet_file: Any, *, states: SlurmStates | None = None,
                 confirm: Confirm = confirm_box, show_error: ShowError = show_error_box, client: Any = None) -> None:
        super().__init__(window)
        self.db_path = db_path
        self.window = window
        self.fleet_file = fleet_file
        self.states = states
        self.confirm = confirm
        self.show_error = show_error
        self.client = client
        self.last_text = ""  # the last confirmation's text (tests)
        self._thread: threading.Thread | None = None
        self._signals = _Signals()
        self._signals.done.connect(self._on_done)

    @property
    def busy(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def confirmation(self, action: str, targets: Sequence[Target]) -> str:
        """What the dialog says: each node, its Slurm name (or why it has none) and the reason."""
        from fleetmon.slurm import clean_reason

        drain = action == "drain"
        n = len(targets)
        if n == 1:
            head = self.tr("Drain this node in Slurm?") if drain else self.tr("Resume this node in Slurm?")
        else:
            head = (self.tr("Drain {count} nodes in Slurm?") if drain else
                    self.tr("Resume {count} nodes in Slurm?")).format(count=n)
        lines = [head, ""]
        for node, reason, _key in targets:
            try:
                name = slurm_name_of(self.fleet_file, node)
            except SlurmError as exc:
                name = self.tr("(none: {error})").format(error=message_of(exc))
            lines.append(self.tr("Node: {node}    Slurm name: {slurm_name}").format(node=printable(node, 80),
                                                                                     slurm_name=name))
            if drain:
                lines.append(self.tr("Reason: {reason}").format(reason=clean_reason(reason)))
            lines.append("")
        lines.append(self.tr("Running jobs finish; no new jobs start on a drained node.") if drain
                     else self.tr("The node takes jobs again."))
        lines.append(self.tr("The request is recorded with your name and shown in the node's history and the "
                             "report."))
        return "\n".join(lines)

    def request(self, action: str, targets: Sequence[Target]) -> bool:
        """Confirm, then drain or resume ``targets`` off the GUI thread; False when cancelled or busy."""
        if not targets:
            return False
        if self.busy:
            self.show_error(self.window, self.tr("A Slurm request is still running; try again when it is done."))
            return False
        text = self.last_text = self.confirmation(action, targets)
        title = action_title(action)
        if not self.confirm(self.window, title, text):
            return False
        db_path, fleet, client, emit = self.db_path, self.fleet_file, self.client, self._signals.done.emit

        def run() -> None:
            from fleetmon.slurm.actions import Outcome, do_action
            from storage.db import open_database

            outcomes: list[Any] = []
            try:
                db = open_database(db_path, existing=True)
            except Exception as exc:  # the database is gone or locked: nothing asked of Slurm, said so
                error = QCoreApplication.translate("SlurmAction", "cannot record it: {error}").format(error=message_of(exc))
                emit(action, [Outcome(0, node, None, False, error) for node, _r, _k in targets])
                return
            try:
                for node, reason, key in targets:
                    outcomes.append(do_action(db, fleet, node, action, reason=reason, origin="app",
                                              finding_key=key, client=client))
            except Exception as exc:
                outcomes.append(Outcome(0, "?", None, False, QCoreApplication.translate(
                    "SlurmAction", "stopped: {error}").format(error=message_of(exc))))
            finally:
                db.close()
                emit(action, outcomes)

        self._thread = threading.Thread(target=run, name=f"slurm-{action}", daemon=True)
        self._thread.start()
        return True

    def wait(self, timeout_s: float = 60.0) -> None:
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _on_done(self, action: str, outcomes: list[Any]) -> None:
        failed = [o for o in outcomes if not o.ok]
        status = getattr(self.window, "statusBar", None)
        text = fmt.joined([outcome_line(action, o) for o in outcomes], semicolons=True)
        if callable(status):
            status().showMessage(text, 15000)
        if failed:
            self.show_error(self.window, "\n".join(outcome_line(action, o) for o in failed) + "\n"
                            + self.tr("(recorded as failed)"))
        if self.states is not None:
            self.states.refresh(force=True)
        self.finished.emit(action, outcomes)

    def add_actions(self, menu: QMenu, node: str, reason: str, key: str | None = None) -> list[QAction]:
        """*Drain…* and *Resume…* for ``node`` in ``menu``."""
        drain = menu.addAction(QCoreApplication.translate("SlurmAction", "Drain {node} in Slurm…").format(node=node))
        drain.setToolTip(QCoreApplication.translate("SlurmAction", "Take the node out of scheduling (asks first; "
                                                                   "recorded)"))
        drain.triggered.connect(lambda: self.request("drain", [(node, reason, key)]))
        resume = menu.addAction(QCoreApplication.translate("SlurmAction", "Resume {node} in Slurm…").format(node=node))
        resume.setToolTip(QCoreApplication.translate("SlurmAction", "Return the drained node to service (asks first; "
                                                                    "recorded)"))
        resume.triggered.connect(lambda: self.request("resume", [(node, "", key)]))
        return [drain, resume]


def node_reason(findings: Sequence[Any], node: str, uuid: str | None = None) -> tuple[str, str | None]:
    """(reason, finding key) for draining ``node`` (or the node of card ``uuid``): the worst open finding's summary."""
    from fleetmon.vocab import Severity

    mine = [f for f in findings if f.node == node and (uuid is None or f.gpu_uuid == uuid) and f.resolved_at is None]
    if not mine and uuid is not None:
        mine = [f for f in findings if f.node == node and f.resolved_at is None]
    if not mine:
        return f"drained from the fleetmon app ({node})", None
    worst = min(mine, key=lambda f: (-Severity.parse(f.severity).rank, -float(f.last_seen or 0)))
    summary = (worst.evidence or {}).get("summary") or f"{worst.kind} on {node}"
    return str(summary), worst.key


def install(window: Any, db_path: str, fleet_file: Any) -> SlurmAction | None:
    """Slurm in the main window (None when it offers none: the fleet file has no ``[slurm]``)."""
    if not wanted(fleet_file):
        return None
    states = SlurmStates(fleet_file, window)
    action = SlurmAction(db_path, window, fleet_file, states=states)

    def in_tree_menu(menu: QMenu, it: Any) -> None:
        node = it.gpu.node if it.kind == "gpu" and it.gpu is not None else it.name
        uuid = it.gpu.uuid if it.kind == "gpu" and it.gpu is not None else None
        reason, key = node_reason(window.snapshot.findings, node, uuid)
        menu.addSeparator()
        action.add_actions(menu, node, reason, key)

    def in_findings_menu(menu: QMenu, uuid: str | None, key: str | None) -> None:
        f = next((f for f in window.snapshot.findings if f.key == key), None)
        if f is None or not f.node:
            return
        menu.addSeparator()
        summary = (f.evidence or {}).get("summary") or f"{f.kind} on {f.node}"
        action.add_actions(menu, f.node, str(summary), f.key)

    window.fleet_view.menu_hooks.append(in_tree_menu)
    window.findings.menu_hooks = [*getattr(window.findings, "menu_hooks", []), in_findings_menu]
    states.changed.connect(lambda _view: window.fleet_view.model.set_slurm(states.text, states.tooltip()))
    states.changed.connect(lambda _view: window.prerun_view.set_slurm(states.text))
    window.prerun_view.drain_requested.connect(lambda targets: action.request("drain", targets))
    window.prerun_view.slurm_enabled = True
    window.prerun_view.review_shown.connect(lambda _rev: states.refresh())
    window.snapshot_shown.connect(lambda _snap: states.refresh())  # read again once TTL_S has passed
    states.refresh()
    return action
