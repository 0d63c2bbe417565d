"""Tests for fleetmon.hostlist: Slurm hostlist expand/compress."""

from __future__ import annotations

import random

import pytest

from fleetmon import hostlist
from fleetmon.hostlist import compress, expand, sort_key


@pytest.mark.parametrize(
    ("expr", "hosts"),
    [
        ("", []),
        ("   ", []),
        ("gpu01", ["gpu01"]),
        ("gpu[01-03]", ["gpu01", "gpu02", "gpu03"]),
        ("gpu[01-03,07],node5", ["gpu01", "gpu02", "gpu03", "gpu07", "node5"]),
        ("gpu[8-10]", ["gpu8", "gpu9", "gpu10"]),
        ("gpu[08-10]", ["gpu08", "gpu09", "gpu10"]),
        ("gpu[098-101]", ["gpu098", "gpu099", "gpu100", "gpu101"]),
        (
            "rack[1-2]-gpu[1-2]",
            ["rack1-gpu1", "rack1-gpu2", "rack2-gpu1", "rack2-gpu2"],
        ),
        ("n[1-2]x", ["n1x", "n2x"]),
        ("[1-2]", ["1", "2"]),
        (" gpu[ 01 - 02 , 05 ] ,  node5 ", ["gpu01", "gpu02", "gpu05", "node5"]),
        ("a b\tc\nd", ["a", "b", "c", "d"]),
        ("a,,b,", ["a", "b"]),
        ("gpu[3,1]", ["gpu3", "gpu1"]),
        ("gpu[1,1]", ["gpu1", "gpu1"]),
        ("10.0.0.[1-2]", ["10.0.0.1", "10.0.0.2"]),
    ],
)
def test_expand(expr: str, hosts: list[str]) -> None:
    assert expand(expr) == hosts


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("gpu[01-03", "unbalanced '['"),
        ("gpu01-03]", "unbalanced ']'"),
        ("gpu[[1-2]]", "nested '['"),
        ("gpu[5-1]", "reversed range '5-1'"),
        ("gpu[]", "empty element"),
        ("gpu[1,,2]", "empty element"),
        ("gpu[a-c]", "is not a number"),
        ("gpu[1-2-3]", "is not a number"),
        ("gpu[1-]", "is not a number"),
        ("gpu[0-100000]", "more than 100000 hosts"),
        ("a[1-1000]b[1-1000]", "more than 100000 hosts"),
        ("a[1-60000],b[1-60000]", "more than 100000 hosts"),
    ],
)
def test_expand_rejects(expr: str, message: str) -> None:
    with pytest.raises(ValueError, match=r"hostlist .*") as info:
        expand(expr)
    assert message in str(info.value)
    assert repr(expr) in str(info.value)


def test_expand_accepts_exactly_max_hosts() -> None:
    assert len(expand(f"n[1-{hostlist.MAX_HOSTS}]")) == hostlist.MAX_HOSTS


@pytest.mark.parametrize(
    ("hosts", "expr"),
    [
        ([], ""),
        (["gpu01"], "gpu01"),
        (["gpu07", "gpu03", "gpu08"], "gpu[03,07-08]"),
        (["gpu1", "gpu2", "gpu3", "gpu10"], "gpu[1-3,10]"),
        (["gpu8", "gpu9", "gpu10"], "gpu[8-10]"),
        (["gpu09", "gpu10", "gpu11"], "gpu[09-11]"),
        (["gpu1", "gpu01"], "gpu[01,1]"),
        (["gpu2", "gpu2", "gpu1"], "gpu[1-2]"),
        (["login", "gpu2", "gpu1"], "gpu[1-2],login"),
        (["gpu", "gpu1", "gpu2"], "gpu,gpu[1-2]"),
        (["n1x", "n2x", "n3"], "n3,n[1-2]x"),
        (["rack1-gpu1", "rack1-gpu2", "rack2-gpu1"], "rack1-gpu[1-2],rack2-gpu1"),
        (["node10", "node9", "gpu1"], "gpu1,node[9-10]"),
        (["a099", "a100", "a101"], "a[099-101]"),
    ],
)
def test_compress(hosts: list[str], expr: str) -> None:
    assert compress(hosts) == expr
    assert compress(reversed(hosts)) == expr


@pytest.mark.parametrize("bad", ["", "a b", "a,b", "a[1]", "x]"])
def test_compress_rejects_unrepresentable_names(bad: str) -> None:
    with pytest.raises(ValueError, match="cannot put host name"):
        compress(["ok1", bad])


def _random_host(rng: random.Random) -> str:
    prefix = rng.choice(["gpu", "node", "rack1-gpu", "rack2-gpu", "a", "login", "x-"])
    if rng.random() < 0.1:
        return prefix.rstrip("-") or "h"
    width = rng.choice([0, 0, 2, 3])
    number = str(rng.randrange(0, 130))
    suffix = rng.choice(["", "", "", "-ib", "b"])
    return f"{prefix}{number.zfill(width)}{suffix}"


@pytest.mark.parametrize("seed", range(200))
def test_compress_round_trip(seed: int) -> None:
    rng = random.Random(seed)
    hosts = [_random_host(rng) for _ in range(rng.randrange(0, 60))]
    expr = compress(hosts)
    assert expand(expr) == sorted(set(hosts), key=sort_key)
    assert compress(expand(expr)) == expr


@pytest.mark.parametrize(
    "expr", ["gpu[01-03,07],node5", "rack[1-2]-gpu[1-4]", "gpu[8-12],gpu[098-101]"]
)
def test_expand_compress_expand(expr: str) -> None:
    hosts = expand(expr)
    assert sorted(expand(compress(hosts))) == sorted(set(hosts))


# -- names no hostlist can hold (issue 20, item 6): listed apart, never raised, in reports --------------------


def test_compress_lenient_lists_unwritable_names_apart() -> None:
    names = ["gpu1", "gpu2", "dgx 07", "a,b", "gpu[1]", "evil\x1b[2J", ""]
    text = hostlist.compress_lenient(names)
    assert text.startswith("gpu[1-2],")
    assert '"dgx 07"' in text and '"a,b"' in text and '"gpu[1]"' in text and '""' in text
    assert "\x1b" not in text and "\\x1b" in text
    assert hostlist.compress_lenient(["gpu1", "gpu2"]) == compress(["gpu1", "gpu2"])
    assert hostlist.compress_lenient([]) == ""
    assert hostlist.split_writable(names)[0] == ["gpu1", "gpu2"]


def test_report_hosts_never_fail_for_one_name() -> None:
    from fleetmon.health.render import hosts as _hosts

    assert _hosts(["gpu01", "gpu02", "gpu07"]) == "gpu[01-02,07]"
    assert _hosts(["gpu01", "dgx 07", "n,1"]) == 'gpu01, "dgx 07", "n,1"'
    assert _hosts(["x" * 500 + " y"]).endswith('…"')  # a long name is cut


def test_export_node_list_keeps_unwritable_names() -> None:
    from fleetmon.export import _hostlist

    assert _hostlist({"gpu1", "gpu2", "dgx 07"}) == 'gpu[1-2],"dgx 07"'
