"""Issue 20 (item 10, the ssh source): seeded mutations of real ``nvidia-smi -q -x`` documents.

The documents are the real ones in ../shared/fixtures/A_nvidia_smi_xml (see PROVENANCE.md
there). A seeded generator flips bytes, truncates, declares encodings (``x-bogus``, ``utf-16``
over UTF-8 bytes …), adds huge attributes, entities (a billion laughs, an external file),
deep nesting, hostile values (400 digits, ``inf``, ``²``, bidi overrides), duplicated or
dropped GPU blocks, and combines them.

* In-process, :data:`IN_PROCESS` mutations go through what an ssh poll does with ssh's
  output (:func:`fleetmon.collector.sources.parse_body` for ``SourceKind.SSH``, the client's
  checks of a source's capture, the NodePoll it becomes): each ends in a poll or in one of the
  errors the client turns into that node's one-line reason; nothing else may come out.
* Through real processes, :data:`THROUGH_SSH` mutations are served by a fake ``ssh`` first on
  PATH to real collector cycles (ssh nodes at the head of the fleet file, a real simulated agent
  last): every cycle stores the healthy node, every hostile node gets a one-line reason, no poll
  hangs and no ssh process is left.

Seeded (``FLEETMON_FUZZ_SEED``), bounded in time; the figures print with ``pytest -rP``.
``FLEETMON_FUZZ_SCALE`` multiplies both counts for a deeper run (``=3``: 2,400 in-process, about what the
suite ran before; tests/helpers/fuzz.py); ``FLEETMON_SSH_FUZZ_N`` sets the in-process count alone.
"""

from __future__ import annotations

import os
import random
import re
import resource
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fleetmon.collector.client import _HTTP_FAILURES, _check_capture
from fleetmon.collector.sources import FetchFailed, parse_body, source_poll
from fleetmon.records import NodePoll
from fleetmon.sim.fleet import make_node
from fleetmon.sources import SourceError, SourceKind
from fleetmon.text import printable
from helpers.fuzz import rounds
from storage.db import open_database, query

SEED = int(os.environ.get("FLEETMON_FUZZ_SEED", "20260520"))
IN_PROCESS = int(os.environ.get("FLEETMON_SSH_FUZZ_N", str(rounds(800))))
"""Mutations through the ssh source's parse and checks, in this process."""
IN_PROCESS_S = 45.0 * max(1.0, IN_PROCESS / 2500)
"""A bound against a hang, not a target: 2,500 take about 10 s on a quiet 2-core machine, 20 s on a busy one."""
THROUGH_SSH = rounds(100)
"""Mutations served by the fake ssh to real collector cycles (10 ssh nodes a cycle)."""
SSH_NODES = 10
NODE_FAILURES = (FetchFailed, SourceError, *_HTTP_FAILURES)
"""What the client's ssh poll turns into the node's one-line reason (client._poll_source)."""

ENCODINGS = ["x-bogus", "utf-16", "utf-16-le", "utf-32", "latin-1", "ascii", "cp1252", "utf-7", "", " ",
             "UTF-8\x00", "cp500", "idna", "rot13", "hex", "base64", "zlib", "mbcs", "utf-8-sig", "punycode",
             "undefined", "unicode_escape", "raw_unicode_escape", "uu", "bz2", "x" * 300, "euc-jp", "gb18030",
             "iso-2022-jp", "shift_jis", "utf_8", "UTF8", "koi8-r", "utf-16-be", "big5"]
VALUES = ["", " ", "N/A", "[N/A]", "[Not Supported]", "[Unknown Error]", "-1", "-0", "0", "1e999", "-1e999", "nan",
          "NaN W", "inf", "-inf", "Infinity", "9" * 400, "1" + "0" * 5000, "\u00b2", "\u0663\u0664", "0x10",
          "1_000", "+5", "12.5.3", "65535 MiB", "-5 W", "99999999999999999999 MiB", "1e308 W", "3.4e38 MHz",
          "\u202eevil\u202c", "&lt;script&gt;", "&amp;#27;[2J", "GPU-" + "f" * 5000, "Enabled" * 1000,
          "\ufeff42", "4\u200b2", "\U0001f4a5", "x" * 100_000, "Fri Aug  4 11:44:30 2446", "Mon Jan 01 00:00:00 1900",
          "Sun Feb 30 25:61:61 2023", "0000:zz:00.0", "00000000:1B:00.0" * 50, "Disabled", "Active", "Pending"]
