"""Event streams: v2 stream parts, the tasks mode, callbacks, astream_events, run streams.

Where LangGraph defines the output, the same graph runs on both runtimes and the
outputs are compared (task ids and run ids differ: they are normalised away).
"""

from __future__ import annotations

import asyncio
import operator
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any
from uuid import UUID

import pytest

pytest.importorskip(
    "langchain_core",
    reason="langchain-core is not installed (pip install 'graphruntime[messages]')",
)

import langgraph.graph as lg_graph
from langchain_core.callbacks import BaseCallbackHandler
from langgraph.checkpoint.memory import InMemorySaver as LgSaver
from langgraph.types import Command as LgCommand
from langgraph.types import interrupt as lg_interrupt
from typing_extensions import TypedDict

from graphruntime.callbacks import GraphCallbackHandler, GraphInterruptEvent, GraphResumeEvent
from graphruntime.checkpoint import InMemorySaver
from graphruntime.config import get_stream_writer
from graphruntime.graph import END, START, StateGraph
from graphruntime.types import Command, GraphOutput, interrupt

ROOT = Path(__file__).resolve().parents[3]


class State(TypedDict):
    value: str
    items: Annotated[list[str], operator.add]


def _build(graph_module: Any, *, interrupting: bool = False) -> Any:
    """outer: a -> inner (subgraph: x -> y) -> b, on either runtime."""

    def a(state: State) -> dict[str, Any]:
        return {"value": state["value"] + "a", "items": ["a"]}

    def x(state: State) -> dict[str, Any]:
        return {"items": ["x"]}

    def y(state: State) -> dict[str, Any]:
        return {"value": state["value"] + "y"}

    def b(state: State) -> dict[str, Any]:
        return {"value": state["value"] + "b"}

    inner = graph_module.StateGraph(State)
    inner.add_node("x", x)
    inner.add_node("y", y)
    inner.add_edge(graph_module.START, "x")
    inner.add_edge("x", "y")
    outer = graph_module.StateGraph(State)
    outer.add_node("a", a)
    outer.add_node("inner", inner.compile())
    outer.add_node("b", b)
    outer.add_edge(graph_module.START, "a")
    outer.add_edge("a", "inner")
    outer.add_edge("inner", "b")
    outer.add_edge("b", graph_module.END)
    return outer.compile()


INPUT: State = {"value": "", "items": []}


def _names(ns: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(segment.split(":")[0] for segment in ns)


def _without_ids(part: dict[str, Any]) -> dict[str, Any]:
    data = part["data"]
    if part["type"] == "tasks":
        data = {k: v for k, v in data.items() if k != "id"}
    return {**part, "ns": _names(part["ns"]), "data": data}


# --- v2 stream parts and the tasks mode --------------------------------------------------


@pytest.mark.parametrize("subgraphs", [False, True])
def test_v2_parts_match_langgraph(subgraphs: bool) -> None:
    modes = ["values", "updates", "tasks"]
    ours = _build(sys.modules["graphruntime.graph"]).stream(
        INPUT, stream_mode=modes, subgraphs=subgraphs, version="v2"
    )
    theirs = _build(lg_graph).stream(INPUT, stream_mode=modes, subgraphs=subgraphs, version="v2")
    assert [_without_ids(p) for p in ours] == [_without_ids(p) for p in theirs]


def test_invoke_v2_returns_graph_output_with_the_interrupts() -> None:
    def ask(state: State) -> dict[str, Any]:
        return {"value": interrupt("name?")}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "1"}}
    result = graph.invoke(INPUT, config, version="v2")
    assert isinstance(result, GraphOutput)
    assert result.value == INPUT
    assert [i.value for i in result.interrupts] == ["name?"]
    resumed = graph.invoke(Command(resume="ada"), config, version="v2")
    assert resumed == GraphOutput({"value": "ada", "items": []})


# --- callbacks ---------------------------------------------------------------------------


class Recorder(BaseCallbackHandler):
    """Chain runs as (name, parent name, tags), and errors by name."""

    def __init__(self) -> None:
        self.names: dict[UUID, str] = {}
        self.starts: list[tuple[str, str | None, list[str]]] = []
        self.errors: list[str] = []

    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        self.names[run_id] = kwargs["name"]
        parent = self.names.get(parent_run_id) if parent_run_id else None
        self.starts.append((kwargs["name"], parent, sorted(tags or [])))

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self.errors.append(self.names[run_id])


