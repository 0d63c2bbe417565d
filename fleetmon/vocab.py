"""The shared vocabularies: finding severity and GPU state, each defined once.

Both are a :class:`fleetmon.compat.StrEnum` (``enum.StrEnum``, also on Python 3.8), so a
member *is* its wire/stored string
(``Severity.CRITICAL == "critical"``, ``json.dumps`` and SQLite write
``"critical"``, ``f"{s}"`` gives ``"critical"``): the JSON, the database and
the report formats are unchanged by using them. Compare and store members;
turn text from outside (a database row, a JSON document, a flag) into a
member with ``parse``, which names the allowed values when it refuses one.

The reading status of one field (``ok``/``unsupported``/``failed``/``gpu_lost``)
is :class:`fleetmon.records.Status`, next to the records it annotates.

Core module: standard library only, importable by the agent, storage, health
and ui alike.
"""

from __future__ import annotations

from collections.abc import Iterable

from fleetmon.compat import StrEnum

__all__ = [
    "GpuState",
    "Severity",
    "VocabularyError",
    "severity_rank",
    "worst_severity",
]


class VocabularyError(ValueError):
    """A text that is not a member of a closed vocabulary."""


class Severity(StrEnum):
    """How bad a finding is, least severe first (this order is the rank).

    info: worth knowing, no action; warning: needs attention (the node warns);
    critical: drain/service (a node with one fails).
    """

    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        """1 (info) .. 3 (critical); 0 is left for "no severity" (see :func:`severity_rank`)."""
        return _SEVERITY_RANK[self]

    @classmethod
    def parse(cls, value: str | Severity) -> Severity:
        """The member spelled exactly ``value`` (one vocabulary, one spelling: lower case).

        Raises:
            VocabularyError: ``value`` is not a severity.
        """
        if isinstance(value, Severity):
            return value
        if isinstance(value, str):
            try:
                return cls(value)
            except ValueError:
                pass
        raise VocabularyError(f"unknown severity {value!r} (expected one of: {', '.join(cls)})")

    @classmethod
    def most_severe_first(cls) -> tuple[Severity, ...]:
        """critical, warning, info: the order reports list them in."""
        return tuple(sorted(cls, key=lambda s: -s.rank))


_SEVERITY_RANK: dict[Severity, int] = {s: i for i, s in enumerate(Severity, start=1)}


def severity_rank(value: str | Severity | None) -> int:
    """The rank of a severity, 0 for None or "" (no finding); unknown text raises VocabularyError."""
    if value is None or value == "":
        return 0
    return Severity.parse(value).rank


def worst_severity(values: Iterable[str | Severity | None]) -> Severity | None:
    """The most severe of ``values`` (None and "" skipped), or None when there is none."""
    found = [Severity.parse(v) for v in values if v is not None and v != ""]
    return max(found, key=lambda s: s.rank, default=None)


class GpuState(StrEnum):
    """Whether a GPU is there and answering.

    ``OK`` and ``LOST`` travel on the agent's wire (inventory, samples,
    minutes) and in the raw minutes; ``GONE`` is what storage records for a
    card that left its node's inventory (the ``gpus.state`` column); the health
    rules call that ``MISSING`` (no longer enumerated; also what the
    simulator's synthetic fleets write). :meth:`parse` reads the stored and
    historic spellings into the rules' view (see :data:`_STATE_ALIASES`).
    """

    OK = "ok"
    LOST = "lost"  # fell off the bus / NVML_ERROR_GPU_IS_LOST / gone from enumeration on a live agent
    GONE = "gone"  # storage: no longer in its node's inventory
    MISSING = "missing"  # health rules: no longer enumerated on its node

    @classmethod
    def parse(cls, value: str | GpuState | None) -> GpuState:
        """The member named by ``value``; None or "" is ``OK`` (a record without a state).

        Raises:
            VocabularyError: ``value`` is not a GPU state.
        """
        if isinstance(value, GpuState):
            return value
        if value is None or value == "":
            return cls.OK
        if isinstance(value, str):
            try:
                return cls(value)
            except ValueError:
                pass
        raise VocabularyError(f"unknown GPU state {value!r} (expected one of: {', '.join(cls)})")

    @classmethod
    def for_rules(cls, value: str | GpuState | None) -> GpuState:
        """A stored state as the health rules see it: "gone" (storage) and "disappeared"
        (the inventory change log's word) both mean :attr:`MISSING`; anything else as :meth:`parse`."""
        alias = _STATE_ALIASES.get(value) if isinstance(value, str) else None
        return alias if alias is not None else cls.parse(value)


_STATE_ALIASES: dict[str, GpuState] = {GpuState.GONE.value: GpuState.MISSING, "disappeared": GpuState.MISSING}
"""The one place where other spellings of a GPU state are accepted (read by the health rules)."""
