"""Exceptions raised by checkpoint_pg.

They extend graphruntime's tree, so ``except GraphRuntimeError`` (or
``CheckpointError``) catches them too::

    graphruntime.errors.CheckpointError
    ├── graphruntime.errors.CheckpointConflict   a fenced put lost the race for the head
    └── CheckpointStoreError                     the database refused or failed an operation
        ├── CheckpointStoreUnavailable           the connection was lost or refused: retry later
        ├── SchemaVersionError                   the schema is newer than this code knows
        └── EmbeddedPostgresError                no DATABASE_URL, and the embedded Postgres
                                                 cannot run (a RuntimeError)

Bad arguments (a connection opened without autocommit, an unknown prune strategy) raise
graphruntime's :class:`~graphruntime.errors.InvalidArgumentError` (a ``ValueError``) and
:class:`~graphruntime.errors.InvalidArgumentTypeError` (a ``TypeError``); the store
(:class:`checkpoint_pg.PostgresStore`) raises :mod:`graphruntime.store`'s errors.
"""

from __future__ import annotations

from typing import Any

from graphruntime.errors import CheckpointError

__all__ = (
    "CheckpointStoreError",
    "CheckpointStoreUnavailable",
    "EmbeddedPostgresError",
    "SchemaVersionError",
    "is_connection_error",
    "missing_schema",
)

# SQLSTATEs that mean "the server went away or cannot take us now", beyond class 08
# (connection exception): admin/crash shutdown and "cannot connect now" while it
# restarts, and too many connections. Deadlocks and serialization failures are
# retried too: the transaction did nothing and can simply run again.
_RETRYABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300", "40001", "40P01"})


class CheckpointStoreError(CheckpointError):
    """The Postgres store failed; the driver's exception is the ``__cause__``."""


class SchemaVersionError(CheckpointStoreError):
    """The database schema is newer than the newest migration this code ships.

    Upgrade checkpoint_pg (graphruntime) before running against this database.
    """


class CheckpointStoreUnavailable(CheckpointStoreError):
    """The database could not be reached (connection lost or refused); retrying may succeed."""


class EmbeddedPostgresError(CheckpointStoreError, RuntimeError):
    """No ``DATABASE_URL`` is set and the embedded Postgres (pgserver) is not installed or
    cannot start; install ``graphruntime[postgres]``'s pgserver or set ``DATABASE_URL``."""


def is_connection_error(exc: BaseException) -> bool:
    """Whether a psycopg/pool error means the database was unreachable, not that it refused.

    Classified by SQLSTATE, never by exception class: psycopg reports both a lost
    connection and a statement the server will never accept (e.g. a key too long
    for its index, ``54000``) as ``OperationalError``. No SQLSTATE on an
    ``OperationalError`` means the client lost the connection; a pool timeout means
    no connection could be had.
    """
    import psycopg
    from psycopg_pool import PoolTimeout

    if isinstance(exc, PoolTimeout):
        return True
    if not isinstance(exc, psycopg.Error):
        return False
    state: Any = exc.sqlstate
    if state is None:
        return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)
    return str(state).startswith("08") or state in _RETRYABLE_SQLSTATES


_MISSING_SCHEMA_SQLSTATES = frozenset({"42P01", "42883"})  # undefined table, function


def missing_schema(exc: BaseException) -> bool:
    """Whether a psycopg error says a table or function of the schema does not exist: the
    database was never migrated (or is another one than meant)."""
    return getattr(exc, "sqlstate", None) in _MISSING_SCHEMA_SQLSTATES
