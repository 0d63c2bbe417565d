"""The CLI in Simplified Chinese (docs/i18n.md): argparse help, one-line errors, numbers and dates in the locale;
English and docs/cli.md as before."""

from __future__ import annotations

from pathlib import Path

from fleetmon import i18n

from helpers.cli import REPO, fleetmon


def test_help_in_chinese_with_lang_before_the_command() -> None:
    proc = fleetmon("--lang", "zh_CN", "report", "--help")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith("用法：fleetmon report [-h] --db FILE")  # command, flags and metavars stay
    assert "集群的日常巡检" in out and "显示此帮助信息并退出" in out and "选项:" in out
    assert "--since DURATION    检查的时间窗口，如 90m、24h、7d 或 3600s（默认 24h）" in out
    assert "退出码：0 表示没有严重问题" in out  # the epilog
    assert "daily inspection" not in out.lower() and "usage:" not in out


def test_help_follows_fleetmon_lang_for_every_command() -> None:
    top = fleetmon("--help", env={"FLEETMON_LANG": "zh_CN"})
    assert "GPU 集群资产与健康监控。" in top.stdout and "日常巡检" in top.stdout
    for words, said in ((["notify", "test"], "发送一条示例消息"), (["slurm", "drain"], "下线（drain）"),
                        (["intake"], "验收"), (["collect"], "每个节点采集一次")):
        proc = fleetmon(*words, "--help", env={"FLEETMON_LANG": "zh_CN"})
        assert proc.returncode == 0 and said in proc.stdout, (words, proc.stdout)


