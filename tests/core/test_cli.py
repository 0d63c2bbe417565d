"""The command line contract: every command and subcommand has --help."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fleetmon.cli import build_parser, main

COMMANDS = [["agent"], ["collect"], ["gui"], ["demo"], ["xid"], ["xid", "parse"], ["fleet"], ["fleet", "import"],
            ["fleet", "check"], ["report"], ["preflight"], ["export"]]


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_every_command_has_help(words, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*words, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: fleetmon " + " ".join(words))


def test_version(capsys):
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out.startswith("fleetmon ")


def test_no_command_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "usage:" in capsys.readouterr().out


def test_agent_refuses_public_bind_without_token(capsys, tmp_path):
    code = main(["agent", "--simulate", "healthy", "--bind", "0.0.0.0", "--port", "0",
                 "--buffer", str(tmp_path / "b.db")])
    assert code == 1
    err = capsys.readouterr().err
    assert "refusing to listen on 0.0.0.0 without authentication" in err and "--token-file" in err


def test_agent_refuses_world_readable_token(capsys, tmp_path):
    token = tmp_path / "token"
    token.write_text("x" * 32)
    token.chmod(0o644)
    code = main(["agent", "--simulate", "healthy", "--bind", "0.0.0.0", "--port", "0", "--token-file", str(token),
                 "--buffer", str(tmp_path / "b.db")])
    assert code == 1
    assert "readable by group or others" in capsys.readouterr().err


def test_collect_with_a_bad_fleet_file_names_file_and_line(tmp_path):
    fleet = tmp_path / "fleet.toml"
    fleet.write_text('[[node]]\nname = "gpu01"\nurl = "ftp://10.0.0.1"\n')
    proc = subprocess.run([sys.executable, "-m", "fleetmon", "collect", "--fleet", str(fleet), "--db",
                           str(tmp_path / "x.db"), "--once"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "fleet.toml:3" in proc.stderr and "url" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_parser_lists_the_contract_commands():
    text = build_parser().format_help()
    for name in ("report", "preflight", "export", "xid"):
        assert name in text
