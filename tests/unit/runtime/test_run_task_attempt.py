"""``run_task_attempt``: one attempt, retries handed back to the caller (the workers)."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest

from graphruntime.checkpoint.memory import InMemorySaver
from graphruntime.config import RunnableConfig
from graphruntime.graph import START, StateGraph
from graphruntime.pregel._loop import PregelLoop
from graphruntime.pregel._loop_state import TaskResult
from graphruntime.pregel._retry import RetryLater, run_task, run_task_attempt
from graphruntime.pregel._run import run_options
from graphruntime.pregel._stream import StreamSink
from graphruntime.types import RetryPolicy, interrupt


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _loop(node: Any, policy: RetryPolicy) -> PregelLoop:
    g = StateGraph(State)
    g.add_node("node", node, retry_policy=policy)
    g.add_edge(START, "node")
    compiled = g.compile()
    config: RunnableConfig = {"configurable": {"thread_id": "t"}}
    loop = PregelLoop(
        compiled,
        config,
        checkpointer=InMemorySaver(),
        sink=StreamSink({"values"}, False),
        options=run_options(compiled, config),
    )
    loop.first({"log": []})
    assert loop.plan()
    (start,) = loop.runnable_tasks()  # __start__ maps the input onto the state
    outcome = run_task(start, loop.task_config(start))
    loop.record(start, outcome)
    loop.settle([TaskResult(start, outcome)])
    loop.close()
    assert loop.plan()
    return loop


def _attempt(loop: PregelLoop, attempts_done: int) -> Any:
    (task,) = loop.runnable_tasks()
    return task, run_task_attempt(task, loop.task_config(task), attempts_done=attempts_done)


def test_retryable_failures_come_back_with_the_policy_backoff() -> None:
    calls: list[int] = []

    def node(state: State) -> dict[str, Any]:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError(f"attempt {len(calls)}")
        return {"log": ["ok"]}

    policy = RetryPolicy(max_attempts=3, initial_interval=0.5, backoff_factor=3.0, jitter=False)
    loop = _loop(node, policy)
    task, first = _attempt(loop, 0)
    assert isinstance(first, RetryLater)
    assert (first.delay, first.attempts, str(first.error)) == (0.5, 1, "attempt 1")
    assert task.writes == []  # a failed attempt leaves nothing to save
    _, second = _attempt(loop, first.attempts)
    assert isinstance(second, RetryLater)
    assert (second.delay, second.attempts) == (1.5, 2)
    task, third = _attempt(loop, second.attempts)
    assert third is None
    assert ("log", ["ok"]) in task.writes


def test_the_last_attempt_returns_the_error() -> None:
    def node(state: State) -> dict[str, Any]:
        raise ConnectionError("down")

    loop = _loop(node, RetryPolicy(max_attempts=2, initial_interval=0.0, jitter=False))
    _, outcome = _attempt(loop, 1)
    assert isinstance(outcome, ConnectionError)


@pytest.mark.parametrize("attempts_done", [0, 1])
def test_an_interrupt_is_never_retried(attempts_done: int) -> None:
    def node(state: State) -> dict[str, Any]:
        return {"log": [interrupt("question")]}

    loop = _loop(node, RetryPolicy(retry_on=lambda e: True, initial_interval=0.0))
    _, outcome = _attempt(loop, attempts_done)
    assert type(outcome).__name__ == "GraphInterrupt"
