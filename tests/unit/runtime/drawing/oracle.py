"""Helpers shared by the drawing tests: the same builder on both runtimes, and LangGraph's
outputs (the oracle) made deterministic where LangGraph's own are not."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any
from unittest.mock import patch

import grandalf.graphs
import langchain_core.runnables.graph_ascii as lc_graph_ascii
import langgraph.graph as lg_graph
import langgraph.types as lg_types
from grandalf.utils.poset import Poset
from langchain_core.runnables.graph import Graph as LcGraph

import graphruntime.graph as gr_graph
import graphruntime.types as gr_types

GR = SimpleNamespace(
    StateGraph=gr_graph.StateGraph,
    START=gr_graph.START,
    END=gr_graph.END,
    Command=gr_types.Command,
    Send=gr_types.Send,
)
LG = SimpleNamespace(
    StateGraph=lg_graph.StateGraph,
    START=lg_graph.START,
    END=lg_graph.END,
    Command=lg_types.Command,
    Send=lg_types.Send,
)

Build = Callable[[SimpleNamespace], Any]

CALLABLE_ID = ["langgraph", "_internal", "_runnable", "RunnableCallable"]
GRAPH_ID = ["langgraph", "graph", "state", "CompiledStateGraph"]
STYLES = (
    "\tclassDef default fill:#f2f0ff,line-height:1.2\n"
    "\tclassDef first fill-opacity:0\n"
    "\tclassDef last fill:#bfb6fc\n"
)
FRONT = "---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n"


def fn_node(node_id: str) -> dict[str, Any]:
    return {"id": node_id, "type": "runnable", "data": {"id": CALLABLE_ID, "name": node_id}}


def graph_node(node_id: str) -> dict[str, Any]:
    return {"id": node_id, "type": "runnable", "data": {"id": GRAPH_ID, "name": node_id}}


def edge(source: str, target: str, data: str | None = None, cond: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"source": source, "target": target}
    if data is not None:
        out["data"] = data
    if cond:
        out["conditional"] = True
    return out


def returns(fn: Any, annotation: Any) -> Any:
    """Give ``fn`` a return hint as an object, so each runtime sees its own ``Command``."""
    fn.__annotations__ = {"return": annotation}
    return fn


def same_as_langgraph(build: Build, *, xray: int | bool = False) -> Any:
    """Our drawing of ``build``, after checking every output equals LangGraph's."""
    ours = build(GR).get_graph(xray=xray)
    theirs = build(LG).get_graph(xray=xray)
    assert ours.to_json() == theirs.to_json()
    assert list(ours.nodes) == list(theirs.nodes)
    assert ours.edges == theirs.edges
    assert ours.draw_mermaid(with_styles=False) == theirs.draw_mermaid(with_styles=False)
    assert ours.draw_mermaid() == theirs.draw_mermaid()
    assert ours.draw_ascii() == langgraph_ascii(theirs)
    return ours


class _OrderedGrandalfGraph(grandalf.graphs.Graph):  # type: ignore[misc]
    """grandalf's Graph, with each component's edges kept in the order given.

    grandalf collects them in a set, so which of two crossing lines LangGraph paints last
    varies from run to run; graphruntime fixes the order, and so does the oracle here.
    """

    def __init__(self, vertices: Any, edges: Any, directed: bool = True) -> None:
        edges = list(edges)
        super().__init__(vertices, edges, directed)
        for component in self.C:
            members = set(component.sE)
            component.sE = Poset([e for e in edges if e in members])


def langgraph_ascii(graph: Any) -> str:
    """LangGraph's ASCII drawing with a fixed edge order and without self-loops.

    LangGraph raises on a self-loop it has to draw (grandalf cannot route it out of its
    box); graphruntime leaves self-loops out.
    """
    plain = LcGraph(nodes=graph.nodes, edges=[e for e in graph.edges if e.source != e.target])
    with patch.object(lc_graph_ascii, "Graph", _OrderedGrandalfGraph):
        return str(plain.draw_ascii())
