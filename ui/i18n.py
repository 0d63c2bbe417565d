"""The app's language: Qt's translators for the window's strings, ``fleetmon.i18n`` for the core's (issue 25).

Strings in ``ui/`` are marked with ``self.tr()`` / ``QCoreApplication.translate(context, text)`` (names kept
as identifiers, such as the views', with ``QT_TRANSLATE_NOOP``); ``pyside6-lupdate`` collects them into
``ui/translations/fleetmon_<lang>.ts`` (kept in the repository, translated there) and ``pyside6-lrelease``
compiles that into the ``.qm`` loaded here (``make venv``/``make test`` and the app bundle build it; when it
is missing or older than its ``.ts`` it is built here, on first use). Qt's own ``qtbase_<lang>.qm`` from
PySide6's translations folder goes in too, so that standard dialogs and buttons match. docs/i18n.md.

The language: ``FLEETMON_LANG`` when set (an explicit choice for this run), else the one chosen in
View ▸ Language (saved in QSettings), else the system locale (``LC_ALL``/``LC_MESSAGES``/``LANG``).
"""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QLibraryInfo, QSettings, QTranslator

from fleetmon import i18n

log = logging.getLogger("fleetmon.ui")

SETTING = "ui/language"
"""The QSettings key of the language chosen in View ▸ Language ("en", "zh_CN")."""
TRANSLATIONS = Path(__file__).with_name("translations")
NATIVE_NAMES = {"en": "English", "zh_CN": "简体中文"}
"""Each language in its own script, as language menus show them (never translated)."""

_installed: list[QTranslator] = []


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:  # noqa: N802 - the name lupdate looks for
    """Marks ``text`` for lupdate in ``context``, translated later where shown (PySide6's own is typed ``object``)."""
    return text


def ts_path(lang: str) -> Path:
    return TRANSLATIONS / f"fleetmon_{lang}.ts"


def lrelease() -> list[str]:
    """The ``lrelease`` PySide6 ships (its wheel carries the binary; the ``pyside6-lrelease`` script wraps it)."""
    import PySide6

    return [str(Path(PySide6.__file__).with_name("lrelease"))]


def build_qm(ts: Path, qm: Path) -> None:
    """Compile ``ts`` into ``qm`` with ``pyside6-lrelease`` (raises ``subprocess.CalledProcessError``/OSError)."""
    qm.parent.mkdir(parents=True, exist_ok=True)
    # Written aside, then renamed over: a running fleetmon maps the old file (QTranslator reads it in place),
    # and a rewrite under it turned its later look-ups English.
    part = qm.with_name(f".{qm.name}.{os.getpid()}")
    try:
        subprocess.run([*lrelease(), "-silent", str(ts), "-qm", str(part)], check=True, capture_output=True,
                       timeout=60)
        os.replace(part, qm)
    finally:
        part.unlink(missing_ok=True)


def qm_path(lang: str) -> Path | None:
    """The compiled catalog of ``lang``, built from its ``.ts`` when missing or older (None: no catalog).

    Beside the ``.ts`` when that folder is writable, else in the user's cache folder; a bundle that ships
    only the ``.qm`` uses it as it is.
    """
    ts = ts_path(lang)
    shipped = ts.with_suffix(".qm")
    if not ts.exists():
        return shipped if shipped.exists() else None
    for qm in (shipped, Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fleetmon" / shipped.name):
        if qm.exists() and qm.stat().st_mtime >= ts.stat().st_mtime:
            return qm
        try:
            build_qm(ts, qm)
            return qm
        except (OSError, subprocess.SubprocessError) as exc:
            log.debug("cannot build %s: %s", qm, exc)
    log.warning("fleetmon: cannot build the %s translation (pyside6-lrelease); the window stays in English", lang)
    return None


def chosen_language(settings: QSettings | None) -> str:
    """``FLEETMON_LANG`` when set, else the saved choice, else the system locale: "en" or "zh_CN"."""
    if os.environ.get("FLEETMON_LANG"):
        return i18n.language_from_environment()
    saved = settings.value(SETTING) if settings is not None else None
    if isinstance(saved, str) and saved in i18n.SUPPORTED:
        return saved
    return i18n.language_from_environment()


def save_language(settings: QSettings, lang: str) -> None:
    """Remember View ▸ Language's choice (it applies at the next start)."""
    settings.setValue(SETTING, lang)
    settings.sync()


def install(lang: str) -> str:
    """Switch the application's translators (and ``fleetmon.i18n``) to ``lang``; returns the language in use.

    Widgets read their strings when built: install before building the window. "en" removes them.
    """
    app = QCoreApplication.instance()
    for t in _installed:
        if app is not None:
            QCoreApplication.removeTranslator(t)
    _installed.clear()
    lang = lang if lang in i18n.SUPPORTED else "en"
    if lang != "en" and app is not None:
        ours = qm_path(lang)
        if ours is None:
            lang = "en"
        else:
            qt_dir = QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)
            for name, folder in ((f"qtbase_{lang}", qt_dir), (ours.stem, str(ours.parent))):
                t = QTranslator(app)
                if t.load(name, folder):
                    QCoreApplication.installTranslator(t)
                    _installed.append(t)
                else:
                    log.warning("fleetmon: cannot load the translation %s from %s", name, folder)
    i18n.set_language(lang)
    return lang


