"""Cached node results: compile(cache=), CachePolicy, and what is (not) cached."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from graphruntime.cache import CachePolicy as CacheCachePolicy
from graphruntime.cache.memory import InMemoryCache
from graphruntime.graph import START, StateGraph
from graphruntime.types import CachePolicy


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]
    n: int


def test_types_cache_policy_is_the_cache_one() -> None:
    assert CachePolicy is CacheCachePolicy


def test_a_hit_skips_the_node_and_streams_as_cached() -> None:
    calls: list[int] = []

    def node(state: State) -> dict[str, Any]:
        calls.append(state["n"])
        return {"log": [f"n={state['n']}"]}

    app = (
        StateGraph(State)
        .add_node("node", node, cache_policy=CachePolicy(ttl=60))
        .add_edge(START, "node")
        .compile(cache=InMemoryCache())
    )
    assert list(app.stream({"log": [], "n": 1})) == [{"node": {"log": ["n=1"]}}]
    assert list(app.stream({"log": [], "n": 1})) == [
        {"node": {"log": ["n=1"]}, "__metadata__": {"cached": True}}
    ]
    app.invoke({"log": [], "n": 2})
    assert calls == [1, 2]
    app.clear_cache(["node"])
    app.invoke({"log": [], "n": 1})
    assert calls == [1, 2, 1]


def test_a_failed_node_is_not_cached_and_clear_cache_needs_a_cache() -> None:
    calls: list[int] = []

    def node(state: State) -> dict[str, Any]:
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("first time")
        return {"log": ["ok"]}

    app = (
        StateGraph(State)
        .add_node("node", node, cache_policy=CachePolicy())
        .add_edge(START, "node")
        .compile(cache=InMemoryCache())
    )
    with pytest.raises(ValueError):
        app.invoke({"log": []})
    assert app.invoke({"log": []}) == {"log": ["ok"]}
    assert len(calls) == 2
    with pytest.raises(ValueError, match="No cache"):
        StateGraph(State).add_node("n", node).add_edge(START, "n").compile().clear_cache()


def test_node_defaults_give_regular_nodes_the_cache_policy() -> None:
    calls: list[str] = []

    def node(state: State) -> dict[str, Any]:
        calls.append("node")
        return {"log": ["x"]}

    app = (
        StateGraph(State)
        .set_node_defaults(cache_policy=CachePolicy())
        .add_node("node", node)
        .add_edge(START, "node")
        .compile(cache=InMemoryCache())
    )
    app.invoke({"log": []})
    app.invoke({"log": []})
    assert calls == ["node"]
