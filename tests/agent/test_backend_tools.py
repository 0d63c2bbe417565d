"""Issue 23 item 2: the agent's backends over the vendors' tools, each through its simulated twin (real
subprocesses printing the fixtures' layouts), served over real HTTP and read back by the collector's client."""

from __future__ import annotations

import asyncio
import json
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from fleetmon.agent.backend import BACKENDS, backend_names
from fleetmon.agent.main import start_agent
from fleetmon.agent.polled import ReadError
from fleetmon.agent.tools import run_tool
from fleetmon.collector.client import Target, poll_all
from fleetmon.records import NodePoll
from fleetmon.sim import vendors


def _scenario(tmp_path: Path, backend: str, model: str, count: int, faults: list[dict[str, Any]] | None = None,
              name: str = "node") -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"backend": backend, "model": model, "count": count, "seed": 7,
                                "faults": faults or []}))
    return path


def _set_faults(path: Path, faults: list[dict[str, Any]]) -> None:
    """The twin reads its scenario at every call: a fault added here acts from the next call on."""
    doc = json.loads(path.read_text())
    doc["faults"] = faults
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc))
    tmp.replace(path)


def _start(tmp_path: Path, backend: str, scenario: Path, *, read_timeout_s: float = 20.0) -> Any:
    spec = BACKENDS[backend] if backend in BACKENDS else None
    if spec is None:
        backend_names()
        spec = BACKENDS[backend]

    def open_backend(**kw: Any) -> Any:
        return spec.open(simulate=str(scenario), node_name="twin-node", **kw)

    return start_agent(open_backend=open_backend, buffer=tmp_path / "agent.db", port=0, loop=False,
                       watch_xid=False, simulate=True, node_name="twin-node", read_timeout_s=read_timeout_s)


def _poll(url: str) -> NodePoll:
    (p,) = asyncio.run(poll_all([Target("n", url)], timeout_s=10.0))
    assert p.ok, p.error
    return p


