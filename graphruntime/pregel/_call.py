"""``@task`` calls: what a call runs, and the futures its caller gets back.

A task (an entrypoint, a node, another call) that calls a ``@task`` function while it
runs makes a new task of the same step, a *call*. The loop gives the call its
deterministic id and reuses its saved result when it already ran
(:meth:`PregelLoop.call`); when it did not, the executor runs it
(``CallExecutor.submit_call``) and hands back a future of its return value.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from graphruntime._internal._call import is_async_callable
from graphruntime._internal._config import RunnableConfig, get_stream_writer
from graphruntime._internal._constants import CONF, CONFIG_KEY_RUNTIME, ERROR, PUSH, RETURN
from graphruntime._internal._typing import MISSING
from graphruntime.errors import GraphBubbleUp
from graphruntime.pregel._algo import PreparedTask
from graphruntime.pregel._node import NodeSpec, Write
from graphruntime.types import RetryPolicy, TimeoutPolicy

__all__ = (
    "Call",
    "CallSuspended",
    "call_name",
    "call_outcome",
    "done_future",
    "failed_future",
    "identifier",
    "in_async_task",
    "is_call",
    "task_node",
)


class CallSuspended(GraphBubbleUp):
    """A ``@task`` call's result is not available in this process (yet).

    A distributed executor's ``submit_call`` hands back a future that raises it (or
    raises it itself): the calling task stops where it waits for the result, records
    nothing, and runs again from its first line once the call's result is saved.
    """


@dataclass(frozen=True, slots=True)
class Call:
    """One ``@task`` call: the function, its arguments, and the task's policies."""

    func: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    retry_policy: Sequence[RetryPolicy] = ()
    cache_policy: Any = None
    timeout: TimeoutPolicy | None = None
    callbacks: Any = None
    """The caller's LangChain callbacks (in-process only): the call runs as its child."""


def is_call(task: PreparedTask) -> bool:
    """A call's path is ``(PUSH, caller's path, call index, True)``."""
    path = task.path
    return path[0] == PUSH and path[-1] is True


def call_name(func: Callable[..., Any]) -> str:
    """The task name of a call: the function's ``__name__`` (a partial's function's, or
    a callable object's class name)."""
    for obj in (func, getattr(func, "func", None)):
        name = getattr(obj, "__name__", None)
        if isinstance(name, str):
            return name
    return type(func).__name__


def identifier(func: Callable[..., Any]) -> str | None:
    """``module.qualname`` of a function, as LangGraph keys a task's cache entries."""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    module = getattr(func, "__module__", None)
    if name is None or module is None:
        return None
    return f"{module}.{name}"


_INJECTABLE = ("config", "writer", "store", "runtime")


@functools.lru_cache(maxsize=1024)
def _accepts(func: Callable[..., Any]) -> tuple[str, ...]:
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return ()
    return tuple(n for n in _INJECTABLE if n in params)


def _inject(func: Callable[..., Any], kwargs: dict[str, Any], config: RunnableConfig) -> None:
    """Fill the keyword arguments the function asks for and the caller did not give."""
    try:
        wanted = _accepts(func)
    except TypeError:  # unhashable callable
        wanted = _accepts.__wrapped__(func)
    for name in wanted:
        if name in kwargs:
            continue
        if name == "config":
            kwargs[name] = config
        elif name == "writer":
            kwargs[name] = get_stream_writer()
        else:
            runtime = config.get(CONF, {}).get(CONFIG_KEY_RUNTIME)
            kwargs[name] = runtime if name == "runtime" else getattr(runtime, name, None)


class _SyncCall:
    """Runs a sync task function on a call's ``(args, kwargs)`` input."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func
        # named as the function: a cached call's results are keyed by its name
        self.__module__ = getattr(func, "__module__", type(func).__module__)
        self.__qualname__ = getattr(func, "__qualname__", call_name(func))

    def __call__(
        self, input: tuple[tuple[Any, ...], dict[str, Any]], config: RunnableConfig
    ) -> Any:
        args, kwargs = input
        kwargs = dict(kwargs)
        _inject(self.func, kwargs, config)
        return self.func(*args, **kwargs)

    def trace_input(self, input: tuple[tuple[Any, ...], dict[str, Any]]) -> Any:
        """What callbacks see as the call's input: its arguments by parameter name
        (``**kwargs`` flattened), as LangGraph traces a task."""
        try:
            sig = inspect.signature(self.func)
            bound = sig.bind_partial(*input[0], **input[1])
        except (TypeError, ValueError):
            return input
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        arguments.pop("self", None)
        arguments.pop("cls", None)
        for name, param in sig.parameters.items():
            if param.kind is inspect.Parameter.VAR_KEYWORD and name in arguments:
                arguments.update(arguments.pop(name))
        return arguments


class _AsyncCall(_SyncCall):
    """Awaits an async task function on a call's ``(args, kwargs)`` input."""

    async def __call__(
        self, input: tuple[tuple[Any, ...], dict[str, Any]], config: RunnableConfig
    ) -> Any:
        args, kwargs = input
        kwargs = dict(kwargs)
        _inject(self.func, kwargs, config)
        return await self.func(*args, **kwargs)


def _write_return(output: Any, config: RunnableConfig) -> list[Write]:
    return [(RETURN, output)]


def task_node(call: Call) -> NodeSpec:
    """The node a call runs: the function on its arguments, the result as its RETURN."""
    runner = _AsyncCall(call.func) if is_async_callable(call.func) else _SyncCall(call.func)
    return NodeSpec(
        name=call_name(call.func),
        func=runner,
        triggers=(PUSH,),
        input_keys=(),
        writers=(_write_return,),
        retry_policy=tuple(call.retry_policy),
        cache_policy=call.cache_policy,
        timeout=call.timeout,
    )


def call_outcome(task: PreparedTask) -> tuple[Any, BaseException | None]:
    """A finished call's (return value, error) from its writes."""
    value = next((v for c, v in task.writes if c == RETURN), MISSING)
    if value is not MISSING:
        return value, None
    error = next((v for c, v in task.writes if c == ERROR), None)
    if error is not None:
        return None, error if isinstance(error, BaseException) else Exception(error)
    return None, None


def in_async_task() -> bool:
    """Whether the caller is a coroutine running on an event loop (it will ``await``)."""
    try:
        return asyncio.current_task() is not None
    except RuntimeError:
        return False


def done_future(value: Any = None, error: BaseException | None = None) -> Any:
    """A completed future of the flavour the caller can wait on: an asyncio future for
    a coroutine, a ``concurrent.futures.Future`` (``.result()``) otherwise."""
    future: asyncio.Future[Any] | concurrent.futures.Future[Any]
    if in_async_task():
        future = asyncio.get_running_loop().create_future()
    else:
        future = concurrent.futures.Future()
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)
    return future


def failed_future(error: BaseException) -> Any:
    return done_future(error=error)
