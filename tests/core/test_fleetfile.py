"""Tests for fleetmon.fleet (fleet-file loading, validation, importers, writer) and `fleetmon fleet` (fleetmon.cli.fleet)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from fleetmon.cli import fleet as fleetcli
from fleetmon.errors import ConfigError
from fleetmon.fleet import (
    DEFAULT_AGENT_PORT,
    Fleet,
    Group,
    NodeSpec,
    detect_format,
    groups_from_nodes,
    import_ansible_ini,
    import_hostlist,
    import_scontrol,
    load_fleet,
    parse_fleet,
    render_fleet_toml,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "fleet-file.md"

MINIMAL = """\
[[node]]
name = "gpu01"
url = "http://10.0.0.11:9414"
"""


def _marked_line(text: str) -> int:
    """1-based line of the `# <-` marker in a test document."""
    for number, line in enumerate(text.splitlines(), start=1):
        if "# <-" in line:
            return number
    raise AssertionError("test document has no '# <-' marker")


# ---------------------------------------------------------------------------
# Good files


def test_parse_fleet_minimal_uses_defaults() -> None:
    fleet = parse_fleet(MINIMAL)
    assert fleet.name is None
    assert fleet.poll_interval_s == 30
    assert fleet.timeout_s == 5
    assert fleet.concurrency == 64
    assert fleet.token_file is None
    assert fleet.tls_ca is None
    assert fleet.tls_verify is True
    assert fleet.raw_retention_days == 30
    assert fleet.thresholds == {}
    assert fleet.groups == {}
    assert fleet.nodes == (NodeSpec("gpu01", "http://10.0.0.11:9414"),)
    assert fleet.path == "<string>"
    assert fleet.warnings == ()


def test_parse_fleet_empty_document() -> None:
    fleet = parse_fleet("")
    assert fleet.nodes == ()
    assert fleet.groups == {}


def _docs_example() -> str:
    match = re.search(r"```toml\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.DOTALL)
    assert match, "docs/fleet-file.md has no ```toml block"
    return match.group(1)


def test_docs_example_parses() -> None:
    fleet = parse_fleet(_docs_example(), path="fleet-file.md")
    assert fleet.name == "lab"
    assert fleet.poll_interval_s == 30
    assert fleet.tls_verify is True
    assert fleet.thresholds["temperature_warning"] == 83.0
    assert fleet.groups["a100"] == Group(
        "a100", "535.161.08", "12.2", 8, "NVIDIA A100-SXM4-80GB"
    )
    assert [node.name for node in fleet.nodes] == ["gpu01", "gpu02", "gpu03", "login1"]
    assert fleet.node("gpu02").url == f"http://10.0.0.12:{DEFAULT_AGENT_PORT}"
    assert fleet.node("GPU01").tags == ("riser", "psu-b")
    assert [n.name for n in fleet.nodes_in_group("a100")] == ["gpu01", "gpu02"]
    assert fleet.nodes_in_group(fleet.groups["h100"]) == (fleet.node("gpu03"),)
    assert fleet.token_file_for(fleet.node("gpu03")) == "/etc/fleetmon/gpu03.token"
    assert fleet.token_file_for(fleet.node("gpu01")) == "/etc/fleetmon/token"
    assert fleet.node("login1").group is None


def test_fleet_node_unknown_raises_key_error() -> None:
    with pytest.raises(KeyError):
        parse_fleet(MINIMAL).node("gpu99")


@pytest.mark.parametrize(
    ("url", "normalised"),
    [
        ("http://10.0.0.11", "http://10.0.0.11:9414"),
        ("http://10.0.0.11/", "http://10.0.0.11:9414"),
        ("https://gpu01.example:443", "https://gpu01.example:443"),
        ("http://[fd00::11]", "http://[fd00::11]:9414"),
        ("http://proxy:8080/agents/gpu01/", "http://proxy:8080/agents/gpu01"),
        ("  http://gpu01:9500  ", "http://gpu01:9500"),
    ],
)
def test_node_url_normalised(url: str, normalised: str) -> None:
    fleet = parse_fleet(f'[[node]]\nname = "gpu01"\nurl = "{url}"\n')
    assert fleet.nodes[0].url == normalised


def test_implicit_group_without_defined_groups_is_silent() -> None:
    fleet = parse_fleet(MINIMAL + 'group = "batch"\n')
    assert fleet.groups == {"batch": Group("batch", implicit=True)}
    assert fleet.warnings == ()


def test_implicit_group_with_defined_groups_warns_once() -> None:
    text = """\
