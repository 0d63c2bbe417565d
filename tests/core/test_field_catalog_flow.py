"""The field catalog is the one declaration: a field added to a copy of it flows through
the sampler, the minute aggregation, the store (columns, ingest, rollup, read back),
``/metrics`` and the fleet table's columns, with no other file touched.

The new field is a gauge, ``fake_extra_w``, that a fake NVML function answers (in mW, as
NVML's power calls do). The fake NVML module is the simulated twin plus that function.
"""

from __future__ import annotations

import json
import sqlite3
import urllib.request
from typing import Any

import pytest
from sqlite_utils import Database

from fleetmon.sim.nvml import SimulatedNvml
from fleetmon.agent.buffer import Buffer
from fleetmon.agent.nvml import open_nvml
from fleetmon.agent.prom import render_metrics, sample_metrics
from fleetmon.agent.sampler import Sampler
from fleetmon.agent.server import AgentState, make_server, serve_in_thread
from fleetmon.fields import CATALOG, FIELDS, ROLLUPS, Field, NvmlCall, Prom, Stored, UiColumn
from fleetmon.records import GpuMinute, NodePoll
from storage import schema
from storage.ingest import ingest_polls
from storage.rollup import rollup

T0 = 1_800_000_000.0
EXTRA = Field("fake_extra_w", "W", "gauge", "A fake extra power sensor",
              nvml=NvmlCall("nvmlDeviceGetFakeExtraPower", (("NVML_FAKE_EXTRA_SENSOR", 7),), conv="milli"),
              stored=Stored(scale=10, since="m900_fake_extra"),
              prom=Prom("fleetmon_gpu_fake_extra_watts", "gauge", "A fake extra power sensor (in W)."),
              ui=UiColumn("Extra"))
FIELDS_PLUS: tuple[Field, ...] = CATALOG + (EXTRA,)


def _fake_extra_mw(index: int, sensor: int) -> int:
    return 100_000 + 1_000 * index + sensor


class ExtendedNvml(SimulatedNvml):
    """The simulated twin plus ``nvmlDeviceGetFakeExtraPower(handle, sensor)``; everything else is the twin's."""

    def nvmlDeviceGetFakeExtraPower(self, handle: Any, sensor: int) -> int:
        return _fake_extra_mw(int(self.nvmlDeviceGetIndex(handle)), sensor)


@pytest.fixture()
def agent(tmp_path):
    """A session, sampler, buffer and HTTP server over the extended catalog."""
    clock = [T0]
    nv = ExtendedNvml("healthy-a100", clock=lambda: clock[0], start=T0 - 600, seed=3)
    session = open_nvml(nv, fields=FIELDS_PLUS, inventory_wait_s=2.0)
    buffer = Buffer(tmp_path / "buffer.db")
    sampler = Sampler(session, buffer, interval_s=5.0, clock=lambda: clock[0])
    state = AgentState(node=session.node_info, inventory=lambda: [session.inventory(i) for i in session.indices()],
                       sampler=sampler, buffer=buffer, started_at=T0)
    server = make_server(state, "127.0.0.1", 0)
    serve_in_thread(server, poll_interval_s=0.05)
    try:
        yield session, sampler, clock, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        buffer.close()
        session.close()


