"""Issue 20 (items 2 and 9): a hostile or broken ``ssh`` never hangs a poll, the collector or its stop.

A fake ``ssh`` (a shell script, first on PATH) plays the hostile node: the host
name in ``ssh://HOST`` picks what it does (floods standard error, writes more
than the cap while the event loop is busy, leaves a background child holding
standard output, ignores SIGTERM, writes ESC and NUL into its message). Each
case asserts the poll ended within its deadline with a one-line reason (or,
where the answer was good, with the document's records) and that nothing of
the fake ssh's process group is left. Then the real CLI: ``fleetmon collect``
as a process with a hostile node and a healthy simulated agent answers
SIGTERM within seconds while the hostile poll hangs, and ``--once`` exits.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleetmon.collector.client import Target, poll_all
from fleetmon.collector.sources import MAX_SSH_OUTPUT
from fleetmon.records import NodePoll
from fleetmon.sim.fleet import make_node
from storage.db import open_database, query

REPO = Path(__file__).resolve().parents[2]
A100 = "telegraf_a100-sxm4-v12.xml"

# What the fake ssh does, by host name. It records its pid (= its process group: the collector starts
# ssh in a session of its own) in pids/HOST, and the pids of children it leaves behind in kids/HOST.
# later-HOST serves the document on its first run and is HOST from then on.
FAKE_SSH = r"""#!/bin/sh
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do shift; done
host="$2"
dir='@DIR@'
case "$host" in  # later-X: the document on the first poll, X from the second on
  later-*) if [ ! -e "$dir/served-$host" ]; then : > "$dir/served-$host"; exec cat "$dir/doc.xml"; fi
           host="${host#later-}" ;;
esac
echo $$ > "$dir/pids/$host"
flood() { head -c "$1" /dev/zero | tr '\0' "$2"; }
case "$host" in
  good) exec cat "$dir/doc.xml" ;;
  stderr-flood) { echo "Permission denied (publickey)."; flood 1200000 e; } >&2; exit 255 ;;
  stderr-flood-hang) flood 1200000 e >&2; exec sleep 600 ;;
  banner) { echo "Welcome to rented-03"; flood 300000 b; echo; } >&2; exec cat "$dir/doc.xml" ;;
  stdout-over-cap) exec '@PYTHON@' "$dir/big_pipe.py" @OVER@ ;;
  background) cat "$dir/doc.xml"; sleep 600 & echo $! > "$dir/kids/$host"; exit 0 ;;
  background-empty) sleep 600 & echo $! > "$dir/kids/$host"; exit 0 ;;
  escapee) cat "$dir/doc.xml"; kid="$dir/kids/$host"
    setsid sh -c 'echo $$ > "$1.new"; mv "$1.new" "$1"; exec sleep 600' sh "$kid" &
    while [ ! -s "$kid" ]; do sleep 0.05; done; exit 0 ;;
  ignore-term) trap '' TERM; sleep 600 & echo $! > "$dir/kids/$host"; while :; do sleep 1; done ;;
  control-chars) printf 'bad\033[2J\033]0;owned\007 news\000 here\r\nsecond line\n' >&2; exit 255 ;;
  *) echo "fake ssh: unknown host $host" >&2; exit 255 ;;
esac
"""


# Standard output made a 1 MiB pipe (F_SETPIPE_SZ), then more than the cap written into it: a reader that
# falls behind finds a lot waiting at once.
BIG_PIPE = """
import fcntl, sys
try:
    fcntl.fcntl(1, 1031, 1 << 20)
except OSError:
    pass
left = int(sys.argv[1])
block = b"x" * (1 << 16)
while left > 0:
    left -= sys.stdout.buffer.write(block[:left])
