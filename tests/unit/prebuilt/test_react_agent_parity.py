"""create_react_agent against LangGraph's: the same model script, tools and options give
the same messages, the same update stream and the same graph drawing."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, NotRequired

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from pydantic import BaseModel
from typing_extensions import TypedDict

from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.graph.message import add_messages
from graphruntime.prebuilt import create_react_agent
from tests.unit.prebuilt.fakes import ScriptedChatModel, ai_calling, tool_call

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from langgraph.checkpoint.memory import InMemorySaver as LgSaver
    from langgraph.graph.message import add_messages as lg_add_messages
    from langgraph.managed import RemainingSteps
    from langgraph.prebuilt import create_react_agent as lg_create_react_agent


class OurState(TypedDict):
    messages: Annotated[list[BaseMessage], add_messages]
    remaining_steps: NotRequired[int]
    topic: str


class TheirState(TypedDict):
    messages: Annotated[list[BaseMessage], lg_add_messages]
    remaining_steps: NotRequired[RemainingSteps]
    topic: str


@tool
def search(query: str) -> str:
    """Searches for the query."""
    return f"found {query}"


@tool(return_direct=True)
def final(answer: str) -> str:
    """Answers and ends the run."""
    return f"final: {answer}"


class Weather(BaseModel):
    city: str
    degrees: int


SCRIPT = [
    ai_calling(tool_call("search", {"query": "a"}, "c1")),
    ai_calling(
        tool_call("search", {"query": "b"}, "c2"), tool_call("search", {"query": "c"}, "c3")
    ),
    AIMessage(content="done"),
]


def trim_hook(state: dict[str, Any]) -> dict[str, Any]:
    return {"llm_input_messages": state["messages"][-1:]}


def post_hook(state: dict[str, Any]) -> dict[str, Any]:
    return {}


def callable_prompt(state: dict[str, Any]) -> list[BaseMessage]:
    return [SystemMessage("from a function"), *state["messages"]]


@dataclass(frozen=True)
class Case:
    id: str
    script: list[AIMessage] = field(default_factory=lambda: SCRIPT)
    tools: tuple[Any, ...] = (search,)
    options: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    structured: Any = None
    error: str | None = None  # the error both raise, if any


CASES = [
    Case("v2"),
    Case("v1", options={"version": "v1"}),
    Case("prompt-str", options={"prompt": "be brief"}),
    Case("prompt-system", options={"prompt": SystemMessage("be kind")}),
    Case("prompt-callable", options={"prompt": callable_prompt}),
    Case("prompt-runnable", options={"prompt": RunnableLambda(callable_prompt)}),
    Case("name", options={"name": "helper"}),
    Case("no-tools", script=[AIMessage(content="hello")], tools=()),
    Case(
        "return-direct",
        script=[ai_calling(tool_call("final", {"answer": "42"}, "c1"))],
        tools=(search, final),
    ),
    Case(
        "return-direct-parallel",
        script=[
            ai_calling(
                tool_call("final", {"answer": "42"}, "c1"),
                tool_call("search", {"query": "x"}, "c2"),
            )
        ],
        tools=(search, final),
    ),
    Case("recursion-limit", config={"recursion_limit": 2}),
    # The limit is checked before finding that no step is left: both fail the run.
    Case("recursion-limit-3", config={"recursion_limit": 3}, error="GraphRecursionError"),
    Case(
        "structured",
        options={"response_format": Weather},
        structured=Weather(city="Paris", degrees=20),
    ),
    Case(
        "structured-with-prompt",
        options={"response_format": ("answer as JSON", Weather)},
        structured=Weather(city="Oslo", degrees=3),
    ),
    Case(
        "structured-no-tools",
        script=[AIMessage(content="hello")],
        tools=(),
        options={"response_format": Weather},
        structured=Weather(city="Rome", degrees=25),
    ),
    Case("pre-hook", options={"pre_model_hook": trim_hook}),
    Case("post-hook", options={"post_model_hook": post_hook}),
    Case(
        "hooks-and-structured",
        options={
            "pre_model_hook": trim_hook,
            "post_model_hook": post_hook,
            "response_format": Weather,
        },
        structured=Weather(city="Lima", degrees=18),
    ),
]


def message_view(message: BaseMessage) -> tuple[Any, ...]:
    """What a message says, without the ids the model and add_messages make up."""
    calls = [(c["name"], c["args"], c["id"]) for c in getattr(message, "tool_calls", [])]
    return (
        message.type,
        message.content,
        message.name,
        calls,
        getattr(message, "tool_call_id", None),
    )


def view(value: Any) -> Any:
    if isinstance(value, BaseMessage):
        return message_view(value)
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, dict):
        return {k: view(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [view(v) for v in value]
    return value


def build(factory: Callable[..., Any], case: Case) -> tuple[Any, ScriptedChatModel]:
    model = ScriptedChatModel(responses=list(case.script), structured=case.structured)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = factory(model, list(case.tools), **case.options)
    return agent, model


INPUT = {"messages": [HumanMessage("what is up?")]}


def outcome(factory: Callable[..., Any], case: Case, mode: str) -> dict[str, Any]:
    agent, model = build(factory, case)
    result: Any
    try:
        if mode == "invoke":
            result = agent.invoke(INPUT, case.config)
        elif mode == "ainvoke":
            result = asyncio.run(agent.ainvoke(INPUT, case.config))
        else:
            result = list(agent.stream(INPUT, case.config, stream_mode="updates"))
    except Exception as exc:  # noqa: BLE001 - the error is the outcome compared
        result = {"error": type(exc).__name__, "message": str(exc)}
    return {"result": view(result), "model saw": view(model.seen)}


@pytest.mark.parametrize("mode", ["invoke", "ainvoke", "stream"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_agent_runs_as_langgraphs(case: Case, mode: str) -> None:
    ours = outcome(create_react_agent, case, mode)
    theirs = outcome(lg_create_react_agent, case, mode)
    result = ours["result"]
    assert (result.get("error") if isinstance(result, dict) else None) == case.error
    if mode == "stream" and isinstance(ours["result"], list):
        # parallel tool tasks may finish in either order
        ours["result"] = sorted(map(repr, ours["result"]))
        theirs["result"] = sorted(map(repr, theirs["result"]))
    assert ours == theirs


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_agent_is_drawn_as_langgraphs(case: Case) -> None:
    ours, _ = build(create_react_agent, case)
    theirs, _ = build(lg_create_react_agent, case)
    assert ours.get_graph().draw_mermaid() == theirs.get_graph().draw_mermaid()
    assert ours.get_graph().to_json() == theirs.get_graph().to_json()


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_interrupt_before_tools_then_resume(version: str) -> None:
    def run(factory: Callable[..., Any], saver: Any) -> list[Any]:
        model = ScriptedChatModel(responses=list(SCRIPT))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            agent = factory(
                model, [search], checkpointer=saver, interrupt_before=["tools"], version=version
            )
        config = {"configurable": {"thread_id": "t"}}
        seen = [view(agent.invoke(INPUT, config))]
        while agent.get_state(config).next:
            seen.append(list(agent.get_state(config).next))
            seen.append(view(agent.invoke(None, config)))
        return seen

    assert run(create_react_agent, InMemorySaver()) == run(lg_create_react_agent, LgSaver())


def test_custom_state_schema_keeps_its_keys() -> None:
    def topic_prompt(state: dict[str, Any]) -> list[BaseMessage]:
        return [SystemMessage(f"topic: {state['topic']}"), *state["messages"]]

    def run(factory: Callable[..., Any], schema: Any) -> Any:
        model = ScriptedChatModel(responses=list(SCRIPT))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            agent = factory(model, [search], state_schema=schema, prompt=topic_prompt)
        return view(agent.invoke({**INPUT, "topic": "weather"})), view(model.seen)

    assert run(create_react_agent, OurState) == run(lg_create_react_agent, TheirState)


@pytest.mark.parametrize("mode", ["invoke", "ainvoke"])
@pytest.mark.parametrize("is_async", [False, True], ids=["sync-picker", "async-picker"])
def test_dynamic_model_is_picked_per_call(mode: str, is_async: bool) -> None:
    def run(factory: Callable[..., Any]) -> Any:
        model = ScriptedChatModel(responses=list(SCRIPT))
        picks: list[int] = []

        def pick(state: dict[str, Any], runtime: Any) -> Any:
            picks.append(len(state["messages"]))
            return model.bind_tools([search])

        async def apick(state: dict[str, Any], runtime: Any) -> Any:
            return pick(state, runtime)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            agent = factory(apick if is_async else pick, [search], prompt="short")
        try:
            if mode == "invoke":
                result = agent.invoke(INPUT)
            else:
                result = asyncio.run(agent.ainvoke(INPUT))
        except Exception as exc:  # noqa: BLE001 - the error is the outcome compared
            return exc
        return view(result), picks, view(model.seen)

    ours, theirs = run(create_react_agent), run(lg_create_react_agent)
    if isinstance(theirs, Exception):  # ours is of the same built-in type, same message
        assert isinstance(ours, type(theirs)), (ours, theirs)
        assert str(ours) == str(theirs)
    else:
        assert ours == theirs


def _error(factory: Callable[..., Any], *args: Any, **kwargs: Any) -> BaseException:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(Exception) as info:
            factory(*args, **kwargs)
    return info.value


class MissingSteps(TypedDict):
    messages: list[BaseMessage]


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((), {"version": "v3"}),
        ((), {"state_schema": MissingSteps}),
        ((), {"response_format": Weather, "state_schema": OurState}),
        ((), {"unknown_option": 1}),
    ],
    ids=["bad-version", "schema-without-steps", "schema-without-response", "unknown-kwarg"],
)
def test_bad_options_fail_as_in_langgraph(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    model = ScriptedChatModel(responses=list(SCRIPT))
    ours = _error(create_react_agent, model, [search], *args, **kwargs)
    theirs = _error(lg_create_react_agent, model, [search], *args, **kwargs)
    assert isinstance(ours, type(theirs))
    assert str(ours) == str(theirs)


def test_tools_bound_already_must_match() -> None:
    model = ScriptedChatModel(responses=list(SCRIPT))
    bound = model.bind_tools([search])
    for factory in (create_react_agent, lg_create_react_agent):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            factory(bound, [search])  # the same tools: accepted, not bound twice
    ours = _error(create_react_agent, bound, [search, final])
    theirs = _error(lg_create_react_agent, bound, [search, final])
    assert isinstance(ours, type(theirs))
    assert str(ours) == str(theirs)


def test_history_with_unanswered_tool_calls_is_refused() -> None:
    history = {
        "messages": [HumanMessage("hi"), ai_calling(tool_call("search", {"query": "q"}, "x"))]
    }

    def run(factory: Callable[..., Any]) -> BaseException:
        agent, _ = build(factory, Case("h"))
        with pytest.raises(ValueError) as info:
            agent.invoke(history)
        return info.value

    assert str(run(create_react_agent)) == str(run(lg_create_react_agent))


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_interrupt_in_a_tool_then_resume(version: str) -> None:
    def run(factory: Callable[..., Any], saver: Any, interrupt_fn: Any, command: Any) -> Any:
        @tool
        def confirm(action: str) -> str:
            """Asks a human to confirm the action."""
            return f"{action}: {interrupt_fn(action)}"

        # v1 runs a message's calls in one task, in parallel threads: two interrupting
        # calls there would race for the task's interrupt order (in LangGraph too).
        second = "confirm" if version == "v2" else "search"
        args = {"action": "ship"} if version == "v2" else {"query": "ship"}
        script = [
            ai_calling(
                tool_call("confirm", {"action": "pay"}, "c1"), tool_call(second, args, "c2")
            ),
            AIMessage(content="done"),
        ]
        model = ScriptedChatModel(responses=script)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            agent = factory(model, [confirm, search], checkpointer=saver, version=version)
        config = {"configurable": {"thread_id": "t"}}
        result = agent.invoke(INPUT, config)
        asked = []
        while result.get("__interrupt__"):
            pending = result.pop("__interrupt__")
            asked.append(sorted(i.value for i in pending))
            result = agent.invoke(command(resume={i.id: f"ok {i.value}" for i in pending}), config)
        return asked, view(result)

    from langgraph.types import Command as LgCommand
    from langgraph.types import interrupt as lg_interrupt

    from graphruntime.types import Command, interrupt

    ours = run(create_react_agent, InMemorySaver(), interrupt, Command)
    theirs = run(lg_create_react_agent, LgSaver(), lg_interrupt, LgCommand)
    assert ours == theirs
    if version == "v1":
        assert ours[0] == [["pay"]]
        assert [m[1] for m in ours[1]["messages"][2:4]] == ["pay: ok pay", "found ship"]
    else:
        assert ours[0] == [["pay", "ship"]]
        assert [m[1] for m in ours[1]["messages"][2:4]] == ["pay: ok pay", "ship: ok ship"]
