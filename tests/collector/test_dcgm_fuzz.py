"""Issue 20, item 10 (dcgm part): seeded mutations of the real dcgm-exporter scrapes in
../shared/fixtures/C_dcgm_exporter through the dcgm source.

* :func:`test_mutated_scrapes_through_the_reader`: at least :data:`TARGET` mutations (byte flips,
  truncation, line duplication, values replaced by inf/nan/huge/negative/garbage, label mangling, huge
  lines, invalid UTF-8, scrapes concatenated, GPUs multiplied) through the client's reader
  (``parse_body`` with the collector's limits, then the same checks as an agent's answer). Each either
  reads or fails with a documented one-line error (SourceError, BadAnswer); anything else fails the test
  with the seed and index to replay it.
* :func:`test_mutated_scrapes_beside_a_real_agent_in_real_cycles`: :data:`HTTP_TARGET` of them served by
  fake exporters on 127.0.0.1 beside a real simulated agent, polled by the real collector into a real
  SQLite file: the healthy node's rows land in every cycle and every cycle ends.

``FLEETMON_FUZZ_SEED`` replays another seed; ``FLEETMON_FUZZ_SCALE`` multiplies both counts for a deeper
run (``=3``: 2,700 and 300, about what the suite ran before; tests/helpers/fuzz.py). The figures are printed
(``-rP``).
"""

from __future__ import annotations

import os
import random
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from fleetmon.collector.client import BadAnswer, _read_capture
from fleetmon.collector.poller import Collector
from fleetmon.fleet import load_fleet
from fleetmon.sim.fleet import make_node
from fleetmon.sources import SourceError, SourceKind
from helpers.fake_dcgm import FakeExporter
from helpers.fuzz import rounds
from storage.db import open_database, query

SEED = int(os.environ.get("FLEETMON_FUZZ_SEED", "20260611"))
TARGET = rounds(900)
HTTP_TARGET = rounds(100)
HOSTILE_PER_CYCLE = 10

VALUES = ["+Inf", "-Inf", "Inf", "NaN", "nan", "1e400", "-1e400", "1e308", "-1e308", "9" * 400, "-" + "9" * 400,
          "9" * 5000, "-1", "-40", "-99999999999999999", "0", "0.0", "-0", "1e15", "1e16", "4294967296",
          "18446744073709551616", "0x10", "1_000", "", "abc", "1e", "--1", "1.2.3", "٣", "½", "\x00", "1 2 3",
          "12 1700000000000", "12 notatime", "\u00a0"]
LABEL_VALUES = ["", "²", "9" * 5000, "-1", "1023", "1024", "99999999", "\\\"", "\\", "\\n", "\x1b[31mred\x1b[0m",
                "\x07\x00", "GPU-" + "f" * 200, "a" * 300, "😀" * 50, "\u202e", "GPU-1\",gpu=\"2", "x\"y", "0"]


def fixtures(shared: Path) -> dict[str, bytes]:
    folder = shared / "C_dcgm_exporter"
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix in (".prom", ".txt")}


def _lines(body: bytes) -> list[bytes]:
    return body.split(b"\n")


def _samples(lines: list[bytes]) -> list[int]:
    return [i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith(b"#")]


def flip_bytes(body: bytes, rng: random.Random, other: bytes) -> bytes:
    data = bytearray(body)
    for _ in range(rng.choice([1, 2, 5, 20])):
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def truncate(body: bytes, rng: random.Random, other: bytes) -> bytes:
    return body[:rng.randrange(len(body) + 1)]


def duplicate_lines(body: bytes, rng: random.Random, other: bytes) -> bytes:
    lines = _lines(body)
    i = rng.randrange(len(lines))
    lines[i:i + 1] = [lines[i]] * rng.choice([2, 3, 50, 1000])
    return b"\n".join(lines)


def replace_value(body: bytes, rng: random.Random, other: bytes) -> bytes:
    lines = _lines(body)
    picks = _samples(lines)
    for i in rng.sample(picks, min(len(picks), rng.choice([1, 1, 3]))):
        head, _, _ = lines[i].rstrip().rpartition(b" ")
        lines[i] = head + b" " + rng.choice(VALUES).encode()
    return b"\n".join(lines)


_LABEL = re.compile(rb'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')


