"""Everything simulated, for tests, benchmarks and demos; the agent and collector never need it.

* :mod:`fleetmon.sim.nvml` - :class:`~fleetmon.sim.nvml.SimulatedNvml`, the simulated twin of
  pynvml (one object per node), with its constants, error classes and structures in
  ``nvml_constants``, ``nvml_errors`` and ``nvml_structs``, its device calls in ``nvml_device``
  and the GPU/node model in ``device``.
* :mod:`fleetmon.sim.scenarios` - the scenario tables the simulated nodes run.
* :mod:`fleetmon.sim.fleet` - many simulated agents served from one process (collector tests).
* :mod:`fleetmon.sim.synthetic` - synthetic recorded history for the health tests and benchmarks.
"""
