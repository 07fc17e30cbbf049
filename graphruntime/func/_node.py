"""The node an entrypoint's function runs as: the run's input, plus what it asks for."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from graphruntime._internal._call import is_async_callable
from graphruntime._internal._config import RunnableConfig, get_stream_writer
from graphruntime._internal._constants import CONF, CONFIG_KEY_READ, CONFIG_KEY_RUNTIME, PREVIOUS

__all__ = ("entry_node_func",)

_INJECTABLE = ("config", "writer", "store", "runtime", "previous")


def _wanted(func: Callable[..., Any]) -> tuple[str, ...]:
    params = inspect.signature(func).parameters
    return tuple(name for name in _INJECTABLE if name in params)


def _kwargs(wanted: tuple[str, ...], config: RunnableConfig) -> dict[str, Any]:
    conf = config.get(CONF, {})
    runtime = conf.get(CONFIG_KEY_RUNTIME)
    out: dict[str, Any] = {}
    for name in wanted:
        if name == "config":
            out[name] = config
        elif name == "writer":
            out[name] = get_stream_writer()
        elif name == "previous":
            read = conf.get(CONFIG_KEY_READ)
            out[name] = read([PREVIOUS]).get(PREVIOUS) if read is not None else None
        elif name == "runtime":
            out[name] = runtime
        else:
            out[name] = getattr(runtime, name, None)
    return out


def entry_node_func(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` as a node: called with the input and the keyword arguments it names.

    The wrapper takes ``config`` itself (the node's driver passes it), and is a
    coroutine function when ``func`` is one.
    """
    wanted = _wanted(func)
    if is_async_callable(func):

        @functools.wraps(func)
        async def arun(input: Any, config: RunnableConfig) -> Any:
            return await func(input, **_kwargs(wanted, config))

        arun.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [
                inspect.Parameter("input", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY),
            ]
        )
        return arun

    @functools.wraps(func)
    def run(input: Any, config: RunnableConfig) -> Any:
        return func(input, **_kwargs(wanted, config))

    run.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter("input", inspect.Parameter.POSITIONAL_OR_KEYWORD),
            inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY),
        ]
    )
    return run
