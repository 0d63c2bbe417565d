"""Slurm: read each node's scheduler state, drain and resume nodes (docs/slurm.md).

:mod:`fleetmon.slurm.client` is the boundary (the system's ``sinfo`` and ``scontrol``,
argument lists only, a timeout on every call); :mod:`fleetmon.slurm.names` maps fleet
names to Slurm names; :mod:`fleetmon.slurm.actions` drains and resumes with a record in
the store, and plans the automatic drain.
"""

from __future__ import annotations

from fleetmon.slurm.client import (REASON_MAX, NodeState, SlurmClient, SlurmError, SlurmUnavailable, SlurmView,
                                   check_slurm_name, clean_reason)
from fleetmon.slurm.names import slurm_name_of

__all__ = ["REASON_MAX", "NodeState", "SlurmClient", "SlurmError", "SlurmUnavailable", "SlurmView",
           "check_slurm_name", "clean_reason", "slurm_name_of"]
