"""The fleet tree's items, built without Qt: filtered, grouped and sorted, on any thread.

:func:`build_tree` is what :class:`ui.models.fleet_tree.FleetTreeModel` shows.
The reader thread calls it for every refresh (``ui.fleet_reader``) with the
model's current filter, grouping and sort, so the GUI thread only swaps the
finished tree in: on 8,000 GPUs the build is a few hundred milliseconds of
Python that would otherwise block the event loop on every poll.

Item ids come from one process-wide registry keyed by the item's key, so a
tree built on the reader thread has the same ids as the one it replaces, and
the view's indexes (row, column, id) stay valid when the shape is unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QCoreApplication

from fleetmon import hostlist
from fleetmon.fields import CATALOG, Field
from fleetmon.health.verdict import VERDICTS, verdict_rank, worst_verdict
from fleetmon.vendors import vendor_key, vendor_name, vendor_order
from storage.rows import FleetRow
from ui import format as fmt
from ui.i18n import verdict_word
from ui.verdicts import Verdicts, severity_word

FIELD_COLUMNS: tuple[Field, ...] = tuple(f for f in CATALOG if f.ui is not None)
COLUMNS: tuple[str, ...] = (("Name", "Model", "Vendor", "Driver")
                            + tuple(f.ui.header for f in FIELD_COLUMNS if f.ui is not None)
                            + ("Last seen", "Status", "Health"))
COL_MODEL, COL_VENDOR, COL_DRIVER = 1, 2, 3
_F0 = 4
_LAST = _F0 + len(FIELD_COLUMNS)
COL_STATUS, COL_HEALTH = _LAST + 1, _LAST + 2

_UIDS: dict[str, int] = {}
_UID_LOCK = threading.Lock()


def uid_of(key: str) -> int:
    """The item id of ``key`` (stable for the process; any thread)."""
    uid = _UIDS.get(key)
    if uid is None:
        with _UID_LOCK:
            uid = _UIDS.get(key)
            if uid is None:
                uid = _UIDS[key] = len(_UIDS) + 1
    return uid


def known_uid(key: str) -> int | None:
    return _UIDS.get(key)


LEAF: list[Any] = []
"""The children of every GPU item: one shared empty list, never appended to (8,000 fewer objects for
the garbage collector to walk per refresh of a 1,000-node fleet)."""


@dataclass(eq=False)
class Item:
    """A row of the tree: a group, a node or a GPU."""

    kind: str  # "group", "node", "gpu"
    key: str
    uid: int
    parent: Item | None = None
    children: list[Item] = field(default_factory=list)
    row: int = 0
    gpu: FleetRow | None = None
    gpus: list[FleetRow] = field(default_factory=list)  # every GPU under a group or node
    severity: str = ""  # its verdict's severity (ui.verdicts.VERDICT_SEVERITY): tints and the expanded nodes
    status: str = ""
    verdict: str = ""  # fleetmon.health.verdict's word, judged once per snapshot (FleetSnapshot.verdicts)
    name: str = ""
    cells: dict[int, Any] | None = None
    """Cells of a group or node row computed once per tree (its aggregates walk every GPU under it):
    column → display text, and ``-1 - column`` → the cell's severity tint."""


@dataclass(frozen=True)
class TreeParams:
    """What shapes the tree besides the data: the filter text, grouping and sort."""

    filter: str = ""
    grouped: bool = True
    sort_col: int = COL_HEALTH
    descending: bool = True


@dataclass
class Tree:
    """A built tree: its roots, every item by id, and its shape (nested keys, compared in one ``==``)."""

    params: TreeParams
    now: float
    roots: list[Item]
    by_uid: dict[int, Item]
    shape: tuple[Any, ...]
    snap: Any = None  # the FleetSnapshot it was built from


def _in_nodes(names: set[str]) -> Callable[[FleetRow], bool]:
    return lambda r: r.node in names


def gpu_severity(r: FleetRow, status: str) -> str:
    """The worst of a GPU's open findings and its status (unreachable/lost are critical)."""
    return fmt.worst([s for s, _ in r.findings] + [fmt.STATUS_SEVERITY.get(status, "")])


def gpu_status(r: FleetRow, now: float) -> str:
    """A lone row's status word (the tree reads the snapshot's judged one, :class:`ui.verdicts.Verdicts`)."""
    return fmt.gpu_status(r.node_status, r.state, r.latest_ts, now)


