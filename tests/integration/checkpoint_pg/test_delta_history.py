"""PostgresSaver's DeltaChannel history on threads the runtime writes: one statement."""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any, TypedDict

import psycopg
import pytest

from checkpoint_pg import PostgresSaver
from graphruntime.channels import DeltaChannel
from graphruntime.config import RunnableConfig
from graphruntime.errors import CheckpointError
from graphruntime.graph import END, START, StateGraph
from graphruntime.types import Command, interrupt

pytestmark = pytest.mark.integration


def _extend(current: list[Any], writes: list[list[Any]]) -> list[Any]:
    return [*current, *(item for write in writes for item in write)]


class _State(TypedDict):
    log: Annotated[list[str], DeltaChannel(_extend, snapshot_frequency=7)]
    plain: Annotated[list[str], operator.add]


class _CountingSaver(PostgresSaver):
    """Counts the statements its history reads run."""

    statements = 0

    def _run(self, operation: str, op: Any) -> Any:
        if operation != "get_delta_channel_history":
            return super()._run(operation, op)

        def counted() -> Any:
            result = None
            try:
                while True:
                    request = op.send(result)
                    self.statements += 1
                    result = yield request
            except StopIteration as stop:
                return stop.value

        return super()._run(operation, counted())


def _graph(saver: PostgresSaver) -> Any:
    def node(name: str) -> Any:
        return lambda state: {"log": [name], "plain": [name]}

    builder = StateGraph(_State)
    for name in ("a", "b", "c"):
        builder.add_node(name, node(name))
        builder.add_edge(START, name)  # a parallel step: order matters on replay
        builder.add_edge(name, "d")
    builder.add_node("d", node("d"))
    builder.add_edge("d", END)
    return builder.compile(checkpointer=saver)


def test_every_checkpoint_of_a_thread_reads_back_in_one_statement(
    pg_conn: psycopg.Connection[Any],
) -> None:
    saver = _CountingSaver(pg_conn)
    graph = _graph(saver)
    config: RunnableConfig = {"configurable": {"thread_id": f"delta-{uuid.uuid4()}"}}
    for i in range(6):
        graph.invoke({"log": [f"in{i}"], "plain": [f"in{i}"]}, config)

    history = list(graph.get_state_history(config))
    saver.statements = 0
    reads = 0
    for state in history:
        saver.get_delta_channel_history(config=state.config, channels=["log"])
        reads += 1
        assert state.values.get("log", []) == state.values.get("plain", [])
    assert saver.statements == reads


def test_a_thread_older_than_its_delta_channel_reads_back(
    pg_conn: psycopg.Connection[Any],
) -> None:
    """The plain values stored before the key became a DeltaChannel seed its history."""

    class Before(TypedDict):
        log: Annotated[list[str], operator.add]
        plain: Annotated[list[str], operator.add]

    def step(state: Any) -> dict[str, list[str]]:
        answer = interrupt("more?")
        return {"log": [answer], "plain": [answer]}

    saver = PostgresSaver(pg_conn)
    config: RunnableConfig = {"configurable": {"thread_id": f"delta-{uuid.uuid4()}"}}
    for schema in (Before, _State, _State):
        graph = StateGraph(schema).add_node("step", step).add_edge(START, "step")
        compiled = graph.compile(checkpointer=saver)
        compiled.invoke({"log": ["x"], "plain": ["x"]}, config)
        compiled.invoke(Command(resume="y"), config)
    state = compiled.get_state(config)
    assert state.values["log"] == state.values["plain"] == ["x", "y"] * 3


def test_pruning_a_delta_thread_is_refused_and_changes_nothing(
    pg_conn: psycopg.Connection[Any],
) -> None:
    saver = PostgresSaver(pg_conn)
    graph = _graph(saver)
    config: RunnableConfig = {"configurable": {"thread_id": f"delta-{uuid.uuid4()}"}}
    for i in range(3):
        graph.invoke({"log": [f"in{i}"], "plain": [f"in{i}"]}, config)
    before = [s.values for s in graph.get_state_history(config)]

    with pytest.raises(CheckpointError, match="DeltaChannel"):
        saver.prune(config["configurable"]["thread_id"], keep_last=1)

    assert [s.values for s in graph.get_state_history(config)] == before
