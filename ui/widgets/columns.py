"""Columns sized to their header and content, a flexible column taking the rest (elided), for small tables.

Qt's ``ResizeToContents`` mode measures every cell on each change and forbids
dragging a column; a fixed width clips a header or wastes the room. A
:class:`ColumnFitter` sizes each column once per shape change and view resize:
never narrower than its header (so no header is clipped), as wide as its
widest sampled cell up to a cap, and the flexible columns share what is
left; when the room is short the capped columns give way down to their
headers and their cells elide (Qt's ``textElideMode``, "…"). Once the user
drags a column, the fitter leaves that view's widths alone for the session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QTreeView

DEFAULT_CAP = 220
"""The widest a non-flexible column grows to fit its cells (its header may be wider)."""
FLEX_MIN = 120
"""The narrowest a flexible column gets while the others give way."""
SAMPLE_ROWS = 200
"""Rows measured per column (Qt's resizeContentsPrecision): findings can be thousands of rows."""


def header_of(view: QAbstractItemView) -> QHeaderView:
    return view.header() if isinstance(view, QTreeView) else view.horizontalHeader()  # type: ignore[attr-defined]


class ColumnFitter(QObject):
    """Fits ``view``'s columns; ``flexible``: the logical columns that share the room left (long text), as a
    sequence (equal shares) or column → weight; ``caps``: widest widths of others; ``minimum``: narrowest."""

    def __init__(self, view: QTableView | QTreeView, flexible: Sequence[int] | Mapping[int, float], *,
                 caps: Mapping[int, int] | None = None, minimum: Mapping[int, int] | None = None) -> None:
        super().__init__(view)
        self.view = view
        self.weights = dict(flexible) if isinstance(flexible, Mapping) else {c: 1.0 for c in flexible}
        self.flexible = tuple(self.weights)
        self.caps = dict(caps or {})
        self.minimum = dict(minimum or {})
        self.user_sized = False
        self._fitting = False
        self._dragging = False  # the mouse is down on the header: a resize now is the user's
        header = header_of(view)
        header.setResizeContentsPrecision(SAMPLE_ROWS)
        # The fitter sets every width, the last one too (Qt's stretched last section kept a width of its own
        # and pushed the sum a pixel past the view); after a drag, the last column fills the view again.
        self._stretch = header.stretchLastSection()
        header.setStretchLastSection(False)
        header.sectionResized.connect(self._on_section_resized)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self.fit)
        model = view.model()
        for signal in (model.modelReset, model.layoutChanged, model.rowsInserted):
            signal.connect(self._timer.start)
        # The watched objects kept here: the filter also sees the events of the view's own destruction.
        self._viewport, self._header_viewport = view.viewport(), header.viewport()
        self._viewport.installEventFilter(self)
        self._header_viewport.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt API
        kind = event.type()
        if watched is self._viewport and kind == QEvent.Type.Resize:
            self._timer.start()
        elif watched is self._header_viewport:
            if kind == QEvent.Type.MouseButtonPress:
                self._dragging = True
            elif kind == QEvent.Type.MouseButtonRelease:
                self._dragging = False
        return False

    def _on_section_resized(self, index: int, old: int, new: int) -> None:
        if self._dragging and not self._fitting and not self.user_sized:
            self.user_sized = True  # a drag: the user's widths from now on
            header_of(self.view).setStretchLastSection(self._stretch)

    def fit(self) -> None:
        if self.user_sized:
            return
        view, header = self.view, header_of(self.view)
        if header.stretchLastSection():  # a restored header state (QSettings) brings its own back
            header.setStretchLastSection(False)
        columns = [c for c in range(header.count()) if not header.isSectionHidden(c)]
        if not columns:
            return
        avail = view.viewport().width()
        hint = {c: max(header.sectionSizeHint(c), self.minimum.get(c, 0)) for c in columns}
        want: dict[int, int] = {}
        for c in columns:
            if c in self.flexible:
                continue
            content = view.sizeHintForColumn(c) + 8 if view.model().rowCount() else 0
            want[c] = max(hint[c], min(content, self.caps.get(c, DEFAULT_CAP)))
        flex = [c for c in columns if c in self.flexible]
        flex_min = {c: max(hint[c], FLEX_MIN) for c in flex}
        excess = sum(want.values()) + sum(flex_min.values()) - avail
        room = sum(w - hint[c] for c, w in want.items())
        if excess > 0 and room > 0:  # the capped columns give way (elided), down to their headers
            share = min(1.0, excess / room)
            want = {c: w - int((w - hint[c]) * share + 0.999) for c, w in want.items()}
        rest = max(0, avail - sum(want.values()))
        # Each flexible column its minimum, then the room beyond those by weight (the last the remainder).
        extra = max(0, rest - sum(flex_min.values()))
        total = sum(self.weights[c] for c in flex)
        given = 0
        for i, c in enumerate(flex):
            share = extra - given if i == len(flex) - 1 else int(extra * self.weights[c] / total)
            given += share
            want[c] = flex_min[c] + share
        self._fitting = True
        try:
            for c, w in want.items():
                header.resizeSection(c, w)
        finally:
            self._fitting = False
