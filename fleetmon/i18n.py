"""Translation of the core's user-visible text (gettext catalogs, docs/i18n.md).

Mark text with :func:`_` (or :func:`ngettext` for counts) where it is shown, with NAMED
placeholders filled after translation, so that a translation may reorder the values::

    _("{count} GPUs lost on {node}").format(count=n, node=name)

Text built at import time (module-level tables) is marked with :func:`N_` (a no-op that the
extractor sees) and translated with ``_(text)`` where it is shown.

Catalogs: ``fleetmon/locale/<lang>/LC_MESSAGES/fleetmon.po`` in the repository; the ``.mo``
beside it is compiled by ``make i18n`` (run by ``make venv``/``test``/``app``). When the ``.mo``
is missing or older than the ``.po`` and Babel is installed (the ``app`` extra), the ``.po`` is
compiled in memory, so a wheel (which carries both) and a fresh checkout work either way. Without
either (a GPU node with the standard library alone) the text stays English.

The language is "en" until :func:`set_language` is called: the CLI sets it from ``--lang`` or
:func:`language_from_environment`, the GUI from its setting. Identifiers that users search for
(finding kinds, Xid codes, throttle-reason names, node and GPU names, JSON keys, CLI flags) are
never marked.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from gettext import GNUTranslations, NullTranslations
from pathlib import Path

__all__ = ["SUPPORTED", "LOCALE_DIR", "DOMAIN", "N_", "Text", "_", "gettext", "localized", "ngettext", "set_language",
           "listing", "current_language", "language_from_environment", "normalize_language", "number", "when", "day",
           "speaking", "Joined", "Listing", "Moment", "Lines", "message_of", "reason_of", "to_data", "from_data", "remake",
           "dumps", "loads"]

SUPPORTED: tuple[str, ...] = ("en", "zh_CN")
"""The languages fleetmon speaks: English (the source text) and Simplified Chinese."""

DOMAIN = "fleetmon"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"

_lock = threading.Lock()
_language = "en"
_translations: NullTranslations = NullTranslations()
_catalogs: dict[str, NullTranslations] = {}
"""Each language's catalog once loaded, for :func:`speaking`."""
_thread = threading.local()
"""``speaking``: (language, catalog) this thread speaks for a while instead of the process's language."""


def _active() -> tuple[str, NullTranslations]:
    """(language, catalog) of this thread: a :func:`speaking` block's, else the process's."""
    over: tuple[str, NullTranslations] | None = getattr(_thread, "speaking", None)
    return over if over is not None else (_language, _translations)


def N_(message: str) -> str:
    """Mark text for extraction without translating it now (module-level tables): ``_(text)`` at use."""
    return message


class Text(str):
    """English text that remembers how it was made, so that it can be said again in another language.

    ``Text(N_("{gpu}: {temp} °C"), gpu="n1 gpu0", temp=91)`` IS the English string "n1 gpu0: 91 °C"
    (stored, compared, written to JSON and the database as before) and :func:`localized` turns it
    into the current language: ``_(template)`` filled with the same values, a value that is itself a
    :class:`Text` localized too. Findings carry their summaries this way: the rule builds the text once,
    in English, and every surface shows it in the reader's language. Text that went through the
    database comes back as a plain ``str`` and is shown as stored (English).
    """

    template: str
    args: dict[str, object]

    def __new__(cls, template: str, /, **args: object) -> Text:
        self = super().__new__(cls, template.format(**args) if args else template)
        self.template = template
        self.args = dict(args)
        return self

    def __reduce__(self) -> tuple[object, ...]:  # copy, deepcopy and pickle keep the template and values
        return (_remake, (self.template, self.args))

    def with_args(self, **changes: object) -> Text:
        """The same text with some values changed."""
        return Text(self.template, **{**self.args, **changes})


def _remake(template: str, args: dict[str, object]) -> Text:
    return Text(template, **args)


