"""ToolNode against LangGraph's: the same tools, inputs and options give the same result.

Each scenario builds its tools twice, once with each library's markers (InjectedState,
ToolRuntime, Command...), runs both nodes outside a graph, sync and async, and compares
the outputs (or the errors: same built-in type and message).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Annotated, Any, get_type_hints

import langgraph.prebuilt.tool_node as lg_tool_node
import langgraph.types as lg_types
import pytest
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, ToolException
from langchain_core.tools import tool as make_tool
from pydantic import BaseModel

import graphruntime.prebuilt.tool_node as gr_tool_node
import graphruntime.types as gr_types
from tests.unit.prebuilt.fakes import ai_calling, tool_call


@dataclass(frozen=True)
class Lib:
    name: str
    nodes: Any
    types: Any


LIBS = (Lib("graphruntime", gr_tool_node, gr_types), Lib("langgraph", lg_tool_node, lg_types))


class FakeStore:
    def __init__(self) -> None:
        self.data = {"color": "blue"}

    def get(self, key: str) -> str:
        return self.data[key]


STORE = FakeStore()


def runtime_config(store: Any = None) -> dict[str, Any]:
    """A config carrying a graph runtime, as a graph gives its nodes (both read this key)."""
    runtime = SimpleNamespace(
        store=store,
        context={"user": "u1"},
        stream_writer=lambda _: None,
        execution_info=None,
        server_info=None,
    )
    return {"configurable": {"__pregel_runtime": runtime}}


@functools.cache
def build_tools(lib: Lib) -> list[Any]:
    InjectedState, InjectedStore, ToolRuntime = (
        lib.nodes.InjectedState,
        lib.nodes.InjectedStore,
        lib.nodes.ToolRuntime,
    )
    Command, Send = lib.types.Command, lib.types.Send
    markers = {
        "InjectedState": InjectedState,
        "InjectedStore": InjectedStore,
        "ToolRuntime": ToolRuntime,
    }

    def tool(fn: Callable[..., Any]) -> Any:
        # Annotations are strings here: resolve them against this library's markers.
        fn.__annotations__ = get_type_hints(fn, localns=markers, include_extras=True)
        return make_tool(fn)

    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @tool
    def fail(x: int) -> str:
        """Always fails."""
        raise ValueError(f"boom {x}")

    @tool
    def tool_error(x: int) -> str:
        """Raises a ToolException."""
        raise ToolException(f"tool says no {x}")

    @tool
    def count_messages(x: int, state: Annotated[dict[str, Any], InjectedState]) -> str:
        """Counts the state's messages."""
        return f"{x}:{len(state['messages'])}"

    @tool
    def read_foo(x: int, foo: Annotated[str, InjectedState("foo")]) -> str:
        """Reads foo."""
        return f"{foo}{x}"

    @tool
    def maybe_foo(x: int, foo: Annotated[str | None, InjectedState("foo")] = None) -> str:
        """Reads foo if there is one."""
        return f"{foo}{x}"

    @tool
    def recall(key: str, store: Annotated[Any, InjectedStore()]) -> str:
        """Reads the store."""
        return str(store.get(key))

    @tool
    def whoami(x: int, runtime: ToolRuntime[dict[str, str], dict[str, Any]]) -> str:  # type: ignore[valid-type]
        """Reads the runtime."""
        rt: Any = runtime  # the annotation names this library's class; mypy cannot follow
        return f"{rt.tool_call_id}:{rt.context}:{x}:{len(rt.tools)}"

    @tool
    def goto_next(x: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Returns a Command."""
        return Command(
            update={"messages": [ToolMessage(f"went {x}", tool_call_id=tool_call_id)]},
            goto="next",
        )

    @tool
    def forgetful(x: int) -> Any:
        """Returns a Command without the answering ToolMessage."""
        return Command(update={"messages": []}, goto="next")

    @tool
    def to_parent(x: int) -> Any:
        """Sends to the parent graph."""
        return Command(graph=Command.PARENT, goto=[Send("worker", x)])

    @tool
    def structured(x: int) -> Any:
        """Returns JSON-able data."""
        return {"x": x, "items": [1, 2]}

    @tool
    def blocks(x: int) -> Any:
        """Returns content blocks."""
        return [{"type": "text", "text": f"t{x}"}]

    @tool
    def opaque(x: int) -> Any:
        """Returns something JSON cannot encode."""
        return {1, 2} if x else object

    @tool
    def own_message(x: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Returns its own ToolMessage with dict content."""
        return ToolMessage(content={"n": x}, tool_call_id=tool_call_id)  # type: ignore[call-overload]

    @tool
    def several(x: int, tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
        """Returns a Command and the answering ToolMessage."""
        return [
            Command(update={"messages": [HumanMessage("side note", id="h1")]}),
            ToolMessage(f"answered {x}", tool_call_id=tool_call_id),
        ]

    @tool
    async def slow_add(a: int, b: int) -> int:
        """Async add."""
        await asyncio.sleep(0)
        return a + b

    return [
        add,
        fail,
        tool_error,
        count_messages,
        read_foo,
        maybe_foo,
        recall,
        whoami,
        goto_next,
        forgetful,
        to_parent,
        structured,
        blocks,
        opaque,
        own_message,
        several,
        slow_add,
    ]


def handle_value_errors(e: ValueError) -> str:
    return f"handled {e}"


def retry_once(request: Any, execute: Callable[[Any], Any]) -> Any:
    first = execute(request)
    if getattr(first, "status", None) == "error":
        args = {**request.tool_call["args"], "b": 0}
        return execute(request.override(tool_call={**request.tool_call, "args": args}))
    return first


def answer_unknown(request: Any, execute: Callable[[Any], Any]) -> Any:
    if request.tool is None:
        return ToolMessage("handled by wrapper", tool_call_id=request.tool_call["id"])
    return execute(request)


def wrapper_fails(request: Any, execute: Callable[[Any], Any]) -> Any:
    raise RuntimeError("wrapper broke")


@dataclass(frozen=True)
class Scenario:
    id: str
    input: Any
    options: dict[str, Any] = field(default_factory=dict)
    store: Any = None


def state(*calls: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"messages": [HumanMessage("hi", id="h0"), ai_calling(*calls)], **extra}


class PydanticState(BaseModel):
    messages: list[BaseMessage]
    foo: str = "pyd"


SCENARIOS = [
    Scenario("dict", state(tool_call("add", {"a": 1, "b": 2}, "c1"))),
    Scenario("list", [ai_calling(tool_call("add", {"a": 1, "b": 2}, "c1"))]),
    Scenario(
        "bare-calls",
        [tool_call("add", {"a": 1, "b": 2}, "c1"), tool_call("nope", {}, "c2")],
    ),
    Scenario(
        "with-context",
        {
            "__type": "tool_call_with_context",
            "tool_call": tool_call("read_foo", {"x": 1}, "c1"),
            "state": {"messages": [], "foo": "ctx"},
        },
    ),
    Scenario(
        "pydantic-state",
        PydanticState(messages=[ai_calling(tool_call("read_foo", {"x": 3}, "c1"))]),
    ),
    Scenario(
        "parallel",
        state(
            tool_call("add", {"a": 1, "b": 2}, "c1"),
            tool_call("structured", {"x": 5}, "c2"),
            tool_call("blocks", {"x": 6}, "c3"),
            tool_call("opaque", {"x": 1}, "c4"),
            tool_call("own_message", {"x": 7}, "c5"),
        ),
    ),
    Scenario("unknown-tool", state(tool_call("missing", {"a": 1}, "c1"))),
    Scenario("bad-args", state(tool_call("add", {"a": 1, "b": "x"}, "c1"))),
    Scenario("bad-args-injected-hidden", state(tool_call("count_messages", {"x": "y"}, "c1"))),
    Scenario("tool-raises", state(tool_call("fail", {"x": 1}, "c1"))),
    Scenario("tool-exception-raises", state(tool_call("tool_error", {"x": 1}, "c1"))),
    Scenario(
        "handle-true",
        state(tool_call("fail", {"x": 1}, "c1"), tool_call("tool_error", {"x": 2}, "c2")),
        {"handle_tool_errors": True},
    ),
    Scenario(
        "handle-str", state(tool_call("fail", {"x": 1}, "c1")), {"handle_tool_errors": "try again"}
    ),
    Scenario(
        "handle-tuple-miss",
        state(tool_call("tool_error", {"x": 1}, "c1")),
        {"handle_tool_errors": (ValueError,)},
    ),
    Scenario(
        "handle-callable",
        state(tool_call("fail", {"x": 1}, "c1")),
        {"handle_tool_errors": handle_value_errors},
    ),
    Scenario(
        "handle-callable-miss",
        state(tool_call("tool_error", {"x": 1}, "c1")),
        {"handle_tool_errors": handle_value_errors},
    ),
    Scenario(
        "handle-false-bad-args",
        state(tool_call("add", {"a": "x"}, "c1")),
        {"handle_tool_errors": False},
    ),
    Scenario(
        "inject-state",
        state(
            tool_call("count_messages", {"x": 1}, "c1"),
            tool_call("read_foo", {"x": 2, "foo": "forged"}, "c2"),
            tool_call("maybe_foo", {"x": 3}, "c3"),
            foo="bar",
        ),
    ),
    Scenario("inject-optional-missing", state(tool_call("maybe_foo", {"x": 3}, "c1"))),
    Scenario("inject-list-input", [ai_calling(tool_call("count_messages", {"x": 1}, "c1"))]),
    Scenario("inject-store", state(tool_call("recall", {"key": "color"}, "c1")), store=STORE),
    Scenario("inject-store-missing", state(tool_call("recall", {"key": "color"}, "c1"))),
    Scenario("runtime", state(tool_call("whoami", {"x": 4}, "c1"))),
    Scenario(
        "command",
        state(tool_call("goto_next", {"x": 1}, "c1"), tool_call("add", {"a": 1, "b": 1}, "c2")),
    ),
    Scenario("command-list-input", [ai_calling(tool_call("goto_next", {"x": 1}, "c1"))]),
    Scenario("command-unanswered", state(tool_call("forgetful", {"x": 1}, "c1"))),
    Scenario(
        "command-to-parent",
        state(tool_call("to_parent", {"x": 1}, "c1"), tool_call("to_parent", {"x": 2}, "c2")),
    ),
    Scenario("several-outputs", state(tool_call("several", {"x": 1}, "c1"))),
    Scenario(
        "messages-key",
        {"chat": [ai_calling(tool_call("add", {"a": 2, "b": 2}, "c1"))]},
        {"messages_key": "chat"},
    ),
    Scenario("no-messages", {"messages": []}),
    Scenario("no-ai-message", {"messages": [HumanMessage("hi")]}),
    Scenario(
        "wrapper-retries",
        state(tool_call("add", {"a": 1, "b": "x"}, "c1")),
        {"wrap_tool_call": retry_once},
    ),
    Scenario(
        "wrapper-answers-unknown",
        state(tool_call("missing", {}, "c1")),
        {"wrap_tool_call": answer_unknown},
    ),
    Scenario(
        "wrapper-raises",
        state(tool_call("add", {"a": 1, "b": 1}, "c1")),
        {"wrap_tool_call": wrapper_fails},
    ),
    Scenario(
        "wrapper-raises-unhandled",
        state(tool_call("add", {"a": 1, "b": 1}, "c1")),
        {"wrap_tool_call": wrapper_fails, "handle_tool_errors": False},
    ),
    # invoke() cannot run an async-only tool: both raise the same error
    Scenario("async-tool", state(tool_call("slow_add", {"a": 1, "b": 2}, "c1"))),
]


# The scenarios where both raise (the rest must succeed: equal errors prove little).
FAILING = {
    "tool-raises",
    "tool-exception-raises",
    "handle-tuple-miss",
    "handle-callable-miss",
    "handle-false-bad-args",
    "inject-store-missing",
    "command-list-input",
    "command-unanswered",
    "no-messages",
    "no-ai-message",
    "wrapper-raises",  # the default handler re-raises what is not a bad-arguments error
    "wrapper-raises-unhandled",
}


def canon(value: Any) -> Any:
    """Library-neutral form: Commands and Sends of either library compare equal."""
    if isinstance(value, (gr_types.Command, lg_types.Command)):
        graph = "PARENT" if value.graph == value.PARENT else value.graph
        return ("Command", graph, canon(value.update), canon(value.goto), value.resume)
    if isinstance(value, (gr_types.Send, lg_types.Send)):
        return ("Send", value.node, canon(value.arg))
    if isinstance(value, (list, tuple)):
        return [canon(v) for v in value]
    if isinstance(value, dict):
        return {k: canon(v) for k, v in value.items()}
    return value


def run(lib: Lib, scenario: Scenario, mode: str) -> tuple[str, Any]:
    node = lib.nodes.ToolNode(build_tools(lib), **scenario.options)
    config = runtime_config(scenario.store)
    try:
        if mode == "sync":
            out = node.invoke(scenario.input, config)
        else:
            out = asyncio.run(node.ainvoke(scenario.input, config))
    except Exception as exc:  # noqa: BLE001 - the error is the outcome compared
        return "error", exc
    return "ok", canon(out)


def builtin_type(exc: BaseException) -> type[BaseException]:
    """The first built-in (or LangChain) exception class in the error's MRO."""
    for cls in type(exc).__mro__:
        if cls.__module__ in ("builtins", "langchain_core.tools.base"):
            return cls
    return type(exc)


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.id)
def test_tool_node_matches_langgraph(scenario: Scenario, mode: str) -> None:
    ours = run(LIBS[0], scenario, mode)
    theirs = run(LIBS[1], scenario, mode)
    fails = scenario.id in FAILING or (scenario.id == "async-tool" and mode == "sync")
    assert ours[0] == ("error" if fails else "ok"), ours
    assert ours[0] == theirs[0], (ours, theirs)
    if ours[0] == "ok":
        assert ours[1] == theirs[1]
        return
    mine, expected = ours[1], theirs[1]
    assert isinstance(mine, builtin_type(expected)), (mine, expected)
    if not isinstance(expected, KeyError):  # our KeyError says which tool wanted the key
        assert str(mine) == str(expected)
