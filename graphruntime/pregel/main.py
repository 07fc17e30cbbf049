"""``Pregel``: a compiled graph — run it, stream it, inspect and edit its threads."""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import dataclasses
import os
import warnings
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Literal, Self, cast

from graphruntime._internal._config import RunnableConfig, ensure_config, merge_configs
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_CHECKPOINTER,
    CONFIG_KEY_DURABILITY,
    CONFIG_KEY_SCRATCHPAD,
    CONFIG_KEY_SHARED_SAVER,
    CONFIG_KEY_STREAM,
    CONFIG_KEY_TASK_ID,
    DEFAULT_RECURSION_LIMIT,
    INTERRUPT,
    NS_END,
    NS_SEP,
    TASKS,
)
from graphruntime.cache import BaseCache, CachePolicy
from graphruntime.channels import BaseChannel, Topic
from graphruntime.checkpoint.base import BaseCheckpointSaver
from graphruntime.pregel._builder import NodeBuilder, with_name
from graphruntime.pregel._cache import namespace
from graphruntime.pregel._callbacks import RunHooks, as_runnable, run_hooks
from graphruntime.pregel._callbacks import astream_events as lc_astream_events
from graphruntime.pregel._callbacks import astream_log as lc_astream_log
from graphruntime.pregel._driver import AsyncioExecutor, ThreadExecutor, adrive, drive
from graphruntime.pregel._loop import ALOAD, LOAD, PregelLoop, RunOptions
from graphruntime.pregel._node import NodeSpec
from graphruntime.pregel._schema import PregelSchemas
from graphruntime.pregel._state import (
    bulk_update_state,
    get_state,
    get_state_history,
    update_state,
)
from graphruntime.pregel._stream import StreamChunk, StreamSink, stream_part
from graphruntime.pregel._stream_events import astream_v3, stream_v3
from graphruntime.pregel._validate import validate_graph, validate_keys
from graphruntime.runtime import RunControl
from graphruntime.store.base import BaseStore
from graphruntime.stream.run_stream import GraphRunStream
from graphruntime.types import (
    All,
    Durability,
    GraphOutput,
    RetryPolicy,
    Send,
    StateSnapshot,
    StateUpdate,
    StreamMode,
)
from graphruntime.warnings import LangGraphDeprecatedSinceV10

