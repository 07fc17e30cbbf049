"""PostgresStore: graphruntime's store contract (LangGraph's BaseStore) on Postgres.

    from checkpoint_pg import PostgresStore

    with PostgresStore.from_conn_string(url) as store:
        store.setup()
        store.put(("users", "u1"), "prefs", {"theme": "dark"})

A thin sync I/O shell over the operations of ``_store_core`` (shared with
:class:`checkpoint_pg.aio.AsyncPostgresStore`). One table (``sql/store_migrations``),
queries in ``sql/store_queries.sql``; values are JSONB objects, filters compile to
parameterized SQL (``_store_sql``). With ``index=`` (LangGraph's ``dims``, ``embed``,
``fields``, plus pgvector's ``distance_type`` and ``ann_index_config``), items are
embedded and ``search(query=...)`` ranks them on pgvector (``_vector``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import datetime
from typing import Any, ClassVar, TypeVar

import psycopg
from psycopg import Connection, Cursor, Pipeline
from psycopg.rows import DictRow, dict_row
from psycopg_pool import ConnectionPool

from checkpoint_pg._connection import Conn, ConnectionSource, check_conn
from checkpoint_pg._requests import Op, run
from checkpoint_pg._store_core import (
    STORE_MIGRATIONS,
    Plan,
    PoolConfig,
    StoreCore,
    check_pool_config,
    retried,
)
from checkpoint_pg._vector import PostgresIndexConfig, VectorIndex
from checkpoint_pg.schema import check_migration_texts
from graphruntime.store.base import (
    BaseStore,
    Result,
    StoreBackendError,
    TTLConfig,
    TTLSweeper,
)
from graphruntime.store.base import (
    Op as StoreOp,
)

__all__ = ("STORE_MIGRATIONS", "PoolConfig", "PostgresIndexConfig", "PostgresStore")

T = TypeVar("T")


class PostgresStore(BaseStore):
    """Items in Postgres, with the calls of LangGraph's ``PostgresStore``.

    Give it a psycopg ``Connection`` opened with ``autocommit=True`` (shared by
    the threads of a process, one batch at a time) or a ``ConnectionPool``; the
    caller owns and closes it. Or use :meth:`from_conn_string`. Call
    :meth:`setup` once to create or upgrade the table.

    Args:
        pipe: a pipeline of ``conn`` the caller owns: the store's statements go into
            it, and each batch syncs it.
        ttl: TTL settings; puts take ``ttl=`` (minutes) with or without them.
            Expired items are invisible at once; :meth:`sweep_ttl` (or the
            thread of :meth:`start_ttl_sweeper`) deletes them.
        index: vector search on pgvector (LangGraph's ``PostgresIndexConfig``):
            ``dims``, ``embed``, ``fields``, ``distance_type`` (cosine,
            inner_product, l2) and ``ann_index_config`` (``kind`` hnsw, ivfflat or
            flat, ``vector_type`` vector or halfvec, and the kind's parameters).
            :meth:`setup` then needs the pgvector extension on the server. Without
            an index, ``search(query=...)`` ignores the query, as LangGraph's does.
        clock: the current time for TTLs and timestamps; by default the
            database's ``now()``. Tests pass a fake one to expire items without
            waiting.
    """

    supports_ttl = True
    MIGRATIONS: ClassVar[tuple[str, ...]] = STORE_MIGRATIONS.texts()
    """The SQL of the store's migrations :meth:`setup` applies, in order (read-only)."""

    def __init__(
        self,
        conn: Conn,
        *,
        pipe: Pipeline | None = None,
        ttl: TTLConfig | None = None,
        index: PostgresIndexConfig | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        check_conn(conn, pipe, "PostgresStore", is_async=False)
        self.conn = conn
        self.pipe = pipe
        self._source = ConnectionSource(conn)
        self._core = StoreCore(ttl, None if index is None else VectorIndex(index), clock)
        self.ttl_config = self._core.ttl_config
        self._sweeper = TTLSweeper(self.sweep_ttl, "graphruntime-pg-store-ttl-sweeper")

    @property
    def index_config(self) -> PostgresIndexConfig | None:
        """The store's ``index=`` settings (``fields`` filled in), or None."""
        return None if self._core.index is None else self._core.index.config

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        pool_config: PoolConfig | None = None,
        ttl: TTLConfig | None = None,
        index: PostgresIndexConfig | None = None,
    ) -> Iterator[PostgresStore]:
        """A store on a new connection (``pipeline=True``: in pipeline mode; with
        ``pool_config``: a pool), closed on exit with its TTL sweeper."""
        kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0}
        if pool_config is None:
            with (
                Connection.connect(conn_string, row_factory=dict_row, **kwargs) as conn,
                conn.pipeline() if pipeline else nullcontext() as pipe,
            ):
                store = cls(conn, pipe=pipe, ttl=ttl, index=index)
                try:
                    yield store
                finally:
                    store.stop_ttl_sweeper()
            return
        check_pool_config(pool_config, pipeline)
        with ConnectionPool(
            conn_string,
            min_size=pool_config.get("min_size", 1),
            max_size=pool_config.get("max_size"),
            kwargs={**kwargs, "row_factory": dict_row, **pool_config.get("kwargs", {})},
            open=True,
        ) as pool:
            store = cls(pool, ttl=ttl, index=index)
            try:
                yield store
            finally:
                store.stop_ttl_sweeper()

    def setup(self) -> None:
        """Create the store's table (with an index, pgvector's too), or apply the
        migrations this database lacks."""
        check_migration_texts(type(self).MIGRATIONS, self.MIGRATIONS, "PostgresStore")
        with self._errors("setup"), self._source.connection() as conn, conn.transaction():
            run(conn, self._core.setup())

    # -- the contract ----------------------------------------------------------

    def batch(self, ops: Iterable[StoreOp]) -> list[Result]:
        """Run ``ops`` in order in one transaction; consecutive gets (and puts) share a
        statement. Every op is checked before any runs."""
        plan = self._core.plan(list(ops))
        if not plan.ops:
            return []
        embeddings: list[list[float]] = []
        queries: list[list[float]] = []
        if self._core.index is not None:
            embedder = self._core.index.embedder
            embeddings = embedder.embed_documents(plan.texts) if plan.texts else []
            queries = [embedder.embed_query(text) for text in plan.queries]
        # a fresh operation per run: a generator runs once
        return retried(
            lambda: self._run("batch", self._core.batch(plan, embeddings, queries), plan)
        )

    async def abatch(self, ops: Iterable[StoreOp]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # -- TTL -------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete the expired items now; returns how many."""
        return self._run("TTL sweep", self._core.sweep())

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Call :meth:`sweep_ttl` every ``sweep_interval_minutes`` on a daemon thread.

        The interval defaults to ``ttl_config["sweep_interval_minutes"]``, else 5.
        The future completes when :meth:`stop_ttl_sweeper` stops the thread
        (cancelling it stops it too).
        """
        configured = (self.ttl_config or {}).get("sweep_interval_minutes")
        return self._sweeper.start(60.0 * float(sweep_interval_minutes or configured or 5))

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; ``False`` if it was still running after ``timeout`` s."""
        return self._sweeper.stop(timeout)

    # -- I/O -------------------------------------------------------------------

    def _run(self, operation: str, op: Op[T], plan: Plan | None = None) -> T:
        atomic = plan is not None and StoreCore.atomic(plan)
        with self._errors(operation), self._source.connection() as conn:
            with conn.transaction() if atomic else nullcontext():
                result = run(conn, op)
            if self.pipe is not None:
                self.pipe.sync()
            return result

    @contextmanager
    def _errors(self, operation: str) -> Iterator[None]:
        try:
            yield
        except psycopg.Error as exc:
            raise StoreBackendError(f"PostgresStore {operation} failed: {exc}") from exc

    @contextmanager
    def _cursor(self) -> Iterator[Cursor[DictRow]]:
        """A ``dict_row`` cursor on the store's connection (LangGraph's helper of the same
        name, for code that runs its own SQL next to the store's)."""
        with self._source.cursor() as cur:
            yield cur
