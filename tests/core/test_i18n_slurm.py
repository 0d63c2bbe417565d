"""Slurm's own errors (`SlurmError`) in the reader's language: fleetmon's frame translated, the node name, the
program and Slurm's own message kept as they are; the English byte for byte as before (other tests compare it).

Through the real CLI where no cluster is needed (Slurm's commands absent from PATH, a name Slurm could not hold)
and through the real client running a program in place of ``sinfo`` (``bin_dir``) that fails, hangs or lists
other nodes, so no controller is needed; tests/integration/test_real_slurm.py has the real cluster."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from fleetmon import i18n
from fleetmon.slurm import SlurmClient, SlurmError, SlurmUnavailable

from helpers.cli import fleetmon


@pytest.fixture
def chinese() -> object:
    i18n.set_language("zh_CN")
    yield None
    i18n.set_language("en")


def _fleet(tmp_path: Path) -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text('[slurm]\ntimeout_s = 5\n\n[[node]]\nname = "gpu-a"\nurl = "http://127.0.0.1:9000"\n')
    return path


def test_slurm_not_installed_in_chinese_through_the_cli(tmp_path: Path) -> None:
    fleet, env = _fleet(tmp_path), {"PATH": str(tmp_path)}  # no sinfo on this PATH
    english = fleetmon("slurm", "status", "--fleet", str(fleet), env=env)
    assert english.stderr == "fleetmon slurm: Slurm unavailable: Slurm is not installed here: no 'sinfo' on PATH\n"
    proc = fleetmon("--lang", "zh_CN", "slurm", "status", "--fleet", str(fleet), env=env)
    assert proc.returncode == 1
    assert proc.stderr == "fleetmon slurm: Slurm 不可用：本机未安装 Slurm：PATH 中没有 'sinfo'\n"


def test_a_bad_node_name_in_chinese_through_the_cli_keeps_the_name(tmp_path: Path) -> None:
    fleet, db = _fleet(tmp_path), tmp_path / "fleet.db"
    proc = fleetmon("--lang", "zh_CN", "slurm", "drain", "gpu-a;id", "--reason", "x", "--db", str(db),
                    "--fleet", str(fleet))
    assert proc.returncode == 1
    assert proc.stderr == ("fleetmon slurm: drain gpu-a;id 失败：不是 Slurm 节点名：'gpu-a;id'"
                           "（只能含字母、数字、'.'、'_' 和 '-'）（已记录为失败）\n")


def _program(tmp_path: Path, body: str) -> str:
    """A ``sinfo`` in a folder of its own (the client's ``bin_dir``): a shell script doing ``body``."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    script = folder / "sinfo"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(folder)


@pytest.mark.parametrize(("body", "timeout_s", "kind", "english", "chinese_text"), [
    ("echo 'sinfo: error: Invalid node name specified' >&2; exit 1", 5.0, SlurmError,
     "sinfo: sinfo: error: Invalid node name specified", "sinfo：sinfo: error: Invalid node name specified"),
    ("exit 3", 5.0, SlurmError, "sinfo: exit status 3", "sinfo：退出码 3"),
    ("echo 'Unable to contact slurm controller (connect failure)' >&2; exit 1", 5.0, SlurmUnavailable,
     "sinfo: Unable to contact slurm controller (connect failure)",
     "sinfo：Unable to contact slurm controller (connect failure)"),
    ("exec sleep 30", 0.5, SlurmUnavailable, "slurmctld did not answer within 0.5 s (sinfo)",
     "slurmctld 在 0.5 秒内没有应答（sinfo）"),
])
def test_slurm_command_errors_in_chinese(tmp_path: Path, chinese: object, body: str, timeout_s: float,
                                         kind: type[SlurmError], english: str, chinese_text: str) -> None:
    client = SlurmClient(timeout_s=timeout_s, bin_dir=_program(tmp_path, body))
    with pytest.raises(kind) as caught:
        client.nodes()
    assert str(caught.value) == english
    assert i18n.message_of(caught.value) == chinese_text
    view = client.view()
    assert view.error == english and i18n.localized(view.error) == chinese_text


def test_a_node_slurm_does_not_know_in_chinese(tmp_path: Path, chinese: object) -> None:
    client = SlurmClient(bin_dir=_program(tmp_path, "echo 'gpu-a|idle|root|Unknown|none'"))
    assert set(client.nodes()) == {"gpu-a"}
    with pytest.raises(SlurmError) as caught:
        client.node("gpu-zz")
    assert str(caught.value) == ("Slurm does not know node 'gpu-zz' (not in sinfo's list; set slurm_name for it in "
                                 "the fleet file, or [slurm] name_pattern)")
    assert i18n.message_of(caught.value) == ("Slurm 不认识节点 'gpu-zz'（不在 sinfo 的列表中；请在 fleet 文件中为它设置 "
                                             "slurm_name，或设置 [slurm] name_pattern）")


def test_cannot_run_in_chinese_keeps_the_system_error(tmp_path: Path, chinese: object) -> None:
    folder = Path(_program(tmp_path, "exit 0"))
    (folder / "sinfo").chmod(0o644)  # there, but not executable
    if os.access(folder / "sinfo", os.X_OK):
        pytest.skip("running as a user who may execute anything")
    with pytest.raises(SlurmUnavailable) as caught:
        SlurmClient(bin_dir=str(folder)).nodes()
    assert str(caught.value) == "cannot run sinfo: Permission denied"
    assert i18n.message_of(caught.value) == "无法运行 sinfo：Permission denied"
