"""LangChain callbacks for graph runs and their tasks (needs langchain-core).

Loaded by :mod:`graphruntime.pregel._callbacks` only when a run asks for callbacks;
one of the few graphruntime modules that import langchain-core (import-linter's
``graphruntime-pure`` contract lists them).

A graph run is a LangChain chain run (``on_chain_start`` / ``on_chain_end`` /
``on_chain_error``) named after the graph; each task is a child run named after its
node, tagged ``graph:step:<n>``, with the ``langgraph_*`` metadata. A node that is a
graph runs as the task run's first step (tagged ``seq:step:1``), as in LangGraph. The
node sees the task's callbacks in its config and in LangChain's context variable, so
the chat models and runnables it calls report under it.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import uuid4

from langchain_core.callbacks import AsyncCallbackManager, CallbackManager
from langchain_core.callbacks.base import BaseCallbackManager
from langchain_core.callbacks.manager import (
    BaseRunManager,
    CallbackManagerForChainRun,
)
from langchain_core.runnables import Runnable
from langchain_core.runnables.config import var_child_runnable_config
from langchain_core.tracers.base import BaseTracer
from langchain_core.tracers.context import _tracing_v2_is_enabled
from langchain_core.tracers.langchain import LangChainTracer
from langsmith.run_helpers import _set_tracing_context, get_tracing_context

from graphruntime._internal._call import call_async, call_sync
from graphruntime._internal._config import RunnableConfig, var_config
from graphruntime._internal._constants import CONF, CONFIG_KEY_RESUMING
from graphruntime._internal._twin import Call, Request, aperform, either, perform
from graphruntime._internal._typing import MISSING
from graphruntime.callbacks import (
    GraphInterruptEvent,
    GraphLifecycleStatus,
    GraphResumeEvent,
    _AsyncGraphCallbackManager,
    _GraphCallbackManager,
)
from graphruntime.pregel._io import output_values
from graphruntime.pregel._lc_messages import (
    StreamingCallbackHandler,
    StreamMessagesHandler,
    StreamMessagesHandlerV2,
)
from graphruntime.pregel._lc_tools import StreamToolCallHandler
from graphruntime.types import TracePolicy

if TYPE_CHECKING:
    # annotations only: the loop reaches this module through a task's node call
    from graphruntime.pregel._loop_tasks import LoopTasks

logger = logging.getLogger(__name__)

__all__ = ("RunCallbacks", "acall_traced", "as_runnable", "astream_events", "call_traced")

# configurable keys LangChain tracers show as run metadata (as LangGraph does)
_AS_METADATA = (
    "thread_id",
    "checkpoint_id",
    "checkpoint_ns",
    "task_id",
    "run_id",
    "assistant_id",
    "graph_id",
)


def _run_metadata(config: RunnableConfig) -> dict[str, Any]:
    metadata = dict(config.get("metadata") or {})
    configurable = config.get(CONF) or {}
    for key in _AS_METADATA:
        value = configurable.get(key)
        if key not in metadata and value and isinstance(value, (str, int, float, bool)):
            metadata[key] = value
    return metadata


def _manager(config: RunnableConfig, cls: type[Any]) -> Any:
    """The callback manager of a task's node: its config's callbacks, tags and metadata."""
    return cls.configure(
        inheritable_callbacks=config.get("callbacks"),
        inheritable_tags=config.get("tags"),
        inheritable_metadata=config.get("metadata"),
    )


def _graph_manager(config: RunnableConfig, cls: type[Any]) -> Any:
    """The callback manager of a graph run; it also shows the thread as metadata."""
    manager = cls.configure(
        inheritable_callbacks=config.get("callbacks"),
        inheritable_tags=config.get("tags"),
        inheritable_metadata=_run_metadata(config),
    )
    if "ls_integration" not in manager.metadata:
        manager.add_metadata({"ls_integration": "langgraph"})
    return manager


def _streams_only_its_graph(handler: object) -> bool:
    return (
        isinstance(handler, (StreamMessagesHandler, StreamToolCallHandler))
        and not handler.subgraphs
    )


def _lifecycle_status(loop: LoopTasks) -> GraphLifecycleStatus:
    # a node's interrupt leaves the loop "interrupted"; LangGraph reports it as pending
    status = loop.status
    # a drained run stopped between steps with work left: pending, as an interrupted one
    if status == "interrupted" or status == "draining":
        return "pending"
    return status


class RunCallbacks:
    """The LangChain run of one graph run, and its graph lifecycle events."""

    def __init__(
        self,
        loop: LoopTasks,
        *,
        name: str,
        messages: bool,
        messages_v2: bool,
        tools: bool,
        subgraphs: bool,
        is_async: bool,
    ) -> None:
        self.loop = loop
        self.name = name
        self.config = loop.config
        self.is_async = is_async
        self.run: Any = None
        self.graph_events: Any = None
        self.stream_handlers: list[Any] = []
        if messages:
            handler_cls = StreamMessagesHandlerV2 if messages_v2 else StreamMessagesHandler
            self.stream_handlers.append(handler_cls(self._put, subgraphs, parent_ns=loop.ns_tuple))
        if tools:
            self.stream_handlers.append(
                StreamToolCallHandler(self._put, subgraphs, parent_ns=loop.ns_tuple)
            )

    def _put(self, chunk: tuple[tuple[str, ...], str, Any]) -> None:
        # this run's stream only: an enclosing run streaming these modes has its own
        # handler among the inherited callbacks, which reports the same events
        self.loop.sink.put_local(*chunk)

    def _manager(self) -> Any:
        manager = _graph_manager(
            self.config, AsyncCallbackManager if self.is_async else CallbackManager
        )
        v1_messages = any(type(h) is StreamMessagesHandler for h in self.stream_handlers)
        top_level = not self.loop.is_nested
        for attr in ("handlers", "inheritable_handlers"):
            setattr(
                manager,
                attr,
                [
                    h
                    for h in getattr(manager, attr)
                    # a v1 messages stream gets tokens, not the v2 events an outer
                    # stream_events(version="v3") asked its models for
                    if not (v1_messages and isinstance(h, StreamMessagesHandlerV2))
                    # a graph not run as a task starts at the root namespace: a
                    # caller's handler that streams only its own graph would take
                    # this graph's events for its own (one streaming subgraphs asked)
                    and not (top_level and _streams_only_its_graph(h))
                ],
            )
        return manager

    def _started(self, run: Any) -> None:
        self.run = run
        run.inheritable_handlers.extend(self.stream_handlers)
        # the loop's tasks take their callbacks from the graph's run (see task_config)
        config = {**self.loop.config, "callbacks": run}
        config.pop("run_id", None)
        config.pop("run_name", None)
        self.loop.config = cast(RunnableConfig, config)

    def _resume_event(self) -> GraphResumeEvent | None:
        if not self.loop.config[CONF].get(CONFIG_KEY_RESUMING):
            return None
        return GraphResumeEvent(
            run_id=self.run.run_id,
            status="pending",
            checkpoint_id=self.loop.checkpoint["id"],
            checkpoint_ns=self.loop.ns_tuple,
        )

    def _interrupt_event(self) -> GraphInterruptEvent | None:
        loop = self.loop
        if loop.is_nested or loop.status not in (
            "interrupted",
            "interrupt_before",
            "interrupt_after",
        ):
            return None
        return GraphInterruptEvent(
            run_id=self.run.run_id,
            status=_lifecycle_status(loop),
            checkpoint_id=loop.checkpoint["id"],
            checkpoint_ns=loop.ns_tuple,
            interrupts=tuple(loop.interrupts),
        )

    def _output(self) -> Any:
        """The run's output; paused, with the writes of the step's finished tasks."""
        loop = self.loop
        if loop.status == "interrupted" and (pending := loop.values_with_pending()) is not MISSING:
            return pending
        return output_values(loop.graph.output_channels, True, loop.channels)

    def attach(self) -> None:
        """The loop's tasks get the stream handlers, with no graph run started: for a
        process that runs some of a run's tasks, where the graph's run spans processes.

        The tasks are children of a run nobody reports (no handler sees it start), with
        the tags and metadata the graph's run would give them.
        """
        graph = _graph_manager(self.config, CallbackManager)
        run = CallbackManagerForChainRun(
            run_id=uuid4(),
            handlers=[],
            inheritable_handlers=[],
            tags=graph.tags,
            inheritable_tags=graph.inheritable_tags,
            metadata=graph.metadata,
            inheritable_metadata=graph.inheritable_metadata,
        )
        self._started(run)

    # --- sync ----------------------------------------------------------------------------

    def start(self, input: Any) -> None:
        run = self._manager().on_chain_start(
            None, input, name=self.name, run_id=self.config.get("run_id")
        )
        self._started(run)
        self.graph_events = _GraphCallbackManager.configure(
            self.config.get("callbacks"), run_id=run.run_id
        )

    def started(self) -> None:
        if self.graph_events.handlers and (event := self._resume_event()):
            self.graph_events.on_resume(event)

    def end(self) -> None:
        if self.graph_events.handlers and (event := self._interrupt_event()):
            self.graph_events.on_interrupt(event)
        self.run.on_chain_end(self._output())

    def error(self, exc: BaseException) -> None:
        if self.run is not None:
            self.run.on_chain_error(exc)

    # --- async ---------------------------------------------------------------------------

    async def astart(self, input: Any) -> None:
        run = await self._manager().on_chain_start(
            None, input, name=self.name, run_id=self.config.get("run_id")
        )
        self._started(run)
        self.graph_events = _AsyncGraphCallbackManager.configure(
            self.config.get("callbacks"), run_id=run.run_id
        )

    async def astarted(self) -> None:
        if self.graph_events.handlers and (event := self._resume_event()):
            await self.graph_events.on_resume(event)

    async def aend(self) -> None:
        if self.graph_events.handlers and (event := self._interrupt_event()):
            await self.graph_events.on_interrupt(event)
        await self.run.on_chain_end(self._output())

    async def aerror(self, exc: BaseException) -> None:
        if self.run is not None:
            await self.run.on_chain_error(exc)


# --- tasks -------------------------------------------------------------------------------


def _child_config(config: RunnableConfig, run: Any, func: Callable[..., Any]) -> RunnableConfig:
    # what the node runs (a subgraph, a function's chat models, its @task calls) is the
    # first step of the node's run, as in LangGraph (a node is a sequence there)
    return cast(RunnableConfig, {**config, "callbacks": run.get_child("seq:step:1")})


@contextmanager
def _in_context(config: RunnableConfig) -> Iterator[None]:
    """LangChain's context for a node: its runnables and LangSmith's run tree see the
    task's run as their parent."""
    lc_token, tracing = _set_config_context(config)
    token = var_config.set(config)
    try:
        yield
    finally:
        var_config.reset(token)
        var_child_runnable_config.reset(lc_token)
        if tracing is not None:
            _set_tracing_context(tracing)


