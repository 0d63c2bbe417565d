"""User specs (issue 22 item 2): ``[[spec]]`` tables in the fleet file and the spec book that resolves a card.

Parsing: every problem one line naming the file, the line and the key; resolution: a [[spec]] matching the
card's subsystem id and VBIOS beats one matching one of them, which beats a name-only one, which beats the
catalog; with no [[spec]] the book is the catalog, unchanged.
"""

from __future__ import annotations

import re

import pytest

from fleetmon import specs
from fleetmon.errors import ConfigError
from fleetmon.fleet import parse_fleet
from fleetmon.specbook import CATALOG_BOOK, DERATING_KEYS, SpecBook, book_of, origin_label

RTX4090 = "NVIDIA GeForce RTX 4090"
NODE = '[[node]]\nname = "n1"\nurl = "http://n1"\n'


def _errors(text: str, before: str = "") -> list[str]:
    with pytest.raises(ConfigError) as err:
        parse_fleet(before + NODE + text, path="fleet.toml")
    lines = str(err.value).splitlines()
    for line in lines:
        assert re.fullmatch(r"fleet\.toml:\d+: spec(\[\d+\](\.\w+)?)?: \S.*", line), line
    return lines


def _line_of(text: str, marker: str = "# <-") -> int:
    for number, line in enumerate((NODE + text).splitlines(), start=1):
        if marker in line:
            return number
    raise AssertionError("no marker")


# -- good files -------------------------------------------------------------------------------------------


def test_a_modded_board_states_only_what_differs() -> None:
    fleet = parse_fleet(NODE + f"""
[[spec]]
name = "{RTX4090}"
match_subsystem_id = "0x16f310de"
memory_gb = 48
note = "modded"
""", path="fleet.toml")
    (user,) = fleet.specs
    catalog = specs.lookup(RTX4090)
    assert catalog is not None and catalog.origin == "catalog"
    assert user.spec.origin == "user" and user.spec.memory_gb == 48 and user.note == "modded"
    # Everything else comes from the model's catalog row (its base, named or not).
    assert (user.spec.tdp_w, user.spec.boost_clock_mhz, user.spec.pcie_gen) == (
        catalog.tdp_w, catalog.boost_clock_mhz, catalog.pcie_gen)
    assert user.spec.source.startswith("user spec, fleet.toml:5")
    assert user.subsystem_id == 0x16F310DE and user.base == RTX4090


def test_a_model_the_catalog_lacks_with_the_derating_fields() -> None:
    fleet = parse_fleet(NODE + """
[[spec]]
name = "NVIDIA Mystery 9000"
memory_gb = 96
mem_bandwidth_gbs = 4000
tdp_w = 400
boost_clock_mhz = 1500
architecture = "Hopper"
ecc = "configurable"
mem_repair = "row_remap"
fp32_tflops = 60
""", path="f.toml")
    spec = fleet.spec_book().lookup("Mystery 9000")  # matched as the catalog matches names
    assert spec is not None and spec.origin == "user"
    assert (spec.memory_gb, spec.tdp_w, spec.boost_clock_mhz, spec.fp32_tflops) == (96, 400, 1500, 60.0)
    assert spec.remap_row_limit == specs.ROW_REMAP_LIMIT and spec.pcie_gen is None
    assert fleet.spec_book().min_driver("NVIDIA Mystery 9000") is not None  # the driver rule sees its architecture


def test_base_inherits_a_catalog_model_under_another_name() -> None:
    fleet = parse_fleet(NODE + f"""
[[spec]]
name = "NVIDIA GeForce RTX 4090 OC Edition"
base = "{RTX4090}"
boost_clock_mhz = 2640
tdp_w = 500
""", path="f.toml")
    spec = fleet.spec_book().lookup("NVIDIA GeForce RTX 4090 OC Edition")
    assert spec is not None and spec.memory_gb == 24 and (spec.boost_clock_mhz, spec.tdp_w) == (2640, 500)
    assert f"base {RTX4090}" in spec.source


def test_tensor_tflops_is_accepted_where_the_catalog_has_it() -> None:
    text = NODE + f'[[spec]]\nname = "{RTX4090}"\ntensor_tflops = 330\n'
    if "tensor_tflops" in specs.GpuSpec.__dataclass_fields__:
        (user,) = parse_fleet(text).specs
        assert getattr(user.spec, "tensor_tflops") == 330.0
    else:
        with pytest.raises(ConfigError, match="tensor_tflops: unknown key"):
            parse_fleet(text)


