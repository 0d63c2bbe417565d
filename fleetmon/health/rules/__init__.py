"""Health rules: pure functions over a fleet's recorded history, one module per family.

Each rule is ``check_<condition>(history, thresholds) -> list[Finding]``. A
rule reads only its arguments: no database, no network, no clock
(``history.now`` is the time). Rules scan each GPU's
:meth:`~fleetmon.health.fleet.GpuHistory.timeline` (hourly rows for the
older part of the window, minute rows for the recent part) and skip a GPU
after a cheap test whenever nothing could match, so a healthy fleet costs
little.

Families (one module each, like glances' one plugin per metric family):
:mod:`~fleetmon.health.rules.versions` (driver, VBIOS),
:mod:`~fleetmon.health.rules.ecc`, :mod:`~fleetmon.health.rules.device` (a vendor tool's own
health states, ECC per block, deferred errors, bad pages), :mod:`~fleetmon.health.rules.memory`
(retired pages, remapped rows), :mod:`~fleetmon.health.rules.arrival` (a card's
memory history at first sight), :mod:`~fleetmon.health.rules.xid`,
:mod:`~fleetmon.health.rules.bus` (lost and missing cards),
:mod:`~fleetmon.health.rules.pcie`, :mod:`~fleetmon.health.rules.power`,
:mod:`~fleetmon.health.rules.thermal`, :mod:`~fleetmon.health.rules.derating`,
:mod:`~fleetmon.health.rules.reachability` (unreachable, flapping nodes) and
:mod:`~fleetmon.health.rules.inventory`. What they share is in
:mod:`~fleetmon.health.rules.helpers`. A new rule goes into its family's
module and into :data:`RULES` below, the one list of rules.

Common behaviour:

* A reading that is ``None`` (unsupported, failed or missing) never raises
  an alarm; only :func:`check_power_unreadable` looks at failed readings,
  and never at unsupported ones.
* Persistent conditions need evidence in a sliding window (for example 3 of
  10 minutes) and are named within 10 minutes of their onset; the finding's
  ``first_seen`` is the first bad row of the window that triggered it.
* A condition finding is open while its evidence is younger than
  ``resolve_after_minutes``; event findings (Xid, new uncorrectable ECC,
  inventory changes) stay open ``event_resolve_hours``. Older ones come back
  with ``state="resolved"``, they are not dropped.
* PCIe link rules look at busy minutes only (links power down at idle).
"""

from __future__ import annotations

from collections.abc import Callable

from fleetmon.health.findings import Finding
from fleetmon.health.fleet import FleetHistory
from fleetmon.health.rules.arrival import check_arrival_history
from fleetmon.health.rules.bus import check_gpu_lost, check_gpu_missing
from fleetmon.health.rules.derating import check_derating
from fleetmon.health.rules.device import check_bad_pages, check_device_health, check_ecc_blocks, check_ecc_deferred
from fleetmon.health.rules.ecc import check_ecc_correctable, check_ecc_uncorrectable
from fleetmon.health.rules.helpers import Episode, episodes
from fleetmon.health.rules.inventory import check_inventory_changes
from fleetmon.health.rules.memory import check_retired_pages, check_row_remap
from fleetmon.health.rules.pcie import check_pcie_link, check_pcie_replay
from fleetmon.health.rules.power import (
    check_power_brake,
    check_power_capped,
    check_power_instability,
    check_power_unreadable,
)
from fleetmon.health.rules.reachability import check_node_flapping, check_node_unreachable
from fleetmon.health.rules.identity import check_gpus_refused, check_uuid_conflict
from fleetmon.health.rules.thermal import check_fan_stopped, check_temperature, check_thermal_throttle
from fleetmon.health.rules.versions import check_driver_versions, check_vbios
from fleetmon.health.rules.xid import check_xid
from fleetmon.health.thresholds import Thresholds

__all__ = [
    "RULES",
    "Episode",
    "Rule",
    "check_arrival_history",
    "check_bad_pages",
    "check_derating",
    "check_device_health",
    "check_driver_versions",
    "check_ecc_blocks",
    "check_ecc_correctable",
    "check_ecc_deferred",
    "check_ecc_uncorrectable",
    "check_fan_stopped",
    "check_gpu_lost",
    "check_gpu_missing",
    "check_inventory_changes",
    "check_node_flapping",
    "check_node_unreachable",
    "check_pcie_link",
    "check_pcie_replay",
    "check_power_brake",
    "check_power_capped",
    "check_power_instability",
    "check_power_unreadable",
    "check_retired_pages",
    "check_row_remap",
    "check_temperature",
    "check_thermal_throttle",
    "check_vbios",
    "check_xid",
    "episodes",
]

Rule = Callable[[FleetHistory, Thresholds], list[Finding]]

RULES: tuple[Rule, ...] = (
    check_driver_versions, check_vbios, check_ecc_uncorrectable, check_ecc_correctable,
    check_device_health, check_ecc_blocks, check_ecc_deferred, check_bad_pages,
    check_retired_pages, check_row_remap, check_arrival_history, check_xid, check_gpu_lost,
    check_gpu_missing,
    check_pcie_link, check_pcie_replay, check_power_brake, check_power_instability,
    check_power_unreadable, check_power_capped, check_thermal_throttle, check_temperature,
    check_fan_stopped, check_derating, check_node_unreachable, check_node_flapping,
    check_inventory_changes, check_uuid_conflict, check_gpus_refused,
)
"""Every rule, in report order."""
