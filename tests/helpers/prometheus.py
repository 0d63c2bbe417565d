"""A real Prometheus for tests: started on 127.0.0.1 in a temporary folder, stopped afterwards.

Usage::

    from helpers.prometheus import PROMETHEUS, running_prometheus, skip_without_prometheus

    pytestmark = skip_without_prometheus
    with running_prometheus(tmp_path, targets=["127.0.0.1:9414"]) as prom:
        prom.url  # http://127.0.0.1:<port>

Debian/Ubuntu: ``apt-get install -y prometheus`` (``/usr/bin/prometheus``);
``FLEETMON_PROMETHEUS`` names another binary.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PROMETHEUS = os.environ.get("FLEETMON_PROMETHEUS") or shutil.which("prometheus") or (
    "/usr/bin/prometheus" if Path("/usr/bin/prometheus").exists() else None)
"""The prometheus binary, or None."""

skip_without_prometheus = pytest.mark.skipif(
    PROMETHEUS is None, reason="needs a Prometheus server: apt-get install -y prometheus")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scrape_config(targets: Sequence[str], *, interval_s: float = 1.0, job: str = "fleetmon",
                  extra: str = "") -> str:
    """A minimal prometheus.yml scraping ``targets`` (``host:port``) every ``interval_s``."""
    listed = ", ".join(json.dumps(t) for t in targets)
    return (f"global:\n  scrape_interval: {interval_s:g}s\n  scrape_timeout: {min(interval_s, 10):g}s\n"
            f"  evaluation_interval: {interval_s:g}s\n"
            f"scrape_configs:\n  - job_name: {json.dumps(job)}\n    static_configs:\n      - targets: [{listed}]\n"
            + extra)


@dataclass
class RunningPrometheus:
    url: str
    process: subprocess.Popen[bytes]
    data_dir: Path
    log_path: Path

    def api(self, path: str, **params: Any) -> Any:
        """GET ``/api/v1/<path>`` and the answer's ``data`` (raises on a failed query)."""
        import urllib.parse

        query = urllib.parse.urlencode({k: str(v) for k, v in params.items()})
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}?{query}", timeout=10) as resp:
            doc = json.loads(resp.read())
        assert doc.get("status") == "success", doc
        return doc["data"]

    def wait_for_samples(self, expr: str, least: int, timeout_s: float = 30.0) -> None:
        """Wait until ``count_over_time(<expr>[1h])`` reaches ``least`` for some series."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = self.api("query", query=f"max(count_over_time({expr}[1h]))")["result"]
            if found and float(found[0]["value"][1]) >= least:
                return
            time.sleep(0.5)
        raise AssertionError(f"Prometheus did not scrape {least} samples of {expr} in {timeout_s:g} s:\n"
                             + self.log_path.read_text(errors="replace")[-2000:])

    def cpu_seconds(self) -> float:
        """User + system CPU of the server so far (``/proc/<pid>/stat``)."""
        return proc_cpu_seconds(self.process.pid)


def proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def running_prometheus(folder: Path, targets: Sequence[str] = (), *, config: str | None = None,
                       interval_s: float = 1.0, args: Sequence[str] = (), timeout_s: float = 30.0
                       ) -> Iterator[RunningPrometheus]:
    """Start Prometheus with ``config`` (default: :func:`scrape_config` of ``targets``); stop it on exit."""
    if PROMETHEUS is None:
        pytest.skip("needs a Prometheus server: apt-get install -y prometheus")
    folder.mkdir(parents=True, exist_ok=True)
    cfg = folder / "prometheus.yml"
    cfg.write_text(config if config is not None else scrape_config(targets, interval_s=interval_s))
    data = folder / "tsdb"
    port = free_port()
    log_path = folder / "prometheus.log"
    log = open(log_path, "wb")
    proc = subprocess.Popen([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={data}",
                             f"--web.listen-address=127.0.0.1:{port}", *args],
                            stdout=log, stderr=subprocess.STDOUT)
    running = RunningPrometheus(f"http://127.0.0.1:{port}", proc, data, log_path)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"prometheus exited with {proc.returncode}:\n"
                                   + log_path.read_text(errors="replace")[-2000:])
            try:
                with urllib.request.urlopen(f"{running.url}/-/ready", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"prometheus not ready after {timeout_s:g} s:\n"
                                   + log_path.read_text(errors="replace")[-2000:])
            time.sleep(0.2)
        yield running
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        log.close()
