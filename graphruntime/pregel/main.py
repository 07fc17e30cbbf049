"""``Pregel``: a compiled graph — run it, stream it, inspect and edit its threads."""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import warnings
from collections.abc import (
    AsyncIterator,
    Callable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Literal, Self, cast

from graphruntime._internal._config import RunnableConfig, merge_configs
from graphruntime._internal._constants import (
    NS_SEP,
    TASKS,
)
from graphruntime.cache import BaseCache, CachePolicy
from graphruntime.channels import BaseChannel, Topic
from graphruntime.checkpoint.base import BaseCheckpointSaver
from graphruntime.errors import (
    GraphValidationError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    NotSupportedError,
)
from graphruntime.pregel._builder import NodeBuilder, with_name
from graphruntime.pregel._callbacks import RunHooks
from graphruntime.pregel._loop import PregelLoop
from graphruntime.pregel._node import NodeSpec
from graphruntime.pregel._run import arun, collect, collect_parts, prepare, run
from graphruntime.pregel._stream import StreamChunk, stream_part
from graphruntime.pregel._stream_events import PregelEvents
from graphruntime.pregel._threads import PregelThreads
from graphruntime.pregel._validate import validate_graph
from graphruntime.runtime import RunControl
from graphruntime.store.base import BaseStore
from graphruntime.types import (
    All,
    Durability,
    RetryPolicy,
    Send,
    StreamMode,
)
from graphruntime.warnings import LangGraphDeprecatedSinceV10

if TYPE_CHECKING:
    from graphruntime.managed.base import ManagedValueSpec

Checkpointer = BaseCheckpointSaver | bool | None


class Pregel(PregelEvents, PregelThreads):
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

    _output_mapper: Callable[[Any], Any] | None = None
    """Turns a ``values`` dict into the output schema (v2 streams); set by StateGraph."""
    _state_mapper: Callable[[Any], Any] | None = None
    """Turns a checkpoint's values into the state schema (v2 streams); set by StateGraph."""

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
        stream_transformers: Sequence[Callable[[tuple[str, ...]], Any]] | None = None,
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
            raise InvalidArgumentTypeError(
                f"Pregel() got unexpected keyword arguments: {sorted(deprecated_kwargs)}"
            )
        _reject_unsupported(node_error_handler_map=node_error_handler_map)
        if step_timeout is not None and step_timeout <= 0:
            raise GraphValidationError("step_timeout must be greater than 0")
        if not (checkpointer is None or isinstance(checkpointer, (bool, BaseCheckpointSaver))):
            raise InvalidArgumentTypeError(
                "Invalid checkpointer provided. Expected an instance of `BaseCheckpointSaver`, "
                f"`True`, `False`, or `None`. Received {type(checkpointer).__name__}. "
                "Pass a proper saver (e.g., InMemorySaver, AsyncPostgresSaver)."
            )
        self.nodes: dict[str, NodeSpec] = with_name(nodes)
        all_channels: dict[str, BaseChannel | ManagedValueSpec] = dict(channels or {})
        if TASKS in all_channels and not isinstance(all_channels[TASKS], Topic):
            raise GraphValidationError(
                f"Channel '{TASKS}' is reserved and cannot be used in the graph."
            )
        all_channels.setdefault(TASKS, Topic(Send, accumulate=False, key=TASKS))
        self.channels = all_channels
        self.stream_mode = stream_mode
        self.stream_eager = stream_eager
        self.output_channels: str | Sequence[str] = _keys(output_channels)
        self.input_channels: str | Sequence[str] = _keys(input_channels)
        self.stream_channels: str | Sequence[str] = (
            _keys(stream_channels)
            if stream_channels is not None
            else [k for k in self.channel_specs if k != TASKS]
        )
        self.interrupt_after_nodes = interrupt_after_nodes
        self.interrupt_before_nodes = interrupt_before_nodes
        # LangGraph prints debug events to the console when set; graphruntime streams them
        # with stream_mode="debug" instead and prints nothing
        self.debug = bool(debug)
        self.step_timeout = step_timeout
        self.checkpointer = checkpointer
        self.store = store
        self.cache = cache
        self.retry_policy: tuple[RetryPolicy, ...] = (
            (retry_policy,) if isinstance(retry_policy, RetryPolicy) else tuple(retry_policy)
        )
        self.cache_policy = cache_policy
        self.context_schema = context_schema
        if config is not None:
            self.config = config
        self.name = name
        self.stream_transformers = tuple(stream_transformers or ())
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
    def channels(self) -> dict[str, BaseChannel | ManagedValueSpec]:
        """The graph's channels and managed values, by name (as LangGraph's)."""
        return {**self.channel_specs, **self.managed}

    @channels.setter
    def channels(self, value: Mapping[str, BaseChannel | ManagedValueSpec]) -> None:
        # the step machinery reads channels and managed values apart, on every step
        self.channel_specs: dict[str, BaseChannel] = {
            k: v for k, v in value.items() if isinstance(v, BaseChannel)
        }
        self.managed: dict[str, ManagedValueSpec] = {
            k: v for k, v in value.items() if not isinstance(v, BaseChannel)
        }

    def copy(self, update: dict[str, Any] | None = None) -> Self:
        """A shallow copy (nodes and channels shared), with ``update``'s attributes set."""
        clone = copy.copy(self)
        for key, value in (update or {}).items():
            setattr(clone, key, value)
        return clone

    @property
    def stream_channels_list(self) -> Sequence[str]:
        keys = self.stream_channels
        return [keys] if isinstance(keys, str) else keys

    @property
    def stream_channels_asis(self) -> str | Sequence[str]:
        return self.stream_channels

    def with_config(self, config: RunnableConfig | None = None, **kwargs: Any) -> Pregel:
        """A copy of this graph whose runs start from ``config`` (and ``kwargs`` keys).

        A run's own config is layered on top: ``configurable`` and ``metadata`` merge
        key-wise, tags and callbacks add up, other keys are replaced.
        """
        clone = copy.copy(self)
        clone.config = merge_configs(self.config, config, cast(RunnableConfig, kwargs))
        return clone

    def map(self) -> _Each:
        """A runnable that runs this graph on each item of a list (``batch``), in order."""
        return _Each(self)

    def with_checkpointer(self, checkpointer: Checkpointer) -> Pregel:
        """A copy of this graph that saves with ``checkpointer`` (nodes are shared)."""
        clone = copy.copy(self)
        clone.checkpointer = checkpointer
        return clone

    def with_store(self, store: BaseStore | None) -> Pregel:
        """A copy of this graph whose nodes get ``store`` (nodes are shared)."""
        clone = copy.copy(self)
        clone.store = store
        return clone

    def with_cache(self, cache: BaseCache[Any] | None) -> Pregel:
        """A copy of this graph whose cached results live in ``cache`` (nodes are shared)."""
        clone = copy.copy(self)
        clone.cache = cache
        return clone

    def _shaper(self, version: str, subgraphs: bool) -> Callable[[StreamChunk, bool], Any]:
        """How ``stream`` shows a chunk: v1 tuples, or v2 stream parts."""
        if version == "v2":
            mapper, state_mapper = self._output_mapper, self._state_mapper
            return lambda chunk, single: stream_part(chunk, mapper, state_mapper)
        if version != "v1":
            raise InvalidArgumentError(f"Unknown stream version {version!r}: use 'v1' or 'v2'")
        if subgraphs:
            return lambda c, single: (c[0], c[2]) if single else c
        return lambda c, single: c[2] if single else (c[1], c[2])

    # --- running --------------------------------------------------------------------------

    def stream(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        control: RunControl | None = None,
        stream_mode: StreamMode | Sequence[StreamMode] | None = None,
        output_keys: str | Sequence[str] | None = None,
        subgraphs: bool = False,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        version: Literal["v1", "v2"] = "v1",
        durability: Durability | None = None,
        **kwargs: Any,
    ) -> Iterator[Any]:
        """Run the graph, yielding chunks in the requested stream mode(s).

        ``version="v2"`` yields every chunk as a typed dict (:class:`StreamPart`):
        ``{"type": mode, "ns": namespace, "data": ...}``, whatever the modes.
        """
        shape = self._shaper(version, subgraphs)
        loop, single, hooks = prepare(
            self,
            config,
            stream_mode,
            subgraphs,
            interrupt_before,
            interrupt_after,
            output_keys,
            version=version,
            durability=durability,
            kwargs=kwargs,
            context=context,
            control=control,
        )
        for chunk in run(loop, input, hooks):
            yield shape(chunk, single)

    def invoke(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        control: RunControl | None = None,
        stream_mode: StreamMode | Sequence[StreamMode] = "values",
        output_keys: str | Sequence[str] | None = None,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        version: Literal["v1", "v2"] = "v1",
        durability: Durability | None = None,
        **kwargs: Any,
    ) -> Any:
        """Run the graph to completion (or interrupt) and return the final output.

        ``version="v2"`` returns a :class:`GraphOutput` (the output and the interrupts),
        or the list of stream parts for another ``stream_mode``.
        """
        if version == "v2" or stream_mode != "values":
            parts = self.stream(
                input,
                config,
                stream_mode=stream_mode,
                output_keys=output_keys,
                interrupt_before=interrupt_before,
                interrupt_after=interrupt_after,
                version=version,
                durability=durability,
                context=context,
                control=control,
                **kwargs,
            )
            return collect_parts(parts, stream_mode, version)
        loop, hooks = self._invoke_loop(
            input,
            config,
            "values",
            interrupt_before,
            interrupt_after,
            output_keys,
            durability=durability,
            kwargs=kwargs,
            context=context,
            control=control,
        )
        return collect(run(loop, input, hooks), loop, "values")

    def _invoke_loop(
        self,
        input: Any,
        config: RunnableConfig | None,
        stream_mode: StreamMode,
        interrupt_before: All | Sequence[str] | None,
        interrupt_after: All | Sequence[str] | None,
        output_keys: str | Sequence[str] | None = None,
        *,
        is_async: bool = False,
        durability: Durability | None = None,
        kwargs: Mapping[str, Any] | None = None,
        context: Any = None,
        control: RunControl | None = None,
    ) -> tuple[PregelLoop, RunHooks | None]:
        loop, _single, hooks = prepare(
            self,
            config,
            [stream_mode],
            False,
            interrupt_before,
            interrupt_after,
            self.output_channels if output_keys is None else output_keys,
            is_async=is_async,
            durability=durability,
            kwargs=kwargs,
            context=context,
            control=control,
        )
        return loop, hooks

    async def astream(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        control: RunControl | None = None,
        stream_mode: StreamMode | Sequence[StreamMode] | None = None,
        output_keys: str | Sequence[str] | None = None,
        subgraphs: bool = False,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        version: Literal["v1", "v2"] = "v1",
        durability: Durability | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """Async twin of :meth:`stream`."""
        shape = self._shaper(version, subgraphs)
        loop, single, hooks = prepare(
            self,
            config,
            stream_mode,
            subgraphs,
            interrupt_before,
            interrupt_after,
            output_keys,
            is_async=True,
            version=version,
            durability=durability,
            kwargs=kwargs,
            context=context,
            control=control,
        )
        # closing the stream closes the run at once: its running tasks are cancelled
        async with aclosing(arun(loop, input, hooks)) as chunks:
            async for chunk in chunks:
                yield shape(chunk, single)

    async def ainvoke(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        context: Any = None,
        control: RunControl | None = None,
        stream_mode: StreamMode | Sequence[StreamMode] = "values",
        output_keys: str | Sequence[str] | None = None,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        version: Literal["v1", "v2"] = "v1",
        durability: Durability | None = None,
        **kwargs: Any,
    ) -> Any:
        """Async twin of :meth:`invoke`."""
        if version == "v2" or stream_mode != "values":
            parts = self.astream(
                input,
                config,
                stream_mode=stream_mode,
                output_keys=output_keys,
                interrupt_before=interrupt_before,
                interrupt_after=interrupt_after,
                version=version,
                durability=durability,
                context=context,
                control=control,
                **kwargs,
            )
            return collect_parts([p async for p in parts], stream_mode, version)
        loop, hooks = self._invoke_loop(
            input,
            config,
            "values",
            interrupt_before,
            interrupt_after,
            output_keys,
            is_async=True,
            durability=durability,
            kwargs=kwargs,
            context=context,
            control=control,
        )
        chunks = [c async for c in arun(loop, input, hooks)]
        return collect(iter(chunks), loop, "values")

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

    def get_subgraphs(
        self, *, namespace: str | None = None, recurse: bool = False
    ) -> Iterator[tuple[str, Pregel]]:
        """``(namespace, subgraph)`` pairs; ``namespace`` (``"a|b"``, no task ids) picks one.

        A nested namespace needs ``recurse=True``; segments match whole.
        """
        for name, node in self.nodes.items():
            if namespace is not None and not (
                namespace == name or namespace.startswith(name + NS_SEP)
            ):
                continue
            if not node.subgraphs:
                continue
            sub = node.subgraphs[0]
            if namespace == name:
                yield name, sub
                return
            if namespace is None:
                yield name, sub
            if recurse and isinstance(sub, Pregel):
                rest = None if namespace is None else namespace[len(name) + 1 :]
                for child_ns, child in sub.get_subgraphs(namespace=rest, recurse=True):
                    yield f"{name}{NS_SEP}{child_ns}", child

    async def aget_subgraphs(
        self, *, namespace: str | None = None, recurse: bool = False
    ) -> AsyncIterator[tuple[str, Pregel]]:
        for item in self.get_subgraphs(namespace=namespace, recurse=recurse):
            yield item


class _Each:
    """``graph.map()``: runs ``graph`` on every item of its input list.

    Invoked like a runnable (``invoke``/``ainvoke``), so a node running it passes its
    config on, as to any step.
    """

    def __init__(self, graph: Pregel) -> None:
        self.graph = graph
        self.name = f"RunnableEach<{graph.name}>"

    def invoke(self, inputs: Sequence[Any], config: RunnableConfig | None = None) -> list[Any]:
        return self.graph.batch(list(inputs), config)

    async def ainvoke(
        self, inputs: Sequence[Any], config: RunnableConfig | None = None
    ) -> list[Any]:
        return await self.graph.abatch(list(inputs), config)


def _configs(
    config: RunnableConfig | Sequence[RunnableConfig] | None, n: int
) -> list[RunnableConfig | None]:
    if config is None or isinstance(config, dict):
        return [config] * n
    configs: list[RunnableConfig | None] = list(config)
    if len(configs) != n:
        raise InvalidArgumentError(f"batch() got {len(configs)} configs for {n} inputs")
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
            raise NotSupportedError(
                f"Pregel({key}=...) is not supported by graphruntime; leave it unset."
            )


__all__ = ["Checkpointer", "Literal", "Pregel"]
