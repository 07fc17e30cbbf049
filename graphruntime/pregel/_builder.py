"""``NodeBuilder``: LangGraph's fluent way to declare a node of a low-level ``Pregel`` graph.

A node subscribes to channels (it runs when one of them is updated), reads channels
(its input), runs a chain of callables or runnables (``do``) and writes its output to
channels (``write_to``). ``build()`` gives the :class:`NodeSpec` the step machinery runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any, Self

from graphruntime._internal._call import call_async, call_sync
from graphruntime._internal._config import RunnableConfig
from graphruntime._internal._constants import TASKS
from graphruntime.cache import CachePolicy
from graphruntime.errors import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidUpdateError,
    NotSupportedError,
)
from graphruntime.pregel._node import NodeSpec, Write
from graphruntime.types import RetryPolicy, Send, TimeoutPolicy

__all__ = ("NodeBuilder", "WriteEntry", "entries_writer")


class _Passthrough:
    """The written value is the node's output."""

    def __repr__(self) -> str:
        return "PASSTHROUGH"


PASSTHROUGH: Any = _Passthrough()


@dataclass(frozen=True, slots=True)
class WriteEntry:
    """One channel write of a node: its output (or a fixed value), optionally mapped."""

    channel: str
    value: Any = PASSTHROUGH
    skip_none: bool = False
    mapper: Callable[[Any], Any] | None = None


def entries_writer(entries: Sequence[WriteEntry]) -> Callable[[Any, RunnableConfig], list[Write]]:
    """A node writer that turns its output into the entries' writes."""
    frozen = tuple(entries)
    for entry in frozen:
        if entry.channel == TASKS:
            raise InvalidUpdateError("Cannot write to the reserved channel TASKS")

    def write(output: Any, config: RunnableConfig) -> list[Write]:
        writes: list[Write] = []
        for entry in frozen:
            value = output if entry.value is PASSTHROUGH else entry.value
            if isinstance(value, Send) and entry.value is not PASSTHROUGH:
                writes.append((TASKS, value))
                continue
            if entry.mapper is not None:
                value = entry.mapper(value)
            if entry.skip_none and value is None:
                continue
            writes.append((entry.channel, value))
        return writes

    return write


class Sequence_:
    """Several callables or runnables run one after another, each on the last one's output.

    It quacks like a runnable (``invoke``/``ainvoke``) so the node's driver calls it with
    the task's config: each step gets the keyword arguments it asks for.
    """

    def __init__(self, steps: Sequence[Any]) -> None:
        self.steps = tuple(steps)
        self.name = "RunnableSequence"

    def invoke(self, value: Any, config: RunnableConfig | None = None) -> Any:
        for step in self.steps:
            value = call_sync(step, value, config or {})
        return value

    async def ainvoke(self, value: Any, config: RunnableConfig | None = None) -> Any:
        for step in self.steps:
            value = await call_async(step, value, config or {})
        return value

    def __repr__(self) -> str:
        return " | ".join(getattr(s, "__name__", repr(s)) for s in self.steps)


class Parallel_:
    """A dict of callables or runnables as one node: each runs on the same input, and the
    output maps each key to its result (LangChain's ``RunnableParallel``, which LangGraph
    makes of a dict node).

    Like :class:`Sequence_`, invoked as a runnable with the task's config.
    """

    def __init__(self, steps: Mapping[str, Any]) -> None:
        self.steps = dict(steps)
        self.name = "RunnableParallel<" + ",".join(self.steps) + ">"

    def invoke(self, value: Any, config: RunnableConfig | None = None) -> dict[str, Any]:
        return {key: call_sync(step, value, config or {}) for key, step in self.steps.items()}

    async def ainvoke(self, value: Any, config: RunnableConfig | None = None) -> dict[str, Any]:
        results = await asyncio.gather(
            *(call_async(step, value, config or {}) for step in self.steps.values())
        )
        return dict(zip(self.steps, results, strict=True))

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k}: {v!r}" for k, v in self.steps.items()) + "}"


