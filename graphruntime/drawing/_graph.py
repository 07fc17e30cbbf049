"""The drawable graph: nodes and edges, with the renderers attached.

Same shape and behaviour as ``langchain_core.runnables.graph.Graph`` so code written
against LangGraph's ``get_graph()`` works unchanged: ``nodes`` maps id to :class:`Node`,
``edges`` is a list of :class:`Edge` (both named tuples, equal to LangGraph's), and
``to_json``/``draw_mermaid``/``draw_ascii`` produce the same text.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID, uuid4

from graphruntime.drawing._errors import DrawingUnavailableError
from graphruntime.drawing._mermaid import CurveStyle, MermaidDrawMethod, NodeStyles, render_mermaid
from graphruntime.drawing._parts import Edge, Node
from graphruntime.errors import InvalidArgumentError

# Node "ids" in ``to_json`` name the LangGraph class a node corresponds to, so tools that
# read LangGraph's graph JSON (Studio, the server's /graph endpoint) read ours unchanged.
_GRAPH_JSON_ID = ["langgraph", "graph", "state", "CompiledStateGraph"]
_CALLABLE_JSON_ID = ["langgraph", "_internal", "_runnable", "RunnableCallable"]


def is_uuid(value: str) -> bool:
    try:
        UUID(value)
    except ValueError:
        return False
    return True


def node_label(id: str, data: Any) -> str:
    """A node's display name: its id, unless the id is a generated uuid."""
    if not is_uuid(id) or data is None:
        return id
    name = getattr(data, "name", None) or getattr(data, "__name__", None) or type(data).__name__
    return str(name)


def _json_id(data: Any) -> list[str]:
    lc_id = getattr(data, "lc_id", None)  # a LangChain runnable names its own class
    if callable(lc_id):
        return list(lc_id())
    is_graph = callable(getattr(data, "get_graph", None)) and hasattr(data, "nodes")
    return list(_GRAPH_JSON_ID if is_graph else _CALLABLE_JSON_ID)


