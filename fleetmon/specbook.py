"""Spec resolution: the catalog of :mod:`fleetmon.specs` plus the fleet file's ``[[spec]]`` tables.

Every consumer of a card's nominal spec (the derating, PCIe and driver rules, the GUI's GPU detail and
derating views, reports) asks a :class:`SpecBook`, never :func:`fleetmon.specs.lookup` directly, so that
a user spec (a model the catalog lacks, a 48 GB memory-modded 4090, a factory-overclocked or power-capped
board) is seen the same everywhere. With no fleet file the book is :data:`CATALOG_BOOK`: the catalog alone.

Resolution of a card (its NVML name, and where known its PCI subsystem id and VBIOS):

1. the user specs of that name (matched as the catalog matches names) whose match keys all fit the
   card, most specific first: name + subsystem id + VBIOS, then name + one of them, then name only
   (file order breaks a tie);
2. else the catalog row of that name;
3. else None: the model is unknown (reported, never guessed).

A user spec's :class:`~fleetmon.specs.GpuSpec` has ``origin == "user"`` and a ``source`` naming the
fleet file's line. The fleet file's ``[[spec]]`` tables are read and checked by
:mod:`fleetmon.fleet.validate` with :func:`build_spec`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fleetmon import specs
from fleetmon.specs import GpuSpec, MinDriver

__all__ = [
    "CATALOG_BOOK",
    "DERATING_KEYS",
    "FLOAT_KEYS",
    "GpuSpec",
    "INT_KEYS",
    "SPEC_KEYS",
    "STR_KEYS",
    "VOCAB_KEYS",
    "SpecBook",
    "UserSpec",
    "book_of",
    "build_spec",
    "catalog_spec",
    "name_key",
    "origin_label",
    "parse_subsystem_id",
]

_FIELDS = frozenset(f.name for f in dataclasses.fields(GpuSpec))

# The GpuSpec fields a [[spec]] table may set. tensor_tflops only where GpuSpec has it.
INT_KEYS: tuple[str, ...] = ("memory_gb", "mem_bandwidth_gbs", "tdp_w", "base_clock_mhz", "boost_clock_mhz",
                             "pcie_gen", "pcie_width")
FLOAT_KEYS: tuple[str, ...] = tuple(k for k in ("fp32_tflops", "tensor_tflops") if k in _FIELDS)
STR_KEYS: tuple[str, ...] = ("architecture", "form_factor", "memory_type")
VOCAB_KEYS: dict[str, tuple[str, ...]] = {"ecc": specs.ECC_MODES, "mem_repair": specs.MEM_REPAIR_MODES}
MATCH_KEYS: tuple[str, ...] = ("match_subsystem_id", "match_vbios")
SPEC_KEYS: tuple[str, ...] = ("name", *MATCH_KEYS, "base", *INT_KEYS, *FLOAT_KEYS, *STR_KEYS, *VOCAB_KEYS,
                              "source", "note")
"""Every key of a ``[[spec]]`` table, in the order docs/fleet-file.md lists them."""
DERATING_KEYS: tuple[str, ...] = ("memory_gb", "tdp_w", "boost_clock_mhz", "mem_bandwidth_gbs")
"""What a ``[[spec]]`` of a model the catalog lacks (and without ``base``) must state: the nominal figures the
derating ratios divide by (memory, power limit, clock) and the catalog's one other number no row lacks.
PCIe generation and width are optional (without them the PCIe ratio is unknown)."""
PCIE_GENS: tuple[int, ...] = (1, 2, 3, 4, 5, 6)

_SUBSYSTEM = re.compile(r"^0x[0-9a-f]{1,8}$", re.IGNORECASE)


def name_key(name: str) -> str:
    """The key a name is matched by: the catalog's own normalisation (case, spaces, vendor prefixes).

    The one place this module leans on the catalog's name matching (:mod:`fleetmon.specs`)."""
    return specs._normalise(name)