[[group]]
name = "a100"

[[node]]
name = "gpu01"
url = "http://gpu01"
group = "a10"   # <-

[[node]]
name = "gpu02"
url = "http://gpu02"
group = "a10"
"""
    fleet = parse_fleet(text, path="fleet.toml")
    assert fleet.groups["a10"].implicit
    assert not fleet.groups["a100"].implicit
    assert len(fleet.warnings) == 1
    warning = fleet.warnings[0]
    assert warning.startswith(f"fleet.toml:{_marked_line(text)}: node[0].group:")
    assert "did you mean 'a100'" in warning


def test_warnings_for_missing_token_file_and_duplicate_url(tmp_path: Path) -> None:
    token = tmp_path / "present.token"
    token.write_text("secret\n")
    path = tmp_path / "fleet.toml"
    path.write_text(
        """\
[fleet]
token_file = "missing.token"
tls_ca = "present.token"

[[node]]
name = "gpu01"
url = "http://gpu01"

[[node]]
name = "gpu02"
url = "http://gpu01:9414"
"""
    )
    fleet = load_fleet(path)
    assert fleet.token_file == str(tmp_path / "missing.token")
    assert fleet.tls_ca == str(token)
    assert len(fleet.warnings) == 2
    assert fleet.warnings[0].startswith(f"{path}:2: fleet.token_file: file ")
    assert fleet.warnings[1].startswith(f"{path}:11: node[1].url: same URL as the node at line 7")


def test_timeout_not_shorter_than_interval_warns() -> None:
    fleet = parse_fleet("[fleet]\npoll_interval_s = 5\ntimeout_s = 5\n")
    assert fleet.warnings and "fleet.timeout_s" in fleet.warnings[0]


def test_a_nodes_own_timeout_overrides_the_fleets() -> None:
    fleet = parse_fleet('[fleet]\ntimeout_s = 2\n\n[[node]]\nname = "far"\nurl = "ssh://far"\ntimeout_s = 20\n\n'
                        '[[node]]\nname = "near"\nurl = "http://near"\n')
    far, near = fleet.nodes
    assert (far.timeout_s, near.timeout_s) == (20.0, None)
    assert (fleet.timeout_for(far), fleet.timeout_for(near)) == (20.0, 2.0)
    assert fleet.warnings == ()
    slow = parse_fleet('[fleet]\npoll_interval_s = 10\n\n[[node]]\nname = "a"\nurl = "http://a"\ntimeout_s = 10\n')
    assert len(slow.warnings) == 1 and ":7: node[0].timeout_s: timeout (10 s) is not shorter" in slow.warnings[0]


@pytest.mark.parametrize("value", ["0", "-1", "601", '"5"', "nan", "true"])
def test_a_nodes_timeout_must_be_a_positive_number(value: str) -> None:
    with pytest.raises(ConfigError, match=r":4: node\[0\]\.timeout_s: must be"):
        parse_fleet(f'[[node]]\nname = "a"\nurl = "http://a"\ntimeout_s = {value}\n', path="f.toml")


def test_thresholds_stored_as_floats() -> None:
    fleet = parse_fleet("[thresholds]\ntemperature_warning = 80\npower_ratio = 0.9\n")
    assert fleet.thresholds == {"temperature_warning": 80.0, "power_ratio": 0.9}
    assert all(isinstance(v, float) for v in fleet.thresholds.values())


def test_line_numbers_survive_multiline_strings() -> None:
    text = '''\
[fleet]
name = """
[[node]]
url = "not a header"
"""

[[node]]
name = "gpu01"
url = "gopher://x"   # <-
'''
    with pytest.raises(ConfigError) as info:
        parse_fleet(text, path="f.toml")
    assert str(info.value).startswith(f"f.toml:{_marked_line(text)}: node[0].url:")


# ---------------------------------------------------------------------------
# Bad files: each must name the file, the line and the key.

BAD_FILES = [
    pytest.param(
        '[fleet]\npoll_interval_s = 30\nname = "lab   # <-\n\n[[node]]\n',
        "TOML syntax error",
        "Illegal character",
        id="syntax-unterminated-string",
    ),
    pytest.param(
        '[fleet]\nname = """lab\n\n# <-\n',
        "TOML syntax error",
        "Unterminated string at end of file",
        id="syntax-end-of-document",
    ),
    pytest.param(
        'poll = 3\n[fleet   # <-\nname = "x"\n',
        "TOML syntax error",
        "Expected ']' at the end of a table declaration",
        id="syntax-bad-header",
    ),
    pytest.param(
        "[fleet]\nconcurrency = = 3   # <-\n",
        "TOML syntax error",
        "Invalid value",
        id="syntax-invalid-value",
    ),
    pytest.param(
        "[fleet]\nname = 'a'\nname = 'b'   # <-\n",
        "TOML syntax error",
        "",
        id="syntax-duplicate-key",
    ),
    pytest.param(
        '[fleet]\nname = "lab"\nconcurrency = "64"   # <-\n',
        "fleet.concurrency",
        "must be an integer (got string '64')",
        id="wrong-type-string-for-int",
    ),
    pytest.param(
        "[fleet]\ntls_verify = 1   # <-\n",
        "fleet.tls_verify",
        "must be true or false",
        id="wrong-type-bool",
    ),
    pytest.param(
        "[fleet]\nconcurrency = true   # <-\n",
        "fleet.concurrency",
        "must be an integer (got boolean True)",
        id="bool-is-not-int",
    ),
    pytest.param(
        "[fleet]\npoll_interval_s = -5   # <-\n",
        "fleet.poll_interval_s",
        "must be >= 2 and <= 3600 (got -5)",
        id="negative-interval",
    ),
    pytest.param(
        "[fleet]\npoll_interval_s = 7200   # <-\n",
        "fleet.poll_interval_s",
        "<= 3600",
        id="interval-too-long",
    ),
    pytest.param(
        "[fleet]\ntimeout_s = 0   # <-\n",
        "fleet.timeout_s",
        "must be > 0",
        id="zero-timeout",
    ),
    pytest.param(
        "[fleet]\nraw_retention_days = 0   # <-\n",
        "fleet.raw_retention_days",
        "between 1 and",
        id="zero-retention",
    ),
    pytest.param(
        "[fleet]\npoll_interval_s = nan   # <-\n",
        "fleet.poll_interval_s",
        "finite",
        id="nan-interval",
    ),
    pytest.param(
        '[fleet]\nname = "lab"\npoll_intervall_s = 30   # <-\n',
        "fleet.poll_intervall_s",
        "unknown key (did you mean 'poll_interval_s'?)",
        id="unknown-key-fleet",
    ),
    pytest.param(
        '[fleet]\nname = "lab"\n\n[[nodes]]   # <-\nname = "gpu01"\n',
        "nodes",
        "unknown key (did you mean 'node'?)",
        id="unknown-key-root-table",
    ),
    pytest.param(
        'name = "lab"   # <-\n',
        "name",
        "unknown key",
        id="unknown-key-root",
    ),
    pytest.param(
        MINIMAL + "\n[[node]]\nname = \"gpu02\"\nurl = \"http://gpu02\"\ntag = ['x']   # <-\n",
        "node[1].tag",
        "did you mean 'tags'?",
        id="unknown-key-node",
    ),
    pytest.param(
        '[[group]]\nname = "a100"\nexpected_gpu = 8   # <-\n',
        "group[0].expected_gpu",
        "did you mean 'expected_gpus'?",
        id="unknown-key-group",
    ),
    pytest.param(
        MINIMAL + '\n[[node]]   # <-\nname = "gpu02"\n',
        "node[1]",
        "missing required key 'url'",
        id="missing-url",
    ),
    pytest.param(
        '[[node]]   # <-\nurl = "http://gpu02"\n',
        "node[0]",
        "missing required key 'name'",
        id="missing-name",
    ),
    pytest.param(
        MINIMAL + '\n[[node]]\nname = "gpu01"   # <-\nurl = "http://10.0.0.12"\n',
        "node[1].name",
        "duplicate node name 'gpu01' (lines 2 and 6)",
        id="duplicate-name",
    ),
    pytest.param(
        MINIMAL + '\n[[node]]\nname = "GPU01"   # <-\nurl = "http://10.0.0.12"\n',
        "node[1].name",
        "duplicate node name 'GPU01'",
        id="duplicate-name-ignores-case",
    ),
    pytest.param(
        '[[node]]\nname = "gpu01"\nurl = "ftp://x"   # <-\n',
        "node[0].url",
        "must start with http:// or https:// (got 'ftp://x')",
        id="bad-url-scheme",
    ),
    pytest.param(
        '[[node]]\nname = "gpu01"\nurl = "10.0.0.11:9414"   # <-\n',
        "node[0].url",
        "must start with http:// or https://",
        id="url-without-scheme",
    ),
    pytest.param(
        '[[node]]\nname = "gpu01"\nurl = "http://:9414"   # <-\n',
        "node[0].url",
        "must name a host",
        id="url-without-host",
    ),
    pytest.param(
        '[[node]]\nname = "gpu01"\nurl = "http://gpu01:99999"   # <-\n',
        "node[0].url",
        "invalid URL",
        id="url-bad-port",
    ),
    pytest.param(
        '[[node]]\nname = "gpu01"\nurl = "http://u:p@gpu01"   # <-\n',
        "node[0].url",
        "credentials",
        id="url-credentials",
    ),
    pytest.param(
        '[[node]]\nname = "gpu 01"   # <-\nurl = "http://gpu01"\n',
        "node[0].name",
        "host-like name",
        id="bad-node-name",
    ),
    pytest.param(
        '[[node]]\nname = "gpu01"\nurl = "http://gpu01"\ntags = "riser"   # <-\n',
        "node[0].tags",
        "must be an array of strings",
        id="tags-not-array",
    ),
    pytest.param(
        '[[node]]\nname = "gpu01"\nurl = "http://gpu01"\ntags = ["a", 3]   # <-\n',
        "node[0].tags[1]",
        "non-empty string",
        id="tag-not-string",
    ),
    pytest.param(
        '[[group]]\nname = "a100"\nexpected_cuda_driver = 12.2   # <-\n',
        "group[0].expected_cuda_driver",
        'quote it: "12.2"',
        id="cuda-version-as-float",
    ),
    pytest.param(
        '[[group]]\nname = "a100"\nexpected_gpus = -1   # <-\n',
        "group[0].expected_gpus",
        "between 0 and 1024",
        id="negative-gpus",
    ),
    pytest.param(
        '[[group]]\nname = "a100"\n\n[[group]]\nname = "a100"   # <-\n',
        "group[1].name",
        "duplicate group 'a100' (first defined at line 2)",
        id="duplicate-group",
    ),
    pytest.param(
        '[[group]]   # <-\nexpected_gpus = 8\n',
        "group[0]",
        "missing required key 'name'",
        id="group-without-name",
    ),
    pytest.param(
        '[thresholds]\ntemperature_warning = "hot"   # <-\n',
        "thresholds.temperature_warning",
        "must be a number (got string 'hot')",
        id="threshold-not-number",
    ),
    pytest.param(
        '[thresholds]\n"temp warning" = 80   # <-\n',
        "thresholds.temp warning",
        "identifier",
        id="threshold-key-not-identifier",
    ),
    pytest.param(
        'fleet = 3   # <-\n',
        "fleet",
        "must be a table",
        id="fleet-not-table",
    ),
    pytest.param(
        'node = "gpu01"   # <-\n',
        "node",
        "must be an array of tables",
        id="node-not-array",
    ),
    pytest.param(
        '[fleet]\nname = "x"\n\n[[node]]\nname = "gpu01"\nurl = "http://gpu01"\n\n'
        '[[node]]\nname = "gpu02"\n\n[[node]]\nname = "gpu03"\nurl = "smb://gpu03"   # <-\n',
        "node[2].url",
        "must start with http://",
        id="third-node-line",
    ),
]


