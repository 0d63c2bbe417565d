"""Verdicts that do not forget: multi-day histories judged at several `--now` times, on every surface.

A real SQLite database is fed as the collector would (minutes, polls, events), the collector's health
pass (``assess.evaluate_and_store``) runs every few hours as it would, and the fleet is then judged at
chosen moments by ``report`` (its JSON), ``preflight`` (its JSON), the export's sheet and the ledger the
GUI reads. Each case checks the same verdict on each of them.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from fleetmon import assess
from fleetmon.export import read_sheet
from fleetmon.health import render
from fleetmon.health.verdict import worst_verdict
from fleetmon.records import Event
from storage import findings as stored
from storage import resolutions
from storage.db import open_database
from storage.ingest import ingest_polls
from storage.rollup import rollup
from helpers import HOT, T0, inventory, minute, poll, uuid_of

H = 3600
D = 86400


@pytest.fixture
def db(tmp_path):
    d = open_database(tmp_path / "fleet.db")
    yield d
    d.close()


Faults = Mapping[tuple[str, int], Callable[[int], Mapping[str, Any]]]


class Fleet:
    """Two nodes of two cards fed hour by hour, with the collector's health pass every ``pass_every`` s."""

    def __init__(self, db: Any, nodes: tuple[str, ...] = ("n1", "n2"), gpus: int = 2, pass_every: int = 6 * H):
        self.db, self.nodes, self.gpus, self.pass_every = db, nodes, gpus, pass_every
        self.seq = {n: 0 for n in nodes}
        self.eseq = {n: 0 for n in nodes}
        self.t = T0
        self.inv: dict[str, list[Any]] = {n: [inventory(n, i) for i in range(gpus)] for n in nodes}

    def run(self, until: int, faults: Faults | None = None, *, silent: tuple[str, ...] = (),
            events: Mapping[str, list[tuple[int, str, int | None, int | None]]] | None = None) -> None:
        """Feed [self.t, until) an hour a poll; ``events[node]``: (ts, kind, gpu index, Xid code)."""
        faults = faults or {}
        while self.t < until:
            end = min(self.t + H, until)
            polls = []
            for node in self.nodes:
                if node in silent:
                    continue
                mins = []
                for ts in range(self.t, end, 60):
                    for g in self.inv[node]:
                        self.seq[node] += 1
                        extra = dict(faults[(node, g.index)](ts)) if (node, g.index) in faults else {}
                        m = minute(node, g.index, ts, seq=self.seq[node], busy=True, **extra)
                        if g.uuid != uuid_of(node, g.index):
                            m = type(m)(seq=m.seq, ts=m.ts, uuid=g.uuid, index=m.index, n=m.n, values=m.values,
                                        status=m.status)
                        mins.append(m)
                evs = []
                for ts, kind, gpu, code in (events or {}).get(node, []):
                    if self.t <= ts < end:
                        self.eseq[node] += 1
                        uuid = self.inv[node][gpu].uuid if gpu is not None else None
                        evs.append(Event(seq=self.eseq[node], ts=ts, kind=kind, uuid=uuid, code=code,
                                         message=f"NVRM: Xid (PCI:0000:{gpu or 0:02x}:00): {code}, pid=1" if code else ""))
                polls.append(poll(node, end, gpus=len(self.inv[node]), minutes=mins, events=evs,
                                  inv=self.inv[node], minutes_cursor=self.seq[node],
                                  events_cursor=self.eseq[node] or None))
            if polls:
                ingest_polls(self.db, polls)
            if end % self.pass_every == 0 or end == until:
                rollup(self.db, end)  # the collector rolls up before each health pass, too
                assess.evaluate_and_store(self.db, end)
            self.t = end


EXPORT_ORDER = ("critical", "unreachable", "stale", "unknown", "warning", "ok")