def listing(items: Sequence[str], semicolons: bool = False) -> str:
    """``items`` as a list in words: "a, b, c" (``semicolons``: "a; b; c") in English, each item localized
    where shown (a :class:`Text`), with the list separator of the reader's language ("a、b、c"; "a；b；c"). One
    item is itself; none is "". A :class:`Listing`: flat, however long the list."""
    if len(items) < 2:
        return items[0] if items else ""
    return Listing(items, semicolons)


LIST_SEPARATOR = N_(", ")
"""How a list of clauses is joined (a list, not a sentence): "，" in Chinese."""


class Joined(str):
    """Clauses joined into a list: ``Joined([a, b])`` IS "a, b" in English; :func:`localized` says each clause
    (a :class:`Text`) in the reader's language, joined as the language joins a list."""

    parts: tuple[str, ...]

    def __new__(cls, parts: Sequence[str]) -> Joined:
        self = super().__new__(cls, LIST_SEPARATOR.join(parts))
        self.parts = tuple(parts)
        return self

    def __reduce__(self) -> tuple[object, ...]:
        return (Joined, (self.parts,))


class Listing(Joined):
    """A list in words (:func:`listing`): IS "a, b, c" ("a; b; c") in English; :func:`localized` joins the items
    with the separator the language's "{first}, {rest}" ("{first}; {rest}") template puts between them."""

    semicolons: bool

    def __new__(cls, parts: Sequence[str], semicolons: bool = False) -> Listing:
        self = str.__new__(cls, ("; " if semicolons else ", ").join(parts))
        self.parts = tuple(parts)
        self.semicolons = semicolons
        return self

    def __reduce__(self) -> tuple[object, ...]:
        return (Listing, (self.parts, self.semicolons))

    def separator(self) -> str:
        """The separator in the current language ("、" / "；" in Chinese)."""
        return _(N_("{first}; {rest}") if self.semicolons else N_("{first}, {rest}")).format(first="", rest="")


class Lines(Joined):
    """Lines of text (several errors reported together): ``Lines([a, b])`` IS "a\\nb"; :func:`localized` says each
    line in the reader's language."""

    def __new__(cls, parts: Sequence[str]) -> Lines:
        self = str.__new__(cls, "\n".join(parts))
        self.parts = tuple(parts)
        return self

    def __reduce__(self) -> tuple[object, ...]:
        return (Lines, (self.parts,))


class Moment(str):
    """A moment in text: ``Moment(ts)`` IS "2026-12-03 15:30 UTC" (English, as stored); :func:`localized` says
    it in the reader's locale ("2026年12月3日 15:30 UTC")."""

    ts: float

    def __new__(cls, ts: float) -> Moment:
        self = super().__new__(cls, _utc(float(ts)).strftime("%Y-%m-%d %H:%M UTC"))
        self.ts = float(ts)
        return self

    def __reduce__(self) -> tuple[object, ...]:
        return (Moment, (self.ts,))


def localized(text: object) -> str:
    """``text`` in the current language: a :class:`Text` re-made from its translated template, a plain
    string translated when the catalog has it (fixed sentences such as a finding's action), anything else
    as ``str()`` gives it."""
    language = _active()[0]
    if isinstance(text, (Joined, Moment)):
        if language == "en":
            return str.__str__(text)
        if isinstance(text, Moment):
            return f"{when(text.ts)} UTC"
        if isinstance(text, Lines):
            return "\n".join(localized(p) for p in text.parts)
        if isinstance(text, Listing):  # a plain item stays as it is (a name, a count)
            return text.separator().join(localized(p) if isinstance(p, (Text, Joined, Moment)) else p
                                         for p in text.parts)
        return _(LIST_SEPARATOR).join(localized(p) for p in text.parts)
    if isinstance(text, Text):
        if language == "en":
            return str.__str__(text)
        values = {k: localized(v) if isinstance(v, (Text, Joined, Moment)) else v for k, v in text.args.items()}
        return _(text.template).format(**values) if values else _(text.template)
    if isinstance(text, str):
        return _(text) if text and language != "en" else text
    return str(text)


