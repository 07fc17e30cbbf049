"""Graph builders (as ``langgraph.graph``).

``add_messages`` and ``MessagesState`` come from :mod:`graphruntime.graph.message`,
imported on first use: it needs langchain-core (``graphruntime[messages]``), which
``import graphruntime.graph`` must not.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from graphruntime.constants import END, START
from graphruntime.graph.state import CompiledStateGraph, StateGraph

if TYPE_CHECKING:
    from graphruntime.graph.message import MessagesState as MessagesState
    from graphruntime.graph.message import add_messages as add_messages

__all__ = ("END", "START", "CompiledStateGraph", "StateGraph")

_LAZY = frozenset({"MessagesState", "add_messages"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module("graphruntime.graph.message"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
