"""Stand-in ``pynvml`` for tests and demos: the simulated twin, configured from the environment.

Put ``tests/helpers/fakenvml`` first on PYTHONPATH and ``import pynvml`` loads this module.
``FLEETMON_SIM_SCENARIO`` picks the scenario (default "healthy", a 2-GPU node).
"""
import os

from fleetmon.sim.nvml import SimulatedNvml

# The pynvml API plus configure/inject/set_lost, bound to this process's one simulated node.
globals().update(SimulatedNvml(os.environ.get("FLEETMON_SIM_SCENARIO", "healthy")).namespace())