# -- bad files --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("body, key, message", [
    (f'name = "{RTX4090}"\nmemroy_gb = 48  # <-', "memroy_gb", "unknown key (did you mean 'memory_gb'?)"),
    (f'name = "{RTX4090}"\nmemory_gb = "48"  # <-', "memory_gb", "must be an integer (got string '48')"),
    (f'name = "{RTX4090}"\ntdp_w = 0  # <-', "tdp_w", "must be between 1 and"),
    (f'name = "{RTX4090}"\ntdp_w = -350  # <-', "tdp_w", "must be between 1 and"),
    (f'name = "{RTX4090}"\nfp32_tflops = -1.0  # <-', "fp32_tflops", "must be > 0"),
    (f'name = "{RTX4090}"\nboost_clock_mhz = 1500  # <-', "boost_clock_mhz", "below the base clock 2235 MHz"),
    (f'name = "{RTX4090}"\nbase_clock_mhz = 2000\nboost_clock_mhz = 1900  # <-', "boost_clock_mhz",
     "boost clock 1900 MHz is below the base clock 2000 MHz"),
    (f'name = "{RTX4090}"\necc = "sometimes"  # <-', "ecc", "must be one of always, toggle, configurable, none"),
    (f'name = "{RTX4090}"\nmem_repair = "magic"  # <-', "mem_repair",
     "must be one of row_remap, page_retire, row_replace, none"),
    (f'name = "{RTX4090}"\npcie_gen = 7  # <-', "pcie_gen", "must be a PCIe generation 1 to 6"),
    (f'name = "{RTX4090}"\npcie_width = 3  # <-', "pcie_width", "must be a PCIe link width"),
    (f'name = "{RTX4090}"\nmatch_subsystem_id = "16F3"  # <-', "match_subsystem_id", 'as in "0x145010DE"'),
    (f'name = "{RTX4090}"\nmatch_vbios = 95  # <-', "match_vbios", "must be a string"),
    ('name = "Mine"\nbase = "RTX 4090 Super Duper"  # <-', "base", "is not in the spec catalog"),
    ('name = "Mine"\nbase = "NVIDIA GeForce RTX 4090 Ti"  # <-', "base", "(did you mean 'NVIDIA GeForce RTX 40"),
    ("name = 4090  # <-", "name", "must be a string"),
])
def test_bad_values_are_one_line_errors_at_their_line(body: str, key: str, message: str) -> None:
    text = "\n[[spec]]\n" + body + "\n"
    (line,) = _errors(text)
    assert line.startswith(f"fleet.toml:{_line_of(text)}: spec[0].{key}: ")
    assert message in line


def test_a_model_the_catalog_lacks_must_state_what_derating_needs() -> None:
    text = '\n[[spec]]  # <-\nname = "NVIDIA Mystery 9000"\nmemory_gb = 96\n'
    (line,) = _errors(text)
    assert line.startswith(f"fleet.toml:{_line_of(text)}: spec[0]: 'NVIDIA Mystery 9000' is not in the spec catalog")
    missing = [k for k in DERATING_KEYS if k != "memory_gb"]
    assert f"missing {', '.join(missing)}" in line and "base" in line


def test_missing_name_and_not_a_table() -> None:
    assert _errors("\n[[spec]]\nmemory_gb = 48\n") == [
        "fleet.toml:5: spec[0]: missing required key 'name' (the model's name as NVML reports it)"]
    assert _errors("", before='spec = ["4090"]\n') == ["fleet.toml:1: spec[0]: must be a table ([[spec]])"]
    assert _errors('\n[spec]\nname = "x"\n') == ["fleet.toml:5: spec: must be an array of tables ([[spec]])"]


def test_duplicates_are_the_same_name_and_match_keys() -> None:
    text = f"""
[[spec]]
name = "{RTX4090}"
match_subsystem_id = "0x16F310DE"
memory_gb = 48

[[spec]]
name = "GeForce RTX 4090"  # <-
match_subsystem_id = "0x16f310de"
memory_gb = 47

[[spec]]
name = "{RTX4090}"
match_subsystem_id = "0x16F310DE"
match_vbios = "95.02.18.80.5F"
memory_gb = 48
"""
    (line,) = _errors(text)
    assert line == (f"fleet.toml:{_line_of(text)}: spec[1].name: duplicate [[spec]] for 'GeForce RTX 4090' "
                    "with the same match keys (first at line 5)")


def test_every_problem_of_a_file_is_reported_together_in_line_order() -> None:
    lines = _errors(f"""
[[spec]]
name = "{RTX4090}"
memory_gb = 0
colour = "red"

[[spec]]
name = "Nope"
base = "Nope either"
""")
    assert [int(line.split(":")[1]) for line in lines] == [7, 8, 12]


# -- resolution -------------------------------------------------------------------------------------------


def _book() -> SpecBook:
    return parse_fleet(NODE + f"""
[[spec]]
name = "{RTX4090}"
memory_gb = 30

[[spec]]
name = "{RTX4090}"
match_vbios = "95.02.18.80.5F"
memory_gb = 32

[[spec]]
name = "{RTX4090}"
match_subsystem_id = "0x16F310DE"
match_vbios = "95.02.18.80.5F"
memory_gb = 33

[[spec]]
name = "{RTX4090}"
match_subsystem_id = "0x16F310DE"
memory_gb = 31
""", path="fleet.toml").spec_book()


