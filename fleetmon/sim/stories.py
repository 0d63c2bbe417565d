"""The demo fleet's stories as one truth: what a storied card does at any instant.

The generated history (:mod:`fleetmon.sim.demo_history`) and the live
simulated agents (the twin, :mod:`fleetmon.sim.device`, with a scenario's
``story=`` and ``epoch=`` options) both ask :func:`card_state` for a card's
condition at time ``t``, so live polling continues the history without a
jump. Every story is anchored at its **epoch**: the Unix time the generated
history ends and the live agents take over. Before the epoch a story builds up
(the riser gets worse over the last week, pages retire, a remap becomes
pending); after it, it goes on as it stood (counters keep their rate, pending
flags stay set, the degraded link stays degraded, the afternoon throttling
follows the UTC clock). Pure arithmetic on ``t``: nothing here reads a clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fleetmon.compat import SLOTS

HOUR = 3600
DAY = 86400

STORY_NAMES = ("pcie-riser", "retired-pages", "weak-psu", "driver-outlier", "thermal-afternoon", "flapping",
               "row-remap", "derated", "moved-from", "moved-to")
"""Every story of the demo fleet (``fleetmon.sim.demo_history`` table); only some act on a card here."""

# -- the story constants (both the history and the live twin read these) ---------------------
STORY_GPU = {"pcie-riser": 1, "retired-pages": 3, "row-remap": 1, "derated": 2, "thermal-afternoon": 0}
"""The card (physical index) a one-card story concerns."""
WEAK_PSU_GPUS = (0, 1)

DERATE_FRAC = 0.65
"""The derated card's busy SM clock as a fraction of the model's nominal boost clock."""
DERATE_POWER_FRAC = 0.65
"""The derated card's busy power as a fraction of its power limit."""

RETIRED_SBE_AT_EPOCH = 8
RETIRED_SBE_EVERY_S = 30 * DAY / RETIRED_SBE_AT_EPOCH
"""One more SBE page retires this often (8 over the month before the epoch, then on at that rate)."""
RETIRED_SBE_CAP = 40
"""Pages stop accumulating here: the story stays below the 48-page warning however long it runs."""
RETIRED_DBE = 8
RETIRED_PENDING_FROM_S = 1.5 * DAY
"""A retirement is pending from this long before the epoch on (and stays pending: no reset comes)."""

REMAP_PENDING_FROM_S = 3 * DAY
"""The A100's row remap is pending from this long before the epoch on (no reset comes)."""

RISER_WEEK_S = 7 * DAY
THERMAL_HOURS_UTC = (13, 17)
"""The 4090 runs at its slowdown temperature while busy in these UTC hours [from, to)."""
THERMAL_UNDER_SLOWDOWN_C = 1.0
THERMAL_SM_FRAC = 0.8

PSU_FROM_S = 10 * DAY
"""The weak PSU brakes from this long before the epoch on, every third UTC hour while busy."""
PSU_BRAKE_DUTY = 1 / 3
PSU_BRAKE_POWER_FRAC = 0.7
PSU_DROPOUT_EVERY_MIN = 97
"""Power reads fail while busy in every minute whose number (Unix minutes) is a multiple of this."""
PSU_XID_BEFORE_S = 2 * DAY - 5 * HOUR - 17 * 60
"""Xid 79 on both PSU cards this long before the epoch (once)."""


@dataclass(frozen=True, **SLOTS)
class CardState:
    """A storied card's condition at one instant (None / False: the story does not touch it).

    ``retired``: (SBE pages, DBE pages, pending); ``remap``: (corrected, uncorrectable,
    pending, failure) remapped rows; ``link``: the (gen, width) the PCIe link trains at
    while busy; ``sm_frac``/``power_frac``: busy SM clock of nominal boost and busy
    power of the limit (derating); ``hot``: runs 1 °C under its slowdown temperature
    while busy (thermal slowdown bits, clocks at 80 %); ``power_brake``: HW power
    brake for a third of the busy time; ``power_dropout``: power reads fail while busy.
    """

    retired: tuple[int, int, int] | None = None
    remap: tuple[int, int, int, int] | None = None
    link: tuple[int, int] | None = None
    sm_frac: float | None = None
    power_frac: float | None = None
    hot: bool = False
    power_brake: bool = False
    power_dropout: bool = False


NONE = CardState()


def retired_pages(t: float, epoch: float) -> tuple[int, int, int]:
    """The V100's retired pages at ``t``: (SBE, DBE, pending)."""
    # mid-interval steps: no page retires at the epoch itself
    sbe = RETIRED_SBE_AT_EPOCH + math.floor((t - epoch) / RETIRED_SBE_EVERY_S + 0.5)
    pending = 1 if t >= epoch - RETIRED_PENDING_FROM_S else 0
    return max(0, min(RETIRED_SBE_CAP, sbe)), RETIRED_DBE, pending


def riser_link(t: float, epoch: float, gen: int, width: int) -> tuple[int, int]:
    """The riser card's busy link at ``t`` (nominal ``gen`` x ``width`` before the last week)."""
    left = epoch - t
    h = int(t // HOUR)
    if left >= RISER_WEEK_S:
        return gen, width
    if left < 2 * DAY:  # gen 1 x8 from two days before the epoch on: it never recovers
        return 1, 8
    if left < 4.5 * DAY:
        return (3 if h % 3 else 1), width
    return (3 if h % 4 == 0 else gen), width


def card_state(story: str | None, gpu: int, t: float, epoch: float, *, gen: int = 4, width: int = 16
               ) -> CardState:
    """What ``story`` does to physical GPU ``gpu`` at Unix time ``t`` (story anchored at ``epoch``).

    ``gen``/``width`` are the card's nominal link (the riser degrades it).
    """
    if story is None:
        return NONE
    if story in STORY_GPU and gpu != STORY_GPU[story]:
        return NONE
    if story == "retired-pages":
        return CardState(retired=retired_pages(t, epoch))
    if story == "row-remap":
        if t >= epoch - REMAP_PENDING_FROM_S:
            return CardState(remap=(1, 0, 1, 0))
        return CardState(remap=(0, 0, 0, 0))
    if story == "pcie-riser":
        return CardState(link=riser_link(t, epoch, gen, width))
    if story == "derated":
        return CardState(sm_frac=DERATE_FRAC, power_frac=DERATE_POWER_FRAC)
    if story == "thermal-afternoon":
        lo, hi = THERMAL_HOURS_UTC
        return CardState(hot=lo <= int(t % DAY) // HOUR < hi)
    if story == "weak-psu" and gpu in WEAK_PSU_GPUS:
        if t < epoch - PSU_FROM_S:
            return NONE
        return CardState(power_brake=int(t // HOUR) % 3 == 0,
                         power_dropout=int(t // 60) % PSU_DROPOUT_EVERY_MIN == 0)
    return NONE


def xid_time(story: str | None, epoch: float) -> float | None:
    """When the story's one Xid 79 happens (None: the story has none)."""
    return epoch - PSU_XID_BEFORE_S if story == "weak-psu" else None