def test_help_stays_english_by_default_and_the_reference_is_english(chinese: None) -> None:
    proc = fleetmon("report", "--help")
    assert proc.stdout.startswith("usage: fleetmon report") and "The daily inspection" in proc.stdout
    from fleetmon.cli.reference import render

    # rendered while the process speaks Chinese: still the committed English reference
    assert render() == (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    assert i18n.current_language() == "zh_CN"


def test_numbers_and_dates_follow_the_locale(chinese: None) -> None:
    ts = 1796311800.0  # 2026-12-03 15:30 UTC
    assert i18n.when(ts) == "2026年12月3日 15:30"
    assert i18n.when(ts, seconds=True) == "2026年12月3日 15:30:00"
    assert i18n.day(ts) == "2026年12月3日"
    assert i18n.number(12345.678, 1) == "12,345.7" and i18n.number(7) == "7"
    i18n.set_language("en")
    assert (i18n.when(ts), i18n.when(ts, True), i18n.day(ts)) == ("2026-12-03 15:30", "2026-12-03 15:30:00",
                                                                 "2026-12-03")
    assert i18n.number(12345.678, 1) == "12345.7" and i18n.number(1234.5) == "1234"


def test_other_commands_errors_are_one_line_in_chinese(tmp_path: Path) -> None:
    from storage.db import open_database

    db = tmp_path / "f.db"
    open_database(str(db)).close()
    proc = fleetmon("--lang", "zh_CN", "resolve", "--db", str(db), "--node", "n1", "--list")
    assert proc.returncode == 0 and proc.stdout == "没有匹配的未关闭问题\n"
    proc = fleetmon("--lang", "zh_CN", "resolve", "--db", str(db), "no-such-key", "--reason", "replaced")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == (f"fleetmon resolve: 没有 key 为 'no-such-key' 的未关闭问题（列出它们：fleetmon resolve "
                           f"--db {db} --list）\n")
    proc = fleetmon("resolve", "--db", str(db), "no-such-key", "--reason", "replaced")
    assert proc.stderr.startswith("fleetmon resolve: no open finding with the key 'no-such-key'")
    proc = fleetmon("notify", "test", "--fleet", str(tmp_path / "none.toml"), env={"FLEETMON_LANG": "zh_CN"})
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr


def test_the_agents_help_and_errors_in_chinese() -> None:
    proc = fleetmon("--lang", "zh_CN", "agent", "--interval", "0.01")
    assert proc.returncode == 1 and proc.stderr == "fleetmon agent: --interval 必须在 0.2 到 3600 秒之间\n"
    proc = fleetmon("agent", "--interval", "0.01")
    assert proc.stderr == "fleetmon agent: --interval must be between 0.2 and 3600 seconds\n"
    proc = fleetmon("--lang", "zh_CN", "agent", "--help")
    assert "--interval SECONDS" in proc.stdout and "采样间隔（默认 5）" in proc.stdout


def test_import_errors_in_chinese(tmp_path: Path) -> None:
    folder = tmp_path / "node7.xml"
    folder.mkdir()
    proc = fleetmon("--lang", "zh_CN", "import", "--db", str(tmp_path / "f.db"), str(folder))
    assert proc.returncode == 1 and proc.stderr == f"fleetmon import: {folder}：是目录，不是采集文件\n"
    bad = tmp_path / "bad name!.xml"
    bad.write_text("<nvidia_smi_log/>", encoding="utf-8")
    proc = fleetmon("--lang", "zh_CN", "import", "--db", str(tmp_path / "f.db"), str(bad))
    assert proc.returncode == 1 and "不是合法的节点名" in proc.stderr and "例如 --node bad-name" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_fleet_check_says_ok_in_chinese(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text('[[node]]\nname = "n1"\nurl = "http://127.0.0.1:9414"\ngroup = "a100"\n', encoding="utf-8")
    proc = fleetmon("--lang", "zh_CN", "fleet", "check", str(path))
    assert proc.returncode == 0 and proc.stdout == "OK：1 个分组中共 1 个节点\n", proc
    assert fleetmon("fleet", "check", str(path)).stdout == "OK: 1 nodes in 1 groups\n"


def test_usage_errors_in_chinese_keep_their_exit_status() -> None:
    proc = fleetmon("--lang", "zh_CN", "report")
    assert proc.returncode == 1  # report's usage errors exit 1 (2 means "something critical"), --lang or not
    assert proc.stderr.startswith("用法：fleetmon report ")
    assert proc.stderr.endswith("\nfleetmon report：错误：缺少必需的参数：--db\n")
    proc = fleetmon("--lang", "zh_CN", "preflight", "--db", "x", "--nodes", "n1", "--days", "abc")
    assert proc.returncode == 1 and proc.stderr.endswith("fleetmon preflight：错误：参数 --days：无效的 float 值 'abc'\n")
    proc = fleetmon("--lang", "zh_CN", "export", "--format", "pdf", "--db", "x")
    assert proc.returncode == 2 and "参数 --format：无效的取值 'pdf'（可选：" in proc.stderr
    english = fleetmon("report")
    assert english.returncode == 1 and english.stderr.endswith(
        "fleetmon report: error: the following arguments are required: --db\n")


def test_the_demos_bad_values_are_refused_before_anything_starts() -> None:
    """Each value the demo cannot run with is one line, in the reader's language, before an agent starts (a
    negative --duration ran forever; a bad --interval let every simulated agent start and one exit)."""
    for flag, value, english, chinese in (
            ("--interval", "0", "--interval must be between 0.2 and 3600 seconds", "--interval 必须在 0.2 到 3600 秒之间"),
            ("--interval", "nan", "--interval must be between 0.2 and 3600 seconds", "--interval 必须在 0.2 到 3600 秒之间"),
            ("--duration", "-5", "--duration must be 0 (until the window closes) or a number of seconds",
             "--duration 必须为 0（直到关闭窗口）或秒数"),
            ("--backfill", "-1", "--backfill must be between 0 and 10080 minutes (7 days)",
             "--backfill 必须在 0 到 10080 分钟（7 天）之间"),
            ("--history-days", "-1", "--history-days must be between 0 and 366", "--history-days 必须在 0 到 366 之间"),
            ("--nodes", "0", "--nodes must be between 1 and 64", "--nodes 必须在 1 到 64 之间")):
        proc = fleetmon("demo", "--no-gui", flag, value)
        assert proc.returncode == 1 and proc.stderr == f"fleetmon demo: {english}\n", (flag, value, proc.stderr)
        proc = fleetmon("--lang", "zh_CN", "demo", "--no-gui", flag, value)
        assert proc.returncode == 1 and proc.stderr == f"fleetmon demo: {chinese}\n", (flag, value, proc.stderr)


def test_the_agent_refuses_nan() -> None:
    for flag in ("--interval", "--keep-days", "--max-buffer-mb"):
        proc = fleetmon("agent", flag, "nan")
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and flag in proc.stderr, (flag, proc.stderr)


def test_no_display_is_said_in_chinese() -> None:
    """`fleetmon gui` / `demo` without a display (ui/display_check.py speaks before Qt exists)."""
    env = {"DISPLAY": "", "WAYLAND_DISPLAY": "", "QT_QPA_PLATFORM": ""}
    proc = fleetmon("--lang", "zh_CN", "demo", env=env)
    assert proc.stderr == ("fleetmon demo: 没有可打开窗口的显示器（DISPLAY 和 WAYLAND_DISPLAY 都未设置）；请在虚拟 X 服务器下运行"
                           "（`xvfb-run fleetmon demo …`），或不开窗口运行：`fleetmon demo --no-gui`，或使用命令行报告"
                           "（`fleetmon report`、`fleetmon preflight`）\n"), proc.stderr
    english = fleetmon("gui", env=env)
    assert english.stderr == ("fleetmon gui: no display to open a window on (neither DISPLAY nor WAYLAND_DISPLAY is "
                              "set); run it under a virtual X server (`xvfb-run fleetmon gui …`), or use the "
                              "command-line reports (`fleetmon report`, `fleetmon preflight`)\n")
    assert proc.returncode == english.returncode != 0


def test_more_argparse_errors_in_chinese() -> None:
    proc = fleetmon("--lang", "zh_CN", "report", "--h")  # --help or --html
    assert proc.stderr.splitlines()[-1] == "fleetmon report：错误：选项有歧义：--h 可匹配 --help, --html", proc.stderr
    assert fleetmon("report", "--h").stderr.splitlines()[-1] == (
        "fleetmon report: error: ambiguous option: --h could match --help, --html")


def test_xid_parse_adds_the_meaning_and_action_in_chinese(tmp_path: Path) -> None:
    """`xid parse` prints JSON for scripts: every key and value as in English; a translated run adds only
    meaning_text and action_text (as report --json adds summary_text)."""
    import json

    log = tmp_path / "kern.log"
    log.write_text("NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"
                   "NVRM: GPU at PCI:0000:5e:00: GPU has fallen off the bus.\n", encoding="utf-8")
    english = fleetmon("xid", "parse", str(log))
    chinese = fleetmon("--lang", "zh_CN", "xid", "parse", str(log))
    assert english.returncode == chinese.returncode == 0, chinese.stderr
    en_rows = [json.loads(line) for line in english.stdout.splitlines()]
    zh_rows = [json.loads(line) for line in chinese.stdout.splitlines()]
    assert len(en_rows) == len(zh_rows) == 2 and all("meaning_text" not in r for r in en_rows)
    for en, zh in zip(en_rows, zh_rows):
        assert {k: v for k, v in zh.items() if not k.endswith("_text")} == en
    assert zh_rows[0]["meaning_text"] == "GPU 从总线上掉线（掉卡）", zh_rows[0]
    assert all(r["action_text"] != r["action"] and "节点" in r["action_text"] for r in zh_rows), zh_rows
