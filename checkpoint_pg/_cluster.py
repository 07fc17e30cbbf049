"""What the workers' cluster needs of PostgresSaver beyond LangGraph's contract
(graphruntime.checkpoint.cluster.ClusterSaver): fenced and lazy views, partial and
batched reads, and puts held to be stored with other threads' in one round trip.

A mixin of the sync :class:`~checkpoint_pg.PostgresSaver` only. Its statements are
the saver core's; it performs them through the saver's ``_run``.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Self, TypeVar

from checkpoint_pg import _queries as q
from checkpoint_pg._codec import task_key
from checkpoint_pg._held import HeldPut, verdict
from checkpoint_pg._requests import Batch, Fetch, Many, Op, Stmt, single
from checkpoint_pg._saver_core import SaverCore, as_uuid, raise_unless_retry
from checkpoint_pg._statements import Statement, plain_put, returns_row
from checkpoint_pg.errors import CheckpointStoreError, CheckpointStoreUnavailable
from graphruntime.checkpoint import (
    NULL_TASK_ID,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    HeldSave,
    WriteBatch,
    get_checkpoint_id,
)
from graphruntime.checkpoint.base import checkpoint_config, config_key
from graphruntime.config import RunnableConfig

if TYPE_CHECKING:
    from checkpoint_pg._pipe_batch import PipeBatch

__all__ = ("ClusterMethods",)

T = TypeVar("T")


class ClusterMethods:
    """The ClusterSaver extension, for a saver with ``_core``, ``_run`` and ``put``."""

    _core: SaverCore
    _batch: PipeBatch | None
    _fence_all: bool
    _durable_writes: bool
    _durable_puts: bool

    if TYPE_CHECKING:

        def _run(self, operation: str, op: Op[T]) -> T: ...

        def _errors(self, operation: str) -> AbstractContextManager[None]: ...

        def put(
            self,
            config: RunnableConfig,
            checkpoint: Checkpoint,
            metadata: CheckpointMetadata,
            new_versions: ChannelVersions,
            *,
            fenced: bool = False,
        ) -> RunnableConfig: ...

    def _init_cluster(self) -> None:
        self._fence_all = False
        self._durable_writes = True
        self._durable_puts = True
        self._batch = None
        # writes statements to send ahead of the next lazy fenced put, same round trip
        self._ahead: Sequence[Statement] = ()

    # -- views -----------------------------------------------------------------

    def fenced(self) -> Self:
        """This saver, with every :meth:`put` fenced (same connection, serializer and caches).

        For a driver that hands the saver to code calling plain ``put`` (the
        runtime's loop) but must never fork the thread: a put whose parent is
        no longer the head raises :class:`~graphruntime.errors.CheckpointConflict`.
        """
        view = copy.copy(self)
        view._fence_all = True
        return view

    def lazy_writes(self) -> Self:
        """This saver, with ``put_writes`` committing without waiting for the WAL flush.

        Postgres' WAL is sequential: the next commit that does wait (any checkpoint
        put, or the caller's own transaction on the same database) makes these writes
        durable too. For a driver that always follows writes with such a commit and
        re-runs the tasks otherwise, as the workers do: it saves a disk flush per step.
        A crash before that commit can lose the writes, never a checkpoint.
        """
        view = copy.copy(self)
        view._durable_writes = False
        return view

    def lazy(self) -> Self:
        """This saver, with every write (``put`` and ``put_writes``) committing without
        waiting for the WAL flush.

        The writes are visible at once and durable with the next commit that waits (the
        WAL is sequential). For a driver that ends each unit of work with such a commit
        before anything outside the database depends on it (the workers' coordinator:
        the run's end, a step's dispatch). A crash before it loses a suffix of the
        writes, consistently: the work is redone from the last durable checkpoint.
        """
        view = copy.copy(self)
        view._durable_writes = False
        view._durable_puts = False
        return view

    # -- reads -----------------------------------------------------------------

    def get_task_tuple(
        self, config: RunnableConfig, task_ids: Collection[str]
    ) -> CheckpointTuple | None:
        """The checkpoint with only these tasks' (and the null task's) writes.

        Task jobs read the same step checkpoint many times, so a checkpoint named
        by id (immutable once stored) is decoded once per saver and then shared:
        its values are the same objects for every caller, who must not mutate
        them (the runtime does not; a node mutating its input in place would
        leak into sibling tasks, as it does in-process). Only the writes are read
        again.
        """
        keys = [task_key(t)[0] for t in {*task_ids, NULL_TASK_ID}]
        checkpoint_id = get_checkpoint_id(config)
        if checkpoint_id is None or as_uuid(checkpoint_id) is None:
            return self._run("get_task_tuple", self._core.get(config, keys))
        thread_id, checkpoint_ns = config_key(config)
        cache_key = (thread_id, checkpoint_ns, checkpoint_id)
        cached = self._core.steps.get(cache_key)
        if cached is None:
            found = self._run("get_task_tuple", self._core.get(config, keys))
            if found is None:
                return None
            self._core.steps.put(cache_key, found._replace(pending_writes=[]))
            return found
        params = {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
            "task_keys": keys,
        }
        # unprepared: planned for these keys, never with a generic plan made while
        # the writes table was small (a seq scan per key once it is big)
        rows = self._run("get_task_tuple", single(Stmt(q.GET_TASK_WRITES, params, "all", False)))
        loads = self._core.serde.loads_typed
        writes = [(r["task_id"], r["channel"], loads((r["type"], r["value"]))) for r in rows]
        return cached._replace(pending_writes=writes)

    def get_tuples(self, configs: Sequence[RunnableConfig]) -> list[CheckpointTuple | None]:
        """:meth:`get_tuple` of each config, pipelined in one round trip."""
        out: list[CheckpointTuple | None] = [None] * len(configs)
        asked: list[tuple[int, str, str, dict[str, Any]]] = []
        for i, config in enumerate(configs):
            thread_id, checkpoint_ns = config_key(config)
            checkpoint_id = get_checkpoint_id(config)
            if checkpoint_id is not None and as_uuid(checkpoint_id) is None:
                continue  # not an id this saver could have stored
            params = {
                "thread_id": thread_id,
                "checkpoint_ns": checkpoint_ns,
                "checkpoint_id": checkpoint_id,
                "task_keys": None,
            }
            asked.append((i, thread_id, checkpoint_ns, params))
        if not asked:
            return out
        rows = self._run("get_tuples", single(Many(q.GET_CHECKPOINT, [a[3] for a in asked])))
        for (i, thread_id, checkpoint_ns, _), row in zip(asked, rows, strict=True):
            if row is not None:
                out[i] = self._core.load(thread_id, checkpoint_ns, row)
        return out

    # -- writes ----------------------------------------------------------------

    def put_writes_many(self, batch: WriteBatch) -> None:
        """Several tasks' writes in one transaction and one pipelined round trip.

        Insert-only rows of all tasks share multi-row statements; control writes
        (upserts) keep a statement each, as one statement cannot upsert a row twice.
        """
        statements = self._core.batch_statements(batch)
        if statements:
            self._run_writes("put_writes_many", statements)

    def put_with_writes(
        self,
        batch: WriteBatch,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """The writes and the checkpoint put in one pipelined round trip when this view is
        lazy and fenced (the coordinator's); otherwise one after the other."""
        statements = self._core.batch_statements(batch)
        if self._durable_puts or not self._fence_all:
            if statements:
                self._run_writes("put_writes_many", statements)
            return self.put(config, checkpoint, metadata, new_versions)
        op = self._core.put(
            config, checkpoint, metadata, new_versions, fenced=True, durable=False, ahead=statements
        )
        return self._run("put", op)

    def _run_writes(self, operation: str, statements: Sequence[Statement]) -> None:
        """Write statements in one pipelined transaction (not waiting for the WAL flush
        when this view's writes are not durable on their own)."""
        request = Batch([Stmt(s, v) for s, v in statements], lazy=not self._durable_writes)
        self._run(operation, single(request))

    # -- held puts ---------------------------------------------------------------

    def hold_put(
        self,
        batch: WriteBatch,
        config: RunnableConfig | None,
        checkpoint: Checkpoint | None = None,
        metadata: CheckpointMetadata | None = None,
        new_versions: ChannelVersions | None = None,
    ) -> HeldSave:
        """The writes and the put (none without ``config``), encoded now, for
        :meth:`save_held` to send with other threads' in one round trip."""
        writes = self._core.batch_statements(batch)
        if config is None:
            return HeldPut(None, writes)
        if checkpoint is None or metadata is None or new_versions is None:
            raise TypeError("hold_put: a put takes checkpoint, metadata and new_versions")
        fenced = self._fence_all
        base = self._core.put_base(config, checkpoint, metadata, fenced)
        params, keys = self._core.encode_put(base, checkpoint, new_versions, ())
        for key in keys:
            # the later held puts of the thread may refer to the blobs this one sends:
            # the group stores them first (a refused group forgets them again)
            self._core.known.add(key)
        query = q.PUT_CHECKPOINT_FENCED if fenced else plain_put(params)
        return HeldPut(
            checkpoint_config(base["thread_id"], base["checkpoint_ns"], checkpoint["id"]),
            writes,
            query,
            params,
            expected=get_checkpoint_id(config),
            keys=keys,
        )

    def save_held(self, runs: Sequence[Sequence[HeldSave]]) -> list[Exception | None]:
        """The held saves of several runs in one transaction and one pipelined round trip
        (committed without waiting for the WAL flush if this view is :meth:`lazy`).

        A statement that fails takes the transaction with it: then each run's saves
        are stored in a transaction of their own, so that only that run fails (its
        entry is the error). Only an outage raises.
        """
        held = [[_held_put(h) for h in run if not h.stored] for run in runs]
        if not any(held):
            return [None] * len(held)
        try:
            return self._save_held(held)
        except CheckpointStoreUnavailable:
            self._forget(held)
            raise
        except CheckpointStoreError as exc:
            if len(held) == 1:
                self._forget(held)
                return [exc]
        out: list[Exception | None] = []
        for run in held:
            try:
                out.extend(self._save_held([run]))
            except CheckpointStoreUnavailable:
                self._forget(held)
                raise
            except CheckpointStoreError as exc:
                self._forget([run])
                out.append(exc)
        return out

    def _save_held(self, runs: Sequence[Sequence[HeldPut]]) -> list[Exception | None]:
        statements: list[Stmt] = []
        puts: list[list[tuple[HeldPut, int | None]]] = []  # each put's result index
        for run in runs:
            saves: list[tuple[HeldPut, int | None]] = []
            for held in run:
                statements.extend(Stmt(query, params) for query, params in held.writes)
                at: int | None = None
                if held.query is not None:
                    fetch: Fetch = "one" if returns_row(held.query) else "none"
                    at = len(statements)
                    statements.append(Stmt(held.query, held.params, fetch))
                saves.append((held, at))
            puts.append(saves)
        request = Batch(statements, lazy=not self._durable_puts)
        results = self._run("save_held", single(request))
        out: list[Exception | None] = []
        for saves in puts:
            rows = [(h, None if at is None else results[at]) for h, at in saves]
            error = verdict(rows, raise_unless_retry)
            if error is not None:
                self._forget([[h for h, _ in rows]])
            out.append(error)
        return out

    def drop_held(self, saves: Sequence[HeldSave]) -> None:
        self._forget([[_held_put(h) for h in saves if not h.stored]])

    def _forget(self, runs: Sequence[Sequence[HeldPut]]) -> None:
        """Drop the blobs held puts vouched for: they may not be stored."""
        for run in runs:
            for held in run:
                for key in held.keys:
                    self._core.known.discard(key)


def _held_put(held: HeldSave) -> HeldPut:
    if not isinstance(held, HeldPut):
        raise TypeError(
            f"PostgresSaver.save_held takes the saves of its own hold_put, got {held!r}"
        )
    return held