@dataclass
class Graph:
    """A graph of nodes and edges that can be drawn (Mermaid, ASCII) or dumped as JSON."""

    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[Edge] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.nodes)

    # --- building -------------------------------------------------------------------------

    def next_id(self) -> str:
        return uuid4().hex

    def add_node(
        self, data: Any, id: str | None = None, *, metadata: dict[str, Any] | None = None
    ) -> Node:
        """Add a node (``id`` defaults to a fresh uuid) and return it."""
        if id is not None and id in self.nodes:
            raise InvalidArgumentError(f"Node with id {id} already exists")
        node_id = id or self.next_id()
        node = Node(node_id, node_label(node_id, data), data, metadata)
        self.nodes[node_id] = node
        return node

    def remove_node(self, node: Node) -> None:
        """Remove ``node`` and every edge touching it."""
        self.nodes.pop(node.id)
        self.edges = [e for e in self.edges if node.id not in (e.source, e.target)]

    def add_edge(
        self, source: Node, target: Node, data: Any = None, conditional: bool = False
    ) -> Edge:
        """Add an edge between two nodes already in the graph and return it."""
        if source.id not in self.nodes:
            raise InvalidArgumentError(f"Source node {source.id} not in graph")
        if target.id not in self.nodes:
            raise InvalidArgumentError(f"Target node {target.id} not in graph")
        edge = Edge(source.id, target.id, data, conditional)
        self.edges.append(edge)
        return edge

    def extend(self, graph: Graph, *, prefix: str = "") -> tuple[Node | None, Node | None]:
        """Copy in ``graph``'s nodes and edges, ids prefixed ``"{prefix}:"``; unconnected.

        Returns the (prefixed) first and last nodes of ``graph``.
        """
        if all(is_uuid(node_id) for node_id in graph.nodes):
            prefix = ""

        def prefixed(node_id: str) -> str:
            return f"{prefix}:{node_id}" if prefix else node_id

        self.nodes.update({prefixed(k): v.copy(id=prefixed(k)) for k, v in graph.nodes.items()})
        self.edges.extend(
            e.copy(source=prefixed(e.source), target=prefixed(e.target)) for e in graph.edges
        )
        first, last = graph.first_node(), graph.last_node()
        return (
            first.copy(id=prefixed(first.id)) if first else None,
            last.copy(id=prefixed(last.id)) if last else None,
        )

    def reid(self) -> Graph:
        """A copy whose uuid ids are replaced by the nodes' names (made unique)."""
        ids_by_name: defaultdict[str, list[str]] = defaultdict(list)
        for node in self.nodes.values():
            ids_by_name[node.name].append(node.id)
        labels = {
            node_id: name if len(ids) == 1 else f"{name}_{i + 1}"
            for name, ids in ids_by_name.items()
            for i, node_id in enumerate(ids)
        }

        def new_id(node_id: str) -> str:
            return labels[node_id] if is_uuid(node_id) else node_id

        return Graph(
            nodes={new_id(k): n.copy(id=new_id(k)) for k, n in self.nodes.items()},
            edges=[e.copy(source=new_id(e.source), target=new_id(e.target)) for e in self.edges],
        )

    def first_node(self) -> Node | None:
        """The only node no edge leads to, or None if there is not exactly one."""
        return _first_node(self)

    def last_node(self) -> Node | None:
        """The only node no edge leaves, or None if there is not exactly one."""
        return _last_node(self)

    def trim_first_node(self) -> None:
        """Drop the first node if it has one outgoing edge and another first node remains."""
        first = self.first_node()
        if (
            first
            and _first_node(self, exclude=[first.id])
            and len({e for e in self.edges if e.source == first.id}) == 1
        ):
            self.remove_node(first)

    def trim_last_node(self) -> None:
        """Drop the last node if it has one incoming edge and another last node remains."""
        last = self.last_node()
        if (
            last
            and _last_node(self, exclude=[last.id])
            and len({e for e in self.edges if e.target == last.id}) == 1
        ):
            self.remove_node(last)

    # --- output ---------------------------------------------------------------------------

    def to_json(self, *, with_schemas: bool = False) -> dict[str, list[dict[str, Any]]]:
        """Nodes and edges as JSON-ready dicts, in LangGraph's format.

        ``with_schemas`` only matters for schema nodes, which graphruntime never draws; it
        is accepted so calls written for LangGraph keep working.
        """
        stable = {
            node.id: i if is_uuid(node.id) else node.id
            for i, node in enumerate(self.nodes.values())
        }
        edges: list[dict[str, Any]] = []
        for edge in self.edges:
            item: dict[str, Any] = {"source": stable[edge.source], "target": stable[edge.target]}
            if edge.data is not None:
                item["data"] = edge.data
            if edge.conditional:
                item["conditional"] = True
            edges.append(item)
        nodes: list[dict[str, Any]] = []
        for node in self.nodes.values():
            item = {"id": stable[node.id]}
            if node.data is not None:
                item["type"] = "runnable"
                item["data"] = {"id": _json_id(node.data), "name": node_label(node.id, node.data)}
            if node.metadata is not None:
                item["metadata"] = node.metadata
            nodes.append(item)
        return {"nodes": nodes, "edges": edges}

    def draw_mermaid(
        self,
        *,
        with_styles: bool = True,
        curve_style: CurveStyle = CurveStyle.LINEAR,
        node_colors: NodeStyles | None = None,
        wrap_label_n_words: int = 9,
        frontmatter_config: dict[str, Any] | None = None,
    ) -> str:
        """Mermaid flowchart text (``graph TD;``), as LangGraph draws it."""
        graph = self.reid()
        first, last = graph.first_node(), graph.last_node()
        return render_mermaid(
            graph.nodes,
            graph.edges,
            first_node=first.id if first else None,
            last_node=last.id if last else None,
            with_styles=with_styles,
            curve_style=curve_style,
            node_styles=node_colors,
            wrap_label_n_words=wrap_label_n_words,
            frontmatter_config=frontmatter_config,
        )

    def draw_ascii(self) -> str:
        """The graph as ASCII art; needs the ``draw`` extra (grandalf) for the layout."""
        from graphruntime.drawing._ascii import render_ascii

        return render_ascii({node.id: node.name for node in self.nodes.values()}, self.edges)

    def print_ascii(self) -> None:
        sys.stdout.write(self.draw_ascii() + "\n")

    def draw_png(
        self,
        output_file_path: str | None = None,
        fontname: str | None = None,
        labels: Any = None,
    ) -> bytes | None:
        """Not available: LangGraph renders PNGs with Graphviz (pygraphviz)."""
        raise DrawingUnavailableError(
            "draw_png() is not supported: it needs Graphviz (pygraphviz), which graphruntime "
            "does not use. Draw the graph with draw_mermaid() or draw_ascii() instead, or feed "
            "draw_mermaid()'s text to the Mermaid CLI (mmdc) to get a PNG."
        )

    def draw_mermaid_png(
        self,
        *,
        curve_style: CurveStyle = CurveStyle.LINEAR,
        node_colors: NodeStyles | None = None,
        wrap_label_n_words: int = 9,
        output_file_path: str | None = None,
        draw_method: MermaidDrawMethod = MermaidDrawMethod.API,
        background_color: str = "white",
        padding: int = 10,
        max_retries: int = 1,
        retry_delay: float = 1.0,
        frontmatter_config: dict[str, Any] | None = None,
        base_url: str | None = None,
        proxies: dict[str, str] | None = None,
    ) -> bytes:
        """Not available: every LangGraph method for this fetches from the network."""
        raise DrawingUnavailableError(
            "draw_mermaid_png() is not supported: LangGraph renders it through the mermaid.ink "
            "web API or a browser that loads Mermaid from a CDN, and graphruntime makes no "
            "network calls. Render draw_mermaid()'s text locally with the Mermaid CLI (mmdc) "
            "instead."
        )


def _first_node(graph: Graph, exclude: Sequence[str] = ()) -> Node | None:
    targets = {e.target for e in graph.edges if e.source not in exclude}
    found = [n for n in graph.nodes.values() if n.id not in exclude and n.id not in targets]
    return found[0] if len(found) == 1 else None


def _last_node(graph: Graph, exclude: Sequence[str] = ()) -> Node | None:
    sources = {e.source for e in graph.edges if e.target not in exclude}
    found = [n for n in graph.nodes.values() if n.id not in exclude and n.id not in sources]
    return found[0] if len(found) == 1 else None
