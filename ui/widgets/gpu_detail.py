"""GpuDetailWidget: one GPU's identity and its history plots over a chosen window."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from fleetmon import specs
from storage.rows import FleetRow
from ui.reader import GpuDetail
from ui.widgets.gpu_plot import GpuHistoryPlot

WINDOWS: tuple[tuple[str, int], ...] = (
    ("6 hours", 6 * 3600), ("24 hours", 86400), ("7 days", 7 * 86400), ("30 days", 30 * 86400),
    ("90 days", 90 * 86400), ("1 year", 365 * 86400),
)


class GpuDetailWidget(QWidget):
    """Shows the selected GPU; asks for history through ``history_requested``."""

    history_requested = Signal(str, int)  # uuid, window seconds

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.uuid: str | None = None
        self.row: FleetRow | None = None
        self.title = QLabel("Select a GPU to see its history.")
        self.title.setWordWrap(True)
        self.resolution = QLabel("")
        self.window_choice = QComboBox()
        for label, seconds in WINDOWS:
            self.window_choice.addItem(label, seconds)
        self.window_choice.setCurrentIndex(1)
        self.window_choice.currentIndexChanged.connect(lambda _: self.refresh())
        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(self.resolution)
        top.addWidget(QLabel("Window:"))
        top.addWidget(self.window_choice)
        self.plot = GpuHistoryPlot(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(self.plot, 1)

    def window_seconds(self) -> int:
        return int(self.window_choice.currentData())

    def show_gpu(self, row: FleetRow) -> None:
        self.uuid = row.uuid
        self.row = row
        spec = specs.lookup(row.model or "")
        nominal = "not in the spec catalog" if spec is None else (
            f"nominal: boost {spec.boost_clock_mhz} MHz, TDP {spec.tdp_w} W, {spec.memory_gb} GB")
        self.title.setText(f"<b>{row.node} GPU {row.index}</b> — {row.model} · {row.uuid} · "
                           f"driver {row.driver_version or '—'} · {nominal}")
        self.refresh()

    def refresh(self) -> None:
        if self.uuid:
            self.history_requested.emit(self.uuid, self.window_seconds())

    def set_history(self, uuid: str, history: GpuDetail) -> None:
        if uuid != self.uuid or self.row is None:
            return  # an answer for a GPU no longer selected
        window = history.window
        self.resolution.setText(f"{len(window.rows)} points · {window.resolution} resolution")
        spec = specs.lookup(self.row.model or "")
        refs: dict[str, float | None] = {
            "power_w": self.row.power_enforced_w,
            "sm_clock_mhz": None if spec is None else spec.boost_clock_mhz,
            "temp_c": history.inventory.get("temp_slowdown_c"),
        }
        self.plot.set_history(window, refs)
        self.plot.set_derating(history.derating)
