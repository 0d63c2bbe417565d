"""Issue 11, item 8: a hostile fake agent beside real simulated agents, polled by the real collector.

One ``ThreadingHTTPServer`` on 127.0.0.1 plays :data:`HOSTILE` nodes (``/h<k>/v1/…``).
Every few cycles each named kind of garbage from the issue is served by its own node
(out-of-range integers, lone surrogates, strings in numeric fields, 10,000 GPUs, duplicate
UUIDs, year-3000 minutes, bad UUIDs, a 10 MB event message, infinity, another node's UUIDs,
a gzip bomb, truncated JSON, a wrong schema, a slow drip, …); the other cycles every node
answers from a SEEDED generator that mutates a valid answer (a value replaced by something
hostile, a key dropped or added, a record duplicated, the JSON text cut or spliced).

Beside them, :data:`REAL` simulated agents (``fleetmon.sim.fleet``, the real agent code
paths) get a new minute per GPU each cycle. The collector (``Collector.run_cycle``: the real
client and ingest, on a real SQLite file) polls them all; after every cycle the test asserts
that the real agents' data landed in full (sample rows and cursors); after every batch that
``pragma integrity_check`` is ok, the process grew by less than the stated per-node bound
(``MEMORY_PER_NODE_BYTES``) and every report still renders (text, JSON, HTML; preflight).
The figures are collected in :data:`FIGURES` style dicts, asserted on, and printed (``-rP``).
"""

from __future__ import annotations

import copy
import gzip
import json
import multiprocessing
import os
import random
import sqlite3
import threading
import time
import traceback
import urllib.parse
import urllib.request
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from fleetmon import assess
from fleetmon.collector.limits import MEMORY_PER_NODE_BYTES
from fleetmon.collector.poller import Collector
from fleetmon.fleet import load_fleet
from fleetmon.health import render, render_html
from fleetmon.sim.fleet import SimNode, make_node
from storage.db import open_database, query

SEED = int(os.environ.get("FLEETMON_FUZZ_SEED", "20240611"))
HOSTILE = 96
REAL = 3
REAL_GPUS = 2
TARGET_ANSWERS = int(os.environ.get("FLEETMON_HOSTILE_ANSWERS", "2500"))
"""Hostile answers the suite serves (2,500: ten cycles). The full figure, 10,000 answers, is one
environment variable away: benchmarks/README.md, "Hostile agents beside real ones", has the command
and its result."""
NAMED_EVERY = 12
"""Every NAMED_EVERY-th cycle serves each named kind once (one node per kind)."""
BATCH = 6
"""Cycles between the heavier checks (integrity, memory, reports); also after the last cycle."""

Doc = dict[str, Any]
Answer = Doc | bytes | tuple[str, bytes]
"""A document to send as JSON, raw bytes, or (kind, bytes) for transport tricks: "gzip", "drip", "close"."""


def _uuid(node: int, i: int) -> str:
    return f"GPU-{node:08x}-{i:04x}-4000-8000-{SEED % 10**12:012d}"


