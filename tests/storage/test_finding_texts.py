"""Issue 25, m017: a stored finding's summary and action keep how they were made (``findings.texts``), so every
surface that shows a stored finding says it in the reader's language; the English stays as stored (scripts, the
JSON and the CSV read it); a row from before m017, or with unreadable data, is shown as stored (English)."""

from __future__ import annotations

import dataclasses
import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from sqlite_utils import Database, Migrations

from fleetmon import assess, export, i18n, ledger
from fleetmon.cli import main
from fleetmon.health.findings import Finding
from fleetmon.i18n import N_, Joined, Moment, Text
from fleetmon.notify.message import compose, finding_event
from helpers import HOT, T0, Feeder, between
from storage import findings as stored
from storage.db import open_database, query
from storage.resolutions import resolve
from storage.schema import MIGRATION_SET, migrations

SUMMARY_ZH = "过热降频"  # "{gpu}: thermal slowdown for {minutes} min ({reasons})" in the zh_CN catalog


def _health_pass(path: Path) -> tuple[Any, str]:
    """A real collector health pass over a real SQLite file: n2 gpu1 ran hot for half an hour."""
    db = open_database(path)
    Feeder(db).feed(T0, T0 + 3600, {("n2", 1): between(T0 + 1800, T0 + 3600, HOT)})
    assess.evaluate_and_store(db, T0 + 3600)
    key = next(f.key for f in stored.open_findings(db) if f.kind == "thermal-throttle")
    return db, key


def _finding(db: Any, key: str) -> Any:
    return next(f for f in stored.all_findings(db) if f.key == key)


def test_a_finding_stored_by_the_health_pass_reads_back_in_chinese_and_english_as_stored(tmp_path: Path) -> None:
    db, key = _health_pass(tmp_path / "f.db")
    try:
        f = _finding(db, key)
        english = f.evidence["summary"]
        assert english.startswith("n2 gpu1: thermal slowdown for ")
        (raw,) = query(db, "SELECT evidence, texts FROM findings WHERE key = ?", (key,))
        assert json.loads(raw["evidence"])["summary"] == english  # the English, as scripts read it
        assert json.loads(raw["texts"])["summary"]["t"] == "{gpu}: thermal slowdown for {minutes} min ({reasons})"
        with i18n.speaking("zh_CN"):
            said = i18n.localized(english)
            assert SUMMARY_ZH in said and said.startswith("n2 gpu1："), said
            # a notification of the stored finding, composed in the destination's language (through the outbox's JSON)
            event = finding_event(f, "new", "f.db")
            _title, body = compose([type(event).from_payload(json.loads(json.dumps(event.payload())))], lang="zh_CN")
            assert SUMMARY_ZH in body, body
        assert i18n.localized(english) == english
        _title, body = compose([event], lang="en")
        assert f"Evidence: {english}" in body  # English unchanged
        # the ledger keeps the Text: a report that merges the stored finding says it in Chinese too
        entry = ledger.stored_finding(f)
        assert entry is not None and isinstance(entry.summary, Text)
    finally:
        db.close()


def test_the_workbook_says_a_stored_summary_in_chinese_csv_and_json_stay_english(tmp_path: Path) -> None:
    db, key = _health_pass(tmp_path / "f.db")
    try:
        english = {fmt: export.render(export.read_sheet(db, now=T0 + 3600).gpus, fmt) for fmt in ("csv", "json")}
        i18n.set_language("zh_CN")
        try:
            sheet = export.read_sheet(db, now=T0 + 3600)
            export.write_xlsx(tmp_path / "zh.xlsx", sheet)
            for fmt in ("csv", "json"):
                assert export.render(sheet.gpus, fmt) == english[fmt]
        finally:
            i18n.set_language("en")
    finally:
        db.close()
    ws = openpyxl.load_workbook(tmp_path / "zh.xlsx")["未关闭的问题"]
    head = [c.value for c in ws[1]]
    rows = [dict(zip(head, (c.value for c in r))) for r in ws.iter_rows(min_row=2)]
    (row,) = [r for r in rows if r["类型"] == "thermal-throttle"]
    assert SUMMARY_ZH in str(row["证据"]), row


