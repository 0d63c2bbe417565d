"""HTTP fuzz against one real agent process (issue 11, item 8): it must keep answering.

A seeded generator sends random bytes, bad methods and versions, huge headers,
bad cursors and paths, pipelined requests, bodies and ``Expect`` headers, and
slow clients (dripping bytes, a flood of half-sent heads from one address) to
``python -m fleetmon agent --simulate healthy`` on 127.0.0.1. After each batch
a normal request (the collector's, with the token) must be answered within
1 s. No answer may be a 500, no connection may hang (every one is answered or
closed within 2.5 s: the agent runs with --http-timeout 1), and the agent
logs no traceback. Bounded: :data:`BATCHES` batches of 100 (600 requests, the
flood of half-sent heads after the third, about 8 s); ``FLEETMON_FUZZ_SCALE=3``
runs 18 batches (what the suite ran before, about 20 s), ``FLEETMON_FUZZ_SEED``
another seed (tests/helpers/fuzz.py). It prints its figures (requests, crashes,
hangs) only when it fails, or with ``pytest -rP``.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from fleetmon.records import WIRE_SCHEMA
from helpers.fuzz import rounds

REPO = Path(__file__).resolve().parents[2]
SEED = int(os.environ.get("FLEETMON_FUZZ_SEED", "20251111"))
TOKEN = "fuzz-token-0123456789abcdef"
BATCHES = rounds(6)
FUZZ_S = 20.0 * BATCHES
"""A guard against a crawl, not a budget: a batch takes about 1.1 s here (the >= 500 requests check then fails)."""
BATCH = 100
HANG_S = 2.5
_STATUS = re.compile(rb"(?:^|\n|\})HTTP/1\.[01] (\d{3}) ")

PATHS = ["/", "/v1/node", "/v1/latest", "/v1/minutes", "/v1/events", "/v1/health", "/metrics", "/v1/samples",
         "/v1/minutes/", "//v1/node", "/v1/../v1/node", "/v1/node%00", "/%ff%fe", "/v1/nod\u00e9", "*",
         "http://x/v1/node", "/v1/minutes#frag", "/v1/events;x=1"]
BAD_NUMBERS = ["9223372036854775808", "9223372036854775807", "-1", "-9223372036854775809", "1e3", "0x10",
               "1_000", "+5", "%205", "%D9%A3", "", "%00", "NaN", "inf", "0" * 30 + "1", "9" * 5000, "1.5",
               "%2D1", "abc", "18446744073709551616", "00000000000000000007"]
METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "get", "FOO",
           "G\x00ET", "PRI", "GET GET", "\u00c9", "M" * 300]
VERSIONS = ["HTTP/1.1", "HTTP/1.0", "HTTP/0.9", "HTTP/2.0", "HTTP/1.1.1", "HTTP/9.9", "http/1.1", "HTTP/1",
            "HTTP/01.1", "HTTP/1.10", "HTTP/-1.1", "ICE/1.0"]


@dataclass
class Figures:
    requests: int = 0
    answers: int = 0
    closed_silently: int = 0
    hangs: list[str] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    slow_cut: int = 0
    slow_not_cut: int = 0
    health_checks: int = 0
    worst_health_s: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def line(self) -> str:
        return (f"seed {SEED}: {self.requests} requests ({self.answers} answered, {self.closed_silently} closed "
                f"without an answer), {len(self.crashes)} crashes, {len(self.hangs)} hangs, slow clients "
                f"{self.slow_cut} cut / {self.slow_not_cut} not cut, {self.health_checks} health checks, "
                f"slowest {self.worst_health_s:.3f} s")


def _query(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.choice([1, 1, 2, 3, 25])):
        key = rng.choice(["after", "limit", "after", "x", "after[]", "limit", "%61fter", ""])
        parts.append(f"{key}={rng.choice(BAD_NUMBERS + [str(rng.randrange(-10, 10**20))])}")
    return "&".join(parts)


def _headers(rng: random.Random, auth: bool) -> str:
    lines = ["Host: 127.0.0.1"] if rng.random() < 0.9 else []
    if auth:
        lines.append(f"Authorization: Bearer {TOKEN}")
    elif rng.random() < 0.3:
        lines.append(rng.choice(["Authorization: Bearer wrong-token-0000000000", "Authorization: Basic Zm9vOmJhcg==",
                                 "Authorization: Bearer", "Authorization: bearer  " + TOKEN + "x",
                                 "Authorization: Bearer " + "t" * 5000]))
    if rng.random() < 0.6:
        lines.append("Connection: close")
    if rng.random() < 0.1:
        lines.append("Expect: 100-continue")
    if rng.random() < 0.1:
        lines.append(f"Content-Length: {rng.choice(['5', '-1', 'x', '99999999999999999999', '0'])}")
    if rng.random() < 0.05:
        lines.append("Transfer-Encoding: chunked")
    if rng.random() < 0.1:
        lines.append("Accept-Encoding: gzip, br")
    return "".join(line + "\r\n" for line in lines)


def generate(rng: random.Random) -> bytes:
    """One hostile (or, now and then, plain) request, as bytes to send on a fresh connection."""
    kind = rng.randrange(12)
    auth = rng.random() < 0.5
    if kind == 0:  # random bytes
        data = rng.randbytes(rng.choice([1, 16, 200, 4000]))
        return data + (b"\r\n\r\n" if rng.random() < 0.7 else b"")
    if kind == 1:  # bad method, version or line ending
        method, version = rng.choice(METHODS), rng.choice(VERSIONS)
        end = rng.choice(["\r\n", "\n", "\r", "\r\r\n", "\n\r"])
        line = f"{method} {rng.choice(PATHS)} {version}".encode("utf-8", "replace")
        return line + end.encode() + _headers(rng, auth).encode() + end.encode()
    if kind == 2:  # huge headers
        which = rng.randrange(4)
        if which == 0:
            extra = "X-Big: " + "b" * rng.choice([60000, 70000, 200000]) + "\r\n"
        elif which == 1:
            extra = "".join(f"X-H{i}: v\r\n" for i in range(rng.choice([99, 101, 500])))
        elif which == 2:
            extra = "X" * 70000 + ": v\r\n"
        else:
            extra = "X-Fold: a\r\n b\r\n\tc\r\n"
        return f"GET /v1/health HTTP/1.1\r\n{_headers(rng, auth)}{extra}\r\n".encode()
    if kind in (3, 4):  # bad cursors
        path = rng.choice(["/v1/minutes", "/v1/events", "/v1/samples"])
        method = rng.choice(["GET", "GET", "HEAD"])
        return f"{method} {path}?{_query(rng)} HTTP/1.1\r\n{_headers(rng, auth)}\r\n".encode()
    if kind == 5:  # bad paths, long URLs
        path = rng.choice(PATHS) + rng.choice(["", "?" + _query(rng), "/" + "y" * rng.choice([100, 5000, 65000]),
                                               "?" + "&".join(f"k{i}=1" for i in range(rng.choice([19, 21, 500])))])
        return f"GET {path} HTTP/1.1\r\n{_headers(rng, auth)}\r\n".encode("utf-8", "replace")
    if kind == 6:  # pipelining
        out = b""
        for _ in range(rng.randrange(2, 20)):
            path = rng.choice(PATHS[:8])
            if rng.random() < 0.3:
                path += "?" + _query(rng)
            out += f"{rng.choice(['GET', 'GET', 'HEAD', 'POST'])} {path} HTTP/1.1\r\nHost: x\r\n".encode()
            out += (f"Authorization: Bearer {TOKEN}\r\n" if auth else "").encode() + b"\r\n"
        if rng.random() < 0.5:
            out += b"GET /v1/health HTTP/1.1\r\nConnection: close\r\n\r\n"
        return out
    if kind == 7:  # bodies and Expect
        method = rng.choice(["GET", "POST", "PUT"])
        body = rng.randbytes(rng.choice([0, 5, 1000]))
        return (f"{method} /v1/node HTTP/1.1\r\nHost: x\r\n{_headers(rng, auth)}Content-Length: {len(body)}\r\n"
                f"Expect: 100-continue\r\n\r\n").encode() + body
    if kind == 8:  # TLS, HTTP/2 preface, NULs
        return rng.choice([b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + rng.randbytes(100),
                           b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", b"GET /v1/node\x00 HTTP/1.1\r\n\r\n",
                           b"\r\n\r\n\r\n", b"GET / HTTP/1.1\r\nHost: x\r\nX: \x00\xff\r\n\r\n"])
    if kind == 9:  # HTTP/0.9 and half requests
        return rng.choice([b"GET /v1/node\r\n", b"GET /v1/node HTTP/1.1\r\nHost: x\r\n",
                           b"GET /v1/no", b"", b"GET /v1/node HTTP/1.1\r\nHost"])
    # plain requests, with and without the token: the agent must still serve them
    path = rng.choice(PATHS[:8]) + ("?after=0&limit=5" if rng.random() < 0.3 else "")
    return f"{rng.choice(['GET', 'HEAD'])} {path} HTTP/1.1\r\n{_headers(rng, auth)}\r\n".encode()


def exchange(port: int, data: bytes, source: str = "127.0.0.1") -> tuple[str, bytes]:
    """Send ``data`` on a new connection: ("answered" | "closed" | "hang", what came back)."""
    with socket.create_connection(("127.0.0.1", port), timeout=HANG_S, source_address=(source, 0)) as s:
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the agent answered and closed before the rest arrived (431, 414): read what it said
        got = b""
        end = time.monotonic() + HANG_S
        while True:
            wait = 0.15 if got else end - time.monotonic()
            if wait <= 0:
                return "hang", got
            s.settimeout(wait)
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                if got:
                    return "answered", got  # a keep-alive connection, answered and open: fine
                return "hang", got
            except ConnectionResetError:
                break
            if not chunk:
                break
            got += chunk
        return ("answered" if got else "closed"), got


def slow_client(port: int, figures: Figures, rng: random.Random) -> None:
    """Drip a request head a byte every 0.3 s (inside the 1 s read timeout): the head deadline must cut it."""
    head = b"GET /v1/health HTTP/1.1\r\nX-Slow: " + b"z" * 100
    t0 = time.monotonic()
    cut = False
    with socket.create_connection(("127.0.0.1", port), timeout=HANG_S) as s:
        for byte in head:
            try:
                s.send(bytes([byte]))
            except OSError:
                cut = True
                break
            s.settimeout(0.3 + rng.random() * 0.1)
            try:
                s.recv(4096)  # the end of the connection (or an answer): the agent cut it
                cut = True
                break
            except socket.timeout:
                pass  # still open: drip on
            except OSError:
                cut = True
                break
            if time.monotonic() - t0 > 4.0:
                break
    with figures.lock:
        if cut and time.monotonic() - t0 < 3.0:
            figures.slow_cut += 1
        else:
            figures.slow_not_cut += 1


def health(port: int, figures: Figures) -> None:
    t0 = time.monotonic()
    outcome, got = exchange(port, f"GET /v1/health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n"
                                  f"Connection: close\r\n\r\n".encode())
    took = time.monotonic() - t0
    figures.health_checks += 1
    figures.worst_health_s = max(figures.worst_health_s, took)
    ok = got.startswith(b"HTTP/1.1 200 ") and json.loads(got.partition(b"\r\n\r\n")[2])["schema"] == WIRE_SCHEMA
    assert ok and took < 1.0, f"the agent did not answer a normal request within 1 s ({took:.2f} s, {outcome}): " \
                              f"{got[:200]!r}; {figures.line()}"


def one(port: int, data: bytes, figures: Figures) -> None:
    try:
        outcome, got = exchange(port, data)
    except OSError as exc:
        outcome, got = f"connect failed: {exc}", b""
    statuses = [int(code) for code in _STATUS.findall(got)]
    with figures.lock:
        figures.requests += 1
        if outcome == "hang":
            figures.hangs.append(repr(data[:120]))
        elif outcome.startswith("connect failed"):
            figures.crashes.append(outcome)
        elif statuses:
            figures.answers += 1
        else:
            figures.closed_silently += 1
        if 500 in statuses or any(code > 505 for code in statuses):  # 503 busy and 505 version are answers
            figures.crashes.append(f"{statuses} for {data[:120]!r}")


def test_agent_survives_http_fuzz(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text(TOKEN)
    token.chmod(0o600)
    port_file, log = tmp_path / "port", tmp_path / "agent.log"
    cmd = [sys.executable, "-m", "fleetmon", "agent", "--simulate", "healthy", "--port", "0", "--port-file",
           str(port_file), "--buffer", str(tmp_path / "fuzz.db"), "--interval", "1", "--http-timeout", "1",
           "--token-file", str(token)]
    with open(log, "wb") as err:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
    figures = Figures()
    try:
        deadline = time.monotonic() + 30
        while not port_file.exists():
            assert proc.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, "the agent did not start"
            time.sleep(0.05)
        port = int(port_file.read_text())
        rng = random.Random(SEED)
        health(port, figures)
        t0 = time.monotonic()
        slow: list[threading.Thread] = []
        with ThreadPoolExecutor(max_workers=32) as pool:
            batch = 0
            while batch < BATCHES and time.monotonic() - t0 < FUZZ_S:
                batch += 1
                for _ in range(2):
                    t = threading.Thread(target=slow_client, args=(port, figures, random.Random(rng.random())),
                                         daemon=True)
                    t.start()
                    slow.append(t)
                list(pool.map(lambda data: one(port, data, figures), [generate(rng) for _ in range(BATCH)]))
                assert proc.poll() is None, f"the agent died: {log.read_text(errors='replace')[-2000:]}"
                health(port, figures)
                if batch == 3:  # a flood of half-sent heads from one address: 256 held, the rest refused
                    flood = []
                    for _ in range(300):
                        try:
                            s = socket.create_connection(("127.0.0.1", port), timeout=2,
                                                         source_address=("127.0.0.77", 0))
                            s.sendall(b"GET /v1/health HTTP/1.1\r\n")
                            flood.append(s)
                        except OSError:
                            pass
                    health(port, figures)
                    for s in flood:
                        s.close()
        for t in slow:
            t.join(5)
        health(port, figures)
        assert proc.poll() is None, f"the agent died: {log.read_text(errors='replace')[-2000:]}"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    text = log.read_text(errors="replace")
    print(figures.line())
    assert proc.returncode == 0, text[-2000:]
    assert not figures.crashes, f"{figures.line()}; first: {figures.crashes[:5]}"
    assert not figures.hangs, f"{figures.line()}; first: {figures.hangs[:5]}"
    assert figures.slow_not_cut == 0, figures.line()
    assert "Traceback" not in text and max((len(x) for x in text.splitlines()), default=0) < 1000, text[-2000:]
    assert figures.requests >= 500, figures.line()  # the run was not vacuous
