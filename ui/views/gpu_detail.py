"""GpuDetailView: one card's inventory, its change history and its history plots over a chosen range.

The view owns a :class:`ui.history_reader.HistoryService` (its own worker
thread and read-only connection): selecting a GPU or a range only emits a
request; the answer arrives as a signal and is drawn. Answers for a card or
range no longer selected are dropped.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication, QDateTime, Qt, Signal
from PySide6.QtWidgets import (QButtonGroup, QDateTimeEdit, QDialog, QDialogButtonBox, QFormLayout, QHBoxLayout,
                               QHeaderView, QLabel, QPushButton, QSizePolicy, QSplitter, QStackedWidget, QTableWidget,
                               QTableWidgetItem, QTabWidget, QVBoxLayout, QWidget)

from fleetmon.fields import DEFAULT_VENDOR
from fleetmon.specbook import CATALOG_BOOK, SpecBook, origin_label
from fleetmon.specs import GpuSpec
from fleetmon.text import printable
from fleetmon.vendors import reader_tool, runtime_name, vendor_key, vendor_name
from storage.history_window import RANGES
from storage.intake import IntakeRow
from storage.rows import FleetRow, GpuRow, InventoryChangeRow, NodeRow, PlacementRow
from ui import format as fmt
from ui.i18n import QT_TRANSLATE_NOOP, column
from ui.history_reader import DetailData, HistoryService

if TYPE_CHECKING:  # imported where the plots are first built: pyqtgraph is not needed to open the window
    from ui.views.plots import HistoryPlots

DEFAULT_RANGE = 0  # 24 h


def _when(ts: float | None) -> str:
    return fmt.DASH if ts is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))


def card_spec(book: SpecBook, gpu: GpuRow | None, row: FleetRow | None) -> GpuSpec | None:
    """The card's nominal spec as the health rules resolve it: a fleet file's ``[[spec]]`` matching its name,
    subsystem id and VBIOS (from its inventory, once read), else the catalog's row."""
    model = (gpu.model if gpu else None) or (row.model if row else None) or ""
    if gpu is None:
        return book.lookup(model)
    return book.for_inventory(model, gpu.inventory, gpu.vbios)


def nominal_text(spec: GpuSpec | None) -> str:
    """The nominal spec in one line, saying where it came from ("user spec · boost 2520 MHz · …")."""
    if spec is None:
        return QCoreApplication.translate("GpuDetail", "not in the spec catalog (add a [[spec]] to the fleet file)")
    pcie = fmt.DASH if spec.pcie_gen is None else f"Gen{spec.pcie_gen} ×{spec.pcie_width or fmt.DASH}"
    memory = f"{spec.memory_gb} GB {spec.memory_type}".strip()
    return QCoreApplication.translate(
        "GpuDetail", "{origin} · boost {boost} MHz · TDP {tdp} W · {memory} · PCIe {pcie}").format(
        origin=origin_label(spec), boost=spec.boost_clock_mhz or fmt.DASH, tdp=spec.tdp_w or fmt.DASH, memory=memory,
        pcie=pcie)


def card_vendor(gpu: GpuRow | None, row: FleetRow | None, node: NodeRow | None = None) -> str:
    """The card's stored vendor value (its own, else its row's or node's; NVIDIA's when none says)."""
    return vendor_key((gpu.vendor if gpu else None) or (row.vendor if row else None) or (node.vendor if node else None))


def source_tool(gpu: GpuRow | None, row: FleetRow | None, node: NodeRow | None = None) -> str | None:
    """The tool another vendor's card is read through ("npu-smi", "amd-smi"): what the pane names when a reading
    is missing ("not reported by npu-smi"); None for an NVIDIA card (NVML: "not supported on this GPU")."""
    vendor = card_vendor(gpu, row, node)
    if vendor == DEFAULT_VENDOR:
        return None
    tool = reader_tool(vendor, node.agent_version if node else None)
    for suffix in ("-json", "-csv", "-text", "-table", "-xml", "-q"):  # an import's format name: its tool
        tool = tool.removesuffix(suffix)
    return tool


def not_reported(tool: str) -> str:
    """What another vendor's tool does not give ("not reported by npu-smi"): never a bare dash, never 0."""
    return QCoreApplication.translate("GpuDetail", "not reported by {tool}").format(tool=tool)


