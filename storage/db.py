"""Opening the fleetmon database: WAL, pragmas, migrations, error mapping.

One writer (the collector's writer thread) owns a read-write :class:`Store`;
readers (the GUI, reports) open their own read-only connections, which WAL
lets run while the writer commits.
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from sqlite_utils import Database

from fleetmon.errors import SchemaVersionError, StorageError
from fleetmon.i18n import N_, Text  # the messages said in the reader's language where the CLI prints them
from storage.schema import MIGRATION_SET, known_migration_names, migrations


def map_sqlite_error(exc: sqlite3.Error, path: str) -> StorageError:
    """Turn an sqlite3 error into a clear StorageError (disk full, read-only, locked, corrupt)."""
    text = str(exc)
    low = text.lower()
    if "full" in low:
        template = N_("database {path}: the disk is full (or the database reached its size limit); nothing of this "
                      "write was stored ({error})")
    elif "readonly" in low or "read-only" in low:
        template = N_("database {path}: the database is read-only (file or folder permissions, or opened read-only) "
                      "({error})")
    elif "locked" in low or "busy" in low:
        template = N_("database {path}: the database is locked by another process ({error})")
    elif "malformed" in low or "not a database" in low:
        template = N_("database {path}: the file is corrupt or not a fleetmon database ({error})")
    elif "unable to open" in low:
        template = N_("database {path}: the file cannot be opened (missing folder or no permission) ({error})")
    else:
        return StorageError(Text(N_("database {path}: {why} ({error})"), path=path, why=text, error=text))
    return StorageError(Text(template, path=path, error=text))


def _connect(path: str, readonly: bool, *, existing: bool = False) -> sqlite3.Connection:
    if readonly:
        uri = f"file:{Path(path).resolve()}?mode=ro"
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=10)
    elif existing:  # mode=rw: never creates the file
        uri = f"file:{Path(path).resolve()}?mode=rw"
        conn = sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=10, isolation_level=None)
    else:
        conn = sqlite3.connect(path, check_same_thread=False, timeout=10, isolation_level=None)
    return conn


def open_database(path: str | Path, *, readonly: bool = False, existing: bool = False) -> Database:
    """Open (creating and migrating if needed) the database at ``path``.

    ``readonly`` opens it with ``mode=ro`` (reports, exports, the GUI): nothing
    is created or written, and a file that is not a fleetmon database (an empty
    file, another program's SQLite file) is refused. ``existing`` opens it
    read-write for a reader that saves something (``fleetmon report`` stores
    its report) but must not turn a stray file into a fleetmon database: the
    file is first checked through a read-only connection, then opened with
    ``mode=rw`` (never created) and, being a fleetmon database, migrated.

    Raises:
        SchemaVersionError: the database comes from a newer fleetmon.
        StorageError: the file cannot be opened, written or read, or (``readonly``
            or ``existing``) is missing or is not a fleetmon database.
    """
    path = str(path)
    if existing and not readonly:
        open_database(path, readonly=True, existing=True).close()
    elif not readonly:
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError(Text(N_("database {path}: cannot create its folder ({error})"), path=path,
                                    error=str(exc))) from exc
    if (readonly or existing) and not Path(path).is_file():
        raise StorageError(Text(N_("database {path}: no such file (`fleetmon collect --db {path}` creates one)"),
                                path=path))
    try:
        conn = _connect(path, readonly, existing=existing)
        db = Database(conn)
        if not readonly:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=10000")
        if readonly:
            check_fleetmon(db, path)
        check_schema(db, path)
        if not readonly:
            migrations.apply(db)
            # Fail now, with a clear message, if the file cannot be written.
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
        elif migrations.pending(db) and not existing:
            raise StorageError(Text(N_("database {path} needs an upgrade: open it once with `fleetmon collect` or the "
                                       "GUI"), path=path))
    except sqlite3.Error as exc:
        raise map_sqlite_error(exc, path) from exc
    return db


def db_path(db: Database) -> str:
    """The file behind a connection (for error messages)."""
    try:
        row = db.conn.execute("PRAGMA database_list").fetchone()
        return str(row[2]) if row and row[2] else ":memory:"
    except sqlite3.Error:
        return "?"


@contextmanager
def transaction(db: Database) -> Iterator[sqlite3.Connection]:
    """One write transaction (BEGIN IMMEDIATE … COMMIT) on the writer connection.

    Everything inside is stored or nothing is: any exception rolls back, and an
    sqlite3 error comes out as :class:`StorageError` with a clear message.
    """
    conn = db.conn
    try:
        if conn.in_transaction:  # a read-only (Python-managed) connection may hold one
            conn.commit()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        raise map_sqlite_error(exc, db_path(db)) from exc


def check_fleetmon(db: Database, path: str) -> None:
    """Refuse a file that is not a fleetmon database: no schema steps of ours applied.

    An empty file opens as an empty SQLite database; another program's file has
    tables, but not our migrations record. Either way a reader must not report
    "0 nodes, PASS" on it, nor a writer that only meant to open one create a schema in it.
    """
    if not migrations.applied(db):
        raise StorageError(Text(N_("database {path}: not a fleetmon database (no fleetmon schema in it; "
                                   "`fleetmon collect` writes one)"), path=path))


def check_schema(db: Database, path: str) -> None:
    """Refuse a database written by a newer fleetmon."""
    if not db[migrations.migrations_table].exists():
        return
    applied = [m.name for m in migrations.applied(db)]
    unknown = [name for name in applied if name not in known_migration_names()]
    if unknown:
        raise SchemaVersionError(Text(N_(
            "database {path} was written by a newer fleetmon (schema step {step!r} in set {set!r} is unknown to "
            "this version); upgrade fleetmon to open it"), path=path, step=unknown[-1], set=MIGRATION_SET))


def schema_version(db: Database) -> int:
    """Number of schema steps applied (the schema version)."""
    return len(migrations.applied(db))


def query(db: Database, sql: str, params: Any = ()) -> list[dict[str, Any]]:
    """Run a read query and return rows as dicts; sqlite3 errors become StorageError."""
    try:
        cur = db.execute(sql, params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]
    except sqlite3.Error as exc:
        raise map_sqlite_error(exc, db_path(db)) from exc


def rows(db: Database, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
    """Run a read query and return plain tuples; sqlite3 errors become StorageError."""
    try:
        return db.execute(sql, params).fetchall()
    except sqlite3.Error as exc:
        raise map_sqlite_error(exc, db_path(db)) from exc


def get_meta(db: Database, key: str, default: Any = None) -> Any:
    row = db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return default if row is None or row[0] is None else row[0]


def set_meta(conn: sqlite3.Connection, key: str, value: Any) -> None:
    conn.execute("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                 (key, value))
