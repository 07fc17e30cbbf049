"""LangChain runnables as nodes and routers: run by invoke/ainvoke, as LangGraph runs them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig, RunnableLambda
from typing_extensions import TypedDict

from graphruntime.constants import END, START
from graphruntime.graph import StateGraph


class State(TypedDict):
    value: int
    path: list[str]


def graph_with(node: Any, router: Any = None) -> Any:
    builder = StateGraph(State)
    builder.add_node("step", node)
    builder.add_edge(START, "step")
    if router is not None:
        builder.add_node("again", lambda state: {"path": [*state["path"], "again"]})
        builder.add_conditional_edges("step", router, {"more": "again", "stop": END})
    return builder.compile()


def test_runnable_node_gets_the_state_and_the_config() -> None:
    seen: list[RunnableConfig] = []

    def step(state: State, config: RunnableConfig) -> dict[str, Any]:
        seen.append(config)
        return {"value": state["value"] + 1, "path": ["step"]}

    graph = graph_with(RunnableLambda(step) | RunnableLambda(lambda update: update))
    assert graph.invoke({"value": 1, "path": []}) == {"value": 2, "path": ["step"]}
    assert seen[0]["metadata"]["langgraph_node"] == "step"


def test_runnable_node_runs_its_async_path_under_ainvoke() -> None:
    calls: list[str] = []

    def sync_step(state: State) -> dict[str, Any]:
        calls.append("sync")
        return {"value": 0}

    async def async_step(state: State) -> dict[str, Any]:
        calls.append("async")
        return {"value": 1}

    graph = graph_with(RunnableLambda(sync_step, afunc=async_step))
    assert asyncio.run(graph.ainvoke({"value": 5, "path": []}))["value"] == 1
    assert graph.invoke({"value": 5, "path": []})["value"] == 0
    assert calls == ["async", "sync"]


def test_runnable_router() -> None:
    router: RunnableLambda[State, str] = RunnableLambda(
        lambda state: "more" if state["value"] > 1 else "stop"
    )
    graph = graph_with(lambda state: {"path": ["step"]}, router)
    assert graph.invoke({"value": 2, "path": []})["path"] == ["step", "again"]
    assert graph.invoke({"value": 0, "path": []})["path"] == ["step"]


class CallableWithInvoke:
    """Callable, with invoke/ainvoke methods of its own: a function, not a runnable."""

    def __call__(self, state: State) -> dict[str, Any]:
        return {"path": ["called"]}

    def invoke(self, *args: Any) -> Any:
        raise AssertionError("a callable node is called, not invoked")

    async def ainvoke(self, *args: Any) -> Any:
        raise AssertionError("a callable node is called, not invoked")


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_other_callables_are_called(mode: str) -> None:
    graph = graph_with(CallableWithInvoke())
    inputs = {"value": 0, "path": []}
    result = graph.invoke(inputs) if mode == "sync" else asyncio.run(graph.ainvoke(inputs))
    assert result["path"] == ["called"]