# -- text kept for later: plain JSON-able data and back (the findings' stored summaries, docs/i18n.md) ------------

# Hand-written: a Text is a str (JSON writes it as its English string), so its template and values need a form
# of their own for the database; this is small and exact, and a stored form from an older build must never break
# a view (from_data falls back to the English string instead of raising).
_MAX_DEPTH = 200
"""Nesting :func:`from_data` follows (a listing stored by an older build nests one level per item); deeper data
is refused."""


def to_data(text: object) -> object:
    """``text`` (a :class:`Text`, :class:`Joined`, :class:`Moment`, a plain value) as JSON-able data that
    :func:`from_data` turns back into it: ``{"t": template, "a": {name: value}}``, ``{"j": [part, ...]}``,
    ``{"m": ts}``; a number, bool or None as itself; anything else as its string."""
    if isinstance(text, Moment):
        return {"m": text.ts}
    if isinstance(text, Listing):
        return {"j": [to_data(p) for p in text.parts], "l": ";" if text.semicolons else ","}
    if isinstance(text, Joined):
        return {"j": [to_data(p) for p in text.parts]}
    if isinstance(text, Text):
        return {"t": text.template, "a": {str(k): to_data(v) for k, v in text.args.items()}}
    if text is None or isinstance(text, (bool, int, float)):
        return text
    return str.__str__(text) if isinstance(text, str) else str(text)


def _value(data: object, depth: int) -> object:
    if depth > _MAX_DEPTH:
        raise ValueError("stored text nested too deep")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, Mapping):
        if "m" in data:
            ts = data["m"]
            if isinstance(ts, bool) or not isinstance(ts, (int, float)):
                raise ValueError("stored moment without a time")
            return Moment(ts)
        if "j" in data:
            parts = data["j"]
            if not isinstance(parts, list):
                raise ValueError("stored list without parts")
            said = [_as_str(p, depth) for p in parts]
            if "l" in data:
                return Listing(said, semicolons=data["l"] == ";")
            return Joined(said)
        template, args = data.get("t"), data.get("a", {})
        if isinstance(template, str) and isinstance(args, Mapping):
            return Text(template, **{str(k): _value(v, depth + 1) for k, v in args.items()})
    raise ValueError("stored text of an unknown form")


def _as_str(data: object, depth: int) -> str:
    made = _value(data, depth + 1)
    if not isinstance(made, str):
        raise ValueError("stored list part is not text")
    return made


def remake(data: object) -> str | None:
    """The :class:`Text`, :class:`Joined` or :class:`Moment` :func:`to_data` gave ``data`` for; None when
    ``data`` is not one (missing, of an unknown form, a template that does not fit its values). Never raises."""
    try:
        made = _value(data, 0)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, OSError,
            RecursionError):
        return None
    return made if isinstance(made, (Text, Joined, Moment)) else None


def from_data(data: object, english: str) -> str:
    """The text :func:`to_data` gave ``data`` for, when it says ``english`` again (so :func:`localized` can say
    it in the reader's language); else ``english`` itself: data missing, of an unknown form, a template that no
    longer fits its values, or text that would differ from what was stored. Never raises."""
    made = None if data is None else remake(data)
    if made is None or str.__str__(made) != english:
        return english
    return made


