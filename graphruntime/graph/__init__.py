"""Graph builders (as ``langgraph.graph``)."""

from __future__ import annotations

from graphruntime.constants import END, START
from graphruntime.graph.state import CompiledStateGraph, StateGraph

__all__ = ("END", "START", "CompiledStateGraph", "StateGraph")
