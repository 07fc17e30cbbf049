"""Drawable graphs, as returned by ``CompiledStateGraph.get_graph()``.

The counterpart of ``langchain_core.runnables.graph``: :class:`Graph` holds :class:`Node`
and :class:`Edge` tuples and draws them as Mermaid text (``draw_mermaid``), ASCII art
(``draw_ascii``, needs the ``draw`` extra) or LangGraph's JSON (``to_json``).
"""

from __future__ import annotations

from graphruntime.drawing._errors import DrawingUnavailableError, MissingDependencyError
from graphruntime.drawing._graph import Graph
from graphruntime.drawing._mermaid import CurveStyle, MermaidDrawMethod, NodeStyles
from graphruntime.drawing._parts import Edge, Node

__all__ = (
    "CurveStyle",
    "DrawingUnavailableError",
    "Edge",
    "Graph",
    "MermaidDrawMethod",
    "MissingDependencyError",
    "Node",
    "NodeStyles",
)
