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
  them durable later;
- optionally hold puts and store several threads' in one round trip
  (:meth:`ClusterSaver.hold_put`, :meth:`ClusterSaver.save_held`), so a driver that
  advances many threads in a row pays one round trip for all of their checkpoints.

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

__all__ = ("ClusterSaver", "HeldSave", "WriteBatch")

WriteBatch = Sequence[tuple[RunnableConfig, Sequence[tuple[str, Any]], str, str]]
"""``(config, writes, task_id, task_path)`` for each task, as ``put_writes`` takes them."""


class HeldSave:
    """A put (with the writes that go ahead of it) or writes alone, prepared by
    :meth:`ClusterSaver.hold_put` and stored later by :meth:`ClusterSaver.save_held`.

    ``config``: what ``put`` returns for the checkpoint (None: writes alone).
    ``stored``: the saver stored it already (one that does not hold puts).
    """

    __slots__ = ("config", "stored")

    def __init__(self, config: RunnableConfig | None, *, stored: bool) -> None:
        self.config = config
        self.stored = stored


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

    def hold_put(
        self,
        batch: WriteBatch,
        config: RunnableConfig | None,
        checkpoint: Checkpoint | None = None,
        metadata: CheckpointMetadata | None = None,
        new_versions: ChannelVersions | None = None,
    ) -> HeldSave:
        """:meth:`put_with_writes` (or, with no ``config``, :meth:`put_writes_many`),
        prepared now and stored by :meth:`save_held`.

        What is stored is what the values are now: a later change to them is not. This
        default stores them now (a refused put raises here); savers that can send many
        threads' puts in one round trip should hold them instead.
        """
        if config is None:
            self.put_writes_many(batch)
            return HeldSave(None, stored=True)
        if checkpoint is None or metadata is None or new_versions is None:
            raise TypeError("hold_put: a put takes checkpoint, metadata and new_versions")
        saved = self.put_with_writes(batch, config, checkpoint, metadata, new_versions)
        return HeldSave(saved, stored=True)

    def save_held(self, runs: Sequence[Sequence[HeldSave]]) -> list[Exception | None]:
        """Store held saves: each inner sequence in order, all in one round trip where the
        saver can; durable or not as this view's puts are (:meth:`lazy`).

        One entry per sequence: None if all of it was stored, else the error that
        stopped it (:class:`~graphruntime.errors.CheckpointConflict` for a refused fenced
        put, whose later puts are not stored either; their writes may be). An outage
        raises, and then none of it may have been stored.
        """
        for run in runs:
            for held in run:
                if not held.stored:
                    raise TypeError(
                        f"{type(self).__name__} cannot store a save it did not hold: "
                        "save_held takes the saves of the saver's own hold_put"
                    )
        return [None] * len(runs)

    def drop_held(self, saves: Sequence[HeldSave]) -> None:
        """Held saves that will never be stored (their run is redone): whatever the saver
        assumed of them (e.g. blobs it would have stored) is forgotten. Default: nothing."""
