"""A hostile or broken fleet file gives one line, never a traceback or a hang (issue 11, item 7)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from fleetmon.errors import ConfigError
from fleetmon.fleet import parse_fleet

NODE = '[[node]]\nname = "gpu01"\nurl = "http://10.0.0.11:9414"\n'


@pytest.mark.parametrize("text, line, words", [
    ("a = " + "[" * 100_000, 1, "arrays or tables more than 32 levels"),
    ("a = " + "[" * 500 + "1" + "]" * 500, 1, "arrays or tables more than 32 levels"),
    (NODE + "x = " + "{a = " * 500 + "1" + "}" * 500, 4, "arrays or tables more than 32 levels"),
    ("[fleet]\nname." + ".".join(["a"] * 100_000) + " = 1", 2, "dotted key of more than 32 parts"),
    ("[" + ".".join(["a"] * 100_000) + "]\nx = 1", 1, "dotted key of more than 32 parts"),
])
def test_deep_nesting_is_one_line(text: str, line: int, words: str) -> None:
    started = time.monotonic()
    with pytest.raises(ConfigError) as info:
        parse_fleet(text, path="deep.toml")
    assert time.monotonic() - started < 5
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"deep.toml:{line}: TOML nested too deeply")
    assert words in message


def test_depth_from_keys_and_arrays_together_is_caught_after_parsing() -> None:
    text = "a." + ".".join(["b"] * 30) + " = " + "[" * 30 + "]" * 30
    with pytest.raises(ConfigError, match=r"^deep.toml:1: a: nested more than 32 levels deep"):
        parse_fleet(text, path="deep.toml")


def test_brackets_and_dots_inside_strings_and_comments_are_not_nesting() -> None:
    noise = "[" * 200 + "." * 200
    text = (f'# {noise}\n[[node]]\nname = "gpu01"  # {noise}\nurl = "http://10.0.0.11:9414"\n'
            f"tags = ['{noise}', \"{noise}\", \"\"\"\n{noise}\n\"\"\", '''{noise}\n''']\n")
    fleet = parse_fleet(text)
    assert fleet.nodes[0].name == "gpu01" and set(fleet.nodes[0].tags) == {noise, f"{noise}\n"}


@pytest.mark.parametrize("command", [["fleet", "check", "{f}"], ["report", "--db", "{db}", "--fleet", "{f}"]])
def test_the_cli_prints_one_line_for_a_deep_fleet_file(tmp_path: Path, command: list[str]) -> None:
    fleet = tmp_path / "deep.toml"
    fleet.write_text("a = " + "[" * 100_000 + "\n", encoding="utf-8")
    args = [a.format(f=fleet, db=tmp_path / "none.db") for a in command]
    done = subprocess.run([sys.executable, "-m", "fleetmon", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert done.stderr.strip().count("\n") == 0 and "nested too deeply" in done.stderr
