"""storage.signoffs: sign-offs stored by m009_signoffs, newest per scope is the baseline."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.db import open_database
from storage.schema import known_migration_names
from storage.signoffs import last_signoff, save_signoff, signoffs


def test_signoffs_round_trip(tmp_path: Path) -> None:
    assert "m009_signoffs" in known_migration_names()
    db = open_database(tmp_path / "f.db")
    assert last_signoff(db) is None and signoffs(db) == []
    a = save_signoff(db, " ann ", 100.0, note="all fine", summary={"open": [{"key": "k1"}], "checked": ["n1"]})
    save_signoff(db, "bob", 50.0)  # older, signed late: not the baseline
    save_signoff(db, "cy", 200.0, scope="report:a100")
    assert a.name == "ann" and a.open_findings == [{"key": "k1"}]
    last = last_signoff(db)
    assert last == a
    assert last_signoff(db, before=100.0).name == "bob"
    assert last_signoff(db, "report:a100").name == "cy"
    assert [s.name for s in signoffs(db)] == ["cy", "ann", "bob"]
    with pytest.raises(ValueError):
        save_signoff(db, "  ", 300.0)
    db.close()
    ro = open_database(tmp_path / "f.db", readonly=True)
    assert last_signoff(ro) == a
    ro.close()