@pytest.mark.parametrize(("text", "key", "fragment"), BAD_FILES)
def test_bad_file_message_names_file_line_and_key(
    tmp_path: Path, text: str, key: str, fragment: str
) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_fleet(path)
    message = str(info.value)
    line = _marked_line(text)
    expected = f"{path}:{line}: {key}"
    assert any(m.startswith(expected) for m in message.splitlines()), message
    assert fragment in message


def test_all_problems_reported_together_in_line_order() -> None:
    text = """\
[fleet]
poll_interval_s = 1
concurency = 3

[[node]]
name = "gpu01"
url = "ftp://gpu01"
"""
    with pytest.raises(ConfigError) as info:
        parse_fleet(text, path="fleet.toml")
    lines = str(info.value).splitlines()
    assert [line.split(": ")[0] for line in lines] == [
        "fleet.toml:2",
        "fleet.toml:3",
        "fleet.toml:7",
    ]


def test_load_fleet_missing_file_is_config_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match="nope.toml: cannot read fleet file"):
        load_fleet(path)


# ---------------------------------------------------------------------------
# Importers

HOSTS_TXT = """\
# GPU nodes, rack 1
gpu[01-03]
gpu[04-05]:9500      # newer agents
login1
10.0.0.21:9414
gpu02                # duplicate, ignored
"""

