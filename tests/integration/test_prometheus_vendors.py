"""History of a mixed fleet through a real Prometheus (issue 23): DCGM names for NVIDIA GPUs, the vendor-neutral
``fleetmon_gpu_*`` families for the others and for an NVIDIA GPU whose DCGM series are absent.

Three /metrics pages rendered by the agent's own :func:`fleetmon.agent.prom.render_metrics` from records built
directly (an Ascend node; an NVIDIA node; an NVIDIA node whose scrape kept only ``fleetmon_*``), served on
127.0.0.1 and scraped every second by a real Prometheus (apt-get install -y prometheus).
"""

from __future__ import annotations

import http.server
import threading
import time

import pytest

from fleetmon.agent.prom import render_metrics
from fleetmon.fields import CATALOG
from fleetmon.records import GpuInventory, GpuSample, NodeInfo
from fleetmon.remote.prometheus import PromClient, detail_window, fleet_gpus
from helpers.prometheus import running_prometheus, skip_without_prometheus
from tests.agent.test_prometheus_vendors import ascend_records

pytestmark = [pytest.mark.integration, skip_without_prometheus]

FIELDS = ("n", "temp_c", "power_w", "mem_used_mib", "util_gpu_pct", "ecc_unc_vol", "pcie_replay")


def nvidia_records(host: str, prefix: str) -> tuple[NodeInfo, list[GpuInventory], list[GpuSample]]:
    info = NodeInfo(hostname=host, agent_version="1", xid_source="nvml", values={
        "hostname": host, "driver_version": "550.54.15", "cuda_driver_version": "12.4", "vendor": "nvidia",
        "runtime_version": "12.4", "gpu_count": 1})
    uuid = f"GPU-{prefix}-0"
    inv = GpuInventory(uuid=uuid, index=0, name="NVIDIA A100-SXM4-80GB", values={
        "index": 0, "uuid": uuid, "name": "NVIDIA A100-SXM4-80GB", "vendor": "nvidia", "pci_bus_id": "0000:1b:00.0"})
    values = {"temp_c": 50.0, "power_w": 300.0, "mem_used_mib": 1024, "util_gpu_pct": 88.0, "ecc_unc_vol": 1,
              "pcie_replay": 7}
    status = {f.name: "unsupported" for f in CATALOG if f.name not in values}
    return info, [inv], [GpuSample(ts=1000.0, uuid=uuid, index=0, values=values, status=status)]


def _pages() -> dict[str, str]:
    full = render_metrics(*nvidia_records("nv-full", "full"), {})
    # The neutral temperature of the GPU with DCGM series is made 99 °C: a read that shows 50 took DCGM's.
    full = "\n".join(line.rsplit(" ", 1)[0] + " 99" if line.startswith("fleetmon_gpu_temperature_celsius{")
                     else line for line in full.splitlines()) + "\n"
    bare = "\n".join(line for line in render_metrics(*nvidia_records("nv-bare", "bare"), {}).splitlines()
                     if "DCGM_" not in line) + "\n"
    info, gpus, samples = ascend_records()
    return {"full": full, "bare": bare, "npu": render_metrics(info, gpus, samples, {})}


class _Page(http.server.BaseHTTPRequestHandler):
    text = ""

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        body = self.text.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def prom(tmp_path_factory):
    servers = []
    for name, text in _pages().items():
        handler = type(f"Page_{name}", (_Page,), {"text": text})
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
    try:
        targets = [f"127.0.0.1:{s.server_address[1]}" for s in servers]
        with running_prometheus(tmp_path_factory.mktemp("promv"), targets, interval_s=1.0) as running:
            running.wait_for_samples('fleetmon_gpu_temperature_celsius{vendor="huawei"}', 3, timeout_s=40)
            running.wait_for_samples('fleetmon_gpu_temperature_celsius{uuid="GPU-bare-0"}', 3, timeout_s=20)
            running.wait_for_samples('DCGM_FI_DEV_GPU_TEMP{UUID="GPU-full-0"}', 3, timeout_s=20)
            yield running
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()


def _last(prom, uuid: str) -> dict:
    now = time.time()
    window = detail_window(PromClient(prom.url), uuid, now - 3600, now + 60, FIELDS)
    assert window.rows, uuid
    return window.rows[-1]


def test_an_ascend_chip_reads_the_neutral_families_in_the_catalogs_units(prom):
    last = _last(prom, "NPU-1")
    assert last["temp_c_mean"] == 41 and last["temp_c_max"] == 41
    assert last["mem_used_mib_mean"] == 2048  # bytes back to MiB
    assert last["util_gpu_pct_mean"] == pytest.approx(25.0)  # a ratio back to %
    assert last["ecc_unc_vol"] == 3
    assert last["n"] >= 1  # counted on its temperature: the chip reads no power
    assert last.get("power_w_mean") is None  # missing, never zero
    assert _last(prom, "NPU-0")["power_w_mean"] == 93.5


def test_an_nvidia_gpu_reads_dcgm_first_and_the_neutral_families_without_them(prom):
    full = _last(prom, "GPU-full-0")
    assert full["temp_c_mean"] == 50  # DCGM_FI_DEV_GPU_TEMP, not the (tampered) neutral 99
    assert full["mem_used_mib_mean"] == 1024 and full["pcie_replay"] == 7
    bare = _last(prom, "GPU-bare-0")  # only fleetmon_* scraped
    assert bare["temp_c_mean"] == 50 and bare["power_w_mean"] == 300 and bare["ecc_unc_vol"] == 1
    assert bare["util_gpu_pct_mean"] == pytest.approx(88.0) and bare["n"] >= 1


def test_the_fleet_listing_names_every_vendors_gpus(prom):
    now = time.time()
    found = {g.uuid: g for g in fleet_gpus(PromClient(prom.url), now - 600, now, {})}
    assert set(found) == {"GPU-full-0", "GPU-bare-0", "NPU-0", "NPU-1"}
    assert (found["NPU-1"].vendor, found["NPU-1"].model, found["NPU-1"].node, found["NPU-1"].index) == (
        "huawei", "Ascend 910B4", "npu1", 1)
    full = found["GPU-full-0"]
    assert (full.vendor, full.model, full.driver_version) == ("nvidia", "NVIDIA A100-SXM4-80GB", "550.54.15")
    assert found["GPU-bare-0"].vendor == "nvidia" and found["GPU-bare-0"].node == "nv-bare"
