"""A node served from the node cache saves its writes like a node that ran,
without writing them back to the cache, and a node that fails isn't cached."""

import operator
from typing import Annotated, Any

import pytest
from graphruntime.cache.memory import InMemoryCache
from graphruntime.checkpoint.memory import InMemorySaver
from typing_extensions import TypedDict

from graphruntime.channels.delta import DeltaChannel
from graphruntime.graph import START, StateGraph
from graphruntime.types import CachePolicy, Durability

pytestmark = pytest.mark.anyio

INPUT = {"log": [], "plain": []}


def _append(current: list, writes: list) -> list:
    return [*current, *(item for write in writes for item in write)]


class _State(TypedDict):
    log: Annotated[list, DeltaChannel(_append)]
    plain: Annotated[list, operator.add]


class _CountsSets(InMemoryCache):
    sets = 0

    def set(self, keys: Any) -> None:
        self.sets += 1
        super().set(keys)


def _a_then_cached_b_then_c(runs: list[str], cache: InMemoryCache) -> Any:
    def node(name: str) -> Any:
        def run(state: _State) -> dict:
            runs.append(name)
            return {"log": [name], "plain": [name]}

        return run

    builder = StateGraph(_State)
    builder.add_node("a", node("a"))
    builder.add_node("b", node("b"), cache_policy=CachePolicy())
    builder.add_node("c", node("c"))
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    builder.add_edge("b", "c")
    return builder.compile(checkpointer=InMemorySaver(), cache=cache)


def test_a_cache_hit_saves_its_writes_without_caching_them_again(
    durability: Durability,
) -> None:
    runs: list[str] = []
    cache = _CountsSets()
    graph = _a_then_cached_b_then_c(runs, cache)
    graph.invoke(INPUT, {"configurable": {"thread_id": "1"}}, durability=durability)
    config = {"configurable": {"thread_id": "2"}}

    graph.invoke(INPUT, config, durability=durability)

    assert runs == ["a", "b", "c", "a", "c"]
    assert cache.sets == 1, "the cache hit was written back to the cache"
    for state in graph.get_state_history(config):
        assert state.values.get("log", []) == state.values.get("plain", [])


async def test_a_cache_hit_saves_its_writes_without_caching_them_again_async(
    durability: Durability,
) -> None:
    runs: list[str] = []
    cache = _CountsSets()
    graph = _a_then_cached_b_then_c(runs, cache)
    await graph.ainvoke(
        INPUT, {"configurable": {"thread_id": "1"}}, durability=durability
    )
    config = {"configurable": {"thread_id": "2"}}

    await graph.ainvoke(INPUT, config, durability=durability)

    assert runs == ["a", "b", "c", "a", "c"]
    assert cache.sets == 1, "the cache hit was written back to the cache"
    async for state in graph.aget_state_history(config):
        assert state.values.get("log", []) == state.values.get("plain", [])


def _cached_node_that_fails(runs: list[str]) -> Any:
    def fail(state: _State) -> dict:
        runs.append("b")
        raise ValueError("b failed")

    builder = StateGraph(_State)
    builder.add_node("b", fail, cache_policy=CachePolicy())
    builder.add_edge(START, "b")
    return builder.compile(checkpointer=InMemorySaver(), cache=InMemoryCache())


def test_a_node_that_fails_is_not_cached() -> None:
    runs: list[str] = []
    graph = _cached_node_that_fails(runs)

    for thread in ("1", "2"):
        with pytest.raises(ValueError, match="b failed"):
            graph.invoke(INPUT, {"configurable": {"thread_id": thread}})

    assert runs == ["b", "b"]


async def test_a_node_that_fails_is_not_cached_async() -> None:
    runs: list[str] = []
    graph = _cached_node_that_fails(runs)

    for thread in ("1", "2"):
        with pytest.raises(ValueError, match="b failed"):
            await graph.ainvoke(INPUT, {"configurable": {"thread_id": thread}})

    assert runs == ["b", "b"]