def surfaces(db: Any, now: float, nodes: tuple[str, ...] = ("n1", "n2")) -> dict[str, dict[str, str]]:
    """The verdict of each node on each surface at ``now``."""
    run = assess.run_report(db, now, D, None, save=False)
    report = json.loads(render.report_json(run.result))
    pre = json.loads(render.preflight_json(assess.run_preflight(db, now, list(nodes), 14).result))
    sheet = read_sheet(db, now=now)
    health: dict[str, set[str]] = {}
    verdicts: dict[str, set[str]] = {}
    for row in sheet.gpus:
        health.setdefault(row["node"], set()).add(row["health"])
        verdicts.setdefault(row["node"], set()).add(row["verdict"])
    # The GUI's models read one snapshot of the ledger the collector keeps, judged on the reader thread.
    from ui.fleet_reader import read_snapshot

    snap = read_snapshot(db, now=now)
    got = {
        "gui": dict(snap.verdicts.nodes),
        "export_verdict": {n: worst_verdict(v) for n, v in verdicts.items()},
        "report": {n["name"]: n["verdict"] for n in report["nodes"]},
        "preflight": {n["name"]: n["verdict"] for n in pre["nodes"]},
        # A card's health: its node's worst card stands for the node here.
        "export": {n: min(v, key=lambda h: EXPORT_ORDER.index(h) if h in EXPORT_ORDER else 9)
                   for n, v in health.items()},
        "_exit": {"report": report["exit_status"], "preflight": pre["exit_status"]},
    }
    # One verdict: the report, the GUI's snapshot and the export's verdict column agree on every node.
    assert got["report"] == got["gui"] == got["export_verdict"], got
    return got


def open_of(db: Any, now: float, kind: str) -> list[Any]:
    run = assess.run_report(db, now, D, None, save=False)
    return [f for f in run.result.findings if f.kind == kind and f.is_open]


# -- an Xid 79: the morning after, a week later, resolved by an operator, back again, card replaced ----------


def test_an_xid_79_stays_open_until_an_operator_resolves_it_and_reopens_when_it_comes_back(db):
    fleet = Fleet(db)
    xid_at = T0 + 22 * H  # 22:00 on day 0
    fleet.run(T0 + D + 8 * H, events={"n1": [(xid_at, "xid", 1, 79)]})

    # The morning after: failed on every surface.
    got = surfaces(db, T0 + D + 8 * H)
    assert got["report"] == {"n1": "fail", "n2": "pass"}
    assert got["gui"] == {"n1": "fail", "n2": "pass"}
    assert got["preflight"] == {"n1": "no-go", "n2": "go"}
    assert got["export"]["n1"] == "critical" and got["export"]["n2"] == "ok"
    assert got["_exit"] == {"report": 2, "preflight": 2}
    (xid,) = open_of(db, T0 + D + 8 * H, "xid")
    assert xid.first_seen == xid_at and xid.severity == "critical"

    # A week later, with a week of healthy, busy data since: an Xid 79 is still open (it waits for an operator).
    fleet.run(T0 + 8 * D)
    got = surfaces(db, T0 + 8 * D)
    assert got["report"]["n1"] == "fail" and got["gui"]["n1"] == "fail" and got["export"]["n1"] == "critical"
    (xid,) = open_of(db, T0 + 8 * D, "xid")
    assert xid.first_seen == xid_at  # the true onset, a week before the report's 24 h window
    assert xid.evidence["lifecycle"]["open_because"] == "waits for an operator's resolution"

    # An operator reseats the card and resolves the finding: it passes everywhere but the stricter pre-run review.
    resolutions.resolve(db, xid.key, "reseated", "reseated in slot 1, riser checked", T0 + 8 * D + 600, "alice")
    fleet.run(T0 + 8 * D + 2 * H)
    now = T0 + 8 * D + 2 * H
    got = surfaces(db, now)
    assert got["report"] == {"n1": "pass", "n2": "pass"} and got["gui"]["n1"] == "pass"
    assert got["export"]["n1"] == "ok" and got["_exit"]["report"] == 0
    assert got["preflight"]["n1"] == "no-go"  # a card that fell off the bus this fortnight is a risk for a long run
    report = assess.run_report(db, now, 30 * D, None, save=False).result
    (closed,) = [f for f in report.findings if f.kind == "xid"]
    assert not closed.is_open
    assert render.resolution_text(closed).startswith("resolved by alice at ")
    assert "card reseated — reseated in slot 1, riser checked" in render.report_text(report)
    assert [r.reason for r in resolutions.card_resolutions(db, uuid_of("n1", 1))] == ["reseated"]

    # It comes back: a recurrence, linked to the resolution.
    again = T0 + 8 * D + 3 * H
    fleet.run(T0 + 8 * D + 4 * H, events={"n1": [(again, "xid", 1, 79)]})
    got = surfaces(db, T0 + 8 * D + 4 * H)
    assert got["report"]["n1"] == "fail" and got["gui"]["n1"] == "fail"
    (xid,) = open_of(db, T0 + 8 * D + 4 * H, "xid")
    assert xid.first_seen == again
    assert xid.evidence["lifecycle"]["recurs_after"]["reason"] == "reseated"
    assert "back after it was resolved: card reseated" in xid.summary

    # The card is replaced: a new UUID in the slot, the old finding resolved as replaced; the node passes.
    resolutions.resolve(db, xid.key, "replaced", "RMA 4711", T0 + 8 * D + 5 * H, "bob")
    fleet.inv["n1"][1] = inventory("n1", 1, uuid="GPU-n1-new-01", serial="SN-new")
    fleet.run(T0 + 8 * D + 8 * H)
    got = surfaces(db, T0 + 8 * D + 8 * H)
    assert got["report"]["n1"] == "pass" and got["gui"]["n1"] == "pass"


