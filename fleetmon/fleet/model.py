"""The fleet file's records: ``Fleet``, ``Group``, ``NodeSpec`` and the file's defaults and key names."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fleetmon.fleet.notify import NotifySpec
from fleetmon.specbook import SpecBook, UserSpec, book_of

__all__ = ["DEFAULT_AGENT_PORT", "DEFAULT_DCGM_PORT", "FLEET_DEFAULTS", "GROUP_KEYS", "HISTORY_KEYS", "NODE_KEYS",
           "SLURM_KEYS", "Fleet", "Group", "NodeSpec", "SlurmSettings"]

DEFAULT_AGENT_PORT = 9414
"""TCP port of ``fleetmon agent`` when a node's URL names none."""
DEFAULT_DCGM_PORT = 9400
"""TCP port of dcgm-exporter when a ``dcgm+http://`` URL names none (its path defaults to ``/metrics``)."""

FLEET_DEFAULTS: dict[str, Any] = {
    "name": None,
    "poll_interval_s": 30.0,
    "timeout_s": 5.0,
    "concurrency": 64,
    "token_file": None,
    "tls_ca": None,
    "tls_verify": True,
    "raw_retention_days": 30,
    "ssh_config": None,
}


GROUP_KEYS: tuple[str, ...] = (
    "name",
    "expected_driver",
    "expected_cuda_driver",
    "expected_runtime",
    "expected_firmware",
    "expected_gpus",
    "expected_model",
)
"""The keys of a ``[[group]]`` table, in the order the writer puts them."""
NODE_KEYS: tuple[str, ...] = ("name", "url", "group", "token_file", "tags", "timeout_s", "slurm_name", "tool")
"""The keys of a ``[[node]]`` table."""
HISTORY_KEYS: tuple[str, ...] = ("prometheus",)
"""The keys of the optional ``[history]`` table (where the GUI and the reports read history from)."""
SLURM_KEYS: tuple[str, ...] = ("conf", "name_pattern", "timeout_s", "auto_drain", "max_fraction")
"""The keys of the optional ``[slurm]`` table (docs/slurm.md)."""


@dataclass(frozen=True, slots=True)
class SlurmSettings:
    """``[slurm]``: how fleetmon reaches Slurm and what it may drain on its own (docs/slurm.md).

    ``conf``: a ``slurm.conf`` for the commands (None: Slurm's default); ``name_pattern``: fleet
    name → Slurm name (``{name}``, ``{short}``); ``auto_drain``: the finding kinds that drain a node
    automatically (empty: never, the default); ``max_fraction``: at most this fraction of the
    fleet's nodes drained by fleetmon at once.
    """

    conf: str | None = None
    name_pattern: str = "{name}"
    timeout_s: float = 10.0
    auto_drain: tuple[str, ...] = ()
    max_fraction: float = 0.1


@dataclass(frozen=True, slots=True)
class Group:
    """A set of nodes that should look alike (same driver, GPU count, model).

    ``implicit`` is true for a group that a node names but no ``[[group]]``
    defines; such a group has no expectations.
    """

    name: str
    expected_driver: str | None = None
    expected_cuda_driver: str | None = None
    expected_gpus: int | None = None
    expected_model: str | None = None
    implicit: bool = False
    expected_runtime: str | None = None
    """The runtime the group's nodes should run (ROCm, CANN, SynapseAI, MUSA; CUDA: ``expected_cuda_driver``)."""
    expected_firmware: str | None = None
    """The firmware version the group's nodes should report (a node-wide one, as npu-smi or amd-smi give it)."""


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node's agent: where to reach it and which group it belongs to.

    ``url`` is normalised: an agent's or a dcgm-exporter's always names a port
    (``DEFAULT_AGENT_PORT``, ``DEFAULT_DCGM_PORT`` when the file gave none) and
    has no trailing slash (a dcgm-exporter's path defaults to ``/metrics``); an
    ``ssh://[user@]host[:port]`` URL is kept as written (see docs/sources.md).
    """

    name: str
    url: str
    group: str | None = None
    token_file: str | None = None
    tags: tuple[str, ...] = ()
    timeout_s: float | None = None
    """This node's own request timeout (None: ``[fleet] timeout_s``): a slow SSH node or a far site
    gets more time without giving every agent's poll as much."""
    slurm_name: str | None = None
    """The node's name in Slurm (None: ``[slurm] name_pattern`` applied to ``name``)."""
    tool: str = "auto"
    """An ``ssh://`` node's vendor tool: ``auto`` (the first found on the node) or a name of
    :data:`fleetmon.sources.ssh_tools.TOOLS` (``nvidia-smi``, ``amd-smi``, ``npu-smi``, …)."""


@dataclass(frozen=True, slots=True)
class Fleet:
    """A validated fleet file.

    Times are in seconds (``poll_interval_s``, ``timeout_s``), retention in
    days. ``warnings`` holds non-fatal findings (a token file that does not
    exist yet, a node naming an undefined group), each as ``FILE:LINE: KEY:
    message``. ``ssh_config``: the OpenSSH client config for ``ssh://`` nodes
    (``ssh -F FILE``; None: the user's own ``~/.ssh/config``).
    """

    name: str | None
    poll_interval_s: float
    timeout_s: float
    concurrency: int
    token_file: str | None
    tls_ca: str | None
    tls_verify: bool
    raw_retention_days: int
    thresholds: dict[str, float]
    groups: dict[str, Group]
    nodes: tuple[NodeSpec, ...]
    path: str
    warnings: tuple[str, ...] = field(default=(), compare=False)
    ssh_config: str | None = None
    history_prometheus: str | None = None
    """``[history] prometheus``: the base URL of a Prometheus-compatible HTTP API the GUI's history
    windows and the reports read telemetry from (None: the local store, the default)."""
    specs: tuple[UserSpec, ...] = ()
    """The ``[[spec]]`` tables, checked and resolved, in file order (see :mod:`fleetmon.specbook`)."""
    slurm: SlurmSettings | None = None
    """``[slurm]`` (None: the file has no such table; Slurm is still asked, with the defaults)."""
    notify: tuple[NotifySpec, ...] = ()
    """The ``[[notify]]`` destinations, in file order (see :mod:`fleetmon.fleet.notify`)."""

    def spec_book(self) -> SpecBook:
        """The catalog plus this file's ``[[spec]]`` tables: what every consumer resolves a card's spec with."""
        return book_of(self)

    def node(self, name: str) -> NodeSpec:
        """The node called ``name`` (case-insensitive).

        Raises:
            KeyError: no such node.
        """
        wanted = name.lower()
        for node in self.nodes:
            if node.name.lower() == wanted:
                return node
        raise KeyError(name)

    def nodes_in_group(self, group: str | Group) -> tuple[NodeSpec, ...]:
        """The nodes whose ``group`` is ``group`` (a name or a Group), in file order."""
        name = group.name if isinstance(group, Group) else group
        return tuple(node for node in self.nodes if node.group == name)

    def timeout_for(self, node: NodeSpec) -> float:
        """The request timeout for ``node``: its own, else the fleet's."""
        return node.timeout_s if node.timeout_s is not None else self.timeout_s

    def token_file_for(self, node: NodeSpec) -> str | None:
        """The bearer-token file to use for ``node``: its own, else the fleet's."""
        return node.token_file or self.token_file
