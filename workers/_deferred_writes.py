"""A saver view that holds pending writes until they can go in one round trip: all of
a task job's at its end, or a coordinator step's with the checkpoint that follows; and,
holding puts too, all of a coordinator round's runs' checkpoints at the round's end."""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from graphruntime.checkpoint import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    ClusterSaver,
    HeldSave,
    WriteBatch,
)
from graphruntime.config import RunnableConfig
from workers._held_group import HeldGroup

_UNCHANGEABLE = frozenset({str, int, float, bool, bytes, type(None)})
"""Types of write values that cannot change after they were written (exact types)."""


class DeferredWrites(ClusterSaver):
    """Everything goes to ``inner`` at once except ``put_writes``, kept until :meth:`flush`
    or the next :meth:`put` (which sends them ahead of the checkpoint); with a ``group``,
    puts and their writes are held in it instead, encoded as they are made.

    A job of fifty no-op tasks would otherwise pay fifty round trips for their
    writes. Nothing is lost by waiting: the tasks are marked done (the run ended, the
    step dispatched) only after the flush, so a job that dies first is run again (at
    least once, as always). The holder must flush before anything outside depends
    on the writes.
    """

    def __init__(
        self, inner: ClusterSaver, *, group: HeldGroup | None = None, key: str = ""
    ) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner
        self.group = group
        """Where puts are held too (as ``key``'s, encoded as they are made), to be stored
        with other runs' (:class:`HeldGroup`); None: a put goes at once. Reads store them."""
        self.key = key
        self._batch: list[tuple[RunnableConfig, Sequence[tuple[str, Any]], str, str]] = []
        self._holding = False

    def flush(self) -> None:
        """Store everything held now (other runs' held in the group too); a refused put
        raises (CheckpointConflict)."""
        self.hand_over()
        if self.group is not None and self._holding:
            self._holding = False
            self.group.store()
            if (error := self.group.error_of(self.key)) is not None:
                raise error

    def hand_over(self) -> None:
        """The writes still kept go to the group with the held puts (or, with no group,
        are stored now); the group's :meth:`HeldGroup.store` stores them."""
        batch, self._batch = self._batch, []
        if not batch:
            return
        if self.group is None:
            self.inner.put_writes_many(batch)
            return
        self._hold(self.inner.hold_put(batch, None))

    def storing_within(self) -> AbstractContextManager[None]:
        """Around a node's run: the group stores what is held if the node is slow."""
        return self.group.storing_within() if self.group is not None else nullcontext()

    def _hold(self, save: HeldSave) -> None:
        assert self.group is not None
        if not save.stored:
            self.group.hold(self.key, save)
            self._holding = True

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        # a copy: a later task of the job must not change what this one wrote (values that
        # cannot change need none); a task's error is kept as it is (an exception need
        # not be copyable, and nothing changes it)
        if all(type(value) in _UNCHANGEABLE for _, value in writes):
            self._batch.append((config, list(writes), task_id, task_path))
            return
        errors = {id(value): value for _, value in writes if isinstance(value, BaseException)}
        self._batch.append((config, copy.deepcopy(list(writes), errors), task_id, task_path))

    def put_writes_many(self, batch: WriteBatch) -> None:
        for config, writes, task_id, task_path in batch:
            self.put_writes(config, writes, task_id, task_path)

    def fenced(self) -> DeferredWrites:
        return DeferredWrites(self.inner.fenced(), group=self.group, key=self.key)

    def lazy(self) -> DeferredWrites:
        return DeferredWrites(self.inner.lazy(), group=self.group, key=self.key)

    def _settle(self) -> None:
        """Before a read: what is held must be stored (a subgraph reads its own puts)."""
        if self._holding:
            self.flush()

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        self._settle()
        return self.inner.get_tuple(config)

    def get_tuples(self, configs: Sequence[RunnableConfig]) -> list[CheckpointTuple | None]:
        self._settle()
        return self.inner.get_tuples(configs)

    def get_task_tuple(
        self, config: RunnableConfig, task_ids: Collection[str]
    ) -> CheckpointTuple | None:
        self._settle()
        return self.inner.get_task_tuple(config, task_ids)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        self._settle()
        return self.inner.list(config, filter=filter, before=before, limit=limit)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        # the writes held so far go first, in the same round trip where the saver can
        batch, self._batch = self._batch, []
        if self.group is not None:
            held = self.inner.hold_put(batch, config, checkpoint, metadata, new_versions)
            self._hold(held)
            assert held.config is not None
            return held.config
        if batch:
            return self.inner.put_with_writes(batch, config, checkpoint, metadata, new_versions)
        return self.inner.put(config, checkpoint, metadata, new_versions)

    def delete_thread(self, thread_id: str) -> None:
        self._settle()
        self.inner.delete_thread(thread_id)

    def get_next_version(self, current: str | int | float | None, channel: None = None) -> str:
        return self.inner.get_next_version(current, channel)
