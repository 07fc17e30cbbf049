"""ShallowPostgresSaver and AsyncShallowPostgresSaver: LangGraph's deprecated savers that
keep only the latest checkpoint of each namespace (no history, no time travel)."""

from __future__ import annotations

import warnings
from typing import Any

from checkpoint_pg._async_saver import AsyncPostgresSaver
from checkpoint_pg.saver import PostgresSaver
from graphruntime.checkpoint import ChannelVersions, Checkpoint, CheckpointMetadata
from graphruntime.config import RunnableConfig
from graphruntime.errors import InvalidArgumentTypeError

__all__ = ("AsyncShallowPostgresSaver", "ShallowPostgresSaver")

_DEPRECATED = (
    "{name} is deprecated, as in LangGraph: use {base} and invoke the graph with "
    "durability='exit', or prune(keep_last=1) the threads"
)


class ShallowPostgresSaver(PostgresSaver):
    """A :class:`PostgresSaver` whose every put leaves the namespace only that checkpoint,
    with its writes and the blobs it references (deprecated, as in LangGraph)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(
            _DEPRECATED.format(name="ShallowPostgresSaver", base="PostgresSaver"),
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__(*args, **kwargs)

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        fenced: bool = False,
    ) -> RunnableConfig:
        if fenced or self._fence_all or self._batch is not None:
            raise InvalidArgumentTypeError("ShallowPostgresSaver puts are never fenced nor batched")
        op = self._core.shallow_put(config, checkpoint, metadata, new_versions)
        return self._run("put", op)


class AsyncShallowPostgresSaver(AsyncPostgresSaver):
    """An :class:`AsyncPostgresSaver` whose every put leaves the namespace only that
    checkpoint (deprecated, as in LangGraph)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        warnings.warn(
            _DEPRECATED.format(name="AsyncShallowPostgresSaver", base="AsyncPostgresSaver"),
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__(*args, **kwargs)

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        *,
        fenced: bool = False,
    ) -> RunnableConfig:
        if fenced:
            raise InvalidArgumentTypeError("AsyncShallowPostgresSaver puts are never fenced")
        op = self._core.shallow_put(config, checkpoint, metadata, new_versions)
        return await self._run("put", op)