"""


class FakeSsh:
    def __init__(self, root: Path, document: Path) -> None:
        self.root = root
        (root / "bin").mkdir(parents=True)
        (root / "pids").mkdir()
        (root / "kids").mkdir()
        (root / "doc.xml").write_bytes(document.read_bytes())
        (root / "big_pipe.py").write_text(BIG_PIPE)
        script = root / "bin" / "ssh"
        script.write_text(FAKE_SSH.replace("@DIR@", str(root)).replace("@OVER@", str(MAX_SSH_OUTPUT + (4 << 20)))
                          .replace("@PYTHON@", sys.executable))
        script.chmod(0o755)
        self.path = f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"

    def pid(self, host: str, wait_s: float = 10.0) -> int:
        """The fake ssh's pid for ``host`` (its process group), once it started."""
        path = self.root / "pids" / host
        deadline = time.monotonic() + wait_s
        while not (path.exists() and path.read_text().strip()):
            assert time.monotonic() < deadline, f"the fake ssh for {host} never started"
            time.sleep(0.02)
        return int(path.read_text())

    def kid(self, host: str) -> int | None:
        path = self.root / "kids" / host
        return int(path.read_text()) if path.exists() and path.read_text().strip() else None


def _live(pid: int) -> bool:
    """``pid`` exists and is not a zombie (an orphan's zombie waits for init, which may never reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def _group(pgid: int) -> list[int]:
    """The live (non-zombie) processes of process group ``pgid``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            out.append(int(entry.name))
    return out


def _hanging(fake: FakeSsh, host: str, pgid: int, wait_s: float = 10.0) -> None:
    """Wait until the fake ssh for ``host`` hangs: ``stderr-flood-hang`` has written its flood (the poll read
    it) and exec'd into ``sleep``; ``ignore-term`` has set its trap and started its child. The poll is then
    under way and waiting on a process that will not end by itself."""
    deadline = time.monotonic() + wait_s
    while True:
        if host == "ignore-term":
            if fake.kid(host) is not None:
                return
        else:
            try:
                if Path(f"/proc/{pgid}/comm").read_text().strip() == "sleep":
                    return
            except OSError:
                pass
        assert time.monotonic() < deadline, f"the fake ssh for {host} never reached its hang"
        time.sleep(0.02)


