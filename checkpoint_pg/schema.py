"""Numbered SQL migrations, applied in order and recorded in ``graphruntime_migrations``.

Migrations are the files ``sql/migrations/NNNN_<what>.sql``; version ``N`` is
the file's number, and numbers run 1, 2, 3 … without gaps. :func:`migrate`
applies the missing ones in one transaction under an advisory lock, so any
number of processes may call it at once: the first applies, the others wait
and then find nothing to do. A database whose version is newer than the
newest file is refused: old code must not write to a schema it does not know.
"""

from __future__ import annotations

import re
from functools import cache
from importlib.resources import files
from typing import Any, LiteralString, NamedTuple

import psycopg

from checkpoint_pg import _queries as q
from checkpoint_pg._connection import Conn, ConnectionSource
from checkpoint_pg.errors import CheckpointStoreError, SchemaVersionError

__all__ = (
    "Migration",
    "check_schema",
    "latest_version",
    "migrate",
    "migrations",
    "schema_version",
)

_FILE = re.compile(r"^(\d{4})_(\w+)\.sql$")


class Migration(NamedTuple):
    """One migration file."""

    version: int
    name: str
    sql: LiteralString


@cache
def migrations() -> tuple[Migration, ...]:
    """The migrations shipped with the package, in order."""
    found: list[Migration] = []
    for entry in (files("checkpoint_pg") / "sql" / "migrations").iterdir():
        match = _FILE.match(entry.name)
        if match is None:
            continue
        # Trusted text shipped with the package, never built from input.
        sql: LiteralString = entry.read_text("utf-8")
        found.append(Migration(int(match.group(1)), match.group(2), sql))
    found.sort()
    numbers = [m.version for m in found]
    if numbers != list(range(1, len(found) + 1)):
        raise CheckpointStoreError(f"Migration files must be numbered 1, 2, 3 … got {numbers}")
    return tuple(found)


def latest_version() -> int:
    """The version :func:`migrate` brings a database to."""
    return len(migrations())


def migrate(conn: Conn) -> int:
    """Apply the pending migrations; returns the schema version afterwards.

    Raises:
        SchemaVersionError: the database is at a newer version than this code knows.
        CheckpointStoreError: a migration failed (nothing of it was applied).
    """
    known = migrations()
    try:
        with ConnectionSource(conn).connection() as c, c.transaction(), c.cursor() as cur:
            cur.execute(q.LOCK_MIGRATIONS)
            cur.execute(q.CREATE_MIGRATIONS_TABLE)
            current = _fetch_version(cur)
            _refuse_newer(current)
            for migration in known[current:]:
                # Several statements per file: sent unparameterized, as one script.
                cur.execute(migration.sql, prepare=False)
                cur.execute(q.RECORD_MIGRATION, {"version": migration.version})
    except psycopg.Error as exc:
        raise CheckpointStoreError(f"Schema migration failed: {exc}") from exc
    return len(known)


def schema_version(conn: Conn) -> int:
    """The database's schema version: 0 before the first migration."""
    try:
        with ConnectionSource(conn).connection() as c, c.cursor() as cur:
            cur.execute(q.MIGRATIONS_TABLE_EXISTS)
            row = cur.fetchone()
            if row is None or not _first(row):
                return 0
            return _fetch_version(cur)
    except psycopg.Error as exc:
        raise CheckpointStoreError(f"Reading the schema version failed: {exc}") from exc


def check_schema(conn: Conn) -> None:
    """Raise unless the database is exactly at :func:`latest_version`."""
    current = schema_version(conn)
    _refuse_newer(current)
    if current < latest_version():
        raise CheckpointStoreError(
            f"The database schema is at version {current}, this code needs "
            f"{latest_version()}: run PostgresSaver.setup() (or checkpoint_pg.migrate)"
        )


def _fetch_version(cur: psycopg.Cursor[Any]) -> int:
    cur.execute(q.SCHEMA_VERSION)
    row = cur.fetchone()
    return int(_first(row)) if row is not None else 0


def _first(row: Any) -> Any:
    # Rows are tuples or dicts, depending on the connection's row factory.
    return next(iter(row.values())) if isinstance(row, dict) else row[0]


def _refuse_newer(current: int) -> None:
    if current > latest_version():
        raise SchemaVersionError(
            f"The database schema is at version {current}, but this code knows only "
            f"migrations up to {latest_version()}: it was migrated by a newer release. "
            "Upgrade graphruntime (checkpoint_pg) on this host instead of running old "
            "code against the new schema."
        )