if TYPE_CHECKING:
    from graphruntime.managed.base import ManagedValueSpec

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

    _output_mapper: Callable[[Any], Any] | None = None
    """Turns a ``values`` dict into the output schema (v2 streams); set by StateGraph."""
    _state_mapper: Callable[[Any], Any] | None = None
    """Turns a checkpoint's values into the state schema (v2 streams); set by StateGraph."""

    config: RunnableConfig | None = None
    """Config every run of this graph starts from (see :meth:`with_config`)."""

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
            raise TypeError(
                f"Pregel() got unexpected keyword arguments: {sorted(deprecated_kwargs)}"
            )
        _reject_unsupported(node_error_handler_map=node_error_handler_map)
        if step_timeout is not None and step_timeout <= 0:
            raise ValueError("step_timeout must be greater than 0")
        if not (checkpointer is None or isinstance(checkpointer, (bool, BaseCheckpointSaver))):
            raise TypeError(
                "Invalid checkpointer provided. Expected an instance of `BaseCheckpointSaver`, "
                f"`True`, `False`, or `None`. Received {type(checkpointer).__name__}. "
                "Pass a proper saver (e.g., InMemorySaver, AsyncPostgresSaver)."
            )
        self.nodes: dict[str, NodeSpec] = with_name(nodes)
        all_channels: dict[str, BaseChannel | ManagedValueSpec] = dict(channels or {})
        if TASKS in all_channels and not isinstance(all_channels[TASKS], Topic):
            raise ValueError(f"Channel '{TASKS}' is reserved and cannot be used in the graph.")
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

    # --- plumbing -------------------------------------------------------------------------

    def _saver(self, config: RunnableConfig) -> BaseCheckpointSaver | None:
        if self.checkpointer is False:
            return None
        conf = config.get(CONF, {})
        inherited = conf.get(CONFIG_KEY_CHECKPOINTER)
        if isinstance(self.checkpointer, BaseCheckpointSaver):
            if conf.get(CONFIG_KEY_SHARED_SAVER) and isinstance(inherited, BaseCheckpointSaver):
                return inherited  # see RunOptions.shared_saver
            return self.checkpointer
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
        *,
        is_async: bool = False,
        version: str = "v1",
        durability: Durability | None = None,
        kwargs: Mapping[str, Any] | None = None,
        context: Any = None,
        control: RunControl | None = None,
    ) -> tuple[PregelLoop, bool, RunHooks | None]:
        cfg = ensure_config(merge_configs(self.config, config) if self.config else config)
        validate_keys(output_keys, self.channel_specs)
        conf = cfg[CONF]
        _address_as_metadata(cfg)
        durability = _durability(durability, kwargs or {}, conf)
        if durability is not None:
            conf[CONFIG_KEY_DURABILITY] = durability  # its subgraphs run the same way
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
            if self.checkpointer is True:
                # one history per thread: its namespace without the task ids
                conf[CONFIG_KEY_CHECKPOINT_NS] = stable_ns(conf[CONFIG_KEY_CHECKPOINT_NS])
        else:
            parent_stream = None
            if self.checkpointer is True:
                raise RuntimeError("checkpointer=True cannot be used for root graphs.")
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
        # a root run runs the root graph, whatever namespace its config names (a
        # subgraph's config from get_state(subgraphs=True) addresses it by checkpoint_map)
        ns = conf.get(CONFIG_KEY_CHECKPOINT_NS) if nested else None
        sink = StreamSink(
            set(modes),
            subgraphs,
            tuple(ns.split(NS_SEP)) if ns else (),
            parent_stream if isinstance(parent_stream, StreamSink) else None,
        )
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
                durability=durability or "async",
                context=context,
                control=control,
            ),
            saved=ALOAD if is_async else LOAD,
        )
        hooks = run_hooks(
            loop,
            name=self.name,
            modes=modes,
            subgraphs=subgraphs,
            is_async=is_async,
            version=version,
        )
        return loop, single, hooks

    def run_options(
        self,
        config: RunnableConfig,
        *,
        output_keys: str | Sequence[str] | None = None,
        interrupt_before: All | Sequence[str] | None = None,
        interrupt_after: All | Sequence[str] | None = None,
        stop: int | None = None,
        durability: Durability = "async",
        context: Any = None,
        control: RunControl | None = None,
        shared_saver: bool = False,
    ) -> RunOptions:
        """A run's options, from its config and call arguments.

        Call-time breakpoints replace the compiled ones; the recursion limit comes from
        ``config["recursion_limit"]`` (LangGraph's default otherwise). ``context`` is the
        run's context (coerced to the graph's ``context_schema``), ``control`` its
        drain control, ``shared_saver`` see :class:`RunOptions`.
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
            durability=durability,
            shared_saver=shared_saver,
        )

    def _require_saver(self, config: RunnableConfig) -> BaseCheckpointSaver:
        saver = self._saver(ensure_config(config))
        if saver is None and self.checkpointer is True:
            # True means "the parent's saver": a root graph has none to lend
            raise RuntimeError("checkpointer=True cannot be used for root graphs.")
        if saver is None:
            raise ValueError("No checkpointer set")
        return saver

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
            raise ValueError(f"Unknown stream version {version!r}: use 'v1' or 'v2'")
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
        loop, single, hooks = self._prepare(
            input,
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
        for chunk in _run(loop, input, hooks):
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
            return _collect_parts(parts, stream_mode, version)
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
        return _collect(_run(loop, input, hooks), loop, "values")

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
        loop, _single, hooks = self._prepare(
            input,
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
        loop, single, hooks = self._prepare(
            input,
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
        async with aclosing(_arun(loop, input, hooks)) as chunks:
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
            return _collect_parts([p async for p in parts], stream_mode, version)
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
        chunks = [c async for c in _arun(loop, input, hooks)]
        return _collect(iter(chunks), loop, "values")

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

    # --- event streams (see _stream_events.py and _callbacks.py) --------------------------

    def stream_events(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        version: Literal["v1", "v2", "v3"] = "v2",
        transformers: Sequence[Callable[[tuple[str, ...]], Any]] | None = None,
        **kwargs: Any,
    ) -> GraphRunStream:
        """A run stream (``version="v3"``) whose projections the caller reads.

        ``transformers``: extra :class:`StreamTransformer` classes or ``scope ->
        transformer`` factories. Other keywords go to :meth:`stream`, but for
        ``stream_mode`` and ``subgraphs``, which v3 decides. LangChain has no
        synchronous v1/v2 event stream: use :meth:`astream_events` for those.
        """
        if version == "v3":
            return stream_v3(self, input, config, transformers, **kwargs)
        raise NotImplementedError(
            f"stream_events(version={version!r}) is not available synchronously (nor in "
            "LangChain): use astream_events for v1/v2, or version='v3'."
        )

    def astream_events(
        self,
        input: Any,
        config: RunnableConfig | None = None,
        *,
        version: Literal["v1", "v2", "v3"] = "v2",
        transformers: Sequence[Callable[[tuple[str, ...]], Any]] | None = None,
        **kwargs: Any,
    ) -> Any:
        """LangChain's event stream (v1/v2 dicts), or an awaitable run stream (v3).

        For v1/v2 (needs langchain-core) the filters ``include_names`` / ``_types`` /
        ``_tags`` and ``exclude_*`` are LangChain's; other keywords go to
        :meth:`astream`.
        """
        if version == "v3":
            return astream_v3(self, input, config, transformers, **kwargs)
        if transformers is not None:
            raise TypeError("transformers= is only for astream_events(version='v3')")
        return lc_astream_events(self, input, config, version=version, **kwargs)

    def astream_log(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """LangChain's run log stream (``RunLogPatch`` chunks; needs langchain-core).

        Its filters (``include_names`` ...), ``diff`` and ``with_streamed_output_list``
        are LangChain's; other keywords go to :meth:`astream`.
        """
        return lc_astream_log(self, input, config, **kwargs)

    def __or__(self, other: Any) -> Any:
        """``graph | runnable``: a LangChain RunnableSequence (needs langchain-core)."""
        return as_runnable(self) | other

    def __ror__(self, other: Any) -> Any:
        return other | as_runnable(self)

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
        history = await asyncio.to_thread(
            lambda: list(self.get_state_history(config, filter=filter, before=before, limit=limit))
        )
        for snapshot in history:
            yield snapshot

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


_DURABILITIES = ("sync", "async", "exit")


def stable_ns(ns: str) -> str:
    """A namespace without its task ids (``"a:<id>|b:<id>"`` -> ``"a|b"``)."""
    return NS_SEP.join(part.split(NS_END)[0] for part in ns.split(NS_SEP))


# configurable keys a run shows as metadata to its nodes (and so on the ``messages``
# stream), as LangGraph does; the caller's own metadata of the same name wins
_AS_METADATA = (
    "thread_id",
    "checkpoint_id",
    "checkpoint_ns",
    "task_id",
    "run_id",
    "assistant_id",
    "graph_id",
)


def _address_as_metadata(cfg: RunnableConfig) -> None:
    conf = cfg.get(CONF) or {}
    metadata = cfg.setdefault("metadata", {})
    for key in _AS_METADATA:
        value = conf.get(key)
        if value and key not in metadata:
            metadata[key] = value


def _durability(
    durability: Durability | None, kwargs: Mapping[str, Any], conf: Mapping[str, Any]
) -> Durability | None:
    """The run's durability: the argument, the deprecated ``checkpoint_during``, or the
    parent run's (a subgraph saves the way its parent does)."""
    during = kwargs.get("checkpoint_during")
    if during is not None:
        warnings.warn(
            "`checkpoint_during` is deprecated and will be removed. "
            "Please use `durability` instead.",
            LangGraphDeprecatedSinceV10,
            stacklevel=4,
        )
        if durability is not None:
            raise ValueError(
                "Cannot use both `checkpoint_during` and `durability` parameters. "
                "Please use `durability` instead."
            )
        durability = "async" if during else "exit"
    if durability is None:
        inherited = conf.get(CONFIG_KEY_DURABILITY)
        return inherited if inherited in _DURABILITIES else None
    if durability not in _DURABILITIES:
        raise ValueError(f"durability must be one of {_DURABILITIES}, got {durability!r}")
    return durability


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


