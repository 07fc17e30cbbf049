"""A saver view that holds pending writes until they can go in one round trip: all of
a task job's at its end, or a coordinator step's with the checkpoint that follows."""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from graphruntime.checkpoint import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    ClusterSaver,
    WriteBatch,
)
from graphruntime.config import RunnableConfig


class DeferredWrites(ClusterSaver):
    """Everything goes to ``inner`` at once except ``put_writes``, kept until :meth:`flush`
    or the next :meth:`put` (which sends them ahead of the checkpoint).

    A job of fifty no-op tasks would otherwise pay fifty round trips for their
    writes. Nothing is lost by waiting: the tasks are marked done (the run ended, the
    step dispatched) only after the flush, so a job that dies first is run again (at
    least once, as always). The holder must flush before anything outside depends
    on the writes.
    """

    def __init__(self, inner: ClusterSaver) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner
        self._batch: list[tuple[RunnableConfig, Sequence[tuple[str, Any]], str, str]] = []

    def flush(self) -> None:
        batch, self._batch = self._batch, []
        if batch:
            self.inner.put_writes_many(batch)

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        # a copy: a later task of the job must not change what this one wrote; a task's
        # error is kept as it is (an exception need not be copyable, and nothing changes it)
        errors = {id(value): value for _, value in writes if isinstance(value, BaseException)}
        self._batch.append((config, copy.deepcopy(list(writes), errors), task_id, task_path))

    def put_writes_many(self, batch: WriteBatch) -> None:
        for config, writes, task_id, task_path in batch:
            self.put_writes(config, writes, task_id, task_path)

    def fenced(self) -> DeferredWrites:
        return DeferredWrites(self.inner.fenced())

    def lazy(self) -> DeferredWrites:
        return DeferredWrites(self.inner.lazy())

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.inner.get_tuple(config)

    def get_tuples(self, configs: Sequence[RunnableConfig]) -> list[CheckpointTuple | None]:
        return self.inner.get_tuples(configs)

    def get_task_tuple(
        self, config: RunnableConfig, task_ids: Collection[str]
    ) -> CheckpointTuple | None:
        return self.inner.get_task_tuple(config, task_ids)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
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
        if batch:
            return self.inner.put_with_writes(batch, config, checkpoint, metadata, new_versions)
        return self.inner.put(config, checkpoint, metadata, new_versions)

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)

    def get_next_version(self, current: str | int | float | None, channel: None = None) -> str:
        return self.inner.get_next_version(current, channel)
