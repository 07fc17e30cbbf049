"""Random graphs draw the same on graphruntime and LangGraph.

Hypothesis builds StateGraphs from plain edges, fan-in (waiting) edges, conditional edges
with list or labelled path maps, ``defer`` nodes, ``destinations=`` and interrupts, and
every output of ``get_graph()`` must equal LangGraph's for the same builder calls.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import given, reject, settings
from hypothesis import strategies as st

from .oracle import GR, LG, langgraph_ascii


class State(TypedDict):
    log: Annotated[list[str], operator.add]


@dataclass
class Recipe:
    nodes: list[str]
    defer: dict[str, bool]
    edges: list[tuple[str, str]]
    waiting: list[tuple[tuple[str, ...], str]]
    branches: list[tuple[str, Any]]
    destinations: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)
    interrupt_before: list[str] = field(default_factory=list)
    interrupt_after: list[str] = field(default_factory=list)

    def build(self, ns: SimpleNamespace) -> Any:
        builder = ns.StateGraph(State)
        for name in self.nodes:
            kwargs: dict[str, Any] = {"defer": self.defer[name]}
            if name in self.destinations:
                kwargs["destinations"] = self.destinations[name]
            if name in self.metadata:
                kwargs["metadata"] = self.metadata[name]
            builder.add_node(name, _noop, **kwargs)
        for start, end in self.edges:
            builder.add_edge(start, end)
        for starts, end in self.waiting:
            builder.add_edge(list(starts), end)
        for source, path_map in self.branches:
            builder.add_conditional_edges(source, _router, path_map)
        return builder.compile(
            interrupt_before=self.interrupt_before, interrupt_after=self.interrupt_after
        )


def _noop(state: State) -> None:
    return None


def _router(state: State) -> str:
    return "__end__"


@st.composite
def recipes(draw: st.DrawFn) -> Recipe:
    nodes = [f"n{i}" for i in range(draw(st.integers(1, 5)))]
    targets = [*nodes, "__end__"]
    sources = ["__start__", *nodes]
    defer = {n: draw(st.booleans()) for n in nodes}
    edges = draw(
        st.lists(st.tuples(st.sampled_from(sources), st.sampled_from(targets)), max_size=6)
    )
    fan_in = st.lists(st.sampled_from(nodes), min_size=2, max_size=3, unique=True).map(tuple)
    waiting = (
        draw(st.lists(st.tuples(fan_in, st.sampled_from(targets)), max_size=2))
        if len(nodes) > 1
        else []
    )
    path_map = st.one_of(
        st.lists(st.sampled_from(targets), min_size=1, max_size=3, unique=True),
        st.dictionaries(st.sampled_from(["a", "b", "go on", "__end__"]), st.sampled_from(targets)),
    )
    branches = draw(
        st.lists(
            st.tuples(st.sampled_from(sources), path_map), max_size=3, unique_by=lambda b: b[0]
        )
    )
    if not any(s == "__start__" for s, _ in edges) and not any(
        s == "__start__" for s, _ in branches
    ):
        edges.append(("__start__", nodes[0]))
    names = st.lists(st.sampled_from(targets), max_size=2, unique=True)
    destinations = draw(
        st.dictionaries(
            st.sampled_from(nodes),
            st.one_of(names.map(tuple), st.dictionaries(st.sampled_from(targets), st.just("lbl"))),
            max_size=2,
        )
    )
    metadata = draw(
        st.dictionaries(st.sampled_from(nodes), st.just({"kind": "tool", "n": 1}), max_size=2)
    )
    before = draw(st.lists(st.sampled_from(nodes), max_size=2, unique=True))
    after = draw(st.lists(st.sampled_from(nodes), max_size=2, unique=True))
    return Recipe(nodes, defer, edges, waiting, branches, destinations, metadata, before, after)


def _ascii_or_error(draw_ascii: Any) -> str:
    try:
        return str(draw_ascii())
    except ValueError as exc:  # grandalf cannot lay out every graph; both must fail alike
        return f"ValueError: {type(exc).__name__}"


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(recipes())
def test_random_graphs_draw_as_in_langgraph(recipe: Recipe) -> None:
    ours = recipe.build(GR).get_graph()
    try:
        theirs = recipe.build(LG).get_graph()
    except TypeError as exc:
        # LangGraph sorts its edges with None and str labels mixed when two declarations
        # reach the same node (one labelled, one not) and crashes; graphruntime draws them.
        if "'<' not supported" not in str(exc):
            raise
        reject()
    assert ours.to_json() == theirs.to_json()
    assert ours.edges == theirs.edges
    assert ours.draw_mermaid() == theirs.draw_mermaid()
    assert _ascii_or_error(ours.draw_ascii) == _ascii_or_error(lambda: langgraph_ascii(theirs))
