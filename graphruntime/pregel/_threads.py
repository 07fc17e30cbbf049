"""The thread API of a ``Pregel`` graph: its state, history and edits, and its cache.

:class:`PregelThreads` is a base class of :class:`~graphruntime.pregel.main.Pregel`:
thin methods over :mod:`graphruntime.pregel._state` (what a thread's checkpoints say,
and how an edit saves a new one) with the saver a run of the graph would use.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import aclosing
from typing import Any

from graphruntime._internal._config import RunnableConfig, ensure_config
from graphruntime._internal._twin import aiterate, iterate
from graphruntime.cache import BaseCache, CachePolicy
from graphruntime.channels import BaseChannel
from graphruntime.checkpoint.base import BaseCheckpointSaver
from graphruntime.errors import InvalidArgumentError, UsageError
from graphruntime.pregel._cache import namespace
from graphruntime.pregel._node import NodeSpec
from graphruntime.pregel._run import saver_of
from graphruntime.pregel._schema import PregelSchemas
from graphruntime.pregel._state import (
    bulk_update_state,
    get_state,
    state_history,
    update_state,
)
from graphruntime.types import All, RetryPolicy, StateSnapshot, StateUpdate, StreamMode


class PregelThreads(PregelSchemas):
    """The state API and the cache of a graph (a base class of ``Pregel``)."""

    # what the state API reads of the graph (see GraphSpec and RunGraph); Pregel sets them
    nodes: dict[str, NodeSpec]
    channel_specs: dict[str, BaseChannel]
    managed: dict[str, Any]
    trigger_to_nodes: Mapping[str, Sequence[str]]
    stream_channels: str | Sequence[str]
    stream_eager: bool
    stream_mode: StreamMode
    retry_policy: tuple[RetryPolicy, ...]
    step_timeout: float | None
    checkpointer: BaseCheckpointSaver | bool | None
    store: Any
    cache: BaseCache[Any] | None
    cache_policy: CachePolicy[Any] | None
    interrupt_before_nodes: All | Sequence[str]
    interrupt_after_nodes: All | Sequence[str]
    config: RunnableConfig | None = None
    """Config every run of this graph starts from (see ``Pregel.with_config``)."""

    def _require_saver(self, config: RunnableConfig) -> BaseCheckpointSaver:
        saver = saver_of(self, ensure_config(config))
        if saver is None and self.checkpointer is True:
            # True means "the parent's saver": a root graph has none to lend
            raise UsageError("checkpointer=True cannot be used for root graphs.")
        if saver is None:
            raise InvalidArgumentError("No checkpointer set")
        return saver

    # --- cache --------------------------------------------------------------------------

    def _cache_namespaces(self, nodes: Sequence[str] | None) -> list[tuple[str, ...]]:
        if self.cache is None:
            raise InvalidArgumentError("No cache is set for this graph. Cannot clear cache.")
        names = nodes or list(self.nodes)
        return [namespace(self.nodes[name]) for name in names if name in self.nodes]

    def clear_cache(self, nodes: Sequence[str] | None = None) -> None:
        """Forget the cached results of ``nodes`` (default: every node)."""
        namespaces = self._cache_namespaces(nodes)
        assert self.cache is not None
        self.cache.clear(namespaces)

    async def aclear_cache(self, nodes: Sequence[str] | None = None) -> None:
        """Async twin of :meth:`clear_cache`."""
        namespaces = self._cache_namespaces(nodes)
        assert self.cache is not None
        await self.cache.aclear(namespaces)

    # --- state API (see _state.py) --------------------------------------------------------

    def get_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        """The thread's current state: values, next nodes, pending tasks and interrupts."""
        return get_state(self, self._require_saver(config), config, subgraphs=subgraphs)

    def get_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[StateSnapshot]:
        """Every checkpoint of the thread, newest first."""
        saver = self._require_saver(config)
        return iterate(
            state_history(
                self, saver, config, filter=filter, before=before, limit=limit, is_async=False
            )
        )

    def update_state(
        self,
        config: RunnableConfig,
        values: Any,
        as_node: str | None = None,
        task_id: str | None = None,
    ) -> RunnableConfig:
        """Apply ``values`` as if ``as_node`` had returned them; saves a new checkpoint."""
        return update_state(self, self._require_saver(config), config, values, as_node, task_id)

    def bulk_update_state(
        self, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]
    ) -> RunnableConfig:
        """Apply supersteps of updates in order, each superstep's updates together."""
        return bulk_update_state(self, self._require_saver(config), config, supersteps)

    async def abulk_update_state(
        self, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.bulk_update_state, config, supersteps)

    async def aget_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        return await asyncio.to_thread(self.get_state, config, subgraphs=subgraphs)

    async def aupdate_state(
        self,
        config: RunnableConfig,
        values: Any,
        as_node: str | None = None,
        task_id: str | None = None,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.update_state, config, values, as_node, task_id)

    async def aget_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[StateSnapshot]:
        """Async twin of :meth:`get_state_history`: each snapshot as the saver's ``alist``
        yields its checkpoint."""
        saver = self._require_saver(config)
        history = state_history(
            self, saver, config, filter=filter, before=before, limit=limit, is_async=True
        )
        async with aclosing(aiterate(history)) as snapshots:
            async for snapshot in snapshots:
                yield snapshot
