"""Calling user code (nodes, routers, subgraphs) with the keyword arguments it asks for."""

from __future__ import annotations

import asyncio
import inspect
import warnings
from collections.abc import Callable
from functools import lru_cache
from types import FunctionType
from typing import Any

from graphruntime._internal._config import RunnableConfig, StreamWriter, var_config
from graphruntime._internal._constants import (
    CONF,
    CONFIG_KEY_CUSTOM_WRITER,
    CONFIG_KEY_NODE_ERROR,
    CONFIG_KEY_RUNTIME,
)
from graphruntime._internal._errors import InvalidArgumentError, InvalidArgumentTypeError

_MISSING: Any = object()


def _noop_writer(_: Any) -> None:
    return None


_OPTIONAL = ("Optional[", "| None", "None |")


def _annotation_text(annotation: Any) -> str:
    return annotation if isinstance(annotation, str) else repr(annotation)


def _names(annotation: Any, name: str) -> bool:
    """Whether ``annotation`` (an object or, with postponed annotations, a string)
    names the class ``name``, possibly inside Optional/a union."""
    if isinstance(annotation, str):
        return name in annotation
    if getattr(annotation, "__name__", None) == name:
        return True
    return any(getattr(a, "__name__", None) == name for a in getattr(annotation, "__args__", ()))


def _is_optional(annotation: Any) -> bool:
    text = _annotation_text(annotation)
    return any(marker in text for marker in _OPTIONAL) or "Union[" in text


def _is_stream_writer(annotation: Any) -> bool:
    return annotation is inspect.Parameter.empty or (
        annotation == StreamWriter or _names(annotation, "StreamWriter")
    )


# (parameter name, what it receives, default when the run has none: _MISSING = required)
Injection = tuple[str, str, Any]


def _plan(func: Callable[..., Any], *, warn: bool) -> tuple[Injection, ...]:
    """Which keyword arguments a node, router or handler asks for, as LangGraph decides.

    A parameter is injected by its name; ``config``, ``writer``, ``store`` and ``error``
    also need a matching annotation (or none): a ``config`` typed otherwise is left
    alone, with a warning when ``warn`` (at ``add_node``).
    """
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return ()
    plan: list[Injection] = []
    for name, param in params.items():
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            continue
        annotation = param.annotation
        empty = annotation is inspect.Parameter.empty
        if name == "config":
            if empty or _names(annotation, "RunnableConfig"):
                plan.append((name, "config", _MISSING))
            elif warn:
                warnings.warn(
                    "The 'config' parameter should be typed as 'RunnableConfig' or "
                    f"'RunnableConfig | None', not '{annotation}'. ",
                    UserWarning,
                    stacklevel=4,
                )
        elif name == "writer" and _is_stream_writer(annotation):
            plan.append((name, "stream_writer", _noop_writer))
        elif name == "store" and (empty or _names(annotation, "BaseStore")):
            plan.append((name, "store", None if _is_optional(annotation) else _MISSING))
        elif name in ("previous", "runtime"):
            plan.append((name, name, _MISSING))
        elif name == "error" and not empty and _names(annotation, "NodeError"):
            plan.append((name, "error", None))
    return tuple(plan)


@lru_cache(maxsize=1024)
def _cached_plan(func: Callable[..., Any]) -> tuple[Injection, ...]:
    return _plan(func, warn=False)


def check_signature(func: Callable[..., Any]) -> None:
    """Warn about a parameter LangGraph would not inject (called when a node is added)."""
    _plan(func, warn=True)


def is_graph(obj: Any) -> bool:
    """Whether ``obj`` is a compiled graph (run as a subgraph, not called)."""
    # looked up on the type: a Mock (or any object with __getattr__) has every attribute
    cls = type(obj)
    return hasattr(cls, "invoke") and hasattr(cls, "ainvoke") and hasattr(cls, "get_state")


