"""The fleet file's ``[[notify]]`` tables: where the collector sends its notifications.

Each table names one destination, an Apprise URL (https://appriseit.com/ lists
the services). Secrets never stand in the fleet file: either the whole URL lives
in a file (``url_file``), or the fleet file's ``url`` holds the literal
placeholder ``{secret}`` and ``secret_file`` names the file whose content
replaces it. Both files are read as token files are (:mod:`fleetmon.tokens`:
``chmod 600``, one line), when the collector starts and by ``fleetmon notify
test``, never here (a file that does not exist yet is a warning).

Checked here: the keys and their types, and that a ``url`` written in the fleet
file holds no password and, for the services whose URL *is* the credential
(webhook tokens in the path), uses ``{secret}``. Whether Apprise knows the URL
is checked where it is used (:mod:`fleetmon.notify`). See docs/fleet-file.md
and docs/notifications.md.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fleetmon.i18n import N_, Text
from fleetmon.vocab import Severity

__all__ = ["NOTIFY_KEYS", "SECRET", "TOKEN_SCHEMES", "NotifySpec", "parse_clock", "parse_quiet_hours",
           "validate_notify"]

NOTIFY_KEYS: tuple[str, ...] = ("name", "url", "url_file", "secret_file", "min_severity", "groups", "quiet_hours",
                                "timezone", "digest", "digest_at", "max_per_hour", "lang")
"""The keys of a ``[[notify]]`` table."""

SECRET = "{secret}"
"""The placeholder in ``url`` that the content of ``secret_file`` replaces."""

TOKEN_SCHEMES: frozenset[str] = frozenset({
    "slack", "discord", "wecombot", "dingtalk", "feishu", "lark", "msteams", "tgram", "gotify", "gotifys",
    "pover", "pbul", "matrix", "matrixs", "rocket", "rockets", "mmost", "mmosts", "ntfys", "signal", "signals",
    "twilio", "opsgenie", "pagerduty", "workflows", "wxteams", "zulip", "ifttt", "join", "line", "pushplus",
    "serverchan", "bark", "barks", "ses", "sns", "mailgun", "sendgrid", "sparkpost", "spush", "psafer", "psafers",
})
"""Apprise schemes whose URL carries the service's credential (a webhook token, an API key) outside the
password field: written in the fleet file, such a URL must hold ``{secret}``."""

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,62}$")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_CLOCK = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
DEFAULT_DIGEST_AT = "07:00"
DEFAULT_MAX_PER_HOUR = 30


@dataclass(frozen=True, slots=True)
class NotifySpec:
    """One ``[[notify]]`` destination, checked.

    ``url`` is the Apprise URL as written (with ``{secret}``) or None when ``url_file`` holds it;
    ``quiet`` is (start, end) in minutes after midnight of ``timezone`` (None: the collector's local
    time); ``digest_at`` likewise, in minutes.
    """

    name: str
    url: str | None = None
    url_file: str | None = None
    secret_file: str | None = None
    min_severity: Severity = Severity.CRITICAL
    groups: tuple[str, ...] = ()
    quiet: tuple[int, int] | None = None
    timezone: str | None = None
    digest: bool = True
    digest_at: int = 7 * 60
    max_per_hour: int = DEFAULT_MAX_PER_HOUR
    lang: str | None = None
    """The language of this destination's messages ("en", "zh_CN"); None: the collector's own."""


def parse_clock(text: str) -> int | None:
    """``"HH:MM"`` → minutes after midnight (None: not a time of day)."""
    match = _CLOCK.fullmatch(text.strip())
    return None if match is None else int(match.group(1)) * 60 + int(match.group(2))


def parse_quiet_hours(text: str) -> tuple[int, int] | None:
    """``"22:00-07:00"`` → (start, end) minutes after midnight (None: not such a range, or empty)."""
    start, sep, end = text.partition("-")
    if not sep:
        return None
    a, b = parse_clock(start), parse_clock(end)
    if a is None or b is None or a == b:
        return None
    return a, b


Where = Callable[[str | None], tuple[int, str]]


def validate_notify(v: Any, items: Any, groups: Any) -> list[NotifySpec]:
    """The ``[[notify]]`` tables of a fleet file; problems go to the validator ``v`` (``error``/``warn``,
    with its value checks), each as ``FILE:LINE: notify[i].KEY: message``."""
    out: list[NotifySpec] = []
    first_line: dict[str, int] = {}
    if not isinstance(items, list):
        v.error(v._line((), None, "notify"), "notify", Text(
            N_("must be an array of tables ([[{table}]])"), table="notify"))
        return out
    for index, item in enumerate(items):
        label = f"notify[{index}]"

        def where(key: str | None, index: int = index, label: str = label) -> tuple[int, str]:
            line = v._line(("notify",), index, key)
            return line, label if key is None else f"{label}.{key}"

        if not isinstance(item, dict):
            v.error(*where(None), Text(N_("must be a table ([[{table}]])"), table="notify"))
            continue
        before = len(v.errors)
        v._unknown_keys(item, NOTIFY_KEYS, ("notify",), index, f"{label}.")
        if "name" not in item:
            v.error(*where(None), Text(
                N_("missing required key {key!r} (how `fleetmon notify test --to NAME` names it)"), key="name"))
            continue
        name = v._string(item["name"], *where("name"))
        if name is None:
            continue
        if not _NAME.fullmatch(name):
            v.error(*where("name"), Text(N_("must be letters, digits, '_', '.', '-' (got {value!r})"), value=name))
            continue
        if name.lower() in first_line:
            v.error(*where("name"), Text(N_("duplicate destination {name!r} (first at line {line})"), name=name,
                                        line=first_line[name.lower()]))
            continue
        first_line[name.lower()] = where("name")[0]
        spec = _one(v, item, name, where, groups)
        if spec is not None and len(v.errors) == before:
            out.append(spec)
    return out


def _one(v: Any, item: dict[str, Any], name: str, where: Where, groups: Any) -> NotifySpec | None:
    url = url_file = secret_file = None
    if ("url" in item) == ("url_file" in item):
        v.error(*where(None), Text(N_("needs exactly one of 'url' (an Apprise URL, its secret as {secret} from "
                                      "secret_file) and 'url_file' (a file holding the whole URL, chmod 600)"),
                                   secret=SECRET))
        return None
    if "url_file" in item:
        url_file = v._file(item["url_file"], *where("url_file"))
        if "secret_file" in item:
            v.error(*where("secret_file"), Text(N_("goes with 'url' (its {secret}); a url_file holds the whole URL"),
                                                secret=SECRET))
    else:
        url = _url(v, item["url"], *where("url"))
        if "secret_file" in item:
            secret_file = v._file(item["secret_file"], *where("secret_file"))
            if url is not None and SECRET not in url:
                v.error(*where("url"), Text(N_("has no {secret} for the content of secret_file to replace"),
                                            secret=SECRET))
        elif url is not None and SECRET in url:
            v.error(*where("url"), Text(
                N_("holds {secret}: name the file it comes from with secret_file"), secret=SECRET))
    severity = Severity.CRITICAL
    if "min_severity" in item:
        text = v._string(item["min_severity"], *where("min_severity"))
        if text is not None:
            try:
                severity = Severity.parse(text)
            except ValueError:
                v.error(*where("min_severity"), Text(N_("must be one of {choices} (got {value!r})"),
                                                     choices=", ".join(s.value for s in Severity), value=text))
    wanted: tuple[str, ...] = ()
    if "groups" in item:
        wanted = v._tags(item["groups"], *where("groups"))
        unknown = [g for g in wanted if g not in groups]
        if unknown:
            v.warn(*where("groups"), Text(N_("no node is in group {group!r}: nothing of it will be sent"),
                                          group=unknown[0]))
    quiet = None
    if "quiet_hours" in item:
        text = v._string(item["quiet_hours"], *where("quiet_hours"))
        if text is not None:
            quiet = parse_quiet_hours(text)
            if quiet is None:
                v.error(*where("quiet_hours"), Text(
                    N_('must be a range of times of day, as in "22:00-07:00" (got {value!r})'), value=text))
    timezone = None
    if "timezone" in item:
        timezone = v._string(item["timezone"], *where("timezone"))
        if timezone is not None:
            import zoneinfo

            try:
                zoneinfo.ZoneInfo(timezone)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                v.error(*where("timezone"), Text(N_('must be an IANA time zone, as in "Europe/Berlin" (got {value!r})'),
                                                 value=timezone))
    digest = True
    if "digest" in item:
        if isinstance(item["digest"], bool):
            digest = item["digest"]
        else:
            v.error(*where("digest"), Text(N_("must be true or false (got {value!r})"), value=item["digest"]))
    digest_at = 7 * 60
    if "digest_at" in item:
        text = v._string(item["digest_at"], *where("digest_at"))
        clock = None if text is None else parse_clock(text)
        if text is not None and clock is None:
            v.error(*where("digest_at"), Text(N_('must be a time of day, as in "07:00" (got {value!r})'), value=text))
        digest_at = clock if clock is not None else digest_at
    per_hour = DEFAULT_MAX_PER_HOUR
    if "max_per_hour" in item:
        value = v._integer(item["max_per_hour"], *where("max_per_hour"), low=1, high=3600)
        per_hour = value if value is not None else per_hour
    lang = None
    if "lang" in item:
        from fleetmon.i18n import SUPPORTED

        text = v._string(item["lang"], *where("lang"))
        if text is not None and text not in SUPPORTED:
            v.error(*where("lang"), Text(N_("must be one of {choices} (got {value!r})"), choices=", ".join(SUPPORTED),
                                         value=text))
        elif text is not None:
            lang = text
    return NotifySpec(name, url, url_file, secret_file, severity, wanted, quiet, timezone, digest, digest_at, per_hour,
                      lang)


def _url(v: Any, value: Any, line: int, key: str) -> str | None:
    checked = v._string(value, line, key)
    if not isinstance(checked, str):
        return None
    text = checked.strip()
    match = _SCHEME.match(text)
    if match is None:
        v.error(line, key, Text(N_("must be an Apprise URL, as in slack://{secret}/#ops or mailto://… "
                                   "(see https://appriseit.com/); got {value!r}"), secret=SECRET, value=text[:60]))
        return None
    scheme = match.group(1).lower()
    try:
        password = urllib.parse.urlsplit(text.replace(SECRET, "SECRET")).password
    except ValueError as err:
        v.error(line, key, Text(N_("invalid URL: {error}"), error=str(err)))
        return None
    if password is not None and password != "SECRET":
        v.error(line, key, Text(N_("holds a password: write {secret} in its place and put the password in "
                                   "secret_file"), secret=SECRET))
        return None
    if scheme in TOKEN_SCHEMES and SECRET not in text:
        v.error(line, key, Text(N_("a {scheme}:// URL carries the service's token: write {secret} in its place and "
                                   "put the token in secret_file (or the whole URL in url_file)"), scheme=scheme,
                                secret=SECRET))
        return None
    if any(c.isspace() for c in text):
        v.error(line, key, Text(N_("must not hold blanks")))
        return None
    return text
