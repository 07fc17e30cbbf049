"""The drawable Graph and its renderers, against langchain_core's on the same calls.

``graphruntime.drawing.Graph`` and ``langchain_core.runnables.graph.Graph`` have the same
building API, so each test makes the same calls on both and compares what they draw.
"""

from __future__ import annotations

import sys
import uuid
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.runnables.graph import CurveStyle as LcCurveStyle
from langchain_core.runnables.graph import Graph as LcGraph
from langchain_core.runnables.graph import NodeStyles as LcNodeStyles

from graphruntime.drawing import (
    CurveStyle,
    DrawingUnavailableError,
    Edge,
    Graph,
    MissingDependencyError,
    NodeStyles,
)
from graphruntime.drawing._mermaid import dump_yaml
from graphruntime.errors import GraphRuntimeError

from .oracle import langgraph_ascii


def build_both(
    nodes: list[tuple[str, dict[str, Any] | None]],
    edges: list[tuple[str, str, Any, bool]],
) -> tuple[Any, Any]:
    """The same add_node/add_edge calls on our Graph and on langchain_core's."""
    ours, theirs = Graph(), LcGraph()
    both: tuple[Any, ...] = (ours, theirs)
    for graph in both:
        for node_id, metadata in nodes:
            graph.add_node(None, node_id, metadata=metadata)
        for source, target, data, conditional in edges:
            graph.add_edge(graph.nodes[source], graph.nodes[target], data, conditional)
    return ours, theirs


def test_mermaid_options_match_langchain() -> None:
    ours, theirs = build_both(
        [
            ("start", None),
            ("a b", {"note": "x < y | #1", "tags": ["t1", "t2"], "set": {"b", "a"}}),
            ("`code`", {"nested": {"skipped": True}, "n": 3, "flag": False}),
            ("end", None),
        ],
        [
            ("start", "a b", None, False),
            ("a b", "`code`", "one two three four five six seven eight nine ten eleven", True),
            ("`code`", "end", "short label", False),
            ("a b", "end", None, True),
        ],
    )
    options: list[tuple[dict[str, Any], dict[str, Any]]] = [
        ({}, {}),
        ({"with_styles": False}, {"with_styles": False}),
        ({"curve_style": CurveStyle.BASIS}, {"curve_style": LcCurveStyle.BASIS}),
        ({"wrap_label_n_words": 2}, {"wrap_label_n_words": 2}),
        (
            {"node_colors": NodeStyles(default="fill:#fff", first="x", last="y")},
            {"node_colors": LcNodeStyles(default="fill:#fff", first="x", last="y")},
        ),
        (
            {"frontmatter_config": {"config": {"theme": "neutral", "look": "handDrawn"}}},
            {"frontmatter_config": {"config": {"theme": "neutral", "look": "handDrawn"}}},
        ),
        (
            {"frontmatter_config": {"title": "G: 1", "config": {"flowchart": {"x": 1}}}},
            {"frontmatter_config": {"title": "G: 1", "config": {"flowchart": {"x": 1}}}},
        ),
    ]
    for kwargs, lc_kwargs in options:
        assert ours.draw_mermaid(**kwargs) == theirs.draw_mermaid(**lc_kwargs)


def test_mermaid_nested_subgraphs_and_empty_subgraph_match_langchain() -> None:
    ours, theirs = build_both(
        [
            ("__start__", None),
            ("p:__start__", None),
            ("p:c:x", None),
            ("p:c:y", None),
            ("lonely:node", None),
            ("__end__", None),
        ],
        [
            ("__start__", "p:__start__", None, False),
            ("p:__start__", "p:c:x", "go", True),
            ("p:c:x", "p:c:y", None, False),
            ("p:c:y", "__end__", None, False),
        ],
    )
    assert ours.draw_mermaid() == theirs.draw_mermaid()
    assert ours.draw_mermaid(with_styles=False) == theirs.draw_mermaid(with_styles=False)
    assert "\tsubgraph lonely\n" in ours.draw_mermaid()


def test_mermaid_duplicate_subgraph_name_is_an_error() -> None:
    # Subgraphs p and q each hold a subgraph named x.
    ids = ["p:a", "p:b", "p:x:1", "p:x:2", "q:a", "q:b", "q:x:1", "q:x:2"]
    ours, theirs = build_both(
        [(node_id, None) for node_id in ids],
        [(ids[i], ids[i + 1], None, False) for i in range(0, len(ids), 2)],
    )
    with pytest.raises(ValueError, match="Found duplicate subgraph 'x'") as ours_error:
        ours.draw_mermaid()
    with pytest.raises(ValueError) as theirs_error:
        theirs.draw_mermaid()
    assert str(ours_error.value) == str(theirs_error.value)


def test_uuid_ids_are_renamed_and_json_ids_numbered_like_langchain() -> None:
    ours, theirs = Graph(), LcGraph()

    def step(value: Any) -> Any:
        return value

    ids = [uuid.uuid4().hex, uuid.uuid4().hex]
    both: tuple[Any, ...] = (ours, theirs)
    for graph in both:
        first = graph.add_node(None, ids[0])
        second = graph.add_node(None, ids[1])
        graph.add_edge(first, second)
    # Generated ids draw as numbers in JSON and by name in Mermaid.
    assert ours.to_json() == theirs.to_json()
    assert ours.draw_mermaid() == theirs.draw_mermaid()
    assert ours.reid().to_json() == theirs.reid().to_json()
    node = ours.add_node(step)
    assert node.name == "step"


