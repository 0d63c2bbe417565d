"""Fleet node name → Slurm node name: a node's ``slurm_name``, else ``[slurm] name_pattern``, else the name."""

from __future__ import annotations

from typing import Any

from fleetmon.slurm.client import check_slurm_name

__all__ = ["DEFAULT_PATTERN", "slurm_name_of"]

DEFAULT_PATTERN = "{name}"
"""``{name}``: the fleet name as it is; ``{short}``: the fleet name up to its first dot."""


def slurm_name_of(fleet: Any, node: str) -> str:
    """The Slurm name of fleet node ``node`` (checked by :func:`check_slurm_name`).

    ``fleet`` may be None (no fleet file: the name as it is). Raises :class:`SlurmError` for a
    name Slurm could not hold.
    """
    spec = None
    if fleet is not None:
        try:
            spec = fleet.node(node)
        except KeyError:
            spec = None
    own = getattr(spec, "slurm_name", None)
    if own:
        return check_slurm_name(own)
    settings = getattr(fleet, "slurm", None)
    pattern = getattr(settings, "name_pattern", None) or DEFAULT_PATTERN
    name = spec.name if spec is not None else node
    return check_slurm_name(pattern.format(name=name, short=name.split(".")[0]))
