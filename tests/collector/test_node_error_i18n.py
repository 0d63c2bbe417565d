"""Issue 25, m018: a node's reason for a failed poll is said in the reader's language.

Real parts: the collector polls a simulated agent (a real HTTP server on 127.0.0.1), then the same port once it
is closed, a server that answers garbage and one too slow; the polls are stored in a real SQLite file and read
back. The reason is an ``i18n.Text`` (English byte for byte as before), kept with how it was made
(``nodes.last_error_texts``, ``poll_log.error_texts``, ``events.message_texts``), and every surface says it in
Chinese: the fleet table's status cell, ``collect --once``, the reachability finding, the report and preflight.
A row from before m018 shows its English as stored.
"""

from __future__ import annotations

import asyncio
import dataclasses
import http.server
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlite_utils import Database, Migrations

from fleetmon import i18n
from fleetmon.collector.client import Target, poll_all, poll_node
from fleetmon.i18n import N_, Text
from fleetmon.records import NodePoll
from fleetmon.sim.fleet import SimNode, make_node
from helpers import dead_url
from storage import queries
from storage.db import open_database
from storage.ingest import ingest_polls
from storage.schema import MIGRATION_SET, migrations

CJK = re.compile("[\u4e00-\u9fff]")


def _poll(targets: list[Target], timeout_s: float = 1.0) -> list[NodePoll]:
    return asyncio.run(poll_all(targets, timeout_s=timeout_s))


@pytest.fixture
def agent() -> Iterator[SimNode]:
    node = make_node("n1", gpus=2)
    node.serve(0.1)
    node.backfill(1)
    yield node
    node.close()


def _down_after_up(agent: SimNode, path: Path) -> tuple[NodePoll, str]:
    """n1 answers once, then its port is closed: the second poll fails ("connection refused"), both stored."""
    target = Target(name="n1", url=agent.url)
    (good,) = _poll([target])
    assert good.ok, good.error
    port = agent.port
    agent.close()
    (bad,) = _poll([target])
    assert not bad.ok
    db = open_database(path)
    try:
        ingest_polls(db, [good])
        ingest_polls(db, [bad])
    finally:
        db.close()
    return bad, f"cannot connect: Connection refused (127.0.0.1:{port})"


def test_a_refused_connection_is_stored_read_back_and_said_in_chinese(agent: SimNode, tmp_path: Path) -> None:
    bad, english = _down_after_up(agent, tmp_path / "f.db")
    assert bad.error == english and isinstance(bad.error, Text)  # the English exactly as before
    db = open_database(tmp_path / "f.db", readonly=True)
    try:
        (node,) = queries.nodes(db)
        failed = [p for p in queries.poll_log(db) if not p.ok]
        outage = [e for e in queries.events(db) if e.kind == "node_unreachable"]
        row = queries.fleet_latest(db)[0]
    finally:
        db.close()
    for read in (node.last_error, failed[0].error, outage[0].message, row.last_error):
        assert read == english and isinstance(read, Text), read
        assert i18n.localized(read) == english  # English: byte for byte
        with i18n.speaking("zh_CN"):
            said = i18n.localized(read)
        assert said.startswith("无法连接：连接被拒绝（127.0.0.1:"), said


def test_an_old_row_without_texts_shows_its_english(agent: SimNode, tmp_path: Path) -> None:
    _, english = _down_after_up(agent, tmp_path / "f.db")
    raw = sqlite3.connect(tmp_path / "f.db")
    raw.execute("UPDATE nodes SET last_error_texts = NULL")  # as a row stored before m018
    raw.execute("UPDATE poll_log SET error_texts = '{\"error\": {\"t\": \"{gone}\"}}'")  # data that no longer fits
    raw.commit()
    raw.close()
    db = open_database(tmp_path / "f.db", readonly=True)
    try:
        (node,) = queries.nodes(db)
        failed = [p for p in queries.poll_log(db) if not p.ok]
    finally:
        db.close()
    for read in (node.last_error, failed[0].error):
        assert read == english and not isinstance(read, Text)
        with i18n.speaking("zh_CN"):
            assert i18n.localized(read) == english