def inventory_lines(gpu: GpuRow | None, row: FleetRow | None, book: SpecBook = CATALOG_BOOK,
                    node: NodeRow | None = None) -> list[tuple[str, str]]:
    """The inventory sheet of a card as (label, text) pairs, nominal spec (and where it came from) included.

    The vendor, the card an Ascend chip sits on, the firmware and the vendor's versions (driver, its runtime:
    CUDA, ROCm, CANN, …) are shown where known; another vendor's card says which of its fields its tool does
    not report ("not reported by npu-smi") instead of a bare dash.
    """
    inv = dict(gpu.inventory) if gpu is not None else {}
    model = (gpu.model if gpu else None) or (row.model if row else None) or ""
    spec = card_spec(book, gpu, row)
    vendor = card_vendor(gpu, row, node)
    tool = source_tool(gpu, row, node)
    missing = dict(gpu.inventory_status) if gpu is not None else {}

    def v(key: str, unit: str = "") -> str:
        val = inv.get(key)
        if val is None or val == "":
            return not_reported(tool) if tool and gpu is not None and missing.get(key) == "unsupported" \
                else fmt.DASH
        return f"{val}{(' ' + unit) if unit else ''}"

    pcie_max = fmt.DASH if inv.get("pcie_max_gen") is None else f"Gen{inv.get('pcie_max_gen')} ×{inv.get('pcie_max_width')}"
    limits = " / ".join(fmt.number(inv.get(k), "W") for k in ("power_min_w", "power_default_w", "power_max_w"))
    enforced = gpu.power_enforced_w if gpu is not None else (row.power_enforced_w if row else None)
    nominal = nominal_text(spec)
    where = fmt.DASH
    if gpu is not None and gpu.node is not None:
        where = QCoreApplication.translate("GpuDetail", "{node} · index {index} · {bus}").format(
            node=gpu.node, index=gpu.index, bus=gpu.pci_bus_id or fmt.DASH)
    runtime = (node.runtime_version if node else None) or (
        (node.cuda_driver_version if node else None) if vendor == DEFAULT_VENDOR else None)
    firmware = inv.get("firmware_version") or (node.firmware_version if node else None)
    lines = [
        ("Model", model or fmt.DASH),
        ("Vendor", vendor_name(vendor) + (f" · {tool}" if tool else "")),
        ("Where", where),
    ]
    if inv.get("card_id") not in (None, ""):  # an Ascend NPU's chips: the card they sit on
        lines.append(("Card", QCoreApplication.translate("GpuDetail", "card {id}").format(id=inv["card_id"])))
    lines += [
        ("Serial", (gpu.serial if gpu else None) or v("serial")),
        ("UUID", gpu.uuid if gpu else (row.uuid if row else fmt.DASH)),
        ("VBIOS", (gpu.vbios if gpu else None) or v("vbios")),
    ]
    if firmware or vendor != DEFAULT_VENDOR:
        lines.append(("Firmware", str(firmware) if firmware else v("firmware_version")))
    lines += [
        ("Board part number", v("board_part_number")),
        ("Driver", (row.driver_version if row else None) or (node.driver_version if node else None) or fmt.DASH),
    ]
    if runtime or vendor != DEFAULT_VENDOR:
        lines.append((runtime_name(vendor), str(runtime) if runtime else (not_reported(tool) if tool
                                                                          else fmt.DASH)))
    lines += [
        ("PCIe max", pcie_max),
        ("Power min / default / max", limits),
        ("Power enforced", fmt.number(enforced, "W")),
        ("Slowdown / shutdown", f"{v('temp_slowdown_c', '°C')} / {v('temp_shutdown_c', '°C')}"),
        ("Memory", fmt.number(gpu.memory_total_mib if gpu else None, "MiB")),
        ("Nominal spec", nominal),
        ("Spec source", spec.source if spec is not None else fmt.DASH),
        ("First seen", _when(gpu.first_seen if gpu else None)),
        ("State", fmt.status_word(gpu.state) if gpu and gpu.state else fmt.DASH),  # "ok", "lost" (掉卡)
    ]
    return lines


def _place(p: Any) -> str:
    if isinstance(p, dict):
        return f"{p.get('node')} #{p.get('index')} {p.get('pci_bus_id') or ''}".strip()
    return fmt.DASH if p is None else str(p)


_CHANGE_WORDS = {w: w for w in (
    QT_TRANSLATE_NOOP("CardChange", "enrolled"), QT_TRANSLATE_NOOP("CardChange", "appeared"),
    QT_TRANSLATE_NOOP("CardChange", "moved"), QT_TRANSLATE_NOOP("CardChange", "disappeared"),
    QT_TRANSLATE_NOOP("CardChange", "driver changed"), QT_TRANSLATE_NOOP("CardChange", "vbios changed"),
    QT_TRANSLATE_NOOP("CardChange", "serial changed"), QT_TRANSLATE_NOOP("CardChange", "power limit changed"),
    QT_TRANSLATE_NOOP("CardChange", "placed"))}