def mangle_label(body: bytes, rng: random.Random, other: bytes) -> bytes:
    lines = _lines(body)
    picks = [i for i in _samples(lines) if b"{" in lines[i]]
    if not picks:
        return body
    i = rng.choice(picks)
    labels = list(_LABEL.finditer(lines[i]))
    if not labels:
        return body
    m = rng.choice(labels)
    kind = rng.randrange(6)
    if kind == 0:  # the value
        new = m.group(1) + b'="' + rng.choice(LABEL_VALUES).encode() + b'"'
    elif kind == 1:  # the name
        new = rng.choice([b"", b"9x", b"gpu", b"UUID", b"GPU_I_ID", b"a-b", b"\xff"]) + b'="' + m.group(2) + b'"'
    elif kind == 2:  # an unclosed quote
        new = m.group(1) + b'="' + m.group(2)
    elif kind == 3:  # the label twice
        new = m.group(0) + b"," + m.group(0)
    elif kind == 4:  # no braces
        lines[i] = lines[i].replace(b"{", b" ", 1)
        return b"\n".join(lines)
    else:  # many labels
        new = m.group(0) + b"".join(b',l%d="v"' % k for k in range(rng.choice([10, 500])))
    lines[i] = lines[i][:m.start()] + new + lines[i][m.end():]
    return b"\n".join(lines)