def dumps(texts: Mapping[str, object]) -> str | None:
    """``{name: text}`` as the JSON text stored beside the English strings (None when none of them is a
    :class:`Text`, :class:`Joined` or :class:`Moment`: nothing to say again in another language)."""
    kept = {k: to_data(v) for k, v in texts.items() if isinstance(v, (Text, Joined, Moment))}
    if not kept:
        return None
    return json.dumps(kept, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def loads(stored: object) -> dict[str, object]:
    """The JSON text of :func:`dumps` back as ``{name: data}`` for :func:`from_data` ({} when missing or
    unreadable: the English strings are shown as stored). Never raises."""
    if not isinstance(stored, str) or not stored:
        return {}
    try:
        data = json.loads(stored)
    except (ValueError, RecursionError):
        return {}
    return dict(data) if isinstance(data, dict) else {}


def kept_as_text(text: str, line: str, clean: Callable[[str], str]) -> str:
    """``line`` (``text`` made safe as a whole: folded, escaped, cut) as a :class:`Text` when ``text``
    is one whose values, each passed through ``clean`` (a nested Text's likewise), make exactly that English: so
    it is still said in the reader's language where it is shown; else ``line`` itself, a plain string."""
    if isinstance(text, Text):
        made = _cleaned(text, clean)
        if made is not None and str.__str__(made) == line:
            return made
    return line


def _cleaned(text: Text, clean: Callable[[str], str]) -> Text | None:
    """``text`` made again with each text value passed through ``clean`` (a nested Text likewise); None when it
    cannot be (a template that does not fit its values)."""
    values: dict[str, object] = {}
    for name, value in text.args.items():
        if isinstance(value, Text):
            value = _cleaned(value, clean)
            if value is None:
                return None
        elif isinstance(value, str):
            value = clean(value)  # a Joined or Moment: plain text from here on
        values[name] = value
    try:
        return Text(text.template, **values)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError):
        return None


def reason_of(exc: BaseException) -> str:
    """An exception's message as it was raised: its one text argument (a :class:`Text` stays one, so an outer
    ``Text`` holding it says it in the reader's language too), else ``str(exc)``. The English is ``str(exc)``."""
    return exc.args[0] if len(exc.args) == 1 and isinstance(exc.args[0], str) else str(exc)


def message_of(exc: BaseException) -> str:
    """An exception's message in the current language: its one argument localized when it is text (an error
    raised with :class:`Text` or :class:`Lines`), else ``str(exc)``."""
    return localized(exc.args[0]) if len(exc.args) == 1 and isinstance(exc.args[0], str) else str(exc)


def _(message: str) -> str:
    """``message`` in the current language (itself when untranslated or the language is English)."""
    return _active()[1].gettext(message)


gettext = _
""":func:`_` by its public name, for modules whose checks forbid importing underscore names
(``from fleetmon.i18n import gettext as _``; the extractor sees the calls to ``_`` either way)."""


def ngettext(singular: str, plural: str, n: int) -> str:
    """The singular or plural form for ``n`` in the current language (Chinese has one form)."""
    return _active()[1].ngettext(singular, plural, n)


def normalize_language(code: str | None) -> str:
    """A locale name as the environment spells it -> one of :data:`SUPPORTED` ("en" for anything untranslated).

    "zh_CN.UTF-8", "zh_CN", "zh-CN", "zh", "zh_SG" and "zh_Hans" give "zh_CN"; Traditional Chinese
    (zh_TW, zh_HK, zh_Hant) has no catalog and gives "en", as do "C", "POSIX" and the empty string.
    """
    if not code:
        return "en"
    base = code.split(".", 1)[0].split("@", 1)[0].replace("-", "_").strip()
    parts = base.split("_")
    lang = parts[0].lower()
    if lang != "zh":
        return "en"
    rest = {p.lower() for p in parts[1:]}
    if rest & {"tw", "hk", "mo", "hant"}:
        return "en"
    return "zh_CN"


