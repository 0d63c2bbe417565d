"""The shared vocabularies: one Severity, one GpuState, one hardware-throttle set,
one PCI bus-id normaliser, one token-file reader, and no second copy of any of them."""

from __future__ import annotations

import ast
import json
import re
import sqlite3
from pathlib import Path

import pytest

from fleetmon import fields
from fleetmon.errors import KnownError
from fleetmon.pci import normalize_bus_id
from fleetmon.records import Status
from fleetmon.tokens import MIN_TOKEN_LENGTH, TokenFileError, read_token_file
from fleetmon.vocab import GpuState, Severity, VocabularyError, severity_rank, worst_severity

REPO = Path(__file__).resolve().parents[2]
TOKEN = "0123456789abcdef-token"


# ---------------------------------------------------------------- severity

def test_severity_members_are_their_wire_strings() -> None:
    assert [s.value for s in Severity] == ["info", "warning", "critical"]
    assert Severity.CRITICAL == "critical" and f"{Severity.WARNING}" == "warning" and str(Severity.INFO) == "info"
    assert json.dumps({"s": Severity.CRITICAL}) == '{"s": "critical"}'
    conn = sqlite3.connect(":memory:")
    assert conn.execute("SELECT ?", (Severity.WARNING,)).fetchone() == ("warning",)


def test_one_rank_order() -> None:
    assert [s.rank for s in Severity] == [1, 2, 3]
    assert Severity.INFO.rank < Severity.WARNING.rank < Severity.CRITICAL.rank
    assert Severity.most_severe_first() == (Severity.CRITICAL, Severity.WARNING, Severity.INFO)
    assert severity_rank(None) == severity_rank("") == 0
    assert severity_rank("critical") == Severity.CRITICAL.rank


def test_parse_and_worst() -> None:
    assert Severity.parse("critical") is Severity.CRITICAL
    assert Severity.parse(Severity.INFO) is Severity.INFO
    for bad in ("notice", "careful", "ok", "", "Critical", " info", 3, None):
        with pytest.raises(VocabularyError, match=r"unknown severity .* \(expected one of: info, warning, critical\)"):
            Severity.parse(bad)  # type: ignore[arg-type]
    assert issubclass(VocabularyError, ValueError)
    assert worst_severity(["info", None, "critical", "warning"]) is Severity.CRITICAL
    assert worst_severity([None, ""]) is None


def test_every_user_of_severity_agrees() -> None:
    from fleetmon import xid
    from fleetmon.health.findings import SEVERITIES, Finding
    from ui import format as fmt

    assert SEVERITIES == xid.SEVERITIES == ("critical", "warning", "info")
    f = Finding("xid", "warning", "n1", None, 0.0, 0.0)
    assert f.severity is Severity.WARNING and f.rank == Severity.WARNING.rank
    with pytest.raises(ValueError, match="unknown severity"):
        Finding("xid", "notice", "n1", None, 0.0, 0.0)
    assert [fmt.severity_rank(s) for s in ("info", "warning", "critical", None)] == [1, 2, 3, 0]
    assert set(fmt.SEVERITY_COLORS) == set(Severity) and fmt.SEVERITY_COLORS.get("critical")


# ---------------------------------------------------------------- GPU state and reading status

def test_gpu_state() -> None:
    assert [s.value for s in GpuState] == ["ok", "lost", "gone", "missing"]
    assert GpuState.parse(None) is GpuState.OK and GpuState.parse("lost") is GpuState.LOST
    with pytest.raises(VocabularyError, match="unknown GPU state 'vanished'"):
        GpuState.parse("vanished")
    assert GpuState.for_rules("gone") is GpuState.MISSING
    assert GpuState.for_rules("disappeared") is GpuState.MISSING
    assert GpuState.for_rules("lost") is GpuState.LOST and GpuState.for_rules(None) is GpuState.OK


def test_records_use_the_enums_and_keep_the_wire() -> None:
    from fleetmon.records import GpuSample

    s = GpuSample(ts=1.0, uuid="GPU-a", index=0, status={"power_w": Status.FAILED})
    assert s.state is GpuState.OK
    assert json.loads(json.dumps(s.to_dict()))["state"] == "ok"
    assert json.dumps(s.to_dict()["status"]) == '{"power_w": "failed"}'
    assert f"{Status.GPU_LOST}" == "gpu_lost"


# ---------------------------------------------------------------- throttle reasons

def test_one_hardware_throttle_set() -> None:
    assert fields.HW_THROTTLE_REASONS == ("hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake")
    assert fields.HW_THROTTLE_REASONS == tuple(r.name for r in fields.THROTTLE_REASONS if r.hardware)
    assert "sw_power_cap" not in fields.HW_THROTTLE_REASONS  # how a busy, healthy GPU runs

    from storage.schema import CLEAN_CLOCK_THROTTLES

    assert CLEAN_CLOCK_THROTTLES is fields.HW_THROTTLE_REASONS


