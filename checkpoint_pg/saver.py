"""PostgresSaver: graphruntime's checkpoint contract on Postgres, for sync code.

A thin I/O shell: the statements, parameters and row decoding are the operations of
``_saver_core`` (shared with :class:`checkpoint_pg.aio.AsyncPostgresSaver`), performed
here on a psycopg ``Connection`` or ``ConnectionPool``. The methods the workers' cluster
needs beyond LangGraph's contract live in ``_cluster``. Queries live in
``sql/queries.sql``, the row layout in ``_codec``, the tables in ``sql/migrations``.
"""

from __future__ import annotations

import asyncio
import builtins
import copy
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from typing import Any, ClassVar, Literal, TypeVar

import psycopg
from psycopg import Connection, Cursor, Pipeline
from psycopg.rows import DictRow, dict_row

from checkpoint_pg._cluster import ClusterMethods
from checkpoint_pg._connection import Conn, ConnectionSource, check_conn
from checkpoint_pg._pipe_batch import PipeBatch
from checkpoint_pg._requests import Op, run
from checkpoint_pg._saver_core import LIST_PAGE, PruneResult, SaverCore, store_error
from checkpoint_pg.schema import CHECKPOINT_MIGRATIONS, check_migration_texts, migrate
from graphruntime.checkpoint import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    ClusterSaver,
    DeltaChannelHistory,
    SerializerProtocol,
)
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointConflict, CheckpointError

__all__ = ("PostgresSaver", "PruneResult")

T = TypeVar("T")


