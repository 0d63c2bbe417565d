"""Synthetic fleet histories for tests and benchmarks (see fleetmon.sim.history)."""
