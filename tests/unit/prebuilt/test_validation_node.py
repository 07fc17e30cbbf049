"""ValidationNode against LangGraph's, and in a graph."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolCall
from langchain_core.tools import tool
from pydantic import BaseModel, field_validator
from pydantic.v1 import BaseModel as BaseModelV1

from graphruntime.constants import START
from graphruntime.graph import StateGraph
from graphruntime.graph.message import MessagesState
from graphruntime.prebuilt import ValidationNode
from tests.unit.prebuilt.fakes import ai_calling, tool_call

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from langgraph.prebuilt import ValidationNode as LgValidationNode


class SelectNumber(BaseModel):
    a: int

    @field_validator("a")
    @classmethod
    def meaningful(cls, v: int) -> int:
        if v != 37:
            raise ValueError("Only 37 is allowed")
        return v


class OldStyle(BaseModelV1):
    name: str


@tool
def lookup(city: str, days: int = 1) -> str:
    """Looks up a city."""
    return city


def plan(steps: int, title: str) -> None:
    """Plans."""


SCHEMAS: list[Any] = [SelectNumber, OldStyle, lookup, plan]


def short_error(error: BaseException, call: ToolCall, schema: Any) -> str:
    return f"{call['name']} is invalid"


CALLS = [
    tool_call("SelectNumber", {"a": 37}, "c1"),
    tool_call("SelectNumber", {"a": 2}, "c2"),
    tool_call("OldStyle", {"name": "x"}, "c3"),
    tool_call("OldStyle", {}, "c4"),
    tool_call("lookup", {"city": "Rome"}, "c5"),
    tool_call("lookup", {"days": "many"}, "c6"),
    tool_call("plan", {"steps": 2, "title": "t"}, "c7"),
    tool_call("plan", {"steps": "x"}, "c8"),
]


def outcome(node_class: Any, node_input: Any, **options: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        node = node_class(SCHEMAS, **options)
    try:
        return node.invoke(node_input)
    except Exception as exc:  # noqa: BLE001 - the error is the outcome compared
        return exc


@pytest.mark.parametrize(
    ("node_input", "options"),
    [
        ({"messages": [ai_calling(*CALLS)]}, {}),
        ([HumanMessage("hi"), ai_calling(*CALLS)], {}),
        ({"messages": [ai_calling(*CALLS)]}, {"format_error": short_error}),
        ({"messages": [AIMessage("no calls")]}, {}),
        ({"messages": [HumanMessage("not an AI message")]}, {}),
        ({"messages": []}, {}),
    ],
    ids=["dict", "list", "format-error", "no-calls", "not-ai", "empty"],
)
def test_validation_matches_langgraph(node_input: Any, options: dict[str, Any]) -> None:
    ours = outcome(ValidationNode, node_input, **options)
    theirs = outcome(LgValidationNode, node_input, **options)
    if isinstance(theirs, Exception):
        assert isinstance(ours, type(theirs))
        assert str(ours) == str(theirs)
    else:
        assert ours == theirs


def test_unknown_schema_name_is_a_key_error_naming_the_known_ones() -> None:
    node = ValidationNode([SelectNumber])
    with pytest.raises(KeyError, match="no schema named 'Other'; it has: SelectNumber"):
        node.invoke([ai_calling(tool_call("Other", {}, "c1"))])


def test_schemas_must_be_models_tools_or_functions() -> None:
    with pytest.raises(ValueError, match="Unsupported input to ValidationNode"):
        ValidationNode([42])  # type: ignore[list-item]


def test_reprompts_until_valid_in_a_graph() -> None:
    answers = iter([2, 37])

    def model(state: MessagesState) -> dict[str, Any]:
        call = tool_call("SelectNumber", {"a": next(answers)}, f"c{len(state['messages'])}")
        return {"messages": [ai_calling(call)]}

    def again(state: MessagesState) -> str:
        last = state["messages"][-1]
        return "model" if last.additional_kwargs.get("is_error") else "__end__"

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_node(ValidationNode([SelectNumber]))
    builder.add_edge(START, "model")
    builder.add_edge("model", "validation")
    builder.add_conditional_edges("validation", again, ["model", "__end__"])
    result = builder.compile().invoke({"messages": [HumanMessage("pick")]})
    last = result["messages"][-1]
    assert last.content == '{"a":37}'
    assert [m.type for m in result["messages"]] == ["human", "ai", "tool", "ai", "tool"]