@pytest.mark.parametrize("graph_module", [sys.modules["graphruntime.graph"], lg_graph])
def test_config_callbacks_see_the_graph_and_its_nodes(graph_module: Any) -> None:
    recorder = Recorder()
    _build(graph_module).invoke(INPUT, {"callbacks": [recorder], "tags": ["t"]})
    assert recorder.starts == [
        ("LangGraph", None, ["t"]),
        ("a", "LangGraph", ["graph:step:1", "t"]),
        ("inner", "LangGraph", ["graph:step:2", "t"]),
        ("LangGraph", "inner", ["seq:step:1", "t"]),  # the subgraph: the node's first step
        ("x", "LangGraph", ["graph:step:1", "t"]),
        ("y", "LangGraph", ["graph:step:2", "t"]),
        ("b", "LangGraph", ["graph:step:3", "t"]),
    ]


def test_a_failing_node_reports_its_error_to_the_callbacks() -> None:
    def boom(state: State) -> dict[str, Any]:
        raise ValueError("boom")

    builder = StateGraph(State)
    builder.add_node("boom", boom)
    builder.add_edge(START, "boom")
    recorder = Recorder()
    with pytest.raises(ValueError, match="boom"):
        builder.compile().invoke(INPUT, {"callbacks": [recorder]})
    assert recorder.errors == ["boom", "LangGraph"]


def test_graph_callbacks_see_the_interrupt_and_the_resume() -> None:
    events: list[Any] = []

    class Lifecycle(GraphCallbackHandler):
        def on_interrupt(self, event: GraphInterruptEvent) -> None:
            events.append(event)

        def on_resume(self, event: GraphResumeEvent) -> None:
            events.append(event)

    def ask(state: State) -> dict[str, Any]:
        return {"value": interrupt("name?")}

    builder = StateGraph(State)
    builder.add_node("ask", ask)
    builder.add_edge(START, "ask")
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "1"}, "callbacks": [Lifecycle()]}
    graph.invoke(INPUT, config)
    graph.invoke(Command(resume="ada"), config)
    paused, resumed = events
    assert isinstance(paused, GraphInterruptEvent)
    assert [i.value for i in paused.interrupts] == ["name?"]
    assert isinstance(resumed, GraphResumeEvent)
    assert resumed.checkpoint_id == paused.checkpoint_id
    assert paused.run_id is not None
    assert resumed.run_id not in (None, paused.run_id)


def _event_names(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["event"], e["name"]) for e in events]


def test_astream_events_v2_matches_langgraph() -> None:
    async def collect(graph: Any) -> list[dict[str, Any]]:
        return [e async for e in graph.astream_events(INPUT, version="v2")]

    ours = asyncio.run(collect(_build(sys.modules["graphruntime.graph"])))
    theirs = asyncio.run(collect(_build(lg_graph)))
    assert _event_names(ours) == _event_names(theirs)
    assert [e["data"] for e in ours] == [e["data"] for e in theirs]


def test_lifecycle_events_of_an_interrupted_resumed_run_match_langgraph() -> None:
    def run(graph_module: Any, saver: Any, command: Any, ask: Callable[[str], Any]) -> list[Any]:
        def node(state: State) -> dict[str, Any]:
            return {"value": ask("name?")}

        builder = graph_module.StateGraph(State)
        builder.add_node("node", node)
        builder.add_edge(graph_module.START, "node")
        graph = builder.compile(checkpointer=saver)
        config = {"configurable": {"thread_id": "1"}}
        out = [graph.stream_events(INPUT, config, version="v3").interrupted]
        out.append(graph.stream_events(command(resume="x"), config, version="v3").output)
        return out

    assert run(sys.modules["graphruntime.graph"], InMemorySaver(), Command, interrupt) == run(
        lg_graph, LgSaver(), LgCommand, lg_interrupt
    )


# --- run streams -------------------------------------------------------------------------