ANSIBLE_INI = """\
# inventory.ini
bastion ansible_host=203.0.113.5

[a100]
gpu[01:03] ansible_user=ubuntu
gpu04 ansible_host=10.0.0.14 ansible_port=2222 fleetmon_port=9600

[h100]
gpu-h[a:b]
gpu04

[cpu]
cpu01:2222

[gpu:children]
a100
h100

[gpu:vars]
fleetmon_port=9500

[all:vars]
ansible_python_interpreter=/usr/bin/python3
fleetmon_port=9414
"""

SCONTROL_TXT = """\
NodeName=gpu01 Arch=x86_64 CoresPerSocket=32
   CPUAlloc=0 CPUEfctv=128 CPUTot=128 CPULoad=0.52
   AvailableFeatures=ib,nvlink
   ActiveFeatures=ib,nvlink
   Gres=gpu:a100:8(S:0-1)
   NodeAddr=10.0.0.11 NodeHostName=gpu01 Version=23.02.7
   OS=Linux 5.15.0-91-generic #101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023
   RealMemory=1031000 AllocMem=0 FreeMem=1010000 Sockets=2 Boards=1
   State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A
   Partitions=a100,batch
   BootTime=2024-01-02T10:00:00 SlurmdStartTime=2024-01-02T10:01:00
   CfgTRES=cpu=128,mem=1031000M,billing=128,gres/gpu=8
   AllocTRES=

NodeName=gpu02 Arch=x86_64 CoresPerSocket=32
   Gres=gpu:a100:8(S:0-1)
   NodeAddr=10.0.0.12 NodeHostName=gpu02 Version=23.02.7
   State=DOWN+NOT_RESPONDING ThreadsPerCore=1
   Partitions=a100,batch
   Reason=Not responding [slurm@2024-03-01T12:00:00]

NodeName=gpu03 Arch=x86_64 CoresPerSocket=32
   Gres=gpu:h100:4,gpu:h100:4
   NodeAddr=gpu03.ib NodeHostName=gpu03
   Partitions=h100
   AvailableFeatures=(null)

NodeName=cpu01 Arch=x86_64 CoresPerSocket=32
   Gres=(null)
   NodeAddr=10.0.1.1 NodeHostName=cpu01
   Partitions=batch

NodeName=gpu04 Arch=x86_64
   Gres=gpu:2
   NodeHostName=gpu04
   Partitions=batch
"""

