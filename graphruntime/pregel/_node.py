"""A compiled node, and what the step machinery needs to know about a compiled graph."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from graphruntime._internal._call import is_async_callable, is_runnable
from graphruntime._internal._config import RunnableConfig, merge_configs
from graphruntime._internal._runnable import RunnableCallable
from graphruntime.channels import BaseChannel
from graphruntime.errors import InvalidArgumentTypeError
from graphruntime.types import RetryPolicy, TimeoutPolicy, TracePolicy

Write = tuple[str, Any]
Writer = Callable[[Any, RunnableConfig], Sequence[Write]]
"""Maps a node's return value to channel writes; runs inside the node's task.

A writer may return an awaitable of the writes (an ``async def`` router): the task's
driver resolves it.
"""


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """Immutable plan of one node; shared by every task that runs it."""

    name: str
    func: Callable[..., Any] | None
    triggers: tuple[str, ...]
    input_keys: tuple[str, ...] | str
    writers: tuple[Writer, ...]
    mapper: Callable[[dict[str, Any]], Any] | None = None
    retry_policy: tuple[RetryPolicy, ...] = ()
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    subgraphs: tuple[Any, ...] = ()
    hidden: bool = False
    cache_policy: Any = None
    """The node's ``CachePolicy``: its results are cached under a key of its input."""
    timeout: TimeoutPolicy | None = None
    """Limits on each attempt (async nodes only)."""
    error_handler: str | None = None
    """The node that runs, in the same step, when this one fails for good."""
    is_error_handler: bool = False
    trace_policy: TracePolicy | None = None
    """What tracing callbacks record of this node's runs."""

    def copy(self, update: Mapping[str, Any] | None = None) -> NodeSpec:
        """A copy with ``update``'s fields replaced."""
        return replace(self, **dict(update or {}))

    @property
    def bound(self) -> Any:
        """The node's code as a runnable (LangGraph's ``PregelNode.bound``): a runnable or a
        subgraph as it was added, a function as a :class:`RunnableCallable` of it."""
        func = self.func
        if func is None or is_runnable(func):
            return func
        if is_async_callable(func):
            return RunnableCallable(None, func, name=self.name)
        return RunnableCallable(func, name=self.name)

    def _own_config(self, config: RunnableConfig | None) -> RunnableConfig:
        return merge_configs({"metadata": dict(self.metadata), "tags": list(self.tags)}, config)

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Run the node's code on ``input`` (its writers are not run), as LangGraph's."""
        return self._runnable().invoke(input, self._own_config(config), **kwargs)

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return await self._runnable().ainvoke(input, self._own_config(config), **kwargs)

    def _runnable(self) -> Any:
        bound = self.bound
        if bound is None:
            raise InvalidArgumentTypeError(f"Node {self.name!r} has no code of its own to invoke")
        return bound


class GraphSpec(Protocol):
    """What running a step needs from a compiled graph (``Pregel`` is one)."""

    @property
    def name(self) -> str: ...
    @property
    def nodes(self) -> Mapping[str, NodeSpec]: ...
    @property
    def channel_specs(self) -> Mapping[str, BaseChannel]: ...
    @property
    def trigger_to_nodes(self) -> Mapping[str, Sequence[str]]: ...
    @property
    def input_channels(self) -> str | Sequence[str]: ...
    @property
    def stream_channels(self) -> str | Sequence[str]: ...
    @property
    def output_channels(self) -> str | Sequence[str]: ...
    @property
    def stream_eager(self) -> bool: ...
    @property
    def retry_policy(self) -> Sequence[RetryPolicy]: ...
    @property
    def managed(self) -> Mapping[str, Any]: ...
    @property
    def step_timeout(self) -> float | None: ...
    @property
    def store(self) -> Any: ...
    @property
    def cache(self) -> Any: ...
    @property
    def cache_policy(self) -> Any: ...
    @property
    def context_schema(self) -> Any: ...