def language_from_environment(environ: Mapping[str, str] | None = None) -> str:
    """The language the environment asks for: FLEETMON_LANG, then LC_ALL, LC_MESSAGES, LANG (the first set)."""
    env = os.environ if environ is None else environ
    for name in ("FLEETMON_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name, "")
        if value:
            return normalize_language(value)
    return "en"


def _load(language: str) -> NullTranslations:
    if language == "en":
        return NullTranslations()
    folder = LOCALE_DIR / language / "LC_MESSAGES"
    po, mo = folder / f"{DOMAIN}.po", folder / f"{DOMAIN}.mo"
    mo_fresh = mo.is_file() and (not po.is_file() or mo.stat().st_mtime >= po.stat().st_mtime)
    if not mo_fresh and po.is_file():
        compiled = _compile_in_memory(po, language)
        if compiled is not None:
            return compiled
    if mo.is_file():
        with mo.open("rb") as handle:
            return GNUTranslations(handle)
    return NullTranslations()


def _compile_in_memory(po: Path, language: str) -> GNUTranslations | None:
    """The .po compiled with Babel (None without Babel: a node with the standard library alone)."""
    try:
        from babel.messages.mofile import write_mo
        from babel.messages.pofile import read_po
    except ImportError:
        return None
    with po.open("rb") as handle:
        catalog = read_po(handle, locale=language, domain=DOMAIN)
    buffer = io.BytesIO()
    write_mo(buffer, catalog)
    buffer.seek(0)
    return GNUTranslations(buffer)


def set_language(code: str | None) -> str:
    """Speak ``code`` from now on (normalised; None or an untranslated language: English); returns what was set."""
    global _language, _translations
    language = normalize_language(code)
    with _lock:
        _translations = _load(language)
        _language = language
    return language


def current_language() -> str:
    """The language spoken now: a :func:`speaking` block's in this thread, else the one set last ("en", "zh_CN")."""
    return _active()[0]


@contextmanager
def speaking(code: str | None) -> Iterator[str]:
    """Speak ``code`` in this thread for the block (None: the process's language), the process's language
    untouched: a notification destination with its own ``lang`` while the collector's log stays as it is.
    Yields the language spoken."""
    language = _language if code is None else normalize_language(code)
    with _lock:
        catalog = _catalogs.get(language)
        if catalog is None:
            catalog = _catalogs[language] = _load(language)
    before = getattr(_thread, "speaking", None)
    _thread.speaking = (language, catalog)
    try:
        yield language
    finally:
        _thread.speaking = before


# -- numbers and dates in the reader's locale (Babel; English and a node without Babel: as before) ----------------


def _babel_locale() -> str | None:
    """The Babel locale of the current language: None for English (the source formats, byte for byte) and
    when Babel is missing (a GPU node with the standard library alone: English formats)."""
    language = _active()[0]
    if language == "en":
        return None
    try:
        import babel  # noqa: F401  (only asks whether Babel is there)
    except ImportError:
        return None
    return language


def number(value: float, decimals: int = 0) -> str:
    """A figure for people: ``f"{value:.{decimals}f}"`` in English, the locale's decimal format otherwise
    (grouping and decimal sign as the locale writes them; zh_CN: 12,345.7)."""
    locale = _babel_locale()
    if locale is None:
        return f"{value:.{decimals}f}"
    from babel.numbers import format_decimal

    pattern = "#,##0" + ("." + "0" * decimals if decimals > 0 else "")
    return format_decimal(round(float(value), decimals), format=pattern, locale=locale)


def _utc(ts: float) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc)


def when(ts: float, seconds: bool = False) -> str:
    """A moment (UTC) to the minute, or the second: "2026-12-03 15:30" in English, the locale's date and
    time otherwise (zh_CN: "2026年12月3日 15:30"). The caller says "UTC" where it did before."""
    locale = _babel_locale()
    moment = _utc(ts)
    if locale is None:
        return moment.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M")
    from babel.dates import format_skeleton, get_datetime_format

    date = format_skeleton("yMMMd", moment, locale=locale)
    time_ = format_skeleton("Hms" if seconds else "Hm", moment, tzinfo=_dt.timezone.utc, locale=locale)
    # the locale's own way of joining a date and a time ("{1} {0}")
    joined = str(get_datetime_format("medium", locale=locale))
    return joined.replace("'", "").replace("{1}", date).replace("{0}", time_)


def day(ts: float) -> str:
    """A day (UTC): "2026-12-03" in English, the locale's date otherwise (zh_CN: "2026年12月3日")."""
    locale = _babel_locale()
    if locale is None:
        return _utc(ts).strftime("%Y-%m-%d")
    from babel.dates import format_skeleton

    return format_skeleton("yMMMd", _utc(ts), locale=locale)
