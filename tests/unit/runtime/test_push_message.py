"""push_message: a message to the ``messages`` stream (and the state) from inside a node."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage

from graphruntime.constants import START
from graphruntime.errors import GraphValidationError
from graphruntime.graph import StateGraph
from graphruntime.graph.message import MessageGraph, MessagesState, push_message
from graphruntime.warnings import LangGraphDeprecatedSinceV10


def pushing_graph(state_key: str | None = "messages") -> Any:
    def chat(state: MessagesState) -> None:
        push_message(AIMessage("first", id="1"), state_key=state_key)
        push_message(HumanMessage("second", id="2"), state_key=state_key)

    builder = StateGraph(MessagesState)
    builder.add_node(chat)
    builder.add_edge(START, "chat")
    return builder.compile()


def test_pushed_messages_stream_and_land_in_the_state() -> None:
    streamed, values = [], None
    for mode, chunk in pushing_graph().stream({"messages": []}, stream_mode=["messages", "values"]):
        if mode == "messages":
            streamed.append(chunk)
        else:
            values = chunk
    assert [m.id for m, _ in streamed] == ["1", "2"]
    assert values is not None
    assert values["messages"] == [m for m, _ in streamed]
    metadata = streamed[0][1]
    assert metadata["langgraph_node"] == "chat"
    assert metadata["langgraph_step"] == 1


def test_without_a_state_key_the_message_is_only_streamed() -> None:
    graph = pushing_graph(state_key=None)
    streamed = list(graph.stream({"messages": []}, stream_mode="messages"))
    assert [m.content for m, _ in streamed] == ["first", "second"]
    assert graph.invoke({"messages": []}) == {"messages": []}


def test_not_streaming_messages_still_updates_the_state() -> None:
    assert [m.id for m in pushing_graph().invoke({"messages": []})["messages"]] == ["1", "2"]


def test_a_chunk_is_pushed_as_given() -> None:
    def chat(state: MessagesState) -> None:
        push_message(AIMessageChunk(content="partial", id="c1"))

    builder = StateGraph(MessagesState).add_node(chat).add_edge(START, "chat")
    ((message, _),) = builder.compile().stream({"messages": []}, stream_mode="messages")
    assert isinstance(message, AIMessageChunk)


def test_a_message_needs_an_id() -> None:
    def chat(state: MessagesState) -> None:
        push_message(AIMessage("no id"))

    builder = StateGraph(MessagesState).add_node(chat).add_edge(START, "chat")
    with pytest.raises(ValueError, match="Message ID is required"):
        builder.compile().invoke({"messages": []})


def test_outside_a_node_there_is_nothing_to_push_to() -> None:
    with pytest.raises(RuntimeError, match="outside of a runnable context"):
        push_message(AIMessage("hi", id="1"))


def test_a_subgraphs_push_streams_under_its_namespace() -> None:
    inner = pushing_graph(state_key=None)
    outer = StateGraph(MessagesState).add_node("sub", inner).add_edge(START, "sub").compile()

    assert list(outer.stream({"messages": []}, stream_mode="messages")) == []
    namespaces = [
        ns for ns, _ in outer.stream({"messages": []}, stream_mode="messages", subgraphs=True)
    ]
    assert len(namespaces) == 2
    assert all(len(ns) == 1 and ns[0].startswith("sub:") for ns in namespaces)


def test_message_graph_is_deprecated() -> None:
    with (
        pytest.warns(LangGraphDeprecatedSinceV10, match="MessageGraph is deprecated"),
        # The warning comes first, whether or not a bare-list state can be built.
        contextlib.suppress(GraphValidationError),
    ):
        MessageGraph()
