"""Issue 11 at the collector's client: hostile and broken answers fail that node's poll, with a reason.

A HostileAgent is a small http.server on 127.0.0.1 that serves a valid
answer (2 GPUs, 3 minutes each, one event) with one mutation applied, or raw
bytes (a gzip bomb, a deeply nested document). Each case asserts the poll
failed with a one-line reason naming the field, and that nothing of it came
back as records; a real simulated node beside a hostile one still lands in
full through the collector.
"""

from __future__ import annotations

import asyncio
import copy
import gzip
import json
import os
import threading
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from fleetmon.collector.client import Target, poll_all
from fleetmon.collector.limits import MAX_MESSAGE_CHARS, MEMORY_PER_NODE_BYTES
from fleetmon.collector.poller import Collector
from fleetmon.sim.fleet import make_node
from fleetmon.fleet import load_fleet
from fleetmon.records import NodePoll
from storage.db import open_database, query

Doc = dict[str, Any]
UUIDS = ["GPU-4c3f0a2e-1111-2222-3333-444455556666", "GPU-509665ad-b600-ac93-3616-d754b23d636d"]


def valid_docs(now: float) -> dict[str, Doc]:
    """One valid answer per route, as the real agent shapes them."""
    minute0 = (int(now) // 60 - 5) * 60
    minutes = []
    for k in range(3):
        for i, u in enumerate(UUIDS):
            minutes.append({"seq": len(minutes) + 1, "ts": minute0 + 60 * k, "uuid": u, "index": i, "n": 60,
                            "values": {"temp_c_mean": 40.5, "power_w_mean": 100.0, "energy_mj": 56547483134,
                                       "retired_pending": None, "busy_n": 3},
                            "status": {"retired_pending": "unsupported"}, "state": "ok"})
    page = {"schema": 1, "now": now, "buffer_id": "b1", "after": 0, "first_seq": 1, "more": False, "gap": False}
    return {
        "/v1/node": {"schema": 1, "now": now, "buffer_id": "b1",
                     "node": {"hostname": "hostile", "agent_version": "0.1.0", "xid_source": "none",
                              "started_at": now - 100, "values": {"driver_version": "550.54", "gpu_count": 2},
                              "status": {}},
                     "gpus": [{"uuid": u, "index": i, "name": "NVIDIA A100-SXM4-80GB", "state": "ok", "status": {},
                               "values": {"uuid": u, "index": i, "serial": "1328150502860", "vbios": "92.00.45",
                                          "power_default_w": 400.0, "memory_total_mib": 81920,
                                          "ecc_mode_current": True, "pci_bus_id": f"0000:0{i}:00.0"}}
                              for i, u in enumerate(UUIDS)]},
        "/v1/latest": {"schema": 1, "now": now,
                       "samples": [{"ts": now - 1, "uuid": u, "index": i, "state": "ok", "status": {},
                                    "values": {"temp_c": 41, "power_w": 99.5, "fan_speeds_pct": None}}
                                   for i, u in enumerate(UUIDS)]},
        "/v1/minutes": {**page, "last_seq": 6, "next": 6, "records": minutes},
        "/v1/events": {**page, "last_seq": 1, "next": 1,
                       "records": [{"seq": 1, "ts": now - 30, "kind": "xid", "uuid": UUIDS[0], "code": 79,
                                    "pci_bus_id": "0000:00:00.0", "message": "fell off the bus",
                                    "data": {"source": "kernel"}}]},
    }


class HostileAgent:
    """Serves ``valid_docs`` passed through ``mutate(route, doc)``, which may return bytes to send as is.

    ``encoding`` (e.g. "gzip") is sent as Content-Encoding with the bytes
    unchanged; ``chunked`` sends them with chunked transfer encoding.
    """

    def __init__(self, mutate: Callable[[str, Doc], Doc | bytes | None] | None = None) -> None:
        self.mutate = mutate
        self.encoding: str | None = None
        self.chunked = False
        self.requests: list[str] = []
        agent = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                agent.requests.append(self.path)
                body = agent.body(self.path.partition("?")[0])
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if agent.encoding:
                    self.send_header("Content-Encoding", agent.encoding)
                try:
                    if agent.chunked:
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        for i in range(0, len(body), 1 << 16):
                            part = body[i:i + (1 << 16)]
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                        self.wfile.write(b"0\r\n\r\n")
                    else:
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body)
                    self.wfile.flush()
                except OSError:  # the collector hung up (answer too large): fine
                    self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def body(self, route: str) -> bytes:
        doc = valid_docs(time.time())[route]
        out = self.mutate(route, doc) if self.mutate else None
        if isinstance(out, bytes):
            return out
        return json.dumps(doc if out is None else out).encode()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hostile():
    made: list[HostileAgent] = []

    def make(mutate: Callable[[str, Doc], Doc | bytes | None] | None = None) -> HostileAgent:
        agent = HostileAgent(mutate)
        made.append(agent)
        return agent

    yield make
    for a in made:
        a.close()


