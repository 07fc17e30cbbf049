"""Core-loop behaviours LangGraph has: eager stream chunks, cancellation, Command.PARENT
from a second subgraph call, durability and stateful subgraphs' edge cases."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, TypedDict

import pytest

from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import RunnableConfig, get_stream_writer
from graphruntime.graph import END, START, StateGraph
from graphruntime.types import Command


class State(TypedDict, total=False):
    ok: bool
    log: str


def _released_graph(released: threading.Event) -> Any:
    def node(state: State) -> dict[str, Any]:
        get_stream_writer()("before")
        # without eager streaming the caller only sees "before" after this returns
        return {"ok": released.wait(5)}

    return StateGraph(State).add_node("node", node).add_edge(START, "node").compile()


def test_custom_chunk_reaches_the_caller_while_the_node_runs() -> None:
    released = threading.Event()
    chunks = []
    for mode, chunk in _released_graph(released).stream({}, stream_mode=["custom", "values"]):
        if chunk == "before":
            released.set()
        chunks.append((mode, chunk))
    assert chunks == [("custom", "before"), ("values", {"ok": True})]


def test_custom_chunk_reaches_the_async_caller_while_the_node_runs() -> None:
    asyncio.run(_custom_chunk_reaches_the_async_caller_while_the_node_runs())


async def _custom_chunk_reaches_the_async_caller_while_the_node_runs() -> None:
    released = asyncio.Event()

    async def node(state: State) -> dict[str, Any]:
        get_stream_writer()("before")
        try:
            await asyncio.wait_for(released.wait(), 5)
        except TimeoutError:
            return {"ok": False}
        return {"ok": True}

    graph = StateGraph(State).add_node("node", node).add_edge(START, "node").compile()
    chunks = []
    async for chunk in graph.astream({}, stream_mode=["custom", "values"]):
        if chunk == ("custom", "before"):
            released.set()
        chunks.append(chunk)
    assert chunks == [("custom", "before"), ("values", {"ok": True})]


def test_a_failing_async_node_cancels_its_running_siblings() -> None:
    asyncio.run(_a_failing_async_node_cancels_its_running_siblings())


async def _a_failing_async_node_cancels_its_running_siblings() -> None:
    cancelled = asyncio.Event()

    async def slow(state: State) -> dict[str, Any]:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {}

    async def failing(state: State) -> dict[str, Any]:
        await asyncio.sleep(0)
        raise ValueError("boom")

    graph = (
        StateGraph(State)
        .add_node("slow", slow)
        .add_node("failing", failing)
        .add_edge(START, "slow")
        .add_edge(START, "failing")
        .compile()
    )
    with pytest.raises(ValueError, match="boom"):
        await asyncio.wait_for(graph.ainvoke({}), 5)
    assert cancelled.is_set()


def test_cancelling_ainvoke_cancels_the_running_node() -> None:
    asyncio.run(_cancelling_ainvoke_cancels_the_running_node())


async def _cancelling_ainvoke_cancels_the_running_node() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def slow(state: State) -> dict[str, Any]:
        started.set()
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {}

    graph = StateGraph(State).add_node("slow", slow).add_edge(START, "slow").compile()
    run = asyncio.create_task(graph.ainvoke({}))
    await asyncio.wait_for(started.wait(), 5)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert cancelled.is_set()


def test_closing_astream_cancels_the_running_node() -> None:
    asyncio.run(_closing_astream_cancels_the_running_node())


async def _closing_astream_cancels_the_running_node() -> None:
    cancelled = asyncio.Event()

    async def quick(state: State) -> dict[str, Any]:
        return {"log": "quick"}

    async def slow(state: State) -> dict[str, Any]:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {}

    graph = (
        StateGraph(State)
        .add_node("quick", quick)
        .add_node("slow", slow)
        .add_edge(START, "quick")
        .add_edge(START, "slow")
        .compile()
    )
    stream = graph.astream({})
    assert await anext(stream) == {"quick": {"log": "quick"}}
    await stream.aclose()  # type: ignore[attr-defined]
    assert cancelled.is_set()


def test_parent_command_from_the_second_subgraph_call_in_one_node() -> None:
    class Child(TypedDict):
        jump: bool

    def child_node(state: Child) -> Any:
        return Command(graph=Command.PARENT, goto="second") if state["jump"] else state

    child = StateGraph(Child).add_node("node", child_node).add_edge(START, "node").compile()

    def first(state: State) -> dict[str, Any]:
        child.invoke({"jump": False})
        child.invoke({"jump": True})
        raise AssertionError("the Command routes the parent before this line")

    graph = (
        StateGraph(State)
        .add_node("first", first)
        .add_node("second", lambda state: {"log": "second"})
        .add_edge(START, "first")
        .add_edge("second", END)
        .compile()
    )
    assert graph.invoke({"log": ""}) == {"log": "second"}


def test_exit_durability_saves_only_the_last_checkpoint() -> None:
    saver = InMemorySaver()
    graph = (
        StateGraph(State)
        .add_node("a", lambda state: {"log": "a"})
        .add_node("b", lambda state: {"log": "b"})
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile(checkpointer=saver)
    )
    exit_config: RunnableConfig = {"configurable": {"thread_id": "exit"}}
    graph.invoke({"log": ""}, exit_config, durability="exit")
    sync_config: RunnableConfig = {"configurable": {"thread_id": "sync"}}
    graph.invoke({"log": ""}, sync_config, durability="sync")
    exit_history = list(graph.get_state_history(exit_config))
    assert [s.values for s in exit_history] == [{"log": "b"}]
    assert len(list(graph.get_state_history(sync_config))) == 4
    with pytest.raises(ValueError, match="durability"):
        graph.invoke({"log": ""}, sync_config, durability="later")  # type: ignore[arg-type]


def test_checkpointer_true_on_a_root_graph_raises() -> None:
    graph = StateGraph(State).add_node("a", lambda state: {}).add_edge(START, "a")
    with pytest.raises(RuntimeError, match="checkpointer=True cannot be used for root graphs"):
        graph.compile(checkpointer=True).invoke({})


def test_compile_rejects_a_checkpointer_that_is_not_a_saver() -> None:
    graph = StateGraph(State).add_node("a", lambda state: {}).add_edge(START, "a")
    with pytest.raises(TypeError, match="Invalid checkpointer provided"):
        graph.compile(checkpointer=object())  # type: ignore[arg-type]


class _AsyncOnlySaver(InMemorySaver):
    """A saver whose sync methods fail: an async run must use the async ones."""

    def get_tuple(self, config: Any) -> Any:
        raise AssertionError("sync get_tuple in an async run")

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        raise AssertionError("sync put in an async run")

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        raise AssertionError("sync put_writes in an async run")

    async def aget_tuple(self, config: Any) -> Any:
        return InMemorySaver.get_tuple(self, config)

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return InMemorySaver.put(self, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None:
        InMemorySaver.put_writes(self, config, writes, task_id, task_path)


def test_async_runs_use_the_savers_async_methods() -> None:
    from graphruntime.types import interrupt

    def ask(state: State) -> dict[str, Any]:
        return {"log": interrupt("question")}

    saver = _AsyncOnlySaver()
    graph = (
        StateGraph(State).add_node("ask", ask).add_edge(START, "ask").compile(checkpointer=saver)
    )
    config: RunnableConfig = {"configurable": {"thread_id": "1"}}

    async def run() -> list[Any]:
        first = await graph.ainvoke({"log": ""}, config)
        second = await graph.ainvoke(Command(resume="answer"), config, durability="exit")
        return [first["__interrupt__"][0].value, second]

    assert asyncio.run(run()) == ["question", {"log": "answer"}]
    saved = InMemorySaver.get_tuple(saver, config)
    assert saved is not None
    assert saved.checkpoint["channel_values"]["log"] == "answer"
