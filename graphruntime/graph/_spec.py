"""What compiling, drawing and describing a ``StateGraph`` read of its builder.

:class:`NodeDef` is one node as added to the builder; :class:`BuilderSpec` is the part of
``StateGraph`` that ``_compile``, ``_draw`` and ``_jsonschema`` read (``StateGraph`` is
one), so they need not import the builder's module, which imports them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Protocol

from graphruntime._internal._call import is_async_callable
from graphruntime.channels import BaseChannel
from graphruntime.graph._branch import BranchSpec
from graphruntime.managed.base import ManagedValueSpec
from graphruntime.pregel.main import Pregel
from graphruntime.types import CachePolicy, RetryPolicy, TimeoutPolicy, TracePolicy

__all__ = ("BuilderSpec", "NodeDef", "node_name")


@dataclass
class NodeDef:
    """One node as added to the builder; compile() turns it into a ``NodeSpec``."""

    action: Any
    input_schema: Any
    retry_policy: tuple[RetryPolicy, ...] | None
    metadata: dict[str, Any]
    defer: bool
    destinations: Any = None
    cache_policy: CachePolicy[Any] | None = None
    timeout: TimeoutPolicy | None = None
    error_handler: str | None = None
    """The node that handles this node's failures."""
    is_error_handler: bool = False
    trace_policy: TracePolicy | None = None

    @property
    def runnable(self) -> Any:
        """The node's graph, or a view of its callable as LangGraph shows it (``.func``)."""
        if isinstance(self.action, Pregel):
            return self.action
        return _CallableView(self.action)


@dataclass(frozen=True)
class _CallableView:
    """What LangGraph's ``RunnableCallable`` exposes of a node's function."""

    func: Any

    @property
    def afunc(self) -> Any:
        return self.func if is_async_callable(self.func) else None

    @property
    def name(self) -> str:
        return node_name(self.func)


class BuilderSpec(Protocol):
    """A graph builder's parts, as ``StateGraph`` holds them."""

    @property
    def state_schema(self) -> Any: ...
    @property
    def input_schema(self) -> Any: ...
    @property
    def output_schema(self) -> Any: ...
    @property
    def context_schema(self) -> Any: ...
    @property
    def channels(self) -> dict[str, BaseChannel]: ...
    @property
    def managed(self) -> dict[str, ManagedValueSpec]: ...
    @property
    def schemas(self) -> dict[Any, dict[str, BaseChannel | ManagedValueSpec]]: ...
    @property
    def nodes(self) -> dict[str, NodeDef]: ...
    @property
    def edges(self) -> set[tuple[str, str]]: ...
    @property
    def waiting_edges(self) -> set[tuple[tuple[str, ...], str]]: ...
    @property
    def branches(self) -> defaultdict[str, dict[str, BranchSpec]]: ...


def node_name(action: Any) -> str:
    """A node's default name: its ``name``, its ``__name__``, or its class's."""
    name = getattr(action, "name", None)
    if isinstance(name, str) and name:
        return name
    name = getattr(action, "__name__", None)
    return name if isinstance(name, str) else type(action).__name__
