"""A drawable graph's parts: :class:`Node` and :class:`Edge` (LangGraph's named tuples).

Below the graph and its renderers, which all read them.
"""

from __future__ import annotations

from typing import Any, NamedTuple

__all__ = ("Edge", "Node")


class Edge(NamedTuple):
    """An edge; ``data`` is its label, ``conditional`` draws it dotted."""

    source: str
    target: str
    data: Any = None
    conditional: bool = False

    def copy(self, *, source: str | None = None, target: str | None = None) -> Edge:
        return Edge(source or self.source, target or self.target, self.data, self.conditional)


class Node(NamedTuple):
    """A node; ``data`` is what it runs (a function or a compiled graph), None for END."""

    id: str
    name: str
    data: Any
    metadata: dict[str, Any] | None

    def copy(self, *, id: str | None = None, name: str | None = None) -> Node:
        return Node(id or self.id, name or self.name, self.data, self.metadata)