ENTITY_TRICKS = [
    b'<!DOCTYPE nvidia_smi_log [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
    b'<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">]>',
    b'<!DOCTYPE nvidia_smi_log [<!ENTITY x SYSTEM "file:///etc/passwd">]>',
    b'<!DOCTYPE nvidia_smi_log SYSTEM "http://127.0.0.1:9/nvsmi.dtd">',
    b'<!DOCTYPE nvidia_smi_log [<!ENTITY % p SYSTEM "file:///etc/hostname"> %p;]>',
    b'<!DOCTYPE nvidia_smi_log [<!ENTITY q "&#27;[2J">]>',
    b'<!DOCTYPE nvidia_smi_log PUBLIC "-//x//y" "nvsmi_device_v12.dtd">',
    b'<!DOCTYPE nvidia_smi_log [<!ELEMENT nvidia_smi_log ANY><!ATTLIST gpu id CDATA "x">]>',
]
REFERENCES = [b"&x;", b"&q;", b"&d;", b"&#0;", b"&#27;", b"&#x110000;", b"&#xD800;", b"&#99999999999;", b"&undefined;",
              b"&#x202e;", b"&#x7f;", b"&#65;", b"&amp;", b"&#x1F4A5;"]


def _documents(shared: Path) -> list[tuple[str, bytes]]:
    """The real documents, and each cut to its first GPU (a parse costs about 1 ms per 10 KB here; the
    cut ones let the fuzz try more within its time, the whole ones keep the multi-GPU layouts)."""
    folder = shared / "A_nvidia_smi_xml"
    docs = [(p.name, p.read_bytes()) for p in sorted(folder.glob("*.xml"))]
    if not docs:
        pytest.skip(f"no nvidia-smi XML documents in {folder}")
    cut = []
    for name, doc in docs:
        first = doc.find(b"<gpu ")
        last = doc.rfind(b"</gpu>")
        if first >= 0 and doc.find(b"</gpu>") < last:
            cut.append((f"{name}#gpu0", doc[:doc.find(b"</gpu>") + 6] + doc[last + 6:]))
    return docs + cut * 3


# -- mutations: each takes (rng, document) and returns (label, bytes) --------------------------------------


def _flip(rng: random.Random, doc: bytes) -> tuple[str, bytes]:
    b = bytearray(doc)
    n = rng.choice([1, 1, 2, 5, 20, 200])
    for _ in range(n):
        i = rng.randrange(len(b))
        b[i] = rng.choice([b[i] ^ (1 << rng.randrange(8)), rng.randrange(256), 0, 0x1b, ord("<"), ord("&")])
    return f"flip{n}", bytes(b)


def _truncate(rng: random.Random, doc: bytes) -> tuple[str, bytes]:
    cut = rng.choice([0, 1, rng.randrange(len(doc)), len(doc) - rng.randrange(1, 40)])
    return "truncate", doc[:max(0, cut)]


def _prolog_end(doc: bytes) -> int:
    """Where the XML declaration ends (0 when there is none)."""
    end = doc.find(b"?>") if doc.startswith(b"<?xml") else -1
    return end + 2 if end >= 0 else 0


def _encoding(rng: random.Random, doc: bytes) -> tuple[str, bytes]:
    enc = rng.choice(ENCODINGS)
    decl = f'<?xml version="1.0" encoding="{enc}"?>'.encode("utf-8", "replace")
    body = doc[_prolog_end(doc):]
    if rng.random() < 0.2 and enc.startswith("utf-16"):  # declared and real: a valid document
        try:
            return f"encoding={enc}(real)", (decl.decode() + body.decode("utf-8")).encode(enc)
        except (UnicodeError, LookupError):
            pass
    return f"encoding={enc[:20]!r}", decl + body


