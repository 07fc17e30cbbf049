"""An extension of the saver contract for executors that run one step in many processes.

:class:`~graphruntime.checkpoint.base.BaseCheckpointSaver` is LangGraph's contract
and all that a single process needs. A distributed executor (the workers) runs a
step's tasks in several processes and continues the run from whichever finishes
last, so it also needs to:

- refuse a checkpoint put from a writer whose view of the thread is stale
  (:meth:`ClusterSaver.fenced`), so two processes can never fork a thread;
- read a checkpoint with only some tasks' pending writes
  (:meth:`ClusterSaver.get_task_tuple`), so each of N jobs does not read N writes;
- save several tasks' writes at once (:meth:`ClusterSaver.put_writes_many`);
- optionally commit pending writes, or all writes, without waiting for durability
  (:meth:`ClusterSaver.lazy_writes`, :meth:`ClusterSaver.lazy`) when the caller makes
  them durable later.

``checkpoint_pg.PostgresSaver`` implements it for production and
:class:`~graphruntime.checkpoint.memory.InMemorySaver` for tests;
:mod:`graphruntime.testing.conformance` checks both.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Collection, Sequence
from typing import Any, Self

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import NULL_TASK_ID
from graphruntime.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

__all__ = ("ClusterSaver", "WriteBatch")

WriteBatch = Sequence[tuple[RunnableConfig, Sequence[tuple[str, Any]], str, str]]
"""``(config, writes, task_id, task_path)`` for each task, as ``put_writes`` takes them."""


class ClusterSaver(BaseCheckpointSaver):
    """A saver several processes can share to run one thread's steps."""

    @abstractmethod
    def fenced(self) -> Self:
        """This saver, with every ``put`` fenced.

        A fenced put stores the checkpoint only if its parent (the config's
        ``checkpoint_id``; none for a new thread) is still the latest checkpoint of
        its namespace, atomically; otherwise it raises
        :class:`~graphruntime.errors.CheckpointConflict` and writes nothing.
        Re-putting the checkpoint that already won (a retry) succeeds again.
        """

    def lazy_writes(self) -> Self:
        """This saver, with ``put_writes`` allowed to commit without waiting for durability.

        For a caller that always follows the writes with a durable commit of its
        own (and re-runs the tasks otherwise). The default is this saver itself.
        """
        return self

    def lazy(self) -> Self:
        """This saver, with every write (``put`` too) allowed to commit without waiting
        for durability.

        For a caller that ends each unit of work with a durable commit of its own
        before anything outside the store depends on it, and redoes the work from the
        last durable checkpoint otherwise. The default is this saver itself.
        """
        return self

    def get_tuples(self, configs: Sequence[RunnableConfig]) -> list[CheckpointTuple | None]:
        """:meth:`get_tuple` of each config, in order: one driver's loads of several
        threads. Savers that can read them in one round trip should."""
        return [self.get_tuple(config) for config in configs]

    def get_task_tuple(
        self, config: RunnableConfig, task_ids: Collection[str]
    ) -> CheckpointTuple | None:
        """:meth:`get_tuple` with only the pending writes of ``task_ids`` and the null task.

        The null task's writes (a Command's update, resume values) are always kept.
        The checkpoint's values may be shared with the saver's own cache: the caller
        must not mutate them. This default filters after a full load; savers with a
        query language should filter in the store.
        """
        found = self.get_tuple(config)
        if found is None:
            return None
        keep = {*task_ids, NULL_TASK_ID}
        return found._replace(
            pending_writes=[w for w in found.pending_writes or () if w[0] in keep]
        )

    def put_with_writes(
        self,
        batch: WriteBatch,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """:meth:`put_writes_many` of ``batch`` (writes of ``config``'s checkpoint), then
        :meth:`put`: a step's last writes and the checkpoint that follows it. Savers that
        can send both in one round trip should; the writes are stored even if the put
        is refused."""
        self.put_writes_many(batch)
        return self.put(config, checkpoint, metadata, new_versions)

    def put_writes_many(self, batch: WriteBatch) -> None:
        """:meth:`put_writes` for several tasks; savers that can do it in one round trip should."""
        for config, writes, task_id, task_path in batch:
            self.put_writes(config, writes, task_id, task_path)