class NodeBuilder:
    """Declare a node: what it subscribes to and reads, what it runs, where it writes.

    Example::

        node = NodeBuilder().subscribe_only("input").do(add_one).write_to("output")
    """

    __slots__ = (
        "_bound",
        "_cache_policy",
        "_channels",
        "_metadata",
        "_retry_policy",
        "_tags",
        "_timeout",
        "_triggers",
        "_writes",
    )

    def __init__(self) -> None:
        self._channels: str | list[str] = []
        self._triggers: list[str] = []
        self._tags: list[str] = []
        self._metadata: dict[str, Any] = {}
        self._writes: list[WriteEntry] = []
        self._bound: list[Any] = []
        self._retry_policy: list[RetryPolicy] = []
        self._cache_policy: CachePolicy[Any] | None = None
        self._timeout: TimeoutPolicy | None = None

    def subscribe_only(self, channel: str) -> Self:
        """Run on updates of ``channel``, with its value (not a dict) as the input."""
        if self._channels:
            raise InvalidArgumentError(
                "Cannot subscribe to single channels when other channels are already subscribed to"
            )
        self._channels = channel
        self._triggers.append(channel)
        return self

    def subscribe_to(self, *channels: str, read: bool = True) -> Self:
        """Run on updates of any of ``channels``; with ``read``, they are in the input dict."""
        if isinstance(self._channels, str):
            raise InvalidArgumentError(
                "Cannot subscribe to channels when subscribed to a single channel"
            )
        if read:
            self._channels.extend(channels)
        self._triggers.extend(channels)
        return self

    def read_from(self, *channels: str) -> Self:
        """Add ``channels`` to the input dict without subscribing to them."""
        if isinstance(self._channels, str):
            raise InvalidArgumentError(
                "Cannot read additional channels when subscribed to single channels"
            )
        self._channels.extend(channels)
        return self

    def do(self, node: Any) -> Self:
        """Run ``node`` (a callable, a runnable or a graph) on the input, after earlier ones."""
        self._bound.append(node)
        return self

    def write_to(self, *channels: str | WriteEntry, **kwargs: Any) -> Self:
        """Write the output to ``channels``; ``name=value`` writes a fixed value, or
        ``name=callable`` the callable applied to the output."""
        self._writes.extend(WriteEntry(c) if isinstance(c, str) else c for c in channels)
        self._writes.extend(
            WriteEntry(k, mapper=v) if callable(v) else WriteEntry(k, value=v)
            for k, v in kwargs.items()
        )
        return self

    def meta(self, *tags: str, **metadata: Any) -> Self:
        """Add tags or metadata to the node."""
        self._tags.extend(tags)
        self._metadata.update(metadata)
        return self

    def add_retry_policies(self, *policies: RetryPolicy) -> Self:
        """Retry the node's task on failures these policies match."""
        self._retry_policy.extend(policies)
        return self

    def add_cache_policy(self, policy: CachePolicy[Any]) -> Self:
        """Cache the node's writes under this policy."""
        self._cache_policy = policy
        return self

    def set_timeout(self, timeout: float | timedelta | TimeoutPolicy | None) -> Self:
        """Limit each attempt of the node (async nodes only; checked when the graph is
        built): seconds or a ``timedelta`` cap its run time, a ``TimeoutPolicy`` may
        also cap its idle time."""
        self._timeout = TimeoutPolicy.coerce(timeout)
        return self

    def build(self, name: str = "") -> NodeSpec:
        """The node's plan; ``Pregel`` names it after its key in ``nodes``."""
        if self._cache_policy is not None:
            raise NotSupportedError(
                "Cache policies on NodeBuilder nodes are not supported by graphruntime yet."
            )
        func: Any
        if not self._bound:
            func = None
        elif len(self._bound) == 1:
            func = self._bound[0]
        else:
            func = Sequence_(self._bound)
        channels = self._channels
        return NodeSpec(
            name=name,
            func=func,
            triggers=tuple(self._triggers),
            input_keys=channels if isinstance(channels, str) else tuple(channels),
            writers=(entries_writer(self._writes),) if self._writes else (),
            retry_policy=tuple(self._retry_policy),
            tags=tuple(self._tags),
            metadata=dict(self._metadata),
            subgraphs=_subgraphs(self._bound),
            timeout=self._timeout,
        )


def _subgraphs(steps: Sequence[Any]) -> tuple[Any, ...]:
    """Graphs a node runs (``do(graph)``) and checkpoints under its namespace."""
    return tuple(
        s
        for s in steps
        # looked up on the class: a mock has every attribute
        if hasattr(type(s), "get_state") and getattr(s, "checkpointer", None) is not False
    )


def with_name(nodes: Mapping[str, NodeSpec | NodeBuilder]) -> dict[str, NodeSpec]:
    """Nodes keyed by name, built, each carrying its name."""
    out: dict[str, NodeSpec] = {}
    for name, node in nodes.items():
        spec = node.build(name) if isinstance(node, NodeBuilder) else node
        if not isinstance(spec, NodeSpec):
            raise InvalidArgumentTypeError(
                f"Invalid node type {type(node)}, expected NodeSpec or NodeBuilder"
            )
        out[name] = spec if spec.name == name else replace(spec, name=name)
    return out