def _set_config_context(config: RunnableConfig) -> tuple[Any, dict[str, Any] | None]:
    """Make ``config`` LangChain's current one, and its run LangSmith's current parent.

    The run is the one the config's callbacks are children of, as LangSmith's tracer
    recorded it; so ``get_current_run_tree()`` and ``@traceable`` functions inside the
    node see the task's run. Returns the token and the tracing context to restore
    (None: it was not changed).
    """
    token = var_child_runnable_config.set(cast(Any, config))
    callbacks = config.get("callbacks")
    parent_id = getattr(callbacks, "parent_run_id", None)
    if parent_id is None:
        return token, None
    tracer = next(
        (h for h in getattr(callbacks, "handlers", ()) if isinstance(h, LangChainTracer)), None
    )
    run = tracer.run_map.get(str(parent_id)) if tracer is not None else None
    if run is None:
        return token, None
    previous = get_tracing_context()
    _set_tracing_context({"parent": run})
    return token, previous


def tracing_enabled() -> bool:
    """Whether LangSmith tracing is on, so a run gets LangChain's tracer."""
    return bool(_tracing_v2_is_enabled())


def _is_stream_handler(handler: object) -> bool:
    # by inheritance, as LangChain marks its stream handlers: a handler (a tracer, an
    # exporter) that merely has the tap methods is not fed the node's output by them
    return StreamingCallbackHandler in type(handler).__mro__


