"""``aget_state_history`` streams: a snapshot as soon as the saver's ``alist`` yields it."""

from __future__ import annotations

import asyncio
import operator
from collections.abc import AsyncIterator
from typing import Annotated, Any, TypedDict

from graphruntime.checkpoint import InMemorySaver
from graphruntime.checkpoint.base import CheckpointTuple
from graphruntime.config import RunnableConfig
from graphruntime.graph import END, START, StateGraph


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


class GatedSaver(InMemorySaver):
    """An async saver whose ``alist`` yields one checkpoint at a time and holds the second
    until the reader opens the gate (as a database cursor that fetches lazily)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.yielded = 0
        self.listing_closed = False

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        try:
            for item in self.list(config, filter=filter, before=before, limit=limit):
                if self.yielded == 1:
                    await self.gate.wait()
                self.yielded += 1
                yield item
        finally:
            self.listing_closed = True


def _graph(saver: InMemorySaver) -> Any:
    g = StateGraph(State)
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "a")
    g.add_edge("a", "b")
    g.add_edge("b", END)
    return g.compile(checkpointer=saver)


async def _first_snapshot_before_the_history_is_read() -> None:
    saver = GatedSaver()
    graph = _graph(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"log": []}, config)
    expected = list(graph.get_state_history(config))
    assert len(expected) == 4  # input, start, a, b

    history = graph.aget_state_history(config)
    first = await asyncio.wait_for(anext(history), 10)
    # the saver has yielded one checkpoint and waits: the snapshot did not wait for the rest
    assert saver.yielded == 1
    assert first.values == {"log": ["a", "b"]}
    assert first.config == expected[0].config
    saver.gate.set()
    rest = [snapshot async for snapshot in history]
    assert [s.config for s in rest] == [s.config for s in expected[1:]]
    assert [s.values for s in rest] == [s.values for s in expected[1:]]
    assert saver.listing_closed


def test_aget_state_history_yields_each_snapshot_as_the_saver_lists_it() -> None:
    asyncio.run(_first_snapshot_before_the_history_is_read())


async def _closing_early() -> None:
    saver = GatedSaver()
    saver.gate.set()
    graph = _graph(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    await graph.ainvoke({"log": []}, config)
    history = graph.aget_state_history(config)
    await anext(history)
    await history.aclose()
    assert saver.yielded == 1
    assert saver.listing_closed


def test_closing_the_async_history_early_ends_the_savers_listing() -> None:
    asyncio.run(_closing_early())


def test_the_sync_history_is_the_same_and_honours_limit_and_before() -> None:
    saver = InMemorySaver()
    graph = _graph(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    graph.invoke({"log": []}, config)
    full = list(graph.get_state_history(config))

    async def read(**kwargs: Any) -> list[Any]:
        return [s async for s in graph.aget_state_history(config, **kwargs)]

    assert [s.config for s in asyncio.run(read())] == [s.config for s in full]
    limited = asyncio.run(read(limit=2))
    assert [s.config for s in limited] == [s.config for s in full[:2]]
    older = asyncio.run(read(before=full[1].config))
    assert [s.config for s in older] == [s.config for s in full[2:]]
    assert [s.values for s in older] == [s.values for s in full[2:]]