"""The stored inventory change kinds (``storage.ingest``), as the Changes tab says them."""


def _change_word(kind: str) -> str:
    word = kind.replace("_", " ")
    return QCoreApplication.translate("CardChange", _CHANGE_WORDS[word]) if word in _CHANGE_WORDS else word


def _intake_reason(result: Any) -> str:
    """A stored intake's reason in the reader's language when the result keeps how its checks' reasons were made
    (its ``texts``), else as stored (English)."""
    if not isinstance(result, dict):
        return ""
    from fleetmon.intake import stored_reason  # the intake module only when a card has an intake

    return stored_reason(result)


def change_lines(changes: Sequence[InventoryChangeRow], places: Sequence[PlacementRow],
                 intakes: Sequence[IntakeRow] = (), slurm: Sequence[Any] = ()) -> list[tuple[str, str, str]]:
    """The card's history, newest first: (time, what, detail); its intakes with their verdict and reason; its
    node's Slurm drains and resumes (who, how, the result, why)."""
    out: list[tuple[float, str, str]] = []
    for a in slurm:
        result = "" if a.result == "ok" else f" {a.result.upper()}"
        why = a.error if a.result == "failed" else a.reason
        who = {"node": a.node, "who": a.who, "origin": a.origin, "why": printable(why, 300) if why else ""}
        out.append((a.ts, f"Slurm {a.action}{result}",
                    (QCoreApplication.translate("CardChange", "{node} by {who} ({origin}): {why}") if why else
                     QCoreApplication.translate("CardChange", "{node} by {who} ({origin})")).format(**who)))
    for i in intakes:
        reason = _intake_reason(i.result)
        detail = (QCoreApplication.translate("CardChange", "on {node}: {reason}") if i.node else "{reason}").format(
            node=i.node, reason=reason or fmt.DASH)
        out.append((i.ts, QCoreApplication.translate("CardChange", "intake {verdict}").format(verdict=fmt.intake_word(i.verdict)),
                    detail))
    for c in changes:
        if c.kind in ("enrolled", "appeared", "moved", "disappeared"):
            if c.kind in ("enrolled", "appeared"):
                detail = QCoreApplication.translate("CardChange", "in {place}").format(place=_place(c.new))
            elif c.kind == "disappeared":
                detail = QCoreApplication.translate("CardChange", "from {place}").format(place=_place(c.old))
            else:
                detail = f"{_place(c.old)} → {_place(c.new)}"
        elif isinstance(c.old, dict) or isinstance(c.new, dict):
            old, new = c.old or {}, c.new or {}
            keys = sorted(set(old) | set(new))
            detail = ", ".join(f"{k} {old.get(k)} → {new.get(k)}" for k in keys if old.get(k) != new.get(k))
        else:
            detail = f"{c.old or fmt.DASH} → {c.new or fmt.DASH}"
        out.append((c.ts, _change_word(c.kind), detail))
    if not changes:
        for p in places:
            out.append((p.since, _change_word("placed"),
                        QCoreApplication.translate("CardChange", "{node} #{index} until {time}").format(
                            node=p.node, index=p.index, time=_when(p.until)) if p.until else f"{p.node} #{p.index}"))
    out.sort(key=lambda t: -t[0])
    return [(_when(ts), what, detail) for ts, what, detail in out]


_INVENTORY_LABELS = (
    QT_TRANSLATE_NOOP("Inventory", "Model"),
    QT_TRANSLATE_NOOP("Inventory", "Vendor"),
    QT_TRANSLATE_NOOP("Inventory", "Where"),
    QT_TRANSLATE_NOOP("Inventory", "Card"),
    QT_TRANSLATE_NOOP("Inventory", "Serial"),
    QT_TRANSLATE_NOOP("Inventory", "UUID"),
    QT_TRANSLATE_NOOP("Inventory", "VBIOS"),
    QT_TRANSLATE_NOOP("Inventory", "Firmware"),
    QT_TRANSLATE_NOOP("Inventory", "Board part number"),
    QT_TRANSLATE_NOOP("Inventory", "Driver"),
    QT_TRANSLATE_NOOP("Inventory", "PCIe max"),
    QT_TRANSLATE_NOOP("Inventory", "Power min / default / max"),
    QT_TRANSLATE_NOOP("Inventory", "Power enforced"),
    QT_TRANSLATE_NOOP("Inventory", "Slowdown / shutdown"),
    QT_TRANSLATE_NOOP("Inventory", "Memory"),
    QT_TRANSLATE_NOOP("Inventory", "Nominal spec"),
    QT_TRANSLATE_NOOP("Inventory", "Spec source"),
    QT_TRANSLATE_NOOP("Inventory", "First seen"),
    QT_TRANSLATE_NOOP("Inventory", "State"),
)
"""The inventory's labels (inventory_lines keeps them English; the table shows their translation)."""

