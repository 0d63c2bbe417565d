"""A fleet with cards that need a fleet file's ``[[spec]]`` (issue 22 item 2), fed as the collector would.

Node ``r1``: two GeForce RTX 4090s, GPU 0 a stock board (24 GB), GPU 1 a 48 GB memory-modded board told
apart by its PCI subsystem id. Node ``x1``: two "NVIDIA Mystery 9000" cards, a model the catalog lacks.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from fleetmon.fleet import Fleet, parse_fleet
from helpers import inventory, minute, poll
from storage.ingest import ingest_polls
from storage.rollup import rollup

RTX4090 = "NVIDIA GeForce RTX 4090"
MYSTERY = "NVIDIA Mystery 9000"
MODDED_SUBSYSTEM = "0x16F310DE"
STOCK_SUBSYSTEM = "0x167C10DE"
MODDED_MIB = 49140  # what a 48 GB modded 4090 reports (a stock one: 24564 of 24576 MiB)

NODES_TOML = """\
[[node]]
name = "r1"
url = "http://127.0.0.1:9401"

[[node]]
name = "x1"
url = "http://127.0.0.1:9402"
"""

SPECS_TOML = f"""
[[spec]]
name = "{RTX4090}"
match_subsystem_id = "{MODDED_SUBSYSTEM}"
memory_gb = 48
note = "memory-modded board from a reseller"

[[spec]]
name = "{MYSTERY}"
architecture = "Hopper"
memory_gb = 96
mem_bandwidth_gbs = 4000
tdp_w = 400
boost_clock_mhz = 1500
pcie_gen = 5
pcie_width = 16
source = "vendor datasheet"
"""


def fleet_text(with_specs: bool = True) -> str:
    return NODES_TOML + (SPECS_TOML if with_specs else "")


def write_fleet(tmp_path: Path, with_specs: bool = True) -> tuple[Path, Fleet]:
    path = tmp_path / "fleet.toml"
    text = fleet_text(with_specs)
    path.write_text(text, encoding="utf-8")
    return path, parse_fleet(text, str(path))


def _cards(node: str) -> list[Any]:
    if node == "r1":
        return [dataclasses.replace(inventory("r1", 0, memory_total_mib=24564, pci_subsystem_id=STOCK_SUBSYSTEM,
                                              power_default_w=450.0, power_enforced_w=450.0), name=RTX4090),
                dataclasses.replace(inventory("r1", 1, memory_total_mib=MODDED_MIB, pci_subsystem_id=MODDED_SUBSYSTEM,
                                              power_default_w=450.0, power_enforced_w=450.0), name=RTX4090)]
    return [dataclasses.replace(inventory("x1", i, memory_total_mib=98304, power_default_w=400.0), name=MYSTERY)
            for i in range(2)]


def feed(db: Any, t_from: int, t_to: int) -> None:
    """Busy minutes [t_from, t_to) of both nodes, then one poll each (with their inventories), rolled up."""
    polls = []
    for node in ("r1", "x1"):
        cards = _cards(node)
        mins, seq = [], 0
        for ts in range(t_from, t_to, 60):
            for card in cards:
                seq += 1
                mins.append(minute(node, card.index, ts, seq=seq))
        polls.append(poll(node, t_to, gpus=len(cards), inv=cards, minutes=mins, minutes_cursor=seq))
    ingest_polls(db, polls)
    rollup(db, t_to)
