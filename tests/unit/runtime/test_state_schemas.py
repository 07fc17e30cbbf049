"""State schemas: reducers, one-value (``__root__``) states, managed values, UntrackedValue."""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired, TypedDict

import pytest

from graphruntime.channels import BinaryOperatorAggregate, LastValue, UntrackedValue
from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.errors import GraphValidationError
from graphruntime.graph import START, StateGraph
from graphruntime.graph._schema import channel_for, schema_fields
from graphruntime.managed import IsLastStep, RemainingSteps
from graphruntime.types import Command


def _reducer_with_default(a: list[int], b: list[int], c: int = 0) -> list[int]:
    return a + b


def test_a_reducer_takes_exactly_two_positional_parameters_defaults_included() -> None:
    assert isinstance(channel_for("k", Annotated[list, operator.add]), BinaryOperatorAggregate)
    with pytest.raises(GraphValidationError, match="Invalid reducer signature"):
        channel_for("k", Annotated[list, _reducer_with_default])
    with pytest.raises(GraphValidationError, match="Invalid reducer signature"):
        channel_for("k", Annotated[list, lambda a: a])
    # metadata that is not a reducer leaves a plain key
    assert isinstance(channel_for("k", Annotated[int, "a note"]), LastValue)


def test_types_without_fields_are_one_root_channel() -> None:
    for schema in (list, dict, list[str], Annotated[list, operator.add]):
        channels, managed = schema_fields(schema)
        assert list(channels) == ["__root__"]
        assert not managed


def test_a_root_state_reads_and_writes_the_bare_value() -> None:
    app = (
        StateGraph(Annotated[list, operator.add])
        .add_node("a", lambda s: [f"a saw {len(s)}"])
        .add_node("b", lambda s: Command(update=["b"]))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .compile(checkpointer=InMemorySaver())
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    assert app.invoke(["in"], config) == ["in", "a saw 1", "b"]
    assert app.get_state(config).values == ["in", "a saw 1", "b"]
    assert list(app.stream(["x"], {"configurable": {"thread_id": "u"}})) == [
        {"a": ["a saw 1"]},
        {"b": ["b"]},
    ]


def test_managed_values_are_computed_from_the_recursion_limit_and_not_stored() -> None:
    class State(TypedDict, total=False):
        log: Annotated[list[str], operator.add]
        remaining: RemainingSteps
        last: NotRequired[IsLastStep]

    assert set(StateGraph(State).managed) == {"remaining", "last"}

    def node(state: State) -> dict[str, Any]:
        return {"log": [f"{state['remaining']}/{state['last']}"]}

    app = (
        StateGraph(State)
        .add_node("node", node)
        .add_edge(START, "node")
        .add_conditional_edges("node", lambda s: "node" if s["remaining"] > 2 else "__end__")
        .compile(checkpointer=InMemorySaver())
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t"}, "recursion_limit": 4}
    # step 0 maps the input; the node runs at steps 1 and 2 of a limit of 4
    assert app.invoke({"log": []}, config) == {"log": ["3/False", "2/False"]}
    assert "remaining" not in app.get_state(config).values

    class Output(TypedDict):
        remaining: RemainingSteps

    with pytest.raises(GraphValidationError, match="Managed channels are not permitted"):
        StateGraph(State, output_schema=Output)


def test_untracked_values_live_for_the_run_only() -> None:
    class State(TypedDict, total=False):
        log: Annotated[list[str], operator.add]
        handle: Annotated[object, UntrackedValue]

    lock = object()  # not serializable: must never reach the saver
    app = (
        StateGraph(State)
        .add_node("open", lambda s: {"handle": lock, "log": ["open"]})
        .add_node("use", lambda s: {"log": [f"same {s['handle'] is lock}"]})
        .add_edge(START, "open")
        .add_edge("open", "use")
        .compile(checkpointer=InMemorySaver())
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    assert app.invoke({"log": []}, config)["log"] == ["open", "same True"]
    assert "handle" not in app.get_state(config).values


class Overall(TypedDict, total=False):
    foo: Annotated[int, operator.add]
    bar: str


class Private(TypedDict):
    baz: str


def test_a_router_reads_the_state_its_annotation_names() -> None:
    def route(state: Private) -> str:
        assert state == {"baz": "meow"}
        return "__end__"

    app = (
        StateGraph(Overall)
        .add_node("n", lambda s: {"foo": 1, "baz": "meow"})
        .add_edge(START, "n")
        .add_conditional_edges("n", route)
        .compile()
    )
    assert app.invoke({"foo": 0}) == {"foo": 1}
