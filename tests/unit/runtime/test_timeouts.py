"""TimeoutPolicy (per node attempt, async only) and Pregel.step_timeout."""

from __future__ import annotations

import asyncio
import operator
from datetime import timedelta
from typing import Annotated, Any, TypedDict

import pytest

from graphruntime.checkpoint.serde import JsonSerializer
from graphruntime.errors import NodeTimeoutError
from graphruntime.graph import START, StateGraph
from graphruntime.runtime import Runtime
from graphruntime.types import RetryPolicy, Send, TimeoutPolicy, default_retry_on


class State(TypedDict, total=False):
    log: Annotated[list[str], operator.add]


def _graph(node: Any, **node_kwargs: Any) -> Any:
    return StateGraph(State).add_node("node", node, **node_kwargs).add_edge(START, "node")


def test_coerce_makes_seconds_and_refuses_bad_limits() -> None:
    assert TimeoutPolicy.coerce(None) is None
    assert TimeoutPolicy.coerce(2) == TimeoutPolicy(run_timeout=2.0)
    assert TimeoutPolicy.coerce(timedelta(seconds=1.5)) == TimeoutPolicy(run_timeout=1.5)
    policy = TimeoutPolicy.coerce(TimeoutPolicy(idle_timeout=1))
    assert policy == TimeoutPolicy(idle_timeout=1.0)
    assert TimeoutPolicy.coerce(policy) is policy
    for bad in (0, -1, timedelta(0)):
        with pytest.raises(ValueError, match="greater than 0"):
            TimeoutPolicy.coerce(bad)
    with pytest.raises(ValueError, match="refresh_on"):
        TimeoutPolicy.coerce(TimeoutPolicy(run_timeout=1, refresh_on="never"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="greater than 0"):
        StateGraph(State).add_node("n", lambda s: s, timeout=0)


def test_the_default_retry_policy_retries_a_timeout() -> None:
    assert default_retry_on(NodeTimeoutError("n", 1.0, kind="run", run_timeout=0.5))
    assert not isinstance(NodeTimeoutError("n", 1.0, kind="run", run_timeout=0.5), TimeoutError)


def test_a_sync_node_with_a_timeout_is_refused_at_compile() -> None:
    with pytest.raises(ValueError, match="only supported for async nodes"):
        _graph(lambda s: s, timeout=1.0).compile()


def test_an_async_node_past_its_run_timeout_fails() -> None:
    async def slow(state: State) -> dict[str, Any]:
        await asyncio.sleep(5)
        return {}

    app = _graph(slow, timeout=TimeoutPolicy(run_timeout=0.05)).compile()
    with pytest.raises(NodeTimeoutError) as caught:
        asyncio.run(app.ainvoke({"log": []}))
    assert (caught.value.node, caught.value.kind, caught.value.run_timeout) == ("node", "run", 0.05)
    with pytest.raises(ValueError, match="ainvoke"):
        app.invoke({"log": []})  # the sync driver cannot cancel a node


def test_heartbeats_keep_an_idle_timeout_from_firing_and_late_writes_are_dropped() -> None:
    async def beating(state: State, runtime: Runtime[None]) -> dict[str, Any]:
        for _ in range(6):
            await asyncio.sleep(0.03)
            runtime.heartbeat()
        return {"log": ["done"]}

    app = _graph(beating, timeout=TimeoutPolicy(idle_timeout=0.1)).compile()
    assert asyncio.run(app.ainvoke({"log": []})) == {"log": ["done"]}

    async def silent(state: State, runtime: Runtime[None]) -> dict[str, Any]:
        await asyncio.sleep(0.3)
        return {"log": ["late"]}

    app = _graph(silent, timeout=TimeoutPolicy(idle_timeout=0.05)).compile()
    with pytest.raises(NodeTimeoutError) as caught:
        asyncio.run(app.ainvoke({"log": []}))
    assert caught.value.kind == "idle"


def test_a_timed_out_attempt_is_retried_by_its_policy() -> None:
    attempts: list[int] = []

    async def flaky(state: State, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.execution_info is not None
        attempts.append(runtime.execution_info.node_attempt)
        if len(attempts) == 1:
            await asyncio.sleep(5)
        return {"log": ["ok"]}

    policy = RetryPolicy(initial_interval=0, jitter=False, retry_on=NodeTimeoutError)
    app = _graph(flaky, timeout=0.05, retry_policy=policy).compile()
    assert asyncio.run(app.ainvoke({"log": []})) == {"log": ["ok"]}
    assert attempts == [1, 2]


def test_a_send_timeout_overrides_the_node_timeout_and_round_trips() -> None:
    async def slow(state: Any) -> dict[str, Any]:
        await asyncio.sleep(0.3)
        return {"log": ["slow"]}

    app = (
        StateGraph(State)
        .add_node("slow", slow, timeout=5.0)
        .add_conditional_edges(START, lambda s: [Send("slow", s, timeout=0.05)])
        .compile()
    )
    with pytest.raises(NodeTimeoutError):
        asyncio.run(app.ainvoke({"log": []}))
    serde = JsonSerializer()
    send = Send("slow", {"x": 1}, timeout=TimeoutPolicy(run_timeout=1, idle_timeout=2))
    assert serde.loads_typed(serde.dumps_typed(send)) == send
    assert serde.loads_typed(serde.dumps_typed(Send("n", 1))) == Send("n", 1)


def test_step_timeout_cancels_the_step() -> None:
    cancelled: list[bool] = []

    async def slow(state: State) -> dict[str, Any]:
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return {}

    app = _graph(slow).compile()
    app.step_timeout = 0.05
    with pytest.raises(TimeoutError):
        asyncio.run(app.ainvoke({"log": []}))
    assert cancelled == [True]

    def blocking(state: State) -> dict[str, Any]:
        import time

        time.sleep(0.3)
        return {}

    sync_app = _graph(blocking).compile()
    sync_app.step_timeout = 0.05
    with pytest.raises(TimeoutError):
        sync_app.invoke({"log": []})
