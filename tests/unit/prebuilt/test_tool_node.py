"""ToolNode in graphruntime graphs: routing, interrupts, streaming, drawing, errors."""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from pydantic import BaseModel

from graphruntime._internal._tool_stream import tool_call_writer
from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import get_stream_writer
from graphruntime.constants import START
from graphruntime.errors import GraphRuntimeError
from graphruntime.graph import StateGraph
from graphruntime.graph.message import MessagesState
from graphruntime.prebuilt import InjectedState, ToolNode, ToolRuntime, tools_condition
from graphruntime.prebuilt._errors import (
    InjectedStateError,
    InvalidToolOutputError,
    PrebuiltInputError,
    ToolInvocationError,
)
from graphruntime.types import Command, interrupt
from tests.unit.prebuilt.fakes import ai_calling, tool_call


@tool
def add(a: int, b: int) -> int:
    """Adds."""
    return a + b


@tool
def ask_human(question: str) -> str:
    """Asks a human and returns the answer."""
    return f"human says {interrupt(question)}"


@tool
def chatty(text: str, runtime: ToolRuntime) -> str:
    """Streams while working."""
    runtime.stream_writer({"progress": text})
    get_stream_writer()({"direct": text})
    return text.upper()


@tool
def with_state(x: int, state: Annotated[dict[str, Any], InjectedState]) -> str:
    """Reads the state."""
    return str(len(state))


@tool
def read_foo(x: int, foo: Annotated[str, InjectedState("foo")]) -> str:
    """Reads foo."""
    return foo


def model_node(calls: list[dict[str, Any]]) -> Any:
    """A node that asks for ``calls`` once, then answers."""

    def model(state: MessagesState) -> dict[str, Any]:
        if isinstance(state["messages"][-1], ToolMessage) or not calls:
            return {"messages": [AIMessage("done")]}
        return {"messages": [ai_calling(*calls)]}

    return model


def agent_graph(calls: list[dict[str, Any]], tools: list[Any], **compile: Any) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("model", model_node(calls))
    builder.add_node(ToolNode(tools))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile(**compile)


def contents(result: dict[str, Any]) -> list[Any]:
    return [m.content for m in result["messages"]]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_tools_run_in_a_graph_loop(mode: str) -> None:
    graph = agent_graph(
        [tool_call("add", {"a": 1, "b": 2}, "c1"), tool_call("add", {"a": 3, "b": 4}, "c2")],
        [add],
    )
    inputs = {"messages": [HumanMessage("sum")]}
    if mode == "sync":
        result = graph.invoke(inputs)
    else:
        result = asyncio.run(graph.ainvoke(inputs))
    assert contents(result) == ["sum", "", "3", "7", "done"]
    assert [m.tool_call_id for m in result["messages"][2:4]] == ["c1", "c2"]


def test_async_only_tool_runs_under_ainvoke() -> None:
    @tool
    async def slow(x: int) -> int:
        """Async only."""
        await asyncio.sleep(0)
        return x * 2

    graph = agent_graph([tool_call("slow", {"x": 21}, "c1")], [slow])
    result = asyncio.run(graph.ainvoke({"messages": [HumanMessage("go")]}))
    assert contents(result)[2] == "42"
    with pytest.raises(NotImplementedError):
        graph.invoke({"messages": [HumanMessage("go")]})


def test_interrupt_inside_a_tool_pauses_and_resumes() -> None:
    graph = agent_graph(
        [tool_call("ask_human", {"question": "ok?"}, "c1")],
        [ask_human],
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "t1"}}
    first = graph.invoke({"messages": [HumanMessage("go")]}, config)
    assert [i.value for i in first["__interrupt__"]] == ["ok?"]
    assert graph.get_state(config).next == ("tools",)
    result = graph.invoke(Command(resume="yes"), config)
    assert contents(result) == ["go", "", "human says yes", "done"]


def test_tool_writes_to_the_custom_stream() -> None:
    graph = agent_graph([tool_call("chatty", {"text": "hi"}, "c1")], [chatty])
    chunks = list(graph.stream({"messages": [HumanMessage("go")]}, stream_mode="custom"))
    assert chunks == [{"progress": "hi"}, {"direct": "hi"}]


