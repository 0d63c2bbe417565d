"""Stand-in ``pynvml`` for tests and demos: the simulated twin, configured from the environment.

Put ``tests/helpers/fakenvml`` first on PYTHONPATH and ``import pynvml`` loads this module.
``FLEETMON_SIM_SCENARIO`` picks the scenario (default "healthy", a 2-GPU node).
"""
import os

from fleetmon.agent.simnvml import *  # noqa: F401,F403 - the pynvml API (__all__)
from fleetmon.agent.simnvml import NVMLError, configure, inject, set_lost  # noqa: F401

configure(os.environ.get("FLEETMON_SIM_SCENARIO", "healthy"))