# -- a card that overheats every afternoon, judged at 08:00 ----------------------------------------------------


def test_a_card_that_overheats_every_afternoon_is_open_at_eight_in_the_morning(db):
    fleet = Fleet(db)
    afternoons = lambda ts: HOT if 13 * H <= ts % D < 17 * H else {}  # noqa: E731
    fleet.run(T0 + 7 * D + 8 * H, {("n2", 0): afternoons})
    now = T0 + 7 * D + 8 * H  # 08:00, fifteen hours after the last throttle
    got = surfaces(db, now)
    assert got["report"] == {"n1": "pass", "n2": "warn"}
    assert got["gui"] == {"n1": "pass", "n2": "warn"}
    assert got["preflight"] == {"n1": "go", "n2": "no-go"}
    assert got["export"]["n2"] == "warning"
    (f,) = open_of(db, now, "thermal-throttle")
    # Days 1-6 of the last seven (today has had no afternoon yet), the last episode ending yesterday at 17:00.
    assert f.summary.endswith("(6 of the last 7 days, last at Nov 20 17:00 UTC)"), f.summary
    assert f.first_seen < T0 + D  # since the first afternoon, not the window's start


# -- a node silent for six hours ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def n2_silent(tmp_path_factory):
    """Databases of one history, built once for the three tests below (each opens a copy of its own):
    "6h": n1 and n2 fed a day, then six hours with n2 silent; "2d": the same, then both fed to the end of
    day 2. Exactly what each test fed itself before (the same runs, the same health passes)."""
    folder = tmp_path_factory.mktemp("n2-silent")
    build = folder / "build.db"
    fleet = Fleet(open_database(build))
    fleet.run(T0 + D)
    fleet.run(T0 + D + 6 * H, silent=("n2",))
    fleet.db.close()
    shutil.copyfile(build, folder / "6h.db")
    fleet.db = open_database(build)
    fleet.run(T0 + 2 * D)
    fleet.db.close()
    shutil.copyfile(build, folder / "2d.db")
    return {"6h": folder / "6h.db", "2d": folder / "2d.db"}