def test_first_last_trim_and_extend_match_langchain() -> None:
    ours, theirs = build_both(
        [("s", None), ("a", None), ("b", None), ("e", None)],
        [("s", "a", None, False), ("a", "b", None, False), ("b", "e", None, False)],
    )
    assert ours.first_node() == theirs.first_node()
    assert ours.last_node() == theirs.last_node()
    ours.trim_first_node()
    theirs.trim_first_node()
    ours.trim_last_node()
    theirs.trim_last_node()
    assert list(ours.nodes) == list(theirs.nodes) == ["a", "b"]
    host_ours, host_theirs = build_both([("x", None)], [])
    assert host_ours.extend(ours, prefix="sub") == host_theirs.extend(theirs, prefix="sub")
    assert host_ours.edges == host_theirs.edges
    assert list(host_ours.nodes) == list(host_theirs.nodes)
    host_ours.remove_node(host_ours.nodes["sub:a"])
    assert host_ours.edges == []


def test_graph_rejects_what_langchain_rejects() -> None:
    graph = Graph()
    node = graph.add_node(None, "a")
    with pytest.raises(ValueError, match="Node with id a already exists"):
        graph.add_node(None, "a")
    stray = Graph().add_node(None, "b")
    with pytest.raises(ValueError, match="Target node b not in graph"):
        graph.add_edge(node, stray)
    assert bool(graph)
    assert not bool(Graph())


@st.composite
def small_graphs(draw: st.DrawFn) -> tuple[list[str], list[tuple[str, str, bool]]]:
    names = [f"n{i}" for i in range(draw(st.integers(2, 7)))]
    pairs = st.tuples(st.sampled_from(names), st.sampled_from(names), st.booleans())
    edges = draw(st.lists(pairs, max_size=10, unique_by=lambda e: (e[0], e[1])))
    return names, edges


@settings(max_examples=40, deadline=None)
@given(small_graphs())
def test_ascii_matches_langchain(graph: tuple[list[str], list[tuple[str, str, bool]]]) -> None:
    names, edges = graph
    ours, theirs = build_both(
        [(n, None) for n in names], [(s, t, None, cond) for s, t, cond in edges]
    )
    try:
        expected = langgraph_ascii(theirs)
    except Exception as exc:  # noqa: BLE001 - grandalf fails on some shapes; so must we
        with pytest.raises(type(exc)):
            ours.draw_ascii()
        return
    assert ours.draw_ascii() == expected


def test_ascii_leaves_out_self_loops() -> None:
    ours, theirs = build_both(
        [("a", None), ("b", None)], [("a", "b", None, False), ("b", "b", None, True)]
    )
    with pytest.raises(ValueError, match="no intersection found"):
        theirs.draw_ascii()  # grandalf cannot route the loop out of its box
    assert ours.draw_ascii() == langgraph_ascii(theirs)


def test_print_ascii(capsys: pytest.CaptureFixture[str]) -> None:
    ours, _ = build_both([("a", None), ("b", None)], [("a", "b", None, False)])
    ours.print_ascii()
    assert capsys.readouterr().out == ours.draw_ascii() + "\n"


def test_ascii_without_grandalf_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    ours, _ = build_both([("a", None), ("b", None)], [("a", "b", None, False)])
    monkeypatch.setitem(sys.modules, "grandalf.graphs", None)
    with pytest.raises(MissingDependencyError, match=r"graphruntime\[draw\]") as caught:
        ours.draw_ascii()
    assert isinstance(caught.value, ImportError)
    assert isinstance(caught.value, GraphRuntimeError)


def test_png_renderers_are_rejected_with_the_alternative() -> None:
    ours, _ = build_both([("a", None)], [])
    with pytest.raises(DrawingUnavailableError, match="Graphviz"):
        ours.draw_png()
    with pytest.raises(DrawingUnavailableError, match="no network calls"):
        ours.draw_mermaid_png()


def test_edge_and_node_are_plain_tuples() -> None:
    assert Edge("a", "b") == ("a", "b", None, False)
    assert Edge("a", "b").copy(target="c") == Edge("a", "c")


YAML_VALUES = [
    "#e2e2e2",
    "linear",
    "handDrawn",
    "Arial, sans-serif",
    "16px",
    "1abc",
    "a: b",
    "a #b",
    "yes",
    "Off",
    "null",
    "~",
    "12",
    "0x1F",
    "1.5",
    "1e5",
    ".inf",
    "2001-12-14",
    "3:25",
    "",
    " padded",
    "-x",
    "- x",
    "?",
    "[a]",
    "@x",
    "it's",
    'say "hi"',
    "é",
    '€ and "quotes" \\',
    "😀",
    "tab\there",
    True,
    False,
    None,
    0,
    -3,
    1.5,
    1e20,
    float("inf"),
    float("-inf"),
]


@pytest.mark.parametrize("value", YAML_VALUES, ids=repr)
def test_front_matter_yaml_matches_pyyaml(value: Any) -> None:
    document = {"config": {"themeVariables": {"value": value}}, "title": value}
    assert dump_yaml(document) == yaml.dump(document, default_flow_style=False)


def test_front_matter_yaml_collections_match_pyyaml() -> None:
    document = {
        "b": [1, {"y": 2, "x": [3]}, [4, 5], {}, []],
        "a": {},
        "c": [],
        "d": {"nested": {"deeper": "v"}},
    }
    assert dump_yaml(document) == yaml.dump(document, default_flow_style=False)