class PostgresSaver(ClusterMethods, ClusterSaver):
    """Checkpoints in Postgres, with the calls of LangGraph's ``PostgresSaver``.

    Give it a psycopg ``Connection`` opened with ``autocommit=True`` (shared by
    the threads of a process, one operation at a time) or a
    ``psycopg_pool.ConnectionPool`` (for concurrent use); the caller owns and
    closes it. Or use :meth:`from_conn_string`. Call :meth:`setup` once to create
    or upgrade the tables.

    Args:
        conn: the connection or pool.
        pipe: a pipeline of ``conn`` that the caller owns (``with conn.pipeline() as
            pipe``): the saver's statements go into it, and each call syncs it, as
            LangGraph's does. Inside :meth:`batched`, calls do not sync: the caller's
            puts and writes of any number of threads go in one round trip.
        serde: serializes channel values and writes.

    Beyond the contract: ``put(..., fenced=True)`` refuses to fork a thread, see
    :meth:`put`; :meth:`prune` bounds how much history a thread keeps.
    """

    MIGRATIONS: ClassVar[tuple[str, ...]] = CHECKPOINT_MIGRATIONS.texts()
    """The SQL of the migrations :meth:`setup` applies, in order (read-only)."""

    def __init__(
        self, conn: Conn, pipe: Pipeline | None = None, serde: SerializerProtocol | None = None
    ) -> None:
        super().__init__(serde=serde)
        check_conn(conn, pipe, "PostgresSaver", is_async=False)
        self.conn = conn
        self.pipe = pipe
        self._source = ConnectionSource(conn)
        self._core = SaverCore(self.serde)
        self._init_cluster()
        self._batch: PipeBatch | None = None
        """The block's statements waiting for one sync (:meth:`batched`)."""
        self.refused: dict[str, CheckpointConflict] = {}
        """In a :meth:`pipelined` view, after its block: the fenced puts refused, by thread."""

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        pipeline: bool = False,
        serde: SerializerProtocol | None = None,
    ) -> Iterator[PostgresSaver]:
        """A saver on a new connection to ``conn_string`` (in pipeline mode with
        ``pipeline=True``), closed when the block exits."""
        with Connection.connect(
            conn_string, autocommit=True, prepare_threshold=0, row_factory=dict_row
        ) as conn:
            if pipeline:
                with conn.pipeline() as pipe:
                    yield cls(conn, pipe, serde)
            else:
                yield cls(conn, serde=serde)

    def setup(self) -> None:
        """Create the tables, or apply the migrations this database lacks."""
        check_migration_texts(type(self).MIGRATIONS, self.MIGRATIONS, "PostgresSaver")
        with self._source.connection() as conn:
            migrate(conn)

    # -- the contract ----------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._run("get_tuple", self._core.get(config))

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        params = self._core.list_params(config, filter, before)
        if params is None or (limit is not None and limit <= 0):
            return
        remaining = limit
        while True:
            page = LIST_PAGE if remaining is None else min(LIST_PAGE, remaining)
            found = self._run("list", self._core.list_page(params, page))
            yield from found
            if remaining is not None:
                remaining -= len(found)
                if remaining <= 0:
                    return
            if len(found) < page:
                return

    def get_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        """The contract's parent-chain walk, in one statement (a recursive CTE)."""
        return self._run("get_delta_channel_history", self._core.delta_history(config, channels))

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        fenced: bool = False,
    ) -> RunnableConfig:
        """Store ``checkpoint`` as the child of ``config``'s checkpoint.

        With ``fenced=True`` the put succeeds only if ``config``'s
        ``checkpoint_id`` is still the latest checkpoint of the namespace (no
        ``checkpoint_id``: only if the namespace has no checkpoint yet). The check
        and the insert run in one transaction under a per-thread lock, so of
        several fenced writers holding the same head exactly one wins; the
        others get :class:`~graphruntime.errors.CheckpointConflict` and nothing
        is written. Re-putting the checkpoint that already won (a retry after a
        lost reply) succeeds again. Plain puts are not checked, as in LangGraph
        (forking an old checkpoint must work), and do not take the lock.
        """
        fenced = fenced or self._fence_all
        if self._batch is not None:
            return self._batch.put(config, checkpoint, metadata, new_versions, fenced)
        op = self._core.put(config, checkpoint, metadata, new_versions, fenced=fenced)
        return self._run("put", op)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's writes. ``get_tuple`` returns them in insertion order;
        ``task_path`` orders a step's writes in DeltaChannel history."""
        if self._batch is not None:  # kept for the block's one statement
            self._batch.put_writes(config, writes, task_id, task_path)
            return
        op = self._core.put_writes(config, writes, task_id, task_path)
        self._run("put_writes", op)

    def delete_thread(self, thread_id: str) -> None:
        self._run("delete_thread", self._core.delete(str(thread_id)))

    def prune(
        self,
        thread_ids: str | Sequence[str],
        *,
        keep_last: int = 1,
        strategy: Literal["keep_latest", "delete"] = "keep_latest",
    ) -> PruneResult:
        """Keep the ``keep_last`` newest checkpoints of each namespace of the thread(s).

        Their pending writes and the blobs they reference stay; older
        checkpoints, their writes and blobs only they referenced go. A subgraph
        call's namespace goes entirely once the root checkpoint it ran under is
        deleted. A kept checkpoint whose parent is deleted gets no parent, so
        history ends there. One statement per thread, so a thread is never seen
        half pruned. Runs appending meanwhile are safe; forking from a
        checkpoint being deleted is not (its values may be gone). A thread that
        uses a DeltaChannel is refused (CheckpointError) and left whole, as in
        LangGraph: its state is rebuilt from the writes of older checkpoints.

        LangGraph's call shape works too: ``prune(["t1", "t2"])`` keeps the
        latest checkpoint of each, ``strategy="delete"`` deletes the threads.
        Returns how many rows were deleted, summed over the threads.
        """
        return self._run("prune", self._core.prune(thread_ids, keep_last, strategy))

    @contextmanager
    def batched(self) -> Iterator[PostgresSaver]:
        """A view of this saver whose puts and writes of any number of threads are kept,
        encoded, and sent as one statement into the caller's pipeline when the block ends,
        with one sync.

        Needs ``pipe=``. Wrap it in the connection's transaction to store all or none::

            with conn.pipeline() as pipe:
                saver = PostgresSaver(conn, pipe)
                with conn.transaction(), saver.batched() as batch:
                    for thread in threads:
                        batch.put_writes(...)
                        batch.put(...)

        At the end every put's verdict is read: a refused fenced put raises
        :class:`~graphruntime.errors.CheckpointConflict` (the transaction then stores
        none of the block). A read inside the block sends what is kept first, then waits
        for its own result.
        """
        if self.pipe is None:
            raise CheckpointError(
                "PostgresSaver.batched() sends statements into the caller's pipeline: "
                "make the saver with PostgresSaver(conn, pipe=pipe)"
            )
        view = copy.copy(self)
        batch = view._batch = PipeBatch(view)
        try:
            yield view
            batch.send()
            with self._errors("batched"):
                self.pipe.sync()
            view._batch = None
            batch.finish()
        finally:
            view._batch = None
            batch.close()

    @contextmanager
    def pipelined(self, *, durable: bool = True) -> Iterator[PostgresSaver]:
        """This saver on one connection of its pool (or its connection) for the block,
        whose puts and writes, of any number of threads, are kept, encoded, and stored
        when it ends with one statement: one round trip, atomic on its own.

        ``durable=False``: the statement commits without waiting for the WAL flush
        (visible at once; durable with the next commit that waits, the WAL being
        sequential): for a caller that makes it durable with a commit of its own before
        anything outside the database depends on it, and redoes the work otherwise.

        A refused fenced put writes nothing and does not stop the others: after the
        block, the view's :attr:`refused` has its conflict, by thread (a later put of that
        thread, whose parent it was, is refused too). A statement that fails (or an
        error in the block) stores none of the block and raises. A read inside the block
        opens a transaction, stores what is kept so far and reads in it (it sees the
        block's writes); the block's end then commits it.
        """
        if self.pipe is not None:
            raise CheckpointError(
                "PostgresSaver.pipelined() opens a pipeline of its own: a saver made with "
                "pipe= sends into the caller's, use batched()"
            )
        with self._errors("pipelined"), self._source.connection() as conn, ExitStack() as tx:
            view = copy.copy(self)
            view.conn, view._source, view.refused = conn, ConnectionSource(conn), {}
            batch = view._batch = PipeBatch(
                view,
                relaxed=not durable,
                begin=lambda: tx.enter_context(conn.transaction()),
                operation="pipelined",
            )
            try:
                yield view
                batch.send()
                tx.close()  # commits the transaction a read in the block opened
                view._batch = None
                batch.finish(view.refused)
            finally:
                view._batch = None
                batch.close()

    # -- async twins: the sync methods on a worker thread (AsyncPostgresSaver is the
    # saver for async code: its calls run concurrently on one pool) ----------------

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await _to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Any:
        def fetch() -> builtins.list[CheckpointTuple]:
            return builtins.list(self.list(config, filter=filter, before=before, limit=limit))

        for item in await _to_thread(fetch):
            yield item

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, DeltaChannelHistory]:
        return await _to_thread(
            lambda: self.get_delta_channel_history(config=config, channels=channels)
        )

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        fenced: bool = False,
    ) -> RunnableConfig:
        return await _to_thread(
            lambda: self.put(config, checkpoint, metadata, new_versions, fenced=fenced)
        )

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await _to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await _to_thread(self.delete_thread, thread_id)

    async def aprune(
        self,
        thread_ids: str | Sequence[str],
        *,
        keep_last: int = 1,
        strategy: Literal["keep_latest", "delete"] = "keep_latest",
    ) -> PruneResult:
        """Async :meth:`prune`."""
        return await _to_thread(
            lambda: self.prune(thread_ids, keep_last=keep_last, strategy=strategy)
        )

    # -- I/O -------------------------------------------------------------------

    def _run(self, operation: str, op: Op[T]) -> T:
        """Perform ``op`` on one borrowed connection; in pipe mode, sync the caller's
        pipeline after it (unless a :meth:`batched` block defers that)."""
        if self._batch is not None:
            self._batch.before_read()  # a read sees the block's writes
        with self._errors(operation), self._source.connection() as conn:
            result = run(conn, op)
            if self.pipe is not None and self._batch is None:
                self.pipe.sync()
            return result

    @contextmanager
    def _errors(self, operation: str) -> Iterator[None]:
        try:
            yield
        except psycopg.Error as exc:
            raise store_error(exc, operation) from exc

    @contextmanager
    def _cursor(self) -> Iterator[Cursor[DictRow]]:
        """A ``dict_row`` cursor on the saver's connection (LangGraph's helper of the same
        name, for code that runs its own SQL next to the saver's)."""
        with self._source.cursor() as cur:
            yield cur


async def _to_thread(func: Callable[..., T], *args: Any) -> T:
    return await asyncio.to_thread(func, *args)