SCONTROL_ONELINE = (
    "NodeName=gpu01 Arch=x86_64 Gres=gpu:a100:8 NodeAddr=10.0.0.11 "
    "NodeHostName=gpu01 Partitions=a100 State=IDLE\n"
    "NodeName=gpu02 Arch=x86_64 Gres=gpu:a100:4 NodeAddr=10.0.0.12 "
    "NodeHostName=gpu02 Partitions=a100 State=IDLE\n"
)


def _summary(nodes: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return [(n["name"], n["address"], n["port"], n["group"], tuple(n["tags"])) for n in nodes]  # type: ignore[arg-type]


def test_import_hostlist() -> None:
    assert _summary(import_hostlist(HOSTS_TXT)) == [
        ("gpu01", "gpu01", None, None, ()),
        ("gpu02", "gpu02", None, None, ()),
        ("gpu03", "gpu03", None, None, ()),
        ("gpu04", "gpu04", 9500, None, ()),
        ("gpu05", "gpu05", 9500, None, ()),
        ("login1", "login1", None, None, ()),
        ("10.0.0.21", "10.0.0.21", 9414, None, ()),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("gpu01\ngpu[01-03\n", "line 2: hostlist"),
        ("gpu01:70000\n", "line 1: port 70000"),
    ],
)
def test_import_hostlist_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        import_hostlist(text)


