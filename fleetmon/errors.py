"""Error classes: KnownError is the environment's fault, BugError is ours."""

from __future__ import annotations


class FleetmonError(Exception):
    """Base class for all fleetmon errors."""


class KnownError(FleetmonError):
    """The environment is at fault (driver missing, node down, disk full): tell the user."""


class BugError(FleetmonError):
    """fleetmon is at fault."""


class NvmlUnavailable(KnownError):
    """NVML cannot start on this machine (no library, no driver, version mismatch)."""


class NodeUnreachable(KnownError):
    """A node's agent did not answer, or answered something we cannot use."""


class ConfigError(KnownError):
    """A configuration or fleet file is invalid; the message names file, line and key."""


class SchemaVersionError(KnownError):
    """A database or wire document has a schema version this build cannot handle."""


class StorageError(KnownError):
    """The database cannot be written or read (disk full, read-only, locked, corrupt)."""
