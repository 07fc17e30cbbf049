"""AsyncPostgresSaver: the saver for async code, on psycopg's AsyncConnection or
AsyncConnectionPool, a thin async I/O shell over the operations of ``_saver_core``.

On a pool, concurrent calls each borrow their own connection and run in parallel,
up to the pool's size: there is no saver-wide lock. A single connection serves one
call at a time, as psycopg requires.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any, ClassVar, Literal, TypeVar

import psycopg
from psycopg import AsyncConnection, AsyncCursor, AsyncPipeline
from psycopg.rows import DictRow, dict_row

from checkpoint_pg._connection import (
    AConn,
    AsyncConnectionSource,
    check_conn,
    refuse_on_loop,
    wait_on_loop,
)
from checkpoint_pg._requests import Op, arun
from checkpoint_pg._saver_core import LIST_PAGE, PruneResult, SaverCore, store_error
from checkpoint_pg.schema import CHECKPOINT_MIGRATIONS, check_migration_texts
from graphruntime.checkpoint import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    SerializerProtocol,
)
from graphruntime.config import RunnableConfig

__all__ = ("AsyncPostgresSaver",)

T = TypeVar("T")


class AsyncPostgresSaver(BaseCheckpointSaver):
    """Checkpoints in Postgres for async code, with the calls of LangGraph's
    ``AsyncPostgresSaver``.

    Give it a psycopg ``AsyncConnection`` opened with ``autocommit=True`` or an
    ``AsyncConnectionPool`` (concurrent calls then run in parallel); the caller owns
    and closes it. Or use :meth:`from_conn_string`. Make it inside the event loop
    that will use it; ``await saver.setup()`` once to create or upgrade the tables.

    Args:
        conn: the connection or pool.
        pipe: a pipeline of ``conn`` that the caller owns: the saver's statements go
            into it, and each write syncs it, as LangGraph's does.
        serde: serializes channel values and writes.

    The sync methods (``get_tuple``, ``put``...) work from other threads (they run on
    the saver's loop and wait); called on the loop's own thread they raise
    ``asyncio.InvalidStateError`` instead of blocking it.
    """

    MIGRATIONS: ClassVar[tuple[str, ...]] = CHECKPOINT_MIGRATIONS.texts()
    """The SQL of the migrations :meth:`setup` applies, in order (read-only)."""

    def __init__(
        self,
        conn: AConn,
        pipe: AsyncPipeline | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        check_conn(conn, pipe, "AsyncPostgresSaver", is_async=True)
        self.conn = conn
        self.pipe = pipe
        self.loop = asyncio.get_running_loop()
        self._source = AsyncConnectionSource(conn)
        self._core = SaverCore(self.serde)

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        serde: SerializerProtocol | None = None,
    ) -> AsyncIterator[AsyncPostgresSaver]:
        """A saver on a new connection to ``conn_string`` (in pipeline mode with
        ``pipeline=True``), closed when the block exits."""
        async with await AsyncConnection.connect(
            conn_string, autocommit=True, prepare_threshold=0, row_factory=dict_row
        ) as conn:
            if pipeline:
                async with conn.pipeline() as pipe:
                    yield cls(conn, pipe, serde)
            else:
                yield cls(conn, serde=serde)

    async def setup(self) -> None:
        """Create the tables, or apply the migrations this database lacks."""
        check_migration_texts(type(self).MIGRATIONS, self.MIGRATIONS, "AsyncPostgresSaver")
        async with self._source.connection() as conn:
            await CHECKPOINT_MIGRATIONS.amigrate(conn)

    # -- the contract ----------------------------------------------------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self._run("get_tuple", self._core.get(config))

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        params = self._core.list_params(config, filter, before)
        if params is None or (limit is not None and limit <= 0):
            return
        remaining = limit
        while True:
            page = LIST_PAGE if remaining is None else min(LIST_PAGE, remaining)
            found = await self._run("list", self._core.list_page(params, page))
            for item in found:
                yield item
            if remaining is not None:
                remaining -= len(found)
                if remaining <= 0:
                    return
            if len(found) < page:
                return

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The contract's parent-chain walk, in one statement (a recursive CTE)."""
        op = self._core.delta_history(config, channels)
        return await self._run("get_delta_channel_history", op)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        fenced: bool = False,
    ) -> RunnableConfig:
        """Store ``checkpoint`` as the child of ``config``'s checkpoint (``fenced``: as
        :meth:`checkpoint_pg.PostgresSaver.put`)."""
        op = self._core.put(config, checkpoint, metadata, new_versions, fenced=fenced)
        return await self._run("put", op)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes; ``get_tuple`` returns them in insertion order."""
        await self._run("put_writes", self._core.put_writes(config, writes, task_id, task_path))

    async def adelete_thread(self, thread_id: str) -> None:
        await self._run("delete_thread", self._core.delete(str(thread_id)))

    async def aprune(
        self,
        thread_ids: str | Sequence[str],
        *,
        keep_last: int = 1,
        strategy: Literal["keep_latest", "delete"] = "keep_latest",
    ) -> PruneResult:
        """As :meth:`checkpoint_pg.PostgresSaver.prune`."""
        return await self._run("prune", self._core.prune(thread_ids, keep_last, strategy))

    # -- sync calls from other threads -----------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._wait(self.aget_tuple(config), "aget_tuple")

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        self._refuse_on_loop("alist")
        found = self.alist(config, filter=filter, before=before, limit=limit)
        while True:
            try:
                yield self._wait(_next(found), "alist")
            except StopAsyncIteration:
                return

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        coro = self.aget_delta_channel_history(config=config, channels=channels)
        return self._wait(coro, "aget_delta_channel_history")

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self._wait(self.aput(config, checkpoint, metadata, new_versions), "aput")

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._wait(self.aput_writes(config, writes, task_id, task_path), "aput_writes")

    def delete_thread(self, thread_id: str) -> None:
        self._wait(self.adelete_thread(thread_id), "adelete_thread")

    def prune(
        self,
        thread_ids: str | Sequence[str],
        *,
        keep_last: int = 1,
        strategy: Literal["keep_latest", "delete"] = "keep_latest",
    ) -> PruneResult:
        coro = self.aprune(thread_ids, keep_last=keep_last, strategy=strategy)
        return self._wait(coro, "aprune")

    def _refuse_on_loop(self, method: str) -> None:
        hint = f"await checkpointer.{method}(...) instead (or graph.ainvoke(...))"
        refuse_on_loop(self.loop, "AsyncPostgresSaver", hint)

    def _wait(self, coro: Coroutine[Any, Any, T], method: str) -> T:
        hint = f"await checkpointer.{method}(...) instead (or graph.ainvoke(...))"
        return wait_on_loop(self.loop, coro, "AsyncPostgresSaver", hint)

    # -- I/O -------------------------------------------------------------------

    async def _run(self, operation: str, op: Op[T]) -> T:
        with self._errors(operation):
            async with self._source.connection() as conn:
                result = await arun(conn, op)
                if self.pipe is not None:
                    await self.pipe.sync()
                return result

    @contextmanager
    def _errors(self, operation: str) -> Iterator[None]:
        try:
            yield
        except psycopg.Error as exc:
            raise store_error(exc, operation) from exc

    @asynccontextmanager
    async def _cursor(self) -> AsyncIterator[AsyncCursor[DictRow]]:
        """A ``dict_row`` cursor on the saver's connection (LangGraph's helper of the same
        name, for code that runs its own SQL next to the saver's)."""
        async with (
            self._source.connection() as conn,
            conn.cursor(binary=True, row_factory=dict_row) as cur,
        ):
            yield cur


async def _next(found: AsyncIterator[T]) -> T:
    return await anext(found)
