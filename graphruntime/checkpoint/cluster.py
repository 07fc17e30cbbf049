"""An extension of the saver contract for executors that run one step in many processes.

:class:`~graphruntime.checkpoint.base.BaseCheckpointSaver` is LangGraph's contract
and all that a single process needs. A distributed executor (the workers) runs a
step's tasks in several processes and continues the run from whichever finishes
last, so it also needs to:

- refuse a checkpoint put from a writer whose view of the thread is stale
  (:meth:`ClusterSaver.fenced`), so two processes can never fork a thread;
- read a checkpoint with only some tasks' pending writes
  (:meth:`ClusterSaver.get_task_tuple`), so each of N jobs does not read N writes;
- read several threads' checkpoints at once (:meth:`ClusterSaver.get_tuples`).

When its writes are stored is the executor's affair: the loop hands them over as
requests (``graphruntime.pregel.driver.SaverIO``), and the executor may hold them and
store many threads' together where its saver can (``checkpoint_pg.PostgresSaver``'s
``pipelined()``).

``checkpoint_pg.PostgresSaver`` implements it for production and
:class:`~graphruntime.checkpoint.memory.InMemorySaver` for tests;
:mod:`graphruntime.testing.conformance` checks both.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Collection, Sequence
from typing import Self

from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import NULL_TASK_ID
from graphruntime.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

__all__ = ("ClusterSaver",)


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