def test_tool_runtime_sees_the_call_and_the_state() -> None:
    seen: list[Any] = []

    @tool
    def inspect_runtime(x: int, runtime: ToolRuntime) -> str:
        """Records its runtime."""
        seen.append(runtime)
        return "ok"

    graph = agent_graph([tool_call("inspect_runtime", {"x": 1}, "c9")], [inspect_runtime, add])
    graph.invoke({"messages": [HumanMessage("go")]})
    (runtime,) = seen
    assert runtime.tool_call_id == "c9"
    assert [m.content for m in runtime.state["messages"]] == ["go", ""]
    assert sorted(t.name for t in runtime.tools) == ["add", "inspect_runtime"]
    assert runtime.store is None
    assert runtime.context is None
    assert runtime.config["configurable"]["checkpoint_ns"].startswith("tools:")


def test_emit_output_delta_writes_only_while_a_writer_is_set() -> None:
    runtime: ToolRuntime = ToolRuntime(
        state={}, context=None, config={}, stream_writer=print, tool_call_id="c1", store=None
    )
    runtime.emit_output_delta("ignored")  # no writer: a no-op
    deltas: list[Any] = []
    token = tool_call_writer.set(deltas.append)
    try:
        runtime.emit_output_delta({"part": 1})
    finally:
        tool_call_writer.reset(token)
    assert deltas == [{"part": 1}]


def test_tool_node_is_drawn_with_its_tools() -> None:
    graph = agent_graph([], [add, ask_human])
    tools = next(n for n in graph.get_graph().to_json()["nodes"] if n["id"] == "tools")
    assert tools["data"]["id"] == ["langgraph", "prebuilt", "tool_node", "ToolNode"]
    assert tools["metadata"] == {"__tools": ["add", "ask_human"]}


def test_tool_node_composes_as_a_runnable() -> None:
    pick = RunnableLambda(lambda state: state["history"])
    chain = pick | ToolNode([add])
    result = chain.invoke({"history": [ai_calling(tool_call("add", {"a": 2, "b": 2}, "c1"))]})
    assert [m.content for m in result] == ["4"]


def test_invoke_refuses_extra_keyword_arguments() -> None:
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        ToolNode([add]).invoke({"messages": []}, None, stream=True)


def test_bare_tool_calls_cannot_feed_injected_state() -> None:
    node = ToolNode([with_state])
    with pytest.raises(PrebuiltInputError, match="bare tool calls"):
        node.invoke([tool_call("with_state", {"x": 1}, "c1")])


def test_errors_are_graphruntime_errors_and_builtin_types() -> None:
    assert issubclass(PrebuiltInputError, GraphRuntimeError)
    assert issubclass(PrebuiltInputError, ValueError)
    assert issubclass(InjectedStateError, KeyError)
    assert issubclass(InvalidToolOutputError, TypeError)
    assert issubclass(InvalidToolOutputError, ValueError)
    assert issubclass(ToolInvocationError, GraphRuntimeError)
    node = ToolNode([read_foo])
    with pytest.raises(InjectedStateError, match="needs state key 'foo'"):
        node.invoke({"messages": [ai_calling(tool_call("read_foo", {"x": 1}, "c1"))]})


class Chat(BaseModel):
    messages: list[Any]


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ([ai_calling(tool_call("add", {}, "1"))], "tools"),
        ([AIMessage("no calls")], "__end__"),
        ({"messages": [ai_calling(tool_call("add", {}, "1"))]}, "tools"),
        ({"messages": [HumanMessage("hi")]}, "__end__"),
        (Chat(messages=[ai_calling(tool_call("add", {}, "1"))]), "tools"),
    ],
)
def test_tools_condition_routes_on_the_last_message(state: Any, expected: str) -> None:
    assert tools_condition(state) == expected


def test_tools_condition_reads_another_key_and_needs_messages() -> None:
    assert tools_condition({"chat": [ai_calling(tool_call("a", {}, "1"))]}, "chat") == "tools"
    with pytest.raises(ValueError, match="No messages found"):
        tools_condition({"messages": []})