@pytest.fixture
def n2_silent_db(n2_silent, tmp_path, request):
    """A copy of the test's own of ``n2_silent[request.param]``, opened."""
    path = tmp_path / "fleet.db"
    shutil.copyfile(n2_silent[request.param], path)
    d = open_database(path)
    yield d
    d.close()


@pytest.mark.parametrize("n2_silent_db", ["6h"], indirect=True)
def test_a_node_silent_for_six_hours_is_stale_never_pass(n2_silent_db):
    db = n2_silent_db
    now = T0 + D + 6 * H
    got = surfaces(db, now)
    assert got["report"] == {"n1": "pass", "n2": "stale"}
    assert got["gui"] == {"n1": "pass", "n2": "stale"}
    assert got["preflight"] == {"n1": "go", "n2": "no-go"}
    assert got["export"]["n2"] != "ok"
    assert got["_exit"]["report"] == 2
    run = assess.run_report(db, now, D, None, save=False)
    assert run.result.summary["stale"] == {"n2": 6 * H}
    assert "n2 (6.0 h)" in render.report_text(run.result)
    reasons = {n.name: n.reasons for n in assess.run_preflight(db, now, ["n2"], 14).result.nodes}
    assert reasons["n2"] == ("stale: no good poll for 6.0 h [node-unreachable]",)
    from fleetmon import i18n

    i18n.set_language("zh_CN")
    try:
        assert [i18n.localized(r) for r in reasons["n2"]] == ["数据过期：已 6.0 小时没有成功轮询 [node-unreachable]"]
    finally:
        i18n.set_language("en")


@pytest.mark.parametrize("n2_silent_db", ["2d"], indirect=True)
def test_a_report_as_of_the_past_reads_the_polls_of_then_not_the_newest(n2_silent_db):
    # n2 silent for six hours on day 2, then back: the node row's newest good poll is after every `now` below.
    db = n2_silent_db
    assert surfaces(db, T0 + 2 * D)["report"] == {"n1": "pass", "n2": "pass"}
    then = surfaces(db, T0 + D + 6 * H)
    assert then["report"] == {"n1": "pass", "n2": "stale"}
    assert then["preflight"] == {"n1": "go", "n2": "no-go"}
    # Before anything was polled: nobody had heard from either node, which is not health.
    before = surfaces(db, T0 - H)
    assert before["report"] == {"n1": "unknown", "n2": "unknown"}
    assert before["preflight"] == {"n1": "no-go", "n2": "no-go"}


@pytest.mark.parametrize("n2_silent_db", ["2d"], indirect=True)
def test_a_past_report_falls_back_to_stored_minutes_when_the_poll_log_is_pruned(n2_silent_db):
    db = n2_silent_db  # (n2 silent for six hours on day 2, then back)
    db.execute("DELETE FROM poll_log")
    db.conn.commit()
    # (a minute stamped at the `now` itself, sent an hour later, would count: the log says when it came)
    assert surfaces(db, T0 + D + 5 * H)["report"] == {"n1": "pass", "n2": "stale"}
    assert surfaces(db, T0 + D - 30 * 60)["report"] == {"n1": "pass", "n2": "pass"}


def test_missing_data_never_resolves_a_recurring_condition(db):
    fleet = Fleet(db)
    fleet.run(T0 + 6 * H, {("n1", 1): lambda ts: HOT if ts >= T0 + 5 * H else {}})
    assert open_of(db, T0 + 6 * H, "thermal-throttle")
    # Three days with no data at all, then judged: still open (and the node stale).
    later = T0 + 3 * D
    (f,) = open_of(db, later, "thermal-throttle")
    assert "h of data since" in f.evidence["lifecycle"]["open_because"]
    assert surfaces(db, later)["report"]["n1"] == "stale"
    # Two days of data without it: resolved by data (the default quiet period is 48 h).
    fleet.t = later
    fleet.run(later + 50 * H)
    assert not open_of(db, later + 50 * H, "thermal-throttle")
    row = {r.key: r for r in stored.all_findings(db)}[f.key]
    assert row.resolved_at is not None and row.evidence["lifecycle"]["resolved"]["by"] == "data"


