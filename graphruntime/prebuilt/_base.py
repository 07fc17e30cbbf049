"""The base of the prebuilt nodes: LangChain runnables that graphs run by ``invoke``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.runnables.config import ensure_config as lc_ensure_config

from graphruntime._internal._config import var_config
from graphruntime.errors import InvalidArgumentTypeError


def ensure_config(config: RunnableConfig | None) -> RunnableConfig:
    """``config``, or else the config of the node this runs in (graphruntime's or
    LangChain's), as LangGraph's nodes see theirs: a ToolNode invoked inside a node reads
    that node's state and runtime."""
    if config is None:
        config = var_config.get()
    return lc_ensure_config(config)


def _no_kwargs(name: str | None, kwargs: dict[str, Any]) -> None:
    if kwargs:
        raise InvalidArgumentTypeError(
            f"{name or 'node'}.invoke() got unexpected keyword arguments {sorted(kwargs)}: "
            "pass the input and a config only"
        )


class PrebuiltNode(Runnable[Any, Any]):
    """A node that is also a LangChain ``Runnable`` (``node.invoke(state)``, ``a | node``).

    Subclasses implement ``_run`` (and ``_arun`` for a native async path; by default
    the sync one runs). It makes no callback run of its own: the graph traces its
    task, and the tools and models it calls trace theirs.
    """

    def __init__(self, *, name: str | None, tags: list[str] | None = None) -> None:
        self.name = name
        self.tags = list(tags or [])

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        _no_kwargs(self.name, kwargs)
        return self._run(input, ensure_config(config))

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        _no_kwargs(self.name, kwargs)
        return await self._arun(input, ensure_config(config))

    def _run(self, input: Any, config: RunnableConfig) -> Any:
        raise NotImplementedError

    async def _arun(self, input: Any, config: RunnableConfig) -> Any:
        return self._run(input, config)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


class FunctionNode(PrebuiltNode):
    """A node with a sync and an async implementation, each ``(input, config)``."""

    def __init__(
        self,
        func: Callable[[Any, RunnableConfig], Any],
        afunc: Callable[[Any, RunnableConfig], Awaitable[Any]],
        *,
        name: str,
    ) -> None:
        super().__init__(name=name)
        self.func = func
        self.afunc = afunc

    def _run(self, input: Any, config: RunnableConfig) -> Any:
        return self.func(input, config)

    async def _arun(self, input: Any, config: RunnableConfig) -> Any:
        return await self.afunc(input, config)
