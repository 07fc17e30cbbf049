"""DeltaChannel under ``durability="exit"``: the run's writes go on an anchor checkpoint.

LangGraph's layout (see graphruntime/pregel/_exit_delta.py): the final checkpoint does
not snapshot a channel its cadence does not call for; the run's delta writes are stored
on the checkpoint it started from, or on a stub saved first on a new thread.
"""

from __future__ import annotations

import asyncio
import operator
import uuid
from typing import Annotated, Any, TypedDict

import pytest

from graphruntime._internal._constants import NULL_TASK_ID
from graphruntime.channels import DeltaChannel
from graphruntime.checkpoint import DeltaSnapshot, InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.graph import START, StateGraph
from graphruntime.pregel._exit_delta import exit_delta_late_task_id, exit_delta_task_id
from graphruntime.types import Command, interrupt
from tests.unit.runtime.delta_graphs import extend, input_graph


class State(TypedDict, total=False):
    log: Annotated[list[str], DeltaChannel(extend)]
    plain: Annotated[list[str], operator.add]


def _both(*items: str) -> dict[str, list[str]]:
    return {"log": list(items), "plain": list(items)}


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _chain(saver: InMemorySaver, *names: str) -> Any:
    builder = StateGraph(State)
    previous = START
    for name in names:
        builder.add_node(name, lambda s, name=name: _both(name))
        builder.add_edge(previous, name)
        previous = name
    return builder.compile(checkpointer=saver)


def _assert_history_agrees(graph: Any, config: RunnableConfig) -> None:
    for state in graph.get_state_history(config):
        assert state.values.get("log", []) == state.values.get("plain", []), state.config


def _stored_task_ids(saver: InMemorySaver, checkpoint_id: str) -> list[str]:
    return [
        w.task_id
        for key, writes in saver.writes.items()
        if key[2] == checkpoint_id
        for w in writes.values()
    ]


def test_synthetic_ids_are_uuids_in_step_order_and_never_the_null_task() -> None:
    task = str(uuid.uuid4())
    ids = [exit_delta_task_id(s, task) for s in (-1, 0, 1, 9)]
    ids += [exit_delta_late_task_id(s, task) for s in (1, 2, 70000)]
    assert [str(uuid.UUID(i)) for i in ids] == ids
    assert ids[1:] == sorted(ids[1:])
    assert exit_delta_task_id(0, NULL_TASK_ID) != NULL_TASK_ID
    assert exit_delta_task_id(3, "not-a-uuid") == exit_delta_task_id(3, "not-a-uuid")


def test_a_first_run_stores_its_writes_on_a_stub_and_reads_them_back() -> None:
    saver = InMemorySaver()
    graph = _chain(saver, "a", "b")
    config = _thread()

    assert graph.invoke(_both("in"), config, durability="exit") == _both("in", "a", "b")

    final, stub = list(saver.list(config))
    assert stub.metadata == {"step": -2}
    assert stub.parent_config is None
    assert not stub.checkpoint["channel_versions"]
    assert final.parent_config == stub.config
    assert "log" not in final.checkpoint["channel_values"]  # not due for a snapshot
    # __start__'s (the first step, real path), then a's and b's (later steps)
    stored = _stored_task_ids(saver, stub.config["configurable"]["checkpoint_id"])
    assert len(stored) == 3
    assert stored[1:] == sorted(stored[1:])
    assert stored[1].startswith("ffffffff-")
    assert graph.get_state(config).values == _both("in", "a", "b")
    assert [s.values.get("log") for s in graph.get_state_history(config)] == [
        ["in", "a", "b"],
        [],
    ]


def test_a_later_run_anchors_on_the_checkpoint_it_loaded() -> None:
    saver = InMemorySaver()
    graph = _chain(saver, "a")
    config = _thread()
    graph.invoke(_both("1"), config, durability="exit")
    first = graph.get_state(config)

    graph.invoke(_both("2"), config, durability="exit")

    history = list(saver.list(config))
    assert len(history) == 3  # no second stub
    assert history[0].parent_config == first.config
    assert _stored_task_ids(saver, first.config["configurable"]["checkpoint_id"])
    assert graph.get_state(config).values == _both("1", "a", "2", "a")
    _assert_history_agrees(graph, config)