def test_import_ansible_ini() -> None:
    assert _summary(import_ansible_ini(ANSIBLE_INI)) == [
        ("bastion", "203.0.113.5", 9414, None, ()),
        ("gpu01", "gpu01", 9500, "a100", ()),
        ("gpu02", "gpu02", 9500, "a100", ()),
        ("gpu03", "gpu03", 9500, "a100", ()),
        ("gpu04", "10.0.0.14", 9600, "a100", ("h100",)),
        ("gpu-ha", "gpu-ha", 9500, "h100", ()),
        ("gpu-hb", "gpu-hb", 9500, "h100", ()),
        ("cpu01", "cpu01", 9414, "cpu", ()),
    ]


@pytest.mark.parametrize(
    ("group", "names"),
    [
        ("gpu", ["gpu01", "gpu02", "gpu03", "gpu04", "gpu-ha", "gpu-hb"]),
        ("h100", ["gpu04", "gpu-ha", "gpu-hb"]),
        ("cpu", ["cpu01"]),
        ("all", ["bastion", "gpu01", "gpu02", "gpu03", "gpu04", "gpu-ha", "gpu-hb", "cpu01"]),
    ],
)
def test_import_ansible_group_filter(group: str, names: list[str]) -> None:
    assert [n["name"] for n in import_ansible_ini(ANSIBLE_INI, group_filter=group)] == names


def test_import_ansible_unknown_group() -> None:
    with pytest.raises(ValueError, match="no group 'tpu'"):
        import_ansible_ini(ANSIBLE_INI, group_filter="tpu")


