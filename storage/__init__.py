"""fleetmon's SQLite store: schema and migrations, ingest, rollups and retention, queries, history.

Modules: ``db`` (open, errors, transactions), ``schema`` (tables, migrations,
the compact sample encoding), ``ingest`` (the collector's writes), ``rollup``
(hourly/daily rollups, retention, ``maintain``), ``queries`` (GUI and reports),
``history`` (health engine inputs and outputs). See docs/storage.md.

Imports only fleetmon's record types, fields and errors; no Qt, no network.
"""

from storage.db import open_database

__all__ = ["open_database"]