def _streaming_handlers(run: Any) -> list[Any]:
    return [h for h in run.handlers if _is_stream_handler(h)]


def _trace_input(func: Callable[..., Any], value: Any) -> Any:
    """The input callbacks see: a ``@task`` call shows its arguments by name."""
    trace_input = getattr(type(func), "trace_input", None)
    return value if trace_input is None else trace_input(func, value)


def call_traced(
    func: Callable[..., Any],
    value: Any,
    config: RunnableConfig,
    name: str,
    trace_policy: TracePolicy | None = None,
) -> Any:
    """Call a node as a child run of the task's graph run."""
    return perform(_traced(func, value, config, name, trace_policy, is_async=False))


async def acall_traced(
    func: Callable[..., Any],
    value: Any,
    config: RunnableConfig,
    name: str,
    trace_policy: TracePolicy | None = None,
) -> Any:
    """Async twin of :func:`call_traced`."""
    return await aperform(_traced(func, value, config, name, trace_policy, is_async=True))


def _traced(
    func: Callable[..., Any],
    value: Any,
    config: RunnableConfig,
    name: str,
    trace_policy: TracePolicy | None,
    *,
    is_async: bool,
) -> Generator[Request, Any, Any]:
    """:func:`call_traced` and :func:`acall_traced`, written once (``_twin.py``): the
    callback manager is async in an async run, so each of its calls is awaited there."""
    policy = trace_policy or _NO_POLICY
    manager = _manager(config, AsyncCallbackManager if is_async else CallbackManager)
    payload = _trace_input(func, value)
    recorded = _recorded(payload, policy.process_inputs)
    run: Any
    if recorded is payload:
        run = yield either(manager.on_chain_start, None, payload, name=name)
    else:
        real, tracers = _split_tracers(manager)
        run = yield either(real.on_chain_start, None, payload, name=name)
        # tracers start last: a cancellation before then leaves no tracer run open
        yield either(tracers.on_chain_start, None, recorded, name=name, run_id=run.run_id)
        run.handlers = manager.handlers
    child = _child_config(config, run, func)
    try:
        with _in_context(child):
            output = yield Call(call_sync, call_async, func, value, child)
            for handler in _streaming_handlers(run):
                yield Call(_tap, _atap, handler, run.run_id, output)
    except BaseException as exc:
        yield either(run.on_chain_error, exc)
        raise
    shown = _recorded(output, policy.process_outputs)
    if shown is output:
        yield either(run.on_chain_end, output)
    else:
        real_run, tracer_run = _split_tracers(run)
        # tracers end first, so a cancellation cannot leave a tracer run open
        yield either(tracer_run.on_chain_end, shown)
        yield either(real_run.on_chain_end, output)
    return output


