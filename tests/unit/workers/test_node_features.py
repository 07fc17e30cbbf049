"""Node features on the in-memory cluster: error handlers run as jobs of the failing step."""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any, TypedDict

from graphruntime.config import RunnableConfig
from graphruntime.errors import NodeError
from graphruntime.graph import START, StateGraph
from graphruntime.pregel import Pregel
from workers.testing import InlineCluster


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _boom(state: State) -> dict[str, Any]:
    raise RuntimeError("boom")


def _handler(state: State, error: NodeError) -> dict[str, Any]:
    return {"log": [f"handled {error.node}: {error.error}"]}


def _graph(parallel: bool) -> Pregel:
    g = StateGraph(State).add_node("boom", _boom, error_handler=_handler).add_edge(START, "boom")
    if parallel:
        g.add_node("other", lambda s: {"log": ["other"]}).add_edge(START, "other")
    return g.compile()


def _thread() -> RunnableConfig:
    return {"configurable": {"thread_id": f"t-{uuid.uuid4()}"}}


def test_an_error_handler_runs_inline_with_its_single_failing_task() -> None:
    cluster = InlineCluster({"g": _graph(parallel=False)})
    handle = cluster.client.submit("g", {"log": []}, _thread())
    cluster.deliver()
    assert handle.wait(0) == {"log": ["handled boom: boom"]}


def test_an_error_handler_runs_as_a_job_after_the_failed_jobs_step() -> None:
    cluster = InlineCluster({"g": _graph(parallel=True)})
    handle = cluster.client.submit("g", {"log": []}, _thread())
    cluster.deliver()
    handled, other = sorted(handle.wait(0)["log"])
    assert other == "other"
    # the handler's job reads the failure as the failed job saved it (its text)
    assert handled.startswith("handled boom: ")
    assert "boom" in handled.removeprefix("handled boom: ")
