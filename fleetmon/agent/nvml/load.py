"""Loading NVML: the real ``pynvml``, or the simulated twin for ``--simulate``.

The only module of fleetmon that imports ``pynvml`` (the nvidia-ml-py
distribution). Anything with the same API works: :func:`load_nvml` is the one
place that chooses the real module or the simulated twin
(:class:`fleetmon.sim.nvml.SimulatedNvml`), and tests may put a fake
``pynvml`` first on PYTHONPATH.
"""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any, Callable

from fleetmon.errors import NvmlUnavailable
from fleetmon.i18n import N_, Text


def load_pynvml() -> ModuleType:
    """Import the real ``pynvml`` (or whatever is first on sys.path under that name).

    Raises:
        NvmlUnavailable: the module is not installed.
    """
    try:
        import pynvml  # provided by the nvidia-ml-py distribution
    except ImportError as exc:
        raise NvmlUnavailable(Text(
            N_("the pynvml module is missing: install nvidia-ml-py (pip install nvidia-ml-py)")
        )) from exc
    module: ModuleType = pynvml  # untyped (no stubs): see PynvmlApi
    return module


PynvmlApi = Any
"""The pynvml API: the real module or a ``fleetmon.sim.nvml.SimulatedNvml``.

Left untyped on purpose (a stated opt-out): pynvml ships no type stubs, and
calls are looked up by name so that an older pynvml reads as unsupported.
"""


def load_nvml(simulate: str | None = None, *, clock: Callable[[], float] = time.time,
              node_name: str | None = None) -> PynvmlApi:
    """The NVML to open: the real pynvml, or the simulated node of scenario ``simulate``.

    Args:
        simulate: a scenario of :mod:`fleetmon.sim.scenarios` (name, composite
            spec, JSON file); None for the real GPUs.
        clock: the simulation's clock (its time 0 is ``clock()`` now).
        node_name: one scenario on many nodes: distinct cards per node name.

    Raises:
        NvmlUnavailable: the real pynvml is not installed.
        KeyError, ValueError, OSError: an unknown or malformed scenario.
    """
    if simulate is None:
        return load_pynvml()
    from fleetmon.sim.nvml import SimulatedNvml  # only a simulating agent loads the simulator

    return SimulatedNvml(simulate, node_name, clock=clock, start=clock())