# ---------------------------------------------------------------- PCI bus ids

@pytest.mark.parametrize(("raw", "expected"), [
    ("00000000:3B:00.0", "0000:3b:00.0"),  # NVML
    ("0000:3b:00.0", "0000:3b:00.0"),  # kernel
    ("PCI:0000:38:00", "0000:38:00.0"),  # Xid line
    ("38:00", "0000:38:00.0"),
    ("0018:01:00", "0018:01:00.0"),
    (" 0000:CB:00.1\n", "0000:cb:00.1"),
    ("N/A", "n/a"),
])
def test_normalize_bus_id(raw: str, expected: str) -> None:
    assert normalize_bus_id(raw) == expected
    assert normalize_bus_id(expected) == expected


def test_agent_and_xid_parser_share_the_normaliser() -> None:
    from fleetmon import xid
    from fleetmon.agent.nvml import readers as nvml

    assert xid.normalize_pci is normalize_bus_id
    assert nvml.normalize_bus_id is normalize_bus_id


# ---------------------------------------------------------------- token files

def _token(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "token"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def test_token_reader_accepts_one_private_line(tmp_path: Path) -> None:
    assert read_token_file(_token(tmp_path, TOKEN + "\n")) == TOKEN
    assert read_token_file(str(_token(tmp_path, f"  {TOKEN}  ", 0o400))) == TOKEN


@pytest.mark.parametrize(("text", "mode", "message"), [
    (TOKEN, 0o644, "is readable by group or others (mode 0644); run: chmod 600"),
    (TOKEN, 0o640, "is readable by group or others"),
    ("", 0o600, "is empty"),
    ("\n \n", 0o600, "is empty"),
    ("short", 0o600, f"shorter than {MIN_TOKEN_LENGTH} characters"),
    (f"{TOKEN}\n{TOKEN}\n", 0o600, "whitespace inside the token"),
    (f"{TOKEN} {TOKEN}", 0o600, "whitespace inside the token"),
])
def test_token_reader_refuses(tmp_path: Path, text: str, mode: int, message: str) -> None:
    path = _token(tmp_path, text, mode)
    with pytest.raises(TokenFileError, match=re.escape(message)) as info:
        read_token_file(path)
    assert str(info.value).startswith(f"token file {path}")
    assert isinstance(info.value, KnownError)


def test_token_reader_missing_and_binary(tmp_path: Path) -> None:
    with pytest.raises(TokenFileError, match="cannot read it"):
        read_token_file(tmp_path / "missing")
    path = tmp_path / "binary"
    path.write_bytes(b"\xff\xfe" * 10)
    path.chmod(0o600)
    with pytest.raises(TokenFileError, match="not UTF-8"):
        read_token_file(path)


def test_agent_and_collector_share_the_reader() -> None:
    from fleetmon.agent import main
    from fleetmon.collector import poller

    assert main.read_token_file is read_token_file
    assert poller.read_token_file is read_token_file


# ---------------------------------------------------------------- no second copies

def _sources() -> list[Path]:
    return sorted(p for pkg in ("fleetmon", "storage", "ui") for p in (REPO / pkg).rglob("*.py"))


def _literal_dicts(tree: ast.AST) -> list[ast.Dict]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Dict)]


def test_no_other_severity_rank_table() -> None:
    """No module but vocab maps a severity name to a number (the old four rank tables)."""
    names = {"info", "warning", "critical", "notice", "careful"}
    for path in _sources():
        if path == REPO / "fleetmon" / "vocab.py":
            continue
        for d in _literal_dicts(ast.parse(path.read_text(encoding="utf-8"))):
            for k, v in zip(d.keys, d.values):
                if isinstance(k, ast.Constant) and k.value in names and isinstance(v, ast.Constant) \
                        and isinstance(v.value, int) and not isinstance(v.value, bool):
                    pytest.fail(f"{path.relative_to(REPO)}:{d.lineno} ranks severity {k.value!r} itself")


def test_no_other_hardware_throttle_list() -> None:
    """No module spells the hardware throttle set out again (a literal with two of its names)."""
    hw = set(fields.HW_THROTTLE_REASONS) | {"thr_" + r for r in fields.HW_THROTTLE_REASONS}
    for path in _sources():
        if path == REPO / "fleetmon" / "fields.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                found = {e.value for e in node.elts if isinstance(e, ast.Constant)} & hw
                assert len(found) < 2, f"{path.relative_to(REPO)}:{node.lineno} lists {sorted(found)}"


def test_one_definition_of_each_helper() -> None:
    """normalize_bus_id and read_token_file are defined once; the old private copies are gone."""
    wanted = {"normalize_bus_id": REPO / "fleetmon" / "pci.py", "normalize_pci": None,
              "read_token_file": REPO / "fleetmon" / "tokens.py", "_read_token": REPO / "fleetmon" / "collector" / "poller.py"}
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name in wanted:
                assert wanted[node.name] == path, f"{path.relative_to(REPO)} defines {node.name}"
