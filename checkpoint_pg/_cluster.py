"""What the workers' cluster needs of PostgresSaver beyond LangGraph's contract
(graphruntime.checkpoint.cluster.ClusterSaver): a fenced view, partial and batched
reads. (Storing many threads' writes in one round trip is ``PostgresSaver.pipelined``.)

A mixin of the sync :class:`~checkpoint_pg.PostgresSaver` only. Its statements are
the saver core's; it performs them through the saver's ``_run``.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, Self, TypeVar

from checkpoint_pg import _queries as q
from checkpoint_pg._codec import task_key
from checkpoint_pg._connection import ConnectionSource
from checkpoint_pg._requests import Many, Op, Stmt, single
from checkpoint_pg._saver_core import SaverCore, as_uuid
from graphruntime.checkpoint import (
    NULL_TASK_ID,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
)
from graphruntime.checkpoint.base import config_key
from graphruntime.config import RunnableConfig

__all__ = ("ClusterMethods", "SaverShell")

T = TypeVar("T")


class SaverShell(Protocol):
    """What the sync saver's helpers (this mixin, ``_pipe_batch``) use of
    :class:`~checkpoint_pg.PostgresSaver`: its core, its connections, its I/O, its put."""

    _core: SaverCore
    _source: ConnectionSource

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


if TYPE_CHECKING:
    _Shell = SaverShell
else:
    _Shell = object


class ClusterMethods(_Shell):
    """The ClusterSaver extension, for a saver with ``_core``, ``_run`` and ``put``."""

    _fence_all: bool

    def _init_cluster(self) -> None:
        self._fence_all = False

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
