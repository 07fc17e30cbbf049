"""The checkpointers and stores the fixtures hand out, for the target under test.

graphruntime: its ``InMemorySaver`` (through ``tests.upstream.memory_assert``) and
``checkpoint_pg.PostgresSaver``; ``checkpoint_pg.PostgresStore`` once it exists.
LangGraph: its ``InMemorySaver`` and ``langgraph.checkpoint.postgres`` savers from
langgraph-checkpoint-postgres; ``langgraph.store.postgres`` when graphruntime has a store to
compare with (the parameter lists must be the same for both targets).

Postgres is the embedded server of ``checkpoint_pg.embedded`` (or ``DATABASE_URL``): one
scratch database per test session (per xdist worker) for checkpoints, emptied before each test
that uses it (LangGraph's tests reuse thread ids and expect a fresh database), and one per test
for stores.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager, asynccontextmanager, contextmanager
from types import ModuleType
from typing import Any

from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from tests.upstream.harness.paths import ROOT
from tests.upstream.harness.targets import TARGET

__all__ = (
    "HAS_PG_STORE",
    "async_postgres_saver",
    "async_postgres_store",
    "postgres_pool",
    "postgres_saver",
    "postgres_store",
    "scratch_database",
    "session_database",
)

# Connection settings LangGraph's savers need (dict rows, no server-side prepared statements
# across pooled connections); graphruntime's saver sets its own row factory per cursor.
CONNECTION_KWARGS: dict[str, Any] = {
    "autocommit": True,
    "prepare_threshold": 0,
    "row_factory": dict_row,
}


def _embedded() -> ModuleType:
    """``checkpoint_pg.embedded``; loaded from its file when the target is LangGraph.

    Importing the ``checkpoint_pg`` package would import graphruntime, which that run maps to
    LangGraph; ``embedded`` itself imports nothing of the project.
    """
    if TARGET == "graphruntime":
        return importlib.import_module("checkpoint_pg.embedded")
    name = "_upstream_checkpoint_pg_embedded"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / "checkpoint_pg" / "embedded.py")
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {ROOT / 'checkpoint_pg' / 'embedded.py'}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _target_class(graphruntime_path: str, langgraph_path: str) -> Any:
    """``module:Name`` of the target: graphruntime's side or LangGraph's."""
    module, name = (graphruntime_path if TARGET == "graphruntime" else langgraph_path).split(":")
    return getattr(importlib.import_module(module), name)


def _has_pg_store() -> bool:
    probe = (
        "import sys, checkpoint_pg; sys.exit(0 if hasattr(checkpoint_pg, 'PostgresStore') else 1)"
    )
    if TARGET == "graphruntime":
        return hasattr(importlib.import_module("checkpoint_pg"), "PostgresStore")
    # A separate process: this one must not import graphruntime (see above).
    return subprocess.run([sys.executable, "-c", probe], check=False, cwd=ROOT).returncode == 0


HAS_PG_STORE = _has_pg_store()


def scratch_database(prefix: str) -> AbstractContextManager[str]:
    """A fresh database on the session's server, dropped on exit."""
    embedded = _embedded()
    manager: AbstractContextManager[str] = embedded.scratch_database(
        embedded.database_url(), prefix
    )
    return manager


@contextmanager
def session_database() -> Iterator[str]:
    """A database with the target's checkpoint tables, for one test session."""
    with scratch_database("upstream") as url:
        saver_class = _target_class(
            "checkpoint_pg:PostgresSaver", "langgraph.checkpoint.postgres:PostgresSaver"
        )
        with saver_class.from_conn_string(url) as saver:
            saver.setup()
        yield url


@contextmanager
def postgres_pool(url: str) -> Iterator[ConnectionPool[Any]]:
    with ConnectionPool(url, min_size=1, max_size=8, kwargs=CONNECTION_KWARGS) as pool:
        yield pool


def empty_tables(pool: ConnectionPool[Any]) -> None:
    """Delete every row but the migration records: LangGraph's tests reuse thread ids ("1")
    and expect a fresh database, as each of them gets upstream."""
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            " AND tablename NOT LIKE '%migrations'"
        ).fetchall()
        tables = [sql.Identifier(row["tablename"]) for row in rows]
        if tables:
            conn.execute(sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(tables)))


def postgres_saver(pool: ConnectionPool[Any]) -> Any:
    """The target's Postgres saver on the session's pool, its tables emptied."""
    empty_tables(pool)
    saver_class = _target_class(
        "checkpoint_pg:PostgresSaver", "langgraph.checkpoint.postgres:PostgresSaver"
    )
    return saver_class(pool)


@asynccontextmanager
async def async_postgres_saver(url: str, pool: ConnectionPool[Any]) -> AsyncIterator[Any]:
    """graphruntime's saver serves the async API itself; LangGraph has AsyncPostgresSaver."""
    if TARGET == "graphruntime":
        yield postgres_saver(pool)
        return
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    empty_tables(pool)
    async with AsyncPostgresSaver.from_conn_string(url) as saver:
        yield saver


@contextmanager
def postgres_store() -> Iterator[Any]:
    """The target's Postgres store on a database of its own."""
    store_class = _target_class(
        "checkpoint_pg:PostgresStore", "langgraph.store.postgres:PostgresStore"
    )
    with scratch_database("upstream_store") as url, store_class.from_conn_string(url) as store:
        store.setup()
        yield store


@asynccontextmanager
async def async_postgres_store() -> AsyncIterator[Any]:
    if TARGET == "graphruntime":
        with postgres_store() as store:
            yield store
        return
    from langgraph.store.postgres.aio import AsyncPostgresStore

    with scratch_database("upstream_store") as url:
        async with AsyncPostgresStore.from_conn_string(url) as store:
            await store.setup()
            yield store
