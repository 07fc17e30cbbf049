"""langgraph-checkpoint-postgres for graphruntime: Postgres savers, stores and a cache.

    from checkpoint_pg import PostgresSaver

    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        app = graph.compile(checkpointer=saver)

A port changes ``langgraph.checkpoint.postgres`` and ``langgraph.store.postgres`` to
``checkpoint_pg`` (their ``.aio`` to :mod:`checkpoint_pg.aio`). :class:`PostgresSaver` and
:class:`PostgresStore` serve sync code, :class:`AsyncPostgresSaver` and
:class:`AsyncPostgresStore` async code (concurrent calls on a pool run in parallel), and
:class:`PostgresCache` caches node and task results for every process
(``graphruntime.cache``). Each pair is one core of statements and row decoding, with no
I/O, under a thin sync and a thin async shell.

:func:`database_url` gives ``DATABASE_URL`` or, when unset, an embedded Postgres
for development and tests.
"""

from __future__ import annotations

from checkpoint_pg._shallow import ShallowPostgresSaver
from checkpoint_pg.aio import AsyncPostgresSaver, AsyncPostgresStore
from checkpoint_pg.cache import PostgresCache
from checkpoint_pg.embedded import database_url
from checkpoint_pg.errors import (
    CheckpointStoreError,
    CheckpointStoreUnavailable,
    SchemaVersionError,
    is_connection_error,
    missing_schema,
)
from checkpoint_pg.saver import PostgresSaver, PruneResult
from checkpoint_pg.schema import latest_version, migrate, schema_version
from checkpoint_pg.store import PostgresIndexConfig, PostgresStore

__all__ = (
    "AsyncPostgresSaver",
    "AsyncPostgresStore",
    "CheckpointStoreError",
    "CheckpointStoreUnavailable",
    "PostgresCache",
    "PostgresIndexConfig",
    "PostgresSaver",
    "PostgresStore",
    "PruneResult",
    "SchemaVersionError",
    "ShallowPostgresSaver",
    "database_url",
    "is_connection_error",
    "latest_version",
    "migrate",
    "missing_schema",
    "schema_version",
)
