"""``Pregel``: a compiled graph — run it, stream it, inspect and edit its threads."""

from __future__ import annotations

import copy
import warnings
from collections.abc import (
    AsyncIterator,
    Callable,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import aclosing
from dataclasses import dataclass, fields
from functools import partial
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Literal, Self, cast

from graphruntime._internal._config import RunnableConfig, merge_configs
from graphruntime._internal._constants import (
    NS_SEP,
    TASKS,
)
from graphruntime._internal._twin import Fold, Nested, aiterate, iterate
from graphruntime.cache import BaseCache, CachePolicy
from graphruntime.channels import BaseChannel, Topic
from graphruntime.checkpoint.base import BaseCheckpointSaver
from graphruntime.errors import (
    GraphValidationError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    NotSupportedError,
)
from graphruntime.pregel._batch import in_tasks, in_threads
from graphruntime.pregel._batch import plan as batch_plan
from graphruntime.pregel._builder import NodeBuilder, with_name
from graphruntime.pregel._node import NodeSpec
from graphruntime.pregel._run import arun, collect, collect_parts, prepare, run, running
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
    # Each sync/async pair is two shells over one core (``_internal/_twin.py``): the sync
    # one performs its requests at once, the async one awaits them.

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
        yield from iterate(self._streaming(input, config, False, _RunArgs.of(locals()), subgraphs))

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
        # closing the stream closes the run at once: its running tasks are cancelled
        async with aclosing(
            aiterate(self._streaming(input, config, True, _RunArgs.of(locals()), subgraphs))
        ) as chunks:
            async for chunk in chunks:
                yield chunk

    def _streaming(
        self,
        input: Any,
        config: RunnableConfig | None,
        is_async: bool,
        args: _RunArgs,
        subgraphs: bool,
    ) -> Generator[Any, Any, None]:
        """The run :meth:`stream` and :meth:`astream` stream, its chunks shaped."""
        shape = self._shaper(args.version, subgraphs)
        loop, single, hooks = prepare(
            self,
            config,
            args.stream_mode,
            subgraphs,
            args.interrupt_before,
            args.interrupt_after,
            args.output_keys,
            is_async=is_async,
            version=args.version,
            durability=args.durability,
            kwargs=args.kwargs,
            context=args.context,
            control=args.control,
        )
        run = running(loop, input, hooks, is_async=is_async)
        yield Nested(run, lambda chunk: shape(chunk, single))

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
        return self._invoking(input, config, False, _RunArgs.of(locals())).now()

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
        return await self._invoking(input, config, True, _RunArgs.of(locals())).later()

    def _invoking(
        self, input: Any, config: RunnableConfig | None, is_async: bool, args: _RunArgs
    ) -> Fold:
        """What :meth:`invoke` and :meth:`ainvoke` do: a stream folded into the output."""
        if args.version == "v2" or args.stream_mode != "values":
            options: dict[str, Any] = {
                "stream_mode": args.stream_mode,
                "output_keys": args.output_keys,
                "interrupt_before": args.interrupt_before,
                "interrupt_after": args.interrupt_after,
                "version": args.version,
                "durability": args.durability,
                "context": args.context,
                "control": args.control,
                **args.kwargs,
            }
            return Fold(
                partial(self.stream, input, config, **options),
                partial(self.astream, input, config, **options),
                lambda parts: collect_parts(parts, args.stream_mode, args.version),
            )
        loop, _single, hooks = prepare(
            self,
            config,
            ["values"],
            False,
            args.interrupt_before,
            args.interrupt_after,
            self.output_channels if args.output_keys is None else args.output_keys,
            is_async=is_async,
            durability=args.durability,
            kwargs=args.kwargs,
            context=args.context,
            control=args.control,
        )
        return Fold(
            partial(run, loop, input, hooks),
            partial(arun, loop, input, hooks),
            lambda chunks: collect(chunks, loop, "values"),
        )

    def batch(
        self,
        inputs: Sequence[Any],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """``invoke`` each input (concurrently, up to the config's ``max_concurrency``)."""
        calls, limit = batch_plan(inputs, config)
        return in_threads(partial(self.invoke, **kwargs), calls, limit, return_exceptions)

    async def abatch(
        self,
        inputs: Sequence[Any],
        config: RunnableConfig | Sequence[RunnableConfig] | None = None,
        *,
        return_exceptions: bool = False,
        **kwargs: Any,
    ) -> list[Any]:
        """Async twin of :meth:`batch`."""
        calls, limit = batch_plan(inputs, config)
        return await in_tasks(partial(self.ainvoke, **kwargs), calls, limit, return_exceptions)

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


@dataclass(slots=True)  # not frozen (treat it as immutable): one per call, cheaper to set
class _RunArgs:
    """The options of a run call (``stream``, ``invoke`` and their twins)."""

    context: Any
    control: RunControl | None
    stream_mode: Any
    output_keys: str | Sequence[str] | None
    interrupt_before: All | Sequence[str] | None
    interrupt_after: All | Sequence[str] | None
    version: Literal["v1", "v2"]
    durability: Durability | None
    kwargs: dict[str, Any]

    @classmethod
    def of(cls, call: Mapping[str, Any]) -> _RunArgs:
        """The options among a run method's arguments (its ``locals()``)."""
        return cls(*_run_args(call))


_run_args = itemgetter(*(field.name for field in fields(_RunArgs)))


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