def huge_line(body: bytes, rng: random.Random, other: bytes) -> bytes:
    lines = _lines(body)
    n = rng.choice([1000, 60_000, 70_000, 300_000])
    kind = rng.randrange(5)
    if kind == 0:
        line = b'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-x",modelName="' + b"M" * n + b'"} 40'
    elif kind == 1:
        line = b"DCGM_FI_" + b"X" * n + b' {gpu="0"} 1'
    elif kind == 2:
        line = b'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="' + b"\\\"" * (n // 2)  # never closed
    elif kind == 3:
        line = b"DCGM_FI_DEV_GPU_TEMP{" + b'a="b",' * (n // 6)  # never closed
    else:
        line = b"# HELP DCGM_FI_DEV_GPU_TEMP " + b"h" * n
    lines.insert(rng.randrange(len(lines) + 1), line)
    return b"\n".join(lines)


def garbage_lines(body: bytes, rng: random.Random, other: bytes) -> bytes:
    lines = _lines(body)
    junk = rng.choice([b"{", b"}", b"\x00" * 10, bytes(rng.randrange(256) for _ in range(40)), b"\xff\xfe\xfd",
                       b"=", b'"', b"# TYPE", b"# TYPE x", b"x", b"x y z w", b"\r", b"\t\t", b"\x1b[2J"])
    lines.insert(rng.randrange(len(lines) + 1), junk)
    return b"\n".join(lines)


def concatenate(body: bytes, rng: random.Random, other: bytes) -> bytes:
    return body + rng.choice([b"", b"\n"]) + other


def many_gpus(body: bytes, rng: random.Random, other: bytes) -> bytes:
    n = rng.choice([9, 64, 65, 200])
    return b"".join(b'DCGM_FI_DEV_GPU_TEMP{gpu="%d",UUID="GPU-%08x-0000-4000-8000-000000000000"} 40\n' % (i, i)
                    for i in range(n))


def many_migs(body: bytes, rng: random.Random, other: bytes) -> bytes:
    n = rng.choice([3, 64, 65])
    return b"".join(b'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",GPU_I_ID="%d",GPU_I_PROFILE="1g.5gb"} 40\n' % i
                    for i in range(n))


MUTATIONS: dict[str, Callable[[bytes, random.Random, bytes], bytes]] = {
    f.__name__: f for f in (flip_bytes, truncate, duplicate_lines, replace_value, mangle_label, huge_line,
                            garbage_lines, concatenate, many_gpus, many_migs)}


MAX_MUTATED_BYTES = 2 * 1024 * 1024
"""Mutations compound (a 300,000-character line duplicated 2,000 times): a body is cut here. Scrapes up to
the collector's 16 MiB cap are test_dcgm_limits.py's."""


def mutate(rng: random.Random, bodies: list[bytes]) -> tuple[str, bytes]:
    body = rng.choice(bodies)
    names = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        name = rng.choice(list(MUTATIONS))
        body = MUTATIONS[name](body, rng, rng.choice(bodies))[:MAX_MUTATED_BYTES]
        names.append(name)
    return "+".join(names), body


def read(body: bytes) -> str | None:
    """None when the scrape reads, else the one-line error; anything undocumented propagates."""
    try:
        _read_capture(SourceKind.DCGM, body, "/metrics")
        return None
    except (SourceError, BadAnswer) as exc:
        return str(exc)


def test_mutated_scrapes_through_the_reader(shared_fixtures: Path) -> None:
    bodies = list(fixtures(shared_fixtures).values())
    assert len(bodies) >= 3
    rng = random.Random(SEED)
    kinds: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    slowest = (0.0, "")
    t0 = time.monotonic()
    for k in range(TARGET):
        name, body = mutate(rng, bodies)
        started = time.monotonic()
        try:
            error = read(body)
        except Exception as exc:  # noqa: BLE001 - the point: nothing else may come out
            pytest.fail(f"mutation {k} ({name}, FLEETMON_FUZZ_SEED={SEED}) raised {exc.__class__.__name__}: {exc}")
        took = time.monotonic() - started
        slowest = max(slowest, (took, name))
        kinds[name.split("+")[0]] += 1
        if error is None:
            outcomes["read"] += 1
        else:
            assert "\n" not in error and "\r" not in error and len(error) < 600, (k, name, error)
            assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", error), (k, name, error)  # printable
            outcomes[error.split(":")[0] if error.startswith("dcgm") else "checks"] += 1
    elapsed = time.monotonic() - t0
    print(f"\ndcgm reader fuzz: {TARGET} mutations (seed {SEED}) in {elapsed:.1f} s, slowest {slowest[0]:.2f} s "
          f"({slowest[1]}); outcomes {dict(outcomes)}; first mutation {dict(kinds)}")
    assert sum(outcomes.values()) == TARGET
    assert outcomes["read"] > 0 and sum(v for o, v in outcomes.items() if o != "read") > 0


def test_mutated_scrapes_beside_a_real_agent_in_real_cycles(shared_fixtures: Path, tmp_path: Path) -> None:
    bodies = list(fixtures(shared_fixtures).values())
    rng = random.Random(SEED + 1)
    healthy = make_node("healthy", gpus=2)
    healthy.serve(0.1)
    exporters = [FakeExporter() for _ in range(HOSTILE_PER_CYCLE)]
    try:
        text = "[fleet]\ntimeout_s = 2\npoll_interval_s = 30\n"
        for k, e in enumerate(exporters):
            text += f'[[node]]\nname = "dcgm{k}"\nurl = "{e.url}"\n'
        text += f'[[node]]\nname = "healthy"\nurl = "{healthy.url}"\n'
        (tmp_path / "fleet.toml").write_text(text, encoding="utf-8")
        db = open_database(tmp_path / "fleet.db")
        collector = Collector(load_fleet(tmp_path / "fleet.toml"), db)
        served = 0
        cycles = 0
        failed = 0
        t0 = time.monotonic()
        while served < HTTP_TARGET:
            for k, e in enumerate(exporters):
                _, body = mutate(rng, bodies)
                # each exporter its own cards: the GPUs of one mutated copy never collide with another's
                e.body = re.sub(rb"GPU-([0-9a-fA-F]{2})", lambda m: b"GPU-%02d" % k, body)
            healthy.add_minute()
            polls = {p.node: p for p in collector.run_cycle(force=True)}
            cycles += 1
            served += len(exporters)
            assert polls["healthy"].ok, (cycles, polls["healthy"].error)
            failed += sum(1 for k in range(len(exporters)) if not polls[f"dcgm{k}"].ok)
            for k in range(len(exporters)):
                error = polls[f"dcgm{k}"].error or ""
                assert "\n" not in error, error
            rows = query(db, "SELECT count(*) AS n FROM samples s JOIN gpus g ON g.id = s.gpu_id "
                             "WHERE g.node = 'healthy'")[0]["n"]
            assert rows == 2 * cycles, f"cycle {cycles}: {rows} rows of the healthy node, expected {2 * cycles}"
        elapsed = time.monotonic() - t0
        db.close()
    finally:
        healthy.close()
        for e in exporters:
            e.close()
    print(f"\ndcgm fuzz over HTTP: {served} mutated scrapes in {cycles} cycles ({elapsed:.1f} s) beside a real "
          f"agent; {failed} failed their node, 0 healthy rows lost, 0 cycles lost")
    assert served >= HTTP_TARGET and sum(e.requests for e in exporters) >= HTTP_TARGET