def test_resolve_list_and_history_say_the_summary_in_chinese(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "f.db"
    db, key = _health_pass(path)
    db.close()
    try:
        assert main(["--lang", "zh_CN", "resolve", "--db", str(path), "--list"]) == 0
    finally:
        i18n.set_language("en")
    assert "n2 gpu1：过热降频 30 分钟" in capsys.readouterr().out
    db = open_database(path)
    try:
        resolve(db, key, "other", "fan swapped", T0 + 4000, by="ann")
        uuid = _finding(db, key).gpu_uuid
    finally:
        db.close()
    try:
        assert main(["--lang", "zh_CN", "resolve", "--db", str(path), "--history", uuid]) == 0
    finally:
        i18n.set_language("en")
    out = capsys.readouterr().out
    assert SUMMARY_ZH in out, out
    assert " UTC，ann 处理完成：" in out and " by ann" not in out, out  # the reason's frame and words too
    assert main(["resolve", "--db", str(path), "--history", uuid]) == 0
    out = capsys.readouterr().out
    assert "thermal slowdown for" in out and " UTC by ann: other (see the note) — fan swapped" in out, out


def test_an_action_with_values_and_nested_text_survive_the_database(tmp_path: Path) -> None:
    db = open_database(tmp_path / "f.db")
    summary = Text(N_("{summary} ({recurrence})"), summary=Text(N_("{gpu}: GPU lost (fell off the bus)"),
                                                                 gpu="n1 gpu0"),
                   recurrence=Joined([Text(N_("back after it was resolved: {reason}"), reason="x"),
                                      Moment(T0)]))
    action = Text(N_("Pick one {word} version for {where}"), word="driver", where="n1")
    f = Finding(kind="gpu-lost", severity="critical", node="n1", gpu_uuid="GPU-x", first_seen=T0, last_seen=T0,
                evidence={}, action=action, summary=summary, key="gpu-lost:GPU-x")
    try:
        ledger.store(db, [f], T0 + 60)
        (back,) = stored.open_findings(db)
    finally:
        db.close()
    assert back.evidence["summary"] == str(summary) and back.action == str(action)
    assert isinstance(back.evidence["summary"], Text) and isinstance(back.action, Text)
    with i18n.speaking("zh_CN"):
        assert "掉卡" in i18n.localized(back.evidence["summary"])
        assert i18n.localized(back.action) != str(action)


def test_an_old_row_and_corrupt_data_show_the_english_as_stored(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    db, key = _health_pass(tmp_path / "f.db")
    try:
        english = str(_finding(db, key).evidence["summary"])
        bad = ["", "{not json", "[1, 2]", '{"summary": 5}', '{"summary": {"t": 7}}',
               '{"summary": {"t": "{gpu}: {missing}", "a": {"gpu": "n2 gpu1"}}}',  # a template that lost a value
               '{"summary": {"t": "something else", "a": {}}}',  # text that is not what was stored
               '{"summary": {"m": "soon"}}', '{"summary": {"j": 3}}', '{"summary": ' + '{"j": [' * 200 + ']}' * 200 + '}',
               None]  # None: a row from before m017
        with caplog.at_level(logging.WARNING):
            for text in bad:
                db.execute("UPDATE findings SET texts = ? WHERE key = ?", (text, key))
                db.conn.commit()
                f = _finding(db, key)
                with i18n.speaking("zh_CN"):
                    assert i18n.localized(f.evidence["summary"]) == english, text
                    event = finding_event(f, "new", "f.db")
                    assert english[:40] in compose([event], lang="zh_CN")[1]
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    finally:
        db.close()


def test_m017_upgrades_a_database_built_at_m016(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    old_db = Database(sqlite3.connect(path))
    old = Migrations(MIGRATION_SET)
    for m in migrations._migrations:
        if m.name < "m017":
            old(name=m.name)(m.fn)
    old.apply(old_db)
    assert "texts" not in {c.name for c in old_db["findings"].columns}
    old_db.execute("""INSERT INTO findings (key, kind, severity, node, first_seen, last_seen, evidence, action,
                      updated_at) VALUES ('k', 'gpu-lost', 'critical', 'n1', 1, 2, ?, 'Drain the node', 2)""",
                   (json.dumps({"summary": "n1 gpu0: GPU lost (fell off the bus)"}),))
    old_db.conn.commit()
    old_db.conn.close()
    db = open_database(path)
    try:
        assert "texts" in {c.name for c in db["findings"].columns}
        assert "texts" in {c.name for c in db["finding_resolutions"].columns}
        (f,) = stored.open_findings(db)
        assert not isinstance(f.evidence["summary"], Text)  # nothing kept: shown as stored, English
        with i18n.speaking("zh_CN"):
            assert i18n.localized(f.evidence["summary"]) == "n1 gpu0: GPU lost (fell off the bus)"
        row = resolve(db, "k", "other", "", 3.0)
        assert row.summary == "n1 gpu0: GPU lost (fell off the bus)"
    finally:
        db.close()


@pytest.mark.parametrize("text", [
    Text(N_("{gpu}: GPU lost (fell off the bus)"), gpu="n1 gpu0"), Moment(T0), Joined(["a", Text("{x}", x=1.5)]),
    Text(N_("{summary} ({recurrence})"), summary=Text("{n} of {m}", n=3, m=None), recurrence=Moment(T0 + 0.5)),
])
def test_to_data_and_back_gives_the_same_text(text: str) -> None:
    data = json.loads(json.dumps(i18n.to_data(text)))
    back = i18n.from_data(data, str(text))
    assert back == text and type(back) is type(text)
    assert i18n.from_data(data, str(text) + "!") == str(text) + "!"  # not what was stored: the English


def test_a_long_list_survives() -> None:
    """A card with many faults is said again all the same (``i18n.listing`` is flat: a list of thousands of items,
    a fleet's stale nodes, once nested a Text per item and ran out of recursion)."""
    text = i18n.listing([Text(N_("{gpu}: GPU lost (fell off the bus)"), gpu=f"n{i} gpu0") for i in range(60)])
    back = i18n.from_data(json.loads(json.dumps(i18n.to_data(text))), str(text))
    assert isinstance(back, i18n.Listing) and back == text
    with i18n.speaking("zh_CN"):
        assert i18n.localized(back).count("掉卡") == 60
    names = [f"gpu{i:05d}" for i in range(5000)]
    many = i18n.listing(names, semicolons=True)
    assert many == "; ".join(names)
    back = i18n.from_data(json.loads(json.dumps(i18n.to_data(many))), str(many))
    assert isinstance(back, i18n.Listing) and back == many
    with i18n.speaking("zh_CN"):
        assert i18n.localized(back) == "；".join(names)
        assert i18n.localized(i18n.listing(["a", "b", "c"])) == "a、b、c"


def test_a_listing_stored_by_an_older_build_still_reads_back() -> None:
    """The form an older build stored (one "{first}, {rest}" Text per item) is said again as before."""
    lost = Text(N_("{gpu}: GPU lost (fell off the bus)"), gpu="n1 gpu0")
    nested = Text(N_("{first}, {rest}"), first=lost, rest=Text(N_("{first}, {rest}"), first="b", rest="c"))
    back = i18n.from_data(json.loads(json.dumps(i18n.to_data(nested))), str(nested))
    assert back == "n1 gpu0: GPU lost (fell off the bus), b, c"
    with i18n.speaking("zh_CN"):
        assert i18n.localized(back).endswith("、b、c") and "掉卡" in i18n.localized(back)


def test_why_the_data_closed_a_finding_reads_back_in_chinese_with_its_figures(tmp_path: Path) -> None:
    # A finding the lifecycle resolved by data, stored and read back: the "why" with its figures says itself again
    from fleetmon.health import render

    why = Text(N_("{quiet:.0f} h without it, {hours:.0f} h of data"), quiet=24, hours=30.4)
    f = Finding(kind="thermal-throttle", severity="warning", node="n2", gpu_uuid="GPU-2", first_seen=T0,
                last_seen=T0 + 60, summary=Text(N_("{gpu}: thermal slowdown for {minutes} min ({reasons})"),
                                                gpu="n2 gpu1", minutes=1, reasons="SW_THERMAL"),
                evidence={"lifecycle": {"resolved": {"by": "data", "why": why, "at": T0 + 90_000}}},
                key="thermal-throttle|gpu:GPU-2|0", state="resolved")
    db = open_database(tmp_path / "f.db")
    try:
        ledger.store(db, [dataclasses.replace(f, state="open", evidence={})], T0 + 60)  # stored open first
        ledger.store(db, [f], T0 + 90_000)
        back = ledger.stored_finding(_finding(db, f.key))
        assert back is not None
        (raw,) = query(db, "SELECT evidence FROM findings WHERE key = ?", (f.key,))
        assert json.loads(raw["evidence"])["lifecycle"]["resolved"]["why"] == "24 h without it, 30 h of data"
        assert render.resolution_text(back) == "resolved by data: 24 h without it, 30 h of data"  # English as before
        with i18n.speaking("zh_CN"):
            assert render.resolution_text(back) == "数据表明已恢复：24 小时未出现，30 小时的数据"
    finally:
        db.close()