@pytest.mark.parametrize("subsystem, vbios, memory", [
    ("0x16F310DE", "95.02.18.80.5F", 33),   # name + subsystem + VBIOS
    ("0x16f310de", None, 31),               # name + subsystem (any case, as the inventory may print it)
    (0x16F310DE, "95.02.18.80.5F ", 33),    # a number; VBIOS with stray space
    (None, "95.02.18.80.5F", 32),           # name + VBIOS
    ("0x167C10DE", "95.02.18.80.5F", 32),   # another subsystem: the VBIOS one
    ("0x167C10DE", "95.02.3C.00.01", 30),   # neither: the name-only one
    (None, None, 30),
])
def test_the_most_specific_user_spec_wins(subsystem: object, vbios: str | None, memory: int) -> None:
    spec = _book().lookup(RTX4090, subsystem_id=subsystem, vbios=vbios)
    assert spec is not None and spec.origin == "user" and spec.memory_gb == memory


def test_user_specs_beat_the_catalog_only_for_their_model() -> None:
    book = _book()
    other = book.lookup("NVIDIA A100-SXM4-80GB", subsystem_id="0x16F310DE")
    assert other is specs.lookup("NVIDIA A100-SXM4-80GB") and other is not None and other.origin == "catalog"
    assert book.lookup("NVIDIA Mystery 9000") is None
    assert origin_label(book.lookup(RTX4090)) == "user spec" and origin_label(other) == "catalog"
    assert origin_label(None) == "not in the spec catalog"
    only_matched = parse_fleet(NODE + f'[[spec]]\nname = "{RTX4090}"\nmatch_vbios = "X"\nmemory_gb = 48\n').spec_book()
    stock = only_matched.lookup(RTX4090, vbios="Y")
    assert stock is specs.lookup(RTX4090)  # a card the [[spec]] does not match keeps its catalog row
    assert only_matched.for_inventory(RTX4090, {"vbios": "X", "pci_subsystem_id": "0x1"}).memory_gb == 48  # type: ignore[union-attr]


def test_without_user_specs_the_book_is_the_catalog() -> None:
    assert book_of(None) is CATALOG_BOOK and parse_fleet(NODE).spec_book() is CATALOG_BOOK
    for row in specs.all_specs():
        mib = row.memory_gb * 1024  # boards of one name differ in memory (the 10 and 12 GB RTX 3080)
        assert CATALOG_BOOK.lookup(row.nvml_name, memory_mib=mib) is specs.lookup(row.nvml_name, mib) is row
        assert row.origin == "catalog"
        assert CATALOG_BOOK.min_driver(row.nvml_name) == specs.min_driver(row.nvml_name)


def test_fleet_check_counts_the_user_specs(tmp_path, capsys) -> None:
    import argparse

    from fleetmon.cli import fleet as fleetcli

    path = tmp_path / "fleet.toml"
    path.write_text(NODE + f'[[spec]]\nname = "{RTX4090}"\nmatch_vbios = "X"\nmemory_gb = 48\n', encoding="utf-8")
    assert fleetcli.main_check(argparse.Namespace(file=str(path))) == 0
    assert capsys.readouterr().out == "OK: 1 nodes in 0 groups, 1 user specs ([[spec]])\n"


def test_the_book_picks_a_catalog_board_by_the_inventorys_memory() -> None:
    # The 12 GB RTX 3080 reports the 10 GB card's name: without its memory it would read as memory-modded.
    spec = CATALOG_BOOK.for_inventory("NVIDIA GeForce RTX 3080", {"memory_total_mib": 12288})
    assert spec is not None and spec.memory_gb == 12 and spec.tdp_w == 350
    spec = CATALOG_BOOK.for_inventory("NVIDIA GeForce RTX 3080", {"memory_total_mib": 10240})
    assert spec is not None and spec.memory_gb == 10


def test_other_vendors_through_the_book() -> None:
    # issue 23: a [[spec]] over an AMD row keeps the vendor, so NVIDIA's repair limits and driver table never
    # apply to it; the catalog's own non-NVIDIA rows have no minimum driver either.
    fleet = parse_fleet(NODE + """
[[spec]]
name = "MI300X lab board"
base = "AMD Instinct MI300X"
tdp_w = 650
mem_repair = "page_retire"
""", path="fleet.toml")
    (user,) = fleet.specs
    assert user.spec.vendor == "amd" and user.spec.tdp_w == 650 and user.spec.memory_gb == 192
    assert (user.spec.retired_page_limit, user.spec.remap_row_limit) == (None, None)
    book = book_of(fleet)
    assert book.min_driver("MI300X lab board") is None
    assert CATALOG_BOOK.min_driver("AMD Instinct MI300X OAM") is None
    assert CATALOG_BOOK.min_driver("910B4") is None
    a100 = CATALOG_BOOK.min_driver("NVIDIA A100-SXM4-80GB")
    assert a100 is not None and a100.architecture == "Ampere"
    found = CATALOG_BOOK.lookup("K100_AI", memory_mib=65520)
    assert found is not None and found.vendor == "hygon" and found.tdp_w is None
    # an NVIDIA row's user spec keeps NVIDIA's limits
    nv = parse_fleet(NODE + '[[spec]]\nname = "x"\nbase = "NVIDIA A100-SXM4-80GB"\nmem_repair = "page_retire"\n',
                     path="fleet.toml").specs[0].spec
    assert nv.vendor == "nvidia" and nv.retired_page_limit == specs.PAGE_RETIRE_LIMIT
