"""`[[notify]]` in the fleet file: keys checked with line-numbered one-line errors, secrets only from files
whose mode is checked like token files', and the destinations' filters (severity floor, groups, quiet hours)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from fleetmon.errors import ConfigError
from fleetmon.fleet import parse_fleet
from fleetmon.fleet.notify import NotifySpec
from fleetmon.notify import DeliveryError, Destination, Event, accepts, in_quiet_hours, resolve_url
from fleetmon.vocab import Severity

NODES = '[[node]]\nname = "n1"\nurl = "http://127.0.0.1:9414"\ngroup = "a100"\n'


def _secret(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text + "\n", encoding="utf-8")
    path.chmod(mode)
    return path


def test_a_destination_with_its_secret_from_a_file(tmp_path: Path) -> None:
    secret = _secret(tmp_path / "slack.secret", "T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7")
    fleet = parse_fleet(NODES + f'''
[[notify]]
name = "ops"
url = "slack://{{secret}}/#gpu-ops"
secret_file = "{secret}"
min_severity = "warning"
groups = ["a100"]
quiet_hours = "22:00-07:00"
timezone = "Europe/Berlin"
digest = false
digest_at = "06:30"
max_per_hour = 12
''', path="fleet.toml")
    (spec,) = fleet.notify
    assert spec == NotifySpec("ops", "slack://{secret}/#gpu-ops", None, str(secret), Severity.WARNING, ("a100",),
                              (22 * 60, 7 * 60), "Europe/Berlin", False, 6 * 60 + 30, 12)
    assert resolve_url(spec) == "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7/#gpu-ops"
    assert fleet.warnings == ()


@pytest.mark.parametrize(("table", "line", "message"), [
    ('url = "discord://4174216298/JHMHI8qBe7bk2ZwO5U711o3dV_js"', 8,
     "notify[0].url: a discord:// URL carries the service's token: write {secret} in its place"),
    ('url = "mailto://ops:hunter2@smtp.example.com"', 8,
     "notify[0].url: holds a password: write {secret} in its place and put the password in secret_file"),
    ('url = "slack://{secret}/#ops"', 8, "notify[0].url: holds {secret}: name the file it comes from with secret_file"),
    ('url = "json://127.0.0.1/x"\nurl_file = "/x"', 6, "notify[0]: needs exactly one of 'url'"),
    ('url = "not a url"', 8, "notify[0].url: must be an Apprise URL"),
    ('url = "json://h/x"\nmin_severity = "urgent"', 9,
     "notify[0].min_severity: must be one of info, warning, critical"),
    ('url = "json://h/x"\nquiet_hours = "22-7"', 9,
     'notify[0].quiet_hours: must be a range of times of day, as in "22:00-07:00"'),
    ('url = "json://h/x"\ntimezone = "Mars/Olympus"', 9, "notify[0].timezone: must be an IANA time zone"),
    ('url = "json://h/x"\ndigest = "yes"', 9, "notify[0].digest: must be true or false"),
    ('url = "json://h/x"\nmax_per_hour = 0', 9, "notify[0].max_per_hour: must be between 1 and 3600"),
    ('url = "json://h/x"\nsevrity = "info"', 9, "notify[0].sevrity: unknown key"),
])
def test_bad_notify_tables_are_one_line_errors_with_their_line(table: str, line: int, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_fleet(NODES + f'\n[[notify]]\nname = "ops"\n{table}\n', path="fleet.toml")
    (text,) = str(caught.value).splitlines()
    assert text.startswith(f"fleet.toml:{line}: {message}"), text


def test_duplicate_and_missing_names() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_fleet(NODES + '[[notify]]\nname = "a"\nurl = "json://h/x"\n[[notify]]\nname = "A"\nurl = "json://h/y"\n'
                    '[[notify]]\nurl = "json://h/z"\n', path="f.toml")
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("f.toml:9: notify[1].name: duplicate destination 'A' (first at line 6)")
    assert lines[1].startswith("f.toml:11: notify[2]: missing required key 'name'")


def test_a_group_no_node_is_in_is_a_warning() -> None:
    fleet = parse_fleet(NODES + '[[notify]]\nname = "a"\nurl = "json://h/x"\ngroups = ["h100"]\n', path="f.toml")
    assert fleet.warnings == ("f.toml:8: notify[0].groups: no node is in group 'h100': nothing of it will be sent",)


@pytest.mark.parametrize(("mode", "content", "error"), [
    (0o644, "T1/B1/xyz", "is readable by group or others (mode 0644); run: chmod 600"),
    (0o600, "", "is empty"),
    (0o600, "a\nb", "holds more than one line"),
    (None, "", "cannot read it"),
])
def test_secret_files_are_checked_like_token_files(tmp_path: Path, mode: int | None, content: str, error: str) -> None:
    path = tmp_path / "secret"
    if mode is not None:
        _secret(path, content, mode)
    spec = NotifySpec("ops", "slack://{secret}/#ops", secret_file=str(path))
    with pytest.raises(DeliveryError) as caught:
        Destination(spec)
    assert str(caught.value).startswith(f"notify ops: secret file {path}"), caught.value
    assert error in str(caught.value)
    assert "\n" not in str(caught.value)
    url_spec = NotifySpec("ops", url_file=str(path))
    with pytest.raises(DeliveryError, match=f"notify ops: url file {path}"):
        resolve_url(url_spec)


def test_a_url_apprise_does_not_know_is_a_one_line_error_without_the_secret(tmp_path: Path) -> None:
    url_file = _secret(tmp_path / "url", "nosuchservice://s3cr3t-token@host/path")
    with pytest.raises(DeliveryError) as caught:
        Destination(NotifySpec("ops", url_file=str(url_file)))
    text = str(caught.value)
    assert text.startswith("notify ops: Apprise does not accept the nosuchservice:// URL")
    assert "s3cr3t" not in text and "\n" not in text


def _event(severity: str, group: str | None = "a100", transition: str = "new") -> Event:
    return Event(key="k", transition=transition, kind="xid", severity=severity, node="n1", gpu="gpu0",
                 evidence="e", action="a", command="c", group=group)


def test_severity_floor_and_group_filters() -> None:
    critical_only = NotifySpec("a", "json://h")
    warnings_of_a100 = NotifySpec("b", "json://h", min_severity=Severity.WARNING, groups=("a100",))
    no_digest = NotifySpec("c", "json://h", digest=False)
    assert accepts(critical_only, _event("critical")) and not accepts(critical_only, _event("warning"))
    assert accepts(warnings_of_a100, _event("warning")) and not accepts(warnings_of_a100, _event("info"))
    assert not accepts(warnings_of_a100, _event("critical", group="h100"))
    assert not accepts(warnings_of_a100, _event("critical", group=None))
    assert accepts(critical_only, _event("info", transition="digest"))
    assert not accepts(no_digest, _event("info", transition="digest"))


def test_quiet_hours_across_midnight_in_their_time_zone() -> None:
    spec = NotifySpec("a", "json://h", quiet=(22 * 60, 7 * 60), timezone="Asia/Shanghai")

    def at(hour: int, minute: int = 0) -> float:
        return dt.datetime(2026, 12, 3, hour, minute, tzinfo=dt.timezone(dt.timedelta(hours=8))).timestamp()

    assert in_quiet_hours(spec, at(23, 30)) == pytest.approx(7.5 * 3600)
    assert in_quiet_hours(spec, at(6, 59)) == pytest.approx(60)
    assert in_quiet_hours(spec, at(7, 0)) == 0.0
    assert in_quiet_hours(spec, at(12)) == 0.0
    assert in_quiet_hours(NotifySpec("b", "json://h"), at(23)) == 0.0
