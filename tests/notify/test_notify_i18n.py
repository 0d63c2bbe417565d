"""A destination's ``lang`` (docs/notifications.md): Chinese messages to one chat group while the collector and
the other destinations stay English; against the real webhook server on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetmon import i18n
from fleetmon.cli import main
from fleetmon.errors import ConfigError
from fleetmon.fleet import parse_fleet
from fleetmon.notify import Notifier
from fleetmon.notify.message import compose, stale_event
from helpers.notify_servers import HookServer, lost, store
from storage.db import open_database

NODE = '[[node]]\nname = "node7"\nurl = "http://127.0.0.1:9"\ngroup = "a100"\n'


def _dest(name: str, port: int, lang: str | None) -> str:
    return (f'[[notify]]\nname = "{name}"\nurl = "json://127.0.0.1:{port}/{name}"\ndigest = false\n'
            + (f'lang = "{lang}"\n' if lang else ""))


def test_a_destination_speaks_its_own_language(db_path: str) -> None:
    zh, en = HookServer(), HookServer()
    try:
        fleet = parse_fleet(NODE + _dest("wecom", zh.port, "zh_CN") + _dest("ops", en.port, None))
        assert [s.lang for s in fleet.notify] == ["zh_CN", None]
        notifier = Notifier(fleet, db_path, scan_s=0.2)
        notifier.start()
        try:
            db = open_database(db_path)
            try:
                notifier.after_health(db, store(db_path, [lost("node7", "GPU-1")]), 1_790_000_100.0)
            finally:
                db.close()
            (chinese,) = zh.wait_for(1)
            (english,) = en.wait_for(1)
        finally:
            notifier.stop()
    finally:
        zh.close()
        en.close()
    said = chinese.json()
    assert said["title"].startswith("[fleetmon] 严重 gpu-lost：node7"), said["title"]
    body = said["message"]
    for line in ("gpu-lost，严重（新增）", "节点：node7", "证据：node7 GPU-1", "处理建议：", "查看：fleetmon resolve"):
        assert line in body, (line, body)
    plain = english.json()
    assert plain["title"].startswith("[fleetmon] CRITICAL gpu-lost: node7")
    assert "Evidence: " in plain["message"] and "严重" not in plain["message"]
    assert i18n.current_language() == "en"  # the process (its log) stays English


def test_stale_and_folded_messages_in_chinese() -> None:
    event = stale_event("node7", 1_796_311_800.0, 1_796_311_800.0 + 42 * 60, "f.db")
    assert event.evidence == "node7: no good poll for 42 min (last at 2026-12-03 15:30 UTC)"  # stored English
    title, body = compose([event], lang="zh_CN")
    assert "node7：已 42 分钟没有成功采集（最后一次在 2026年12月3日 15:30 UTC）" in body
    assert "处理建议：检查采集器是否仍在采集此节点" in body
    title, body = compose([event] * 4, db="f.db", lang="zh_CN")
    assert title == "[fleetmon] 严重：1 个节点上 4 个事件（4 × node-stale）"
    assert compose([event], lang=None)[0] == "[fleetmon] CRITICAL node-stale: node7"


def test_notify_test_sends_each_destination_its_language(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    zh, en = HookServer(), HookServer()
    try:
        path = tmp_path / "fleet.toml"
        path.write_text(NODE + _dest("wecom", zh.port, "zh_CN") + _dest("ops", en.port, "en"), encoding="utf-8")
        assert main(["notify", "test", "--fleet", str(path)]) == 0
        assert zh.wait_for(1)[0].json()["title"].startswith("[fleetmon] 测试 严重 gpu-lost：")
        assert en.wait_for(1)[0].json()["title"].startswith("[fleetmon] TEST CRITICAL gpu-lost: ")
    finally:
        zh.close()
        en.close()
    assert capsys.readouterr().out == "wecom: sent\nops: sent\n"


def test_an_unknown_language_is_a_line_numbered_error() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_fleet(NODE + _dest("wecom", 9, "fr"), path="fleet.toml")
    assert str(caught.value) == "fleet.toml:9: notify[0].lang: must be one of en, zh_CN (got 'fr')"
