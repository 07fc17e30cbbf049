"""Running a compiled graph in this process: its options, its loop, its driver.

``Pregel.stream``/``invoke`` and their async twins call :func:`prepare` for a run's
loop, then :func:`run` (or :func:`arun`) drives it with the in-process executors and
:func:`collect` folds its chunks into ``invoke``'s output. :func:`run_options` is the
one place a run's options are read from its config and call arguments; the workers
use it too (through :mod:`graphruntime.pregel.driver`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import warnings
from collections.abc import (
    AsyncGenerator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import Any, Protocol

from graphruntime._internal._config import RunnableConfig, ensure_config, merge_configs
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CHECKPOINT_NS,
    CONFIG_KEY_CHECKPOINTER,
    CONFIG_KEY_DURABILITY,
    CONFIG_KEY_SAVER_IO,
    CONFIG_KEY_SCRATCHPAD,
    CONFIG_KEY_SHARED_SAVER,
    CONFIG_KEY_STREAM,
    CONFIG_KEY_TASK_ID,
    DEFAULT_RECURSION_LIMIT,
    INTERRUPT,
    NS_END,
    NS_SEP,
)
from graphruntime._internal._twin import Call, Nested, Request, aiterate, iterate
from graphruntime.checkpoint.base import BaseCheckpointSaver
from graphruntime.errors import InvalidArgumentError, UsageError
from graphruntime.pregel._callbacks import RunHooks, run_hooks
from graphruntime.pregel._driver import driving
from graphruntime.pregel._executors import AsyncioExecutor, ThreadExecutor
from graphruntime.pregel._loop import PregelLoop
from graphruntime.pregel._loop_state import ALOAD, LOAD, RunOptions
from graphruntime.pregel._node import GraphSpec
from graphruntime.pregel._saves import SaverIO
from graphruntime.pregel._stream import StreamChunk, StreamSink
from graphruntime.pregel._validate import validate_keys
from graphruntime.runtime import RunControl
from graphruntime.types import All, Durability, GraphOutput, StreamMode
from graphruntime.warnings import LangGraphDeprecatedSinceV10


class RunGraph(GraphSpec, Protocol):
    """What running a graph needs from it beyond a step's needs (``Pregel`` is one)."""

    @property
    def config(self) -> RunnableConfig | None: ...
    @property
    def checkpointer(self) -> BaseCheckpointSaver | bool | None: ...
    @property
    def stream_mode(self) -> StreamMode: ...
    @property
    def interrupt_before_nodes(self) -> All | Sequence[str]: ...
    @property
    def interrupt_after_nodes(self) -> All | Sequence[str]: ...
    @property
    def name(self) -> str: ...


def saver_of(graph: RunGraph, config: RunnableConfig) -> BaseCheckpointSaver | None:
    """The saver a run of ``graph`` with ``config`` saves with (None: it saves nothing)."""
    if graph.checkpointer is False:
        return None
    conf = config.get(CONF, {})
    inherited = conf.get(CONFIG_KEY_CHECKPOINTER)
    if isinstance(graph.checkpointer, BaseCheckpointSaver):
        if conf.get(CONFIG_KEY_SHARED_SAVER) and isinstance(inherited, BaseCheckpointSaver):
            return inherited  # see RunOptions.shared_saver
        return graph.checkpointer
    return inherited if isinstance(inherited, BaseCheckpointSaver) else None