def test_a_new_field_flows_through_sampler_store_and_metrics(agent, tmp_path):
    session, sampler, clock, url = agent
    for _ in range(14):  # 70 s: the first minute completes and goes to the buffer
        clock[0] += 5
        samples = sampler.sample_once()
    # The completed minutes as the collector receives them (the agent's wire format).
    with urllib.request.urlopen(url + "/v1/minutes?after=0", timeout=5) as resp:
        minutes = [GpuMinute.from_dict(m) for m in json.loads(resp.read())["records"]]

    # The sampler read it through the catalog's call, with the catalog's conversion (mW -> W).
    for s in samples:
        assert s.values["fake_extra_w"] == _fake_extra_mw(s.index, 7) / 1000
        assert "fake_extra_w" not in s.status
    # The minute keeps what its kind says.
    assert ROLLUPS[EXTRA.kind] == "min/mean/max"
    assert minutes and all(m.values["fake_extra_w_mean"] == _fake_extra_mw(m.index, 7) / 1000 for m in minutes)
    assert minutes[0].values["fake_extra_w_min"] == minutes[0].values["fake_extra_w_max"]

    # /metrics exports its family, read over HTTP.
    with urllib.request.urlopen(url + "/metrics", timeout=5) as resp:
        page = resp.read().decode()
    assert "# TYPE fleetmon_gpu_fake_extra_watts gauge" in page
    assert "# HELP fleetmon_gpu_fake_extra_watts A fake extra power sensor (in W)." in page
    assert f'fleetmon_gpu_fake_extra_watts{{gpu="0",' in page
    assert 'field="fake_extra_w"' in page  # fleetmon_gpu_reading_ok covers it too
    assert list(sample_metrics(FIELDS_PLUS))[-1] == "fake_extra_w"

    # The store: a fresh database has its columns (added by its own schema step), an ingested
    # minute keeps it at the declared resolution, and the rollups carry it.
    layout = schema.Layout(FIELDS_PLUS)
    assert list(layout.steps) == ["m900_fake_extra"]
    conn = sqlite3.connect(tmp_path / "store.db", isolation_level=None)
    db = Database(conn)
    layout.migrations.apply(db)
    columns = [r[1] for r in db.execute("PRAGMA table_info(samples)")]
    assert columns == layout.sample_column_names
    assert columns[-3:] == ["fake_extra_w_mean", "fake_extra_w_dmin", "fake_extra_w_dmax"]
    inventory = [session.inventory(i) for i in session.indices()]
    poll = NodePoll(node="n1", url="http://n1", ts=clock[0], ok=True, gpus=inventory, minutes=minutes,
                    latest=samples)
    assert ingest_polls(db, [poll], layout=layout) == len(minutes)
    cols, decode = layout.row_decoder("minute", {"fake_extra_w"})
    stored = [decode(r) for r in db.execute(f"SELECT {', '.join(cols)} FROM samples ORDER BY gpu_id, ts")]
    assert len(stored) == len(minutes)
    expected = sorted(round(m.values["fake_extra_w_mean"], 1) for m in minutes)
    assert sorted(r["fake_extra_w_mean"] for r in stored) == expected
    rollup(db, now=clock[0], since=0, layout=layout)
    cols, decode = layout.row_decoder("rollup", {"fake_extra_w"})
    hourly = [decode(r) for r in db.execute(f"SELECT {', '.join(cols)} FROM hourly")]
    assert hourly and all(r["fake_extra_w_mean"] is not None for r in hourly)
    # The first release's columns are where they were.
    assert columns[:len(schema.SAMPLE_COLUMNS)] == schema.SAMPLE_COLUMNS
    db.close()


def test_the_default_catalog_is_unchanged_by_a_copy():
    """Building from a copy leaves the module-level layout, metrics and session fields alone."""
    assert "fake_extra_w" not in FIELDS
    assert "fake_extra_w" not in schema.SAMPLE_COLUMNS and "fake_extra_w_mean" not in schema.SAMPLE_COLUMNS
    assert "fake_extra_w" not in sample_metrics()
    assert schema.Layout().sample_column_names == schema.SAMPLE_COLUMNS


def test_a_new_stored_field_needs_its_own_schema_step():
    sneaky = Field("fake_extra_w", "W", "gauge", "joins the first release", nvml=NvmlCall("nvmlDeviceGetFakeExtraPower"))
    with pytest.raises(ValueError, match="frozen"):
        schema.Layout(CATALOG + (sneaky,))


def test_every_field_is_read_by_a_call_or_a_named_reader():
    from fleetmon.agent.nvml import readers as nvml

    assert nvml.check_readers(CATALOG) is CATALOG
    readers = {f.reader for f in CATALOG if f.nvml is None}
    assert readers == set(nvml._READERS)  # no reader left over, none missing
    bad = Field("x_w", "W", "gauge", "unknown reader", reader="_read_nothing")
    with pytest.raises(ValueError, match="_read_nothing"):
        nvml.check_readers((bad,))


def test_render_metrics_takes_the_catalog(agent):
    session, sampler, clock, _ = agent
    clock[0] += 5
    samples = sampler.sample_once()
    inventory = [session.inventory(i) for i in session.indices()]
    page = render_metrics(session.node_info(), inventory, samples, {}, fields=FIELDS_PLUS)
    assert "fleetmon_gpu_fake_extra_watts" in page
    assert "fleetmon_gpu_fake_extra_watts" not in render_metrics(session.node_info(), inventory, samples, {})