_RESOLUTIONS = {r: r for r in (QT_TRANSLATE_NOOP("Resolution", "minute"), QT_TRANSLATE_NOOP("Resolution", "hour"),
                               QT_TRANSLATE_NOOP("Resolution", "day"))}
"""The stored resolutions (``storage.history_window.resolution_for``) as the status line says them."""
_RANGE_LABELS = (QT_TRANSLATE_NOOP("Range", "24 h"), QT_TRANSLATE_NOOP("Range", "7 d"), QT_TRANSLATE_NOOP("Range", "30 d"),
                 QT_TRANSLATE_NOOP("Range", "90 d"), QT_TRANSLATE_NOOP("Range", "1 y"))
"""The range buttons' labels (:data:`storage.history_window.RANGES`), translated on the buttons."""


class CustomRangeDialog(QDialog):
    def __init__(self, since: float, until: float, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("Custom time range"))
        self.since = QDateTimeEdit(QDateTime.fromSecsSinceEpoch(int(since)))
        self.until = QDateTimeEdit(QDateTime.fromSecsSinceEpoch(int(until)))
        for e in (self.since, self.until):
            e.setCalendarPopup(True)
            e.setDisplayFormat("yyyy-MM-dd HH:mm")
        form = QFormLayout(self)
        form.addRow(self.tr("From"), self.since)
        form.addRow(self.tr("To"), self.until)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def span(self) -> tuple[float, float]:
        return float(self.since.dateTime().toSecsSinceEpoch()), float(self.until.dateTime().toSecsSinceEpoch())