def row_verdict(v: Verdicts, r: FleetRow) -> str:
    """The verdict of a GPU row (a node's own verdict for the pseudo row of a node without GPUs)."""
    return (v.gpus.get(r.uuid) or v.node(r.node)) if r.uuid else v.node(r.node)


def row_status(v: Verdicts, r: FleetRow) -> str:
    return v.gpu_status.get(r.uuid) or v.node_status.get(r.node) or "ok"


def build_tree(snap: Any, now: float, params: TreeParams) -> Tree:
    """Filter, group and sort ``snap`` (a :class:`ui.fleet_reader.FleetSnapshot`) into a :class:`Tree`."""
    b = _Builder(snap, now)
    roots = b.roots(params)
    b.sort_items(roots, params.sort_col, params.descending)
    by_uid, shape = build_from_roots(roots)
    return Tree(params, now, roots, by_uid, shape, snap)


def build_from_roots(roots: list[Item]) -> tuple[dict[int, Item], tuple[Any, ...]]:
    """Number the rows; return every item by id and the shape (nested ids)."""
    by_uid: dict[int, Item] = {}
    return by_uid, _walk(roots, by_uid)


def _walk(items: list[Item], by_uid: dict[int, Item]) -> tuple[Any, ...]:
    # A module function, not a recursive closure: such a closure is a reference cycle that kept
    # every item of every replaced tree alive until a full garbage collection.
    out: list[Any] = []
    for i, it in enumerate(items):
        it.row = i
        by_uid[it.uid] = it
        out.append((it.uid, _walk(it.children, by_uid)) if it.children else it.uid)
    return tuple(out)


class _Builder:
    def __init__(self, snap: Any, now: float) -> None:
        self.snap = snap
        self.now = now
        self.v: Verdicts = snap.verdicts if snap is not None else Verdicts()

    def roots(self, params: TreeParams) -> list[Item]:
        snap = self.snap
        keep = self.matcher(params.filter)
        by_node: dict[str, list[FleetRow]] = {}
        for r in snap.rows:
            if keep(r):
                by_node.setdefault(r.node, []).append(r)
        groups: dict[str, list[Item]] = {}
        with_gpus = {r.node for r in snap.rows}
        v = self.v
        for name, node_row in snap.nodes.items():  # nodes without a known GPU (never reached): a row of their own
            if name in with_gpus:
                continue
            pseudo = FleetRow(node=name, uuid="", node_status=node_row.status, driver_version=node_row.driver_version,
                              vendor=node_row.vendor, findings=tuple((str(f.severity), f.kind) for f in snap.findings
                                             if f.node == name and not f.gpu_uuid))
            if keep(pseudo):
                verdict = v.node(name)
                groups.setdefault(node_row.group or "", []).append(Item(
                    "node", f"n:{name}", uid_of(f"n:{name}"), name=name, status=v.node_status.get(name) or "ok",
                    verdict=verdict, severity=severity_word(verdict)))
        gpu_verdicts, statuses = v.gpus, v.gpu_status
        for node, gpus in by_node.items():
            verdict = v.node(node)
            nitem = Item("node", f"n:{node}", uid_of(f"n:{node}"), gpus=gpus, name=node, verdict=verdict,
                         severity=severity_word(verdict))
            for r in gpus:
                gv = gpu_verdicts.get(r.uuid, "unknown")
                nitem.children.append(Item("gpu", f"g:{r.uuid}", uid_of(f"g:{r.uuid}"), parent=nitem, gpu=r,
                                           gpus=[r], status=statuses.get(r.uuid, "unknown"), verdict=gv,
                                           severity=severity_word(gv), name=str(r.index), children=LEAF))
            st = v.node_status.get(node, "ok")
            nitem.status = st if st != "ok" else fmt.worst_status([c.status for c in nitem.children])
            groups.setdefault(snap.group_of(node), []).append(nitem)
        if params.grouped and len(groups) > 1:  # one group (or none at all): the group level says nothing
            roots = []
            for group, nodes_ in groups.items():
                gitem = Item("group", f"G:{group}", uid_of(f"G:{group}"), children=nodes_,
                             name=group or "(no group)", gpus=[r for n in nodes_ for r in n.gpus])
                for n in nodes_:
                    n.parent = gitem
                gitem.verdict = worst_verdict(n.verdict for n in nodes_)
                gitem.severity = severity_word(gitem.verdict)
                gitem.status = fmt.worst_status([n.status for n in nodes_])
                roots.append(gitem)
            return roots
        return [n for nodes_ in groups.values() for n in nodes_]

    # -- filter ---------------------------------------------------------------------

    def matcher(self, text: str) -> Callable[[FleetRow], bool]:
        """A predicate over GPU rows for the filter text (:func:`row_matcher` with this snapshot's verdicts)."""
        snap = self.snap
        return row_matcher(text, self.v, snap.group_of if snap is not None else (lambda n: ""))

    # -- sorting --------------------------------------------------------------------

    def _sort_key(self, it: Item, col: int) -> Any:
        rank = (len(VERDICTS) - verdict_rank(it.verdict)) * 10 + fmt.status_rank(it.status)
        name = hostlist.natural_key(it.name) if it.kind != "gpu" else (int(it.name) if it.name.isdigit() else 0,)
        if col == COL_HEALTH or col == COL_STATUS:
            return (rank, ) if col == COL_HEALTH else (fmt.status_rank(it.status), rank)
        if col == 0:
            return name
        vals = [_sort_value(r, col) for r in it.gpus]
        present = [v for v in vals if v is not None]
        if not present:
            return (0, "")
        return (1, max(present))

    def sort_items(self, items: list[Item], col: int, desc: bool) -> None:
        if items and items[0].kind == "gpu":
            # A node's GPUs stay in index order whatever the sort (GPU 0 above GPU 1, as nvidia-smi and the
            # node's own numbering list them): the sort orders groups and nodes; a card's health is its tint.
            items.sort(key=_gpu_order)
            return
        # Ties keep the natural name order (ascending), whatever the direction.
        items.sort(key=lambda it: hostlist.natural_key(it.name))
        items.sort(key=lambda it: self._sort_key(it, col), reverse=desc)
        for it in items:
            self.sort_items(it.children, col, desc)


