"""Node error handlers: same step, every executor, saved for a resumed run."""

from __future__ import annotations

import asyncio
import operator
import threading
from collections.abc import Iterator, Sequence
from typing import Annotated, Any, TypedDict

import pytest

from graphruntime._internal._constants import ERROR, ERROR_SOURCE_NODE
from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.errors import NodeError
from graphruntime.graph import START, StateGraph
from graphruntime.pregel._algo import PreparedTask
from graphruntime.pregel._driver import drive
from graphruntime.pregel._loop import PregelLoop
from graphruntime.pregel._loop_state import TaskResult
from graphruntime.pregel._retry import run_task
from graphruntime.pregel._run import run_options
from graphruntime.pregel._stream import StreamSink
from graphruntime.types import Command, RetryPolicy


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _failing(name: str, calls: list[str]) -> Any:
    def node(state: State) -> dict[str, Any]:
        calls.append(name)
        raise RuntimeError(f"{name} failed")

    return node


def _handler(calls: list[str], *, fail: list[bool] | None = None) -> Any:
    def handler(state: State, error: NodeError) -> dict[str, Any]:
        calls.append(f"handler:{error.node}")
        if fail and fail[0]:
            raise ValueError("handler failed")
        return {"log": [f"handled {error.node}: {error.error}"]}

    return handler


def test_the_handler_runs_after_the_retries_and_routes_with_a_command() -> None:
    calls: list[str] = []

    def handler(state: State, error: NodeError) -> Command[Any]:
        calls.append("handler")
        return Command(update={"log": ["handled"]}, goto="after")

    app = (
        StateGraph(State)
        .add_node(
            "fail",
            _failing("fail", calls),
            retry_policy=RetryPolicy(max_attempts=2, initial_interval=0, jitter=False),
            error_handler=handler,
        )
        .add_node("after", lambda s: {"log": ["after"]})
        .add_edge(START, "fail")
        .compile()
    )
    assert app.invoke({"log": []}) == {"log": ["handled", "after"]}
    # RuntimeError is not retried by the default retry_on; a RetryPolicy that does retry it:
    assert calls == ["fail", "handler"]


def test_a_handler_starts_while_its_failed_siblings_siblings_still_run() -> None:
    started = threading.Event()

    def slow(state: State) -> dict[str, Any]:
        assert started.wait(5), "the handler did not start while this node ran"
        return {"log": ["slow"]}

    def handler(state: State, error: NodeError) -> dict[str, Any]:
        started.set()
        return {"log": ["handled"]}

    app = (
        StateGraph(State)
        .add_node("fail", _failing("fail", []), error_handler=handler)
        .add_node("slow", slow)
        .add_edge(START, "fail")
        .add_edge(START, "slow")
        .compile()
    )
    assert sorted(app.invoke({"log": []})["log"]) == ["handled", "slow"]


def test_async_handlers_run_in_the_failing_step() -> None:
    async def handler(state: State, error: NodeError) -> dict[str, Any]:
        return {"log": [f"async handled {error.node}"]}

    async def fail(state: State) -> dict[str, Any]:
        raise RuntimeError("x")

    app = (
        StateGraph(State).add_node("fail", fail, error_handler=handler).add_edge(START, "fail")
    ).compile()
    assert asyncio.run(app.ainvoke({"log": []})) == {"log": ["async handled fail"]}


def test_defaults_apply_to_regular_nodes_and_a_failing_handler_fails_the_run() -> None:
    calls: list[str] = []
    app = (
        StateGraph(State)
        .set_node_defaults(error_handler=_handler(calls, fail=[True]))
        .add_node("fail", _failing("fail", calls))
        .add_edge(START, "fail")
        .compile()
    )
    with pytest.raises(ValueError, match="handler failed"):
        app.invoke({"log": []})
    assert calls == ["fail", "handler:fail"]


def test_a_crashed_handler_reruns_on_resume_and_the_node_does_not() -> None:
    calls: list[str] = []
    fail = [True]
    saver = InMemorySaver()
    app = (
        StateGraph(State)
        .add_node("fail", _failing("fail", calls), error_handler=_handler(calls, fail=fail))
        .add_edge(START, "fail")
        .compile(checkpointer=saver)
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ValueError):
        app.invoke({"log": []}, config)
    saved = saver.get_tuple(config)
    assert saved is not None
    channels = {c for _, c, _ in saved.pending_writes or []}
    assert {ERROR, ERROR_SOURCE_NODE} <= channels
    fail[0] = False
    (logged,) = app.invoke(None, config)["log"]
    # the saved error may come back as its text: its content is what is kept
    assert logged.startswith("handled fail: ")
    assert "fail failed" in logged
    assert calls == ["fail", "handler:fail", "handler:fail"]


class BatchExecutor:
    """An executor that cannot add tasks to a running step (as the workers' cluster)."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def execute(self, loop: PregelLoop, tasks: Sequence[PreparedTask]) -> Iterator[TaskResult]:
        self.batches.append([t.name for t in tasks])
        for task in tasks:
            yield TaskResult(task, run_task(task, loop.task_config(task)))


def test_an_executor_without_submit_runs_the_handlers_as_one_more_batch() -> None:
    calls: list[str] = []
    app = (
        StateGraph(State)
        .add_node("a", _failing("a", calls), error_handler=_handler(calls))
        .add_node("b", lambda s: {"log": ["b"]})
        .add_edge(START, "a")
        .add_edge(START, "b")
        .compile()
    )
    config: RunnableConfig = {"configurable": {}}
    loop = PregelLoop(
        app,
        config,
        checkpointer=None,
        sink=StreamSink({"values"}, False),
        options=run_options(app, config),
    )
    loop.first({"log": []})
    executor = BatchExecutor()
    values = [payload for _, _, payload in drive(loop, executor)]
    assert executor.batches == [["__start__"], ["a", "b"], ["__error_handler__a"]]
    assert sorted(values[-1]["log"]) == ["b", "handled a: a failed"]


def test_a_job_can_plan_the_handler_task_by_its_path() -> None:
    calls: list[str] = []
    saver = InMemorySaver()
    app = (
        StateGraph(State)
        .add_node("a", _failing("a", calls), error_handler=_handler(calls, fail=[True]))
        .add_edge(START, "a")
        .compile(checkpointer=saver)
    )
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    with pytest.raises(ValueError):
        app.invoke({"log": []}, config)
    loop = PregelLoop(
        app,
        config,
        checkpointer=saver,
        sink=StreamSink({"values"}, False),
        options=run_options(app, config),
    )
    assert loop.plan()
    (handler,) = loop.runnable_tasks()
    again = PregelLoop(
        app,
        config,
        checkpointer=saver,
        sink=StreamSink({"values"}, False),
        options=run_options(app, config),
    )
    planned = again.plan_task(handler.path)
    assert planned is not None
    assert planned.id == handler.id
    assert planned.node_error == NodeError(node="a", error=planned.node_error.error)