def _gone(pgid: int, wait_s: float = 5.0) -> list[int]:
    """What is left of the group after ``wait_s`` (empty: all gone)."""
    deadline = time.monotonic() + wait_s
    while (left := _group(pgid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.fixture
def fake_ssh(tmp_path: Path, shared_fixtures: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeSsh]:
    fake = FakeSsh(tmp_path / "fakessh", shared_fixtures / "A_nvidia_smi_xml" / A100)
    monkeypatch.setenv("PATH", fake.path)
    yield fake
    for name in ("pids", "kids"):  # whatever a failing test left behind
        for f in (fake.root / name).iterdir():
            try:
                pid = int(f.read_text())
            except ValueError:
                continue
            for kill in ((lambda: os.killpg(pid, signal.SIGKILL)) if name == "pids" else (lambda: None),
                         lambda: os.kill(pid, signal.SIGKILL)):
                try:
                    kill()
                except (ProcessLookupError, PermissionError):
                    pass


def _poll(host: str, timeout_s: float = 1.0) -> tuple[NodePoll, float]:
    t0 = time.monotonic()
    [poll] = asyncio.run(poll_all([Target(name="n1", url=f"ssh://{host}")], timeout_s=timeout_s))
    return poll, time.monotonic() - t0


def _one_line(poll: NodePoll) -> str:
    error = poll.error or ""
    assert error and "\n" not in error and "\r" not in error and "Traceback" not in error, error
    assert not any(ord(c) < 0x20 or 0x7f <= ord(c) < 0xa0 for c in error), repr(error)
    return error


def test_the_fake_ssh_serves_a_good_document(fake_ssh: FakeSsh) -> None:
    poll, _ = _poll("good")
    assert poll.ok, poll.error
    assert [g.uuid for g in poll.gpus] == ["GPU-513536b6-7d19-9063-b049-1e69664bb298"]
    assert _gone(fake_ssh.pid("good")) == []


def test_a_stderr_flood_ends_with_its_first_line(fake_ssh: FakeSsh) -> None:
    # Before: standard error was read up to 64 KiB and then left alone; the remote side blocked on the
    # full pipe, and the poll ran into the deadline (or, with the pipe paused, hung for ever).
    poll, took = _poll("stderr-flood")
    assert _one_line(poll) == "ssh: Permission denied (publickey).", poll.error
    assert took < 3.0 + 3, took
    assert _gone(fake_ssh.pid("stderr-flood")) == []


def test_a_stderr_flood_then_a_hang_is_killed_at_the_deadline(fake_ssh: FakeSsh) -> None:
    # A 0.5 s timeout: the deadline (3 × the timeout) is 1.5 s; the test waits for it.
    poll, took = _poll("stderr-flood-hang", timeout_s=0.5)
    assert _one_line(poll) == "ssh: no answer within 1.5 s (the ssh command was killed)", poll.error
    assert 1.25 < took < 1.5 + 3, took
    assert _gone(fake_ssh.pid("stderr-flood-hang")) == []


def test_a_document_behind_a_long_stderr_banner_is_read(fake_ssh: FakeSsh) -> None:
    # Before: "no answer within 3 s": the 300 KB banner filled the unread stderr pipe before nvidia-smi's output.
    poll, _ = _poll("banner")
    assert poll.ok, poll.error
    assert [g.name for g in poll.gpus] == ["NVIDIA A100-SXM4-80GB"]
    assert _gone(fake_ssh.pid("banner")) == []


def test_output_over_the_cap_while_the_loop_is_busy_is_cut_off(fake_ssh: FakeSsh) -> None:
    # Before: the loop, busy elsewhere, let the stream's buffer fill past its pause mark; at the cap the
    # process was killed and then waited for with its stdout pipe paused: EOF never read, wait() for ever.
    async def busy_then_poll() -> NodePoll:
        done = False

        async def hog() -> None:  # another node's work holding the event loop, again and again
            while not done:
                await asyncio.sleep(0.01)
                time.sleep(0.05)
        hogging = asyncio.ensure_future(hog())
        try:
            [poll] = await poll_all([Target(name="n1", url="ssh://stdout-over-cap")], timeout_s=2.0)
        finally:
            done = True
            await hogging
        return poll

    t0 = time.monotonic()
    poll = asyncio.run(asyncio.wait_for(busy_then_poll(), 30))
    took = time.monotonic() - t0
    assert _one_line(poll) == f"ssh: nvidia-smi's output is larger than {MAX_SSH_OUTPUT:,} bytes", poll.error
    assert took < 6.0 + 3, took
    assert _gone(fake_ssh.pid("stdout-over-cap")) == []


def test_a_background_child_holding_stdout_does_not_keep_the_poll(fake_ssh: FakeSsh) -> None:
    # ssh exited after the document; its session's leftovers are killed, so the output ends and is read.
    # Before: the poll waited for the end of the output until the deadline and failed.
    poll, took = _poll("background", timeout_s=2.0)
    assert poll.ok, poll.error
    assert took < 3.0, took
    kid = fake_ssh.kid("background")
    assert kid is not None
    assert _gone(fake_ssh.pid("background")) == [] and not _live(kid)


def test_a_background_child_and_no_output(fake_ssh: FakeSsh) -> None:
    poll, took = _poll("background-empty", timeout_s=2.0)
    assert _one_line(poll) == "nvidia-smi printed nothing", poll.error
    assert took < 3.0, took
    assert _gone(fake_ssh.pid("background-empty")) == []


def test_a_child_that_left_the_session_cannot_keep_the_poll(fake_ssh: FakeSsh) -> None:
    # setsid: out of ssh's process group, out of reach; the poll stops reading its output and fails.
    poll, took = _poll("escapee", timeout_s=2.0)
    try:
        assert _one_line(poll).startswith("ssh: exited, but a process it started kept its output open"), poll.error
        assert took < 6.0 + 2, took
        assert _gone(fake_ssh.pid("escapee")) == []
    finally:
        kid = fake_ssh.kid("escapee")
        if kid is not None:
            os.kill(kid, signal.SIGKILL)


def test_a_child_that_ignores_sigterm_is_killed_with_its_group(fake_ssh: FakeSsh) -> None:
    poll, took = _poll("ignore-term", timeout_s=0.5)  # the deadline: 1.5 s
    assert _one_line(poll) == "ssh: no answer within 1.5 s (the ssh command was killed)", poll.error
    assert took < 1.5 + 3, took
    kid = fake_ssh.kid("ignore-term")
    assert _gone(fake_ssh.pid("ignore-term")) == [] and kid is not None and not _live(kid)


def test_control_characters_in_the_message_are_made_visible(fake_ssh: FakeSsh) -> None:
    # Before: "ssh: bad\x1b[2J\x1b]0;owned\x07 news\x00 here" was stored and printed raw.
    poll, _ = _poll("control-chars")
    assert _one_line(poll) == r"ssh: bad\x1b[2J\x1b]0;owned\x07 news\x00 here", poll.error


# -- the collector as a process ---------------------------------------------------------------------------


@pytest.fixture
def healthy_node() -> Iterator[str]:
    node = make_node("healthy", gpus=2)
    node.serve(0.1)
    yield node.url
    node.close()


def _fleet(tmp_path: Path, healthy_url: str, hostile_host: str, timeout_s: float) -> Path:
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(f'[fleet]\ntimeout_s = {timeout_s}\n'
                     f'[[node]]\nname = "hostile"\nurl = "ssh://{hostile_host}"\n'
                     f'[[node]]\nname = "healthy"\nurl = "{healthy_url}"\n', encoding="utf-8")
    return fleet


def _stored(db: Path) -> dict[str, tuple[str, str | None]]:
    if not db.exists():
        return {}
    conn = open_database(db, readonly=True)
    try:
        rows = query(conn, "SELECT name, status, last_error FROM nodes")
        return {r["name"]: (r["status"], r["last_error"]) for r in rows}
    finally:
        conn.close()


@pytest.mark.parametrize("host", ["stderr-flood-hang", "ignore-term"])
def test_the_collector_answers_sigterm_while_an_ssh_poll_hangs(tmp_path: Path, fake_ssh: FakeSsh,
                                                                healthy_node: str, host: str) -> None:
    # Before: stop() waited for the running cycle (shutdown(wait=True)): at best the whole 30 s deadline
    # of the hostile poll, and for ever where the poll hung on its pipes.
    fleet = _fleet(tmp_path, healthy_node, f"later-{host}", timeout_s=10)
    db = tmp_path / "fleet.db"
    proc = subprocess.Popen([sys.executable, "-m", "fleetmon", "collect", "--fleet", str(fleet), "--db", str(db),
                             "--interval", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO), PATH=fake_ssh.path), cwd=REPO)
    try:
        pgid = fake_ssh.pid(host, wait_s=30)  # the second cycle: the first stored both nodes
        assert _stored(db) == {"healthy": ("ok", None), "hostile": ("ok", None)}
        _hanging(fake_ssh, host, pgid)  # the hostile poll is well under way (its deadline is 30 s away)
        assert _group(pgid), "the hostile ssh should still be running"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(8)
        except subprocess.TimeoutExpired:
            pytest.fail("the collector did not stop within 8 s of SIGTERM")
        took = time.monotonic() - t0
        out, err = proc.communicate()
        assert rc == 0, err
        assert "Traceback" not in err, err
        assert took < 8, took
        assert _gone(pgid) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_collect_once_ends_with_a_hanging_ssh_node_and_stores_the_healthy_one(tmp_path: Path, fake_ssh: FakeSsh,
                                                                               healthy_node: str) -> None:
    # Before: the stderr flood left the poll waiting for ever; --once never exited.
    fleet = _fleet(tmp_path, healthy_node, "stderr-flood-hang", timeout_s=1)
    db = tmp_path / "fleet.db"
    t0 = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", "fleetmon", "collect", "--fleet", str(fleet), "--db", str(db),
                               "--once"], capture_output=True, text=True, timeout=60,
                              env=dict(os.environ, PYTHONPATH=str(REPO), PATH=fake_ssh.path), cwd=REPO)
    except subprocess.TimeoutExpired:
        pytest.fail("collect --once did not exit within 60 s")
    assert done.returncode == 0, done.stderr
    assert "polled 2 nodes: 1 ok, 1 unreachable" in done.stdout, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] == "  hostile: ssh: no answer within 3 s (the ssh command was killed)", \
        done.stderr
    stored = _stored(db)
    assert stored["healthy"][0] == "ok", stored
    assert stored["hostile"][1] == "ssh: no answer within 3 s (the ssh command was killed)", stored
    assert time.monotonic() - t0 < 30
    assert _gone(fake_ssh.pid("stderr-flood-hang")) == []