def prepare(
    graph: RunGraph,
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
    """A run's loop (not started), whether it streams a single mode, and its callbacks."""
    cfg = ensure_config(merge_configs(graph.config, config) if graph.config else config)
    validate_keys(output_keys, graph.channel_specs)
    conf = cfg[CONF]
    address_as_metadata(cfg)
    durability = durability_of(durability, kwargs or {}, conf)
    if durability is not None:
        conf[CONFIG_KEY_DURABILITY] = durability  # its subgraphs run the same way
    nested = CONFIG_KEY_TASK_ID in conf
    if nested:
        parent_stream = conf.get(CONFIG_KEY_STREAM)
        scratchpad = conf.get(CONFIG_KEY_SCRATCHPAD)
        if scratchpad is not None:
            idx = scratchpad.subgraph_counter()
            if idx:
                conf[CONFIG_KEY_CHECKPOINT_NS] = f"{conf[CONFIG_KEY_CHECKPOINT_NS]}{NS_SEP}{idx}"
        if graph.checkpointer is True:
            # one history per thread: its namespace without the task ids
            conf[CONFIG_KEY_CHECKPOINT_NS] = stable_ns(conf[CONFIG_KEY_CHECKPOINT_NS])
    else:
        parent_stream = None
        if graph.checkpointer is True:
            raise UsageError("checkpointer=True cannot be used for root graphs.")
    saver = saver_of(graph, cfg)
    if saver is not None and not nested and not conf.get("thread_id"):
        raise InvalidArgumentError(
            "Checkpointer requires one or more of the following 'configurable' keys: "
            "thread_id, checkpoint_ns, checkpoint_id"
        )
    modes: list[str] = (
        [stream_mode]
        if isinstance(stream_mode, str)
        else list(stream_mode)
        if stream_mode
        else [graph.stream_mode]
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
        graph,
        cfg,
        checkpointer=saver,
        sink=sink,
        options=run_options(
            graph,
            cfg,
            output_keys=graph.stream_channels if output_keys is None else output_keys,
            interrupt_before=interrupt_before,
            interrupt_after=interrupt_after,
            durability=durability or "async",
            context=context,
            control=control,
            saver_io=conf.get(CONFIG_KEY_SAVER_IO),
        ),
        saved=ALOAD if is_async else LOAD,
    )
    hooks = run_hooks(
        loop,
        name=graph.name,
        modes=modes,
        subgraphs=subgraphs,
        is_async=is_async,
        version=version,
    )
    return loop, single, hooks


@functools.cache
def _default_recursion_limit() -> int:
    """``LANGGRAPH_DEFAULT_RECURSION_LIMIT`` or LangGraph's default, read once (LangGraph
    reads it at import): a miss in ``os.environ`` costs an exception caught."""
    return int(os.environ.get("LANGGRAPH_DEFAULT_RECURSION_LIMIT", DEFAULT_RECURSION_LIMIT))


def run_options(
    graph: RunGraph,
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
    task_errors: Callable[[str], Mapping[str, BaseException]] | None = None,
    saver_io: SaverIO | None = None,
) -> RunOptions:
    """A run's options, from its config and call arguments.

    Call-time breakpoints replace the compiled ones; the recursion limit comes from
    ``config["recursion_limit"]`` (LangGraph's default otherwise). ``context`` is the
    run's context (coerced to the graph's ``context_schema``), ``control`` its
    drain control; ``shared_saver``, ``task_errors`` and ``saver_io`` see
    :class:`RunOptions`.
    """
    limit = config.get("recursion_limit")
    if limit is None:
        limit = _default_recursion_limit()
    if limit < 1:
        raise InvalidArgumentError("recursion_limit must be at least 1")
    before = interrupt_before or graph.interrupt_before_nodes
    after = interrupt_after or graph.interrupt_after_nodes
    keys = graph.output_channels if output_keys is None else output_keys
    return RunOptions(
        output_keys=keys if isinstance(keys, str) else tuple(keys),
        context=coerce_context(graph.context_schema, context),
        control=control,
        interrupt_before=before if before == "*" else tuple(before),
        interrupt_after=after if after == "*" else tuple(after),
        recursion_limit=limit,
        stop=stop,
        durability=durability,
        shared_saver=shared_saver,
        task_errors=task_errors,
        saver_io=saver_io,
    )


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


def address_as_metadata(cfg: RunnableConfig) -> None:
    conf = cfg.get(CONF) or {}
    metadata = cfg.setdefault("metadata", {})
    for key in _AS_METADATA:
        value = conf.get(key)
        if value and key not in metadata:
            metadata[key] = value


def durability_of(
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
            raise InvalidArgumentError(
                "Cannot use both `checkpoint_during` and `durability` parameters. "
                "Please use `durability` instead."
            )
        durability = "async" if during else "exit"
    if durability is None:
        inherited = conf.get(CONFIG_KEY_DURABILITY)
        return inherited if inherited in _DURABILITIES else None
    if durability not in _DURABILITIES:
        raise InvalidArgumentError(f"durability must be one of {_DURABILITIES}, got {durability!r}")
    return durability


def coerce_context(schema: Any, context: Any) -> Any:
    """A dict context becomes an instance of a dataclass or pydantic ``context_schema``."""
    if context is None or schema is None or not isinstance(context, dict):
        return context
    if isinstance(schema, type) and (
        dataclasses.is_dataclass(schema) or hasattr(schema, "model_validate")
    ):
        return schema(**context)
    return context


def run(loop: PregelLoop, input: Any, hooks: RunHooks | None) -> Iterator[StreamChunk]:
    """Start ``loop`` on ``input`` and drive it on threads (:func:`running`)."""
    return iterate(running(loop, input, hooks, is_async=False))


def arun(loop: PregelLoop, input: Any, hooks: RunHooks | None) -> AsyncGenerator[StreamChunk, None]:
    """Async twin of :func:`run`: the loop driven as asyncio tasks."""
    return aiterate(running(loop, input, hooks, is_async=True))


def running(
    loop: PregelLoop, input: Any, hooks: RunHooks | None, *, is_async: bool
) -> Generator[Request | Nested | StreamChunk, Any, None]:
    """A run, written once (``_twin.py``): its callbacks, its start, its driver."""
    limit = loop.config.get("max_concurrency")
    executor = AsyncioExecutor(limit) if is_async else ThreadExecutor(limit)
    try:
        if hooks is None:
            if not loop.loaded:
                yield Call(None, loop.aload)  # a sync run's loop read its checkpoint
            loop.first(input)
            yield Nested(driving(loop, executor, is_async=is_async), requests=is_async)
            return
        try:
            yield Call(hooks.start, hooks.astart, input)
            if not loop.loaded:
                yield Call(None, loop.aload)
            loop.first(input)
            yield Call(hooks.started, hooks.astarted)
            yield Nested(driving(loop, executor, is_async=is_async), requests=is_async)
            yield Call(hooks.end, hooks.aend)
        except BaseException as exc:
            yield Call(hooks.error, _shielded(hooks.aerror), exc)
            raise
    finally:
        if isinstance(executor, ThreadExecutor):
            executor.close()


def _shielded(
    hook: Callable[[BaseException], Awaitable[None]],
) -> Callable[[BaseException], Awaitable[None]]:
    """An error hook a cancellation of the run does not cut short."""
    return lambda exc: asyncio.shield(hook(exc))


def collect_parts(parts: Iterable[Any], stream_mode: Any, version: str) -> Any:
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


def collect(chunks: Iterator[StreamChunk], loop: PregelLoop, stream_mode: str) -> Any:
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
