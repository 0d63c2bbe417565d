"""`fleetmon import` (issue 23): other vendors' captures told apart by content and stored like nvidia-smi's.

Every file of the vendors whose parsers are registered is detected as its own format (and no NVIDIA
capture as another vendor's), imports through the command into a real SQLite file, and two hosts of one
layout keep their cards apart although their tools give them ids unique only on the host.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from fleetmon.cli import main
from fleetmon.sources import formats
from storage.db import open_database

VENDOR_FILES = {  # folder → the start of each file's format name
    "huawei_ascend": "npu-smi",
    "moore_threads": "mthreads-gmi",
    "hygon": "",
    "amd": "",
}
INTEL = {"all-smi_hl-smi_2xHL-325L_excerpt.csv": "hl-smi-csv"}


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as exc:
            rc = int(exc.code or 0)
    return rc, out.getvalue(), err.getvalue()


def _gpus(db_path: Path) -> dict[str, int]:
    db = open_database(str(db_path))
    try:
        return {str(r["node"]): int(r["n"]) for r in db.query("select node, count(*) n from gpus group by node")}
    finally:
        db.close()


def test_every_file_of_a_registered_vendor_is_detected_as_its_format(shared_fixtures: Path) -> None:
    root = shared_fixtures / "F_other_vendors"
    seen = 0
    for folder, fmt in VENDOR_FILES.items():
        for path in sorted((root / folder).iterdir()):
            found = formats.detect(path.read_bytes())
            assert found.name.startswith(fmt) and found.vendor != "nvidia", (path.name, found.name)
            seen += 1
    for name, fmt in INTEL.items():
        assert formats.detect((root / "intel" / name).read_bytes()).name == fmt
    for path in sorted((root / "intel").glob("*xpu-smi*")):
        assert formats.detect(path.read_bytes()).name == "xpu-smi-csv", path.name
    assert seen >= 34


def test_no_nvidia_capture_is_taken_for_another_vendors(shared_fixtures: Path) -> None:
    checked = 0
    for folder in ("A_nvidia_smi_xml", "A2_nvidia_smi_q_text"):
        for path in sorted((shared_fixtures / folder).iterdir()):
            if path.is_file() and path.suffix != ".md":  # a README beside the captures is no capture
                fmt = formats.detect(path.read_bytes())
                assert fmt.vendor == "nvidia", (path.name, fmt.name)
                checked += 1
    assert checked >= 10


def test_two_hosts_of_one_layout_keep_their_cards_apart(shared_fixtures: Path, tmp_path: Path) -> None:
    # npu-smi info and xpu-smi dump give no id unique beyond the host: the same capture on two nodes is
    # two sets of cards, not one set claimed twice (before, the second node's were refused as uuid-conflict).
    db = tmp_path / "fleet.db"
    root = shared_fixtures / "F_other_vendors"
    atlas = root / "huawei_ascend" / "gpustack_ai-server_atlas-800-training-server_model-9010_version-24.1.RC2.txt"
    xpu = root / "intel" / "issue_xpumanager-98_xpu-smi-dump_6xMax1550_excerpt.csv"
    for node, path in (("atlas-1", atlas), ("atlas-2", atlas), ("xpu-1", xpu), ("xpu-2", xpu)):
        rc, out, err = _run("import", str(path), "--db", str(db), "--node", node)
        assert rc == 0 and "not stored" not in err, (node, out, err)
    assert _gpus(db) == {"atlas-1": 8, "atlas-2": 8, "xpu-1": 6, "xpu-2": 6}


def test_a_vendor_capture_imports_with_its_readings(shared_fixtures: Path, tmp_path: Path) -> None:
    db = tmp_path / "fleet.db"
    path = shared_fixtures / "F_other_vendors" / "intel" / "all-smi_hl-smi_2xHL-325L_excerpt.csv"
    rc, out, err = _run("import", str(path), "--db", str(db), "--node", "gaudi-1")
    assert rc == 0, err
    assert "gaudi-1: 2 GPU(s)" in out and "(hl-smi-csv)" in out
    store = open_database(str(db))
    try:
        names = {str(r["name"]) for r in store.query("select name from gpus")}
        uuids = {str(r["uuid"]) for r in store.query("select uuid from gpus")}
    finally:
        store.close()
    assert names == {"HL-325L"} and "01P4-HL3090A0-18-U4V193-22-07-00" in uuids


def test_a_wrong_format_name_is_one_line_naming_the_formats(tmp_path: Path) -> None:
    f = tmp_path / "x.txt"
    f.write_text("hello\n")
    rc, _out, err = _run("import", str(f), "--db", str(tmp_path / "db"), "--format", "amd-smi-yaml")
    assert rc == 1 and err.count("\n") == 1 and "npu-smi" in err and "nvidia-smi-xml" in err
    assert not (tmp_path / "db").exists()
    rc, _out, err = _run("import", str(f), "--db", str(tmp_path / "db"))
    assert rc == 1 and "not a capture fleetmon reads" in err and not (tmp_path / "db").exists()
