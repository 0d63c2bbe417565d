"""docs/cli.md is the CLI reference rendered from the argument parser: it must match the parser as it is.

Regenerate it with ``python -m fleetmon.cli.reference > docs/cli.md`` after
changing a command, a flag or a help text. The rendering must not depend on the
machine: the default paths (resolved from ``XDG_*`` and the home folder) show as
fixed placeholders, and the terminal width plays no part.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from fleetmon.cli import build_parser
from fleetmon.cli.reference import REGENERATE, render

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cli.md"


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """Every subcommand's parser below ``parser``, depth first."""
    found: list[argparse.ArgumentParser] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for p in action.choices.values():
                found += [p, *_parsers(p)]
    return found


def test_committed_reference_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        f"docs/cli.md is out of date with the argument parser: regenerate it with `{REGENERATE}` "
        f"(from the repository root, in the project's virtual environment) and commit it")


def test_rendering_does_not_depend_on_the_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Odd XDG folders, another home and a narrow terminal give the same text, without their paths in it."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "40")
    text = render()
    assert str(tmp_path) not in text
    assert "~/.local/share/fleetmon/fleet.db" in text
    assert "~/.config/fleetmon/fleet.toml" in text
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("COLUMNS", "250")
    assert render() == text


def test_every_command_and_flag_is_in_the_reference() -> None:
    text = render()
    parsers = _parsers(build_parser())
    assert {"fleetmon report", "fleetmon fleet import", "fleetmon xid parse"} <= {p.prog for p in parsers}
    for p in parsers:
        assert f"## `{p.prog}`" in text, p.prog
        for action in p._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}" in text, f"{p.prog} {flag}"


def test_module_prints_the_reference() -> None:
    out = subprocess.run([sys.executable, "-m", "fleetmon.cli.reference"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert out == render()