def test_stop_cancels_a_cycle_whose_ssh_poll_hangs(tmp_path: Path, fake_ssh: FakeSsh, healthy_node: str) -> None:
    from fleetmon.collector.poller import Collector
    from fleetmon.fleet import load_fleet

    db = open_database(tmp_path / "fleet.db")
    try:
        collector = Collector(load_fleet(_fleet(tmp_path, healthy_node, "ignore-term", timeout_s=10)), db,
                              interval_s=1)
        collector.start()
        pgid = fake_ssh.pid("ignore-term", wait_s=30)
        t0 = time.monotonic()
        assert collector.stop() is True
        assert time.monotonic() - t0 < 5.5
        assert _gone(pgid) == []
        assert collector.cycles == 0  # the cancelled cycle stored nothing
    finally:
        db.close()


def test_stop_waits_a_bounded_time_for_a_cycle_that_does_not_end(tmp_path: Path) -> None:
    # Before: shutdown(wait=True) waited for the running cycle, however long it took.
    import threading

    from fleetmon.collector.poller import Collector
    from fleetmon.fleet import load_fleet

    release = threading.Event()
    started = threading.Event()

    class Stuck(Collector):  # a cycle past its polls that does not return (a store or a health pass)
        def run_cycle(self, *, force: bool = False, only: set[str] | None = None) -> list[NodePoll]:
            started.set()
            release.wait(60)
            return []

    fleet = tmp_path / "fleet.toml"
    fleet.write_text('[[node]]\nname = "n"\nurl = "http://127.0.0.1:9"\n', encoding="utf-8")
    collector = Stuck(load_fleet(fleet), None, interval_s=30)
    collector.start()
    try:
        assert started.wait(10)
        t0 = time.monotonic()
        assert collector.stop(wait_s=1.0) is False
        assert time.monotonic() - t0 < 4
    finally:
        release.set()


def test_collect_once_answers_sigterm_while_an_ssh_poll_hangs(tmp_path: Path, fake_ssh: FakeSsh,
                                                               healthy_node: str) -> None:
    # Before: SIGTERM killed --once at once and left the hanging ssh's process group (a session of its own)
    # running.
    fleet = _fleet(tmp_path, healthy_node, "stderr-flood-hang", timeout_s=10)
    db = tmp_path / "fleet.db"
    proc = subprocess.Popen([sys.executable, "-m", "fleetmon", "collect", "--fleet", str(fleet), "--db", str(db),
                             "--once"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO), PATH=fake_ssh.path), cwd=REPO)
    try:
        pgid = fake_ssh.pid("stderr-flood-hang", wait_s=30)
        _hanging(fake_ssh, "stderr-flood-hang", pgid)
        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(8)
        except subprocess.TimeoutExpired:
            pytest.fail("collect --once did not stop within 8 s of SIGTERM")
        out, err = proc.communicate()
        assert rc == 1 and "Traceback" not in err, err
        assert err.strip().splitlines()[-1] == "fleetmon collect: stopped by a signal; this cycle was not stored", err
        assert _gone(pgid) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