def coerce_context(schema: Any, context: Any) -> Any:
    """A dict context becomes an instance of a dataclass or pydantic ``context_schema``."""
    if context is None or schema is None or not isinstance(context, dict):
        return context
    if isinstance(schema, type) and (
        dataclasses.is_dataclass(schema) or hasattr(schema, "model_validate")
    ):
        return schema(**context)
    return context


def _run(loop: PregelLoop, input: Any, hooks: RunHooks | None) -> Iterator[StreamChunk]:
    executor = ThreadExecutor(loop.config.get("max_concurrency"))
    try:
        if hooks is None:
            loop.first(input)
            yield from drive(loop, executor)
            return
        try:
            hooks.start(input)
            loop.first(input)
            hooks.started()
            yield from drive(loop, executor)
            hooks.end()
        except BaseException as exc:
            hooks.error(exc)
            raise
    finally:
        executor.close()


async def _arun(
    loop: PregelLoop, input: Any, hooks: RunHooks | None
) -> AsyncGenerator[StreamChunk, None]:
    executor = AsyncioExecutor(loop.config.get("max_concurrency"))
    if hooks is None:
        if not loop.loaded:
            await loop.aload()
        loop.first(input)
        async with aclosing(adrive(loop, executor)) as chunks:
            async for chunk in chunks:
                yield chunk
        return
    try:
        await hooks.astart(input)
        if not loop.loaded:
            await loop.aload()
        loop.first(input)
        await hooks.astarted()
        async with aclosing(adrive(loop, executor)) as chunks:
            async for chunk in chunks:
                yield chunk
        await hooks.aend()
    except BaseException as exc:
        await asyncio.shield(hooks.aerror(exc))
        raise