def current() -> str:
    """The language the installed translators give ("en": none)."""
    return i18n.current_language()


# Column headers: the models keep their English names (code finds columns by them); the header shows the
# translation in the "Column" context. Listed here so that lupdate sees each (some come from fleetmon.fields).
_COLUMN_NAMES = (
    QT_TRANSLATE_NOOP("Column", "Node"), QT_TRANSLATE_NOOP("Column", "GPU"), QT_TRANSLATE_NOOP("Column", "Model"),
    QT_TRANSLATE_NOOP("Column", "Vendor"), QT_TRANSLATE_NOOP("Column", "Driver"),
    QT_TRANSLATE_NOOP("Column", "Temp"), QT_TRANSLATE_NOOP("Column", "Power / limit"),
    QT_TRANSLATE_NOOP("Column", "Util"), QT_TRANSLATE_NOOP("Column", "Last seen"),
    QT_TRANSLATE_NOOP("Column", "Status"), QT_TRANSLATE_NOOP("Column", "Health"),
    QT_TRANSLATE_NOOP("Column", "Intake"), QT_TRANSLATE_NOOP("Column", "Name"),
    QT_TRANSLATE_NOOP("Column", "Severity"), QT_TRANSLATE_NOOP("Column", "Kind"),
    QT_TRANSLATE_NOOP("Column", "Since"), QT_TRANSLATE_NOOP("Column", "Last evidence"),
    QT_TRANSLATE_NOOP("Column", "Action"), QT_TRANSLATE_NOOP("Column", "Evidence"),
    QT_TRANSLATE_NOOP("Column", "Acknowledged"), QT_TRANSLATE_NOOP("Column", "Group"),
    QT_TRANSLATE_NOOP("Column", "Nodes"), QT_TRANSLATE_NOOP("Column", "GPUs"),
    QT_TRANSLATE_NOOP("Column", "CUDA driver / runtime"), QT_TRANSLATE_NOOP("Column", "VBIOS"),
    QT_TRANSLATE_NOOP("Column", "Firmware"), QT_TRANSLATE_NOOP("Column", "Node / finding"),
    QT_TRANSLATE_NOOP("Column", "Verdict"), QT_TRANSLATE_NOOP("Column", "Summary"),
    QT_TRANSLATE_NOOP("Column", "Change"), QT_TRANSLATE_NOOP("Column", "Where"),
    QT_TRANSLATE_NOOP("Column", "When (UTC)"), QT_TRANSLATE_NOOP("Column", "Reasons"),
    QT_TRANSLATE_NOOP("Column", "Slurm"), QT_TRANSLATE_NOOP("Column", "What"),
    QT_TRANSLATE_NOOP("Column", "Value"), QT_TRANSLATE_NOOP("Column", "Cards"),
    QT_TRANSLATE_NOOP("Column", "Days"), QT_TRANSLATE_NOOP("Column", "When"),
    QT_TRANSLATE_NOOP("Column", "Detail"),
)


# Qt's own zh_CN catalog (qtbase_zh_CN.qm) predates these labels of Qt 6's standard dialogs (the save dialog's
# "Look in" and "Files of type", the print dialog's "Page Set", a folder's type), which stayed English there: ours, installed after
# it and so asked first, gives them.
_QT_GAPS = (QT_TRANSLATE_NOOP("QFileDialog", "&Look in:"), QT_TRANSLATE_NOOP("QFileDialog", "Files of &type:"),
            QT_TRANSLATE_NOOP("QPrintSettingsOutput", "Page &Set:"))


def _qt_gaps_disambiguated() -> None:
    """Never called: lupdate reads here the Qt strings that carry a disambiguation (QT_TRANSLATE_NOOP has none),
    the file dialogs' "Folder" type."""
    QCoreApplication.translate("QAbstractFileIconProvider", "Folder", "All other platforms")


def column(name: str) -> str:
    """A column header as the window shows it (its name untranslated when no translation has it)."""
    return QCoreApplication.translate("Column", name) if name else name


_VERDICT_WORDS = {v: v for v in (QT_TRANSLATE_NOOP("Verdict", "pass"), QT_TRANSLATE_NOOP("Verdict", "warn"),
                                  QT_TRANSLATE_NOOP("Verdict", "fail"), QT_TRANSLATE_NOOP("Verdict", "unreachable"),
                                  QT_TRANSLATE_NOOP("Verdict", "stale"), QT_TRANSLATE_NOOP("Verdict", "unknown"))}


def verdict_word(verdict: str) -> str:
    """A node verdict as the window says it (the verdict itself, ``fleetmon.health.verdict``, stays English)."""
    return QCoreApplication.translate("Verdict", _VERDICT_WORDS[verdict]) if verdict in _VERDICT_WORDS else verdict


_SEVERITY_WORDS = {s: s for s in (QT_TRANSLATE_NOOP("Severity", "critical"), QT_TRANSLATE_NOOP("Severity", "warning"),
                                  QT_TRANSLATE_NOOP("Severity", "info"))}


def severity_text(severity: str) -> str:
    """A finding's severity as the window says it (stored and exported as it is)."""
    return QCoreApplication.translate("Severity", _SEVERITY_WORDS[severity]) if severity in _SEVERITY_WORDS \
        else severity
