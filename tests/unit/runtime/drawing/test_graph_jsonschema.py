"""``get_input_jsonschema``/``get_output_jsonschema``/``get_context_jsonschema``.

Named after the upstream tests (langgraph 1.2.22 tests/test_pregel.py, test_state.py,
test_large_cases.py, test_pregel_async.py); each asserts the snapshot and that LangGraph
returns the same schema for the same builder.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import operator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Annotated, Any, NotRequired, Required

import pytest
from langchain_core.agents import AgentAction, AgentFinish
from pydantic import BaseModel, ConfigDict, Field

# pydantic reads TypedDict schemas only from typing_extensions before Python 3.12.
from typing_extensions import TypedDict

from graphruntime.errors import GraphValidationError

from .oracle import GR, LG


def both(build: Any) -> tuple[Any, Any]:
    """The graph ``build`` makes, compiled by graphruntime and by LangGraph."""
    return build(GR), build(LG)


def schemas(graph: Any) -> tuple[Any, ...]:
    return (
        graph.get_input_jsonschema(),
        graph.get_output_jsonschema(),
        graph.get_context_jsonschema(),
    )


def single_node(state: Any, **kwargs: Any) -> Any:
    def build(ns: SimpleNamespace) -> Any:
        builder = ns.StateGraph(state, **kwargs)
        builder.add_node("n", lambda x: x)
        builder.add_edge(ns.START, "n")
        return builder.compile()

    return build


AGENT_DEFS = (
    '{"$defs": {"AgentAction": {"description": "Represents a request to execute an action by '
    "an agent.\\n\\nThe action consists of the name of the tool to execute and the input to "
    'pass\\nto the tool. The log is used to pass along extra information about the action.", '
    '"properties": {"tool": {"title": "Tool", "type": "string"}, "tool_input": {"anyOf": '
    '[{"type": "string"}, {"additionalProperties": true, "type": "object"}], "title": "Tool '
    'Input"}, "log": {"title": "Log", "type": "string"}, "type": {"const": "AgentAction", '
    '"default": "AgentAction", "title": "Type", "type": "string"}}, "required": ["tool", '
    '"tool_input", "log"], "title": "AgentAction", "type": "object"}, "AgentFinish": '
    '{"description": "Final return value of an ActionAgent.\\n\\nAgents return an AgentFinish '
    'when they have reached a stopping condition.", "properties": {"return_values": '
    '{"additionalProperties": true, "title": "Return Values", "type": "object"}, "log": '
    '{"title": "Log", "type": "string"}, "type": {"const": "AgentFinish", "default": '
    '"AgentFinish", "title": "Type", "type": "string"}}, "required": ["return_values", "log"], '
    '"title": "AgentFinish", "type": "object"}}, "properties": {"input": {"title": "Input", '
    '"type": "string"}, "agent_outcome": {"anyOf": [{"$ref": "#/$defs/AgentAction"}, {"$ref": '
    '"#/$defs/AgentFinish"}, {"type": "null"}], "title": "Agent Outcome"}, '
    '"intermediate_steps": {"items": {"maxItems": 2, "minItems": 2, "prefixItems": [{"$ref": '
    '"#/$defs/AgentAction"}, {"type": "string"}], "type": "array"}, "title": "Intermediate '
    'Steps", "type": "array"}}, '
)


# The snapshot was recorded with an older langchain-core, whose AgentFinish docstring (a
# $defs description) had no backticks; compare with the installed class's text instead.
_SNAPSHOT_FINISH_DOC = (
    "Final return value of an ActionAgent.\\n\\nAgents return an AgentFinish when they have "
    "reached a stopping condition."
)


def agent_defs() -> str:
    installed = json.dumps(AgentFinish.model_json_schema()["description"])[1:-1]
    return AGENT_DEFS.replace(_SNAPSHOT_FINISH_DOC, installed)


class OverallState(TypedDict):
    locations: list[str]
    results: Annotated[list[str], operator.add]


def test_conditional_entrypoint_to_multiple_state_graph() -> None:
    ours, theirs = both(single_node(OverallState))
    expected = (
        '{"properties": {"locations": {"items": {"type": "string"}, "title": "Locations", '
        '"type": "array"}, "results": {"items": {"type": "string"}, "title": "Results", "type": '
        '"array"}}, "required": ["locations", "results"], "title": "OverallState", "type": '
        '"object"}'
    )
    assert json.dumps(ours.get_input_jsonschema()) == expected
    assert json.dumps(ours.get_output_jsonschema()) == expected
    assert schemas(ours) == schemas(theirs)


class EntryState(TypedDict, total=False):
    input: str
    output: str
    steps: Annotated[list[str], operator.add]


def test_conditional_entrypoint_graph_state() -> None:
    ours, theirs = both(single_node(EntryState))
    expected = (
        '{"properties": {"input": {"title": "Input", "type": "string"}, "output": {"title": '
        '"Output", "type": "string"}, "steps": {"items": {"type": "string"}, "title": "Steps", '
        '"type": "array"}}, "title": "AgentState", "type": "object"}'
    )
    # The upstream class is named AgentState.
    assert json.dumps(ours.get_input_jsonschema()) == expected.replace("AgentState", "EntryState")
    assert json.dumps(ours.get_output_jsonschema()) == expected.replace("AgentState", "EntryState")
    assert schemas(ours) == schemas(theirs)


class BaseAgentState(TypedDict):
    input: str
    agent_outcome: AgentAction | AgentFinish | None


class AgentState(BaseAgentState, total=False):
    intermediate_steps: Annotated[list[tuple[AgentAction, str]], operator.add]


class Context(TypedDict, total=False):
    tools: list[str]


def test_state_graph_w_config_inherited_state_keys() -> None:
    ours, theirs = both(single_node(AgentState, context_schema=Context))
    assert json.dumps(ours.get_context_jsonschema()) == (
        '{"properties": {"tools": {"items": {"type": "string"}, "title": "Tools", "type": '
        '"array"}}, "title": "Context", "type": "object"}'
    )
    expected = agent_defs() + (
        '"required": ["input", "agent_outcome"], "title": "AgentState", "type": "object"}'
    )
    assert json.dumps(ours.get_input_jsonschema()) == expected
    assert json.dumps(ours.get_output_jsonschema()) == expected
    assert schemas(ours) == schemas(theirs)


class ConditionalAgentState(TypedDict, total=False):
    # Upstream annotates input with UntrackedValue, which a JSON schema does not show.
    input: str
    agent_outcome: AgentAction | AgentFinish | None
    intermediate_steps: Annotated[list[tuple[AgentAction, str]], operator.add]


def test_conditional_state_graph() -> None:
    ours, theirs = both(single_node(ConditionalAgentState))
    expected = (agent_defs() + '"title": "AgentState", "type": "object"}').replace(
        '"AgentState"', '"ConditionalAgentState"'
    )
    assert json.dumps(ours.get_input_jsonschema()) == expected
    assert json.dumps(ours.get_output_jsonschema()) == expected
    assert schemas(ours) == schemas(theirs)


class InnerObject(BaseModel):
    yo: int


class PydanticState(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    query: str
    inner: Annotated[InnerObject, lambda x, y: y]
    answer: str | None = None
    docs: Annotated[list[str], operator.add]


class Input(BaseModel):
    query: str
    inner: InnerObject


class Output(BaseModel):
    answer: str
    docs: list[str]


INNER_DEFS = {
    "InnerObject": {
        "properties": {"yo": {"title": "Yo", "type": "integer"}},
        "required": ["yo"],
        "title": "InnerObject",
        "type": "object",
    }
}


def test_in_one_fan_out_state_graph_waiting_edge_custom_state_class_pydantic2() -> None:
    ours, theirs = both(single_node(PydanticState, input_schema=Input, output_schema=Output))
    assert ours.get_input_jsonschema() == {
        "$defs": INNER_DEFS,
        "properties": {
            "inner": {"$ref": "#/$defs/InnerObject"},
            "query": {"title": "Query", "type": "string"},
        },
        "required": ["query", "inner"],
        "title": "Input",
        "type": "object",
    }
    assert ours.get_output_jsonschema() == {
        "properties": {
            "answer": {"title": "Answer", "type": "string"},
            "docs": {"items": {"type": "string"}, "title": "Docs", "type": "array"},
        },
        "required": ["answer", "docs"],
        "title": "Output",
        "type": "object",
    }
    assert schemas(ours) == schemas(theirs)


def test_in_one_fan_out_state_graph_waiting_edge_custom_state_class_pydantic2_async() -> None:
    # test_pregel_async.py's variant: no input/output schema, so both are the state's.
    ours, theirs = both(single_node(PydanticState))
    expected = {
        "$defs": INNER_DEFS,
        "properties": {
            "answer": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "default": None,
                "title": "Answer",
            },
            "docs": {"items": {"type": "string"}, "title": "Docs", "type": "array"},
            "inner": {"$ref": "#/$defs/InnerObject"},
            "query": {"title": "Query", "type": "string"},
        },
        "required": ["query", "inner", "docs"],
        "title": "PydanticState",
        "type": "object",
    }
    assert ours.get_input_jsonschema() == expected
    assert ours.get_output_jsonschema() == expected
    assert schemas(ours) == schemas(theirs)


class SomeParentState(TypedDict):
    val0a: str
    val0b: str | None


class InputTotal(SomeParentState):
    val1: str
    val2: str | None
    val3: Required[Annotated[dict[str, Any], operator.or_]]
    val4: NotRequired[dict[str, Any]]
    val5: Annotated[Required[str], "foo"]
    val6: Annotated[NotRequired[str], "bar"]


class OutputTotal(SomeParentState):
    out_val1: str
    out_val2: str | None
    out_val3: Required[str]
    out_val4: NotRequired[dict[str, Any]]
    out_val5: Annotated[Required[str], "foo"]
    out_val6: Annotated[NotRequired[str], "bar"]


class StateTotal(InputTotal):
    val4: dict[str, Any]  # type: ignore[misc]  # as upstream: the input schema wins


class InputPartial(SomeParentState, total=False):
    val1: str
    val2: str | None
    val3: Required[Annotated[dict[str, Any], operator.or_]]
    val4: NotRequired[dict[str, Any]]
    val5: Annotated[Required[str], "foo"]
    val6: Annotated[NotRequired[str], "bar"]


class OutputPartial(SomeParentState, total=False):
    out_val1: str
    out_val2: str | None
    out_val3: Required[str]
    out_val4: NotRequired[dict[str, Any]]
    out_val5: Annotated[Required[str], "foo"]
    out_val6: Annotated[NotRequired[str], "bar"]


class StatePartial(InputPartial):
    val4: dict[str, Any]  # type: ignore[misc]


@pytest.mark.parametrize("total_", [True, False])
def test_state_schema_optional_values(total_: bool) -> None:
    if total_:
        build = single_node(StateTotal, input_schema=InputTotal, output_schema=OutputTotal)
    else:
        build = single_node(StatePartial, input_schema=InputPartial, output_schema=OutputPartial)
    ours, theirs = both(build)
    json_schema = ours.get_input_jsonschema()
    required = {"val1", "val2"} if total_ else set()
    optional = set() if total_ else {"val2", "val1"}
    required |= {"val0a", "val0b", "val3", "val5"}
    optional |= {"val4", "val6"}
    assert set(json_schema.get("required", set())) == required
    assert set(json_schema["properties"]) == required | optional

    output_schema = ours.get_output_jsonschema()
    required = {"out_val1", "out_val2"} if total_ else set()
    optional = set() if total_ else {"out_val2", "out_val1"}
    required |= {"val0a", "val0b", "out_val3", "out_val5"}
    optional |= {"out_val4", "out_val6"}
    assert set(output_schema.get("required", set())) == required
    assert set(output_schema["properties"]) == required | optional
    assert schemas(ours) == schemas(theirs)


def _defaults_state(kw_only: bool) -> type:
    kwargs = {"kw_only": kw_only} if "kw_only" in inspect.signature(dataclass).parameters else {}

    @dataclass(**kwargs)
    class InputState:
        val1: str
        val2: int | None
        val3: Annotated[float | None, "optional annotated"]
        val4: str | None = None
        val5: list[int] = field(default_factory=lambda: [1, 2, 3])
        val6: dict[str, int] = field(default_factory=lambda: {"a": 1})
        val7: str = field(default=...)  # type: ignore[assignment]
        val8: Annotated[int, "some metadata"] = 42
        val9: Annotated[str, "more metadata"] = field(default="some foo")
        val10: str = "default"
        val11: Annotated[list[str], "annotated list"] = field(default_factory=lambda: ["a", "b"])

    return InputState


@pytest.mark.parametrize("kw_only_", [False, True])
def test_state_schema_default_values(kw_only_: bool) -> None:
    state = _defaults_state(kw_only_)
    ours, theirs = both(single_node(state))
    for json_schema in (ours.get_input_jsonschema(), ours.get_output_jsonschema()):
        assert set(json_schema.get("required", set())) == {"val1", "val7"}
        assert set(json_schema["properties"]) == {f"val{i}" for i in range(1, 12)}
        # A dataclass schema becomes a model named after the graph.
        assert json_schema["title"] in ("LangGraphInput", "LangGraphOutput")
    assert schemas(ours) == schemas(theirs)


@dataclasses.dataclass
class Foo:
    x: int
    y: str = dataclasses.field(default="foo")


class State(TypedDict):
    x: int


def test_context_json_schema() -> None:
    ours, theirs = both(single_node(State, context_schema=Foo))
    assert ours.get_context_jsonschema() == {
        "properties": {
            "x": {"title": "X", "type": "integer"},
            "y": {"default": "foo", "title": "Y", "type": "string"},
        },
        "required": ["x"],
        "title": "Foo",
        "type": "object",
    }
    assert schemas(ours) == schemas(theirs)


def test_no_context_schema() -> None:
    ours, theirs = both(single_node(State))
    assert ours.get_context_jsonschema() is None
    assert schemas(ours) == schemas(theirs)


class Ctx(BaseModel):
    user: str = Field(description="who asks")


def test_pydantic_context_and_named_graph() -> None:
    def build(ns: SimpleNamespace) -> Any:
        builder = ns.StateGraph(_defaults_state(False), context_schema=Ctx)
        builder.add_node("n", lambda x: x)
        builder.add_edge(ns.START, "n")
        return builder.compile(name="Weather")

    ours, theirs = both(build)
    assert ours.get_input_jsonschema()["title"] == "WeatherInput"
    assert ours.get_output_jsonschema()["title"] == "WeatherOutput"
    assert schemas(ours) == schemas(theirs)


@dataclasses.dataclass
class ReservedNames:
    copy: int
    _hidden: str = "h"
    model_id: str | None = None


def test_reserved_field_names_are_aliased() -> None:
    ours, theirs = both(single_node(ReservedNames))
    assert set(ours.get_input_jsonschema()["properties"]) == {"copy", "_hidden", "model_id"}
    assert schemas(ours) == schemas(theirs)


def test_invalid_context_schema_is_rejected() -> None:
    graph = single_node(State, context_schema=int)(GR)
    with pytest.raises(GraphValidationError, match="Invalid context schema type"):
        graph.get_context_jsonschema()