def poll_one(agent: HostileAgent, timeout_s: float = 2.0) -> NodePoll:
    (p,) = asyncio.run(poll_all([Target("hostile", agent.url)], timeout_s=timeout_s))
    return p


def at(route: str, change: Callable[[Doc], Any]) -> Callable[[str, Doc], Doc | bytes | None]:
    """A mutation of one route's document, in place; ``change`` may return bytes (raw JSON text)."""
    def mutate(r: str, doc: Doc) -> Doc | bytes | None:
        if r != route:
            return None
        out = change(doc)
        return out if isinstance(out, bytes) else doc
    return mutate


def _set(obj: dict[str, Any], key: str, value: Any) -> None:
    obj[key] = value


def _raw(doc: Doc, holder: Callable[[Doc], dict[str, Any]], key: str, text: str) -> bytes:
    """The document as JSON with ``holder(doc)[key]`` written as the raw JSON ``text`` (e.g. 1e400)."""
    holder(doc)[key] = "@@RAW@@"
    return json.dumps(doc).replace('"@@RAW@@"', text).encode()


def _minute(doc: Doc, i: int = 2) -> dict[str, Any]:
    rec: dict[str, Any] = doc["records"][i]
    return rec


def _gpus(n: int) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        template = doc["gpus"][0]
        doc["gpus"] = [{**copy.deepcopy(template), "uuid": f"GPU-{k:08x}-0000-0000-0000-000000000000", "index": k}
                       for k in range(n)]
    return change


def _samples(n: int) -> Callable[[Doc], None]:
    def change(doc: Doc) -> None:
        template = doc["samples"][0]
        doc["samples"] = [{**template, "uuid": f"GPU-{k:08x}-0000-0000-0000-000000000000", "index": k % 1000}
                          for k in range(n)]
    return change