def _collect_parts(parts: Iterable[Any], stream_mode: Any, version: str) -> Any:
    """``invoke`` of v2, or of several modes: the final output, or every chunk."""
    if stream_mode != "values":
        return list(parts)
    latest: Any = None
    interrupts: list[Any] = []
    for part in parts:
        if part["type"] == "values":
            latest = part["data"]
            interrupts.extend(part["interrupts"])
    return GraphOutput(latest, tuple(interrupts))


def _collect(chunks: Iterator[StreamChunk], loop: PregelLoop, stream_mode: str) -> Any:
    latest: Any = None
    for ns, mode, payload in chunks:
        if ns != loop.ns_tuple:
            continue
        if mode == stream_mode:
            latest = payload
    if not loop.is_nested and loop.interrupts:
        if latest is not None and not isinstance(latest, dict):
            return {INTERRUPT: list(loop.interrupts)}  # a single output key: the interrupts
        base = {k: v for k, v in (latest or {}).items() if k != INTERRUPT}
        return {**base, INTERRUPT: list(loop.interrupts)}
    if isinstance(latest, dict) and INTERRUPT in latest:
        latest = {k: v for k, v in latest.items() if k != INTERRUPT}
    return latest


__all__ = ["Checkpointer", "Literal", "Pregel"]