@pytest.mark.parametrize("graph_module", [sys.modules["graphruntime.graph"], lg_graph])
def test_run_stream_projections_follow_the_subgraph(graph_module: Any) -> None:
    run = _build(graph_module).stream_events(INPUT, version="v3")
    seen: list[tuple[Any, ...]] = []
    for handle in run.subgraphs:
        seen.append(("handle", _names(handle.path), handle.graph_name))
        # the handle exists from the subgraph's first task: its input state came before
        seen.extend(("inner values", v) for v in handle.values)
        seen.append(("status", handle.status))
    assert seen == [
        ("handle", ("inner",), "inner"),
        ("inner values", {"value": "a", "items": ["a", "x"]}),
        ("inner values", {"value": "ay", "items": ["a", "x"]}),
        ("status", "completed"),
    ]
    assert run.output == {"value": "ayb", "items": ["a", "a", "x"]}


# --- streaming while tasks run ------------------------------------------------------------


def test_async_stream_yields_custom_chunks_while_the_node_runs() -> None:
    async def main() -> list[str]:
        received = asyncio.Event()
        log: list[str] = []

        async def node(state: State) -> dict[str, Any]:
            get_stream_writer()("hello")
            await asyncio.wait_for(received.wait(), 5)  # only the consumer can set it
            log.append("node saw the consumer")
            return {}

        builder = StateGraph(State)
        builder.add_node("node", node)
        builder.add_edge(START, "node")
        async for chunk in builder.compile().astream(INPUT, stream_mode="custom"):
            log.append(chunk)
            received.set()
        return log

    assert asyncio.run(main()) == ["hello", "node saw the consumer"]


def test_closing_an_async_stream_cancels_the_running_node() -> None:
    async def main() -> bool:
        started, cancelled = asyncio.Event(), asyncio.Event()

        async def slow(state: State) -> dict[str, Any]:
            get_stream_writer()("started")
            started.set()
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return {}

        builder = StateGraph(State)
        builder.add_node("slow", slow)
        builder.add_edge(START, "slow")
        stream: Any = builder.compile().astream(INPUT, stream_mode="custom")
        assert await anext(stream) == "started"
        await stream.aclose()
        await asyncio.wait_for(cancelled.wait(), 5)
        return started.is_set()

    assert asyncio.run(main())


def test_a_node_streaming_a_child_graph_gets_its_chunks_and_the_parent_does_not() -> None:
    child = _build(sys.modules["graphruntime.graph"])
    received: list[Any] = []

    def node(state: State) -> dict[str, Any]:
        received.extend(child.stream(INPUT, stream_mode="updates"))
        return {}

    builder = StateGraph(State)
    builder.add_node("node", node)
    builder.add_edge(START, "node")
    builder.add_edge("node", END)
    parent = list(builder.compile().stream(INPUT, stream_mode="updates"))
    assert parent == [{"node": None}]
    assert [next(iter(update)) for update in received] == ["a", "inner", "b"]


# --- without langchain-core --------------------------------------------------------------


def test_without_langchain_runs_work_and_callbacks_say_what_to_install() -> None:
    code = """
        import sys
        sys.modules["langchain_core"] = None  # as if not installed
        from typing_extensions import TypedDict
        from graphruntime.graph import StateGraph

        class S(TypedDict):
            v: int

        g = StateGraph(S)
        g.add_node("a", lambda s: {"v": s["v"] + 1})
        g.set_entry_point("a")
        app = g.compile()
        assert app.invoke({"v": 1}) == {"v": 2}
        assert [p["type"] for p in app.stream({"v": 1}, stream_mode="tasks", version="v2")] == [
            "tasks", "tasks"
        ]
        for attempt in (
            lambda: app.invoke({"v": 1}, {"callbacks": []}),  # empty: nothing to call
            lambda: app.invoke({"v": 1}, {"callbacks": [object()]}),
            lambda: list(app.stream({"v": 1}, stream_mode="messages")),
            lambda: app.stream_events({"v": 1}, version="v3"),
        ):
            try:
                attempt()
                print("ran")
            except ImportError as exc:
                print(exc)
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "ran"
    assert all("pip install 'graphruntime[messages]'" in line for line in lines[1:]), lines
