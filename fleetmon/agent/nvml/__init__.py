"""The NVML boundary: the only package that talks to ``pynvml``.

Everything above this package sees plain values plus a :class:`Status` per
field; ``pynvml.NVMLError`` never escapes. Units follow fleetmon.fields
(watts, °C, MiB, MHz, KB/s), not NVML's (mW, bytes …). The raw module stays
inside the package (``NvmlSession._nv``): NVML's Xid events, too, leave it
only as :class:`XidNotice` values (:meth:`NvmlSession.xid_events`).

One module per concern:

* :mod:`~fleetmon.agent.nvml.load` - the real ``pynvml`` or the simulated twin
  (the only module that imports ``pynvml``);
* :mod:`~fleetmon.agent.nvml.session` - :class:`NvmlSession`: enumeration,
  cached handles and inventory, deadlines, lost and vanished GPUs;
* :mod:`~fleetmon.agent.nvml.readers` - one record: error classification, the
  per-field loop over the catalog and the hand-written readers;
* :mod:`~fleetmon.agent.nvml.events` - Xid events (:class:`XidEvents`);
* :mod:`~fleetmon.agent.nvml.pool` - the per-GPU worker lanes.

Four outcomes per reading (fleetmon.records.Status): a value; ``unsupported``
(NOT_SUPPORTED, FUNCTION_NOT_FOUND, or a function this pynvml lacks: permanent,
never an alarm); ``failed`` (any other error, or not answered in time);
``gpu_lost`` (GPU_IS_LOST, or the GPU left enumeration).
"""

from __future__ import annotations

from fleetmon.agent.nvml.events import EventWaitError, XidEvents, XidNotice
from fleetmon.agent.nvml.load import PynvmlApi, load_nvml, load_pynvml
from fleetmon.agent.nvml.readers import SAMPLE_FIELDS, UNSUPPORTED_MEMO_S, check_readers, sample_field_names
from fleetmon.agent.nvml.session import (
    DEFAULT_CALL_TIMEOUT_S,
    DEFAULT_INVENTORY_WAIT_S,
    INVENTORY_RETRY_S,
    NvmlSession,
    open_nvml,
)

__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "DEFAULT_INVENTORY_WAIT_S",
    "INVENTORY_RETRY_S",
    "SAMPLE_FIELDS",
    "UNSUPPORTED_MEMO_S",
    "EventWaitError",
    "NvmlSession",
    "PynvmlApi",
    "XidEvents",
    "XidNotice",
    "check_readers",
    "load_nvml",
    "load_pynvml",
    "open_nvml",
    "sample_field_names",
]
