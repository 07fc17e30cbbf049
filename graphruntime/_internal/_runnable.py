"""``RunnableCallable``: a node made of a sync and an async function (as LangGraph's).

LangChain's ``create_agent`` builds its nodes and routers with it (through the import alias,
``langgraph._internal._runnable``). The graph runs it with ``invoke(input, config)`` /
``ainvoke``, which call the function with the keyword arguments it asks for (``config``,
``runtime``, ``store``, ``writer``, ``previous``, ``error``), as a plain node is called.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Sequence
from functools import partial
from typing import Any

from graphruntime._internal._call import injected_kwargs, is_runnable
from graphruntime._internal._config import RunnableConfig, ensure_config, var_config
from graphruntime._internal._errors import InvalidArgumentError, InvalidArgumentTypeError
from graphruntime._internal._twin import Call, Request, aperform, perform

__all__ = ("RunnableCallable",)


class RunnableCallable:
    """Runs ``func`` from sync code and ``afunc`` from async code.

    ``ainvoke`` without an ``afunc`` calls ``func`` in the caller's thread, and ``invoke``
    without a ``func`` is refused, as in LangGraph. A function that returns a runnable has it
    invoked with the same input (``recurse``). ``explode_args`` takes the input as
    ``(args, kwargs)``. ``trace`` is kept for LangGraph's signature: graphruntime reports
    each task as one chain run to LangChain callbacks, and no run of its own for this object.
    """

    def __init__(
        self,
        func: Callable[..., Any] | None,
        afunc: Callable[..., Awaitable[Any]] | None = None,
        *,
        name: str | None = None,
        tags: Sequence[str] | None = None,
        trace: bool = True,
        recurse: bool = True,
        explode_args: bool = False,
        **kwargs: Any,
    ) -> None:
        if func is None and afunc is None:
            raise InvalidArgumentError("At least one of func or afunc must be provided.")
        if name is None:
            named = func if func is not None else afunc
            candidate = getattr(named, "__name__", None)
            if candidate is not None and candidate != "<lambda>":
                name = candidate
        self.name = name
        self.func = func
        self.afunc = afunc
        self.tags = tags
        self.trace = trace
        self.recurse = recurse
        self.explode_args = explode_args
        self.kwargs = kwargs

    def get_name(self, suffix: str | None = None, *, name: str | None = None) -> str:
        base = name or self.name or type(self).__name__
        return f"{base}{suffix}" if suffix else base

    def __repr__(self) -> str:
        return f"{self.get_name()}(recurse={self.recurse}, explode_args={self.explode_args})"

    def _arguments(
        self, func: Callable[..., Any], input: Any, config: RunnableConfig, kwargs: dict[str, Any]
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if self.explode_args:
            args, more = input
            merged = {**self.kwargs, **more, **kwargs}
        else:
            args = (input,)
            merged = {**self.kwargs, **kwargs}
        for key, value in injected_kwargs(func, config).items():
            merged.setdefault(key, value)
        return tuple(args), merged

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return perform(self._calling(input, config, kwargs, is_async=False))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await aperform(self._calling(input, config, kwargs, is_async=True))

    def _calling(
        self, input: Any, config: RunnableConfig | None, kwargs: dict[str, Any], *, is_async: bool
    ) -> Generator[Request, Any, Any]:
        """``invoke`` and ``ainvoke``, written once (``_twin.py``)."""
        func = self.afunc if is_async else self.func
        if func is None:
            if is_async:
                return self.invoke(input, config, **kwargs)
            raise InvalidArgumentTypeError(
                f'No synchronous function provided to "{self.name}".'
                "\nEither initialize with a synchronous function or invoke"
                " via the async API (ainvoke, astream, etc.)"
            )
        if config is None:
            config = ensure_config()
        args, call_kwargs = self._arguments(func, input, config, kwargs)
        call = partial(func, *args, **call_kwargs)
        token = var_config.set(config)
        try:
            result = yield Call(call, call)
        finally:
            var_config.reset(token)
        if self.recurse and is_runnable(result):
            return (yield Call(result.invoke, result.ainvoke, input, config))
        return result