def valid_docs(node: int, now: float, cursor: int) -> dict[str, Doc]:
    """A valid answer per route for hostile node ``node`` (2 GPUs, 2 new minutes each, one event)."""
    uuids = [_uuid(node, 0), _uuid(node, 1)]
    minute0 = (int(now) // 60 - 3) * 60
    minutes = []
    for k in range(2):
        for i, u in enumerate(uuids):
            minutes.append({"seq": cursor + len(minutes) + 1, "ts": minute0 + 60 * k, "uuid": u, "index": i,
                            "n": 60, "state": "ok", "status": {"retired_pending": "unsupported"},
                            "values": {"temp_c_mean": 40.5, "temp_c_max": 44, "power_w_mean": 100.0,
                                       "power_w_max": 140.0, "energy_mj": 56547483134, "util_gpu_pct_mean": 50.0,
                                       "retired_pending": None, "ecc_unc_vol": 0}})
    page = {"schema": 1, "now": now, "buffer_id": f"hb{node}", "after": cursor, "first_seq": 1,
            "more": False, "gap": False}
    return {
        "/v1/node": {"schema": 1, "now": now, "buffer_id": f"hb{node}",
                     "node": {"hostname": f"h{node}", "agent_version": "0.1.0", "xid_source": "none",
                              "started_at": now - 100, "status": {},
                              "values": {"driver_version": "550.54.15", "cuda_driver_version": "12.4",
                                         "gpu_count": 2}},
                     "gpus": [{"uuid": u, "index": i, "name": "NVIDIA A100-SXM4-80GB", "state": "ok", "status": {},
                               "values": {"uuid": u, "index": i, "serial": f"13281505{node:05d}{i}",
                                          "vbios": "92.00.45", "power_default_w": 400.0,
                                          "power_enforced_w": 400.0, "memory_total_mib": 81920,
                                          "ecc_mode_current": True, "pci_bus_id": f"0000:0{i}:00.0"}}
                              for i, u in enumerate(uuids)]},
        "/v1/latest": {"schema": 1, "now": now,
                       "samples": [{"ts": now - 1, "uuid": u, "index": i, "state": "ok", "status": {},
                                    "values": {"temp_c": 41, "power_w": 99.5, "fan_speeds_pct": None}}
                                   for i, u in enumerate(uuids)]},
        "/v1/minutes": {**page, "last_seq": cursor + 4, "next": cursor + 4, "records": minutes},
        "/v1/events": {**page, "last_seq": cursor + 1, "next": cursor + 1,
                       "records": [{"seq": cursor + 1, "ts": now - 30, "kind": "xid", "uuid": uuids[0], "code": 79,
                                    "pci_bus_id": "0000:00:00.0", "message": "fell off the bus",
                                    "data": {"source": "kernel"}}]},
    }


# -- the named kinds of garbage (the list, and a few more) ------------------------------------------


def _records(doc: Doc) -> list[Doc]:
    return doc.get("records") or doc.get("gpus") or doc.get("samples") or []


def _first(doc: Doc) -> Doc:
    recs = _records(doc)
    return recs[0] if recs else doc


def _values(doc: Doc) -> Doc:
    rec = _first(doc)
    v = rec.get("values")
    return v if isinstance(v, dict) else rec


def _raw(doc: Doc, holder: Doc, key: str, text: str) -> bytes:
    holder[key] = "@@RAW@@"
    return json.dumps(doc).replace('"@@RAW@@"', text).encode()


def _gpus(n: int) -> Callable[[str, Doc, random.Random], Answer]:
    def change(route: str, doc: Doc, rng: random.Random) -> Answer:
        key = {"/v1/node": "gpus", "/v1/latest": "samples"}.get(route, "records")
        template = _records(doc)[0]
        doc[key] = [{**copy.deepcopy(template), "uuid": f"GPU-{k:08x}-0000-4000-8000-000000000000", "index": k % 1024,
                     **({"seq": template["seq"] + k} if "seq" in template else {})} for k in range(n)]
        return doc
    return change


def _set_first(key: str, value: Any) -> Callable[[str, Doc, random.Random], Answer]:
    def change(route: str, doc: Doc, rng: random.Random) -> Answer:
        _first(doc)[key] = value
        return doc
    return change


def _set_value(key: str, value: Any) -> Callable[[str, Doc, random.Random], Answer]:
    def change(route: str, doc: Doc, rng: random.Random) -> Answer:
        _values(doc)[key] = value
        return doc
    return change


def _gzip_bomb() -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [comp.compress(b'{"schema": 1, "pad": "')]
    block = b"0" * (1 << 20)
    parts += [comp.compress(block) for _ in range(256)]  # 256 MiB unpacked from ≈ 250 KB
    parts += [comp.compress(b'"}'), comp.flush()]
    return b"".join(parts)


BOMB = _gzip_bomb()
REAL_UUIDS: list[str] = []
"""Filled once the real agents exist: the "another node's UUIDs" kind reports them."""


def _steal(route: str, doc: Doc, rng: random.Random) -> Answer:
    for rec, u in zip(_records(doc), REAL_UUIDS):
        rec["uuid"] = u
        if isinstance(rec.get("values"), dict) and "uuid" in rec["values"]:
            rec["values"]["uuid"] = u
    return doc


NAMED: dict[str, Callable[[str, Doc, random.Random], Answer]] = {
    "seq_2_63": _set_first("seq", 2**63),
    "index_1e20": _set_first("index", 10**20),
    "value_1e30": _set_value("power_w_mean", 10**30),
    "value_minus_1e308": _set_value("temp_c_mean", -1e308),
    "code_1e30": _set_first("code", 10**30),
    "uuid_lone_surrogate": _set_first("uuid", "GPU-\ud800"),
    "string_in_numeric": _set_value("power_default_w", "hot"),
    "string_for_temp": _set_value("temp_c", "hot"),
    "gpus_10000": _gpus(10_000),
    "gpus_65": _gpus(65),
    "duplicate_uuid": lambda r, d, g: (_records(d).append(copy.deepcopy(_first(d))), d)[1],
    "year_3000": _set_first("ts", 32503680000),
    "negative_ts": _set_first("ts", -5),
    "uuid_empty": _set_first("uuid", ""),
    "uuid_100k": _set_first("uuid", "GPU-" + "a" * 100_000),
    "uuid_nul": _set_first("uuid", "GPU-ab\x00cd"),
    "uuid_markup": _set_first("uuid", "<script>alert(1)</script>"),
    "message_10mb": lambda r, d, g: (_first(d).__setitem__("message", "m" * 10_000_000), d)[1],
    "infinity": lambda r, d, g: _raw(d, _values(d), "power_w_mean", "1e400"),
    "nan_ts": lambda r, d, g: _raw(d, _first(d), "ts", "NaN"),
    "gzip_bomb": lambda r, d, g: ("gzip", BOMB),
    "truncated_json": lambda r, d, g: json.dumps(d).encode()[: len(json.dumps(d)) // 2],
    "truncated_gzip": lambda r, d, g: ("gzip", gzip.compress(json.dumps(d).encode())[:40]),
    "wrong_schema": lambda r, d, g: {**d, "schema": 99},
    "schema_missing": lambda r, d, g: {k: v for k, v in d.items() if k != "schema"},
    "not_an_object": lambda r, d, g: b"[1, 2, 3]",
    "empty_body": lambda r, d, g: b"",
    "html_error_page": lambda r, d, g: b"<html><body>502 Bad Gateway</body></html>",
    "slow_drip": lambda r, d, g: ("drip", json.dumps(d).encode()),
    "connection_closed": lambda r, d, g: ("close", b""),
    "nested_100k": lambda r, d, g: b"[" * 100_000 + b"]" * 100_000,
    "values_not_object": _set_first("values", [1, 2, 3]),
    "records_not_list": lambda r, d, g: {**d, "records": "many", "gpus": "many", "samples": "many"},
    "bool_for_int": _set_first("index", True),
    "huge_event_data": lambda r, d, g: (_first(d).__setitem__("data", {"pad": "p" * 1_000_000}), d)[1],
    "cursor_backwards": lambda r, d, g: {**d, "next": -1, "last_seq": -1},
    "buffer_id_markup": lambda r, d, g: {**d, "buffer_id": "<b>\x00</b>" * 100},
}


STORAGE_SIDE: dict[str, Callable[[str, Doc, random.Random], Answer]] = {"other_nodes_uuids": _steal}
"""Garbage only storage can catch (the client cannot know another node's UUIDs): its own test below."""

HEAVY = ("gzip_bomb", "gpus_10000", "message_10mb", "uuid_100k", "huge_event_data", "nested_100k")
"""Served one per cycle, on one node, so the growth measured is one node's request in flight."""
LIGHT = tuple(sorted(k for k in NAMED if k not in HEAVY))


# -- the seeded generator -----------------------------------------------------------------------------------

_EVIL: tuple[Any, ...] = (
    2**63, -(2**63) - 1, 10**20, 10**30, -1, 0, 2**53 + 1, 1e308, -1e308, 5e-324, 0.1, True, False, None,
    "", " ", "x" * 300, "\x00", "GPU-\x00", "<script>", "\ud800", "\udfff", "é", "GPU-🙂", "1e400", "NaN",
    [], [None], [1, "a"], {}, {"a": {"b": [1]}}, "GPU-00000000-0000-0000-0000-000000000000", 32503680000, -5.5,
)
_RAW_NUMBERS = ("1e400", "-1e400", "NaN", "Infinity", "-Infinity", "1" * 400, "-0", "1E+999")


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,))


