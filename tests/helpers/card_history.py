"""A month of one moved card's history in a real SQLite file, for the evidence archive's tests.

The demo's history generator (:func:`fleetmon.sim.demo_history.generate_history`) on three of its
nodes: the T4 card that moves from t4-infer-01 to t4-infer-03 halfway through, and the V100 of
v100-srv-02 that retires pages. The moved card gets Xid errors on both nodes (kernel-log events:
Xid 48 before the move, 13 and 79 after), the findings ledger is replayed over the month, and an
operator acknowledges one of its findings and resolves another.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

NOW = 1_780_000_000.0
DAYS = 30
NODES = ("t4-infer-01", "t4-infer-03", "v100-srv-02")
XIDS = ((5, 48, "DBE (Double Bit Error) ECC Error (0)."), (20, 13, "Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0)"),
        (27, 79, "GPU has fallen off the bus."))
"""(days after the start, code, message) of the moved card's Xid events."""


@dataclass(frozen=True)
class CardHistory:
    path: Path
    moved_uuid: str
    moved_serial: str
    v100_uuid: str
    xid_codes: tuple[int, ...]


def build(path: Path) -> CardHistory:
    """Write the month into ``path`` (about ten seconds)."""
    from fleetmon.assess import replay_ledger
    from fleetmon.records import Event
    from fleetmon.sim import demo_history
    from storage import acks, resolutions
    from storage.db import open_database
    from storage.evidence import card_findings

    fleet = {n.name: n for n in demo_history.demo_fleet()}
    start = (int(NOW) // 60 * 60 - DAYS * 86400) // 3600 * 3600
    moved: dict[str, Any] = {}
    real_poll = demo_history._poll
    pending = [(start + d * 86400 + 1800, code, msg) for d, code, msg in XIDS]

    def poll(model: Any, ts: float, minutes: list[Any], cards: list[Any], events: list[Any], info: Any) -> Any:
        card = next((c for c in cards if c.inv.uuid == moved["uuid"]), None)
        if card is not None:
            extra = []
            for when, code, msg in list(pending):
                if ts - 86400 < when <= ts:
                    pci = card.inv.values.get("pci_bus_id")
                    extra.append(Event(seq=None, ts=float(when), kind="xid", uuid=card.inv.uuid,  # type: ignore[arg-type]
                                       pci_bus_id=pci, code=code, message=msg,
                                       data={"source": "kernel", "pid": 4242, "process": "python3", "raw_pci": pci}))
                    pending.remove((when, code, msg))
            events = events + extra
        return real_poll(model, ts, minutes, cards, events, info)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(demo_history, "demo_fleet", lambda count=0: [fleet[n] for n in NODES])
        # The moved card's UUID: the destination node's fourth card, read as the generator reads it.
        dst = demo_history._read_node(fleet["t4-infer-03"], demo_history.DEFAULT_SEED, start)
        moved["uuid"] = dst.cards[3].inv.uuid
        moved["serial"] = dst.cards[3].inv.values.get("serial")
        mp.setattr(demo_history, "_poll", poll)
        db = open_database(path)
        try:
            demo_history.generate_history(db, nodes=len(NODES), days=DAYS, now=NOW, minute_hours=3)
        finally:
            db.close()
    assert not pending, pending
    db = open_database(path)
    try:
        replay_ledger(db, NOW - DAYS * 86400, NOW)
        found = card_findings(db, moved["uuid"])
        xid = [f for f in found if f.kind == "xid"]
        assert xid, [f.kind for f in found]
        acks.acknowledge(db, xid[0].key, xid[0].severity, "RMA case 4711 opened", NOW - 3600, by="alice")
        other = next(f for f in found if f.kind != "xid" or f is not xid[0])
        resolutions.resolve(db, other.key, "reseated", "reseated before the move, came back", NOW - 1800, by="bob")
        v100 = next(c.inv.uuid for c in demo_history._read_node(fleet["v100-srv-02"], demo_history.DEFAULT_SEED,
                                                                 start).cards if c.inv.index == 3)
    finally:
        db.close()
    return CardHistory(path, moved["uuid"], str(moved["serial"]), v100, tuple(c for _, c, _ in XIDS))