@pytest.mark.parametrize(
    ("pattern", "hosts"),
    [
        ("gpu[01:03]", ["gpu01", "gpu02", "gpu03"]),
        ("gpu[1:10:4]", ["gpu1", "gpu5", "gpu9"]),
        ("db-[a:c]", ["db-a", "db-b", "db-c"]),
        ("r[1:2]n[1:2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
    ],
)
def test_import_ansible_host_ranges(pattern: str, hosts: list[str]) -> None:
    assert [n["name"] for n in import_ansible_ini(f"[g]\n{pattern}\n")] == hosts


def test_import_scontrol() -> None:
    nodes = import_scontrol(SCONTROL_TXT)
    assert _summary(nodes) == [
        ("gpu01", "10.0.0.11", None, "a100", ("a100", "ib", "nvlink")),
        ("gpu02", "10.0.0.12", None, "a100", ("a100",)),
        ("gpu03", "gpu03.ib", None, "h100", ("h100",)),
        ("cpu01", "10.0.1.1", None, "batch", ()),
        ("gpu04", "gpu04", None, "batch", ()),
    ]
    assert [n["gpus"] for n in nodes] == [8, 8, 8, None, 2]
    assert groups_from_nodes(nodes) == {
        "a100": {"name": "a100", "expected_gpus": 8},
        "h100": {"name": "h100", "expected_gpus": 8},
        "batch": {"name": "batch"},  # 0 and 2 GPUs: inconsistent
    }


def test_import_scontrol_one_line_format() -> None:
    nodes = import_scontrol(SCONTROL_ONELINE)
    assert [(n["name"], n["address"], n["gpus"]) for n in nodes] == [
        ("gpu01", "10.0.0.11", 8),
        ("gpu02", "10.0.0.12", 4),
    ]
    assert groups_from_nodes(nodes) == {"a100": {"name": "a100"}}


def test_import_scontrol_rejects_other_text() -> None:
    with pytest.raises(ValueError, match="no NodeName= records"):
        import_scontrol("gpu01\ngpu02\n")


@pytest.mark.parametrize(
    ("text", "fmt"),
    [(SCONTROL_TXT, "scontrol"), (SCONTROL_ONELINE, "scontrol"),
     (ANSIBLE_INI, "ansible"), ("gpu01 ansible_host=10.0.0.1\n", "ansible"),
     (HOSTS_TXT, "hosts"), ("[1-4]\n", "ansible")],
)
def test_detect_format(text: str, fmt: str) -> None:
    assert detect_format(text) == fmt


@pytest.mark.parametrize(
    ("importer", "text"),
    [
        (import_hostlist, HOSTS_TXT),
        (import_ansible_ini, ANSIBLE_INI),
        (import_scontrol, SCONTROL_TXT),
        (import_scontrol, SCONTROL_ONELINE),
    ],
)
def test_render_round_trips_through_parse_fleet(importer, text: str) -> None:  # type: ignore[no-untyped-def]
    nodes = importer(text)
    fleet = parse_fleet(render_fleet_toml(nodes, port=9999), path="rendered.toml")
    assert fleet.warnings == ()
    assert [n.name for n in fleet.nodes] == [n["name"] for n in nodes]
    for spec, node in zip(fleet.nodes, nodes):
        assert spec.group == node["group"]
        assert spec.tags == tuple(node["tags"])
        assert spec.url == f"http://{node['address']}:{node['port'] or 9999}"
    assert all(not group.implicit for group in fleet.groups.values())


def test_render_scontrol_groups_carry_expected_gpus() -> None:
    fleet = parse_fleet(render_fleet_toml(import_scontrol(SCONTROL_TXT)))
    assert fleet.groups["a100"].expected_gpus == 8
    assert fleet.groups["batch"].expected_gpus is None


def test_render_explicit_groups_and_ipv6() -> None:
    nodes = [{"name": "gpu01", "address": "fd00::1", "group": "a100", "tags": ['say "hi"']}]
    text = render_fleet_toml(
        nodes, [Group("a100", "535.161.08", "12.2", 8, "NVIDIA A100")], name="lab"
    )
    fleet = parse_fleet(text)
    assert fleet.name == "lab"
    assert fleet.groups["a100"] == Group("a100", "535.161.08", "12.2", 8, "NVIDIA A100")
    assert fleet.nodes[0].url == "http://[fd00::1]:9414"
    assert fleet.nodes[0].tags == ('say "hi"',)


# ---------------------------------------------------------------------------
# CLI functions


def _parse(adder, argv: list[str]) -> argparse.Namespace:  # type: ignore[no-untyped-def]
    parser = argparse.ArgumentParser()
    adder(parser)
    return parser.parse_args(argv)


def test_arguments_have_help() -> None:
    for adder in (fleetcli.add_import_arguments, fleetcli.add_check_arguments):
        parser = argparse.ArgumentParser()
        adder(parser)
        for action in parser._actions:
            if action.dest != "help":
                assert action.help, action.dest


def test_main_import_scontrol_to_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "nodes.txt"
    source.write_text(SCONTROL_TXT)
    args = _parse(fleetcli.add_import_arguments, ["--format", "scontrol", str(source)])
    assert fleetcli.main_import(args) == 0
    out = capsys.readouterr().out
    assert len(parse_fleet(out).nodes) == 5


def test_main_import_auto_to_file_then_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "inventory.ini"
    source.write_text(ANSIBLE_INI)
    output = tmp_path / "fleet.toml"
    args = _parse(
        fleetcli.add_import_arguments,
        [str(source), "--group", "h100", "--port", "9500", "-o", str(output)],
    )
    assert fleetcli.main_import(args) == 0
    assert "3 nodes in 2 groups" in capsys.readouterr().err
    check = _parse(fleetcli.add_check_arguments, [str(output)])
    assert fleetcli.main_check(check) == 0
    assert capsys.readouterr().out == "OK: 3 nodes in 2 groups\n"


def test_main_import_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("gpu[01-02]\n"))
    args = _parse(fleetcli.add_import_arguments, ["-"])
    assert fleetcli.main_import(args) == 0
    assert [n.name for n in parse_fleet(capsys.readouterr().out).nodes] == ["gpu01", "gpu02"]


@pytest.mark.parametrize(
    ("text", "message"),
    [("gpu[01-\n", "line 1: hostlist"), ("# nothing\n", "no hosts found")],
)
def test_main_import_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    source = tmp_path / "hosts.txt"
    source.write_text(text)
    assert fleetcli.main_import(_parse(fleetcli.add_import_arguments, [str(source)])) == 1
    assert message in capsys.readouterr().err


def test_main_check_ok_with_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text(_docs_example())
    assert fleetcli.main_check(_parse(fleetcli.add_check_arguments, [str(path)])) == 0
    captured = capsys.readouterr()
    assert captured.out == "OK: 4 nodes in 2 groups\n"
    assert "warning: " in captured.err  # the example's token files do not exist here


