"""``Pregel``: a compiled graph — run it, stream it, inspect and edit its threads."""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import os
import warnings
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, Literal

from graphruntime._internal._config import RunnableConfig, ensure_config
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
    TASKS,
)
from graphruntime.cache import BaseCache, CachePolicy
from graphruntime.channels import BaseChannel, Topic
from graphruntime.checkpoint.base import BaseCheckpointSaver
from graphruntime.pregel._builder import NodeBuilder, with_name
from graphruntime.pregel._driver import AsyncioExecutor, ThreadExecutor, adrive, drive
from graphruntime.pregel._loop import PregelLoop, RunOptions
from graphruntime.pregel._node import NodeSpec
from graphruntime.pregel._schema import PregelSchemas
from graphruntime.pregel._state import get_state, get_state_history, update_state
from graphruntime.pregel._stream import StreamChunk, StreamSink
from graphruntime.pregel._validate import validate_graph, validate_keys
from graphruntime.store.base import BaseStore
from graphruntime.types import All, RetryPolicy, Send, StateSnapshot, StreamMode
from graphruntime.warnings import LangGraphDeprecatedSinceV10

Checkpointer = BaseCheckpointSaver | bool | None


class Pregel(PregelSchemas):
    """An executable graph: nodes, channels and the superstep loop that runs them.

    Built by ``StateGraph.compile()`` and ``@entrypoint``, or directly, with LangGraph's
    low-level API::

        app = Pregel(
            nodes={"one": NodeBuilder().subscribe_only("a").do(f).write_to("b")},
            channels={"a": LastValue(int), "b": LastValue(int)},
            input_channels="a",
            output_channels="b",
        )
    """

    def __init__(
        self,
        *,
        nodes: Mapping[str, NodeSpec | NodeBuilder],
        channels: Mapping[str, BaseChannel] | None,
        auto_validate: bool = True,
        stream_mode: StreamMode = "values",
        stream_eager: bool = False,
        output_channels: str | Sequence[str],
        stream_channels: str | Sequence[str] | None = None,
        interrupt_after_nodes: All | Sequence[str] = (),
        interrupt_before_nodes: All | Sequence[str] = (),
        input_channels: str | Sequence[str],
        step_timeout: float | None = None,
        debug: bool | None = None,
        checkpointer: Checkpointer = None,
        store: BaseStore | None = None,
        cache: BaseCache[Any] | None = None,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] = (),
        cache_policy: CachePolicy[Any] | None = None,
        context_schema: type[Any] | None = None,
        config: RunnableConfig | None = None,
        trigger_to_nodes: Mapping[str, Sequence[str]] | None = None,
        node_error_handler_map: Mapping[str, str] | None = None,
        name: str = "LangGraph",
        stream_transformers: Sequence[Any] | None = None,
        **deprecated_kwargs: Any,
    ) -> None:
        if "config_type" in deprecated_kwargs:
            warnings.warn(
                "`config_type` is deprecated and will be removed. Please use `context_schema` "
                "instead.",
                category=LangGraphDeprecatedSinceV10,
                stacklevel=2,
            )
            if context_schema is None:
                context_schema = deprecated_kwargs.pop("config_type")
            else:
                deprecated_kwargs.pop("config_type")
        if deprecated_kwargs:
            raise TypeError(
                f"Pregel() got unexpected keyword arguments: {sorted(deprecated_kwargs)}"
            )
        _reject_unsupported(
            step_timeout=step_timeout,
            node_error_handler_map=node_error_handler_map,
            stream_transformers=stream_transformers,
        )
        if checkpointer is not None and not isinstance(checkpointer, (bool, BaseCheckpointSaver)):
            raise TypeError(
                f"checkpointer must be a BaseCheckpointSaver, True, False or None, "
                f"got {type(checkpointer).__name__}"
            )
        self.nodes: dict[str, NodeSpec] = with_name(nodes)
        self.channels: dict[str, BaseChannel] = dict(channels or {})
        if TASKS in self.channels and not isinstance(self.channels[TASKS], Topic):
            raise ValueError(f"Channel '{TASKS}' is reserved and cannot be used in the graph.")
        self.channels.setdefault(TASKS, Topic(Send, accumulate=False, key=TASKS))
        self.stream_mode = stream_mode
        self.stream_eager = stream_eager
        self.output_channels: str | Sequence[str] = _keys(output_channels)
        self.input_channels: str | Sequence[str] = _keys(input_channels)
        self.stream_channels: str | Sequence[str] = (
            _keys(stream_channels)
            if stream_channels is not None
            else [k for k in self.channels if k != TASKS]
        )
        self.interrupt_after_nodes = interrupt_after_nodes
        self.interrupt_before_nodes = interrupt_before_nodes
        # LangGraph prints debug events to the console when set; graphruntime streams them
        # with stream_mode="debug" instead and prints nothing
        self.debug = bool(debug)
        self.checkpointer = checkpointer
        self.store = store
        self.cache = cache
        self.retry_policy: tuple[RetryPolicy, ...] = (
            (retry_policy,) if isinstance(retry_policy, RetryPolicy) else tuple(retry_policy)
        )
        self.cache_policy = cache_policy
        self.context_schema = context_schema
        self.config = config
        self.name = name
        self.trigger_to_nodes: Mapping[str, Sequence[str]] = dict(trigger_to_nodes or {})
        if auto_validate:
            self.validate()
        elif not self.trigger_to_nodes:
            self.trigger_to_nodes = _trigger_to_nodes(self.nodes)

    def validate(self) -> Pregel:
        """Check that nodes, channels and keys fit together; raises ValueError if not."""
        validate_graph(
            self.nodes,
            self.channels,
            self.input_channels,
            self.output_channels,
            self.stream_channels,
            self.interrupt_after_nodes,
            self.interrupt_before_nodes,
        )
        self.trigger_to_nodes = _trigger_to_nodes(self.nodes)
        return self

    @property
    def channel_specs(self) -> Mapping[str, BaseChannel]:
        """The channels, as the step machinery reads them."""
        return self.channels

    @property
    def stream_channels_list(self) -> Sequence[str]:
        keys = self.stream_channels
        return [keys] if isinstance(keys, str) else keys

    @property
    def stream_channels_asis(self) -> str | Sequence[str]:
        return self.stream_channels

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
        output_keys: str | Sequence[str] | None = None,
    ) -> tuple[PregelLoop, bool]:
        cfg = ensure_config(self.config, config)
        validate_keys(output_keys, self.channels)
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
            ),
        )
        return loop, single

    def run_options(
        self,
        config: RunnableConfig,
        *,
        output_keys: str | Sequence[str] | None = None,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        stop: int | None = None,
    ) -> RunOptions:
        """A run's options, from its config and call arguments.

        Call-time breakpoints replace the compiled ones; the recursion limit comes from
        ``config["recursion_limit"]`` (LangGraph's default otherwise).
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
        stream_mode: StreamMode | Sequence[StreamMode] | None = None,
        output_keys: str | Sequence[str] | None = None,
        subgraphs: bool = False,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> Iterator[Any]:
        """Run the graph, yielding chunks in the requested stream mode(s)."""
        loop, single = self._prepare(
            input, config, stream_mode, subgraphs, interrupt_before, interrupt_after, output_keys
        )
        for chunk in _run(loop, input):
            yield self._shape(chunk, single, subgraphs)

    def invoke(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        stream_mode: StreamMode = "values",
        output_keys: str | Sequence[str] | None = None,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run the graph to completion (or interrupt) and return the final output."""
        loop = self._invoke_loop(
            input, config, stream_mode, interrupt_before, interrupt_after, output_keys
        )
        return _collect(_run(loop, input), loop, stream_mode)

    def _invoke_loop(
        self,
        input: Any,
        config: RunnableConfig | None,
        stream_mode: StreamMode,
        interrupt_before: All | Sequence[str] | None,
        interrupt_after: All | Sequence[str] | None,
        output_keys: str | Sequence[str] | None = None,
    ) -> PregelLoop:
        loop, _single = self._prepare(
            input,
            config,
            [stream_mode],
            False,
            interrupt_before,
            interrupt_after,
            self.output_channels if output_keys is None else output_keys,
        )
        _private_sink(loop, stream_mode)
        return loop

    async def astream(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        stream_mode: StreamMode | Sequence[StreamMode] | None = None,
        output_keys: str | Sequence[str] | None = None,
        subgraphs: bool = False,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """Async twin of :meth:`stream`."""
        loop, single = self._prepare(
            input, config, stream_mode, subgraphs, interrupt_before, interrupt_after, output_keys
        )
        async for chunk in _arun(loop, input):
            yield self._shape(chunk, single, subgraphs)

    async def ainvoke(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        stream_mode: StreamMode = "values",
        output_keys: str | Sequence[str] | None = None,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        **kwargs: Any,
    ) -> Any:
        """Async twin of :meth:`invoke`."""
        loop = self._invoke_loop(
            input, config, stream_mode, interrupt_before, interrupt_after, output_keys
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
        """``invoke`` each input (concurrently, up to the config's ``max_concurrency``)."""
        if not inputs:
            return []
        configs = _configs(config, len(inputs))

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
        """Async twin of :meth:`batch`."""
        configs = _configs(config, len(inputs))
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


def _configs(
    config: RunnableConfig | Sequence[RunnableConfig] | None, n: int
) -> list[RunnableConfig | None]:
    if config is None or isinstance(config, dict):
        return [config] * n
    configs: list[RunnableConfig | None] = list(config)
    if len(configs) != n:
        raise ValueError(f"batch() got {len(configs)} configs for {n} inputs")
    return configs


def _keys(keys: str | Sequence[str]) -> str | list[str]:
    return keys if isinstance(keys, str) else list(keys)


def _trigger_to_nodes(nodes: Mapping[str, NodeSpec]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, node in nodes.items():
        for trigger in node.triggers:
            out.setdefault(trigger, []).append(name)
    return out


def _reject_unsupported(**settings: Any) -> None:
    """Settings graphruntime does not implement: refused, never ignored."""
    for key, value in settings.items():
        if value:
            raise NotImplementedError(
                f"Pregel({key}=...) is not supported by graphruntime; leave it unset."
            )


def _run(loop: PregelLoop, input: Any) -> Iterator[StreamChunk]:
    executor = ThreadExecutor(loop.config.get("max_concurrency"))
    try:
        loop.first(input)
        yield from drive(loop, executor)
    finally:
        executor.close()


async def _arun(loop: PregelLoop, input: Any) -> AsyncIterator[StreamChunk]:
    loop.first(input)
    async for chunk in adrive(loop, AsyncioExecutor(loop.config.get("max_concurrency"))):
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
        if not isinstance(latest, dict):  # a single output key: only the interrupts
            return {INTERRUPT: list(loop.interrupts)}
        base = {k: v for k, v in latest.items() if k != INTERRUPT}
        return {**base, INTERRUPT: list(loop.interrupts)}
    if isinstance(latest, dict) and INTERRUPT in latest:
        latest = {k: v for k, v in latest.items() if k != INTERRUPT}
    return latest


__all__ = ["Checkpointer", "Literal", "Pregel"]