class _Answers(http.server.BaseHTTPRequestHandler):
    """Answers every GET with the server's ``reply``: (status, body, delay_s)."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        status, body, delay = self.server.reply  # type: ignore[attr-defined]
        time.sleep(delay)
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[http.server.ThreadingHTTPServer]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    srv.daemon_threads = True
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _said(reply: tuple[int, bytes, float], srv: http.server.ThreadingHTTPServer, timeout_s: float = 1.0
          ) -> tuple[str, str]:
    srv.reply = reply  # type: ignore[attr-defined]
    (p,) = _poll([Target(name="x", url=f"http://127.0.0.1:{srv.server_address[1]}")], timeout_s)
    assert not p.ok and isinstance(p.error, Text), p.error
    assert i18n.localized(p.error) == p.error
    with i18n.speaking("zh_CN"):
        return p.error, i18n.localized(p.error)


def test_garbage_and_a_slow_answer_are_said_in_chinese(server: http.server.ThreadingHTTPServer) -> None:
    english, chinese = _said((200, b"<html>hello</html>", 0.0), server)
    assert english == "/v1/node: not valid JSON (JSONDecodeError: Expecting value: line 1 column 1 (char 0))"
    assert chinese == "/v1/node：不是有效的 JSON（JSONDecodeError：Expecting value: line 1 column 1 (char 0)）"
    english, chinese = _said((200, b"", 0.0), server)
    assert (english, chinese) == ("/v1/node: not valid JSON (empty answer)", "/v1/node：不是有效的 JSON（空应答）")
    english, chinese = _said((200, b"x", 3.0), server, timeout_s=0.3)
    assert re.fullmatch(r"/v1/node: timed out after \d+\.\d s \(timeout_s = 0\.3\)", english), english
    assert re.fullmatch(r"/v1/node：\d+\.\d 秒后超时（timeout_s = 0\.3）", chinese), chinese


def test_foreign_text_with_newlines_stays_one_printable_line(server: http.server.ThreadingHTTPServer) -> None:
    english, chinese = _said((418, b"teapot\r\nsecond line\x1b[2J", 0.0), server)
    assert english == "/v1/node: HTTP 418: teapot second line\\x1b[2J"
    assert chinese == "/v1/node：HTTP 418：teapot second line\\x1b[2J"
    # A reason made before any request (here: TLS settings) whose values hold newlines and controls.
    reason = Text(N_("TLS CA file {path}: cannot load it ({reason})"), path="/etc/ca\n.pem", reason="bad\n\x1b[31mca")

    async def one() -> NodePoll:
        async with aiohttp.ClientSession() as session:
            return await poll_node(session, Target(name="x", url=dead_url(), error=reason))

    p = asyncio.run(one())
    assert p.error == "TLS CA file /etc/ca .pem: cannot load it (bad \\x1b[31mca)" and isinstance(p.error, Text)
    with i18n.speaking("zh_CN"):
        said = i18n.localized(p.error)
    assert said == "TLS CA 文件 /etc/ca .pem：无法加载（bad \\x1b[31mca）"
    assert "\n" not in said and "\x1b" not in said


def test_m018_upgrades_a_database_built_at_m017(tmp_path: Path) -> None:
    path = str(tmp_path / "old.db")
    old_db = Database(sqlite3.connect(path))
    old = Migrations(MIGRATION_SET)
    for m in migrations._migrations:
        if m.name < "m018":
            old(name=m.name)(m.fn)
    old.apply(old_db)
    assert "last_error_texts" not in {c.name for c in old_db["nodes"].columns}
    english = "cannot connect: Connection refused (10.0.0.7:9400)"
    old_db.execute("INSERT INTO nodes (name, status, last_error) VALUES ('n1', 'unreachable', ?)", (english,))
    old_db.execute("INSERT INTO poll_log (ts, node, ok, error) VALUES (1, 'n1', 0, ?)", (english,))
    old_db.conn.commit()
    old_db.conn.close()
    db = open_database(path)
    try:
        assert "last_error_texts" in {c.name for c in db["nodes"].columns}
        assert "error_texts" in {c.name for c in db["poll_log"].columns}
        assert "message_texts" in {c.name for c in db["events"].columns}
        (node,) = queries.nodes(db)
        assert node.last_error == english and not isinstance(node.last_error, Text)
        with i18n.speaking("zh_CN"):
            assert i18n.localized(node.last_error) == english  # shown as stored
    finally:
        db.close()


def _fleetmon(*args: str, lang: str, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    """``fleetmon --lang LANG ARGS`` (its main, in this process: a process start costs seconds); (stdout, stderr)."""
    from fleetmon.cli import main

    capsys.readouterr()
    try:
        main(["--lang", lang, *args])
    finally:
        i18n.set_language("en")
    out = capsys.readouterr()
    return out.out, out.err


def test_the_cli_the_finding_the_report_and_preflight_say_it_in_chinese(agent: SimNode, tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from fleetmon import assess
    from storage import findings as stored

    bad, english = _down_after_up(agent, tmp_path / "f.db")
    now = bad.ts + 3600
    db = open_database(tmp_path / "f.db")
    try:
        assess.evaluate_and_store(db, now)
        (finding,) = [f for f in stored.open_findings(db) if f.kind == "node-unreachable"]
    finally:
        db.close()
    summary = finding.evidence["summary"]
    assert english in summary and isinstance(summary, Text)
    with i18n.speaking("zh_CN"):
        assert "无法连接：连接被拒绝" in i18n.localized(summary)
    report, err = _fleetmon("report", "--db", str(tmp_path / "f.db"), "--now", str(now), lang="zh_CN", capsys=capsys)
    assert "无法连接：连接被拒绝（127.0.0.1:" in report and "cannot connect" not in report, report + err
    preflight, err = _fleetmon("preflight", "--db", str(tmp_path / "f.db"), "--nodes", "n1", "--now", str(now),
                               lang="zh_CN", capsys=capsys)
    assert "无法连接：连接被拒绝（127.0.0.1:" in preflight, preflight + err
    fleet = tmp_path / "fleet.toml"
    url = dead_url()
    fleet.write_text(f'[fleet]\ntimeout_s = 1\n[[node]]\nname = "down"\nurl = "{url}"\n', encoding="utf-8")
    for lang, line in (("zh_CN", "  down: 无法连接：连接被拒绝（{host}）"),
                       ("en", "  down: cannot connect: Connection refused ({host})")):
        _, err = _fleetmon("collect", "--once", "--fleet", str(fleet), "--db", str(tmp_path / f"{lang}.db"),
                           lang=lang, capsys=capsys)
        assert line.format(host=url.removeprefix("http://")) in err.splitlines(), err


@pytest.fixture
def chinese(qapp: Any) -> Iterator[None]:
    """The application in zh_CN for one test, English again after it (as tests/ui/conftest.py's)."""
    from ui import i18n as ui_i18n

    assert ui_i18n.install("zh_CN") == "zh_CN"
    try:
        yield
    finally:
        ui_i18n.install("en")


def test_the_fleet_tables_status_cell_reads_chinese(agent: SimNode, tmp_path: Path, chinese: None) -> None:
    from PySide6.QtCore import Qt

    from ui.fleet_reader import read_snapshot
    from ui.models.fleet_table import COLUMNS, FleetTableModel
    from ui.models.fleet_tree import COL_STATUS as TREE_STATUS, FleetTreeModel

    _, english = _down_after_up(agent, tmp_path / "f.db")
    db = open_database(tmp_path / "f.db", readonly=True)
    try:
        snap = read_snapshot(db)
    finally:
        db.close()
    model = FleetTableModel()
    model.set_rows(list(snap.rows), now=time.time())
    cell = model.data(model.index(0, COLUMNS.index("Status")))
    assert "无法连接：连接被拒绝（127.0.0.1:" in cell and CJK.search(cell.split("：")[0]), cell
    assert "cannot connect" not in cell
    assert dataclasses.is_dataclass(snap.rows[0]) and snap.rows[0].last_error == english
    tree = FleetTreeModel()  # the grouped view: the GPU's Status cell and the node's tooltip
    tree.set_snapshot(snap)
    n1 = tree.index_of_node("n1")
    tip = tree.data(tree.index(n1.row(), 0, n1.parent()), Qt.ItemDataRole.ToolTipRole)
    assert "无法连接：连接被拒绝（127.0.0.1:" in tip and "cannot connect" not in tip, tip
    gpu = tree.index(0, TREE_STATUS, tree.index(n1.row(), 0, n1.parent()))
    assert "无法连接：连接被拒绝" in tree.data(gpu), tree.data(gpu)


def test_an_ssh_nodes_failure_is_said_in_chinese(tmp_path: Path, shared_fixtures: Path) -> None:
    """A real OpenSSH server on 127.0.0.1 whose ``nvidia-smi`` fails: the frame is said in Chinese, the tool's own
    message stays as it printed it."""
    from helpers.sshd import SshServer, available

    why = available()
    if why:
        pytest.skip(why)
    (tmp_path / "ssh").mkdir()
    sshd = SshServer(tmp_path / "ssh", shared_fixtures / "A_nvidia_smi_xml" / "telegraf_a100-sxm4-v12.xml")
    try:
        sshd.mode.write_text("fail")
        (p,) = asyncio.run(poll_all([Target(name="n1", url=sshd.url, ssh_config=str(sshd.ssh_config))],
                                    timeout_s=5.0))
    finally:
        sshd.close()
    tool = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    assert p.error == f"nvidia-smi exited with status 9: {tool}" and isinstance(p.error, Text), p.error
    with i18n.speaking("zh_CN"):
        assert i18n.localized(p.error) == f"nvidia-smi 退出，状态码 9：{tool}"
