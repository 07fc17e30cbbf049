"""Numbered SQL migrations, applied in order and recorded in a migrations table.

A package's migrations are the files ``<folder>/NNNN_<what>.sql`` shipped with
it; version ``N`` is the file's number, and numbers run 1, 2, 3 … without gaps.
:class:`Migrations` runs one package's files: ``migrate`` applies the missing
ones in one transaction under the package's advisory lock, so any number of
processes may call it at once: the first applies, the others wait and then find
nothing to do. A database whose version is newer than the newest file is
refused: old code must not write to a schema it does not know.

checkpoint_pg's own migrations (``sql/migrations``, recorded in
``graphruntime_migrations``) are :data:`CHECKPOINT_MIGRATIONS`, behind the module
functions :func:`migrate`, :func:`schema_version`, :func:`check_schema`,
:func:`latest_version` and :func:`migrations`. Another package (the workers'
tables) builds its own :class:`Migrations` with its own table and lock key, so
each package's version moves independently.
"""

from __future__ import annotations

import re
from importlib.resources import files
from typing import Any, LiteralString, NamedTuple

import psycopg
from psycopg import AsyncConnection, sql

from checkpoint_pg import _queries as q
from checkpoint_pg._connection import Conn, ConnectionSource
from checkpoint_pg._requests import Op, Stmt, arun, run
from checkpoint_pg.errors import CheckpointStoreError, SchemaVersionError
from graphruntime.errors import InvalidArgumentError

__all__ = (
    "CHECKPOINT_MIGRATIONS",
    "Migration",
    "Migrations",
    "check_migration_texts",
    "check_schema",
    "latest_version",
    "migrate",
    "migrations",
    "schema_version",
)

_FILE = re.compile(r"^(\d{4})_(\w+)\.sql$")
# Migrations tables are unquoted lower-case names, so that the quoted identifier in the
# queries and the plain name given to to_regclass() mean the same table.
_TABLE = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class Migration(NamedTuple):
    """One migration file."""

    version: int
    name: str
    sql: LiteralString


