"""``Pregel``: a compiled graph — run it, stream it, inspect and edit its threads."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import copy
import dataclasses
import os
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Self

from graphruntime._internal._config import RunnableConfig, ensure_config, merge_configs
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_CHECKPOINTER,
    CONFIG_KEY_SCRATCHPAD,
    CONFIG_KEY_STREAM,
    CONFIG_KEY_TASK_ID,
    DEFAULT_RECURSION_LIMIT,
    INTERRUPT,
    NS_SEP,
)
from graphruntime.channels import BaseChannel
from graphruntime.checkpoint.base import BaseCheckpointSaver
from graphruntime.pregel._cache import namespace
from graphruntime.pregel._driver import AsyncioExecutor, ThreadExecutor, adrive, drive
from graphruntime.pregel._loop import PregelLoop, RunOptions
from graphruntime.pregel._node import NodeSpec
from graphruntime.pregel._state import get_state, get_state_history, update_state
from graphruntime.pregel._stream import StreamChunk, StreamSink
from graphruntime.runtime import RunControl
from graphruntime.types import All, RetryPolicy, StateSnapshot, StreamMode

if TYPE_CHECKING:
    from graphruntime.cache import BaseCache, CachePolicy
    from graphruntime.managed.base import ManagedValueSpec
    from graphruntime.store.base import BaseStore

Checkpointer = BaseCheckpointSaver | bool | None


class Pregel:
    """An executable graph: nodes, channels and the superstep loop that runs them."""

    def __init__(
        self,
        *,
        nodes: Mapping[str, NodeSpec],
        channel_specs: Mapping[str, BaseChannel],
        output_channels: Sequence[str] | str,
        stream_channels: Sequence[str] | str,
        checkpointer: Checkpointer = None,
        interrupt_before: All | Sequence[str] = (),
        interrupt_after: All | Sequence[str] = (),
        name: str = "LangGraph",
        stream_mode: StreamMode = "updates",
        retry_policy: RetryPolicy | Sequence[RetryPolicy] = (),
        managed: Mapping[str, ManagedValueSpec] | None = None,
        store: BaseStore | None = None,
        cache: BaseCache[Any] | None = None,
        cache_policy: CachePolicy[Any] | None = None,
        context_schema: Any = None,
        step_timeout: float | None = None,
        debug: bool = False,
        config: RunnableConfig | None = None,
    ) -> None:
        self.nodes = dict(nodes)
        self.channel_specs = dict(channel_specs)
        # a str: the graph's state is that one channel (``__root__``), read as its value
        self.output_channels: Sequence[str] | str = (
            output_channels if isinstance(output_channels, str) else list(output_channels)
        )
        self.stream_channels: Sequence[str] | str = (
            stream_channels if isinstance(stream_channels, str) else list(stream_channels)
        )
        self.checkpointer = checkpointer
        self.interrupt_before_nodes = interrupt_before
        self.interrupt_after_nodes = interrupt_after
        self.name = name
        self.stream_mode = stream_mode
        self.retry_policy: tuple[RetryPolicy, ...] = (
            (retry_policy,) if isinstance(retry_policy, RetryPolicy) else tuple(retry_policy)
        )
        self.managed: dict[str, ManagedValueSpec] = dict(managed or {})
        self.store = store
        self.cache = cache
        self.cache_policy = cache_policy
        self.context_schema = context_schema
        if step_timeout is not None and step_timeout <= 0:
            raise ValueError("step_timeout must be greater than 0")
        self.step_timeout = step_timeout
        self.debug = debug
        self.config = config
        trigger_to_nodes: dict[str, list[str]] = {}
        for node_name, node in self.nodes.items():
            for trigger in node.triggers:
                trigger_to_nodes.setdefault(trigger, []).append(node_name)
        self.trigger_to_nodes: Mapping[str, Sequence[str]] = trigger_to_nodes

    @property
    def channels(self) -> dict[str, BaseChannel | ManagedValueSpec]:
        """The graph's channels and managed values, by name."""
        return {**self.channel_specs, **self.managed}

    def copy(self, update: dict[str, Any] | None = None) -> Self:
        """A shallow copy (nodes and channels shared), with ``update``'s attributes set."""
        clone = copy.copy(self)
        for key, value in (update or {}).items():
            setattr(clone, key, value)
        return clone

    def with_config(self, config: RunnableConfig | None = None, **kwargs: Any) -> Self:
        """A copy whose runs merge ``config`` (and ``kwargs`` as config keys) under theirs."""
        return self.copy({"config": merge_configs(self.config, config, kwargs)})  # type: ignore[arg-type]

    # --- plumbing -------------------------------------------------------------------------

    def _saver(self, config: RunnableConfig) -> BaseCheckpointSaver | None:
        if self.checkpointer is False:
            return None
        if isinstance(self.checkpointer, BaseCheckpointSaver):
            return self.checkpointer
        inherited = config.get(CONF, {}).get(CONFIG_KEY_CHECKPOINTER)
        return inherited if isinstance(inherited, BaseCheckpointSaver) else None

    def _prepare(
        self,
        input: Any,
        config: RunnableConfig | None,
        stream_mode: StreamMode | Sequence[StreamMode] | None,
        subgraphs: bool,
        interrupt_before: All | Sequence[str] | None,
        interrupt_after: All | Sequence[str] | None,
        output_keys: Sequence[str] | str | None = None,
        *,
        context: Any = None,
        control: RunControl | None = None,
    ) -> tuple[PregelLoop, bool]:
        cfg = ensure_config(self.config, config)
        conf = cfg[CONF]
        nested = CONFIG_KEY_TASK_ID in conf
        if nested:
            parent_stream = conf.get(CONFIG_KEY_STREAM)
            scratchpad = conf.get(CONFIG_KEY_SCRATCHPAD)
            if scratchpad is not None:
                idx = scratchpad.subgraph_counter()
                if idx:
                    conf[CONFIG_KEY_CHECKPOINT_NS] = (
                        f"{conf[CONFIG_KEY_CHECKPOINT_NS]}{NS_SEP}{idx}"
                    )
        else:
            parent_stream = None
        saver = self._saver(cfg)
        if saver is not None and not nested and not conf.get("thread_id"):
            raise ValueError(
                "Checkpointer requires one or more of the following 'configurable' keys: "
                "thread_id, checkpoint_ns, checkpoint_id"
            )
        modes: list[str] = (
            [stream_mode]
            if isinstance(stream_mode, str)
            else list(stream_mode)
            if stream_mode
            else [self.stream_mode]
        )
        single = isinstance(stream_mode, str) or not stream_mode
        if parent_stream is not None and isinstance(parent_stream, StreamSink):
            sink = parent_stream
        else:
            sink = StreamSink(set(modes), subgraphs)
        loop = PregelLoop(
            self,
            cfg,
            checkpointer=saver,
            sink=sink,
            options=self.run_options(
                cfg,
                output_keys=self.stream_channels if output_keys is None else output_keys,
                interrupt_before=interrupt_before,
                interrupt_after=interrupt_after,
                context=context,
                control=control,
            ),
        )
        return loop, single

    def run_options(
        self,
        config: RunnableConfig,
        *,
        output_keys: Sequence[str] | str | None = None,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        stop: int | None = None,
        context: Any = None,
        control: RunControl | None = None,
    ) -> RunOptions:
        """A run's options, from its config and call arguments.

        Call-time breakpoints replace the compiled ones; the recursion limit comes from
        ``config["recursion_limit"]`` (LangGraph's default otherwise). ``context`` is the
        run's context (coerced to the graph's ``context_schema``), ``control`` its
        drain control.
        """
        limit = config.get("recursion_limit")
        if limit is None:
            limit = int(
                os.environ.get("LANGGRAPH_DEFAULT_RECURSION_LIMIT", DEFAULT_RECURSION_LIMIT)
            )
        if limit < 1:
            raise ValueError("recursion_limit must be at least 1")
        before = interrupt_before or self.interrupt_before_nodes
        after = interrupt_after or self.interrupt_after_nodes
        keys = self.output_channels if output_keys is None else output_keys
        return RunOptions(
            output_keys=keys if isinstance(keys, str) else tuple(keys),
            context=coerce_context(self.context_schema, context),
            control=control,
            interrupt_before=before if before == "*" else tuple(before),
            interrupt_after=after if after == "*" else tuple(after),
            recursion_limit=limit,
            stop=stop,
        )

    def _require_saver(self, config: RunnableConfig) -> BaseCheckpointSaver:
        saver = self._saver(ensure_config(config))
        if saver is None:
            raise ValueError("No checkpointer set")
        return saver

    def with_checkpointer(self, checkpointer: Checkpointer) -> Pregel:
        """A copy of this graph that saves with ``checkpointer`` (nodes are shared)."""
        clone = copy.copy(self)
        clone.checkpointer = checkpointer
        return clone

    @staticmethod
    def _shape(chunk: StreamChunk, single: bool, subgraphs: bool) -> Any:
        ns, mode, payload = chunk
        if subgraphs:
            return (ns, payload) if single else (ns, mode, payload)
        return payload if single else (mode, payload)

    # --- running --------------------------------------------------------------------------

    def stream(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        stream_mode: StreamMode | Sequence[StreamMode] | None = None,
        subgraphs: bool = False,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        control: RunControl | None = None,
        **kwargs: Any,
    ) -> Iterator[Any]:
        """Run the graph, yielding chunks in the requested stream mode(s).

        ``context`` is the run's context (``runtime.context`` in nodes); ``control`` a
        :class:`RunControl` to drain the run between steps.
        """
        loop, single = self._prepare(
            input,
            config,
            stream_mode,
            subgraphs,
            interrupt_before,
            interrupt_after,
            context=context,
            control=control,
        )
        for chunk in _run(loop, input):
            yield self._shape(chunk, single, subgraphs)

    def invoke(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        stream_mode: StreamMode = "values",
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        control: RunControl | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run the graph to completion (or interrupt) and return the final output."""
        loop = self._invoke_loop(
            input, config, stream_mode, interrupt_before, interrupt_after, context, control
        )
        return _collect(_run(loop, input), loop, stream_mode)

    def _invoke_loop(
        self,
        input: Any,
        config: RunnableConfig | None,
        stream_mode: StreamMode,
        interrupt_before: All | Sequence[str] | None,
        interrupt_after: All | Sequence[str] | None,
        context: Any,
        control: RunControl | None,
    ) -> PregelLoop:
        loop, _single = self._prepare(
            input,
            config,
            [stream_mode],
            False,
            interrupt_before,
            interrupt_after,
            self.output_channels,
            context=context,
            control=control,
        )
        _private_sink(loop, stream_mode)
        return loop

    async def astream(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        stream_mode: StreamMode | Sequence[StreamMode] | None = None,
        subgraphs: bool = False,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        control: RunControl | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """Async twin of :meth:`stream`."""
        loop, single = self._prepare(
            input,
            config,
            stream_mode,
            subgraphs,
            interrupt_before,
            interrupt_after,
            context=context,
            control=control,
        )
        async with contextlib.aclosing(_arun(loop, input)) as chunks:
            async for chunk in chunks:
                yield self._shape(chunk, single, subgraphs)

    async def ainvoke(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        stream_mode: StreamMode = "values",
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        control: RunControl | None = None,
        **kwargs: Any,
    ) -> Any:
        """Async twin of :meth:`invoke`."""
        loop = self._invoke_loop(
            input, config, stream_mode, interrupt_before, interrupt_after, context, control
        )
        chunks = [c async for c in _arun(loop, input)]
        return _collect(iter(chunks), loop, stream_mode)

    def batch(
        self,
        inputs: Sequence[Any],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """``invoke`` each input (on threads, ``config["max_concurrency"]`` at once).

        ``config`` is one config for all inputs or one per input; with
        ``return_exceptions`` a failed run's exception takes its place in the result.
        """
        configs = _batch_configs(config, len(inputs))
        if not inputs:
            return []

        def one(pair: tuple[Any, RunnableConfig | None]) -> Any:
            try:
                return self.invoke(pair[0], pair[1], **kwargs)
            except Exception as exc:
                if return_exceptions:
                    return exc
                raise

        if len(inputs) == 1:
            return [one((inputs[0], configs[0]))]
        workers = (configs[0] or {}).get("max_concurrency") or None
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(one, zip(inputs, configs, strict=True)))

    async def abatch(
        self,
        inputs: Sequence[Any],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """Async twin of :meth:`batch`: the runs are awaited together."""
        configs = _batch_configs(config, len(inputs))
        limit = (configs[0] or {}).get("max_concurrency") if configs else None
        semaphore = asyncio.Semaphore(limit) if limit else None

        async def one(value: Any, cfg: RunnableConfig | None) -> Any:
            if semaphore is None:
                return await self.ainvoke(value, cfg, **kwargs)
            async with semaphore:
                return await self.ainvoke(value, cfg, **kwargs)

        return list(
            await asyncio.gather(
                *(one(v, c) for v, c in zip(inputs, configs, strict=True)),
                return_exceptions=return_exceptions,
            )
        )

    # --- cache --------------------------------------------------------------------------

    def _cache_namespaces(self, nodes: Sequence[str] | None) -> list[tuple[str, ...]]:
        if self.cache is None:
            raise ValueError("No cache is set for this graph. Cannot clear cache.")
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
        return get_state_history(
            self, self._require_saver(config), config, filter=filter, before=before, limit=limit
        )

    def update_state(
        self, config: RunnableConfig, values: Any, as_node: str | None = None
    ) -> RunnableConfig:
        """Apply ``values`` as if ``as_node`` had returned them; saves a new checkpoint."""
        return update_state(self, self._require_saver(config), config, values, as_node)

    async def aget_state(self, config: RunnableConfig, *, subgraphs: bool = False) -> StateSnapshot:
        return await asyncio.to_thread(self.get_state, config, subgraphs=subgraphs)

    async def aupdate_state(
        self, config: RunnableConfig, values: Any, as_node: str | None = None
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.update_state, config, values, as_node)

    async def aget_state_history(
        self,
        config: RunnableConfig,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[StateSnapshot]:
        history = await asyncio.to_thread(
            lambda: list(self.get_state_history(config, filter=filter, before=before, limit=limit))
        )
        for snapshot in history:
            yield snapshot

    def get_subgraphs(self) -> Iterator[tuple[str, Pregel]]:
        for name, node in self.nodes.items():
            for sub in node.subgraphs:
                yield name, sub


def _batch_configs(
    config: RunnableConfig | Sequence[RunnableConfig] | None, count: int
) -> list[RunnableConfig | None]:
    if config is None or isinstance(config, Mapping):
        return [config] * count
    configs = list(config)
    if len(configs) != count:
        raise ValueError(
            f"batch() got {len(configs)} configs for {count} inputs: give one config, "
            "or one per input"
        )
    return configs  # type: ignore[return-value]


def coerce_context(schema: Any, context: Any) -> Any:
    """A dict context becomes an instance of a dataclass or pydantic ``context_schema``."""
    if context is None or schema is None or not isinstance(context, dict):
        return context
    if isinstance(schema, type) and (
        dataclasses.is_dataclass(schema) or hasattr(schema, "model_validate")
    ):
        return schema(**context)
    return context


def _run(loop: PregelLoop, input: Any) -> Iterator[StreamChunk]:
    executor = ThreadExecutor(loop.config.get("max_concurrency"))
    try:
        loop.first(input)
        yield from drive(loop, executor)
    finally:
        executor.close()


async def _arun(loop: PregelLoop, input: Any) -> AsyncGenerator[StreamChunk, None]:
    loop.first(input)
    # closing the stream early closes the driver, which cancels the running tasks
    driver = adrive(loop, AsyncioExecutor(loop.config.get("max_concurrency")))
    async with contextlib.aclosing(driver) as chunks:
        async for chunk in chunks:
            yield chunk


def _private_sink(loop: PregelLoop, stream_mode: str) -> None:
    """A nested ``invoke`` collects its own values, and forwards every chunk to the parent."""
    if not loop.is_nested:
        return
    parent = loop.config[CONF].get(CONFIG_KEY_STREAM)
    loop.sink = StreamSink(
        {stream_mode, *(parent.modes if isinstance(parent, StreamSink) else ())},
        True,
        loop.ns_tuple,
        parent if isinstance(parent, StreamSink) else None,
    )


def _collect(chunks: Iterator[StreamChunk], loop: PregelLoop, stream_mode: str) -> Any:
    latest: Any = None
    parent = loop.sink.parent
    for ns, mode, payload in chunks:
        if parent is not None:
            parent.put(ns, mode, payload)
        if ns != loop.ns_tuple:
            continue
        if mode == stream_mode:
            latest = payload
    if not loop.is_nested and loop.interrupts:
        base = (
            {k: v for k, v in latest.items() if k != INTERRUPT} if isinstance(latest, dict) else {}
        )
        return {**base, INTERRUPT: list(loop.interrupts)}
    if isinstance(latest, dict) and INTERRUPT in latest:
        latest = {k: v for k, v in latest.items() if k != INTERRUPT}
    return latest


__all__ = ["Checkpointer", "Literal", "Pregel"]