def _twins_running(state: Path) -> list[int]:
    """Processes of this test's twin still alive (their environment names its state file)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if f"FLEETMON_SIM_STATE={state}".encode() in environ.split(b"\0"):
            found.append(int(proc.name))
    return found


def _health(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url + "/v1/health", timeout=10) as resp:
        return json.loads(resp.read())


TWINS = [
    # backend, model, devices of count 2, the sensor temp_c is, whether the tool gives the power cap / ECC
    ("amd-smi", "mi300x", 2, "temp_junction_c", True, True),
    ("rocm-smi", "mi100", 2, "temp_junction_c", True, False),
    ("hy-smi", "k100", 2, "temp_junction_c", False, False),
    ("npu-smi", "a3", 4, "temp_junction_c", False, False),
    ("hl-smi", "gaudi3", 2, "temp_junction_c", True, True),
    ("mthreads-gmi", "s4000", 2, "temp_junction_c", False, False),
]


@pytest.mark.parametrize(("backend", "model", "devices", "sensor", "has_cap", "has_ecc"), TWINS,
                         ids=[t[0] for t in TWINS])
def test_tool_backend_serves_its_twin_to_the_collector(tmp_path, backend, model, devices, sensor, has_cap, has_ecc):
    path = _scenario(tmp_path, backend, model, 2)
    agent = _start(tmp_path, backend, path)
    try:
        p = _poll(agent.url)
        entry = vendors.resolve(str(path))
        prof = vendors.PROFILES[model]
        assert p.info.values["vendor"] == prof.vendor and agent.session.name == backend
        assert len(p.gpus) == devices and len(p.latest) == devices
        for gpu, sample in zip(p.gpus, p.latest):
            twin = vendors.device_state(entry, gpu.index, 0.0, "twin-node")
            assert gpu.values["vendor"] == prof.vendor
            assert gpu.values["pci_bus_id"] in (twin["bus_id"], None) or backend == "hy-smi"
            assert gpu.values["memory_total_mib"] == prof.memory_mib
            assert twin["serial"] in str(gpu.values["serial"])
            v, st = sample.values, sample.status
            lo, hi = min(prof.edge_c, prof.junction_c) - 1, prof.slowdown_c
            assert lo <= v["temp_c"] <= hi
            if twin["power_w"] is not None:
                assert prof.idle_w - 2 <= v["power_w"] <= prof.busy_w + 2
            assert 0 <= v["mem_used_mib"] <= prof.memory_mib
            # what the tool cannot give stays null and unsupported, never 0
            assert v["fan_pct"] is None and st["fan_pct"] == "unsupported"
            if not has_cap:
                assert v["power_limit_w"] is None and st["power_limit_w"] == "unsupported"
            else:
                assert v["power_limit_w"] == prof.power_cap_w
            if not has_ecc:
                assert v["ecc_unc_vol"] is None and st["ecc_unc_vol"] == "unsupported"
            else:
                assert v["ecc_unc_vol"] == 0
        if backend == "npu-smi":  # two chips per A3 NPU: each a device, on one card
            cards = [g.values["card_id"] for g in p.gpus]
            assert cards[0] == cards[1] != cards[2] == cards[3] and cards[0]
            assert p.latest[1].values["power_w"] is None and p.latest[1].status["power_w"] == "unsupported"
            assert agent.session.extra(0)["health"] == "OK"
            # a chip's health turns Warning: the sample asks -t health for its error codes
            _set_faults(path, [{"kind": "health", "gpu": 1, "onset_s": 0, "state": "Warning", "codes": ["80E18401"]}])
            agent.sampler.sample_once()
            assert agent.session.extra(1)["health"] == "Warning"
            assert agent.session.extra(1)["error_codes"] == ["80E18401"]
            assert agent.session.extra(0)["health"] == "OK"
        if backend == "amd-smi":
            assert p.info.values["runtime_version"] == prof.runtime
            assert agent.session.extra(0)["ecc_blocks"]["UMC"] == {"correctable": 0, "uncorrectable": 0,
                                                                   "deferred": 0}
        assert _health(agent.url)["sampler"]["enumeration_error"] is None
    finally:
        agent.close()


def test_a_hung_tool_gives_failed_readings_in_time_and_the_agent_keeps_serving(tmp_path):
    path = _scenario(tmp_path, "rocm-smi", "mi100", 2)
    agent = _start(tmp_path, "rocm-smi", path, read_timeout_s=1.5)
    try:
        _set_faults(path, [{"kind": "hang", "onset_s": 0, "seconds": 120}])
        t0 = time.monotonic()
        samples = agent.sampler.sample_once()
        assert time.monotonic() - t0 < 10  # the tool was stopped at the deadline, not waited for
        for s in samples:
            assert s.state == "ok"  # a hung tool does not make the devices lost
            assert s.values["temp_c"] is None and s.status["temp_c"] == "failed"
        h = _health(agent.url)["sampler"]
        assert "did not answer within" in h["enumeration_error"] and "rocm-smi" in h["enumeration_error"]
        assert _twins_running(agent.session.reader.cleanup / "state.json") == []  # the hung tool was killed
        p = _poll(agent.url)
        assert [g.state for g in p.gpus] == ["ok", "ok"]
        _set_faults(path, [])
        time.sleep(0.3)
        samples = agent.sampler.sample_once()
        assert all(s.values["temp_c"] is not None for s in samples)
        assert _health(agent.url)["sampler"]["enumeration_error"] is None
    finally:
        agent.close()


def test_a_tool_printing_garbage_or_failing_gives_one_clear_reason_and_no_value(tmp_path):
    path = _scenario(tmp_path, "rocm-smi", "mi100", 2)
    agent = _start(tmp_path, "rocm-smi", path)
    try:
        for fault, reason in [
            ({"kind": "garbage"}, "rocm-smi --showallinfo --json: "),
            ({"kind": "exit", "code": 3, "message": "ERROR: GPU[0] : amdgpu driver not loaded\nmore detail"},
             "rocm-smi --showallinfo --json exited with status 3: ERROR: GPU[0] : amdgpu driver not loaded"),
        ]:
            _set_faults(path, [{**fault, "onset_s": 0}])
            samples = agent.sampler.sample_once()
            for s in samples:
                assert all(v is None for v in s.values.values())
                assert s.status["power_w"] == "failed" and s.state == "ok"
            why = _health(agent.url)["sampler"]["enumeration_error"]
            assert why.startswith(reason) and "\n" not in why, why
            p = _poll(agent.url)
            assert all(s.values["power_w"] is None for s in p.latest)
    finally:
        agent.close()


def test_a_device_leaving_the_tools_list_is_lost_with_the_gpu_lost_event(tmp_path):
    path = _scenario(tmp_path, "rocm-smi", "mi100", 3)
    agent = _start(tmp_path, "rocm-smi", path)
    try:
        _set_faults(path, [{"kind": "vanish", "gpu": 1, "onset_s": 0}])
        samples = agent.sampler.sample_once()
        assert [s.state for s in samples] == ["ok", "lost", "ok"]
        assert samples[1].status["temp_c"] == "gpu_lost" and samples[1].values["temp_c"] is None
        p = _poll(agent.url)
        assert [g.state for g in p.gpus] == ["ok", "lost", "ok"]
        lost = [e for e in p.events if e.kind == "gpu_lost"]
        assert len(lost) == 1 and lost[0].uuid == p.gpus[1].uuid
        assert "rocm-smi no longer lists it" in lost[0].message
        _set_faults(path, [])
        samples = agent.sampler.sample_once()
        assert samples[1].state == "ok"
        assert [e.kind for e in _poll(agent.url).events if e.kind == "gpu_back"] == ["gpu_back"]
    finally:
        agent.close()


def test_auto_tries_the_backends_in_the_documented_order():
    names = backend_names()
    assert names == ["auto", "nvml", "hy-smi", "amdsmi", "amd-smi", "rocm-smi", "npu-smi", "hl-smi", "mthreads-gmi"]
    assert {BACKENDS[n].vendor for n in names[1:]} == {"nvidia", "amd", "hygon", "huawei", "intel", "mthreads"}


def test_the_twins_faults_follow_their_documented_course():
    entry = vendors.resolve("hygon-k100")  # DCU 2 runs hot from 300 s up to 98 °C (over the 95 °C junction default)
    prof = vendors.PROFILES["k100"]
    before = vendors.device_state(entry, 2, 299.0)["temp_junction_c"]
    later = vendors.device_state(entry, 2, 299.0 + 3600)["temp_junction_c"]
    assert before < prof.slowdown_c - 20 and later == 98.0
    plain = {**entry, "faults": [{"kind": "hot", "gpu": 2, "onset_s": 0.0}]}  # no peak_c: 1 °C under the limit
    assert vendors.device_state(plain, 2, 3600.0)["temp_junction_c"] == prof.slowdown_c - 1
    mi100 = vendors.resolve("amd-mi100")  # GPU 1: one uncorrectable error in UMC at 600 s
    assert vendors.device_state(mi100, 1, 599.0)["ecc_blocks"]["UMC"]["uncorrectable"] == 0
    after = vendors.device_state(mi100, 1, 600.0)
    assert after["ecc_blocks"]["UMC"]["uncorrectable"] == 1 and after["ecc_unc"] == 1
    ascend = vendors.resolve("ascend-910b")  # NPU 3: health Warning with an error code at 900 s
    assert vendors.device_state(ascend, 3, 900.0)["health"] == "Warning"
    assert vendors.device_state(ascend, 3, 900.0)["error_codes"] == ["80E18401"]
    assert vendors.device_state(ascend, 3, 899.0)["health"] == "OK"
    for name in vendors.scenario_names():
        assert "[backend " in vendors.describe(name)


def test_run_tool_caps_the_output_and_says_why_a_tool_cannot_run(tmp_path):
    with pytest.raises(ReadError, match=r"wrote more than 1000 bytes \(stopped\)"):
        run_tool([sys.executable, "-c", "import sys; sys.stdout.write('x' * 100000)"], 30.0, max_bytes=1000)
    with pytest.raises(ReadError, match=r"^no-such-smi: cannot run: No such file or directory$"):
        run_tool([str(tmp_path / "no-such-smi")], 5.0)
