"""fleetmon: GPU fleet inventory and health monitor."""

__version__ = "0.1.0"
