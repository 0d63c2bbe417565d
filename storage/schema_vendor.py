"""Schema step m013 (issue 23): the vendor of each node and card, and vendor-neutral node versions.

Before it, every node and card was NVIDIA's, and the node's versions were NVIDIA's
(driver, NVML, CUDA driver). The step adds ``nodes.vendor``, ``nodes.runtime_version``
(CUDA, ROCm, CANN, SynapseAI, MUSA), ``nodes.firmware_version`` and ``gpus.vendor``, and
fills the existing rows as what they were: NVIDIA's, with the CUDA driver version as the
runtime. The NVIDIA-only columns stay, so scripts that read them keep working.

Kept beside :mod:`storage.schema` (which registers it with its other hand-written
steps), free of storage imports so that registering it makes no import circle.
"""

from __future__ import annotations

from sqlite_utils import Database


def m013_vendor(db: Database) -> None:
    """Vendor columns on nodes and GPUs; existing rows are NVIDIA's."""
    db.execute("ALTER TABLE nodes ADD COLUMN vendor TEXT")
    db.execute("ALTER TABLE nodes ADD COLUMN runtime_version TEXT")
    db.execute("ALTER TABLE nodes ADD COLUMN firmware_version TEXT")
    db.execute("ALTER TABLE gpus ADD COLUMN vendor TEXT")
    db.execute("UPDATE nodes SET vendor = 'nvidia', runtime_version = cuda_driver_version "
               "WHERE driver_version IS NOT NULL OR cuda_driver_version IS NOT NULL")
    db.execute("UPDATE gpus SET vendor = 'nvidia' WHERE name IS NOT NULL")
    db.execute("CREATE INDEX gpus_vendor ON gpus (vendor)")