class Migrations:
    """The numbered migrations of one package and the table that records them.

    Args:
        package: the package that ships the files (``importlib.resources`` name).
        folder: the files' folder inside the package, ``/``-separated.
        table: the table recording the applied versions.
        lock_key: the advisory lock's key (hashed by Postgres' ``hashtext``).
        component: who ships the files, for error messages (``"checkpoint_pg"``).
        setup_hint: what to run to migrate, for :meth:`check_schema`'s error.
    """

    def __init__(
        self,
        package: str,
        folder: str = "sql/migrations",
        *,
        table: str,
        lock_key: str,
        component: str,
        setup_hint: str,
    ) -> None:
        if _TABLE.match(table) is None:
            raise InvalidArgumentError(
                f"Migrations table names are lower-case identifiers, got {table!r}"
            )
        self.package = package
        self.folder = folder
        self.table = table
        self.lock_key = lock_key
        self.component = component
        self.setup_hint = setup_hint
        name = sql.Identifier(table)
        self._create_table = sql.SQL(q.CREATE_MIGRATIONS_TABLE).format(table=name)
        self._schema_version = sql.SQL(q.SCHEMA_VERSION).format(table=name)
        self._record = sql.SQL(q.RECORD_MIGRATION).format(table=name)
        self._found: tuple[Migration, ...] | None = None

    def __repr__(self) -> str:
        return f"Migrations({self.package!r}, {self.folder!r}, table={self.table!r})"

    def migrations(self) -> tuple[Migration, ...]:
        """The migrations shipped with the package, in order (read once)."""
        if self._found is None:
            self._found = self._load()
        return self._found

    def texts(self) -> tuple[str, ...]:
        """The SQL of each migration, in order (LangGraph's ``MIGRATIONS``, read-only)."""
        return tuple(m.sql for m in self.migrations())

    def latest_version(self) -> int:
        """The version :meth:`migrate` brings a database to."""
        return len(self.migrations())

    def migrate(self, conn: Conn) -> int:
        """Apply the pending migrations; returns the schema version afterwards.

        Raises:
            SchemaVersionError: the database is at a newer version than this code knows.
            CheckpointStoreError: a migration failed (nothing of it was applied).
        """
        try:
            with ConnectionSource(conn).connection() as c, c.transaction():
                return run(c, self.migrate_op())
        except psycopg.Error as exc:
            raise CheckpointStoreError(f"Schema migration failed: {exc}") from exc

    async def amigrate(self, conn: AsyncConnection[Any]) -> int:
        """Async :meth:`migrate`, on an async connection."""
        try:
            async with conn.transaction():
                return await arun(conn, self.migrate_op())
        except psycopg.Error as exc:
            raise CheckpointStoreError(f"Schema migration failed: {exc}") from exc

    def migrate_op(self) -> Op[int]:
        """The pending migrations, in the caller's transaction, under the advisory lock."""
        known = self.migrations()
        yield Stmt(q.LOCK_MIGRATIONS, {"lock_key": self.lock_key}, prepare=False)
        yield Stmt(self._create_table, prepare=False)
        row = yield Stmt(self._schema_version, fetch="one", prepare=False)
        current = int(_first(row)) if row is not None else 0
        self._refuse_newer(current)
        for migration in known[current:]:
            # Several statements per file: sent unparameterized, as one script.
            yield Stmt(migration.sql, prepare=False, binary=False)
            yield Stmt(self._record, {"version": migration.version}, prepare=False)
        return len(known)

    def schema_version(self, conn: Conn) -> int:
        """The database's schema version: 0 before the first migration."""
        try:
            with ConnectionSource(conn).connection() as c, c.cursor() as cur:
                cur.execute(q.MIGRATIONS_TABLE_EXISTS, {"table": self.table})
                row = cur.fetchone()
                if row is None or not _first(row):
                    return 0
                return self._fetch_version(cur)
        except psycopg.Error as exc:
            raise CheckpointStoreError(f"Reading the schema version failed: {exc}") from exc

    def check_schema(self, conn: Conn) -> None:
        """Raise unless the database is exactly at :meth:`latest_version`."""
        current = self.schema_version(conn)
        self._refuse_newer(current)
        if current < self.latest_version():
            raise CheckpointStoreError(
                f"The database's {self.component} schema is at version {current}, this code needs "
                f"{self.latest_version()}: {self.setup_hint}"
            )

    def _load(self) -> tuple[Migration, ...]:
        folder = files(self.package)
        for part in self.folder.split("/"):
            folder = folder / part
        found: list[Migration] = []
        for entry in folder.iterdir():
            match = _FILE.match(entry.name)
            if match is None:
                continue
            # Trusted text shipped with the package, never built from input.
            text: LiteralString = entry.read_text("utf-8")
            found.append(Migration(int(match.group(1)), match.group(2), text))
        found.sort()
        numbers = [m.version for m in found]
        if numbers != list(range(1, len(found) + 1)):
            raise CheckpointStoreError(
                f"Migration files must be numbered 1, 2, 3 … got {numbers} "
                f"({self.package}/{self.folder})"
            )
        return tuple(found)

    def _fetch_version(self, cur: psycopg.Cursor[Any]) -> int:
        cur.execute(self._schema_version)
        row = cur.fetchone()
        return int(_first(row)) if row is not None else 0

    def _refuse_newer(self, current: int) -> None:
        latest = self.latest_version()
        if current > latest:
            raise SchemaVersionError(
                f"The database's {self.component} schema is at version {current} "
                f"({self.table}), but this code knows only migrations up to {latest}: it was "
                "migrated by a newer release. "
                f"Upgrade graphruntime ({self.component}) on this host instead of running old "
                "code against the new schema."
            )


def check_migration_texts(shipped: Any, current: Any, owner: str) -> None:
    """Refuse a ``MIGRATIONS`` an instance replaced with other SQL: setup() applies the
    numbered files shipped with checkpoint_pg, never SQL from elsewhere."""
    if tuple(current) != tuple(shipped):
        raise CheckpointStoreError(
            f"{owner}.MIGRATIONS was changed: checkpoint_pg applies only the migration "
            f"files it ships (read {owner}.MIGRATIONS, do not replace it)"
        )


def _first(row: Any) -> Any:
    # Rows are tuples or dicts, depending on the connection's row factory.
    return next(iter(row.values())) if isinstance(row, dict) else row[0]


CHECKPOINT_MIGRATIONS = Migrations(
    "checkpoint_pg",
    table="graphruntime_migrations",
    lock_key="graphruntime_migrations",
    component="checkpoint_pg",
    setup_hint="run PostgresSaver.setup() (or checkpoint_pg.migrate)",
)


def migrations() -> tuple[Migration, ...]:
    """checkpoint_pg's migrations, in order."""
    return CHECKPOINT_MIGRATIONS.migrations()


def latest_version() -> int:
    """The version :func:`migrate` brings a database to."""
    return CHECKPOINT_MIGRATIONS.latest_version()


def migrate(conn: Conn) -> int:
    """Apply checkpoint_pg's pending migrations; returns the schema version afterwards.

    Raises:
        SchemaVersionError: the database is at a newer version than this code knows.
        CheckpointStoreError: a migration failed (nothing of it was applied).
    """
    return CHECKPOINT_MIGRATIONS.migrate(conn)


def schema_version(conn: Conn) -> int:
    """The database's checkpoint schema version: 0 before the first migration."""
    return CHECKPOINT_MIGRATIONS.schema_version(conn)


def check_schema(conn: Conn) -> None:
    """Raise unless the database is exactly at :func:`latest_version`."""
    CHECKPOINT_MIGRATIONS.check_schema(conn)
