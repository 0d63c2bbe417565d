"""fleetmon's SQLite store: schema and migrations, ingest, rollups and retention, queries, findings.

Modules: ``db`` (open, errors, transactions), ``schema`` (tables, migrations,
the compact sample encoding), ``ingest`` (the collector's writes), ``rollup``
(hourly/daily rollups, retention, ``maintain``), ``queries`` (GUI, export and
reports), ``health_input`` (the recorded window the health engine reads),
``findings`` (the health engine's outputs: findings, derating, reports) and
``rows`` (the typed rows all of them hand out). All SQL lives in this package;
callers see only :mod:`storage.rows` types. See docs/storage.md.

Imports only fleetmon's record types, fields and errors; no Qt, no network.
"""

from storage.db import open_database

__all__ = ["open_database"]