def catalog_spec(name: str, memory_mib: float | None = None) -> GpuSpec | None:
    """The catalog row for ``name`` (the one place this module calls :func:`fleetmon.specs.lookup`);
    ``memory_mib`` chooses between boards of one name and other memory sizes."""
    return specs.lookup(name, memory_mib)


def parse_subsystem_id(value: Any) -> int | None:
    """A PCI subsystem id as a number: ``"0x145010DE"`` as NVML/nvidia-smi report it (any case), or an
    integer; None for anything else (missing, not hex)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value <= 0xFFFFFFFF else None
    if isinstance(value, str) and _SUBSYSTEM.fullmatch(value.strip()):
        return int(value.strip(), 16)
    return None


def origin_label(spec: GpuSpec | None) -> str:
    """How a view names where a spec came from: "user spec", "catalog" or "not in the spec catalog"."""
    if spec is None:
        return "not in the spec catalog"
    return "user spec" if spec.origin == "user" else "catalog"


@dataclass(frozen=True, slots=True)
class UserSpec:
    """One ``[[spec]]`` table of the fleet file, checked and resolved.

    Attributes:
        spec: the resolved spec (``origin == "user"``; ``base`` merged in).
        subsystem_id: ``match_subsystem_id`` as a number, or None (any subsystem).
        vbios: ``match_vbios`` (exact), or None (any VBIOS).
        line: the table's line in the fleet file.
        base: the catalog model it inherits from (None: stated in full).
        note: the table's ``note``.
    """

    spec: GpuSpec
    subsystem_id: int | None = None
    vbios: str | None = None
    line: int = 0
    base: str | None = None
    note: str | None = None

    @property
    def specificity(self) -> int:
        """How many match keys it has (0: name only)."""
        return (self.subsystem_id is not None) + (self.vbios is not None)

    def fits(self, subsystem_id: int | None, vbios: str | None) -> bool:
        """Whether a card with this subsystem id and VBIOS (None: unknown) is one this spec is for."""
        if self.subsystem_id is not None and self.subsystem_id != subsystem_id:
            return False
        return self.vbios is None or (vbios is not None and self.vbios == vbios.strip())

    def match_text(self) -> str:
        """The match keys in words ("subsystem 0x145010DE, VBIOS 95.02.5D.00.01"), "" for name only."""
        parts = []
        if self.subsystem_id is not None:
            parts.append(f"subsystem 0x{self.subsystem_id:08X}")
        if self.vbios is not None:
            parts.append(f"VBIOS {self.vbios}")
        return ", ".join(parts)


def build_spec(name: str, values: Mapping[str, Any], base: GpuSpec | None, where: str) -> GpuSpec:
    """A user spec's GpuSpec: ``base`` (or nothing) with ``values`` (checked GpuSpec fields) laid over it.

    ``where`` ("fleet.toml:12") goes into ``source``. Without a base every key of :data:`DERATING_KEYS`
    must be in ``values`` (the validator checks it first); strings it lacks are "" (unknown; views show a
    dash) and optional numbers None. The repair limits follow ``mem_repair`` and the vendor as in the catalog
    (a spec with an AMD or Gaudi ``base`` keeps its vendor, so NVIDIA's limits never apply to it).
    """
    fields: dict[str, Any] = dataclasses.asdict(base) if base is not None else {
        "architecture": "", "form_factor": "", "memory_type": "", "base_clock_mhz": None, "pcie_gen": None,
        "pcie_width": None, "ecc": None, "mem_repair": "", "fp32_tflops": None,
        **{k: None for k in FLOAT_KEYS},
    }
    fields.update({k: v for k, v in values.items() if k in _FIELDS})
    fields["retired_page_limit"], fields["remap_row_limit"] = specs.repair_limits(
        fields.get("mem_repair"), fields.get("vendor") or "nvidia")
    told = values.get("source")
    fields["source"] = f"user spec, {where}" + (f" (base {base.nvml_name})" if base is not None else "") + (
        f"; {told}" if told else "")
    fields["nvml_name"] = name
    fields["origin"] = "user"
    return GpuSpec(**fields)


class SpecBook:
    """The catalog plus user specs; see the module doc for the order of resolution.

    Immutable once built; lookups of a card are cached (a health pass asks once per card and rule).
    """

    def __init__(self, user: Iterable[UserSpec] = ()) -> None:
        self.user: tuple[UserSpec, ...] = tuple(user)
        by_key: dict[str, list[UserSpec]] = {}
        for u in self.user:
            by_key.setdefault(name_key(u.spec.nvml_name), []).append(u)
        # Most specific first; sorted() is stable, so file order breaks ties.
        self._by_key = {k: sorted(v, key=lambda u: -u.specificity) for k, v in by_key.items()}
        self._cache: dict[tuple[str, int | None, str | None, float | None], GpuSpec | None] = {}

    def __repr__(self) -> str:
        return f"SpecBook({len(self.user)} user specs)"

    def lookup(self, name: str | None, *, subsystem_id: Any = None, vbios: str | None = None,
               memory_mib: Any = None) -> GpuSpec | None:
        """The spec of a card named ``name`` with this PCI subsystem id (``"0x145010DE"`` or a number) and
        VBIOS (None: not known; then only specs that do not ask for it can match). None: unknown model.
        ``memory_mib`` (reported total memory) picks the catalog row of boards that share a name."""
        if not name:
            return None
        sub = parse_subsystem_id(subsystem_id)
        bios = vbios.strip() if isinstance(vbios, str) and vbios.strip() else None
        mem = float(memory_mib) if isinstance(memory_mib, (int, float)) and not isinstance(memory_mib, bool) else None
        key = (name, sub, bios, mem)
        if key in self._cache:
            return self._cache[key]
        found = self.user_spec(name, subsystem_id=sub, vbios=bios)
        spec = found.spec if found is not None else catalog_spec(name, mem)
        self._cache[key] = spec
        return spec

    def user_spec(self, name: str, *, subsystem_id: Any = None, vbios: str | None = None) -> UserSpec | None:
        """The ``[[spec]]`` that applies to the card, or None (the catalog's row, if any, applies)."""
        candidates = self._by_key.get(name_key(name)) if self._by_key and name else None
        if not candidates:
            return None
        sub = parse_subsystem_id(subsystem_id)
        return next((u for u in candidates if u.fits(sub, vbios)), None)

    def for_inventory(self, name: str | None, inventory: Mapping[str, Any] | None,
                      vbios: str | None = None) -> GpuSpec | None:
        """:meth:`lookup` with the match keys read from a card's inventory (``pci_subsystem_id``,
        ``vbios``; ``vbios`` given here wins, as a storage row's own column does)."""
        inv = inventory or {}
        bios = vbios or inv.get("vbios")
        return self.lookup(name, subsystem_id=inv.get("pci_subsystem_id"),
                           vbios=bios if isinstance(bios, str) else None, memory_mib=inv.get("memory_total_mib"))

    def min_driver(self, name: str | None, **match: Any) -> MinDriver | None:
        """The oldest driver that supports the card's architecture (None: unknown model or architecture, and
        other vendors' devices: the table is NVIDIA's)."""
        return specs.min_driver_of(self.lookup(name, **match))

    def user_specs_for(self, name: str | None) -> tuple[UserSpec, ...]:
        """The ``[[spec]]`` tables for a model of this name (whatever their match keys), most specific first."""
        return tuple(self._by_key.get(name_key(name), ())) if name and self._by_key else ()

    def has_user_specs(self, name: str | None) -> bool:
        """Whether any ``[[spec]]`` is for a model of this name (whatever its match keys)."""
        return bool(self.user_specs_for(name))


CATALOG_BOOK = SpecBook()
"""The catalog alone: what every consumer uses when there is no fleet file."""


def book_of(fleet: Any) -> SpecBook:
    """The book of a :class:`fleetmon.fleet.Fleet` (its ``[[spec]]`` tables), or :data:`CATALOG_BOOK` for None."""
    user = getattr(fleet, "specs", None) if fleet is not None else None
    return SpecBook(user) if isinstance(user, (tuple, list)) and user else CATALOG_BOOK
