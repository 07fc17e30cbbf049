"""LangChain callbacks around a run and its tasks, loaded only when a run asks for them.

A run needs them when its config has ``callbacks``, when it streams ``"messages"`` or
``"tools"`` (tokens and tool calls reach the stream through callback handlers) or
when it serves ``astream_events``. Then :mod:`graphruntime.pregel._lc_callbacks` (which imports
langchain-core) starts a LangChain run for the graph, a child run per task, and the
graph lifecycle events (:mod:`graphruntime.callbacks`). Every other run pays one
dict lookup per task. The callbacks are in-process objects: a run driven by the
workers has none (its config crosses processes as JSON).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any, Protocol

from graphruntime._internal._call import call_async, call_sync
from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import CONF
from graphruntime.errors import MissingDependencyError

if TYPE_CHECKING:
    from graphruntime.pregel._loop_tasks import LoopTasks
    from graphruntime.types import TracePolicy

CONFIG_KEY_STREAM_MESSAGES_V2 = "__pregel_stream_messages_v2"
"""Set by ``stream_events(version="v3")``: stream chat models as protocol events."""

_MISSING_LANGCHAIN = (
    "{what} needs langchain-core (LangChain callbacks): pip install 'graphruntime[messages]'"
)


class RunHooks(Protocol):
    """The LangChain side of one graph run, called by the in-process drivers."""

    def start(self, input: Any) -> None: ...
    def started(self) -> None: ...
    def end(self) -> None: ...
    def error(self, exc: BaseException) -> None: ...
    async def astart(self, input: Any) -> None: ...
    async def astarted(self) -> None: ...
    async def aend(self) -> None: ...
    async def aerror(self, exc: BaseException) -> None: ...


def _require_langchain(what: str) -> Any:
    try:
        from graphruntime.pregel import _lc_callbacks
    except ImportError as exc:
        raise MissingDependencyError(_MISSING_LANGCHAIN.format(what=what)) from exc
    return _lc_callbacks


# LangSmith's switches; LangChain's callback managers then add its tracer to every run
_TRACING_ENV = (
    "LANGSMITH_TRACING",
    "LANGSMITH_TRACING_V2",
    "LANGCHAIN_TRACING_V2",
    "LANGCHAIN_TRACING",
)


@functools.cache
def _tracing_switched_on() -> bool:
    """Whether one of LangSmith's switches is set in the environment: read once, as
    LangSmith reads them (``langsmith.utils.get_env_var`` caches), for a miss in
    ``os.environ`` costs an exception caught (some microseconds a run)."""
    return any(os.environ.get(v) for v in _TRACING_ENV)


def _langsmith_tracing() -> bool:
    """Whether LangSmith tracing is on (its ``tracing_context`` or the environment).

    Checked without importing LangChain unless LangSmith is loaded or an environment
    switch is set: a run without callbacks stays free of it otherwise.
    """
    if "langsmith" not in sys.modules and not _tracing_switched_on():
        return False
    try:
        from graphruntime.pregel import _lc_callbacks
    except ImportError:
        return False
    return _lc_callbacks.tracing_enabled()


def run_hooks(
    loop: LoopTasks,
    *,
    name: str,
    modes: Collection[str],
    subgraphs: bool,
    is_async: bool,
    version: str = "v1",
) -> RunHooks | None:
    """The callbacks of a run about to start, or None when it needs none.

    Chat models stream protocol events (not tokens) only for a v2 stream that
    ``stream_events(version="v3")`` started.
    """
    config = loop.config
    streamed = [m for m in ("messages", "tools") if m in modes]
    if not config.get("callbacks") and not streamed and not _langsmith_tracing():
        return None
    what = f"stream_mode={streamed[0]!r}" if streamed else 'config["callbacks"]'
    lc = _require_langchain(what)
    hooks: RunHooks = lc.RunCallbacks(
        loop,
        name=config.get("run_name") or name,
        messages="messages" in modes,
        messages_v2=version == "v2" and bool(config[CONF].get(CONFIG_KEY_STREAM_MESSAGES_V2)),
        tools="tools" in modes,
        subgraphs=subgraphs,
        is_async=is_async,
    )
    return hooks


def stream_callbacks(loop: LoopTasks, *, modes: Collection[str], subgraphs: bool) -> bool:
    """Give the tasks of ``loop`` the callback handlers of its ``messages`` and ``tools``
    modes, putting their chunks in the loop's sink, with no graph run around them.

    For an executor that runs some of a run's steps or tasks in a process of its own (a
    worker's job): the graph's LangChain run spans processes, so it is nobody's to start
    or end there. A chunk's metadata is what ``stream`` shows in-process. Returns whether
    the run streams either mode (False: nothing was changed).
    """
    streamed = [m for m in ("messages", "tools") if m in modes]
    if not streamed:
        return False
    lc = _require_langchain(f"stream_mode={streamed[0]!r}")
    lc.RunCallbacks(
        loop,
        name=loop.config.get("run_name") or loop.graph.name,
        messages="messages" in modes,
        messages_v2=False,
        tools="tools" in modes,
        subgraphs=subgraphs,
        is_async=False,
    ).attach()
    return True


def call_node(
    func: Callable[..., Any],
    value: Any,
    config: RunnableConfig,
    name: str,
    trace_policy: TracePolicy | None = None,
) -> Any:
    """Call a task's node in this thread, as a child run when the task has callbacks.

    ``trace_policy`` changes what tracers record of the run, never what runs.
    """
    if not config.get("callbacks"):
        return call_sync(func, value, config)
    return _require_langchain('config["callbacks"]').call_traced(
        func, value, config, name, trace_policy
    )


async def acall_node(
    func: Callable[..., Any],
    value: Any,
    config: RunnableConfig,
    name: str,
    trace_policy: TracePolicy | None = None,
) -> Any:
    """Async twin of :func:`call_node`."""
    if not config.get("callbacks"):
        return await call_async(func, value, config)
    return await _require_langchain('config["callbacks"]').acall_traced(
        func, value, config, name, trace_policy
    )


def astream_events(
    graph: Any, input: Any, config: RunnableConfig | None, *, version: str, **kwargs: Any
) -> Any:
    """LangChain's ``astream_events`` (v1/v2 event dicts) over the graph's ``astream``."""
    return _require_langchain(f"astream_events(version={version!r})").astream_events(
        graph, input, config, version=version, **kwargs
    )


def astream_log(graph: Any, input: Any, config: RunnableConfig | None, **kwargs: Any) -> Any:
    """LangChain's ``astream_log`` (run log patches) over the graph's ``astream``."""
    return _require_langchain("astream_log()").astream_log(graph, input, config, **kwargs)


def as_runnable(graph: Any) -> Any:
    """The graph as a LangChain ``Runnable`` (to compose it with ``|``)."""
    return _require_langchain("composing a graph with |").as_runnable(graph)