def is_runnable(obj: Any) -> bool:
    """Whether ``obj`` is run by ``invoke(input, config)`` / ``ainvoke``, not called.

    Compiled graphs and LangChain runnables (a chat model, ``ToolNode``, ``a | b``), as
    LangGraph runs them, recognised by class without importing LangChain; and objects with
    both methods that cannot be called (a node's chain of steps). A callable with methods
    of those names is a function, and a mock (whose instances have every attribute, but
    its class none of these) is called too.
    """
    cls = type(obj)
    if isinstance(obj, type) or not (
        callable(getattr(cls, "invoke", None)) and callable(getattr(cls, "ainvoke", None))
    ):
        return False
    return (
        hasattr(cls, "get_state")
        or not callable(obj)
        or any(
            c.__name__ == "Runnable" and c.__module__ == "langchain_core.runnables.base"
            for c in cls.__mro__
        )
    )


def is_async_callable(func: Any) -> bool:
    return inspect.iscoroutinefunction(func) or inspect.iscoroutinefunction(
        getattr(func, "__call__", None)  # noqa: B004 - a callable instance's async __call__
    )


def injected_kwargs(func: Callable[..., Any], config: RunnableConfig) -> dict[str, Any]:
    """The keyword arguments ``func`` asks for: ``config``, ``writer``, ``store``,
    ``runtime``, ``previous`` (from the run's Runtime) and ``error`` (in an error handler).

    Raises:
        ValueError: ``func`` requires something this run does not have.
    """
    try:
        plan = _cached_plan(func)
    except TypeError:  # unhashable callable
        plan = _plan(func, warn=False)
    if not plan:
        return {}
    conf = config.get(CONF, {})
    runtime = conf.get(CONFIG_KEY_RUNTIME)
    kwargs: dict[str, Any] = {}
    for name, source, default in plan:
        value: Any = _MISSING
        if source == "config":
            value = config
        elif source == "error":
            value = conf.get(CONFIG_KEY_NODE_ERROR, _MISSING)
        elif runtime is not None:
            value = runtime if source == "runtime" else getattr(runtime, source, _MISSING)
        elif source == "stream_writer":
            value = conf.get(CONFIG_KEY_CUSTOM_WRITER) or _noop_writer
        if value is _MISSING:
            if default is _MISSING:
                label = getattr(func, "__name__", repr(func))
                raise InvalidArgumentError(f"Missing required config key '{source}' for '{label}'.")
            value = default
        kwargs[name] = value
    return kwargs


_PLAIN = frozenset({dict, list, tuple, str, int, float, bool, type(None)})
"""Result types that are never awaitable: ``inspect.isawaitable`` (ABC checks) is skipped."""


def call_sync(func: Callable[..., Any], value: Any, config: RunnableConfig) -> Any:
    """Call a node, router or subgraph in this thread.

    An ``async def`` callable gets an event loop of its own when none runs in this
    thread; inside a running loop it cannot be awaited from sync code, and the caller
    is told to use the async API.
    """
    # a plain function is never a runnable: skip the class lookups
    if type(func) is not FunctionType and is_runnable(func):
        return func.invoke(value, config)  # type: ignore[attr-defined]
    result = func(value, **injected_kwargs(func, config))
    if type(result) not in _PLAIN and inspect.isawaitable(result):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(_await(result))
        close = getattr(result, "close", None)
        if callable(close):
            close()  # never awaited: close it so Python does not warn about it
        raise InvalidArgumentTypeError(
            f"{getattr(func, '__name__', func)!r} is async: run the graph with ainvoke/astream "
            "to call it from a running event loop."
        )
    return result


async def _await(aw: Any) -> Any:
    return await aw


async def call_async(func: Callable[..., Any], value: Any, config: RunnableConfig) -> Any:
    """Call a node, router or subgraph from a coroutine.

    Async callables are awaited; sync ones run in a worker thread (with the config in
    their context) so they cannot block the event loop.
    """
    if is_runnable(func):
        return await func.ainvoke(value, config)  # type: ignore[attr-defined]
    if is_async_callable(func):
        return await func(value, **injected_kwargs(func, config))

    def run() -> Any:
        token = var_config.set(config)
        try:
            return func(value, **injected_kwargs(func, config))
        finally:
            var_config.reset(token)

    result = await asyncio.to_thread(run)
    if inspect.isawaitable(result):
        return await result
    return result
