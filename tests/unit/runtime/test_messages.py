"""graphruntime.graph.message: add_messages and MessagesState, checked against LangGraph."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Annotated, Any, cast

import pytest

pytest.importorskip(
    "langchain_core",
    reason="langchain-core is not installed (pip install 'graphruntime[messages]')",
)

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.graph import message as lg_message
from pydantic import BaseModel
from typing_extensions import TypedDict

from graphruntime.checkpoint import InMemorySaver, JsonSerializer
from graphruntime.graph import END, START, StateGraph
from graphruntime.graph.message import (
    REMOVE_ALL_MESSAGES,
    MessagesState,
    add_messages,
)

ROOT = Path(__file__).resolve().parents[3]


def _fresh(messages: Any) -> Any:
    """A deep copy: add_messages assigns ids in place, and both runtimes get the same input."""
    if isinstance(messages, list):
        return [_fresh(m) for m in messages]
    return messages.model_copy(deep=True) if isinstance(messages, BaseMessage) else messages


CASES: dict[str, tuple[Any, Any]] = {
    "single": ([HumanMessage("Hello", id="1")], AIMessage("Hi there!", id="2")),
    "several": (
        [HumanMessage("Hello", id="1")],
        [AIMessage("Hi there!", id="2"), SystemMessage("System message", id="3")],
    ),
    "replace by id": ([HumanMessage("Hello", id="1")], HumanMessage("Hello again", id="1")),
    "duplicates in update": (
        [],
        [AIMessage("Hi there!", id="1"), AIMessage("Hi there again!", id="1")],
    ),
    "remove then re-add": (
        [AIMessage("Hello!", id="1")],
        [RemoveMessage(id="1"), AIMessage("Hi there!", id="1"), AIMessage("again", id="1")],
    ),
    "remove": ([HumanMessage("a", id="1"), AIMessage("b", id="2")], RemoveMessage(id="2")),
    "remove twice": (
        [HumanMessage("a", id="1"), AIMessage("b", id="2")],
        [RemoveMessage(id="2"), RemoveMessage(id="2")],
    ),
    "mixed": (
        [HumanMessage("Hello", id="1"), AIMessage("Hi there!", id="2")],
        [HumanMessage("Updated", id="1"), RemoveMessage(id="2"), SystemMessage("New", id="3")],
    ),
    "delete all by id": (
        [HumanMessage("a", id="1"), AIMessage("b", id="2")],
        [RemoveMessage(id="1"), RemoveMessage(id="2")],
    ),
    "empty": ([], []),
    "non-lists": (HumanMessage("Hello", id="1"), AIMessage("Hi there!", id="2")),
    "message-likes and chunks": (
        [HumanMessage("Hello", id="1"), {"role": "assistant", "content": "Hi", "id": "2"}],
        [AIMessageChunk(content="chunk", id="3"), ("user", "Thanks")],
    ),
    "remove all": (
        [HumanMessage("a", id="1"), AIMessage("b", id="2")],
        [HumanMessage("c", id="3"), RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("d")],
    ),
    "tool calls": (
        [AIMessage("", id="1", tool_calls=[{"name": "search", "args": {"q": "x"}, "id": "c"}])],
        [ToolMessage("found", tool_call_id="c", id="2")],
    ),
}


def _shape(messages: list[BaseMessage]) -> list[tuple[type, Any, bool]]:
    # Generated ids differ between runs: compare them by kind, not by value.
    return [
        (type(m), m.model_dump(exclude={"id"}), m.id is not None and len(m.id) > 0)
        for m in messages
    ]


@pytest.mark.parametrize("case", list(CASES))
def test_add_messages_matches_langgraph(case: str) -> None:
    left, right = CASES[case]
    ours = add_messages(_fresh(left), _fresh(right))
    theirs = cast(list[BaseMessage], lg_message.add_messages(_fresh(left), _fresh(right)))
    assert _shape(ours) == _shape(theirs)
    assert [m.id for m in ours if m.id and not _is_uuid(m.id)] == [
        m.id for m in theirs if m.id and not _is_uuid(m.id)
    ]


def _is_uuid(text: str) -> bool:
    try:
        return uuid.UUID(text).version == 4
    except ValueError:
        return False


def test_missing_ids_get_uuid4s_and_the_result_is_a_new_list() -> None:
    left = [HumanMessage("Hello")]
    result = add_messages(left, [AIMessage("Hi there!")])
    assert len(result) == 2
    assert all(isinstance(m.id, str) and _is_uuid(m.id) for m in result)
    assert left[0].id == result[0].id  # assigned in place, as LangGraph does
    same = add_messages(left, [])
    assert same == left
    assert same is not left


def test_removing_an_unknown_id_is_an_error() -> None:
    with pytest.raises(ValueError, match="Attempting to delete a message with an ID"):
        add_messages([HumanMessage("Hello", id="1")], RemoveMessage(id="2"))


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="Unrecognized format="):
        add_messages([], [], format="invalid")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="Unrecognized format="):
        add_messages(format="openai")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs both 'left' and 'right'"):
        add_messages([HumanMessage("x")])


def test_openai_format_matches_langgraph() -> None:
    content = [
        HumanMessage(
            content=[
                {"type": "text", "text": "Here's an image:", "cache_control": {"type": "x"}},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/jpeg", "data": "1234"},
                },
            ],
            id="1",
        ),
        AIMessage(
            content=[{"type": "tool_use", "name": "foo", "input": {"bar": "baz"}, "id": "1"}],
            id="2",
        ),
    ]
    ours = add_messages(format="langchain-openai")([], _fresh(content))
    theirs = lg_message.add_messages(format="langchain-openai")([], _fresh(content))  # type: ignore[call-arg, operator]
    assert ours == theirs
    assert ours[0].content[1]["type"] == "image_url"


# -- in a graph, through a checkpointer ------------------------------------------------------


def _echo_graph(schema: Any, serde: JsonSerializer) -> Any:
    def bot(state: Any) -> dict[str, Any]:
        messages = state["messages"] if isinstance(state, dict) else state.messages
        return {"messages": [AIMessage(content=f"echo {messages[-1].content}")]}

    builder = StateGraph(schema)
    builder.add_node("bot", bot)
    builder.add_edge(START, "bot")
    builder.add_edge("bot", END)
    return builder.compile(checkpointer=InMemorySaver(serde=serde))


class PydanticMessages(BaseModel):
    messages: Annotated[list[AnyMessage], add_messages]


@pytest.mark.parametrize("schema", [MessagesState, PydanticMessages], ids=["typeddict", "pydantic"])
def test_messages_state_round_trips_through_the_saver(schema: Any) -> None:
    # strict: the message classes are allowed by default, nothing learned is needed.
    graph = _echo_graph(schema, JsonSerializer(strict=True))
    config = {"configurable": {"thread_id": "t"}}
    first = graph.invoke({"messages": [("user", "hi")]}, config)
    assert [type(m) for m in first["messages"]] == [HumanMessage, AIMessage]
    graph.invoke({"messages": [HumanMessage("again")]}, config)
    stored = graph.get_state(config).values["messages"]
    assert [(type(m), m.content) for m in stored] == [
        (HumanMessage, "hi"),
        (AIMessage, "echo hi"),
        (HumanMessage, "again"),
        (AIMessage, "echo again"),
    ]
    assert all(_is_uuid(m.id) for m in stored)
    graph.update_state(config, {"messages": [RemoveMessage(id=stored[0].id)]})
    assert graph.get_state(config).values["messages"] == stored[1:]


def test_format_option_works_as_a_reducer_in_a_graph() -> None:
    class State(TypedDict):
        messages: Annotated[list[AnyMessage], add_messages(format="langchain-openai")]

    graph = _echo_graph(State, JsonSerializer())
    result = graph.invoke({"messages": [("user", "meow")]}, {"configurable": {"thread_id": "f"}})
    assert [m.content for m in result["messages"]] == ["meow", "echo meow"]


# -- the optional dependency -------------------------------------------------------------------


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_graphruntime_graph_does_not_import_langchain_until_asked() -> None:
    done = _python(
        """
        import sys
        import graphruntime.graph as graph
        assert "langchain_core" not in sys.modules
        from graphruntime.graph import message
        assert graph.add_messages is message.add_messages
        assert "langchain_core" in sys.modules
        """
    )
    assert done.returncode == 0, done.stderr


def test_without_langchain_the_messages_module_says_what_to_install() -> None:
    done = _python(
        """
        import sys
        sys.modules["langchain_core"] = None  # as if not installed
        import graphruntime.graph
        from graphruntime.graph import StateGraph
        try:
            from graphruntime.graph import add_messages
        except ImportError as exc:
            print(exc)
        """
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'graphruntime[messages]'" in done.stdout
