"""fleetmon's SQLite store: schema, migrations, ingest and queries.

Imports only fleetmon's record types (and errors); no Qt, no network.
"""

from storage.db import open_database

__all__ = ["open_database"]