def _tap(handler: Any, run_id: Any, output: Any) -> None:
    for _ in handler.tap_output_iter(run_id, iter([output])):
        pass


async def _atap(handler: Any, run_id: Any, output: Any) -> None:
    async for _ in handler.tap_output_aiter(run_id, _once(output)):
        pass


async def _once(value: Any) -> AsyncIterator[Any]:
    yield value


_NO_POLICY = TracePolicy()

_M = TypeVar("_M", bound="BaseCallbackManager | BaseRunManager")


def _recorded(value: Any, process: Callable[[Any], Any] | None) -> Any:
    """What tracers record for ``value``: the processor's result, or ``value`` itself
    when there is no processor or it fails (tracing never breaks the node)."""
    if process is None:
        return value
    try:
        return process(value)
    except Exception:
        logger.exception("trace_policy processor failed; recording the real payload")
        return value


def _split_tracers(manager: _M) -> tuple[_M, _M]:
    """``manager`` twice: for its other handlers, and for its tracers only.

    Only tracers (records sent elsewhere) get the policy's payload; handlers that feed
    the caller's own stream (``astream_log``'s is a tracer too) get the real one.
    """
    real, tracers = copy.copy(manager), copy.copy(manager)
    tracers.handlers = [
        h for h in manager.handlers if isinstance(h, BaseTracer) and not _is_stream_handler(h)
    ]
    real.handlers = [h for h in manager.handlers if h not in tracers.handlers]
    return real, tracers


# --- astream_events v1/v2 ----------------------------------------------------------------


class _GraphRunnable(Runnable[Any, Any]):
    """The graph seen as a LangChain runnable, so LangChain's event streams can drive it."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.name = graph.name

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        base = name or self.graph.name
        return f"{base}{suffix}" if suffix else base

    def invoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return self.graph.invoke(input, config, **kwargs)

    async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
        return await self.graph.ainvoke(input, config, **kwargs)

    def stream(self, input: Any, config: Any = None, **kwargs: Any) -> Iterator[Any]:
        yield from self.graph.stream(input, config, **kwargs)

    async def astream(self, input: Any, config: Any = None, **kwargs: Any) -> AsyncIterator[Any]:
        async for chunk in self.graph.astream(input, config, **kwargs):
            yield chunk


def as_runnable(graph: Any) -> Runnable[Any, Any]:
    """The graph as a LangChain runnable: ``graph | runnable`` is a RunnableSequence."""
    return _GraphRunnable(graph)


def astream_log(
    graph: Any, input: Any, config: RunnableConfig | None, **kwargs: Any
) -> AsyncIterator[Any]:
    """LangChain's ``Runnable.astream_log`` (run log patches) over the graph's ``astream``."""
    patches: AsyncIterator[Any] = _GraphRunnable(graph).astream_log(
        input, cast(Any, config), **kwargs
    )
    return patches


def astream_events(
    graph: Any, input: Any, config: RunnableConfig | None, *, version: str, **kwargs: Any
) -> AsyncIterator[Any]:
    """LangChain's ``Runnable.astream_events`` over the graph's ``astream``."""
    events: AsyncIterator[Any] = _GraphRunnable(graph).astream_events(
        input, cast(Any, config), version=cast(Any, version), **kwargs
    )
    return events
