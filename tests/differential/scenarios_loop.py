"""Scenarios: the loop's own parity (tasks/checkpoints/debug streams, durability)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from .observe import Recorder
from .registry import scenario
from .runtimes import Runtime


class LoopState(TypedDict, total=False):
    items: Annotated[list[str], operator.add]


def _no_timestamps(chunks: list[Any]) -> list[Any]:
    out = []
    for chunk in chunks:
        ns, payload = chunk if isinstance(chunk, tuple) else ((), chunk)
        if isinstance(payload, dict) and "timestamp" in payload:
            payload = {k: v for k, v in payload.items() if k != "timestamp"}
        out.append((ns, payload))
    return out


def _chain(rt: Runtime) -> Any:
    def node(name: str) -> Any:
        def run(state: LoopState) -> dict[str, Any]:
            return {"items": [name]}

        return run

    child = rt.StateGraph(LoopState)
    child.add_node("c_one", node("c_one"))
    child.add_edge(rt.START, "c_one")
    parent = rt.StateGraph(LoopState)
    parent.add_node("p_one", node("p_one"))
    parent.add_node("p_two", child.compile())
    parent.add_edge(rt.START, "p_one")
    parent.add_edge("p_one", "p_two")
    return parent


@scenario
def scenario_stream_tasks_checkpoints_debug(rt: Runtime, rec: Recorder) -> None:
    """tasks, checkpoints and debug modes, with subgraphs, and a failing task's result."""
    app = _chain(rt).compile(checkpointer=rt.InMemorySaver())
    for mode in ("tasks", "checkpoints", "debug"):
        chunks = list(app.stream({"items": []}, rec.thread(), stream_mode=mode, subgraphs=True))
        rec.record(mode, _no_timestamps(chunks))

    def failing(state: LoopState) -> dict[str, Any]:
        raise ValueError("boom")

    g = rt.StateGraph(LoopState)
    g.add_node("failing", failing)
    g.add_edge(rt.START, "failing")
    seen: list[Any] = []
    with rec.expect_error("failing task"):
        for chunk in g.compile().stream({"items": []}, stream_mode="tasks"):
            seen.append({k: v for k, v in chunk.items() if k != "error"})
    rec.record("tasks before the error", seen)


@scenario
def scenario_durability_exit(rt: Runtime, rec: Recorder) -> None:
    """durability="exit" saves only the run's last checkpoint; a subgraph saves nothing."""
    app = _chain(rt).compile(checkpointer=rt.InMemorySaver())
    for durability in ("sync", "async", "exit"):
        config = rec.thread()
        out = app.invoke({"items": []}, config, durability=durability)
        history = list(app.get_state_history(config))
        rec.record(
            durability,
            {
                "out": out,
                "history": [(s.metadata, s.values, s.next) for s in history],
            },
        )


class SubState(TypedDict, total=False):
    value: Annotated[list[str], operator.add]


class TopState(TypedDict, total=False):
    results: Annotated[list[str], operator.add]


@scenario
def scenario_stateful_subgraph(rt: Runtime, rec: Recorder) -> None:
    """compile(checkpointer=True): the subgraph's state accumulates across parent runs,
    a parent replay starts it from its state back then, and a subgraph's own checkpoint
    (from get_state(subgraphs=True)) replays the subgraph."""

    def ask(state: SubState) -> dict[str, Any]:
        rec.count(f"ask sees {state.get('value')}")
        answer = rt.interrupt("question")
        return {"value": [f"a:{answer}"]}

    sub = rt.StateGraph(SubState)
    sub.add_node("ask", ask)
    sub.add_edge(rt.START, "ask")
    g = rt.StateGraph(TopState)
    g.add_node("p", lambda state: {"results": ["p"]})
    g.add_node("sub_node", sub.compile(checkpointer=True))
    g.add_edge(rt.START, "p")
    g.add_edge("p", "sub_node")
    app = g.compile(checkpointer=rt.InMemorySaver())
    config = rec.thread()
    for answer in ("one", "two"):
        rec.record(f"run {answer}", app.invoke({"results": []}, config))
        rec.record(f"resume {answer}", app.invoke(rt.Command(resume=answer), config))
    history = list(app.get_state_history(config))
    rec.record("history", [(s.metadata, s.next) for s in history])
    before_sub = next(s for s in history if s.next == ("sub_node",))
    rec.record("replay", app.invoke(None, before_sub.config))
    state = app.get_state(config, subgraphs=True)
    rec.record("subgraph state", [t.state.values for t in state.tasks])
    rec.record("replay the subgraph", app.invoke(None, state.tasks[0].state.config))


@scenario
def scenario_child_graph_own_thread(rt: Runtime, rec: Recorder) -> None:
    """A graph with its own checkpointer and thread, invoked inside a node, saves its
    state under its own thread at the root namespace."""

    class Count(TypedDict, total=False):
        count: int

    child_g = rt.StateGraph(Count)
    child_g.add_node("n", lambda state: {"count": (state.get("count") or 0) + 1})
    child_g.add_edge(rt.START, "n")
    child = child_g.compile(checkpointer=rt.InMemorySaver())
    child_config = rec.thread()

    def parent_node(state: TopState) -> dict[str, Any]:
        child.invoke({}, child_config)
        return {"results": ["ok"]}

    g = rt.StateGraph(TopState)
    g.add_node("p", parent_node)
    g.add_edge(rt.START, "p")
    app = g.compile(checkpointer=rt.InMemorySaver())
    app.invoke({"results": []}, rec.thread())
    app.invoke({"results": []}, rec.thread())
    state = child.get_state(child_config)
    rec.record("child state", (state.values, state.config["configurable"]["checkpoint_ns"]))


class FooState(TypedDict, total=False):
    foo: str


@scenario
def scenario_bulk_update_state(rt: Runtime, rec: Recorder) -> None:
    """bulk_update_state rebuilds a run's history; a copy with updates forks it."""

    def state_update(values: Any, as_node: str | None = None) -> tuple[Any, str | None, None]:
        return (values, as_node, None)  # as StateUpdate, a NamedTuple (values, as_node, task_id)

    g = rt.StateGraph(FooState)
    g.add_node("agent", lambda state: {"foo": "agent"})
    g.add_node("tool", lambda state: {"foo": "tool"})
    g.add_edge(rt.START, "agent")
    g.add_edge("agent", "tool")
    app = g.compile(checkpointer=rt.InMemorySaver())
    ran = rec.thread()
    app.invoke({"foo": "input"}, ran)
    built = rec.thread()
    app.bulk_update_state(
        built,
        [
            [state_update({"foo": "input"}, "__input__")],
            [state_update({"foo": "input"}, "__start__")],
            [state_update({"foo": "agent"}, "agent")],
            [state_update({"foo": "tool"}, "tool")],
        ],
    )

    def shown(config: dict[str, Any]) -> list[Any]:
        return [
            (s.values, s.next, s.metadata, [(t.name, t.result) for t in s.tasks])
            for s in app.get_state_history(config)
        ]

    rec.record("run", shown(ran))
    rec.record("built", shown(built))
    history = list(app.get_state_history(ran))
    forked = app.update_state(
        history[2].config, [state_update({"foo": "agent*"}, "agent")], "__copy__"
    )
    rec.record("fork", app.invoke(None, forked))
    rec.record("after fork", shown(ran))
    with rec.expect_error("no supersteps"):
        app.bulk_update_state(built, [])
    with rec.expect_error("multiple updates need as_node"):
        app.bulk_update_state(built, [[state_update({"foo": "a"}), state_update({"foo": "b"})]])
