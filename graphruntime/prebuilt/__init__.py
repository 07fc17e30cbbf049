"""Prebuilt nodes and agents (as ``langgraph.prebuilt``).

Needs langchain-core: ``pip install 'graphruntime[messages]'``. ``import graphruntime``
and ``graphruntime.graph`` never import this package.

- :class:`ToolNode` runs the tool calls of the last AI message; :func:`tools_condition`
  routes to it while there are some.
- :func:`create_react_agent` builds the model-and-tools loop as a graph.
- :class:`ValidationNode` validates tool calls against schemas without running them.
- :class:`InjectedState`, :class:`InjectedStore` and :class:`ToolRuntime` give a tool
  the graph's state, store and runtime, hidden from the model.
- :class:`ToolCallTransformer` adds ``run.tool_calls`` to ``stream_events(version="v3")``.
"""

from __future__ import annotations

from graphruntime.errors import MissingDependencyError

try:
    import langchain_core  # noqa: F401 - only to say what to install when it is missing
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError(
        "graphruntime.prebuilt needs langchain-core: pip install 'graphruntime[messages]'"
    ) from exc

from graphruntime.prebuilt._tool_call_transformer import ToolCallTransformer
from graphruntime.prebuilt.chat_agent_executor import create_react_agent
from graphruntime.prebuilt.tool_node import (
    InjectedState,
    InjectedStore,
    ToolNode,
    ToolRuntime,
    tools_condition,
)
from graphruntime.prebuilt.tool_validator import ValidationNode

__all__ = (
    "InjectedState",
    "InjectedStore",
    "ToolCallTransformer",
    "ToolNode",
    "ToolRuntime",
    "ValidationNode",
    "create_react_agent",
    "tools_condition",
)