def _holder(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path[:-1]:
        doc = doc[p]
    return doc


def mutate(route: str, doc: Doc, rng: random.Random) -> Answer:
    """One seeded mutation of a valid answer (some mutations stack)."""
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        paths = list(_paths(doc))
        if not paths:
            break
        path = rng.choice(paths)
        holder, key = _holder(doc, path), path[-1]
        op = rng.random()
        if op < 0.55:
            holder[key] = copy.deepcopy(rng.choice(_EVIL))
        elif op < 0.65 and isinstance(holder, dict):
            del holder[key]
        elif op < 0.72 and isinstance(holder, list):
            holder.append(copy.deepcopy(holder[key]))  # a duplicated record
        elif op < 0.80 and isinstance(holder, dict):
            holder[rng.choice(("x", "\ud800", "", "values", "seq" * 90))] = copy.deepcopy(rng.choice(_EVIL))
        elif op < 0.88:
            return _raw(doc, holder, key, rng.choice(_RAW_NUMBERS)) if isinstance(holder, dict) else doc
        elif op < 0.94:
            text = json.dumps(doc).encode()
            cut = rng.randrange(len(text))
            return text[:cut] + bytes(rng.randrange(256) for _ in range(rng.randrange(4))) + text[cut + 1:]
        else:
            text = json.dumps(doc).encode()
            return text[: rng.randrange(len(text))]
    return doc


# -- the hostile server -------------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512  # 48 nodes connect at once; the default backlog of 5 drops SYNs (1 s retries)


class HostileFleet:
    """``/h<k>/v1/<route>``: node k's answer, named (``self.named[k]``) or generated (seeded per request)."""

    def __init__(self) -> None:
        self.cycle = 0
        self.named: dict[int, str] = {}
        self.cursors: dict[int, int] = {}
        self.served: Counter[str] = Counter()
        self.lock = threading.Lock()
        fleet = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                pass

            def do_GET(self) -> None:  # noqa: N802 - stdlib name
                fleet.answer(self)

        self.server = _Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def url(self, k: int) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/h{k}"

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        if handler.path.startswith("/control?"):  # the test process steers this one: cycle, kinds, cursors
            state = json.loads(urllib.parse.unquote(handler.path.partition("?")[2]))
            with self.lock:
                self.cycle = state["cycle"]
                self.named = {int(k): v for k, v in state["named"].items()}
                self.cursors = {int(k): v for k, v in state["cursors"].items()}
                body = json.dumps(dict(self.served)).encode()
            handler.send_response(200)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
            return
        head = handler.path.partition("?")[0]  # /h<k>/v1/<route>
        node_part, _, rest = head.removeprefix("/h").partition("/")
        node, route = int(node_part), "/" + rest
        kind = self.named.get(node)
        rng = random.Random(f"{SEED}:{self.cycle}:{node}:{route}")
        doc = valid_docs(node, time.time(), self.cursors.get(node, 0)).get(route)
        if doc is None:
            out: Answer = b'{"error": "no such route"}'
            label = "unknown route"
        elif kind is not None:
            out, label = {**NAMED, **STORAGE_SIDE}[kind](route, doc, rng), kind
        else:
            out, label = mutate(route, doc, rng), "generated"
        with self.lock:
            self.served[label] += 1
        mode, body = out if isinstance(out, tuple) else ("plain", out if isinstance(out, bytes) else
                                                         json.dumps(out).encode("utf-8", "surrogatepass"))
        try:
            if mode == "close":
                handler.close_connection = True
                return
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            if mode == "gzip":
                handler.send_header("Content-Encoding", "gzip")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            if mode == "drip":
                for i in range(0, min(len(body), 40)):
                    handler.wfile.write(body[i:i + 1])
                    handler.wfile.flush()
                    time.sleep(0.1)
                handler.close_connection = True
                return
            handler.wfile.write(body)
            handler.wfile.flush()
        except OSError:  # the collector hung up (too large, too slow): what it should do
            handler.close_connection = True

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class HostileProcess:
    """The hostile fleet in a child process: its own memory and CPU are not the collector's.

    ``steer`` sets the cycle, the named kinds per node and the cursors, and returns
    the answers served so far by kind."""

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("fork")
        ready = ctx.Queue()
        self.process = ctx.Process(target=self._child, args=(ready,), daemon=True)
        self.process.start()
        self.port = int(ready.get(timeout=30))

    @staticmethod
    def _child(ready: Any) -> None:
        fleet = HostileFleet()
        ready.put(fleet.server.server_address[1])
        threading.Event().wait()

    def url(self, k: int) -> str:
        return f"http://127.0.0.1:{self.port}/h{k}"

    def steer(self, cycle: int, named: dict[int, str], cursors: dict[int, int]) -> Counter[str]:
        state = urllib.parse.quote(json.dumps({"cycle": cycle, "named": named, "cursors": cursors}))
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/control?{state}", timeout=30) as resp:
            return Counter(json.loads(resp.read()))

    def close(self) -> None:
        self.process.kill()
        self.process.join(10)


# -- the suite ----------------------------------------------------------------------------------------------


def _rss() -> int:
    with open(f"/proc/{os.getpid()}/statm", encoding="ascii") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class PeakRss:
    def __init__(self) -> None:
        self.peak = _rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, _rss())

    def reset(self) -> int:
        self.peak = _rss()
        return self.peak

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _real_landed(db: Any, nodes: list[SimNode]) -> tuple[int, list[str]]:
    """(rows lost, problems): every real minute stored once, every cursor at the buffer's end."""
    lost = 0
    problems = []
    for node in nodes:
        last = node.buffer.bounds("minutes")[1]
        stored = query(db, "SELECT count(*) AS n FROM samples s JOIN gpus g ON g.id = s.gpu_id "
                           "WHERE g.uuid IN (%s)" % ",".join("?" * len(node.last_minutes)),
                       tuple(node.last_minutes))[0]["n"]
        cursor = query(db, "SELECT minutes_cursor FROM nodes WHERE name = ?", (node.name,))
        if stored != last:
            lost += max(0, last - stored)
            problems.append(f"{node.name}: {stored} of {last} minutes stored")
        if not cursor or cursor[0]["minutes_cursor"] != last:
            problems.append(f"{node.name}: cursor {cursor} != {last}")
        owners = query(db, "SELECT DISTINCT node FROM gpus WHERE uuid IN (%s)" % ",".join("?" * len(node.last_minutes)),
                       tuple(node.last_minutes))
        if [r["node"] for r in owners] != [node.name]:
            problems.append(f"{node.name}: its GPUs now belong to {[r['node'] for r in owners]}")
    return lost, problems


