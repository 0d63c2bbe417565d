"""The source registry (fleetmon.sources.SOURCES) and the SSH source's tool registry (fleetmon.sources.ssh_tools),
in process: every kind reachable by its schemes and read by its reader, every tool's command constant and safe,
and the reading of a tool's output (auto's marker, several documents, another tool's output, cut output)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from fleetmon.collector.poller import _token_policy
from fleetmon.collector.sources import LIMITS, ssh_argv
from fleetmon.sources import (
    SOURCES, SourceError, SourceKind, Token, Transport, answer_name, node_source, read_answer, source_of,
)
from fleetmon.sources.ssh_tools import (
    AUTO, AUTO_ORDER, MARKER, PART, TOOL_NAMES, TOOLS, read_output, remote_command, tool_label,
)

URLS = {SourceKind.AGENT: "https://gpu01:9414", SourceKind.DCGM: "dcgm+http://gpu01:9400/metrics",
        SourceKind.SSH: "ssh://ops@gpu01:22", SourceKind.CAPTURE: "file:///captures/n7.xml"}


def test_every_kind_is_one_entry_reached_by_its_schemes() -> None:
    assert set(SOURCES) == set(SourceKind)
    for kind, entry in SOURCES.items():
        assert entry.kind is kind
        for scheme in entry.schemes:
            url = scheme + ":" + URLS[kind].split(":", 1)[1]
            assert source_of(url).kind is kind, url
        assert node_source(URLS[kind]).note == entry.traits.status_note
        if entry.transport in (Transport.HTTP, Transport.SSH):  # a polled kind names a reader with both functions
            module = importlib.import_module(f"fleetmon.sources.{entry.reader}")
            assert callable(module.read_answer) and callable(module.answer_name)
        else:
            assert entry.reader == "" or entry.transport is Transport.AGENT
    with pytest.raises(SourceError, match="not a polled source"):
        read_answer(SourceKind.CAPTURE, b"", AUTO, LIMITS)
    assert answer_name(SourceKind.DCGM, AUTO, b"# HELP") == "/metrics"


def test_the_token_each_kind_gets_comes_from_the_registry() -> None:
    assert [_token_policy(URLS[k]) for k in (SourceKind.AGENT, SourceKind.DCGM, SourceKind.SSH)] == [
        Token.FLEET, Token.OWN, Token.NONE]
    assert _token_policy("gopher://x") is Token.FLEET  # no source takes it: the poll fails before any request


def test_each_tool_runs_a_constant_command() -> None:
    assert TOOL_NAMES == (AUTO, "nvidia-smi", "amd-smi", "rocm-smi", "hy-smi", "npu-smi", "hl-smi", "mthreads-gmi")
    assert set(AUTO_ORDER) == set(TOOLS)
    assert remote_command("nvidia-smi").argv == ("nvidia-smi", "-q", "-x")  # as the ssh source always ran it
    assert remote_command("rocm-smi").argv == ("rocm-smi", "--showallinfo", "--json")
    for tool in TOOL_NAMES:
        argv = remote_command(tool).argv
        if argv[0] == "sh":  # one single-quoted word for the login shell, nothing in it a shell would read
            assert argv[1] == "-c" and argv[2].startswith("'") and argv[2].endswith("'")
            assert not any(c in argv[2][1:-1] for c in "'!\\\n\r"), tool
        spec = source_of("ssh://ops@gpu01:2222")
        assert ssh_argv(spec, 5, None, argv)[-len(argv) - 2:] == ["--", "gpu01", *argv]
    with pytest.raises(SourceError, match="unknown ssh tool 'rm -rf /'"):
        remote_command("rm -rf /")


def test_auto_names_its_tool_and_output_without_the_marker_is_nvidia_smis(shared_fixtures: Path) -> None:
    doc = (shared_fixtures / "A_nvidia_smi_xml" / "telegraf_a100-sxm4-v12.xml").read_bytes()
    assert read_output(doc, AUTO).gpus[0].name == "NVIDIA A100-SXM4-80GB"  # a key restricted to nvidia-smi -q -x
    assert read_output(f"{MARKER} nvidia-smi\n".encode() + doc, AUTO).gpus[0].name == "NVIDIA A100-SXM4-80GB"
    assert tool_label(AUTO, b"<?xml") == "nvidia-smi" and tool_label(AUTO, f"{MARKER} npu-smi\n".encode()) == "npu-smi"
    assert answer_name(SourceKind.SSH, AUTO, f"{MARKER} amd-smi\n".encode()) == "amd-smi static/metric --json"
    with pytest.raises(SourceError, match="the node ran npu-smi, the fleet file names amd-smi"):
        read_output(f"{MARKER} npu-smi\n".encode(), "amd-smi")
    with pytest.raises(SourceError, match="no vendor tool on the node"):
        read_output(f"{MARKER} none\n".encode(), AUTO)
    with pytest.raises(SourceError, match="unknown tool"):
        read_output(f"{MARKER} \x1b[2Jevil\n".encode(), AUTO)
    with pytest.raises(SourceError, match="nvidia-smi printed nothing"):
        read_output(b"  \n", AUTO)


def test_several_documents_are_read_apart_and_merged(shared_fixtures: Path) -> None:
    static = (shared_fixtures / "F_other_vendors" / "amd" / "dell-ai_amd_smi_static_json_root.json").read_bytes()
    metric = json.dumps([{"gpu": 0, "temperature": {"hotspot": {"value": 83, "unit": "C"}}}]).encode()
    out = f"{PART} static\n".encode() + static + f"\n{PART} metric\n".encode() + metric
    c = read_output(out, "amd-smi")
    assert (len(c.gpus), c.vendor, c.samples[0].values["temp_c"]) == (8, "amd", 83.0)
    with pytest.raises(SourceError, match="ends before its metric document"):
        read_output(f"{PART} static\n".encode() + static[:5000], "amd-smi")
    with pytest.raises(SourceError, match="output before its first document"):
        read_output(b"Welcome to node 7\n" + out, "amd-smi")
    with pytest.raises(SourceError, match="not static, metric"):
        read_output(f"{PART} metric\n".encode() + metric + f"\n{PART} static\n".encode() + static, "amd-smi")
