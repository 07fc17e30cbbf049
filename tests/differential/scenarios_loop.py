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
