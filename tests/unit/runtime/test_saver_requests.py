"""The loop's writes are saver requests; drivers perform them, or hand them to a SaverIO."""

from __future__ import annotations

import asyncio
import itertools
import operator
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

import pytest

from graphruntime.checkpoint import BaseCheckpointSaver, InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.graph import END, START, StateGraph
from graphruntime.pregel._driver import drive
from graphruntime.pregel._executors import ThreadExecutor
from graphruntime.pregel._loop import PregelLoop
from graphruntime.pregel._run import run_options
from graphruntime.pregel._saves import PutCheckpoint, PutWrites, SaverRequest, perform_now
from graphruntime.pregel._stream import StreamSink
from graphruntime.types import interrupt


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _chain(*names: str, checkpointer: Any = None) -> Any:
    g = StateGraph(State)
    for name in names:
        g.add_node(name, lambda s, n=name: {"log": [n]})
    g.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    return g.compile(checkpointer=checkpointer)


def _thread(name: str) -> RunnableConfig:
    return {"configurable": {"thread_id": name}}


class Recording:
    """A SaverIO that holds every request until ``settle`` (and counts the settles)."""

    def __init__(self) -> None:
        self.held: list[tuple[BaseCheckpointSaver, SaverRequest]] = []
        self.seen: list[SaverRequest] = []
        self.settles = 0

    def perform(self, saver: BaseCheckpointSaver, requests: Sequence[SaverRequest]) -> None:
        self.held.extend((saver, r) for r in requests)
        self.seen.extend(requests)

    def settle(self, saver: BaseCheckpointSaver) -> None:
        self.settles += 1
        held, self.held = self.held, []
        for owner, request in held:
            perform_now(owner, [request])


def test_starting_a_run_writes_nothing_until_its_driver_performs_the_requests() -> None:
    saver = InMemorySaver()
    graph = _chain("a", "b")
    config = _thread("t")
    loop = PregelLoop(
        graph,
        config,
        checkpointer=saver,
        sink=StreamSink({"values"}, False),
        options=run_options(graph, config),
    )
    loop.first({"log": []})
    assert saver.get_tuple(config) is None  # the input checkpoint is a request, not a put
    assert [type(r) for r in loop.outbox] == [PutCheckpoint]
    list(drive(loop, ThreadExecutor()))
    saved = saver.get_tuple(config)
    assert saved is not None
    assert saved.checkpoint["channel_values"]["log"] == ["a", "b"]
    assert loop.outbox == []


def test_each_step_is_stored_before_its_chunk_reaches_the_caller() -> None:
    saver = InMemorySaver()
    graph = _chain("a", "b", "c", checkpointer=saver)
    config = _thread("t")
    stored = []
    for chunk in graph.stream({"log": []}, config, stream_mode="values"):
        latest = saver.get_tuple(config)
        assert latest is not None
        stored.append((list(chunk["log"]), latest.checkpoint["channel_values"].get("log")))
    assert stored == [
        ([], []),
        (["a"], ["a"]),
        (["a", "b"], ["a", "b"]),
        (["a", "b", "c"], ["a", "b", "c"]),
    ]


def test_a_saver_io_gets_the_runs_and_its_subgraphs_requests_in_order() -> None:
    saver = InMemorySaver()
    inner = _chain("x", "y")  # runs under the parent's saver (checkpointer=None)

    def call_inner(state: State) -> State:
        return {"log": inner.invoke({"log": []})["log"]}

    g = StateGraph(State)
    g.add_node("outer", call_inner)
    g.add_edge(START, "outer")
    g.add_edge("outer", END)
    graph = g.compile()
    config = _thread("t")
    io = Recording()
    loop = PregelLoop(
        graph,
        config,
        checkpointer=saver,
        sink=StreamSink({"values"}, False),
        options=run_options(graph, config, saver_io=io),
    )
    loop.first({"log": []})
    list(drive(loop, ThreadExecutor()))
    namespaces = [
        (type(r).__name__, r.config["configurable"].get("checkpoint_ns", ""))
        for r in io.seen
        if isinstance(r, PutCheckpoint)
    ]
    # the subgraph's checkpoints come between its parent's, as they were made
    assert [ns.split(":")[0] for _, ns in namespaces] == [
        "",
        "",
        "outer",
        "outer",
        "outer",
        "outer",
        "",
    ]
    assert any(isinstance(r, PutWrites) for r in io.seen)
    # the run read its thread, then the subgraph its namespace: what was held then was
    # stored first (the parent's steps before it); the rest is still held
    assert io.settles == 2
    before = saver.get_tuple(config)
    assert before is not None
    assert before.checkpoint["channel_values"].get("log") == []
    io.settle(saver)
    saved = saver.get_tuple(config)
    assert saved is not None
    assert saved.checkpoint["channel_values"]["log"] == ["x", "y"]


def test_a_resume_reads_back_what_its_saver_io_held() -> None:
    saver = InMemorySaver()

    def ask(state: State) -> State:
        return {"log": [str(interrupt("ok?"))]}

    g = StateGraph(State)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    graph = g.compile()
    config = _thread("t")
    io = Recording()

    def run(input: Any) -> PregelLoop:
        loop = PregelLoop(
            graph,
            config,
            checkpointer=saver,
            sink=StreamSink({"values"}, False),
            options=run_options(graph, config, saver_io=io),
        )
        loop.first(input)
        list(drive(loop, ThreadExecutor()))
        return loop

    paused = run({"log": []})
    assert [i.value for i in paused.interrupts] == ["ok?"]
    io.settle(saver)
    from graphruntime.types import Command

    done = run(Command(resume="yes"))
    assert not done.interrupts
    io.settle(saver)
    saved = saver.get_tuple(config)
    assert saved is not None
    assert saved.checkpoint["channel_values"]["log"] == ["yes"]


class AsyncOnly(InMemorySaver):
    """A saver whose sync writes fail: an async run must await the async ones."""

    def put(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an async run called the sync put")

    def put_writes(self, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("an async run called the sync put_writes")

    async def aput(self, *args: Any, **kwargs: Any) -> Any:
        return super().put(*args, **kwargs)

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        super().put_writes(*args, **kwargs)


def test_an_async_run_awaits_the_savers_async_methods() -> None:
    saver = AsyncOnly()
    graph = _chain("a", "b", checkpointer=saver)
    config = _thread("t")
    out = asyncio.run(graph.ainvoke({"log": []}, config))
    assert out == {"log": ["a", "b"]}
    saved = saver.get_tuple(config)
    assert saved is not None
    assert saved.checkpoint["channel_values"]["log"] == ["a", "b"]
    with pytest.raises(AssertionError, match="sync put"):
        graph.invoke({"log": []}, _thread("u"))
