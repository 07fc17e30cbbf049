"""AsyncPostgresStore: the store for async code, on psycopg's AsyncConnection or
AsyncConnectionPool, a thin async I/O shell over the operations of ``_store_core``.

On a pool, concurrent calls each borrow their own connection and run in parallel:
there is no store-wide lock. A single connection serves one batch at a time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime
from typing import Any, ClassVar, TypeVar, cast

import psycopg
from psycopg import AsyncConnection, AsyncCursor, AsyncPipeline
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from checkpoint_pg._connection import AConn, AsyncConnectionSource, check_conn, wait_on_loop
from checkpoint_pg._requests import Op, arun
from checkpoint_pg._store_core import (
    STORE_MIGRATIONS,
    Plan,
    PoolConfig,
    StoreCore,
    aretried,
    check_pool_config,
)
from checkpoint_pg._vector import PostgresIndexConfig, VectorIndex
from checkpoint_pg.schema import check_migration_texts
from graphruntime.store import InvalidStoreRequestError
from graphruntime.store.base import BaseStore, PutOp, Result, StoreBackendError, TTLConfig
from graphruntime.store.base import Op as StoreOp

__all__ = ("AsyncPostgresStore",)

T = TypeVar("T")
logger = logging.getLogger("graphruntime.store")


class AsyncPostgresStore(BaseStore):
    """Items in Postgres for async code, with the calls of LangGraph's
    ``AsyncPostgresStore`` (settings as :class:`checkpoint_pg.PostgresStore`).

    Make it inside the event loop that will use it. The sync methods work from other
    threads (they run on the store's loop and wait); on the loop's own thread they
    raise ``asyncio.InvalidStateError`` instead of blocking it.
    """

    supports_ttl = True
    MIGRATIONS: ClassVar[tuple[str, ...]] = STORE_MIGRATIONS.texts()
    """The SQL of the store's migrations :meth:`setup` applies, in order (read-only)."""

    def __init__(
        self,
        conn: AConn,
        *,
        pipe: AsyncPipeline | None = None,
        ttl: TTLConfig | None = None,
        index: PostgresIndexConfig | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        check_conn(conn, pipe, "AsyncPostgresStore", is_async=True)
        self.conn = conn
        self.pipe = pipe
        self.loop = asyncio.get_running_loop()
        self._source = AsyncConnectionSource(conn)
        self._core = StoreCore(ttl, None if index is None else VectorIndex(index), clock)
        self.ttl_config = self._core.ttl_config
        self._sweeper: asyncio.Task[None] | None = None
        self._stop_sweeping = asyncio.Event()
        # single-op calls waiting to run together, and the batches running
        self._queue: list[tuple[StoreOp, asyncio.Future[Result]]] = []
        self._drainer: asyncio.Task[None] | None = None
        self._running: set[asyncio.Task[None]] = set()
        size = conn.max_size if isinstance(conn, AsyncConnectionPool) else 1
        self._slots = asyncio.Semaphore(size)

    @property
    def index_config(self) -> PostgresIndexConfig | None:
        """The store's ``index=`` settings (``fields`` filled in), or None."""
        return None if self._core.index is None else self._core.index.config

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        pool_config: PoolConfig | None = None,
        ttl: TTLConfig | None = None,
        index: PostgresIndexConfig | None = None,
    ) -> AsyncIterator[AsyncPostgresStore]:
        """A store on a new connection (``pipeline=True``: in pipeline mode; with
        ``pool_config``: a pool), closed on exit with its TTL sweeper."""
        kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0}
        if pool_config is None:
            async with await AsyncConnection.connect(
                conn_string, row_factory=dict_row, **kwargs
            ) as conn:
                if pipeline:
                    async with (
                        conn.pipeline() as pipe,
                        _stopping(cls(conn, pipe=pipe, ttl=ttl, index=index)) as piped,
                    ):
                        yield piped
                else:
                    async with _stopping(cls(conn, ttl=ttl, index=index)) as store:
                        yield store
            return
        check_pool_config(pool_config, pipeline)
        async with (
            AsyncConnectionPool(
                conn_string,
                min_size=pool_config.get("min_size", 1),
                max_size=pool_config.get("max_size"),
                kwargs={**kwargs, "row_factory": dict_row, **pool_config.get("kwargs", {})},
                open=False,
            ) as pool,
            _stopping(cls(pool, ttl=ttl, index=index)) as store,
        ):
            yield store

    async def setup(self) -> None:
        """Create the store's table (with an index, pgvector's too), or apply the
        migrations this database lacks."""
        check_migration_texts(type(self).MIGRATIONS, self.MIGRATIONS, "AsyncPostgresStore")
        with self._errors("setup"):
            async with self._source.connection() as conn, conn.transaction():
                await arun(conn, self._core.setup())

    # -- the contract ----------------------------------------------------------

    async def abatch(self, ops: Iterable[StoreOp]) -> list[Result]:
        """Run ``ops`` in order in one transaction (as :meth:`PostgresStore.batch`).

        A call with one op (``aget``, ``aput``, ``asearch``...) joins the calls of other
        tasks made meanwhile: they run as one batch, gets in one statement, puts in one,
        searches and listings sent together. Up to the pool's size of such batches run at
        once. Each op is checked before it joins, so a bad one fails only its own call.
        """
        ops = list(ops)
        if len(ops) == 1:
            return [await self._coalesced(ops[0])]
        return await self._batch(self._core.plan(ops))

    def batch(self, ops: Iterable[StoreOp]) -> list[Result]:
        """:meth:`abatch` from another thread than the store's loop."""
        ops = list(ops)
        self._core.plan(ops)  # refused here, on the caller's thread, before any wait
        return self._wait(self.abatch(ops))

    # -- TTL -------------------------------------------------------------------

    async def sweep_ttl(self) -> int:
        """Delete the expired items now; returns how many."""
        return await self._run("TTL sweep", self._core.sweep())

    async def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Task[None]:
        """Call :meth:`sweep_ttl` every ``sweep_interval_minutes`` in a task of the loop
        (default ``ttl_config["sweep_interval_minutes"]``, else 5); returns the task."""
        if self._sweeper is not None and not self._sweeper.done():
            return self._sweeper
        configured = (self.ttl_config or {}).get("sweep_interval_minutes")
        interval = 60.0 * float(sweep_interval_minutes or configured or 5)
        if interval <= 0:
            raise InvalidStoreRequestError(f"The sweep interval must be positive, got {interval!r}")
        self._stop_sweeping.clear()
        self._sweeper = asyncio.create_task(self._sweep_loop(interval))
        return self._sweeper

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper task; ``False`` if it was still running after ``timeout`` s."""
        task = self._sweeper
        if task is None or task.done():
            return True
        self._stop_sweeping.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout)
        except TimeoutError:
            return False
        self._sweeper = None
        return True

    async def _sweep_loop(self, interval: float) -> None:
        while True:
            try:
                await asyncio.wait_for(self._stop_sweeping.wait(), interval)
                return
            except TimeoutError:
                pass
            try:
                swept = await self.sweep_ttl()
            except Exception:
                logger.exception("TTL sweep failed; retrying in %s s", interval)
                continue
            if swept:
                logger.debug("TTL sweep deleted %d expired items", swept)

    # -- I/O -------------------------------------------------------------------

    async def _batch(self, plan: Plan) -> list[Result]:
        if not plan.ops:
            return []
        embeddings: list[list[float]] = []
        queries: list[list[float]] = []
        if self._core.index is not None:
            embedder = self._core.index.embedder
            embeddings = await embedder.aembed_documents(plan.texts) if plan.texts else []
            queries = [await embedder.aembed_query(text) for text in plan.queries]
        # a fresh operation per run: a generator runs once
        return await aretried(
            lambda: self._run("batch", self._core.batch(plan, embeddings, queries), plan)
        )

    async def _coalesced(self, op: StoreOp) -> Result:
        self._core.plan([op])  # refused now: a bad op fails only its own call
        future: asyncio.Future[Result] = self.loop.create_future()
        self._queue.append((op, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        """Take the queued ops as one batch whenever a connection slot is free."""
        while self._queue:
            await self._slots.acquire()
            await asyncio.sleep(0)  # the calls made in this turn of the loop join too
            taken, self._queue = self._queue, []
            task = asyncio.create_task(self._run_taken(taken))
            self._running.add(task)
            task.add_done_callback(self._running.discard)
            task.add_done_callback(lambda _: self._slots.release())

    async def _run_taken(self, taken: list[tuple[StoreOp, asyncio.Future[Result]]]) -> None:
        taken = [(op, future) for op, future in taken if not future.done()]
        if not taken:
            return
        # the same read asked by several callers runs once (each gets its own list)
        unique: list[StoreOp] = []
        index: dict[Any, int] = {}
        slots: list[int] = []
        for op, _ in taken:
            key = _read_key(op)
            if key is None or key not in index:
                if key is not None:
                    index[key] = len(unique)
                slots.append(len(unique))
                unique.append(op)
            else:
                slots.append(index[key])
        plan, where = StoreCore.grouped(self._core.plan(unique))
        try:
            results = await self._batch(plan)
        except Exception as exc:  # noqa: BLE001 - handed to every caller of the batch
            for _, future in taken:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, future), slot in zip(taken, slots, strict=True):
            if not future.done():
                result = results[where[slot]]
                future.set_result(
                    cast(Result, list(result)) if isinstance(result, list) else result
                )

    def _wait(self, coro: Coroutine[Any, Any, T]) -> T:
        hint = "use the async methods (aget, aput, asearch, abatch...) there"
        return wait_on_loop(self.loop, coro, "AsyncPostgresStore", hint)

    async def _run(self, operation: str, op: Op[T], plan: Plan | None = None) -> T:
        with self._errors(operation):
            async with self._source.connection() as conn:
                if plan is not None and StoreCore.atomic(plan):
                    async with conn.transaction():
                        result = await arun(conn, op)
                else:
                    result = await arun(conn, op)
                if self.pipe is not None:
                    await self.pipe.sync()
                return result

    @contextmanager
    def _errors(self, operation: str) -> Iterator[None]:
        try:
            yield
        except psycopg.Error as exc:
            raise StoreBackendError(f"AsyncPostgresStore {operation} failed: {exc}") from exc

    @asynccontextmanager
    async def _cursor(self) -> AsyncIterator[AsyncCursor[DictRow]]:
        """A ``dict_row`` cursor on the store's connection (LangGraph's helper of the same
        name, for code that runs its own SQL next to the store's)."""
        async with (
            self._source.connection() as conn,
            conn.cursor(binary=True, row_factory=dict_row) as cur,
        ):
            yield cur


def _read_key(op: StoreOp) -> Any:
    """What makes two reads the same (None: a put, or a read with an unhashable filter)."""
    if isinstance(op, PutOp):
        return None
    try:
        hash(op)
    except TypeError:
        return None
    return op


@asynccontextmanager
async def _stopping(store: AsyncPostgresStore) -> AsyncIterator[AsyncPostgresStore]:
    try:
        yield store
    finally:
        await store.stop_ttl_sweeper()