FILTER_KEYS: tuple[str, ...] = ("node", "group", "model", "vendor", "driver", "status", "severity", "verdict", "kind")
"""The ``key:value`` words of the filter (fleet view and All GPUs)."""


def row_matcher(text: str, v: Verdicts, group_of: Callable[[str], Any]) -> Callable[[FleetRow], bool]:
    """A predicate over GPU rows for the filter text: every word must match (the fleet view and All GPUs).

    A word is a Slurm hostlist (``gpu[01-04]``: those nodes), ``key:value``
    (node, group, model, vendor, driver, status, severity, verdict or kind) or plain text
    matched against node, group, model, vendor, driver, status and findings. ``status:``
    and ``severity:`` match the GPU's verdict (``status:stale``, ``severity:fail``)
    and its old severity words (``status:critical``: fail or unreachable,
    ``severity:warning``: warn or stale) too. ``vendor:`` matches the stored value and
    the readable name (``vendor:amd``, ``vendor:ascend``, ``vendor:huawei``); a row
    stored without a vendor (before issue 23) is NVIDIA's.
    """
    words = text.split()
    if not words:
        return lambda r: True
    tests: list[Callable[[FleetRow], bool]] = []
    for w in words:
        low = w.lower()
        if "[" in w:
            try:
                names = set(hostlist.expand(w))
            except ValueError:
                names = set()
            tests.append(_in_nodes(names))
            continue
        key, _, value = low.partition(":") if ":" in low else ("", "", low)
        tests.append(_contains(v, group_of, key, value))
    return lambda r: all(t(r) for t in tests)


def _contains(v: Verdicts, group_of: Callable[[str], Any], key: str, value: str) -> Callable[[FleetRow], bool]:
    return lambda r: value in _haystack(v, group_of, r, key)


def _haystack(v: Verdicts, group_of: Callable[[str], Any], r: FleetRow, key: str) -> str:
    st = row_status(v, r)
    verdict = row_verdict(v, r)
    judged = f"{verdict} {severity_word(verdict) or verdict}"
    parts = {
        "node": r.node, "group": str(group_of(r.node) or ""), "model": r.model or "",
        "vendor": f"{vendor_key(r.vendor)} {vendor_name(r.vendor)}",
        "driver": r.driver_version or "", "status": f"{st} {judged}",
        "severity": judged, "verdict": verdict, "kind": " ".join(k for _, k in r.findings),
    }
    if key in parts:
        return parts[key].lower()
    return " ".join(parts.values()).lower()


