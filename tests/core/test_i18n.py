"""The core's translations (fleetmon.i18n, docs/i18n.md): the zh_CN catalog is complete, keeps every
placeholder, is current with the source, and the language follows --lang, FLEETMON_LANG and the locale."""

from __future__ import annotations

import ast
import copy
import json
import os
import pickle
import shutil
import string
from pathlib import Path

import pytest

babel_extract = pytest.importorskip("babel.messages.extract")
from babel.messages.frontend import parse_mapping_cfg  # noqa: E402
from babel.messages.pofile import read_po  # noqa: E402
from babel.util import pathmatch  # noqa: E402

from fleetmon import i18n  # noqa: E402
from fleetmon.i18n import N_, Text, _, localized  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PO = REPO / "fleetmon" / "locale" / "zh_CN" / "LC_MESSAGES" / "fleetmon.po"
KEYWORDS = {**babel_extract.DEFAULT_KEYWORDS, "N_": None, "ngettext": (1, 2)}


def _catalog():  # type: ignore[no-untyped-def]
    with PO.open("rb") as handle:
        return read_po(handle, locale="zh_CN")


def _ids(message_id: str | tuple[str, ...]) -> tuple[str, ...]:
    return message_id if isinstance(message_id, tuple) else (message_id,)


def _fields(text: str) -> set[str]:
    """The names of the ``{placeholders}`` of ``text`` ("{rate:.0f}" -> "rate")."""
    return {name.split(".")[0].split("[")[0] for _lit, name, _spec, _conv in string.Formatter().parse(text)
            if name is not None}


def test_every_marked_string_has_a_zh_CN_translation() -> None:
    catalog = _catalog()
    missing = [m.id for m in catalog if m.id and not all(_ids(m.string))]
    assert not missing, f"untranslated in {PO.name}: {missing}"
    fuzzy = [m.id for m in catalog if m.id and m.fuzzy]
    assert not fuzzy, f"fuzzy (unchecked) translations: {fuzzy}"


def test_translations_keep_every_placeholder_and_invent_none() -> None:
    wrong = []
    for m in _catalog():
        if not m.id:
            continue
        wanted = set().union(*(_fields(i) for i in _ids(m.id)))
        for text in _ids(m.string):
            if _fields(text) != wanted:
                wrong.append((m.id, text))
        for i in _ids(m.id):
            assert "{}" not in i and not any(n.isdigit() for n in _fields(i)), f"positional placeholder: {i!r}"
    assert not wrong, wrong


def _marking_sources() -> list[Path]:
    """The Python files of fleetmon/ and storage/ that mark text (a file without `_(` or `ngettext(` marks none)."""
    return [p for pkg in ("fleetmon", "storage") for p in sorted((REPO / pkg).rglob("*.py"))
            if "_(" in (text := p.read_text(encoding="utf-8")) or "ngettext(" in text]


def test_the_catalog_is_current_with_the_source() -> None:
    """Every string the extractor finds in fleetmon/ (as babel.cfg maps it) is in the .po: a new marked
    string fails here until `make i18n-update` and a translation bring it in."""
    with (REPO / "babel.cfg").open() as handle:
        method_map, _options = parse_mapping_cfg(handle, "babel.cfg")
    found: set[object] = set()
    for path in _marking_sources():
        relative = path.relative_to(REPO).as_posix()
        method = next((m for pattern, m in method_map if pathmatch(pattern, relative)), None)
        assert method == "python", f"babel.cfg does not extract {relative}"
        found |= {msg for _l, msg, _c, _ctx in babel_extract.extract_from_file(method, str(path), keywords=KEYWORDS)}
    assert found, "the extractor found nothing"
    known = {m.id for m in _catalog() if m.id}
    missing = sorted(map(str, found - known))
    assert not missing, f"marked in the source but not in {PO.name} (run make i18n-update, translate): {missing}"


