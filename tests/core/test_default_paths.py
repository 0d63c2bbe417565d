"""`fleetmon gui` and `fleetmon collect` without paths: the default database and fleet file (fleetmon.paths).

Every test points XDG_DATA_HOME and XDG_CONFIG_HOME at tmp_path, so nothing touches the real home.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from fleetmon.cli import build_parser, main
from fleetmon.cli import gui as gui_cli
from fleetmon.paths import default_db_path, default_fleet_path


@pytest.fixture
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    data, config = tmp_path / "data", tmp_path / "config"
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))
    return data, config


def _write_fleet(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Port 1 on loopback refuses at once: the poll fails fast and is recorded as unreachable.
    path.write_text('[[node]]\nname = "gpu01"\nurl = "http://127.0.0.1:1"\n', encoding="utf-8")


def test_defaults_follow_the_xdg_directories(xdg: tuple[Path, Path]) -> None:
    data, config = xdg
    assert default_db_path() == data / "fleetmon" / "fleet.db"
    assert default_fleet_path() == config / "fleetmon" / "fleet.toml"


def test_without_platformdirs_the_xdg_rules_give_the_same_paths(xdg: tuple[Path, Path],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU node builds the same help without the app's dependencies installed."""
    data, config = xdg
    monkeypatch.setitem(sys.modules, "platformdirs", None)  # `import platformdirs` raises ImportError
    assert default_db_path() == data / "fleetmon" / "fleet.db"
    assert default_fleet_path() == config / "fleetmon" / "fleet.toml"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/ignored")
    assert default_db_path() == Path.home() / ".local" / "share" / "fleetmon" / "fleet.db"
    assert default_fleet_path() == Path.home() / ".config" / "fleetmon" / "fleet.toml"


@pytest.mark.parametrize("command", ["gui", "collect"])
def test_help_names_the_defaults(command: str, xdg: tuple[Path, Path], capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # argparse wraps at hyphens, which tmp_path has
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    data, config = xdg
    assert str(data / "fleetmon" / "fleet.db") in text
    assert str(config / "fleetmon" / "fleet.toml") in text


def test_collect_without_a_default_fleet_file_says_where_and_how(xdg: tuple[Path, Path],
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["collect", "--once"]) == 1
    err = capsys.readouterr().err
    fleet = xdg[1] / "fleetmon" / "fleet.toml"
    assert f"no fleet file at {fleet}" in err
    assert f"fleetmon fleet import HOSTS.txt -o {fleet}" in err
    assert not default_db_path().exists()


def test_collect_with_no_paths_writes_the_default_database(xdg: tuple[Path, Path],
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    _write_fleet(default_fleet_path())
    assert main(["collect", "--once"]) == 0
    assert "polled 1 nodes: 0 ok, 1 unreachable" in capsys.readouterr().out
    assert default_db_path().is_file()  # its folder was created too


def test_explicit_paths_still_win(xdg: tuple[Path, Path], tmp_path: Path) -> None:
    fleet, db = tmp_path / "mine.toml", tmp_path / "mine.db"
    _write_fleet(fleet)
    assert main(["collect", "--once", "--fleet", str(fleet), "--db", str(db)]) == 0
    assert db.is_file()
    assert not default_db_path().exists()


def _gui_args(*words: str) -> argparse.Namespace:
    return build_parser().parse_args(["gui", *words])


def test_gui_with_no_paths_uses_both_defaults(xdg: tuple[Path, Path]) -> None:
    _write_fleet(default_fleet_path())
    args = _gui_args()
    assert gui_cli.resolve_paths(args) is True
    assert args.db == str(default_db_path())
    assert args.fleet == str(default_fleet_path())
    assert default_db_path().parent.is_dir()


def test_gui_without_a_default_fleet_file_opens_without_collecting(xdg: tuple[Path, Path],
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    args = _gui_args()
    assert gui_cli.resolve_paths(args) is True
    assert args.fleet is None
    err = capsys.readouterr().err
    assert f"no fleet file at {default_fleet_path()}, so not collecting" in err
    assert "fleetmon fleet import" in err


def test_gui_with_an_explicit_db_stays_a_read_only_view_and_asks(xdg: tuple[Path, Path], tmp_path: Path) -> None:
    """The default fleet file is not read for another database, and that database is asked about."""
    _write_fleet(default_fleet_path())
    args = _gui_args("--db", str(tmp_path / "other.db"))
    assert gui_cli.resolve_paths(args) is False
    assert args.fleet is None and args.db == str(tmp_path / "other.db")


@pytest.mark.gui
def test_gui_default_database_is_created_quietly(xdg: tuple[Path, Path], qapp: object) -> None:
    from ui.app import open_checks

    args = _gui_args()
    gui_cli.resolve_paths(args)
    errors: list[str] = []
    # What gui_cli.run passes for the default database: yes without a dialog.
    opened = open_checks(args.db, args.fleet, None, confirm_create=lambda p: True, error=errors.append)
    assert opened is not None and not errors
    assert default_db_path().is_file()