class GpuDetailView(QWidget):
    """Shows the selected GPU; ``history_shown(uuid, points)`` fires after each drawn answer."""

    history_shown = Signal(str, int)
    intake_requested = Signal(str, str)  # node, uuid

    def __init__(self, db_path: str, parent: QWidget | None = None, *, now: Any = time.time) -> None:
        super().__init__(parent)
        self._now = now
        self.spec_book: SpecBook = CATALOG_BOOK  # the fleet file's [[spec]] tables over the catalog (MainWindow)
        self.service = HistoryService(db_path, self)
        self.service.detail_loaded.connect(self._on_loaded)
        self.service.failed.connect(self._on_failed)
        self.uuid: str | None = None
        self.row: FleetRow | None = None
        self.custom: tuple[float, float] | None = None
        self.span: tuple[float, float] = (0.0, 0.0)
        self.last: DetailData | None = None

        self.title = QLabel(self.tr("Select a GPU in the fleet table to see its inventory and history."))
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # long names never widen the window
        self.status = QLabel("")
        self.status.setStyleSheet("color: #546e7a;")
        self.status.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.range_buttons = QButtonGroup(self)
        # Two rows: the card's name and nominal spec with the button that acts on the card, then the range
        # and what was read. On one row the seven buttons left the title about 250 px at the default
        # 1240×760, which cut "node GPU i — model · nominal …" after the model's first word.
        title_row = QHBoxLayout()
        title_row.addWidget(self.title, 1)
        self.intake_button = QPushButton(self.tr("Intake…"))
        self.intake_button.setToolTip(self.tr("Check this card against its spec and its model's fleet (PASS / "
                                              "CONDITIONAL / REJECT), store the result with the card and offer its "
                                              "certificate"))
        self.intake_button.setEnabled(False)
        self.intake_button.clicked.connect(self._request_intake)
        title_row.addWidget(self.intake_button)
        top = QHBoxLayout()
        top.addWidget(self.status, 1)
        for i, (label, _) in enumerate(RANGES):
            b = QPushButton(QCoreApplication.translate("Range", label))
            b.setCheckable(True)
            b.setChecked(i == DEFAULT_RANGE)
            self.range_buttons.addButton(b, i)
            top.addWidget(b)
        custom = QPushButton(self.tr("Custom…"))
        custom.setCheckable(True)
        self.range_buttons.addButton(custom, len(RANGES))
        top.addWidget(custom)
        self.range_buttons.idClicked.connect(self._on_range)

        self.inventory = QTableWidget(0, 2)
        self.changes = QTableWidget(0, 3)
        self.changes.setHorizontalHeaderLabels([column("When"), column("Change"), column("Detail")])
        for t in (self.inventory, self.changes):
            t.verticalHeader().setVisible(False)
            t.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
            t.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
            t.horizontalHeader().setStretchLastSection(True)
            t.setWordWrap(False)
        self.inventory.horizontalHeader().setVisible(False)
        # A narrow pane cuts the middle of a UUID or bus id, not its distinguishing end (the tooltip has it all).
        self.inventory.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.inventory.setRowCount(1)  # until a GPU is chosen, say so instead of an empty white pane
        self.inventory.setItem(0, 1, QTableWidgetItem(self.tr("select a GPU to see its inventory")))
        side = QTabWidget()
        side.addTab(self.inventory, self.tr("Inventory"))
        side.addTab(self.changes, self.tr("Changes"))
        self.side = side
        self._plot: HistoryPlots | None = None  # built on first use: see :attr:`plot`
        self.placeholder = QLabel(self.tr("Select a GPU in the fleet table to see its history."))
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setStyleSheet("color: #546e7a; font-size: 13pt;")
        self.stack = QStackedWidget()
        self.stack.addWidget(self.placeholder)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(side)
        split.addWidget(self.stack)
        split.setStretchFactor(1, 1)
        split.setSizes([380, 860])
        self.splitter = split
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.setSpacing(2)
        layout.addLayout(title_row)
        layout.addLayout(top)
        layout.addWidget(split, 1)

    @property
    def plot(self) -> HistoryPlots:
        """The history plots, built the first time a GPU's history is drawn.

        Building the stack of pyqtgraph plots costs about 0.3 s of CPU, and
        importing pyqtgraph about as much again; the window opens with the
        placeholder and pays both on the first selection, not at launch
        (benchmarks/bench_gui.py's launch figure).
        """
        if self._plot is None:
            from ui.views.plots import HistoryPlots

            self._plot = HistoryPlots()
            self.stack.addWidget(self._plot)
        return self._plot

    # -- requests --------------------------------------------------------------------

    def range_span(self) -> tuple[float, float]:
        """[since, until] of the chosen range, ending now (a minute ahead: the open minute)."""
        i = self.range_buttons.checkedId()
        if i == len(RANGES) and self.custom is not None:
            return self.custom
        until = float(int(self._now()) + 60)
        return until - RANGES[max(0, min(i, len(RANGES) - 1))][1], until

    def set_range(self, index: int) -> None:
        """Choose range ``index`` of :data:`RANGES` (as a click on its button does)."""
        self.range_buttons.button(index).setChecked(True)
        self.refresh()

    def _on_range(self, index: int) -> None:
        if index == len(RANGES):
            since, until = self.custom or self.range_span()
            if self.custom is None:
                until = float(int(self._now()) + 60)
                since = until - 3 * 86400
            dialog = CustomRangeDialog(since, until, self)
            if dialog.exec() != QDialog.DialogCode.Accepted or dialog.span()[1] <= dialog.span()[0]:
                return
            self.custom = dialog.span()
        self.refresh()

    def _request_intake(self) -> None:
        if self.row is not None:
            self.intake_requested.emit(self.row.node, self.row.uuid)

    def show_gpu(self, row: FleetRow) -> None:
        self.uuid = row.uuid
        self.row = row
        self.intake_button.setEnabled(True)
        self._set_title(card_spec(self.spec_book, None, row))
        if self.stack.currentWidget() is self.placeholder:
            self.placeholder.setText(self.tr("reading the history…"))
        elif row.uuid != getattr(self.last, "uuid", None):
            # The previous card's readout must not stay above plots that are about to change (its plots are
            # replaced when the read answers: clearing them first would cost a repaint of the whole stack).
            self.plot.reset_readout()
        self._fill_inventory(None)
        self.refresh()

    def _set_title(self, spec: GpuSpec | None) -> None:
        row = self.row
        if row is None:
            return
        if spec is None:
            nominal = self.tr("not in the spec catalog")
        else:
            nominal = (self.tr("user spec: boost {boost} MHz, TDP {tdp} W, {memory} GB") if spec.origin == "user"
                       else self.tr("nominal: boost {boost} MHz, TDP {tdp} W, {memory} GB")).format(
                boost=spec.boost_clock_mhz or fmt.DASH, tdp=spec.tdp_w or fmt.DASH, memory=spec.memory_gb)
        self.title.setText(self.tr("<b>{node} GPU {index}</b> — {model} · {nominal}").format(
            node=row.node, index=row.index, model=row.model, nominal=nominal))
        self.title.setToolTip(self.tr("{node} GPU {index} — {model} · {uuid} · {nominal}").format(
            node=row.node, index=row.index, model=row.model, uuid=row.uuid, nominal=nominal)
                              + (f" ({spec.source})" if spec is not None else ""))

    def refresh(self) -> None:
        if not self.uuid:
            return
        self.span = self.range_span()
        self.status.setText(self.tr("reading…"))
        self.service.request_detail(self.uuid, *self.span)

    # -- answers ---------------------------------------------------------------------

    def _on_failed(self, message: str) -> None:
        self.status.setText(self.tr("cannot read the history: {message}").format(message=message))
        self.status.setToolTip(self.status.text())  # a long message is cut at the range buttons
        if self.last is None or self.last.uuid != self.uuid:
            self.plot.clear(self.tr("cannot read the history"))  # never another card's plots under this card's title

    def _on_loaded(self, data: DetailData) -> None:
        if data.uuid != self.uuid or (data.since, data.until) != self.span or self.row is None:
            return  # an answer for a GPU or a range no longer selected
        self.last = data
        window = data.window
        self.status.setText(self.tr("{points} points · {resolution} resolution · read {ms} ms").format(
            points=len(window.rows), resolution=QCoreApplication.translate("Resolution", _RESOLUTIONS.get(
                window.resolution, window.resolution)), ms=f"{data.read_ms:.0f}"))
        self.status.setToolTip("")
        self._fill_inventory(data)
        self.stack.setCurrentWidget(self.plot)
        spec = card_spec(self.spec_book, data.gpu, self.row)
        self._set_title(spec)  # the inventory's subsystem id and VBIOS may pick a [[spec]] the name alone did not
        inv = data.gpu.inventory if data.gpu is not None else {}
        slowdown = inv.get("temp_slowdown_c")
        self.plot.set_refs({
            "temp_c": None if slowdown is None else (float(slowdown), self.tr("slowdown {value} °C").format(
                value=slowdown)),
            "power_w": None if spec is None or spec.tdp_w is None else (
                float(spec.tdp_w), self.tr("nominal TDP {value} W").format(value=spec.tdp_w)),
            "sm_clock_mhz": None if spec is None or spec.boost_clock_mhz is None else (
                float(spec.boost_clock_mhz), self.tr("nominal boost {value} MHz").format(value=spec.boost_clock_mhz)),
        })
        gen, width = inv.get("pcie_max_gen"), inv.get("pcie_max_width")
        try:
            link_max: tuple[int, int] | None = (int(gen), int(width))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            link_max = None  # not reported: no downtraining is judged
        self.plot.set_history(window, data.since, data.until, data.events, self.row.status,
                              power_failed=data.power_failed, link_max=link_max,
                              source=source_tool(data.gpu, self.row, data.node))
        self.history_shown.emit(data.uuid, len(window.rows))

    def _fill_inventory(self, data: DetailData | None) -> None:
        lines = inventory_lines(data.gpu if data else None, self.row, self.spec_book, data.node if data else None)
        self.inventory.setRowCount(len(lines))
        for r, (label, text) in enumerate(lines):
            a = QTableWidgetItem(QCoreApplication.translate("Inventory", label))
            a.setForeground(Qt.GlobalColor.darkGray)
            b = QTableWidgetItem(text)
            b.setToolTip(text)
            self.inventory.setItem(r, 0, a)
            self.inventory.setItem(r, 1, b)
        hist = change_lines(data.changes, data.placements, data.intakes, data.slurm) if data else []
        if data is not None and not hist:
            hist = [(fmt.DASH, self.tr("no changes recorded"), "")]
        self.changes.setRowCount(len(hist))
        for r, cells in enumerate(hist):
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(text)
                self.changes.setItem(r, c, item)
        shown = len(data.changes) + len(data.intakes) + len(data.slurm) if data else 0
        self.side.setTabText(1, self.tr("Changes ({count})").format(count=shown) if shown else self.tr("Changes"))

    def shutdown(self) -> None:
        """Stop the reader thread (the main window calls this when it closes)."""
        self.service.stop()
