"""Issue 23: m013 makes the stored versions vendor-neutral; a database from before it reads as NVIDIA's."""

from __future__ import annotations

import sqlite3


from sqlite_utils import Database, Migrations

from fleetmon.records import GpuInventory, NodeInfo, NodePoll
from storage import queries
from storage.db import open_database
from storage.ingest import ingest_polls as ingest
from storage.schema import MIGRATION_SET, migrations


def _database_before_m013(path: str) -> None:
    """A database migrated up to m012 only (as fleetmon before issue 23 left it), with a node and a card."""
    db = Database(sqlite3.connect(path))
    old = Migrations(MIGRATION_SET)
    for m in migrations._migrations:
        if m.name < "m013":
            old(name=m.name)(m.fn)
    old.apply(db)
    db.execute("INSERT INTO nodes (name, driver_version, cuda_driver_version, nvml_version) "
               "VALUES ('n1', '535.161.08', '12.2', '12.535.161.08')")
    db.execute("INSERT INTO nodes (name) VALUES ('never-answered')")
    db.execute("INSERT INTO gpus (uuid, node, idx, name) VALUES ('GPU-aaaaaaaa-0000', 'n1', 0, 'NVIDIA A100')")
    db.conn.commit()
    db.conn.close()


def test_m013_fills_existing_rows_as_nvidia(tmp_path):
    path = str(tmp_path / "old.db")
    _database_before_m013(path)
    db = open_database(path)
    by_name = {n.name: n for n in queries.nodes(db)}
    assert by_name["n1"].vendor == "nvidia" and by_name["n1"].runtime_version == "12.2"
    assert by_name["n1"].cuda_driver_version == "12.2"  # the NVIDIA column stays for scripts that read it
    assert by_name["never-answered"].vendor is None  # nothing known: no vendor invented
    (gpu,) = queries.gpus(db)
    assert gpu.vendor == "nvidia"


def test_a_version_1_answer_and_another_vendors_node_are_stored_with_their_vendor(tmp_path):
    from fleetmon.records import vendor_defaults

    db = open_database(tmp_path / "f.db")
    old_info = NodeInfo(hostname="old", agent_version="0.1", values={"driver_version": "535.1",
                                                                     "cuda_driver_version": "12.2"})
    old_gpu = GpuInventory(uuid="GPU-11111111-2222", index=0, name="Tesla V100", values={"uuid": "GPU-11111111-2222"})
    info, gpus = vendor_defaults(old_info, [old_gpu])  # what the collector does with a wire-1 answer
    amd = NodeInfo(hostname="mi", agent_version="0.2", values={"vendor": "amd", "driver_version": "6.8.5",
                                                               "runtime_version": "6.2.0"})
    amd_gpu = GpuInventory(uuid="0x18ffabc123456789", index=0, name="AMD Instinct MI100",
                           values={"uuid": "0x18ffabc123456789", "vendor": "amd"})
    amd_info, amd_gpus = vendor_defaults(amd, [amd_gpu])
    ingest(db, [NodePoll(node="old", url="http://old", ts=1000.0, ok=True, info=info, gpus=gpus),
                NodePoll(node="mi", url="ssh://mi", ts=1000.0, ok=True, info=amd_info, gpus=amd_gpus)])
    nodes = {n.name: n for n in queries.nodes(db)}
    assert (nodes["old"].vendor, nodes["old"].runtime_version) == ("nvidia", "12.2")
    assert (nodes["mi"].vendor, nodes["mi"].runtime_version, nodes["mi"].cuda_driver_version) == ("amd", "6.2.0", None)
    vendors = {g.uuid: g.vendor for g in queries.gpus(db)}
    assert vendors == {"GPU-11111111-2222": "nvidia", "0x18ffabc123456789": "amd"}
    assert {r.uuid: r.vendor for r in queries.fleet_latest(db)} == vendors