def test_no_marked_text_hides_inside_an_f_string() -> None:
    """Babel's extractor does not look into f-strings (Python 3.11): `_("...")` there would never reach the
    catalog, and the test above could not tell."""
    hidden = []
    for path in _marking_sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                for inner in ast.walk(node):
                    if (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name)
                            and inner.func.id in ("_", "N_", "ngettext")
                            and inner.args and isinstance(inner.args[0], ast.Constant)):
                        hidden.append(f"{path.relative_to(REPO)}:{inner.lineno}")
    assert not hidden, hidden


@pytest.mark.parametrize("environ,expected", [
    ({"FLEETMON_LANG": "zh_CN", "LANG": "en_US.UTF-8"}, "zh_CN"),
    ({"FLEETMON_LANG": "en", "LANG": "zh_CN.UTF-8"}, "en"),
    ({"LC_ALL": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh_CN"),
    ({"LC_MESSAGES": "zh_CN.GB18030"}, "zh_CN"),
    ({"LANG": "zh_CN.UTF-8"}, "zh_CN"),
    ({"LANG": "zh_SG"}, "zh_CN"),
    ({"LANG": "zh_TW.UTF-8"}, "en"),  # Traditional Chinese has no catalog
    ({"LANG": "de_DE.UTF-8"}, "en"),
    ({"LANG": "C.UTF-8"}, "en"),
    ({}, "en"),
])
def test_language_follows_the_environment(environ: dict[str, str], expected: str) -> None:
    assert i18n.language_from_environment(environ) == expected


def test_set_language_translates_and_english_is_the_source_text() -> None:
    assert i18n.current_language() == "en" and _("Fleet") == "Fleet"
    assert i18n.set_language("zh_CN.UTF-8") == "zh_CN" == i18n.current_language()
    assert _("Fleet") == "集群"
    assert i18n.ngettext("{count} node", "{count} nodes", 3).format(count=3) == "3 个节点"
    assert _("a string nobody marked") == "a string nobody marked"
    assert i18n.set_language("fr") == "en" and _("Fleet") == "Fleet"


def test_text_is_its_english_string_and_says_itself_in_the_current_language() -> None:
    t = Text(N_("{gpu}: GPU lost (fell off the bus)"), gpu="n1 gpu0")
    assert t == "n1 gpu0: GPU lost (fell off the bus)" and json.dumps(t) == json.dumps(str(t))
    for again in (copy.deepcopy(t), pickle.loads(pickle.dumps(t))):
        assert isinstance(again, Text) and again.args == {"gpu": "n1 gpu0"}
    outer = Text(N_("{summary} ({recurrence})"), summary=t, recurrence="2 of the last 7 days")
    assert localized(outer) == str(outer)  # English: as made
    i18n.set_language("zh_CN")
    assert localized(t) == "n1 gpu0：掉卡（GPU 从总线上掉线）"
    assert localized(outer) == "n1 gpu0：掉卡（GPU 从总线上掉线）（2 of the last 7 days）"  # nested Text too
    assert localized("Check cooling: fans, airflow, dust, room temperature, thermal paste").startswith("检查散热")
    assert localized("gpu-lost") == "gpu-lost"  # identifiers are never in the catalog


def test_the_po_is_compiled_in_memory_when_the_mo_is_missing_or_stale(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "zh_CN" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    shutil.copyfile(PO, folder / "fleetmon.po")
    monkeypatch.setattr(i18n, "LOCALE_DIR", tmp_path)
    i18n.set_language("zh_CN")
    assert _("Fleet") == "集群"  # no .mo at all
    (folder / "fleetmon.mo").write_bytes(b"not a catalog")  # older than the .po: ignored
    os.utime(folder / "fleetmon.mo", (1, 1))
    i18n.set_language("zh_CN")
    assert _("Fleet") == "集群"


def test_the_collector_note_of_the_window_speaks_the_reader_language(tmp_path: Path) -> None:
    from fleetmon.collector.main import prepare_database

    collector, lock, note = prepare_database(str(tmp_path / "fleet.db"), None, None)
    assert collector is None and lock is None
    assert note == "collector: none (read-only view)"  # the English text, as before
    before = i18n.current_language()
    try:
        i18n.set_language("zh_CN")
        assert localized(note) == "采集：无（只读查看）"
    finally:
        i18n.set_language(before)