def _integrity(path: Path) -> str:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def _reports(path: Path, fleet: Any, names: list[str]) -> list[str]:
    """Render every report from a read-only connection; the problems found (none expected)."""
    problems = []
    db = open_database(path, readonly=True)
    try:
        now = time.time()
        run = assess.run_report(db, now, 86400, None, fleet, save=False)
        json.loads(render.report_json(run.result))
        render.report_text(run.result)
        render_html.report_html(run.result)
        pre = assess.run_preflight(db, now, ",".join(names), 1.0, fleet)
        json.loads(render.preflight_json(pre.result))
        render.preflight_text(pre.result)
        render_html.preflight_html(pre.result)
    except Exception as exc:  # the figure the suite exists for
        problems.append(f"{type(exc).__name__}: {exc}"[:300])
    finally:
        db.close()
    return problems


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc to read the RSS")
def test_hostile_agents_beside_real_ones_cost_the_fleet_nothing(tmp_path: Path) -> None:
    started = time.monotonic()
    hostile = HostileProcess()
    real = [make_node(f"real{i}", gpus=REAL_GPUS, seed=i) for i in range(REAL)]
    figures: dict[str, Any] = {"seed": SEED, "cycles": 0, "answers_tried": 0, "crashes": 0, "hangs": 0,
                               "rows_lost": 0, "integrity": "ok", "rss_growth_mib": 0.0,
                               "memory_bound_mib": MEMORY_PER_NODE_BYTES / 2**20, "report_failures": 0,
                               "problems": []}
    db = None
    watch = PeakRss()
    try:
        for n in real:
            n.serve(0.05)
            n.backfill(5)
        REAL_UUIDS[:] = list(real[0].last_minutes)
        text = "[fleet]\ntimeout_s = 1\npoll_interval_s = 30\nconcurrency = 128\n"
        text += "".join(f'[[node]]\nname = "h{k}"\nurl = "{hostile.url(k)}"\n' for k in range(HOSTILE))
        text += "".join(f'[[node]]\nname = "{n.name}"\nurl = "{n.url}"\n' for n in real)
        (tmp_path / "fleet.toml").write_text(text, encoding="utf-8")
        fleet = load_fleet(tmp_path / "fleet.toml")
        path = tmp_path / "fleet.db"
        db = open_database(path)
        collector = Collector(fleet, db, inventory_every_s=0, health_every_s=3600)
        names = [s.name for s in fleet.nodes]
        baseline = None
        cursors: dict[int, int] = {}
        # every named kind served at least once (cycle 1: the light ones, cycles 2-7: one heavy kind each),
        # however few answers are asked for
        min_cycles = 2 + len(HEAVY)
        while figures["answers_tried"] < TARGET_ANSWERS or figures["cycles"] < min_cycles:
            cycle = figures["cycles"]
            phase = cycle % NAMED_EVERY
            if phase == 1:
                named = dict(enumerate(LIGHT))
            elif 2 <= phase < 2 + len(HEAVY):
                named = {0: HEAVY[phase - 2]}
            else:
                named = {}
            served = hostile.steer(cycle, named, cursors)
            for n in real:
                n.add_minute()
            t0 = time.monotonic()
            try:
                polls = collector.run_cycle(force=True)
            except Exception as exc:
                figures["crashes"] += 1
                where = traceback.extract_tb(exc.__traceback__)[-1]
                figures["problems"].append(f"cycle {cycle}: {type(exc).__name__}: {exc} "
                                           f"({Path(where.filename).name}:{where.lineno})"[:300])
                polls = []
            took = time.monotonic() - t0
            if took > 3 * collector.timeout_s + 5:
                figures["hangs"] += 1
                figures["problems"].append(f"cycle {cycle}: took {took:.1f} s")
            for p in polls:
                if p.node.startswith("h") and p.ok:
                    k = int(p.node[1:])
                    cursors[k] = cursors.get(k, 0) + 4
            figures["cycles"] = cycle + 1
            figures["answers_tried"] = sum(v for k, v in served.items() if k != "unknown route")
            lost, problems = _real_landed(db, real)
            figures["rows_lost"] += lost
            figures["problems"] += [f"cycle {cycle}: {p}" for p in problems]
            if cycle == 0:
                baseline = watch.reset()  # imports, caches and a first cycle are in the baseline
            last = figures["answers_tried"] >= TARGET_ANSWERS and figures["cycles"] >= min_cycles
            if cycle % BATCH == 0 or last:
                integrity = _integrity(path)
                if integrity != "ok":
                    figures["integrity"] = integrity[:200]
                failures = _reports(path, fleet, names)
                figures["report_failures"] += len(failures)
                figures["problems"] += [f"cycle {cycle} report: {p}" for p in failures]
                if baseline is not None:
                    figures["rss_growth_mib"] = max(figures["rss_growth_mib"], (watch.peak - baseline) / 2**20)
            if len(figures["problems"]) > 20:
                break
        figures["served"] = dict(hostile.steer(cycle + 1, {}, cursors))
        figures["answers_tried"] = sum(v for k, v in figures["served"].items() if k != "unknown route")
        figures["named_kinds"] = len(NAMED)
        figures["seconds"] = round(time.monotonic() - started, 1)
    finally:
        watch.stop()
        if db is not None:
            db.close()
        for n in real:
            n.close()
        hostile.close()
    print("hostile fleet figures:", json.dumps(figures, indent=1))
    assert figures["answers_tried"] >= TARGET_ANSWERS, figures
    assert figures["served"].get("generated", 0) >= TARGET_ANSWERS * 0.8, figures
    assert all(figures["served"].get(k, 0) > 0 for k in NAMED), figures
    assert (figures["crashes"], figures["hangs"], figures["rows_lost"], figures["report_failures"]) == (0, 0, 0, 0), \
        figures["problems"]
    assert figures["problems"] == [], figures["problems"]
    assert figures["integrity"] == "ok", figures
    assert figures["rss_growth_mib"] < figures["memory_bound_mib"], figures


