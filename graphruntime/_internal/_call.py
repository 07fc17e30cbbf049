"""Calling user code (nodes, routers, subgraphs) with the keyword arguments it asks for."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from graphruntime._internal._config import RunnableConfig, get_stream_writer, var_config

_INJECTABLE = ("config", "writer")


@lru_cache(maxsize=1024)
def _accepted_kwargs(func: Callable[..., Any]) -> frozenset[str]:
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return frozenset()
    return frozenset(n for n in _INJECTABLE if n in params)


def is_graph(obj: Any) -> bool:
    """Whether ``obj`` is a compiled graph (run as a subgraph, not called)."""
    return hasattr(obj, "invoke") and hasattr(obj, "ainvoke") and hasattr(obj, "get_state")


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
    """``config=`` and ``writer=`` for a callable whose signature names them."""
    try:
        wanted = _accepted_kwargs(func)
    except TypeError:  # unhashable callable
        wanted = frozenset(n for n in _INJECTABLE if n in inspect.signature(func).parameters)
    kwargs: dict[str, Any] = {}
    if "config" in wanted:
        kwargs["config"] = config
    if "writer" in wanted:
        kwargs["writer"] = get_stream_writer()
    return kwargs


def call_sync(func: Callable[..., Any], value: Any, config: RunnableConfig) -> Any:
    """Call a node, router or subgraph in this thread.

    An ``async def`` callable gets an event loop of its own when none runs in this
    thread; inside a running loop it cannot be awaited from sync code, and the caller
    is told to use the async API.
    """
    if is_runnable(func):
        return func.invoke(value, config)  # type: ignore[attr-defined]
    result = func(value, **injected_kwargs(func, config))
    if inspect.isawaitable(result):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(_await(result))
        close = getattr(result, "close", None)
        if callable(close):
            close()  # never awaited: close it so Python does not warn about it
        raise TypeError(
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