def test_a_run_from_an_addressed_checkpoint_snapshots_instead() -> None:
    saver = InMemorySaver()
    graph = _chain(saver, "a")
    config = _thread()
    graph.invoke(_both("1"), config, durability="exit")
    graph.invoke(_both("2"), config, durability="exit")
    stub = list(graph.get_state_history(config))[-1]
    before = _stored_task_ids(saver, stub.config["configurable"]["checkpoint_id"])

    graph.invoke(_both("x"), stub.config, durability="exit")

    head = saver.get_tuple(config)
    assert head is not None
    assert isinstance(head.checkpoint["channel_values"]["log"], DeltaSnapshot)
    assert _stored_task_ids(saver, stub.config["configurable"]["checkpoint_id"]) == before
    assert graph.get_state(config).values == _both("x", "a")
    _assert_history_agrees(graph, config)


def test_a_resume_with_an_update_interleaves_with_the_finished_sibling() -> None:
    def ask(state: State) -> dict[str, list[str]]:
        return _both(interrupt("ok?"))

    builder = StateGraph(State)
    builder.add_node("done", lambda s: _both("done"))
    builder.add_node("ask", ask)
    builder.add_node("after", lambda s: _both("after"))
    builder.add_edge(START, "done")
    builder.add_edge(START, "ask")
    builder.add_edge("ask", "after")
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    config = _thread()
    graph.invoke(_both("in"), config, durability="exit")

    out = graph.invoke(Command(resume="yes", update=_both("cmd")), config, durability="exit")

    assert out["log"] == out["plain"] == ["in", "cmd", "yes", "done", "after"]
    head = saver.get_tuple(config)
    assert head is not None
    assert "log" not in head.checkpoint["channel_values"]
    assert graph.get_state(config).values == out
    _assert_history_agrees(graph, config)


class _FailsTheWriteOfB(InMemorySaver):
    failed = False

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        if not self.failed and ("log", ["b"]) in writes:
            self.failed = True
            raise ConnectionError("lost")
        super().put_writes(config, writes, task_id, task_path)


def test_a_failed_anchor_write_leaves_the_final_checkpoint_unsaved() -> None:
    saver = _FailsTheWriteOfB()
    graph = _chain(saver, "a", "b", "c")
    config = _thread()
    with pytest.raises(ConnectionError):
        graph.invoke(_both("in"), config, durability="exit")
    assert [s.metadata for s in saver.list(config)] == [{"step": -2}]

    graph.invoke(_both("in"), config, durability="exit")

    # the stub holds the first attempt's writes: the final checkpoint snapshots
    head = saver.get_tuple(config)
    assert head is not None
    assert isinstance(head.checkpoint["channel_values"]["log"], DeltaSnapshot)
    assert graph.get_state(config).values == _both("in", "a", "b", "c")
    _assert_history_agrees(graph, config)


def test_an_async_run_saves_the_same_layout() -> None:
    saver = InMemorySaver()
    graph = _chain(saver, "a", "b")
    config = _thread()

    async def run() -> None:
        await graph.ainvoke(_both("1"), config, durability="exit")
        await graph.ainvoke(_both("2"), config, durability="exit")

    asyncio.run(run())

    metadata = [t.metadata.get("step") for t in saver.list(config)]
    assert metadata == [6, 2, -2]
    assert graph.get_state(config).values == _both("1", "a", "b", "2", "a", "b")
    _assert_history_agrees(graph, config)


def test_a_run_input_to_a_delta_channel_is_stored_on_the_anchor() -> None:
    saver = InMemorySaver()
    graph = input_graph(saver)
    config = _thread()
    assert graph.invoke(["a"], config, durability="exit") == {START: ["a"], "n": 1}
    assert graph.invoke(["b"], config, durability="exit") == {START: ["a", "b"], "n": 2}

    assert graph.get_state(config).values == {START: ["a", "b"], "n": 2}
    assert [t.metadata.get("step") for t in saver.list(config)][-1] == -2