def test_main_check_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text('[[node]]\nname = "gpu01"\nurl = "ftp://x"\n')
    assert fleetcli.main_check(_parse(fleetcli.add_check_arguments, [str(path)])) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{path}:3: node[0].url: must start with http:// or https://" in captured.err


def test_fleet_is_frozen() -> None:
    fleet = parse_fleet(MINIMAL)
    with pytest.raises(AttributeError):
        fleet.name = "x"  # type: ignore[misc]
    assert isinstance(fleet, Fleet)


def test_render_writes_the_history_table_or_its_hint() -> None:
    nodes = [{"name": "gpu01", "address": "10.0.0.1"}]
    with_history = render_fleet_toml(nodes, history_prometheus="http://prom.lab:9090/prometheus")
    assert parse_fleet(with_history).history_prometheus == "http://prom.lab:9090/prometheus"
    hinted = render_fleet_toml(nodes)
    assert parse_fleet(hinted).history_prometheus is None  # the local store stays the default
    assert "# [history]" in hinted and "# prometheus = " in hinted


def test_import_cli_writes_history_prometheus(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("gpu01\ngpu02\n", encoding="utf-8")
    out = tmp_path / "fleet.toml"
    args = _parse(fleetcli.add_import_arguments,
                  [str(hosts), "-o", str(out), "--history-prometheus", "http://prom.lab:9090"])
    assert fleetcli.main_import(args) == 0
    assert load_fleet(out).history_prometheus == "http://prom.lab:9090"
    bad = _parse(fleetcli.add_import_arguments, [str(hosts), "-o", str(tmp_path / "x.toml"),
                                                  "--history-prometheus", "ftp://prom.lab"])
    assert fleetcli.main_import(bad) == 1 and not (tmp_path / "x.toml").exists()


@pytest.mark.parametrize(("text", "key"), [
    ('[[node]]\nname = "gpu01\\n"\nurl = "http://gpu01"\n', "node[0].name"),
    ('[[group]]\nname = "a100\\n"\n', "group[0].name"),
    ('[[node]]\nname = "gpu01"\nurl = "http://gpu01"\ngroup = "a100\\n"\n', "node[0].group"),
])
def test_a_trailing_newline_is_not_part_of_a_name(text: str, key: str) -> None:
    # re's "$" matches before a final newline; a name that ends in one reached hostlists and terminals.
    with pytest.raises(ConfigError, match=key.replace("[", r"\[").replace("]", r"\]")):
        parse_fleet(text, path="f.toml")


def test_slurm_table_and_slurm_name(tmp_path):
    from fleetmon.errors import ConfigError
    from fleetmon.fleet import load_fleet

    path = tmp_path / "fleet.toml"
    path.write_text('[slurm]\nname_pattern = "{short}"\nauto_drain = ["gpu-lost", "xid"]\nmax_fraction = 0.2\n\n'
                    '[[node]]\nname = "n1.example"\nurl = "http://h1"\nslurm_name = "gpu01"\n')
    fleet = load_fleet(path)
    assert fleet.slurm is not None and fleet.slurm.auto_drain == ("gpu-lost", "xid")
    assert fleet.slurm.max_fraction == 0.2 and fleet.slurm.name_pattern == "{short}" and fleet.slurm.conf is None
    assert fleet.nodes[0].slurm_name == "gpu01"
    no_table = tmp_path / "plain.toml"
    no_table.write_text('[[node]]\nname = "n1"\nurl = "http://h1"\n')
    assert load_fleet(no_table).slurm is None  # no [slurm]: the app offers no Slurm, nothing is drained
    for bad, message in (('[slurm]\nauto_drain = "gpu-lost"\n', "slurm.auto_drain: must be a list"),
                         ('[slurm]\nmax_fraction = 2\n', "slurm.max_fraction: must be > 0"),
                         ('[slurm]\nname_pattern = "{host}"\n', "slurm.name_pattern: only {name} and {short}"),
                         ('[slurm]\nname_pattern = "a b{name}"\n', "does not give a Slurm node name"),
                         ('[slurm]\nauto_drian = []\n', "did you mean 'auto_drain'"),
                         ('[[node]]\nname = "n1"\nurl = "http://h1"\nslurm_name = "n1;reboot"\n',
                          "node[0].slurm_name: must be one Slurm node name")):
        path.write_text(bad)
        with pytest.raises(ConfigError, match=re.escape(message)):
            load_fleet(path)