def _huge_attribute(rng: random.Random, doc: bytes) -> tuple[str, bytes]:
    size = rng.choice([1_000, 1_000, 10_000, 100_000]) if rng.random() < 0.97 else rng.choice([1_000_000, 4_000_000])
    spots = [m.start() for m in re.finditer(rb"<[A-Za-z]", doc)]
    if not spots:
        return "attribute-none", doc
    i = rng.choice(spots)
    end = i + 1
    while end < len(doc) and (chr(doc[end]).isalnum() or doc[end] == ord("_")):
        end += 1
    attr = b' huge="' + rng.choice([b"A", b"9", b"&#65;"]) * (size // 5 + 1) + b'"'
    return f"attribute{size}", doc[:end] + attr + doc[end:]


def _entities(rng: random.Random, doc: bytes) -> tuple[str, bytes]:
    k = _prolog_end(doc)
    rest = doc[k:]
    if rest.lstrip().startswith(b"<!DOCTYPE"):  # the document's own (none of the real ones has one)
        rest = rest[rest.find(b">", rest.find(b"<!DOCTYPE")) + 1:]
    trick = rng.choice(ENTITY_TRICKS)
    ref = rng.choice(REFERENCES)
    spot = rest.find(b"</product_name>")
    if spot >= 0 and rng.random() < 0.8:
        rest = rest[:spot] + ref + rest[spot:]
    return f"entity{ENTITY_TRICKS.index(trick)}{ref.decode()}", doc[:k] + trick + rest


def _deep(rng: random.Random, doc: bytes) -> tuple[str, bytes]:
    depth = rng.choice([100, 1_000, 1_000, 3_000]) if rng.random() < 0.98 else rng.choice([50_000, 200_000])
    spot = doc.find(b"</gpu>")
    if spot < 0:
        spot = len(doc) // 2
    nest = b"<x>" * depth + b"1" + b"</x>" * depth
    if rng.random() < 0.3:
        nest = b"<x>" * depth  # never closed
    return f"deep{depth}", doc[:spot] + nest + doc[spot:]


def _value(rng: random.Random, doc: bytes) -> tuple[str, bytes]:
    spots = [m.start() for m in re.finditer(rb">[^<\r\n]", doc)]
    if not spots:
        return "value-none", doc
    out = doc
    n = rng.choice([1, 1, 3, 10, 50])
    for _ in range(n):
        i = rng.choice(spots)
        if i >= len(out):
            continue
        j = out.find(b"<", i + 1)
        if j < 0:
            continue
        value = rng.choice(VALUES).encode("utf-8")
        if b"&" in value and rng.random() < 0.5:
            value = value.replace(b"&", b"&amp;")
        out = out[:i + 1] + value + out[j:]
    return f"value{n}", out


def _gpus(rng: random.Random, doc: bytes) -> tuple[str, bytes]:
    start = doc.find(b"<gpu ")
    end = doc.rfind(b"</gpu>")
    if start < 0 or end < 0:
        return "gpus-none", doc
    block = doc[start:doc.find(b"</gpu>", start) + len(b"</gpu>")]
    # "many" parses every GPU before the count is refused (≈ 2 ms a GPU): drawn less often.
    how = rng.choices(["duplicate", "many", "drop", "unclosed", "renamed-root", "no-root"], [3, 1, 3, 2, 2, 2])[0]
    if how == "duplicate":
        return how, doc[:start] + block * 2 + doc[start:]
    if how == "many":
        if rng.random() < 0.9:  # many small GPUs, each its own UUID: the count limit
            n = 65 if rng.random() < 0.8 else rng.choice([300, 3000])
            small = b"".join(b'<gpu id="00000000:%02X:00.0"><product_name>X</product_name><uuid>GPU-%08d</uuid>'
                             b'</gpu>' % (i % 256, i) for i in range(n))
            return f"many{n}", doc[:start] + small + doc[start:]
        return "many-real65", doc[:start] + block * 65 + doc[start:]
    if how == "drop":
        return how, doc[:start] + doc[end + len(b"</gpu>"):]
    if how == "unclosed":
        return how, doc[:end] + doc[end + len(b"</gpu>"):]
    if how == "renamed-root":
        return how, doc.replace(b"nvidia_smi_log", b"nvidia_smi_lag")
    return how, doc[:doc.find(b"<nvidia_smi_log")] + block


def _noise(rng: random.Random, doc: bytes) -> tuple[str, bytes]:
    how = rng.choice(["bom", "nul", "garbage", "comment", "pi", "cdata", "empty", "spaces", "xml11", "trailing"])
    k = _prolog_end(doc)
    if how == "bom":
        return how, rng.choice([b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff"]) + doc
    if how == "nul":
        i = rng.randrange(len(doc))
        return how, doc[:i] + b"\x00" * rng.choice([1, 1000]) + doc[i:]
    if how == "garbage":
        return how, rng.randbytes(rng.choice([1, 100, 10_000]))
    if how == "comment":
        return how, doc[:k] + b"<!--" + b"-" * rng.choice([0, 1, 3]) + b"x" * 100_000 + b"-->" + doc[k:]
    if how == "pi":
        return how, doc[:k] + b"<?fleetmon " + b"\x1b[2J" * 10 + b"?>" + doc[k:]
    if how == "cdata":
        spot = max(doc.find(b"</product_name>"), 0)
        return how, doc[:spot] + b"<![CDATA[\x1b]0;owned\x07 ]]>" + doc[spot:]
    if how == "empty":
        return how, rng.choice([b"", b" \n\t", b"\x00"])
    if how == "spaces":
        return how, b" " * rng.choice([1, 1_000_000]) + doc
    if how == "xml11":
        return how, b'<?xml version="1.1"?>' + doc[k:].replace(b"</product_name>", b"&#27;[2J</product_name>", 1)
    return how, doc + rng.choice([b"<extra/>", b"\x00", b"</nvidia_smi_log>", b"trailing text"])


MUTATIONS: list[Callable[[random.Random, bytes], tuple[str, bytes]]] = [
    _flip, _truncate, _encoding, _huge_attribute, _entities, _deep, _value, _gpus, _noise]


def mutate(rng: random.Random, docs: list[tuple[str, bytes]]) -> tuple[str, bytes]:
    """One mutated document and its label (fixture: mutations)."""
    name, doc = rng.choice(docs)
    labels = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        if not 64 <= len(doc) <= 1 << 20:  # an earlier step left next to nothing, or a lot, to mutate
            break
        label, doc = rng.choice(MUTATIONS)(rng, doc)
        labels.append(label)
    return f"{name}:{'+'.join(labels)}", doc


# -- the in-process part ----------------------------------------------------------------------------------


def ssh_outcome(body: bytes, now: float) -> NodePoll | str:
    """What an ssh poll makes of ``body`` as ssh's output: the NodePoll, or the node's reason.

    The steps of ``client._poll_source`` after the command (parse_body, the capture checks, no
    GPU, source_poll); an exception it would not turn into the node's reason is raised.
    """
    try:
        capture = parse_body(SourceKind.SSH, body)
        _check_capture(capture, "nvidia-smi -q -x")
    except NODE_FAILURES as exc:
        return str(exc)
    if not capture.gpus:
        return "ssh: the answer describes no GPU"
    return source_poll(capture, "fuzzed", "ssh://fuzzed", None, now, 1.0)


def _bad_reason(reason: str) -> str | None:
    """Why ``reason`` is not a good one-line reason (None: it is)."""
    if not reason.strip():
        return "empty"
    if "\n" in reason or "\r" in reason:
        return "more than one line"
    if "Traceback" in reason:
        return "a traceback"
    if printable(reason) != reason:
        return "control characters"
    if len(reason) > 2000:
        return f"{len(reason)} characters"
    return None


# A document declaring encoding="unicode_escape" makes Python's codec warn about its backslashes.
@pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")
def test_mutated_documents_through_the_ssh_sources_parse_and_checks(shared_fixtures: Path) -> None:
    docs = _documents(shared_fixtures)
    rng = random.Random(SEED)
    tried = 0
    polls = 0
    reasons: Counter[str] = Counter()
    escaped: list[str] = []
    bad: list[str] = []
    t0, cpu0 = time.monotonic(), time.process_time()
    while tried < IN_PROCESS and time.monotonic() - t0 < IN_PROCESS_S:
        label, body = mutate(rng, docs)
        tried += 1
        try:
            outcome = ssh_outcome(body, time.time())
        except Exception as exc:  # an exception the ssh poll would not make the node's reason
            escaped.append(f"{label}: {exc.__class__.__name__}: {str(exc)[:120]}")
            continue
        if isinstance(outcome, NodePoll):
            polls += 1
            assert outcome.ok and outcome.gpus
            continue
        reasons[outcome.split(":")[0][:40]] += 1
        why = _bad_reason(outcome)
        if why:
            bad.append(f"{label}: {why}: {outcome[:200]!r}")
    took = time.monotonic() - t0
    print(f"seed {SEED}: {tried} mutations in {took:.1f} s ({time.process_time() - cpu0:.1f} s CPU), {polls} polls, {tried - polls - len(escaped)} "
          f"node errors, {len(escaped)} escaped; reasons {dict(reasons.most_common(8))}")
    kinds = Counter(e.split(": ")[1] for e in escaped)
    assert not escaped, (f"{len(escaped)} of {tried} escaped the node's poll ({dict(kinds)}):\n"
                         + "\n".join(escaped[:20]))
    assert not bad, "\n".join(bad[:20])
    assert tried >= IN_PROCESS, f"only {tried} mutations within {IN_PROCESS_S} s"


# -- through a fake ssh, real collector cycles ------------------------------------------------------------

FAKE_SSH = r"""#!/bin/sh
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
echo $$ >> '@DIR@/pids'
exec cat '@DIR@/'"$2"'.xml'
"""


@pytest.fixture
def fake_ssh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "fakessh"
    (root / "bin").mkdir(parents=True)
    script = root / "bin" / "ssh"
    script.write_text(FAKE_SSH.replace("@DIR@", str(root)))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    yield root


def _left(root: Path) -> list[int]:
    """Fake ssh processes (or members of their groups) still alive."""
    pgids = {int(x) for x in (root / "pids").read_text().split()} if (root / "pids").exists() else set()
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if fields[0] != "Z" and int(fields[2]) in pgids:
                out.append(int(entry.name))
    return out


@pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")
def test_mutated_documents_over_ssh_beside_a_healthy_agent(shared_fixtures: Path, tmp_path: Path,
                                                           fake_ssh: Path) -> None:
    from fleetmon.collector.poller import Collector
    from fleetmon.fleet import load_fleet

    docs = _documents(shared_fixtures)
    rng = random.Random(SEED + 1)
    healthy = make_node("healthy", gpus=2)
    healthy.serve(0.1)
    fleet_file = tmp_path / "fleet.toml"
    fleet_file.write_text("[fleet]\ntimeout_s = 5\n" + "".join(
        f'[[node]]\nname = "ssh{i:02d}"\nurl = "ssh://fuzz{i:02d}"\n' for i in range(SSH_NODES))
        + f'[[node]]\nname = "healthy"\nurl = "{healthy.url}"\n', encoding="utf-8")
    db = open_database(tmp_path / "fleet.db")
    tried = cycles = ok = 0
    lost: list[str] = []
    bad: list[str] = []
    slowest = 0.0
    try:
        collector = Collector(load_fleet(fleet_file), db, interval_s=30)
        while tried < THROUGH_SSH:
            labels = {}
            for i in range(SSH_NODES):
                label, body = mutate(rng, docs)
                (fake_ssh / f"fuzz{i:02d}.xml").write_bytes(body)
                labels[f"ssh{i:02d}"] = label
            tried += SSH_NODES
            t0 = time.monotonic()
            try:
                polls = collector.run_cycle(force=True)  # every hostile node polled every cycle
            except Exception as exc:  # the whole cycle lost: what the item 1 was about
                lost.append(f"cycle {cycles + 1}: {exc.__class__.__name__}: {str(exc)[:160]} "
                            f"(mutations {sorted(labels.values())})")
                cycles += 1
                continue
            slowest = max(slowest, time.monotonic() - t0)
            cycles += 1
            by_node = {p.node: p for p in polls}
            assert by_node["healthy"].ok, by_node["healthy"].error
            for name, label in labels.items():
                p = by_node[name]
                if p.ok:
                    ok += 1
                elif why := _bad_reason(p.error or ""):
                    bad.append(f"{label}: {why}: {(p.error or '')[:200]!r}")
        stored = query(db, "SELECT count(*) AS n FROM poll_log WHERE node = 'healthy' AND ok = 1")[0]["n"]
    finally:
        db.close()
        healthy.close()
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"seed {SEED + 1}: {tried} mutations over ssh in {cycles} cycles, {ok} stored, "
          f"{len(lost)} cycles lost, slowest cycle {slowest:.2f} s, peak RSS of the test process {peak_mib:.0f} MiB")
    assert not lost, "\n".join(lost)
    assert stored == cycles, f"the healthy node was stored in {stored} of {cycles} cycles"
    assert not bad, "\n".join(bad[:20])
    assert slowest < 3 * 5 + 5, slowest  # no poll ran past its deadline
    assert _left(fake_ssh) == []
    assert tried >= THROUGH_SSH