CASES: dict[str, tuple[Callable[[str, Doc], Doc | bytes | None], str]] = {
    # item 1: integers outside SQLite's range, strings that cannot be UTF-8
    "seq_2_63": (at("/v1/minutes", lambda d: _set(_minute(d), "seq", 2**63)),
                 "/v1/minutes: field 'seq' out of range (9223372036854775808; allowed 0..9007199254740992)"),
    "index_1e20": (at("/v1/node", lambda d: _set(d["gpus"][1], "index", 10**20)),
                   "/v1/node gpus[1]: field 'index' out of range (100000000000000000000; allowed 0..1023)"),
    "value_1e30": (at("/v1/minutes", lambda d: _set(_minute(d)["values"], "power_w_mean", 10**30)),
                   "/v1/minutes seq 3: values['power_w_mean'] out of range"),
    "value_minus_1e308": (at("/v1/minutes", lambda d: _set(_minute(d)["values"], "temp_c_mean", -1e308)),
                          "/v1/minutes seq 3: values['temp_c_mean'] out of range (-1e+308; limit ±1e+15)"),
    "sample_value_2_64": (at("/v1/latest", lambda d: _set(d["samples"][0]["values"], "energy_mj", 2**64)),
                          "/v1/latest: values['energy_mj'] out of range"),
    "event_code_1e30": (at("/v1/events", lambda d: _set(d["records"][0], "code", 10**30)),
                        "/v1/events seq 1: field 'code' out of range"),
    "uuid_surrogate": (at("/v1/node", lambda d: _set(d["gpus"][0], "uuid", "GPU-\ud800")),
                       "/v1/node: text that is not valid Unicode (a lone surrogate) at ['gpus'][0]['uuid']"),
    "minute_uuid_surrogate": (at("/v1/minutes", lambda d: _set(_minute(d), "uuid", "\udfff")),
                              "/v1/minutes: text that is not valid Unicode (a lone surrogate) at ['records'][2]"),
    "key_surrogate": (at("/v1/latest", lambda d: _set(d["samples"][0]["values"], "x\ud800", 1)),
                      "(a key)"),
    # item 3: types on the wire
    "power_default_hot": (at("/v1/node", lambda d: _set(d["gpus"][0]["values"], "power_default_w", "hot")),
                          "/v1/node gpus[0]: values['power_default_w'] of the wrong type (str)"),
    "memory_total_bool": (at("/v1/node", lambda d: _set(d["gpus"][0]["values"], "memory_total_mib", True)),
                          "/v1/node gpus[0]: values['memory_total_mib'] of the wrong type (bool)"),
    "serial_number": (at("/v1/node", lambda d: _set(d["gpus"][0]["values"], "serial", 1328150502860)),
                      "/v1/node gpus[0]: values['serial'] of the wrong type (int)"),
    "gpu_count_str": (at("/v1/node", lambda d: _set(d["node"]["values"], "gpu_count", "eight")),
                      "/v1/node: values['gpu_count'] of the wrong type (str)"),
    "sample_temp_bool": (at("/v1/latest", lambda d: _set(d["samples"][1]["values"], "temp_c", True)),
                         "/v1/latest: values['temp_c'] of the wrong type (bool)"),
    "minute_value_str": (at("/v1/minutes", lambda d: _set(_minute(d)["values"], "temp_c_mean", "40")),
                         "/v1/minutes seq 3: values['temp_c_mean'] of the wrong type (str)"),
    "status_number": (at("/v1/minutes", lambda d: _set(_minute(d)["status"], "temp_c", 3)),
                      "/v1/minutes seq 3: status['temp_c'] of the wrong type (int)"),
    # item 4: stated limits
    "gpus_65": (at("/v1/node", _gpus(65)), "/v1/node: 65 GPUs, more than 64 per node"),
    "gpus_10000": (at("/v1/latest", _samples(10_000)), "/v1/latest: 10,000 GPUs, more than 64 per node"),
    "duplicate_uuid": (at("/v1/node", lambda d: _set(d["gpus"][1], "uuid", UUIDS[0])),
                       f"/v1/node: 2 records for GPU UUID '{UUIDS[0]}'"),
    "duplicate_sample_uuid": (at("/v1/latest", lambda d: _set(d["samples"][1], "uuid", UUIDS[0])),
                              "/v1/latest: 2 records for GPU UUID"),
    "year_3000": (at("/v1/minutes", lambda d: _set(_minute(d), "ts", 32503680000)),
                  "/v1/minutes seq 3: field 'ts' 32503680000 is "),
    "event_year_3000": (at("/v1/events", lambda d: _set(d["records"][0], "ts", 32503680000.5)),
                        "s ahead of the collector's clock (limit 604800 s)"),
    "negative_ts": (at("/v1/latest", lambda d: _set(d["samples"][0], "ts", -5.0)),
                    "/v1/latest: field 'ts' is negative (-5.0)"),
    "uuid_empty": (at("/v1/node", lambda d: _set(d["gpus"][0], "uuid", "")),
                   "/v1/node gpus[0]: field 'uuid' is not a GPU UUID ('')"),
    "uuid_100k": (at("/v1/latest", lambda d: _set(d["samples"][0], "uuid", "GPU-" + "a" * 100_000)),
                  "/v1/latest: field 'uuid' longer than 96 characters (100,004)"),
    "uuid_nul": (at("/v1/minutes", lambda d: _set(_minute(d), "uuid", "GPU-ab\x00cd")),
                 "/v1/minutes seq 3: field 'uuid' is not a GPU UUID ('GPU-ab\\x00cd')"),
    "uuid_markup": (at("/v1/node", lambda d: _set(d["gpus"][1], "uuid", "<script>alert(1)</script>")),
                    "/v1/node gpus[1]: field 'uuid' is not a GPU UUID ('<script>alert(1)</script>')"),
    "event_uuid_markup": (at("/v1/events", lambda d: _set(d["records"][0], "uuid", "GPU-<b>")),
                          "/v1/events seq 1: field 'uuid' is not a GPU UUID"),
    "name_10k": (at("/v1/node", lambda d: _set(d["gpus"][0], "name", "x" * 10_000)),
                 "/v1/node gpus[0]: field 'name' longer than 256 characters (10,000)"),
    "hostname_nul": (at("/v1/node", lambda d: _set(d["node"], "hostname", "host\x00name")),
                     "/v1/node: field 'hostname' holds control characters"),
    "vbios_long": (at("/v1/node", lambda d: _set(d["gpus"][0]["values"], "vbios", "9" * 300)),
                   "/v1/node gpus[0]: values['vbios'] longer than 256 characters (300)"),
    "infinity_value": (at("/v1/minutes", lambda d: _raw(d, lambda x: _minute(x)["values"], "power_w_mean", "1e400")),
                       "/v1/minutes seq 3: values['power_w_mean'] is not a finite number"),
    "infinity_ts": (at("/v1/latest", lambda d: _raw(d, lambda x: x["samples"][0], "ts", "1e999")),
                    "/v1/latest: field 'ts' is not a finite number"),
    "infinity_in_event_data": (at("/v1/events", lambda d: _raw(d, lambda x: x["records"][0]["data"], "v", "-1e400")),
                               "/v1/events seq 1: field 'data' holds a number that is not finite"),
    "event_data_1mb": (at("/v1/events", lambda d: _set(d["records"][0]["data"], "pad", "p" * 1_000_000)),
                       "/v1/events seq 1: field 'data' larger than 16,384 characters"),
    "values_10k_keys": (at("/v1/latest", lambda d: _set(d["samples"][0], "values", {f"k{i}": i for i in range(10_000)})),
                        "/v1/latest: values with more than 256 keys (10,000)"),
    "nested_100k": (at("/v1/latest", lambda d: b"[" * 100_000 + b"]" * 100_000),
                    "/v1/latest: not valid JSON (nested too deeply)"),
    "two_million_items": (at("/v1/minutes", lambda d: b"[" + b"0," * 2_000_000 + b"0]"),
                          "/v1/minutes: answer of more than 1,000,000 JSON items"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_answer_fails_the_poll_with_a_reason_naming_the_field(hostile, case):
    mutate, expected = CASES[case]
    agent = hostile(mutate)
    p = poll_one(agent)
    assert not p.ok, f"{case}: the poll succeeded"
    assert expected in p.error, (case, p.error)
    assert "\n" not in p.error and len(p.error) < 300, p.error
    assert p.minutes == [] and p.events == [] and p.gpus == [] and p.latest == []


def test_the_valid_answer_and_nulls_for_unavailable_values_pass(hostile):
    def nulls(route: str, doc: Doc) -> None:
        if route == "/v1/minutes":
            doc["records"][0]["values"].update({"temp_c_mean": None, "fan_pct_max": None})
            doc["records"][0]["code"] = None
        if route == "/v1/node":
            doc["gpus"][0]["values"]["power_default_w"] = None
            doc["gpus"][1]["uuid"] = "MIG-GPU-4c3f0a2e-1111-2222-3333-444455556666/1/0"
        if route == "/v1/latest":
            doc["samples"][0]["uuid"] = "unknown-gpu-0-0000:07:00.0"
            doc["samples"][1]["values"]["fan_speeds_pct"] = [40, 41.5, None]
            doc["samples"][1]["values"]["future_field"] = 2**40  # unknown key of a newer agent: generic bounds

    p = poll_one(hostile(nulls))
    assert p.ok, p.error
    assert len(p.minutes) == 6 and len(p.events) == 1 and len(p.gpus) == 2 and len(p.latest) == 2
    assert p.minutes[0].values["temp_c_mean"] is None


def test_a_10_mb_event_message_is_cut_not_rejected(hostile):
    agent = hostile(at("/v1/events", lambda d: _set(d["records"][0], "message", "m" * 10_000_000)))
    p = poll_one(agent, timeout_s=5.0)
    assert p.ok, p.error
    (event,) = p.events
    assert len(event.message) == MAX_MESSAGE_CHARS and event.message.endswith("…")


def test_a_hostile_node_costs_only_its_own_answer(tmp_path: Path, hostile):
    """The values that made storage raise (OverflowError, UnicodeEncodeError) never get there."""
    real = make_node("real-node", gpus=2)
    real.serve(0.1)
    try:
        real.backfill(3)
        bad = {
            "seq": hostile(at("/v1/minutes", lambda d: _set(_minute(d), "seq", 2**63))),
            "code": hostile(at("/v1/events", lambda d: _set(d["records"][0], "code", 10**30))),
            "surrogate": hostile(at("/v1/node", lambda d: _set(d["gpus"][0], "uuid", "GPU-\ud800"))),
            "value": hostile(at("/v1/minutes", lambda d: _set(_minute(d)["values"], "power_w_mean", -1e308))),
        }
        text = "[fleet]\ntimeout_s = 2\npoll_interval_s = 30\n"
        for name, url in [(n, a.url) for n, a in bad.items()] + [("real-node", real.url)]:
            text += f'[[node]]\nname = "{name}"\nurl = "{url}"\n'
        (tmp_path / "fleet.toml").write_text(text, encoding="utf-8")
        db = open_database(tmp_path / "fleet.db")
        polls = {p.node: p for p in Collector(load_fleet(tmp_path / "fleet.toml"), db).run_cycle()}
        assert polls["real-node"].ok, polls["real-node"].error
        for name in bad:
            assert not polls[name].ok and polls[name].error, name
            rows = query(db, "SELECT status, last_error FROM nodes WHERE name = ?", (name,))
            assert rows == [{"status": "unreachable", "last_error": polls[name].error}]
        stored = query(db, "SELECT count(*) AS n FROM samples s JOIN gpus g ON g.id = s.gpu_id "
                           "WHERE g.node = 'real-node'")[0]["n"]
        assert stored == 3 * 2
        assert query(db, "SELECT count(*) AS n FROM gpus WHERE node != 'real-node'")[0]["n"] == 0
        db.close()
    finally:
        real.close()


# ---------------------------------------------------------------------------
# item 2: a gzip bomb


BOMB_BYTES = 512 * 1024 * 1024


@pytest.fixture(scope="module")
def gzip_bomb() -> bytes:
    """512 MiB of zeros as gzip (≈ 0.5 MB), built in a second: a valid JSON prefix, then zeros."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [comp.compress(b'{"schema": 1, "pad": "')]
    block = b"0" * (1 << 20)
    for _ in range(BOMB_BYTES >> 20):
        parts.append(comp.compress(block))
    parts.append(comp.compress(b'"}'))
    parts.append(comp.flush())
    return b"".join(parts)


def _rss() -> int:
    with open(f"/proc/{os.getpid()}/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc to read the RSS")
@pytest.mark.parametrize("chunked", [False, True])
def test_a_gzip_bomb_fails_the_poll_within_the_deadline_and_bounded_memory(hostile, gzip_bomb, chunked):
    agent = hostile(lambda route, doc: gzip_bomb)
    agent.encoding = "gzip"
    agent.chunked = chunked
    peak = [_rss()]
    start = peak[0]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss())
            time.sleep(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    t0 = time.monotonic()
    try:
        p = poll_one(agent, timeout_s=2.0)
    finally:
        elapsed = time.monotonic() - t0
        done.set()
        watcher.join()
    assert not p.ok
    assert p.error.startswith("/v1/node: answer larger than 16,777,216 bytes after decompression"), p.error
    assert elapsed < 3 * 2.0, f"the poll took {elapsed:.1f} s, past its deadline"
    growth = peak[0] - start
    assert growth < MEMORY_PER_NODE_BYTES, f"RSS grew by {growth / 2**20:.0f} MiB"
    assert len(agent.requests) == 1  # an unusable answer is not retried


def test_an_unknown_content_encoding_is_refused(hostile):
    agent = hostile(lambda route, doc: b"\x28\xb5\x2f\xfd garbage")
    agent.encoding = "zstd"
    p = poll_one(agent)
    assert not p.ok and p.error == "/v1/node: unsupported Content-Encoding 'zstd'", p.error


def test_a_truncated_gzip_answer_is_a_clear_error(hostile):
    body = gzip.compress(json.dumps(valid_docs(time.time())["/v1/node"]).encode())
    agent = hostile(lambda route, doc: body[: len(body) // 2])
    agent.encoding = "gzip"
    p = poll_one(agent)
    assert not p.ok and "truncated compressed answer" in p.error, p.error


def test_a_gzip_answer_within_the_cap_is_read(hostile):
    agent = hostile(lambda route, doc: gzip.compress(json.dumps(doc).encode()))
    agent.encoding = "gzip"
    p = poll_one(agent)
    assert p.ok, p.error
    assert len(p.minutes) == 6 and len(p.gpus) == 2