def _gpu_order(it: Item) -> tuple[int, str]:
    """A GPU item's place under its node: its index (one without an index last, by UUID)."""
    r = it.gpu
    if r is not None and r.index is not None:
        return (int(r.index), "")
    return (1 << 30, r.uuid if r is not None else it.key)


def sort_items(items: list[Item], col: int, desc: bool) -> None:
    """Sort items in place (and their children) by column ``col``."""
    _Builder(None, 0.0).sort_items(items, col, desc)


def _sort_value(r: FleetRow, col: int) -> Any:
    if col == COL_MODEL:
        return r.model or ""
    if col == COL_VENDOR:
        return vendor_order(r.vendor)
    if col == COL_DRIVER:
        return hostlist.natural_key(r.driver_version or "")
    if _F0 <= col < _LAST:
        v = r.values.get(FIELD_COLUMNS[col - _F0].name)
        return float(v) if isinstance(v, (int, float)) else None
    if col == _LAST:
        return r.latest_ts
    return None


def summary_text(snap: Any) -> str:
    """The summary bar: nodes and how many of them have each verdict (the snapshot's, as the report judges),
    GPUs, open critical and warning findings (findings, not nodes: one node can hold several), driver versions.

    "24 nodes (2 fail, 6 warn, 16 pass, 0 unreachable) · 89 GPUs · open findings: 4 critical, 10 warning · …"
    """
    nodes = {r.node for r in snap.rows} | set(snap.nodes)
    counts = snap.verdicts.counts()
    live = [f for f in snap.findings if snap.acked(f) is None]
    crit = sum(1 for f in live if f.severity == "critical")
    warn = sum(1 for f in live if f.severity == "warning")
    drivers: dict[str, int] = {}
    for n in nodes:
        v = snap.nodes[n].driver_version if n in snap.nodes else None
        if v:
            drivers[v] = drivers.get(v, 0) + 1
    acked = len(snap.findings) - len(live)
    # Every verdict a node has, worst first; "unreachable" always (it was the bar's first alarm).
    # A list's separator is the language's ("，" in Chinese), translated as such, as fleetmon.i18n.LIST_SEPARATOR is.
    sep = QCoreApplication.translate("FleetSummary", ", ")
    verdicts = sep.join(f"<b style='color:{fmt.VERDICT_COLORS[v] if counts[v] and v != 'pass' else 'inherit'}'>"
                         f"{counts[v]}</b> {verdict_word(v)}" for v in VERDICTS if counts[v] or v == "unreachable")
    parts = [(QCoreApplication.translate("FleetSummary", "<b>1</b> node ({verdicts})") if len(nodes) == 1
              else QCoreApplication.translate("FleetSummary", "<b>{count}</b> nodes ({verdicts})"))
             .format(count=len(nodes), verdicts=verdicts),
             QCoreApplication.translate("FleetSummary", "<b>1</b> GPU") if len(snap.rows) == 1
             else QCoreApplication.translate("FleetSummary", "<b>{count}</b> GPUs").format(count=len(snap.rows))]
    parts.append(QCoreApplication.translate("FleetSummary", "open findings: {critical} critical, {warning} warning")
                 .format(critical=f"<b style='color:{fmt.SEVERITY_COLORS['critical'] if crit else 'inherit'}'>"
                                  f"{crit}</b>",
                         warning=f"<b style='color:{fmt.SEVERITY_COLORS['warning'] if warn else 'inherit'}'>"
                                 f"{warn}</b>"))
    if acked:
        parts.append(QCoreApplication.translate("FleetSummary", "{count} acknowledged").format(count=acked))
    parts.append(QCoreApplication.translate("FleetSummary", "drivers: {drivers}").format(
        drivers=sep.join(QCoreApplication.translate("FleetSummary", "{version} ({count})").format(version=v, count=k)
                         for v, k in sorted(drivers.items(), key=lambda kv: -kv[1])) or fmt.DASH))
    return " · ".join(parts)
