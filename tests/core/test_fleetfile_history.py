"""The fleet file's optional ``[history]`` section (where the GUI and the reports read history from)."""

from __future__ import annotations

import pytest

from fleetmon.errors import ConfigError
from fleetmon.fleet import parse_fleet

NODE = '[[node]]\nname = "n1"\nurl = "http://n1"\n'


def test_default_is_the_local_store():
    assert parse_fleet(NODE).history_prometheus is None
    assert parse_fleet("[history]\n" + NODE).history_prometheus is None


@pytest.mark.parametrize("url, expected", [
    ("http://prom:9090", "http://prom:9090"),
    ("https://mimir.example.org/prometheus/", "https://mimir.example.org/prometheus"),
    ("  http://10.0.0.5:9090  ", "http://10.0.0.5:9090"),
])
def test_prometheus_url(url, expected):
    assert parse_fleet(f'[history]\nprometheus = "{url}"\n' + NODE).history_prometheus == expected


@pytest.mark.parametrize("body, message", [
    ('prometheus = "prom:9090"', "must be an http:// or https:// URL"),
    ('prometheus = "ftp://prom"', "must be an http:// or https:// URL"),
    ('prometheus = "http://user:pw@prom:9090"', "must not hold credentials"),
    ('prometheus = "http://prom:9090/?x=1"', "must not have a query"),
    ('prometheus = "http://prom:99999"', "invalid URL"),
    ("prometheus = 9090", "history.prometheus"),
    ('promethus = "http://prom:9090"', "did you mean 'prometheus'"),
])
def test_bad_history_is_reported_with_its_line(body, message):
    with pytest.raises(ConfigError) as err:
        parse_fleet("[history]\n" + body + "\n" + NODE, path="f.toml")
    assert message in str(err.value) and "f.toml:2:" in str(err.value)


def test_history_must_be_a_table():
    with pytest.raises(ConfigError, match="must be a table"):
        parse_fleet('history = "http://prom:9090"\n' + NODE)