# -- a card arriving with a past ------------------------------------------------------------------------------


def test_a_card_arriving_with_lifetime_errors_is_flagged_at_first_sight_and_kept_until_accepted(db):
    fleet = Fleet(db)
    fleet.run(T0 + D)
    # A second-hand card goes into n2's slot 1: its NVML reports 2 lifetime uncorrectable ECC errors.
    fleet.inv["n2"][1] = inventory("n2", 1, uuid="GPU-used-01", serial="SN-used")
    past = lambda ts: {"ecc_unc_agg": 2, "retired_dbe": 2, "retired_sbe": 13}  # noqa: E731
    fleet.run(T0 + D + 2 * H, {("n2", 1): past})
    now = T0 + D + 2 * H
    (f,) = open_of(db, now, "arrival-history")
    assert f.gpu_uuid == "GPU-used-01"
    assert f.summary.startswith("n2 gpu1: arrived with 2 lifetime uncorrectable ECC errors, 15 retired pages")
    got = surfaces(db, now)
    assert got["report"]["n2"] == got["gui"]["n2"] == {"warning": "warn", "critical": "fail"}[f.severity]
    assert got["preflight"]["n2"] == "no-go" and got["export"]["n2"] == f.severity
    # Three days of clean service later it is still there: the intake decision is the operator's. (Past
    # every period after which data resolves a finding of this scenario: the 24 h of an information finding
    # and the 48 h quiet period. Until 2026-12-03 this ran a week, 166 h: short of event_clean_hours, 168 h,
    # too, which does not apply to arrival-history, an event that only an operator resolves.)
    later = T0 + 4 * D
    fleet.run(later, {("n2", 1): past})
    assert open_of(db, later, "arrival-history")
    resolutions.resolve(db, f.key, "accepted", "burn-in passed, kept as a spare-pool card", later + 60, "carol")
    fleet.run(later + H, {("n2", 1): past})
    got = surfaces(db, later + H)
    assert got["report"]["n2"] == got["gui"]["n2"] == "pass"
    assert not open_of(db, later + H, "arrival-history")


# -- two cards swapped between a bad and a good slot, the node down in between ----------------------------


def test_a_swap_between_a_bad_and_a_good_slot_charges_the_replays_to_the_bad_slot(db):
    fleet = Fleet(db, nodes=("n1",))
    bad = lambda ts: {"pcie_replay": (ts - T0) // 60 * 20}  # noqa: E731 - 20 replays a minute since boot
    fleet.run(T0 + 6 * H, {("n1", 0): bad})
    # The node powers down for an hour; the two cards are swapped (the replay counter resets with the power).
    a, b = fleet.inv["n1"]
    fleet.inv["n1"] = [inventory("n1", 0, uuid=b.uuid, serial="SN-n1-1"),
                       inventory("n1", 1, uuid=a.uuid, serial="SN-n1-0")]
    fleet.run(T0 + 7 * H, silent=("n1",))
    up = T0 + 7 * H
    fleet.run(T0 + 9 * H, {("n1", 0): lambda ts: {"pcie_replay": (ts - up) // 60 * 20}})
    now = T0 + 9 * H
    run = assess.run_report(db, now, D, None, save=False)
    replays = {f.gpu_uuid: f for f in run.result.findings if f.kind == "pcie-replay"}
    bad_slot = "n1:00000000:10:00.0"
    assert set(replays) == {a.uuid, b.uuid}
    for f in replays.values():
        assert f.evidence["slots"] == [bad_slot], (f.gpu_uuid, f.evidence["slots"])
        assert f.evidence.get("attribution") == "slot", f.evidence
    got = surfaces(db, now, nodes=("n1",))
    assert got["report"]["n1"] == got["gui"]["n1"] == "warn"
    assert got["preflight"]["n1"] == "no-go"