def test_a_node_reporting_another_nodes_uuids_does_not_take_its_gpus(tmp_path: Path) -> None:
    real = make_node("real0", gpus=REAL_GPUS)
    real.serve(0.05)
    real.backfill(5)
    REAL_UUIDS[:] = list(real.last_minutes)
    hostile = HostileProcess()  # forked now: it knows the real node's UUIDs
    db = None
    try:
        (tmp_path / "fleet.toml").write_text(f'[fleet]\ntimeout_s = 2\n[[node]]\nname = "h0"\nurl = "{hostile.url(0)}"\n'
                                             f'[[node]]\nname = "real0"\nurl = "{real.url}"\n', encoding="utf-8")
        db = open_database(tmp_path / "fleet.db")
        collector = Collector(load_fleet(tmp_path / "fleet.toml"), db, inventory_every_s=0, health_every_s=3600)
        problems: list[str] = []
        for cycle in range(4):
            # The real node holds its cards first (cycle 0: the hostile answer is refused by the client); a
            # later claimant is quarantined. (Two strangers claiming one new card in the same first cycle
            # cannot be told apart: the first to be stored holds it, the other is quarantined.)
            hostile.steer(cycle, {0: "seq_2_63" if cycle == 0 else "other_nodes_uuids"}, {0: 4 * cycle})
            real.add_minute()
            collector.run_cycle(force=True)
            problems += _real_landed(db, [real])[1]
        assert problems == []
    finally:
        if db is not None:
            db.close()
        real.close()
        hostile.close()
